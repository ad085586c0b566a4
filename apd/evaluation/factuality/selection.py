"""Factuality's operating points, chosen on the dev people's world prompts.

The rule (``docs/design-notes.md``, "Factuality's operating points"): CD's amateur temperature T is
the one of the paper's grid whose top-p k20 curve has the lowest mean NE_ER over the Dist-2 range
every candidate curve spans; REAL's T_r is the one whose APD + REAL point lies farthest below
APD + top-p k20's curve at its own Dist-2. APD's T and Table 1's p stay the paper's. ALM''s lambda3
is the one of its tuned values with the lowest dev NE_ER of APD + top-p k20, ties (under half a
percentage point) to the larger lambda3 (:func:`choose_lambda3_by_ne_er`). Scores are
read from a scored sweep (:func:`apd.evaluation.factuality.sweeps.score_sweep`; NE_ER and Dist-2 as
fractions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from apd.amateur.tuning import choose_lambda3
from apd.core.stats import best_knob
from apd.evaluation.factuality import methods as fm

#: CD's amateur temperatures the paper chooses from (its Section 5: "select the best T for CD")
PAPER_CD_T_GRID = (1.0, 1.33, 2.0, 4.0, 10.0)

#: the paper's settings: CD's T on Pythia's Table 1 rows, APD's fixed T, Table 6's REAL decay temperature
PAPER_CD_T = 2.0
PAPER_APD_T = 1.0
PAPER_T_R = 4.0

#: REAL's decay temperatures tried on dev: the sweep's 1, 2, 4 (the paper's 4 among them) and one step past each end
DEV_T_R_GRID = (0.5, 1.0, 2.0, 4.0, 8.0)

#: scores closer than this are a tie (broken toward the paper's setting, then the larger value)
TIE = 1e-12


@dataclass(frozen=True)
class Choice:
    """One operating point chosen on dev: ``value`` (from ``grid``), the paper's ``paper`` value, the
    candidates' scores (``table``, one row each), ``reason`` in words, and ``on_edge`` (the choice is
    an end of its grid)."""

    name: str
    value: float
    paper: float
    grid: tuple
    table: pd.DataFrame
    reason: str
    on_edge: bool

    @property
    def is_paper(self) -> bool:
        """Whether the dev choice is the paper's setting."""
        return bool(np.isclose(self.value, self.paper))


def curve_mean(x: Sequence[float], y: Sequence[float], lo: float, hi: float) -> float:
    """Mean of the curve through points ``(x, y)`` (linear between them, ``x`` any order) over
    ``[lo, hi]``, which must lie inside the curve's ``x`` range.

    Example:
        >>> curve_mean([0.2, 0.4], [0.6, 0.4], 0.2, 0.4)   # the mean of a straight line: its midpoint
        0.5
        >>> round(curve_mean([0.1, 0.3, 0.5], [0.8, 0.4, 0.4], 0.2, 0.4), 6)
        0.45
    """
    order = np.argsort(np.asarray(x, float))
    xs, ys = np.asarray(x, float)[order], np.asarray(y, float)[order]
    if len(xs) < 2 or not (xs[0] <= lo < hi <= xs[-1]):
        raise ValueError(
            f"[{lo}, {hi}] is not inside the curve's x range [{xs[0] if len(xs) else 'none'}, "
            f"{xs[-1] if len(xs) else 'none'}] (a curve needs two points); pass a range both ends of "
            "which the curve reaches."
        )
    grid = np.unique(np.concatenate([[lo, hi], xs[(xs > lo) & (xs < hi)]]))
    vals = np.interp(grid, xs, ys)
    return float(np.sum((vals[1:] + vals[:-1]) / 2 * np.diff(grid)) / (hi - lo))


def dev_methods(
    p_grid: Sequence[float],
    cd_T_grid: Sequence[float] = PAPER_CD_T_GRID,
    T_r_grid: Sequence[float] = DEV_T_R_GRID,
    apd_T: float = PAPER_APD_T,
) -> list[fm.Method]:
    """The dev sweep's settings: CD + top-p k20 at every T and p, APD + top-p k20 at every p, and
    APD + REAL at every T_r (none with an empty ``T_r_grid``).

    Example:
        >>> ms = dev_methods([0.6, 0.8], [1.0, 2.0], [4.0])
        >>> len(ms), ms[0].label, ms[-1].label
        (7, 'CD T=1 + top-p k20 (p=0.6)', 'APD T=1 + REAL (T_r=4)')
    """
    if len(p_grid) < 2:
        raise ValueError(f"a dev curve needs at least two p, got {list(p_grid)}; pass p_grid with two or more.")
    cd = [fm.Method("CD", "top-p k20", float(p), float(T)) for T in cd_T_grid for p in p_grid]
    apd = [fm.Method("APD", "top-p k20", float(p), float(apd_T)) for p in p_grid]
    real = [fm.Method("APD", "REAL", float(t), float(apd_T)) for t in T_r_grid]
    return cd + apd + real


