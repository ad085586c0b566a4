"""One house style for every figure of the book (seaborn on matplotlib).

Call :func:`use_style` once per notebook (``apd.report.plots.use_style()``); take colours from
:data:`COLORS` so the same method has the same colour in every chapter; label axes with units,
e.g. :data:`XLABEL_LOG_SIZE` for the x-axis of every size curve.

Figures are drawn for the book's text column (:data:`COLUMN_PX` px wide): :func:`figure` and
:func:`panels` make them :data:`COLUMN_WIDTH_IN` inches wide, so that a point of font is about a
point on the page, and the house font sizes stay at or above :data:`MIN_RENDERED_PT` there. A
figure wider than the column is scaled down to it, and its text with it: :func:`min_rendered_pt`
gives the smallest text of a figure as the page shows it, and every house figure saved as PNG
records it beside the file (``<name>.text.json``, :func:`record_text_sizes`), warning below the
minimum.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import seaborn as sns
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.figure import Figure

#: The x-axis of every curve across model sizes.
XLABEL_LOG_SIZE = "ln(non-embedding parameters)"

#: Width (CSS px) of the book's text column at a 1,280 px window: wider figures are scaled down to it.
COLUMN_PX = 688
#: Pixels per inch of the figures on the book's pages (``figure.dpi`` of :func:`use_style`; the
#: notebooks' inline images are drawn at it).
BOOK_DPI = 110
#: Width (inches) of a house figure: with its saved margins it fills the column, so a point of font
#: shows as about a point (688 px / 96 px per inch = 7.2 inches).
COLUMN_WIDTH_IN = 6.9
#: The smallest font size (pt) a figure's text may have as the page shows it.
MIN_RENDERED_PT = 9.0
#: The house font size (pt) of small text: tick labels, legends, point labels.
SMALL_PT = 9.5

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
    """Apply the house style (white grid, colourblind palette, font sizes legible at column width)."""
    sns.set_theme(context=context, style="whitegrid", palette=PALETTE)
    matplotlib.rcParams.update(
        {
            "figure.figsize": (COLUMN_WIDTH_IN, 4.2),
            "figure.dpi": BOOK_DPI,
            "savefig.dpi": 150,
            "font.size": 10.0,
            "axes.labelsize": 10.0,
            "axes.titlesize": 10.5,
            "figure.titlesize": 11.0,
            "xtick.labelsize": SMALL_PT,
            "ytick.labelsize": SMALL_PT,
            "legend.fontsize": SMALL_PT,
            "legend.title_fontsize": 10.0,
            "axes.titleweight": "bold",
            "axes.spines.top": False,
            "axes.spines.right": False,
            "legend.frameon": False,
            "pdf.fonttype": 42,
        }
    )


# -- figures sized for the column, and the size of their text on the page --------------------------


class _TextRecorder(RendererAgg):
    """An Agg renderer that notes every string drawn (font size in pt, the string) and rasterizes none."""

    def __init__(self, fig):
        super().__init__(max(1, int(fig.bbox.width)), max(1, int(fig.bbox.height)), fig.dpi)
        self.texts: list[tuple[float, str]] = []

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if str(s).strip():
            self.texts.append((float(prop.get_size_in_points()), str(s)))

    def draw_tex(self, gc, x, y, s, prop, angle, *, mtext=None):
        self.draw_text(gc, x, y, s, prop, angle, mtext=mtext)


def text_sizes(fig, column_px: int = COLUMN_PX, dpi: float = BOOK_DPI) -> dict:
    """The text of ``fig`` as the book's page shows it: the figure is drawn as the notebooks show it
    (``bbox_inches="tight"``, 0.1 in margins) at ``dpi`` pixels per inch, and scaled down to
    ``column_px`` CSS px when wider; every string drawn (titles, axis and tick labels, legends,
    annotations) gets its size in CSS points (96 px per inch). Returns ``min_rendered_pt`` (pt),
    ``smallest`` (that string), ``font_pt`` (its size in the figure), ``scale`` (rendered pt per
    figure pt), ``width_in`` (the shown width, inches) and ``n_texts``; ``min_rendered_pt`` is None
    for a figure without text.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig, ax = plt.subplots(figsize=(14.0, 4.0), layout="constrained"); _ = ax.set_title("wide", fontsize=10)
    >>> t = text_sizes(fig); round(t["scale"], 2), t["min_rendered_pt"] < 6
    (0.51, True)
    """
    renderer = _TextRecorder(fig)
    fig.draw(renderer)
    pad = float(matplotlib.rcParams["savefig.pad_inches"])
    width_in = float(fig.get_tightbbox(renderer).width) + 2 * pad
    scale = dpi / 96 * min(1.0, column_px / (width_in * dpi))
    pt, smallest = min(renderer.texts, default=(None, None))
    pt = None if pt is None else float(pt)
    return {
        "min_rendered_pt": None if pt is None else round(pt * scale, 2),
        "smallest": smallest,
        "font_pt": pt,
        "scale": round(scale, 4),
        "width_in": round(width_in, 3),
        "n_texts": len(renderer.texts),
    }


def min_rendered_pt(fig, column_px: int = COLUMN_PX, dpi: float = BOOK_DPI) -> float | None:
    """The smallest font size (CSS pt) of ``fig``'s text as the book's ``column_px`` px column shows
    it: ``font pt x (dpi / 96) x min(1, column_px / shown width in px)``; None without text
    (:func:`text_sizes`).

    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig, ax = figure(); _ = ax.set_xlabel("step", fontsize=10)
    >>> min_rendered_pt(fig) >= MIN_RENDERED_PT
    True
    """
    return text_sizes(fig, column_px, dpi)["min_rendered_pt"]


def record_text_sizes(fig, png, min_pt: float = MIN_RENDERED_PT) -> dict:
    """Write :func:`text_sizes` of ``fig`` beside its saved ``png`` as ``<name>.text.json`` and return
    it; warn (UserWarning, naming the figure, the string and the fix) when its smallest text shows
    below ``min_pt`` pt at column width."""
    png = Path(png)
    sizes = text_sizes(fig)
    sizes["figure"] = png.stem
    png.with_name(f"{png.stem}.text.json").write_text(json.dumps(sizes, indent=1) + "\n")
    if sizes["min_rendered_pt"] is not None and sizes["min_rendered_pt"] < min_pt:
        fix = (
            f"give it at least {min_pt:g} pt (apd.report.plots.SMALL_PT)"
            if sizes["font_pt"] < min_pt
            else f"draw the figure {COLUMN_WIDTH_IN} in wide (apd.report.plots.figure or panels)"
        )
        warnings.warn(
            f"figure {png.stem!r}: its text {sizes['smallest']!r} shows at {sizes['min_rendered_pt']:.1f} pt in the "
            f"book's column, below {min_pt:g} pt ({sizes['font_pt']:g} pt in a figure {sizes['width_in']:.1f} in "
            f"wide): {fix}",
            stacklevel=3,
        )
    return sizes


class HouseFigure(Figure):
    """The figures :func:`figure` and :func:`panels` make: saved as a PNG, they record the size of
    their text on the book's page beside it (:func:`record_text_sizes`)."""

    def savefig(self, fname, *args, **kwargs):
        out = super().savefig(fname, *args, **kwargs)
        if isinstance(fname, (str, Path)) and Path(fname).suffix.lower() == ".png":
            record_text_sizes(self, fname)
        return out


