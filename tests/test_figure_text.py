"""Figures are legible in the book's text column, and each has a caption of its own.

The page shows a figure at most :data:`apd.report.plots.COLUMN_PX` px wide, so a wider figure's
text shrinks with it: :func:`apd.report.plots.text_sizes` measures every string a figure draws as
the page shows it. Checked here: the measure itself, every chapter figure function drawn on tiny
inputs (house style on), the sizes a built book recorded beside its figures
(``results/<profile>/figures/<name>.text.json``, written when a house figure is saved), and that no
two figures of the notebooks, the hand-written pages or a built book share a caption.
"""

import ast
import json
import re
import warnings
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from apd.report import plots  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MIN = plots.MIN_RENDERED_PT


@pytest.fixture(autouse=True)
def house_style():
    """Every figure here is drawn in the house style, as the notebooks draw them; rc restored after."""
    with matplotlib.rc_context():
        plots.use_style()
        yield
    plt.close("all")


# -- the measure ----------------------------------------------------------------------------------


def test_a_figure_wider_than_the_column_is_scaled_down_to_it():
    fig, ax = plt.subplots(figsize=(13.8, 4.0), layout="constrained")
    ax.set_title("a title", fontsize=10)
    t = plots.text_sizes(fig)
    assert t["width_in"] > 13.8  # the saved margins count
    assert t["width_in"] * 96 * t["scale"] == pytest.approx(plots.COLUMN_PX, rel=1e-3)  # shown across the column
    assert t["min_rendered_pt"] == pytest.approx(t["font_pt"] * t["scale"], abs=0.01)
    assert t["min_rendered_pt"] < MIN


def test_a_figure_narrower_than_the_column_is_shown_at_its_own_size():
    fig, ax = plt.subplots(figsize=(4.0, 3.0), layout="constrained")
    ax.set_xlabel("step", fontsize=9)
    t = plots.text_sizes(fig)
    assert t["scale"] == pytest.approx(plots.BOOK_DPI / 96, rel=1e-3)  # a page pixel per image pixel
    assert plots.min_rendered_pt(fig) >= 9 * plots.BOOK_DPI / 96 - 0.01


def test_every_kind_of_text_is_measured_and_the_smallest_named():
    fig, axes = plots.panels(2)
    axes[0].plot([0, 1], [0, 1], label="a line")
    axes[0].legend(fontsize=11)
    axes[0].set_title("title", fontsize=12)
    axes[1].annotate("a point", (0.5, 0.5), fontsize=10)
    fig.suptitle("suptitle", fontsize=13)
    assert plots.text_sizes(fig)["n_texts"] >= 12  # title, suptitle, legend, annotation, tick labels
    shrink = (
        (lambda: axes[0].get_legend().get_texts()[0].set_fontsize(7.0), 7.0, "a line"),
        (lambda: axes[1].texts[0].set_fontsize(6.5), 6.5, "a point"),
        (lambda: axes[1].tick_params(labelsize=6.0), 6.0, None),
    )
    for make_smaller, size, expected in shrink:
        make_smaller()
        t = plots.text_sizes(fig)
        assert t["font_pt"] == size and (expected is None or t["smallest"] == expected)
    assert plots.text_sizes(plt.figure())["min_rendered_pt"] is None  # no text at all


def test_house_figures_are_column_wide_and_legible():
    for fig in (plots.figure()[0], plots.figure(ncols=2)[0], plots.panels(3)[0], plots.panels(5, ncols=1)[0]):
        assert fig.get_size_inches()[0] == plots.COLUMN_WIDTH_IN
        for ax in fig.axes:
            ax.set_xlabel("x (unit)")
            ax.set_ylabel("y (unit)")
            ax.plot([0, 1], label="a line")
        fig.axes[0].legend()
        assert plots.min_rendered_pt(fig) >= MIN


def test_panels_leave_no_empty_grid_cell():
    fig, axes = plots.panels(3)
    assert len(fig.axes) == 3
    starts = [ax.get_subplotspec().colspan.start for ax in axes]
    assert starts == [0, 2, 1]  # the third panel centred under the first two


