"""The page helpers: readable tables (apd.report.tables.show), comparison words, short paths, progress
bars that stay off the pages, the run record as a real table, and the effective parameters."""

import doctest
import json
import os
import subprocess
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import apd
from apd.base import progress
from apd.build import kernel_environment, read_profile
from apd.report import results, tables
from apd.report.results import Run

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("module", [tables, progress], ids=lambda m: m.__name__)
def test_module_examples_run(module):
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0


def _cells(styler):
    html = styler.to_html()
    import re

    return re.findall(r"<t[dh][^>]*>([^<]*)</t[dh]>", html), html


def test_show_formats_by_kind_pads_and_dashes_missing_values():
    df = pd.DataFrame(
        {
            "steps": [5000.0, 12.0, np.nan],
            "count": [3, 40, 5],
            "KL": [0.35512, 0.338, np.nan],
            "err": [1.5e-14, 2e-3, 0.5],
            "size": [2.2e12, 9.7e5, 3e7],
            "T": [1.1, 1.5, 2.0],
            "name": ["a", None, "c"],
        },
        index=pd.Index([0.25, 0.5, 1.0], name="1/T"),
    )
    cells, html = _cells(tables.show(df, caption="demo"))
    shown = {"5,000", "12", "40", "0.355", "0.338", "1.50 × 10⁻¹⁴", "0.002", "2.20 × 10¹²", "970,000", "1.1", "2.0"}
    assert shown <= set(cells)
    assert "5000.000" not in html and "nan" not in html and "None" not in html
    assert cells.count(tables.MISSING) == 3
    assert {"0.25", "0.5", "1"} <= set(cells)  # numeric row labels, not 0.250000
    assert "padding" in html and "demo" in html and 'class="dataframe apd-table"' in html


def test_show_column_labels_overrides_and_options():
    wide = pd.DataFrame([[0.1, 0.2]], columns=[1.1, 4.0])
    cells, _ = _cells(tables.show(wide))
    assert "1.1" in cells and "4" in cells and "1.100000" not in cells
    cells, html = _cells(
        tables.show(
            pd.DataFrame({"gain": [0.0123], "p": [0.4]}), formats={"gain": "{:+.3f}"}, percent=["p"], index=False
        )
    )
    assert "+0.012" in cells and "40.0%" in cells and 'class="row_heading' not in html
    dup = pd.DataFrame([[1.0, 2.5]], columns=["x", "x"])  # duplicate labels still format
    assert "2.500" in _cells(tables.show(dup))[0]
    assert "0.123" in _cells(tables.show(pd.Series([0.1234], name="s")))[0]


def test_compare_and_better_words_end_with_than():
    assert tables.compare_word(1.0, 2.0) == "lower than"
    assert tables.compare_word(2.0, 1.0) == "higher than"
    assert tables.compare_word(1.0001, 1.0) == "the same as"
    assert tables.compare_word(np.nan, 1.0) == "not comparable with"
    assert tables.compare_word(1.0, 2.0, lower_is_better=True) == "lower (better) than"
    assert tables.better_word(2.0, 1.0, lower_is_better=False) == "better than"
    assert tables.better_word(1.0, 1.0 + 1e-12, lower_is_better=True, digits=9) == "the same as"
    for a, b in ((1, 2), (2, 1), (1, 1), (None, 1)):
        assert tables.compare_word(a, b).endswith(("than", "as", "with"))


@pytest.mark.parametrize("digits", [3, 4, 9])
def test_compare_flags_mark_the_words_outcome(digits):
    words = {"lower": "lower than", "higher": "higher than", "same": "the same as"}
    better = {"better": "better than", "worse": "worse than", "same": "the same as"}
    cases = [(1.0, 2.0), (2.0, 1.0), (1.0001, 1.0), (0.12341, 0.12344), (None, 1.0), (np.nan, 1.0), (np.inf, 1.0)]
    for a, b in cases:
        word = tables.compare_word(a, b, digits=digits)
        flags = tables.compare_flags(a, b, digits=digits)
        assert list(flags) == list(words) and {o for o, f in flags.items() if f} == {
            o for o, w in words.items() if w == word
        }
        assert sum(flags.values()) == (word != "not comparable with")
        for lower_is_better in (True, False):
            word = tables.better_word(a, b, lower_is_better=lower_is_better, digits=digits)
            flags = tables.compare_flags(a, b, digits=digits, lower_is_better=lower_is_better)
            assert list(flags) == list(better) and {o for o, f in flags.items() if f} == {
                o for o, w in better.items() if w == word
            }
    assert tables.compare_flags(1.0, 2.0, lower_is_better=True)["better"]
    assert tables.compare_flags(1.0, 2.0, lower_is_better=False)["worse"]


