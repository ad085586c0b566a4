"""QA datasets and the paper's one-shot prompt templates (Section 5.2 and the appendix).

``load_dataset(name)`` returns a list of :class:`QAExample`: the prompt text up to the answer
(ending right after ``Answer:`` / ``The answer is``, no trailing space), the gold answer to score
after it, with its leading space (``" " + gold``), and for multiple-choice datasets all options
(same leading space, dataset order, ``gold_index``). It reads the Hugging Face Hub ids the authors
used (``DATASETS``), or with ``data_dir=`` (or ``$APD_DATA_DIR``) the offline JSONL copies in
``<data_dir>/qa/`` (a data folder named that is not a folder is a NotADirectoryError, never the Hub
instead). A dataset that cannot be had raises :class:`DatasetUnavailable`; :func:`try_load` returns
``(None, reason)`` instead. A file that is there but wrong raises :class:`DatasetInvalid`, from both:
invalid data is an error, never a dataset silently left out. :func:`check_offline_file` reads a file
line by line and raises what :func:`load_dataset` would, without keeping the rows (``apd data
check``); both check each row's fields against the types of :data:`OFFLINE_FIELDS`. This module
only decides what text is scored; scoring is in :mod:`apd.evaluation.qa_scoring`.
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Union

from apd.base import rows as row_types
from apd.base.paths import data_folder

__all__ = [
    "QAExample",
    "DatasetSpec",
    "DATASETS",
    "OFFLINE_FIELDS",
    "TEMPLATES",
    "DatasetUnavailable",
    "DatasetInvalid",
    "render_prompt",
    "multirc_passage",
    "resolve_data_dir",
    "offline_file",
    "check_offline_file",
    "subsample",
    "load_dataset",
    "try_load",
]


@dataclass(frozen=True)
class QAExample:
    """One scored item.

    prompt: the whole one-shot prompt, ending right before the answer (no trailing space).
    answer: the gold continuation, with its leading space (``" bird"``); score its tokens.
    options: for multiple choice, every option as a continuation (leading space, gold included,
        dataset order); ``None`` for free-answer datasets (scored by gold-token ppl / MRR).
    gold_index: ``options.index(answer)`` for multiple choice, else ``None``.
    meta: provenance and raw fields (``split``, ``source``, ``question``, ...), never scored.
    """

    dataset: str
    id: str
    prompt: str
    answer: str
    options: Optional[list] = None
    gold_index: Optional[int] = None
    meta: dict = field(default_factory=dict, compare=False)


class DatasetUnavailable(RuntimeError):
    """The dataset cannot be had here (no offline copy, no split, Hub unreachable). The message
    says why and what to do instead; :func:`try_load` returns it as the "not run" reason."""


class DatasetInvalid(ValueError):
    """The dataset file is there but wrong: empty, truncated (a line that is not JSON), not UTF-8, or
    a row without usable answer options or gold answer. The message names the file, the line and the
    problem. Not a :class:`DatasetUnavailable`: :func:`try_load` raises it, so a damaged copy fails the
    chapter (and ``apd data check``) instead of becoming a "not run" row."""


# --------------------------------------------------------------------------------------------
# Templates (appendix "One-shot Prompt Templates"), one format string each.

TEMPLATES: dict[str, str] = {
    # ARC, CommonsenseQA, QASC (Q only); also OpenBookQA, the offline stand-in for QASC.
    "question_answer": (
        " Question: Which kind of animals can fly?\n Answer: bird.\n\n Question: {question}\n Answer:"
    ),
    "qasc_facts": (
        " Question: Which kind of animals can fly?\n"
        " Fact 1: a bird is an animal.\n"
        " Fact 2: birds can fly.\n"
        " Answer: bird.\n"
        "\n"
        " Question: {question}\n"
        " Fact 1: {fact1}\n"
        " Fact 2: {fact2}\n"
        " Answer:"
    ),
    "social_iqa": (
        " Passage: John likes to go hiking, and his wife likes to cook.\n"
        " Question: Who likes to cook?\n"
        " Answer: his wife\n"
        "\n"
        " Passage: {passage}\n"
        " Question: {question}\n"
        " Answer:"
    ),
    # {passage} is "Sent 1: ...\n Sent 2: ..." (see multirc_passage).
    "multirc": (
        " Passage: Sent 1: John likes to go hiking, and his wife likes to cook.\n"
        " Sent 2: His wife likes to cook.\n"
        " Here is a question: Who likes to cook?\n"
        " The answer is his wife\n"
        "\n"
        " Passage: {passage}\n"
        " Here is a question: {question}\n"
        " The answer is"
    ),
    "squad_qp": (
        " Passage: John likes to go hiking, and his wife likes to cook.\n"
        " Question: Who likes to cook?\n"
        " The answer is his wife\n"
        "\n"
        " Passage: {passage}\n"
        " Question: {question}\n"
        " The answer is"
    ),
    "squad_q": (
        " Here is a question: What is the birthplace of Barack Obama?\n"
        " The answer is Honolulu, Hawaii.\n"
        "\n"
        " Here is a question: {question}\n"
        " The answer is"
    ),
    # Not in the appendix: zero-shot, as in the authors' release.
    "lambada": "{context}",
}

_FIELD = re.compile(r"{(\w+)}")


def render_prompt(template: str, **fields: str) -> str:
    """Fill a template of ``TEMPLATES`` (by name) with exactly its fields, e.g.
    ``render_prompt("qasc_facts", question=..., fact1=..., fact2=...)``."""
    if template not in TEMPLATES:
        raise ValueError(f"unknown template {template!r}; choose one of {sorted(TEMPLATES)}.")
    text = TEMPLATES[template]
    needed = set(_FIELD.findall(text))
    if set(fields) != needed:
        raise ValueError(
            f"template {template!r} takes the fields {sorted(needed)}, got {sorted(fields)}; "
            "pass exactly those as keyword arguments."
        )
    for k, v in fields.items():
        if not isinstance(v, str):
            raise TypeError(f"field {k!r} must be a str, got {type(v).__name__}.")
    return text.format(**fields)


# --------------------------------------------------------------------------------------------
# MultiRC passages: re-number the sentences the SuperGLUE copy has flattened.

_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*\s+")
_ABBREVIATIONS = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "st",
    "jr",
    "sr",
    "vs",
    "gen",
    "col",
    "lt",
    "sgt",
    "capt",
    "gov",
    "sen",
    "rep",
    "rev",
    "mt",
    "no",
    "inc",
    "co",
    "corp",
    "ltd",
}


def _sentences(text: str) -> list[str]:
    """Split a flattened passage at sentence-final punctuation followed by whitespace and a
    capital, digit or opening quote, except after a known abbreviation or an initial ("U.S.")."""
    text = text.strip()
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        nxt = text[m.end() : m.end() + 1]
        if not (nxt.isupper() or nxt.isdigit() or nxt in "\"'`(["):
            continue
        last_word = text[start : m.start() + 1].split()[-1] if text[start : m.start() + 1].split() else ""
        if last_word.rstrip(".").lower() in _ABBREVIATIONS or re.fullmatch(r"(?:[A-Za-z]\.)+", last_word):
            continue
        out.append(text[start : m.end()])
        start = m.end()
    if text[start:].strip():
        out.append(text[start:])
    return [" ".join(s.split()) for s in out if s.strip()]


def multirc_passage(text: str) -> str:
    """A flattened MultiRC passage in the template's format: ``"Sent 1: ...\\n Sent 2: ..."``."""
    return "\n ".join(f"Sent {i}: {s}" for i, s in enumerate(_sentences(text), start=1))


