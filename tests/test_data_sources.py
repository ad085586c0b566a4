"""Data without a sibling folder: profiles name no path outside the repository; with neither
``$APD_DATA_DIR`` nor a ``data_dir`` the loaders take the Hub and the original source (cached in
the user's cache); a build that cannot have a dataset says so before its first notebook, in one
notice naming ``APD_DATA_DIR`` and the files it needs, and goes on (the sections that read them are
skipped); a damaged file stops it."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from apd.base import paths
from apd.base.notebooks import BookError, notebook_parameters
from apd.book import data_check
from apd.book.cache import cache_key
from apd.book.preflight import preflight
from apd.book.profiles import resolve
from apd.book.runner import main
from apd.book.project import notebook_path
from apd.evaluation import qa_data
from apd.evaluation.factuality import prompts as fp

REPO = Path(__file__).resolve().parents[1]


def _strings(node):
    if isinstance(node, dict):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)
    elif isinstance(node, str):
        yield node


@pytest.mark.parametrize("profile", sorted(p.stem for p in (REPO / "profiles").glob("*.yml")))
def test_profiles_name_no_path_outside_the_repository(profile):
    data = yaml.safe_load((REPO / "profiles" / f"{profile}.yml").read_text())
    outside = [s for s in _strings(data["notebooks"]) if s.startswith(("../", "/", "~")) or "shared/" in s]
    assert not outside, f"profiles/{profile}.yml names paths outside the repository: {outside}"


def test_the_default_build_reads_the_hub_and_the_original_source_when_no_data_folder_is_given(monkeypatch, tmp_path):
    """The default profile's QA and factuality chapters, with neither APD_DATA_DIR nor data_dir, on the
    loaders' stand-ins: the QA data come from the Hub (a fake ``datasets``), FactualityPrompts from
    its original URL (a fake ``urlopen``) into the per-user cache, outside any checkout."""
    monkeypatch.delenv("APD_DATA_DIR", raising=False)
    monkeypatch.delenv("APD_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)  # not inside a checkout
    params, _ = resolve("default", root=REPO)
    assert params["qa"].get("data_dir") is None and params["factuality"].get("data_dir") is None

    hub_calls = []

    def load_dataset(path, config=None, split=None):
        hub_calls.append((path, config, split))
        return [{"text": "She opened the door and saw her old friend Tom"}]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    examples = qa_data.load_dataset("lambada", data_dir=params["qa"].get("data_dir"))
    assert hub_calls == [("EleutherAI/lambada_openai", "en", "test")]
    assert examples[0].answer == " Tom" and examples[0].meta["source"] == "hub:EleutherAI/lambada_openai"

    urls = []
    row = {"id": 7, "prompt": "Ada Lovelace was a mathematician.", "evidence_info": [["Ada Lovelace", 1]]}

    def urlopen(url, timeout=None):
        urls.append(url)
        return io.BytesIO((json.dumps(row) + "\n").encode())

    monkeypatch.setattr(fp.urllib.request, "urlopen", urlopen)
    kind = params["factuality"].get("fp_kinds", ["factual"])[0]
    items = fp.load_factuality_prompts(kind, "test", data_dir=params["factuality"].get("data_dir"))
    assert [i.titles for i in items] == [("Ada Lovelace",)]
    assert len(urls) == 1 and urls[0].startswith("https://raw.githubusercontent.com/")
    assert paths.cache_dir() == tmp_path / "xdg" / "apd"
    cached = tmp_path / "xdg" / "apd" / "factuality_prompts" / f"fever_{kind}_test7k_final.jsonl"
    assert cached.is_file()
    fp.load_factuality_prompts(kind, "test")  # the second read comes from the user's cache
    assert len(urls) == 1


def test_cache_folder_order(monkeypatch, tmp_path):
    monkeypatch.delenv("APD_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(REPO / "apd")  # inside a checkout: its cache/
    assert paths.cache_dir() == REPO / "cache"
    monkeypatch.chdir(tmp_path)  # outside: the user's cache
    assert paths.cache_dir() == tmp_path / "xdg" / "apd"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert paths.cache_dir() == Path.home() / ".cache" / "apd"
    monkeypatch.setenv("APD_CACHE_DIR", str(tmp_path / "mine"))
    assert paths.cache_dir() == tmp_path / "mine"


def _smoke(stems=None):
    params, all_stems = resolve("smoke", root=REPO)
    return params, stems or all_stems


#: One valid row of each offline file (the formats of /work/shared/data/README.md).
_ANN = [{"text": "Ann", "idx": 0, "label": 1}]
_MC = {"query": "Question: What flies?", "choices": ["a bird", "a stone"], "gold": 0}
VALID_ROWS = {
    "lambada_openai.jsonl": {"context": "She opened the door and saw her old friend", "continuation": " Tom"},
    "commonsense_qa_train.jsonl": {
        "id": "c1",
        "question": {"stem": "What flies?", "choices": [{"label": "A", "text": "bird"}, {"label": "B", "text": "no"}]},
        "answerKey": "A",
    },
    "openbook_qa.jsonl": _MC,
    "arc_easy.jsonl": _MC,
    "social_iqa_dev.jsonl": {"context": "Kai cooked.", "question": "Why?", "options": ["a", "b", "c"], "answer": "a"},
    "multirc_val.jsonl": {
        "idx": 0,
        "passage": {"text": "Ann ran. Bob sat.", "questions": [{"idx": 0, "question": "Who ran?", "answers": _ANN}]},
    },
    "squad_v1.1_dev.jsonl": {"id": "s1", "title": "T", "context": "Ann ran.", "question": "Who?", "answers": ["Ann"]},
}
FP_ROW = {"id": 7, "prompt": "Ada Lovelace was a mathematician.", "evidence_info": [["Ada Lovelace", 1]]}


def _valid_copy(folder: Path, files) -> None:
    """Write a valid three-row copy of each data file of ``files`` (relative to ``folder``)."""
    for rel in files:
        row = FP_ROW if rel.startswith("factuality_prompts/") else VALID_ROWS[Path(rel).name]
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text("".join(json.dumps(row) + "\n" for _ in range(3)))


def _smoke_files(params, stems) -> list[str]:
    defaults = {s: notebook_parameters(notebook_path(s, REPO)) for s in stems}
    return sorted({n.file for n in data_check.data_needs(params, stems, defaults)})


def test_preflight_names_the_files_a_data_folder_lacks_in_a_notice(monkeypatch, tmp_path):
    """Absent data does not stop a build: one notice line names APD_DATA_DIR and the files it lacks,
    and the build goes on (the sections that read them are skipped)."""
    params, stems = _smoke()
    needs = data_check.data_needs(params, stems, {s: notebook_parameters(notebook_path(s, REPO)) for s in stems})
    files = sorted({n.file for n in needs})
    assert "qa/lambada_openai.jsonl" in files and "factuality_prompts/fever_factual_test7k_final.jsonl" in files
    _valid_copy(tmp_path, files[1:])  # every file but one
    monkeypatch.setenv("APD_DATA_DIR", str(tmp_path))
    out = io.StringIO()
    notices = preflight(None, params, stems, REPO, checks=("data",), stream=out)  # no BookError
    assert len(notices) == 1 and out.getvalue() == f"[apd] notice: {notices[0]}\n"
    assert "\n" not in notices[0] and f"APD_DATA_DIR={tmp_path}" in notices[0] and files[0] in notices[0]
    assert files[1] not in notices[0] and "skips the sections" in notices[0]
    _valid_copy(tmp_path, files[:1])
    out = io.StringIO()
    assert preflight(None, params, stems, REPO, checks=("data",), stream=out) == [] and out.getvalue() == ""


def test_check_without_data_folder_offline_notes_the_missing_data_and_passes(tmp_path):
    """``python -m apd --check`` with no data folder and ``HF_HUB_OFFLINE=1``: exit 0, one notice on
    stderr naming APD_DATA_DIR, HF_HUB_OFFLINE=1 and the files (the build would run every chapter and
    skip the sections that need them)."""
    env = {k: v for k, v in os.environ.items() if k not in ("APD_DATA_DIR",)}
    env.update(HF_HUB_OFFLINE="1", APD_RESULTS_DIR=str(tmp_path / "results"), APD_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "apd", "--profile", "smoke", "--check"]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("[apd] notice: data: "), done.stderr
    assert "APD_DATA_DIR" in lines[0] and "HF_HUB_OFFLINE=1" in lines[0] and "qa/lambada_openai.jsonl" in lines[0]
    assert "apd data fetch" in lines[0] and "has what a build needs" in done.stdout


def test_the_data_check_finds_the_hugging_face_caches_as_the_libraries_do(monkeypatch, tmp_path):
    """HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub;
    HF_DATASETS_CACHE, else $HF_HOME/datasets (HF_HOME itself defaulting under XDG_CACHE_HOME)."""
    from apd.book import preflight as pf

    for name in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_DATASETS_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value, root in (
        ("HOME", "home", tmp_path / "home" / ".cache" / "huggingface"),
        ("XDG_CACHE_HOME", "xdg", tmp_path / "xdg" / "huggingface"),
        ("HF_HOME", "hf", tmp_path / "hf"),
    ):
        monkeypatch.setenv(name, str(tmp_path / value))
        assert (data_check.hub_cache(), data_check.datasets_cache()) == (root / "hub", root / "datasets")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "ds"))
    assert data_check.hub_cache() == tmp_path / "hub" and data_check.datasets_cache() == tmp_path / "ds"

    # what the checks see: a dataset in either cache, a model in the Hub cache
    for name in ("HF_HUB_CACHE", "HF_DATASETS_CACHE", "HF_HOME"):
        monkeypatch.delenv(name)
    assert not data_check._hub_dataset_cached("EleutherAI/lambada_openai")
    (tmp_path / "xdg" / "huggingface" / "datasets" / "EleutherAI___lambada_openai").mkdir(parents=True)
    assert data_check._hub_dataset_cached("EleutherAI/lambada_openai")
    (tmp_path / "xdg" / "huggingface" / "hub" / "datasets--tau--commonsense_qa").mkdir(parents=True)
    assert data_check._hub_dataset_cached("tau/commonsense_qa")
    assert not pf._hub_cached("pythia")
    (tmp_path / "xdg" / "huggingface" / "hub" / "models--EleutherAI--pythia-70m").mkdir(parents=True)
    assert pf._hub_cached("pythia")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # HF_HOME wins over XDG_CACHE_HOME
    assert not pf._hub_cached("pythia") and not data_check._hub_dataset_cached("EleutherAI/lambada_openai")


def test_the_data_source_is_part_of_the_cache_key(monkeypatch, tmp_path):
    """A chapter built from the Hub is not reused when the build switches to offline copies."""
    monkeypatch.delenv("APD_DATA_DIR", raising=False)
    hub = cache_key("qa", {"profile": "smoke"}, REPO)
    monkeypatch.setenv("APD_DATA_DIR", str(tmp_path))
    assert cache_key("qa", {"profile": "smoke"}, REPO) != hub


def _damage_four(data: Path) -> dict[str, str]:
    """The issue's four damaged files: {file: what the one line must say}."""
    lam = data / "qa" / "lambada_openai.jsonl"
    lam.write_text(lam.read_text() + '{"context": "cut sh\n')  # a truncated JSON line, line 4
    csqa = data / "qa" / "commonsense_qa_train.jsonl"
    csqa.write_bytes(csqa.read_bytes() + b'{"id": "Caf\xe9"}\n')  # a non-UTF-8 byte, line 4
    (data / "qa" / "openbook_qa.jsonl").write_text("")  # empty
    (data / "qa" / "arc_easy.jsonl").write_text(json.dumps({**_MC, "choices": "a bird"}) + "\n")  # string choices
    return {
        "lambada_openai.jsonl": r"lambada_openai\.jsonl, line 4 is not valid JSON",
        "commonsense_qa_train.jsonl": r"commonsense_qa_train\.jsonl is not UTF-8 .*line 4",
        "openbook_qa.jsonl": r"openbook_qa\.jsonl is empty",
        "arc_easy.jsonl": r"arc_easy\.jsonl:1: choices: expected a list",
    }


