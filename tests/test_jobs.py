"""apd.base.jobs: jobs side by side in spawned workers, in order, with their errors named, within the
build's slots, and without running a caller's unguarded script again."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from apd.base import jobs


def napping(seconds: float) -> tuple[float, float]:
    """A job: sleep, return (start, end)."""
    start = time.time()
    time.sleep(seconds)
    return start, time.time()


def failing(x):
    raise ValueError(f"bad item {x}")


def threads(_):
    import torch

    return torch.get_num_threads()


def pid(_):
    return os.getpid()


def nested(x):
    """A job that runs jobs of its own: (their results, the pids that ran them, this worker's pid)."""
    return jobs.run_jobs(abs, [-x, -2 * x], jobs=2), jobs.run_jobs(pid, [0, 1], jobs=2), os.getpid()


def test_results_come_back_in_order_and_each_job_has_one_thread():
    assert jobs.run_jobs(abs, [-3, 2, -1], jobs=2) == [3, 2, 1]
    assert jobs.run_jobs(threads, [0, 1], jobs=2) == [1, 1]


def test_one_job_runs_here_in_order(monkeypatch):
    seen = []
    monkeypatch.setattr(os, "getpid", lambda: 1)  # nothing is spawned: the calls see this process
    assert jobs.run_jobs(lambda x: seen.append(x) or x * 2, [1, 2, 3], jobs=1) == [2, 4, 6]
    assert seen == [1, 2, 3]


def test_an_error_names_its_job():
    with pytest.raises(jobs.JobFailed, match=r"job second failed: ValueError: bad item 2"):
        jobs.run_jobs(failing, [2, 3], jobs=2, names=["second", "third"])
    assert jobs.run_jobs(abs, [-1, -2], jobs=2) == [1, 2]  # the pool still works afterwards


def test_bad_job_counts_are_refused(monkeypatch):
    with pytest.raises(ValueError, match="job count must be >= 1"):
        jobs.job_count(0)
    monkeypatch.setenv("APD_JOBS", "two")
    with pytest.raises(ValueError, match=r"whole number >= 1, got 'two' \(JOBS or \$APD_JOBS\)"):
        jobs.job_count()


@pytest.mark.parametrize("n_slots,overlap", [(1, False), (2, True)])
def test_slots_bound_how_many_jobs_compute_at_once(tmp_path, monkeypatch, n_slots, overlap):
    """Two workers, one job each: with one slot they take turns, with two they overlap."""
    monkeypatch.setenv("APD_SLOTS", str(jobs.make_slots(tmp_path / "slots", n_slots)))
    (a0, a1), (b0, b1) = jobs.run_jobs(napping, [1.0, 1.0], jobs=2, names=["a", "b"])
    assert (max(a0, b0) < min(a1, b1)) == overlap


def test_a_script_without_a_main_guard_is_not_run_again_by_the_workers(tmp_path):
    """Spawned workers would run an unguarded script again (and here wait for its lock forever)."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import fcntl
            from apd.base.jobs import run_jobs
            lock = open({str(tmp_path / "x.lock")!r}, "a+")
            fcntl.flock(lock, fcntl.LOCK_EX)  # a second run of this script would block here
            print(run_jobs(abs, [-1, -2], jobs=2))
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1, 2]"


def test_jobs_inside_a_workers_job_run_in_that_worker_and_the_caller_exits(tmp_path):
    """A worker's own pool would keep its exit, and so its caller's, waiting forever: a job's jobs run
    in the worker, one after another, whatever the job count."""
    script = tmp_path / "nesting.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(Path(__file__).parent)!r})
            from apd.base.jobs import run_jobs
            import test_jobs
            if __name__ == "__main__":
                for values, pids, worker in run_jobs(test_jobs.nested, [1, 2], jobs=2):
                    assert pids == [worker, worker], (pids, worker)
                    print(values)
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[1, 2]", "[2, 4]"]


def test_workers_exit_when_their_parent_is_killed(tmp_path):
    """A build killed outright (SIGKILL, or SIGTERM in a shell that ignores SIGINT) leaves no worker
    training on: each worker watches its parent and exits when it is gone."""
    (tmp_path / "napper.py").write_text(
        textwrap.dedent(
            f"""
            import os, time
            def nap(seconds):
                open(os.path.join({str(tmp_path)!r}, f"worker-{{os.getpid()}}"), "w").close()
                time.sleep(seconds)
            """
        )
    )
    script = tmp_path / "parent.py"
    script.write_text(
        "from napper import nap\nfrom apd.base.jobs import run_jobs\nrun_jobs(nap, [120, 120], jobs=2)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    parent = subprocess.Popen([sys.executable, str(script)], env=env, cwd=tmp_path)
    try:
        deadline = time.time() + 90
        while len(list(tmp_path.glob("worker-*"))) < 2 and time.time() < deadline:
            time.sleep(0.2)
        pids = [int(p.name.split("-")[1]) for p in tmp_path.glob("worker-*")]
        assert len(pids) == 2, "the workers did not start"
    finally:
        parent.kill()
        parent.wait()

    def alive(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return not open(f"/proc/{pid}/stat").read().split()[2] == "Z"

    deadline = time.time() + 15
    while any(alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(alive(p) for p in pids), "a worker outlived its killed parent"
