"""One data path for everyone: the Hub loaders read the offline copies' splits and give the same items.

A local fake Hub (a stand-in ``datasets`` module) serves, for exactly the (dataset id, config, split,
revision) each loader should ask for, rows in the Hub's schema built from the offline copies in
``../shared/data`` (or ``$APD_DATA_DIR``); any other request fails as an unreachable Hub would.
"""

import io
import json
import sys
import types
from pathlib import Path

import pytest

from offline_data import DATA
from apd.evaluation import qa_data

REPO = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.skipif(
    DATA is None, reason="offline QA data not found: set APD_DATA_DIR (e.g. ../shared/data)"
)

OFFLINE = [name for name, spec in qa_data.DATASETS.items() if spec.local_files]
# the offline copies of these carry no ids: the Hub's own ids differ from the positions used offline
HUB_IDS = {"arc_easy", "openbookqa", "squad", "squad_q"}
LETTERS = "ABCDEFGH"


def _rows(name):
    path = DATA / qa_data.offline_file(name)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _choices(options):
    return {"text": list(options), "label": list(LETTERS[: len(options)])}


def _hub_rows(name):
    """The offline copy of ``name`` in the schema of its Hub dataset."""
    reader, rows = qa_data.DATASETS[name].reader, _rows(name)
    if reader == "lambada":
        return [{"text": r["context"] + " " + r["continuation"]} for r in rows]
    if reader == "commonsense_qa":
        return [
            {
                "id": r["id"],
                "question": r["question"]["stem"],
                "question_concept": r["question"].get("question_concept", ""),
                "choices": {
                    "label": [c["label"] for c in r["question"]["choices"]],
                    "text": [c["text"] for c in r["question"]["choices"]],
                },
                "answerKey": r["answerKey"],
            }
            for r in rows
        ]
    if reader == "arc":
        return [
            {
                "id": f"Mercury_{i}",
                "question": r["query"].removeprefix("Question: "),
                "choices": _choices(r["choices"]),
                "answerKey": LETTERS[r["gold"]],
            }
            for i, r in enumerate(rows)
        ]
    if reader == "openbookqa":
        return [
            {
                "id": f"7-{i}",
                "question_stem": r["query"],
                "choices": _choices(r["choices"]),
                "answerKey": LETTERS[r["gold"]],
            }
            for i, r in enumerate(rows)
        ]
    if reader == "social_iqa":
        return [
            {
                "context": r["context"],
                "question": r["question"],
                "answerA": r["options"][0],
                "answerB": r["options"][1],
                "answerC": r["options"][2],
                "label": str(r["options"].index(r["answer"]) + 1),
            }
            for r in rows
        ]
    if reader == "multirc":
        return [
            {
                "paragraph": par["passage"]["text"],
                "question": q["question"],
                "answer": a["text"],
                "label": a["label"],
                "idx": {"paragraph": par["idx"], "question": q["idx"], "answer": a["idx"]},
            }
            for par in rows
            for q in par["passage"]["questions"]
            for a in q["answers"]
        ]
    if reader == "squad":  # the Hub lists the articles in dev-v1.1.json's order, not by title
        out = [
            {
                "id": f"5733{i:06d}",
                "title": r["title"],
                "context": r["context"],
                "question": r["question"],
                "answers": {"text": list(r["answers"]), "answer_start": [0] * len(r["answers"])},
            }
            for i, r in enumerate(rows)
        ]
        titles = sorted({r["title"] for r in out}, reverse=True)
        return [r for t in titles for r in out if r["title"] == t]
    raise AssertionError(f"no Hub schema for {name}")


def _key(name):
    """What the loader of ``name`` must ask the Hub for: the offline copy's split."""
    spec = qa_data.DATASETS[name]
    split = qa_data.offline_file(name)  # qa/<file>
    split = next(s for s, f in spec.local_files.items() if f"qa/{f}" == split)
    return (spec.hub_id, spec.hub_config, split, spec.hub_revision)


