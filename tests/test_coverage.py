"""apd.report.beside and apd.report.coverage: the paper's tables and figures beside what a profile's
results folder holds (fake results folders, APD_RESULTS_DIR)."""

import pandas as pd
import pytest

from apd.chapters.paper_vs_book import FIGURE_STATUS
from apd.report import beside, coverage
from apd.report.beside import qa_summary_rows


@pytest.fixture
def results(fake_results):
    return fake_results


def _regenerated(results, datasets):
    rows = [
        {"paper_table": 2, "role": r, "dataset": d, "metric": "ppl", "value": v, "family": "pico"}
        for d in datasets
        for r, v in (("elm", 2.5), ("cd", 2.4), ("apd", 2.3))
    ]
    results("qa", {}, table="qa_paper_rows", df=pd.DataFrame(rows))


def test_no_rows_gives_a_reason(results):
    b = beside.paper_beside_ours(2, "p")
    assert not b.has_ours
    assert b.note.startswith(
        "Table 2, the paper's numbers only: chapter qa has not run under profile p; the paper's rows need Pythia"
    )
    assert list(b.frame.columns.get_level_values(2).unique()) == ["paper: Pythia"]
    assert b.frame.shape == (7, 11)  # Table 2: seven rows, eleven columns
    b = beside.paper_beside_ours(6, "p")
    assert not b.has_ours and "MTurk" in b.note
    b = beside.paper_beside_ours(3, "p", family="Pythia")  # Table 3 has no Pythia: both its families
    assert list(b.frame.columns.get_level_values(2).unique()) == ["paper: OPT", "paper: Qwen1.5"]
    assert b.frame.loc["APD", ("ARC", "acc", "paper: Qwen1.5")] == 0.720
    status = coverage.table_status("p").set_index("paper")["status"]
    assert status["Table 2"] == "not produced here" and status["Table 7"] == "cannot be regenerated"
    with pytest.raises(ValueError, match="tables 1-7"):
        beside.paper_beside_ours(8, "p")


def test_same_datasets_line_up_with_the_paper(results):
    _regenerated(results, ["LAMBADA"])
    results("qa", table="unrelated", df=pd.DataFrame({"role": ["x"], "value": [1]}))  # not the convention
    assert set(beside.regenerated_rows("p")["source"]) == {"qa_paper_rows"}
    b = beside.paper_beside_ours(2, "p", family="Pythia")
    assert b.same_datasets == ("LAMBADA",)
    f = b.frame
    big = "larger LLM (12B / 13B / 7B)"
    assert f.loc["APD", ("LAMBADA", "ppl", "ours")] == 2.3
    # the paper's number and ours sit side by side, dataset by dataset
    assert list(f.columns[:3]) == [
        ("LAMBADA", "ppl", "paper: Pythia"),
        ("LAMBADA", "ppl", "ours"),
        ("CommonsenseQA", "ppl", "paper: Pythia"),
    ]
    assert f.loc["APD", ("LAMBADA", "ppl", "paper: Pythia")] == 2.132  # Table 2, APD, LAMBADA
    assert f.loc[big, ("LAMBADA", "ppl", "paper: Pythia")] == 2.188  # LLM 12B
    assert list(f.index[:3]) == ["ELM alone (LLM 6.9B / 6.7B / 4B)", "CD", "APD"]
    assert pd.isna(f.loc[big, ("LAMBADA", "ppl", "ours")])
    assert coverage.table_status("p").set_index("paper").loc["Table 2", "status"] == "same rows"


def test_counterpart_rows_say_they_are_not_the_same_data(results):
    _regenerated(results, ["world QA (head)", "world QA (tail)"])
    b = beside.paper_beside_ours(2, "p")
    assert b.same_datasets == () and "no dataset in common" in b.note
    assert b.frame.loc["CD", ("world QA (tail)", "ppl", "ours")] == 2.4
    assert coverage.table_status("p").set_index("paper").loc["Table 2", "status"] == "counterpart rows"


def test_figure_status(results):
    out = results("theorem1", {}, figure="theorem1_proof_picture")
    results("curves", {})
    (out / "figures" / "curves_obvious_blindness_example.png").write_bytes(b"stale: not in the run record")
    st = coverage.figure_status("p").set_index("paper")
    assert st.loc["Figure 2", "status"] == "regenerated"
    assert st.loc["Figure 1", "status"] == "not produced here"
    assert "did not produce curves_obvious_blindness_example under profile p" in st.loc["Figure 1", "ours"]
    assert st.loc["Figure 3", "status"] == "cannot be regenerated"


def test_files_the_last_run_did_not_write_are_stale_and_ignored(results):
    """A CSV or figure left over from an earlier run (not in the chapter's run record) is never read."""
    out = results("qa", {"n": 1})
    stale = pd.DataFrame(
        {"paper_table": [2], "role": ["apd"], "dataset": ["LAMBADA"], "metric": ["ppl"], "value": [9.9]}
    )
    stale.to_csv(out / "tables" / "qa_old_rows.csv", index=False)
    assert beside.regenerated_rows("p").empty
    assert not beside.paper_beside_ours(2, "p").has_ours


