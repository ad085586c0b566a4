"""The smoke build (`make test` runs it before these tests): every chapter executed, results
written by the convention, run records present, HTML rendered."""

import json

import pytest

from apd.build import chapters
from apd.report.results import results_dir

pytestmark = pytest.mark.book


def test_every_chapter_executed_and_rendered(root, smoke_html):
    for stem in chapters():
        executed = root / "_build" / "smoke" / "book" / "notebooks" / f"{stem}.ipynb"
        assert executed.is_file(), stem
        nb = json.loads(executed.read_text())
        assert nb["metadata"]["apd"]["parameters"]["profile"] == "smoke"
        assert (smoke_html / "notebooks" / f"{stem}.html").is_file(), stem
        text = json.dumps(nb["cells"][-1]["outputs"])
        assert "Run record" in text, f"{stem} does not end with its run record"


def test_results_follow_the_convention():
    out = results_dir("smoke")
    for stem in chapters():
        values = json.loads((out / f"{stem}.json").read_text())
        assert values["profile"] == "smoke"
        assert all(isinstance(v, (int, float, str, bool)) for v in values.values()), stem
        record = json.loads((out / "runs" / f"{stem}.json").read_text())
        assert record["profile"] == "smoke" and record["wall_time_s"] > 0
        assert record["packages"]["torch"].startswith("2.")
        for fig in record["figures"]:
            assert (out / "figures" / f"{fig}.png").stat().st_size > 0
            assert (out / "figures" / f"{fig}.pdf").stat().st_size > 0
        for table in record["tables"]:
            assert (out / "tables" / f"{table}.csv").stat().st_size > 0


def test_theorem1_identity_holds_in_smoke_results():
    values = json.loads((results_dir("smoke") / "theorem1.json").read_text())
    assert values["max_abs_error"] < 1e-9
    assert values["low_T_max_error"] < 1e-9
    assert values["hlm_log_size_T2"] == pytest.approx(2 * 22.5864 - 16.7555)


def test_apd_results_hold_every_variant_with_its_gates_and_its_scores_against_the_truth():
    """Issue 13: apd.json holds, for each APD variant, its gates, test KL to the truth and gold-token
    ppl with the paired gain over CD, beside the CD and expert references, and names the variant used."""
    from apd.amateur.variants import VARIANT_NAMES

    values = json.loads((results_dir("smoke") / "apd.json").read_text())
    for ref in ("kl_cd", "kl_elm", "nll_cd", "nll_elm"):
        assert isinstance(values[ref], float), ref
    for v in VARIANT_NAMES:
        assert values[f"{v}_gate_engaged"] in (0, 1) and isinstance(values[f"{v}_gate_reason"], str)
        for key in (
            "curve_alive",
            "collapsed",
            "moved_kl",
            "toward_expert",
            "lambda3",
            "kl",
            "nll",
            "kl_gain",
            "kl_gain_se",
            "kl_gain_mde",
            "nll_gain",
            "nll_gain_se",
            "dev_kl",
            "inv_T",
            "text_nll",
        ):
            assert isinstance(values[f"{v}_{key}"], (int, float)), f"{v}_{key}"
    assert values["variant_used"] in VARIANT_NAMES
    assert values["gate_engaged"] == values[f"{values['variant_used']}_gate_engaged"]
    assert values["kl_apdbest"] == pytest.approx(values[f"{values['variant_used']}_kl"])
    table = (results_dir("smoke") / "tables" / "apd_variants.csv").read_text().splitlines()
    assert len(table) == 1 + len(VARIANT_NAMES)