# --------------------------------------------------------------------------------------------
# Registry


@dataclass(frozen=True)
class DatasetSpec:
    """Where a dataset comes from and how it is prompted.

    hub_id, hub_config, hub_split: what ``datasets.load_dataset`` gets (a tuple of configs is
        concatenated). hub_split is the offline copy's split where there is one (so the Hub and
        ``$APD_DATA_DIR`` give the same items), else the paper's. hub_id None: no Hub source.
    local_files: split -> file name in ``<data_dir>/qa/`` (empty: no offline copy).
    template: a key of ``TEMPLATES``. kind: ``"mc"`` (options) or ``"free"`` (gold only).
    reader: which raw-row parser turns Hub or offline rows into records (internal).
    notes: provenance and deviations from the paper. offline_note: why there is no offline copy
        and what to run instead (when local_files is empty); the DatasetUnavailable message.
    hub_revision: the Hub revision to read (None: the default branch); ``"refs/convert/parquet"``
        for a script-based repo, which recent ``datasets`` versions refuse to run.
    """

    hub_id: Optional[str]
    hub_config: Union[str, tuple, None]
    hub_split: str
    local_files: dict
    template: str
    kind: str
    reader: str  # which record parser (internal)
    notes: str = ""
    offline_note: str = ""
    hub_revision: Optional[str] = None