def _summary(rows):
    return pd.DataFrame(
        [dict(zip(["dataset", "protocol", "metric", "method", "group", "value", "n"], r)) for r in rows]
    )


def test_the_qa_chapters_tables_become_rows_of_tables_2_4_and_5(results):
    rows = [
        ("LAMBADA", "paper", "ppl", m, "all", v, 40)
        for m, v in (("elm", 2.30), ("cd", 2.25), ("apd", 2.10), ("ref", 2.20))
    ]
    rows += [
        ("LAMBADA", "held-out", "ppl", "apd", "all", 9.99, 40),  # other protocol: not shown
        ("LAMBADA", "paper", "MRR", "elm", "all", 0.84, 4000),
        ("SQuAD (Q+P)", "paper", "ppl", "cd", "all", 2.24, 50),
    ]
    gaps = pd.DataFrame(
        {
            "dataset": ["LAMBADA"],
            "protocol": ["paper"],
            "metric": ["ppl"],
            "group": ["all"],
            "row": ["APD vs CD"],
            "value": [1.25],
        }
    )
    results("qa", {}, table="qa_datasets_summary", df=_summary(rows), parameters={"family": "pythia"})
    results("qa", table="qa_datasets_gaps", df=gaps)
    f = beside.paper_beside_ours(2, "p", family="Pythia").frame
    assert f.loc["APD", ("LAMBADA", "ppl", "ours")] == 2.10
    assert f.loc["larger LLM (12B / 13B / 7B)", ("LAMBADA", "ppl", "ours")] == 2.20
    assert f.loc["APD vs CD (% of the size gap)", ("LAMBADA", "ppl", "ours")] == 125.0  # fraction -> %
    assert f.loc["APD vs CD (% of the size gap)", ("LAMBADA", "ppl", "paper: Pythia")] == 138.52
    assert beside.paper_beside_ours(4, "p", family="Pythia").frame.loc["CD", ("SQuAD (Q+P)", "ppl", "ours")] == 2.24
    t5 = beside.paper_beside_ours(5, "p", family="Pythia").frame
    assert t5.loc["|D| (questions kept)", ("LAMBADA", "MRR", "ours")] == 4000
    assert t5.loc["|D| (questions kept)", ("LAMBADA", "MRR", "paper: Pythia")] == 5000
    status = coverage.table_status("p").set_index("paper")["status"]
    assert (status["Table 2"], status["Table 3"], status["Table 4"]) == ("same rows", "not produced here", "same rows")


def test_world_qa_rows_are_counterparts_by_bucket(results):
    rows = [("world", "paper", "ppl", m, g, v, 10) for g in ("all", "head") for m, v in (("cd", 1.9), ("apd", 1.8))]
    results("qa", {}, table="qa_world_summary", df=_summary(rows), parameters={"family": "pico"})
    b = beside.paper_beside_ours(2, "p", family="Pythia")
    assert b.has_ours and b.same_datasets == ()
    assert b.frame.loc["APD", ("world QA (head)", "ppl", "ours")] == 1.8
    assert coverage.table_status("p").set_index("paper").loc["Table 2", "status"] == "counterpart rows"


def test_same_rows_need_thirty_qualifying_items(results):
    rows = [("LAMBADA", "paper", "ppl", m, "all", v, 6) for m, v in (("elm", 2.3), ("cd", 2.25), ("apd", 2.1))]
    rows += [("LAMBADA", "paper", "MRR", "elm", "all", 0.84, 6)]
    results("qa", {}, table="qa_datasets_summary", df=_summary(rows), parameters={"family": "pythia"})
    row = coverage.table_status("p").set_index("paper").loc["Table 2"]
    assert row["status"] == "too few items"
    assert "only 6 qualifying item(s)" in row["ours"] and f"at least {coverage.MIN_SAME_ROWS_ITEMS}" in row["ours"]


def test_table6_has_counterpart_automatic_rows_and_says_the_human_columns_cannot_be(results):
    status = coverage.table_status("p").set_index("paper")
    assert status.loc["Table 6", "status"] == "not produced here"
    assert "human columns" in status.loc["Table 6", "ours"] and "REAL settings" in status.loc["Table 6", "ours"]
    rows = [
        {
            "paper_table": 6,
            "role": r,
            "family": "pico",
            "setting": s,
            "dataset": "pico world (exact checker)",
            "metric": m,
            "value": v,
        }
        for r, s, v in (("apd", "REAL, T_r=4.0", 60.0), ("apd", "top-p k20, p=0.8", 66.0))
        for m in ("NE_ER", "Dist-2")
    ]
    results("factuality", {}, table="factuality_table6_world", df=pd.DataFrame(rows))
    row = coverage.table_status("p").set_index("paper").loc["Table 6"]
    assert row["status"] == "counterpart rows" and "cannot be regenerated by any build" in row["ours"]
    b = beside.paper_beside_ours(6, "p", family="Pythia")
    assert b.has_ours and "human columns" in b.note and "no dataset in common" in b.note
    assert b.frame.loc["APD, REAL, T_r=4.0", ("pico world (exact checker)", "NE_ER", "ours")] == 60.0
    assert b.frame.loc["APD, REAL, T_r=4.0", ("FactualityPrompts", "NE_ER", "paper: Pythia")] == 37.5
    assert b.frame.loc["APD, REAL, T_r=4.0", ("FactualityPrompts", "Factuality", "paper: Pythia")] == 2.31
    assert coverage.table_status("p").set_index("paper").loc["Table 7", "status"] == "cannot be regenerated"


