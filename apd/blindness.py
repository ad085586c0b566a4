""""Obvious blindness" (the paper's Figure 1): contexts where the expert (ELM) and the amateur
(ALM) both rank the correct token first, yet contrastive decoding ranks another token first.

Inputs are next-token logits or log-probabilities of shape ``(B, V)`` and gold token ids ``(B,)``.
CD scores follow the authors' release: ``log_softmax(ELM) - log_softmax(ALM) / T``, optionally
restricted to the ELM's top-k tokens (the QA setting masks everything outside the ELM's top 20;
``top_k=None`` scores the whole vocabulary).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apd import theory


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def cd_scores(elm_logits, alm_logits, T: float, top_k: int | None = None) -> np.ndarray:
    """CD scores ``(B, V)`` from raw logits; tokens outside the ELM's top-k get ``-inf``."""
    elm_lp, alm_lp = _log_softmax(elm_logits), _log_softmax(alm_logits)
    scores = np.asarray(theory.cd_logits(elm_lp, alm_lp, T), dtype=np.float64)
    if top_k is not None:
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1 or None, got {top_k}")
        kth = np.sort(elm_lp, axis=-1)[..., -top_k][..., None]
        scores = np.where(elm_lp >= kth, scores, -np.inf)
    return scores


@dataclass
class Blindness:
    """Per-context flags ``(B,)``: ``both_right`` (ELM and ALM rank gold first), ``blind``
    (both right but CD's top token is another), and ``cd_top`` (CD's top token id)."""

    both_right: np.ndarray
    blind: np.ndarray
    cd_top: np.ndarray

    @property
    def rate(self) -> float:
        """Share of the both-right contexts that CD gets wrong (NaN when none are both right)."""
        n = int(self.both_right.sum())
        return float(self.blind.sum() / n) if n else float("nan")


def find_obvious_blindness(elm_logits, alm_logits, gold, T: float, top_k: int | None = 20) -> Blindness:
    """Flag obvious blindness for each context (see the module docstring)."""
    elm = np.asarray(elm_logits, dtype=np.float64)
    alm = np.asarray(alm_logits, dtype=np.float64)
    gold = np.asarray(gold)
    if elm.shape != alm.shape or elm.ndim != 2 or gold.shape != elm.shape[:1]:
        raise ValueError(
            f"expected elm/alm logits (B, V) of one shape and gold (B,), got {elm.shape}, {alm.shape}, {gold.shape}")
    both = (elm.argmax(-1) == gold) & (alm.argmax(-1) == gold)
    cd_top = cd_scores(elm, alm, T, top_k).argmax(-1)
    return Blindness(both_right=both, blind=both & (cd_top != gold), cd_top=cd_top)
