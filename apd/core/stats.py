"""Standard errors, paired differences and power: the one place the book's statistics live.

A verdict reads a difference ``d`` and its standard error ``se`` through the 95% confidence
interval (:func:`interval`, :func:`detected`): significant in the claimed direction, excluding the
claimed effect, or neither. The smallest effect a two-sided 5% test detects with 80% power,
``(Z_TEST + Z_POWER) * se`` (:func:`min_detectable_effect`), is context only. Several tests of one
statement (e.g. one per frequency bucket) are corrected with :func:`holm`.
When the units are grouped (continuations of prompts about one person), the paired differences are
averaged per group first and the standard error is taken over groups (:func:`paired_difference`
with ``groups``); :func:`variance_components` and :func:`projected_se` say how that standard
error would shrink with more units per group or more groups. A setting chosen on dev data (1/T,
a decay temperature, a variant) is the one with the best mean measure (:func:`best_knob`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: z of a two-sided 5% test and of 80% power: the smallest detectable effect is (1.96 + 0.84) se
Z_TEST, Z_POWER = 1.96, 0.84


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error (sample sd, ddof=1, over sqrt(n)) of the finite-or-not ``values``
    as given (NaN in, NaN out); ``(nan, nan)`` for no values, se NaN for one.

    Example:
        >>> mean_se([1.0, 2.0, 3.0])
        (2.0, 0.5773502691896258)
    """
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return float("nan"), float("nan")
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")
    return float(v.mean()), se


