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
