"""apd.report.evidence: claims judged against fake results directories (APD_RESULTS_DIR)."""

import json

import pandas as pd
import pytest

from apd.report import beside, coverage, findings, paper
from apd.report import claims as claims_mod
from apd.report import evidence as evidence_mod
from apd.report.evidence import Cell, PaperClaim
from apd.report.evidence import EvidenceSpec as E
from apd.report.numbers import format_pm
from apd.report.results import DamagedResultsError


@pytest.fixture
def results(tmp_path, monkeypatch):
    """A fake results root (profile "p" unless told). ``results(stem, {key: value})`` writes a chapter's
    JSON; ``results(stem, table=name, df=df)`` / ``results(stem, figure=name)`` write a table / a
    figure and list it in the chapter's run record, as ``Run`` does."""
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))

    def write(stem, values=None, table=None, df=None, figure=None, profile="p", parameters=None):
        out = tmp_path / profile
        for sub in ("tables", "figures", "runs"):
            (out / sub).mkdir(parents=True, exist_ok=True)
        if values is not None:
            (out / f"{stem}.json").write_text(json.dumps({**values, "profile": profile}))
        record_path = out / "runs" / f"{stem}.json"
        record = json.loads(record_path.read_text()) if record_path.exists() else {"figures": [], "tables": []}
        if parameters is not None:
            record["parameters"] = parameters
        if table is not None:
            df.to_csv(out / "tables" / f"{table}.csv", index=False)
            record["tables"].append(table)
        if figure is not None:
            (out / "figures" / f"{figure}.png").write_bytes(b"png")
            record["figures"].append(figure)
        record_path.write_text(json.dumps(record))
        return out

    return write


def one(claims, profile="p"):
    return evidence_mod.judge(claims, profile).iloc[0]


# ----------------------------------------------------------------------------------------------
# comparisons (hand-computed)


def test_comparisons_decide_and_show_their_numbers_in_words():
    o = evidence_mod.less_than()(["APD's ppl", "CD's"], [1.0, 2.0])
    assert o.holds and o.text == "tested: APD's ppl is below CD's; measured 1 against 2: holds"
    o = evidence_mod.less_than(margin=1.5)(["a", "b"], [1.0, 2.0])  # 1 < 2 - 1.5 = 0.5 is false
    assert not o.holds and o.text == "tested: a is more than 1.5 below b; measured 1 against 2: does not hold"
    assert evidence_mod.greater_than()(["a", "b"], [0.25, 0.125]).holds
    assert not evidence_mod.greater_than()(["a", "b"], [0.125, 0.125]).holds  # strict
    assert evidence_mod.at_most(1e-9)(["the gap"], [1.4e-14]).text == (
        "tested: the gap is at most 1 × 10⁻⁹; measured 1.4 × 10⁻¹⁴: holds"
    )
    assert not evidence_mod.at_least(1)(["n"], [0]).holds
    assert (
        evidence_mod.at_least(1)(["the count"], [5000.0]).text
        == "tested: the count is at least 1; measured 5,000: holds"
    )
    # a yes/no result: the same test as at_least(1), told by its name and verdict alone
    assert evidence_mod.flag()(["the gates pass"], [1.0]).text == "tested: the gates pass: holds"
    assert not evidence_mod.flag()(["the gates pass"], [0.0]).holds
    # two different numbers never print alike: more digits where three would not tell them apart
    assert (
        evidence_mod.less_than()(["a", "b"], [1.2297, 1.2301]).text
        == "tested: a is below b; measured 1.2297 against 1.2301: holds"
    )
    # |47.44 - 48.57| = 1.13 <= 0.1 * 48.57 = 4.857 -> similar; |30 - 48.57| = 18.57 -> not
    assert evidence_mod.within_relative(0.1)(["apd", "cd"], [47.44, 48.57]).holds
    assert not evidence_mod.within_relative(0.1)(["apd", "cd"], [30.0, 48.57]).holds
    assert evidence_mod.is_largest()(["h", "t", "l"], [0.4, 0.3, 0.1]).holds
    assert not evidence_mod.is_largest()(["h", "t", "l"], [0.3, 0.3, 0.1]).holds  # a tie does not stand out
    assert not evidence_mod.is_largest()(["h", "t", "l"], [0.2, 0.3, 0.1]).holds
    o = evidence_mod.is_largest()(["the gain on head", "on torso", "on tail"], [0.4, 0.3, 0.1])
    assert o.text == (
        "tested: the gain on head is larger than on torso and on tail; measured 0.4; on torso 0.3 and on tail 0.1: holds"
    )
    o = evidence_mod.within_relative(0.1)(["APD's Dist-2", "CD's"], [30.0, 48.57])
    assert o.text == (
        "tested: APD's Dist-2 is within 10% of CD's; measured 30 against 48.6, a gap of 18.6 or 38% of the larger: "
        "does not hold"
    )
    # (2.4 - 2.1) = 0.3 > (7.7 - 7.75) = -0.05
    o = evidence_mod.difference_larger()(["a", "b", "c", "d"], [2.4, 2.1, 7.7, 7.75])
    assert o.holds and o.text == (
        "tested: a minus b is larger than c minus d; measured 0.3 (2.4 - 2.1) against -0.05 (7.7 - 7.75): holds"
    )
    with pytest.raises(ValueError, match="needs 2 value"):
        evidence_mod.less_than()(["a"], [1.0])
    with pytest.raises(ValueError, match="at least two"):
        evidence_mod.is_largest()(["a"], [1.0])


def test_bad_specs_fail_loudly():
    with pytest.raises(ValueError, match="needs 2 value"):
        E("x", "a", evidence_mod.less_than(), "one key for a two-key comparison")
    with pytest.raises(ValueError, match="kind must be one of"):
        E("x", "a", evidence_mod.at_least(1), "d", kind="maybe")
    with pytest.raises(TypeError, match="JSON key names"):
        E("x", (1, 2), evidence_mod.less_than(), "d")
    with pytest.raises(ValueError, match="agg must be one of"):
        Cell("t", "c", agg="median")
    with pytest.raises(ValueError, match="one non-empty text per key"):
        E("x", ("a", "b"), evidence_mod.less_than(), "d", names=("only one",))
    with pytest.raises(ValueError, match="reads 0 standard error"):
        E("x", ("a", "b"), evidence_mod.less_than(), "d", clusters=(evidence_mod.Clusters("people", "n"),))
    with pytest.raises(TypeError, match="Clusters key"):
        evidence_mod.Clusters("people", 3)


# ----------------------------------------------------------------------------------------------
# verdicts


def claim(*evidence):
    return PaperClaim("X", "a claim", evidence)


def test_reproduced_when_every_test_holds(results):
    results("qa", {"ppl_apd": 2.132, "ppl_cd": 2.237, "n": 5})
    row = one(
        [
            claim(
                E("qa", ("ppl_apd", "ppl_cd"), evidence_mod.less_than(), "APD below CD", names=("APD's ppl", "CD's")),
                E("qa", "n", evidence_mod.at_least(1), "some questions", kind="precondition"),
            )
        ]
    )
    assert row.verdict == "reproduced"
    assert row.reason == "all 1 tests hold (and 1 precondition(s))"
    assert "test, holds: tested: APD's ppl is below CD's; measured 2.13 against 2.24: holds" in row.evidence
    assert "precondition, holds: tested: qa.n is at least 1; measured 5: holds" in row.evidence  # no names: the key
    assert (row.n_tests, row.n_hold, row.n_fail, row.n_missing) == (1, 1, 0, 0)


def test_not_reproduced_shows_the_numbers(results):
    results("qa", {"ppl_apd": 2.5, "ppl_cd": 2.237})
    row = one([claim(E("qa", ("ppl_apd", "ppl_cd"), evidence_mod.less_than(), "APD below CD"))])
    assert row.verdict == "not reproduced"
    assert row.reason == "tested: qa.ppl_apd is below qa.ppl_cd; measured 2.5 against 2.24: does not hold"


def test_missing_chapter_and_missing_key_are_not_testable(results):
    row = one([claim(E("qa", ("ppl_apd", "ppl_cd"), evidence_mod.less_than(), "d"))])
    assert row.verdict == "not testable here"
    assert row.reason == "chapter qa has not run under profile p (no results/p/qa.json)"
    results("qa", {"ppl_apd": 2.0})
    row = one([claim(E("qa", ("ppl_apd", "ppl_cd"), evidence_mod.less_than(), "d"))])
    assert row.verdict == "not testable here"
    assert row.reason == "chapter qa did not produce key ppl_cd under profile p"
    assert row.n_missing == 1


