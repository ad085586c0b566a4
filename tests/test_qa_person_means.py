"""The QA chapter's world numbers are of one estimand, the person mean (each person's questions
averaged first, then the people), with Student-t intervals and p-values over people; its dataset
tables show only what has values, with one sentence on the rest."""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from apd.chapters import qa
from apd.chapters.gluing import record_headline
from apd.core.stats import critical, paired_difference
from apd.evaluation import qa_scoring
from apd.evaluation.qa_scoring import QAScores, cluster_mean, p_t, significance
from apd.report.results import Run

#: (person, bucket, CD's ppl, APD's ppl); the ELM's ppl is CD's + 0.05. Person "h1" has four
#: questions where APD is worse; everyone else one or two where APD is better, so the question
#: mean of CD - APD is negative while the person mean is positive.
TEST_ROWS = [
    ("h1", "head", 1.0, 1.3),
    ("h1", "head", 1.0, 1.3),
    ("h1", "head", 1.0, 1.3),
    ("h1", "head", 1.0, 1.3),
    ("h2", "head", 1.0, 0.9),
    ("h3", "head", 1.3, 1.0),
    ("t1", "torso", 1.0, 0.95),
    ("t1", "torso", 1.1, 1.0),
    ("t2", "torso", 1.0, 0.8),
    ("l1", "tail", 1.5, 1.4),
    ("l2", "tail", 1.4, 1.45),
    ("l3", "tail", 1.3, 1.1),
]
DEV_ROWS = [("d1", "head", 1.0, 1.0), ("d2", "torso", 1.0, 1.0), ("d3", "tail", 1.0, 1.0)]


def world_scores(rows=DEV_ROWS + TEST_ROWS) -> QAScores:
    """Multiple-choice world scores on a one-value 1/T grid (so both protocols report the same
    values), every gold answer kept; accuracy: CD right on even questions, APD and the ELM on all."""
    n = len(rows)
    cd = np.array([[r[2] for r in rows]])
    apd = np.array([[r[3] for r in rows]])
    right = np.ones((1, n))
    even = (np.arange(n) % 2 == 0).astype(float)[None]
    return QAScores(
        dataset="world",
        kind="mc",
        ids=[f"world/{i}" for i in range(n)],
        groups=np.array([f"world/{i}" for i in range(n)]),
        inv_T=np.array([1.0]),
        methods=["elm", "cd", "apd"],
        gold_ppl={"elm": cd + 0.05, "cd": cd, "apd": apd},
        gold_rr={"elm": 1.0 / (1.0 + cd), "cd": 1.0 / cd, "apd": 1.0 / apd},
        kept=np.ones(n, dtype=bool),
        gold_index=np.zeros(n, dtype=np.int64),
        kept_mc=np.ones(n, dtype=bool),
        correct={"elm": right, "cd": even, "apd": right},
        meta=[{"person": r[0], "bucket": r[1], "attribute": "city"} for r in rows],
    )


def person_means(rows, key=lambda r: r[2] - r[3]):
    """{person: mean of key(row)} in order of first appearance."""
    out = {}
    for r in rows:
        out.setdefault(r[0], []).append(key(r))
    return {p: float(np.mean(v)) for p, v in out.items()}


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    return Run(stem="qa", profile="p", parameters={})


@pytest.fixture
def world():
    return qa.WorldQA.from_scores(world_scores(), n_dev=len(DEV_ROWS))


def test_the_example_separates_the_two_estimands():
    by_question = float(np.mean([r[2] - r[3] for r in TEST_ROWS]))
    by_person = float(np.mean(list(person_means(TEST_ROWS).values())))
    assert by_question < 0 < by_person


