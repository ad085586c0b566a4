"""Positions of held-out text and every member's next-token log-probabilities there.

Windows of ``seq_len`` tokens are cut from the EOS-joined text; ``n_positions`` (window, position)
pairs are drawn without replacement with a seeded generator. Returns ``(N, P, V)`` log-probabilities.
"""

from __future__ import annotations

import numpy as np
import torch

from apd.family.digest import memoized_scores
from apd.family.logprobs import SCORING_CODE, prompts_digest, window_log_probs
from apd.family.text import token_stream


def _sample_windows(tokenizer, texts, n_positions: int, seq_len: int, seed: int):
    """Held-out ``texts`` cut into windows ``(W, seq_len)`` of token ids, and ``n_positions``
    (window, position) pairs sampled uniformly without replacement (seeded), sorted; every
    position has at least one token of context, so ``position`` is in ``[1, seq_len)``."""

    ids = token_stream(tokenizer, texts)
    n_windows = len(ids) // seq_len
    if n_windows < 1:
        raise ValueError(
            f"the held-out text has {len(ids)} tokens, fewer than seq_len={seq_len}; "
            "pass more text or a smaller seq_len"
        )
    windows = ids[: n_windows * seq_len].reshape(n_windows, seq_len).astype(np.int64)
    rng = np.random.default_rng(seed)
    flat = np.sort(
        rng.choice(n_windows * (seq_len - 1), size=min(n_positions, n_windows * (seq_len - 1)), replace=False)
    )
    return windows, flat // (seq_len - 1), flat % (seq_len - 1) + 1


def heldout_positions(
    family,
    texts,
    n_positions: int,
    seq_len: int = 128,
    seed: int = 0,
    batch_size: int = 16,
    amateur=None,
    amateurs=None,
) -> dict:
    """Next-token log-probabilities at ``n_positions`` positions sampled (seeded) from windows of
    ``seq_len`` tokens of held-out ``texts``.

    Returns ``member_logprobs`` ``(N, P, V)`` (every member, float32), ``next_ids`` ``(P,)`` (the
    token that actually follows each position), ``contexts`` ``(P,)`` (the decoded window up
    to the position) and ``windows`` ``(P,)`` (which window each position comes from: positions of
    one window are not independent, cluster on it). With ``amateur`` (one causal LM on the family's tokenizer, e.g. ALM') also
    ``amateur_logprobs`` ``(P, V)`` at the same positions; with ``amateurs`` ({name: causal LM},
    e.g. every APD variant's ALM') also ``amateurs_logprobs``, {name: ``(P, V)``}. Cached by the
    weights where ``$APD_MEMO_SCORES`` is 1 (:mod:`apd.family.digest`).
    """
    models = {f"amateurs:{k}": m for k, m in (amateurs or {}).items()}
    if amateur is not None:
        models["amateur"] = amateur
    parts = {
        "texts": prompts_digest(texts),
        "n_positions": n_positions,
        "seq_len": seq_len,
        "seed": seed,
        "batch_size": batch_size,
        "amateur": amateur is not None,
        "amateurs": None if amateurs is None else [str(k) for k in amateurs],
    }

    def compute():
        return _heldout_positions(family, texts, n_positions, seq_len, seed, batch_size, amateur, amateurs)

    return memoized_scores("heldout-positions", parts, SCORING_CODE, compute, family=family, models=models)


def _heldout_positions(family, texts, n_positions, seq_len, seed, batch_size, amateur, amateurs) -> dict:
    windows, win, pos = _sample_windows(family.tokenizer, texts, n_positions, seq_len, seed)
    V = family.vocab_size
    members = np.zeros((len(family.names), len(win), V), dtype=np.float32)
    models = dict(amateurs or {})
    if amateur is not None:
        models[None] = amateur
    am = {name: np.zeros((len(win), V), dtype=np.float32) for name in models}
    uniq = np.unique(win)
    for s in range(0, len(uniq), batch_size):
        chunk = uniq[s : s + batch_size]
        x = torch.as_tensor(windows[chunk])
        with torch.no_grad():
            lp = family.log_probs(x, torch.ones_like(x)).float().cpu().numpy()  # (N, b, S, V)
        a = {name: window_log_probs(m, windows[chunk], V, batch_size=batch_size) for name, m in models.items()}
        for j, w in enumerate(chunk):
            sel = np.nonzero(win == w)[0]
            members[:, sel] = lp[:, j, pos[sel] - 1]
            for name in models:
                am[name][sel] = a[name][j, pos[sel] - 1]
    tok = family.tokenizer
    out = {
        "member_logprobs": members,
        "next_ids": windows[win, pos],
        "contexts": np.array([tok.decode(windows[w, :p]) for w, p in zip(win, pos)], dtype=object),
        "windows": np.asarray(win),
    }
    if amateur is not None:
        out["amateur_logprobs"] = am.pop(None)
    if amateurs is not None:
        out["amateurs_logprobs"] = am
    return out