def cluster_mean(values, cluster) -> tuple[float, int]:
    """``(mean over clusters of each cluster's mean value, number of clusters)`` of the non-NaN
    ``values`` (one cluster label each): every person weighs the same, whatever their number of
    questions. ``(nan, 0)`` when no value is defined.

    Example:
        >>> cluster_mean([1.0, 1.0, 1.0, 4.0, float("nan")], ["a", "a", "a", "b", "b"])
        (2.5, 2)
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    g = np.asarray(cluster).ravel()
    if g.shape != v.shape:
        raise ValueError(f"{g.size} cluster labels for {v.size} values; give one label per value.")
    ok = ~np.isnan(v)
    if not ok.any():
        return math.nan, 0
    labels, inverse = np.unique(g[ok], return_inverse=True)
    means = np.bincount(inverse, weights=v[ok]) / np.bincount(inverse)
    return float(means.mean()), int(labels.size)


def best_knob(grid, means, lowest: bool = True, tie: float = 0.0):
    """The value of ``grid`` (a 1/T, a T_r, a variant...) whose mean measure on dev, ``means`` (one
    per value, in the grid's order), is the lowest (``lowest=False``: the highest): the one rule by
    which the book chooses a setting. A NaN mean is no candidate; ties (means equal to the best, or
    within ``tie`` of it) go to the first value in the grid's order.

    Example:
        >>> best_knob([0.25, 0.5, 1.0], [2.0, 1.0, 1.0]), best_knob("abc", [1.0, float("nan"), 3.0], lowest=False)
        (0.5, 'c')
    """
    grid = list(grid)
    m = np.asarray(means, dtype=np.float64).ravel()
    if m.shape != (len(grid),):
        raise ValueError(f"{m.size} means for {len(grid)} grid values; give one mean per value of the grid.")
    ok = ~np.isnan(m)
    if not ok.any():
        raise ValueError(
            f"no defined mean among the {len(grid)} grid values (all NaN, or no values): nothing to choose "
            "from; score the grid on dev items where the measure is defined."
        )
    best = m[ok].min() if lowest else m[ok].max()
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, no tie (equality decides those)
        tied = ok & ((m == best) | (np.abs(m - best) <= tie))
    return grid[int(np.argmax(tied))]


def min_detectable_effect(se: float, z: float = Z_TEST, power_z: float = Z_POWER) -> float:
    """The smallest true difference a two-sided test at ``z`` detects with the power of ``power_z``,
    in the units of ``se``: ``(z + power_z) * se``.

    Example:
        >>> round(min_detectable_effect(0.01), 3)
        0.028
    """
    return (z + power_z) * float(se)


def critical(n_groups: int | None = None, level: float = 0.95) -> float:
    """The two-sided critical value of a ``level`` interval: Student's t with ``n_groups - 1``
    degrees of freedom when the standard error was taken over ``n_groups`` clusters (people), the
    normal's :data:`Z_TEST` when ``n_groups`` is None. Few clusters widen the interval.

    Example:
        >>> round(critical(10), 3), round(critical(100), 3), critical()
        (2.262, 1.984, 1.96)
    """
    if n_groups is None:
        if level != 0.95:
            raise ValueError("critical() without n_groups gives Z_TEST, the 95% normal value; pass n_groups.")
        return Z_TEST
    if int(n_groups) < 2:
        raise ValueError(f"a t interval needs at least 2 clusters, got {n_groups}; measure more people.")
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2.0, int(n_groups) - 1))


def interval(d: float, se: float, z: float = Z_TEST) -> tuple[float, float]:
    """The two-sided confidence interval ``(d - z se, d + z se)`` (95% at the default ``z``; pass
    ``z=critical(n_groups)`` for a t interval over clusters).

    Example:
        >>> tuple(round(v, 3) for v in interval(0.011, 0.006))
        (-0.001, 0.023)
        >>> tuple(round(v, 3) for v in interval(0.011, 0.006, critical(10)))
        (-0.003, 0.025)
    """
    return float(d - z * se), float(d + z * se)


def scaled_effect(share: float, base: float, base_se: float, n_groups: int | None = None) -> float | None:
    """The paper's effect on this testbed's scale: ``share`` (the paper's gain as a share of its
    base gain, e.g. APD over CD as a share of CD over the expert) times the lower 95% bound of this
    build's base gain (``base`` ± ``base_se``, Student's t over ``n_groups`` clusters, the normal
    without them); None when that bound is at or below 0 (no effect on this scale).

    Example:
        >>> round(scaled_effect(1.0, 0.05, 0.01), 4), scaled_effect(1.0, 0.01, 0.01)
        (0.0304, None)
    """
    low = float(base) - critical(n_groups) * float(base_se)
    return float(share) * low if low > 0 else None


def side(d: float, se: float, n_groups: int | None = None) -> int:
    """Where the 95% interval of ``d`` ± ``se`` lies (:func:`interval`, Student's t over
    ``n_groups`` clusters, the normal without them): 1 above 0, -1 below 0, 0 holding 0.

    Example:
        >>> side(0.05, 0.01), side(-0.05, 0.01), side(0.0099, 0.005), side(0.0099, 0.005, 10)
        (1, -1, 1, 0)
    """
    lo, hi = interval(float(d), float(se), critical(n_groups))
    return 1 if lo > 0 else -1 if hi < 0 else 0


def detected(
    d: float, se: float, effect: float | None = None, z: float = Z_TEST, power_z: float = Z_POWER
) -> bool | None:
    """Does a difference ``d`` (positive: the claimed direction) with standard error ``se`` show the
    claim? Decided by its confidence interval (:func:`interval`) alone, never by post-hoc power:

    - True (reproduced) when the interval lies above 0 (``d > z se``);
    - False (not reproduced) when the interval excludes an effect of size ``effect`` (same units,
      positive: the paper's effect on this testbed's scale), i.e. ``d + z se < effect``; without an
      ``effect``, when the interval lies below 0 (significant the other way);
    - None (inconclusive) otherwise: the interval holds both 0 and the effect.

    ``power_z`` is accepted for compatibility and does not decide anything.

    Example:
        >>> detected(0.05, 0.01), detected(0.001, 0.01, effect=0.1), detected(0.001, 0.1, effect=0.1)
        (True, False, None)
        >>> detected(0.011, 0.006, effect=0.017)   # 95% CI [-0.001, 0.023] holds both 0 and 0.017
        >>> detected(-0.05, 0.01)                  # significant the other way
        False
    """
    lo, hi = interval(d, se, z)
    if lo > 0:
        return True
    if effect is not None and effect > 0:
        return False if hi < effect else None
    return False if hi < 0 else None


def p_two_sided(d: float, se: float) -> float:
    """Two-sided normal p-value of ``d / se`` (NaN when ``se`` is not positive and finite).

    Example:
        >>> round(p_two_sided(1.96, 1.0), 3)
        0.05
    """
    if not (math.isfinite(d) and math.isfinite(se) and se > 0):
        return float("nan")
    return float(math.erfc(abs(d / se) / math.sqrt(2.0)))


def holm(pvalues: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Holm's step-down correction: which of ``pvalues`` are significant at family-wise level
    ``alpha`` (NaN: never). Sorted ascending, the i-th smallest (0-based) must be at most
    ``alpha / (m - i)``; the first that is not stops the procedure.

    Example:
        >>> holm([0.01, 0.04, 0.03]), holm([0.02, 0.2, 0.5])
        ([True, False, False], [False, False, False])
        >>> holm([0.001, 0.02, 0.04])
        [True, True, True]
    """
    p = [float(v) for v in pvalues]
    m = sum(math.isfinite(v) for v in p)
    out = [False] * len(p)
    order = sorted((i for i in range(len(p)) if math.isfinite(p[i])), key=lambda i: p[i])
    for rank, i in enumerate(order):
        if p[i] > alpha / (m - rank):
            break
        out[i] = True
    return out


@dataclass(frozen=True)
class PairedDifference:
    """``mean`` of a - b over the pairs (or over the groups' means), its standard error ``se``,
    the number of pairs ``n`` and of groups ``n_groups`` (= n without groups)."""

    mean: float
    se: float
    n: int
    n_groups: int

    @property
    def mde(self) -> float:
        """:func:`min_detectable_effect` of ``se``."""
        return min_detectable_effect(self.se)


