"""The build's steps (apd.build): a profile checked against the notebooks' parameters cells, the
parameters files make reads, a chapter's results committed only when it succeeded, the build
report page, and (after the smoke build) make's graph re-executing exactly what changed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from apd import build
from apd.base.notebooks import BookError

ROOT = Path(__file__).resolve().parents[1]


def test_a_profile_gives_every_chapter_its_defaults_then_its_values():
    params = build.resolve("smoke", ["theorem1.n_draws=500", "theorem1.T_grid=[1.5, 2]", "apd.fitter_noise=5e-2"])
    assert params["theorem1"]["n_draws"] == 500 and params["theorem1"]["T_grid"] == [1.5, 2]
    assert params["theorem1"]["vocab_size"] == 50  # the smoke profile's value
    assert params["theorem1"]["seed"] == 0  # the notebook's default
    assert params["apd"]["fitter_noise"] == 0.05 and all(p["profile"] == "smoke" for p in params.values())
    assert set(params) == set(build.chapters())


def test_every_default_and_every_profile_lies_in_its_range():
    """The ranges in the parameters cells hold for the notebooks' defaults and for every profile's
    values (resolve checks them), and most parameters carry one."""
    for stem in build.chapters():
        limits, defaults = build.ranges(stem), build.parameter_defaults(build.notebook_path(stem))
        assert all(
            build.in_range(defaults[name][0], spec) for name, spec in limits.items() if defaults[name][0] is not None
        )
    for profile in build.known_profiles():
        build.resolve(profile)
    assert sum(len(build.ranges(stem)) for stem in build.chapters()) >= 100


def test_switches_set_every_chapter_that_declares_them_and_set_wins():
    params = build.resolve("smoke", ["family.device=auto"], {"device": "cpu"})
    declared = {s for s in params if "device" in build.parameter_defaults(build.notebook_path(s))}
    assert declared and all(params[s]["device"] == "cpu" for s in declared - {"family"})
    assert params["family"]["device"] == "auto" and "device" not in params["theorem1"]


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["theorem1.n_drawz=5"], ["n_drawz", "did you mean 'n_draws'"]),
        (["theorm1.n_draws=5"], ["no notebook 'theorm1'", "did you mean 'theorem1'"]),
        (["theorem1.n_draws=many"], ["--set theorem1.n_draws=many", "expected int", "20000"]),
        (["theorem1.n_draws"], ["NOTEBOOK.PARAMETER=VALUE"]),
        (["theorem1.profile=x"], ["profile's name"]),
        (["theorem1.T_grid=2"], ["expected list"]),
        (["theorem1.n_draws=0"], ["0 is not in [1, 1000000]", "notebooks/theorem1.ipynb"]),
        (["theorem1.T_grid=[0.5, 2.0]"], ["not in (1, 1000]"]),
        (["factuality.cd_T=best"], ["'best' is not in {dev} or (0, 1000]"]),
        (["family.family=gpt2"], ["{pico, pythia, opt, qwen1.5, qwen}"]),
        (["family.device=tpu"], ["cuda:N"]),
    ],
)
def test_a_bad_override_names_itself_and_the_fix(overrides, words):
    with pytest.raises(BookError) as err:
        build.resolve("smoke", overrides)
    assert all(w in str(err.value) for w in words), str(err.value)


@pytest.mark.parametrize(
    "text, words",
    [
        ("notebooks:\n  theorem1: {n_draws: 1}\n  theorem1: {n_draws: 2}\n", ["given twice", "lines 2 and 3"]),
        ("notebooks: [theorem1]\n", ["a profile is"]),
        ("notebook:\n  theorem1: {}\n", ["a profile is"]),
        ("notebooks:\n  theorem1: 3\n", ["notebooks.theorem1 must be a mapping"]),
        ("notebooks:\n  theorem1: {n_draws: [1}\n", ["not valid YAML"]),
        ("notebooks:\n  theorem1: {n_draws: 2.5}\n", ["notebooks.theorem1.n_draws", "expected int"]),
    ],
)
def test_a_bad_profile_file_names_the_file_and_the_problem(tmp_path, monkeypatch, text, words):
    for name in ("_toc.yml",):
        (tmp_path / name).write_text((ROOT / name).read_text())
    (tmp_path / "notebooks").symlink_to(ROOT / "notebooks")
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "bad.yml").write_text(text)
    with pytest.raises(BookError) as err:
        build.resolve("bad", root=tmp_path)
    assert "bad.yml" in str(err.value) and all(w in str(err.value) for w in words), str(err.value)
    with pytest.raises(BookError, match="no profile 'smok'.*did you mean 'smoke'"):
        build.resolve("smok")


def test_prepare_rewrites_only_the_parameters_that_changed(tmp_path, monkeypatch):
    for name in ("_toc.yml",):
        (tmp_path / name).write_text((ROOT / name).read_text())
    for name in ("notebooks", "profiles"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path / "results"))
    build.prepare("smoke", jobs=1, root=tmp_path)
    folder = tmp_path / "_build" / "smoke" / "params"
    times = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")}
    assert len(times) == len(build.chapters()) and (tmp_path / "_build" / "smoke" / "slots").is_dir()
    build.prepare("smoke", ["theorem1.seed=4"], jobs=1, root=tmp_path)
    changed = {p.name for p in folder.glob("*.json") if p.stat().st_mtime_ns != times[p.name]}
    assert changed == {"theorem1.json"}
    assert json.loads((folder / "theorem1.json").read_text())["parameters"]["seed"] == 4


def _project(tmp_path: Path, monkeypatch, code: str) -> Path:
    """A project with one chapter, ``x``, whose single cell is ``code``, and its parameters file."""
    cells = [
        {"cell_type": "code", "id": "p", "metadata": {"tags": ["parameters"]}, "source": "profile = 'p'\n",
         "outputs": [], "execution_count": None},
        {"cell_type": "code", "id": "c", "metadata": {}, "source": code, "outputs": [], "execution_count": None},
    ]  # fmt: skip
    nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
          "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "x.ipynb").write_text(json.dumps(nb))
    params = tmp_path / "_build" / "p" / "params" / "x.json"
    params.parent.mkdir(parents=True)
    params.write_text(json.dumps({"parameters": {"profile": "p"}, "data": "-"}))
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path / "results"))
    return tmp_path / "results" / "p"


WRITE = (
    "import os, pathlib\n"
    "s = pathlib.Path(os.environ['APD_RESULTS_STAGING'])\n"
    "(s / 'runs').mkdir(parents=True, exist_ok=True)\n"
    "(s / 'x.json').write_text('{\"v\": %d}')\n"
    "(s / 'runs' / 'x.json').write_text('{}')\n"
)


def test_a_chapter_commits_its_results_only_when_every_cell_succeeded(tmp_path, monkeypatch):
    dest = _project(tmp_path, monkeypatch, WRITE % 1)
    (dest / "tables").mkdir(parents=True)
    (dest / "tables" / "old.csv").write_text("a\n")  # written by the last run, not by this one
    (dest / "runs").mkdir()
    (dest / "runs" / "x.json").write_text(json.dumps({"results_sha256": {"tables/old.csv": "0"}}))
    out = build.run("x", "p", root=tmp_path)
    assert json.loads((dest / "x.json").read_text()) == {"v": 1} and not (dest / "tables" / "old.csv").exists()
    record = json.loads((dest / "runs" / "x.json").read_text())
    assert set(record["results_sha256"]) == {"x.json"} and record["cache_key"]
    assert json.loads(out.read_text())["metadata"]["papermill"]["input_path"] == "notebooks/x.ipynb"
    (tmp_path / "notebooks" / "x.ipynb").write_text(
        (tmp_path / "notebooks" / "x.ipynb")
        .read_text()
        .replace(json.dumps(WRITE % 1), json.dumps(WRITE % 2 + "1 / 0\n"))
    )
    with pytest.raises(BookError, match=r"failed in cell .*ZeroDivisionError(.|\n)*keeps the last successful run"):
        build.run("x", "p", root=tmp_path)
    assert json.loads((dest / "x.json").read_text()) == {"v": 1}  # the failed run's results were discarded
    assert not any((tmp_path / "results" / ".staging").rglob("*.json"))


def test_the_build_report_lists_every_chapter_from_its_run_record(tmp_path):
    results = tmp_path / "results"
    (results / "p" / "runs").mkdir(parents=True)
    rec = {"started": "2030-01-01T10:00:00", "wall_time_s": 3.25, "device": "cpu (x86_64, 2 threads)",
           "packages": {"apd": "0.1.0", "torch": "2.13.0+cpu"}, "results_sha256": {"a.json": "ab", "b.csv": "cd"}}  # fmt: skip
    (results / "p" / "runs" / "a.json").write_text(json.dumps(rec))
    page = build.status_markdown("p", ["a", "b"], results)
    row_a = next(line for line in page.splitlines() if line.startswith("| a |"))
    assert "2030-01-01 10:00:00" in row_a and "3.2 s" in row_a and "2 files, " in row_a
    assert "| b | never |" in page and "apd 0.1.0, torch 2.13.0+cpu" in page and "skipped" not in page
    line = "The paper's QA datasets are not on this machine: set APD_DATA_DIR; this section is skipped."
    (results / "p" / "b.json").write_text(json.dumps({"qa_data_missing": line, "n": 3}))
    assert f"- **b**: {line}" in build.status_markdown("p", ["a", "b"], results)
    assert build.STATUS_MARKER in (ROOT / "book" / "status.md").read_text()


def test_the_parameters_page_is_generated_from_the_notebooks():
    assert (ROOT / "book" / "parameters.md").read_text() == build.parameters_page(), "run `apd parameters --write`"
    assert "| `n_draws` | `20000` | `in [1, 1000000]` | random linear families checked |" in build.parameters_page()


def test_the_command_line_lists_the_chapters_and_profiles():
    done = subprocess.run([sys.executable, "-m", "apd", "list"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and "1. theorem1" in done.stdout and "smoke" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "apd", "prepare", "--profile", "nope"], capture_output=True, text=True
    )
    assert done.returncode == 1 and "no profile 'nope'" in done.stderr


@pytest.mark.book
def test_make_re_executes_exactly_the_chapters_downstream_of_a_change():
    """On the smoke build: nothing is out of date, and new parameters for the apd chapter re-execute
    it and the chapters that read it, and no other (make's dry run, -n; nothing runs)."""

    def dry(*extra):
        env = {**os.environ, "MAKEFLAGS": ""}
        cmd = ["make", "-n", "-f", "book.mk", "PROFILE=smoke", f"PY={sys.executable}", "notebooks", *extra]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
        assert done.returncode == 0, done.stderr
        return set(re.findall(r" -m apd run (\w+) ", done.stdout))

    assert dry() == set()
    readers = {"apd", "known_answer", "curves", "qa", "factuality", "ablations", "tutorial", "paper_vs_book"}
    assert dry("-W", "_build/smoke/params/apd.json") == readers
    assert dry("-W", "notebooks/theorem1.ipynb") == {"theorem1", "paper_vs_book"}
