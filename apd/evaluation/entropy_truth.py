"""Does extrapolated entropy move toward the truth? REAL's THF model against the world's true entropy.

At the answer position of a world question the true next-token distribution is known
(:meth:`apd.world.world.World.next_token_distribution`), hence its entropy: 0 nats for a one-valued fact
whose answer starts with one token, the entropy of the attribute's distribution for a distributional
one. :func:`entropy_vs_truth` puts beside it every member's next-token entropy there (full
vocabulary), and the THF model's asymptote c, its curve at the largest member (H_last) and its
direct prediction of the largest member's entropy, all read from the prompt's last ``window``
tokens as REAL does when it generates. :func:`entropy_truth_table` summarises by frequency bucket.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from apd.family.text import left_padded_batches
from apd.world.world import BUCKETS


def true_entropy(truth: np.ndarray) -> np.ndarray:
    """Entropy (nats) of each row of true next-token distributions (B, V) -> (B,).

    Example:
        >>> import numpy as np
        >>> true_entropy(np.array([[1.0, 0.0], [0.5, 0.5]])).round(4).tolist()
        [0.0, 0.6931]
    """
    p = np.asarray(truth, dtype=np.float64)
    p = p / p.sum(-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.maximum(-np.where(p > 0, p * np.log(p), 0.0).sum(-1), 0.0)


def member_entropies(logprobs: np.ndarray) -> np.ndarray:
    """Entropy (nats) of members' next-token log-probabilities (N, B, V) -> (N, B)."""
    lp = np.asarray(logprobs, dtype=np.float64)
    return -(np.exp(lp) * np.where(np.isfinite(lp), lp, 0.0)).sum(-1)


@torch.no_grad()
def thf_at_prompts(thf, tokenizer, prompts, *, window: int = 40, batch_size: int = 64) -> dict:
    """THF's c, H_last (curve at the largest member), direct last prediction (nats, each (B,)) and
    curve parameters (B, P) after each prompt, from the prompt's last ``window`` tokens."""
    out = {"c": [], "h_last": [], "last": [], "params": []}
    for _, ids, mask in left_padded_batches(tokenizer, list(prompts), batch_size):
        o = thf.at_last(ids, mask, window=window)
        out["c"].append(o.c.cpu().numpy())
        out["h_last"].append(o.h_last.cpu().numpy())
        out["last"].append(o.last.cpu().numpy())
        out["params"].append(o.params.cpu().numpy())
    return {k: np.concatenate(v).astype(np.float64) for k, v in out.items()}


def entropy_vs_truth(thf, qa, *, tokenizer, window: int = 40, batch_size: int = 64) -> pd.DataFrame:
    """One row per world question: bucket, attribute, true entropy, each member's entropy
    (``H <member>``), THF's ``c``, ``H_last`` (curve at the largest member) and ``direct last``.

    thf: a THF model (:func:`apd.amateur.thf.load_thf`); qa: :class:`apd.family.knowledge.WorldQAScores`
    of the same items (members' log-probabilities and the world's truth at the answer position).
    """
    items = qa.items
    th = thf_at_prompts(thf, tokenizer, [it.prompt for it in items], window=window, batch_size=batch_size)
    frame = pd.DataFrame(
        {
            "bucket": [it.bucket for it in items],
            "attribute": [it.attribute for it in items],
            "person": [it.person for it in items],
            "truth": true_entropy(qa.truth),
        }
    )
    for name, h in zip(qa.names, member_entropies(qa.logprobs)):
        frame[f"H {name}"] = h
    frame["THF c"] = th["c"]
    frame["THF H_last"] = th["h_last"]
    frame["THF direct last"] = th["last"]
    return frame


def entropy_truth_table(frame: pd.DataFrame, measure: str = "abs_error") -> pd.DataFrame:
    """By bucket (head, torso, tail, all): the mean of |estimate - truth| (``measure='abs_error'``),
    of estimate - truth (``'bias'``) or of the estimate itself (``'mean'``), for every member's
    entropy and THF's c, H_last and direct prediction; a ``truth`` row with the mean true entropy.
    ``attrs['n']``: items per column."""
    if measure not in ("abs_error", "bias", "mean"):
        raise ValueError(f"measure must be 'abs_error', 'bias' or 'mean', got {measure!r}.")
    estimates = [c for c in frame.columns if c.startswith(("H ", "THF "))]
    cols, n = {}, {}
    groups = [(b, frame[frame.bucket == b]) for b in BUCKETS if (frame.bucket == b).any()] + [("all", frame)]
    for bucket, g in groups:
        diff = g[estimates].sub(g["truth"], axis=0)
        vals = {"abs_error": diff.abs().mean(), "bias": diff.mean(), "mean": g[estimates].mean()}[measure]
        cols[bucket] = pd.concat([pd.Series({"truth": g["truth"].mean()}), vals])
        n[bucket] = len(g)
    table = pd.DataFrame(cols)
    table.attrs["n"] = n
    return table
