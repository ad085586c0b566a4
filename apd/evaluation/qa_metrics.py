"""QA scoring as in the paper's tables and the authors' release (no models).

The ELM's distribution is cut to its top k = 20 (ties kept), CD/APD applied and renormalised
(:func:`cd_scores_over_topk`); ppl = mean over answer tokens of -log(p + 0.01) (nats, never
exponentiated); accuracy = lowest-ppl option; MRR = 1/rank of the gold token; t-tests and gap closure.
"""

from __future__ import annotations

import numpy as np
import scipy.stats
import torch

from apd.core.contrastive import contrastive_scores


def _as_tensor(x, what: str) -> tuple[torch.Tensor, bool]:
    """(tensor, was_numpy). numpy/lists become float64 tensors (exact tests); tensors stay."""
    if isinstance(x, torch.Tensor):
        t, was_numpy = x, False
    else:
        try:
            t = torch.as_tensor(np.asarray(x, dtype=np.float64))
        except (TypeError, ValueError) as e:
            raise TypeError(f"{what} must be a numeric array or tensor of shape (..., vocab); {e}") from e
        was_numpy = True
    if not torch.is_floating_point(t):
        t = t.double()
    if t.ndim == 0:
        raise ValueError(f"{what} is a scalar; pass scores over a vocabulary, shape (..., vocab).")
    if torch.isnan(t).any():
        raise ValueError(f"{what} contains NaN; check the model outputs (fp16 overflow?) before scoring.")
    return t, was_numpy


def _out(t: torch.Tensor, was_numpy: bool):
    return t.cpu().numpy() if was_numpy else t


def cd_scores_over_topk(elm_logprobs, alm_logprobs, inv_T, k: int = 20):
    """CD/APD next-token log-probabilities over the ELM's top k, as the paper's QA tables use.

    Order of operations (the release's): (1) log-softmax both inputs over the vocabulary;
    (2) mask the ELM's log-probabilities to its top k (-inf elsewhere); (3) subtract
    ``inv_T * log p_ALM``; (4) renormalise over the kept tokens (log-softmax).

    elm_logprobs, alm_logprobs: logits or log-probabilities ``(..., V)`` over the same vocabulary
        (restrict both to the tokenizer's vocabulary first, e.g. ``x[..., :len(tokenizer)]``).
        For APD pass ALM' as the amateur. Step (1) is a no-op on log-probabilities.
    inv_T: 1/T >= 0, a float or a 1-D sequence of values; a sequence adds a leading axis
        ``(len(inv_T), ..., V)`` (the paper sweeps 0.05..2.0). ``inv_T=0`` gives the ELM's own
        top-k renormalised distribution (the "LLM" rows).
    Returns log-probabilities: ``exp`` sums to 1 over the top k, is exactly 0 elsewhere
    (float32 for half-precision inputs).
    """
    e, was_numpy = _as_tensor(elm_logprobs, "elm_logprobs")
    a, _ = _as_tensor(alm_logprobs, "alm_logprobs")
    scores = contrastive_scores(e, a, inv_T=inv_T, top_k=k, ties="keep", renormalize="log", check_finite=True)
    return _out(scores, was_numpy)


def gold_rank(scores, token_ids):
    """1-based rank of the gold token: the number of tokens scoring >= the gold one.

    scores: ``(..., V)`` logits/log-probabilities (masked scores allowed: a gold token outside
        the mask, at -inf, gets rank V). token_ids: integer ids of shape ``(...)``.
    Returns int64 ranks of shape ``(...)``; ties count against the gold token (the release's rule).
    """
    s, was_numpy = _as_tensor(scores, "scores")
    ids = torch.as_tensor(np.asarray(token_ids) if not isinstance(token_ids, torch.Tensor) else token_ids)
    if ids.dtype.is_floating_point or ids.dtype == torch.bool:
        raise TypeError(f"token_ids must be integers, got dtype {ids.dtype}.")
    if tuple(ids.shape) != tuple(s.shape[:-1]):
        raise ValueError(
            f"token_ids shape {tuple(ids.shape)} must equal scores' leading shape {tuple(s.shape[:-1])} "
            "(one gold id per scored position)."
        )
    V = s.shape[-1]
    if ids.numel() and (ids.min() < 0 or ids.max() >= V):
        raise ValueError(f"token_ids must lie in [0, {V}); got values in [{int(ids.min())}, {int(ids.max())}].")
    g = torch.gather(s, -1, ids.to(s.device).long().unsqueeze(-1))
    return _out((s >= g).sum(dim=-1), was_numpy)