def test_saving_a_house_figure_records_its_text_sizes_and_warns_when_small(tmp_path):
    fig, ax = plots.figure()
    ax.plot([0, 1])
    fig.savefig(tmp_path / "ok.png")
    record = json.loads((tmp_path / "ok.text.json").read_text())
    assert record["figure"] == "ok" and record["min_rendered_pt"] >= MIN
    assert record == {**plots.text_sizes(fig), "figure": "ok"}
    ax.annotate("tiny", (0.5, 0.5), fontsize=6)
    with pytest.warns(UserWarning, match=r"'tiny' shows at 6\.\d pt"):
        fig.savefig(tmp_path / "small.png")
    assert json.loads((tmp_path / "small.text.json").read_text())["smallest"] == "tiny"
    wide, ax = plt.subplots(figsize=(14, 4), FigureClass=plots.HouseFigure)
    ax.set_title("wide")
    with pytest.warns(UserWarning, match="draw the figure 6.9 in wide"):
        wide.savefig(tmp_path / "wide.png")
    fig.savefig(tmp_path / "only.pdf")
    assert not (tmp_path / "only.text.json").exists()  # the PNG is what the page shows


def test_spread_labels_keeps_point_labels_apart_and_inside_their_panel():
    fig, ax = plots.figure()
    ax.plot([0, 1, 1.02, 2], [0, 1, 1.0, 2], "o")
    for x, y, text in ((0, 0, "p=0.4"), (1, 1, "T=1"), (1.02, 1.0, "T=2"), (1.02, 1.0, "T=2"), (2, 2, "p=0.95")):
        ax.annotate(text, (x, y), textcoords="offset points", xytext=(3, 3), fontsize=plots.SMALL_PT)
    assert plots.spread_labels(fig) == 1  # the second "T=2" at the same point
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts if t.get_visible()]
    panel = ax.get_window_extent(renderer)
    assert len(boxes) == 4 and not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    assert all(panel.x0 <= b.x0 and b.x1 <= panel.x1 and panel.y0 <= b.y0 and b.y1 <= panel.y1 for b in boxes)


# -- every chapter figure function, on tiny inputs --------------------------------------------------


def _theorem1():
    from apd.chapters import theorem1 as c

    bend = c.bend_table(np.random.default_rng(0), 3, 4, [1.5, 2.0, 4.0, 8.0], [0.0, 0.01, 0.1])
    return {
        "proof_picture": c.proof_picture(16.7555, 22.5864, 2.0)[0],
        "hlm_size": c.plot_hlm_size(22.5864, 16.7555, 9.6),
        "bend": c.plot_bend(bend),
        "low_temperature": c.plot_low_temperature(22.5864, 16.7555),
    }


SIZES = np.log([1.3e4, 2.8e4, 1.0e5, 3.4e5, 7.9e5, 1.8e6])
NAMES = ["pico-13k", "pico-28k", "pico-100k", "pico-336k", "pico-793k", "pico-1.8m"]


def _family():
    from apd.chapters import family as c

    fam = SimpleNamespace(log_sizes=SIZES, names=NAMES)
    acc = pd.DataFrame({b: np.linspace(0.25, 0.8, 6) for b in c.BUCKETS}, index=NAMES)
    k = SimpleNamespace(acc=acc, top1=acc / 2, chance=0.25)
    return {"losses": c.plot_losses(fam, list(np.linspace(2.8, 2.0, 6))), "knowledge": c.plot_knowledge(fam, k)}


def _curves():
    from test_chapter_curves import _pool

    from apd.chapters import curves as c

    rng = np.random.default_rng(0)
    prompt = pd.DataFrame(
        {
            "context": [f"Ada Lovelace was born in the town of {w}" for w in "abcdef"],
            "next_token": [" Vur"] * 6,
            "actual_next": [" Vur"] * 6,
            **{f"p:{n}": rng.uniform(0, 1, 6) for n in NAMES},
            "cd:T=1": rng.uniform(0, 1, 6),
            "cd:T=2": rng.uniform(0, 1, 6),
            "apd:T=1": rng.uniform(0, 1, 6),
        }
    )
    lin = pd.DataFrame({"R2": rng.uniform(0, 1, 500), "curvature": rng.normal(0, 0.2, 500)})
    kcol, ecol = c.hlm_columns(20)
    hlm = pd.DataFrame(
        {
            "ln s_HLM": [11.8, 12.2, 12.5, 13.6],
            kcol: [0.04, 0.18, 0.37, 0.98],
            ecol: [0.03, 0.12, 0.22, 0.39],
            "top-1 agrees, CD-HLM": [0.87, 0.76, 0.70, 0.52],
            "top-1 agrees, ELM": [0.88, 0.79, 0.74, 0.71],
        }
    )
    q, p = _pool()
    i, b = c.clearest(p, 1.0, 5)
    figs = {
        "prompt": c.plot_prompt(prompt, SIZES, NAMES, [1.0, 2.0], 6),
        "linearity": c.plot_linearity(lin),
        "hlm": c.plot_hlm(hlm, 20, "pico-13k", "pico-100k"),
    }
    if i is not None:
        lp = q.logprobs[:, i] if p.is_q[i] else np.zeros((3, 8))
        figs["example"] = c.plot_example(p, i, b, lp, SIZES[[0, 2, 5]], [NAMES[j] for j in (0, 2, 5)], 1.0, 5, str)[0]
    return figs


