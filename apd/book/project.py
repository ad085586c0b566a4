"""Where the book's parts are: the checkout (``ROOT``), its chapters in ``_toc.yml`` order, a
chapter's notebook, and the results folder the kernels write to."""

from __future__ import annotations

from pathlib import Path

from apd.base import paths
from apd.base.notebooks import BookError
from apd.base.notebooks import toc_notebooks as _toc_notebooks

ROOT = Path(__file__).resolve().parents[2]


def toc_notebooks(root: Path = ROOT) -> list[str]:
    """Stems of the notebooks listed in ``root/_toc.yml``, in order (:func:`apd.base.notebooks.toc_notebooks`)."""
    return _toc_notebooks(root)


def notebook_path(stem: str, root: Path = ROOT) -> Path:
    path = root / "notebooks" / f"{stem}.ipynb"
    if not path.is_file():
        raise BookError(f"notebook {path} does not exist (listed in _toc.yml or a profile?)")
    return path


def results_root(root: Path = ROOT) -> Path:
    """``$APD_RESULTS_DIR``, else ``<root>/results`` (what the kernels see: they run in ``root``;
    :func:`apd.base.paths.results_root`)."""
    return paths.results_root(root)
