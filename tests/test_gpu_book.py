"""scripts/gpu_book.py, the one prepared command for a lent GPU: the build is interrupted when its
budget is spent and what it did still comes back, in at most eight files (the device tool's limit).
The whole path on the CPU is its ``--dry-run`` (docs/gpu-profile.md)."""

import doctest
import importlib.util
import json
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("gpu_book", ROOT / "scripts" / "gpu_book.py")
gpu_book = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_book)

# a stand-in build: prints a line, then waits; an interrupt makes it say so and exit 130
SLOW = (
    "import signal, sys, time\n"
    "def stop(*_):\n"
    "    print('interrupted: bookkeeping done', flush=True); sys.exit(130)\n"
    "signal.signal(signal.SIGINT, stop)\n"
    "print('[apd] family: executing', flush=True)\n"
    "time.sleep(60)\n"
)


def test_examples():
    assert doctest.testmod(gpu_book).failed == 0


def test_the_budget_interrupts_the_build_and_its_output_is_kept(tmp_path):
    log = tmp_path / "build.log"
    t0 = time.time()
    rc, stopped = gpu_book._build([sys.executable, "-c", SLOW], {}, log, deadline=time.time() + 1.5)
    assert (rc, stopped) == (130, True) and time.time() - t0 < 30
    assert log.read_text().splitlines() == ["[apd] family: executing", "interrupted: bookkeeping done"]
    rc, stopped = gpu_book._build([sys.executable, "-c", "print('done')"], {}, log, deadline=time.time() + 60)
    assert (rc, stopped) == (0, False) and log.read_text() == "done\n"


def test_the_report_is_at_most_eight_files_with_the_results_and_notebooks(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    (root / "_build" / "p" / "book" / "notebooks").mkdir(parents=True)
    (root / "_build" / "p" / "book" / "notebooks" / "family.ipynb").write_text("{}")
    (root / "results" / "p").mkdir(parents=True)
    (root / "results" / "p" / "family.json").write_text("{}")
    monkeypatch.setattr(gpu_book, "ROOT", root)
    out = tmp_path / "out"
    out.mkdir()
    (out / "build.log").write_text("log")
    gpu_book.collect(out, "p", {"APD_RESULTS_DIR": str(root / "results")}, {"exit_status": 130})
    files = sorted(p.name for p in out.iterdir())
    assert files == [
        "build.log",
        "machine.txt",
        "notebooks.tar.gz",
        "results.tar.gz",
        "summary.json",
    ]
    with tarfile.open(out / "results.tar.gz") as tar:
        assert sorted(tar.getnames()) == ["results/p", "results/p/family.json"]
    with tarfile.open(out / "notebooks.tar.gz") as tar:
        assert sorted(tar.getnames()) == ["notebooks", "notebooks/family.ipynb"]
    assert json.loads((out / "summary.json").read_text()) == {"exit_status": 130}
    assert "CPU cores" in (out / "machine.txt").read_text()


def test_designs_side_by_side_are_interrupted_together_and_their_logs_joined(tmp_path):
    log = tmp_path / "dose.log"
    quick = [sys.executable, "-c", "print('[dose] exact truth, training seed 0 measured')"]
    t0 = time.time()
    codes, stopped = gpu_book._side_by_side([[sys.executable, "-c", SLOW], quick], {}, log, deadline=time.time() + 2)
    assert (codes, stopped) == ([130, 0], True) and time.time() - t0 < 30
    text = log.read_text()
    assert "(exit status 130)\n[apd] family: executing\ninterrupted: bookkeeping done" in text
    assert "(exit status 0)\n[dose] exact truth, training seed 0 measured" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dose.log"]  # the parts are joined, then removed


def test_the_dose_command_knows_the_studys_designs():
    from apd.report.dose_response import DESIGNS

    assert gpu_book.design_names(dict(gpu_book.os.environ, PYTHONPATH=str(ROOT))) == [d.name for d in DESIGNS]
    assert gpu_book.table_rows(ROOT / "nowhere.csv") == 0
