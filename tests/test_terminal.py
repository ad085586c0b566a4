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
