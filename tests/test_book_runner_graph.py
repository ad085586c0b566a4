"""The book runner schedules chapters as a graph (apd.chapters.graph.NEEDS): independent chapters
side by side (--jobs N), a chapter after those it needs, a failure stopping only its dependents,
one at a time in book order with --jobs 1, and cache keys chained to the chapters a chapter needs.
Fake projects of tiny notebooks in tmp folders, with a graph of their own; the tests that start
kernels take a few seconds each."""

import doctest
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from apd.base.jobs import JOBS_ENV, JOBS_LOG_ENV, SLOTS_ENV
from apd.base.notebooks import KEY_ENV, RUNNER_ENV, STAGING_ENV, BookError
from apd.book import runner, terminal
from apd.book.cache import cache_key, chapter_keys, upstream_key
from apd.book.profiles import resolve
from apd.chapters.graph import downstream
from apd.chapters.params import CHAPTERS
from fake_notebooks import two_cell_notebook

ROOT = Path(__file__).resolve().parent.parent

PARAMS = "profile = 'default'\nname = ''\nsleep = 0.0\nfail = False\nlog = ''"
# each chapter notes when its kernel ran, and what the runner gave it, in <log>/<name>.json
BODY = (
    "import json, os, time, pathlib\n"
    "t0 = time.time()\n"
    "pathlib.Path(log, name + '.pid').write_text(str(os.getpid()))\n"
    "time.sleep(sleep)\n"
    "if fail:\n"
    "    raise RuntimeError('boom ' + name)\n"
    "env = {k: os.environ.get(k) for k in ('APD_SLOTS', 'APD_JOBS', 'APD_JOBS_LOG')}\n"
    "pathlib.Path(log, name + '.json').write_text(json.dumps({'start': t0, 'end': time.time(), **env}))\n"
)


def make_book(tmp_path: Path, chapters: dict[str, dict]) -> Path:
    """A project whose _toc.yml lists ``chapters`` (in order), each a copy of one small notebook
    with the parameters given (``sleep``, ``fail``) under profile ``p``."""
    root = tmp_path / "proj"
    for d in ("apd", "notebooks", "profiles", "log"):
        (root / d).mkdir(parents=True)
    toc = "format: jb-book\nroot: intro\nchapters:\n" + "".join(f"  - file: notebooks/{s}\n" for s in chapters)
    (root / "_toc.yml").write_text(toc)
    nb = two_cell_notebook(PARAMS, BODY)
    for stem in chapters:
        (root / "notebooks" / f"{stem}.ipynb").write_text(json.dumps(nb))
    profile = {s: {"name": s, "log": str(root / "log"), **values} for s, values in chapters.items()}
    (root / "profiles" / "p.yml").write_text(yaml.safe_dump({"notebooks": profile}))
    (root / "requirements.lock").write_text((ROOT / "requirements.lock").read_text())
    return root


@pytest.fixture
def clean_env(monkeypatch):
    """Results go to <project>/results; no variable of an outer build leaks in."""
    monkeypatch.delenv("APD_RESULTS_DIR", raising=False)
    for name in (RUNNER_ENV, STAGING_ENV, KEY_ENV, SLOTS_ENV, JOBS_ENV, JOBS_LOG_ENV):
        monkeypatch.delenv(name, raising=False)


def ran(root: Path) -> dict[str, dict]:
    """What each chapter's kernel noted: {name: {start, end, APD_*}}."""
    return {p.stem: json.loads(p.read_text()) for p in sorted((root / "log").glob("*.json"))}


def job_log(root: Path) -> dict[str, dict]:
    """The build's job log, by chapter: {stem: {start, end}}."""
    lines = (root / "_build" / "p" / "jobs.jsonl").read_text().splitlines()
    return {json.loads(line)["name"].removeprefix("chapter "): json.loads(line) for line in lines}


