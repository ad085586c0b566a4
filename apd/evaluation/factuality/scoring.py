"""FactualityPrompts scoring (NE_ER, Entail_R) of a sweep, the paper's Table 1 rows and trade-off plot."""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from apd.evaluation.factuality.methods import table6_methods
from apd.evaluation.factuality.ner import SPACY_INSTALL, continuation_units, unit_ne_error
from apd.evaluation.factuality.nli import top_evidence_sentences
from apd.evaluation.factuality.prompts import FactualityPrompt, evidence_coverage
from apd.core.stats import mean_se
from apd.evaluation.factuality.sweeps import flatten, diversity


class FactualityPromptsScorer:
    """Scores continuations of FactualityPrompts: Dist-2 and Rep on every prompt; NE_ER and
    Entail_R on the prompts whose evidence pages are all in ``evidence`` (see the module docstring).

    ner: a spaCy pipeline (:func:`load_ner`) or None; nli: a scorer from :func:`load_nli` or None.
    A measure without its model is NaN and its reason is in ``reasons`` (``"NE_ER"``, ``"Entail_R"``).
    """

    name = "FactualityPrompts"

    def __init__(
        self,
        prompts: Sequence[FactualityPrompt],
        evidence: dict,
        ner=None,
        nli=None,
        reasons: Optional[dict] = None,
        max_sentences: int = 3,
        n_evidence: int = 2,
    ):
        self.prompts = list(prompts)
        self.evidence = evidence
        self.ner, self.nli = ner, nli
        self.covered, self.coverage = evidence_coverage(self.prompts, evidence)
        self.reasons = dict(reasons or {})
        if ner is None:
            self.reasons.setdefault("NE_ER", f"spaCy model not installed ({SPACY_INSTALL})")
            self.reasons.setdefault("Entail_R", "needs the spaCy units too")
        if nli is None:
            self.reasons.setdefault("Entail_R", "no NLI model loaded")
        if not any(self.covered):
            self.reasons.setdefault("NE_ER", "no prompt has its evidence pages available")
            self.reasons.setdefault("Entail_R", "no prompt has its evidence pages available")
        self.max_sentences, self.n_evidence = max_sentences, n_evidence

    def _evidence_text(self, p: FactualityPrompt) -> str:
        return " ".join(self.evidence[t] for t in p.titles)

    def __call__(self, continuations: Sequence[Sequence[str]]) -> dict:
        if len(continuations) != len(self.prompts):
            raise ValueError(f"{len(continuations)} prompts' continuations for {len(self.prompts)} prompts.")
        row = {
            **diversity(flatten(continuations)),
            "NE_ER": float("nan"),
            "NE_ER_se": float("nan"),
            "true_rate": float("nan"),
            "true_rate_se": float("nan"),
            "ne_units": 0,
            "continuations": sum(map(len, continuations)),
            "coverage": self.coverage,
        }
        if self.ner is None or not any(self.covered):
            return row
        ne_ratios, pairs = [], []
        for p, cs, ok in zip(self.prompts, continuations, self.covered):
            if not ok:
                continue
            ev = self._evidence_text(p)
            for c in cs:
                for u in continuation_units(self.ner, c, p.titles, self.max_sentences):
                    ne_ratios.append(unit_ne_error(u, ev))
                    pairs.append((u.sentence, ev))
        row["NE_ER"], row["NE_ER_se"] = mean_se(ne_ratios)
        row["ne_units"] = len(ne_ratios)
        if self.nli is not None and pairs:
            entailed = []
            for claim, ev in pairs:
                premises = top_evidence_sentences(claim, ev, self.n_evidence)
                entailed.append(bool(premises) and bool(self.nli(premises, [claim] * len(premises)).any()))
            rate = float(np.mean(entailed))
            row["true_rate"] = rate
            row["true_rate_se"] = math.sqrt(rate * (1 - rate) / len(entailed))
        return row