@pytest.fixture
def fake_hub(monkeypatch):
    served, calls = {}, []
    for name in OFFLINE:
        served[_key(name)] = name

    def load_dataset(path, name=None, split=None, revision=None):
        calls.append((path, name, split, revision))
        if (path, name, split, revision) not in served:
            raise ConnectionError(f"the fake Hub serves no {(path, name, split, revision)}")
        return _hub_rows(served[(path, name, split, revision)])

    monkeypatch.delenv("APD_DATA_DIR", raising=False)
    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    return calls


def _item(e, name):
    """``e`` as compared: for the datasets of HUB_IDS, the id without its source's own item name."""
    parts = e.id.split("/")  # <dataset>/<split>/<item>[/<answer>]
    if name in HUB_IDS:
        parts[2] = "*"
    return (e.dataset, "/".join(parts), e.prompt, e.answer, e.options, e.gold_index, e.meta["split"])


def test_every_hub_split_is_the_offline_copys_split():
    for name in OFFLINE:
        spec = qa_data.DATASETS[name]
        assert spec.hub_split in spec.local_files, name
        assert qa_data.offline_file(name) == f"qa/{spec.local_files[spec.hub_split]}", name
    assert qa_data.DATASETS["arc_easy"].hub_split == "test"
    assert qa_data.DATASETS["social_iqa"].hub_split == "validation"
    assert qa_data.DATASETS["social_iqa"].hub_revision == "refs/convert/parquet"  # not the loading script


@pytest.mark.parametrize("name", OFFLINE)
def test_the_hub_and_the_data_dir_give_the_same_items(fake_hub, name):
    hub = qa_data.load_dataset(name)
    offline = qa_data.load_dataset(name, data_dir=DATA)
    assert fake_hub == [_key(name)]  # one request: the offline copy's split
    assert len(hub) == len(offline) > 0
    if name in HUB_IDS:  # same items; the ids keep the Hub's own names (the offline copies have none)
        assert [_item(e, name) for e in hub] == [_item(e, name) for e in offline]
    else:  # the same QAExamples (ids included), in the same order
        assert hub == offline
        assert [e.meta["split"] for e in hub] == [e.meta["split"] for e in offline]
    # what the chapter scores (qa_limit examples, seed 0): the same positions
    sub_hub, sub_off = qa_data.load_dataset(name, limit=100), qa_data.load_dataset(name, data_dir=DATA, limit=100)
    assert [_item(e, name) for e in sub_hub] == [_item(e, name) for e in sub_off]


def test_a_refused_hub_says_what_to_do(monkeypatch):
    def load_dataset(*args, **kwargs):
        raise RuntimeError("Dataset scripts are no longer supported, but found social_i_qa.py")

    monkeypatch.delenv("APD_DATA_DIR", raising=False)
    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    examples, reason = qa_data.try_load("social_iqa")
    assert examples is None
    assert "refs/convert/parquet" in reason and "'validation'" in reason and "apd data fetch" in reason


@pytest.mark.parametrize("kind", ["factual", "nonfactual"])
def test_factuality_prompts_from_the_original_source_match_the_data_dir(monkeypatch, tmp_path, kind):
    from apd.evaluation.factuality import prompts as fp
    from apd.evaluation.factuality.sources import prompts_file

    rel, url = prompts_file(kind, "test")
    asked = []

    def urlopen(u, timeout=None):
        asked.append(u)
        if u != url:
            raise OSError(f"the fake source serves only {url}")
        return io.BytesIO((DATA / rel).read_bytes())

    monkeypatch.delenv("APD_DATA_DIR", raising=False)
    monkeypatch.setattr(fp.urllib.request, "urlopen", urlopen)
    for limit in (None, 40):
        source = fp.load_factuality_prompts(kind, "test", limit=limit, cache=tmp_path)
        assert source == fp.load_factuality_prompts(kind, "test", data_dir=DATA, limit=limit)
    assert asked == [url]  # downloaded once, then read from the cache
