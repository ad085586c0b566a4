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
    "logit": "#1b9e9e",  # original logits (teal)
    "scaled": "#d1495b",  # logits scaled by 1 - 1/T (red)
    "members": "#4c566a",  # family members
    "elm": "#2e3440",
    "alm": "#8f9bb3",
    "cd_t1": "#e07a1f",  # CD at T = 1
    "cd_t2": "#7b2cbf",  # CD at T = 2
    "cd": "#e07a1f",
    "apd": "#2a9d8f",
    "apd_fly": "#90be6d",
    "apd_conditioned": "#264653",  # APD variants (apd.amateur.variants.VARIANTS) beside the release configuration's "apd"
    "apd_distilled": "#e9c46a",
    "hlm": "#d1495b",
    "truth": "#111111",
}

#: A qualitative palette for families of lines (members, buckets, temperatures).
PALETTE = sns.color_palette("colorblind")


def use_style(context: str = "notebook") -> None:
    """Apply the house style (white grid, colourblind palette, readable sizes)."""
    sns.set_theme(context=context, style="whitegrid", palette=PALETTE)
    matplotlib.rcParams.update(
        {
            "figure.figsize": (6.4, 4.0),
            "figure.dpi": 110,
            "savefig.dpi": 150,
            "axes.titlesize": "medium",
            "axes.titleweight": "bold",
            "axes.spines.top": False,
            "axes.spines.right": False,
            "legend.frameon": False,
            "pdf.fonttype": 42,
        }
    )


def figure(ncols: int = 1, nrows: int = 1, width: float | None = None, height: float | None = None, **kwargs):
    """``plt.subplots`` with house sizes: about 4.8 x 3.6 inches per panel."""
    width = width or 4.8 * ncols
    height = height or 3.6 * nrows
    return plt.subplots(nrows, ncols, figsize=(width, height), **kwargs)


def probability_curve(
    ax, log_sizes, member_probs, names=None, hlines=None, title=None, ylabel="probability of the token"
):
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


