"""apd.report.claims: the claims table, its rules and verdicts, judged against fake results folders
(APD_RESULTS_DIR); apd.report.findings: the verdicts in words."""

import doctest

import pandas as pd
import pytest

from apd.core.stats import critical
from apd.report import claims as cl
from apd.report import findings, paper
from apd.report.results import DamagedResultsError


@pytest.fixture
def results(fake_results):
    return fake_results


def row(rule, keys, kind="test", chapter="qa", claim="X", description="d", **more):
    """A row of the claims table; ``keys`` a list (no names: each key as code) or {key: name}."""
    keys = keys if isinstance(keys, dict) else dict.fromkeys(keys)
    if kind == "precondition":
        more.setdefault("needs", "control")
    return dict(claim=claim, kind=kind, chapter=chapter, rule=rule, keys=keys, description=description, **more)


def checks(*rows, profile="p"):
    return cl.checks(profile, cl.parse_checks(rows))


def one(*rows, profile="p"):
    """The one claim's verdict row, judged from ``rows``."""
    return cl.judge(profile, cl.parse_checks(rows)).iloc[0]


def rule(name, values, names=None):
    """(verdict, sentence) of a rule applied to ``values`` (no clusters: a normal interval)."""
    keys = [f"k{i}" for i in range(len(values))]
    more = {"paper": "qa_share"} if len(values) == 4 and name == "detects" else {}
    c = cl.parse_checks([row(name, keys, kind="context" if name == "shown" else "test", **more)])
    return cl.apply_rule(c[0], names or keys, values)[:2]


def claim_of(cid):
    return [c for c in cl.CHECKS if c.claim == cid]


def test_examples():
    assert doctest.testmod(cl, optionflags=doctest.ELLIPSIS).failed == 0


# -- the table ----------------------------------------------------------------------------------


def test_the_table_holds_the_papers_claims_each_with_tests_under_every_kind_of_profile():
    ids = list(dict.fromkeys(c.claim for c in cl.CHECKS))
    assert ids == [c["id"] for c in paper.claim_texts()] and len(ids) == 9
    assert set(cl.PLAIN_NAMES) == set(cl.SCALED_EFFECTS) == set(ids)
    for profile in ("smoke", "default", "pythia"):
        for cid in ids:
            assert any(c.kind == "test" and c.applies_to(profile) for c in claim_of(cid)), (profile, cid)
    for c in cl.CHECKS:  # every key named in words, every standard error with what it was taken over
        assert all(n != f"{c.chapter}.{k}" for n, k in zip(c.names, c.keys)), c
        assert len(c.clusters) == len(c.se_at), c
        assert "1.96" not in c.description
    # a test scaled by the paper's number says what its scale is made of; the others say why they have none
    for cid in ids:
        scaled = any(c.share is not None for c in claim_of(cid) if c.kind == "test")
        basis = cl.SCALED_EFFECTS[cid]
        assert ("lower 95% bound" in basis) if scaled else (basis is None or basis.startswith("none:")), cid
    # every claim tested on the ALM' every chapter uses shows the release configuration's gates beside it
    on_apd = {c.claim for c in cl.CHECKS if c.chapter == "apd" and c.keys == ("gate_engaged",)}
    release = {c.claim for c in cl.CHECKS if c.keys == ("release_gate_engaged",) and c.kind == "context"}
    assert on_apd == release == {cid for cid in ids if cid.split("_")[0] in ("C2", "C3", "C4", "C5", "C8")}


def test_bad_rows_fail_loudly_naming_the_row():
    bad = [
        (row("less_than", ["a"]), "needs 2 key"),
        (row("is_largest", ["a"]), "two or more"),
        (row("at_least 1", ["a"], kind="maybe"), "kind 'maybe'"),
        (row("nearly", ["a"]), "rule 'nearly'"),
        (row("at_least", ["a"]), "takes a number"),
        (row("less_than", ["a", "b"], clusters=["people: n"]), "reads 0 standard error"),
        (row("shown", ["a"]), "context checks only"),
        (row("flag", ["a"], kind="precondition", needs="luck"), "a precondition"),
        (row("flag", ["a"], colour="red"), "unknown columns"),
        (row("at_least 0", ["t.csv[kl where x=1]"]), "not a table cell"),
        (row("less_than", list("abcd"), paper="qa_share"), "only detects"),
    ]
    for r, message in bad:
        with pytest.raises(ValueError, match=message):
            cl.parse_checks([r])
    with pytest.raises(ValueError, match=r"check 2 of the claims table \(X, qa\)"):
        cl.parse_checks([row("flag", ["a"]), row("less_than", ["a"])])


