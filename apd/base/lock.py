"""An exclusive inter-process lock on a file, for writers of a shared cache."""
from __future__ import annotations

import contextlib
from pathlib import Path


@contextlib.contextmanager
def file_lock(path):
    """Hold an exclusive POSIX ``flock`` on ``path`` while the block runs (a no-op without ``fcntl``).

    Two processes asking for the same cached artifact compute it once: the second waits, then
    finds it done.

    Example:
        >>> import tempfile
        >>> with file_lock(Path(tempfile.mkdtemp()) / "x.lock"):
        ...     pass
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover (Windows)
        yield
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
