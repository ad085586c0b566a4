"""Factuality's operating points chosen on dev people (apd.evaluation.factuality.selection)."""

import dataclasses
import doctest
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from apd.chapters import factuality as chapter
from apd.evaluation.factuality import selection, world_scoring
from apd.world.world import World, WorldConfig


def _cd_rows(curves: dict) -> pd.DataFrame:
    """Top-p k20 rows of CD: {T: [(Dist-2, NE_ER), ...]}."""
    return pd.DataFrame(
        [
            {"threshold": "top-p k20", "role": "cd", "T": T, "label": f"CD T={T:g} ({d})", "Dist-2": d, "NE_ER": ne}
            for T, pts in curves.items()
            for d, ne in pts
        ]
    )


def _real_rows(curve, points: dict) -> pd.DataFrame:
    rows = [
        {"threshold": "top-p k20", "role": "apd", "T": 1.0, "label": f"APD k20 {d}", "Dist-2": d, "NE_ER": ne}
        for d, ne in curve
    ]
    rows += [
        {
            "threshold": "REAL",
            "role": "apd",
            "T": 1.0,
            "label": f"APD T=1 + REAL (T_r={t:g})",
            "Dist-2": d,
            "NE_ER": ne,
        }
        for t, (d, ne) in points.items()
    ]
    return pd.DataFrame(rows)


def test_the_module_examples_run():
    assert doctest.testmod(selection).failed == 0


def test_curve_mean_integrates_the_piecewise_linear_curve():
    # a tent: 0 at 0, 1 at 1, 0 at 2; its mean over [0, 2] is 1/2, over [0.5, 1] is 0.75
    x, y = [2.0, 0.0, 1.0], [0.0, 0.0, 1.0]  # any order
    assert selection.curve_mean(x, y, 0.0, 2.0) == pytest.approx(0.5)
    assert selection.curve_mean(x, y, 0.5, 1.0) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="not inside the curve's x range"):
        selection.curve_mean(x, y, -0.1, 1.0)


def test_cd_T_is_the_curve_lowest_over_the_shared_diversity_range():
    # T = 4 is lowest where all three overlap (0.3 to 0.5), though T = 1 has the lowest point overall
    res = _cd_rows(
        {
            1.0: [(0.1, 0.10), (0.3, 0.60), (0.5, 0.70)],
            2.0: [(0.3, 0.55), (0.5, 0.65), (0.7, 0.80)],
            4.0: [(0.2, 0.50), (0.4, 0.50), (0.6, 0.50)],
        }
    )
    c = selection.choose_cd_T(res, grid=(1.0, 2.0, 4.0))
    assert c.value == 4.0 and c.on_edge and not c.is_paper
    assert "0.300 to 0.500" in c.reason
    assert c.table.set_index("T")["mean NE_ER"].idxmin() == 4.0


def test_a_cd_T_tie_goes_to_the_papers_T():
    same = [(0.2, 0.5), (0.4, 0.5)]
    c = selection.choose_cd_T(_cd_rows({1.0: same, 2.0: same, 4.0: same}), grid=(1.0, 2.0, 4.0))
    assert c.value == selection.PAPER_CD_T and not c.on_edge


def test_cd_T_keeps_the_papers_value_without_a_shared_range_or_with_a_thin_curve():
    apart = _cd_rows({1.0: [(0.1, 0.5), (0.2, 0.4)], 4.0: [(0.5, 0.1), (0.6, 0.2)]})
    c = selection.choose_cd_T(apart, grid=(1.0, 4.0))
    assert c.value == selection.PAPER_CD_T and "share no Dist-2 range" in c.reason
    thin = _cd_rows({1.0: [(0.1, 0.5)], 4.0: [(0.1, 0.5), (0.6, 0.2)]})
    c = selection.choose_cd_T(thin, grid=(1.0, 4.0))
    assert c.value == selection.PAPER_CD_T and "fewer than two points" in c.reason


