"""Judging a claim against the results the chapters wrote.

A :class:`PaperClaim` lists :class:`EvidenceSpec` s: values read from ``results/<profile>/<stem>.json``
(a key) or a table CSV (a :class:`Cell`) and an explicit comparison. A check is a ``test``, a
``precondition`` or ``context``. :func:`judge` gives one verdict per claim; a missing value never
counts for or against a claim. Only what a chapter's last run wrote counts.

A check reads to a reader as one pattern, ``tested: <what the check asks>; measured <the
numbers>: <verdict>`` (each key in words, its ``names``; numbers through
:func:`apd.report.numbers.format_number` and, with a standard error,
:func:`apd.report.numbers.format_pm`), so that what is tested and what was measured never read as
one statement; the keys as code and the files they come from are kept beside it (:func:`checks`'
``values`` and ``source``). A difference with a standard
error is read through its 95% interval: Student's t with n - 1 degrees of freedom where the
results record the n clusters the error was taken over (:class:`Clusters`), the normal 1.96
where they do not.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from apd.core.stats import Z_POWER, Z_TEST, critical, detected, interval, min_detectable_effect
from apd.report.numbers import format_count, format_number, format_pm, format_sig, pm_parts
from apd.report.results import last_run_outputs, read_results, results_dir
from apd.report.tables import listed

REPRODUCED = "reproduced"


NOT_REPRODUCED = "not reproduced"


NOT_TESTABLE = "not testable here"


INCONCLUSIVE = "inconclusive"


VERDICTS = (REPRODUCED, NOT_REPRODUCED, NOT_TESTABLE, INCONCLUSIVE)


#: profiles that run the embedded pico family (world QA with head/torso/tail buckets)
PICO_PROFILES = ("smoke", "default", "gpu", "default-200", "exact-truth")


#: profiles that run a real Hub family (the paper's datasets)
HUB_PROFILES = ("pythia",)


KINDS = ("test", "precondition", "context")


_AGGREGATES = ("one", "min", "max", "mean", "sum", "count")


@dataclass(frozen=True)
class Cell:
    """A number from ``tables/<table>.csv``: the rows where every ``where`` column equals its
    value, then column ``column`` of the single matching row (``agg='one'``) or an aggregate over
    the matching rows (``'min'``, ``'max'``, ``'mean'``, ``'sum'``; ``'count'`` counts rows).

    ``where`` is a tuple of (column, value) pairs, e.g. ``(("T", 1.0), ("bucket", "all"))``."""

    table: str
    column: str
    where: tuple[tuple[str, Any], ...] = ()
    agg: str = "one"

    def __post_init__(self):
        if self.agg not in _AGGREGATES:
            raise ValueError(f"Cell agg must be one of {', '.join(_AGGREGATES)}, got {self.agg!r}")
        if isinstance(self.where, dict):
            object.__setattr__(self, "where", tuple(self.where.items()))
        for pair in self.where:
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise TypeError(
                    f"Cell where must hold (column, value) pairs, got {pair!r}; "
                    "e.g. where=(('T', 1.0), ('bucket', 'all'))"
                )

    def what(self) -> str:
        """What it reads in its table, as code: ``'kl_diff' where name='logit'``, ``mean('value')``."""
        cond = ", ".join(f"{k}={v!r}" for k, v in self.where)
        inner = f"{self.column!r}" + (f" where {cond}" if cond else "")
        return f"{self.agg}({inner})" if self.agg != "one" else inner

    def label(self) -> str:
        """The cell as code: ``ablations.csv['kl_diff' where name='logit']``."""
        return f"{self.table}.csv[{self.what()}]"


def _key_label(stem: str, key: "str | Cell") -> str:
    """A JSON key or a :class:`Cell` as code: ``qa.world_ho_ppl_gain``, ``ablations.csv[...]``."""
    return f"{stem}.{key}" if isinstance(key, str) else key.label()


class Missing(Exception):
    """A value could not be read; the message says which chapter, key and profile."""


@dataclass(frozen=True)
class Clusters:
    """What a standard error was taken over: ``unit`` in words (``'people'``, ``'text windows'``)
    and ``key``, a JSON key or :class:`Cell` of the check's chapter holding how many there were.
    With a count the check's 95% interval is Student's t with count - 1 degrees of freedom
    (:func:`apd.core.stats.critical`); with ``key`` None (the chapter does not record it, or the
    error is not one over clusters, e.g. a bootstrap) or a count the results lack, the normal one,
    :data:`apd.core.stats.Z_TEST`."""

    unit: str
    key: str | Cell | None = None

    def __post_init__(self):
        if not (isinstance(self.key, (str, Cell)) or self.key is None):
            raise TypeError(f"Clusters key must be a JSON key (str), a Cell or None, got {self.key!r}")


@dataclass(frozen=True)
class Outcome:
    holds: bool
    text: str
    inconclusive: bool = False
    numbers: dict = field(default_factory=dict)  # estimate, se, ci_low, ci_high, effect, ... (interval tests only)


def _fmt(v: float) -> str:
    """A value as the ``values`` column records it (machine text: 4 significant figures, no
    thousands separators); readers' text goes through :func:`apd.report.numbers.format_number`."""
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return f"{int(v)}"
    return f"{v:.4g}"


def _verdict_text(holds: bool) -> str:
    return "holds" if holds else "does not hold"


#: the words that end a check's text, after ": " (and before the reason in parentheses, if any)
_VERDICT_WORDS = ("holds", "does not hold", "too little data to tell")


