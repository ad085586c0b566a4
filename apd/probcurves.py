"""Next-token probability curves across the members of a family.

A *curve* is one token's probability (or log-probability) in every member, against the natural
log of the members' non-embedding sizes. CD and APD read such curves at two or more sizes and
extrapolate them; this module extracts the curves the book draws.

CD probabilities here follow the QA setting of the paper and the authors' release: the expert's
distribution is cut to its top ``k`` tokens, CD's score ``log p_ELM - log p_ALM / T`` is applied to
those tokens, and the result is renormalised over them (``apd.metrics.cd_scores_over_topk``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from apd import metrics
from apd.family import prompt_log_probs


def sequence_log_probs(family, text: str, members=None) -> tuple[list[int], np.ndarray]:
    """Token ids of ``text`` and every member's next-token log-probabilities ``(N, S, V)``:
    row ``t`` is the distribution of the token that follows the first ``t + 1`` tokens."""
    ids = family.tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) < 2:
        raise ValueError(f"text {text!r} has fewer than 2 tokens; give a longer prompt")
    x = torch.tensor([ids])
    with torch.no_grad():
        lp = family.log_probs(x, torch.ones_like(x), members=members)
    return ids, lp[:, 0].float().cpu().numpy()


def cd_probs_over_topk(elm_logprobs, alm_logprobs, T: float, k: int = 20) -> np.ndarray:
    """CD probabilities ``(..., V)``: zero outside the ELM's top-k, renormalised inside it."""
    scores = metrics.cd_scores_over_topk(np.asarray(elm_logprobs), np.asarray(alm_logprobs), 1.0 / T, k=k)
    return np.exp(np.asarray(scores, dtype=np.float64))


def prompt_curves(family, text: str, T_values=(1.0, 2.0), k: int = 20, start: int = 0) -> pd.DataFrame:
    """One row per position of ``text`` (from token ``start``): the ELM's top-1 next token, its
    probability in every member (columns ``p:<member>``) and under CD at each T (``cd:T=<T>``)."""
    ids, lp = sequence_log_probs(family, text)
    tok = family.tokenizer
    elm, alm = lp[-1], lp[0]
    rows = []
    for t in range(start, len(ids)):
        w = int(elm[t].argmax())
        row = {"position": t, "context": tok.decode(ids[: t + 1]), "next_token": tok.decode([w]),
               "token_id": w, "actual_next": tok.decode([ids[t + 1]]) if t + 1 < len(ids) else ""}
        for m, name in enumerate(family.names):
            row[f"p:{name}"] = float(np.exp(lp[m, t, w]))
        for T in T_values:
            row[f"cd:T={T:g}"] = float(cd_probs_over_topk(elm[t], alm[t], T, k)[w])
        rows.append(row)
    return pd.DataFrame(rows)


def _sample_windows(tokenizer, texts, n_positions: int, seq_len: int, seed: int):
    """Held-out ``texts`` cut into windows ``(W, seq_len)`` of token ids, and ``n_positions``
    (window, position) pairs sampled uniformly without replacement (seeded), sorted; every
    position has at least one token of context, so ``position`` is in ``[1, seq_len)``."""
    from apd.pretrain import token_stream

    ids = token_stream(tokenizer, texts)
    n_windows = len(ids) // seq_len
    if n_windows < 1:
        raise ValueError(f"the held-out text has {len(ids)} tokens, fewer than seq_len={seq_len}; "
                         "pass more text or a smaller seq_len")
    windows = ids[: n_windows * seq_len].reshape(n_windows, seq_len).astype(np.int64)
    rng = np.random.default_rng(seed)
    flat = np.sort(rng.choice(n_windows * (seq_len - 1), size=min(n_positions, n_windows * (seq_len - 1)),
                              replace=False))
    return windows, flat // (seq_len - 1), flat % (seq_len - 1) + 1


def heldout_positions(family, texts, n_positions: int, seq_len: int = 128, seed: int = 0,
                      batch_size: int = 16, amateur=None) -> dict:
    """Next-token log-probabilities at ``n_positions`` positions sampled (seeded) from windows of
    ``seq_len`` tokens of held-out ``texts``.

    Returns ``member_logprobs`` ``(N, P, V)`` (every member, float32), ``next_ids`` ``(P,)`` (the
    token that actually follows each position) and ``contexts`` ``(P,)`` (the decoded window up
    to the position). With ``amateur`` (one causal LM on the family's tokenizer, e.g. ALM') also
    ``amateur_logprobs`` ``(P, V)`` at the same positions.
    """
    from apd.pipeline import sequence_log_probs

    windows, win, pos = _sample_windows(family.tokenizer, texts, n_positions, seq_len, seed)
    V = family.vocab_size
    members = np.zeros((len(family.names), len(win), V), dtype=np.float32)
    am = np.zeros((len(win), V), dtype=np.float32) if amateur is not None else None
    uniq = np.unique(win)
    for s in range(0, len(uniq), batch_size):
        chunk = uniq[s:s + batch_size]
        x = torch.as_tensor(windows[chunk])
        with torch.no_grad():
            lp = family.log_probs(x, torch.ones_like(x)).float().cpu().numpy()  # (N, b, S, V)
        a = sequence_log_probs(amateur, windows[chunk], V, batch_size=batch_size) if am is not None else None
        for j, w in enumerate(chunk):
            sel = np.nonzero(win == w)[0]
            members[:, sel] = lp[:, j, pos[sel] - 1]
            if am is not None:
                am[sel] = a[j, pos[sel] - 1]
    tok = family.tokenizer
    out = {"member_logprobs": members, "next_ids": windows[win, pos],
           "contexts": np.array([tok.decode(windows[w, :p]) for w, p in zip(win, pos)], dtype=object)}
    if am is not None:
        out["amateur_logprobs"] = am
    return out


def sample_positions(family, texts, n_positions: int, seq_len: int = 128, seed: int = 0,
                     batch_size: int = 16) -> np.ndarray:
    """Every member's log-probabilities ``(N, P, V)`` (float32) at the positions
    ``heldout_positions`` samples."""
    return heldout_positions(family, texts, n_positions, seq_len, seed, batch_size)["member_logprobs"]


def top_token_curves(logprobs: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """The ELM's (last member's) top-k tokens at each position and their curves:
    ids ``(P, k)`` and log-probabilities ``(N, P, k)``."""
    top = np.argsort(-logprobs[-1], axis=-1)[:, :k]
    curves = np.take_along_axis(logprobs, np.broadcast_to(top, logprobs.shape[:1] + top.shape), axis=-1)
    return top, curves


def score_answers(family, prompts, answers, batch_size: int = 16) -> dict:
    """Next-token log-probabilities ``(N, B, V)`` of every member right after each prompt, and
    the first token ``(B,)`` of each answer (``answers`` carry their leading space)."""
    from apd.knowledge import first_token_id

    if not prompts or len(prompts) != len(answers):
        raise ValueError(f"need as many answers as prompts (got {len(prompts)} and {len(answers)}), at least one")
    tok = family.tokenizer
    gold = np.array([first_token_id(tok, p, a.lstrip(" ")) for p, a in zip(prompts, answers)])
    out = prompt_log_probs(family, list(prompts), batch_size)
    return {"logprobs": out, "gold": gold}
