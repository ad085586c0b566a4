"""Evaluation metrics: open-ended generation (FactualityPrompts) and one-shot QA scoring.

Pure functions, no models. Two families:

**Open-ended generation** (the paper's FactualityPrompts section; definitions as in the
FactualityPrompts scorer that the authors' release runs, noted where we differ):

- :func:`distinct_n` (Dist-2): distinct n-grams / all n-grams, pooled over *all* continuations
  (n-grams never cross two continuations). Tokens are words and punctuation marks, as NLTK's
  ``word_tokenize`` gives them (FactualityPrompts uses NLTK, *not* whitespace splitting); our
  default :func:`word_tokenize` is a dependency-free regex approximation of it (pass
  ``tokenize=nltk.word_tokenize`` for the exact one). The release scores only the first 3
  sentences of each continuation (``--num_eval_sent 3``), hence ``max_sentences=3``, and
  computes it separately for the factual and the nonfactual prompt sets.
- :func:`repetition_ratio` (Rep): the share of continuations that *end* in a repeated span
  (Holtzman et al. 2019's rule, see :func:`ends_in_repetition`). The release feeds it decoded
  strings, so its units are characters; that is our default. Pass ``tokenize=`` for token units.
- :func:`ne_error_rate` (NE_ER): mean over units (sentences or continuations) that mention at
  least one named entity of the share of those entities missing from the allowed set/evidence.
  In FactualityPrompts a unit is one of the first 3 sentences of a continuation that states a
  fact (spaCy NER + a check-worthiness rule, done upstream of this function).
- :func:`entailment_ratio` (Entail_R): share of check-worthy claims entailed by the evidence.

**QA scoring** (the paper's QA tables; order of operations as in the authors' release):

1. ELM and ALM (or ALM') outputs are log-softmaxed over the vocabulary (``(..., V)``).
2. The ELM's log-probabilities are masked to its own top k=20 (:func:`top_k_mask`; -inf elsewhere).
3. CD/APD is applied on those tokens: ``log p_ELM - (1/T) log p_ALM`` (:func:`cd_scores_over_topk`).
4. The result is renormalised over the (same) top-20 tokens: a log-softmax over the masked scores.
   With 1/T = 0 this is just the ELM's top-20 distribution (the "LLM 6.9B"/"LLM 12B" rows).
5. Per answer: "ppl" = mean over answer tokens of ``-log(p + 0.01)`` (:func:`answer_ppl`; in nats,
   never exponentiated); MRR = mean over tokens of 1/rank (:func:`gold_rank`, :func:`mrr`);
   accuracy = the option with the lowest ppl is the gold one (:func:`accuracy_lowest_ppl`).
6. Only answers whose tokens are all in the ELM's (and the reference LM's) top 20 are scored
   (:func:`in_topk_filter`, :func:`keep_multiple_choice`).
7. Significance: two-sample t-test from summary statistics (:func:`ttest_per_question`,
   scipy.stats.ttest_ind_from_stats); size effect: :func:`gap_closure`.

Array conventions: torch tensors in, torch tensors out; numpy arrays (or lists) in, numpy out.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import scipy.stats
import torch

# ----------------------------------------------------------------------------------------------
# helpers


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


# ----------------------------------------------------------------------------------------------
# open-ended generation: tokenisation

_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr inc ltd co corp vs etc e.g i.e no vol fig gen gov sen rep lt col "
    "capt sgt ft mt jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_SENTENCE_END = re.compile(r"""[.!?]+["')\]]*\s+(?=["'(\[]?[A-Z0-9])""")
_WORD = re.compile(
    r"""
      (?:[A-Za-z]\.){2,}              # abbreviations with inner dots: U.S., e.g.
    | \.\.\.                          # ellipsis
    | \w+(?=n't\b)                    # do|n't, is|n't
    | n't\b
    | \w+(?='(?:s|re|ve|ll|d|m)\b)    # it|'s, they|'re
    | '(?:s|re|ve|ll|d|m)\b
    | \d+(?:[.,:]\d+)+                # 3.5, 1,000, 10:30
    | \w+(?:[-']\w+)*                 # words, well-known, o'clock
    | \S                              # any other single mark
    """,
    re.VERBOSE | re.IGNORECASE,
)


def word_tokenize(text: str) -> list[str]:
    """Words and punctuation marks as separate tokens, approximating NLTK's ``word_tokenize``
    (Treebank conventions: ``"isn't." -> ["is", "n't", "."]``, ``"U.S." -> ["U.S."]``)."""
    if not isinstance(text, str):
        raise TypeError(f"word_tokenize expects a str, got {type(text).__name__}.")
    return _WORD.findall(text)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences at ``.``/``!``/``?`` followed by space and an upper-case letter,
    digit or opening quote/bracket; common abbreviations and single initials do not end a
    sentence. A light approximation of NLTK's Punkt ``sent_tokenize``."""
    if not isinstance(text, str):
        raise TypeError(f"split_sentences expects a str, got {type(text).__name__}.")
    sentences, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        before = text[start : m.start() + 1].split()
        last = before[-1].rstrip(".!?\"')]").lower() if before else ""
        if text[m.start()] == "." and (last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())):
            continue
        sentences.append(text[start : m.end()].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def first_sentences(text: str, k: int | None) -> str:
    """The first ``k`` sentences of ``text`` joined by one space (``k=None``: the whole text)."""
    if k is None:
        return text
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"max_sentences must be a positive int or None, got {k!r}.")
    return " ".join(split_sentences(text)[:k])


