"""apd.chapters.paper_vs_book on an empty and a tiny results folder."""

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

from apd.chapters import paper_vs_book as ch
from apd.chapters.apd import ApdHeadline
from apd.chapters.gluing import MissingResultError
from apd.report.claims import CHECKS, SCALED_EFFECTS, judge
from apd.report.results import Run


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    (tmp_path / "p").mkdir()
    return Run(stem="paper_vs_book", profile="p", parameters={})


def test_verdicts_glance_and_record(run):
    judged = judge("p")
    counts = ch.glue_verdicts(run, judged)
    assert sum(counts.values()) == run.values["n_claims"] == len(judged)
    assert ch.glance(judged).columns[0] == "verdict" and ch.glance(judged).shape[1] <= 7
    ch.record_claims(run, judged)
    first = judged["claim_id"].iloc[0]
    assert run.values[f"verdict_{first}"] == judged["verdict"].iloc[0]


def test_status_counts_put_the_status_first(run):
    frame = pd.DataFrame({"paper": ["Table 1", "Table 2"], "status": ["same rows", "cannot be regenerated"]})
    ch.glue_status(run, frame, "tables", ch.TABLE_STATUS)
    assert run.values["n_tables"] == 2 and run.values["n_tables_same"] == 1 and run.values["n_tables_missing"] == 0
    assert list(ch.status_first(frame).columns) == ["status", "paper"]


def test_status_counts_account_for_every_row(run):
    """Every status of the paper's tables has a count, "too few items" included, so the page's sentence
    covers every table; a status without a count is an error, not a table left out of the sentence."""
    statuses = ["same rows", "too few items", "too few items", "counterpart rows", "cannot be regenerated"]
    ch.glue_status(
        run, pd.DataFrame({"paper": [f"Table {i}" for i in range(5)], "status": statuses}), "tables", ch.TABLE_STATUS
    )
    counts = {k: run.values[f"n_tables_{k}"] for k in ch.TABLE_STATUS}
    assert counts["few"] == 2 and sum(counts.values()) == run.values["n_tables"] == 5
    with pytest.raises(ValueError, match="'half done' of the tables has no count"):
        ch.glue_status(run, pd.DataFrame({"status": ["half done"]}), "tables", ch.TABLE_STATUS)


def test_a_table_on_too_few_items_says_so_in_its_caption():
    tables = pd.DataFrame(
        {
            "paper": ["Table 4", "Table 5"],
            "status": ["too few items", "counterpart rows"],
            "ours": ["3 numbers; the same datasets, but only 1 qualifying item(s) in the smallest", "20 numbers"],
        }
    )
    caption = ch.table_caption("Table 4: the paper's rows beside ours", 4, tables)
    assert caption.startswith("Table 4: the paper's rows beside ours. Too few items to compare: ")
    assert "only 1 qualifying item(s)" in caption
    assert ch.table_caption("Table 5: ours", 5, tables) == "Table 5: ours"


def test_the_rules_text_describes_the_checks_the_verdicts_read():
    """The rules dropdown names the known-answer check that is read (the world's dev people) and the
    not-reproduced bar the checks use (the lower 95% bound of this build's CD-over-expert gain)."""
    nb = json.loads((Path(__file__).parents[1] / "notebooks" / "paper_vs_book.ipynb").read_text())
    rules = next(c["source"] for c in nb["cells"] if "the rules that turn the checks into a verdict" in c["source"])
    rules = " ".join(rules.split())
    known_answer = next(c for c in CHECKS if c.needs == "known_answer")
    assert "world's dev people" in known_answer.description and "world's dev people" in rules
    assert "synthetic families" not in rules
    assert all("lower 95% bound" in SCALED_EFFECTS[c] for c in ("C3_apd_more_factual", "C4_apd_better_qa_easy"))
    assert "times the lower 95% bound of this build's CD-over-expert gain" in rules
    # which claims read which precondition is glued from the claims' definitions, not typed
    for key in ("rules_gates", "rules_control", "rules_known_answer", "rules_premise"):
        assert f"{{glue:text}}`{key}`" in rules
    assert "A claim about APD needs" not in rules


def test_the_rules_name_the_claims_each_precondition_holds_for(run):
    ch.glue_rules(run, "default")
    v = run.values
    assert "C2" in v["rules_gates"] and "C2" not in v["rules_control"] and "C2" not in v["rules_known_answer"]
    assert v["rules_premise"] == "C1b" and "C3" in v["rules_control"]