def test_invalid_dataset_files_fail_the_check_and_the_chapter_naming_file_line_and_problem(
    monkeypatch, tmp_path, capsys
):
    """Issue: a bad JSON line, a non-UTF-8 byte, an empty file and string choices in four files of a
    data copy passed --check, and the QA chapter ran 2 datasets of 6 without a word. Now --check exits 1
    with one line per file naming the file, the line and the problem, and the chapter fails."""
    from apd.chapters.qa import dataset_jobs

    params, stems = _smoke()
    data = tmp_path / "data"
    _valid_copy(data, _smoke_files(params, stems))
    monkeypatch.setenv("APD_DATA_DIR", str(data))
    preflight(None, params, stems, REPO, checks=("data",))  # valid: the build may start
    jobs, not_run = dataset_jobs(params["qa"]["qa_datasets"], {"qasc_q": "openbookqa", "arc": "arc_easy"})
    assert len(jobs) == 6  # QASC (Q+Fact) has no offline copy; two stand-ins replace QASC (Q only) and ARC

    want = _damage_four(data)
    with pytest.raises(BookError) as err:
        preflight(None, params, stems, REPO, checks=("data",))
    problems = str(err.value).split("\n  - ")[1:]
    assert len(problems) == 4, str(err.value)
    for line, (name, pattern) in zip(sorted(problems), sorted(want.items())):
        assert re.search(pattern, line) and str(data / "qa" / name) in line and f"APD_DATA_DIR={data}" in line, line
    assert main(["--profile", "smoke", "--check"]) == 1  # python -m apd --check
    out = capsys.readouterr()
    assert "has what a build needs" not in out.out and "lambada_openai.jsonl, line 4" in out.err

    for name, pattern in want.items():  # the chapter: an error, never a dataset silently left out
        dataset = {"lambada_openai.jsonl": "lambada", "commonsense_qa_train.jsonl": "commonsense_qa"}
        dataset = {**dataset, "openbook_qa.jsonl": "openbookqa", "arc_easy.jsonl": "arc_easy"}[name]
        with pytest.raises(qa_data.DatasetInvalid, match=pattern):
            dataset_jobs([dataset], {}, limit=6)


