import json
import math

import numpy as np
import pytest

from apd.report import results
from apd.report.results import Run


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    namespace = {"profile": "unit", "seed": 3, "T_grid": (1.5, 2.0), "_hidden": 1, "np": np, "In": []}
    return Run.start("nb", namespace)


def test_parameters_come_from_the_namespace(run):
    assert run.profile == "unit"
    assert run.parameters == {"profile": "unit", "seed": 3, "T_grid": [1.5, 2.0]}


def test_finish_writes_flat_json_and_run_record(run, tmp_path):
    run.glue("err", np.float64(1e-15))
    run.glue("n", np.int64(7))
    run.glue_text("missing", float("nan"), "{:.2f}")
    run.glue_text("present", 0.1234, "{:.2f}")
    assert run.finish(show=False) is None
    values = json.loads((tmp_path / "unit" / "nb.json").read_text())
    assert values["err"] == 1e-15 and values["n"] == 7 and values["missing"] == "n/a" and values["present"] == 0.1234
    assert values["profile"] == "unit" and values["wall_time_s"] >= 0
    saved = json.loads((tmp_path / "unit" / "runs" / "nb.json").read_text())
    assert (
        saved["parameters"]["seed"] == 3
        and "torch" in saved["packages"]
        and saved["device"].startswith(("cpu", "cuda"))
    )
    assert "Run record" in results.run_record_html(saved)
    assert results.load_results("unit", "nb")["n"] == 7


def test_a_page_filled_from_the_json_prints_text_glue_as_the_chapter_does(run, tmp_path):
    from apd.report.pages import render_markdown

    run.glue_text("kl", 2.41432, "{:.4f}")
    run.glue_text("share", 0.8123, "{:.0%}")
    run.glue_text("gone", None, "{:.2f}")
    run.glue_text("share_later_missing", 0.5, "{:.1f}")
    run.glue_text("share_later_missing", float("nan"), "{:.1f}")  # the last glue wins: no format for "n/a"
    run.glue("plain", 2.41432)
    run.finish(show=False)
    values = json.loads((tmp_path / "unit" / "nb.json").read_text())
    assert all(isinstance(v, (int, float, str, bool)) for v in values.values())  # the results stay flat
    formats = json.loads((tmp_path / "unit" / "runs" / "nb.json").read_text())[results.GLUE_FORMATS]
    assert formats == {"kl": "{:.4f}", "share": "{:.0%}"}
    text = "{glue:text}`kl`, {glue:text}`share`, {glue:text}`gone`, {glue:text}`share_later_missing`, "
    assert render_markdown(
        text + "{glue:text}`plain` and {glue:text}`kl:.1f`", {**values, results.GLUE_FORMATS: formats}
    ) == ("2.4143, 81%, n/a, n/a, 2.41 and 2.4")


def test_bad_values_are_refused(run):
    with pytest.raises(ValueError, match="finite"):
        run.glue("x", math.inf)
    with pytest.raises(TypeError, match="flat JSON"):
        run.glue("x", np.zeros(3))


def test_figures_and_tables_land_in_the_convention(run, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    fig, ax = plt.subplots()
    ax.plot([0, 1])
    png = run.savefig(fig, "f")
    assert png == tmp_path / "unit" / "figures" / "f.png" and png.stat().st_size > 0
    assert (tmp_path / "unit" / "figures" / "f.pdf").stat().st_size > 0
    csv = run.save_table(pd.DataFrame({"a": [1]}), "t")
    assert csv.read_text().startswith("a\n1")


def test_missing_results_name_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="make book PROFILE=x ONLY=nb"):
        results.load_results("x", "nb")


def test_format_value_never_prints_a_nonzero_number_as_zero():
    from apd.report.results import format_value

    assert format_value("{:+.4f}", -3.2e-04) == "-0.0003"
    assert format_value("{:+.4f}", -3.2e-05) == "-3.2 × 10⁻⁵"  # below 1e-4: scientific, no run of zeros
    assert format_value("{:.3f}", 2.7e-9) == "2.7 × 10⁻⁹"
    assert format_value("{:+.4f}", 0.0157) == "+0.0157"
    assert format_value("{:.4f}", 0.0) == "0.0000"  # zero stays zero
    assert format_value("{:.2%}", -2.2e-05) == "-0.002%"
    assert format_value("{:.3g}", 1e-9) == "1e-09"  # other formats untouched
    assert format_value("{}", "text") == "text"


def test_a_number_glued_without_a_format_reads_as_the_book_prints_numbers():
    from apd.report.results import format_value

    assert format_value(None, 2.0) == "2" and format_value("{}", 5000.0) == "5,000"
    assert format_value(None, 0.30000000000000004) == "0.3" and format_value(None, 2.191194474697113) == "2.19"
    assert format_value(None, 20000000) == "20,000,000" and format_value(None, "text") == "text"


def test_a_float_quoted_without_a_spec_is_glued_as_text_and_one_with_a_spec_as_a_number(tmp_path, monkeypatch):
    import myst_nb

    nb = tmp_path / "nb.ipynb"
    prose = "ratio {glue:text}`plain` and {glue:text}`spec:,.0f`, {glue}`both` and {glue:text}`both:.2f`"
    nb.write_text(json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": prose}]}))
    monkeypatch.setattr(results, "_notebook_file", lambda stem: nb if stem == "nb" else None)
    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=False: glued.__setitem__(name, value))
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    run = Run.start("nb", {"profile": "unit", "In": []}, show=False)
    assert results.prose_formats("nb") == {"plain": {""}, "spec": {",.0f"}, "both": {"", ".2f"}}
    for name in ("plain", "spec", "both", "unquoted"):
        run.glue(name, 8122.437)
    run.glue("whole", 56640.00000000002)
    assert glued["plain"] == "8,120"  # the book's default: three significant figures
    assert glued["spec"] == glued["both"] == glued["unquoted"] == 8122.437  # the prose's spec applies to a number
    assert glued["whole"] == 56640 and isinstance(glued["whole"], int)  # no round-off tail, no ".0"
    assert run.values["plain"] == 8122.437 and run.values["whole"] == 56640.00000000002  # the JSON keeps the number


def test_the_run_record_links_the_chapters_results_and_the_book_copies_them(run, tmp_path):
    import pandas as pd

    from apd.build import copy_results

    run.save_table(pd.DataFrame({"a": [1]}), "nb_table")
    run.glue("n", 3)
    run.finish(show=False)
    record = json.loads((tmp_path / "unit" / "runs" / "nb.json").read_text())
    page = results.run_record_html(record)
    assert '<a href="../results/nb.json">nb.json</a>' in page
    assert '<a href="../results/tables/nb_table.csv">tables/nb_table.csv</a>' in page
    html = tmp_path / "html"
    dest = copy_results("unit", html, root=tmp_path.parent)  # results_root reads APD_RESULTS_DIR
    assert json.loads((dest / "nb.json").read_text())["n"] == 3 and (dest / "tables" / "nb_table.csv").is_file()
    assert not (dest / "runs").exists()