def overlap(a: dict, b: dict) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def test_independent_chapters_overlap_and_a_dependent_waits_for_its_needs(tmp_path, clean_env, monkeypatch, capsys):
    monkeypatch.setattr(runner, "NEEDS", {"a": (), "b": (), "c": ("a",), "d": ("c",)})
    root = make_book(tmp_path, {"a": {"sleep": 3.0}, "b": {"sleep": 3.0}, "c": {}, "d": {}})
    runner.build_book("p", root=root, html=False, jobs=2)
    k, jobs = ran(root), job_log(root)
    assert set(k) == set(jobs) == {"a", "b", "c", "d"}
    assert overlap(k["a"], k["b"]), k  # the kernels of a and b ran at the same time
    assert overlap(jobs["a"], jobs["b"]), jobs
    assert k["c"]["start"] >= k["a"]["end"] and jobs["c"]["start"] >= jobs["a"]["end"]
    assert k["d"]["start"] >= k["c"]["end"] and jobs["d"]["start"] >= jobs["c"]["end"]
    slots = root / "_build" / "p" / "slots"
    assert sorted(p.name for p in slots.iterdir()) == ["slot-0", "slot-1"]
    for values in k.values():  # every kernel got the build's slots, job count and job log
        assert values["APD_SLOTS"] == str(slots.resolve()) and values["APD_JOBS"] == "2"
        assert values["APD_JOBS_LOG"] == str((root / "_build" / "p" / "jobs.jsonl").resolve())
    out = capsys.readouterr().out
    for stem in "abcd":
        assert f"[apd] {stem}: executing under profile 'p' ..." in out and f"[apd] {stem}: executed in" in out
    status = json.loads((root / "_build" / "p" / "status.json").read_text())
    assert {s: v["status"] for s, v in status.items()} == dict.fromkeys("abcd", "executed")
    assert os.environ.get(SLOTS_ENV) is None  # the build's variables are gone afterwards
    # a second build finds every chapter cached, without starting a process for it
    runner.build_book("p", root=root, html=False, jobs=2)
    out = capsys.readouterr().out
    assert all(f"[apd] {stem}: cached in" in out for stem in "abcd"), out
    assert set(job_log(root)) == {"a", "b", "c", "d"}  # the job log starts afresh with each build
    assert json.loads((root / "_build" / "p" / "timing.json").read_text())["finished"] is True


def test_a_failed_chapter_stops_its_dependents_and_the_others_run_on(tmp_path, clean_env, monkeypatch, capsys):
    monkeypatch.setattr(runner, "NEEDS", {"a": (), "b": (), "c": ("a",), "d": (), "e": ("c", "d")})
    root = make_book(tmp_path, {"a": {"fail": True}, "b": {"fail": True}, "c": {}, "d": {"sleep": 1.0}, "e": {}})
    with pytest.raises(BookError) as err:
        runner.build_book("p", root=root, html=False, jobs=2)
    msg = str(err.value)
    assert msg.startswith("2 chapters failed:"), msg
    for stem in "ab":  # each with the message a one-at-a-time build gives
        assert f"notebook notebooks/{stem}.ipynb failed in cell" in msg and f"RuntimeError: boom {stem}" in msg
    assert "not run, because a chapter they need failed: c (needs a), e (needs a)" in msg, msg
    assert set(ran(root)) == {"d"}  # d needs nothing that failed: it ran
    out = capsys.readouterr().out
    assert "[apd] d: executed in" in out and "[apd] c: not run, it needs a, which failed" in out
    assert "[apd] a: failed after" in out
    notebooks = root / "_build" / "p" / "book" / "notebooks"
    assert sorted(p.name for p in notebooks.glob("*.ipynb") if "partial" not in p.name) == ["d.ipynb"]
    assert set(json.loads((root / "_build" / "p" / "status.json").read_text())) == {"d"}
    spent = json.loads((root / "_build" / "p" / "timing.json").read_text())  # a failed build reports what it did
    assert spent["finished"] is False and {"chapter a", "chapter b", "chapter d"} <= {j["name"] for j in spent["jobs"]}


def test_one_failure_alone_reads_as_a_one_at_a_time_build_says_it(tmp_path, clean_env, monkeypatch):
    monkeypatch.setattr(runner, "NEEDS", {"a": (), "b": ()})
    root = make_book(tmp_path, {"a": {"fail": True}, "b": {}})
    with pytest.raises(BookError) as par:
        runner.build_book("p", root=root, html=False, jobs=2)
    with pytest.raises(BookError) as one:
        runner.build_book("p", root=root, html=False, jobs=1)
    assert str(par.value) == str(one.value)
    assert str(par.value).startswith("notebook notebooks/a.ipynb failed in cell")


def test_one_job_runs_the_chapters_in_book_order_in_this_process(tmp_path, clean_env, monkeypatch):
    monkeypatch.setattr(runner, "NEEDS", {"a": (), "b": (), "c": ()})
    root = make_book(tmp_path, {"a": {"sleep": 0.5}, "b": {}, "c": {}})
    monkeypatch.setattr(runner, "_run_side_by_side", lambda *a, **k: pytest.fail("no process per chapter"))
    runner.build_book("p", root=root, html=False, jobs=1)
    k, jobs = ran(root), job_log(root)
    assert list(jobs) == ["a", "b", "c"]
    assert k["a"]["end"] <= k["b"]["start"] and k["b"]["end"] <= k["c"]["start"]
    assert {v["APD_JOBS"] for v in k.values()} == {"1"}
    assert [p.name for p in (root / "_build" / "p" / "slots").iterdir()] == ["slot-0"]


def test_only_counts_the_chapters_left_out_as_done(tmp_path, clean_env, monkeypatch, capsys):
    monkeypatch.setattr(runner, "NEEDS", {"a": (), "b": ("a",), "c": ("b",)})
    root = make_book(tmp_path, {"a": {}, "b": {}, "c": {}})
    runner.build_book("p", only=["b", "c"], root=root, html=False, jobs=2)  # a never ran: b starts at once
    k = ran(root)
    assert set(k) == {"b", "c"} and k["c"]["start"] >= k["b"]["end"]
    assert "[apd] a:" not in capsys.readouterr().out