def _tokens(item, tokenize: Callable[[str], Sequence] | None, max_sentences: int | None, default):
    if isinstance(item, str):
        text = first_sentences(item, max_sentences)
        return list((tokenize or default)(text))
    if isinstance(item, (bytes, dict)) or not isinstance(item, Iterable):
        raise TypeError(
            f"a continuation must be a str or a sequence of tokens, got {type(item).__name__}."
        )
    return list(item)


# ----------------------------------------------------------------------------------------------
# open-ended generation: diversity


def _ngrams(continuations, n, tokenize, max_sentences) -> tuple[set, int]:
    """(set of distinct n-grams, number of n-grams) over continuations, never across two."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int (2 for Dist-2), got {n!r}.")
    if isinstance(continuations, str):
        raise TypeError("expected a list of continuations, got one str; wrap it: [text].")
    seen, total = set(), 0
    for item in continuations:
        toks = _tokens(item, tokenize, max_sentences, word_tokenize)
        grams = list(zip(*(toks[i:] for i in range(n))))
        seen.update(grams)
        total += len(grams)
    return seen, total


def distinct_n(
    continuations: Sequence[str | Sequence],
    n: int = 2,
    *,
    tokenize: Callable[[str], Sequence] | None = None,
    max_sentences: int | None = 3,
) -> float:
    """Dist-n: (number of distinct n-grams) / (number of n-grams), pooled over all continuations.

    continuations: strings (tokenised with ``tokenize``, default :func:`word_tokenize`, after
        keeping the first ``max_sentences`` sentences) or already-tokenised sequences (used as
        they are). n-grams are counted inside each continuation, never across two.
    Returns a fraction in (0, 1] (the paper prints it as a percentage).
    """
    seen, total = _ngrams(continuations, n, tokenize, max_sentences)
    if total == 0:
        raise ValueError(
            f"no continuation has {n} or more tokens, so Dist-{n} is undefined; check that the "
            "generations are not empty."
        )
    return len(seen) / total


def distinct_n_per_prompt(
    groups: Sequence[Sequence[str | Sequence]],
    n: int = 2,
    *,
    tokenize: Callable[[str], Sequence] | None = None,
    max_sentences: int | None = 3,
) -> float:
    """The "local" variant: Dist-n within each prompt's continuations, averaged over prompts
    (prompts whose continuations have no n-gram are skipped). groups: one list per prompt."""
    scores = []
    for group in groups:
        seen, total = _ngrams(group, n, tokenize, max_sentences)
        if total:
            scores.append(len(seen) / total)
    if not scores:
        raise ValueError(f"no prompt has a continuation with {n} or more tokens; Dist-{n} is undefined.")
    return float(np.mean(scores))


# ----------------------------------------------------------------------------------------------
# open-ended generation: repetition


def repeated_suffix(seq: Sequence, max_n: int = 90) -> tuple[int, int]:
    """The most repeated n-gram at the end of ``seq``: returns ``(n, times)``.

    For every n in 1..max_n, ``times(n)`` counts how often the last n items repeat back to back
    at the end (1 = no repetition). Returns the n with the largest count (the smallest such n
    on ties) and that count. A str is a sequence of characters.
    """
    if not isinstance(max_n, int) or max_n < 1:
        raise ValueError(f"max_n must be a positive int (90 in FactualityPrompts), got {max_n!r}.")
    items = list(seq)
    if not items:
        return 1, 0
    rev = items[::-1]
    best_n, best_times = 1, 0
    for n in range(1, max_n + 1):
        tail, times = rev[:n], 1
        while rev[n * times : n * (times + 1)] == tail and len(tail) == n:
            times += 1
        if times > best_times:
            best_n, best_times = n, times
    return best_n, best_times


def ends_in_repetition(seq: Sequence, max_n: int = 90) -> bool:
    """Holtzman et al.'s rule, as FactualityPrompts applies it: with ``(n, times) =
    repeated_suffix(seq)``, the text is repetitive iff ``times >= 2`` and (``n >= 3`` or
    ``times > 50``). So ``"abcabc"`` is repetitive, ``"xyzaa"`` is not (n=1), and a 2-gram must
    repeat more than 50 times; only the *most* repeated suffix is judged."""
    n, times = repeated_suffix(seq, max_n)
    return times > 1 and (n >= 3 or times > 50)


def repetition_ratio(
    continuations: Sequence[str | Sequence],
    *,
    tokenize: Callable[[str], Sequence] | None = None,
    max_n: int = 90,
) -> float:
    """Rep: the share of continuations that end in a repeated span (:func:`ends_in_repetition`).

    Strings are judged as sequences of *characters* unless ``tokenize`` is given: the authors'
    release (and FactualityPrompts) run Holtzman et al.'s token-id rule on decoded strings, so
    its Rep, and the paper's numbers, are character-level. Pass ``tokenize=tokenizer.encode``
    for the original token-level rule. Already-tokenised sequences are used as they are.
    The whole continuation is judged (no sentence cut). Empty continuations count as not
    repetitive but stay in the denominator, as in the release. Returns a fraction.
    """
    if isinstance(continuations, str):
        raise TypeError("repetition_ratio expects a list of continuations, got one str; wrap it: [text].")
    flags = [
        ends_in_repetition(_tokens(c, tokenize, None, list), max_n) for c in continuations
    ]
    if not flags:
        raise ValueError("repetition_ratio got no continuations.")
    return float(np.mean(flags))


# ----------------------------------------------------------------------------------------------
# open-ended generation: factuality ratios


def _normalise_entity(e: str) -> str:
    e = " ".join(e.casefold().split())
    return e[4:] if e.startswith("the ") else e


def ne_error_rate(
    entities: Sequence[Sequence[str]],
    allowed: str | Iterable[str] | None = None,
    *,
    allowed_per_unit: Sequence[str | Iterable[str]] | None = None,
) -> float:
    """NE_ER: mean over units of the share of their named entities that are not allowed.

    entities: one list of entity strings per unit (FactualityPrompts' unit is a check-worthy
        sentence; a continuation works too). Units without entities are skipped.
    allowed: one allowed set shared by all units; or ``allowed_per_unit``: one per unit (e.g.
        each prompt's evidence), as long as ``entities``. Give exactly one of the two.
        A set/list of strings matches exactly after case-folding, collapsing spaces and dropping
        a leading "the "; a str is evidence text and an entity is allowed when it occurs in it
        (case-folded substring, FactualityPrompts-style).
    Returns a fraction in [0, 1], or NaN when no unit mentions an entity (undefined).
    """
    if isinstance(entities, str):
        raise TypeError("entities must be a list of entity lists (one per unit), got a str.")
    entities = list(entities)
    if (allowed is None) == (allowed_per_unit is None):
        raise TypeError("give exactly one of allowed= (shared by all units) or allowed_per_unit= (one per unit).")
    if allowed_per_unit is not None:
        allowed_list = list(allowed_per_unit)
        if len(allowed_list) != len(entities):
            raise ValueError(
                f"allowed_per_unit has {len(allowed_list)} entries but entities has {len(entities)} "
                "units; give one allowed set (or evidence text) per unit."
            )
    else:
        allowed_list = [allowed] * len(entities)

    def matcher(a):
        if isinstance(a, str):
            text = " ".join(a.casefold().split())
            return lambda e: _normalise_entity(e) in text
        norm = {_normalise_entity(x) for x in a}
        return lambda e: _normalise_entity(e) in norm

    ratios = []
    for ents, a in zip(entities, allowed_list):
        if isinstance(ents, str):
            raise TypeError(f"each unit's entities must be a list of str, got the str {ents!r}; wrap it: [{ents!r}].")
        ents = list(ents)
        if not ents:
            continue
        ok = matcher(a)
        ratios.append(sum(not ok(e) for e in ents) / len(ents))
    return float(np.mean(ratios)) if ratios else math.nan


def entailment_ratio(entailed: Sequence[bool | None]) -> float:
    """Entail_R: share of check-worthy claims entailed by the evidence.

    entailed: one flag per claim (True = the NLI model's label is entailment); ``None`` marks a
    claim that is not check-worthy (no fact/off topic) and is skipped. Returns a fraction.
    """
    flags = [bool(x) for x in entailed if x is not None]
    if not flags:
        raise ValueError("entailment_ratio got no check-worthy claim (all None or empty); it is undefined.")
    return float(np.mean(flags))


# ----------------------------------------------------------------------------------------------
# QA: distributions over the ELM's top k


def top_k_mask(elm_logprobs, k: int = 20):
    """Boolean mask ``(..., V)``: True for the ELM's top-k tokens at each position.

    elm_logprobs: ELM logits or log-probabilities, shape ``(..., V)`` (same ranking either way).
    Ties with the k-th value are kept (so a row may keep more than k tokens), as in the release.
    """
    t, was_numpy = _as_tensor(elm_logprobs, "elm_logprobs")
    V = t.shape[-1]
    if not isinstance(k, int) or not 1 <= k <= V:
        raise ValueError(f"k must be an int in [1, vocab size {V}], got {k!r} (the paper uses k=20).")
    kth = torch.topk(t, k, dim=-1).values[..., -1:]
    return _out(t >= kth, was_numpy)


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
    if e.shape != a.shape:
        raise ValueError(
            f"elm_logprobs {tuple(e.shape)} and alm_logprobs {tuple(a.shape)} differ in shape; both "
            "must score the same positions over the same vocabulary (slice both to the tokenizer's "
            "vocabulary, e.g. x[..., :len(tokenizer)], since Pythia members pad differently)."
        )
    if e.dtype in (torch.float16, torch.bfloat16):  # half-precision models: score in fp32
        e = e.float()
    a = a.to(dtype=e.dtype, device=e.device)
    inv = torch.as_tensor(np.asarray(inv_T, dtype=np.float64)).to(dtype=e.dtype, device=e.device)
    if inv.ndim > 1 or inv.numel() == 0:
        raise ValueError(f"inv_T must be a float or a 1-D sequence of floats, got shape {tuple(inv.shape)}.")
    if not torch.isfinite(inv).all() or (inv < 0).any():
        raise ValueError(f"inv_T (= 1/T) must be finite and >= 0, got {inv.tolist()}; use 0 for the plain ELM.")
    e = torch.log_softmax(e, dim=-1)
    a = torch.log_softmax(a, dim=-1)
    keep = top_k_mask(e, k)
    if not torch.isfinite(a[keep]).all():
        raise ValueError(
            "alm_logprobs is -inf/inf at some of the ELM's top-k tokens, so CD would be infinite "
            "there; the amateur must give every kept token a finite log-probability."
        )
    if inv.ndim == 1:
        inv = inv.reshape((-1,) + (1,) * e.ndim)
    a = torch.where(keep, a, torch.zeros_like(a))  # outside the top k the amateur is irrelevant
    scores = torch.where(keep, e - inv * a, torch.full_like(e, -math.inf))
    return _out(torch.log_softmax(scores, dim=-1), was_numpy)


def elm_over_topk(elm_logprobs, k: int = 20):
    """The ELM's own distribution renormalised over its top k (log-probabilities, ``(..., V)``);
    the same as ``cd_scores_over_topk(elm, anything, 0.0, k)``."""
    return cd_scores_over_topk(elm_logprobs, elm_logprobs, 0.0, k)


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


# ----------------------------------------------------------------------------------------------
# QA: per-answer scores and aggregates


def answer_ppl(token_probs, eps: float = 0.01):
    """The paper's QA "perplexity": mean over answer tokens of ``-log(p + eps)`` (nats; never
    exponentiated). eps=0.01 keeps a few tiny probabilities from dominating.

    token_probs: probabilities of the gold answer tokens (already renormalised over the top 20),
        shape ``(..., n_tokens)`` -> result ``(...)``; or a list of 1-D sequences of different
        lengths (one per answer) -> a 1-D numpy array.
    """
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0 (the paper uses 0.01), got {eps!r}.")
    if isinstance(token_probs, (list, tuple)) and token_probs and all(
        isinstance(x, (list, tuple, np.ndarray, torch.Tensor)) for x in token_probs
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
        items = [np.atleast_1d(np.asarray(r.detach().cpu().numpy() if isinstance(r, torch.Tensor) else r)) for r in ranks]
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
        raise ValueError(f"option_kept must be (n_questions, n_options) and gold (n_questions,); got {kept.shape}, {g.shape}.")
    rows = np.arange(len(g))
    others = kept.copy()
    others[rows, g] = False
    return kept[rows, g] & others.any(axis=1)


# ----------------------------------------------------------------------------------------------
# QA: significance and gap closure


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
    return ttest_from_stats(a.mean(), a.std(ddof=ddof), a.size, b.mean(), b.std(ddof=ddof), b.size, equal_var=equal_var)


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