def table1_rows(
    results: pd.DataFrame,
    dataset: str,
    family: str,
    ps: Sequence[float] = (0.8, 0.6),
    cd_T: Optional[float] = None,
    apd_T: Optional[float] = None,
    true_metric: str = "Entail_R",
) -> pd.DataFrame:
    """Our Table 1 rows in the regenerated-table convention of :mod:`apd.report.beside` (columns
    ``paper_table, role, family, setting, dataset, metric, value``; values in %): ELM, CD and
    APD with top-p k20 at each p. ``cd_T``/``apd_T`` choose the temperature when a sweep ran
    several at those p. ``true_rate`` is reported under ``true_metric``: ``Entail_R`` where it is
    the entailment ratio (FactualityPrompts), ``"true claims"`` on the world, whose share of true
    claims is another measure and must not stand in the paper's Entail_R column."""
    k20 = results[results["threshold"] == "top-p k20"]
    rows = []
    for role, T in (("elm", None), ("cd", cd_T), ("apd", apd_T)):
        for p in ps:
            sel = k20[(k20["role"] == role) & np.isclose(k20["value"].astype(float), float(p))]
            if T is not None:
                sel = sel[np.isclose(sel["T"].astype(float), float(T))]
            if len(sel) != 1:
                raise ValueError(
                    f"expected one {role} top-p k20 row at p={p:g} (found {len(sel)}); run those "
                    "settings (table1_methods), or pass cd_T/apd_T to pick the temperature."
                )
            r = sel.iloc[0]
            for metric, col in (("NE_ER", "NE_ER"), (true_metric, "true_rate"), ("Dist-2", "Dist-2"), ("Rep", "Rep")):
                rows.append(
                    {
                        "paper_table": 1,
                        "role": role,
                        "family": family,
                        "setting": f"top-p k20, p={p:g}",
                        "dataset": dataset,
                        "metric": metric,
                        "value": 100.0 * float(r[col]),
                        "method": r["label"],
                    }
                )
    return pd.DataFrame(rows)


def row_of(results: pd.DataFrame, method) -> pd.Series:
    """The row of ``method`` (a :class:`apd.evaluation.factuality.methods.Method`) in a scored sweep; a clear
    error when the sweep did not run it."""
    sel = results[results["label"] == method.label]
    if len(sel) != 1:
        raise ValueError(f"the sweep has {len(sel)} rows for {method.label!r}; run that setting in the sweep.")
    return sel.iloc[0]


def _tr(T_r: float) -> str:
    """T_r as the paper prints it: 4.0, 2.5."""
    return f"{float(T_r):.1f}" if float(T_r).is_integer() else f"{float(T_r):g}"


def table6_rows(
    results: pd.DataFrame,
    dataset: str,
    family: str,
    T_r: float = 4.0,
    cd_T: float = 2.0,
    apd_T: float = 1.0,
    p: float = 0.8,
    true_metric: str = "Entail_R",
) -> pd.DataFrame:
    """Our rows of the paper's Table 6, its automatic columns (Dist-2, Rep, NE_ER, Entail_R in %;
    the human Likert columns cannot be regenerated; ``true_metric`` as in :func:`table1_rows`), in the regenerated-table convention of
    :func:`table1_rows`: the settings of :func:`apd.evaluation.factuality.methods.table6_methods`, with the
    ``setting`` strings the paper prints (``T=2, REAL, T_r=4.0``, ...) so that the rows line up
    with the paper's. A setting missing from ``results`` is an error naming it.

    Example:
        >>> from apd.evaluation.factuality.methods import table6_methods
        >>> res = pd.DataFrame([{"label": m.label, "NE_ER": 0.4, "true_rate": 0.05, "Dist-2": 0.45, "Rep": 0.01}
        ...                     for m in table6_methods()])
        >>> rows = table6_rows(res, "pico world", "pico")
        >>> sorted(set(rows["setting"]))[:2], float(rows["value"].iloc[0])
        (['REAL, T_r=4.0', 'T=2, REAL, T_r=4.0'], 45.0)
    """
    settings = [
        f"top-p, p={1.0:.1f}",
        f"T={float(cd_T):g}, top-p k20, p={float(p):g}",
        f"top-p k20, p={float(p):g}",
        f"T={float(cd_T):g}, REAL, T_r={_tr(T_r)}",
        f"REAL, T_r={_tr(T_r)}",
    ]
    by_label = results.set_index("label")
    rows = []
    for m, setting in zip(table6_methods(T_r, cd_T, apd_T, p), settings):
        if m.label not in by_label.index:
            raise ValueError(
                f"no {m.label!r} row for Table 6; run fx.table6_methods({T_r:g}, cd_T={cd_T:g}) in the sweep."
            )
        r = by_label.loc[m.label]
        for metric, col in (("Dist-2", "Dist-2"), ("Rep", "Rep"), ("NE_ER", "NE_ER"), (true_metric, "true_rate")):
            rows.append(
                {
                    "paper_table": 6,
                    "role": m.role,
                    "family": family,
                    "setting": setting,
                    "dataset": dataset,
                    "metric": metric,
                    "value": 100.0 * float(r[col]),
                    "method": m.label,
                }
            )
    return pd.DataFrame(rows)


