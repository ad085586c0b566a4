"""apd.core.stats against independent computations (scipy, simulation)."""

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from apd.core import stats


def test_paired_se_matches_scipy_paired_t():
    rng = np.random.default_rng(0)
    a = rng.normal(size=200)
    b = a + rng.normal(0.1, 0.5, size=200)
    r = stats.paired_difference(a, b)
    t = scipy.stats.ttest_rel(a, b)
    assert r.n == r.n_groups == 200
    assert r.mean / r.se == pytest.approx(t.statistic, rel=1e-10)


def test_nan_units_are_dropped_pairwise():
    r = stats.paired_difference([1.0, np.nan, 3.0, 5.0], [0.0, 1.0, np.nan, 4.0])
    assert r.n == 2 and r.mean == 1.0


def test_groups_average_within_then_take_se_over_groups():
    a = np.array([1.0, 3.0, 10.0, 10.0, 10.0, 4.0])
    b = np.zeros(6)
    g = np.array(["x", "x", "y", "y", "y", "z"])
    r = stats.paired_difference(a, b, groups=g)
    means = np.array([2.0, 10.0, 4.0])
    assert r.n == 6 and r.n_groups == 3
    assert r.mean == pytest.approx(means.mean())
    assert r.se == pytest.approx(means.std(ddof=1) / math.sqrt(3))


