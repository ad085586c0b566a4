"""Every figure of the book has a caption and alt text in words (cell metadata read by myst-nb),
and a legend never draws two entries alike (apd.report.plots)."""

import json
import re
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

from apd.report import plots

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_figure_has_a_caption_and_alt_text(path):
    nb = json.loads(path.read_text())
    for i, caption, alt in plots.figure_cells(nb):
        assert len(caption.split()) >= 6, f"{path.name} cell {i}: no caption (apd.report.plots.caption_metadata)"
        assert len(alt.split()) >= 4 and not re.search(r"\.(png|pdf|svg)\b|[0-9a-f]{16}", alt), (
            f"{path.name} cell {i}: alt text is not words: {alt!r}"
        )


def test_figure_cells_set_no_label():
    """myst-nb wraps every output of a cell with figure metadata in a figure: a label there would be
    repeated by a cell's second output (a duplicate target, a build error); the numbering hook
    (apd.report.plots.sphinx_setup) numbers figures without labels."""
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        for i, _, _ in plots.figure_cells(nb):
            assert "name" not in nb["cells"][i]["metadata"]["mystnb"]["figure"], f"{path.name} cell {i}"


def test_figure_cells_finds_calls_of_figure_functions():
    nb = {
        "cells": [
            {"cell_type": "code", "source": "def f(x):\n    plt.plot(x)\n    plt.show()\n"},
            {
                "cell_type": "code",
                "source": "if ok:\n    f(1)\n",
                "metadata": plots.caption_metadata("A caption of six words here.", "a line"),
            },
            {"cell_type": "code", "source": "x = 1"},
        ]
    }
    assert plots.figure_cells(nb) == [(1, "A caption of six words here.", "a line")]


def test_legend_tells_lines_apart():
    fig, ax = plots.figure()
    ax.plot([0, 1], color="k", label="ELM + top-p", ls="--", marker="s")
    ax.plot([1, 0], color="k", label="ELM + REAL", marker="o")
    assert len(plots.legend(ax).get_texts()) == 2
    ax.plot([1, 1], color="k", label="again", marker="o")
    with pytest.raises(ValueError, match="'ELM \\+ REAL' and 'again'"):
        plots.legend(ax)
