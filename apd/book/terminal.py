"""What the book build shows on the terminal while a chapter runs, and the kernels it starts.

While a chapter executes, its kernel's progress bars (off on the page) report to a file
(``$APD_PROGRESS_FILE``, :mod:`apd.base.progress`); :class:`ChapterProgress` reads it every second and
shows one line: what is running (``pico-25k (2/6)``, step of steps), the time elapsed and an estimate
from the chapter's last run record. On a terminal the line is updated in place (``\\r``); in a log
(not a TTY), and when chapters run side by side (``tty=False``), a plain line, prefixed by the
chapter, is printed when the work changes and at most every 30 s.

    >>> progress_line("family", {"desc": "pico-25k (2/6)", "n": 120, "total": 400, "unit": "step"}, 83, 414)
    '[apd] family: pico-25k (2/6) step 120/400 | 1 min 23 s elapsed, last run 6 min 54 s'

Kernels are started with IPC transport (:class:`IPCKernelManager`): no TCP port and no
"running over TCP without encryption" warning; and shut down without an interrupt when they are
idle, so a successful build prints no "KeyboardInterrupt caught in kernel".
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

from apd.base.progress import PROGRESS_FILE_ENV


#: Seconds a kernel asked to shut down has to exit before it is interrupted (:class:`IPCKernelManager`).
QUIET_EXIT_S = 3.0


class IPCKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel talks over IPC sockets in a private temporary folder, and is
    interrupted at shutdown only when it is still running code."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._ipc_dir = tempfile.mkdtemp(prefix="apd-kernel-")
        self.transport = "ipc"
        self.ip = os.path.join(self._ipc_dir, "k")

    async def _async_shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
        """Ask the kernel to shut down, and interrupt it only if it has not exited after
        :data:`QUIET_EXIT_S` seconds.

        jupyter_client interrupts (SIGINT) every kernel before asking it to shut down. After a
        successful run the kernel may still be finishing its last reply (papermill asks for
        ``kernel_info`` once the last cell has run), and it then logs "KeyboardInterrupt caught in
        kernel" as an error. Here an idle kernel exits when asked and is never interrupted; one
        still running code (a build stopped in the middle of a chapter) is interrupted as before,
        so that a training in it writes its checkpoint, then shut down as jupyter_client does."""
        if now or restart or not self.owns_kernel or not self.has_kernel:
            await super()._async_shutdown_kernel(now=now, restart=restart)
            return
        self.shutting_down = True  # as jupyter_client: the restarter leaves the kernel alone
        self.stop_restarter()
        await self._async_request_shutdown()
        try:
            await asyncio.wait_for(self._async_wait(pollinterval=0.1), timeout=QUIET_EXIT_S)
        except asyncio.TimeoutError:
            await self._async_interrupt_kernel()
        await self._async_finish_shutdown()
        await self._async_cleanup_resources()

    shutdown_kernel = _async_shutdown_kernel

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            shutil.rmtree(self._ipc_dir, ignore_errors=True)

    cleanup_resources = _async_cleanup_resources


def duration(seconds: float) -> str:
    """``'45 s'``, ``'1 min 23 s'``, ``'1 h 02 min'``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def last_wall_time(record_path: Path) -> float | None:
    """The wall time (s) in a chapter's run record, or None when there is none."""
    try:
        return float(json.loads(Path(record_path).read_text())["wall_time_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def progress_line(stem: str, state: dict | None, elapsed: float, estimate: float | None) -> str:
    """One status line: what the chapter's kernel reports, elapsed time, the last run's wall time."""
    what = "executing"
    if state and state.get("desc"):
        what = str(state["desc"])
        if state.get("total"):
            what += f" {state.get('unit') or 'it'} {int(state.get('n') or 0)}/{int(state['total'])}"
    tail = f"{duration(elapsed)} elapsed" + (f", last run {duration(estimate)}" if estimate else "")
    return f"[apd] {stem}: {what} | {tail}"


class ChapterProgress:
    """Context manager around one chapter's execution: sets ``$APD_PROGRESS_FILE`` for the kernel
    and shows :func:`progress_line` on ``stream`` until the chapter ends."""

    def __init__(
        self,
        stem: str,
        folder: Path,
        estimate: float | None = None,
        stream=None,
        interval: float = 1.0,
        log_every: float = 30.0,
        tty: bool | None = None,
    ):
        self.stem, self.estimate = stem, estimate
        self.stream = stream or sys.stdout
        self.path = Path(folder) / f"{stem}.progress.json"
        self.interval, self.log_every = interval, log_every
        # tty=False: plain lines even on a terminal (chapters side by side would overwrite one line)
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)()) if tty is None else bool(tty)
        self._stop = threading.Event()
        self._shown = 0

    def _state(self) -> dict | None:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None

    def _run(self) -> None:
        last_desc, last_print = None, time.time()
        while not self._stop.wait(self.interval):
            state = self._state()
            line = progress_line(self.stem, state, time.time() - self.t0, self.estimate)
            if self.tty:
                width = shutil.get_terminal_size((120, 20)).columns - 1
                line = line[:width]
                self.stream.write("\r" + line + " " * max(0, self._shown - len(line)))
                self.stream.flush()
                self._shown = len(line)
            else:
                desc = (state or {}).get("desc")
                if desc != last_desc or time.time() - last_print >= self.log_every:
                    print(line, file=self.stream, flush=True)
                    last_desc, last_print = desc, time.time()

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        self._saved = os.environ.get(PROGRESS_FILE_ENV)
        os.environ[PROGRESS_FILE_ENV] = str(self.path.resolve())  # the kernel inherits it
        self.t0 = time.time()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        if self.tty and self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
        if self._saved is None:
            os.environ.pop(PROGRESS_FILE_ENV, None)
        else:
            os.environ[PROGRESS_FILE_ENV] = self._saved
        self.path.unlink(missing_ok=True)
        return False
