"""Where the book's parts are: the checkout (``ROOT``), its chapters in ``_toc.yml`` order, its profiles, a
chapter's notebook, and the results folder the kernels write to.

An installed wheel has no ``_toc.yml``, notebooks or ``profiles/`` beside the package: it carries the
checkout's profiles as ``apd/book/packaged_profiles/`` (``setup.py``), found by :func:`profiles_dir`, and
:func:`is_checkout` says whether the book's sources are there to build."""

from __future__ import annotations

from pathlib import Path

from apd.base import paths
from apd.base.notebooks import BookError
from apd.base.notebooks import toc_notebooks as _toc_notebooks

ROOT = Path(__file__).resolve().parents[2]
#: The profiles an installed wheel carries (copied from the checkout's ``profiles/`` at build time;
#: absent in a checkout).
PACKAGED_PROFILES = Path(__file__).resolve().parent / "packaged_profiles"


def is_checkout(root: Path = ROOT) -> bool:
    """Whether ``root`` holds the book's sources (its ``_toc.yml``): a checkout, not an installed wheel."""
    return (Path(root) / "_toc.yml").is_file()


def profiles_dir(root: Path = ROOT) -> Path:
    """The folder of the profiles: ``root/profiles`` (a checkout, or a project of its own in tests);
    for the installed package (``root`` is ``ROOT`` and the wheel carries them), :data:`PACKAGED_PROFILES`."""
    if Path(root) == ROOT and PACKAGED_PROFILES.is_dir():
        return PACKAGED_PROFILES
    return Path(root) / "profiles"


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
