"""The paper's claims as data, judged against the results the other chapters wrote.

A :class:`Claim` lists :class:`EvidenceSpec` s. Each spec names the chapter (notebook stem) whose
results it reads, the values it reads there, and an explicit comparison between them:

- a plain string is a key of ``results/<profile>/<stem>.json`` (what ``Run.glue`` recorded);
- a :class:`Cell` is a value taken from ``results/<profile>/tables/<table>.csv`` (one cell, or an
  aggregate over the rows that match).

:func:`judge` looks every value up and returns one row per claim with a verdict:

``reproduced``
    every test holds (and every precondition);
``not reproduced``
    the preconditions hold and at least one test does not (the reason also lists any test that
    could not be run);
``not testable here``
    a precondition does not hold (e.g. no question on which obvious blindness could show), or no
    test fails but a value is missing: the chapter did not run under this profile, did not
    produce that key or table, or glued a text such as "n/a" where a number was expected; or
    no test is defined for this profile. The reason names the chapter, the key and the profile.

A check is a ``test`` (decides the verdict), a ``precondition`` (says whether the claim can be
tested here at all) or ``context`` (shown beside the verdict, never changes it: e.g. how linear
the curves are, which Theorem 1 assumes but the paper does not claim).

Nothing is guessed: a missing value never counts for or against a claim, and a comparison shows
the numbers it compared (``curves.r2_median = 0.8033 >= 0.9: does not hold``).

Paper tables beside ours: a chapter that regenerates rows of the paper's Table N saves a tidy CSV
(``Run.save_table``) with at least the columns ``paper_table`` (N), ``role`` (as in
:mod:`apd.reference`: ``elm``, ``cd``, ``apd``, ``apd_on_the_fly``, ``big``), ``dataset``,
``metric`` and ``value``, in the paper's units (optional: ``family``, ``setting``).
:func:`regenerated_rows` finds every such CSV of a profile, and reads the QA chapter's summary
tables through :data:`ADAPTERS`; :func:`paper_beside_ours` puts them next to the paper's numbers.

Only what a chapter's *last* run wrote counts: tables and figures are looked up in its run record
(``results/<profile>/runs/<stem>.json``), so a file left over from an earlier run is never read.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from apd import reference
from apd.results import results_dir

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_TESTABLE = "not testable here"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, NOT_TESTABLE)

#: profiles that run the embedded pico family (world QA with head/torso/tail buckets)
PICO_PROFILES = ("smoke", "default")
#: profiles that run a real Hub family (the paper's datasets)
HUB_PROFILES = ("pythia",)

KINDS = ("test", "precondition", "context")
_AGGREGATES = ("one", "min", "max", "mean", "sum", "count")


# ----------------------------------------------------------------------------------------------
# what a check reads


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
                raise TypeError(f"Cell where must hold (column, value) pairs, got {pair!r}; "
                                "e.g. where=(('T', 1.0), ('bucket', 'all'))")

    def label(self) -> str:
        cond = ", ".join(f"{k}={v!r}" for k, v in self.where)
        inner = f"{self.column!r}" + (f" where {cond}" if cond else "")
        what = f"{self.agg}({inner})" if self.agg != "one" else inner
        return f"{self.table}.csv[{what}]"


class Missing(Exception):
    """A value could not be read; the message says which chapter, key and profile."""


# ----------------------------------------------------------------------------------------------
# comparisons: explicit, and each shows the numbers it compared


@dataclass(frozen=True)
class Outcome:
    holds: bool
    text: str


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

    def __call__(self, labels: Sequence[str], values: Sequence[float]) -> Outcome:
        self.check_arity(len(values))
        holds = bool(self.test(values))
        return Outcome(holds, f"{self.show(labels, values)}: {_verdict_text(holds)}")

    def check_arity(self, n: int) -> None:
        if self.arity is not None and n != self.arity:
            raise ValueError(f"comparison {self.name} needs {self.arity} value(s), got {n}")
        if self.arity is None and n < 2:
            raise ValueError(f"comparison {self.name} needs at least two values, got {n}")


def _pair(symbol: str, margin: float) -> Callable:
    def show(labels, values):
        m = f" {'-' if symbol == '<' else '+'} {_fmt(margin)}" if margin else ""
        return f"{labels[0]} = {_fmt(values[0])} {symbol} {labels[1]} = {_fmt(values[1])}{m}"
    return show


def less_than(margin: float = 0.0) -> Comparison:
    """a < b - margin (two keys)."""
    return Comparison(f"less_than(margin={margin:g})", 2, lambda v: v[0] < v[1] - margin, _pair("<", margin))


def greater_than(margin: float = 0.0) -> Comparison:
    """a > b + margin (two keys)."""
    return Comparison(f"greater_than(margin={margin:g})", 2, lambda v: v[0] > v[1] + margin, _pair(">", margin))


def at_most(limit: float) -> Comparison:
    """a <= limit (one key)."""
    return Comparison(f"at_most({limit:g})", 1, lambda v: v[0] <= limit,
                      lambda l, v: f"{l[0]} = {_fmt(v[0])} <= {_fmt(limit)}")


def at_least(limit: float) -> Comparison:
    """a >= limit (one key)."""
    return Comparison(f"at_least({limit:g})", 1, lambda v: v[0] >= limit,
                      lambda l, v: f"{l[0]} = {_fmt(v[0])} >= {_fmt(limit)}")


def within_relative(tol: float) -> Comparison:
    """|a - b| <= tol * max(|a|, |b|) (two keys; unit-free "similar")."""
    def show(l, v):
        return (f"|{l[0]} - {l[1]}| = |{_fmt(v[0])} - {_fmt(v[1])}| = {_fmt(abs(v[0] - v[1]))} "
                f"<= {tol:g} x {_fmt(max(abs(v[0]), abs(v[1])))}")
    return Comparison(f"within_relative({tol:g})", 2,
                      lambda v: abs(v[0] - v[1]) <= tol * max(abs(v[0]), abs(v[1])), show)


def more_than_z_se(z: float = 2.0) -> Comparison:
    """A mean difference exceeds ``z`` of its standard errors: d > z * se (two keys: d, se)."""
    return Comparison(f"more_than_z_se({z:g})", 2, lambda v: v[0] > z * v[1],
                      lambda l, v: f"{l[0]} = {_fmt(v[0])} > {z:g} x {l[1]} = {z:g} x {_fmt(v[1])}")


def is_largest() -> Comparison:
    """The first value is strictly larger than every other value (two or more keys; a tie does
    not hold: "largest on X" needs X to stand out)."""
    def show(l, v):
        others = ", ".join(f"{a} = {_fmt(b)}" for a, b in zip(l[1:], v[1:]))
        return f"{l[0]} = {_fmt(v[0])} > each of ({others})"
    return Comparison("is_largest", None, lambda v: all(v[0] > x for x in v[1:]), show)


def difference_larger() -> Comparison:
    """(a - b) > (c - d) (four keys), e.g. CD's ppl minus APD's on one dataset against another."""
    def show(l, v):
        return (f"({l[0]} - {l[1]}) = {_fmt(v[0] - v[1])} > ({l[2]} - {l[3]}) = {_fmt(v[2] - v[3])} "
                f"[{_fmt(v[0])}, {_fmt(v[1])}, {_fmt(v[2])}, {_fmt(v[3])}]")
    return Comparison("difference_larger", 4, lambda v: v[0] - v[1] > v[2] - v[3], show)


def non_increasing() -> Comparison:
    """v1 >= v2 >= ... (two or more keys, e.g. a loss as more members are added)."""
    return Comparison("non_increasing", None, lambda v: all(a >= b for a, b in zip(v, v[1:])),
                      lambda l, v: " >= ".join(f"{a} = {_fmt(b)}" for a, b in zip(l, v)))


# ----------------------------------------------------------------------------------------------
# claims


@dataclass(frozen=True)
class EvidenceSpec:
    """One check: read ``keys`` from chapter ``stem`` and apply ``comparison``.

    ``kind``: ``'test'`` (decides the verdict), ``'precondition'`` (whether the claim *can* be
    tested here, e.g. there are questions on which obvious blindness could show; when it does not
    hold the claim is not testable rather than not reproduced) or ``'context'`` (shown, never
    decides). ``profiles``: the profiles this check applies to (None: all)."""

    stem: str
    keys: tuple
    comparison: Comparison
    description: str
    kind: str = "test"
    profiles: tuple[str, ...] | None = None

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
class Claim:
    """One of the paper's claims (``text``) and the checks that test it here."""

    id: str
    text: str
    evidence: tuple = ()
    paper_evidence: str = ""

    def __post_init__(self):
        object.__setattr__(self, "evidence", tuple(self.evidence))