def test_the_headline_gain_its_se_and_p_are_over_person_means(world, run):
    pm = np.array(list(person_means(TEST_ROWS).values()))
    h = qa.headline(world, qa.DatasetsQA(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {}))
    assert h.world_ho_ppl_gain == pytest.approx(pm.mean())
    assert h.world_ho_ppl_gain_se == pytest.approx(pm.std(ddof=1) / np.sqrt(pm.size))
    # the method means are person means too, so the gain is their difference
    assert h.world_ho_ppl_cd - h.world_ho_ppl_apd == pytest.approx(h.world_ho_ppl_gain)
    cd_means = np.array(list(person_means(TEST_ROWS, lambda r: r[2]).values()))
    assert h.world_ho_ppl_cd == pytest.approx(cd_means.mean())
    # the positive control (the ELM's ppl minus CD's, 0.05 on every question) is the same estimand
    assert h.world_ho_ppl_cd_gain == pytest.approx(0.05) and h.world_ho_ppl_cd_gain_se == pytest.approx(0, abs=1e-12)

    gain = qa.gain_by_bucket(world)
    qa.glue_world(run, world, gain)
    record_headline(run, h)
    v = run.values
    assert [v[f"world_gain_{b}"] for b in qa.RANKS] == pytest.approx(list(gain["ppl: CD - APD"]))
    want_p = scipy.stats.ttest_1samp(pm, 0.0).pvalue
    assert v["world_ho_ppl_p"] == pytest.approx(want_p)
    question_p = scipy.stats.ttest_rel([r[3] for r in TEST_ROWS], [r[2] for r in TEST_ROWS]).pvalue
    assert abs(want_p - question_p) > 0.05  # the question-level test would read differently
    assert v["world_ho_ppl_n_people"] == pm.size and v["world_ho_ppl_n"] == len(TEST_ROWS)
    lo, hi = pm.mean() + np.array([-1, 1]) * critical(pm.size) * pm.std(ddof=1) / np.sqrt(pm.size)
    assert v["world_ho_ppl_gain_ci"] == f"[{lo:+.4f}, {hi:+.4f}]"
    assert not {"world_ho_ppl_p2", "world_ho_ppl_gain_se_unclustered"} & set(v)


def test_bucket_gains_use_t_intervals_over_the_buckets_people(world):
    gain = qa.gain_by_bucket(world)
    for bucket in qa.RANKS:
        rows = [r for r in TEST_ROWS if r[1] == bucket]
        pm = np.array(list(person_means(rows).values()))
        se = pm.std(ddof=1) / np.sqrt(pm.size)
        g = gain.loc[bucket]
        assert g["ppl: CD - APD"] == pytest.approx(pm.mean())
        assert g["se (ppl)"] == pytest.approx(se)
        assert g["people (ppl)"] == pm.size and g["questions (ppl)"] == len(rows)
        t = critical(pm.size)
        assert t > 1.96 * 2  # 2 or 3 people: the t interval is far wider than a normal one
        assert g["95% CI low (ppl, t)"] == pytest.approx(pm.mean() - t * se)
        assert g["95% CI high (ppl, t)"] == pytest.approx(pm.mean() + t * se)
        assert g["p (ppl, paired)"] == pytest.approx(scipy.stats.ttest_1samp(pm, 0.0).pvalue)
    # head: h1's four questions weigh as one person; by question head's gain would be negative
    assert gain.loc["head", "ppl: CD - APD"] > 0 > np.mean([r[2] - r[3] for r in TEST_ROWS if r[1] == "head"])
    # accuracy: APD right everywhere, CD on even questions; the gain is a person mean as well
    acc_rows = [(r[0], bool(i % 2)) for i, r in enumerate(DEV_ROWS + TEST_ROWS) if i >= len(DEV_ROWS)]
    head_acc = person_means([(p, None, float(odd), 0.0) for (p, odd), r in zip(acc_rows, TEST_ROWS) if r[1] == "head"])
    assert gain.loc["head", "acc: APD - CD"] == pytest.approx(np.mean(list(head_acc.values())))
    shown = qa.gain_shown(gain)
    assert "95% t interval (ppl)" in shown and "95% CI low (ppl, t)" not in shown
    easy = qa.easy_claim(gain)
    assert easy["world_best_bucket_people"] == gain.loc[easy["world_best_bucket"], "people (ppl)"]