def _pick(scores: dict[float, float], paper: float, lowest: bool) -> float:
    """The best score's key (:func:`apd.core.stats.best_knob`); ties (within :data:`TIE`) go to
    ``paper``, then to the larger key: the keys are ordered so, the paper's first."""
    order = sorted(scores, key=lambda k: (not np.isclose(k, paper), -k))
    value = best_knob(order, [scores[k] for k in order], lowest, tie=TIE)
    return paper if np.isclose(value, paper) else value


def _curve(res: pd.DataFrame, dist: str, T: float, x: str, y: str) -> pd.DataFrame:
    k20 = res[(res["threshold"] == "top-p k20") & (res["role"] == dist.lower())]
    return k20[np.isclose(k20["T"].astype(float), float(T))].dropna(subset=[x, y]).sort_values(x)


def choose_cd_T(
    res: pd.DataFrame,
    grid: Sequence[float] = PAPER_CD_T_GRID,
    paper: float = PAPER_CD_T,
    x: str = "Dist-2",
    y: str = "NE_ER",
) -> Choice:
    """CD's T: the top-p k20 curve (rows of ``res`` with role ``cd`` at that T) with the lowest mean
    ``y`` over the ``x`` range every candidate spans (:func:`curve_mean`). With no shared range, or a
    candidate with fewer than two points, the paper's T is kept and ``reason`` says why.

    Example:
        >>> rows = [{"threshold": "top-p k20", "role": "cd", "T": T, "Dist-2": d, "NE_ER": ne}
        ...         for T, pts in {1.0: [(0.2, 0.5), (0.4, 0.6)], 2.0: [(0.2, 0.6), (0.4, 0.7)]}.items()
        ...         for d, ne in pts]
        >>> c = choose_cd_T(pd.DataFrame(rows), grid=(1.0, 2.0))
        >>> c.value, c.on_edge, c.table["mean NE_ER"].round(3).tolist()
        (1.0, True, [0.55, 0.65])
    """
    grid = tuple(float(t) for t in grid)
    if not grid:
        raise ValueError("grid is empty; pass CD temperatures to choose from, e.g. PAPER_CD_T_GRID.")
    curves = {T: _curve(res, "CD", T, x, y) for T in grid}
    thin = [T for T, c in curves.items() if len(c) < 2]
    rows = [
        {
            "T": T,
            "points": len(c),
            f"{x} from": c[x].min() if len(c) else np.nan,
            f"{x} to": c[x].max() if len(c) else np.nan,
        }
        for T, c in curves.items()
    ]
    table = pd.DataFrame(rows)
    if thin:
        return _kept(
            "CD's T",
            paper,
            grid,
            table,
            f"the curve at T = {', '.join(f'{t:g}' for t in thin)} has fewer than two points",
        )
    lo = max(c[x].min() for c in curves.values())
    hi = min(c[x].max() for c in curves.values())
    if not hi > lo:
        return _kept("CD's T", paper, grid, table, f"the candidates' curves share no {x} range")
    scores = {T: curve_mean(c[x], c[y], lo, hi) for T, c in curves.items()}
    table[f"mean {y}"] = [scores[T] for T in grid]
    value = _pick(scores, float(paper), lowest=True)
    reason = f"lowest mean {y} over {x} {lo:.3f} to {hi:.3f}, the range every candidate curve spans"
    return Choice("CD's T", value, float(paper), grid, table, reason, value in (grid[0], grid[-1]))


def choose_T_r(
    res: pd.DataFrame,
    grid: Sequence[float] = DEV_T_R_GRID,
    paper: float = PAPER_T_R,
    apd_T: float = PAPER_APD_T,
    x: str = "Dist-2",
    y: str = "NE_ER",
) -> Choice:
    """REAL's T_r: the APD + REAL point (row labelled ``APD T=1 + REAL (T_r=...)``) lying farthest below
    APD + top-p k20's curve at its own ``x`` (the curve interpolated between its points). A point
    outside the curve's ``x`` range is not matched and no candidate; with none matched the paper's
    T_r is kept and ``reason`` says why.

    Example:
        >>> rows = [{"threshold": "top-p k20", "role": "apd", "T": 1.0, "label": f"k20 {d}", "Dist-2": d, "NE_ER": ne}
        ...         for d, ne in [(0.2, 0.5), (0.4, 0.7)]]
        >>> rows += [{"threshold": "REAL", "role": "apd", "T": 1.0, "label": f"APD T=1 + REAL (T_r={t:g})",
        ...           "Dist-2": d, "NE_ER": ne} for t, d, ne in [(1.0, 0.3, 0.55), (4.0, 0.3, 0.62), (8.0, 0.5, 0.1)]]
        >>> c = choose_T_r(pd.DataFrame(rows), grid=(1.0, 4.0, 8.0))
        >>> c.value, c.table["matched"].tolist()
        (1.0, [True, True, False])
    """
    grid = tuple(float(t) for t in grid)
    if not grid:
        raise ValueError("grid is empty; pass REAL decay temperatures to choose from, e.g. DEV_T_R_GRID.")
    curve = _curve(res, "APD", apd_T, x, y)
    by_label = res.set_index("label")
    rows = []
    for t in grid:
        lab = fm.Method("APD", "REAL", float(t), float(apd_T)).label
        if lab not in by_label.index:
            raise ValueError(f"the dev sweep has no {lab!r} row; run dev_methods(..., T_r_grid) first.")
        px, py = float(by_label.loc[lab, x]), float(by_label.loc[lab, y])
        matched = len(curve) >= 2 and curve[x].min() <= px <= curve[x].max() and np.isfinite(py)
        on_curve = float(np.interp(px, curve[x], curve[y])) if matched else np.nan
        rows.append(
            {
                "T_r": t,
                x: px,
                y: py,
                f"curve's {y}": on_curve,
                "below": on_curve - py if matched else np.nan,
                "matched": bool(matched),
            }
        )
    table = pd.DataFrame(rows)
    scores = {r["T_r"]: r["below"] for r in rows if r["matched"]}
    if not scores:
        return _kept("REAL's T_r", paper, grid, table, f"no APD + REAL point lies inside APD + top-p k20's {x} range")
    value = _pick(scores, float(paper), lowest=False)
    reason = f"the APD + REAL point farthest below APD + top-p k20's curve at its own {x} ({len(scores)} of {len(grid)} matched)"
    return Choice("REAL's T_r", value, float(paper), grid, table, reason, value in (grid[0], grid[-1]))


