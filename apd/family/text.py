"""Text to token ids for a family's tokenizer: one EOS-joined stream, and left-padded batches."""

from __future__ import annotations

import hashlib
import json
from typing import Optional, Sequence

import numpy as np
import torch


def left_padded_batches(tokenizer, prompts, batch_size: int):
    """Yield ``(start, input_ids, attention_mask)`` for consecutive batches of text ``prompts``,
    tokenized without special tokens and padded on the left, so every row's next token is
    predicted at the last column. The tokenizer's padding side is restored afterwards."""
    if isinstance(prompts, str) or not len(prompts):
        raise ValueError("prompts must be a non-empty list of strings (wrap a single prompt: [prompt]).")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    try:
        for s in range(0, len(prompts), batch_size):
            batch = tokenizer(
                list(prompts[s : s + batch_size]), return_tensors="pt", padding=True, add_special_tokens=False
            )
            yield s, batch["input_ids"], batch["attention_mask"]
    finally:
        tokenizer.padding_side = side


def token_stream(tokenizer, documents_or_ids) -> np.ndarray:
    """One 1-D int64 array of token ids: documents tokenized (no special tokens) and each
    followed by the tokenizer's EOS token; or a given 1-D array/list of ids, checked."""
    vocab = len(tokenizer)
    if isinstance(documents_or_ids, (np.ndarray, torch.Tensor)) or (
        isinstance(documents_or_ids, Sequence)
        and len(documents_or_ids)
        and isinstance(documents_or_ids[0], (int, np.integer))
    ):
        ids = np.asarray(documents_or_ids.cpu() if isinstance(documents_or_ids, torch.Tensor) else documents_or_ids)
        if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(
                f"token ids must be a 1-D integer array, got shape {ids.shape} and "
                f"dtype {ids.dtype}; concatenate documents into one stream."
            )
        ids = ids.astype(np.int64)
    elif isinstance(documents_or_ids, (str, bytes)):
        raise TypeError("pass a list of documents (strings), not one string: wrap it as [text].")
    else:
        docs = list(documents_or_ids)
        if not docs or not all(isinstance(d, str) for d in docs):
            raise TypeError("documents_or_ids must be a non-empty list of strings or a 1-D array of token ids.")
        eos = tokenizer.eos_token_id
        if eos is None:
            raise ValueError(
                "the tokenizer has no eos_token, which separates documents; set one "
                "(e.g. tokenizer.eos_token = '<|endoftext|>') before training."
            )
        enc = tokenizer(docs, add_special_tokens=False)["input_ids"]
        ids = np.fromiter((t for doc in enc for t in (*doc, eos)), dtype=np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= vocab):
        raise ValueError(
            f"token ids must lie in [0, {vocab}) (len(tokenizer)); found "
            f"[{ids.min()}, {ids.max()}]: were they made by another tokenizer?"
        )
    return ids


def texts_for_tokens(tokenizer, texts: Sequence[str], n_tokens: int) -> list:
    """The shortest prefix of ``texts`` whose tokens (plus one EOS per document, as
    :func:`token_stream` joins them) number at least ``n_tokens`` (all of them if fewer)."""
    if n_tokens < 1:
        raise ValueError(f"n_tokens must be >= 1, got {n_tokens}.")
    total = 0
    for i, t in enumerate(texts):
        total += len(tokenizer(t, add_special_tokens=False)["input_ids"]) + 1
        if total >= n_tokens:
            return list(texts[: i + 1])
    return list(texts)


def tokenizer_identity(tokenizer) -> Optional[str]:
    """``"<size>:<digest>"`` of a tokenizer's vocabulary (token -> id) and length; None for None.
    Two tokenizers with the same identity map every text to the same ids."""
    if tokenizer is None:
        return None
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    return f"{len(tokenizer)}:" + hashlib.sha256(json.dumps(vocab).encode()).hexdigest()[:16]


def hash_parts(*parts: bytes) -> str:
    """SHA-256 (hex) over the SHA-256 of each part, in order (the cache keys' building block).

    Example:
        >>> hash_parts(b"a", b"b") == hash_parts(b"a", b"b") != hash_parts(b"ab")
        True
    """
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()


def tokenizer_hash(tokenizer) -> str:
    """sha256 of the vocabulary (token -> id) and the special tokens."""
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    special = sorted((k, str(v)) for k, v in tokenizer.special_tokens_map.items())
    return hash_parts(json.dumps(vocab).encode(), json.dumps(special).encode())
