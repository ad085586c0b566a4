"""The known-answer chapter's summaries, tables and figure (``notebooks/known_answer.ipynb``).

Errors are median ``|c_hat - c_true|`` in probability units; a *ratio* is an estimator's error
over the expert's own probability's (``p_ELM``) on the same tokens. The estimators and the
synthetic families are :mod:`apd.evaluation.known_answer`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from apd.chapters.apd import ApdHeadline
from apd.evaluation.known_answer import LABELS
from apd.evaluation.noise import IN_SAMPLE, family_noise
from apd.report.plots import COLORS, PALETTE, figure, legend

#: An estimator "beats p_ELM" in a cell of the recovery table when its median error is below this
#: share of p_ELM's on the same tokens (at least 5% lower).
BEAT = 0.95
#: Rows that are references, not estimators: the expert's own probability and the true asymptote.
REFERENCES = ("p_elm", "oracle")


@dataclass(frozen=True)
class KnownAnswerHeadline:
    """The chapter's headline numbers, as ``results/<profile>/known_answer.json`` holds them."""

    ka_n_beating: int  # recovery cells (grid x regime) where some estimator beats p_ELM by 5%
    ka_n_cells: int  # recovery cells
    ka_n_beating_family: int  # condition cells (decay x grid x regime) beaten beyond seed noise
    ka_n_cells_family: int  # condition cells
    ka_family_noise: float  # noise sd of the condition's families (probability units)
    ka_condition_n_seeds: int  # synthetic families (seeds) per condition cell


def recovery_summary(table: pd.DataFrame, beat: float = BEAT) -> dict[str, Any]:
    """The recovery table's glued values (``value`` or ``(value, fmt)``, see
    :func:`apd.chapters.gluing.glue_values`): the cells beaten, the best estimator, and the
    ratio ranges of the joint objective and the fitter.

    ``table``: :func:`apd.evaluation.known_answer.recovery_table`'s frame (``attrs['config']`` kept).

    Example:
        >>> s = recovery_summary(tiny_recovery_table())
        >>> s["ka_n_beating"], s["ka_n_cells"], s["ka_best_estimator"]
        (1, 2, 'on-the-fly fitter, tuned settings')
    """
    cfg = table.attrs["config"]
    cells = [(g, r) for g in cfg["grids"] for r in cfg["regimes"]]
    ratio = table.assign(ratio=table.median_abs_error / table.p_elm_error)
    estimators = ratio[~ratio.estimator.isin(REFERENCES)]
    beats = estimators[estimators.ratio < beat]
    best = estimators.sort_values("ratio").iloc[0]
    joint, cond_long, fitted = (
        ratio[ratio.estimator == e].ratio for e in ("joint_release", "joint_cond_long", "fit_tuned")
    )
    alive = table[table.estimator == "joint_release"]
    return {
        "ka_positions": cfg["n_positions"],
        "ka_tokens": cfg["n_positions"] * cfg["k"],
        "ka_fit_iterations": cfg["fit_iterations"],
        "ka_release_steps": cfg["release_steps"],
        "ka_long_steps": cfg["long_steps"],
        "ka_beat_margin": f"{1 - beat:.0%}",
        "ka_n_cells": len(cells),
        "ka_n_beating": int(beats.groupby(["grid", "regime"]).ngroups),
        "ka_any_beating": len(beats) > 0,
        "ka_best_estimator": LABELS[best.estimator],
        "ka_best_ratio": (best.ratio, "{:.2f}"),
        "ka_best_cell": f"{best.grid}, {best.regime.replace('_', ' ')}",
        "ka_joint_ratio_min": (joint.min(), "{:.2f}"),
        "ka_joint_ratio_max": (joint.max(), "{:.2f}"),
        "ka_cond_long_ratio_min": (cond_long.min(), "{:.2f}"),
        "ka_cond_long_ratio_max": (cond_long.max(), "{:.2f}"),
        "ka_joint_collapsed_max": (table[table.estimator.str.startswith("joint")].share_collapsed.max(), "{:.0%}"),
        "ka_oracle_collapsed_max": (table[table.estimator == "oracle"].share_collapsed.max(), "{:.0%}"),
        "ka_release_alive_pythia": (alive[alive.grid == "pythia"].curve_alive.max(), "{:.2f}"),
        "ka_release_alive_pico": (alive[alive.grid == "pico"].curve_alive.max(), "{:.2f}"),
        "ka_fit_ratio_min": (fitted.min(), "{:.2f}"),
        "ka_fit_ratio_max": (fitted.max(), "{:.2f}"),
        "ka_minutes": (table.seconds.sum() / 60, "{:.1f}"),
    }


