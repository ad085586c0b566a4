"""Judging a claim against the results the chapters wrote.

A :class:`PaperClaim` lists :class:`EvidenceSpec` s: values read from ``results/<profile>/<stem>.json``
(a key) or a table CSV (a :class:`Cell`) and an explicit comparison. A check is a ``test``, a
``precondition`` or ``context``. :func:`judge` gives one verdict per claim; a missing value never
counts for or against a claim. Only what a chapter's last run wrote counts.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from apd.core.stats import Z_POWER, Z_TEST, detected, interval, min_detectable_effect
from apd.report.results import last_run_outputs, results_dir

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

    def label(self) -> str:
        cond = ", ".join(f"{k}={v!r}" for k, v in self.where)
        inner = f"{self.column!r}" + (f" where {cond}" if cond else "")
        what = f"{self.agg}({inner})" if self.agg != "one" else inner
        return f"{self.table}.csv[{what}]"


class Missing(Exception):
    """A value could not be read; the message says which chapter, key and profile."""


@dataclass(frozen=True)
class Outcome:
    holds: bool
    text: str
    inconclusive: bool = False
    numbers: dict = field(default_factory=dict)  # estimate, ci_low, ci_high, effect (interval tests only)


def _fmt(v: float) -> str:
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return f"{int(v)}"
    return f"{v:.4g}"


def _verdict_text(holds: bool) -> str:
    return "holds" if holds else "does not hold"


@dataclass(frozen=True)
class Comparison:
    """``test(values) -> bool`` on the looked-up numbers (in key order), ``show(labels, values)``
    the sentence that states them. ``arity`` is the number of keys it needs (None: two or more)."""

    name: str
    arity: int | None
    test: Callable[[Sequence[float]], bool]
    show: Callable[[Sequence[str], Sequence[float]], str]
    numbers: Callable[[Sequence[float]], dict] | None = None

    def __call__(self, labels: Sequence[str], values: Sequence[float]) -> Outcome:
        self.check_arity(len(values))
        result = self.test(values)
        nums = self.numbers(values) if self.numbers is not None else {}
        if result is None:  # the interval holds both no effect and the claimed one
            return Outcome(
                False, f"{self.show(labels, values)}: too little data to tell", inconclusive=True, numbers=nums
            )
        holds = bool(result)
        return Outcome(holds, f"{self.show(labels, values)}: {_verdict_text(holds)}", numbers=nums)

    def check_arity(self, n: int) -> None:
        if self.arity is not None and n != self.arity:
            raise ValueError(f"comparison {self.name} needs {self.arity} value(s), got {n}")
        if self.arity is None and n < 2:
            raise ValueError(f"comparison {self.name} needs at least two values, got {n}")


def _fmt_pair(a: float, b: float) -> tuple[str, str]:
    """Both numbers with :func:`_fmt`'s 4 significant digits, or more where those print two
    different numbers alike (1.2301 and 1.2297 -> '1.2301', '1.2297', not '1.23' twice)."""
    fa, fb = _fmt(a), _fmt(b)
    digits = 4
    while fa == fb and a != b and digits < 10 and all(isinstance(v, float) for v in (a, b)):
        digits += 1
        fa, fb = f"{a:.{digits}g}", f"{b:.{digits}g}"
    return fa, fb


def _pair(symbol: str, margin: float) -> Callable:
    def show(labels, values):
        m = f" {'-' if symbol == '<' else '+'} {_fmt(margin)}" if margin else ""
        a, b = _fmt_pair(values[0], values[1])
        return f"{labels[0]} = {a} {symbol} {labels[1]} = {b}{m}"

    return show


def less_than(margin: float = 0.0) -> Comparison:
    """a < b - margin (two keys)."""
    return Comparison(f"less_than(margin={margin:g})", 2, lambda v: v[0] < v[1] - margin, _pair("<", margin))


def greater_than(margin: float = 0.0) -> Comparison:
    """a > b + margin (two keys)."""
    return Comparison(f"greater_than(margin={margin:g})", 2, lambda v: v[0] > v[1] + margin, _pair(">", margin))


def at_most(limit: float) -> Comparison:
    """a <= limit (one key)."""
    return Comparison(
        f"at_most({limit:g})",
        1,
        lambda v: v[0] <= limit,
        lambda labels, v: f"{labels[0]} = {_fmt(v[0])} <= {_fmt(limit)}",
    )


def at_least(limit: float) -> Comparison:
    """a >= limit (one key)."""
    return Comparison(
        f"at_least({limit:g})",
        1,
        lambda v: v[0] >= limit,
        lambda labels, v: f"{labels[0]} = {_fmt(v[0])} >= {_fmt(limit)}",
    )


def within_relative(tol: float) -> Comparison:
    """|a - b| <= tol * max(|a|, |b|) (two keys; unit-free "similar")."""

    def show(labels, v):
        return (
            f"|{labels[0]} - {labels[1]}| = |{_fmt(v[0])} - {_fmt(v[1])}| = {_fmt(abs(v[0] - v[1]))} "
            f"<= {tol:g} x {_fmt(max(abs(v[0]), abs(v[1])))}"
        )

    return Comparison(
        f"within_relative({tol:g})", 2, lambda v: abs(v[0] - v[1]) <= tol * max(abs(v[0]), abs(v[1])), show
    )


def more_than_z_se(z: float = 2.0) -> Comparison:
    """A mean difference exceeds ``z`` of its standard errors: d > z * se (two keys: d, se)."""
    return Comparison(
        f"more_than_z_se({z:g})",
        2,
        lambda v: v[0] > z * v[1],
        lambda labels, v: f"{labels[0]} = {_fmt(v[0])} > {z:g} x {labels[1]} = {z:g} x {_fmt(v[1])}",
    )


def _ci_text(d: float, se: float, z: float) -> str:
    lo, hi = interval(d, se, z)
    return f"95% CI [{_fmt(lo)}, {_fmt(hi)}]" if z == Z_TEST else f"CI (z = {z:g}) [{_fmt(lo)}, {_fmt(hi)}]"


def detects(
    paper_effect: float | None = None,
    z: float = Z_TEST,
    power_z: float = Z_POWER,
    share: float | None = None,
    base_se: bool = False,
) -> Comparison:
    """A difference d (first key; positive = the claimed direction) with its standard error se
    (second key), decided by its confidence interval d +- z se (:func:`apd.core.stats.detected`):
    holds when the interval lies above 0; fails when it excludes the paper's effect (its upper
    bound is below the effect; without an effect, when it lies below 0); otherwise inconclusive.

    The effect is the paper's on this testbed's scale: with ``share`` a third key, ``base``, is read
    and the effect is ``share x base`` (the paper's gain as a share of its gain on the base contrast,
    in the same measure, times this build's base gain; no effect when ``base`` <= 0). With
    ``base_se`` a fourth key, the base's standard error, is read and the base's lower 95% bound
    replaces it (the smallest base the data allow; no effect when that bound is <= 0), so the
    base's own uncertainty can only make the verdict less decided. Else ``paper_effect`` in the
    units of d (None: the paper has none). The smallest detectable effect ((z + power_z) se) is
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
    """

    def base_of(v):
        return v[2] - z * v[3] if base_se else v[2]

    def effect_of(v):
        if share is None:
            return paper_effect
        return share * base_of(v) if base_of(v) > 0 else None

    def test(v):
        return detected(v[0], v[1], effect_of(v), z, power_z)

    def show(labels, v):
        mde = min_detectable_effect(v[1], z, power_z)
        eff = effect_of(v)
        if share is not None:
            base = (
                f"the lower 95% bound of {labels[2]} = {_fmt(v[2])} - {z:g} x {_fmt(v[3])} = {_fmt(base_of(v))}"
                if base_se
                else f"{labels[2]} = {_fmt(v[2])}"
            )
            paper = (
                f"the paper's effect on this scale {_fmt(share)} x {base} = {_fmt(eff)}"
                if eff is not None
                else f"no effect on this scale ({base} <= 0)"
            )
        else:
            paper = f"the paper's effect {_fmt(eff)}" if eff is not None else "no paper effect in these units"
        return (
            f"{labels[0]} = {_fmt(v[0])}, se {labels[1]} = {_fmt(v[1])}, {_ci_text(v[0], v[1], z)} against 0 and "
            f"{paper} (smallest detectable effect {_fmt(mde)}, context)"
        )

    def numbers(v):
        lo, hi = interval(v[0], v[1], z)
        eff = effect_of(v)
        return {
            "estimate": float(v[0]),
            "se": float(v[1]),
            "ci_low": lo,
            "ci_high": hi,
            "effect": float("nan") if eff is None else float(eff),
        }

    name = f"detects(share={share:g})" if share is not None else f"detects({paper_effect})"
    n_keys = 2 if share is None else (4 if base_se else 3)
    return Comparison(name, n_keys, test, show, numbers)


def significant(z: float = Z_TEST) -> Comparison:
    """A positive control: a difference d (first key; positive = the expected direction) exceeds z
    of its standard errors se (second key), i.e. its confidence interval lies above 0. Anything
    else does not hold (a control that does not clearly work leaves nothing to test against).

    Example:
        >>> significant()(["d", "se"], [0.009, 0.014]).holds
        False
    """

    def show(labels, v):
        return f"{labels[0]} = {_fmt(v[0])}, se {labels[1]} = {_fmt(v[1])}, {_ci_text(v[0], v[1], z)} above 0"

    def numbers(v):
        lo, hi = interval(v[0], v[1], z)
        return {"estimate": float(v[0]), "se": float(v[1]), "ci_low": lo, "ci_high": hi}

    return Comparison(f"significant(z={z:g})", 2, lambda v: v[0] > z * v[1], show, numbers)


def is_largest() -> Comparison:
    """The first value is strictly larger than every other value (two or more keys; a tie does
    not hold: "largest on X" needs X to stand out)."""

    def show(labels, v):
        others = ", ".join(f"{a} = {_fmt(b)}" for a, b in zip(labels[1:], v[1:]))
        return f"{labels[0]} = {_fmt(v[0])} > each of ({others})"

    return Comparison("is_largest", None, lambda v: all(v[0] > x for x in v[1:]), show)


def difference_larger() -> Comparison:
    """(a - b) > (c - d) (four keys), e.g. CD's ppl minus APD's on one dataset against another."""

    def show(labels, v):
        return (
            f"({labels[0]} - {labels[1]}) = {_fmt(v[0] - v[1])} > ({labels[2]} - {labels[3]}) = {_fmt(v[2] - v[3])} "
            f"[{_fmt(v[0])}, {_fmt(v[1])}, {_fmt(v[2])}, {_fmt(v[3])}]"
        )

    return Comparison("difference_larger", 4, lambda v: v[0] - v[1] > v[2] - v[3], show)


def non_increasing() -> Comparison:
    """v1 >= v2 >= ... (two or more keys, e.g. a loss as more members are added)."""
    return Comparison(
        "non_increasing",
        None,
        lambda v: all(a >= b for a, b in zip(v, v[1:])),
        lambda labels, v: " >= ".join(f"{a} = {_fmt(b)}" for a, b in zip(labels, v)),
    )


@dataclass(frozen=True)
class EvidenceSpec:
    """One check: read ``keys`` from chapter ``stem`` and apply ``comparison``.

    ``kind``: ``'test'`` (decides the verdict), ``'precondition'`` (whether the claim *can* be
    tested here, e.g. there are questions on which obvious blindness could show; when it does not
    hold the claim is not testable rather than not reproduced) or ``'context'`` (shown, never
    decides). ``profiles``: the profiles this check applies to (None: all). ``reason_key``: a JSON
    key of the same chapter whose text says why the check does not hold (e.g. which mechanism gate
    failed); it is appended to the evidence when the check fails."""

    stem: str
    keys: tuple
    comparison: Comparison
    description: str
    kind: str = "test"
    profiles: tuple[str, ...] | None = None
    reason_key: str | None = None

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

    def applies_to(self, profile: str) -> bool:
        return self.profiles is None or profile in self.profiles

    def labels(self) -> list[str]:
        return [f"{self.stem}.{k}" if isinstance(k, str) else k.label() for k in self.keys]


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
            path = self.dir / f"{stem}.json"
            try:
                self._json[stem] = json.loads(path.read_text()) if path.is_file() else None
            except ValueError as err:
                self._json[stem] = f"results/{self.profile}/{stem}.json is not valid JSON ({err})"
        got = self._json[stem]
        if got is None:
            raise Missing(
                f"chapter {stem} has not run under profile {self.profile} (no results/{self.profile}/{stem}.json)"
            )
        if isinstance(got, str):
            raise Missing(got)
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


def check(spec: EvidenceSpec, results: Results) -> dict:
    """Run one check: ``{'status': holds | does not hold | missing, 'text': ...}``."""
    try:
        values = [results.number(spec.stem, k) for k in spec.keys]
    except Missing as err:
        return {"status": MISSING, "text": str(err)}
    out = spec.comparison(spec.labels(), values)
    extra = {"values": ", ".join(f"{labels} = {_fmt(v)}" for labels, v in zip(spec.labels(), values)), **out.numbers}
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
    chapter, status (holds / does not hold / too little data / missing), the text with the numbers,
    ``values`` (each key read = its value) and, for interval checks, ``estimate``, ``se``,
    ``ci_low``, ``ci_high`` (95%) and ``effect`` (the paper's effect on this scale; NaN if none)."""
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
                    **{k: c.get(k, math.nan) for k in _NUMBERS},
                }
            )
    return pd.DataFrame(
        rows, columns=["claim_id", "kind", "description", "chapter", "status", "evidence", "values", *_NUMBERS]
    )


