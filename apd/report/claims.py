"""The paper's claims, judged against the results the chapters wrote.

The checks are data: ``claims.yml`` beside this module holds one row per check (:class:`Check`):
its claim, its kind (a ``test`` decides the verdict, a ``precondition`` says whether the claim can
be tested here at all, ``context`` is shown and never decides), the chapter it reads, the profiles
it applies to (``pico`` or ``hub``; none: every profile), its rule (:data:`RULES`), the paper's
number where the rule compares with it, the keys it reads with each one's name in words, the
clusters behind each standard error, and its description. This module reads each key from
``results/<profile>/<chapter>.json`` (a JSON key) or a table CSV (a :class:`Cell`), applies each
rule (:func:`checks`) and gives each claim its verdict (:func:`judge`). A missing value never
counts for or against a claim, and only what a chapter's last run wrote counts.

A check reads to a reader as ``tested: <what the check asks>; measured <the numbers>: <verdict>``.
A difference with a standard error is read through its 95% interval: Student's t with n - 1
degrees of freedom where the results record the n clusters the error was taken over, the normal
1.96 where they do not. It reproduces the claim when the interval lies above 0 and fails to when
it lies below the paper's effect on this testbed's scale (the paper's gain as a share of its
CD-over-expert gain, times the lower 95% bound of this build's), or below 0 where the paper gives
no effect in the measure tested; otherwise it is inconclusive.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import yaml

from apd.core.stats import Z_POWER, Z_TEST, critical, detected, interval, min_detectable_effect, scaled_effect
from apd.report import paper
from apd.report.numbers import format_count, format_number, format_pm, format_sig, interval_text, pm_parts
from apd.report.results import last_run_outputs, read_results, results_dir
from apd.report.tables import listed

REPRODUCED, NOT_REPRODUCED = "reproduced", "not reproduced"
NOT_TESTABLE, INCONCLUSIVE = "not testable here", "inconclusive"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, NOT_TESTABLE, INCONCLUSIVE)

#: a check's status: its verdict or its value missing; for context only, also shown (no verdict) and
#: not comparable (a run it compares fails its gates)
HOLDS, FAILS, MISSING, UNDECIDED = "holds", "does not hold", "missing", "too little data"
SHOWN, NOT_COMPARABLE = "shown", "not comparable"

#: profiles that run the embedded pico family (a world with true answers): a row's ``profiles: pico``
PICO_PROFILES = ("smoke", "default", "gpu", "default-200", "exact-truth")
#: profiles that run a real Hub family (the paper's datasets): a row's ``profiles: hub``
HUB_PROFILES = ("pythia",)

KINDS = ("test", "precondition", "context")

#: each rule and how many keys it reads (None: two or more); significant and detects read a difference
#: and its standard error, and detects with the paper's number (``paper:``) the base gain and its error too
RULES = dict(less_than=2, greater_than=2, at_most=1, at_least=1, within_relative=2, flag=1, shown=1)
RULES |= dict(is_largest=None, difference_larger=4, significant=2, detects=2)

#: the paper's numbers a row may name (``paper:``): its gain as a share of its CD-over-expert gain
PAPER_SHARES = {"ne_er_share": paper.ne_er_share, "qa_share": paper.qa_share, "real_share": paper.real_share}

TABLE = Path(__file__).with_name("claims.yml")

_AGGREGATES = ("min", "max", "mean", "sum", "count")
_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_NUMBERS = ("estimate", "se", "ci_low", "ci_high", "effect", "critical", "n_groups")


@dataclass(frozen=True)
class Cell:
    """A number from ``tables/<table>.csv``: the rows where each ``where`` column equals its value,
    then ``column`` of the one matching row (``agg`` 'one') or an aggregate over them ('min', 'max',
    'mean', 'sum'; 'count' counts them). The table writes a cell as its :meth:`label`."""

    table: str
    column: str
    where: tuple[tuple[str, Any], ...] = ()
    agg: str = "one"

    def what(self) -> str:
        """What it reads in its table: ``'kl_diff' where name='logit'``, ``mean('value')``."""
        cond = ", ".join(f"{k}={v!r}" for k, v in self.where)
        inner = f"{self.column!r}" + (f" where {cond}" if cond else "")
        return f"{self.agg}({inner})" if self.agg != "one" else inner

    def label(self) -> str:
        return f"{self.table}.csv[{self.what()}]"

    @classmethod
    def parse(cls, text: str) -> "Cell":
        """The cell its label names.

        Example:
            >>> Cell.parse("t.csv[mean('kl' where name='a', T=2.0)]")
            Cell(table='t', column='kl', where=(('name', 'a'), ('T', 2.0)), agg='mean')
        """
        m = re.fullmatch(r"([\w.-]+)\.csv\[(.*)\]", text)
        inner, agg = (m.group(2), "one") if m else ("", "one")
        a = re.fullmatch(r"(\w+)\((.*)\)", inner)
        if a and a.group(1) in _AGGREGATES:
            inner, agg = a.group(2), a.group(1)
        c = re.fullmatch(rf"({_QUOTED})(?: where (.*))?", inner)
        if not (m and c):
            raise ValueError(f"not a table cell: {text!r}; write e.g. \"ablations.csv['kl_diff' where name='logit']\"")
        where = re.findall(rf"(\w+)=({_QUOTED}|[^,]+)(?:, |$)", c.group(2) or "")
        cell = cls(m.group(1), ast.literal_eval(c.group(1)), tuple((k, ast.literal_eval(v)) for k, v in where), agg)
        if cell.label() != text:
            raise ValueError(f"cannot read the table cell {text!r} (read as {cell.label()!r})")
        return cell


def _key(text: str) -> str | Cell:
    return Cell.parse(text) if ".csv[" in text else text


def _label(stem: str, key: str | Cell) -> str:
    """A key as code: ``qa.world_ho_ppl_gain``, ``ablations.csv['kl_diff' where name='logit']``."""
    return f"{stem}.{key}" if isinstance(key, str) else key.label()


@dataclass(frozen=True)
class Check:
    """One row of the claims table (the module docstring). ``keys``: JSON keys or :class:`Cell` s;
    ``names``: each in a reader's words; ``limit``: the rule's number (at_most, at_least,
    within_relative); ``share``: the paper's (detects); ``clusters``: (unit, key of their number or
    None) per standard error; ``reason``: a key whose text says why the check fails; ``gated_by``:
    (flag key, who in words, reason key) per run whose gates must pass for a context comparison to
    be read; ``needs``: a precondition's kind (a key of :data:`PRECONDITION_WORDS`)."""

    claim: str
    kind: str
    chapter: str
    rule: str
    keys: tuple
    names: tuple
    description: str
    profiles: tuple | None = None
    limit: float | None = None
    share: float | None = None
    clusters: tuple = ()
    reason: str | None = None
    gated_by: tuple = ()
    needs: str | None = None

    @property
    def se_at(self) -> tuple[int, ...]:
        """Where its standard errors are among its keys."""
        return (1, 3) if self.share is not None else (1,) if self.rule in ("significant", "detects") else ()

    def applies_to(self, profile: str) -> bool:
        return self.profiles is None or profile in self.profiles

    def source(self) -> str:
        """The results files it reads (under ``results/<profile>/``), each with what it reads there."""
        out: dict[str, list[str]] = {}
        for k in [*self.keys, *(key for _, key in self.clusters if key is not None), *(g[0] for g in self.gated_by)]:
            path, what = (f"{self.chapter}.json", k) if isinstance(k, str) else (f"tables/{k.table}.csv", k.what())
            out.setdefault(path, [])
            if what not in out[path]:
                out[path].append(what)
        return "; ".join(f"{path}: {', '.join(what)}" for path, what in out.items())


