"""Next-token log-probabilities (log-softmax over the tokenizer's vocabulary, float32).

``prompt_log_probs``: every member after each prompt, ``(N, B, V)``; ``next_token_log_probs``: one
causal LM (e.g. ALM') after each prompt, ``(B, V)``; ``window_log_probs``: one LM at every position
of unpadded windows, ``(B, S, V)``; ``text_log_probs``: every member at every position of a text.
"""

from __future__ import annotations

import hashlib
from typing import Optional

import numpy as np
import torch

from apd.base.progress import progress_bar
from apd.family.digest import memoized_scores
from apd.family.text import left_padded_batches


#: The code whose edits invalidate the family's cached scores (:mod:`apd.family.digest`).
SCORING_CODE = ("apd.family.logprobs", "apd.family.text", "apd.family.loading", "apd.family.heldout")


def prompts_digest(prompts) -> str:
    """SHA-256 (first 16 hex digits) of a sequence of strings, in order."""
    h = hashlib.sha256()
    for p in prompts:
        h.update(p.encode())
        h.update(b"\x00")
    return h.hexdigest()[:16]


def prompt_log_probs(family, prompts, batch_size: int = 64, members=None, progress: bool = False) -> np.ndarray:
    """Every member's next-token log-probabilities right after each text prompt: float32
    ``(n_members, len(prompts), V)``. Works for any object with ``tokenizer``, ``names``,
    ``vocab_size`` and ``next_token_log_probs(input_ids, attention_mask)``. Cached by the
    members' weights where ``$APD_MEMO_SCORES`` is 1 (:mod:`apd.family.digest`)."""
    parts = {"prompts": prompts_digest(prompts), "n": len(prompts), "batch_size": batch_size, "members": members}
    compute = lambda: _prompt_log_probs(family, prompts, batch_size, members, progress)  # noqa: E731
    return memoized_scores("prompt-log-probs", parts, SCORING_CODE, compute, family=family, members=members)


def _prompt_log_probs(family, prompts, batch_size: int, members, progress: bool) -> np.ndarray:
    names = list(family.names) if members is None else list(members)
    out = np.zeros((len(names), len(prompts), family.vocab_size), dtype=np.float32)
    batches = left_padded_batches(family.tokenizer, prompts, batch_size)
    if progress:
        batches = progress_bar(batches, total=-(-len(prompts) // batch_size), desc="prompts", unit="batch")
    for s, ids, mask in batches:
        with torch.no_grad():
            lp = (
                family.next_token_log_probs(ids, mask)
                if members is None
                else family.next_token_log_probs(ids, mask, members=members)
            )
        out[:, s : s + len(ids)] = lp.float().cpu().numpy()
    return out


def text_log_probs(family, text: str, members=None) -> tuple[list[int], np.ndarray]:
    """Token ids of ``text`` and every member's next-token log-probabilities ``(N, S, V)``:
    row ``t`` is the distribution of the token that follows the first ``t + 1`` tokens."""
    ids = family.tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) < 2:
        raise ValueError(f"text {text!r} has fewer than 2 tokens; give a longer prompt")
    x = torch.tensor([ids])
    with torch.no_grad():
        lp = family.log_probs(x, torch.ones_like(x), members=members)
    return ids, lp[:, 0].float().cpu().numpy()


@torch.no_grad()
def next_token_log_probs(
    model, tokenizer, prompts, vocab_size: Optional[int] = None, batch_size: int = 64
) -> np.ndarray:
    """Log-probabilities ``(B, V)`` (float32, log-softmax over the first ``vocab_size`` ids, default
    ``len(tokenizer)``) of the token after each prompt, for one causal LM (e.g. ALM'). Prompts are
    left-padded; position ids count from each prompt's first real token, as ``apd.family`` does."""

    V = int(vocab_size or len(tokenizer))
    dev = next(model.parameters()).device
    out = np.zeros((len(prompts), V), dtype=np.float32)
    for s, ids, mask in left_padded_batches(tokenizer, prompts, batch_size):
        ids, mask = ids.to(dev), mask.to(dev)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0)).logits[
            :, -1, :V
        ]
        out[s : s + len(ids)] = torch.log_softmax(logits.float(), -1).cpu().numpy()
    return out


@torch.no_grad()
def window_log_probs(model, input_ids, vocab_size: int, batch_size: int = 16) -> np.ndarray:
    """Log-probabilities ``(B, S, V)`` (float32) at every position of unpadded ``input_ids`` ``(B, S)``:
    row ``t`` is the distribution of the token after the first ``t + 1`` tokens."""
    x = torch.as_tensor(np.asarray(input_ids), dtype=torch.long)
    if x.ndim == 1:
        x = x[None]
    dev = next(model.parameters()).device
    out = []
    for s in range(0, x.shape[0], batch_size):
        logits = model(input_ids=x[s : s + batch_size].to(dev)).logits[..., :vocab_size]
        out.append(torch.log_softmax(logits.float(), -1).cpu().numpy())
    return np.concatenate(out)
