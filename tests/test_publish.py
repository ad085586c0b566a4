"""The publishing files: the book workflow, CITATION.cff and LICENSE."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def triggers(wf: dict) -> dict:
    # PyYAML (YAML 1.1) reads the bare key `on` as the boolean True.
    return wf.get("on", wf.get(True))


def make_targets() -> dict[str, list[str]]:
    """Map each Makefile target to its recipe lines."""
    targets, current = {}, None
    for line in (ROOT / "Makefile").read_text().splitlines():
        m = re.match(r"^([A-Za-z][\w.-]*)\s*:(?!=)", line)
        if m:
            current = targets.setdefault(m.group(1), [])
        elif line.startswith("\t") and current is not None:
            current.append(line.strip())
        elif line.strip() and not line.startswith("#"):
            current = None
    return targets


def build_step(wf: dict) -> dict:
    steps = [s for s in wf["jobs"]["build"]["steps"] if "make book" in s.get("run", "")]
    assert len(steps) == 1, "the build job needs exactly one `make book` step"
    return steps[0]


def test_triggers(workflow):
    on = triggers(workflow)
    assert "pull_request" in on
    assert "main" in on["push"]["branches"]
    assert "workflow_dispatch" in on


def test_profile_by_event(workflow):
    expr = workflow["jobs"]["build"]["env"]["PROFILE"]
    assert "pull_request" in expr and "'smoke'" in expr and "'default'" in expr
    for profile in ("smoke", "default"):
        assert (ROOT / "profiles" / f"{profile}.yml").is_file()


def test_build_runs_the_makefile_command(workflow):
    run = build_step(workflow)["run"]
    assert re.search(r"^make book PROFILE=\$\{?PROFILE\}?\s*$", run.strip())
    assert "-m apd" not in run and "python" not in run
    recipe = make_targets()["book"]
    assert any("-m apd " in line and "--profile $(PROFILE)" in line for line in recipe)


def test_pages_checked_before_publishing(workflow):
    steps = workflow["jobs"]["build"]["steps"]
    runs = [s.get("run", "").strip() for s in steps]
    build = runs.index(build_step(workflow)["run"].strip())
    assert "make pages PROFILE=$PROFILE" in runs[build + 1 :]
    assert any("APD_BOOK_PROFILE=$(PROFILE)" in line and "test_browser.py" in line for line in make_targets()["pages"])


def test_logs_uploaded_on_failure(workflow):
    steps = workflow["jobs"]["build"]["steps"]
    logs = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
    assert logs and logs[0]["if"] == "failure()"
    assert "_build/*/book/notebooks/" in logs[0]["with"]["path"]
    assert logs[0]["with"]["if-no-files-found"] == "ignore"


def test_pages_artifact_is_the_profile_html(workflow):
    steps = workflow["jobs"]["build"]["steps"]
    pages = [s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact")]
    assert pages and pages[0]["with"]["path"] == "_build/${{ env.PROFILE }}/book/_build/html"


def test_deploy_job(workflow):
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] in ("build", ["build"])
    assert deploy["permissions"]["pages"] == "write"
    assert deploy["permissions"]["id-token"] == "write"
    assert "refs/heads/main" in deploy["if"] and "pull_request" in deploy["if"]
    assert deploy["environment"]["name"] == "github-pages"
    assert any(s.get("uses", "").startswith("actions/deploy-pages") for s in deploy["steps"])


def test_citation():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    paper = cff["preferred-citation"]
    assert [a["family-names"] for a in paper["authors"]] == ["Chang", "Peng", "Bansal", "Ramakrishna", "Chung"]
    assert paper["url"] == "https://aclanthology.org/2024.emnlp-main.484"


def test_license():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "Copyright (c) 2026 the apd authors" in text