def test_text_and_nan_values_are_missing_not_guessed(results):
    results("curves", {"blind_rate": "n/a", "flag": True})
    row = one([claim(E("curves", "blind_rate", evidence_mod.at_least(0), "d"))])
    assert row.verdict == "not testable here"
    assert row.reason == "chapter curves reported blind_rate = 'n/a' under profile p, not a number"
    row = one([claim(E("curves", "flag", evidence_mod.at_least(0), "d"))])
    assert row.reason == "chapter curves reported flag = True under profile p, not a number"


def test_a_failing_test_beats_a_missing_one_and_says_both(results):
    results("qa", {"a": 3.0, "b": 1.0})
    row = one(
        [
            claim(
                E("qa", ("a", "b"), evidence_mod.less_than(), "d"), E("apd", ("x", "y"), evidence_mod.less_than(), "d")
            )
        ]
    )
    assert row.verdict == "not reproduced"
    assert row.reason == (
        "tested: qa.a is below qa.b; measured 3 against 1: does not hold (not testable here: chapter apd has "
        "not run under profile p (no results/p/apd.json))"
    )


def test_precondition_failing_makes_it_not_testable_even_if_a_test_fails(results):
    results("curves", {"blind_both_right": 0, "blind_count": 0})
    row = one(
        [
            claim(
                E("curves", "blind_both_right", evidence_mod.at_least(1), "d", kind="precondition"),
                E("curves", "blind_count", evidence_mod.at_least(1), "d"),
            )
        ]
    )
    assert row.verdict == "not testable here"
    assert (
        row.reason == "precondition not met: tested: curves.blind_both_right is at least 1; measured 0: does not hold"
    )


def test_context_is_shown_but_never_decides(results):
    results("curves", {"r2_median": 0.5, "hits": 3})
    row = one(
        [
            claim(
                E("curves", "r2_median", evidence_mod.at_least(0.9), "linear?", kind="context"),
                E("curves", "hits", evidence_mod.at_least(1), "d"),
            )
        ]
    )
    assert row.verdict == "reproduced"
    assert (
        "context, does not hold: tested: curves.r2_median is at least 0.9; measured 0.5: does not hold" in row.evidence
    )
    assert row.n_tests == 1


def test_profile_scoped_evidence(results):
    results("qa", {"a": 1.0, "b": 2.0})
    c = claim(E("qa", ("a", "b"), evidence_mod.less_than(), "d", profiles=("pythia",)))
    row = one([c])
    assert row.verdict == "not testable here" and row.reason == "no test is defined for profile p"
    assert evidence_mod.checks([c], "p").empty


def test_cells_read_one_row_or_an_aggregate(results):
    df = pd.DataFrame(
        {
            "T": [1.0, 2.0, 2.0],
            "bucket": ["all", "all", "head"],
            "kl_cd": [0.3, 0.1, float("nan")],
            "kl_elm": [0.25, 0.35, 0.4],
        }
    )
    results("curves", {}, table="hlm", df=df)
    r = evidence_mod.Results("p")
    assert r.number("curves", Cell("hlm", "kl_cd", (("T", 2.0), ("bucket", "all")))) == 0.1
    assert r.number("curves", Cell("hlm", "kl_elm", agg="mean")) == pytest.approx(1.0 / 3)
    assert r.number("curves", Cell("hlm", "kl_elm", (("bucket", "all"),), agg="max")) == 0.35
    assert r.number("curves", Cell("hlm", "kl_elm", (("bucket", "tail"),), agg="count")) == 0
    problems = {
        Cell("nope", "kl_cd"): "chapter curves did not produce table nope.csv under profile p",
        Cell("hlm", "kl"): "has no column 'kl' under profile p (its columns: T, bucket, kl_cd, kl_elm)",
        Cell(
            "hlm", "kl_cd", (("bucket", "all"),)
        ): "has 2 rows where bucket='all' under profile p, expected exactly one",
        Cell("hlm", "kl_cd", (("bucket", "tail"),)): "table hlm.csv of chapter curves has no rows where bucket='tail'",
        Cell("hlm", "kl_cd", agg="mean"): "has empty or non-numeric 'kl_cd' cells in its rows under profile p",
    }
    for cell, msg in problems.items():
        row = one([claim(E("curves", cell, evidence_mod.at_least(0), "d"))])
        assert row.verdict == "not testable here" and msg in row.reason, (cell, row.reason)
    row = one(
        [
            claim(
                E(
                    "curves",
                    (
                        Cell("hlm", "kl_cd", (("bucket", "all"),), agg="mean"),
                        Cell("hlm", "kl_elm", (("bucket", "all"),), agg="mean"),
                    ),
                    evidence_mod.less_than(),
                    "d",
                )
            )
        ]
    )
    assert row.verdict == "reproduced"  # mean 0.2 < mean 0.3
    assert " is below " in row.evidence and row.evidence.endswith("; measured 0.2 against 0.3: holds")


# ----------------------------------------------------------------------------------------------
# the paper's claims, wired


def test_paper_claims_cover_the_papers_eight_c1_split_in_two_and_every_profile_has_tests():
    claims = claims_mod.paper_claims()
    assert [c.id for c in claims] == [c["id"] for c in paper.claim_texts()]
    assert len(claims) == 9 and claims[-1].id == "C8_real_apd_complementary"
    assert [c.id for c in claims[:2]] == ["C1a_cd_identity", "C1b_cd_hlm_closer"]
    for profile in ("smoke", "default", "pythia"):
        for c in claims:
            tests = [s for s in c.evidence if s.kind == "test" and s.applies_to(profile)]
            assert tests, (profile, c.id)


def _smoke_like(
    results,
    *,
    r2=0.80,
    premise=0,
    kl_cd=(0.58, 0.47),
    kl_elm=(0.29, 0.24),
    hlm_gain=(-0.265, 0.02),
    both_right=0,
    blind=0,
    apd_rate="undefined (no such contexts)",
    cd_rate="undefined (no such contexts)",
    blind_gain=(None, None),
    engaged=1,
):
    results("theorem1", {"max_abs_error": 1.42e-14})
    results("apd", {"gate_engaged": engaged, "gate_reason": "all gates pass" if engaged else "curve model inert"})
    results(
        "curves",
        {
            "r2_median": r2,
            "premise_holds": premise,
            "hlm_gain": hlm_gain[0],
            "hlm_gain_se": hlm_gain[1],
            "all_blind_cd_minus_apd": blind_gain[0],
            "all_blind_cd_minus_apd_se": blind_gain[1],
            "hlm_n_T": len(kl_cd),
            "blind_both_right": 0,
            "all_blind_both_right": both_right,
            "all_blind_count": blind,
            "all_blind_apd_rate": apd_rate,
            "all_blind_cd1_rate": cd_rate,
        },
    )
    results(
        "curves",
        table="curves_hlm_vs_real",
        df=pd.DataFrame(
            {
                "T": [2.0, 3.0][: len(kl_cd)],
                "KL(real || CD-HLM), full vocab": list(kl_cd),
                "KL(real || ELM), full vocab": list(kl_elm),
            }
        ),
    )


