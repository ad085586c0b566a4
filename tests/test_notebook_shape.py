"""The notebooks stay thin: parameters, narrative, calls into ``apd`` and figures.

Every chapter: no code cell over 25 lines (the ``parameters`` cell aside: one line per
parameter, and papermill needs it whole), a median code cell of at most 12 lines, no function
defined in a notebook (it belongs in ``apd.chapters`` with a test), and at least as many
characters of prose as of code.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MAX_LINES, MAX_MEDIAN = 25, 12


def _cells(path: Path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    prose = [c for c in nb["cells"] if c["cell_type"] == "markdown"]
    return code, prose


def _text(cell) -> str:
    src = cell["source"]
    return (src if isinstance(src, str) else "".join(src)).strip()


def _lines(cell) -> int:
    return len(_text(cell).splitlines())


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 10


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_code_cells_are_short(path):
    code, _ = _cells(path)
    long = [
        (i, _lines(c))
        for i, c in enumerate(code)
        if _lines(c) > MAX_LINES and "parameters" not in c.get("metadata", {}).get("tags", [])
    ]
    assert not long, f"{path.name}: code cells over {MAX_LINES} lines (index, lines): {long}"
    assert statistics.median(_lines(c) for c in code) <= MAX_MEDIAN, f"{path.name}: median code cell too long"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_function_is_defined_in_a_notebook(path):
    code, _ = _cells(path)
    defs = [m for c in code for m in re.findall(r"^\s*(?:async\s+)?def\s+(\w+)", _text(c), flags=re.M)]
    assert not defs, f"{path.name} defines {defs}: move them into apd.chapters with a test"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_prose_is_at_least_as_long_as_code(path):
    code, prose = _cells(path)
    n_code, n_prose = sum(len(_text(c)) for c in code), sum(len(_text(c)) for c in prose)
    assert n_prose >= n_code, f"{path.name}: {n_prose} characters of prose against {n_code} of code"


def _show_calls(source: str):
    """The text of every ``apd.show(...)`` call in ``source`` (parentheses balanced)."""
    for m in re.finditer(r"apd\.show\(", source):
        i, depth = m.end(), 1
        while depth and i < len(source):
            depth += {"(": 1, ")": -1}.get(source[i], 0)
            i += 1
        yield source[m.start() : i]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_table_a_chapter_shows_has_a_title(path):
    """A table on a page says what it is: every ``apd.show`` call in a notebook passes a caption."""
    nb = json.loads(path.read_text())
    untitled = [
        call[:80]
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
        for call in _show_calls("".join(cell["source"]))
        if "caption=" not in call
    ]
    assert not untitled, f"{path.name}: tables without a caption: {untitled}"


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.stem != "tutorial"], ids=lambda p: p.stem)
def test_a_chapter_folds_its_code(path):
    """A chapter's page shows its prose, figures and tables; each code cell's source sits in a closed
    toggle (tagged hide-input or hide-cell; the tutorial shows its code on purpose), but for the last
    line, ``run.finish()``, whose output (the run record) is folded instead."""
    code, _ = _cells(path)
    folded = lambda c: {"hide-input", "hide-cell"} & set(c["metadata"].get("tags", [])) or _text(c) == "run.finish()"  # noqa: E731
    shown = [c["id"] for c in code if not folded(c)]
    assert not shown, f"{path.name}: code cells {shown} would show their source; tag them hide-input"