def test_progress_bars_follow_apd_progress(monkeypatch, capsys):
    monkeypatch.setenv("APD_PROGRESS", "0")
    assert not progress.progress_enabled(True)
    bar = progress.progress_bar(range(3), desc="hidden")
    assert list(bar) == [0, 1, 2] and bar.disable
    monkeypatch.setenv("APD_PROGRESS", "1")
    assert progress.progress_enabled(True) and not progress.progress_enabled(False)
    assert not progress.progress_bar(total=2, progress=True).disable
    assert progress.progress_bar(total=2, progress=False).disable


def test_a_long_step_says_what_it_does_where_a_bar_would_show(monkeypatch, capsys, tmp_path):
    """On a terminal (bars on) the note is a line on stderr naming the step and its cache folder;
    in the book's kernels (bars off, a progress file) it is the chapter's line; else nothing."""
    monkeypatch.delenv(progress.PROGRESS_FILE_ENV, raising=False)
    monkeypatch.setenv("APD_PROGRESS", "1")
    progress.progress_note("training ALM'", tmp_path / "apd")
    assert capsys.readouterr().err == f"apd: training ALM'; cached in {tmp_path / 'apd'}\n"
    progress.progress_note("training ALM'", progress=False)
    monkeypatch.setenv("APD_PROGRESS", "0")
    progress.progress_note("training ALM'")
    assert capsys.readouterr().err == ""
    monkeypatch.setenv(progress.PROGRESS_FILE_ENV, str(tmp_path / "state.json"))
    progress.progress_note("training ALM'", tmp_path / "apd")
    assert capsys.readouterr().err == ""
    assert json.loads((tmp_path / "state.json").read_text())["desc"] == "training ALM'"


def test_kernel_environment_sets_and_restores(monkeypatch):
    monkeypatch.delenv("APD_PROGRESS", raising=False)
    monkeypatch.setenv("PYTHONWARNINGS", "default")
    with kernel_environment():
        assert os.environ["APD_PROGRESS"] == "0" and os.environ["TQDM_DISABLE"] == "1"
        assert os.environ["PYTHONWARNINGS"].startswith("default,") and "IProgress" in os.environ["PYTHONWARNINGS"]
    assert "APD_PROGRESS" not in os.environ and os.environ["PYTHONWARNINGS"] == "default"


def test_kernel_without_progress_prints_no_bar_and_no_warning(tmp_path):
    code = (
        "import warnings; from apd.base.progress import progress_bar\n"
        "for _ in progress_bar(range(50), desc='train'): pass\n"
        "import tqdm.auto\n"
    )
    with kernel_environment():
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    assert out.returncode == 0, out.stderr
    assert "train" not in out.stderr and "%|" not in out.stderr and "Warning" not in out.stderr


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    monkeypatch.chdir(ROOT)
    namespace = {
        "profile": "smoke",
        "seed": 0,
        "n_draws": 200,
        "vocab_size": 50,
        "T_grid": [1.1, 2.0],
        "curvature_grid": [0.0, 0.01, 0.02, 0.05, 0.1, 0.2],
        "alm_log_size": 16.7555,
        "elm_log_size": 22.5864,
    }
    return Run.start("theorem1", namespace, show=False)


def test_changed_parameters_are_those_that_differ_from_the_parameters_cell(run):
    assert run.defaults is not None and run.defaults["n_draws"] == 20000
    assert set(run.changed_parameters()) == {"n_draws", "vocab_size", "T_grid"}
    assert run.changed_parameters()["n_draws"] == (200, 20000)
    assert results.notebook_defaults("no_such_chapter") is None