def test_claims_1_and_2_on_results_like_the_smoke_build(results):
    """The numbers of a smoke build: the identity holds to round-off (C1a reproduced); the curvature
    premise fails, so C1b is not testable, whatever its consequence reads; no question is answered
    right by both expert and amateur."""
    _smoke_like(results)
    out = evidence_mod.judge(claims_mod.paper_claims(), "p").set_index("claim_id")
    assert out.loc["C1a_cd_identity", "verdict"] == "reproduced"
    assert out.loc["C1b_cd_hlm_closer", "verdict"] == "not testable here"
    assert out.loc["C1b_cd_hlm_closer", "reason"].startswith(
        "precondition not met: tested: at every T tried, curvature explains less than the expert's distance to the "
        "real member: does not hold"
    )
    # with the premise met, the paired consequence decides: CD's HLM farther from the real member
    _smoke_like(results, premise=1)
    out = evidence_mod.judge(claims_mod.paper_claims(), "p").set_index("claim_id")
    assert out.loc["C1b_cd_hlm_closer", "verdict"] == "not reproduced"
    # the paper gives no effect in these units, so the findings' gloss says where the interval lies
    text = findings.findings_markdown(out.reset_index(), claims_mod.paper_claims(), "p", "")
    c1b = next(line for line in text.splitlines() if line.startswith("- **C1b**"))
    assert "(the interval lies below 0)" in c1b and "excludes the paper's effect" not in c1b
    assert "CD's hypothetical LM) (nats) is above 0" in out.loc["C1b_cd_hlm_closer", "reason"]
    assert "; measured -0.265 ± 0.020" in out.loc["C1b_cd_hlm_closer", "reason"]
    # R^2 is context now: a low R^2 no longer vetoes C1b
    assert "r2_median" not in out.loc["C1b_cd_hlm_closer", "preconditions"]
    assert out.loc["C2_obvious_blindness", "verdict"] == "not testable here"
    assert out.loc["C2_obvious_blindness", "reason"].startswith(
        "precondition not met: tested: the number of contexts where the expert and the amateur both rank the right "
        "token first is at least 1; measured 0"
    )
    for cid in ("C6_more_midsize_members_help", "C7_probability_space_and_flip"):
        assert out.loc[cid, "verdict"] == "not testable here"
        assert "has not run under profile p" in out.loc[cid, "reason"]
    # C3, C4, C5 and C8's tests are written per kind of profile (pico world / Hub datasets); "p" is neither
    for cid in ("C3_apd_more_factual", "C4_apd_better_qa_easy", "C5_on_the_fly_worse", "C8_real_apd_complementary"):
        assert out.loc[cid, "reason"] == "no test is defined for profile p"
    assert evidence_mod.verdict_counts(out) == {
        "reproduced": 1,
        "not reproduced": 1,
        "not testable here": 7,
        "inconclusive": 0,
    }


def test_claims_1_and_2_reproduced_when_the_numbers_say_so(results):
    _smoke_like(
        results,
        premise=1,
        hlm_gain=(0.2, 0.05),
        both_right=12,
        blind=2,
        apd_rate=0.05,
        cd_rate=1 / 6,
        blind_gain=(0.117, 0.03),
    )
    out = evidence_mod.judge(claims_mod.paper_claims(), "p").set_index("claim_id")
    assert out.loc["C1b_cd_hlm_closer", "verdict"] == "reproduced"
    assert out.loc["C2_obvious_blindness", "verdict"] == "reproduced"
    assert (
        "tested: the number of those where CD ranks another token first is at least 1; measured 2: holds"
        in (out.loc["C2_obvious_blindness", "evidence"])
    )
    # how many of those contexts are questions is shown as context, with no verdict to read
    assert (
        "context, shown: measured: the questions among those contexts, 0"
        in out.loc["C2_obvious_blindness", "evidence"]
    )
    assert "at least 0" not in out.loc["C2_obvious_blindness", "evidence"]


def test_claim_2_not_reproduced_when_apd_is_as_blind_as_cd(results):
    _smoke_like(results, both_right=12, blind=2, apd_rate=0.25, cd_rate=1 / 6, blind_gain=(-0.083, 0.02))
    out = evidence_mod.judge(claims_mod.paper_claims(), "p").set_index("claim_id")
    assert out.loc["C2_obvious_blindness", "verdict"] == "not reproduced"
    reason = out.loc["C2_obvious_blindness", "reason"]
    assert (
        reason.startswith("tested: CD's obvious-blindness rate minus APD's is above 0")
        and "measured -0.083 ± 0.020" in reason
    )
    # the point rates are context now, not the test
    _smoke_like(results, both_right=12, blind=2, apd_rate=0.25, cd_rate=1 / 6, blind_gain=(0.01, 0.02))
    out = evidence_mod.judge(claims_mod.paper_claims(), "p").set_index("claim_id")
    assert out.loc["C2_obvious_blindness", "verdict"] == "inconclusive"


# ----------------------------------------------------------------------------------------------
# paper tables and figures beside ours


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
    row = one([claim(E("qa", Cell("qa_old_rows", "value"), evidence_mod.at_least(0), "d"))])
    assert row.verdict == "not testable here"
    assert row.reason == "chapter qa did not produce table qa_old_rows.csv under profile p"


def _controls(results, profile="smoke", *, kl=(0.05, 0.01), ne_er=(0.05, 0.01), ka=1, engaged=1, extra_apd=None):
    """The preconditions every APD claim reads: the gates (apd), the KL positive control (apd), the
    known-answer condition; the NE_ER control is written with the factuality results."""
    results(
        "apd",
        {
            "gate_engaged": engaged,
            "gate_reason": "all gates pass" if engaged else "curve model inert",
            "kl_cd_gain": kl[0],
            "kl_cd_gain_se": kl[1],
            **(extra_apd or {}),
        },
        profile=profile,
    )
    results(
        "known_answer",
        {"ka_condition_passes": ka, "ka_condition_reason": "the fitter is farther from the truth"},
        profile=profile,
    )


def _world_qa(results, gains, gain_se, apd=1.80, cd=1.85, engaged=1, overall=None, cd_gain=(0.3, 0.02), ka=1):
    """World QA results: ``overall`` (default cd - apd) is the paired gain with se ``gain_se``; ``cd_gain``
    the positive control (the expert's ppl minus CD's, se)."""
    _controls(results, engaged=engaged, ka=ka)
    results(
        "qa",
        {
            "world_ho_ppl_apd": apd,
            "world_ho_ppl_cd": cd,
            "world_ho_ppl_gain": cd - apd if overall is None else overall,
            "world_ho_ppl_gain_se": gain_se,
            "world_pp_ppl_apd": apd,
            "world_pp_ppl_cd": cd,
            "world_ho_ppl_cd_gain": cd_gain[0],
            "world_ho_ppl_cd_gain_se": cd_gain[1],
        },
        profile="smoke",
    )
    results(
        "qa",
        table="qa_world_gain_by_bucket",
        profile="smoke",
        df=pd.DataFrame(
            {"bucket": ["head", "torso", "tail"], "ppl: CD - APD": list(gains), "ELM acc": [0.9, 0.6, 0.3]}
        ),
    )


def test_qa_claim_on_pico_profiles(results):
    c4 = [c for c in claims_mod.paper_claims() if c.id == "C4_apd_better_qa_easy"]
    _world_qa(results, gains=(0.09, 0.04, 0.01), gain_se=0.005)
    row = one(c4, "smoke")
    assert row.verdict == "reproduced", row.reason  # 0.05 with 95% CI [0.0402, 0.0598]
    assert row.ci_low == pytest.approx(0.05 - 1.96 * 0.005) and row.ci_high == pytest.approx(0.05 + 1.96 * 0.005)
    # the paper's effect on this scale: a third of this build's CD-over-expert gain (0.3 nats)
    # ... times the lower 95% bound of the base, 0.3 - 1.96 x 0.02
    assert row.effect == pytest.approx(claims_mod.paper_qa_share() * (0.3 - 1.96 * 0.02))
    assert claims_mod.paper_qa_share() == pytest.approx(1 / 3, abs=0.02)  # the paper's: about a third
    # which bucket gains most is an exploratory context row: it never decides
    _world_qa(results, gains=(0.01, 0.04, 0.09), gain_se=0.005)
    row = one(c4, "smoke")
    assert row.verdict == "reproduced"
    assert (
        "context, does not hold: tested: CD's QA ppl minus APD's on head questions is larger than on torso questions "
        "and on tail questions; measured 0.01; on torso questions 0.04 and on tail questions 0.09: does not hold"
        in row.evidence
    )
    # APD = CD, the interval [-0.00196, 0.00196] excludes the scaled effect 0.084: not reproduced
    _world_qa(results, gains=(0.0, 0.0, 0.0), gain_se=0.001, apd=1.85)
    row = one(c4, "smoke")
    assert row.verdict == "not reproduced" and row.n_fail == 1, row.reason
    assert (
        "or below the paper's effect on this scale (not reproduced), by its 95% normal interval; the effect is "
        "0.0842 = 0.323 × 0.261, the lower bound of the 95% normal interval of the expert's QA ppl minus CD's on "
        "the test questions (nats), +0.300 ± 0.020 (standard error over people); measured "
        in row.reason
        and row.reason.endswith(": does not hold")
    )


def test_an_interval_holding_both_zero_and_the_scaled_effect_is_inconclusive(results):
    c4 = [c for c in claims_mod.paper_claims() if c.id == "C4_apd_better_qa_easy"]
    _world_qa(results, gains=(0.09, 0.04, 0.01), gain_se=0.05, apd=1.84)  # CI [-0.088, 0.108] holds 0 and 0.097
    row = one(c4, "smoke")
    assert row.verdict == "inconclusive", row.reason
    assert "too little data to tell" in row.reason and row.n_undecided == 1
    # the referee's case: small se (smallest detectable 0.0168 < the effect 0.017), not significant, but the
    # interval [-0.001, 0.023] holds the effect: inconclusive, where post-hoc power used to say "not reproduced"
    low = 0.017 / claims_mod.paper_qa_share()  # the base's lower 95% bound that scales to 0.017
    _world_qa(results, gains=(0.0, 0.0, 0.0), gain_se=0.006, overall=0.011, cd_gain=(low * 1.196, low / 10))
    row = one(c4, "smoke")
    assert row.verdict == "inconclusive", row.reason
    assert row.effect == pytest.approx(0.017) and row.ci_high > 0.017 > 0 > row.ci_low


