""" "Obvious blindness" (the paper's Figure 1): contexts where the expert (ELM) and the amateur
(ALM) both rank the correct token first, yet contrastive decoding ranks another token first.

Inputs are next-token logits or log-probabilities of shape ``(B, V)`` and gold token ids ``(B,)``.
CD scores follow the authors' release: ``log_softmax(ELM) - log_softmax(ALM) / T``, optionally
restricted to the ELM's top-k tokens (the QA setting masks everything outside the ELM's top 20;
``top_k=None`` scores the whole vocabulary).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from apd.core.contrastive import Reciprocal, contrastive_scores


def cd_scores(elm_logits, alm_logits, T: float, top_k: int | None = None) -> np.ndarray:
    """CD scores ``(B, V)`` (float64) from raw logits; tokens outside the ELM's top-k (ties kept) get ``-inf``."""
    return contrastive_scores(
        np.asarray(elm_logits, dtype=np.float64),
        np.asarray(alm_logits, dtype=np.float64),
        Reciprocal(T),
        top_k=top_k,
        ties="keep",
    )


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
            f"expected elm/alm logits (B, V) of one shape and gold (B,), got {elm.shape}, {alm.shape}, {gold.shape}"
        )
    both = (elm.argmax(-1) == gold) & (alm.argmax(-1) == gold)
    cd_top = cd_scores(elm, alm, T, top_k).argmax(-1)
    return Blindness(both_right=both, blind=both & (cd_top != gold), cd_top=cd_top)


def blindness_table(
    elm_logprobs, alm_logprobs, gold, T_grid, groups=None, apd_logprobs=None, top_k: int | None = 20
) -> pd.DataFrame:
    """How often CD (and APD) is obviously blind, one row per (group, method, T).

    ``elm_logprobs``/``alm_logprobs``/``apd_logprobs``: ``(B, V)`` next-token log-probabilities
    (or logits) of the expert, the amateur and ALM' (optional); ``gold``: ``(B,)`` token ids;
    ``groups``: ``{name: (B,) bool mask}`` (default: one group "all" of every context).
    Columns: ``items``; ``ELM and ALM right`` (both rank gold first); ``wrong among those``
    (the method ranks another token first); ``blindness rate`` (their ratio, NaN when no
    context is both right). CD is scored at every T of ``T_grid``; APD (ALM' as the amateur) at
    T = 1 over the *same* contexts, those the expert and the original amateur get right.
    """
    if not len(T_grid):
        raise ValueError("T_grid is empty; give at least one temperature T > 1 (or T = 1)")
    gold = np.asarray(gold)
    groups = {"all": np.ones(len(gold), bool)} if groups is None else groups
    for name, mask in groups.items():
        if np.asarray(mask).shape != gold.shape:
            raise ValueError(f"group {name!r} has a mask of shape {np.shape(mask)}, expected {gold.shape}")
    results = [("CD", float(T), find_obvious_blindness(elm_logprobs, alm_logprobs, gold, T, top_k)) for T in T_grid]
    if apd_logprobs is not None:
        b1 = find_obvious_blindness(elm_logprobs, alm_logprobs, gold, 1.0, top_k)
        top = cd_scores(elm_logprobs, apd_logprobs, 1.0, top_k).argmax(-1)
        results.append(("APD", 1.0, Blindness(b1.both_right, b1.both_right & (top != gold), top)))
    rows = []
    for name, mask in groups.items():
        mask = np.asarray(mask, bool)
        for method, T, b in results:
            right, wrong = int(b.both_right[mask].sum()), int(b.blind[mask].sum())
            rows.append(
                {
                    "group": name,
                    "method": method,
                    "T": T,
                    "items": int(mask.sum()),
                    "ELM and ALM right": right,
                    "wrong among those": wrong,
                    "blindness rate": wrong / right if right else float("nan"),
                }
            )
    return pd.DataFrame(rows)


def clearest_example(b: Blindness, elm_logprobs, gold) -> int | None:
    """Index of the blind context where the expert is most confident in the gold token, or None."""
    idx = np.nonzero(b.blind)[0]
    if not len(idx):
        return None
    elm = np.asarray(elm_logprobs)
    return int(idx[np.argmax(elm[idx, np.asarray(gold)[idx]])])