def _apd():
    from apd.chapters import apd as c
    from apd.world.truth import method_label

    grid = [0.05, 0.1, 0.25, 0.5, 1.0]
    rows = ["ELM", *(method_label(m, v) for m in ("CD", "APD") for v in grid), method_label("APD on the fly", 0.05)]
    rng = np.random.default_rng(1)
    truth = pd.DataFrame(
        rng.uniform(1.4, 3.0, (len(rows), 4)), index=rows, columns=[f"{b} (n=80)" for b in "abc"] + ["all"]
    )
    steps = np.arange(300)
    log = pd.DataFrame({"step": steps, **{k: np.exp(-steps / 80) + rng.normal(0, 0.01, 300) for k, _ in c.LOSS_TERMS}})
    return {
        "truth": c.plot_truth(truth, grid, 0.05, c.TRUTH_MEASURES["kl"]),
        "text": c.plot_text(truth[["all"]], grid, 0.05),
        "training_losses": c.plot_training_losses(log, 30),
        "conditioned_losses": c.plot_conditioned_losses(log, 100, 0.8),
    }


def _factuality():
    from apd.chapters import factuality as c

    curves = {"ELM + top-p": ("elm", None), "APD + top-p": ("apd", None), "ELM + top-p k20": ("elm", None)}
    curves.update(
        {"CD T=2 + top-p k20": ("cd", 2.0), "APD + top-p k20": ("apd", 1.0), "CD T=1 + top-p k20": ("cd", 1.0)}
    )
    curves.update({"CD + alpha": ("cd", 2.0), "Temperature + NA": ("elm", None)})
    rows = [
        dict(
            curve=curve,
            role=role,
            T=T,
            threshold="top-p k20" if "k20" in curve else "top-p",
            value=p,
            NE_ER=0.6 + 0.05 * j,
        )
        | {"Dist-2": 0.2 + 0.06 * j + 0.01 * k, "NE_ER_se": 0.02, "true_rate": 0.25 - 0.01 * j, "Rep": 0.01 * j}
        for k, (curve, (role, T)) in enumerate(curves.items())
        for j, p in enumerate((0.4, 0.6, 0.8, 0.95))
    ]
    rows += [
        dict(curve=f"{name} + REAL", role=role, T=T, threshold="REAL", value=t_r, NE_ER=0.7, NE_ER_se=0.02)
        | {"Dist-2": 0.3 + 0.05 * j, "true_rate": 0.2, "Rep": 0.0}
        for role, T, name in (("elm", None, "ELM"), ("cd", 2.0, "CD T=2"), ("apd", 1.0, "APD"))
        for j, t_r in enumerate((1.0, 2.0, 4.0))
    ]
    res = pd.DataFrame(rows)
    title = "The world: factuality against diversity (pico-1.8m expert, 100 prompts x 2 seeds)"
    return {
        "figure4": c.figure4(res, "Dist-2", "NE_ER", "NE_ER (%), lower is better", title, 2.0, [1.0]),
        "figure4_true": c.figure4(res, "Rep", "true_rate", "true claims (%), higher is better", title, 2.0, [1.0]),
        "real": c.figure_real(res, "true claims", "The world with REAL sampling (pico-1.8m expert)", 2.0),
    }