def cell_records(table: pd.DataFrame) -> dict[str, float]:
    """``err_<estimator>_<grid>_<regime>`` (median error, 6 decimals) and ``collapsed_...`` (share,
    4 decimals) for every row of the recovery table, for the results JSON.

    Example:
        >>> sorted(cell_records(tiny_recovery_table()))[:2]
        ['collapsed_fit_tuned_pico_saturating', 'collapsed_fit_tuned_pico_still_rising']
    """
    out = {}
    for row in table.itertuples():
        out[f"err_{row.estimator}_{row.grid}_{row.regime}"] = round(row.median_abs_error, 6)
        out[f"collapsed_{row.estimator}_{row.grid}_{row.regime}"] = round(row.share_collapsed, 4)
    return out


def by_cell(table: pd.DataFrame, values: str = "median_abs_error") -> pd.DataFrame:
    """``values`` with one row per estimator (its label) and one column per "grid, regime" cell.

    Example:
        >>> list(by_cell(tiny_recovery_table()).columns)
        ['pico, saturating', 'pico, still rising']
    """
    wide = table.pivot_table(index="estimator", columns=["grid", "regime"], values=values, sort=False)
    wide.index = [LABELS[e] for e in wide.index]
    wide.columns = [f"{g}, {r.replace('_', ' ')}" for g, r in wide.columns]
    return wide


def diagnostics(table: pd.DataFrame) -> pd.DataFrame:
    """Curve alive and share collapsed of the joint, diagnostic and fitter rows, mean over regimes,
    one column per (measure, grid).

    Example:
        >>> diagnostics(tiny_recovery_table()).shape
        (3, 2)
    """
    diag = table[table.estimator.str.startswith(("joint", "diag", "fit"))]
    out = diag.pivot_table(
        index="estimator", columns="grid", values=["curve_alive", "share_collapsed"], aggfunc="mean", sort=False
    )
    out.index = [LABELS[e] for e in out.index]
    out.columns = [f"{m.replace('_', ' ')}, {g} (mean of regimes)" for m, g in out.columns]
    return out


def plot_traces(table: pd.DataFrame):
    """The joint objective's median error against the optimisation step, one panel per grid and
    regime, with p_ELM's error dashed; returns the figure.

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> fig = plot_traces(tiny_recovery_table())
    """
    cfg, traces = table.attrs["config"], table.attrs["traces"]
    fig, axes = figure(
        ncols=len(cfg["regimes"]), nrows=len(cfg["grids"]), width=11, height=6.5, squeeze=False, layout="constrained"
    )
    for i, grid in enumerate(cfg["grids"]):
        for j, regime in enumerate(cfg["regimes"]):
            ax = axes[i][j]
            names = [k[0] for k in traces if k[1] == grid and k[2] == regime]
            for n, name in enumerate(names):
                t = traces[(name, grid, regime)]
                ax.plot(t["step"], t["median_abs_error"], color=PALETTE[n % len(PALETTE)], label=LABELS[name])
            cell = table[(table.grid == grid) & (table.regime == regime)]
            base = cell[cell.estimator == "p_elm"].median_abs_error.iloc[0]
            ax.axhline(base, color=COLORS["elm"], ls="--", lw=1.2, label="p_ELM")
            ax.set_title(f"{grid}, {regime.replace('_', ' ')}")
            ax.set_xlabel("optimisation step")
            ax.set_ylabel("median |c_hat - c_true| (probability)")
    legend(axes[0][0], fontsize=7)
    return fig