@dataclass(frozen=True)
class Comparison:
    """``test(values) -> bool`` on the looked-up numbers (in key order), ``show(names, values)`` the
    sentence that states them in words (``names``: what each key is, for a reader). ``arity`` is the
    number of keys it needs (None: two or more). An interval comparison also has ``se_at`` (the
    positions of its standard errors) and ``rebuild(clusters)``: the same comparison with the number
    and unit of the clusters behind each standard error (:meth:`with_clusters`). ``verdict`` False:
    a value shown beside a claim that nothing could contradict (:func:`shown`)."""

    name: str
    arity: int | None
    test: Callable[[Sequence[float]], bool]
    show: Callable[[Sequence[str], Sequence[float]], str]
    numbers: Callable[[Sequence[float]], dict] | None = None
    se_at: tuple[int, ...] = ()
    rebuild: Callable[[tuple], "Comparison"] | None = None
    verdict: bool = True  # False: the check shows its numbers and reads no verdict (:func:`shown`)

    def __call__(self, names: Sequence[str], values: Sequence[float]) -> Outcome:
        self.check_arity(len(values))
        if not self.verdict:
            return Outcome(True, self.show(names, values))
        result = self.test(values)
        nums = self.numbers(values) if self.numbers is not None else {}
        if result is None:  # the interval holds both no effect and the claimed one
            return Outcome(
                False, f"{self.show(names, values)}: too little data to tell", inconclusive=True, numbers=nums
            )
        holds = bool(result)
        return Outcome(holds, f"{self.show(names, values)}: {_verdict_text(holds)}", numbers=nums)

    def check_arity(self, n: int) -> None:
        if self.arity is not None and n != self.arity:
            raise ValueError(f"comparison {self.name} needs {self.arity} value(s), got {n}")
        if self.arity is None and n < 2:
            raise ValueError(f"comparison {self.name} needs at least two values, got {n}")

    @property
    def n_intervals(self) -> int:
        """How many standard errors it reads (each may come with its clusters)."""
        return len(self.se_at)

    def with_clusters(self, clusters: Sequence[tuple[int | None, str]]) -> "Comparison":
        """The same comparison with ``(number of clusters or None, unit)`` for each standard error."""
        if self.rebuild is None:
            raise ValueError(f"comparison {self.name} reads no standard error, so it takes no clusters")
        return self.rebuild(tuple(clusters))


def _distinct(*values: float, sig: int = 3) -> list[str]:
    """``values`` through :func:`apd.report.numbers.format_number` at ``sig`` significant figures;
    where two different values would print alike, with more figures, all shown
    (:func:`apd.report.numbers.format_sig`: 2.0203 and 2.0215 print '2.020' and '2.022').

    Example:
        >>> _distinct(1.2301, 1.2297), _distinct(2.0, 0.125), _distinct(2.0203, 2.0215)
        (['1.2301', '1.2297'], ['2', '0.125'], ['2.020', '2.022'])
    """
    texts = [format_number(v, sig) for v in values]
    more = sig
    while more < 10 and any(
        texts[i] == texts[j] and values[i] != values[j] for i in range(len(values)) for j in range(i)
    ):
        more += 1
        texts = [format_number(v) if float(v).is_integer() else format_sig(v, more) for v in values]
    return texts


def _tested(statement: str, measured: str | None = None) -> str:
    """A check's sentence before its verdict: ``tested: <statement>; measured <numbers>``.

    Example:
        >>> _tested("APD's ppl is below CD's", "2.13 against 2.24")
        "tested: APD's ppl is below CD's; measured 2.13 against 2.24"
    """
    return f"tested: {statement}" + (f"; measured {measured}" if measured else "")


def _pair(word: str, margin: float) -> Callable:
    def show(names, values):
        a, b = _distinct(values[0], values[1])
        by = f"more than {format_number(margin)} " if margin else ""
        return _tested(f"{names[0]} is {by}{word} {names[1]}", f"{a} against {b}")

    return show


def less_than(margin: float = 0.0) -> Comparison:
    """a < b - margin (two keys).

    Example:
        >>> less_than()(["APD's ppl", "CD's"], [2.132, 2.237]).text
        "tested: APD's ppl is below CD's; measured 2.13 against 2.24: holds"
    """
    return Comparison(f"less_than(margin={margin:g})", 2, lambda v: v[0] < v[1] - margin, _pair("below", margin))


def greater_than(margin: float = 0.0) -> Comparison:
    """a > b + margin (two keys)."""
    return Comparison(f"greater_than(margin={margin:g})", 2, lambda v: v[0] > v[1] + margin, _pair("above", margin))


def _bound(word: str, limit: float) -> Callable:
    def show(names, values):
        a, lim = _distinct(values[0], limit)
        return _tested(f"{names[0]} is {word} {lim}", a)

    return show


def at_most(limit: float) -> Comparison:
    """a <= limit (one key).

    Example:
        >>> at_most(1e-9)(["the largest error"], [1.4e-14]).text
        'tested: the largest error is at most 1 × 10⁻⁹; measured 1.4 × 10⁻¹⁴: holds'
    """
    return Comparison(f"at_most({limit:g})", 1, lambda v: v[0] <= limit, _bound("at most", limit))


def at_least(limit: float) -> Comparison:
    """a >= limit (one key)."""
    return Comparison(f"at_least({limit:g})", 1, lambda v: v[0] >= limit, _bound("at least", limit))


def flag() -> Comparison:
    """A yes/no result recorded as 1/0 is yes (one key; the test of ``at_least(1)``). Its name is the
    statement itself and the verdict says yes or no, so the sentence has no measured part.

    Example:
        >>> flag()(["the tested ALM' passes its mechanism gates"], [0]).text
        "tested: the tested ALM' passes its mechanism gates: does not hold"
    """
    return Comparison("flag", 1, lambda v: v[0] >= 1, lambda names, v: _tested(names[0]))


def shown() -> Comparison:
    """A value shown as context, with no verdict (one key): a count a reader needs beside a claim
    but that no result could contradict. Only a context check may use it (:class:`EvidenceSpec`).

    Example:
        >>> shown()(["the questions among those contexts"], [3]).text
        'measured: the questions among those contexts, 3'
    """
    return Comparison(
        "shown",
        1,
        lambda v: True,
        lambda names, v: f"measured: {names[0]}, {_distinct(v[0])[0]}",
        verdict=False,
    )


def within_relative(tol: float) -> Comparison:
    """|a - b| <= tol * max(|a|, |b|) (two keys; unit-free "similar").

    Example:
        >>> within_relative(0.1)(["APD's Dist-2", "CD's"], [47.44, 48.57]).text
        "tested: APD's Dist-2 is within 10% of CD's; measured 47.4 against 48.6, a gap of 1.13 or 2.3% of the larger: holds"
    """

    def show(names, v):
        a, b = _distinct(v[0], v[1])
        gap, top = abs(v[0] - v[1]), max(abs(v[0]), abs(v[1]))
        share = format_number(100 * gap / top, sig=2) if top else "0"
        return _tested(
            f"{names[0]} is within {format_number(100 * tol)}% of {names[1]}",
            f"{a} against {b}, a gap of {format_number(gap)} or {share}% of the larger",
        )

    return Comparison(
        f"within_relative({tol:g})", 2, lambda v: abs(v[0] - v[1]) <= tol * max(abs(v[0]), abs(v[1])), show
    )


