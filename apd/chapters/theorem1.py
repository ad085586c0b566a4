"""The Theorem 1 chapter's draws, tables and figures (``notebooks/theorem1.ipynb``).

Log sizes are natural logs of non-embedding parameter counts; logits are in nats. The identity
itself is :mod:`apd.core.theory`; this module only draws families, tabulates and plots.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from apd.chapters.gluing import ChapterResult
from apd.core.theory import bent_extrapolation_error, bent_logits, cd_logits, hlm_log_size, hlm_logits, line_logit
from apd.report.plots import COLORS, PALETTE, SMALL_PT, XLABEL_LOG_SIZE, figure, legend

#: The identity "holds to round-off" when CD's logits match (1 - 1/T) L_HLM to this (logits); the
#: paper-vs-book chapter's check of claim C1 uses the same bound.
EXACT_TOL = 1e-9
FLOAT64_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class Theorem1Headline(ChapterResult):
    """The chapter's headline numbers, as ``results/<profile>/theorem1.json`` holds them (the
    paper-vs-book chapter reads them with :meth:`ChapterResult.load`)."""

    STEM = "theorem1"

    n_logits_checked: int  # logits compared over all random linear families
    max_abs_error: float  # max |L_CD - (1 - 1/T) L_HLM| over them (logits)
    max_rel_error: float  # the same relative to max(|L_CD|, 1)
    float64_eps: float  # float64's machine epsilon
    max_rel_error_in_eps: float  # max_rel_error in units of float64_eps

    @property
    def exact(self) -> bool:
        """Whether the identity holds to round-off (``max_abs_error <= EXACT_TOL``)."""
        return self.max_abs_error <= EXACT_TOL


def draw_linear_families(rng: np.random.Generator, n: int, vocab_size: int):
    """``n`` random families whose logits are linear in log size: ``(x_alm, x_elm, T, l_alm, l_elm)``,
    log sizes and T of shape ``(n, 1)`` (T in [1.05, 8)), logits ``(n, vocab_size)``.

    Example:
        >>> x_a, x_e, T, l_a, l_e = draw_linear_families(np.random.default_rng(0), 3, 5)
        >>> l_a.shape, bool((x_e > x_a).all())
        ((3, 5), True)
    """
    x_alm = rng.uniform(14.0, 20.0, size=(n, 1))
    x_elm = x_alm + rng.uniform(0.5, 8.0, size=(n, 1))
    T = rng.uniform(1.05, 8.0, size=(n, 1))
    intercept = rng.normal(0.0, 5.0, size=(n, vocab_size))
    slope = rng.normal(0.0, 1.0, size=(n, vocab_size))
    return x_alm, x_elm, T, intercept + slope * x_alm, intercept + slope * x_elm


def identity_errors(x_alm, x_elm, T, l_alm, l_elm) -> tuple[np.ndarray, np.ndarray]:
    """``|L_CD - (1 - 1/T) L_HLM|`` and the same over ``max(|L_CD|, 1)``, each shaped like the logits.

    Example:
        >>> abs_err, rel_err = identity_errors(*draw_linear_families(np.random.default_rng(0), 2, 4))
        >>> bool(abs_err.max() < 1e-9)
        True
    """
    l_cd = cd_logits(l_elm, l_alm, T)
    diff = np.abs(l_cd - (1 - 1 / T) * hlm_logits(l_elm, l_alm, x_elm, x_alm, T))
    return diff, diff / np.maximum(np.abs(l_cd), 1.0)


def headline(n_logits: int, max_abs_error: float, max_rel_error: float) -> Theorem1Headline:
    """:class:`Theorem1Headline` from the check's count and largest errors.

    Example:
        >>> headline(10, 1e-14, 2.2e-16).exact
        True
    """
    return Theorem1Headline(
        int(n_logits), float(max_abs_error), float(max_rel_error), FLOAT64_EPS, float(max_rel_error / FLOAT64_EPS)
    )


def proof_picture(x_a: float, x_e: float, T: float, l_a: float = 6.0, l_e: float = 4.5):
    """The paper's Figure 2 for one token: bars of the ALM, ELM and HLM logits, original and scaled by
    ``1 - 1/T``, on their lines. Returns ``(fig, l_cd, scaled_hlm_logit)`` (logits).

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> fig, l_cd, scaled = proof_picture(16.7555, 22.5864, 2.0)
        >>> round(l_cd, 6) == round(scaled, 6)
        True
    """
    x_h = float(hlm_log_size(x_e, x_a, T))
    l_h = float(line_logit(x_h, x_a, l_a, x_e, l_e))
    l_cd = float(cd_logits(l_e, l_a, T))
    scale = 1 - 1 / T
    fig, ax = figure(height=4.4)
    width = 0.9
    for x, logit, name in [(x_a, l_a, "ALM"), (x_e, l_e, "ELM"), (x_h, l_h, "HLM")]:
        ax.bar(
            x - width / 2,
            logit,
            width=width,
            color=COLORS["logit"],
            alpha=0.85,
            label="original logit" if name == "ALM" else None,
        )
        ax.bar(
            x + width / 2,
            scale * logit,
            width=width,
            color=COLORS["scaled"],
            alpha=0.85,
            label=f"logit x (1 - 1/T), T = {T:g}" if name == "ALM" else None,
        )
        ax.text(x, -0.55, name, ha="center", va="top", fontweight="bold")
    xs = np.linspace(x_a - 1, x_h + 1, 50)
    ax.plot(xs, line_logit(xs, x_a, l_a, x_e, l_e), color=COLORS["logit"], lw=1.2, ls="--")
    ax.plot(xs, scale * line_logit(xs, x_a, l_a, x_e, l_e), color=COLORS["scaled"], lw=1.2, ls="--")
    ax.axhline(l_cd, color="k", lw=0.8, ls=":")  # CD's logit, labelled beside the line (no arrow across text)
    ax.text(
        x_a + width + 0.2,
        l_cd - 0.2,
        f"$L^{{CD}} = L^{{ELM}} - L^{{ALM}}/T$\n= {l_cd:.2f} (dotted line)",
        ha="left",
        va="top",
        fontsize=SMALL_PT,
    )
    arrow = dict(arrowstyle="<->", lw=1.0, color="k")
    ax.annotate("", xy=(x_e, 7.3), xytext=(x_a, 7.3), arrowprops=arrow)
    ax.text((x_a + x_e) / 2, 7.5, "$S^d$", ha="center")
    ax.annotate("", xy=(x_h, 7.3), xytext=(x_e, 7.3), arrowprops=arrow)
    ax.text((x_e + x_h) / 2, 7.5, r"$\dfrac{1/T}{1-1/T}\,S^d$", ha="center")
    ax.annotate("", xy=(x_a - 0.75, l_e), xytext=(x_a - 0.75, l_a), arrowprops=arrow)
    ax.text(x_a - 0.9, (l_a + l_e) / 2, "$L^d$", ha="right", va="center")
    ax.set_xlabel(XLABEL_LOG_SIZE)
    ax.set_ylabel("logit of the token (nats)")
    ax.set_ylim(-1.2, 9.9)
    ax.legend(loc="upper center", ncol=2)  # bars: apd.plots.legend reads lines and markers
    ax.set_title("CD's logit is the scaled logit of a larger hypothetical LM")
    return fig, l_cd, scale * l_h


def hlm_size_table(elm_log_size: float, alm_log_size: float, T_grid) -> pd.DataFrame:
    """Where the HLM sits for each T of ``T_grid``: ``T``, ``1/T``, ``ln s_HLM``, its size in
    non-embedding parameters, its ratio to the ELM's and the scale ``1 - 1/T``, one row per T.

    Example:
        >>> hlm_size_table(22.5864, 16.7555, [2.0])["ln s_HLM"].round(4).tolist()
        [28.4173]
    """
    rows = []
    for T in T_grid:
        x_h = float(hlm_log_size(elm_log_size, alm_log_size, T))
        rows.append(
            {
                "T": T,
                "1/T": 1 / T,
                "ln s_HLM": x_h,
                "s_HLM (non-embedding params)": np.exp(x_h),
                "s_HLM / s_ELM": np.exp(x_h - elm_log_size),
                "scale 1 - 1/T": 1 - 1 / T,
            }
        )
    return pd.DataFrame(rows)


def plot_hlm_size(elm_log_size: float, alm_log_size: float, T_max: float, T_mark: float = 2.0):
    """The HLM's log size against T in (1, ``T_max``], beside the Pythia ALM and ELM; returns the figure.

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> fig = plot_hlm_size(22.5864, 16.7555, 8.0)
    """
    Ts = np.linspace(1.05, T_max, 300)
    fig, ax = figure()
    ax.plot(Ts, hlm_log_size(elm_log_size, alm_log_size, Ts), color=COLORS["hlm"])
    ax.axhline(elm_log_size, color=COLORS["elm"], ls="--", lw=1, label="ELM (Pythia-6.9B)")
    ax.axhline(alm_log_size, color=COLORS["alm"], ls="--", lw=1, label="ALM (Pythia-70M)")
    ax.scatter(
        [T_mark],
        [float(hlm_log_size(elm_log_size, alm_log_size, T_mark))],
        color="k",
        zorder=3,
        label=f"T = {T_mark:g} (the paper's best 1/T = {1 / T_mark:g})",
    )
    ax.set_xlabel("amateur temperature T")
    ax.set_ylabel("ln s_HLM\n(ln non-embedding parameters)")
    ax.set_ylim(alm_log_size - 1, min(60, float(hlm_log_size(elm_log_size, alm_log_size, 1.05))))
    legend(ax)
    ax.set_title("Where CD's hypothetical LM sits")
    return fig


def bend_table(rng: np.random.Generator, n: int, vocab_size: int, T_grid, curvature_grid) -> pd.DataFrame:
    """The identity's error on ``n`` random bent families: one row per (T, curvature) with
    ``mean |error|`` (logits) and ``max |numeric - closed form|`` against
    :func:`apd.core.theory.bent_extrapolation_error`.

    Example:
        >>> t = bend_table(np.random.default_rng(0), 4, 3, [2.0], [0.0, 0.1])
        >>> bool(t["max |numeric - closed form|"].max() < 1e-9)
        True
    """
    x_alm = rng.uniform(14.0, 20.0, size=(n, 1))
    x_elm = x_alm + rng.uniform(0.5, 8.0, size=(n, 1))
    l_alm = rng.normal(0, 5, size=(n, vocab_size))
    l_elm = l_alm + rng.normal(0, 2, size=(n, vocab_size))
    rows = []
    for T in T_grid:
        x_h = hlm_log_size(x_elm, x_alm, T)
        l_cd = cd_logits(l_elm, l_alm, T)
        for kappa in curvature_grid:
            err = np.abs(l_cd - (1 - 1 / T) * bent_logits(x_h, x_alm, l_alm, x_elm, l_elm, kappa))
            closed = np.abs(bent_extrapolation_error(kappa, x_elm, x_alm, T))
            rows.append(
                {
                    "T": T,
                    "curvature": kappa,
                    "mean |error|": err.mean(),
                    "max |numeric - closed form|": np.abs(err - closed).max(),
                }
            )
    return pd.DataFrame(rows)


def plot_bend(bend: pd.DataFrame):
    """Mean identity error against curvature, one line per T of ``bend`` (:func:`bend_table`).

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> fig = plot_bend(bend_table(np.random.default_rng(0), 2, 3, [2.0, 4.0], [0.0, 0.1]))
    """
    fig, ax = figure()
    for i, T in enumerate(dict.fromkeys(bend["T"])):
        sub = bend[bend["T"] == T]
        ax.plot(sub["curvature"], sub["mean |error|"], marker="o", color=PALETTE[i % len(PALETTE)], label=f"T = {T:g}")
    ax.set_xlabel("curvature κ  (logit per (ln size)²)")
    ax.set_ylabel("mean |L_CD - (1-1/T) L_HLM|  (logits)")
    ax.set_yscale("symlog", linthresh=1e-3)
    legend(ax, ncol=2)
    ax.set_title("The identity breaks as logits bend")
    return fig


def low_temperature_table(families, T_low) -> pd.DataFrame:
    """For each T < 1 of ``T_low``, on ``families`` (:func:`draw_linear_families`): the scale
    ``1 - 1/T``, whether the HLM falls below the ALM for every family, and the identity's max error.

    Example:
        >>> t = low_temperature_table(draw_linear_families(np.random.default_rng(0), 3, 4), [0.5])
        >>> t["HLM below ALM (all draws)"].tolist(), t["scale 1 - 1/T"].tolist()
        ([True], [-1.0])
    """
    x_alm, x_elm, _, l_alm, l_elm = families
    rows = []
    for T in T_low:
        x_h = hlm_log_size(x_elm, x_alm, T)
        rows.append(
            {
                "T": T,
                "scale 1 - 1/T": 1 - 1 / T,
                "HLM below ALM (all draws)": bool((x_h < x_alm).all()),
                "max |L_CD - (1-1/T) L_HLM|": identity_errors(x_alm, x_elm, T, l_alm, l_elm)[0].max(),
            }
        )
    return pd.DataFrame(rows)


def plot_low_temperature(elm_log_size: float, alm_log_size: float):
    """Two panels against T from 0.2 to 5: the HLM's log size beside the ALM and ELM, and the scale.

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> fig = plot_low_temperature(22.5864, 16.7555)
    """
    Ts = np.concatenate([np.linspace(0.2, 0.97, 150), np.linspace(1.03, 5, 150)])
    fig, axes = figure(ncols=2)
    for side in (Ts < 1, Ts > 1):
        axes[0].plot(Ts[side], hlm_log_size(elm_log_size, alm_log_size, Ts[side]), color=COLORS["hlm"])
    axes[0].axhline(alm_log_size, color=COLORS["alm"], ls="--", lw=1, label="ALM")
    axes[0].axhline(elm_log_size, color=COLORS["elm"], ls="--", lw=1, label="ELM")
    axes[0].set_ylim(0, 45)
    axes[0].set_ylabel("ln s_HLM\n(ln non-embedding parameters)")
    legend(axes[0])
    axes[1].plot(Ts, 1 - 1 / Ts, color=COLORS["scaled"])
    axes[1].axhline(0, color="k", lw=0.8)
    axes[1].set_ylabel("scale 1 - 1/T  (unitless)")
    for ax in axes:
        ax.axvline(1, color="k", lw=0.8, ls=":")
        ax.set_xlabel("amateur temperature T")
    fig.suptitle("Below T = 1 the HLM is smaller than the amateur and the scale is negative")
    return fig