_QASC_OFFLINE = (
    "QASC has no offline copy in the data directory; load it from the Hub "
    "(allenai/qasc) without data_dir=, or run 'openbookqa', its offline stand-in "
    "(Q only: OpenBookQA has no facts)."
)
_ARC_C_OFFLINE = (
    "ARC-Challenge has no offline copy in the data directory; load it from the Hub "
    "(allenai/ai2_arc, ARC-Challenge) without data_dir=, or run 'arc_easy' offline."
)

DATASETS: dict[str, DatasetSpec] = {
    "lambada": DatasetSpec(
        hub_id="EleutherAI/lambada_openai",
        hub_config="en",
        hub_split="test",
        local_files={"test": "lambada_openai.jsonl"},
        template="lambada",
        kind="free",
        reader="lambada",
        notes="LAMBADA (OpenAI version), test split, zero-shot: the appendix gives no template and "
        "the authors' release used the bare passage.",
    ),
    "commonsense_qa": DatasetSpec(
        hub_id="tau/commonsense_qa",
        hub_config=None,
        hub_split="train",
        local_files={"train": "commonsense_qa_train.jsonl", "validation": "commonsense_qa_dev.jsonl"},
        template="question_answer",
        kind="mc",
        reader="commonsense_qa",
        notes="CommonsenseQA, train split as in the paper; 5 options.",
    ),
    "qasc": DatasetSpec(
        hub_id="allenai/qasc",
        hub_config=None,
        hub_split="train",
        local_files={},
        template="qasc_facts",
        kind="mc",
        reader="qasc",
        offline_note=_QASC_OFFLINE,
        notes="QASC (Q+Facts), train split; 8 options. Hub only.",
    ),
    "qasc_q": DatasetSpec(
        hub_id="allenai/qasc",
        hub_config=None,
        hub_split="train",
        local_files={},
        template="question_answer",
        kind="mc",
        reader="qasc",
        offline_note=_QASC_OFFLINE,
        notes="QASC (Q only), train split; 8 options. Hub only.",
    ),
    "openbookqa": DatasetSpec(
        hub_id="allenai/openbookqa",
        hub_config="main",
        hub_split="test",
        local_files={"test": "openbook_qa.jsonl"},
        template="question_answer",
        kind="mc",
        reader="openbookqa",
        notes="OpenBookQA test (500 questions, 4 options): not in the paper; the offline stand-in "
        "for QASC. It has no facts, so it stands in for QASC (Q only) only.",
    ),
    "arc": DatasetSpec(
        hub_id="allenai/ai2_arc",
        hub_config=("ARC-Easy", "ARC-Challenge"),
        hub_split="train",
        local_files={},
        template="question_answer",
        kind="mc",
        reader="arc",
        offline_note="ARC (Easy + Challenge) has no offline copy (only ARC-Easy test is offline); "
        "load it from the Hub (allenai/ai2_arc) without data_dir=, or run 'arc_easy' offline.",
        notes="ARC Easy + Challenge, train splits concatenated, as in the paper. Hub only.",
    ),
    "arc_easy": DatasetSpec(
        hub_id="allenai/ai2_arc",
        hub_config="ARC-Easy",
        hub_split="test",
        local_files={"test": "arc_easy.jsonl"},
        template="question_answer",
        kind="mc",
        reader="arc",
        notes="ARC-Easy test (2,376), the split of the offline copy, from the Hub too; the paper used "
        "train ('arc', Hub only).",
    ),
    "arc_challenge": DatasetSpec(
        hub_id="allenai/ai2_arc",
        hub_config="ARC-Challenge",
        hub_split="train",
        local_files={},
        template="question_answer",
        kind="mc",
        reader="arc",
        offline_note=_ARC_C_OFFLINE,
        notes="ARC-Challenge, train split. Hub only.",
    ),
    "social_iqa": DatasetSpec(
        hub_id="allenai/social_i_qa",
        hub_config=None,
        hub_split="validation",
        hub_revision="refs/convert/parquet",
        local_files={"validation": "social_iqa_dev.jsonl"},
        template="social_iqa",
        kind="mc",
        reader="social_iqa",
        notes="SocialIQA dev (1,954), the split of the offline copy, from the Hub too; the paper used "
        "train. The Hub repo is script-based, which recent `datasets` versions refuse: it is read from "
        "its Parquet conversion (revision refs/convert/parquet).",
    ),
    "multirc": DatasetSpec(
        hub_id="aps/super_glue",
        hub_config="multirc",
        hub_split="validation",
        local_files={"validation": "multirc_val.jsonl"},
        template="multirc",
        kind="free",
        reader="multirc",
        notes="MultiRC dev (83 passages, 953 questions: the paper's dev_83), SuperGLUE format; one "
        "example per correct answer (2,075); sentences re-split for the 'Sent i:' labels.",
    ),
    "squad": DatasetSpec(
        hub_id="rajpurkar/squad",
        hub_config=None,
        hub_split="validation",
        local_files={"validation": "squad_v1.1_dev.jsonl"},
        template="squad_qp",
        kind="free",
        reader="squad",
        notes="SQuAD v1.1 validation, question + passage (Q+P); one example per annotated answer "
        "(34,726 for 10,570 questions).",
    ),
    "squad_q": DatasetSpec(
        hub_id="rajpurkar/squad",
        hub_config=None,
        hub_split="validation",
        local_files={"validation": "squad_v1.1_dev.jsonl"},
        template="squad_q",
        kind="free",
        reader="squad",
        notes="SQuAD v1.1 validation, question only (Q); one example per annotated answer.",
    ),
}