@dataclass(frozen=True)
class _Spread:
    """The clusters behind one standard error and the critical value they give."""

    n: int | None = None
    unit: str = ""
    z: float = Z_TEST  # without a count

    @property
    def crit(self) -> float:
        return critical(self.n) if self.n is not None else self.z

    def over(self) -> str:
        if self.n is not None:
            return f"standard error over {format_count(self.n)} {self.unit}".rstrip()
        return f"standard error over {self.unit}" if self.unit else "standard error"

    def kind(self) -> str:
        if self.n is not None:
            return f"95% t interval ({format_count(self.n - 1)} df)"
        return "95% normal interval" if self.z == Z_TEST else f"interval of ± {format_number(self.z)} standard errors"


def _spread(clusters: Sequence, i: int, z: float) -> _Spread:
    if i >= len(clusters) or clusters[i] is None:
        return _Spread(z=z)
    n, unit = clusters[i]
    if n is not None and (int(n) != n or n < 2):
        raise ValueError(f"a t interval needs a whole number of at least 2 clusters, got {n} {unit}")
    return _Spread(None if n is None else int(n), unit, z)


def interval_text(d: float, se: float, n: int | None = None) -> str:
    """The 95% interval of a difference ``d`` with standard error ``se`` as ``[low, high]``, the
    bounds to the decimal place ``se`` supports (:func:`apd.report.numbers.pm_parts`): Student's t
    with ``n`` - 1 degrees of freedom over ``n`` clusters (:func:`apd.core.stats.critical`), the
    normal 1.96 without ``n``.

    Example:
        >>> interval_text(0.0059, 0.0058, 100), interval_text(0.0059, 0.0058)
        ('[-0.0056, 0.0174]', '[-0.0055, 0.0173]')
    """
    return _bounds(d, se, Z_TEST if n is None else critical(n))


def _bounds(d: float, se: float, crit: float) -> str:
    """``[low, high]`` of ``d`` ± ``crit`` standard errors, to the decimal place ``se`` supports."""
    lo, hi = interval(d, se, crit)
    return "[{}, {}]".format(*(pm_parts(x, se, signed=False)[0] for x in (lo, hi)))


def _interval_words(d: float, se: float, sp: _Spread, aside: str = "") -> str:
    """What was measured: '+0.0059 ± 0.0058 (standard error over 100 people<aside>), interval
    [-0.0057, 0.0175]', the bounds to the decimal place the standard error supports."""
    return f"{format_pm(d, se)} ({sp.over()}{aside}), interval {_bounds(d, se, sp.crit)}"


def _interval_numbers(d: float, se: float, sp: _Spread) -> dict:
    lo, hi = interval(d, se, sp.crit)
    n = float("nan") if sp.n is None else float(sp.n)
    return {"estimate": float(d), "se": float(se), "ci_low": lo, "ci_high": hi, "critical": sp.crit, "n_groups": n}


def detects(
    paper_effect: float | None = None,
    z: float = Z_TEST,
    power_z: float = Z_POWER,
    share: float | None = None,
    base_se: bool = False,
    clusters: Sequence[tuple[int | None, str] | None] = (),
) -> Comparison:
    """A difference d (first key; positive = the claimed direction) with its standard error se
    (second key), decided by its 95% confidence interval d +- c se (:func:`apd.core.stats.detected`):
    holds when the interval lies above 0; fails when it excludes the paper's effect (its upper
    bound is below the effect; without an effect, when it lies below 0); otherwise inconclusive.
    ``clusters``: ``(number, unit)`` of the clusters behind se, then behind the base's se; with a
    number, c is Student's t with number - 1 degrees of freedom (:func:`apd.core.stats.critical`),
    else ``z`` (the normal 1.96).

    The effect is the paper's on this testbed's scale: with ``share`` a third key, ``base``, is read
    and the effect is ``share x base`` (the paper's gain as a share of its gain on the base contrast,
    in the same measure, times this build's base gain; no effect when ``base`` <= 0). With
    ``base_se`` a fourth key, the base's standard error, is read and the base's lower 95% bound
    replaces it (the smallest base the data allow; no effect when that bound is <= 0), so the
    base's own uncertainty can only make the verdict less decided. Else ``paper_effect`` in the
    units of d (None: the paper has none). The smallest detectable effect ((c + power_z) se) is
    shown, never decides.

    Example:
        >>> detects(0.05)(["d", "se"], [0.01, 0.005]).holds
        True
        >>> detects(0.05)(["d", "se"], [0.001, 0.05]).inconclusive
        True
        >>> out = detects(share=0.5)(["d", "se", "cd_gain"], [0.0, 0.001, 0.02])   # effect 0.01 > bound 0.00196
        >>> out.holds, out.inconclusive, out.numbers["effect"]
        (False, False, 0.01)
        >>> out = detects(share=0.5, base_se=True)(["d", "se", "cd_gain", "cd_se"], [0.0, 0.001, 0.02, 0.005])
        >>> round(out.numbers["effect"], 4)   # 0.5 x (0.02 - 1.96 x 0.005)
        0.0051
        >>> detects(share=0.5, base_se=True)(["d", "se", "b", "b_se"], [0.0, 0.001, 0.02, 0.02]).inconclusive
        True
        >>> out = detects(clusters=[(10, "people")])(["the gain", "se"], [0.011, 0.005])   # t, 9 df: 2.262
        >>> out.inconclusive
        True
        >>> print(out.text)
        tested: the gain is above 0 (reproduced) or below 0 (not reproduced), by its 95% t interval (9 df); the paper gives no effect in these units; measured +0.0110 ± 0.0050 (standard error over 10 people; smallest detectable effect 0.016), interval [-0.0003, 0.0223]: too little data to tell
    """
    sd, sb = _spread(clusters, 0, z), _spread(clusters, 1, z)
    zd, zb = sd.crit, sb.crit

    def base_of(v):
        return v[2] - zb * v[3] if base_se else v[2]

    def effect_of(v):
        if share is None:
            return paper_effect
        return share * base_of(v) if base_of(v) > 0 else None

    def test(v):
        return detected(v[0], v[1], effect_of(v), zd, power_z)

    def show(names, v):
        mde = min_detectable_effect(v[1], zd, power_z)
        eff = effect_of(v)
        bar = "0" if eff is None else "the paper's effect" + ("" if share is None else " on this scale")
        if share is None:
            effect = (
                "the paper gives no effect in these units" if eff is None else f"the effect is {format_number(eff)}"
            )
        else:
            if base_se:
                low = pm_parts(base_of(v), v[3], signed=False)[0]
                base = (
                    f"{low}, the lower bound of the {sb.kind()} of {names[2]}, {format_pm(v[2], v[3])} ({sb.over()})"
                )
            else:
                base = f"{names[2]}, {format_number(v[2])}"
            effect = (
                f"the effect is {format_number(eff)} = {format_number(share)} × {base}"
                if eff is not None
                else f"there is no effect on this scale, since {base}, is at or below 0"
            )
        tested = f"{names[0]} is above 0 (reproduced) or below {bar} (not reproduced), by its {sd.kind()}; {effect}"
        mde_text = f"; smallest detectable effect {format_number(mde, sig=2)}"
        return _tested(tested, _interval_words(v[0], v[1], sd, mde_text))

    def numbers(v):
        eff = effect_of(v)
        return {**_interval_numbers(v[0], v[1], sd), "effect": float("nan") if eff is None else float(eff)}

    name = f"detects(share={share:g})" if share is not None else f"detects({paper_effect})"
    n_keys = 2 if share is None else (4 if base_se else 3)

    def rebuild(cl):
        return detects(paper_effect, z, power_z, share, base_se, cl)

    return Comparison(name, n_keys, test, show, numbers, se_at=(1, 3) if base_se else (1,), rebuild=rebuild)