def test_mismatched_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="same units"):
        stats.paired_difference([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="one label per unit"):
        stats.paired_difference([1.0, 2.0], [1.0, 2.0], groups=[0])
    with pytest.raises(ValueError, match="two groups"):
        stats.variance_components([1.0, 2.0], [0.0, 0.0], [0, 0])


def test_min_detectable_effect_has_the_stated_power():
    # simulate: a true difference of exactly one MDE is detected (d > 1.96 se) about 80% of the time
    rng = np.random.default_rng(1)
    n, sd = 100, 1.0
    mde = stats.min_detectable_effect(sd / math.sqrt(n))
    hits = 0
    for _ in range(4000):
        d = rng.normal(mde, sd, size=n)
        m, se = stats.mean_se(d)
        hits += m > stats.Z_TEST * se
    assert hits / 4000 == pytest.approx(0.80, abs=0.03)


def test_variance_components_recover_simulated_ones_and_project_se():
    rng = np.random.default_rng(2)
    G, m, between, within = 400, 20, 0.04, 1.0
    effects = rng.normal(0, math.sqrt(between), size=G)
    d = (effects[:, None] + rng.normal(0, math.sqrt(within), size=(G, m))).ravel()
    groups = np.repeat(np.arange(G), m)
    vc = stats.variance_components(d, np.zeros_like(d), groups)
    assert vc.within == pytest.approx(within, rel=0.05)
    assert vc.between == pytest.approx(between, rel=0.35)
    # the projection at the measured design is the grouped se itself (up to the moment estimates)
    r = stats.paired_difference(d, np.zeros_like(d), groups)
    assert stats.projected_se(vc) == pytest.approx(r.se, rel=0.1)
    # more units per group cannot push the se below the between-group floor
    assert stats.projected_se(vc, per_group=1e9) == pytest.approx(math.sqrt(vc.between / G))


def test_groups_needed_inverts_the_projection():
    vc = stats.VarianceComponents(between=0.003, within=0.07, per_group=40.0, n_groups=51)
    G = stats.groups_needed(vc, effect=0.0108)
    assert stats.min_detectable_effect(stats.projected_se(vc, n_groups=G)) == pytest.approx(0.0108)
    assert stats.groups_needed(vc, effect=0.0) == math.inf


def test_paired_methods_pairs_rows_of_a_method_frame():
    import pandas as pd

    from apd.world.truth import paired_methods

    f = pd.DataFrame(
        {
            "method": ["ELM"] * 3 + ["CD"] * 6,
            "knob": [0.0] * 3 + [0.5] * 3 + [1.0] * 3,
            "item": [0, 1, 2] * 3,
            "kl": [1.0, 2.0, np.nan, 0.5, 1.0, 3.5, 0.0, 0.0, 0.0],
        }
    )
    r = paired_methods(f, ("ELM", 7.0), ("CD", 0.5))  # the ELM's knob is ignored; NaN drops item 2
    assert (r.mean, r.n) == (0.75, 2)
    with pytest.raises(ValueError, match="no rows for 'CD 1/T=2'"):
        paired_methods(f, ("ELM", 0.0), ("CD", 2.0))


def test_detected_decides_by_the_interval_not_by_power():
    from apd.core.stats import detected, interval

    assert detected(0.05, 0.01) is True  # CI [0.030, 0.070] above 0
    assert detected(-0.05, 0.01) is False  # significant the other way
    assert detected(0.001, 0.01, effect=0.1) is False  # CI [-0.019, 0.021] excludes 0.1
    assert detected(0.001, 0.1, effect=0.1) is None  # CI holds 0 and 0.1
    assert detected(0.001, 0.001) is None  # no effect to compare with
    assert detected(-0.0045, 0.0053, effect=0.0108) is False  # upper bound 0.0059 < 0.0108
    assert detected(0.0, 0.006, effect=0.0108) is None  # upper bound 0.0118: not excluded
    # the referee's case: small se, not significant, but the interval holds the effect -> inconclusive
    lo, hi = interval(0.011, 0.006)
    assert lo < 0 < 0.017 < hi and detected(0.011, 0.006, effect=0.017) is None
    # a non-positive effect (the testbed's own scale points the other way) leaves only the sign test
    assert detected(-0.001, 0.01, effect=-0.5) is None and detected(-0.05, 0.01, effect=0.0) is False


def test_holm_controls_the_family_of_bucket_tests():
    from apd.core.stats import holm, p_two_sided

    assert p_two_sided(1.96, 1.0) == pytest.approx(0.05, abs=1e-3)
    # three buckets: the smallest p must beat 0.05 / 3, the next 0.05 / 2, the last 0.05
    assert holm([0.02, 0.001, 0.04]) == [True, True, True]
    assert holm([0.02, 0.03, 0.04]) == [False, False, False]  # 0.02 > 0.0167 stops at once
    assert holm([0.01, float("nan"), 0.03]) == [True, False, True]  # NaN never counts, m = 2


def test_clustered_se_by_hand():
    """Six questions about three people: differences (1, 3), (2, 2, 8), (0): person means 2, 4, 0,
    their mean 2 and sample sd 2, so the clustered se is 2 / sqrt(3); unclustered it is the se of six."""
    from apd.core.stats import paired_difference
    from apd.world.truth import paired_methods

    d = np.array([1.0, 3.0, 2.0, 2.0, 8.0, 0.0])
    person = ["a", "a", "b", "b", "b", "c"]
    r = paired_difference(d, np.zeros(6), groups=person)
    assert r.mean == pytest.approx(2.0) and r.se == pytest.approx(2.0 / np.sqrt(3.0)) and r.n_groups == 3
    assert paired_difference(d, np.zeros(6)).se == pytest.approx(d.std(ddof=1) / np.sqrt(6))
    f = pd.DataFrame(
        {
            "method": ["CD"] * 6 + ["APD"] * 6,
            "knob": [1.0] * 12,
            "item": list(range(6)) * 2,
            "person": person * 2,
            "kl": list(d) + [0.0] * 6,
        }
    )
    rc = paired_methods(f, ("CD", 1.0), ("APD", 1.0), "kl", cluster="person")
    assert rc.se == pytest.approx(2.0 / np.sqrt(3.0)) and rc.n_groups == 3
    with pytest.raises(ValueError, match="no column 'people' to cluster by"):
        paired_methods(f, ("CD", 1.0), ("APD", 1.0), "kl", cluster="people")


def test_paired_table_gains_per_row_and_per_bucket_against_a_reference():
    import pandas as pd

    from apd.core.stats import min_detectable_effect
    from apd.world.truth import paired_table

    rng = np.random.default_rng(3)
    n = 40
    cd = rng.normal(2.0, 0.3, n)
    apd_kl = cd - 0.1 + rng.normal(0, 0.05, n)  # APD 0.1 nats closer to the truth
    bucket = np.array(["head", "tail"] * (n // 2))
    f = pd.DataFrame(
        {
            "method": ["CD"] * n + ["APD x"] * n,
            "knob": [0.25] * n + [0.5] * n,
            "item": list(range(n)) * 2,
            "bucket": list(bucket) * 2,
            "kl": np.r_[cd, apd_kl],
        }
    )
    t = paired_table(f, {"x": ("APD x", 0.5), "cd": ("CD", 0.25)}, ("CD", 0.25))
    d = cd - apd_kl
    assert t.loc["x", "gain"] == pytest.approx(d.mean()) and t.loc["x", "n"] == n
    assert t.loc["x", "gain_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(n))
    assert t.loc["x", "gain_mde"] == pytest.approx(min_detectable_effect(t.loc["x", "gain_se"]))
    assert t.loc["x", "mean"] == pytest.approx(apd_kl.mean())
    assert t.loc["x", "gain_tail"] == pytest.approx(d[bucket == "tail"].mean()) and t.loc["x", "n_head"] == n // 2
    assert t.loc["cd", "gain"] == 0.0


def test_best_knob_lowest_or_highest_first_of_ties_skipping_nan():
    grid = [0.25, 0.5, 1.0, 2.0]
    assert stats.best_knob(grid, [3.0, 1.0, 1.0, 2.0]) == 0.5  # tie: the first in the grid's order
    assert stats.best_knob(grid, [3.0, 1.0, 3.0, 2.0], lowest=False) == 0.25
    assert stats.best_knob(grid, [np.nan, 2.0, np.nan, 1.0]) == 2.0  # NaN: no candidate
    assert stats.best_knob(grid, [np.nan, 2.0, np.nan, 1.0], lowest=False) == 0.5
    assert stats.best_knob(grid, [np.nan, np.inf, np.inf, np.nan]) == 0.5  # not numpy's nanargmin (0.25)
    assert stats.best_knob(grid, [1.0 + 1e-9, 1.0, 2.0, 1.0], tie=1e-6) == 0.25  # within tie of the best
    assert stats.best_knob(["a", "b"], pd.Series([2.0, 1.0])) == "b"  # any values, any sequence of means
    with pytest.raises(ValueError, match="no defined mean"):
        stats.best_knob(grid, [np.nan] * 4)
    with pytest.raises(ValueError, match="no defined mean"):
        stats.best_knob([], [])
    with pytest.raises(ValueError, match="one mean per value"):
        stats.best_knob(grid, [1.0, 2.0])
