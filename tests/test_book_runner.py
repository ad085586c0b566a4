"""The papermill runner: profile validation, overrides, and failures that name notebook and cell."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from apd.base.notebooks import BookError, notebook_parameters
from apd.book.cache import cache_key
from apd.book.execution import execute
from apd.book.profiles import load_profile, parse_overrides
from apd.book.project import notebook_path, toc_notebooks

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("profile", ["smoke", "default", "pythia", "hub-smoke"])
def test_every_profile_is_complete_and_valid(profile):
    params = load_profile(profile)
    assert set(params) == set(toc_notebooks())


# chapters scored against the synthetic world's truth run on pico in every profile
PICO_ONLY = {"ablations"}


def test_pythia_profile_names_hub_models_and_cuda():
    data = yaml.safe_load((ROOT / "profiles" / "pythia.yml").read_text())
    flat = json.dumps(data)
    for stem, params in (data["notebooks"] or {}).items():
        declared = notebook_parameters(notebook_path(stem))
        if "device" in declared:
            assert params.get("device") == "cuda", f"pythia profile should run {stem} on cuda"
        if "family" in declared and stem not in PICO_ONLY:
            assert params.get("family") == "pythia", stem
    assert "16.7555" in flat  # Pythia-70M's ln non-embedding size


def make_project(tmp_path: Path, cells: list[str], profile: dict) -> Path:
    (tmp_path / "apd").mkdir()
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: notebooks/nb\n")
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "id": "p",
                "metadata": {"tags": ["parameters"]},
                "execution_count": None,
                "outputs": [],
                "source": "profile = 'default'\nx = 1\nname = 'a'",
            }
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    for i, src in enumerate(cells):
        nb["cells"].append(
            {"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None, "outputs": [], "source": src}
        )
    (tmp_path / "notebooks" / "nb.ipynb").write_text(json.dumps(nb))
    (tmp_path / "profiles" / "p.yml").write_text(yaml.safe_dump({"notebooks": profile}))
    shutil.copy2(ROOT / "requirements.lock", tmp_path / "requirements.lock")
    return tmp_path


def test_typo_in_profile_fails_loudly(tmp_path):
    root = make_project(tmp_path, [], {"nb": {"xx": 2}})
    with pytest.raises(BookError, match=r"nb\.xx is not a parameter"):
        load_profile("p", root)


def test_missing_notebook_entry_and_unknown_notebook(tmp_path):
    root = make_project(tmp_path, [], {"other": {}})
    with pytest.raises(BookError) as err:
        load_profile("p", root)
    assert "has no entry" in str(err.value) and "not in _toc.yml" in str(err.value)


def test_unknown_profile_lists_known(tmp_path):
    root = make_project(tmp_path, [], {"nb": {}})
    with pytest.raises(BookError, match="known profiles: p"):
        load_profile("nope", root)


def test_overrides_are_parsed_and_checked(tmp_path):
    root = make_project(tmp_path, [], {"nb": {}})
    params = load_profile("p", root)
    assert parse_overrides(["nb.x=3", "nb.name=b c"], params, root) == {"nb": {"x": 3, "name": "b c"}}
    with pytest.raises(BookError, match="expected a string"):  # typed by the default, 'a'
        parse_overrides(["nb.name=[1, 2]"], params, root)
    with pytest.raises(BookError, match="not a parameter"):
        parse_overrides(["nb.y=3"], params, root)
    with pytest.raises(BookError, match="NOTEBOOK.PARAMETER=VALUE"):
        parse_overrides(["x=3"], params, root)


def test_failing_cell_names_notebook_and_cell(tmp_path):
    root = make_project(tmp_path, ["y = x + 1", "raise RuntimeError('boom ' + name)"], {"nb": {"x": 5}})
    out = root / "_build" / "p" / "nb.ipynb"
    with pytest.raises(BookError) as err:
        execute("nb", {"x": 5, "name": "zz", "profile": "p"}, out, root)
    msg = str(err.value)
    assert "notebooks/nb.ipynb" in msg and "cell" in msg and "RuntimeError: boom zz" in msg
    assert not out.exists()  # no half-executed notebook passes for a result


def test_execution_injects_parameters_hides_them_and_caches(tmp_path):
    root = make_project(tmp_path, ["assert x == 7 and profile == 'p'"], {"nb": {"x": 7}})
    out = root / "_build" / "p" / "nb.ipynb"
    assert execute("nb", {"x": 7, "profile": "p"}, out, root) == "executed"
    nb = json.loads(out.read_text())
    injected = [c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1 and "remove-cell" in injected[0]["metadata"]["tags"]
    assert "x = 7" in "".join(injected[0]["source"])
    assert execute("nb", {"x": 7, "profile": "p"}, out, root) == "cached"
    assert execute("nb", {"x": 7, "profile": "p"}, out, root, force=True) == "executed"


def test_cache_keys_chain_through_upstream_chapters(tmp_path):
    root = make_project(tmp_path, [], {"nb": {}})
    a = cache_key("nb", {"x": 1}, root, upstream="k1")
    assert a == cache_key("nb", {"x": 1}, root, upstream="k1")
    assert a != cache_key("nb", {"x": 1}, root, upstream="k2")
    assert a != cache_key("nb", {"x": 2}, root, upstream="k1")


def test_a_chapter_input_file_enters_its_cache_key(tmp_path):
    root = make_project(tmp_path, [], {"nb": {}})
    (root / "notebooks" / "testbed.ipynb").write_bytes((root / "notebooks" / "nb.ipynb").read_bytes())
    table = root / "docs" / "testbed" / "configurations.csv"
    table.parent.mkdir(parents=True)
    table.write_text("configuration\na\n")
    before = cache_key("testbed", {}, root), cache_key("nb", {}, root)
    table.write_text("configuration\na\nb\n")
    after = cache_key("testbed", {}, root), cache_key("nb", {}, root)
    assert before[0] != after[0] and before[1] == after[1]
    other = root / "mine.csv"
    other.write_text("configuration\nc\n")
    assert cache_key("testbed", {"table_path": str(other)}, root) != after[0]


def test_execution_hides_the_cells_whose_results_are_missing(tmp_path):
    # needs:/unless: markdown cells (apd.book.pages): after the run, the chapter's results decide
    write = (
        "import json, os, pathlib\n"
        "pathlib.Path(os.environ['APD_RESULTS_STAGING'], 'nb.json').write_text(json.dumps({'kl': 'n/a', 'n': 3}))"
    )
    root = make_project(tmp_path, [write], {"nb": {}})
    path = root / "notebooks" / "nb.ipynb"
    nb = json.loads(path.read_text())
    for i, (tags, text) in enumerate(
        [
            (["needs:kl"], "KL {glue:text}`kl`"),
            (["unless:kl"], "No world, so no KL."),
            (["needs:n"], "n = {glue:text}`n`"),
        ]
    ):
        nb["cells"].append({"cell_type": "markdown", "id": f"m{i}", "metadata": {"tags": tags}, "source": text})
    path.write_text(json.dumps(nb))
    out = root / "_build" / "p" / "nb.ipynb"
    assert execute("nb", {"profile": "p"}, out, root) == "executed"
    shown = {
        "".join(c["source"]): "remove-cell" not in c["metadata"]["tags"]
        for c in json.loads(out.read_text())["cells"]
        if c["cell_type"] == "markdown"
    }
    assert shown == {"KL {glue:text}`kl`": False, "No world, so no KL.": True, "n = {glue:text}`n`": True}