def significant(z: float = Z_TEST, clusters: Sequence[tuple[int | None, str] | None] = ()) -> Comparison:
    """A positive control: a difference d (first key; positive = the expected direction) exceeds c
    of its standard errors se (second key), i.e. its 95% confidence interval lies above 0; c is
    Student's t over the ``clusters`` ``[(number, unit)]`` behind se, else ``z``. Anything else
    does not hold (a control that does not clearly work leaves nothing to test against).

    Example:
        >>> significant()(["d", "se"], [0.009, 0.014]).holds
        False
        >>> print(significant(clusters=[(100, "people")])(["the expert's KL minus CD's", "se"], [0.009, 0.014]).text)
        tested: the expert's KL minus CD's is above 0, by its 95% t interval (99 df); measured +0.009 ± 0.014 (standard error over 100 people), interval [-0.019, 0.037]: does not hold
    """
    sp = _spread(clusters, 0, z)

    def show(names, v):
        return _tested(f"{names[0]} is above 0, by its {sp.kind()}", _interval_words(v[0], v[1], sp))

    def rebuild(cl):
        return significant(z, cl)

    return Comparison(
        f"significant(z={z:g})",
        2,
        lambda v: v[0] > sp.crit * v[1],
        show,
        lambda v: _interval_numbers(v[0], v[1], sp),
        se_at=(1,),
        rebuild=rebuild,
    )


def is_largest() -> Comparison:
    """The first value is strictly larger than every other value (two or more keys; a tie does
    not hold: "largest on X" needs X to stand out).

    Example:
        >>> is_largest()(["the gain on head questions", "on torso", "on tail"], [0.0086, 0.0042, -0.001]).text
        'tested: the gain on head questions is larger than on torso and on tail; measured 0.0086; on torso 0.0042 and on tail -0.001: holds'
    """

    def show(names, v):
        texts = _distinct(*v)
        others = [f"{n} {t}" for n, t in zip(names[1:], texts[1:])]
        return _tested(f"{names[0]} is larger than {listed(list(names[1:]))}", f"{texts[0]}; {listed(others)}")

    return Comparison("is_largest", None, lambda v: all(v[0] > x for x in v[1:]), show)


def difference_larger() -> Comparison:
    """(a - b) > (c - d) (four keys), e.g. CD's ppl minus APD's on one dataset against another.

    Example:
        >>> print(difference_larger()(["CD's ppl on A", "APD's", "CD's ppl on B", "APD's"], [2.4, 2.1, 7.7, 7.75]).text)
        tested: CD's ppl on A minus APD's is larger than CD's ppl on B minus APD's; measured 0.3 (2.4 - 2.1) against -0.05 (7.7 - 7.75): holds
    """

    def show(names, v):
        d1, d2 = _distinct(v[0] - v[1], v[2] - v[3])
        a, b, c, d = _distinct(*v)
        return _tested(
            f"{names[0]} minus {names[1]} is larger than {names[2]} minus {names[3]}",
            f"{d1} ({a} - {b}) against {d2} ({c} - {d})",
        )

    return Comparison("difference_larger", 4, lambda v: v[0] - v[1] > v[2] - v[3], show)


@dataclass(frozen=True)
class Gate:
    """A run that a context check compares, whose mechanism gates must pass for the comparison to
    mean anything: ``key``, a flag of the check's chapter (1: its gates pass), ``who``, the run in
    a reader's words, and ``reason_key``, the key of the same chapter saying which gate failed."""

    key: str
    who: str
    reason_key: str | None = None