def test_T_r_is_the_point_farthest_below_apds_curve_and_unmatched_points_are_no_candidates():
    curve = [(0.2, 0.6), (0.4, 0.6)]
    # T_r = 8 lies far below but outside the curve's Dist-2 range: not a candidate
    res = _real_rows(curve, {1.0: (0.25, 0.58), 2.0: (0.3, 0.50), 4.0: (0.35, 0.61), 8.0: (0.9, 0.0)})
    c = selection.choose_T_r(res, grid=(1.0, 2.0, 4.0, 8.0))
    assert c.value == 2.0 and not c.on_edge
    t = c.table.set_index("T_r")
    assert t.loc[2.0, "below"] == pytest.approx(0.1)
    assert not t.loc[8.0, "matched"] and np.isnan(t.loc[8.0, "below"])
    none = _real_rows(curve, {1.0: (0.9, 0.1), 2.0: (0.05, 0.1)})
    c = selection.choose_T_r(none, grid=(1.0, 2.0))
    assert c.value == selection.PAPER_T_R and "no APD + REAL point" in c.reason
    with pytest.raises(ValueError, match="T_r=4"):  # a candidate the dev sweep did not run
        selection.choose_T_r(res.iloc[:-2], grid=(4.0,))


def test_dev_methods_need_two_p_and_cover_every_candidate():
    ms = selection.dev_methods([0.6, 0.8], [1.0, 2.0, 4.0], [2.0, 4.0])
    assert len(ms) == 3 * 2 + 2 + 2 and len({m.label for m in ms}) == len(ms)
    assert [m.dist for m in selection.dev_methods([0.6, 0.8], [], [])] == ["APD", "APD"]
    with pytest.raises(ValueError, match="at least two p"):
        selection.dev_methods([0.8])


def test_dev_prompts_are_the_dev_half_and_never_a_test_person():
    world = World(WorldConfig.smoke())
    dev = world_scoring.world_test_prompts(world, 0, half="dev")
    test = world_scoring.world_test_prompts(world, 0)
    assert dev and test and not ({p.person for p in dev} & {p.person for p in test})
    assert len(dev) + len(test) == len(world.bio_prompts())
    ps, n = chapter.world_prompts(world, 0, 5, half="dev")
    assert n == len(dev) and {p.person for p in ps} <= {p.person for p in dev}
    with pytest.raises(ValueError, match="'dev' or 'test'"):
        world_scoring.world_test_prompts(world, 0, half="train")


def test_without_a_world_the_papers_settings_are_used_and_said():
    cd, tr, res, n = chapter.dev_choices(
        None, None, 0, 100, [0], [0.6, 0.8], "dev", [1.0, 2.0], "dev", [2.0, 4.0], 1.0, True, [], 8, 4
    )
    assert (cd.value, tr.value, res, n) == (selection.PAPER_CD_T, selection.PAPER_T_R, None, 0)
    assert "no world" in cd.reason and "no world" in tr.reason
    values = chapter.choice_values(cd, tr, n)
    assert values["dev_prompts_used"][0] is None and values["cd_T_is_paper"][0] is True
    cd, tr, _, _ = chapter.dev_choices(
        None, None, 0, 100, [0], [0.6, 0.8], 4.0, [1.0], 2.0, [2.0], 1.0, True, [], 8, 4
    )
    assert (cd.value, tr.value, cd.reason) == (4.0, 2.0, "set by the profile")


def test_the_sweep_holds_the_papers_settings_for_the_labelled_rows():
    ms, grid = chapter.sweep_methods(
        [0.6, 0.8], [1.0], 4.0, [1.0], [2.0], 0.1, 1.0, [0.8, 0.6], ["low"], [1.0, 4.0], 1.0
    )
    ms = chapter.with_paper_settings(ms, [0.8, 0.6], 1.0, real_run=True)
    labels = {m.label for m in ms}
    assert {"CD T=2 + top-p k20 (p=0.8)", "CD T=2 + top-p k20 (p=0.6)", "CD T=2 + REAL (T_r=4)"} <= labels
    assert {"CD T=4 + top-p k20 (p=0.8)", "APD T=1 + REAL (T_r=1)"} <= labels
    assert len(labels) == len(ms)