def _ablations():
    from apd.chapters import ablations as c

    names = ["APD", "CD", "alm+elm", "alm+mid+elm", "no-small"]
    table = pd.DataFrame(
        {
            "label": [
                "reference APD",
                "CD",
                "alm+elm: pico-13k, pico-1.8m",
                "alm+mid+elm: pico-13k, pico-100k, pico-1.8m",
                "no-small: pico-13k, pico-336k, pico-793k, pico-1.8m",
            ],
            "group": ["main", "reference", "members", "members", "members"],
            "kl": [2.5605, 2.5610, 2.5611, 2.5612, 2.5608],
            "nll": [2.4365, 2.4327, 2.4367, 2.4365, 2.4366],
            "kl_diff_se": [np.nan, 0.0004, 0.0002, 0.0001, 0.0001],
            "nll_diff_se": [np.nan, 0.0005, 0.0002, 0.0001, 0.0001],
        },
        index=names,
    )
    fig = c.group_figure(table, "members", z=1.96, title="ablation (pico, smoke)")
    ticks = [t.get_text() for ax in fig.axes for t in ax.get_xticklabels() if t.get_text()]
    assert all(len(t.split(".")[-1]) <= 3 for t in ticks), ticks  # no 4-decimal tick noise
    return {"members": fig}


def _dose_response():
    from apd.report import dose_response as dr

    fig, ax = plots.figure(width=6.4, height=4.4)  # as the testbed chapter draws it
    dr.plot(ax, dr.points(dr.read_dose_response(ROOT / "docs" / "testbed" / dr.DOSE_TABLE.name)))
    return {"plot": fig}


def _paper_vs_book():
    from apd.chapters import paper_vs_book as c

    rows = [("head", 0.001, 0.002), ("torso", -0.002, 0.001), ("tail", 0.0, 0.001), ("all", 0.0005, 0.0008)]
    return {"headline": c.plot_headline(rows, expert=(0.005, 0.002))}


CHAPTERS = {
    "theorem1": _theorem1,
    "family": _family,
    "curves": _curves,
    "apd": _apd,
    "factuality": _factuality,
    "ablations": _ablations,
    "testbed": _dose_response,
    "paper_vs_book": _paper_vs_book,
}


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_figures_are_legible_at_column_width(chapter):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fonts and tight-layout chatter; the sizes are what is checked
        figs = CHAPTERS[chapter]()
    small = {name: t for name, fig in figs.items() if (t := plots.text_sizes(fig))["min_rendered_pt"] < MIN}
    assert not small, {name: (t["smallest"], t["min_rendered_pt"]) for name, t in small.items()}
    for name, fig in figs.items():
        assert fig.get_size_inches()[0] <= plots.COLUMN_WIDTH_IN, f"{chapter} {name}: wider than the column"


# -- captions ---------------------------------------------------------------------------------------

FIGURE_DIRECTIVE = re.compile(r"^```\{(?:glue:)?figure\}[^\n]*\n((?::[^\n]*\n)*)\n?(.*?)^```", re.M | re.S)


def _cell_text(cell) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def book_captions() -> list[tuple[str, str]]:
    """``(where, caption)`` of every figure the book's sources caption: the notebooks' figure cells
    (:func:`apd.report.plots.figure_cells`), their markdown figure directives, and those of ``book/``."""
    out = []
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        out += [(f"{path.name} cell {i}", cap) for i, cap, _ in plots.figure_cells(nb)]
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] == "markdown":
                out += [(f"{path.name} cell {i}", m.group(2)) for m in FIGURE_DIRECTIVE.finditer(_cell_text(cell))]
    for path in sorted((ROOT / "book").glob("*.md")):
        out += [(path.name, m.group(2)) for m in FIGURE_DIRECTIVE.finditer(path.read_text())]
    return out


def _same(caption: str) -> str:
    return " ".join(caption.split()).lower()


def test_every_figure_has_a_caption_of_its_own():
    seen: dict[str, str] = {}
    for where, caption in book_captions():
        assert caption.strip(), f"{where}: an empty caption"
        assert _same(caption) not in seen, f"{where} repeats the caption of {seen.get(_same(caption))}: {caption!r}"
        seen[_same(caption)] = where
    assert len(seen) >= 20


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_figure_cell_shows_one_figure(path):
    """myst-nb gives every output of a captioned cell the cell's caption: a cell showing two figures
    (two ``plt.show()``, or one in a loop) would caption both alike. One figure per cell."""
    nb = json.loads(path.read_text())
    for i, _, _ in plots.figure_cells(nb):
        shows = _shows(ast.parse(_cell_text(nb["cells"][i])))
        assert len(shows) <= 1, f"{path.name} cell {i}: {len(shows)} plt.show() calls"
        assert not any(shows), f"{path.name} cell {i}: plt.show() inside a loop"


