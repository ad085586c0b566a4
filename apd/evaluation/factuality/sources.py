"""Where the FactualityPrompts files come from: their names in an offline copy and their original URLs;
what a row holds (:data:`ROW_FIELDS`), and the reading of a file that checks it.

Standard library only, so that `apd data check` reads it without loading a model.

    >>> prompts_file("factual", "test")
    ('factuality_prompts/fever_factual_test7k_final.jsonl', 'https://raw.githubusercontent.com/amazon-science/llm-asymptotic-decoding/843d2b8e49ee5744e12cb14076d5ec825c35ab5b/FactualityPrompt/prompts/fever_factual_test7k_final.jsonl')
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from apd.base import rows as row_types

KINDS = ("factual", "nonfactual")
#: Sub-folder of a data directory (``$APD_DATA_DIR``) and of the cache that holds the files.
FOLDER = "factuality_prompts"

SOURCES = {  # split -> (file name pattern, original URL pattern)
    "all": (
        "fever_{kind}_final.jsonl",
        "https://raw.githubusercontent.com/nayeon7lee/FactualityPrompt/"
        "0adfc495821262cbdd4a90531a5ce9ffc890b7cd/prompts/fever_{kind}_final.jsonl",
    ),
    "validation": (
        "fever_{kind}_1000_final.jsonl",
        "https://raw.githubusercontent.com/amazon-science/llm-asymptotic-decoding/"
        "843d2b8e49ee5744e12cb14076d5ec825c35ab5b/FactualityPrompt/prompts/fever_{kind}_1000_final.jsonl",
    ),
    "test": (
        "fever_{kind}_test7k_final.jsonl",
        "https://raw.githubusercontent.com/amazon-science/llm-asymptotic-decoding/"
        "843d2b8e49ee5744e12cb14076d5ec825c35ab5b/FactualityPrompt/prompts/fever_{kind}_test7k_final.jsonl",
    ),
}


def prompts_file(kind: str, split: str) -> tuple[str, str]:
    """``(path relative to a data directory, original URL)`` of one kind and split of the prompts."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    if split not in SOURCES:
        raise ValueError(f"split must be one of {tuple(SOURCES)}, got {split!r}.")
    name, url = (s.format(kind=kind) for s in SOURCES[split])
    return f"{FOLDER}/{name}", url


#: The fields of a FactualityPrompts row and their types (:mod:`apd.base.rows`): ``evidence_info``
#: is a list of ``[wiki title, wiki id]``. :func:`prompt_rows` checks each row against them before it
#: reads it, for the loader and ``apd data check`` alike.
ROW_FIELDS = {"id": str | int, "prompt": str, "evidence_info": [(str, str | int)]}


def _json_rows(path: Path) -> Iterator[tuple[int, object]]:
    """``(line number, parsed JSON)`` of each non-blank line of ``path``; a ValueError naming the file
    and the line at bytes that are not UTF-8 or a line that is not JSON."""
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(
                    f"{path} is not UTF-8 text (line {n}: {e.reason}); FactualityPrompts files are UTF-8 JSON "
                    "lines: is it the right file, or was it saved in another encoding?"
                ) from None
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except ValueError as e:
                raise ValueError(
                    f"{path}:{n} is not JSON ({e}); the file is damaged or truncated: fetch it again."
                ) from None


def _field_problems(row, path: Path, n: int) -> list[str]:
    """One line per field of ``row`` (line ``n`` of ``path``) that is missing or not of the type
    :data:`ROW_FIELDS` gives: ``<file>:<line>: <field>: expected str, got int (123); ...``."""
    return [f"{path}:{n}: {problem}; fix or drop that row." for problem in row_types.problems(row, ROW_FIELDS)]


def prompt_rows(path) -> Iterator[tuple[int, str, str, tuple[str, ...]]]:
    """``(line number, id, prompt, evidence titles)`` of each row of a FactualityPrompts file, read
    line by line; a ValueError naming the file, the line and the problem at bytes that are not UTF-8,
    a line that is not JSON, a row whose fields are not those of :data:`ROW_FIELDS` (one line per
    field), or an empty file."""
    path = Path(path)
    count = 0
    for n, row in _json_rows(path):
        bad = _field_problems(row, path, n)
        if bad:
            raise ValueError("\n".join(bad))
        count += 1
        yield n, str(row["id"]), row["prompt"].strip(), tuple(t[0] for t in row["evidence_info"])
    if not count:
        raise ValueError(f"{path} is empty; fetch that FactualityPrompts file again.")


def check_prompts_file(path) -> int:
    """Read a FactualityPrompts file line by line, as :func:`prompt_rows` does, keeping nothing; its
    number of rows, or the ValueError that loading it would raise, with every row whose fields are not
    those of :data:`ROW_FIELDS` listed first, one line per field (at most
    :data:`apd.base.rows.MAX_LISTED`)."""
    path = Path(path)
    count, listed = 0, []
    try:
        for n, row in _json_rows(path):
            count += 1
            listed += _field_problems(row, path, n)
            if len(listed) > row_types.MAX_LISTED:
                listed = listed[: row_types.MAX_LISTED] + [f"{path}: not read past line {n}; fix these rows first."]
                break
    except ValueError as err:
        listed.append(str(err))
    if listed:
        raise ValueError("\n".join(listed))
    if not count:
        raise ValueError(f"{path} is empty; fetch that FactualityPrompts file again.")
    return count