# ----------------------------------------------------------------------------------------------
# looking values up


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
            raise Missing(f"chapter {stem} has not run under profile {self.profile} "
                          f"(no results/{self.profile}/{stem}.json)")
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
                raise Missing(f"table {name}.csv of chapter {stem} cannot be read under profile "
                              f"{self.profile}: {err}") from None
        if self._tables[stem, name] is None:
            raise Missing(f"chapter {stem} did not produce table {name}.csv under profile {self.profile}")
        return self._tables[stem, name]

    def number(self, stem: str, key) -> float:
        """The value of ``key`` (a JSON key or a :class:`Cell`) as a finite float, or Missing."""
        if isinstance(key, Cell):
            return self._cell(stem, key)
        values = self.chapter(stem)
        if key not in values:
            raise Missing(f"chapter {stem} did not produce key {key} under profile {self.profile}")
        return _as_number(values[key], f"chapter {stem} reported {key} = {values[key]!r} under "
                                       f"profile {self.profile}")

    def _cell(self, stem: str, cell: Cell) -> float:
        df = self.table(stem, cell.table)
        where = f"under profile {self.profile}"
        for col in [cell.column, *(k for k, _ in cell.where)]:
            if col not in df.columns:
                raise Missing(f"table {cell.table}.csv of chapter {stem} has no column {col!r} {where} "
                              f"(its columns: {', '.join(map(str, df.columns))})")
        sel = df
        for col, value in cell.where:
            sel = sel[sel[col] == value]
        if cell.agg == "count":
            return float(len(sel))
        rows = "rows where " + ", ".join(f"{k}={v!r}" for k, v in cell.where) if cell.where else "rows"
        if sel.empty:
            raise Missing(f"table {cell.table}.csv of chapter {stem} has no {rows} {where}")
        if cell.agg == "one" and len(sel) != 1:
            raise Missing(f"table {cell.table}.csv of chapter {stem} has {len(sel)} {rows} {where}, "
                          "expected exactly one")
        col = pd.to_numeric(sel[cell.column], errors="coerce")
        if col.isna().any():
            raise Missing(f"table {cell.table}.csv of chapter {stem} has empty or non-numeric "
                          f"{cell.column!r} cells in its {rows} {where}")
        value = float(col.iloc[0]) if cell.agg == "one" else float(getattr(col, cell.agg)())
        return _as_number(value, f"{cell.label()} = {value!r} {where}")


