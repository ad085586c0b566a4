"""apd.book.timing: a build's parallel efficiency from its job log, and the machine sampled while it runs."""

import doctest
import json

from apd.base import jobs
from apd.book import timing


def test_examples():
    assert doctest.testmod(timing).failed == 0


def test_a_chapter_waiting_on_its_workers_is_not_work(tmp_path, monkeypatch):
    """A process holding a slot lends it to its workers; the wait is logged as waiting, the jobs as work."""
    monkeypatch.setenv("APD_SLOTS", str(jobs.make_slots(tmp_path / "slots", 2)))
    log = tmp_path / "jobs.jsonl"
    monkeypatch.setenv("APD_JOBS_LOG", str(log))
    assert jobs.hold_slot()
    try:
        jobs.run_jobs(abs, [-1, -2], jobs=2, names=["a", "b"])
    finally:
        jobs._held.pop("file").close()
    names = sorted(j["name"] for j in timing.read_jobs(log))
    assert names == ["a", "b", "waiting: a, b"]
    t = timing.build_timing(timing.read_jobs(log), wall=10.0, slots=2)
    waited = next(j for j in timing.read_jobs(log) if j["name"].startswith("waiting"))
    assert t["work_s"] == round(sum(j["seconds"] for j in t["jobs"]) - (waited["end"] - waited["start"]), 2)
    assert sorted(j["name"] for j in t["jobs"]) == ["a", "b"]


def test_a_cut_log_line_is_skipped(tmp_path):
    log = tmp_path / "jobs.jsonl"
    log.write_text(json.dumps({"name": "x", "start": 0, "end": 1}) + '\n{"name": "y", "sta')
    assert [j["name"] for j in timing.read_jobs(log)] == ["x"]
    assert timing.read_jobs(tmp_path / "none.jsonl") == []


def test_the_sampler_measures_each_core():
    with timing.MachineSampler(interval=0.05) as m:
        sum(range(200_000))
    busy = m.result()["core_busy"]
    assert busy is None or (len(busy) >= 1 and all(0.0 <= b <= 1.0 for b in busy))


def test_jobs_run_in_the_callers_process_are_not_counted_twice(tmp_path, monkeypatch):
    """With one job at a time the pool runs its jobs in the chapter's own process: already its time."""
    monkeypatch.setenv("APD_JOBS_LOG", str(tmp_path / "jobs.jsonl"))
    start = __import__("time").time()
    jobs.run_jobs(abs, [-1, -2], jobs=1, names=["a", "b"])
    jobs.log_job("chapter x", start, start + 5.0)
    t = timing.build_timing(timing.read_jobs(tmp_path / "jobs.jsonl"), wall=5.0, slots=1)
    assert t["work_s"] == 5.0 and t["parallel_efficiency"] == 1.0
    assert sorted(j["name"] for j in t["jobs"]) == ["chapter x", "inside: a", "inside: b"]


def test_the_sampler_reads_each_gpu_with_its_time(tmp_path, monkeypatch):
    """A stand-in ``nvidia-smi`` with two GPUs: each sample is the mean utilisation and the summed
    memory, stamped with the time it was taken."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho '40, 1000'\necho '60, 500'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{__import__('os').environ['PATH']}")
    start = __import__("time").time()
    with timing.MachineSampler(interval=0.05) as m:
        __import__("time").sleep(0.4)
    r = m.result()
    assert r["gpu_samples"] and all(s[1:] == [50.0, 1500.0] and s[0] >= start - 1 for s in r["gpu_samples"])
    assert (r["gpu_util_mean"], r["gpu_util_max"], r["gpu_mem_max_mib"]) == (50.0, 50.0, 1500.0)


def test_utilisation_while_training_reads_only_the_training_jobs_samples():
    jobs_log = [
        {"name": "chapter family", "start": 0, "end": 10},
        {"name": "pretrain pico-13k", "start": 1, "end": 3},
        {"name": "inside: ALM' conditioned", "start": 6, "end": 7},
    ]
    samples = [[0.5, 0.0, 0], [2.0, 90.0, 0], [4.0, 10.0, 0], [6.5, 70.0, 0], [9.0, 0.0, 0]]
    assert timing.utilisation_while(samples, jobs_log) == 80.0
    assert timing.utilisation_while(samples, jobs_log, prefixes=("collect ",)) is None
    t = timing.build_timing(jobs_log, wall=10.0, slots=1, machine={"gpu_samples": samples, "gpu_util_mean": 34.0})
    assert t["gpu_util_training_mean"] == 80.0 and t["gpu_util_mean"] == 34.0
    assert "gpu_util_training_mean" not in timing.build_timing(
        jobs_log, wall=10.0, slots=1, machine={"gpu_samples": []}
    )


def test_parallel_capacity_counts_work_done_not_each_products_time():
    """More workers than cores share them: the summed rate cannot exceed the cores (a product's own
    time, shorter than a scheduler slice, would have shown each worker as fast as one alone)."""
    cores = len(__import__("os").sched_getaffinity(0))
    capacity = timing.parallel_capacity(cores * 4, repeats=100, size=256)
    assert 0.0 < capacity <= cores * 1.25, capacity