def figure(ncols: int = 1, nrows: int = 1, width: float | None = None, height: float | None = None, **kwargs):
    """``plt.subplots`` with house sizes: the column's width (:data:`COLUMN_WIDTH_IN`) and about 4
    inches per row of one panel, 3.2 per row of several; constrained layout unless ``layout`` says
    otherwise. Returns ``(fig, axes)`` as ``plt.subplots`` does.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig, axes = figure(ncols=2); fig.get_size_inches().tolist(), len(axes)
    ([6.9, 3.2], 2)
    """
    width = width or COLUMN_WIDTH_IN
    height = height or (4.0 if ncols == 1 else 3.2) * nrows
    kwargs.setdefault("layout", "constrained")
    return plt.subplots(nrows, ncols, figsize=(width, height), FigureClass=HouseFigure, **kwargs)


def probability_curve(
    ax, log_sizes, member_probs, names=None, hlines=None, title=None, ylabel="probability of the token"
):
    """Draw one token's probability in every member against log size (``member_probs``: (N,)),
    with optional horizontal lines ``{label: (value, color)}`` for decoding methods (CD, APD, truth)."""
    ax.plot(log_sizes, member_probs, marker="o", color=COLORS["members"], label="family members", zorder=3)
    if names is not None:
        for x, p, n in zip(log_sizes, member_probs, names):
            ax.annotate(
                n, (x, p), textcoords="offset points", xytext=(3, 4), fontsize=SMALL_PT, color=COLORS["members"]
            )
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
    n: int,
    ncols: int = 2,
    panel_height: float = 3.0,
    sharey: bool = False,
    sharex: bool = False,
    width: float | None = None,
    **kwargs,
):
    """A figure of ``n`` panels, :data:`COLUMN_WIDTH_IN` wide (``width``), in rows of at most
    ``ncols`` (at most 2: a third panel in a row of the column is too narrow to read), with
    constrained layout (titles, labels and a suptitle never overlap); ``sharex``/``sharey``: the
    panels share the first one's x/y axis. A last row with fewer panels has them centred (no empty
    grid cell). Returns ``(fig, axes)`` with ``axes`` a flat list of the ``n`` panels. Do not call
    ``fig.tight_layout()`` on it.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig, axes = panels(3); len(axes), [ax.get_subplotspec().colspan.start for ax in axes]
    (3, [0, 2, 1])
    """
    if n < 1:
        raise ValueError(f"panels(n={n}): a figure needs at least one panel")
    ncols = max(1, min(ncols, n, 2))
    nrows = -(-n // ncols)
    fig = plt.figure(
        figsize=(width or COLUMN_WIDTH_IN, panel_height * nrows), layout="constrained", FigureClass=HouseFigure
    )
    grid = fig.add_gridspec(nrows, 2 * ncols)
    axes = []
    for i in range(n):
        row, col = divmod(i, ncols)
        in_row = min(ncols, n - row * ncols)
        start = 2 * col + (ncols - in_row)  # a short last row is centred
        share = {"sharex": axes[0] if sharex and axes else None, "sharey": axes[0] if sharey and axes else None}
        axes.append(fig.add_subplot(grid[row, start : start + 2], **share, **kwargs))
    for ax in axes:  # shared axes: tick labels on the outer panels only
        if sharex and not _at_edge(ax, axes, "bottom"):
            ax.tick_params(labelbottom=False)
        if sharey and not _at_edge(ax, axes, "left"):
            ax.tick_params(labelleft=False)
    return fig, axes


def _at_edge(ax, axes, side: str) -> bool:
    """Whether no other panel of ``axes`` sits wholly below ``ax`` in its columns ("bottom") or to its
    left in its rows ("left")."""
    s = ax.get_subplotspec()
    for other in axes:
        o = other.get_subplotspec()
        if other is ax:
            continue
        if side == "bottom" and o.rowspan.start >= s.rowspan.stop and set(s.colspan) <= set(o.colspan):
            return False
        if side == "left" and o.colspan.stop <= s.colspan.start and set(s.rowspan) <= set(o.rowspan):
            return False
    return True


def outer_labels(axes, xlabel: str | None = None, ylabel: str | None = None) -> None:
    """Axis labels on the outer panels of :func:`panels`' ``axes`` only: ``xlabel`` on each panel with
    no panel below it, ``ylabel`` on each with none to its left; the others' are cleared (None: leave
    that axis' labels as they are).

    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig, axes = panels(3, sharex=True); outer_labels(axes, "step", "loss (nats)")
    >>> [(ax.get_xlabel(), ax.get_ylabel()) for ax in axes]
    [('step', 'loss (nats)'), ('step', ''), ('step', 'loss (nats)')]
    """
    for ax in axes:
        if xlabel is not None:
            ax.set_xlabel(xlabel if _at_edge(ax, axes, "bottom") else "")
        if ylabel is not None:
            ax.set_ylabel(ylabel if _at_edge(ax, axes, "left") else "")


def plain_ticks(ax, axis: str = "x", decimals: int = 3, nbins: int = 4) -> None:
    """Ticks on ``axis`` ("x" or "y") of ``ax`` whose labels need at most ``decimals`` decimals and
    no offset read at the axis' end (no "2.5605 2.5610" noise): at most ``nbins`` + 1 ticks, 1, 2 or
    5 times a power of ten apart and never closer than ``10**-decimals``; a view narrower than two
    such steps is widened about its middle.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig, ax = figure(); _ = ax.plot([2.5605, 2.5612], [0, 1])
    >>> plain_ticks(ax); fig.draw_without_rendering()
    >>> sorted({t.get_text().split(".")[1] for t in ax.get_xticklabels()})[:3]  # three decimals, no more
    ['559', '560', '561']
    """
    from matplotlib.ticker import MaxNLocator, MultipleLocator, ScalarFormatter

    if axis not in ("x", "y"):
        raise ValueError(f"plain_ticks(axis={axis!r}): axis is 'x' or 'y'")
    get_lim, set_lim, which = (
        (ax.get_xlim, ax.set_xlim, ax.xaxis) if axis == "x" else (ax.get_ylim, ax.set_ylim, ax.yaxis)
    )
    unit = 10.0**-decimals
    lo, hi = get_lim()
    if abs(hi - lo) < 2 * unit:
        mid = (lo + hi) / 2
        set_lim(mid - unit, mid + unit)
        lo, hi = get_lim()
    locator = MaxNLocator(nbins=nbins, steps=[1, 2, 5, 10])
    ticks = locator.tick_values(lo, hi)
    which.set_major_locator(MultipleLocator(unit) if len(ticks) < 2 or ticks[1] - ticks[0] < unit else locator)
    which.set_major_formatter(ScalarFormatter(useOffset=False))


def spread_labels(fig, gap_pt: float = 3.0) -> int:
    """Move the point labels of ``fig`` (annotations placed in offset points, e.g. "p=0.8" beside a
    point) so that no two overlap and each stays inside its panel: each tries above and below its
    point, right and left of it, ``gap_pt`` points away, then a line further. A label with the same
    text as one already shown for a point within a label's height of its own (two curves' points
    of one setting side by side) is hidden: the one shown names both. Call it once the figure is
    complete (legends included). Returns how many labels were hidden.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig, ax = figure()
    >>> for y in (0.5, 0.501): _ = ax.annotate("p=0.8", (0.5, y), textcoords="offset points", xytext=(3, 3))
    >>> spread_labels(fig)
    1
    """
    from matplotlib.text import Annotation

    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else _TextRecorder(fig)
    g, line = gap_pt, gap_pt + SMALL_PT * 1.2  # second: one label's height further away
    near = line * fig.dpi / 72  # px
    spots = [
        ((side * g, dy), "left" if side > 0 else "right", "bottom" if dy > 0 else "top")
        for dy in (g, -g, line, -line)
        for side in (1, -1)
    ]
    hidden = 0
    for ax in fig.axes:
        panel = ax.get_window_extent(renderer)
        placed: list[tuple] = []  # (box, text, anchor point in px)
        for t in ax.texts:
            if not (isinstance(t, Annotation) and t.anncoords == "offset points" and t.get_visible()):
                continue
            at = ax.transData.transform(t.xy)
            if any(text == t.get_text() and abs(a - at).max() < near for _, text, a in placed):
                t.set_visible(False)
                hidden += 1
                continue
            for n, (off, ha, va) in enumerate(spots + spots[:1]):  # the first place again when none is free
                t.xyann = off
                t.set_ha(ha)
                t.set_va(va)
                box = t.get_window_extent(renderer)
                free = not any(box.overlaps(other) for other, _, _ in placed)
                inside = panel.x0 <= box.x0 and box.x1 <= panel.x1 and panel.y0 <= box.y0 and box.y1 <= panel.y1
                if (free and inside) or n == len(spots):
                    t.set_in_layout(False)
                    placed.append((box, t.get_text(), at))
                    break
    return hidden


# -- legends that tell every line apart -----------------------------------------------------------


def _look(handle) -> tuple:
    """What a legend entry looks like: (colour, line style, marker, marker face), as comparable values;
    a bar chart's entry looks like its first bar."""
    from matplotlib.colors import to_hex

    if getattr(handle, "patches", None):  # a BarContainer
        handle = handle.patches[0]

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
