"""apd.chapters.ablations on tiny hand-made runs: the table, its gates, comparisons, headline."""

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from chapter_keys import keys_read, result_keys

from apd.chapters import ablations as ab
from apd.chapters.apd import ApdHeadline
from apd.chapters.gluing import MissingResultError, record_headline
from apd.report.tables import plus_minus
from apd.report.results import Run

NAMES = ["logit", "alm+elm", "distilled", "distilled-no-small"]


def gate(engaged, reason=None):
    return SimpleNamespace(engaged=engaged, curve_alive=engaged, collapsed=0.0, reason=reason, toward_expert=0.5)


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.4, 40)
    shift = {
        "APD": 0.0,
        "logit": 0.05,
        "alm+elm": 0.0,
        "distilled": -0.05,
        "distilled-no-small": 0.0,
        "CD": 0.02,
        "ELM": 0.1,
    }
    per = {n: pd.DataFrame({"kl": base + d + rng.normal(0, 1e-3, 40), "nll": base}) for n, d in shift.items()}
    people = np.repeat(np.arange(20), 2)
    rows = []
    for n in ["APD", *NAMES, "CD", "ELM"]:
        ref = ab.reference_of(n) if n not in ("APD",) else "APD"
        d = per[n]["kl"] - per[ref]["kl"]
        rows.append(
            {
                "name": n,
                "group": "other",
                "kl": per[n]["kl"].mean(),
                "nll": per[n]["nll"].mean(),
                "inv_T": 0.5,
                "kl_diff": d.mean(),
                "kl_diff_se": d.std() / np.sqrt(len(d)),
                "nll_diff": 0.0,
                "nll_diff_se": 0.0,
                "train_seconds": 1.0,
                "wall_seconds": 2.0,
            }
        )
    frame = pd.DataFrame(rows)
    res = SimpleNamespace(table=frame[~frame.name.isin(["CD", "ELM"])], configs={})
    gates = {
        "APD": gate(True),
        "logit": gate(False, "curve inert"),
        "alm+elm": gate(True),
        "distilled": gate(True),
        "distilled-no-small": gate(True),
    }
    table = ab.ablation_table(res, frame[frame.name.isin(["CD", "ELM"])], gates, z=2.0, min_effect=0.001)
    cmp = ab.Comparisons(table.set_index("name"), per, gates, people, z=2.0, min_effect=0.001, names=NAMES)
    return Run(stem="ablations", profile="p", parameters={}), table, cmp


def test_every_key_the_claims_read_from_ablations_is_a_headline_field():
    names = [
        *ab.ORDERINGS,
        "APD",
        "logit",
        "no-flip",
        "alm+elm",
        "distilled",
        "distilled-alm+mid+elm",
        "distilled-no-small",
    ]
    assert keys_read("ablations") <= result_keys(ab.AblationsHeadline, names)


def test_table_marks_failed_gates_untestable(tiny):
    _, table, _ = tiny
    t = table.set_index("name")
    assert t.loc["logit", "verdict_kl"] == ab.UNTESTABLE and t.loc["APD", "verdict_kl"] == "reference"
    assert t.loc["distilled", "verdict_kl"] == "better" and t.loc["logit", "engaged"] == 0
    assert list(table[ab.SHOWN].columns[:2]) == ["label", "verdict_kl"]
    assert t.loc["CD", "verdict_kl"] == "worse"  # the reference APD passes its gates: CD is compared


def test_cd_and_the_expert_are_untestable_against_a_main_apd_that_fails_its_gates(tiny):
    _, table, cmp = tiny
    raw = table.drop(
        columns=["label", "verdict_kl", "verdict_nll", "engaged", "curve_alive", "share_at_expert", "gates"]
    )
    res = SimpleNamespace(table=raw[~raw.name.isin(["CD", "ELM"])], configs={})
    gates = {**cmp.gates, "APD": gate(False, "collapsed onto the expert")}
    ref = raw[raw.name.isin(["CD", "ELM"])]
    t = ab.ablation_table(res, ref, gates, z=2.0, min_effect=0.001).set_index("name")
    assert t.loc["CD", "verdict_kl"] == t.loc["ELM", "verdict_kl"] == ab.UNTESTABLE
    assert t.loc["distilled-no-small", "verdict_kl"] != ab.UNTESTABLE  # its reference is the distilled run