def _world_factuality(results, sweep, diff, se, cd_gain=(0.01, 0.002), ka=1, kl=(0.05, 0.01)):
    _controls(results, ka=ka, kl=kl)
    results(
        "factuality",
        {
            "ne_er_apd": sweep[0],
            "ne_er_cd": sweep[1],
            "ne_er_diff_verdict": diff,
            "ne_er_diff_se_verdict": se,
            "true_rate_apd": 0.6,
            "true_rate_cd": 0.5,
            "dist2_apd": 0.5,
            "dist2_cd": 0.5,
            "ne_er_cd_gain": cd_gain[0],
            "ne_er_cd_gain_se": cd_gain[1],
        },
        profile="smoke",
    )


def test_claim_3_on_pico_is_decided_by_the_paired_comparison_not_the_sweeps_point_estimates(results):
    """The default build's paired comparison reads -0.45 +- 0.53 points: upper bound 0.60. Against a
    CD-over-expert gain of 1 point, the paper's effect on this scale is 1.009 points, above the bound:
    not reproduced. Against a CD-over-expert gain of 0.3 points (effect 0.30) it is inside: inconclusive."""
    c3 = [c for c in claims_mod.paper_claims() if c.id == "C3_apd_more_factual"]
    _world_factuality(results, sweep=(0.5508, 0.5469), diff=-0.0045, se=0.0053)
    row = one(c3, "smoke")
    assert row.verdict == "not reproduced" and row.n_fail == 1, row.reason
    assert row.reason.startswith("tested: CD's NE_ER minus APD's is above 0 (reproduced) or below the paper's effect")
    assert "; measured -0.0045 ± 0.0053 (standard error over people" in row.reason
    assert "interval [-0.0149, 0.0059]: does not hold" in row.reason
    assert row.effect == pytest.approx(claims_mod.paper_ne_er_share() * (0.01 - 1.96 * 0.002))
    # the point estimates are the verdict comparison's, named so (never "the sweep"'s)
    assert (
        "context, does not hold: tested: APD's NE_ER in the world's APD-CD verdict comparison (every sentence opening "
        "of the test people) is below CD's; measured 0.551 against 0.547: does not hold" in row.evidence
    )
    assert "sweep" not in row.evidence
    _world_factuality(results, sweep=(0.5508, 0.5469), diff=-0.0045, se=0.0053, cd_gain=(0.003, 0.001))
    assert one(c3, "smoke").verdict == "inconclusive"
    # a paired gain beyond 1.96 se decides for the claim even where the sweep's points disagree
    _world_factuality(results, sweep=(0.5508, 0.5469), diff=0.02, se=0.005)
    assert one(c3, "smoke").verdict == "reproduced"


def test_each_failed_precondition_makes_an_apd_claim_not_testable_and_says_which(results):
    """The default build's situation: CD does not beat the expert clearly (0.009 +- 0.014 nats), no
    estimator beats p_ELM on the known-answer families; every test failing changes nothing."""
    c3 = [c for c in claims_mod.paper_claims() if c.id == "C3_apd_more_factual"]
    # positive control: the expert's NE_ER minus CD's is not significant
    _world_factuality(results, sweep=(0.55, 0.54), diff=-0.05, se=0.005, cd_gain=(0.004, 0.005))
    row = one(c3, "smoke")
    assert row.verdict == "not testable here" and row.n_preconditions_failed == 1, row.reason
    assert row.reason.startswith("precondition not met: tested: the expert's NE_ER minus CD's is above 0, by its ")
    assert "; measured +0.0040 ± 0.0050" in row.reason
    assert "positive control: does not hold" in row.preconditions
    # the known-answer condition: no estimator beats p_ELM
    _world_factuality(results, sweep=(0.55, 0.54), diff=-0.05, se=0.005, ka=0)
    row = one(c3, "smoke")
    assert row.verdict == "not testable here" and (
        "than the expert's own probability: does not hold (the fitter is farther from the truth)" in row.reason
    )
    # C5 (KL): its positive control is the APD chapter's expert-minus-CD KL, here the default build's numbers
    c5 = [c for c in claims_mod.paper_claims() if c.id == "C5_on_the_fly_worse"]
    _controls(results, kl=(0.009, 0.014), extra_apd={"kl_fly_gain": -0.5, "kl_fly_gain_se": 0.01})
    row = one(c5, "smoke")
    assert row.verdict == "not testable here"
    assert row.reason.startswith(
        "precondition not met: tested: the expert's KL to the truth minus CD's (nats) is above 0, by its "
    )
    assert "; measured +0.009 ± 0.014" in row.reason
    _controls(results, kl=(0.05, 0.01), extra_apd={"kl_fly_gain": -0.5, "kl_fly_gain_se": 0.01})
    assert one(c5, "smoke").verdict == "not reproduced"
    # a missing known-answer chapter is not testable too, never a verdict
    _world_factuality(results, sweep=(0.55, 0.54), diff=-0.05, se=0.005)
    (evidence_mod.results_dir("smoke") / "known_answer.json").unlink()
    row = one(c3, "smoke")
    assert row.verdict == "not testable here" and "chapter known_answer has not run" in row.reason


def test_no_claim_reads_not_reproduced_while_a_precondition_fails(results):
    """Every test of every claim failing, every positive control failing: no 'not reproduced' anywhere."""
    _smoke_like(results, r2=0.3, kl_cd=(0.5,), kl_elm=(0.1,), both_right=0)
    _controls(results, profile="p", kl=(0.0, 0.01), ka=0, extra_apd={"kl_fly_gain": -1.0, "kl_fly_gain_se": 0.01})
    results(
        "factuality",
        {
            "ne_er_diff_verdict": -1.0,
            "ne_er_diff_se_verdict": 0.01,
            "ne_er_cd_gain": 0.0,
            "ne_er_cd_gain_se": 0.01,
            "comp_apd_diff": -1.0,
            "comp_apd_diff_se": 0.01,
            "comp_elm_diff": -1.0,
            "comp_elm_diff_se": 0.01,
        },
    )
    out = evidence_mod.judge(claims_mod.paper_claims(), "p")
    assert (out["verdict"] != "not reproduced").all(), out[["claim_id", "verdict", "reason"]]
    assert (out.loc[out["verdict"] == "not testable here", "n_preconditions_failed"] > 0).sum() >= 5


def test_an_apd_claim_whose_gates_fail_is_not_testable_and_says_which(results):
    c4 = [c for c in claims_mod.paper_claims() if c.id == "C4_apd_better_qa_easy"]
    _world_qa(results, gains=(0.09, 0.04, 0.01), gain_se=0.005, engaged=0)
    row = one(c4, "smoke")
    assert row.verdict == "not testable here"
    assert row.reason == (
        "precondition not met: tested: the tested ALM' passes its mechanism gates: does not hold (curve model inert)"
    )


def test_detects_decides_by_the_interval():
    d = evidence_mod.detects(0.1)
    assert d(["d", "se"], [0.05, 0.01]).holds  # CI above 0
    out = d(["d", "se"], [-0.05, 0.01])
    assert not out.holds and not out.inconclusive  # significant the other way
    out = d(["d", "se"], [0.001, 0.01])
    assert not out.holds and not out.inconclusive  # CI [-0.019, 0.021] excludes 0.1
    assert d(["d", "se"], [0.001, 0.1]).inconclusive  # CI holds 0 and 0.1
    out = d(["d", "se"], [-0.05, 0.05])
    assert not out.holds and not out.inconclusive  # 0.1 above -0.05 + 1.96 x 0.05
    assert evidence_mod.detects()(["d", "se"], [0.001, 0.001]).inconclusive  # no paper effect to compare
    # scaled: effect = share x base; a base <= 0 (CD no better than the expert) gives no effect to exclude
    s = evidence_mod.detects(share=0.5)
    out = s(["d", "se", "b"], [0.0, 0.001, 0.02])
    assert not out.holds and not out.inconclusive and out.numbers["effect"] == pytest.approx(0.01)
    assert s(["d", "se", "b"], [0.0, 0.01, 0.02]).inconclusive  # CI [-0.0196, 0.0196] holds 0.01
    assert (
        s(["d", "se", "b"], [0.0, 0.001, -0.02]).inconclusive
        and "no effect on this scale" in s(["d", "se", "b"], [0.0, 0.001, -0.02]).text
    )
    # the positive control: significant or not, never undecided
    assert evidence_mod.significant()(["d", "se"], [0.05, 0.01]).holds
    out = evidence_mod.significant()(["d", "se"], [0.009, 0.014])
    assert not out.holds and not out.inconclusive
    assert out.text == (
        "tested: d is above 0, by its 95% normal interval; measured +0.009 ± 0.014 (standard error), "
        "interval [-0.018, 0.036]: does not hold"
    )


