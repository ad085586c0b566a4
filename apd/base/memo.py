"""Results of pure computations cached on disk, keyed by their arguments and the code that made them.

A chapter that recomputes a deterministic table (fits on synthetic families, say) calls
:func:`memoized` instead: the first call computes and saves the value, a later call with the same
key reads it back. The key holds the caller's arguments and a digest of the source files of the
modules named, so an edit to the fitter invalidates the cache while a rerun of the notebook does
not. Values are pickled (``pandas`` frames keep their ``attrs``), written atomically with a digest;
a damaged file is set aside and the value computed again.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import pickle
import sys
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from apd.base.io import atomic_write, check_file, set_aside
from apd.base.lock import LockBusy, file_lock
from apd.base.paths import cache_dir

T = TypeVar("T")

#: Set to "1" (the book's runner does) to cache the family's scores (:mod:`apd.family.digest`).
SCORES_ENV = "APD_MEMO_SCORES"


def code_digest(modules: Sequence[str]) -> str:
    """SHA-256 (first 16 hex digits) of the source files of ``modules`` (dotted names; a package
    counts its ``__init__.py``), with the Python version, in the order given.

    Example:
        >>> a = code_digest(["apd.base.memo"]); len(a), a == code_digest(["apd.base.memo"])
        (16, True)
        >>> code_digest(["apd.base.memo"]) != code_digest(["apd.base.memo", "apd.base.io"])
        True
    """
    if not modules:
        raise ValueError("no modules named; pass the modules whose code makes the value, e.g. ['apd.core.curves'].")
    h = hashlib.sha256(f"{sys.version_info[:2]}".encode())
    for name in modules:
        path = getattr(importlib.import_module(name), "__file__", None)
        if path is None:
            raise ValueError(f"{name} has no source file to digest; name a module of the apd package.")
        h.update(name.encode())
        h.update(Path(path).read_bytes())
    return h.hexdigest()[:16]


def memo_key(kind: str, parts: Any, modules: Sequence[str]) -> str:
    """The cache key of a value: ``kind``, the JSON of ``parts`` (its arguments) and the digest of
    ``modules`` (:func:`code_digest`)."""
    blob = json.dumps([kind, parts, code_digest(modules)], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def memoized(
    kind: str,
    parts: Any,
    modules: Sequence[str],
    compute: Callable[[], T],
    root: Path | None = None,
    max_bytes: int | None = None,
) -> T:
    """``compute()``, or its value saved by an earlier call with the same ``kind``, ``parts`` and code of
    ``modules``: ``<cache>/memo/<kind>/<key>.pkl`` (:func:`apd.base.paths.cache_dir`, or ``root``).

    ``parts`` must hold every argument that changes the value (JSON-able, e.g. a dict of them);
    ``modules`` the modules whose code computes it. Only pure, deterministic computations belong
    here: the cached value is returned as it was saved. Two processes asking for the same value at
    once compute it once: the second waits on ``<key>.lock``, then reads it. ``max_bytes``: after
    the call, the least recently used values of ``kind`` are removed until its folder holds at
    most this many bytes (the value just used stays); None keeps every value.

    Example:
        >>> import tempfile
        >>> root, calls = Path(tempfile.mkdtemp()), []
        >>> f = lambda: calls.append(1) or {"x": 2}
        >>> memoized("demo", {"n": 1}, ["apd.base.memo"], f, root), memoized("demo", {"n": 1}, ["apd.base.memo"], f, root)
        ({'x': 2}, {'x': 2})
        >>> len(calls)
        1
    """
    if not kind or "/" in kind:
        raise ValueError(f"kind must be a plain folder name, got {kind!r}; e.g. 'known-answer-recovery'.")
    folder = (Path(root) if root is not None else cache_dir()) / "memo" / kind
    key = memo_key(kind, parts, modules)
    with file_lock(folder / f"{key}.lock"):  # two processes asking at once: one computes, one reads
        value = _read_or_compute(folder / f"{key}.pkl", kind, compute)
    if max_bytes is not None:
        evict(folder, max_bytes, keep=folder / f"{key}.pkl")
    return value


def evict(folder: Path, max_bytes: int, keep: Path | None = None) -> list[Path]:
    """Remove the least recently used values (``*.pkl``, by modification time: a read touches its
    file) of one kind's ``folder`` until it holds at most ``max_bytes``, never ``keep`` nor a
    value another process is reading or writing (its lock is held); returns those removed.

    Example:
        >>> import tempfile, os
        >>> folder = Path(tempfile.mkdtemp())
        >>> for i, name in enumerate(["old", "mid", "new"]):
        ...     _ = (folder / f"{name}.pkl").write_bytes(b"x" * 100)
        ...     os.utime(folder / f"{name}.pkl", (i, i))
        >>> [p.name for p in evict(folder, 150)], sorted(p.name for p in folder.glob("*.pkl"))
        (['old.pkl', 'mid.pkl'], ['new.pkl'])
    """
    stats = {}
    for p in folder.glob("*.pkl"):
        try:
            stats[p] = p.stat()
        except FileNotFoundError:  # removed by another process meanwhile
            continue
    values = sorted(stats, key=lambda p: stats[p].st_mtime)
    total, removed = sum(st.st_size for st in stats.values()), []
    for p in values:
        if total <= max_bytes:
            break
        if keep is not None and p == keep:
            continue
        try:
            with file_lock(p.with_suffix(".lock"), wait=False):
                size = p.stat().st_size
                p.unlink()
                p.with_name(p.name + ".sha256").unlink(missing_ok=True)
        except (LockBusy, FileNotFoundError):
            continue
        total -= size
        removed.append(p)
    return removed


def _read_or_compute(path: Path, kind: str, compute: Callable[[], T]) -> T:
    if check_file(path, f"cached {kind} value", "computing it again"):
        try:
            with open(path, "rb") as fh:
                value = pickle.load(fh)
            os.utime(path)  # recently used: the last to be evicted
            return value
        except Exception as err:  # a file that does not unpickle is damaged, whatever its digest says
            set_aside(path, f"cached {kind} value", f"it does not load: {err}", "computing it again")
    value = compute()

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)

    atomic_write(path, write, digest=True)
    return value