def _as_number(value: Any, context: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Missing(f"{context}, not a number")
    if not math.isfinite(value):
        raise Missing(f"{context}, not a finite number")
    return float(value)


# ----------------------------------------------------------------------------------------------
# judging

HOLDS, FAILS, MISSING = "holds", "does not hold", "missing"


def check(spec: EvidenceSpec, results: Results) -> dict:
    """Run one check: ``{'status': holds | does not hold | missing, 'text': ...}``."""
    try:
        values = [results.number(spec.stem, k) for k in spec.keys]
    except Missing as err:
        return {"status": MISSING, "text": str(err)}
    out = spec.comparison(spec.labels(), values)
    return {"status": HOLDS if out.holds else FAILS, "text": out.text}


def checks(claims: Sequence[Claim], profile: str) -> pd.DataFrame:
    """One row per (claim, applicable check): claim_id, kind (test/precondition/context), description,
    chapter, status (holds / does not hold / missing) and the text with the numbers."""
    results = Results(profile)
    rows = []
    for claim in claims:
        for spec in claim.evidence:
            if not spec.applies_to(profile):
                continue
            c = check(spec, results)
            rows.append({"claim_id": claim.id, "kind": spec.kind,
                         "description": spec.description, "chapter": spec.stem,
                         "status": c["status"], "evidence": c["text"]})
    return pd.DataFrame(rows, columns=["claim_id", "kind", "description", "chapter", "status", "evidence"])


def _unique(texts) -> list[str]:
    return list(dict.fromkeys(texts))


def verdict_of(rows: pd.DataFrame, profile: str) -> tuple[str, str]:
    """(verdict, reason) from one claim's rows of :func:`checks` (see the module docstring).
    Context rows never change the verdict."""
    pre, tests = rows[rows["kind"] == "precondition"], rows[rows["kind"] == "test"]
    if tests.empty:
        return NOT_TESTABLE, f"no test is defined for profile {profile}"
    if (pre["status"] != HOLDS).any():
        reasons = [f"precondition not met: {t}" for t in pre.loc[pre["status"] == FAILS, "evidence"]]
        reasons += list(pre.loc[pre["status"] == MISSING, "evidence"])
        return NOT_TESTABLE, "; ".join(_unique(reasons))
    fails = tests[tests["status"] == FAILS]
    missing = _unique(tests.loc[tests["status"] == MISSING, "evidence"])
    if len(fails):
        reason = "; ".join(fails["evidence"])
        if missing:
            reason += " (not testable here: " + "; ".join(missing) + ")"
        return NOT_REPRODUCED, reason
    if missing:
        return NOT_TESTABLE, "; ".join(missing)
    return REPRODUCED, f"all {len(tests)} tests hold" + (f" (and {len(pre)} precondition(s))" if len(pre) else "")


def judge(claims: Sequence[Claim], profile: str) -> pd.DataFrame:
    """One row per claim: claim_id, claim, verdict, reason, evidence (every check's kind, status
    and text, one per line), n_tests, n_hold, n_fail, n_missing (tests only). Never raises for
    missing results."""
    detail = checks(claims, profile)
    rows = []
    for claim in claims:
        mine = detail[detail["claim_id"] == claim.id]
        verdict, reason = verdict_of(mine, profile)
        tests = mine[mine["kind"] == "test"]
        rows.append({
            "claim_id": claim.id, "claim": claim.text, "verdict": verdict, "reason": reason,
            "evidence": "\n".join(f"{k}, {s}: {t}" for k, s, t in
                                   zip(mine["kind"], mine["status"], mine["evidence"])),
            "n_tests": len(tests), "n_hold": int((tests["status"] == HOLDS).sum()),
            "n_fail": int((tests["status"] == FAILS).sum()),
            "n_missing": int((tests["status"] == MISSING).sum()),
        })
    return pd.DataFrame(rows)


def verdict_counts(verdicts: pd.DataFrame) -> dict[str, int]:
    """``{verdict: number of claims}`` for all three verdicts (zeros included)."""
    counts = verdicts["verdict"].value_counts() if len(verdicts) else pd.Series(dtype=int)
    return {v: int(counts.get(v, 0)) for v in VERDICTS}


_KIND_ORDER = {"precondition": 0, "test": 1, "context": 2}


def _md_text(text: str) -> str:
    """Plain text safe inside Markdown (no emphasis, links or math from *, _, [, $, |, <)."""
    for ch in "\\`*_[]$|<>#":
        text = text.replace(ch, "\\" + ch)
    return text


def claims_markdown(judged: pd.DataFrame, detail: pd.DataFrame) -> str:
    """The verdicts as Markdown: per claim, its id, verdict and text, then every check
    (preconditions, tests, context; its status, what it tests, the numbers), from :func:`judge`
    and :func:`checks`."""
    out = []
    for _, c in judged.iterrows():
        out.append(f"**{_md_text(c['claim_id'])}: {c['verdict']}.** {_md_text(c['claim'])}\n")
        mine = detail[detail["claim_id"] == c["claim_id"]]
        mine = mine.iloc[sorted(range(len(mine)), key=lambda i: _KIND_ORDER[mine["kind"].iloc[i]])]
        if mine.empty:
            out.append(f"- {_md_text(c['reason'])}\n")
        for _, r in mine.iterrows():
            out.append(f"- *{r['kind']}, {r['status']}*: {_md_text(r['description'])}. "
                       f"{_md_text(r['evidence'])}")
        out.append("")
    return "\n".join(out)


# ----------------------------------------------------------------------------------------------
# the paper's claims, wired to the chapters' results

_CLAIM_TEXT = {c["id"]: c for c in reference.paper_claims()}
_HLM_TABLE = "curves_hlm_vs_real"


#: tables of other chapters that the checks read (names as the chapters save them)
ABLATIONS_TABLE = "ablations"                   # one row per run: APD, each variant, CD, ELM
QA_WORLD_GAIN_TABLE = "qa_world_gain_by_bucket"  # APD's gain over CD per frequency bucket (pico)
QA_DATASETS_TABLE = "qa_datasets_summary"        # the paper's QA datasets, long format (Hub families)


def _ablation(name: str, column: str) -> Cell:
    return Cell(ABLATIONS_TABLE, column, (("name", name),))


def _bucket(bucket: str, column: str = "ppl: CD - APD") -> Cell:
    return Cell(QA_WORLD_GAIN_TABLE, column, (("bucket", bucket),))


def _qa(method: str, dataset: str | None = None, metric: str = "ppl", protocol: str = "held-out") -> Cell:
    """A method's mean on one dataset (or, dataset None, the mean over every dataset run)."""
    where = (("protocol", protocol), ("metric", metric), ("method", method), ("group", "all"))
    if dataset is None:
        return Cell(QA_DATASETS_TABLE, "value", where, agg="mean")
    return Cell(QA_DATASETS_TABLE, "value", (("dataset", dataset), *where))


def _claim(id: str, evidence: list[EvidenceSpec]) -> Claim:
    c = _CLAIM_TEXT[id]
    return Claim(id, c["claim"], tuple(evidence), c["evidence"])


def paper_claims() -> list[Claim]:
    """The paper's seven main claims (:func:`apd.reference.paper_claims`) with their checks.

    Thresholds are stated in each description. "Better" means: lower perplexity, lower NE_ER,
    higher true-claim rate, lower KL to the true next-token distribution. Where the chapters
    give a standard error or a p-value, a test asks for the difference to exceed the noise
    (2 standard errors, p <= 0.05), as the paper's own significance marks do."""
    E = EvidenceSpec
    return [
        _claim("C1_cd_extrapolates", [
            E("theorem1", "max_abs_error", at_most(1e-9),
              "Theorem 1's identity L_CD = (1 - 1/T) L_HLM holds to round-off on exactly linear families"),
            E("curves", "r2_median", at_least(0.9),
              "the theorem's premise: how well a line in log size explains the members' "
              "log-probabilities (median R^2 over the expert's top tokens; 0.9 = mostly linear)",
              kind="context"),
            E("apd", ("kl_cd", "kl_elm"), less_than(),
              "CD's answer distribution is closer (KL) to the world's truth than the expert's alone",
              kind="context", profiles=PICO_PROFILES),
            E("curves", "hlm_n_T", at_least(1),
              "CD's hypothetical LM falls inside the family for at least one T", kind="precondition"),
            E("curves", (Cell(_HLM_TABLE, "KL(real || CD-HLM), full vocab", agg="mean"),
                         Cell(_HLM_TABLE, "KL(real || ELM), full vocab", agg="mean")), less_than(),
              "its consequence: CD's implied HLM is closer (KL, mean over the T tried) to the real "
              "member of that size than the expert is"),
        ]),
        _claim("C2_obvious_blindness", [
            E("curves", "all_blind_both_right", at_least(1),
              "some contexts (questions or held-out text) have the right token ranked first by both "
              "the expert and the amateur", kind="precondition"),
            E("curves", "all_blind_count", at_least(1),
              "CD ranks another token first on at least one of them (T = the first of blind_T_grid)"),
            E("curves", ("all_blind_apd_rate", "all_blind_cd1_rate"), less_than(),
              "APD at T = 1 is obviously blind on a smaller share of those contexts than CD at T = 1 "
              "(Figure 1: APD keeps the obvious answer first)"),
            E("curves", "blind_both_right", at_least(0),
              "of which questions (the paper's setting) answered right by both", kind="context"),
        ]),
        _claim("C3_apd_more_factual", [
            E("factuality", ("ne_er_apd", "ne_er_cd"), less_than(),
              "APD's named-entity error rate is lower than CD's (top-p k20, the first p of Table 1)"),
            E("factuality", "ne_er_z_world", at_least(2.0),
              "significantly: CD's NE_ER minus APD's is at least 2 standard errors (world prompts)",
              profiles=PICO_PROFILES),
            E("factuality", ("true_rate_apd", "true_rate_cd"), greater_than(),
              "APD's share of true claims (Entail_R on FactualityPrompts) is higher than CD's"),
            E("factuality", ("dist2_apd", "dist2_cd"), within_relative(0.1),
              "at similar diversity: Dist-2 within 10% (relative) of CD's"),
        ]),
        _claim("C4_apd_better_qa_easy", [
            # pico: the world's questions, test half, 1/T picked on the dev half
            E("qa", ("world_ho_ppl_apd", "world_ho_ppl_cd"), less_than(),
              "APD's QA ppl (nats) on the world's test questions is lower than CD's (1/T picked on "
              "the dev half)", profiles=PICO_PROFILES),
            E("qa", "world_ho_ppl_p", at_most(0.05),
              "significantly: paired t-test of APD's against CD's ppl, p <= 0.05", profiles=PICO_PROFILES),
            E("qa", (_bucket("head"), _bucket("torso"), _bucket("tail")), is_largest(),
              "the gain (CD ppl - APD ppl) is largest on the easiest questions: head people, the most "
              "mentioned in pretraining", profiles=PICO_PROFILES),
            E("qa", (_bucket("head", "ELM acc"), _bucket("torso", "ELM acc"), _bucket("tail", "ELM acc")),
              is_largest(), "head questions are also the ones the expert alone answers best",
              kind="context", profiles=PICO_PROFILES),
            E("qa", ("world_pp_ppl_apd", "world_pp_ppl_cd"), less_than(),
              "with the paper's protocol (1/T picked on the test questions themselves)",
              kind="context", profiles=PICO_PROFILES),
            # Hub families: the paper's datasets
            E("qa", (_qa("apd"), _qa("cd")), less_than(),
              "APD's ppl, averaged over the QA datasets run, is lower than CD's (held-out 1/T)",
              profiles=HUB_PROFILES),
            E("qa", (_qa("cd", "QASC (Q+Fact)"), _qa("apd", "QASC (Q+Fact)"),
                     _qa("cd", "QASC (Q only)"), _qa("apd", "QASC (Q only)")), difference_larger(),
              "the gain (CD ppl - APD ppl) is larger on QASC with the facts (easier) than with the "
              "question only", profiles=HUB_PROFILES),
        ]),
        _claim("C5_on_the_fly_worse", [
            E("apd", ("kl_apdbest", "kl_fly"), less_than(),
              "APD is closer (KL, nats) to the world's true answer distribution than APD on the fly "
              "(test questions; 1/T and the on-the-fly weight picked on the dev questions)",
              profiles=PICO_PROFILES),
            E("apd", ("text_apdbest", "text_fly"), less_than(),
              "on held-out text, APD's -log(p + 0.01) of the next token is lower than APD on the fly's",
              profiles=HUB_PROFILES),
            E("apd", ("text_apdbest", "text_fly"), less_than(),
              "the same on held-out text (-log(p + 0.01) of the next token)",
              kind="context", profiles=PICO_PROFILES),
        ]),
        _claim("C6_more_midsize_members_help", [
            E("ablations", (_ablation("alm+elm", "kl_diff"), _ablation("alm+elm", "kl_diff_se")), more_than_z_se(2.0),
              "APD trained on the amateur and expert only is worse than APD on every member: its KL "
              "to the truth is higher by more than 2 standard errors (paired over questions)"),
            E("ablations", ("midsize_ends_only", "midsize_cd"), less_than(),
              "APD on the amateur and expert only still beats CD (lower KL to the truth)"),
        ]),
        _claim("C7_probability_space_and_flip", [
            E("ablations", (_ablation("logit", "kl_diff"), _ablation("logit", "kl_diff_se")), more_than_z_se(2.0),
              "APD logit (curves on log-probabilities) is worse than APD: KL to the truth higher by "
              "more than 2 standard errors"),
            E("ablations", (_ablation("no-flip", "kl_diff"), _ablation("no-flip", "kl_diff_se")), more_than_z_se(2.0),
              "APD no rev (no flip) is worse than APD: KL to the truth higher by more than 2 standard errors"),
        ]),
    ]


# ----------------------------------------------------------------------------------------------
# the paper's tables and figures, and where this book regenerates them


@dataclass(frozen=True)
class PaperItem:
    """A table or figure of the paper: where this book makes its counterpart (``stem``, and the
    ``artefacts``: figure or table names under results/<profile>/, any of which counts), or
    ``never`` = why it cannot. ``needs``: what producing it takes; ``caveat``: how ours differs."""

    label: str
    name: str
    shows: str
    stem: str | None = None
    artefacts: tuple[str, ...] = ()
    needs: str = ""
    never: str = ""
    caveat: str = ""


PAPER_TABLES = [
    PaperItem("tb:gen_both", "Table 1", "FactualityPrompts, top-p k20: NE_ER, Entail_R, Dist-2, Rep",
              "factuality", needs="the paper's rows need FactualityPrompts, its Wikipedia evidence and "
              "Pythia-6.9B on a GPU (profile pythia); the pico profiles score generations on the "
              "synthetic world instead"),
    PaperItem("tb:QA_ppl_pythia", "Table 2", "one-shot QA ppl and accuracy, Pythia", "qa",
              needs="the paper's rows need Pythia 70M-12B weights and a GPU (profile pythia); the "
              "pico profiles ask the world's questions instead"),
    PaperItem("tb:QA_ppl_opt", "Table 3", "one-shot QA ppl and accuracy, OPT and Qwen1.5", "qa",
              needs="the paper's rows need OPT 125M-13B and Qwen1.5 0.5B-7B weights and a GPU "
              "(the pythia profile runs Pythia only)"),
    PaperItem("tb:MRC_both", "Table 4", "reading comprehension ppl (MultiRC, SQuAD)", "qa",
              needs="the paper's rows need Pythia, OPT and Qwen1.5 weights and a GPU (profile "
              "pythia for Pythia's)"),
    PaperItem("tb:QA_mrr_both", "Table 5", "MRR on nine QA settings", "qa",
              needs="the paper's rows need Pythia, OPT and Qwen1.5 weights and a GPU (profile "
              "pythia for Pythia's)"),
    PaperItem("tb:human_abs_scores", "Table 6", "human evaluation (MTurk) of FactualityPrompts",
              never="its Likert scores come from MTurk workers (150 prompts, 2 workers each); "
              "no build can regenerate them. Its automatic columns repeat Table 1's setup."),
    PaperItem("tb:creative_writing", "Table 7", "ROC story writing, GPT-3.5 Turbo win rates",
              never="its win rates are judged by GPT-3.5 Turbo (a network service) and its automatic "
              "metrics need ROCStories, MAUVE and sBERT, none of which this offline build has"),
]

PAPER_FIGURES = [
    PaperItem("fig:first_fig", "Figure 1", "obvious blindness: CD ranks a rare answer above the obvious one",
              "curves", ("curves_obvious_blindness_example",),
              needs="an obviously blind question: the chapter draws one when it finds one"),
    PaperItem("fig:theory", "Figure 2", "the proof picture of Theorem 1", "theorem1",
              ("theorem1_proof_picture",)),
    PaperItem("fig:APD", "Figure 3", "diagram of fine-tuning ALM'",
              never="a schematic drawing with no data behind it"),
    PaperItem("fig:comp_div_NE_gen", "Figure 4 (a, c)", "FactualityPrompts: NE_ER against Dist-2, "
              "APD vs CD vs top-p, CD's temperature", "factuality",
              ("factuality_world_tradeoffs", "factuality_fp_tradeoffs"),
              needs="the paper's own prompts need Pythia-6.9B on a GPU (profile pythia)"),
    PaperItem("fig:div_ne_cd", "Figure 4 (b, h)", "with REAL sampling",
              never="REAL sampling needs its own trained threshold model, which is not available offline"),
    PaperItem("fig:div_ne_term_ablation", "Figure 4 (d, e, f)", "loss-term, mid-size-member and other "
              "ablations (APD logit, APD no rev, half data)", "ablations",
              ("ablations_loss", "ablations_members", "ablations_other"),
              needs="the ablations it runs (this book measures them by KL to the world's truth, "
              "not by FactualityPrompts)"),
    PaperItem("fig:div_ne_opt", "Figure 4 (g, i)", "the same with OPT",
              never="needs OPT 125M-6.7B weights on a GPU; the book's profiles run pico and Pythia only"),
    PaperItem("fig:vis", "Figure 5 (CD)", "probability curves across sizes with CD's predictions",
              "curves", ("curves_prompt",)),
    PaperItem("fig:vis", "Figure 5 (APD)", "probability curves across sizes with APD's predicted curve "
              "and asymptote", "apd", ("apd_fitted_curves",),
              needs="a question (or position) whose gold token is in the expert's top 20"),
    PaperItem("fig:func_ablation", "Figure 6 (e)", "decay functions: exponential, logistic, "
              "fractional polynomials", "ablations", ("ablations_decay",),
              needs="the decay ablations (logistic, poly1, poly3)"),
    PaperItem("fig:comp_agg_gen", "Figure 6 (other panels)", "REAL's aggregate factuality against "
              "aggregate diversity for every method, DoLa, OPT and Qwen1.5",
              never="this book plots NE_ER and the true-claim rate, not REAL's aggregate metrics; the "
              "OPT and Qwen1.5 panels need their weights on a GPU"),
    PaperItem("fig:comp_ne_dist_factual", "Figures 7-8", "NE_ER against Dist-2 on factual and on "
              "nonfactual prompts", "factuality", ("factuality_world_tradeoffs", "factuality_fp_tradeoffs"),
              needs="the paper's own prompts need Pythia-6.9B on a GPU (profile pythia)"),
    PaperItem("fig:comp_ent_rep_factual", "Figures 9-10", "Entail_R against Rep on factual and on "
              "nonfactual prompts", "factuality", ("factuality_world_tradeoffs", "factuality_fp_tradeoffs"),
              needs="the paper's own prompts need Pythia-6.9B on a GPU (profile pythia)"),
]


def last_run_outputs(profile: str, stem: str) -> dict[str, set]:
    """``{'figures': {...}, 'tables': {...}}`` that chapter ``stem``'s last run under ``profile``
    wrote (from its run record ``results/<profile>/runs/<stem>.json``; empty sets when there is
    none). Files in ``figures/`` or ``tables/`` that the last run did not write are stale."""
    path = results_dir(profile) / "runs" / f"{stem}.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        record = {}
    return {"figures": set(record.get("figures") or ()), "tables": set(record.get("tables") or ())}


def _artefact_exists(profile: str, stem: str, name: str) -> bool:
    d, out = results_dir(profile), last_run_outputs(profile, stem)
    return ((name in out["figures"] and (d / "figures" / f"{name}.png").is_file())
            or (name in out["tables"] and (d / "tables" / f"{name}.csv").is_file()))


def _chapter_ran(profile: str, stem: str) -> bool:
    return (results_dir(profile) / f"{stem}.json").is_file()


def figure_status(profile: str, figures: Sequence[PaperItem] = tuple(PAPER_FIGURES)) -> pd.DataFrame:
    """One row per paper figure: paper, shows, status, ours (what/where, or why not)."""
    rows = []
    for item in figures:
        if item.never:
            status, ours = "cannot be regenerated", item.never
        elif not _chapter_ran(profile, item.stem):
            status = "not produced here"
            ours = f"chapter {item.stem} has not run under profile {profile}"
            ours += f"; {item.needs}" if item.needs else ""
        elif item.artefacts:
            found = [a for a in item.artefacts if _artefact_exists(profile, item.stem, a)]
            if found:
                status, ours = "regenerated", f"chapter {item.stem}: figure {', '.join(found)}"
                rest = [a for a in item.artefacts if a not in found]
                if rest:
                    ours += f" (not drawn under this profile: {', '.join(rest)})"
                if item.caveat:
                    ours += f"; {item.caveat}"
            else:
                status = "not produced here"
                ours = (f"chapter {item.stem} did not produce {', '.join(item.artefacts)} under "
                        f"profile {profile}" + (f"; it needs {item.needs}" if item.needs else ""))
        else:
            status, ours = "regenerated", f"chapter {item.stem} (its figures under profile {profile})"
        rows.append({"paper": item.name, "shows": item.shows, "status": status, "ours": ours})
    return pd.DataFrame(rows)


REGENERATED_COLUMNS = ("paper_table", "role", "dataset", "metric", "value")


def _run_parameters(profile: str, stem: str) -> dict:
    try:
        return json.loads((results_dir(profile) / "runs" / f"{stem}.json").read_text()).get("parameters") or {}
    except (OSError, ValueError):
        return {}


_QA_ROLES = {"elm": "elm", "cd": "cd", "apd": "apd", "ref": "big"}   # apd.evaluate's method names
_MRC = {"MultiRC", "SQuAD (Q+P)", "SQuAD (Q only)"}


def _qa_table_number(dataset: str, metric: str, family: str) -> int:
    if metric == "MRR":
        return 5
    if dataset in _MRC:
        return 4
    return 3 if str(family).lower() in ("opt", "qwen1.5", "qwen") else 2


def qa_summary_rows(df: pd.DataFrame, family: str, world: bool = False) -> pd.DataFrame:
    """The QA chapter's long summary (``apd.evaluate.summary``: dataset, protocol, metric,
    method, group, value, n) as regenerated rows of Tables 2-5: the paper's protocol, roles of
    :mod:`apd.reference`, ``|D|`` from the ELM's MRR counts. ``world``: the pico world's
    questions, one dataset per frequency bucket ("world QA (head)", ...), as counterpart rows."""
    need = {"dataset", "protocol", "metric", "method", "group", "value"}
    cols = [*REGENERATED_COLUMNS, "family", "setting"]
    if not need <= set(df.columns):
        return pd.DataFrame(columns=cols)
    d = df[(df["protocol"] == "paper") & df["method"].isin(list(_QA_ROLES))]
    if not world:
        d = d[d["group"] == "all"]
    dataset = ("world QA (" + d["group"].astype(str) + ")") if world else d["dataset"].astype(str)
    out = pd.DataFrame({"role": d["method"].map(_QA_ROLES), "dataset": dataset, "metric": d["metric"],
                        "value": d["value"]})
    if "n" in d:
        size = d[(d["method"] == "elm") & (d["metric"] == "MRR")]
        out = pd.concat([out, pd.DataFrame({
            "role": "dataset_size", "dataset": dataset[size.index], "metric": "|D|", "value": size["n"]})])
    out["paper_table"] = [_qa_table_number(ds, m if m != "|D|" else "MRR", family)
                          for ds, m in zip(out["dataset"], out["metric"])]
    out["family"], out["setting"] = family, None
    return out[cols].reset_index(drop=True)


def qa_gap_rows(df: pd.DataFrame, family: str) -> pd.DataFrame:
    """The QA chapter's gap rows (``apd.evaluate.gap_rows``, fractions) as Table 2's
    ``APD vs CD`` / ``APD vs LLM`` rows in percent (the paper's unit); Table 2 only (Pythia)."""
    cols = [*REGENERATED_COLUMNS, "family", "setting"]
    need = {"dataset", "protocol", "metric", "group", "row", "value"}
    if not need <= set(df.columns) or str(family).lower() != "pythia":
        return pd.DataFrame(columns=cols)
    d = df[(df["protocol"] == "paper") & (df["group"] == "all") & df["metric"].isin(["ppl", "acc"])]
    d = d[d["row"].isin(["APD vs CD", "APD vs LLM"])]
    out = pd.DataFrame({"paper_table": 2, "role": d["row"].map({"APD vs CD": "gap_apd_vs_cd",
                                                                 "APD vs LLM": "gap_apd_vs_elm"}),
                        "dataset": d["dataset"], "metric": d["metric"], "value": 100.0 * d["value"],
                        "family": family, "setting": None})
    return out[cols].reset_index(drop=True)


#: tables of other chapters that do not follow the convention, and how to read them as rows of
#: the paper's tables: table name -> f(frame, family) -> regenerated rows
ADAPTERS = {
    "qa_datasets_summary": lambda df, fam: qa_summary_rows(df, fam),
    "qa_world_summary": lambda df, fam: qa_summary_rows(df, fam, world=True),
    "qa_datasets_gaps": qa_gap_rows,
}


def regenerated_rows(profile: str) -> pd.DataFrame:
    """Every row of every CSV that a chapter's last run under ``profile`` wrote (its run record
    lists it) and that follows the regenerated-table convention (columns ``paper_table, role,
    dataset, metric, value``; see the module docstring), plus the rows :data:`ADAPTERS` read
    from known tables of other layouts; a ``source`` column names the CSV."""
    frames = []
    d = results_dir(profile)
    runs = sorted((d / "runs").glob("*.json")) if (d / "runs").is_dir() else []
    for record in runs:
        family = _run_parameters(profile, record.stem).get("family", "")
        for name in sorted(last_run_outputs(profile, record.stem)["tables"]):
            path = d / "tables" / f"{name}.csv"
            try:
                df = pd.read_csv(path)
            except (OSError, pd.errors.EmptyDataError, pd.errors.ParserError):
                continue
            if set(REGENERATED_COLUMNS) <= set(df.columns):
                frames.append(df.assign(source=name))
            elif name in ADAPTERS:
                rows = ADAPTERS[name](df, family)
                if len(rows):
                    frames.append(rows.assign(source=name))
    cols = [*REGENERATED_COLUMNS, "family", "setting", "source"]
    if not frames:
        return pd.DataFrame(columns=cols)
    out = pd.concat(frames, ignore_index=True)
    for c in ("family", "setting"):
        if c not in out:
            out[c] = None
    out["paper_table"] = pd.to_numeric(out["paper_table"], errors="coerce")
    out["value"] = pd.to_numeric(out["value"], errors="coerce")
    return out[cols]


ROLE_NAMES = {  # row labels of the side-by-side tables, in display order
    "elm": "ELM alone (LLM 6.9B / 6.7B / 4B)",
    "cd": "CD",
    "apd": "APD",
    "apd_on_the_fly": "APD on the fly",
    "big": "larger LLM (12B / 13B / 7B)",
    "gap_apd_vs_cd": "APD vs CD (% of the size gap)",
    "gap_apd_vs_elm": "APD vs ELM (% of the size gap)",
    "dataset_size": "|D| (questions kept)",
}


def _row_label(role: str, setting) -> str:
    name = ROLE_NAMES.get(role, str(role))
    blank = setting is None or (isinstance(setting, float) and math.isnan(setting)) or setting == ""
    return name if blank else f"{name}, {setting}"


@dataclass
class Beside:
    """The paper's Table N, with ours beside it where this profile has rows: ``frame`` (rows:
    methods; columns: (dataset, metric, source), source ``paper: <family>`` or ``ours``) and
    ``note`` (what ours are, or why there are none)."""

    number: int
    frame: pd.DataFrame
    note: str
    has_ours: bool = False
    same_datasets: tuple[str, ...] = ()


def paper_beside_ours(number: int, profile: str, family: str | None = None,
                      items: Sequence[PaperItem] = tuple(PAPER_TABLES)) -> Beside:
    """The paper's Table ``number`` (one ``family``, or all when None or when the table does not
    have that family) with the rows this profile regenerated for it (see
    :func:`regenerated_rows`) beside it; rows are aligned on role (and setting)."""
    if not 1 <= number <= len(items):
        raise ValueError(f"the paper has tables 1-{len(items)}, got {number!r}")
    item = items[number - 1]
    paper = reference.table(number)
    if family is not None and family in set(paper["family"]):
        paper = paper[paper["family"] == family]
    ours = regenerated_rows(profile)
    ours = ours[ours["paper_table"] == number]
    same = tuple(sorted(set(paper["dataset"]) & set(ours["dataset"].astype(str))))
    parts = [paper.assign(source="paper: " + paper["family"])]
    if not ours.empty:
        parts.append(ours.assign(source="ours"))
    long = pd.concat([p[["role", "setting", "source", "dataset", "metric", "value"]] for p in parts],
                     ignore_index=True)
    long["row"] = [_row_label(r, s) for r, s in zip(long["role"], long["setting"])]
    size_rows = long["role"] == "dataset_size"
    others = set(long.loc[~size_rows, "metric"])
    if size_rows.any() and len(others) == 1:  # Table 5: print |D| under each dataset's MRR column
        long.loc[size_rows, "metric"] = others.pop()
    wide = long.pivot_table(index="row", columns=["dataset", "metric", "source"], values="value",
                            aggfunc="first", sort=False)
    rank = {r: i for i, r in enumerate(ROLE_NAMES)}
    role_of = dict(zip(long["row"], long["role"]))
    order = sorted(wide.index, key=lambda r: (rank.get(role_of[r], len(rank)), list(long["row"]).index(r)))
    first = {level: {v: i for i, v in enumerate(dict.fromkeys(long[level]))} for level in ("dataset", "metric", "source")}
    columns = sorted(wide.columns, key=lambda c: (first["dataset"][c[0]], first["metric"][c[1]], first["source"][c[2]]))
    wide = wide.loc[order, columns]  # the paper's number and ours side by side, dataset by dataset
    wide.index.name = None
    if item.never:
        note = f"{item.name} cannot be regenerated: {item.never}"
    elif ours.empty:
        ran = _chapter_ran(profile, item.stem)
        why = (f"chapter {item.stem} wrote no rows for {item.name} under profile {profile}" if ran
               else f"chapter {item.stem} has not run under profile {profile}")
        note = f"{item.name}, the paper's numbers only: {why}; {item.needs}"
    elif same:
        fams = ", ".join(sorted(set(ours["family"].dropna().astype(str)))) or "unnamed"
        note = (f"{item.name}: the paper's rows beside ours (family {fams}) on the same datasets "
                f"({', '.join(same)})")
    else:
        note = (f"{item.name}: no dataset in common; our rows "
                f"({', '.join(sorted(set(ours['dataset'].astype(str))))}) are this profile's "
                "counterpart: compare the order of the methods, not the values")
    return Beside(number, wide, note, not ours.empty, same)


def table_status(profile: str, items: Sequence[PaperItem] = tuple(PAPER_TABLES)) -> pd.DataFrame:
    """One row per paper table: paper, shows, status (same rows / counterpart rows / not produced
    here / cannot be regenerated), ours (rows found, or why none)."""
    ours = regenerated_rows(profile)
    rows = []
    for number, item in enumerate(items, start=1):
        mine = ours[ours["paper_table"] == number]
        if item.never:
            status, text = "cannot be regenerated", item.never
        elif mine.empty:
            ran = _chapter_ran(profile, item.stem)
            status = "not produced here"
            text = (f"chapter {item.stem} wrote no rows for it under profile {profile}" if ran
                    else f"chapter {item.stem} has not run under profile {profile}") + f"; {item.needs}"
        else:
            same = set(reference.table(number)["dataset"]) & set(mine["dataset"].astype(str))
            status = "same rows" if same else "counterpart rows"
            fams = ", ".join(sorted(set(mine["family"].dropna().astype(str)))) or "unnamed"
            text = f"{len(mine)} numbers (family {fams}) in {', '.join(sorted(set(mine['source'])))}"
        rows.append({"paper": item.name, "shows": item.shows, "status": status, "ours": text})
    return pd.DataFrame(rows)
