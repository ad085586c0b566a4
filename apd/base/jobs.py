"""Independent jobs side by side: worker processes that share the machine's cores with the other
chapters and pools of one book build.

A *job* is one independent piece of work that is worth a process of its own: a family member's
pretraining, an ALM' variant, a chapter. :func:`run_jobs` runs a list of them in up to
:func:`job_count` spawned worker processes, each with ``threads`` torch threads (one by default: a
job's numbers are then the same whether it runs alone or beside others), and returns their results
in order. With one job, or ``jobs=1``, it runs them in this process, one after another.

Cores are shared through *slots*. The build (``make book``) makes a folder of :func:`job_count` slot files
(``$APD_SLOTS``); every process that computes holds one (a chapter's kernel from
:func:`hold_slot`, each worker while its job runs), and a kernel that waits on its workers lends
its slot to them. So a build never runs more computing processes than it has slots, however many
chapters and pools are running. Outside a build (your own notebook) there are no slots, and a pool
uses :func:`job_count` workers.

    >>> run_jobs(abs, [-1, 2, -3], jobs=1)
    [1, 2, 3]
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

JOBS_ENV = "APD_JOBS"  # how many jobs run at once (default: the CPU count)
SLOTS_ENV = "APD_SLOTS"  # the build's folder of slot files

_held: dict[str, object] = {}  # this process's slot: {"file": the open, locked slot file}


def job_count(jobs: int | str | None = None) -> int:
    """How many jobs run at once: ``jobs`` when given, else ``$APD_JOBS``, else the CPU count.

    Example:
        >>> job_count(3)
        3
    """
    value = jobs if jobs is not None else os.environ.get(JOBS_ENV) or os.cpu_count() or 1
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"the job count must be a whole number >= 1, got {value!r} (JOBS or ${JOBS_ENV})") from None
    if n < 1:
        raise ValueError(f"the job count must be >= 1, got {n} (JOBS or ${JOBS_ENV})")
    return n


def make_slots(folder: Path, n: int) -> Path:
    """Create ``folder`` with ``n`` slot files (the build, once per build); returns it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("slot-*"):
        old.unlink(missing_ok=True)
    for i in range(n):
        (folder / f"slot-{i}").touch()
    return folder


def _acquire(folder: Path, poll: float = 0.2):
    """Lock one free slot file of ``folder`` and return it open; wait while every slot is taken."""
    import fcntl

    slots = sorted(folder.glob("slot-*"))
    if not slots:
        raise RuntimeError(f"{folder} holds no slot files; the build that made it has ended")
    while True:
        for path in slots:
            f = open(path, "a+")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.close()
                continue
            return f
        time.sleep(poll)


def _slots_folder() -> Path | None:
    folder = os.environ.get(SLOTS_ENV)
    if not folder:
        return None
    try:
        import fcntl  # noqa: F401
    except ImportError:  # pragma: no cover (Windows: no slots, jobs run as the pool decides)
        return None
    return Path(folder)


def hold_slot() -> bool:
    """Take one of the build's slots for this process until it exits (a chapter's kernel, at the
    start of its run); waits for a free one. Returns False outside a build (no ``$APD_SLOTS``)."""
    folder = _slots_folder()
    if folder is None:
        return False
    if "file" not in _held:
        _held["file"] = _acquire(folder)
    return True


@contextlib.contextmanager
def lent_slot(what: str = "workers"):
    """While the block runs, give this process's slot (if it holds one) to others: it is waiting
    on workers that take slots of their own (``what`` names them). Takes a slot again afterwards."""
    held = _held.pop("file", None)
    if held is not None:
        held.close()  # closing the file releases its lock
    try:
        yield
    finally:
        if held is not None:
            _held["file"] = _acquire(Path(os.environ[SLOTS_ENV]))


@contextlib.contextmanager
def slot():
    """Hold one of the build's slots while the block runs (a no-op outside a build)."""
    folder = _slots_folder()
    if folder is None or "file" in _held:
        yield
        return
    _held["file"] = _acquire(folder)  # held like hold_slot's: a pool started inside lends it
    try:
        yield
    finally:
        held = _held.pop("file", None)
        if held is not None:
            held.close()


#: what a job reads from its caller's environment (a worker may outlive the settings it started with)
_PASSED_ENV = (JOBS_ENV, SLOTS_ENV)


_busy = {"job": False}  # in a worker: whether a job is running


def _interrupted(signum, frame) -> None:
    """Ctrl-C in a worker: stops a running job (KeyboardInterrupt, which a training turns into a
    checkpoint); an idle worker leaves at once, without a traceback."""
    if _busy["job"]:
        raise KeyboardInterrupt
    os._exit(130)


def in_worker_job() -> bool:
    """Whether this process is one of :func:`run_jobs`' workers, running a job. A job starts no
    workers of its own (:func:`run_jobs` runs a job's jobs in its worker): the build's slots are
    already spread over the workers, and a worker's own idle pool would keep its exit, and the
    caller's, waiting forever.

    Example:
        >>> in_worker_job()
        False
    """
    return _busy["job"]


