"""Downloadable notebooks carry relative paths only (no path of the machine that built the book)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apd.build import portable_notebook
from apd.build import chapters

REPO = Path(__file__).resolve().parents[1]


def test_portable_notebook_rewrites_every_absolute_path(monkeypatch, tmp_path):
    root = tmp_path / "proj"
    cache = tmp_path / "elsewhere" / "cache"
    monkeypatch.setenv("APD_CACHE_DIR", str(cache))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    nb = {
        "metadata": {
            "papermill": {
                "input_path": f"{root}/notebooks/qa.ipynb",
                "output_path": f"{root}/_build/smoke/book/notebooks/qa.partial.ipynb",
                "parameters": {"data_dir": str(root)},
            }
        },
        "cells": [
            {
                "cell_type": "code",
                "source": [f"path = '{root}/results/smoke/qa.json'"],
                "outputs": [
                    {"name": "stdout", "text": [f"saved {cache}/families/pico-1 and {tmp_path}/home/x.txt\n"]},
                    {"ename": "OSError", "traceback": [f'File "{root}/apd/x.py", line 3']},
                ],
            }
        ],
    }
    out = portable_notebook(nb, "qa", root / "_build" / "smoke" / "book" / "notebooks" / "qa.ipynb", root)
    text = json.dumps(out)
    assert str(tmp_path) not in text, text
    assert out["metadata"]["papermill"]["input_path"] == "notebooks/qa.ipynb"
    assert out["metadata"]["papermill"]["output_path"] == "_build/smoke/book/notebooks/qa.ipynb"
    assert out["metadata"]["papermill"]["parameters"]["data_dir"] == "."
    assert out["cells"][0]["source"] == ["path = 'results/smoke/qa.json'"]
    assert out["cells"][0]["outputs"][0]["text"] == ["saved $APD_CACHE_DIR/families/pico-1 and ~/x.txt\n"]
    assert out["cells"][0]["outputs"][1]["traceback"] == ['File "apd/x.py", line 3']


@pytest.mark.book
def test_the_books_downloadable_notebooks_carry_no_absolute_path(root, smoke_html):
    """The executed notebooks of the smoke build and the copies its download button serves."""
    machine = {p for p in (str(root), str(root.resolve()), str(Path.home())) if len(p) > 1}
    files = sorted((root / "_build" / "smoke" / "book" / "notebooks").glob("*.ipynb"))
    files += sorted((smoke_html / "_sources").rglob("*.ipynb"))
    files = [f for f in files if not f.name.endswith(".partial.ipynb")]
    assert len(files) >= len(chapters()), files
    for path in files:
        text = path.read_text()
        found = [m for m in machine if m in text]
        assert not found, f"{path.relative_to(root)} names {found}"