def plot_tradeoff(
    ax,
    results: pd.DataFrame,
    curves: Sequence[str],
    x: str = "Dist-2",
    y: str = "NE_ER",
    colors: Optional[dict] = None,
    annotate: bool = True,
    linestyles: Optional[dict] = None,
    markers: Optional[dict] = None,
):
    """Draw each curve of ``results`` (rows of :func:`score_sweep`) as a line of its settings in
    the (x, y) plane, in percent, points annotated with their p, T_r (REAL) or T, with a one-standard-error bar
    on y where ``results`` has a ``<y>_se`` column. ``colors``/``linestyles``: per curve (e.g. one
    colour per distribution, dashed for the settings without REAL); ``markers``: per curve (a
    second cue beside the line style, so legend entries of one colour stay apart). Returns ``ax``."""
    colors, linestyles, markers = colors or {}, linestyles or {}, markers or {}
    for c in curves:
        d = results[results["curve"] == c].copy()
        if d.empty:
            continue
        d = d.sort_values(x)
        style = dict(marker=markers.get(c, "o"), lw=1.6, ms=4 if c not in markers else 5, label=c)
        if c in colors:
            style["color"] = colors[c]
        if c in linestyles:
            style["ls"] = linestyles[c]
        (line,) = ax.plot(100 * d[x], 100 * d[y], **style)
        if f"{y}_se" in d:  # one standard error of every point, when the sweep measured it
            ax.errorbar(
                100 * d[x],
                100 * d[y],
                yerr=100 * d[f"{y}_se"].fillna(0.0),
                fmt="none",
                ecolor=line.get_color(),
                elinewidth=0.8,
                capsize=2,
                alpha=0.7,
            )
        if annotate:
            for _, r in d.iterrows():
                knob = (
                    f"p={r['value']:g}"
                    if str(r["threshold"]).startswith("top-p")
                    else f"T_r={r['value']:g}"
                    if r["threshold"] == "REAL"
                    else (f"T={r['T']:g}" if pd.notna(r["T"]) else "")
                )
                if knob:
                    ax.annotate(
                        knob,
                        (100 * r[x], 100 * r[y]),
                        textcoords="offset points",
                        xytext=(3, 3),
                        fontsize=6,
                        color=line.get_color(),
                    )
    ax.set_xlabel(f"{x} (%)")
    ax.set_ylabel(f"{y} (%)")
    return ax


def matched_gap(results: pd.DataFrame, a: str, b: str, x: str = "Dist-2", y: str = "NE_ER") -> dict:
    """Curve ``b``'s ``y`` minus curve ``a``'s at the same ``x``, averaged over the ``x`` range both
    curves span: each curve (rows of :func:`score_sweep` with that ``curve``, at least two points) is
    interpolated linearly between its own points, so every matched ``x`` is bracketed by two points
    of each curve, and the gap is the mean of ``b(x) - a(x)`` over the overlap (trapezoids over every
    point of either curve inside it). Returns ``gap`` (positive: ``a`` has the lower ``y`` at matched
    ``x``, e.g. fewer wrong entities at the same diversity), ``n`` and ``n_outside`` (points of ``a``
    inside and outside the overlap), and the overlap ``lo``, ``hi``; ``gap`` is NaN when the curves'
    ranges do not overlap.

    Example:
        >>> r = pd.DataFrame({"curve": ["A", "A", "B", "B", "B"], "Dist-2": [0.35, 0.9, 0.3, 0.4, 0.5],
        ...                   "NE_ER": [0.45, 0.1, 0.6, 0.5, 0.4]})
        >>> out = matched_gap(r, "A", "B")   # the overlap is [0.35, 0.5]
        >>> round(out["gap"], 4), out["n"], out["n_outside"], out["lo"], out["hi"]
        (0.0727, 1, 1, 0.35, 0.5)
    """
    da = results[results["curve"] == a].dropna(subset=[x, y]).sort_values(x)
    db = results[results["curve"] == b].dropna(subset=[x, y]).sort_values(x)
    none = {"gap": float("nan"), "n": 0, "n_outside": int(len(da)), "lo": float("nan"), "hi": float("nan")}
    if len(da) < 2 or len(db) < 2:
        return none
    xa, ya = da[x].to_numpy(float), da[y].to_numpy(float)
    xb, yb = db[x].to_numpy(float), db[y].to_numpy(float)
    lo, hi = max(xa[0], xb[0]), min(xa[-1], xb[-1])
    if not hi > lo:
        return none
    grid = np.unique(np.concatenate([[lo, hi], xa[(xa > lo) & (xa < hi)], xb[(xb > lo) & (xb < hi)]]))
    gaps = np.interp(grid, xb, yb) - np.interp(grid, xa, ya)
    mean = float(np.sum((gaps[1:] + gaps[:-1]) / 2 * np.diff(grid)) / (hi - lo))
    inside = int(((xa >= lo) & (xa <= hi)).sum())
    return {"gap": round(mean, 12), "n": inside, "n_outside": int(len(xa) - inside), "lo": float(lo), "hi": float(hi)}
