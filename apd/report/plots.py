"""One house style for every figure of the book (seaborn on matplotlib).

Call :func:`use_style` once per notebook (``apd.report.plots.use_style()``); take colours from
:data:`COLORS` so the same method has the same colour in every chapter; label axes with units,
e.g. :data:`XLABEL_LOG_SIZE` for the x-axis of every size curve.
"""
from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import seaborn as sns

#: The x-axis of every curve across model sizes.
XLABEL_LOG_SIZE = "ln(non-embedding parameters)"

#: One colour per role, used by every chapter (teal/red follow the paper's Figure 2).
COLORS = {
    "logit": "#1b9e9e",        # original logits (teal)
    "scaled": "#d1495b",       # logits scaled by 1 - 1/T (red)
    "members": "#4c566a",      # family members
    "elm": "#2e3440",
    "alm": "#8f9bb3",
    "cd_t1": "#e07a1f",        # CD at T = 1
    "cd_t2": "#7b2cbf",        # CD at T = 2
    "cd": "#e07a1f",
    "apd": "#2a9d8f",
    "apd_fly": "#90be6d",
    "apd_conditioned": "#264653",   # APD variants (apd.amateur.VARIANTS) beside the release configuration's "apd"
    "apd_distilled": "#e9c46a",
    "hlm": "#d1495b",
    "truth": "#111111",
}

#: A qualitative palette for families of lines (members, buckets, temperatures).
PALETTE = sns.color_palette("colorblind")


def use_style(context: str = "notebook") -> None:
    """Apply the house style (white grid, colourblind palette, readable sizes)."""
    sns.set_theme(context=context, style="whitegrid", palette=PALETTE)
    matplotlib.rcParams.update({
        "figure.figsize": (6.4, 4.0),
        "figure.dpi": 110,
        "savefig.dpi": 150,
        "axes.titlesize": "medium",
        "axes.titleweight": "bold",
        "axes.spines.top": False,
        "axes.spines.right": False,
        "legend.frameon": False,
        "pdf.fonttype": 42,
    })


def figure(ncols: int = 1, nrows: int = 1, width: float | None = None, height: float | None = None,
           **kwargs):
    """``plt.subplots`` with house sizes: about 4.8 x 3.6 inches per panel."""
    width = width or 4.8 * ncols
    height = height or 3.6 * nrows
    return plt.subplots(nrows, ncols, figsize=(width, height), **kwargs)


def probability_curve(ax, log_sizes, member_probs, names=None, hlines=None, title=None,
                      ylabel="probability of the token"):
    """Draw one token's probability in every member against log size (``member_probs``: (N,)),
    with optional horizontal lines ``{label: (value, color)}`` for decoding methods (CD, APD, truth)."""
    ax.plot(log_sizes, member_probs, marker="o", color=COLORS["members"], label="family members", zorder=3)
    if names is not None:
        for x, p, n in zip(log_sizes, member_probs, names):
            ax.annotate(n, (x, p), textcoords="offset points", xytext=(3, 4), fontsize=7, color=COLORS["members"])
    for label, (value, color) in (hlines or {}).items():
        ax.axhline(value, color=color, ls="--", lw=1.3, label=label)
    ax.set_xlabel(XLABEL_LOG_SIZE)
    ax.set_ylabel(ylabel)
    ax.set_ylim(-0.02, 1.02)
    if title:
        ax.set_title(title)
    return ax


def wrap(text: str, width: int = 45) -> str:
    """``text`` broken into lines of at most ``width`` characters, for titles and axis labels that
    would otherwise run past their panel (or into a neighbour's)."""
    import textwrap

    return "\n".join(textwrap.fill(line, width) for line in str(text).splitlines() or [""])


def panels(n: int, ncols: int = 2, panel_width: float = 4.6, panel_height: float = 3.5,
           sharey: bool = False, **kwargs):
    """A figure of ``n`` panels wrapped into rows of at most ``ncols`` (legible at page width), with
    constrained layout (titles, labels and a suptitle never overlap). Returns ``(fig, axes)`` with
    ``axes`` a flat list of the ``n`` panels; unused grid cells are removed. Do not call
    ``fig.tight_layout()`` on it."""
    ncols = max(1, min(ncols, n))
    nrows = -(-n // ncols)
    fig, grid = plt.subplots(nrows, ncols, figsize=(panel_width * ncols, panel_height * nrows),
                             squeeze=False, sharey=sharey, layout="constrained", **kwargs)
    axes = list(grid.flat)
    for ax in axes[n:]:
        fig.delaxes(ax)
    return fig, axes[:n]