def parse_checks(rows: Sequence[dict], claim_ids: dict[str, str] | None = None) -> list[Check]:
    """:class:`Check` s from rows of the claims table (``claim_ids``: short id -> full id); a row
    that does not fit its rule raises ValueError naming it.

    Example:
        >>> row = {"claim": "X", "kind": "test", "chapter": "qa", "rule": "at_least 1", "keys": {"n": None},
        ...        "description": "some questions"}
        >>> parse_checks([row])[0].names
        ('qa.n',)
    """
    out = []
    for i, given in enumerate(rows):
        row = dict(given)
        try:
            rule, *arg = str(row.pop("rule")).split()
            keys, chapter, share = dict(row.pop("keys")), str(row.pop("chapter")), row.pop("paper", None)
            check = Check(
                claim=(claim_ids or {}).get(str(row["claim"]), str(row.pop("claim"))),
                kind=row.pop("kind"),
                chapter=chapter,
                rule=rule,
                keys=tuple(_key(k) for k in keys),
                names=tuple(n or _label(chapter, _key(k)) for k, n in keys.items()),
                description=str(row.pop("description")),
                profiles={"pico": PICO_PROFILES, "hub": HUB_PROFILES}[row.pop("profiles")]
                if "profiles" in row
                else None,
                limit=float(arg[0]) if arg else None,
                share=PAPER_SHARES[share]() if share is not None else None,
                clusters=tuple(_cluster(c) for c in row.pop("clusters", ())),
                reason=row.pop("reason", None),
                gated_by=tuple((g["key"], g["who"], g.get("reason")) for g in row.pop("gated_by", ())),
                needs=row.pop("needs", None),
            )
            _validate(check, row)
        except (KeyError, ValueError, TypeError) as err:
            raise ValueError(
                f"check {i + 1} of the claims table ({given.get('claim')}, {given.get('chapter')}): {err}"
            ) from None
        out.append(check)
    return out


