"""The smoke build (`make test` runs it before these tests): every chapter executed, results
written by the convention, run records present, HTML rendered."""
import json

import pytest

from apd.report import book
from apd.report.results import results_dir

pytestmark = pytest.mark.book


def test_every_chapter_executed_and_rendered(root, smoke_html):
    for stem in book.toc_notebooks():
        executed = root / "_build" / "smoke" / "book" / "notebooks" / f"{stem}.ipynb"
        assert executed.is_file(), stem
        nb = json.loads(executed.read_text())
        assert nb["metadata"]["apd"]["parameters"]["profile"] == "smoke"
        assert (smoke_html / "notebooks" / f"{stem}.html").is_file(), stem
        text = json.dumps(nb["cells"][-1]["outputs"])
        assert "Run record" in text, f"{stem} does not end with its run record"


def test_results_follow_the_convention():
    out = results_dir("smoke")
    for stem in book.toc_notebooks():
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