def test_figure_4bh_is_drawn_by_the_factuality_chapter(results):
    st = coverage.figure_status("p").set_index("paper")
    assert st.loc["Figure 4 (b, h)", "status"] == "not produced here"
    results("factuality", {}, figure="factuality_world_tradeoffs")
    st = coverage.figure_status("p").set_index("paper")
    assert st.loc["Figure 4 (b, h)", "status"] == "not produced here"  # ran without REAL settings
    assert "did not produce factuality_world_real, factuality_fp_real" in st.loc["Figure 4 (b, h)", "ours"]
    results("factuality", figure="factuality_world_real")
    row = coverage.figure_status("p").set_index("paper").loc["Figure 4 (b, h)"]
    # drawn without panel (h), OPT's: a counterpart, and the row says what the one figure drawn plots
    assert row["status"] == "counterpart figure" and "factuality_world_real" in row["ours"] and "OPT" in row["ours"]
    assert "it plots NE_ER and the share of true claims against Dist-2 on the world's prompts" in row["ours"]
    assert "Entail_R" not in row["ours"]  # FactualityPrompts' figure was not drawn
    results("factuality", figure="factuality_fp_real")
    row = coverage.figure_status("p").set_index("paper").loc["Figure 4 (b, h)"]
    assert "they plot" in row["ours"] and "Entail_R against Dist-2 on FactualityPrompts" in row["ours"]


def test_figures_the_book_draws_without_the_papers_split_are_counterparts(results):
    """Figures 7-10 split factual from nonfactual prompts; ours do not, so drawn they are counterpart
    figures that say what they show, and Figures 9-10 point at the true-claims figures."""
    results("factuality", {}, figure="factuality_world_tradeoffs")
    st = coverage.figure_status("p").set_index("paper")
    assert st.loc["Figures 7-8", "status"] == "counterpart figure"
    assert "does not split factual from nonfactual" in st.loc["Figures 7-8", "ours"]
    # only what was drawn is described: the world's figure, not FactualityPrompts'
    assert "on the world's prompts" in st.loc["Figures 7-8", "ours"]
    assert "FactualityPrompts" not in st.loc["Figures 7-8", "ours"]
    assert st.loc["Figures 9-10", "status"] == "not produced here"  # its figure is the true-claims one
    # the same world figure stands in for Figure 4 (a, c), whose paper version is on FactualityPrompts: a
    # counterpart too, as for Figures 7-8; drawn on FactualityPrompts as well, it is regenerated
    assert st.loc["Figure 4 (a, c)", "status"] == "counterpart figure"
    results("factuality", figure="factuality_fp_tradeoffs")
    assert coverage.figure_status("p").set_index("paper").loc["Figure 4 (a, c)", "status"] == "regenerated"
    results("factuality", figure="factuality_world_tradeoffs_true")
    row = coverage.figure_status("p").set_index("paper").loc["Figures 9-10"]
    assert row["status"] == "counterpart figure" and "factuality_world_tradeoffs_true" in row["ours"]
    assert "share of true claims against Rep" in row["ours"]
    assert set(coverage.figure_status("p")["status"]) <= set(FIGURE_STATUS.values())


def test_rows_without_a_value_are_not_promised(results):
    """A chapter that scored nothing for a table (no question qualified) has no rows of its own there:
    the caption says so instead of promising rows that the table does not show."""
    rows = [
        {
            "paper_table": 4,
            "role": r,
            "dataset": "SQuAD (Q+P)",
            "metric": "ppl",
            "value": float("nan"),
            "family": "pico",
        }
        for r in ("elm", "cd", "apd")
    ]
    results("qa", {}, table="qa_paper_rows", df=pd.DataFrame(rows))
    b = beside.paper_beside_ours(4, "p", family="Pythia")
    assert not b.has_ours and "ours" not in set(b.frame.columns.get_level_values(2))
    assert "scored nothing for Table 4" in b.note and "SQuAD (Q+P): no question qualified" in b.note


def test_a_dataset_with_no_scored_question_has_no_size_row():
    """|D| rows come from the scored datasets only, so a dataset where no question qualified does not
    count among Table 5's "same datasets"."""
    rows = [
        ("LAMBADA", "paper", "MRR", "elm", "all", 0.84, 40),
        ("MultiRC", "paper", "MRR", "elm", "all", float("nan"), 0),
    ]
    out = qa_summary_rows(_summary(rows), "pythia")
    sizes = out[out["metric"] == "|D|"]
    assert sizes["dataset"].tolist() == ["LAMBADA"] and sizes["value"].tolist() == [40]
