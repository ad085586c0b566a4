"""apd.report.chapters.testbed on a tiny controls table."""

import pandas as pd

from apd.report.chapters import testbed as ch
from apd.report.results import Run


def test_configurations_glue_and_the_table_in_the_text(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    run = Run(stem="testbed", profile="p", parameters={})
    table = pd.DataFrame({"configuration": ["a", "b"]})
    summary = pd.DataFrame(
        {
            "CD KL gain (dev 1/T)": [0.3, 0.4],
            "its se": [0.04, 0.05],
            "head flatten": [0.2, 0.3],
            "tail flatten": [0.3, 0.3],
            "train s": [1, 2],
            "passes": ["2 of 4", "4 of 4"],
        },
        index=pd.Index(["a", "b"], name="configuration"),
    )
    ch.glue_configurations(run, table, summary)
    assert run.values["best_config"] == "b" and run.values["all_pass_configs"] == "b"
    shown = ch.in_text(summary)
    assert shown.columns[0] == "passes" and shown.shape[1] + 1 <= 7 and shown.iloc[0, 1] == "+0.300 ± 0.040"
    assert ch.verdict_first(summary).columns[0] == "passes"
    ch.glue_configurations(run, table.iloc[:0], pd.DataFrame())
    assert run.values["best_passes"] == "none"


def test_docstring_examples_of_the_chapter_modules_run():
    import doctest

    from apd.report.chapters import ablations, family, gluing, paper_vs_book, qa, testbed

    for module in (ablations, family, gluing, paper_vs_book, qa, testbed):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
        assert result.attempted and result.failed == 0, module.__name__