def test_run_record_is_an_html_table_with_the_changes(run):
    run.finish(show=False)
    record = json.loads((run.dir / "runs" / "theorem1.json").read_text())
    assert record["changed_parameters"] == {"n_draws": 200, "vocab_size": 50, "T_grid": [1.1, 2.0]}
    html = results.run_record_html(record)
    assert html.startswith("<table") and "Run record" in html and "|---|" not in html
    assert "<code>n_draws</code>" in html and "padding" in html


def test_warnings_go_to_the_run_log_under_the_book(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("APD_WARNINGS_TO_LOG", "1")
    before = warnings.showwarning
    try:
        r = Run.start("nb", {"profile": "unit"}, show=False)
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("a library complains", UserWarning, stacklevel=1)
        assert "a library complains" in (tmp_path / "unit" / "runs" / "nb.log").read_text()
        assert r.warnings_logged == 1
        r.finish(show=False)
        record = json.loads((tmp_path / "unit" / "runs" / "nb.json").read_text())
        assert "nb.log" in results.run_record_html(record)
    finally:
        warnings.showwarning = before


def test_api_reference_documents_every_front_door_name():
    page = (ROOT / "book" / "api.md").read_text()
    names = [n for n in apd.__all__ if not isinstance(getattr(apd, n), types.ModuleType)]
    missing = [n for n in names if f"apd.{n}\n" not in page]
    assert not missing, f"book/api.md lacks autodoc entries for {missing}"
    toc = (ROOT / "_toc.yml").read_text()
    assert "book/api" in toc and "notebooks/tutorial" in toc


def test_api_reference_lists_every_module():
    """The API page's module table is the package itself: every module, each summarised by its docstring."""
    page = (ROOT / "book" / "api.md").read_text()
    listed = set(page.split("## Every module", 1)[1].split()) if "## Every module" in page else set()
    modules = set()
    for path in (ROOT / "apd").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if parts[-1] != "__main__" and name != "apd":  # the front door is the page above
            modules.add(name)
    assert modules - listed == set(), f"book/api.md's module table lacks {sorted(modules - listed)}"
    assert {m for m in listed if m.startswith("apd.")} <= modules, "book/api.md lists a module that does not exist"


def test_tutorial_runs_in_every_profile():
    for profile in ("smoke", "default", "pythia", "hub-smoke"):
        assert "tutorial" in read_profile(ROOT / "profiles" / f"{profile}.yml")["notebooks"]


def test_show_folds_tables_wider_than_the_text():
    narrow = pd.DataFrame(np.ones((2, tables.MAX_COLUMNS - 1)))
    assert "<details" not in tables.show(narrow).to_html()
    wide = pd.DataFrame(np.ones((2, tables.MAX_COLUMNS)), columns=[f"c{i}" for i in range(tables.MAX_COLUMNS)])
    folded = tables.show(wide, caption="every variant")
    html = folded._repr_html_()
    assert html.startswith('<details class="apd-wide-table"><summary>every variant: a table of 2 rows and 8 columns')
    assert "c6" in html and "padding" in html
    assert "<details" not in tables.show(wide, index=False).to_html()  # 7 columns without the row labels
    assert "<details" in tables.show(narrow, fold=True).to_html()


def test_show_prints_values_to_the_precision_of_their_error():
    df = pd.DataFrame(
        {"gain": [0.024123, 0.0031], "gain_se": [0.0085, 0.0013], "NE_ER": [0.5512, 0.5], "NE_ER_se": [0.021, 0.2]}
    )
    cells, html = _cells(
        tables.show(df, errors={"gain": "gain_se", "NE_ER": "NE_ER_se"}, percent=["NE_ER", "NE_ER_se"])
    )
    assert {"0.0241", "0.0085", "0.0031", "0.0013", "55.1%", "2.1%", "50%", "20%"} <= set(cells), cells
    assert "text-align: right" in html