def panels(
    n: int, ncols: int = 2, panel_width: float = 4.6, panel_height: float = 3.5, sharey: bool = False, **kwargs
):
    """A figure of ``n`` panels wrapped into rows of at most ``ncols`` (legible at page width), with
    constrained layout (titles, labels and a suptitle never overlap). Returns ``(fig, axes)`` with
    ``axes`` a flat list of the ``n`` panels; unused grid cells are removed. Do not call
    ``fig.tight_layout()`` on it."""
    ncols = max(1, min(ncols, n))
    nrows = -(-n // ncols)
    fig, grid = plt.subplots(
        nrows,
        ncols,
        figsize=(panel_width * ncols, panel_height * nrows),
        squeeze=False,
        sharey=sharey,
        layout="constrained",
        **kwargs,
    )
    axes = list(grid.flat)
    for ax in axes[n:]:
        fig.delaxes(ax)
    return fig, axes[:n]


# -- legends that tell every line apart -----------------------------------------------------------


def _look(handle) -> tuple:
    """What a legend entry looks like: (colour, line style, marker, marker face), as comparable values."""
    from matplotlib.colors import to_hex

    def colour(value):
        try:
            return to_hex(value)
        except (ValueError, TypeError):
            return str(value)

    get = lambda name, default=None: getattr(handle, f"get_{name}", lambda: default)()  # noqa: E731
    style = get("linestyle", "")
    if get("linewidth", 1.0) == 0:
        style = "None"
    face = get("markerfacecolor")
    return (
        colour(get("color", get("facecolor"))),
        str(style),
        str(get("marker", "")),
        colour(face) if face is not None else None,
    )


def legend(ax, **kwargs):
    """``ax.legend(**kwargs)`` (``ax``: an Axes or a Figure) after checking that no two entries are
    drawn alike; raises ValueError naming the two labels that share colour, line style and marker.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig, ax = figure()
    >>> _ = ax.plot([0, 1], color="k", label="ELM + top-p"); _ = ax.plot([1, 0], color="k", label="ELM + REAL")
    >>> legend(ax)
    Traceback (most recent call last):
    ...
    ValueError: legend entries 'ELM + top-p' and 'ELM + REAL' are drawn alike (#000000, -, None): give one another line style or marker
    """
    axes = ax.axes if hasattr(ax, "get_legend_handles_labels") and not hasattr(ax, "legends") else ax
    handles, labels = (
        (kwargs.pop("handles"), kwargs.pop("labels")) if "handles" in kwargs else ax.get_legend_handles_labels()
    )
    seen: dict[tuple, str] = {}
    for h, label in zip(handles, labels):
        look = _look(h)
        if look in seen and seen[look] != label:
            raise ValueError(
                f"legend entries {seen[look]!r} and {label!r} are drawn alike "
                f"({look[0]}, {look[1]}, {look[2]}): give one another line style or marker"
            )
        seen.setdefault(look, label)
    kwargs.setdefault("handlelength", 3.0)
    return axes.legend(handles, labels, **kwargs)


# -- figure numbers, captions and alt text on the book's pages --------------------------------------


def caption_metadata(caption: str, alt: str, name: str | None = None, full_width: bool = False) -> dict:
    """The cell metadata that makes myst-nb render a cell's figure as a numbered figure with
    ``caption`` below it and ``alt`` as its alt text (``cell["metadata"].update(...)``). ``name``: a
    label for ``{numref}`` (only for a cell that draws one figure); ``full_width``: let a wide
    figure use the page's full width.

    >>> caption_metadata("Loss against size.", "A falling line.", name="fig-loss")["mystnb"]["figure"]
    {'caption': 'Loss against size.', 'name': 'fig-loss'}
    """
    fig: dict = {"caption": caption}
    if name:
        fig["name"] = name
    if full_width:
        fig["classes"] = "full-width"
    return {"mystnb": {"figure": fig, "image": {"alt": alt}}}


def _split_defs(src: str) -> tuple[dict[str, str], str]:
    """``({function name: body}, the code outside them)`` of a cell's top-level ``def`` blocks."""
    defs, outside, current = {}, [], None
    for line in src.splitlines():
        if line.startswith("def "):
            current = line[4:].split("(")[0].strip()
            defs[current] = ""
        elif current and line.strip() and not line[0].isspace() and not line.startswith(")"):
            current = None
        if current:
            defs[current] += line + "\n"
        else:
            outside.append(line)
    return defs, "\n".join(outside)


def figure_cells(nb: dict) -> list[tuple[int, str, str]]:
    """``(index, caption, alt)`` of every code cell of notebook dict ``nb`` that shows a figure
    (it calls ``plt.show()``, or a function of the notebook that does, outside a ``def``);
    caption and alt are "" when the cell has none (see :func:`caption_metadata`)."""
    sources = [
        (c["source"] if isinstance(c["source"], str) else "".join(c["source"])) if c.get("cell_type") == "code" else ""
        for c in nb.get("cells", [])
    ]
    drawers = {name for src in sources for name, body in _split_defs(src)[0].items() if "plt.show()" in body}
    out = []
    for i, (cell, src) in enumerate(zip(nb.get("cells", []), sources)):
        outside = _split_defs(src)[1]
        if "plt.show()" in outside or any(f"{name}(" in outside for name in drawers):
            meta = cell.get("metadata", {}).get("mystnb", {})
            out.append((i, str(meta.get("figure", {}).get("caption", "")), str(meta.get("image", {}).get("alt", ""))))
    return out


def _number_figures(app, doctree) -> None:
    """Sphinx ``doctree-read`` hook. myst-nb wraps every output of a cell with figure metadata in a
    figure: a figure that holds no image (a table the same cell displays) is unwrapped, caption
    dropped; every other captioned figure without a label gets an id, so that Sphinx numbers it (a
    cell that draws several figures cannot give each a name)."""
    from docutils import nodes

    for node in list(doctree.findall(nodes.figure)):
        if (
            not any(True for _ in node.findall(nodes.image))
            and node.parent is not None
            and any(c.get("nb_element") == "mime_bundle" for c in node.children if isinstance(c, nodes.container))
        ):
            node.replace_self([c for c in node.children if not isinstance(c, (nodes.caption, nodes.legend))])
        elif not node["ids"] and any(isinstance(c, nodes.caption) for c in node.children):
            doctree.set_id(node)


def sphinx_setup(app):
    """The Sphinx extension this module is (``_config.yml``: ``sphinx.extra_extensions``): number
    every captioned figure and uncaption the tables beside them (see ``_number_figures``)."""
    app.connect("doctree-read", _number_figures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


#: The name Sphinx calls when it loads this module as an extension.
setup = sphinx_setup
