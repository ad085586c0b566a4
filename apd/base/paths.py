"""Where the project, its cache and its results live."""

from __future__ import annotations

import os
from pathlib import Path


def project_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (default: cwd) holding ``_toc.yml`` and ``apd/``."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file() and (folder / "apd").is_dir():
            return folder
    return None


def user_cache_dir() -> Path:
    """The platform's per-user cache folder for ``apd``: ``$XDG_CACHE_HOME/apd``, else ``~/.cache/apd``
    (where Hugging Face keeps its own cache, ``~/.cache/huggingface``)."""
    base = os.environ.get("XDG_CACHE_HOME")
    return Path(base).expanduser() / "apd" if base else Path.home() / ".cache" / "apd"


def cache_dir() -> Path:
    """Where trained models and other artifacts are cached: ``$APD_CACHE_DIR``, else the checkout's
    ``cache/`` when the working directory is inside one, else :func:`user_cache_dir` (so an
    installed ``apd`` trains a family once per user, not once per folder).

        >>> import os
        >>> os.environ["APD_CACHE_DIR"] = "/tmp/apd-cache"
        >>> str(cache_dir())
        '/tmp/apd-cache'
        >>> del os.environ["APD_CACHE_DIR"]
    """
    env = os.environ.get("APD_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    root = project_root()
    return (root / "cache") if root else user_cache_dir()