#: the interval columns of :func:`checks` (NaN for checks without an interval)
_NUMBERS = ("estimate", "se", "ci_low", "ci_high", "effect")


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


def _numbers(text: str) -> str:
    """The checked expression of an evidence text without its verdict words: "a = 1 < b = 2" from
    "a = 1 < b = 2: does not hold (why)"; the reason in parentheses is kept."""
    head, _, tail = str(text).partition(": ")
    why = tail[tail.index("(") :] if "(" in tail else ""
    return f"{head} {why}".strip()


def in_words(rows: pd.DataFrame, verdict: str) -> str:
    """A reader's summary of a claim's verdict from its rows of :func:`checks`: the description of
    each check that decided it (the failed preconditions, the failed or undecided tests, else every
    test), then the numbers in brackets. The findings table shows this; the chapter shows every check.

    Example:
        >>> rows = pd.DataFrame({"kind": ["test"], "status": [FAILS], "description": ["APD is better than CD"],
        ...                      "evidence": ["apd.kl_apd = 2.2 < apd.kl_cd = 2.1: does not hold"]})
        >>> in_words(rows, NOT_REPRODUCED)
        'fails: APD is better than CD [apd.kl_apd = 2.2 < apd.kl_cd = 2.1]'
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
        what = re.sub(r"\s*\([^()]*\)", "", str(r.description or "")).split(": ")[0].strip()
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
        what = re.sub(r"\s*\([^()]*\)", "", str(r.description or "")).split(": ")[0].strip()
        vals = str(getattr(r, "values", "") or "")
        parts.append(f"{what}: {r.status}" + (f" [{vals}]" if vals else ""))
    return "; ".join(parts) or "none"


def _deciding_interval(rows: pd.DataFrame) -> dict:
    """The interval numbers of a claim's first test that has an interval (NaN where none has)."""
    tests = rows[(rows["kind"] == "test")]
    if "ci_low" in tests:
        tests = tests[tests["ci_low"].notna()]
    if tests.empty:
        return {k: math.nan for k in _NUMBERS}
    r = tests.iloc[0]
    return {k: float(r[k]) for k in _NUMBERS}


def judge(claims: Sequence[PaperClaim], profile: str) -> pd.DataFrame:
    """One row per claim: claim_id, claim, verdict, reason, in_words (:func:`in_words`), evidence
    (every check's kind, status and text, one per line), preconditions (:func:`preconditions_text`),
    n_preconditions, n_preconditions_failed, the deciding interval (the first interval test's
    ``estimate``, ``se``, ``ci_low``, ``ci_high`` and ``effect``, the paper's effect on this testbed's
    scale), n_tests, n_hold, n_fail, n_missing, n_undecided (tests whose interval holds both 0 and
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
                **_deciding_interval(mine),
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


def claims_markdown(judged: pd.DataFrame, detail: pd.DataFrame, names: dict | None = None) -> str:
    """The verdicts as Markdown: per claim, its short id (``C1a``) and plain name (``names``: {claim
    id: a few words}; the full id without one), verdict and text, then every check (preconditions,
    tests, context; its status, what it tests, the numbers), from :func:`judge` and :func:`checks`."""
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
            out.append(f"- *{r['kind']}, {r['status']}*: {_md_text(r['description'])}. {_md_text(r['evidence'])}")
        out.append("")
    return "\n".join(out)