def test_progress_lines_are_plain_when_chapters_run_side_by_side(tmp_path):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for tty, stream in ((None, Terminal()), (False, Terminal())):
        with terminal.ChapterProgress("a", tmp_path, stream=stream, interval=0.05, log_every=0.05, tty=tty):
            time.sleep(0.3)
        text = stream.getvalue()
        assert ("\r" in text) == (tty is None), text
    assert text.splitlines()[0].startswith("[apd] a: executing |")


INTERRUPTED = (
    "import signal, sys\nfrom pathlib import Path\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)  # a suite started with & inherits SIGINT ignored\n"
    "from apd.book import runner\n"
    "runner.NEEDS = {'a': (), 'b': ()}\n"
    "try:\n"
    "    runner.build_book('p', root=Path(sys.argv[1]), html=False, jobs=2)\n"
    "except KeyboardInterrupt:\n"
    "    sys.exit(130)\n"
)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")  # a zombie (exited, not yet reaped) counts as gone
    return not (status.is_file() and "\nState:\tZ" in status.read_text())


def test_an_interrupt_stops_the_chapters_and_their_kernels(tmp_path, clean_env):
    root = make_book(tmp_path, {"a": {"sleep": 120.0}, "b": {"sleep": 120.0}})
    env = {k: v for k, v in os.environ.items() if k not in ("APD_RESULTS_DIR", RUNNER_ENV, STAGING_ENV)}
    env["PYTHONPATH"] = str(ROOT)
    build = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, str(root)], cwd=root, env=env, stdout=subprocess.PIPE, text=True
    )
    pids = [root / "log" / "a.pid", root / "log" / "b.pid"]
    deadline = time.time() + 90
    while not all(p.is_file() and p.read_text() for p in pids):  # both kernels are running
        assert build.poll() is None and time.time() < deadline, build.communicate()
        time.sleep(0.2)
    kernels = [int(p.read_text()) for p in pids]
    build.send_signal(signal.SIGINT)  # to the build's process only, as a test can
    out, _ = build.communicate(timeout=60)
    assert build.returncode == 130, out
    deadline = time.time() + 20
    while any(alive(pid) for pid in kernels) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(alive(pid) for pid in kernels), "a chapter's kernel outlived the interrupted build"
    staging = root / "results" / ".staging" / "p"
    assert not staging.is_dir() or not [p for p in staging.iterdir() if p.is_dir()]  # staged runs discarded
    assert not (root / "results" / "p").exists()


# -- cache keys ---------------------------------------------------------------------------------


def test_a_chapter_key_chains_the_keys_of_the_chapters_it_needs(tmp_path):
    root = make_book(tmp_path, {"a": {}, "b": {}, "c": {}, "d": {}})
    graph = {"a": (), "b": (), "c": ("b", "a"), "d": ("c",)}
    params, stems = resolve("p", root=root)
    keys = chapter_keys(stems, params, root, graph)
    assert (
        keys["c"][1]
        == f"a:{keys['a'][0]},b:{keys['b'][0]}"
        == upstream_key("c", {s: k for s, (k, _) in keys.items()}, graph)
    )
    assert keys["c"][0] == cache_key("c", params["c"], root, keys["c"][1])
    assert keys["a"][1] == "" and keys["a"][0] == cache_key("a", params["a"], root)
    for changed, moved in (("a", {"a", "c", "d"}), ("b", {"b", "c", "d"}), ("c", {"c", "d"}), ("d", {"d"})):
        other = {**params, changed: {**params[changed], "sleep": 9.0}}
        new = chapter_keys(stems, other, root, graph)
        assert {s for s in stems if new[s] != keys[s]} == moved, changed


def test_a_change_in_the_book_reexecutes_the_chapter_and_what_reads_it(monkeypatch):
    monkeypatch.delenv("APD_DATA_DIR", raising=False)
    params, stems = resolve("smoke", root=ROOT)
    keys = chapter_keys(stems, params, ROOT)
    assert list(keys) == list(CHAPTERS)
    for stem, name, value in (("theorem1", "seed", 7), ("family", "seed", 7), ("real", "seed", 7)):
        other = {**params, stem: {**params[stem], name: value}}
        new = chapter_keys(stems, other, ROOT)
        moved = {s for s in stems if new[s][0] != keys[s][0]}
        assert moved == {stem, *downstream(stem)}, (stem, moved)
    # a change to theorem1 no longer re-executes the family; one to the family re-executes all but theorem1
    assert downstream("theorem1") == ("paper_vs_book",)
    assert set(downstream("family")) == set(CHAPTERS) - {"theorem1", "family"}


def test_the_module_examples_hold():
    assert doctest.testmod(runner).failed == 0
