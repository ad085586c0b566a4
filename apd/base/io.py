"""Atomic file writes: a file is either the old version or the complete new one, never a part.

Each writer writes ``<name>.tmp`` beside the target, then renames it over the target
(``os.replace``, atomic on POSIX), creating the parent folder first.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable


def atomic_write(path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)``, then move ``tmp_path`` over ``path``; returns ``path``.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "a" / "x.txt"
        >>> atomic_write(p, lambda tmp: tmp.write_text("hello")).read_text()
        'hello'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)
    return path


def write_json(path, obj: Any, *, indent: int = 2, trailing_newline: bool = False) -> Path:
    """Write ``obj`` as JSON atomically (values JSON cannot hold are written with ``str``).

    Example:
        >>> import tempfile
        >>> p = write_json(Path(tempfile.mkdtemp()) / "r.json", {"kl": 0.5})
        >>> json.loads(p.read_text())
        {'kl': 0.5}
    """
    text = json.dumps(obj, indent=indent, default=str) + ("\n" if trailing_newline else "")
    return atomic_write(path, lambda tmp: tmp.write_text(text))


def torch_save(obj: Any, path) -> Path:
    """``torch.save(obj, path)``, atomically."""
    import torch

    return atomic_write(path, lambda tmp: torch.save(obj, tmp))