# --------------------------------------------------------------------------------------------
# Raw rows -> canonical records. A record is a dict with "id" and the template's fields plus
# either ("options", "gold_index") for mc or "answers" (list of gold strings) for free datasets.

_MC_FILE = {"query": str, "choices": [str], "gold": int}

#: The fields of an offline copy's row and their types, by reader (:mod:`apd.base.rows`): each row is
#: checked against them before it is read, by :func:`load_dataset` and :func:`check_offline_file`
#: (``apd data check``) alike, so a number where text belongs names its file, line and field.
OFFLINE_FIELDS: dict[str, dict] = {
    "lambada": {"context": str, "continuation": str},
    "commonsense_qa": {"question": {"stem": str, "choices": [{"label": str, "text": str}]}, "answerKey": str},
    "arc": _MC_FILE,
    "openbookqa": _MC_FILE,
    "social_iqa": {"context": str, "question": str, "options": [str], "answer": str},
    "multirc": {
        "idx": int | str,
        "passage": {
            "text": str,
            "questions": [{"idx": int | str, "question": str, "answers": [{"text": str, "label": int}]}],
        },
    },
    "squad": {"context": str, "question": str, "answers": [str]},
}


def _mc_from_labels(choices: dict, answer_key: str, where: str) -> tuple[list, int]:
    labels, texts = list(choices["label"]), list(choices["text"])
    if answer_key not in labels:
        raise DatasetUnavailable(
            f"{where}: answer key {answer_key!r} is not one of the labels {labels}; this split "
            "has no public gold answers (QASC/CommonsenseQA test): choose split='train' or "
            "'validation'."
        )
    return texts, labels.index(answer_key)


def _lambada(row: dict, i: int, source: str) -> dict:
    if source == "hub":  # {text}: the target is the last space-separated word
        context, _, target = row["text"].rpartition(" ")
    else:  # {context, continuation}
        context, target = row["context"], row["continuation"]
    return {"id": str(i), "context": context, "answers": [target]}


def _commonsense_qa(row: dict, i: int, source: str) -> dict:
    q = row["question"]
    if source == "hub":  # {id, question, choices{label,text}, answerKey}
        question, choices = q, row["choices"]
    else:  # {id, question{stem, choices[{label,text}]}, answerKey}
        question = q["stem"]
        choices = {"label": [c["label"] for c in q["choices"]], "text": [c["text"] for c in q["choices"]]}
    options, gold = _mc_from_labels(choices, row["answerKey"], f"commonsense_qa row {i}")
    return {"id": str(row.get("id", i)), "question": question, "options": options, "gold_index": gold}


def _qasc(row: dict, i: int, source: str) -> dict:
    options, gold = _mc_from_labels(row["choices"], row["answerKey"], f"qasc row {i}")
    return {
        "id": str(row.get("id", i)),
        "question": row["question"],
        "fact1": row["fact1"],
        "fact2": row["fact2"],
        "options": options,
        "gold_index": gold,
    }


def _arc(row: dict, i: int, source: str) -> dict:
    if source == "hub":  # {id, question, choices{text,label}, answerKey}
        options, gold = _mc_from_labels(row["choices"], row["answerKey"], f"arc row {i}")
        return {"id": str(row["id"]), "question": row["question"], "options": options, "gold_index": gold}
    question = row["query"]  # {query: "Question: ...", choices, gold}
    if question.startswith("Question: "):
        question = question[len("Question: ") :]
    return {
        "id": str(i),
        "question": question,
        "options": list(row["choices"]),
        "gold_index": row["gold"],
    }


def _openbookqa(row: dict, i: int, source: str) -> dict:
    if source == "hub":  # {id, question_stem, choices{text,label}, answerKey}
        options, gold = _mc_from_labels(row["choices"], row["answerKey"], f"openbookqa row {i}")
        return {"id": str(row["id"]), "question": row["question_stem"], "options": options, "gold_index": gold}
    return {
        "id": str(i),
        "question": row["query"],
        "options": list(row["choices"]),
        "gold_index": row["gold"],
    }