def test_a_cell_is_written_as_its_label():
    text = "qa_datasets_summary.csv[mean('value' where dataset='QASC (Q+Fact)', method='cd', group='all')]"
    cell = cl.Cell.parse(text)
    assert (cell.table, cell.column, cell.agg) == ("qa_datasets_summary", "value", "mean")
    assert dict(cell.where)["dataset"] == "QASC (Q+Fact)" and cell.label() == text
    assert cl.Cell.parse("t.csv['ppl: CD - APD' where bucket='head']").column == "ppl: CD - APD"


def test_keys_read_names_every_json_key_of_a_chapter():
    keys = cl.keys_read("apd")
    assert {"gate_engaged", "gate_reason", "kl_cd_gain", "release_gate_reason"} <= keys
    assert "kl_cd_gain_people" not in keys  # a count of clusters is optional: without it, a normal interval
    assert all(".csv[" not in k for k in cl.keys_read("ablations"))


# -- the rules ----------------------------------------------------------------------------------


def test_each_rule_holds_and_fails():
    assert rule("less_than", [2.132, 2.237], ["APD's ppl", "CD's"]) == (
        True,
        "tested: APD's ppl is below CD's; measured 2.13 against 2.24",
    )
    assert rule("less_than", [2.5, 2.237])[0] is False
    assert rule("greater_than", [0.25, 0.125])[0] is True and rule("greater_than", [0.125, 0.125])[0] is False
    assert rule("at_most 1e-9", [1.4e-14], ["the gap"]) == (
        True,
        "tested: the gap is at most 1 × 10⁻⁹; measured 1.4 × 10⁻¹⁴",
    )
    assert rule("at_most 1e-9", [1e-6])[0] is False
    assert rule("at_least 1", [5000.0], ["the count"]) == (True, "tested: the count is at least 1; measured 5,000")
    assert rule("at_least 1", [0])[0] is False
    assert rule("flag", [1.0], ["the gates pass"]) == (True, "tested: the gates pass") and not rule("flag", [0])[0]
    # |47.44 - 48.57| = 1.13 <= 0.1 x 48.57; |30 - 48.57| = 18.57 is not
    assert rule("within_relative 0.1", [47.44, 48.57])[0] and not rule("within_relative 0.1", [30.0, 48.57])[0]
    assert rule("within_relative 0.1", [30.0, 48.57], ["APD's Dist-2", "CD's"])[1] == (
        "tested: APD's Dist-2 is within 10% of CD's; measured 30 against 48.6, a gap of 18.6 or 38% of the larger"
    )
    assert rule("is_largest", [0.4, 0.3, 0.1])[0] and not rule("is_largest", [0.3, 0.3, 0.1])[0]  # a tie: no
    assert rule("is_largest", [0.4, 0.3, 0.1], ["the gain on head", "on torso", "on tail"])[1] == (
        "tested: the gain on head is larger than on torso and on tail; measured 0.4; on torso 0.3 and on tail 0.1"
    )
    assert rule("difference_larger", [2.4, 2.1, 7.7, 7.75], list("abcd")) == (
        True,
        "tested: a minus b is larger than c minus d; measured 0.3 (2.4 - 2.1) against -0.05 (7.7 - 7.75)",
    )
    assert rule("difference_larger", [2.4, 2.1, 7.7, 7.0])[0] is False
    assert rule("shown", [3], ["the questions"]) == (None, "measured: the questions, 3")
    # two different numbers never print alike
    assert rule("less_than", [1.2297, 1.2301])[1].endswith("measured 1.2297 against 1.2301")


