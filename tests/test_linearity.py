import numpy as np
import pytest

from apd.core import theory
from apd.evaluation import linearity
from apd.evaluation.blindness import blindness_table, cd_scores, clearest_example, find_obvious_blindness


def test_fit_lines_recovers_line_and_parabola():
    x = np.array([9.0, 10.0, 11.5, 12.0, 14.0])
    vals = np.stack([2.0 - 0.5 * x, 1.0 + 0.3 * (x - 11) ** 2], axis=1)  # (N, 2)
    fit = linearity.fit_lines(x, vals)
    assert fit.slope[0] == pytest.approx(-0.5) and fit.intercept[0] == pytest.approx(2.0)
    assert fit.r2[0] == pytest.approx(1.0) and fit.curvature[0] == pytest.approx(0.0, abs=1e-10)
    assert fit.curvature[1] == pytest.approx(0.3)
    assert fit.r2[1] < 0.9 and fit.rmse[1] > 0


def test_fit_lines_errors():
    with pytest.raises(ValueError, match="increase"):
        linearity.fit_lines([1.0, 3.0, 2.0], np.zeros((3, 2)))
    with pytest.raises(ValueError, match="NaN"):
        linearity.fit_lines([1.0, 2.0, 3.0], np.array([[0.0], [np.nan], [1.0]]))
    with pytest.raises(ValueError, match="at least 3"):
        linearity.fit_lines([1.0, 2.0], np.zeros((2, 1)))


def test_interpolate_members():
    x = np.array([1.0, 2.0, 4.0])
    v = np.array([[0.0], [1.0], [5.0]])
    assert linearity.interpolate_members(x, v, 3.0)[0] == pytest.approx(3.0)
    assert linearity.interpolate_members(x, v, 1.0)[0] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="outside"):
        linearity.interpolate_members(x, v, 4.5)


def test_hlm_exists_for_a_linear_family():
    rng = np.random.default_rng(0)
    x = np.array([9.0, 10.0, 11.0, 12.0, 13.0, 14.0])
    a, b = rng.normal(size=(3, 20)), rng.normal(size=(3, 20))
    logits = a[None] + b[None] * x[:, None, None]
    out = linearity.hlm_prediction_check(x, logits, alm=0, elm=2, T=2.0)
    assert out["log_size"] == pytest.approx(13.0)
    np.testing.assert_allclose(out["pred_logits"], out["real_logits"], atol=1e-9)
    np.testing.assert_allclose(out["pred_probs"].sum(-1), 1.0)


def test_blindness_on_hand_made_case():
    # token 0 is gold; both models rank it first, but it barely grows with size,
    # while token 1 rises fast: CD (T=1) prefers token 1.
    elm = np.log(np.array([[0.50, 0.45, 0.05]]))
    alm = np.log(np.array([[0.60, 0.10, 0.30]]))
    out = find_obvious_blindness(elm, alm, gold=np.array([0]), T=1.0, top_k=None)
    assert out.both_right.tolist() == [True] and out.blind.tolist() == [True] and out.cd_top.tolist() == [1]
    assert out.rate == 1.0
    # a large T weakens the amateur term, and CD follows the expert again
    assert find_obvious_blindness(elm, alm, np.array([0]), T=100.0, top_k=None).blind.tolist() == [False]


def test_cd_scores_top_k_mask():
    elm = np.log(np.array([[0.5, 0.3, 0.2]]))
    alm = np.log(np.array([[0.2, 0.3, 0.5]]))
    s = cd_scores(elm, alm, 2.0, top_k=2)
    assert np.isneginf(s[0, 2]) and np.isfinite(s[0, :2]).all()
    np.testing.assert_allclose(s[0, :2], theory.cd_logits(elm, alm, 2.0)[0, :2])


def test_hlm_vs_real_table_prefers_cd_on_a_linear_family():
    rng = np.random.default_rng(1)
    x = np.array([9.0, 10.0, 11.0, 12.0, 13.0])
    a, b = rng.normal(size=(40, 30)), rng.normal(scale=0.5, size=(40, 30))
    logits = a[None] + b[None] * x[:, None, None]
    logprobs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    table = linearity.hlm_vs_real_table(x, logprobs, alm=0, elm=2, T_grid=[1.5, 2.0, 3.0, 5.0], k=10)
    # ln s_HLM = (T * 11 - 9) / (T - 1): 15 for T = 1.5 (beyond the family: skipped), 13, 12, 11.5
    assert list(table["T"]) == [2.0, 3.0, 5.0]
    np.testing.assert_allclose(table["ln s_HLM"], [13.0, 12.0, 11.5])
    # interpolating a linear family is exact at the members, so CD's HLM matches the real one
    row = table[table["T"] == 3.0].iloc[0]
    assert row["KL(real || CD-HLM), full vocab"] < 1e-9 < row["KL(real || ELM), full vocab"]
    assert row["top-1 agrees, CD-HLM"] == 1.0
    # an HLM beyond the largest member is skipped
    assert linearity.hlm_vs_real_table(x, logprobs, 0, 2, [1.1], k=10).empty


def test_blindness_table_counts_by_group_and_method():
    # context 0: both right, CD (T=1) blind, APD right; context 1: both right, CD right;
    # context 2: the amateur is wrong, so it is not counted.
    elm = np.log(np.array([[0.50, 0.45, 0.05], [0.8, 0.1, 0.1], [0.6, 0.3, 0.1]]))
    alm = np.log(np.array([[0.60, 0.10, 0.30], [0.4, 0.3, 0.3], [0.2, 0.7, 0.1]]))
    apd = np.log(np.array([[0.30, 0.30, 0.40], [0.4, 0.3, 0.3], [0.2, 0.7, 0.1]]))
    gold = np.array([0, 0, 0])
    groups = {"first two": np.array([True, True, False]), "last": np.array([False, False, True])}
    t = blindness_table(elm, alm, gold, [1.0, 100.0], groups=groups, apd_logprobs=apd, top_k=None)
    t = t.set_index(["group", "method", "T"])
    row = t.loc[("first two", "CD", 1.0)]
    assert (row["items"], row["ELM and ALM right"], row["wrong among those"]) == (2, 2, 1)
    assert row["blindness rate"] == 0.5
    assert t.loc[("first two", "CD", 100.0), "wrong among those"] == 0
    # APD: 0.5/0.3 > 0.45/0.3 for context 0, so APD keeps the gold token first
    assert t.loc[("first two", "APD", 1.0), "wrong among those"] == 0
    assert np.isnan(t.loc[("last", "CD", 1.0), "blindness rate"])
    with pytest.raises(ValueError, match="T_grid is empty"):
        blindness_table(elm, alm, gold, [])
    with pytest.raises(ValueError, match="group 'bad'"):
        blindness_table(elm, alm, gold, [1.0], groups={"bad": np.ones(2, bool)})


def test_clearest_example_is_the_most_confident_blind_context():
    elm = np.log(np.array([[0.50, 0.45, 0.05], [0.70, 0.25, 0.05], [0.9, 0.05, 0.05]]))
    alm = np.log(np.array([[0.60, 0.10, 0.30], [0.80, 0.05, 0.15], [0.4, 0.3, 0.3]]))
    gold = np.array([0, 0, 0])
    b = find_obvious_blindness(elm, alm, gold, 1.0, top_k=None)
    assert b.blind.tolist() == [True, True, False]
    assert clearest_example(b, elm, gold) == 1
    none = find_obvious_blindness(elm, alm, gold, 100.0, top_k=None)
    assert clearest_example(none, elm, gold) is None
