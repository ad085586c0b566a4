"""The build's terminal: each chapter's line shows what its kernel is doing (one line updated in
place on a terminal, plain lines in a log), and kernels start without the TCP-encryption warning."""

from __future__ import annotations

import io
import json
import os
import time

from apd.book import terminal
from apd.book.runner import build_book
from test_book_runner import make_project

CELL = """import time
from apd.base.progress import progress_bar
bar = progress_bar(total=3, desc="member-b (2/3)", unit="step", progress=False)
for _ in range(3):
    time.sleep(1.5)
    bar.update(1)
bar.close()
"""


def test_a_chapters_progress_reaches_the_log_and_no_kernel_warning(tmp_path, capfd, monkeypatch):
    monkeypatch.delenv("APD_RESULTS_DIR", raising=False)
    root = make_project(tmp_path, [CELL], {"nb": {}})
    build_book("p", root=root, html=False)
    out, err = capfd.readouterr()
    assert "[apd] nb: member-b (2/3) step " in out, out
    assert "without encryption" not in out + err, err
    assert "\r" not in out  # not a terminal: plain lines


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_the_line_is_updated_in_place(tmp_path):
    stream = FakeTTY()
    with terminal.ChapterProgress("family", tmp_path, estimate=414, stream=stream, interval=0.05) as bar:
        assert os.environ[terminal.PROGRESS_FILE_ENV] == str(bar.path.resolve())
        bar.path.write_text(json.dumps({"desc": "pico-25k (2/6)", "n": 120, "total": 400, "unit": "step"}))
        time.sleep(0.3)
    text = stream.getvalue()
    assert "\r[apd] family: pico-25k (2/6) step 120/400 | 0 s elapsed, last run 6 min 54 s" in text
    assert "\n" not in text and text.endswith("\r")  # one line, cleared when the chapter ends
    assert terminal.PROGRESS_FILE_ENV not in os.environ and not bar.path.exists()


def _shut_down(code: str | None) -> tuple[list, bool]:
    """Start a kernel, ask for its kernel_info as papermill does after the last cell (``code``:
    run that first, without waiting for it), then shut it down; the interrupts it was sent, and
    whether it is still alive."""
    import asyncio

    async def go():
        km = terminal.IPCKernelManager(kernel_name="python3")
        sent, interrupt = [], km._async_interrupt_kernel

        async def counted():
            sent.append(1)
            await interrupt()

        km._async_interrupt_kernel = counted
        await km.start_kernel()
        kc = km.client()
        kc.start_channels()
        try:
            await kc.wait_for_ready(timeout=60)
            if code:
                kc.execute(code)
                await asyncio.sleep(1.0)
            else:
                await kc.kernel_info(reply=True, timeout=30)
            await km.shutdown_kernel()
            return sent, await km.is_alive()
        finally:
            kc.stop_channels()

    return asyncio.run(go())


def test_an_idle_kernel_is_shut_down_without_an_interrupt(capfd):
    """After a successful run the kernel exits when asked: no SIGINT, so no "KeyboardInterrupt
    caught in kernel" on the terminal."""
    sent, alive = _shut_down(None)
    assert sent == [] and not alive
    assert "KeyboardInterrupt" not in capfd.readouterr().err


def test_a_kernel_still_running_code_is_interrupted_at_shutdown():
    """A build stopped in the middle of a chapter: the running cell is interrupted (a training in it
    writes its checkpoint), and the kernel exits."""
    sent, alive = _shut_down("import time\ntime.sleep(60)")
    assert sent == [1] and not alive