def _social_iqa(row: dict, i: int, source: str) -> dict:
    if source == "hub":  # {context, question, answerA, answerB, answerC, label: "1".."3"}
        options = [row["answerA"], row["answerB"], row["answerC"]]
        gold = int(row["label"]) - 1
    else:  # {context, question, options[3], answer (text)}
        options = list(row["options"])
        if row["answer"] not in options:
            raise ValueError(
                f"social_iqa row {i}: answer {row['answer']!r} is not among {options}; "
                "the file is not the expected SocialIQA dev copy."
            )
        gold = options.index(row["answer"])
    return {
        "id": str(i),
        "passage": row["context"],
        "question": row["question"],
        "options": options,
        "gold_index": gold,
    }


def _squad(row: dict, i: int, source: str) -> dict:
    answers = row["answers"]["text"] if isinstance(row["answers"], dict) else row["answers"]
    return {
        "id": str(row.get("id", i)),
        "passage": row["context"],
        "question": row["question"],
        "answers": list(answers),
        "title": row.get("title", ""),
    }


def _multirc_records(rows: Iterable[dict], source: str) -> list[dict]:
    """One record per question. Local rows are SuperGLUE passages with nested questions; Hub rows
    (aps/super_glue) are flat (paragraph, question, answer, idx{paragraph,question,answer}, label)."""
    if source != "hub":
        nested = rows
    else:
        by_par: dict = {}
        for r in rows:
            p, q = r["idx"]["paragraph"], r["idx"]["question"]
            par = by_par.setdefault(p, {"idx": p, "passage": {"text": r["paragraph"], "questions": {}}})
            qd = par["passage"]["questions"].setdefault(q, {"idx": q, "question": r["question"], "answers": []})
            qd["answers"].append({"text": r["answer"], "idx": r["idx"]["answer"], "label": r["label"]})
        nested = [
            {**p, "passage": {"text": p["passage"]["text"], "questions": list(p["passage"]["questions"].values())}}
            for p in by_par.values()
        ]
    squash = lambda text: " ".join(text.split())  # noqa: E731  (collapse whitespace runs)
    out = []
    for par in nested:
        passage = multirc_passage(par["passage"]["text"])
        for q in par["passage"]["questions"]:
            out.append(
                {
                    "id": f"{par['idx']}-{q['idx']}",
                    "passage": passage,
                    "question": squash(q["question"]),
                    "answers": [squash(a["text"]) for a in q["answers"] if a["label"] == 1],
                    "wrong_answers": [squash(a["text"]) for a in q["answers"] if a["label"] != 1],
                }
            )
    return out


_READERS: dict[str, Callable[[dict, int, str], dict]] = {
    "lambada": _lambada,
    "commonsense_qa": _commonsense_qa,
    "qasc": _qasc,
    "arc": _arc,
    "openbookqa": _openbookqa,
    "social_iqa": _social_iqa,
    "squad": _squad,
}


# --------------------------------------------------------------------------------------------
# Sources


def resolve_data_dir(data_dir: Union[str, os.PathLike, None] = None) -> Optional[Path]:
    """The folder holding the QA JSONL files, or None for the Hub. ``data_dir`` (else
    ``$APD_DATA_DIR``) may be the shared data root (files in its ``qa/``) or the ``qa/`` folder; one
    that does not exist or is a file is a NotADirectoryError naming it
    (:func:`apd.base.paths.data_folder`)."""
    root = data_folder(data_dir)
    if root is None:
        return None
    return root / "qa" if (root / "qa").is_dir() else root


def _offline_split(spec: DatasetSpec, split: Optional[str]) -> Optional[str]:
    """The split read offline: ``split``, else the paper's when there is a copy of it, else the only one."""
    if split is None and spec.local_files:
        split = spec.hub_split if spec.hub_split in spec.local_files else next(iter(spec.local_files))
    return split


def offline_file(name: str, split: Optional[str] = None) -> Optional[str]:
    """The file (relative to a data directory such as ``$APD_DATA_DIR``) that :func:`load_dataset`
    reads offline for ``name`` and ``split``; None when there is no offline copy of it.

    Example:
        >>> offline_file("lambada"), offline_file("qasc")
        ('qa/lambada_openai.jsonl', None)
    """
    spec = DATASETS[name]
    split = _offline_split(spec, split)
    return f"qa/{spec.local_files[split]}" if split in spec.local_files else None


