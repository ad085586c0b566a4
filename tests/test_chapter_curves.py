"""The probability-curves chapter's module (apd.chapters.curves): pools, summaries, figures."""

import dataclasses
import doctest
import json
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import numpy as np
import pandas as pd

from apd.report import pages
from apd.evaluation.blindness import blindness_table
from apd.report import claims
from apd.chapters import curves as chapter

matplotlib.use("Agg")
PYTHIA = Path(__file__).parent / "data" / "pythia_results" / "curves.json"


def _pool(seed=0, n_q=6, n_text=30, V=8):
    rng = np.random.default_rng(seed)
    members = rng.normal(size=(3, n_q, V))
    q = chapter.Questions(
        members,
        rng.integers(0, V, n_q),
        np.array(["head", "tail"] * (n_q // 2)),
        [f"q{i}" for i in range(n_q)],
        [f"q{i}" for i in range(n_q)],
        "world QA",
    )
    lp = rng.normal(size=(3, n_text, V))
    gold = lp[-1].argmax(-1)
    lp[0, np.arange(n_text), gold] += 5.0  # the amateur agrees with the expert at most positions
    held = {
        "member_logprobs": lp,
        "amateur_logprobs": lp[0] + rng.normal(scale=0.5, size=(n_text, V)),
        "next_ids": gold,
        "contexts": [f"text {i}" for i in range(n_text)],
    }
    return q, chapter.pool(q, rng.normal(size=(n_q, V)), held)


def test_examples():
    assert doctest.testmod(chapter, optionflags=doctest.ELLIPSIS).failed == 0


def test_pool_orders_questions_then_text_and_groups_them():
    _, p = _pool()
    assert p.elm.shape == (36, 8) and p.is_q.sum() == 6 and p.labels[6] == "…text 0"
    assert list(p.groups) == ["world QA, head", "world QA, tail", "world QA, all", "held-out text", "all contexts"]
    assert p.groups["world QA, head"].sum() == 3 and p.groups["held-out text"].sum() == 30


def test_blindness_summary_reads_the_table_and_compares_apd_with_cd():
    q, p = _pool()
    T_grid = [1.0, 2.0]
    blind = blindness_table(p.elm, p.alm, p.gold, T_grid, groups=p.groups, apd_logprobs=p.apd, top_k=5)
    s = chapter.blindness_summary(blind, p, q.source, T_grid, 5)
    row = blind[(blind.group == "all contexts") & (blind.method == "CD") & (blind["T"] == 1.0)].iloc[0]
    assert s["all_blind_both_right"] == row["ELM and ALM right"] and s["all_blind_count"] == row["wrong among those"]
    assert s["blind_n_questions"] == 6 and s["blind_n_text"] == 30
    d = chapter.apd_minus_cd(p, 5)
    apd_row = blind[(blind.group == "all contexts") & (blind.method == "APD")].iloc[0]
    assert np.isclose(d.mean, apd_row["blindness rate"] - row["blindness rate"])
    assert sum(s[k] for k in ("blind_apd_fewer", "blind_apd_more", "blind_apd_tie")) == 1
    assert " ± " in s["all_blind_apd_minus_cd"][0]
    table = chapter.rate_table(blind, p.groups)
    assert list(table.index) == list(p.groups) and list(table.columns) == ["CD, T = 1", "CD, T = 2", "APD, T = 1"]


def test_clearest_example_and_its_figure():
    q, p = _pool()
    i, b = chapter.clearest(p, 1.0, 5)
    if i is not None:
        assert b.blind[i]
        curve_lp = q.logprobs[:, i] if p.is_q[i] else np.zeros((3, 8))
        fig, _ = chapter.plot_example(
            p, i, b, curve_lp, np.log([1e3, 1e4, 1e5]), ["a", "b", "c"], 1.0, 5, lambda ids: str(ids)
        )
        assert len(fig.axes) >= 2


def test_linearity_and_hlm_summaries():
    fits = SimpleNamespace(
        r2=np.array([[0.95, 0.5], [0.99, 0.92]]), curvature=np.array([[0.1, -0.2], [0.0, 0.3]]), slope=np.zeros((2, 2))
    )
    lin = chapter.linearity_frame(fits, 2, 2)
    s = chapter.linearity_summary(lin)
    assert s["r2_median"] == 0.935 and s["curves_linear"] and s["r2_share_above_09"] == 0.75
    assert chapter.plot_linearity(lin).axes
    kcol, ecol = chapter.hlm_columns(5)
    hlm = pd.DataFrame(
        {
            "T": [2.0, 4.0],
            "ln s_HLM": [10.0, 9.0],
            kcol: [0.3, 0.1],
            ecol: [0.2, 0.2],
            "top-1 agrees, CD-HLM": [0.5, 0.6],
            "top-1 agrees, ELM": [0.7, 0.7],
        }
    )
    h = chapter.hlm_summary(hlm, 5)
    assert h["hlm_n_better"][0] == 1 and h["hlm_T_better"][0] == "4" and h["hlm_T_worse"][0] == "2"
    assert chapter.hlm_summary(hlm.iloc[:0], 5)["hlm_n_better"] == (None, "{}")
    assert chapter.plot_hlm(hlm, 5, "a", "b").axes


def test_prompt_helpers():
    assert chapter.default_prompt(None, 0) == chapter.HUB_PROMPT
    curves = pd.DataFrame(
        {
            "position": [0, 1],
            "token_id": [1, 2],
            "next_token": ["a", "b"],
            "actual_next": ["a", "c"],
            "context": ["x", "y"],
            "p:s": [0.1, 0.2],
            "p:l": [0.3, 0.4],
            "cd:T=1": [0.5, 0.5],
        }
    )
    lp = np.log(np.full((2, 4), 0.25))
    curves["apd:T=1"] = chapter.apd_probs_at(curves, lp, lp, 4)
    assert chapter.plot_prompt(curves, np.array([1.0, 2.0]), ["s", "l"], [1.0], 4).axes


def test_headline_has_every_key_the_claims_read():
    keys = claims.keys_read("curves")
    assert keys and keys <= {f.name for f in dataclasses.fields(chapter.CurvesHeadline)}
    h = chapter.CurvesHeadline.from_values(json.loads(PYTHIA.read_text()))
    assert h.hlm_n_T == 3


def _overview(values: dict) -> str:
    """The curves page's markdown for ``values`` (glue filled in, conditions applied)."""
    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "curves.ipynb").read_text())
    return "\n".join(pages.page_markdown(nb, values))


def test_the_overview_reads_apd_blindness_beside_its_collapse_onto_the_expert():
    """Where the APD chapter finds ALM' collapsed onto the expert, the page says APD's blindness rate
    measures that collapse; where it does not, the caveat is not shown."""
    base = json.loads(PYTHIA.read_text())
    collapsed = {
        "apd_near_expert": True,
        "apd_expert_share": 0.81,
        "apd_expert_share_cd": 0.37,
        "apd_collapse_tol": 0.005,
    }
    assert "collapsed onto the expert" in _overview({**base, **collapsed})
    assert "collapsed onto the expert" not in _overview({**base, **collapsed, "apd_near_expert": False})


def test_the_overview_names_the_curvature_test_as_the_premise_whatever_r2_says():
    base = json.loads(PYTHIA.read_text())
    for linear in (True, False):
        text = _overview({**base, "curves_linear": linear})
        assert "the premise is a curvature test" in text and "at which the verdicts call" not in text
