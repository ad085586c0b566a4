"""Where the FactualityPrompts files come from: their names in an offline copy and their original URLs.

Standard library only, so the book runner can check a profile's data before any model loads.

    >>> prompts_file("factual", "test")
    ('factuality_prompts/fever_factual_test7k_final.jsonl', 'https://raw.githubusercontent.com/amazon-science/llm-asymptotic-decoding/843d2b8e49ee5744e12cb14076d5ec825c35ab5b/FactualityPrompt/prompts/fever_factual_test7k_final.jsonl')
"""

from __future__ import annotations

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