def _offline_path(name: str, spec: DatasetSpec, qa_dir: Path, split: Optional[str]) -> tuple[Path, str]:
    """The offline file of ``name`` and the split it holds; DatasetUnavailable when there is none."""
    if not spec.local_files:
        raise DatasetUnavailable(f"{name}: {spec.offline_note}")
    split = _offline_split(spec, split)  # the paper's split when we have it offline, else the only one we have
    if split not in spec.local_files:
        raise DatasetUnavailable(
            f"{name}: no offline copy of split {split!r} (offline: {sorted(spec.local_files)}); "
            "pass one of those, or load the Hub without data_dir=."
        )
    path = qa_dir / spec.local_files[split]
    if not path.is_file():
        raise DatasetUnavailable(f"{name}: offline file {str(path)!r} is missing from the data directory.")
    return path, split


def _offline_rows(name: str, path: Path) -> Iterator[tuple[int, object]]:
    """``(line number, parsed JSON)`` of each non-blank line of an offline JSONL file, read line by
    line; DatasetInvalid naming the file and the line at bytes that are not UTF-8 or a line that is
    not JSON."""
    offset = 0
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DatasetInvalid(
                    f"{name}: {path} is not UTF-8 text (line {n}: {e.reason} at byte {offset + e.start}); the "
                    "offline copies are UTF-8 JSON lines: fetch that copy again, or convert it to "
                    "UTF-8."
                ) from None
            offset += len(raw)
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise DatasetInvalid(
                    f"{name}: {path}, line {n} is not valid JSON ({e}); the file is damaged "
                    "or truncated: fetch that offline copy again."
                ) from None
            yield n, row


def _empty(name: str, path: Path) -> DatasetInvalid:
    return DatasetInvalid(f"{name}: the offline file {path} is empty; fetch that offline copy again.")


def _field_problems(spec: DatasetSpec, row, path: Path, n: int) -> list[str]:
    """One line per field of an offline row (line ``n`` of ``path``) that is missing or not of the
    type :data:`OFFLINE_FIELDS` gives: ``<file>:<line>: <field>: expected str, got int (3); ...``."""
    return [
        f"{path}:{n}: {problem}; fix or drop that row."
        for problem in row_types.problems(row, OFFLINE_FIELDS[spec.reader])
    ]


def _local_rows(name: str, spec: DatasetSpec, qa_dir: Path, split: Optional[str]) -> tuple[list, str, list]:
    path, split = _offline_path(name, spec, qa_dir, split)
    rows, lines = [], []
    for n, row in _offline_rows(name, path):
        bad = _field_problems(spec, row, path, n)
        if bad:
            raise DatasetInvalid("\n".join(bad))
        rows.append(row)
        lines.append(n)
    if not rows:
        raise _empty(name, path)
    return rows, split, lines


def _read_row(name: str, spec: DatasetSpec, row, i: int, where: str, at: str) -> dict:
    """One raw row as a record (not MultiRC); DatasetInvalid naming ``at`` (file and line) when it
    cannot be read."""
    try:
        return _READERS[spec.reader](row, i, where)
    except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
        raise DatasetInvalid(f"{name}: {at} cannot be read ({type(e).__name__}: {e}); fix or drop that row.") from None