def test_significance_with_clusters_reports_one_estimand():
    sc = world_scores()
    person = sc.meta_column("person")
    sig = significance(sc, cluster=person)
    row = sig[(sig.protocol == "paper") & (sig.group == "all")].iloc[0]
    rows = DEV_ROWS + TEST_ROWS
    ref = paired_difference([r[3] for r in rows], [r[2] for r in rows], groups=person)
    assert row["diff"] == pytest.approx(ref.mean) and row["se_clustered"] == pytest.approx(ref.se)
    assert row["n_clusters"] == ref.n_groups and row["n"] == len(rows)
    assert row["p_clustered"] == pytest.approx(p_t(ref.mean, ref.se, ref.n_groups))
    assert not {"se_paired", "p_paired", "p_two_sample"} & set(sig.columns)  # no question-level test beside it
    plain = significance(sc)  # without clusters: the paper's question-level tests, as before
    assert {"se_paired", "p_paired", "p_two_sample"} <= set(plain.columns) and "p_clustered" not in plain


def test_p_t_is_the_one_sample_t_test_and_cluster_mean_weighs_people_equally():
    x = np.array([0.3, -0.1, 0.4, 0.2, 0.05])
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert p_t(x.mean(), se, x.size) == pytest.approx(scipy.stats.ttest_1samp(x, 0.0).pvalue)
    assert np.isnan(p_t(0.1, 0.1, 1)) and p_t(0.0, 0.0, 4) == 1.0
    assert cluster_mean([1.0, 1.0, 1.0, 4.0], ["a", "a", "a", "b"]) == (2.5, 2)
    with pytest.raises(ValueError, match="one label per value"):
        cluster_mean([1.0, 2.0], ["a"])
    table = qa_scoring.qa_summary(world_scores(), cluster=world_scores().meta_column("person"))
    assert "n_clusters" in table and (table["n_clusters"] > 0).all()


def dataset_table(kept: dict, held_out: bool) -> pd.DataFrame:
    """A qa_summary-shaped table: one free-answer dataset per entry of ``kept`` (questions scored
    of 100), values where any is scored, 1/T 'n/a' for held-out unless ``held_out``."""
    rows = []
    for ds, n in kept.items():
        for protocol in ("paper", "held-out"):
            ok = n > 0 and (protocol == "paper" or held_out)
            for metric in ("ppl", "MRR"):
                for m in ("elm", "cd", "apd"):
                    rows.append(
                        {
                            "dataset": ds,
                            "protocol": protocol,
                            "metric": metric,
                            "method": m,
                            "group": "all",
                            "inv_T": ("-" if m == "elm" else "0.5") if ok else "n/a",
                            "value": 1.0 if ok else np.nan,
                            "n": n if ok or protocol == "paper" else 0,
                            "examples": 100,
                        }
                    )
    return pd.DataFrame(rows)


def test_dataset_tables_are_trimmed_to_their_values_and_name_the_rest():
    t = dataset_table({"LAMBADA": 0, "MultiRC": 1, "SQuAD (Q+P)": 0}, held_out=False)
    ds = qa.DatasetsQA(t, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {d: np.nan for d in t.dataset.unique()})
    views, left_out = qa.dataset_views(ds)
    paper, caption = views["table_paper"]
    assert set(paper.columns.get_level_values(0)) == {"MultiRC"} and "MultiRC (1 of 100" in caption
    assert views["table_held_out"][0] is None
    chosen = views["chosen"][0]
    assert not chosen.isin(["n/a"]).any().any() and list(chosen.columns.get_level_values(0).unique()) == ["paper"]
    assert left_out["qa_unscored"][0] == "LAMBADA, SQuAD (Q+P)" and left_out["qa_n_unscored"][0] == 2
    assert left_out["qa_no_held_out"][0] == "MultiRC (1)" and left_out["qa_no_held_out_table"][0] is True
    assert left_out["qa_no_acc"][0] is None  # free-answer sets have no accuracy rows at all
    full = dataset_table({"MultiRC": 40}, held_out=True)
    views, left_out = qa.dataset_views(qa.DatasetsQA(full, *[pd.DataFrame()] * 3, {"MultiRC": np.nan}))
    assert left_out == qa.LEFT_OUT_NONE and views["table_held_out"][0] is not None
    assert qa.dataset_views(qa.DatasetsQA(*[pd.DataFrame()] * 4, {})) == ({}, qa.LEFT_OUT_NONE)