def test_the_comparisons_table_has_the_runs_that_ran_with_their_paired_differences(tiny):
    run, _, cmp = tiny
    table = ab.comparisons(cmp)
    d, se = cmp.difference("alm+elm", "APD")
    row = table[(table["compared"] == "the ALM and the ELM only") & (table["against"] == "reference APD")].iloc[0]
    assert row["KL difference (nats)"] == plus_minus(d, se) and row["verdict"] == cmp.vs("alm+elm", "APD")
    assert table.loc[table["compared"] == "curves on log-probabilities", "verdict"].iloc[0] == ab.UNTESTABLE
    assert "poly3 decay" not in set(table["compared"])  # not run in this build: no row, no "n/a"
    assert len(table) == sum(a in cmp.per and b in cmp.per for _, a, b in ab.COMPARED)
    ab.glue_comparisons(run, cmp)
    assert run.values["main_vs_cd"] == pytest.approx(cmp.difference("APD", "CD")[0])
    assert run.values["decays_compared"] is False and run.values["best_decay"] == "exponential"
    ab.glue_overview(run, cmp)  # every run the table lists lands in one of the four lists
    lists = [run.values[k] for k in ("beat_main", "lose_main", "tie_main", "untestable_main")]
    assert run.values["untestable_main"] == cmp.table.loc["logit", "label"]
    shown = sorted(n for text in lists if text != "none" for n in text.split("; "))
    assert shown == sorted(cmp.table.loc[n, "label"] for n in cmp.names)


def test_comparisons_headline_and_orderings(tiny):
    run, _, cmp = tiny
    assert cmp.vs("logit", "APD") == ab.UNTESTABLE and cmp.vs("missing", "APD") is None
    d, se = cmp.difference("distilled", "APD")
    assert d < 0 and se > 0  # the fixture's distilled run is closer to the truth
    h = ab.headline(cmp)
    assert h.n_gated == 5 and h.n_engaged == 4 and h.gate_reason["logit"] == "curve inert"
    record_headline(run, h)
    assert run.values["gate_engaged_logit"] == 0 and run.values["midsize_ends_only"] == pytest.approx(
        cmp.kl("alm+elm")
    )
    hold = ab.orderings(cmp)
    assert hold["probability space beats logit space"] == ab.UNTESTABLE and hold["the flip helps"] is None
    shown = ab.glue_orderings(run, hold)
    assert shown.columns[0].startswith("holds here") and run.values["n_paper_orderings"] == 3
    assert run.values["orderings_tested"] is True
    ab.glue_orderings(run, {k: ab.UNTESTABLE for k in hold})  # nothing testable: the page says why
    assert run.values["orderings_tested"] is False and run.values["paper_orderings_hold"] == "none"
    ab.glue_distilled(run, cmp, "p", 1.0)
    assert run.values["distilled_kl_diff_main"] < 0 and run.values["apd_distilled_toward_expert"].startswith("n/a")


def test_budget():
    cfg = SimpleNamespace(epochs=3, batch_size=8, data_fraction=0.5)
    over = ab.budget_overrides(cfg, epochs=1, data_fraction=0.5)
    assert over == {"epochs": 1, "data_fraction": 0.25}
    cut = ab.budget_values(cfg, over)
    assert (cut["budget_epochs"], cut["budget_batch_size"], cut["budget_data_fraction"][0]) == (1, 8, 0.25)
    assert (cut["main_config_epochs"], cut["main_config_data_fraction"][0], cut["budget_reduced"]) == (3, 0.5, True)
    same = ab.budget_values(cfg, {})
    assert same["budget_reduced"] is False and same["budget_epochs"] == same["main_config_epochs"] == 3
    assert all(not isinstance(v, str) for v in cut.values())  # numbers; the notebook writes the words
    with pytest.raises(ValueError):
        ab.check_family("pythia")


def test_distilled_reads_the_apd_chapters_typed_headline(tiny, tmp_path):
    run, _, cmp = tiny
    (tmp_path / "p").mkdir(exist_ok=True)
    values = {f.name: 0 for f in dataclasses.fields(ApdHeadline)}
    (tmp_path / "p" / "apd.json").write_text(json.dumps({**values, "distilled_toward_expert": 0.37}))
    ab.glue_distilled(run, cmp, "p", 1.0)
    assert run.values["apd_distilled_toward_expert"] == 0.37
    del values["distilled_toward_expert"]  # an older APD run: the error says which chapter to run again
    (tmp_path / "p" / "apd.json").write_text(json.dumps(values))
    with pytest.raises(MissingResultError, match="lack distilled_toward_expert .*ONLY=apd"):
        ab.glue_distilled(run, cmp, "p", 1.0)