def test_ablation_claims_read_the_ablations_table(results):
    table = pd.DataFrame(
        {
            "name": [
                "APD",
                "alm+elm",
                "logit",
                "no-flip",
                "distilled",
                "distilled-alm+mid+elm",
                "distilled-no-small",
                "CD",
            ],
            "kl": [1.00, 1.10, 1.30, 1.01, 0.90, 0.95, 0.97, 1.20],
            "kl_diff": [None, 0.10, 0.30, 0.01, -0.10, 0.05, 0.07, 0.20],
            "kl_diff_se": [None, 0.02, 0.05, 0.02, 0.02, 0.01, 0.01, 0.03],
        }
    )
    runs = ("APD", "alm+elm", "logit", "no-flip", "distilled", "distilled-alm+mid+elm", "distilled-no-small")
    gates = {f"gate_{k}_{n}": (1 if k == "engaged" else "all gates pass") for k in ("engaged", "reason") for n in runs}
    _controls(results, profile="p")
    results("ablations", {"midsize_ends_only": 1.10, "midsize_cd": 1.20, **gates}, table="ablations", df=table)
    out = evidence_mod.judge(claims_mod.paper_claims(), "p").set_index("claim_id")
    assert out.loc["C6_more_midsize_members_help", "verdict"] == "reproduced"
    # logit: 0.30 > 1.96 x 0.05 holds; no flip: 0.01 is within noise and the paper gives no number: too few to tell
    assert out.loc["C7_probability_space_and_flip", "verdict"] == "inconclusive"
    assert out.loc["C7_probability_space_and_flip", "reason"] == (
        "tested: APD without the flip's KL to the truth minus APD's (nats) is above 0 (reproduced) or below 0 (not "
        "reproduced), by its 95% normal interval; the paper gives no effect in these units; measured +0.010 ± 0.020 "
        "(standard error over people; smallest detectable effect 0.056), interval [-0.029, 0.049]: too little data "
        "to tell"
    )
    # with the number of people each difference is over (the chapter's kl_diff_groups), the interval is t
    results(
        "ablations",
        {"midsize_ends_only": 1.10, "midsize_cd": 1.20, **gates},
        table="ablations",
        df=table.assign(kl_diff_groups=12),
    )
    out = evidence_mod.judge(claims_mod.paper_claims(), "p").set_index("claim_id")
    assert "(standard error over 12 people" in out.loc["C7_probability_space_and_flip", "reason"]
    assert "95% t interval (11 df)" in out.loc["C7_probability_space_and_flip", "reason"]
    gates["gate_engaged_no-flip"], gates["gate_reason_no-flip"] = 0, "c collapsed to the expert"
    results("ablations", {"midsize_ends_only": 1.10, "midsize_cd": 1.20, **gates}, table="ablations", df=table)
    out = evidence_mod.judge(claims_mod.paper_claims(), "p").set_index("claim_id")
    assert out.loc["C7_probability_space_and_flip", "verdict"] == "not testable here"
    assert "(c collapsed to the expert)" in out.loc["C7_probability_space_and_flip", "reason"]


def test_claim_6_rests_on_the_distilled_variant_when_the_release_configuration_is_inert(results):
    """The default build's situation: the release configuration's runs fail their gates, the distilled
    variant and its member subsets pass; the ALM + ELM point comparison (release only) is context."""
    table = pd.DataFrame(
        {
            "name": ["APD", "alm+elm", "distilled", "distilled-alm+mid+elm", "distilled-no-small"],
            "kl": [1.00, 1.00, 0.90, 0.95, 0.97],
            "kl_diff": [None, 0.0, -0.10, 0.05, 0.07],
            "kl_diff_se": [None, 0.0001, 0.02, 0.01, 0.01],
        }
    )
    gates = {
        "gate_engaged_APD": 0,
        "gate_reason_APD": "curve model inert",
        "gate_engaged_alm+elm": 0,
        "gate_reason_alm+elm": "curve model inert",
    }
    for n in ("distilled", "distilled-alm+mid+elm", "distilled-no-small"):
        gates[f"gate_engaged_{n}"], gates[f"gate_reason_{n}"] = 1, "all gates pass"
    _controls(results, profile="p")
    results("ablations", {"midsize_ends_only": "n/a", "midsize_cd": 1.20, **gates}, table="ablations", df=table)
    c6 = [c for c in claims_mod.paper_claims() if c.id == "C6_more_midsize_members_help"]
    row = one(c6)
    assert row.verdict == "reproduced" and row.n_tests == 2 and row.n_hold == 2, row.reason
    assert (
        "context, does not hold: tested: the ablations' reference APD passes its mechanism gates: does not hold "
        "(curve model inert)" in row.evidence
    )
    # the ALM + ELM run against CD is not comparable while its gates or the reference APD's fail: said so, no 'n/a'
    assert (
        "context, not comparable: not comparable: the ablations' reference APD (curve model inert) and APD on the "
        "amateur and the expert only (curve model inert) do not pass their mechanism gates" in row.evidence
    )
    assert "'n/a'" not in row.evidence
    # a subset that is better than every member (interval below 0): not reproduced
    table.loc[3, ["kl_diff", "kl_diff_se"]] = [-0.03, 0.01]
    results("ablations", {"midsize_ends_only": "n/a", "midsize_cd": 1.20, **gates}, table="ablations", df=table)
    assert one(c6).verdict == "not reproduced"
    # a distilled subset whose gates fail: not testable, saying which
    gates["gate_engaged_distilled-no-small"], gates["gate_reason_distilled-no-small"] = 0, "ALM' did not move"
    results("ablations", {"midsize_ends_only": "n/a", "midsize_cd": 1.20, **gates}, table="ablations", df=table)
    row = one(c6)
    assert row.verdict == "not testable here" and "(ALM' did not move)" in row.reason


def test_the_ends_only_run_against_cd_is_read_once_its_gates_pass(results):
    gates = {
        f"gate_{k}_{n}": (1 if k == "engaged" else "all gates pass")
        for k in ("engaged", "reason")
        for n in ("APD", "alm+elm")
    }
    _controls(results, profile="p")
    results("ablations", {"midsize_ends_only": 1.10, "midsize_cd": 1.20, **gates})
    detail = evidence_mod.checks(claims_mod.paper_claims(), "p")
    row = detail[detail["description"].str.startswith("APD on the amateur and expert only")].iloc[0]
    assert row["kind"] == "context" and row["status"] == "holds", row["evidence"]
    assert "gate_engaged_APD" in row["source"] and "gate_engaged_alm+elm" in row["source"]
    gates["gate_engaged_alm+elm"], gates["gate_reason_alm+elm"] = 0, "c collapsed to the expert"
    results("ablations", {"midsize_ends_only": "n/a", "midsize_cd": 1.20, **gates})
    detail = evidence_mod.checks(claims_mod.paper_claims(), "p")
    row = detail[detail["description"].str.startswith("APD on the amateur and expert only")].iloc[0]
    assert row["status"] == "not comparable"
    assert row["evidence"] == (
        "not comparable: APD on the amateur and the expert only (c collapsed to the expert) does not pass its "
        "mechanism gates"
    )
    # a gate that was not measured: missing, as any other value
    results("ablations", {"midsize_ends_only": "n/a", "midsize_cd": 1.20})
    detail = evidence_mod.checks(claims_mod.paper_claims(), "p")
    row = detail[detail["description"].str.startswith("APD on the amateur and expert only")].iloc[0]
    assert row["status"] == "missing" and "gate_engaged_APD" in row["evidence"]