def test_apd_context_reads_the_gates_and_explains_the_count(run, tmp_path, monkeypatch):
    apd = {
        "gate_collapsed": 0.81,
        "gate_collapsed_cd": 0.37,
        "gate_toward_expert": 0.97,
        "gate_collapse_tol": 0.005,
        "gate_not_trivial": 0,
        "gate_on_expert": 1,
        "n_test_items": 7,
        "qa_per_bucket": 2,
    }
    (tmp_path / "p").mkdir(exist_ok=True)
    (tmp_path / "p" / "apd.json").write_text(json.dumps(apd))
    item = lambda person, bucket, attr: SimpleNamespace(person=person, bucket=bucket, attribute=attr)  # noqa: E731
    test_items = [item("a", "head", "city"), item("a", "head", "drink"), item("b", "tail", "city")]
    test_items += [item("c", "tail", "city"), item("c", "tail", "hobby"), item("d", "tail", "city")]
    monkeypatch.setattr(qa, "dev_test_split", lambda items, world, seed: ([], test_items))
    built = SimpleNamespace(corpus=SimpleNamespace(qa_items=test_items, world=None))
    scores = world_scores([("a", "head", 1.0, 1.0), ("b", "tail", 1.0, 1.0), ("c", "tail", 1.0, 1.0)])
    scores.kept[2] = False
    w = qa.WorldQA.from_scores(scores, n_dev=0)
    qa.glue_apd_context(run, "p", built, w)
    qa.glue_world_counts(run, w)
    v = run.values
    assert v["apd_near_expert"] is True and v["apd_expert_share"] == 0.81 and v["apd_toward_expert"] == 0.97
    assert (v["world_n_test"], v["world_n_test_people"], v["world_n_test_kept"]) == (3, 3, 2)
    assert (v["apd_n_test_items"], v["apd_qa_per_bucket"]) == (7, 2)
    assert (v["world_n_split_test"], v["world_n_split_distributional"], v["world_n_split_single"]) == (6, 2, 4)
    assert v["world_split_per_bucket"] == "head 2, torso 0, tail 4"
    engaged = Run(stem="qa", profile="p", parameters={})
    (tmp_path / "p" / "apd.json").write_text(json.dumps({**apd, "gate_not_trivial": 1, "gate_on_expert": 0}))
    qa.glue_apd_context(engaged, "p", None, None)
    assert engaged.values["apd_near_expert"] is False and engaged.values["apd_expert_share"] == "n/a"
    assert all(engaged.values[k] == "n/a" for k in qa.COUNT_KEYS)


def test_the_page_states_the_estimand_and_the_near_expert_sentence():
    from apd.report import pages
    from apd.build import notebook_path

    nb = json.loads(notebook_path("qa").read_text())
    base = {"world_ho_ppl_apd": 1.2, "world_ho_ppl_n_people": 100, "world_best_bucket_people": 10}
    text = "\n".join(pages.page_markdown(nb, {**base, "apd_near_expert": True, "apd_expert_share": 0.81}))
    assert "person mean" in text and "t interval" in text
    assert text.count("largely restates the expert-vs-CD one") == 1  # said once, linking the APD chapter
    plain = "\n".join(pages.page_markdown(nb, {**base, "apd_near_expert": False}))
    assert "largely restates" not in plain and "paired t-test" not in plain and "two-sample test gives" not in plain


def test_the_held_out_1_over_T_is_chosen_on_the_person_mean_too():
    # dev: person "a" has three questions best at the first 1/T, "b" one far better at the second;
    # the question mean picks the first, the person mean (the chapter's estimand) the second
    values = np.array([[1.0, 1.0, 1.0, 4.0, 9.0], [2.0, 2.0, 2.0, 2.0, 9.0]])
    counted = np.ones(5, dtype=bool)
    select, report = np.array([True, True, True, True, False]), np.array([False] * 4 + [True])
    people = np.array(["a", "a", "a", "b", "c"])
    by_question = qa_scoring.pick(values, [0.25, 1.0], False, counted, "held-out", report, select)
    by_person = qa_scoring.pick(values, [0.25, 1.0], False, counted, "held-out", report, select, cluster=people)
    assert by_question.inv_T == (0.25,) and by_person.inv_T == (1.0,)
    with pytest.raises(ValueError, match="one label per item"):
        qa_scoring.best_index(values, False, cluster=people[:3])