def test_an_interval_decides_significant_and_detects():
    assert rule("significant", [0.05, 0.01])[0] is True
    assert rule("significant", [0.009, 0.014], ["d", "se"]) == (
        False,
        "tested: d is above 0, by its 95% normal interval; measured +0.009 ± 0.014 (standard error), "
        "interval [-0.018, 0.036]",
    )
    assert rule("detects", [0.05, 0.01])[0] is True  # above 0
    assert rule("detects", [-0.05, 0.01])[0] is False  # below 0: the paper gives no effect here
    assert rule("detects", [0.001, 0.01])[0] is None  # holds 0: too little data to tell
    # with the paper's share: the effect is the share of the base's lower 95% bound
    share = paper.qa_share()
    assert rule("detects", [0.0, 0.001, 0.3, 0.02])[0] is False  # [-0.002, 0.002] below 0.323 x 0.261
    assert rule("detects", [0.03, 0.03, 0.3, 0.02])[0] is None  # holds 0 and the effect
    verdict, text = rule("detects", [0.0, 0.001, 0.0, 0.02], ["d", "se", "the base", "se"])
    assert verdict is None and "there is no effect on this scale, since" in text  # a base at or below 0
    verdict, text = rule("detects", [0.0, 0.001, 0.3, 0.02], ["d", "se", "the base", "se"])
    assert (
        f"the effect is 0.0842 = {share:.3g} × 0.261, the lower bound of the 95% normal interval of the base" in text
    )


def test_intervals_are_t_over_the_recorded_clusters_else_normal(results):
    gain = row(
        "significant", {"gain": "the gain", "gain_se": "its se"}, chapter="apd", clusters=["people: gain_people"]
    )
    results("apd", {"gain": 0.05, "gain_se": 0.02})
    r = checks(gain).iloc[0]
    assert r.status == "holds" and r.critical == 1.96 and pd.isna(r.n_groups)
    assert r.evidence == (
        "tested: the gain is above 0, by its 95% normal interval; measured +0.050 ± 0.020 (standard error over "
        "people), interval [0.011, 0.089]: holds"
    )
    results("apd", {"gain": 0.05, "gain_se": 0.02, "gain_people": 5})  # t(4) = 2.776 widens it to hold 0
    r = checks(gain).iloc[0]
    assert r.status == "does not hold" and r.n_groups == 5 and r.critical == pytest.approx(critical(5))
    assert r.ci_low == pytest.approx(0.05 - critical(5) * 0.02) and "95% t interval (4 df)" in r.evidence
    assert r["values"] == "apd.gain = 0.05, apd.gain_se = 0.02, apd.gain_people = 5"
    assert r.source == "apd.json: gain, gain_se, gain_people"
    results("apd", {"gain": 0.05, "gain_se": 0.02, "gain_people": 1})
    assert "a t interval needs a whole number of at least 2 people" in checks(gain).iloc[0].evidence
    results("apd", {"gain": 0.05, "gain_se": -0.02})
    assert "a negative standard error" in checks(gain).iloc[0].evidence


# -- verdicts -----------------------------------------------------------------------------------


def test_reproduced_not_reproduced_and_inconclusive(results):
    results("qa", {"ppl_apd": 2.132, "ppl_cd": 2.237, "n": 5, "d": 0.001, "d_se": 0.01})
    r = one(
        row("less_than", {"ppl_apd": "APD's ppl", "ppl_cd": "CD's"}), row("at_least 1", ["n"], kind="precondition")
    )
    assert r.verdict == "reproduced" and r.reason == "all 1 tests hold (and 1 precondition(s))"
    assert "test, holds: tested: APD's ppl is below CD's; measured 2.13 against 2.24: holds" in r.evidence
    assert "precondition, holds: tested: qa.n is at least 1; measured 5: holds" in r.evidence  # no name: the key
    assert (r.n_tests, r.n_hold, r.n_fail, r.n_missing, r.n_undecided) == (1, 1, 0, 0, 0)
    r = one(row("less_than", ["ppl_cd", "ppl_apd"]))
    assert r.verdict == "not reproduced"
    assert r.reason == "tested: qa.ppl_cd is below qa.ppl_apd; measured 2.24 against 2.13: does not hold"
    r = one(row("less_than", ["ppl_apd", "ppl_cd"]), row("detects", ["d", "d_se"]))
    assert r.verdict == "inconclusive" and r.n_undecided == 1 and r.reason.endswith(": too little data to tell")


def test_missing_values_are_not_testable_never_guessed(results):
    assert one(row("less_than", ["a", "b"])).reason == "chapter qa has not run under profile p (no results/p/qa.json)"
    results("qa", {"a": 2.0, "text": "n/a", "flag": True, "nan": float("nan")})
    r = one(row("less_than", ["a", "b"]))
    assert r.verdict == "not testable here" and r.n_missing == 1
    assert r.reason == "chapter qa did not produce key b under profile p"
    assert one(row("at_least 0", ["text"])).reason == "chapter qa reported text = 'n/a' under profile p, not a number"
    assert one(row("at_least 0", ["flag"])).reason == "chapter qa reported flag = True under profile p, not a number"
    assert one(row("at_least 0", ["nan"])).reason.endswith("not a finite number")