def _kept(name: str, paper: float, grid: tuple, table: pd.DataFrame, why: str) -> Choice:
    return Choice(name, float(paper), float(paper), grid, table, f"the paper's value kept: {why}", False)


def fixed_choice(name: str, value: float) -> Choice:
    """A value the profile sets (no dev choice): the value, also standing as its own paper value.

    Example:
        >>> fixed_choice("CD's T", 4.0).reason, fixed_choice("CD's T", 4.0).value
        ('set by the profile', 4.0)
    """
    return Choice(name, float(value), float(value), (float(value),), pd.DataFrame(), "set by the profile", False)


def paper_choice(name: str, paper: float, why: str) -> Choice:
    """The paper's setting where nothing can be chosen on dev (``why``, e.g. no world: no dev people).

    Example:
        >>> paper_choice("CD's T", PAPER_CD_T, "a Hub family has no world").reason
        "the paper's value kept: a Hub family has no world"
    """
    return _kept(name, paper, (float(paper),), pd.DataFrame(), why)


#: ALM''s lambda3 by dev NE_ER (:func:`choose_lambda3_by_ne_er`): NE_ER differences (fractions) below
#: this, half a percentage point, are ties, won by the larger lambda3 (the direction of
#: :func:`apd.amateur.tuning.choose_lambda3`'s KL rule: ALM' nearer the ALM)
LAMBDA3_NE_ER_TIE = 0.005


def choose_lambda3_by_ne_er(rows: pd.DataFrame, tie: float = LAMBDA3_NE_ER_TIE) -> tuple[float, bool]:
    """ALM''s lambda3 with the lowest dev NE_ER among ``rows`` (one per lambda3 tried: columns
    ``lambda3`` and ``ne_er``, a fraction); NE_ER lower than the best by less than ``tie`` is a tie,
    won by the larger lambda3 (:func:`apd.amateur.tuning.choose_lambda3`, the one lambda3 selection,
    without widening: nothing is trained here). A row whose NE_ER is NaN (no entity named) is no candidate. Returns
    ``(lambda3, interior)``: the choice and whether it lies strictly inside the candidates' lambda3.

    Example:
        >>> rows = pd.DataFrame({"lambda3": [0.1, 0.2, 0.8], "ne_er": [0.40, 0.43, 0.452]})
        >>> choose_lambda3_by_ne_er(rows)   # 0.1 is lowest by more than half a point
        (0.1, False)
        >>> choose_lambda3_by_ne_er(rows.assign(ne_er=[0.40, 0.403, 0.41]))   # 0.2 ties 0.1: the larger wins
        (0.2, True)
    """
    if not isinstance(rows, pd.DataFrame) or not {"lambda3", "ne_er"} <= set(rows.columns):
        raise ValueError(
            f"rows must be a DataFrame with columns lambda3 and ne_er, got {type(rows).__name__} "
            f"{list(getattr(rows, 'columns', []))}; pass one row per lambda3 tried."
        )
    if not (np.isfinite(tie) and tie >= 0):
        raise ValueError(f"tie must be a finite NE_ER difference >= 0, got {tie}; e.g. LAMBDA3_NE_ER_TIE = 0.005.")
    lam, ne = rows["lambda3"].astype(float).to_numpy(), rows["ne_er"].astype(float).to_numpy()
    if len(set(lam)) != len(lam) or not np.isfinite(lam).all() or (lam < 0).any():
        raise ValueError(f"lambda3 must be distinct finite values >= 0, got {list(lam)}; pass each value once.")
    ok = np.isfinite(ne)
    if not ok.any():
        raise ValueError("no lambda3 has a dev NE_ER (every continuation named no entity); decode more dev prompts.")
    score = dict(zip(lam[ok].tolist(), ne[ok].tolist()))
    best, _, interior = choose_lambda3(list(score), lambda v: {"score": score[v]}, tie=tie, max_added=0)
    return best, interior