def _cluster(text: str) -> tuple[str, str | Cell | None]:
    unit, _, key = str(text).partition(": ")
    return unit, (_key(key) if key else None)


def _validate(c: Check, rest: dict) -> None:
    if rest:
        raise ValueError(f"unknown columns {sorted(rest)}")
    if c.kind not in KINDS or c.rule not in RULES:
        raise ValueError(
            f"kind {c.kind!r} must be one of {', '.join(KINDS)}, rule {c.rule!r} one of {', '.join(RULES)}"
        )
    arity = RULES[c.rule] if c.share is None else 4
    if len(c.keys) != arity if arity else len(c.keys) < 2:
        raise ValueError(f"rule {c.rule} needs {arity or 'two or more'} key(s), got {len(c.keys)}")
    if (c.limit is not None) != (c.rule in ("at_most", "at_least", "within_relative")):
        raise ValueError(f"rule {c.rule} takes {'no' if c.limit is not None else 'a'} number")
    if c.share is not None and c.rule != "detects":
        raise ValueError("only detects compares with the paper's number")
    if len(c.clusters) > len(c.se_at):
        raise ValueError(f"rule {c.rule} reads {len(c.se_at)} standard error(s), got {len(c.clusters)} clusters")
    if c.kind != "context" and (c.gated_by or c.rule == "shown"):
        raise ValueError("gated_by and shown are for context checks only")
    if (c.kind == "precondition") != (c.needs is not None) or c.needs not in (None, *PRECONDITION_WORDS):
        raise ValueError(f"a precondition, and only a precondition, needs one of {', '.join(PRECONDITION_WORDS)}")


class Missing(Exception):
    """A value could not be read; the message says which chapter, key and profile."""