def test_a_failing_test_beats_a_missing_one_and_says_both(results):
    results("qa", {"a": 3.0, "b": 1.0})
    r = one(row("less_than", ["a", "b"]), row("less_than", ["x", "y"], chapter="apd"))
    assert r.verdict == "not reproduced"
    assert r.reason == (
        "tested: qa.a is below qa.b; measured 3 against 1: does not hold (not testable here: chapter apd has "
        "not run under profile p (no results/p/apd.json))"
    )


def test_a_failed_precondition_makes_a_claim_not_testable_whatever_its_tests_say(results):
    results("qa", {"both_right": 0, "count": 0, "gates": 0, "why": "curve model inert"})
    pre = row("at_least 1", ["both_right"], kind="precondition")
    r = one(pre, row("at_least 1", ["count"]))
    assert r.verdict == "not testable here" and r.n_preconditions_failed == 1
    assert r.reason == "precondition not met: tested: qa.both_right is at least 1; measured 0: does not hold"
    assert r.preconditions == "d: does not hold [qa.both_right = 0]"
    r = one(row("flag", {"gates": "the gates pass"}, kind="precondition", reason="why"), row("at_least 1", ["count"]))
    assert r.reason == "precondition not met: tested: the gates pass: does not hold (curve model inert)"


def test_context_never_decides_and_a_check_applies_to_its_profiles(results):
    results("qa", {"r2": 0.5, "hits": 3})
    r = one(row("at_least 0.9", ["r2"], kind="context"), row("at_least 1", ["hits"]))
    assert r.verdict == "reproduced" and r.n_tests == 1
    assert "context, does not hold: tested: qa.r2 is at least 0.9; measured 0.5: does not hold" in r.evidence
    scoped = row("at_least 1", ["hits"], profiles="hub")
    assert one(scoped).reason == "no test is defined for profile p" and checks(scoped).empty
    results("qa", {"hits": 3}, profile="pythia")
    assert one(scoped, profile="pythia").verdict == "reproduced"


def test_a_gated_comparison_is_read_only_when_its_runs_pass_their_gates(results):
    gated = row(
        "less_than",
        ["ends", "cd"],
        kind="context",
        chapter="ablations",
        gated_by=[{"key": "gate_a", "who": "run A", "reason": "why_a"}, {"key": "gate_b", "who": "run B"}],
    )
    results("ablations", {"ends": 1.1, "cd": 1.2, "gate_a": 1, "gate_b": 1})
    r = checks(gated).iloc[0]
    assert r.status == "holds" and r.source == "ablations.json: ends, cd, gate_a, gate_b"
    results("ablations", {"ends": "n/a", "cd": 1.2, "gate_a": 0, "why_a": "curve model inert", "gate_b": 0})
    r = checks(gated).iloc[0]
    assert r.status == "not comparable"
    assert r.evidence == "not comparable: run A (curve model inert) and run B do not pass their mechanism gates"
    results("ablations", {"ends": 1.1, "cd": 1.2})
    assert checks(gated).iloc[0].status == "missing"


def test_cells_read_one_row_or_an_aggregate_and_only_what_the_last_run_wrote(results):
    df = pd.DataFrame(
        {
            "T": [1.0, 2.0, 2.0],
            "bucket": ["all", "all", "head"],
            "kl": [0.3, 0.1, float("nan")],
            "e": [0.25, 0.35, 0.4],
        }
    )
    out = results("curves", {}, table="hlm", df=df)
    df.to_csv(out / "tables" / "stale.csv", index=False)  # not in the run record
    r = cl.Results("p")
    assert r.number("curves", cl.Cell.parse("hlm.csv['kl' where T=2.0, bucket='all']")) == 0.1
    assert r.number("curves", cl.Cell.parse("hlm.csv[mean('e')]")) == pytest.approx(1.0 / 3)
    assert r.number("curves", cl.Cell.parse("hlm.csv[max('e' where bucket='all')]")) == 0.35
    assert r.number("curves", cl.Cell.parse("hlm.csv[count('e' where bucket='tail')]")) == 0
    problems = {
        "stale.csv['kl']": "chapter curves did not produce table stale.csv under profile p",
        "hlm.csv['nope']": "has no column 'nope' under profile p (its columns: T, bucket, kl, e)",
        "hlm.csv['kl' where bucket='all']": "has 2 rows where bucket='all' under profile p, expected exactly one",
        "hlm.csv['kl' where bucket='tail']": "table hlm.csv of chapter curves has no rows where bucket='tail'",
        "hlm.csv[mean('kl')]": "has empty or non-numeric 'kl' cells in its rows under profile p",
    }
    for cell, message in problems.items():
        r = one(row("at_least 0", [cell], chapter="curves"))
        assert r.verdict == "not testable here" and message in r.reason, (cell, r.reason)


