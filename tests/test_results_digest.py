"""Issue 51, item 5: a results file carries the SHA-256 its run record holds (recorded when it was
written), so a damaged one is never read as good: a chapter reading it stops, naming the file and
the command that rebuilds it, and the book runner executes the damaged chapter again (saying so)
instead of reading it as cached. The runner tests build a fake book of two tiny chapters."""

import hashlib
import json
import os
from pathlib import Path

import pytest
import yaml

from apd.base.jobs import JOBS_ENV, JOBS_LOG_ENV, SLOTS_ENV
from apd.base.notebooks import KEY_ENV, RUNNER_ENV, STAGING_ENV, BookError
from apd.book import runner
from apd.book.cache import damaged_results
from apd.book.execution import execute
from apd.chapters.theorem1 import Theorem1Headline
from apd.report.results import DamagedResultsError, Run, load_results
from fake_notebooks import two_cell_notebook

ROOT = Path(__file__).resolve().parent.parent


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def numbers(path: Path) -> dict:
    return {k: v for k, v in json.loads(path.read_text()).items() if k != "wall_time_s"}


DAMAGES = {
    "garbage bytes": b"\xff\xfe\x00\x9cgarbage",
    "invalid JSON": b'{"x": 0.42',
    "a changed number": None,  # the file as written, one number changed: still valid JSON
}


def damage(path: Path, how: str) -> None:
    if DAMAGES[how] is None:
        values = json.loads(path.read_text())
        path.write_text(json.dumps({**values, "x": values["x"] + 1}))
    else:
        path.write_bytes(DAMAGES[how])


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    return tmp_path / "unit"


def test_the_run_record_holds_the_results_files_digest(results_dir):
    run = Run.start("nb", {"profile": "unit"}, show=False)
    run.record(x=0.25)
    run.finish(show=False)
    record = json.loads((results_dir / "runs" / "nb.json").read_text())
    assert record["results_sha256"] == {"nb.json": sha256(results_dir / "nb.json")}
    assert load_results("unit", "nb")["x"] == 0.25  # the results file itself stays flat
    assert set(json.loads((results_dir / "nb.json").read_text())) == {"x", "profile", "wall_time_s"}


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_results_file_stops_its_reader_naming_the_file_and_the_fix(results_dir, how):
    run = Run.start("nb", {"profile": "unit"}, show=False)
    run.record(x=0.25)
    run.finish(show=False)
    damage(results_dir / "nb.json", how)
    with pytest.raises(DamagedResultsError) as err:
        load_results("unit", "nb")
    assert f"{results_dir / 'nb.json'} is damaged" in str(err.value)
    assert str(err.value).endswith("rebuild that chapter: `make book PROFILE=unit ONLY=nb`")
    assert damaged_results(results_dir, "nb") == ["nb.json"]


def test_a_chapters_typed_headline_and_an_older_run_are_checked_too(results_dir):
    (results_dir / "runs").mkdir(parents=True)
    (results_dir / "theorem1.json").write_text("{")  # an older run: no run record, no digest
    with pytest.raises(DamagedResultsError, match=r"theorem1\.json is damaged.*ONLY=theorem1"):
        Theorem1Headline.load("unit", missing_ok=True)
    (results_dir / "theorem1.json").write_text("{}")
    (results_dir / "runs" / "theorem1.json").write_text("[damaged")
    with pytest.raises(DamagedResultsError, match=r"runs/theorem1\.json.*is damaged"):
        Theorem1Headline.load("unit", missing_ok=True)
    assert damaged_results(results_dir, "theorem1") == ["runs/theorem1.json"]


# -- the book runner --------------------------------------------------------------------------

PARAMS = "profile = 'default'\nname = ''\nx = 1\nreads = ''"
# each chapter records x / 7, and y: x of the chapter it reads (0 when it reads none)
BODY = (
    "from apd.report.results import Run, load_results\n"
    "run = Run.start(name, globals())\n"
    "run.record(x=x / 7, y=load_results(profile, reads)['x'] if reads else 0.0)\n"
    "run.finish(show=False)\n"
)


@pytest.fixture
def book(tmp_path, monkeypatch):
    """A project of chapters a and b (b reads a's results) under profile p; kernels import this
    checkout's apd and write to <project>/results."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.delenv("APD_RESULTS_DIR", raising=False)
    for name in (RUNNER_ENV, STAGING_ENV, KEY_ENV, SLOTS_ENV, JOBS_ENV, JOBS_LOG_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(runner, "NEEDS", {"a": (), "b": ("a",)})
    root = tmp_path / "proj"
    for d in ("apd", "notebooks", "profiles"):
        (root / d).mkdir(parents=True)
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n  - file: notebooks/a\n  - file: notebooks/b\n"
    )
    for stem in "ab":
        (root / "notebooks" / f"{stem}.ipynb").write_text(json.dumps(two_cell_notebook(PARAMS, BODY)))
    profile = {"a": {"name": "a", "x": 3}, "b": {"name": "b", "x": 5, "reads": "a"}}
    (root / "profiles" / "p.yml").write_text(yaml.safe_dump({"notebooks": profile}))
    (root / "requirements.lock").write_text((ROOT / "requirements.lock").read_text())
    return root


def test_the_runner_executes_a_damaged_chapter_again_and_its_reader_stops_on_one(book, capsys):
    dest = book / "results" / "p"
    runner.build_book("p", root=book, html=False, jobs=1)
    clean = {stem: numbers(dest / f"{stem}.json") for stem in "ab"}
    assert clean["b"]["y"] == clean["a"]["x"] == 3 / 7
    capsys.readouterr()

    said = "its results differ from the digests recorded when they were written (damaged or edited)"

    def rebuild(damaged: dict, line: str, ran: str, **options) -> None:
        for stem, how in damaged.items():
            damage(dest / f"{stem}.json", how)
        runner.build_book("p", only=["b"], root=book, html=False, **options)
        out = capsys.readouterr().out
        assert line in out and all(f"[apd] {s}: {word} in" in out for s, word in zip("ab", ran.split()))
        assert {stem: numbers(dest / f"{stem}.json") for stem in "ab"} == clean

    # --only b: a's damaged results are not read as cached; a executes again, as clean
    rebuild(
        {"a": "garbage bytes"},
        f"[apd] a: {said}: {dest / 'a.json'}; executing a again, since b reads it",
        "executed cached",
        jobs=1,
    )
    # a chapter's own damaged results (here a number changed), side by side and with --force
    rebuild(
        {"b": "a changed number", "a": "a changed number"},
        f"[apd] b: {said}: {dest / 'b.json'}; executing b again\n",
        "executed executed",
        jobs=2,
        force=True,
    )

    # the chapter that reads a damaged file, run without the runner's check, stops naming it
    damage(dest / "a.json", "invalid JSON")
    params = {"profile": "p", "name": "b", "x": 5, "reads": "a"}
    with pytest.raises(BookError) as err:
        execute("b", params, book / "_build" / "p" / "book" / "notebooks" / "b.ipynb", book, force=True)
    assert "DamagedResultsError" in str(err.value) and f"{dest / 'a.json'} is damaged" in str(err.value)
    assert "rebuild that chapter: `make book PROFILE=p ONLY=a`" in str(err.value)
    assert numbers(dest / "b.json") == clean["b"]  # its results stay the last good run's