def _start_worker() -> None:
    import signal
    import threading

    signal.signal(signal.SIGINT, _interrupted)
    parent = os.getppid()

    def watch_parent() -> None:  # a worker whose parent died (killed, not interrupted) exits too
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(70)

    threading.Thread(target=watch_parent, daemon=True, name="apd-parent-watch").start()


def _worker(fn: Callable, item, threads: int | None, env: dict):
    """One job in a worker process: the caller's settings, its threads, a slot, the call."""
    import torch

    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    if threads is not None:
        torch.set_num_threads(int(threads))
    _busy["job"] = True
    try:
        with slot():
            out = fn(item)
    finally:
        _busy["job"] = False
    return out


def run_jobs(
    fn: Callable,
    items: Sequence,
    *,
    jobs: int | None = None,
    names: Sequence[str] | None = None,
    threads: int | None = 1,
) -> list:
    """``[fn(item) for item in items]``, the calls side by side in up to ``jobs`` worker processes.

    ``fn`` must be importable (a module-level function) and ``items`` and results picklable: the
    workers are spawned, not forked. ``threads``: torch threads in each worker (None: torch's
    default). Items start in the order given (put the longest first). With ``jobs=1`` (or
    :func:`job_count` 1), a single item, or inside a worker's job (:func:`in_worker_job`: a worker's
    own pool would hold its exit forever) the calls run here, in order, with this process's threads.
    An error in a job is raised here, naming the job (``names``, default ``fn`` and the item's index).

    Example (two spawned workers):
        >>> run_jobs(len, ["abc", "de", "f"], jobs=2)
        [3, 2, 1]
    """
    items = list(items)
    names = [f"{getattr(fn, '__name__', 'job')}[{i}]" for i in range(len(items))] if names is None else list(names)
    if getattr(fn, "__module__", None) == "__main__" and job_count(jobs) > 1 and len(items) > 1:
        raise ValueError(
            f"run_jobs runs {getattr(fn, '__name__', fn)!r} in spawned workers, which cannot import it from "
            "__main__ (a script or a notebook); define it in a module of its own and import it from there"
        )
    if len(names) != len(items):
        raise ValueError(f"names has {len(names)} entries for {len(items)} items")
    n = 1 if in_worker_job() else min(job_count(jobs), len(items))  # a job's jobs: in its worker
    if n <= 1:
        return [fn(item) for item in items]
    with lent_slot(", ".join(names[:3]) + (", ..." if len(names) > 3 else "")), _main_not_rerun():
        pool = _pool(n)
        env = {key: os.environ.get(key) for key in _PASSED_ENV}
        futures = [pool.submit(_worker, fn, item, threads, env) for item in items]
        try:
            results = []
            for future, name in zip(futures, names):
                try:
                    results.append(future.result())
                except Exception as err:
                    raise JobFailed(name, err) from err
            return results
        except BaseException:
            for future in futures:
                future.cancel()
            if not isinstance(sys.exc_info()[1], JobFailed):  # interrupted: the workers go too
                _shutdown()
            raise


_pools: dict[int, object] = {}  # worker count -> this process's pool, kept for the next run_jobs


def _pool(n: int):
    """This process's pool of ``n`` spawned workers: started once (a worker imports torch in seconds)
    and reused by every later :func:`run_jobs` with the same count."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = _pools.get(n)
    if pool is None or getattr(pool, "_broken", False):
        pool = _pools[n] = ProcessPoolExecutor(
            max_workers=n, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker
        )
    return pool


@atexit.register
def _shutdown() -> None:
    """Stop this process's workers."""
    for pool in _pools.values():
        pool.shutdown(wait=False, cancel_futures=True)
    _pools.clear()


@contextlib.contextmanager
def _main_not_rerun():
    """Spawned workers run the caller's main script again unless it looks interactive; a script
    without ``if __name__ == "__main__":`` would then start its whole work again in each worker.
    While the pool starts its workers, ``__main__`` has no file and no spec, so they import only
    what the jobs need (``fn`` lives in an importable module)."""
    import sys

    main = sys.modules.get("__main__")
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if main is not None and k in main.__dict__}
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__dict__["__spec__"] = None
        yield
    finally:
        if main is not None:
            main.__dict__.pop("__spec__", None)
            main.__dict__.update(saved)


class JobFailed(RuntimeError):
    """A job of :func:`run_jobs` raised; ``name`` says which, the cause is chained."""

    def __init__(self, name: str, err: BaseException):
        super().__init__(f"job {name} failed: {type(err).__name__}: {err}")
        self.name = name


__all__ = [
    "JOBS_ENV",
    "SLOTS_ENV",
    "job_count",
    "make_slots",
    "hold_slot",
    "lent_slot",
    "slot",
    "run_jobs",
    "JobFailed",
]