def _ne_er_rows(ne_er: dict) -> pd.DataFrame:
    return pd.DataFrame({"lambda3": list(ne_er), "ne_er": list(ne_er.values())})


def test_lambda3_by_ne_er_chooses_a_smaller_lambda3_that_is_clearly_better():
    # 0.1 names a point fewer wrong entities than the larger values: more than the tie, so it wins
    assert selection.choose_lambda3_by_ne_er(_ne_er_rows({0.1: 0.40, 0.2: 0.41, 0.8: 0.45})) == (0.1, False)
    # the tie is half a percentage point: 0.006 apart is not a tie, 0.004 apart is (the larger wins)
    assert selection.choose_lambda3_by_ne_er(_ne_er_rows({0.1: 0.400, 0.2: 0.406, 0.8: 0.5})) == (0.1, False)
    assert selection.choose_lambda3_by_ne_er(_ne_er_rows({0.1: 0.400, 0.2: 0.404, 0.8: 0.5})) == (0.2, True)
    assert selection.LAMBDA3_NE_ER_TIE == 0.005


def test_lambda3_by_ne_er_ties_go_to_the_largest_lambda3():
    # every NE_ER within half a point of the best, in any order of rows: the largest lambda3 wins
    rows = _ne_er_rows({0.8: 0.452, 0.1: 0.450, 0.4: 0.4535, 0.2: 0.451})
    assert selection.choose_lambda3_by_ne_er(rows) == (0.8, False)
    # a NaN NE_ER (no entity named) is no candidate, and the interior is judged among the candidates
    rows = _ne_er_rows({0.1: 0.30, 0.2: 0.30, 0.4: float("nan")})
    assert selection.choose_lambda3_by_ne_er(rows) == (0.2, False)


def test_lambda3_by_ne_er_refuses_what_it_cannot_choose_from():
    with pytest.raises(ValueError, match="columns lambda3 and ne_er"):
        selection.choose_lambda3_by_ne_er(pd.DataFrame({"lambda3": [0.1], "NE_ER": [0.3]}))
    with pytest.raises(ValueError, match="distinct"):
        selection.choose_lambda3_by_ne_er(_ne_er_rows({0.1: 0.3}).pipe(lambda d: pd.concat([d, d])))
    with pytest.raises(ValueError, match="no lambda3 has a dev NE_ER"):
        selection.choose_lambda3_by_ne_er(_ne_er_rows({0.1: float("nan"), 0.2: float("nan")}))
    with pytest.raises(ValueError, match="tie must be"):
        selection.choose_lambda3_by_ne_er(_ne_er_rows({0.1: 0.3}), tie=-0.01)


def _tuned(tmp_path, kl_choice=0.2):
    from apd.amateur.pipeline import APDResult

    rows = pd.DataFrame(
        {
            "lambda3": [0.1, 0.2, 0.8],
            "score": [3.36, 3.35, 3.37],
            "alm_prime": [str(tmp_path / f"run{v}" / "alm_prime") for v in (0.1, 0.2, 0.8)],
        }
    )
    return APDResult(tmp_path / f"run{kl_choice}" / "alm_prime", None, kl_choice, rows, tmp_path, "release")


def _fake_decoding(monkeypatch, ne_er_of_run: dict):
    """Decoders are the ALM' folder's name; each run's continuations score its NE_ER."""
    from apd.evaluation.factuality import sweeps

    calls = []

    def sweep(dec, methods, texts, seeds, *args, cache=None, **kwargs):
        calls.append((dec, cache, [m.label for m in methods]))
        return {m.label: dec for m in methods}

    def score_sweep(methods, gens, scorer, *args):
        run = gens[methods[0].label]
        return pd.DataFrame([{"NE_ER": ne_er_of_run[run], "NE_ER_se": 0.01, "Dist-2": 0.3}])

    monkeypatch.setattr(sweeps, "sweep", sweep)
    monkeypatch.setattr(sweeps, "score_sweep", score_sweep)
    return calls