def _pairs(a, b, groups):
    x, y = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"paired values of {x.size} and {y.size} units: score both on the same units.")
    ok = ~(np.isnan(x) | np.isnan(y))
    g = None
    if groups is not None:
        g = np.asarray(groups).ravel()
        if g.shape != x.shape:
            raise ValueError(f"{g.size} group labels for {x.size} paired units; give one label per unit.")
        g = g[ok]
    return (x - y)[ok], g


def paired_difference(a, b, groups=None) -> PairedDifference:
    """Mean and standard error of ``a - b`` over the units where both are defined (NaN drops a
    unit). ``groups`` (one label per unit): average the differences within each group first and
    take the standard error over groups (units of one group are not independent).

    Example:
        >>> r = paired_difference([1.0, 2.0, 4.0, 5.0], [0.0, 1.0, 3.0, 3.0])
        >>> r.mean, round(r.se, 3), r.n
        (1.25, 0.25, 4)
        >>> paired_difference([1.0, 2.0, 4.0, 5.0], [0.0, 1.0, 3.0, 3.0], groups=[0, 0, 1, 1]).n_groups
        2
    """
    d, g = _pairs(a, b, groups)
    if g is None:
        mean, se = mean_se(d)
        return PairedDifference(mean, se, int(d.size), int(d.size))
    labels, inverse = np.unique(g, return_inverse=True)
    means = np.bincount(inverse, weights=d, minlength=labels.size) / np.bincount(inverse, minlength=labels.size)
    mean, se = mean_se(means)
    return PairedDifference(mean, se, int(d.size), int(labels.size))


@dataclass(frozen=True)
class VarianceComponents:
    """One-way split of grouped paired differences: ``between`` (variance of the groups' true
    means) and ``within`` (variance of one unit around its group's mean), with ``per_group``,
    the mean number of units per group, and ``n_groups``. ``between`` is clipped at 0."""

    between: float
    within: float
    per_group: float
    n_groups: int


def variance_components(a, b, groups) -> VarianceComponents:
    """Method-of-moments split of the paired differences ``a - b`` by ``groups`` (see
    :class:`VarianceComponents`): within = mean of the groups' sample variances, between =
    variance of the group means minus within / per_group.

    Example:
        >>> vc = variance_components([1., 3., 5., 7.], [0., 0., 0., 0.], [0, 0, 1, 1])
        >>> vc.within, vc.between, vc.per_group
        (2.0, 7.0, 2.0)
    """
    d, g = _pairs(a, b, groups)
    labels, inverse = np.unique(g, return_inverse=True)
    if labels.size < 2:
        raise ValueError("variance components need at least two groups with paired units.")
    counts = np.bincount(inverse, minlength=labels.size)
    means = np.bincount(inverse, weights=d, minlength=labels.size) / counts
    sq = np.bincount(inverse, weights=(d - means[inverse]) ** 2, minlength=labels.size)
    multi = counts > 1
    if not multi.any():
        raise ValueError("variance components need a group with at least two units.")
    within = float(np.mean(sq[multi] / (counts[multi] - 1)))
    per_group = float(counts.mean())
    between = max(float(means.var(ddof=1)) - within / per_group, 0.0)
    return VarianceComponents(between, within, per_group, int(labels.size))


def projected_se(vc: VarianceComponents, n_groups: float | None = None, per_group: float | None = None) -> float:
    """The standard error of the grouped mean difference with ``n_groups`` groups of ``per_group``
    units each (defaults: as measured): sqrt(between / G + within / (G m)).

    Example:
        >>> vc = VarianceComponents(between=0.0, within=1.0, per_group=4.0, n_groups=25)
        >>> projected_se(vc), projected_se(vc, per_group=16.0)
        (0.1, 0.05)
    """
    G = vc.n_groups if n_groups is None else float(n_groups)
    m = vc.per_group if per_group is None else float(per_group)
    if G <= 0 or m <= 0:
        raise ValueError(f"n_groups and per_group must be > 0, got {G} and {m}.")
    return math.sqrt(vc.between / G + vc.within / (G * m))


def groups_needed(
    vc: VarianceComponents, effect: float, per_group: float | None = None, z: float = Z_TEST, power_z: float = Z_POWER
) -> float:
    """How many groups (of ``per_group`` units; default as measured) make ``effect`` detectable:
    the G with ``min_detectable_effect(projected_se(vc, G, per_group)) == effect`` (a float; round
    up). Infinite for a non-positive ``effect``.

    Example:
        >>> vc = VarianceComponents(between=0.0, within=1.0, per_group=4.0, n_groups=25)
        >>> round(groups_needed(vc, effect=0.28))
        25
    """
    if not effect > 0:
        return math.inf
    m = vc.per_group if per_group is None else float(per_group)
    target_se = effect / (z + power_z)
    return (vc.between + vc.within / m) / target_se**2