def answer_ppl(token_probs, eps: float = 0.01):
    """The paper's QA "perplexity": mean over answer tokens of ``-log(p + eps)`` (nats; never
    exponentiated). eps=0.01 keeps a few tiny probabilities from dominating.

    token_probs: probabilities of the gold answer tokens (already renormalised over the top 20),
        shape ``(..., n_tokens)`` -> result ``(...)``; or a list of 1-D sequences of different
        lengths (one per answer) -> a 1-D numpy array.
    """
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0 (the paper uses 0.01), got {eps!r}.")
    if (
        isinstance(token_probs, (list, tuple))
        and token_probs
        and all(isinstance(x, (list, tuple, np.ndarray, torch.Tensor)) for x in token_probs)
    ):
        lengths = {len(x) for x in token_probs}
        if len(lengths) > 1:
            return np.array([float(answer_ppl(np.asarray(x, dtype=np.float64), eps)) for x in token_probs])
    p, was_numpy = _as_tensor(token_probs, "token_probs")
    if p.shape[-1] == 0:
        raise ValueError("an answer has no tokens; drop empty answers before scoring.")
    if (p < 0).any() or (p > 1 + 1e-6).any():
        raise ValueError(
            "token_probs must be probabilities in [0, 1]; got values outside. If you have "
            "log-probabilities, pass exp(logprobs)."
        )
    out = -torch.log(p + eps).mean(dim=-1)
    return _out(out, was_numpy)


def accuracy_lowest_ppl(option_ppl, gold, *, return_per_question: bool = False):
    """Multiple-choice accuracy: a question is right when its gold option has the lowest ppl
    (ties count as right, as in the release).

    option_ppl: ``(n_questions, n_options)`` ppl per option; NaN marks an option removed by the
        top-k filter (it takes no part). gold: ``(n_questions,)`` index of the gold option.
    Returns the accuracy (float), or the per-question bool array if ``return_per_question``.
    """
    ppl = np.asarray(option_ppl, dtype=np.float64)
    g = np.asarray(gold)
    if ppl.ndim != 2:
        raise ValueError(f"option_ppl must be 2-D (n_questions, n_options), got shape {ppl.shape}.")
    if g.shape != (ppl.shape[0],) or not np.issubdtype(g.dtype, np.integer):
        raise ValueError(f"gold must be an int array of shape ({ppl.shape[0]},), got {g.dtype} {g.shape}.")
    if ((g < 0) | (g >= ppl.shape[1])).any():
        raise ValueError(f"gold indices must lie in [0, {ppl.shape[1]}).")
    rows = np.arange(len(g))
    gold_ppl = ppl[rows, g]
    others = ppl.copy()
    others[rows, g] = np.nan
    if np.isnan(gold_ppl).any():
        raise ValueError(
            "a gold option's ppl is NaN (filtered out); drop such questions first "
            "(see in_topk_filter / keep_multiple_choice)."
        )
    no_distractor = np.isnan(others).all(axis=1)
    if no_distractor.any():
        raise ValueError(
            f"{int(no_distractor.sum())} question(s) have no remaining distractor; accuracy needs "
            "at least one incorrect option in the top k (keep_multiple_choice drops them)."
        )
    correct = gold_ppl <= np.nanmin(others, axis=1)
    return correct if return_per_question else float(correct.mean())


def _rank_items(ranks, what: str) -> list[np.ndarray]:
    """A 1-D array (one rank per item) or a list of 1-D arrays -> list of validated 1-D arrays."""
    if isinstance(ranks, torch.Tensor):
        ranks = ranks.detach().cpu().numpy()
    if isinstance(ranks, (list, tuple)):
        items = [
            np.atleast_1d(np.asarray(r.detach().cpu().numpy() if isinstance(r, torch.Tensor) else r)) for r in ranks
        ]
    else:
        arr = np.asarray(ranks)
        if arr.ndim == 1:
            items = [np.atleast_1d(x) for x in arr]
        elif arr.ndim == 2:
            items = list(arr)
        else:
            raise ValueError(f"{what} must be 1-D, 2-D or a list of 1-D arrays, got shape {arr.shape}.")
    if not items:
        raise ValueError(f"{what} is empty.")
    for i, r in enumerate(items):
        if r.size == 0:
            raise ValueError(f"{what}[{i}] is empty: an answer needs at least one token.")
        if not np.issubdtype(r.dtype, np.number) or not np.all(r == np.round(r)):
            raise ValueError(f"{what}[{i}] must hold whole-number ranks, got {r}.")
        if (r < 1).any():
            raise ValueError(f"{what}[{i}] has a rank below 1; ranks are 1-based, best = 1 (see gold_rank).")
    return items