def _shows(node, in_loop: bool = False) -> list[bool]:
    """One entry per ``plt.show()`` call under ``node``: whether a loop encloses it."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "plt.show":
        return [in_loop]
    in_loop = in_loop or isinstance(node, (ast.For, ast.While, ast.comprehension))
    return [s for child in ast.iter_child_nodes(node) for s in _shows(child, in_loop)]


def test_shows_finds_a_figure_shown_in_a_loop():
    assert _shows(ast.parse("for g in G:\n    f(g)\nif x:\n    plt.show()")) == [False]
    assert _shows(ast.parse("for g in G:\n    if x:\n        plt.show()")) == [True]


def test_book_captions_finds_directives():
    text = "```{figure} a.png\n:name: fig-a\n:alt: words\n\nThe caption, in words.\n```\n"
    assert [m.group(2).strip() for m in FIGURE_DIRECTIVE.finditer(text)] == ["The caption, in words."]


# -- a built book ---------------------------------------------------------------------------------


@pytest.mark.book
def test_built_figures_are_legible_at_column_width(book_html):
    """Every figure a chapter's last run saved recorded its text sizes at column width (house
    figures do, :class:`apd.report.plots.HouseFigure`), all at or above the minimum."""
    from conftest import BOOK_PROFILE

    from apd.build import chapters
    from apd.report.results import last_run_outputs, results_dir

    out, problems, n = results_dir(BOOK_PROFILE) / "figures", [], 0
    for stem in chapters():
        for name in sorted(last_run_outputs(BOOK_PROFILE, stem)["figures"]):
            record = out / f"{name}.text.json"
            if not record.is_file():
                problems.append(f"{stem}: {name} recorded no text sizes")
                continue
            t, n = json.loads(record.read_text()), n + 1
            if t["min_rendered_pt"] is not None and t["min_rendered_pt"] < MIN:
                problems.append(f"{stem}: {name}: {t['smallest']!r} at {t['min_rendered_pt']} pt")
    assert n, f"no figure of the {BOOK_PROFILE} build recorded its text sizes"
    assert not problems, f"figures below {MIN} pt at column width:\n" + "\n".join(problems)


@pytest.mark.book
def test_built_figures_have_captions_of_their_own(book_html):
    from bs4 import BeautifulSoup

    seen: dict[str, str] = {}
    for page in sorted(book_html.rglob("*.html")):
        soup = BeautifulSoup(page.read_text(), "html.parser")
        for fig in soup.find_all("figure"):
            cap = fig.find("figcaption")
            if fig.find("img") is None or cap is None:
                continue
            text = _same(re.sub(r"^\s*Fig(?:ure)?\.?\s*\d+\s*", "", cap.get_text(" ")).rstrip("#¶ "))
            where = f"{page.relative_to(book_html)} ({cap.get_text(' ').split()[:2]})"
            assert text not in seen, f"{where} repeats the caption of {seen[text]}"
            seen[text] = where


@pytest.mark.book
def test_no_image_is_shown_under_two_figure_numbers(book_html):
    """One figure, one number: two captioned figures of the book never show the same picture (the
    same file, or two files with the same bytes), so a reader is never sent to a figure twice."""
    import hashlib

    from bs4 import BeautifulSoup

    seen: dict[str, str] = {}
    n = 0
    for page in sorted(book_html.rglob("*.html")):
        soup = BeautifulSoup(page.read_text(), "html.parser")
        for fig in soup.find_all("figure"):
            img, cap = fig.find("img"), fig.find("figcaption")
            if img is None or cap is None or not img.get("src") or img["src"].startswith("data:"):
                continue
            path = (page.parent / img["src"].split("?")[0]).resolve()
            if not path.is_file():
                continue
            digest, n = hashlib.sha256(path.read_bytes()).hexdigest(), n + 1
            where = f"{page.relative_to(book_html)} ({' '.join(cap.get_text(' ').split()[:2])})"
            assert digest not in seen, f"{where} shows the same image as {seen[digest]}"
            seen[digest] = where
    assert n, f"no captioned figure found in {book_html}"


def test_a_legend_of_bars_tells_them_apart_by_colour():
    fig, ax = plots.figure()
    ax.bar([0, 1], [1, 2], color=plots.COLORS["apd"], label="APD over CD")
    ax.bar([0.4, 1.4], [1, 2], color=plots.COLORS["cd"], label="CD over the ELM")
    assert [t.get_text() for t in plots.legend(ax).get_texts()] == ["APD over CD", "CD over the ELM"]
    ax.bar([0.8], [1], color=plots.COLORS["apd"], label="again")
    with pytest.raises(ValueError, match="'APD over CD' and 'again'"):
        plots.legend(ax)