class Results:
    """Reads (and keeps) one profile's results JSON files and tables."""

    def __init__(self, profile: str):
        self.profile, self.dir, self._json, self._tables = profile, results_dir(profile), {}, {}

    def chapter(self, stem: str) -> dict:
        if stem not in self._json:  # a damaged file stops the chapter (DamagedResultsError)
            self._json[stem] = read_results(self.dir, stem) if (self.dir / f"{stem}.json").is_file() else None
        if self._json[stem] is None:
            p = self.profile
            raise Missing(f"chapter {stem} has not run under profile {p} (no results/{p}/{stem}.json)")
        return self._json[stem]

    def table(self, stem: str, name: str) -> pd.DataFrame:
        """``tables/<name>.csv`` if the chapter's last run wrote it (its run record lists it)."""
        self.chapter(stem)
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
        values = self.chapter(stem)
        if key not in values:
            raise Missing(f"chapter {stem} wrote no {key!r} under profile {self.profile}")
        return str(values[key])

    def number(self, stem: str, key: str | Cell) -> float:
        """The value of a JSON key or a :class:`Cell` as a finite float, or :class:`Missing`."""
        if isinstance(key, Cell):
            return self._cell(stem, key)
        values = self.chapter(stem)
        if key not in values:
            raise Missing(f"chapter {stem} did not produce key {key} under profile {self.profile}")
        return _as_number(values[key], f"chapter {stem} reported {key} = {values[key]!r} under profile {self.profile}")

    def _cell(self, stem: str, cell: Cell) -> float:
        df, where = self.table(stem, cell.table), f"under profile {self.profile}"
        of = f"table {cell.table}.csv of chapter {stem}"
        for col in [cell.column, *(k for k, _ in cell.where)]:
            if col not in df.columns:
                raise Missing(f"{of} has no column {col!r} {where} (its columns: {', '.join(map(str, df.columns))})")
        for col, value in cell.where:
            df = df[df[col] == value]
        if cell.agg == "count":
            return float(len(df))
        rows = "rows where " + ", ".join(f"{k}={v!r}" for k, v in cell.where) if cell.where else "rows"
        if df.empty:
            raise Missing(f"{of} has no {rows} {where}")
        if cell.agg == "one" and len(df) != 1:
            raise Missing(f"{of} has {len(df)} {rows} {where}, expected exactly one")
        col = pd.to_numeric(df[cell.column], errors="coerce")
        if col.isna().any():
            raise Missing(f"{of} has empty or non-numeric {cell.column!r} cells in its {rows} {where}")
        value = float(col.iloc[0]) if cell.agg == "one" else float(getattr(col, cell.agg)())
        return _as_number(value, f"{cell.label()} = {value!r} {where}")