def test_values_without_a_verdict_and_gated_comparisons_are_context_only():
    shown = E("curves", "blind_both_right", evidence_mod.shown(), "d", kind="context", names=("n",))
    assert shown.comparison.verdict is False
    with pytest.raises(ValueError, match="context checks only"):
        E("curves", "blind_both_right", evidence_mod.shown(), "d", kind="test")
    with pytest.raises(ValueError, match="context checks only"):
        E("ablations", "x", evidence_mod.flag(), "d", gated_by=(evidence_mod.Gate("gate_engaged_APD", "APD"),))


def test_the_deciding_interval_is_that_of_the_test_that_decided(results):
    results("c", {"a": 0.05, "a_se": 0.01, "b": -0.05, "b_se": 0.01})
    c = claim(
        E("c", ("a", "a_se"), evidence_mod.detects(), "first"), E("c", ("b", "b_se"), evidence_mod.detects(), "second")
    )
    row = one([c])
    assert row.verdict == "not reproduced" and row.estimate == -0.05 and row.ci_high < 0


def test_the_rules_say_which_claims_read_which_precondition():
    needs = claims_mod.claims_needing(claims_mod.paper_claims(), "default")
    assert "C2" in needs["gates"] and "C2" not in needs["control"] and "C2" not in needs["known_answer"]
    assert needs["premise"] == "C1b"
    assert "C4" in claims_mod.claims_needing(claims_mod.paper_claims(), "pythia")["control"]
    assert claims_mod.claims_needing([], "default")["gates"] == "no claim"


def test_the_held_out_text_context_says_apd_used_its_best_1_over_t_there():
    c5 = next(c for c in claims_mod.paper_claims() if c.id == "C5_on_the_fly_worse")
    text = next(s for s in c5.evidence if s.keys == ("text_apdbest", "text_fly"))
    assert "best on those positions" in text.names[0] and "chosen on the dev questions" in text.description


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


def test_a_broken_results_file_stops_the_claims_naming_the_file_and_the_fix(results):
    out = results("qa", {})
    (out / "qa.json").write_text("{not json")
    with pytest.raises(DamagedResultsError, match=r"qa\.json is damaged: it is not valid JSON .*ONLY=qa"):
        one([claim(E("qa", "x", evidence_mod.at_least(0), "d"))])


def test_claims_markdown_lists_preconditions_first_and_escapes_markdown(results):
    results("curves", {"blind_both_right": 3, "blind_count": 1, "r2_median": 0.5})
    claims = [
        PaperClaim(
            "C_x",
            "CD's *claim* about L_CD",
            (
                E("curves", "blind_count", evidence_mod.at_least(1), "CD blind"),
                E("curves", "r2_median", evidence_mod.at_least(0.9), "linear?", kind="context"),
                E("curves", "blind_both_right", evidence_mod.at_least(1), "both right", kind="precondition"),
            ),
        )
    ]
    text = evidence_mod.claims_markdown(evidence_mod.judge(claims, "p"), evidence_mod.checks(claims, "p"))
    lines = text.splitlines()
    assert lines[0] == r"**C\_x: reproduced.** CD's \*claim\* about L\_CD"
    assert [ln.split("*")[1] for ln in lines[2:5]] == ["precondition, holds", "test, holds", "context, does not hold"]
    assert lines[3] == (
        r"- *test, holds*: CD blind. Tested: curves.blind\_count is at least 1; measured 1: holds "
        r'<small>(from <a href="../results/curves.json">curves.json</a>: blind\_count)</small>'
    )
    named = evidence_mod.claims_markdown(
        evidence_mod.judge(claims, "p"), evidence_mod.checks(claims, "p"), names={"C_x": "CD is blind"}
    )
    assert named.splitlines()[0] == r"**C, CD is blind: reproduced.** CD's \*claim\* about L\_CD"


def test_same_rows_need_thirty_qualifying_items(results):
    rows = [("LAMBADA", "paper", "ppl", m, "all", v, 6) for m, v in (("elm", 2.3), ("cd", 2.25), ("apd", 2.1))]
    rows += [("LAMBADA", "paper", "MRR", "elm", "all", 0.84, 6)]
    results("qa", {}, table="qa_datasets_summary", df=_summary(rows), parameters={"family": "pythia"})
    row = coverage.table_status("p").set_index("paper").loc["Table 2"]
    assert row["status"] == "too few items"
    assert "only 6 qualifying item(s)" in row["ours"] and f"at least {coverage.MIN_SAME_ROWS_ITEMS}" in row["ours"]


def test_findings_read_one_sentence_per_claim(results, tmp_path):
    from apd.report import findings

    _world_qa(results, gains=(0.09, 0.04, 0.01), gain_se=0.005, engaged=0)
    claims = claims_mod.paper_claims()
    judged = evidence_mod.judge(claims, "smoke")
    text = findings.findings_markdown(judged, claims, "smoke", findings.scale_note(None, "smoke"))
    assert text.startswith(f"Of the paper's {len(claims)} main claims:")
    items = [line for line in text.splitlines() if line.startswith("- **C")]
    assert len(items) == len(claims) and "|" not in "".join(items)
    assert any(
        "**not testable here**" in i and "not met: the mechanism of the tested ALM' engaged." in i for i in items
    ), items
    assert "[apd." not in text  # result keys and numbers stay in the chapter's table of checks
    assert "{doc}`QA <../notebooks/qa>`" in text and "did not run" in text


# ----------------------------------------------------------------------------------------------
# C8: REAL and APD are complementary


def _complementarity(
    results,
    *,
    apd_real=0.60,
    apd_k20=0.66,
    elm_real=0.64,
    apd_diff=0.06,
    apd_se=0.01,
    elm_diff=0.04,
    elm_se=0.01,
    engaged=1,
    profile="smoke",
    cd_gain=(0.05, 0.01),
    gap=None,
):
    """C8's results; ``gap`` (matched-Dist-2 gap, se) defaults to the single setting's (apd_diff, apd_se)."""
    _controls(results, profile=profile, engaged=engaged)
    gap = (apd_diff, apd_se) if gap is None else gap
    results(
        "factuality",
        {
            "ne_er_apd_real": apd_real,
            "ne_er_apd_k20": apd_k20,
            "ne_er_elm_real": elm_real,
            "real_matched_gap_world": gap[0],
            "real_matched_gap_se_world": gap[1],
            "comp_apd_diff": apd_diff,
            "comp_apd_diff_se": apd_se,
            "comp_paper_apd_diff": apd_diff,
            "comp_paper_apd_diff_se": apd_se,
            "comp_elm_diff": elm_diff,
            "comp_elm_diff_se": elm_se,
            "ne_er_cd_gain": cd_gain[0],
            "ne_er_cd_gain_se": cd_gain[1],
            "true_rate_apd_real": 0.07,
            "true_rate_apd_k20": 0.05,
            "dist2_apd_real": 0.42,
            "dist2_apd_k20": 0.47,
        },
        profile=profile,
    )
    c8 = [c for c in claims_mod.paper_claims() if c.id == "C8_real_apd_complementary"]
    return one(c8, profile)


def test_complementarity_reproduced_when_both_differences_are_significant(results):
    row = _complementarity(results)
    assert row.verdict == "reproduced", row.reason
    assert (row.n_tests, row.n_hold) == (2, 2)
    assert (
        "; measured +0.060 ± 0.010 (standard error over people, resampled; smallest detectable effect 0.028), "
        "interval [0.040, 0.080]: holds" in row.evidence
    )
    assert (
        "context, holds: tested: APD + top-p k20's NE_ER minus APD + REAL's at T_r = 4 is above 0, by its 95% "
        "normal interval; measured +0.060 ± 0.010 (standard error over people), interval [0.040, 0.080]: holds"
        in row.evidence
    )
    assert (
        "context, holds: tested: APD + top-p k20's NE_ER minus APD + REAL's at the dev-chosen T_r is above 0"
        in row.evidence
    )
    assert (
        "context, holds: tested: APD + REAL's share of true claims is above APD + top-p k20's; measured 0.07 "
        "against 0.05: holds" in row.evidence
    )


