"""``apd data fetch`` / ``check`` (apd.evaluation.datafiles) and the data page, offline: downloads are faked
from the copies in ../shared/data (or $APD_DATA_DIR), which are the ones the recorded builds used."""

import io
import json
import shutil
import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest

from offline_data import DATA
from apd.base.notebooks import notebook_parameters
from apd.evaluation import datafiles, qa_data
from apd.evaluation.factuality import sources

REPO = Path(__file__).resolve().parents[1]


needs_data = pytest.mark.skipif(DATA is None, reason="offline data not found: set APD_DATA_DIR (e.g. ../shared/data)")


def test_the_table_is_what_the_default_build_reads():
    qa, fp = (notebook_parameters(REPO / "notebooks" / f"{s}.ipynb") for s in ("qa", "factuality"))
    names = [n if qa_data.offline_file(n) else qa["stand_ins"].get(n) for n in qa["qa_datasets"]]
    read = {qa_data.offline_file(n) for n in names if n and qa_data.offline_file(n)}
    read |= {sources.prompts_file(kind, fp["fp_split"])[0] for kind in fp["fp_kinds"]}
    assert sorted(read) == sorted(f.path for f in datafiles.FILES)
    assert len(datafiles.FILES) == 9
    for f in datafiles.FILES:
        if f.dataset is None:
            kind = "nonfactual" if "nonfactual" in f.path else "factual"
            assert sources.prompts_file(kind, f.split) == (f.path, f.url)
        else:
            spec = qa_data.DATASETS[f.dataset]
            assert qa_data.offline_file(f.dataset) == f.path == f"qa/{spec.local_files[f.split]}"
            assert spec.hub_split == f.split  # the Hub reads the same split
        assert len(f.sha256) == 64 and f.url.startswith("https://")


@needs_data
def test_the_recorded_copies_pass_the_check(capsys):
    assert datafiles.main(["check", str(DATA)]) == 0
    assert capsys.readouterr().out.strip().endswith("all 9 data files present, valid and as recorded.")
    for f in datafiles.FILES:
        assert datafiles.sha256(DATA / f.path) == f.sha256
        with open(DATA / f.path, "rb") as fh:
            assert sum(1 for line in fh if line.strip()) == f.rows


def _copy(tmp_path):
    folder = tmp_path / "data"
    for f in datafiles.FILES:
        (folder / f.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / f.path, folder / f.path)
    return folder