@dataclass(frozen=True)
class EvidenceSpec:
    """One check: read ``keys`` from chapter ``stem`` and apply ``comparison``.

    ``kind``: ``'test'`` (decides the verdict), ``'precondition'`` (whether the claim *can* be
    tested here, e.g. there are questions on which obvious blindness could show; when it does not
    hold the claim is not testable rather than not reproduced) or ``'context'`` (shown, never
    decides). ``profiles``: the profiles this check applies to (None: all). ``reason_key``: a JSON
    key of the same chapter whose text says why the check does not hold (e.g. which mechanism gate
    failed); it is appended to the evidence when the check fails. ``names``: what each key is, in a
    reader's words (the sentence the page shows; None: the keys themselves). ``clusters``: for an
    interval comparison, a :class:`Clusters` per standard error it reads (the difference's, then
    the base's): with their number the interval is a t interval. ``gated_by``: for a context check,
    the runs (:class:`Gate`) whose gates must pass for its comparison to be read; when one fails
    the check reads "not comparable", naming it and why."""

    stem: str
    keys: tuple
    comparison: Comparison
    description: str
    kind: str = "test"
    profiles: tuple[str, ...] | None = None
    reason_key: str | None = None
    names: tuple[str, ...] | None = None
    clusters: tuple[Clusters, ...] = ()
    gated_by: tuple[Gate, ...] = ()

    def __post_init__(self):
        keys = (self.keys,) if isinstance(self.keys, (str, Cell)) else tuple(self.keys)
        for k in keys:
            if not isinstance(k, (str, Cell)):
                raise TypeError(f"EvidenceSpec keys must be JSON key names (str) or Cell, got {k!r}")
        object.__setattr__(self, "keys", keys)
        if self.kind not in KINDS:
            raise ValueError(f"EvidenceSpec kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        self.comparison.check_arity(len(keys))
        if self.profiles is not None:
            object.__setattr__(self, "profiles", tuple(self.profiles))
        if self.names is not None:
            names = (self.names,) if isinstance(self.names, str) else tuple(self.names)
            if len(names) != len(keys) or not all(isinstance(n, str) and n for n in names):
                raise ValueError(
                    f"EvidenceSpec names must give one non-empty text per key ({len(keys)}), got {names!r}"
                )
            object.__setattr__(self, "names", names)
        clusters = (self.clusters,) if isinstance(self.clusters, Clusters) else tuple(self.clusters)
        if not all(isinstance(c, Clusters) for c in clusters):
            raise TypeError(f"EvidenceSpec clusters must be Clusters, got {clusters!r}")
        if len(clusters) > self.comparison.n_intervals:
            raise ValueError(
                f"comparison {self.comparison.name} reads {self.comparison.n_intervals} standard error(s), "
                f"got {len(clusters)} Clusters"
            )
        object.__setattr__(self, "clusters", clusters)
        gated = (self.gated_by,) if isinstance(self.gated_by, Gate) else tuple(self.gated_by)
        if not all(isinstance(g, Gate) for g in gated):
            raise TypeError(f"EvidenceSpec gated_by must be Gates, got {gated!r}")
        object.__setattr__(self, "gated_by", gated)
        if self.kind != "context" and (gated or not self.comparison.verdict):
            raise ValueError(
                f"{'gated_by' if gated else f'comparison {self.comparison.name}'} is for context checks only; "
                "a test or precondition reads gates as a precondition and always has a verdict"
            )

    def applies_to(self, profile: str) -> bool:
        return self.profiles is None or profile in self.profiles

    def labels(self) -> list[str]:
        """Each key as code: ``qa.world_ho_ppl_gain``, ``ablations.csv['kl_diff' where name='logit']``."""
        return [_key_label(self.stem, k) for k in self.keys]

    def words(self) -> list[str]:
        """What each key is, for a reader (:attr:`names`, else the keys as code)."""
        return list(self.names) if self.names is not None else self.labels()

    def sources(self) -> list[tuple[str, list[str]]]:
        """The results files the check reads, relative to ``results/<profile>/``, each with what it
        reads there: ``[("qa.json", ["world_ho_ppl_gain", ...]), ("tables/ablations.csv", [...])]``."""
        out: dict[str, list[str]] = {}
        keys = [*self.keys, *(c.key for c in self.clusters if c.key is not None), *(g.key for g in self.gated_by)]
        for k in keys:
            path, what = (f"{self.stem}.json", k) if isinstance(k, str) else (f"tables/{k.table}.csv", k.what())
            out.setdefault(path, [])
            if what not in out[path]:
                out[path].append(what)
        return list(out.items())


@dataclass(frozen=True)
class PaperClaim:
    """One of the paper's claims (``text``) and the checks that test it here."""

    id: str
    text: str
    evidence: tuple = ()
    paper_evidence: str = ""

    def __post_init__(self):
        object.__setattr__(self, "evidence", tuple(self.evidence))


@dataclass
class Results:
    """Reads (and caches) one profile's results JSON files and tables."""

    profile: str
    _json: dict = field(default_factory=dict)
    _tables: dict = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        return results_dir(self.profile)

    def chapter(self, stem: str) -> dict:
        if stem not in self._json:
            path = self.dir / f"{stem}.json"  # a damaged file stops the chapter (DamagedResultsError)
            self._json[stem] = read_results(self.dir, stem) if path.is_file() else None
        got = self._json[stem]
        if got is None:
            raise Missing(
                f"chapter {stem} has not run under profile {self.profile} (no results/{self.profile}/{stem}.json)"
            )
        return got

    def table(self, stem: str, name: str) -> pd.DataFrame:
        """``tables/<name>.csv``, only if the chapter's last run wrote it (its run record lists
        it): a CSV left over from an earlier run is never read."""
        self.chapter(stem)  # a chapter that never ran says so
        if (stem, name) not in self._tables:
            path = self.dir / "tables" / f"{name}.csv"
            written = name in last_run_outputs(self.profile, stem)["tables"]
            try:
                self._tables[stem, name] = pd.read_csv(path) if written and path.is_file() else None
            except (OSError, ValueError) as err:  # pandas' parser errors are ValueErrors
                raise Missing(
                    f"table {name}.csv of chapter {stem} cannot be read under profile {self.profile}: {err}"
                ) from None
        if self._tables[stem, name] is None:
            raise Missing(f"chapter {stem} did not produce table {name}.csv under profile {self.profile}")
        return self._tables[stem, name]

    def text(self, stem: str, key: str) -> str:
        """The value of JSON key ``key`` as text, or Missing."""
        values = self.chapter(stem)
        if key not in values:
            raise Missing(f"chapter {stem} wrote no {key!r} under profile {self.profile}")
        return str(values[key])

    def number(self, stem: str, key) -> float:
        """The value of ``key`` (a JSON key or a :class:`Cell`) as a finite float, or Missing."""
        if isinstance(key, Cell):
            return self._cell(stem, key)
        values = self.chapter(stem)
        if key not in values:
            raise Missing(f"chapter {stem} did not produce key {key} under profile {self.profile}")
        return _as_number(values[key], f"chapter {stem} reported {key} = {values[key]!r} under profile {self.profile}")

    def _cell(self, stem: str, cell: Cell) -> float:
        df = self.table(stem, cell.table)
        where = f"under profile {self.profile}"
        for col in [cell.column, *(k for k, _ in cell.where)]:
            if col not in df.columns:
                raise Missing(
                    f"table {cell.table}.csv of chapter {stem} has no column {col!r} {where} "
                    f"(its columns: {', '.join(map(str, df.columns))})"
                )
        sel = df
        for col, value in cell.where:
            sel = sel[sel[col] == value]
        if cell.agg == "count":
            return float(len(sel))
        rows = "rows where " + ", ".join(f"{k}={v!r}" for k, v in cell.where) if cell.where else "rows"
        if sel.empty:
            raise Missing(f"table {cell.table}.csv of chapter {stem} has no {rows} {where}")
        if cell.agg == "one" and len(sel) != 1:
            raise Missing(
                f"table {cell.table}.csv of chapter {stem} has {len(sel)} {rows} {where}, expected exactly one"
            )
        col = pd.to_numeric(sel[cell.column], errors="coerce")
        if col.isna().any():
            raise Missing(
                f"table {cell.table}.csv of chapter {stem} has empty or non-numeric "
                f"{cell.column!r} cells in its {rows} {where}"
            )
        value = float(col.iloc[0]) if cell.agg == "one" else float(getattr(col, cell.agg)())
        return _as_number(value, f"{cell.label()} = {value!r} {where}")


def _as_number(value: Any, context: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Missing(f"{context}, not a number")
    if not math.isfinite(value):
        raise Missing(f"{context}, not a finite number")
    return float(value)


HOLDS, FAILS, MISSING, UNDECIDED = "holds", "does not hold", "missing", "too little data"


#: the statuses of context checks only: a value shown with no verdict (:func:`shown`), and a
#: comparison of runs whose gates fail (:attr:`EvidenceSpec.gated_by`)
SHOWN, NOT_COMPARABLE = "shown", "not comparable"


def _gates_failing(spec: EvidenceSpec, results: Results) -> str | None:
    """Why ``spec``'s comparison is not comparable (its :attr:`~EvidenceSpec.gated_by` runs whose
    gates fail, each with the gate that failed), or None when every gate passes; Missing when a
    gate was not measured."""
    failing = [g for g in spec.gated_by if results.number(spec.stem, g.key) < 1]
    if not failing:
        return None
    parts = []
    for g in failing:
        try:
            parts.append(f"{g.who} ({results.text(spec.stem, g.reason_key)})" if g.reason_key else g.who)
        except Missing:
            parts.append(g.who)
    verb = "does not pass its" if len(parts) == 1 else "do not pass their"
    return f"not comparable: {listed(parts)} {verb} mechanism gates"


def _cluster_counts(spec: EvidenceSpec, results: Results) -> list[tuple[int | None, str]]:
    """``(number, unit)`` per :class:`Clusters` of ``spec``; the number None where it has no key or
    the results lack it (a normal interval then). A count that is not a whole number >= 2 is Missing."""
    out = []
    for c in spec.clusters:
        n = None
        if c.key is not None:
            try:
                n = results.number(spec.stem, c.key)
            except Missing:
                n = None
            else:
                if n != int(n) or n < 2:
                    raise Missing(
                        f"{_key_label(spec.stem, c.key)} = {_fmt(n)} under profile {results.profile}: "
                        f"a t interval needs a whole number of at least 2 {c.unit}"
                    )
                n = int(n)
        out.append((n, c.unit))
    return out


def check(spec: EvidenceSpec, results: Results) -> dict:
    """Run one check: ``{'status': holds | does not hold | too little data | missing (and, for
    context, shown | not comparable), 'text': the sentence in words and the verdict, 'values': each key as code = its value, 'source': the files
    and keys read, ...}`` and, for an interval, its numbers."""
    source = "; ".join(f"{path}: {', '.join(what)}" for path, what in spec.sources())
    try:
        why_not = _gates_failing(spec, results)
        if why_not is not None:
            return {"status": NOT_COMPARABLE, "text": why_not, "source": source}
        values = [results.number(spec.stem, k) for k in spec.keys]
        for i in spec.comparison.se_at:
            if values[i] < 0:
                raise Missing(
                    f"{spec.labels()[i]} = {_fmt(values[i])} under profile {results.profile}: a negative standard error"
                )
        counts = _cluster_counts(spec, results)
    except Missing as err:
        return {"status": MISSING, "text": str(err), "source": source}
    comparison = spec.comparison.with_clusters(counts) if counts else spec.comparison
    out = comparison(spec.words(), values)
    read = [f"{label} = {_fmt(v)}" for label, v in zip(spec.labels(), values)]
    read += [f"{_key_label(spec.stem, c.key)} = {n}" for c, (n, _) in zip(spec.clusters, counts) if n is not None]
    extra = {"values": ", ".join(read), "source": source, **out.numbers}
    if not comparison.verdict:
        return {"status": SHOWN, "text": out.text, **extra}
    if out.inconclusive:
        return {"status": UNDECIDED, "text": out.text, **extra}
    text = out.text
    if not out.holds and spec.reason_key:
        try:
            text += f" ({results.text(spec.stem, spec.reason_key)})"
        except Missing:
            pass
    return {"status": HOLDS if out.holds else FAILS, "text": text, **extra}


def checks(claims: Sequence[PaperClaim], profile: str) -> pd.DataFrame:
    """One row per (claim, applicable check): claim_id, kind (test/precondition/context), description,
    chapter, status (holds / does not hold / too little data / missing), ``evidence`` (the check in
    words with its numbers, and its verdict; for a missing value, what is missing), ``values`` (each
    key read, as code, = its value), ``source`` (the results files read, relative to
    ``results/<profile>/``, each with its keys) and, for interval checks, ``estimate``, ``se``,
    ``ci_low``, ``ci_high`` (95%), ``effect`` (the paper's effect on this scale; NaN if none),
    ``critical`` (the t or z value of the interval) and ``n_groups`` (the clusters behind se; NaN
    for a normal interval)."""
    results = Results(profile)
    rows = []
    for claim in claims:
        for spec in claim.evidence:
            if not spec.applies_to(profile):
                continue
            c = check(spec, results)
            rows.append(
                {
                    "claim_id": claim.id,
                    "kind": spec.kind,
                    "description": spec.description,
                    "chapter": spec.stem,
                    "status": c["status"],
                    "evidence": c["text"],
                    "values": c.get("values", ""),
                    "source": c.get("source", ""),
                    **{k: c.get(k, math.nan) for k in _NUMBERS},
                }
            )
    return pd.DataFrame(
        rows,
        columns=["claim_id", "kind", "description", "chapter", "status", "evidence", "values", "source", *_NUMBERS],
    )


#: the interval columns of :func:`checks` (NaN for checks without an interval)
_NUMBERS = ("estimate", "se", "ci_low", "ci_high", "effect", "critical", "n_groups")


def _unique(texts) -> list[str]:
    return list(dict.fromkeys(texts))


def verdict_of(rows: pd.DataFrame, profile: str) -> tuple[str, str]:
    """(verdict, reason) from one claim's rows of :func:`checks` (see the module docstring).
    Context rows never change the verdict."""
    pre, tests = rows[rows["kind"] == "precondition"], rows[rows["kind"] == "test"]
    if tests.empty:
        return NOT_TESTABLE, f"no test is defined for profile {profile}"
    if (pre["status"] != HOLDS).any():
        reasons = [f"precondition not met: {t}" for t in pre.loc[pre["status"].isin([FAILS, UNDECIDED]), "evidence"]]
        reasons += list(pre.loc[pre["status"] == MISSING, "evidence"])
        return NOT_TESTABLE, "; ".join(_unique(reasons))
    fails = tests[tests["status"] == FAILS]
    missing = _unique(tests.loc[tests["status"] == MISSING, "evidence"])
    undecided = tests[tests["status"] == UNDECIDED]
    if len(fails):
        reason = "; ".join(fails["evidence"])
        if missing:
            reason += " (not testable here: " + "; ".join(missing) + ")"
        return NOT_REPRODUCED, reason
    if len(undecided):
        return INCONCLUSIVE, "; ".join(undecided["evidence"])
    if missing:
        return NOT_TESTABLE, "; ".join(missing)
    return REPRODUCED, f"all {len(tests)} tests hold" + (f" (and {len(pre)} precondition(s))" if len(pre) else "")


_VERDICT_END = re.compile(r": (?:" + "|".join(map(re.escape, _VERDICT_WORDS)) + r")(?= \(|$)")


def _numbers(text: str) -> str:
    """A check's sentence without its verdict words: "a is 1, below b (2)" from "a is 1, below b (2):
    does not hold (why)"; the reason in parentheses is kept.

    Example:
        >>> _numbers("the gates pass: does not hold (curve model inert)")
        'the gates pass (curve model inert)'
    """
    text = str(text)
    ends = list(_VERDICT_END.finditer(text))
    if not ends:
        return text.strip()
    last = ends[-1]
    return f"{text[: last.start()]}{text[last.end() :]}".strip()


def _without_asides(text: str) -> str:
    """``text`` without its asides: each outermost parenthesised span that follows a space (or opens
    the text) and holds a word of two or more letters, with the space before it. A formula's
    brackets stay, so the words of a check keep their maths: ``(1 - 1/T) L_HLM``, ``KL(real || expert)``.

    Example:
        >>> _without_asides("L_CD = (1 - 1/T) L_HLM holds (to round-off, see (2)) on KL(p || q) (context)")
        'L_CD = (1 - 1/T) L_HLM holds on KL(p || q)'
    """
    text, out, last, depth, start = str(text), [], 0, 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            start = i if depth == 0 else start
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            after_space = start == 0 or text[start - 1].isspace()
            if depth == 0 and after_space and re.search(r"[A-Za-z]{2,}", text[start + 1 : i]):
                out.append(text[last:start].rstrip())
                last = i + 1
    return ("".join(out) + text[last:]).strip()


def _what(description) -> str:
    """A check's description in a few words: its first clause, without asides (:func:`_without_asides`)."""
    return _without_asides(str(description or "")).split(": ")[0].strip()


def in_words(rows: pd.DataFrame, verdict: str) -> str:
    """A reader's summary of a claim's verdict from its rows of :func:`checks`: the description of
    each check that decided it (the failed preconditions, the failed or undecided tests, else every
    test), then its sentence with the numbers in brackets. The findings table shows this; the
    chapter shows every check.

    Example:
        >>> rows = pd.DataFrame({"kind": ["test"], "status": [FAILS], "description": ["APD is better than CD"],
        ...                      "evidence": ["tested: APD's KL is below CD's; measured 2.2 against 2.1: does not hold"]})
        >>> in_words(rows, NOT_REPRODUCED)
        "fails: APD is better than CD [tested: APD's KL is below CD's; measured 2.2 against 2.1]"
    """
    pre, tests = rows[rows["kind"] == "precondition"], rows[rows["kind"] == "test"]
    if verdict == NOT_TESTABLE and (pre["status"] != HOLDS).any():
        pick, word = pre[pre["status"] != HOLDS], "not met"
    elif verdict == NOT_REPRODUCED:
        pick, word = tests[tests["status"] == FAILS], "fails"
    elif verdict == INCONCLUSIVE:
        pick, word = tests[tests["status"] == UNDECIDED], "too little data"
    elif verdict == NOT_TESTABLE:
        pick, word = tests[tests["status"] == MISSING], "not run"
    else:
        pick, word = tests, "holds"
    parts = []
    for r in pick.itertuples():
        what = _what(r.description)
        parts.append(f"{word}: {what} [{_numbers(r.evidence)}]" if what else f"{word}: {_numbers(r.evidence)}")
    return "; ".join(_unique(parts)) or verdict


def preconditions_text(rows: pd.DataFrame) -> str:
    """A claim's preconditions in one line: each one's short description, status and values.

    Example:
        >>> rows = pd.DataFrame({"kind": ["precondition"], "status": [FAILS], "values": ["apd.gate_engaged = 0"],
        ...                      "description": ["the mechanism engaged: curve alive"]})
        >>> preconditions_text(rows)
        'the mechanism engaged: does not hold [apd.gate_engaged = 0]'
    """
    pre = rows[rows["kind"] == "precondition"]
    parts = []
    for r in pre.itertuples():
        what = _what(r.description)
        vals = str(getattr(r, "values", "") or "")
        parts.append(f"{what}: {r.status}" + (f" [{vals}]" if vals else ""))
    return "; ".join(parts) or "none"


def _deciding_interval(rows: pd.DataFrame, verdict: str = REPRODUCED) -> dict:
    """The interval numbers of the test that decided a claim's ``verdict``: its first failed
    interval test when not reproduced, its first undecided one when inconclusive, else its first
    interval test (NaN where the deciding tests have no interval)."""
    tests = rows[(rows["kind"] == "test")]
    deciding = {NOT_REPRODUCED: FAILS, INCONCLUSIVE: UNDECIDED}.get(verdict)
    if deciding is not None and (tests["status"] == deciding).any():
        tests = tests[tests["status"] == deciding]
    if "ci_low" in tests:
        tests = tests[tests["ci_low"].notna()]
    if tests.empty:
        return {k: math.nan for k in _NUMBERS}
    r = tests.iloc[0]
    return {k: float(r[k]) for k in _NUMBERS}


def judge(claims: Sequence[PaperClaim], profile: str) -> pd.DataFrame:
    """One row per claim: claim_id, claim, verdict, reason, in_words (:func:`in_words`), evidence
    (every check's kind, status and text, one per line), preconditions (:func:`preconditions_text`),
    n_preconditions, n_preconditions_failed, the deciding interval (that of the test that decided
    the verdict, :func:`_deciding_interval`: ``estimate``, ``se``, ``ci_low``, ``ci_high`` and
    ``effect``, the paper's effect on this testbed's scale; NaN for a test without an interval), n_tests, n_hold, n_fail, n_missing, n_undecided (tests whose interval holds both 0 and
    the effect; only tests count). Never raises for missing results."""
    detail = checks(claims, profile)
    rows = []
    for claim in claims:
        mine = detail[detail["claim_id"] == claim.id]
        verdict, reason = verdict_of(mine, profile)
        tests = mine[mine["kind"] == "test"]
        pre = mine[mine["kind"] == "precondition"]
        rows.append(
            {
                "claim_id": claim.id,
                "claim": claim.text,
                "verdict": verdict,
                "reason": reason,
                "in_words": in_words(mine, verdict),
                "preconditions": preconditions_text(mine),
                "n_preconditions": len(pre),
                "n_preconditions_failed": int((pre["status"] != HOLDS).sum()),
                **_deciding_interval(mine, verdict),
                "evidence": "\n".join(
                    f"{k}, {s}: {t}" for k, s, t in zip(mine["kind"], mine["status"], mine["evidence"])
                ),
                "n_tests": len(tests),
                "n_hold": int((tests["status"] == HOLDS).sum()),
                "n_fail": int((tests["status"] == FAILS).sum()),
                "n_missing": int((tests["status"] == MISSING).sum()),
                "n_undecided": int((tests["status"] == UNDECIDED).sum()),
            }
        )
    return pd.DataFrame(rows)


def verdict_counts(verdicts: pd.DataFrame) -> dict[str, int]:
    """``{verdict: number of claims}`` for all four verdicts (zeros included)."""
    counts = verdicts["verdict"].value_counts() if len(verdicts) else pd.Series(dtype=int)
    return {v: int(counts.get(v, 0)) for v in VERDICTS}


_KIND_ORDER = {"precondition": 0, "test": 1, "context": 2}


def _md_text(text: str) -> str:
    """Plain text safe inside Markdown (no emphasis, links or math from *, _, [, $, |, <)."""
    for ch in "\\`*_[]$|<>#":
        text = text.replace(ch, "\\" + ch)
    return text


def source_html(source: str, results_href: str = "../results") -> str:
    """The ``source`` of a row of :func:`checks` as a small, secondary note for a page: each results
    file linked (the book copies ``results/<profile>/`` beside its pages, as ``results_href``), with
    the keys read there; '' for no source.

    Example:
        >>> source_html("qa.json: gain, se; tables/ablations.csv: kl where name=logit")
        '<small>(from <a href="../results/qa.json">qa.json</a>: gain, se; <a href="../results/tables/ablations.csv">ablations.csv</a>: kl where name=logit)</small>'
    """
    parts = []
    for entry in (source if isinstance(source, str) else "").split("; "):
        path, _, keys = entry.partition(": ")
        if not path:
            continue
        link = f'<a href="{html.escape(f"{results_href}/{path}")}">{html.escape(path.rsplit("/", 1)[-1])}</a>'
        parts.append(link + (f": {_md_text(keys)}" if keys else ""))
    return f"<small>(from {'; '.join(parts)})</small>" if parts else ""


def claims_markdown(
    judged: pd.DataFrame, detail: pd.DataFrame, names: dict | None = None, results_href: str = "../results"
) -> str:
    """The verdicts as Markdown: per claim, its short id (``C1a``) and plain name (``names``: {claim
    id: a few words}; the full id without one), verdict and text, then every check (preconditions,
    tests, context; its status, what it tests, the check in words with its numbers and, small, the
    results files and keys it read, linked under ``results_href``), from :func:`judge` and
    :func:`checks`. A check whose value is missing names what is missing instead."""
    out = []
    for _, c in judged.iterrows():
        cid = c["claim_id"]
        head = f"{cid.split('_')[0]}, {names[cid]}" if names and cid in names else cid
        out.append(f"**{_md_text(head)}: {c['verdict']}.** {_md_text(c['claim'])}\n")
        mine = detail[detail["claim_id"] == c["claim_id"]]
        mine = mine.iloc[sorted(range(len(mine)), key=lambda i: _KIND_ORDER[mine["kind"].iloc[i]])]
        if mine.empty:
            out.append(f"- {_md_text(c['reason'])}\n")
        for _, r in mine.iterrows():
            src = "" if r["status"] == MISSING else source_html(r.get("source", ""), results_href)
            said = str(r["evidence"])
            said = said[:1].upper() + said[1:]  # "Tested: ...; measured ...", after the description's full stop
            line = f"- *{r['kind']}, {r['status']}*: {_md_text(r['description'])}. {_md_text(said)}"
            out.append(f"{line} {src}" if src else line)
        out.append("")
    return "\n".join(out)
