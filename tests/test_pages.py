"""Which paragraphs a chapter's page shows (``apd.report.pages``), and the chapters' text under a
Hub family (the ``pythia`` profile) read from a synthetic results file, without running anything.

``tests/data/pythia_results/<stem>.json`` hold what the chapters glue under a Hub family: the
values of the ``hub-smoke`` profile (the pythia profile's code path on stand-in members; no world,
so every world key is missing), with the profile renamed. Regenerate them after a chapter glues
new keys: run the hub-smoke chapters (tests/test_hub_smoke.py) and
``python tests/test_pages.py results/hub-smoke``."""

import json
import sys
from pathlib import Path

import pytest

from apd.report import pages
from apd.build import chapters, notebook_path

DATA = Path(__file__).parent / "data" / "pythia_results"
HUB_CHAPTERS = ["family", "curves", "apd", "qa", "factuality", "paper_vs_book"]


def test_present_and_conditions():
    assert pages.present(0) and pages.present("head") and pages.present(0.0)
    for missing in (None, float("nan"), False, "", "n/a", "n/a (a Hub family)", "none found", "none", "\u2014"):
        assert not pages.present(missing), missing
    assert pages.conditions(["hide-input", "needs:a", "unless:b", "needs:"]) == [("needs", "a"), ("unless", "b")]
    assert pages.cell_shown(["needs:a", "unless:b"], {"a": 1, "b": "n/a"})
    assert not pages.cell_shown(["needs:a", "unless:b"], {"a": 1, "b": 2})


def test_select_cells_hides_failing_conditions_only():
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {"tags": ["needs:kl"]}, "source": "KL {glue:text}`kl`"},
            {"cell_type": "markdown", "metadata": {"tags": ["unless:kl"]}, "source": "No world: no KL."},
            {"cell_type": "code", "metadata": {"tags": ["hide-input"]}, "source": "x = 1"},
            {"cell_type": "markdown", "metadata": {}, "source": "Always."},
        ]
    }
    assert pages.select_cells(nb, {"kl": "n/a"}) == [0]
    assert nb["cells"][0]["metadata"]["tags"] == ["needs:kl", "remove-cell"]
    assert "remove-cell" not in nb["cells"][1]["metadata"]["tags"]
    assert pages.page_markdown(nb, {"kl": "n/a"}) == ["No world: no KL.", "Always."]
    fresh = {"cells": [dict(c, metadata={"tags": list(c["metadata"].get("tags", []))}) for c in nb["cells"]]}
    fresh["cells"][0]["metadata"]["tags"] = ["needs:kl"]
    assert pages.page_markdown(fresh, {"kl": 0.25}) == ["KL 0.25", "Always."]


def test_render_markdown_and_missing_walls():
    text = pages.render_markdown("{glue:text}`a:.2f`, {glue}`b` and {glue:text}`c`.", {"a": 1 / 3, "b": "x"})
    assert text == "0.33, x and <<c not glued>>."
    assert pages.paragraphs("one\ntwo\n\n- item a\n- item b") == ["one two", "- item a", "- item b"]
    assert pages.missing_walls(["APD n/a, CD n/a.", "one n/a (no world).", "a \u2014 b \u2014 c", "x-\u2014"]) == [
        "APD n/a, CD n/a.",
        "a \u2014 b \u2014 c",
    ]


def _chapter_text(stem, values):
    nb = json.loads(notebook_path(stem).read_text())
    return [p for md in pages.page_markdown(nb, values) for p in pages.paragraphs(md)]


@pytest.mark.parametrize("stem", HUB_CHAPTERS)
def test_hub_family_pages_have_no_walls_of_missing_values(stem):
    """Under a Hub family a measure that does not exist is said once, with its reason: no paragraph
    of n/a, no 'n/a n/a', and every glue reference the page shows is one the chapter glues."""
    values = json.loads((DATA / f"{stem}.json").read_text())
    assert values["profile"] == "pythia"
    text = _chapter_text(stem, values)
    unglued = [p for p in text if "not glued>>" in p]
    assert not unglued, f"{stem}: the page refers to values the chapter does not glue: {unglued}"
    walls = pages.missing_walls(text)
    assert not walls, f"{stem}: paragraphs made of missing values under pythia:\n" + "\n".join(walls)
    assert not [p for p in text if "n/a n/a" in p]
    if stem != "paper_vs_book":
        assert any(p.startswith("**What this chapter finds.**") for p in text), stem


def test_what_this_chapter_finds_opens_every_chapter():
    for stem in chapters():
        if stem == "tutorial":
            continue
        nb = json.loads(notebook_path(stem).read_text())
        first = [c["source"] for c in nb["cells"][:6] if c["cell_type"] == "markdown"]
        assert any("**What this chapter finds.**" in s for s in first), stem


def _write_fixtures(src: Path) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    for stem in HUB_CHAPTERS:
        values = json.loads((src / f"{stem}.json").read_text())
        values["profile"] = "pythia"
        values.pop("wall_time_s", None)
        if "profile_name" in values:
            values["profile_name"] = "pythia"
        (DATA / f"{stem}.json").write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    _write_fixtures(Path(sys.argv[1]))


def test_hub_family_apd_results_have_every_variant_and_its_gates():
    """Under a Hub family the APD chapter still trains and gates every variant; its world scores are
    missing (no truth), said once rather than as walls of n/a."""
    from apd.amateur.variants import VARIANT_NAMES

    values = json.loads((DATA / "apd.json").read_text())
    for v in VARIANT_NAMES:
        assert values[f"{v}_gate_engaged"] in (0, 1) and isinstance(values[f"{v}_curve_alive"], float)
        assert not pages.present(values[f"{v}_kl"]) and pages.present(values[f"{v}_text_nll"])
    assert values["variant_used"] in VARIANT_NAMES