def test_complementarity_paired_tests_read_the_papers_effect(results):
    assert claims_mod.paper_real_gain() == pytest.approx(0.017)  # Table 6: 39.2 - 37.5 points
    # ... of the CD-over-expert gain at the same truncation, Table 1's 43.28 - 42.21 at top-p k20, p = 0.8
    assert claims_mod.paper_real_share() == pytest.approx(1.7 / 1.07)
    # CI [-0.0092, 0.0692] holds 0 and 1.589 x (0.05 - 1.96 x 0.01) = 0.0483
    row = _complementarity(results, apd_real=0.655, elm_real=0.70, apd_diff=0.03, apd_se=0.02)
    assert row.verdict == "inconclusive", row.reason
    assert (
        "the effect is 0.0483 = 1.59 × 0.030, the lower bound of the 95% normal interval of the "
        "expert's NE_ER minus CD's, +0.050 ± 0.010" in row.reason
    )
    assert row.effect == pytest.approx(1.7 / 1.07 * (0.05 - 1.96 * 0.01))
    # a smaller difference with se 0.003: upper bound 0.0069 < 0.0483, the scaled effect is excluded
    row = _complementarity(results, apd_real=0.655, elm_real=0.70, apd_diff=0.001, apd_se=0.003)
    assert row.verdict == "not reproduced"
    assert row.reason.startswith("tested: APD + top-p k20's NE_ER minus APD + REAL's at matched Dist-2 is above 0")
    assert "; measured +0.0010 ± 0.0030" in row.reason
    # the trade-off decides, not the single setting: REAL better at matched diversity, though not at T_r = 4
    row = _complementarity(results, apd_diff=-0.01, apd_se=0.01, gap=(0.05, 0.01))
    assert row.verdict == "reproduced", row.reason
    assert (
        "context, does not hold: tested: APD + top-p k20's NE_ER minus APD + REAL's at T_r = 4 is above 0, by its "
        "95% normal interval; measured -0.010 ± 0.010" in row.evidence
    )
    # against REAL alone the paper prints no number: a non-significant difference stays inconclusive
    row = _complementarity(results, elm_real=0.61, elm_diff=0.01, elm_se=0.009)
    assert row.verdict == "inconclusive" and "the paper gives no effect in these units" in row.reason


def test_complementarity_fails_when_apd_real_is_worse(results):
    row = _complementarity(results, apd_real=0.70, apd_diff=-0.04, apd_se=0.01)
    assert row.verdict == "not reproduced"
    assert row.reason.startswith("tested: APD + top-p k20's NE_ER minus APD + REAL's at matched Dist-2 is above 0")
    assert "; measured -0.040 ± 0.010" in row.reason
    assert (
        "context, does not hold: tested: APD + REAL's NE_ER is below APD + top-p k20's; measured 0.7 against 0.66: "
        "does not hold" in row.evidence
    )


def test_complementarity_needs_apds_mechanism(results):
    row = _complementarity(results, engaged=0)
    assert row.verdict == "not testable here"
    assert row.reason == (
        "precondition not met: tested: the tested ALM' passes its mechanism gates: does not hold (curve model inert)"
    )


def test_complementarity_under_a_hub_family_reads_the_directions_only(results):
    row = _complementarity(results, apd_se=float("nan"), elm_se=float("nan"), profile="pythia")
    assert row.verdict == "reproduced" and row.n_tests == 2


# ----------------------------------------------------------------------------------------------
# Table 6 and Figure 4 (b, h): REAL's counterparts


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
    from apd.chapters.paper_vs_book import FIGURE_STATUS

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


def test_apd_claims_read_the_engaged_variant_and_show_the_release_configuration_as_context(results):
    """A claim about APD is tested on the APD chapter's engaged variant (apd.gate_engaged); the
    release configuration's own gates are a context row that never decides the verdict."""
    claims = claims_mod.paper_claims()
    with_context = {c.id for c in claims if claims_mod.RELEASE_CONTEXT in c.evidence}
    assert with_context == {
        "C2_obvious_blindness",
        "C3_apd_more_factual",
        "C4_apd_better_qa_easy",
        "C5_on_the_fly_worse",
        "C8_real_apd_complementary",
    }
    c4 = [c for c in claims if c.id == "C4_apd_better_qa_easy"]
    _world_qa(results, gains=(0.09, 0.04, 0.01), gain_se=0.005)  # the engaged variant passes its gates
    controls = {"kl_cd_gain": 0.05, "kl_cd_gain_se": 0.01}
    results(
        "apd",
        {
            "gate_engaged": 1,
            "gate_reason": "the distilled variant: all gates pass",
            "release_gate_engaged": 0,
            "release_gate_reason": "curve model inert",
            **controls,
        },
        profile="smoke",
    )
    row = one(c4, "smoke")
    assert row.verdict == "reproduced", row.reason
    assert (
        "context, does not hold: tested: the release configuration passes its mechanism gates: does not hold "
        "(curve model inert)" in row.evidence
    )
    # no variant engages: the release configuration stands in, and the claim is not testable, saying why
    results(
        "apd",
        {
            "gate_engaged": 0,
            "gate_reason": "the release configuration: curve model inert; no variant engages",
            "release_gate_engaged": 0,
            "release_gate_reason": "curve model inert",
            **controls,
        },
        profile="smoke",
    )
    row = one(c4, "smoke")
    assert row.verdict == "not testable here" and "no variant engages" in row.reason


def test_qa_claim_under_a_hub_family_reads_the_pooled_dataset_interval(results):
    """Under the pythia profile C4 reads the mean over datasets of CD's ppl minus APD's, its se from the
    per-dataset paired se, against a third of CD's own gain over the expert; the means are context."""
    c4 = [c for c in claims_mod.paper_claims() if c.id == "C4_apd_better_qa_easy"]

    def hub(gain, se, cd_gain):
        _controls(results, profile="pythia")
        results(
            "qa",
            {
                "datasets_ppl_gain": gain,
                "datasets_ppl_gain_se": se,
                "datasets_ppl_cd_gain": cd_gain[0],
                "datasets_ppl_cd_gain_se": cd_gain[1],
            },
            profile="pythia",
        )
        return one(c4, "pythia")

    assert hub(0.15, 0.03, (0.47, 0.05)).verdict == "reproduced"
    row = hub(0.0, 0.02, (0.47, 0.05))  # CI [-0.039, 0.039] below 0.32 x (0.47 - 1.96 x 0.05) = 0.120
    assert row.verdict == "not reproduced"
    assert row.effect == pytest.approx(claims_mod.paper_qa_share() * (0.47 - 1.96 * 0.05))
    assert hub(0.05, 0.06, (0.47, 0.05)).verdict == "inconclusive"  # CI [-0.068, 0.168] holds 0 and 0.152
    row = hub(0.15, 0.03, (0.02, 0.05))  # CD no better than the expert: not testable
    assert row.verdict == "not testable here" and (
        "tested: the expert's QA ppl minus CD's, mean over the datasets (nats) is above 0, by its 95% normal "
        "interval; measured +0.020 ± 0.050 (standard error over each dataset's questions, pooled), interval "
        "[-0.078, 0.118]: does not hold" in row.reason
    )


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


def test_each_scaled_effect_is_a_share_in_its_own_measure_and_contrast():
    """The shares against the paper's printed values (Table 1: LLM 43.28, CD 42.21, APD 41.13 NE_ER at
    top-p k20, p = 0.8; Table 6: APD + top-p k20 39.2, APD + REAL 37.5), and every claim says what
    its scaled effect is made of; a claim whose test carries a share names one, the others say why not."""
    assert claims_mod.paper_ne_er_share() == pytest.approx((42.21 - 41.13) / (43.28 - 42.21))
    assert claims_mod.paper_real_share() == pytest.approx((39.2 - 37.5) / (43.28 - 42.21))
    # QA: means over Tables 2-5's Pythia datasets of CD - APD and of ELM - CD, computed row by row here
    rows = pd.concat([paper.table(t) for t in (2, 3, 4, 5)])
    rows = rows[(rows["family"] == "Pythia") & (rows["metric"] == "ppl")]
    per = {d: dict(zip(g["role"], g["value"])) for d, g in rows.groupby("dataset")}
    num = sum(v["cd"] - v["apd"] for v in per.values()) / len(per)
    den = sum(v["elm"] - v["cd"] for v in per.values()) / len(per)
    assert claims_mod.paper_qa_share() == pytest.approx(num / den)
    assert 0.2 < claims_mod.paper_qa_share() < 0.5  # "about a third" for Pythia
    claims = claims_mod.paper_claims()
    assert set(claims_mod.SCALED_EFFECTS) == {c.id for c in claims}
    for c in claims:
        shares = [s for s in c.evidence if s.kind == "test" and s.comparison.name.startswith("detects(share")]
        basis = claims_mod.SCALED_EFFECTS[c.id]
        if shares:
            assert basis and not basis.startswith("none") and "lower 95% bound" in basis, c.id
            assert all(s.comparison.arity == 4 for s in shares), c.id  # the base's se is read
        else:
            assert basis is None or basis.startswith("none:"), c.id