def test_the_first_page_gets_intervals_the_known_answer_mix_and_the_blind_contexts(run, tmp_path):
    """CD against the expert comes with its 95% t interval over the people its error is over (as the
    claims' checks read it), the known-answer ratio with four decimals and its weight w, and obvious
    blindness with its text positions and questions."""
    results = {
        "apd": {"kl_cd_gain": 0.005944, "kl_cd_gain_se": 0.005845, "kl_cd_gain_people": 100},
        "factuality": {"ne_er_cd_gain": 0.0199, "ne_er_cd_gain_se": 0.01, "ne_er_cd_gain_people": 10},
        "known_answer": {
            "ka_world_ratio": 0.999217991320161,
            "ka_world_w": 0.05,
            "ka_world_gain": 0.000649,
            "ka_world_gain_se": 0.0001785,
            "ka_world_n_people": 100,
            "ka_condition_passes": 1,
        },
        "curves": {
            "all_blind_count": 762,
            "all_blind_both_right": 830,
            "blind_both_right": 3,
            "text_blind_both_right": 827,
        },
    }
    for stem, values in results.items():
        (tmp_path / "p" / f"{stem}.json").write_text(json.dumps(values))
    ch.glue_established(run, "p")
    v = run.values
    assert v["summary_est_kl_cd_ci"] == "[-0.0057, 0.0175]"  # t with 99 df, as the C5 precondition prints it
    assert v["summary_est_kl_cd_gain"] == "+0.0059 ± 0.0058"
    # +0.0199 ± 0.01 clears 1.96 se but not the t interval over 10 people (2.26 se): CD is better nowhere
    assert v["summary_est_ne_er_cd_ci"].startswith("[-0.00") and v["summary_est_cd_better_on"] == "n/a"
    assert v["summary_est_ka_ratio"] == pytest.approx(0.9992179913) and run.formats["summary_est_ka_ratio"] == "{:.4f}"
    assert v["summary_est_ka_w"] == 0.05 and v["summary_est_ka_people"] == 100 and v["summary_est_ka_holds"]
    assert v["summary_est_ka_ci"] == "[0.00029, 0.00100]"
    assert (v["summary_est_blind_text"], v["summary_est_blind_questions"]) == (827, 3)
    assert v["summary_est_blind_rate_paper_T"] == "n/a"  # no rate table of the curves chapter


def test_the_first_page_gets_cds_blindness_rate_at_the_papers_T_from_the_curves_rate_table(run, tmp_path):
    (tmp_path / "p" / "curves.json").write_text(json.dumps({"all_blind_count": 762}))
    tables = tmp_path / "p" / "tables"
    tables.mkdir()
    rows = [
        ("all contexts", "CD", 1.0, 0.918),
        ("all contexts", "CD", 2.0, 0.0699),
        ("all contexts", "APD", 1.0, 0.91),
        ("held-out text", "CD", 2.0, 0.5),
    ]
    pd.DataFrame(rows, columns=["group", "method", "T", "blindness rate"]).to_csv(
        tables / "curves_obvious_blindness.csv", index=False
    )
    assert ch.blind_rate("p", 2.0) == pytest.approx(0.0699) and ch.blind_rate("p", 4.0) is None
    ch.glue_established(run, "p")
    assert run.values["summary_est_blind_rate_paper_T"] == pytest.approx(0.0699)
    assert run.formats["summary_est_blind_rate_paper_T"] == "{:.3f}"


def _apd_values(**values):
    """A results dict of the APD chapter: every :class:`ApdHeadline` field (0) but ``values``."""
    return {**{f.name: 0 for f in dataclasses.fields(ApdHeadline)}, **values}


def test_summary_values_choose_one_apd_sentence(run, tmp_path):
    apd_values = _apd_values(
        gate_engaged=1, variant_used="distilled", kl_apd_gain=0.01, kl_apd_gain_se=0.002, kl_apd_gain_n=100
    )
    (tmp_path / "p" / "apd.json").write_text(json.dumps({**apd_values, "wall_time_s": 7200}))
    done = ch.book_results("p")
    assert done.apd.variant_used == "distilled" and done.theorem1 is None and done.seconds == 7200
    counts = ch.glue_verdicts(run, judge("p"))
    ch.glue_summary(run, done, counts, "p")
    v = run.values
    assert v["summary_engaged"] and v["summary_apd_closer"] and not (v["summary_kl_tie"] or v["summary_cd_closer"])
    assert v["summary_t1_err"] == "n/a" and v["summary_hours"] == pytest.approx(2.0)
    assert v["summary_variant"] == "distilled" and v["summary_kl_n"] == 100
    assert ch.headline_rows("p", done.apd) is None  # no apd_regime table
    nan_gain = ApdHeadline.from_results(_apd_values(kl_apd_gain=float("nan"), kl_apd_gain_se=0.1))
    assert ch.kl_gain(nan_gain) == ch.kl_gain(None) == (None, None)


def test_summary_reads_theorem1_and_wall_times_and_names_a_stale_chapter(run, tmp_path):
    (tmp_path / "p" / "theorem1.json").write_text(
        json.dumps(
            {
                "n_logits_checked": 5000,
                "max_abs_error": 2e-14,
                "max_rel_error": 1e-16,
                "float64_eps": 2.2e-16,
                "max_rel_error_in_eps": 0.5,
                "wall_time_s": 1800.5,
            }
        )
    )
    done = ch.book_results("p")
    assert done.apd is None and done.theorem1.n_logits_checked == 5000 and done.seconds == 1800.5
    ch.glue_summary(run, done, ch.glue_verdicts(run, judge("p")), "p")
    assert run.values["summary_t1_err"] == 2e-14 and run.values["summary_variant"] == "n/a"
    assert not (run.values["summary_engaged"] or run.values["summary_not_engaged"])
    (tmp_path / "p" / "apd.json").write_text(json.dumps({"gate_engaged": 1, "wall_time_s": 60}))  # an older run's
    with pytest.raises(MissingResultError, match="the apd chapter's results lack .*ONLY=apd"):
        ch.book_results("p")