def test_a_repaired_data_file_changes_the_chapter_key(monkeypatch, tmp_path):
    """Issue: after the damaged files were restored, the QA chapter stayed cached with 2 datasets:
    its key covered the data folder's path, not its contents. The digests of the files it reads
    are part of its key now."""
    params, stems = _smoke()
    data = tmp_path / "data"
    _valid_copy(data, _smoke_files(params, stems))
    monkeypatch.setenv("APD_DATA_DIR", str(data))
    good = {s: cache_key(s, params[s], REPO) for s in ("qa", "factuality", "theorem1")}
    lam = data / "qa" / "lambada_openai.jsonl"
    text = lam.read_text()
    lam.write_text(text[:-5])
    assert cache_key("qa", params["qa"], REPO) != good["qa"]
    assert cache_key("theorem1", params["theorem1"], REPO) == good["theorem1"]  # reads no data
    assert cache_key("factuality", params["factuality"], REPO) == good["factuality"]  # reads other files
    lam.write_text(text)  # restored: the key of the good copy again
    assert cache_key("qa", params["qa"], REPO) == good["qa"]
    fp = data / "factuality_prompts" / "fever_factual_test7k_final.jsonl"
    fp.write_text(fp.read_text() + json.dumps(FP_ROW) + "\n")
    assert cache_key("factuality", params["factuality"], REPO) != good["factuality"]