def test_the_deciding_interval_is_that_of_the_test_that_decided(results):
    results("c", {"a": 0.05, "a_se": 0.01, "b": -0.05, "b_se": 0.01})
    r = one(row("detects", ["a", "a_se"], chapter="c"), row("detects", ["b", "b_se"], chapter="c"))
    assert r.verdict == "not reproduced" and r.estimate == -0.05 and r.ci_high < 0


def test_a_broken_results_file_stops_the_claims_naming_the_file_and_the_fix(results):
    (results("qa", {}) / "qa.json").write_text("{not json")
    with pytest.raises(DamagedResultsError, match=r"qa\.json is damaged: it is not valid JSON .*ONLY=qa"):
        one(row("at_least 0", ["x"]))


# -- the paper's claims -------------------------------------------------------------------------


def _controls(results, profile="smoke", *, engaged=1, kl=(0.05, 0.01), ka=1):
    results(
        "apd",
        {
            "gate_engaged": engaged,
            "gate_reason": "all gates pass" if engaged else "curve model inert",
            "kl_cd_gain": kl[0],
            "kl_cd_gain_se": kl[1],
        },
        profile=profile,
    )
    results(
        "known_answer", {"ka_condition_passes": ka, "ka_condition_reason": "the fitter is farther"}, profile=profile
    )


def _world_qa(results, gain, gain_se, cd_gain=(0.3, 0.02), engaged=1, people=None):
    _controls(results, engaged=engaged)
    values = {"world_ho_ppl_gain": gain, "world_ho_ppl_gain_se": gain_se, "world_ho_ppl_apd": 1.8}
    values |= {
        "world_ho_ppl_cd": 1.8 + gain,
        "world_ho_ppl_cd_gain": cd_gain[0],
        "world_ho_ppl_cd_gain_se": cd_gain[1],
    }
    results("qa", values | ({"world_ho_ppl_n_people": people} if people else {}), profile="smoke")
    return cl.judge("smoke", claim_of("C4_apd_better_qa_easy")).iloc[0]


def test_qa_claim_reads_the_papers_effect_scaled_to_this_build(results):
    r = _world_qa(results, 0.05, 0.005)
    assert r.verdict == "reproduced" and r.ci_low == pytest.approx(0.05 - 1.96 * 0.005)
    assert r.effect == pytest.approx(paper.qa_share() * (0.3 - 1.96 * 0.02))  # a share of the base's lower bound
    r = _world_qa(results, 0.0, 0.001)  # [-0.002, 0.002] excludes the scaled effect 0.084
    assert r.verdict == "not reproduced" and "the effect is 0.0842 = 0.323 × 0.261, the lower bound" in r.reason
    assert _world_qa(results, 0.01, 0.05).verdict == "inconclusive"  # holds 0 and 0.084
    r = _world_qa(results, 0.05, 0.005, people=100)  # t with 99 df, for the gain and the base alike
    assert r.critical == pytest.approx(critical(100)) and r.n_groups == 100
    assert r.effect == pytest.approx(paper.qa_share() * (0.3 - critical(100) * 0.02))
    r = _world_qa(results, 0.05, 0.005, cd_gain=(0.003, 0.01))  # no CD gain: nothing to improve on
    assert r.verdict == "not testable here" and r.reason.startswith("precondition not met: tested: the expert's QA")
    r = _world_qa(results, 0.05, 0.005, engaged=0)
    assert r.reason == (
        "precondition not met: tested: the tested ALM' passes its mechanism gates: does not hold (curve model inert)"
    )


def test_no_claim_reads_not_reproduced_while_a_precondition_fails(results):
    """Every test failing, every positive control failing: no 'not reproduced' anywhere."""
    _controls(results, "p", kl=(0.0, 0.01), ka=0)
    results("theorem1", {"max_abs_error": 1e-3})
    results("curves", {"premise_holds": 0, "hlm_n_T": 0, "hlm_gain": -1.0, "hlm_gain_se": 0.01})
    results("factuality", {"ne_er_diff_verdict": -1.0, "ne_er_diff_se_verdict": 0.01, "ne_er_cd_gain": 0.0})
    out = cl.judge("p")
    assert (out["verdict"] != "not reproduced").sum() == 8  # C1a, the identity, has no precondition
    assert (out.loc[out["verdict"] == "not testable here", "n_preconditions_failed"] > 0).sum() >= 5