def _as_number(value: Any, context: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Missing(f"{context}, not a number")
    if not math.isfinite(value):
        raise Missing(f"{context}, not a finite number")
    return float(value)


def _fmt(v: float) -> str:
    """A value as the ``values`` column records it: an integer, else 4 significant figures."""
    return f"{int(v)}" if float(v).is_integer() and abs(v) < 1e15 else f"{v:.4g}"


def _distinct(*values: float) -> list[str]:
    """``values`` to 3 significant figures (:func:`apd.report.numbers.format_number`), with more
    where two different values would print alike.

    Example:
        >>> _distinct(1.2301, 1.2297), _distinct(2.0, 0.125), _distinct(2.0203, 2.0215)
        (['1.2301', '1.2297'], ['2', '0.125'], ['2.020', '2.022'])
    """
    texts, sig = [format_number(v, 3) for v in values], 3
    while sig < 10 and any(
        texts[i] == texts[j] and values[i] != values[j] for i in range(len(values)) for j in range(i)
    ):
        sig += 1
        texts = [format_number(v) if float(v).is_integer() else format_sig(v, sig) for v in values]
    return texts


@dataclass(frozen=True)
class _Spread:
    """The clusters behind one standard error: their number (None: a normal interval) and unit."""

    n: int | None = None
    unit: str = ""

    @property
    def crit(self) -> float:
        return critical(self.n) if self.n is not None else Z_TEST

    def over(self) -> str:
        if self.n is not None:
            return f"standard error over {format_count(self.n)} {self.unit}".rstrip()
        return f"standard error over {self.unit}" if self.unit else "standard error"

    def kind(self) -> str:
        return f"95% t interval ({format_count(self.n - 1)} df)" if self.n is not None else "95% normal interval"

    def words(self, d: float, se: float, aside: str = "") -> str:
        return f"{format_pm(d, se)} ({self.over()}{aside}), interval {interval_text(d, se, self.n)}"

    def numbers(self, d: float, se: float) -> dict:
        lo, hi = interval(d, se, self.crit)
        n = math.nan if self.n is None else float(self.n)
        return dict(estimate=float(d), se=float(se), ci_low=lo, ci_high=hi, critical=self.crit, n_groups=n)


def apply_rule(check: Check, names: Sequence[str], v: Sequence[float], spreads: Sequence[_Spread] = ()) -> tuple:
    """``(verdict, sentence, interval numbers)`` of ``check``'s rule on the values ``v`` (in key
    order): verdict True (holds), False (does not hold) or None (an interval holding both 0 and the
    paper's effect); the sentence ``tested: ...; measured ...`` before its verdict words.

    Example:
        >>> row = dict(claim="X", kind="test", chapter="qa", rule="less_than", keys={"a": None, "b": None}, description="")
        >>> apply_rule(parse_checks([row])[0], ["APD's ppl", "CD's"], [2.132, 2.237])[:2]
        (True, "tested: APD's ppl is below CD's; measured 2.13 against 2.24")
    """
    sd, sb = [*spreads, _Spread(), _Spread()][:2]
    rule, lim, n, numbers, measured = check.rule, check.limit, names, {}, ""
    if rule == "shown":
        return None, f"measured: {n[0]}, {_distinct(v[0])[0]}", {}
    if rule in ("less_than", "greater_than", "within_relative"):
        measured = " against ".join(_distinct(v[0], v[1]))
    if rule in ("less_than", "greater_than"):
        word, holds = ("below", v[0] < v[1]) if rule == "less_than" else ("above", v[0] > v[1])
        said = f"{n[0]} is {word} {n[1]}"
    elif rule in ("at_most", "at_least"):
        measured, bound = _distinct(v[0], lim)
        holds, said = v[0] <= lim if rule == "at_most" else v[0] >= lim, f"{n[0]} is {rule.replace('_', ' ')} {bound}"
    elif rule == "flag":
        holds, said = v[0] >= 1, n[0]
    elif rule == "within_relative":
        gap, top = abs(v[0] - v[1]), max(abs(v[0]), abs(v[1]))
        holds, said = gap <= lim * top, f"{n[0]} is within {format_number(100 * lim)}% of {n[1]}"
        share = format_number(100 * gap / top, sig=2) if top else "0"
        measured += f", a gap of {format_number(gap)} or {share}% of the larger"
    elif rule == "is_largest":
        texts = _distinct(*v)
        holds, said = all(v[0] > x for x in v[1:]), f"{n[0]} is larger than {listed(n[1:])}"
        measured = f"{texts[0]}; {listed([f'{x} {t}' for x, t in zip(n[1:], texts[1:])])}"
    elif rule == "difference_larger":
        (d1, d2), (a, b, c, d) = _distinct(v[0] - v[1], v[2] - v[3]), _distinct(*v)
        holds, said = v[0] - v[1] > v[2] - v[3], f"{n[0]} minus {n[1]} is larger than {n[2]} minus {n[3]}"
        measured = f"{d1} ({a} - {b}) against {d2} ({c} - {d})"
    elif rule == "significant":
        holds, said, measured = v[0] > sd.crit * v[1], f"{n[0]} is above 0, by its {sd.kind()}", sd.words(*v)
        numbers = sd.numbers(*v)
    else:  # detects; the paper's effect on this scale: its share of the lower 95% bound of this build's base gain
        effect, given = None, "the paper gives no effect in these units"
        if check.share is not None:
            low = v[2] - sb.crit * v[3]
            base = f"the lower bound of the {sb.kind()} of {n[2]}, {format_pm(v[2], v[3])} ({sb.over()})"
            base = f"{pm_parts(low, v[3], signed=False)[0]}, {base}"
            effect = scaled_effect(check.share, v[2], v[3], sb.n)
            given = (
                f"there is no effect on this scale, since {base}, is at or below 0"
                if effect is None
                else f"the effect is {format_number(effect)} = {format_number(check.share)} × {base}"
            )
        bar = "0" if effect is None else "the paper's effect on this scale"
        holds = detected(v[0], v[1], effect, sd.crit, Z_POWER)
        said = f"{n[0]} is above 0 (reproduced) or below {bar} (not reproduced), by its {sd.kind()}; {given}"
        mde = format_number(min_detectable_effect(v[1], sd.crit, Z_POWER), sig=2)
        measured = sd.words(v[0], v[1], f"; smallest detectable effect {mde}")
        numbers = {**sd.numbers(v[0], v[1]), "effect": math.nan if effect is None else float(effect)}
    return holds, f"tested: {said}" + (f"; measured {measured}" if measured else ""), numbers


def check(c: Check, results: Results) -> dict:
    """One check read and judged: ``status``, ``text`` (its sentence and verdict, or what is missing),
    ``values`` (each key as code = its value), ``source`` and, for an interval, its numbers."""
    source, p = c.source(), results.profile
    try:
        failing = [g for g in c.gated_by if results.number(c.chapter, g[0]) < 1]
        if failing:
            why = [(w, _reason(results, c.chapter, r)) for _, w, r in failing]
            who = [w if r is None else f"{w} ({r})" for w, r in why]
            verb = "does not pass its" if len(who) == 1 else "do not pass their"
            return {
                "status": NOT_COMPARABLE,
                "text": f"not comparable: {listed(who)} {verb} mechanism gates",
                "source": source,
            }
        values = [results.number(c.chapter, k) for k in c.keys]
        for i in c.se_at:
            if values[i] < 0:
                label = _label(c.chapter, c.keys[i])
                raise Missing(f"{label} = {_fmt(values[i])} under profile {p}: a negative standard error")
        spreads = [_Spread(_count(results, c.chapter, key, unit), unit) for unit, key in c.clusters]
    except Missing as err:
        return {"status": MISSING, "text": str(err), "source": source}
    verdict, text, numbers = apply_rule(c, c.names, values, spreads)
    read = [f"{_label(c.chapter, k)} = {_fmt(v)}" for k, v in zip(c.keys, values)]
    read += [f"{_label(c.chapter, key)} = {s.n}" for (_, key), s in zip(c.clusters, spreads) if s.n is not None]
    extra = {"values": ", ".join(read), "source": source, **numbers}
    if c.rule == "shown":
        return {"status": SHOWN, "text": text, **extra}
    if verdict is None:
        return {"status": UNDECIDED, "text": f"{text}: too little data to tell", **extra}
    why = None if verdict else _reason(results, c.chapter, c.reason)
    text = f"{text}: {'holds' if verdict else 'does not hold'}" + ("" if why is None else f" ({why})")
    return {"status": HOLDS if verdict else FAILS, "text": text, **extra}


def _reason(results: Results, stem: str, key: str | None) -> str | None:
    """The text of a reason key, or None (no key, or the results lack it)."""
    try:
        return None if key is None else results.text(stem, key)
    except Missing:
        return None


def _count(results: Results, stem: str, key: str | Cell | None, unit: str) -> int | None:
    """The number of clusters a key records (None: no key, or the results lack it: a normal interval);
    a number that is not a whole number of at least 2 is :class:`Missing`."""
    try:
        n = results.number(stem, key) if key is not None else None
    except Missing:
        return None
    if n is not None and (n != int(n) or n < 2):
        raise Missing(
            f"{_label(stem, key)} = {_fmt(n)} under profile {results.profile}: "
            f"a t interval needs a whole number of at least 2 {unit}"
        )
    return None if n is None else int(n)


def checks(profile: str, rows: Sequence[Check] | None = None) -> pd.DataFrame:
    """One row per check of ``rows`` (default: the claims table) that applies to ``profile``:
    claim_id, kind, description, chapter, status, ``evidence`` (its sentence and verdict, or what is
    missing), ``values``, ``source`` and, for an interval, ``estimate``, ``se``, ``ci_low``,
    ``ci_high`` (95%), ``effect`` (the paper's on this scale), ``critical`` and ``n_groups`` (NaN
    where there is none)."""
    results, out = Results(profile), []
    for c in CHECKS if rows is None else rows:
        if c.applies_to(profile):
            r = check(c, results)
            out.append(
                {"claim_id": c.claim, "kind": c.kind, "description": c.description, "chapter": c.chapter}
                | {"status": r["status"], "evidence": r["text"], "values": r.get("values", ""), "source": r["source"]}
                | {k: r.get(k, math.nan) for k in _NUMBERS}
            )
    columns = ["claim_id", "kind", "description", "chapter", "status", "evidence", "values", "source", *_NUMBERS]
    return pd.DataFrame(out, columns=columns)


def _unique(texts) -> list[str]:
    return list(dict.fromkeys(texts))


def verdict_of(rows: pd.DataFrame, profile: str) -> tuple[str, str]:
    """(verdict, reason) from one claim's rows of :func:`checks`: not testable when a precondition
    does not hold, not reproduced when a test fails, inconclusive when one is undecided, not
    testable when a test's value is missing, else reproduced. Context never decides."""
    pre, tests = rows[rows["kind"] == "precondition"], rows[rows["kind"] == "test"]
    if tests.empty:
        return NOT_TESTABLE, f"no test is defined for profile {profile}"
    if (pre["status"] != HOLDS).any():
        reasons = [f"precondition not met: {t}" for t in pre.loc[pre["status"].isin([FAILS, UNDECIDED]), "evidence"]]
        return NOT_TESTABLE, "; ".join(_unique(reasons + list(pre.loc[pre["status"] == MISSING, "evidence"])))
    fails, undecided = tests[tests["status"] == FAILS], tests[tests["status"] == UNDECIDED]
    missing = _unique(tests.loc[tests["status"] == MISSING, "evidence"])
    if len(fails):
        return NOT_REPRODUCED, "; ".join(fails["evidence"]) + (
            " (not testable here: " + "; ".join(missing) + ")" if missing else ""
        )
    if len(undecided):
        return INCONCLUSIVE, "; ".join(undecided["evidence"])
    if missing:
        return NOT_TESTABLE, "; ".join(missing)
    return REPRODUCED, f"all {len(tests)} tests hold" + (f" (and {len(pre)} precondition(s))" if len(pre) else "")


_VERDICT_END = re.compile(r": (?:holds|does not hold|too little data to tell)(?= \(|$)")


def without_verdict(text: str) -> str:
    """A check's sentence without its verdict words; the reason in parentheses stays.

    Example:
        >>> without_verdict("tested: the gates pass: does not hold (curve model inert)")
        'tested: the gates pass (curve model inert)'
    """
    text = str(text)
    ends = list(_VERDICT_END.finditer(text))
    return f"{text[: ends[-1].start()]}{text[ends[-1].end() :]}".strip() if ends else text.strip()


def without_asides(text: str) -> str:
    """``text`` without its asides: each outermost parenthesised span after a space (or at the start)
    that holds a word of two or more letters. A formula's brackets stay.

    Example:
        >>> without_asides("L_CD = (1 - 1/T) L_HLM holds (to round-off, see (2)) on KL(p || q) (context)")
        'L_CD = (1 - 1/T) L_HLM holds on KL(p || q)'
    """
    text, out, last, depth, start = str(text), [], 0, 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            start, depth = (i if depth == 0 else start), depth + 1
        elif ch == ")" and depth:
            depth -= 1
            if (
                depth == 0
                and (start == 0 or text[start - 1].isspace())
                and re.search(r"[A-Za-z]{2,}", text[start + 1 : i])
            ):
                out.append(text[last:start].rstrip())
                last = i + 1
    return ("".join(out) + text[last:]).strip()


def _what(description) -> str:
    """A check's description in a few words: its first clause, without asides."""
    return without_asides(str(description or "")).split(": ")[0].strip()


def in_words(rows: pd.DataFrame, verdict: str) -> str:
    """A claim's verdict for a reader, from its rows of :func:`checks`: each check that decided it
    (failed preconditions; failed, undecided or missing tests; else every test) in a few words,
    then its sentence in brackets: ``fails: APD is better than CD [tested: ...]``."""
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
    parts = [
        f"{word}: {_what(r.description)} [{without_verdict(r.evidence)}]"
        if _what(r.description)
        else f"{word}: {without_verdict(r.evidence)}"
        for r in pick.itertuples()
    ]
    return "; ".join(_unique(parts)) or verdict


def preconditions_text(rows: pd.DataFrame) -> str:
    """A claim's preconditions in one line: each one's first clause, status and values."""
    parts = []
    for r in rows[rows["kind"] == "precondition"].itertuples():
        values = str(r.values or "")
        parts.append(f"{_what(r.description)}: {r.status}" + (f" [{values}]" if values else ""))
    return "; ".join(parts) or "none"


def _deciding_interval(rows: pd.DataFrame, verdict: str) -> dict:
    """The interval numbers of the test that decided ``verdict``: the first failed interval test when
    not reproduced, the first undecided one when inconclusive, else the first interval test (NaN: none)."""
    tests = rows[rows["kind"] == "test"]
    deciding = {NOT_REPRODUCED: FAILS, INCONCLUSIVE: UNDECIDED}.get(verdict)
    if deciding is not None and (tests["status"] == deciding).any():
        tests = tests[tests["status"] == deciding]
    tests = tests[tests["ci_low"].notna()]
    return {k: math.nan if tests.empty else float(tests.iloc[0][k]) for k in _NUMBERS}


def judge(profile: str, rows: Sequence[Check] | None = None) -> pd.DataFrame:
    """One row per claim of ``rows`` (default: the claims table): claim_id, claim, verdict, reason,
    in_words, preconditions, their number and how many fail, the deciding interval (estimate, se,
    ci_low, ci_high, effect, critical, n_groups), every check's kind, status and text
    (``evidence``), and how many tests hold, fail, are missing or undecided."""
    rows = CHECKS if rows is None else rows
    detail, out = checks(profile, rows), []
    for cid in dict.fromkeys(c.claim for c in rows):
        mine = detail[detail["claim_id"] == cid]
        verdict, reason = verdict_of(mine, profile)
        tests, pre = mine[mine["kind"] == "test"], mine[mine["kind"] == "precondition"]
        said = "\n".join(f"{k}, {s}: {t}" for k, s, t in zip(mine["kind"], mine["status"], mine["evidence"]))
        counts = (("hold", HOLDS), ("fail", FAILS), ("missing", MISSING), ("undecided", UNDECIDED))
        out.append(
            {"claim_id": cid, "claim": CLAIM_TEXT.get(cid, cid), "verdict": verdict, "reason": reason}
            | {"in_words": in_words(mine, verdict), "preconditions": preconditions_text(mine)}
            | {"n_preconditions": len(pre), "n_preconditions_failed": int((pre["status"] != HOLDS).sum())}
            | _deciding_interval(mine, verdict)
            | {"evidence": said, "n_tests": len(tests)}
            | {f"n_{w}": int((tests["status"] == s).sum()) for w, s in counts}
        )
    return pd.DataFrame(out)


def verdict_counts(verdicts: pd.DataFrame) -> dict[str, int]:
    """``{verdict: number of claims}`` for all four verdicts (zeros included)."""
    counts = verdicts["verdict"].value_counts() if len(verdicts) else pd.Series(dtype=int)
    return {v: int(counts.get(v, 0)) for v in VERDICTS}


def claims_needing(profile: str, rows: Sequence[Check] | None = None) -> dict[str, str]:
    """Per kind of precondition (:data:`PRECONDITION_WORDS`), the claims that read one under
    ``profile``, by short id (``"C3, C4 and C5"``), or ``"no claim"``."""
    found: dict[str, list[str]] = {kind: [] for kind in PRECONDITION_WORDS}
    for c in CHECKS if rows is None else rows:
        if c.kind == "precondition" and c.applies_to(profile) and c.claim.split("_")[0] not in found[c.needs]:
            found[c.needs].append(c.claim.split("_")[0])
    return {kind: listed(ids) if ids else "no claim" for kind, ids in found.items()}


def precondition_words(claim_id: str, description: str) -> str:
    """A failed precondition of the claims table in a few plain words (:data:`PRECONDITION_WORDS`)."""
    needs = {(c.claim, c.description): c.needs for c in CHECKS if c.kind == "precondition"}
    return PRECONDITION_WORDS.get(needs.get((claim_id, description)), "a precondition failed")


def keys_read(stem: str) -> set[str]:
    """The JSON keys (not table cells) the claims table reads from chapter ``stem``: its checks' keys and
    reason keys (not the cluster counts, which are optional: without one an interval is normal)."""
    return {k for c in CHECKS if c.chapter == stem for k in (*c.keys, c.reason) if isinstance(k, str)}


_TABLE = yaml.safe_load(TABLE.read_text())
#: each claim in a few plain words, for the book's first page
PLAIN_NAMES = {cid: c["name"] for cid, c in _TABLE["claims"].items()}
#: what each claim's scaled effect is made of (None or "none: ...": the claim's test has none, and why)
SCALED_EFFECTS = {cid: c["effect"] for cid, c in _TABLE["claims"].items()}
#: the kinds of precondition a row ``needs``, each with its words when it fails
PRECONDITION_WORDS = dict(_TABLE["preconditions"])
CLAIM_TEXT = {c["id"]: c["claim"] for c in paper.claim_texts()}
#: the claims table, one :class:`Check` per row
CHECKS = parse_checks(_TABLE["checks"], {cid.split("_")[0]: cid for cid in _TABLE["claims"]})