def condition_noise(apd_headline: ApdHeadline | None, noise: float, use_family: bool = True) -> tuple[float, str]:
    """The condition's noise sd (probability units) and where it comes from: when ``use_family`` and
    it was measured, the family's own noise in sample (:func:`apd.evaluation.noise.family_noise` with
    ``IN_SAMPLE``: the APD chapter's :attr:`ApdHeadline.distilled_l1_curve`; ``apd_headline`` is None
    when that chapter has not run), else ``noise``. (The first source's wording, "held-out", is the
    results' ``ka_family_noise_source`` as the book has always glued it: the chunks are held out,
    the fit is in sample.)

    Example:
        >>> condition_noise(None, 0.005)
        (0.005, "the APD chapter has not measured it under this profile, so this chapter's noise parameter stands in")
    """
    measured = None if apd_headline is None else apd_headline.distilled_l1_curve
    sd = family_noise(IN_SAMPLE, gates_l1_curve=measured) if use_family else None
    if sd is not None:
        return sd, "the APD chapter's held-out residual of the on-the-fly fits"
    return float(
        noise
    ), "the APD chapter has not measured it under this profile, so this chapter's noise parameter stands in"


def condition_by_cell(cond: pd.DataFrame) -> pd.DataFrame:
    """The condition table as "ratio [95% interval]" strings, one row per estimator (its label) and
    one column per "decay, regime" cell.

    Example:
        >>> cond = pd.DataFrame(dict(decay=["exponential"], regime=["saturating"], estimator=["p_elm"],
        ...                          ratio=[1.0], ci_low=[1.0], ci_high=[1.0]))
        >>> condition_by_cell(cond).iloc[0, 0]
        '1.00 [1.00, 1.00]'
    """
    shown = cond.assign(
        cell=cond.decay + ", " + cond.regime.str.replace("_", " "),
        shown=[f"{m:.2f} [{lo:.2f}, {hi:.2f}]" for m, lo, hi in zip(cond.ratio, cond.ci_low, cond.ci_high)],
    )
    wide = shown.pivot_table(index="estimator", columns="cell", values="shown", aggfunc="first", sort=False)
    wide.index = [LABELS[e] for e in wide.index]
    wide.index.name = "error / p_ELM's (95% interval over seeds)"
    return wide


def headline(summary: dict[str, Any], cond: pd.DataFrame, noise: float, n_seeds: int) -> KnownAnswerHeadline:
    """:class:`KnownAnswerHeadline` from :func:`recovery_summary` and the condition table
    (:func:`apd.evaluation.known_answer.condition_table`, with its ``beats`` column).

    Example:
        >>> cond = pd.DataFrame(dict(decay=["exponential"] * 2, grid=["pico"] * 2,
        ...                          regime=["saturating", "still_rising"], beats=[True, False]))
        >>> headline({"ka_n_beating": 0, "ka_n_cells": 4}, cond, 0.04, 3).ka_n_beating_family
        1
    """
    cells = ["decay", "grid", "regime"]
    return KnownAnswerHeadline(
        int(summary["ka_n_beating"]),
        int(summary["ka_n_cells"]),
        int(cond[cond.beats].groupby(cells).ngroups),
        int(cond.groupby(cells).ngroups),
        float(noise),
        int(n_seeds),
    )


def tiny_recovery_table() -> pd.DataFrame:
    """A two-cell recovery table of made-up numbers (p_ELM, the true asymptote, the joint objective
    and the tuned fitter on pico), shaped as :func:`apd.evaluation.known_answer.recovery_table`'s, for
    the examples and tests."""
    rows = []
    for regime, fit_err in (("saturating", 0.008), ("still_rising", 0.012)):
        for est, err, alive in (
            ("p_elm", 0.01, 0.0),
            ("oracle", 0.0, 0.0),
            ("joint_release", 0.02, 0.1),
            ("joint_cond_long", 0.011, 0.3),
            ("fit_tuned", fit_err, 0.5),
        ):
            rows.append(
                dict(
                    estimator=est,
                    grid="pico",
                    regime=regime,
                    median_abs_error=err,
                    p_elm_error=0.01,
                    share_collapsed=0.1,
                    curve_alive=alive,
                    seconds=1.5,
                )
            )
    table = pd.DataFrame(rows)
    steps = {"step": [0, 10], "median_abs_error": [0.03, 0.02]}
    table.attrs["config"] = dict(
        grids=["pico"],
        regimes=["saturating", "still_rising"],
        n_positions=2,
        k=3,
        fit_iterations=5,
        release_steps=10,
        long_steps=20,
    )
    table.attrs["traces"] = {("joint_release", "pico", r): steps for r in ("saturating", "still_rising")}
    return table