def test_the_rules_say_which_claims_read_which_precondition():
    needs = cl.claims_needing("default")
    assert "C2" in needs["gates"] and "C2" not in needs["control"] and "C2" not in needs["known_answer"]
    assert needs["premise"] == "C1b" and "C4" in cl.claims_needing("pythia")["control"]
    assert cl.claims_needing("default", [])["gates"] == "no claim"
    assert cl.precondition_words("C4_apd_better_qa_easy", claim_of("C4_apd_better_qa_easy")[2].description) == (
        "no CD gain"
    )


def test_each_scaled_effect_is_a_share_in_its_own_measure_and_contrast():
    """The shares against the paper's printed values (Table 1: LLM 43.28, CD 42.21, APD 41.13 NE_ER;
    Table 6: APD + top-p k20 39.2, APD + REAL 37.5; Tables 2-5: QA ppl, about a third)."""
    assert paper.ne_er_share() == pytest.approx((42.21 - 41.13) / (43.28 - 42.21))
    assert paper.real_share() == pytest.approx((39.2 - 37.5) / (43.28 - 42.21))
    assert paper.real_gain() == pytest.approx(0.017) and paper.ne_er_gain() == pytest.approx(0.0108)
    rows = pd.concat([paper.table(t) for t in (2, 3, 4, 5)])
    rows = rows[(rows["family"] == "Pythia") & (rows["metric"] == "ppl")]
    per = {d: dict(zip(g["role"], g["value"])) for d, g in rows.groupby("dataset")}
    num = sum(v["cd"] - v["apd"] for v in per.values()) / len(per)
    assert paper.qa_gain() == pytest.approx(num)
    assert paper.qa_share() == pytest.approx(num / (sum(v["elm"] - v["cd"] for v in per.values()) / len(per)))


# -- the verdicts in words ----------------------------------------------------------------------


def test_findings_read_one_sentence_per_claim_and_keep_the_formulas(results):
    _world_qa(results, 0.05, 0.005, engaged=0)
    results("theorem1", {"max_abs_error": 2.8e-14}, profile="smoke")
    judged = cl.judge("smoke")
    text = findings.findings_markdown(judged, "smoke", findings.scale_note(None, "smoke"))
    assert text.startswith("Of the paper's 9 main claims:")
    items = [line for line in text.splitlines() if line.startswith("- **C")]
    assert len(items) == 9 and "|" not in "".join(items) and "[apd." not in text
    assert "not met: the mechanism of the tested ALM' engaged." in items[4] and "{doc}`QA <../notebooks/qa>`" in text
    assert "holds: Theorem 1's identity L_CD = (1 - 1/T) L_HLM holds to round-off" in items[0]
    assert cl.without_asides("KL(real || expert) minus KL(real || HLM) (nats, paired)") == (
        "KL(real || expert) minus KL(real || HLM)"
    )
    assert cl.without_verdict("tested: the gates pass: does not hold (inert)") == "tested: the gates pass (inert)"


def test_claims_markdown_lists_preconditions_first_and_escapes_markdown(results):
    results("curves", {"both": 3, "blind_count": 1, "r2": 0.5})
    rows = cl.parse_checks(
        [
            row("at_least 1", ["blind_count"], chapter="curves", claim="C_x", description="CD blind"),
            row("at_least 0.9", ["r2"], kind="context", chapter="curves", claim="C_x", description="linear?"),
            row("at_least 1", ["both"], kind="precondition", chapter="curves", claim="C_x", description="both"),
        ]
    )
    lines = findings.claims_markdown(cl.judge("p", rows), cl.checks("p", rows)).splitlines()
    assert lines[0] == r"**C\_x: reproduced.** C\_x"
    assert [ln.split("*")[1] for ln in lines[2:5]] == ["precondition, holds", "test, holds", "context, does not hold"]
    assert lines[3] == (
        r"- *test, holds*: CD blind. Tested: curves.blind\_count is at least 1; measured 1: holds "
        r'<small>(from <a href="../results/curves.json">curves.json</a>: blind\_count)</small>'
    )