def check_offline_file(name: str, data_dir: Union[str, os.PathLike, None] = None, split: Optional[str] = None) -> Path:
    """Read the offline file of dataset ``name`` (as :func:`load_dataset` would, from ``data_dir`` or
    ``$APD_DATA_DIR``) line by line, keeping no rows, and raise the :class:`DatasetInvalid` that
    loading it would raise, naming the file, the line and the problem; returns its path. Rows whose
    fields are not of the types of :data:`OFFLINE_FIELDS` are all listed, one line per field (at
    most :data:`apd.base.rows.MAX_LISTED` lines), before the first other problem. DatasetUnavailable
    when there is no offline copy or no data directory.

    Example:
        >>> import tempfile
        >>> qa = Path(tempfile.mkdtemp()) / "qa"; qa.mkdir()
        >>> _ = (qa / "openbook_qa.jsonl").write_text('{"query": 7, "choices": "ab", "gold": 0}\\n')
        >>> check_offline_file("openbookqa", qa.parent)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        apd.evaluation.qa_data.DatasetInvalid: .../openbook_qa.jsonl:1: query: expected str, got int (7); fix or drop that row.
        .../openbook_qa.jsonl:1: choices: expected a list of str, got str ('ab'); fix or drop that row.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown QA dataset {name!r}; choose one of {sorted(DATASETS)}.")
    spec = DATASETS[name]
    qa_dir = resolve_data_dir(data_dir)
    if qa_dir is None:
        raise DatasetUnavailable(f"{name}: no data directory given (data_dir= or APD_DATA_DIR) to check.")
    path, split = _offline_path(name, spec, qa_dir, split)
    count, records, lines = 0, [], []  # records not checked yet (at most _CHECK_BLOCK), and their lines
    listed: list[str] = []  # the rows' field problems, one line each

    def check_block() -> None:
        _examples(name, spec, records, split, str(path), lambda i: f"{path}, line {lines[i]}")
        records.clear()
        lines.clear()

    try:
        for n, row in _offline_rows(name, path):
            count += 1
            bad = _field_problems(spec, row, path, n)
            if bad:
                listed += bad
                if len(listed) > row_types.MAX_LISTED:
                    listed = listed[: row_types.MAX_LISTED] + [
                        f"{path}: not read past line {n}; fix these rows first."
                    ]
                    break
                continue
            at = f"{path}, line {n}"
            if spec.reader == "multirc":
                try:
                    found = _multirc_records([row], "local")
                except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
                    raise DatasetInvalid(
                        f"{name}: {at} cannot be read ({type(e).__name__}: {e}); fix or drop that row."
                    ) from None
            else:
                found = [_read_row(name, spec, row, count - 1, "local", at)]
            records += found
            lines += [n] * len(found)
            if len(records) >= _CHECK_BLOCK:
                check_block()
        check_block()
    except DatasetInvalid as err:
        listed.append(str(err))
    if listed:
        raise DatasetInvalid("\n".join(listed))
    if not count:
        raise _empty(name, path)
    return path


_CHECK_BLOCK = 1024  # records checked at a time by check_offline_file


def _hub_rows(name: str, spec: DatasetSpec, split: Optional[str]) -> tuple[list, str]:
    if spec.hub_id is None:
        raise DatasetUnavailable(f"{name}: no Hub source.")
    try:
        import datasets  # noqa: F401  (optional dependency, only for the Hub)
    except ImportError as e:
        raise ImportError(
            f"loading {name!r} from the Hugging Face Hub ({spec.hub_id}) needs the `datasets` package: "
            "`pip install datasets`; or pass data_dir= (or set APD_DATA_DIR) to read the offline "
            "JSONL copies in <data_dir>/qa/ instead."
        ) from e
    split = split or spec.hub_split
    configs = spec.hub_config if isinstance(spec.hub_config, tuple) else (spec.hub_config,)
    rows = []
    for config in configs:
        args = (spec.hub_id,) if config is None else (spec.hub_id, config)
        kwargs = {"revision": spec.hub_revision} if spec.hub_revision else {}
        try:
            ds = datasets.load_dataset(*args, split=split, **kwargs)
        except Exception as e:  # network, missing split, script-based repo, ...: say why
            raise DatasetUnavailable(
                f"{name}: could not load {spec.hub_id}"
                + (f" ({config})" if config else "")
                + (f" at revision {spec.hub_revision}" if spec.hub_revision else "")
                + f" split {split!r} from the Hub: {type(e).__name__}: {e}. Pass data_dir= (or set "
                "APD_DATA_DIR, e.g. after `apd data fetch data/`) to use the offline copies where they exist."
            ) from e
        rows.extend(dict(r) for r in ds)
    if spec.reader == "squad":  # the offline copy lists the articles by title: the same order here
        rows.sort(key=lambda r: r.get("title", ""))
    if not rows:
        raise DatasetInvalid(f"{name}: {spec.hub_id} split {split!r} on the Hub has no rows.")
    return rows, split, None


# --------------------------------------------------------------------------------------------
# Records -> examples


def _examples(
    name: str, spec: DatasetSpec, records: list[dict], split: str, source: str, where: Callable[[int], str] = None
) -> list[QAExample]:
    fields = set(_FIELD.findall(TEMPLATES[spec.template]))
    where = where or (lambda i: f"{source}, record {i + 1}")
    out = []
    for i, rec in enumerate(records):
        if spec.kind == "mc":
            opts = rec.get("options")
            if not isinstance(opts, (list, tuple)) or len(opts) < 2 or not all(isinstance(o, str) for o in opts):
                raise DatasetInvalid(
                    f"{name}: {where(i)} has answer options {opts!r}, but they must be a list of at least two "
                    "strings (a single string is not a list of options, and a one-option item is always "
                    "answered right); fix or drop that row."
                )
            gold, n_opt = rec.get("gold_index"), len(opts)
            if isinstance(gold, bool) or not isinstance(gold, int) or not 0 <= gold < n_opt:
                raise DatasetInvalid(
                    f"{name}: {where(i)} has gold answer index {gold!r}, but it must be an int in [0, {n_opt}) "
                    f"(one of its {n_opt} options); fix or drop that row."
                )
        elif rec.get("answers") is None or (spec.reader == "lambada" and not rec["answers"]):
            # (a MultiRC question may have no correct answer option: it then makes no example)
            raise DatasetInvalid(f"{name}: {where(i)} has no gold answer; fix or drop that row.")
        try:
            prompt = render_prompt(spec.template, **{k: rec[k] for k in fields})
        except (KeyError, TypeError) as e:  # a field missing or not text (e.g. a number as the question)
            raise DatasetInvalid(
                f"{name}: {where(i)} cannot be read ({type(e).__name__}: {e}); fix or drop that row."
            ) from None
        base_id = f"{name}/{split}/{rec['id']}"
        meta = {"split": split, "source": source}
        meta.update(
            {k: v for k, v in rec.items() if k not in ("id", "options", "gold_index", "answers", "passage", "context")}
        )
        if spec.kind == "mc":
            options = [" " + o for o in rec["options"]]
            out.append(QAExample(name, base_id, prompt, options[rec["gold_index"]], options, rec["gold_index"], meta))
        else:
            answers = rec["answers"]
            if spec.reader == "lambada":  # exactly one target word
                out.append(QAExample(name, base_id, prompt, " " + answers[0], None, None, meta))
            else:  # SQuAD, MultiRC: one example per gold answer, ids <question id>/<j>
                for j, a in enumerate(answers):
                    out.append(
                        QAExample(
                            name, f"{base_id}/{j}", prompt, " " + a, None, None, {**meta, "all_answers": list(answers)}
                        )
                    )
    return out


def subsample(items: list, limit: Optional[int], seed: int = 0) -> list:
    """``limit`` items drawn without replacement by ``random.Random(seed)``, kept in their original
    order; all items when ``limit`` is None or not smaller than ``len(items)``."""
    if limit is None:
        return list(items)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive int or None (all items), got {limit!r}.")
    if limit >= len(items):
        return list(items)
    keep = sorted(random.Random(seed).sample(range(len(items)), limit))
    return [items[i] for i in keep]


def load_dataset(
    name: str,
    data_dir: Union[str, os.PathLike, None] = None,
    split: Optional[str] = None,
    limit: Optional[int] = None,
    seed: int = 0,
) -> list[QAExample]:
    """Examples of dataset ``name`` (a key of ``DATASETS``) with its one-shot prompts.

    data_dir: offline root (or its ``qa/`` folder); default ``$APD_DATA_DIR``; neither: the Hub.
    split: Hugging Face split name; default the paper's split on the Hub, and offline that split
        when a copy exists, else the one split that does (see each spec's notes).
    limit, seed: keep ``limit`` examples chosen deterministically by ``seed`` (original order).
    Raises DatasetUnavailable (with the reason), or ImportError when the Hub is needed and the
    ``datasets`` package is missing.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown QA dataset {name!r}; choose one of {sorted(DATASETS)}.")
    spec = DATASETS[name]
    qa_dir = resolve_data_dir(data_dir)
    if qa_dir is not None:
        rows, split, lines = _local_rows(name, spec, qa_dir, split)
        source = str(qa_dir / spec.local_files[split])
    else:
        rows, split, lines = _hub_rows(name, spec, split)
        source = f"hub:{spec.hub_id}"

    def row_where(i: int) -> str:
        return f"{source}, line {lines[i]}" if lines is not None else f"{source}, row {i}"

    where = "hub" if qa_dir is None else "local"
    if spec.reader == "multirc":
        try:
            records, at = _multirc_records(rows, where), None
        except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
            raise DatasetInvalid(
                f"{name}: {source} cannot be read ({type(e).__name__}: {e}); check_offline_file names the line."
            ) from None
    else:
        records = [_read_row(name, spec, r, i, where, row_where(i)) for i, r in enumerate(rows)]
        at = row_where
    return subsample(_examples(name, spec, records, split, source, at), limit, seed)


def try_load(name: str, **kwargs) -> tuple[Optional[list], Optional[str]]:
    """``(examples, None)``, or ``(None, reason)`` when the dataset cannot be had (no offline copy,
    Hub unreachable, ``datasets`` missing), so a notebook can report "not run: <reason>". A file that
    is there but invalid raises :class:`DatasetInvalid` (it is not a dataset that cannot be had)."""
    try:
        return load_dataset(name, **kwargs), None
    except (DatasetUnavailable, ImportError) as e:
        return None, str(e)