@needs_data
def test_check_names_each_problem_in_one_line(tmp_path, capsys, monkeypatch):
    folder = _copy(tmp_path)
    (folder / "qa/arc_easy.jsonl").unlink()
    (folder / "qa/openbook_qa.jsonl").write_text('{"query": "Q", "choices": ["a", "b"], "gold": 0}\n{"query"\n')
    lam = folder / "qa/lambada_openai.jsonl"
    lam.write_bytes(lam.read_bytes().replace(b'"signs"', b'"signals"', 1))  # valid, but not the recorded copy
    monkeypatch.setenv("APD_DATA_DIR", str(folder))
    assert datafiles.main(["check"]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("qa/lambada_openai.jsonl: SHA-256 ") and "apd data fetch" in lines[0]
    assert lines[1].startswith("qa/openbook_qa.jsonl: invalid: ") and "line 2" in lines[1]
    assert lines[2].startswith("qa/arc_easy.jsonl: missing from ") and "apd data fetch" in lines[2]


def test_check_without_a_folder_says_what_to_pass(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("APD_DATA_DIR", raising=False)
    assert datafiles.main(["check"]) == 1
    assert capsys.readouterr().out.count("\n") == 1
    assert datafiles.main(["check", str(tmp_path / "nowhere")]) == 1
    assert "apd data fetch" in capsys.readouterr().out


def _squad_json():
    """A dev-v1.1.json rebuilt from the offline copy, its articles not in title order (as in the original)."""
    articles: dict = {}
    for line in (DATA / "qa/squad_v1.1_dev.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        pars = articles.setdefault(r["title"], [])
        while len(pars) <= r["paragraph"]:
            pars.append({"context": r["context"], "qas": []})
        qas = pars[r["paragraph"]]["qas"]
        qas.append({"id": str(len(qas)), "question": r["question"], "answers": [{"text": a} for a in r["answers"]]})
    data = [{"title": t, "paragraphs": p} for t, p in reversed(articles.items())]
    return json.dumps({"version": "1.1", "data": data}).encode()


class _Response(io.BytesIO):
    headers: dict = {}


@pytest.fixture
def fake_web(monkeypatch):
    by_url = {f.url: f for f in datafiles.FILES}
    asked = []

    def open_url(url, timeout=30.0):
        asked.append(url)
        f = by_url[url]
        return _Response(_squad_json() if f.convert == "squad" else (DATA / f.path).read_bytes())

    monkeypatch.setattr(datafiles, "_open_url", open_url)
    return asked


@needs_data
def test_fetch_writes_the_recorded_files_and_resumes(tmp_path, fake_web, capsys):
    folder = tmp_path / "data"
    assert datafiles.main(["fetch", str(folder)]) == 0
    assert len(fake_web) == 9
    for f in datafiles.FILES:
        assert (folder / f.path).read_bytes() == (DATA / f.path).read_bytes(), f.path
    sums = (folder / "SHA256SUMS").read_text().splitlines()
    assert sorted(sums) == sorted(f"{f.sha256}  {f.path}" for f in datafiles.FILES)
    assert "[9/9]" in capsys.readouterr().out
    # a second run downloads nothing; a damaged file is fetched again
    (folder / "qa/multirc_val.jsonl").write_text("{}\n")
    fake_web.clear()
    assert datafiles.main(["fetch", str(folder)]) == 0
    assert fake_web == [next(f.url for f in datafiles.FILES if f.dataset == "multirc")]
    assert capsys.readouterr().out.count("already there, checksum ok") == 8
    assert datafiles.main(["check", str(folder)]) == 0


@needs_data
def test_fetch_reports_a_changed_source(tmp_path, fake_web, monkeypatch, capsys):
    real = datafiles._open_url
    monkeypatch.setattr(
        datafiles, "_open_url", lambda url, timeout=30.0: _Response(real(url).read().replace(b"signs", b"omens", 1))
    )
    assert datafiles.main(["fetch", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "qa/lambada_openai.jsonl: the download from " in out and "the source changed" in out


def test_fetch_offline_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    def offline(url, timeout=30.0):
        raise urllib.error.URLError(OSError(-3, "Temporary failure in name resolution"))

    monkeypatch.setattr(datafiles, "_open_url", offline)
    assert datafiles.main(["fetch", str(tmp_path)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("apd data fetch: cannot download https://") and "offline" in out[-1]
    assert not list(tmp_path.rglob("*.jsonl"))


def test_the_data_page_is_generated_from_the_table():
    text = (REPO / "book" / "data.md").read_text()
    assert text == datafiles.page(), "book/data.md is stale: python -m apd.evaluation.datafiles page > book/data.md"
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    notes = [line for line in text.splitlines() if line.startswith("- `")]
    assert len(rows) == len(notes) == len(datafiles.FILES)
    for f, row, note in zip(datafiles.FILES, rows, notes):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[0] == f"`{f.path}`" and cells[2] == f.split and cells[4] == f.format
        assert note.startswith(f"- `{f.path}` ({f.split}): {f.source}") and f"License: {f.license}." in note
        assert f.url in note and f.sha256 in note
    assert "see the dataset's card" in text  # no license is stated where the data README states none
    assert "- file: book/data" in (REPO / "_toc.yml").read_text()


def test_the_module_runs_without_torch():
    code = (
        "import sys, apd.evaluation.datafiles as d; assert 'torch' not in sys.modules; "
        "sys.exit(d.main(['page']) if 'torch' not in sys.modules else 3)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([sys.executable, "-m", "apd", "data", "--help"], capture_output=True, cwd=REPO)
    assert done.returncode == 0


def test_the_publishing_workflow_fetches_the_data_and_installs_chromium():
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "book.yml").read_text())
    steps = workflow["jobs"]["build"]["steps"]
    runs = [s.get("run", "") for s in steps]
    names = [s.get("name", "") for s in steps]
    fetch = next(i for i, r in enumerate(runs) if "-m apd data fetch data/" in r)
    assert "APD_DATA_DIR=" in runs[fetch] and "GITHUB_ENV" in runs[fetch]
    cache = next(i for i, s in enumerate(steps) if s.get("with", {}).get("path") == "data/")
    assert "datafiles.py" in steps[cache]["with"]["key"] and cache < fetch < names.index("Build the book")
    chromium = next(i for i, r in enumerate(runs) if "apt-get install -y chromium chromium-driver" in r)
    assert chromium < names.index("Check every page as a reader sees it")


def test_check_names_each_field_of_the_wrong_type_in_one_line(tmp_path, capsys):
    """Issue 51: ``apd data check`` read that the fields were there, not their types. Now a field that is
    not of the type the loader's schema gives is one line naming the file, the line and the field
    (nested fields by their path), one line per field."""
    prompts_file = tmp_path / "factuality_prompts" / "fever_factual_test7k_final.jsonl"
    csqa = tmp_path / "qa" / "commonsense_qa_train.jsonl"
    prompts_file.parent.mkdir()
    csqa.parent.mkdir()
    row = {"id": "1", "prompt": "Ada Lovelace was a mathematician.", "evidence_info": [["Ada Lovelace", "7"]]}
    prompts_file.write_text(json.dumps(row) + "\n" + json.dumps({**row, "prompt": 123, "evidence_info": "Ada"}) + "\n")
    question = {"stem": 42, "choices": [{"label": "A", "text": "bird"}, {"label": "B", "text": 3}]}
    csqa.write_text(json.dumps({"id": "c1", "question": question, "answerKey": "A"}) + "\n")
    assert datafiles.main(["check", str(tmp_path)]) == 1
    fix = "; fix or drop that row."
    assert [line for line in capsys.readouterr().out.splitlines() if "expected" in line] == [
        f"qa/commonsense_qa_train.jsonl: invalid: {csqa}:1: question.stem: expected str, got int (42){fix}",
        f"qa/commonsense_qa_train.jsonl: invalid: {csqa}:1: question.choices[1].text: expected str, got int (3){fix}",
        f"{prompts_file.relative_to(tmp_path)}: invalid: {prompts_file}:2: prompt: expected str, got int (123){fix}",
        f"{prompts_file.relative_to(tmp_path)}: invalid: {prompts_file}:2: evidence_info: expected a list of "
        f"[str, str or int], got str ('Ada'){fix}",
    ]


def test_every_offline_dataset_has_a_schema_of_field_types():
    """The loader and the check read one schema per reader (``OFFLINE_FIELDS``), so every dataset with an
    offline copy has one; the schema examples run."""
    import doctest

    from apd.base import rows

    offline = {spec.reader for spec in qa_data.DATASETS.values() if spec.local_files}
    assert offline <= set(qa_data.OFFLINE_FIELDS)
    assert doctest.testmod(rows).failed == 0
