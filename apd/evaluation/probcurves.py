"""Next-token probability curves across a family's members, with CD's prediction beside them.

A curve is one token's probability in every member against x = ln(non-embedding size). CD here
follows the QA setting: the ELM's top ``k`` tokens, ``log p_ELM - log p_ALM / T`` there, renormalised.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from apd.evaluation import qa_metrics
from apd.family.knowledge import first_token_id
from apd.family.logprobs import prompt_log_probs, text_log_probs


def cd_probs_over_topk(elm_logprobs, alm_logprobs, T: float, k: int = 20) -> np.ndarray:
    """CD probabilities ``(..., V)``: zero outside the ELM's top-k, renormalised inside it."""
    scores = qa_metrics.cd_scores_over_topk(np.asarray(elm_logprobs), np.asarray(alm_logprobs), 1.0 / T, k=k)
    return np.exp(np.asarray(scores, dtype=np.float64))


def prompt_curves(family, text: str, T_values=(1.0, 2.0), k: int = 20, start: int = 0) -> pd.DataFrame:
    """One row per position of ``text`` (from token ``start``): the ELM's top-1 next token, its
    probability in every member (columns ``p:<member>``) and under CD at each T (``cd:T=<T>``)."""
    ids, lp = text_log_probs(family, text)
    tok = family.tokenizer
    elm, alm = lp[-1], lp[0]
    rows = []
    for t in range(start, len(ids)):
        w = int(elm[t].argmax())
        row = {
            "position": t,
            "context": tok.decode(ids[: t + 1]),
            "next_token": tok.decode([w]),
            "token_id": w,
            "actual_next": tok.decode([ids[t + 1]]) if t + 1 < len(ids) else "",
        }
        for m, name in enumerate(family.names):
            row[f"p:{name}"] = float(np.exp(lp[m, t, w]))
        for T in T_values:
            row[f"cd:T={T:g}"] = float(cd_probs_over_topk(elm[t], alm[t], T, k)[w])
        rows.append(row)
    return pd.DataFrame(rows)


def top_token_curves(logprobs: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """The ELM's (last member's) top-k tokens at each position and their curves:
    ids ``(P, k)`` and log-probabilities ``(N, P, k)``."""
    top = np.argsort(-logprobs[-1], axis=-1)[:, :k]
    curves = np.take_along_axis(logprobs, np.broadcast_to(top, logprobs.shape[:1] + top.shape), axis=-1)
    return top, curves


def score_answers(family, prompts, answers, batch_size: int = 16) -> dict:
    """Next-token log-probabilities ``(N, B, V)`` of every member right after each prompt, and
    the first token ``(B,)`` of each answer (``answers`` carry their leading space)."""

    if not prompts or len(prompts) != len(answers):
        raise ValueError(f"need as many answers as prompts (got {len(prompts)} and {len(answers)}), at least one")
    tok = family.tokenizer
    gold = np.array([first_token_id(tok, p, a.lstrip(" ")) for p, a in zip(prompts, answers)])
    out = prompt_log_probs(family, list(prompts), batch_size)
    return {"logprobs": out, "gold": gold}
