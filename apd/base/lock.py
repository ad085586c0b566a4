"""Exclusive inter-process locks on files: for writers of a shared cache, and for one book build
per checkout and profile at a time."""

from __future__ import annotations

import contextlib
from pathlib import Path


class LockBusy(RuntimeError):
    """Another process holds the lock; ``holder`` is what it wrote into the lock file."""

    def __init__(self, path, holder: str):
        super().__init__(f"{path} is held by {holder or 'another process'}")
        self.path, self.holder = Path(path), holder


@contextlib.contextmanager
def file_lock(path, holder: str | None = None, *, wait: bool = True, on_busy=None):
    """Hold an exclusive POSIX ``flock`` on ``path`` while the block runs (a no-op without ``fcntl``).
    The lock dies with its process, so a killed holder never leaves it stuck.

    Two processes asking for the same cached artifact compute it once: the second waits, then
    finds it done. ``holder``: one line saying who holds the lock, written into the file while it
    is held (the build's build lock). When another process holds it, ``on_busy(its holder
    line)`` is called, then this waits for it (``wait=True``) or raises :class:`LockBusy`
    (``wait=False``).

    Example:
        >>> import tempfile
        >>> with file_lock(Path(tempfile.mkdtemp()) / "x.lock"):
        ...     pass
        >>> with file_lock(Path(tempfile.mkdtemp()) / "b.lock", "pid 1", wait=False):
        ...     pass
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover (Windows)
        yield
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            other = f.read().strip()
            if on_busy is not None:
                on_busy(other)
            if not wait:
                raise LockBusy(path, other) from None
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            if holder is not None:
                f.seek(0)
                f.truncate()
                f.write(holder + "\n")
                f.flush()
            yield
        finally:
            if holder is not None:
                with contextlib.suppress(OSError):
                    f.seek(0)
                    f.truncate()
            fcntl.flock(f, fcntl.LOCK_UN)