def mrr(ranks) -> float:
    """Mean reciprocal rank. ranks: a 1-D array of 1-based ranks (one per question), or one 1-D
    array per question (its answer tokens; a list or a 2-D array): each question scores the mean
    of 1/rank over its tokens, then questions are averaged."""
    return float(np.mean([np.mean(1.0 / r) for r in _rank_items(ranks, "ranks")]))


def in_topk_filter(elm_ranks, ref_ranks=None, k: int = 20) -> np.ndarray:
    """Which answers to keep: all of their tokens rank within the ELM's top k, and (if given)
    within the reference LM's top k too (the paper repeats the filter with LLM 12B so that the
    comparison is fair).

    elm_ranks, ref_ranks: a list with one 1-D sequence of 1-based gold-token ranks per answer,
        a 2-D array ``(n_answers, n_tokens)``, or a 1-D array (one-token answers).
        Returns a bool array ``(n_answers,)``.
    """
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int (20 in the paper), got {k!r}.")

    def keep(ranks, what):
        return np.array([bool((r <= k).all()) for r in _rank_items(ranks, what)], dtype=bool)

    kept = keep(elm_ranks, "elm_ranks")
    if ref_ranks is not None:
        ref = keep(ref_ranks, "ref_ranks")
        if len(ref) != len(kept):
            raise ValueError(f"elm_ranks has {len(kept)} answers but ref_ranks has {len(ref)}; pass the same answers.")
        kept &= ref
    return kept


def keep_multiple_choice(option_kept, gold) -> np.ndarray:
    """Questions usable for accuracy: the gold option survives the top-k filter and at least one
    incorrect option does too. option_kept: bool ``(n_questions, n_options)`` (from
    :func:`in_topk_filter` per option); gold: ``(n_questions,)``. Returns bool ``(n_questions,)``."""
    kept = np.asarray(option_kept, dtype=bool)
    g = np.asarray(gold)
    if kept.ndim != 2 or g.shape != (kept.shape[0],):
        raise ValueError(
            f"option_kept must be (n_questions, n_options) and gold (n_questions,); got {kept.shape}, {g.shape}."
        )
    rows = np.arange(len(g))
    others = kept.copy()
    others[rows, g] = False
    return kept[rows, g] & others.any(axis=1)


def ttest_from_stats(mean1, std1, n1, mean2, std2, n2, *, equal_var: bool = True):
    """Two-sided two-sample t-test from summary statistics (scipy.stats.ttest_ind_from_stats).
    Returns scipy's result (``.statistic``, ``.pvalue``)."""
    if min(n1, n2) < 2:
        raise ValueError(f"each sample needs at least 2 items for a t-test, got n1={n1}, n2={n2}.")
    return scipy.stats.ttest_ind_from_stats(mean1, std1, n1, mean2, std2, n2, equal_var=equal_var)


def ttest_per_question(a, b, *, ddof: int = 1, equal_var: bool = True):
    """t-test between two methods' per-question scores (e.g. APD's and CD's answer ppl).

    Computes mean, std (with ``ddof``) and n of each sample and calls
    scipy.stats.ttest_ind_from_stats. ``ddof=1`` (default) equals scipy.stats.ttest_ind; the
    authors' release passed ``np.std`` (``ddof=0``), so use ``ddof=0`` to reproduce it exactly
    (negligible at the paper's ~1,000 questions).
    """
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if np.isnan(a).any() or np.isnan(b).any():
        raise ValueError("t-test samples contain NaN; drop filtered questions first.")
    return ttest_from_stats(
        a.mean(), a.std(ddof=ddof), a.size, b.mean(), b.std(ddof=ddof), b.size, equal_var=equal_var
    )


def gap_closure(apd, cd, llm_big, llm_elm, *, higher_is_better: bool | None = None):
    """The paper's "APD vs CD": ``(APD - CD) / (LLM_big - LLM_elm)`` as a fraction (the paper
    prints it x100 as a percentage). The same formula serves ppl (lower is better) and
    accuracy/MRR (higher is better): both signs flip together. "APD vs LLM 6.9B" is
    ``gap_closure(apd, llm_elm, llm_big, llm_elm)``.

    Returns NaN where LLM_big == LLM_elm, and, if ``higher_is_better`` is given, where the big
    model is not better than the ELM (the paper's "NA"). Scalars or broadcasting arrays.
    """
    apd, cd, big, elm = (np.asarray(x, dtype=np.float64) for x in (apd, cd, llm_big, llm_elm))
    denom = big - elm
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(denom == 0, np.nan, (apd - cd) / np.where(denom == 0, 1.0, denom))
    if higher_is_better is not None:
        worse = denom <= 0 if higher_is_better else denom >= 0
        out = np.where(worse, np.nan, out)
    return float(out) if out.ndim == 0 else out
