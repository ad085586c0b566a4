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


def cache_dir() -> Path:
    """``$APD_CACHE_DIR``, else ``<project root>/cache``, else ``./cache``."""
    env = os.environ.get("APD_CACHE_DIR")
    if env:
        return Path(env)
    root = project_root()
    return (root / "cache") if root else Path("cache")