def test_a_dataset_with_no_scored_question_has_no_size_row():
    """|D| rows come from the scored datasets only, so a dataset where no question qualified does not
    count among Table 5's "same datasets"."""
    from apd.report.beside import qa_summary_rows

    rows = [
        ("LAMBADA", "paper", "MRR", "elm", "all", 0.84, 40),
        ("MultiRC", "paper", "MRR", "elm", "all", float("nan"), 0),
    ]
    out = qa_summary_rows(_summary(rows), "pythia")
    sizes = out[out["metric"] == "|D|"]
    assert sizes["dataset"].tolist() == ["LAMBADA"] and sizes["value"].tolist() == [40]


# ----------------------------------------------------------------------------------------------
# intervals over few clusters: Student's t where the chapter records how many


def test_an_interval_over_recorded_clusters_is_a_t_interval(results):
    """With the number of people the QA chapter records, C4's interval and the base's lower bound use
    t with n - 1 degrees of freedom; with 5 people t(4) = 2.776 widens 0.05 +- 0.02 to hold 0."""
    from apd.core.stats import critical

    c4 = [c for c in claims_mod.paper_claims() if c.id == "C4_apd_better_qa_easy"]
    _world_qa(results, gains=(0.09, 0.04, 0.01), gain_se=0.005)
    results(
        "qa",
        {**json.loads((evidence_mod.results_dir("smoke") / "qa.json").read_text()), "world_ho_ppl_n_people": 100},
        profile="smoke",
    )
    row = one(c4, "smoke")
    t99 = critical(100)
    assert t99 == pytest.approx(1.9842, abs=1e-4)
    assert row.verdict == "reproduced" and row.critical == pytest.approx(t99) and row.n_groups == 100
    assert row.ci_low == pytest.approx(0.05 - t99 * 0.005) and row.ci_high == pytest.approx(0.05 + t99 * 0.005)
    assert row.effect == pytest.approx(claims_mod.paper_qa_share() * (0.3 - t99 * 0.02))
    assert (
        "by its 95% t interval (99 df); the effect is " in row.evidence
        and "(standard error over 100 people; smallest detectable effect 0.014), interval [0.0401, 0.0599]: holds"
        in (row.evidence)
    )
    detail = evidence_mod.checks(c4, "smoke").set_index("description")
    control = detail.loc[[d for d in detail.index if d.startswith("positive control")][0]]
    assert control["values"].endswith("qa.world_ho_ppl_n_people = 100") and control["critical"] == pytest.approx(t99)
    assert control["source"] == "qa.json: world_ho_ppl_cd_gain, world_ho_ppl_cd_gain_se, world_ho_ppl_n_people"
    # few clusters: the same numbers over 5 people no longer exclude 0 (z would: 0.05 - 1.96 x 0.02 > 0)
    d = evidence_mod.detects(clusters=[(5, "people")])
    assert not d(["d", "se"], [0.05, 0.02]).holds and d(["d", "se"], [0.05, 0.02]).inconclusive
    assert evidence_mod.detects()(["d", "se"], [0.05, 0.02]).holds
    assert d(["d", "se"], [0.05, 0.02]).numbers["ci_low"] == pytest.approx(0.05 - critical(5) * 0.02)


def test_without_a_recorded_count_the_interval_is_normal_and_a_bad_count_is_missing(results):
    spec = E(
        "apd",
        ("gain", "gain_se"),
        evidence_mod.significant(),
        "d",
        names=("the gain", "its se"),
        clusters=(evidence_mod.Clusters("people", "gain_people"),),
    )
    results("apd", {"gain": 0.05, "gain_se": 0.02})
    row = evidence_mod.checks([claim(spec)], "p").iloc[0]
    assert row.status == "holds" and row.critical == 1.96 and pd.isna(row.n_groups)
    assert (
        row.evidence
        == "tested: the gain is above 0, by its 95% normal interval; measured +0.050 ± 0.020 (standard error over "
        "people), interval [0.011, 0.089]: holds"
    )
    results("apd", {"gain": 0.05, "gain_se": 0.02, "gain_people": 1})
    row = evidence_mod.checks([claim(spec)], "p").iloc[0]
    assert row.status == "missing" and "a t interval needs a whole number of at least 2 people" in row.evidence
    results("apd", {"gain": 0.05, "gain_se": -0.02})
    assert "a negative standard error" in evidence_mod.checks([claim(spec)], "p").iloc[0].evidence


def test_every_check_of_the_papers_claims_speaks_in_words(results):
    """Each check names its keys in words and gives every standard error its clusters; on a build's
    results the sentences carry no result key, which stays in the values and source columns."""
    claims = claims_mod.paper_claims()
    for c in claims:
        for s in c.evidence:
            assert s.names is not None, (c.id, s.description)
            assert len(s.clusters) == s.comparison.n_intervals, (c.id, s.description)
    _world_qa(results, gains=(0.09, 0.04, 0.01), gain_se=0.005)
    detail = evidence_mod.checks(claims, "smoke")
    ran = detail[detail["status"] != "missing"]
    assert len(ran) > 10
    for r in ran.itertuples():
        assert not any(k in r.evidence for k in ("world_ho", "gate_engaged", ".csv", "kl_cd_gain", "_se")), r.evidence
        assert r.source and r.values
        # one pattern: what is tested first, then what was measured, never one sentence of both; a
        # value shown without a verdict, or a comparison of runs whose gates fail, says so first
        start = {"shown": "measured: ", "not comparable": "not comparable: "}.get(r.status, "tested: ")
        assert r.evidence.startswith(start), r.evidence
        if pd.notna(r.estimate):
            measured = format_pm(r.estimate, r.se)
            assert r.evidence.index("; measured ") < r.evidence.index(measured), r.evidence
            assert measured not in r.evidence.split("; measured ")[0], r.evidence
    assert "1.96" not in " ".join(s.description for c in claims for s in c.evidence)


def test_claim_3_names_its_numbers_by_where_they_are_measured():
    """Under the pico profiles C3's point estimates are the world's verdict comparison (not the sweep, and
    not FactualityPrompts' Entail_R); under a Hub family they are FactualityPrompts'."""
    c3 = next(c for c in claims_mod.paper_claims() if c.id == "C3_apd_more_factual")
    points = [s for s in c3.evidence if s.stem == "factuality" and s.keys[0] in ("ne_er_apd", "true_rate_apd")]
    pico = [s for s in points if s.applies_to("smoke")]
    hub = [s for s in points if s.applies_to("pythia")]
    assert len(pico) == len(hub) == 2
    for s in pico:
        said = " ".join([s.description, *s.names])
        assert "verdict comparison" in said and "sweep" not in said and "FactualityPrompts" not in said, said
    for s in hub:
        assert all("on FactualityPrompts" in n for n in s.names[:1]), s.names
    assert any("Entail_R" in s.names[0] for s in hub) and not any("Entail_R" in s.names[0] for s in pico)


def test_the_theorem_1_finding_keeps_its_formula(results):
    """The findings drop a check's asides, never its maths: C1a states L_CD = (1 - 1/T) L_HLM."""
    results("theorem1", {"max_abs_error": 2.8e-14})
    claims = claims_mod.paper_claims()
    judged = evidence_mod.judge(claims, "p").set_index("claim_id")
    assert "L_CD = (1 - 1/T) L_HLM holds to round-off" in judged.loc["C1a_cd_identity", "in_words"]
    text = findings.findings_markdown(judged.reset_index(), claims, "p", "A note.")
    line = next(ln for ln in text.splitlines() if ln.startswith("- **C1a**"))
    assert "holds: Theorem 1's identity L_CD = (1 - 1/T) L_HLM holds to round-off" in line, line
    assert evidence_mod._without_asides("KL(real || expert) minus KL(real || HLM) (nats, paired)") == (
        "KL(real || expert) minus KL(real || HLM)"
    )


def test_in_words_keeps_the_sentence_and_drops_the_verdict():
    rows = pd.DataFrame(
        {
            "kind": ["precondition"],
            "status": ["does not hold"],
            "description": ["the mechanism engaged: curve alive"],
            "evidence": ["tested: the tested ALM' passes its mechanism gates: does not hold (curve model inert)"],
        }
    )
    assert evidence_mod.in_words(rows, "not testable here") == (
        "not met: the mechanism engaged [tested: the tested ALM' passes its mechanism gates (curve model inert)]"
    )
    text = "a is 1 (standard error over people); 95% normal interval [0.1, 2], above 0: too little data to tell"
    assert evidence_mod._numbers(text) == text.removesuffix(": too little data to tell")
