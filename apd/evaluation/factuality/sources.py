"""Where the FactualityPrompts files come from: their names in an offline copy and their original URLs.

Standard library only, so the book runner can check a profile's data before any model loads.

    >>> prompts_file("factual", "test")
    ('factuality_prompts/fever_factual_test7k_final.jsonl', 'https://raw.githubusercontent.com/amazon-science/llm-asymptotic-decoding/843d2b8e49ee5744e12cb14076d5ec825c35ab5b/FactualityPrompt/prompts/fever_factual_test7k_final.jsonl')
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

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


def prompt_rows(path) -> Iterator[tuple[int, str, str, tuple[str, ...]]]:
    """``(line number, id, prompt, evidence titles)`` of each row of a FactualityPrompts file, read
    line by line; a ValueError in one line naming the file, the line and the problem at bytes that
    are not UTF-8, a line that is not a row ``{id, prompt, evidence_info: [[title, id], ...]}``, or an
    empty file."""
    path = Path(path)
    count = 0
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
                row = json.loads(line)
                titles = tuple(str(t[0]) for t in row["evidence_info"])
                item = (n, str(row["id"]), str(row["prompt"]).strip(), titles)
            except (ValueError, KeyError, IndexError, TypeError) as e:
                raise ValueError(
                    f"{path}:{n} is not a FactualityPrompts row {{id, prompt, evidence_info: "
                    f"[[title, id], ...]}} ({type(e).__name__}: {e}); is it the right file?"
                ) from None
            count += 1
            yield item
    if not count:
        raise ValueError(f"{path} is empty; fetch that FactualityPrompts file again.")


def check_prompts_file(path) -> int:
    """Read a FactualityPrompts file line by line (:func:`prompt_rows`), keeping nothing; its number
    of rows, or the ValueError that loading it would raise."""
    return sum(1 for _ in prompt_rows(path))