def _decoders_for(folder):
    name = Path(folder).parent.name
    return name, ["key", name]


def test_the_chapter_decodes_every_tuned_alm_prime_and_uses_the_ne_er_choice(tmp_path, monkeypatch):
    world, res = World(WorldConfig.smoke()), _tuned(tmp_path)
    calls = _fake_decoding(monkeypatch, {"run0.1": 0.40, "run0.2": 0.45, "run0.8": 0.46})
    monkeypatch.setattr(chapter, "_full_run", lambda res, value: None)  # no full-budget run cached
    args = (0, 6, [0], 0.8, 1.0, _decoders_for, 8, 4)
    c = chapter.lambda3_by_ne_er(res, None, object(), world, *args)
    assert [d for d, _, _ in calls] == ["run0.1", "run0.2", "run0.8"]  # each ALM' through its own decoders
    assert len({cache for _, cache, _ in calls}) == 3 and {tuple(m) for _, _, m in calls} == {
        ("APD T=1 + top-p k20 (p=0.8)",)
    }
    assert (c.ne_er, c.kl, c.interior, c.differs) == (0.1, 0.2, False, True)
    assert c.folder == tmp_path / "run0.1" / "alm_prime" and "short tuning run" in c.why and "an end of them" in c.why
    assert c.table["by NE_ER"].tolist() == [True, False, False] and c.table["by KL"].tolist() == [False, True, False]
    values = chapter.lambda3_values(c)
    assert values["lambda3_ne_er"] == (0.1, "{:g}") and values["lambda3_kl"] == (0.2, "{:g}")
    assert values["lambda3_candidates"][0].startswith("0.1: dev KL 3.3600, dev NE_ER 40.0%")
    # the criteria agree (a tie within half a point goes to the larger, the KL choice): the APD chapter's ALM'
    _fake_decoding(monkeypatch, {"run0.1": 0.450, "run0.2": 0.452, "run0.8": 0.47})
    c = chapter.lambda3_by_ne_er(res, None, object(), world, *args)
    assert (c.ne_er, c.differs, c.folder) == (0.2, False, res.alm_prime_path) and "as by dev KL" in c.source


def test_where_nothing_can_be_chosen_todays_alm_prime_is_kept_and_said(tmp_path):
    res, args = _tuned(tmp_path), (0, 6, [0], 0.8, 1.0, _decoders_for, 8, 4)
    world = World(WorldConfig.smoke())
    cases = [
        ((res, "given/alm_prime", object(), world, 0, 6), "loaded from alm_prime_path"),
        ((res, None, None, None, 0, 6), "a Hub family has no world"),
        ((res, None, object(), None, 0, 6), "world_n_prompts is 0"),
        ((res, None, object(), world, 0, 0), "dev_n_prompts is 0"),
        ((dataclasses.replace(res, tuning=None), None, object(), world, 0, 6), "not tuned"),
        ((dataclasses.replace(res, tuning=res.tuning.iloc[:1]), None, object(), world, 0, 6), "one lambda3 only"),
    ]
    for (r, path, built, w, seed, n), why in cases:
        c = chapter.lambda3_by_ne_er(r, path, built, w, seed, n, *args[2:])
        assert why in c.why and c.ne_er is None and c.table.empty, why
        assert c.folder == (path or r.alm_prime_path)
        values = chapter.lambda3_values(c)
        assert values["lambda3_ne_er"][0] is None and values["lambda3_source"][0] == c.why
        assert values["lambda3_differs"] == (False, None) and values["lambda3_ne_er_on_edge"] == (False, None)
