"""Data without a sibling folder: profiles name no path outside the repository; with neither
``$APD_DATA_DIR`` nor a ``data_dir`` the loaders take the Hub and the original source (cached in
the user's cache); and a build that cannot have a dataset stops before its first notebook, in one
line naming ``APD_DATA_DIR`` and the files it needs."""

from __future__ import annotations

import io
import json
import os
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


def test_preflight_names_the_files_a_data_folder_lacks(monkeypatch, tmp_path):
    params, stems = _smoke()
    needs = data_check.data_needs(params, stems, {s: notebook_parameters(notebook_path(s, REPO)) for s in stems})
    files = sorted({n.file for n in needs})
    assert "qa/lambada_openai.jsonl" in files and "factuality_prompts/fever_factual_test7k_final.jsonl" in files
    for rel in files[1:]:  # every file but one
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}\n")
    monkeypatch.setenv("APD_DATA_DIR", str(tmp_path))
    with pytest.raises(BookError) as err:
        preflight(None, params, stems, REPO, checks=("data",))
    message = str(err.value)
    assert "\n" not in message and f"APD_DATA_DIR={tmp_path}" in message and files[0] in message
    assert files[1] not in message
    (tmp_path / files[0]).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / files[0]).write_text("{}\n")
    preflight(None, params, stems, REPO, checks=("data",))  # every file there: the build may start


def test_preflight_without_data_folder_offline_stops_before_any_notebook(tmp_path):
    """``python -m apd`` with no data folder and ``HF_HUB_OFFLINE=1``: exit 1, one line on stderr naming
    APD_DATA_DIR and the files, and no notebook started."""
    env = {k: v for k, v in os.environ.items() if k not in ("APD_DATA_DIR",)}
    env.update(
        HF_HUB_OFFLINE="1",
        APD_RESULTS_DIR=str(tmp_path / "results"),
        APD_CACHE_DIR=str(tmp_path / "cache"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
    )
    done = subprocess.run(
        [sys.executable, "-m", "apd", "--profile", "smoke"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "APD_DATA_DIR" in lines[0] and "HF_HUB_OFFLINE=1" in lines[0] and "qa/lambada_openai.jsonl" in lines[0]
    assert "executing" not in done.stdout and not (tmp_path / "results").exists()


def test_the_data_source_is_part_of_the_cache_key(monkeypatch, tmp_path):
    """A chapter built from the Hub is not reused when the build switches to offline copies."""
    monkeypatch.delenv("APD_DATA_DIR", raising=False)
    hub = cache_key("qa", {"profile": "smoke"}, REPO)
    monkeypatch.setenv("APD_DATA_DIR", str(tmp_path))
    assert cache_key("qa", {"profile": "smoke"}, REPO) != hub