def test_a_chapter_that_cannot_skip_its_data_still_stops_the_build(monkeypatch):
    """The curves chapter under a Hub family reads LAMBADA and has no section to skip: without the
    data the build stops before its first notebook; the QA chapter's absent data is a notice."""
    monkeypatch.delenv("APD_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(data_check, "_hub_dataset_cached", lambda dataset_id: False)
    params = {"curves": {"family": "pythia", "qa_dataset": "lambada"}, "qa": {"qa_datasets": ["lambada"]}}
    with pytest.raises(BookError) as err:
        preflight(None, params, ["curves", "qa"], REPO, checks=("data",), stream=io.StringIO())
    assert "APD_DATA_DIR" in str(err.value) and "qa/lambada_openai.jsonl" in str(err.value)
    out = io.StringIO()
    notices = preflight(None, params, ["qa"], REPO, checks=("data",), stream=out)
    assert len(notices) == 1 and "qa/lambada_openai.jsonl" in notices[0] and out.getvalue().startswith("[apd] notice:")


def _apd(argv: list[str]) -> types.SimpleNamespace:
    """``python -m apd ARGV`` in this process: its exit status and what it wrote on stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(argv)
    return types.SimpleNamespace(rc=rc, err=err.getvalue())


@pytest.fixture
def quiet_checks(monkeypatch, tmp_path):
    """``--check`` and the build here: no data folder, the Hub off (no network probe), the results and
    the cache in ``tmp_path``, and no chapter ever runs (the build stops at its lock)."""
    from apd.book import runner

    monkeypatch.setenv("APD_DATA_DIR", "")  # recorded, so what --data-dir sets is undone after the test
    monkeypatch.delenv("APD_DATA_DIR")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("APD_CACHE_DIR", str(tmp_path / "cache"))
    started = []
    monkeypatch.setattr(runner, "_build_locked", lambda profile, *a, **k: started.append(profile))
    return started


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_data_folder_that_is_not_a_folder_stops_the_check_and_the_build(quiet_checks, monkeypatch, tmp_path, kind):
    """Issue 51: ``--data-dir``, ``APD_DATA_DIR`` or a chapter's ``data_dir`` naming no folder was
    accepted (rc 0) and the book came without its QA and factuality sections. Now ``--check`` and the
    build stop before anything runs, naming where the folder was given, its path and the fix; the
    loaders refuse it too, never reading the Hub instead."""
    bad = tmp_path / "nowhere"
    if kind == "file":
        bad.write_text("")
    why = "no such folder" if kind == "missing" else "is a file, not a folder"
    for args, env, named in [
        (["--data-dir", str(bad)], None, f"--data-dir={bad}"),
        ([], str(bad), f"APD_DATA_DIR={bad}"),
        (["--set", f"qa.data_dir={bad}"], None, f"qa.data_dir={bad}"),
    ]:
        if env:
            monkeypatch.setenv("APD_DATA_DIR", env)
        for mode in ("--check", "--no-html"):
            done = _apd(["--profile", "smoke", mode, *args])
            assert done.rc == 1 and f"{named}: {why}" in done.err and "apd data fetch" in done.err, done.err
        monkeypatch.delenv("APD_DATA_DIR", raising=False)
    assert quiet_checks == []  # no build started
    for load in (lambda **kw: qa_data.load_dataset("lambada", **kw), lambda **kw: fp.load_factuality_prompts(**kw)):
        with pytest.raises(NotADirectoryError, match=re.escape(f"data_dir={bad}: {why}")):
            load(data_dir=bad)
        monkeypatch.setenv("APD_DATA_DIR", str(bad))
        with pytest.raises(NotADirectoryError, match=re.escape(f"APD_DATA_DIR={bad}: {why}")):
            load()
        monkeypatch.delenv("APD_DATA_DIR")


def test_without_a_data_folder_the_check_passes_and_the_build_starts(quiet_checks):
    """With no data folder given, the chapters read the Hub and the original sources: absent data is
    a notice, and the build starts."""
    assert _apd(["--profile", "smoke", "--check"]).rc == 0
    assert _apd(["--profile", "smoke", "--no-html"]).rc == 0 and quiet_checks == ["smoke"]


def test_fields_of_the_wrong_type_stop_the_check_one_line_each(quiet_checks, tmp_path):
    """Issue 51: the check read that the fields were there, not their types: a FactualityPrompts prompt
    that is a number (read as the prompt "123") and an ``evidence_info`` that is a string (its titles
    became its characters) passed, and a number where text belongs crashed the QA chapter with a
    TypeError naming no file. Each is now one line naming the file, the line and the field, from
    ``--check --data-dir`` and from the loaders, which read the same schema."""
    params, stems = _smoke()
    data = tmp_path / "data"
    _valid_copy(data, _smoke_files(params, stems))
    prompts_file = data / "factuality_prompts" / "fever_factual_test7k_final.jsonl"
    with prompts_file.open("a") as f:
        f.write(json.dumps({**FP_ROW, "prompt": 123}) + "\n" + json.dumps({**FP_ROW, "evidence_info": "Ada"}) + "\n")
    lambada = data / "qa" / "lambada_openai.jsonl"
    with lambada.open("a") as f:
        f.write(json.dumps({**VALID_ROWS["lambada_openai.jsonl"], "continuation": 5}) + "\n")
    done = _apd(["--profile", "smoke", "--check", "--data-dir", str(data)])
    want = [f"{prompts_file}:4: prompt: expected str", f"{prompts_file}:5: evidence_info:"]
    want.append(f"{lambada}:4: continuation: expected str")
    assert done.rc == 1
    for line in want:
        assert sum(line in shown for shown in done.err.splitlines()) == 1, done.err
    with pytest.raises(ValueError, match=re.escape(want[0])):
        fp.load_factuality_prompts("factual", data_dir=data)
    with pytest.raises(qa_data.DatasetInvalid, match=re.escape(want[2])):
        qa_data.load_dataset("lambada", data_dir=data)
