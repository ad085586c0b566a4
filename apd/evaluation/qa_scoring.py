"""QA evaluation as in the paper's tables: the ELM, CD and APD scored on teacher-forced answers.

    from apd.evaluation import qa_scoring
    scores = qa_scoring.score_qa(fam, examples, alm_prime=alm_prime, reference=None)  # QAExample list
    table = qa_scoring.qa_summary(scores)     # ppl / acc / MRR, both 1/T protocols
    tests, gaps = qa_scoring.significance(scores), qa_scoring.gap_rows(table)   # gaps need a reference

At each answer token the ELM's log-probabilities are cut to its top k = 20, ``(1/T) log p_amateur``
is subtracted there (ALM for CD, ALM' for APD, 1/T = 0 for the ELM) and the result is renormalised
over those k tokens (:func:`apd.evaluation.qa_metrics.cd_scores_over_topk`). Per answer: ppl = mean
of -log(p + 0.01) over its tokens (nats, never exponentiated), MRR = mean 1/rank of the gold token;
accuracy: the gold option has the lowest ppl. Only answers inside the ELM's (and the reference's)
top k count. 1/T is picked per metric on the evaluation set (``protocol="paper"``) or on other data
(``protocol="held-out"``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.stats
import torch

from apd.base.progress import progress_bar
from apd.core.stats import best_knob, cluster_mean, critical, interval, mean_se, paired_difference
from apd.evaluation import qa_metrics
from apd.evaluation.qa_data import QAExample
from apd.family.digest import family_digest, memoized_scores, scoring_identity
from apd.family.logprobs import SCORING_CODE, prompts_digest
from apd.family.settings import PAPER_INV_T
from apd.world.world import ANSWER_PREFIX

#: metric -> whether higher is better
METRICS = {"ppl": False, "acc": True, "MRR": True}
#: method -> the role name of ``apd.report.paper`` (``elm`` = the expert alone, ``big`` = the reference LLM)
METHOD_ROLES = {"elm": "elm", "cd": "cd", "apd": "apd", "ref": "big"}
PROTOCOLS = ("paper", "held-out")
#: apd.evaluation.qa_data dataset names -> the paper's canonical names (apd.report.paper)
PAPER_DATASETS = {
    "lambada": "LAMBADA",
    "commonsense_qa": "CommonsenseQA",
    "qasc": "QASC (Q+Fact)",
    "qasc_q": "QASC (Q only)",
    "arc": "ARC",
    "social_iqa": "SocialIQA",
    "multirc": "MultiRC",
    "squad": "SQuAD (Q+P)",
    "squad_q": "SQuAD (Q only)",
}


# ----------------------------------------------------------------------------------------------
# Encoding and the forward passes


@dataclass
class EncodedPairs:
    """Teacher-forced (prompt, continuation) pairs.

    input_ids: one list of token ids per pair, prompt then continuation.
    offsets: ``(len(input_ids) + 1,)``; the answer tokens of pair i are ``gold[offsets[i]:offsets[i+1]]``
        (pair-major order, the layout of every per-token array in this module).
    gold: ``(P,)`` int64 answer token ids, P = total answer tokens.
    """

    input_ids: list
    offsets: np.ndarray
    gold: np.ndarray

    @property
    def answer_lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


def encode_pairs(
    tokenizer, prompts: Sequence[str], continuations: Sequence[str], max_length: int | None = None
) -> EncodedPairs:
    """Tokenise prompts and continuations separately (no special tokens) and concatenate.

    max_length: if given, prompts are cut from the left so that prompt + continuation fit in
        ``max_length`` tokens (the continuation is never cut). None: no cut.
    """
    if len(prompts) != len(continuations):
        raise ValueError(f"got {len(prompts)} prompts but {len(continuations)} continuations; pass one per pair.")
    if not len(prompts):
        raise ValueError("no (prompt, continuation) pairs to score.")
    ids, lengths, gold = [], [], []
    for p, c in zip(prompts, continuations):
        if not isinstance(p, str) or not isinstance(c, str):
            raise TypeError(f"prompts and continuations must be str, got {type(p).__name__} and {type(c).__name__}.")
        p_ids = list(tokenizer.encode(p, add_special_tokens=False))
        c_ids = list(tokenizer.encode(c, add_special_tokens=False))
        if not c_ids:
            raise ValueError(f"the continuation {c!r} has no tokens; drop empty answers before scoring.")
        if not p_ids:
            raise ValueError(
                f"the prompt before {c!r} has no tokens, so the first answer token has no "
                "context; every prompt needs at least one token."
            )
        if max_length is not None:
            room = int(max_length) - len(c_ids)
            if room < 1:
                raise ValueError(
                    f"max_length={max_length} leaves no room for the prompt before a "
                    f"{len(c_ids)}-token answer; raise max_length."
                )
            p_ids = p_ids[-room:]
        ids.append(p_ids + c_ids)
        lengths.append(len(c_ids))
        gold.extend(c_ids)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return EncodedPairs(ids, offsets, np.asarray(gold, dtype=np.int64))


def _pad_id(tokenizer) -> int:
    pad = getattr(tokenizer, "pad_token_id", None)
    if pad is None:
        pad = getattr(tokenizer, "eos_token_id", None)
    return int(pad) if pad is not None else 0


def _accepts(model, name: str) -> bool:
    import inspect

    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return False


@torch.no_grad()
def iter_answer_log_probs(
    model, enc: EncodedPairs, vocab_size: int, batch_size: int = 16, pad_id: int = 0, progress: str | None = None
):
    """Yield ``(token_index (n,), log_probs (n, V) float32)`` batch by batch: the model's
    next-token log-probabilities (log-softmax over the first ``vocab_size`` outputs) at every
    answer token of a batch of pairs; ``token_index`` says which rows of ``enc.gold`` they score.

    Pairs are batched by length, left-padded, with position ids counted from the first real token,
    and only the last positions' logits are computed when the model accepts ``logits_to_keep``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
    device = next(model.parameters()).device
    max_pos = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    lengths = np.array([len(x) for x in enc.input_ids])
    if max_pos is not None and lengths.max() > max_pos:
        raise ValueError(
            f"a pair has {lengths.max()} tokens but the model takes at most {max_pos}; "
            "pass max_length= to cut prompts from the left, or drop long examples."
        )
    order = np.argsort(lengths, kind="stable")
    starts = range(0, len(order), batch_size)
    if progress:
        starts = progress_bar(starts, desc=progress, unit="batch", leave=False)
    with_pos, with_keep = _accepts(model, "position_ids"), _accepts(model, "logits_to_keep")
    for s in starts:
        idx = order[s : s + batch_size]
        seqs = [enc.input_ids[i] for i in idx]
        ans = enc.answer_lengths[idx]
        L, a_max = max(map(len, seqs)), int(ans.max())
        ids = torch.full((len(seqs), L), pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), L), dtype=torch.long)
        for r, seq in enumerate(seqs):
            ids[r, L - len(seq) :] = torch.tensor(seq, dtype=torch.long)
            mask[r, L - len(seq) :] = 1
        kwargs = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
        if with_pos:
            kwargs["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0).to(device)
        if with_keep:
            kwargs["logits_to_keep"] = a_max + 1
        logits = model(**kwargs).logits[:, -(a_max + 1) :, :vocab_size]
        if logits.shape[-1] < vocab_size:
            raise ValueError(f"the model has {logits.shape[-1]} outputs but the vocabulary has {vocab_size} tokens.")
        # kept position m predicts the token at L - a_max + m; answer token j of row r sits at
        # L - a_r + j, so its logits are kept position a_max - a_r + j.
        rows = [logits[r, a_max - int(a) : a_max] for r, a in enumerate(ans)]
        lp = torch.log_softmax(torch.cat(rows).float(), dim=-1)
        token_index = np.concatenate([np.arange(enc.offsets[i], enc.offsets[i + 1]) for i in idx])
        yield token_index, lp


@dataclass
class ExpertTopK:
    """An expert's top k at every answer token (``(P, k)`` rows, best first).

    ids: token ids; logprobs: their full-vocabulary log-probabilities (float32);
    gold_pos: where the gold token sits in the row, -1 when outside the top k;
    gold_rank: 1-based rank of the gold token over the whole vocabulary (ties count against it,
        :func:`apd.evaluation.qa_metrics.gold_rank`); vocab_size: V (the rank of a token outside a top-k method).
    """

    ids: np.ndarray
    logprobs: np.ndarray
    gold_pos: np.ndarray
    gold_rank: np.ndarray
    vocab_size: int

    @property
    def k(self) -> int:
        return self.ids.shape[1]


def expert_topk(
    model,
    enc: EncodedPairs,
    vocab_size: int,
    k: int = 20,
    batch_size: int = 16,
    pad_id: int = 0,
    progress: str | None = None,
) -> ExpertTopK:
    """Run an expert (the ELM or the reference LLM) over every answer token: see :class:`ExpertTopK`."""
    if not isinstance(k, int) or not 1 <= k <= vocab_size:
        raise ValueError(f"k must be an int in [1, {vocab_size}], got {k!r} (the paper uses 20).")
    P = len(enc.gold)
    ids = np.zeros((P, k), dtype=np.int64)
    lps = np.zeros((P, k), dtype=np.float32)
    ranks = np.zeros(P, dtype=np.int64)
    for t_idx, lp in iter_answer_log_probs(model, enc, vocab_size, batch_size, pad_id, progress):
        gold = torch.as_tensor(enc.gold[t_idx], device=lp.device)
        top = torch.topk(lp, k, dim=-1)
        ids[t_idx] = top.indices.cpu().numpy()
        lps[t_idx] = top.values.cpu().numpy()
        ranks[t_idx] = qa_metrics.gold_rank(lp, gold).cpu().numpy()
    hit = ids == enc.gold[:, None]
    gold_pos = np.where(hit.any(1), hit.argmax(1), -1)
    return ExpertTopK(ids, lps, gold_pos, ranks, int(vocab_size))


def amateur_at(
    model,
    enc: EncodedPairs,
    ids: np.ndarray,
    vocab_size: int,
    batch_size: int = 16,
    pad_id: int = 0,
    progress: str | None = None,
) -> np.ndarray:
    """An amateur's full-vocabulary log-probabilities at the expert's top-k ids: ``(P, k)`` float32."""
    out = np.zeros(ids.shape, dtype=np.float32)
    for t_idx, lp in iter_answer_log_probs(model, enc, vocab_size, batch_size, pad_id, progress):
        out[t_idx] = torch.gather(lp, 1, torch.as_tensor(ids[t_idx], device=lp.device)).cpu().numpy()
    return out


# ----------------------------------------------------------------------------------------------
# Methods over the ELM's top k, per token and per answer


def method_token_scores(
    expert: ExpertTopK, amateur_logprobs: np.ndarray | None, inv_T: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Gold-token log-probability and rank of CD/APD (or the expert alone) at every answer token.

    expert: the ELM's top k; amateur_logprobs: ``(P, k)`` amateur log-probabilities at those ids
        (None: the expert alone, as with 1/T = 0). inv_T: the 1/T values (1-D).
    Returns ``(logp, rank)``, each ``(len(inv_T), P)``: log-probability of the gold token after
    renormalising over the top k (-inf outside it) and its 1-based rank under the method
    (``expert.vocab_size`` outside the top k, as :func:`apd.evaluation.qa_metrics.gold_rank` ranks a masked token).
    """
    inv = np.atleast_1d(np.asarray(inv_T, dtype=np.float64))
    amateur = expert.logprobs if amateur_logprobs is None else np.asarray(amateur_logprobs)
    if amateur_logprobs is None and np.any(inv != 0):
        raise ValueError("without an amateur only 1/T = 0 (the expert alone) is defined; pass amateur_logprobs.")
    if amateur.shape != expert.logprobs.shape:
        raise ValueError(
            f"amateur_logprobs has shape {amateur.shape}, the expert's top k {expert.logprobs.shape}; "
            "compute it with amateur_at(model, enc, expert.ids, ...)."
        )
    scores = qa_metrics.cd_scores_over_topk(
        expert.logprobs.astype(np.float64), amateur.astype(np.float64), inv, k=expert.k
    )  # (n_T, P, k)
    inside = expert.gold_pos >= 0
    pos = np.where(inside, expert.gold_pos, 0)
    logp = np.take_along_axis(scores, np.broadcast_to(pos[None, :, None], scores.shape[:2] + (1,)), -1)[..., 0]
    logp = np.where(inside[None], logp, -np.inf)
    rank = qa_metrics.gold_rank(scores, np.broadcast_to(pos, scores.shape[:2]).copy())
    rank = np.where(inside[None], rank, expert.vocab_size)
    return logp, rank


def _by_length(offsets: np.ndarray):
    """(length, answer indices, token index matrix (n, length)) for every answer length."""
    lengths = np.diff(offsets)
    for L in np.unique(lengths):
        answers = np.nonzero(lengths == L)[0]
        yield int(L), answers, offsets[answers][:, None] + np.arange(L)[None, :]


def answer_ppl_matrix(logp: np.ndarray, offsets: np.ndarray, eps: float = 0.01) -> np.ndarray:
    """Per-answer ppl ``(n_T, n_answers)`` = mean over the answer's tokens of ``-log(p + eps)``
    (:func:`apd.evaluation.qa_metrics.answer_ppl`), from per-token log-probabilities ``(n_T, P)``."""
    logp = np.atleast_2d(logp)
    out = np.zeros((logp.shape[0], len(offsets) - 1))
    for _, answers, tok in _by_length(offsets):
        out[:, answers] = qa_metrics.answer_ppl(np.exp(logp[:, tok]), eps)
    return out


def answer_rr_matrix(rank: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-answer reciprocal rank ``(n_T, n_answers)``: mean over the answer's tokens of 1/rank;
    the mean over answers is :func:`apd.evaluation.qa_metrics.mrr`."""
    rank = np.atleast_2d(rank)
    out = np.zeros((rank.shape[0], len(offsets) - 1))
    for _, answers, tok in _by_length(offsets):
        out[:, answers] = (1.0 / rank[:, tok]).mean(-1)
    return out


def answers_in_topk(
    expert_rank: np.ndarray, offsets: np.ndarray, ref_rank: np.ndarray | None = None, k: int = 20
) -> np.ndarray:
    """Which answers have all their tokens in the expert's (and reference's) top k: ``(n_answers,)``
    bool, from per-token full-vocabulary ranks ``(P,)`` (:func:`apd.evaluation.qa_metrics.in_topk_filter`)."""
    split = lambda r: [np.asarray(r[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]  # noqa: E731
    return qa_metrics.in_topk_filter(split(expert_rank), None if ref_rank is None else split(ref_rank), k)


# ----------------------------------------------------------------------------------------------
# Whole QA sets


@dataclass
class QAScores:
    """Per-question scores of every method at every 1/T on one list of examples.

    methods: ``elm`` (the ELM alone), ``cd`` (ALM amateur), ``apd`` (ALM' amateur, if given),
        ``ref`` (the reference LLM alone, if given); ``grid(method)`` is its 1/T values
        (``(0.0,)`` for elm and ref).
    gold_ppl, gold_rr: method -> ``(n_T, n_q)`` ppl and reciprocal rank of each question's gold answer.
    kept: ``(n_q,)`` gold answer's tokens all in the ELM's (and reference's) top k.
    option_ppl: method -> ``(n_T, n_q, n_options)`` (NaN for padding and filtered options), mc only.
    option_kept: ``(n_q, n_options)``; kept_mc: ``(n_q,)`` usable for accuracy (gold and one
        other option kept); correct: method -> ``(n_T, n_q)`` float 1/0, NaN where not kept_mc.
    groups: question key per item (examples of one question share it: SQuAD's several answers).
    meta: per item, the example's ``meta`` dict (e.g. ``bucket`` for world QA).
    """

    dataset: str
    kind: str
    ids: list
    groups: np.ndarray
    inv_T: np.ndarray
    methods: list
    gold_ppl: dict
    gold_rr: dict
    kept: np.ndarray
    gold_index: np.ndarray | None = None
    option_ppl: dict | None = None
    option_kept: np.ndarray | None = None
    kept_mc: np.ndarray | None = None
    correct: dict | None = None
    has_reference: bool = False
    k: int = 20
    meta: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def grid(self, method: str) -> np.ndarray:
        return self.inv_T if method in ("cd", "apd") else np.zeros(1)

    @property
    def metric_names(self) -> list:
        return ["ppl", "acc", "MRR"] if self.kind == "mc" else ["ppl", "MRR"]

    def values(self, metric: str) -> tuple[dict, np.ndarray]:
        """``({method: (n_T, n_q) per-question values}, counted (n_q,) bool)`` for a metric."""
        if metric == "ppl":
            return self.gold_ppl, self.kept
        if metric == "MRR":
            return self.gold_rr, self.kept
        if metric == "acc":
            if self.kind != "mc":
                raise ValueError(f"{self.dataset} is a free-answer dataset: it has ppl and MRR, no accuracy.")
            return self.correct, self.kept_mc
        raise ValueError(f"unknown metric {metric!r}; use one of {list(METRICS)}.")

    def meta_column(self, key: str, default=None) -> np.ndarray:
        return np.array([m.get(key, default) for m in self.meta])


def question_group(example) -> str:
    """The question an example belongs to: SQuAD/MultiRC keep one example per gold answer with ids
    ``<question id>/<j>``; every other example is its own question."""
    if isinstance(getattr(example, "meta", None), dict) and "all_answers" in example.meta:
        return example.id.rsplit("/", 1)[0]
    return example.id


def world_examples(items) -> list:
    """World QA items (``apd.world.world.QAItem``) as ``apd.evaluation.qa_data.QAExample``: the gold answer and the
    distractors as options (gold first), meta with person, attribute and bucket."""

    out = []
    for i, it in enumerate(items):
        options = [ANSWER_PREFIX + c for c in it.choices]
        out.append(
            QAExample(
                "world",
                f"world/{i}/{it.person}/{it.attribute}",
                it.prompt,
                options[0],
                options,
                0,
                {"person": it.person, "attribute": it.attribute, "bucket": it.bucket},
            )
        )
    return out


def score_qa(
    family,
    examples,
    alm_prime=None,
    reference=None,
    *,
    inv_T: Sequence[float] = PAPER_INV_T,
    k: int = 20,
    batch_size: int = 16,
    max_length: int | None = None,
    progress: bool = False,
) -> QAScores:
    """Score ``examples`` (``apd.evaluation.qa_data.QAExample``; all multiple choice or all free answer) with the
    family's ELM alone, CD (ALM amateur), APD (``alm_prime`` amateur) and the reference LLM.

    family: an ``apd.family.loading.Family`` (uses ``tokenizer``, ``vocab_size``, ``elm``, ``alm``, ``on_device``).
    alm_prime: ALM' as a HF causal LM on the family's device, or None (no APD rows).
    reference: a ``Family`` whose largest member is the bigger "LLM" of the paper's tables (e.g.
        ``load_family("pythia", members=["pythia-12b-deduped"])``), or None (no LLM-big row; the
        filter then uses the ELM alone). It must share the family's tokenizer.
    inv_T: the 1/T grid of CD and APD (default the paper's). k: the top-k of the ELM (20).
    max_length: cut prompts from the left to fit (see :func:`encode_pairs`); None: no cut.
    Cached by the models' weights where ``$APD_MEMO_SCORES`` is 1 (:mod:`apd.family.digest`).
    """

    def compute():
        return _score_qa(family, examples, alm_prime, reference, inv_T, k, batch_size, max_length, progress)

    ref = None
    if reference is not None:
        if scoring_identity(reference) is None:  # a reference off the CPU: nothing is cached
            return compute()
        ref = family_digest(reference, [reference.elm])
    parts = {
        "examples": prompts_digest(repr(ex) for ex in examples),
        "reference": ref,
        "inv_T": [float(v) for v in np.asarray(inv_T, dtype=np.float64).ravel()],
        "k": k,
        "batch_size": batch_size,
        "max_length": max_length,
    }
    models = {} if alm_prime is None else {"alm_prime": alm_prime}
    members = [family.alm, family.elm] if hasattr(family, "alm") else None
    return memoized_scores("qa-scores", parts, QA_CODE, compute, family=family, models=models, members=members)


#: The code whose edits invalidate :func:`score_qa`'s cached scores.
QA_CODE = (
    "apd.evaluation.qa_scoring",
    "apd.evaluation.qa_metrics",
    "apd.evaluation.qa_data",
    "apd.core.contrastive",
) + SCORING_CODE


def _score_qa(family, examples, alm_prime, reference, inv_T, k, batch_size, max_length, progress) -> QAScores:
    if not examples:
        raise ValueError(
            "no examples to score; load some with apd.evaluation.qa_data.load_dataset (or world_examples)."
        )
    kinds = {"mc" if ex.options is not None else "free" for ex in examples}
    if len(kinds) != 1:
        raise ValueError("mix of multiple-choice and free-answer examples; score each dataset on its own.")
    kind = kinds.pop()
    inv = np.asarray(inv_T, dtype=np.float64)
    if inv.ndim != 1 or inv.size == 0 or (inv < 0).any() or not np.isfinite(inv).all():
        raise ValueError(f"inv_T must be a non-empty 1-D list of finite values >= 0, got {inv_T!r}.")
    if reference is not None and reference.tokenizer.get_vocab() != family.tokenizer.get_vocab():
        raise ValueError("the reference model's tokenizer differs from the family's; its ranks cannot be compared.")

    # unique (prompt, continuation) pairs: options and SQuAD answers repeat
    pair_of: dict = {}

    def pair(prompt, cont):
        return pair_of.setdefault((prompt, cont), len(pair_of))

    if kind == "mc":
        n_opt = max(len(ex.options) for ex in examples)
        opt_pair = np.full((len(examples), n_opt), -1, dtype=np.int64)
        for q, ex in enumerate(examples):
            if ex.gold_index is None or not 0 <= ex.gold_index < len(ex.options):
                raise ValueError(f"example {ex.id} has options but no valid gold_index.")
            for o, opt in enumerate(ex.options):
                opt_pair[q, o] = pair(ex.prompt, opt)
        gold_pair = opt_pair[np.arange(len(examples)), [ex.gold_index for ex in examples]]
    else:
        gold_pair = np.array([pair(ex.prompt, ex.answer) for ex in examples], dtype=np.int64)
    pairs = list(pair_of)
    tok = family.tokenizer
    enc = encode_pairs(tok, [p for p, _ in pairs], [c for _, c in pairs], max_length)
    V, pad = family.vocab_size, _pad_id(tok)
    bar = lambda name: name if progress else None  # noqa: E731

    with family.on_device(family.elm) as model:
        elm = expert_topk(model, enc, V, k, batch_size, pad, bar(f"ELM {family.elm}"))
    with family.on_device(family.alm) as model:
        alm = amateur_at(model, enc, elm.ids, V, batch_size, pad, bar(f"ALM {family.alm}"))
    apd_lp = amateur_at(alm_prime, enc, elm.ids, V, batch_size, pad, bar("ALM'")) if alm_prime is not None else None
    ref = None
    if reference is not None:
        with reference.on_device(reference.elm) as model:
            ref = expert_topk(model, enc, V, k, batch_size, pad, bar(f"LLM {reference.elm}"))

    token_scores = {"elm": method_token_scores(elm, None, [0.0]), "cd": method_token_scores(elm, alm, inv)}
    if apd_lp is not None:
        token_scores["apd"] = method_token_scores(elm, apd_lp, inv)
    if ref is not None:
        token_scores["ref"] = method_token_scores(ref, None, [0.0])
    pair_ppl = {m: answer_ppl_matrix(lp, enc.offsets) for m, (lp, _) in token_scores.items()}
    pair_rr = {m: answer_rr_matrix(rk, enc.offsets) for m, (_, rk) in token_scores.items()}
    pair_kept = answers_in_topk(elm.gold_rank, enc.offsets, None if ref is None else ref.gold_rank, k)

    out = QAScores(
        dataset=examples[0].dataset,
        kind=kind,
        ids=[ex.id for ex in examples],
        groups=np.array([question_group(ex) for ex in examples]),
        inv_T=inv,
        methods=list(token_scores),
        gold_ppl={m: v[:, gold_pair] for m, v in pair_ppl.items()},
        gold_rr={m: v[:, gold_pair] for m, v in pair_rr.items()},
        kept=pair_kept[gold_pair],
        has_reference=ref is not None,
        k=k,
        meta=[dict(ex.meta) if isinstance(ex.meta, dict) else {} for ex in examples],
    )
    if kind == "mc":
        valid = opt_pair >= 0
        out.gold_index = np.array([ex.gold_index for ex in examples], dtype=np.int64)
        out.option_kept = valid & pair_kept[np.where(valid, opt_pair, 0)]
        out.kept_mc = qa_metrics.keep_multiple_choice(out.option_kept, out.gold_index)
        out.option_ppl, out.correct = {}, {}
        for m, v in pair_ppl.items():
            ppl = np.where(out.option_kept[None], v[:, np.where(valid, opt_pair, 0)], np.nan)
            out.option_ppl[m] = ppl
            correct = np.full((ppl.shape[0], len(examples)), np.nan)
            if out.kept_mc.any():
                for t in range(ppl.shape[0]):
                    correct[t, out.kept_mc] = qa_metrics.accuracy_lowest_ppl(
                        ppl[t][out.kept_mc], out.gold_index[out.kept_mc], return_per_question=True
                    )
            out.correct[m] = correct
    return out


# ----------------------------------------------------------------------------------------------
# Choosing 1/T


class NothingToChoose(ValueError):
    """No counted item to choose 1/T on (every answer was filtered out, or a half is empty)."""


def best_index(
    values: np.ndarray, higher_is_better: bool, on: np.ndarray | None = None, cluster: np.ndarray | None = None
) -> int:
    """Index of the best row of ``values`` ``(n_T, n_items)`` by its mean over the items ``on``
    (bool ``(n_items,)``, default all); with ``cluster`` (a label per item, e.g. its person), by the
    mean over clusters of each cluster's mean, the estimand the chapter reports. Ties go to the
    first row (the grid's order).

    Example (person "a" has three questions, "b" one):
        >>> v = np.array([[1.0, 1.0, 1.0, 4.0], [2.0, 2.0, 2.0, 2.0]])
        >>> best_index(v, higher_is_better=False), best_index(v, False, cluster=np.array(list("aaab")))
        (0, 1)
    """
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    on = np.ones(values.shape[1], dtype=bool) if on is None else np.asarray(on, dtype=bool)
    if on.shape != (values.shape[1],):
        raise ValueError(f"on has shape {on.shape}, expected ({values.shape[1]},).")
    if not on.any():
        raise NothingToChoose("no items to choose 1/T on (all filtered out?); use more examples.")
    if cluster is not None:
        cluster = np.asarray(cluster)
        if cluster.shape != (values.shape[1],):
            raise ValueError(f"cluster has shape {cluster.shape}, expected ({values.shape[1]},): one label per item.")
        means = np.array([cluster_mean(row[on], cluster[on])[0] for row in values])
    else:
        means = values[:, on].mean(axis=1)
    if np.isnan(means).any():
        raise ValueError("NaN among the values used to choose 1/T; pass only counted items.")
    return best_knob(range(len(means)), means, lowest=not higher_is_better)


@dataclass
class Picked:
    """One method's per-question values at its chosen 1/T.

    values: ``(n_items,)``, NaN for items that do not count (filtered or outside the report set).
    inv_T: the chosen 1/T; two values for two-fold cross-fitting (chosen on half 0, on half 1).
    """

    values: np.ndarray
    inv_T: tuple


def half_split(groups: Sequence, seed: int = 0) -> np.ndarray:
    """Two halves by question: ``(n_items,)`` ints 0/1, examples of one question on the same side,
    questions assigned by a ``seed``-ed permutation of the sorted distinct keys (deterministic)."""
    keys = np.asarray(groups)
    uniq = np.unique(keys)
    perm = np.random.default_rng(seed).permutation(len(uniq))
    half = np.zeros(len(uniq), dtype=np.int64)
    half[perm[len(uniq) // 2 :]] = 1
    return half[np.searchsorted(uniq, keys)]


def pick(
    values: np.ndarray,
    grid: Sequence[float],
    higher_is_better: bool,
    counted: np.ndarray,
    protocol: str = "paper",
    report: np.ndarray | None = None,
    select: np.ndarray | None = None,
    folds: np.ndarray | None = None,
    cluster: np.ndarray | None = None,
) -> Picked:
    """Per-question values ``(n_T, n_items)`` at the best 1/T of ``grid`` under a protocol.

    counted: items that count for this metric (the filter). report: items reported (default all).
    cluster: a label per item; 1/T is then chosen on the mean over clusters (:func:`best_index`).
    protocol "paper": 1/T chosen on the reported items themselves.
    protocol "held-out": chosen on ``select`` (other items, e.g. the dev half) if given; else
        two-fold cross-fitting over ``folds`` (0/1 per item, :func:`half_split`): each half is
        reported at the 1/T chosen on the other.
    """
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    grid = np.asarray(grid, dtype=np.float64)
    if values.shape[0] != grid.size:
        raise ValueError(f"values has {values.shape[0]} rows but the grid {grid.size} values of 1/T.")
    n = values.shape[1]
    counted = np.asarray(counted, dtype=bool)
    report = np.ones(n, dtype=bool) if report is None else np.asarray(report, dtype=bool)
    target = counted & report
    out = np.full(n, np.nan)
    if protocol == "paper":
        i = best_index(values, higher_is_better, target, cluster)
        out[target] = values[i, target]
        return Picked(out, (float(grid[i]),))
    if protocol != "held-out":
        raise ValueError(f"unknown protocol {protocol!r}; use one of {PROTOCOLS}.")
    if select is not None:
        select = np.asarray(select, dtype=bool)
        if (select & report).any():
            raise ValueError("select and report overlap; the held-out protocol needs disjoint items.")
        i = best_index(values, higher_is_better, counted & select, cluster)
        out[target] = values[i, target]
        return Picked(out, (float(grid[i]),))
    if folds is None:
        raise ValueError("the held-out protocol needs select= (items to choose on) or folds= (two halves).")
    folds = np.asarray(folds)
    chosen = []
    for f in (0, 1):
        i = best_index(values, higher_is_better, target & (folds == f), cluster)
        apply = target & (folds != f)
        out[apply] = values[i, apply]
        chosen.append(float(grid[i]))
    return Picked(out, tuple(chosen))


def picked_values(
    scores: QAScores,
    metric: str,
    protocol: str = "paper",
    report=None,
    select=None,
    folds=None,
    seed: int = 0,
    cluster=None,
) -> dict:
    """``{method: Picked}`` for one metric (see :func:`pick`); held-out without ``select`` cuts
    the report set into halves with :func:`half_split` (``seed``) unless ``folds`` is given.
    ``cluster``: a label per item, to choose 1/T on the mean over clusters."""
    vals, counted = scores.values(metric)
    if protocol == "held-out" and select is None and folds is None:
        folds = half_split(scores.groups, seed)
    return {
        m: pick(vals[m], scores.grid(m), METRICS[metric], counted, protocol, report, select, folds, cluster)
        for m in scores.methods
    }


def _fmt_T(inv_T: tuple, method: str) -> str:
    if method in ("elm", "ref"):
        return "-"
    return " / ".join(f"{t:g}" for t in inv_T)


def p_t(d: float, se: float, n_groups: int) -> float:
    """Two-sided p of ``d / se`` under Student's t with ``n_groups - 1`` degrees of freedom (the
    test over clusters whose :func:`apd.core.stats.critical` gives the intervals): 1 when ``d`` and
    ``se`` are both 0, 0 when only ``se`` is, NaN with fewer than 2 groups or an undefined ``se``.

    Example:
        >>> round(p_t(2.262, 1.0, 10), 3), round(p_t(1.96, 1.0, 100000), 3), p_t(0.0, 0.0, 5)
        (0.05, 0.05, 1.0)
    """
    if n_groups < 2 or not (math.isfinite(d) and math.isfinite(se)) or se < 0:
        return math.nan
    if se == 0:
        return 1.0 if d == 0 else 0.0
    return float(2.0 * scipy.stats.t.sf(abs(d / se), int(n_groups) - 1))


def qa_summary(
    scores: QAScores,
    report=None,
    select=None,
    seed: int = 0,
    by: np.ndarray | None = None,
    cluster: np.ndarray | None = None,
) -> pd.DataFrame:
    """Long table: one row per (protocol, metric, method[, group]) with the mean per-question value
    (``value``), the number of questions counted (``n``) and the chosen 1/T (``inv_T``; "a / b"
    for the two halves of cross-fitting). ``by``: a label per item (e.g. the frequency bucket) to
    break every mean down by, plus ``"all"``; 1/T is still chosen once over all items.
    ``cluster`` (one label per item, e.g. the person a question is about): ``value`` is the mean
    over clusters of each cluster's mean (:func:`cluster_mean`, the estimand of
    :func:`significance` with ``cluster``), and ``n_clusters`` counts them; 1/T is chosen on the
    same estimand."""
    labels = ["all"] if by is None else ["all"] + list(dict.fromkeys(np.asarray(by).tolist()))
    groups = None if cluster is None else np.asarray(cluster)
    if groups is not None and groups.shape != (len(scores),):
        raise ValueError(f"cluster has {groups.size} labels for {len(scores)} questions; give one per question.")
    rows = []
    for protocol in PROTOCOLS:
        for metric in scores.metric_names:
            _, counted = scores.values(metric)
            try:
                picked = picked_values(scores, metric, protocol, report, select, seed=seed, cluster=groups)
            except NothingToChoose:  # nothing counted to choose on: report as undefined
                picked = None
            for label in labels:
                sel = np.ones(len(scores), dtype=bool) if label == "all" else (np.asarray(by) == label)
                for m in scores.methods:
                    v = None if picked is None else picked[m].values[sel]
                    ok = None if v is None else ~np.isnan(v)
                    row = {
                        "dataset": scores.dataset,
                        "protocol": protocol,
                        "metric": metric,
                        "method": m,
                        "group": label,
                        "inv_T": "n/a" if picked is None else _fmt_T(picked[m].inv_T, m),
                        "value": float(v[ok].mean()) if v is not None and ok.any() else math.nan,
                        "n": int(ok.sum()) if ok is not None else 0,
                    }
                    if groups is not None:
                        row["value"], row["n_clusters"] = (math.nan, 0) if v is None else cluster_mean(v, groups[sel])
                    rows.append(row)
    return pd.DataFrame(rows)


def significance(
    scores: QAScores,
    a: str = "apd",
    b: str = "cd",
    metric: str = "ppl",
    report=None,
    select=None,
    seed: int = 0,
    by: np.ndarray | None = None,
    cluster: np.ndarray | None = None,
) -> pd.DataFrame:
    """t-tests of method ``a`` against ``b`` on per-question values at their chosen 1/T, per protocol
    (and per group of ``by``). ``n`` counts the questions both methods score.

    Without ``cluster`` (questions independent): the paper's two-sample test from summary
    statistics with numpy's ``std`` (ddof=0, as the release;
    :func:`apd.evaluation.qa_metrics.ttest_per_question`, ``p_two_sample``) and, since both methods
    answer the same questions, a paired t-test (``p_paired``); ``diff`` = mean(a) - mean(b)
    over the questions (negative = a better on ppl), ``se_paired`` its standard error.

    With ``cluster`` (one label per question, e.g. the person it is about; questions of one person
    are not independent) every column is of one estimand, the person mean
    (:func:`apd.core.stats.paired_difference` with ``groups``): ``diff`` = the mean over clusters of
    each cluster's mean a - b, ``se_clustered`` its standard error over the ``n_clusters`` clusters,
    ``ci_low``/``ci_high`` its 95% Student-t interval (``n_clusters - 1`` degrees of freedom,
    :func:`apd.core.stats.critical`) and ``p_clustered`` the matching t-test (:func:`p_t`).
    NaN where fewer than 2 questions (clusters) count."""
    labels = ["all"] if by is None else ["all"] + list(dict.fromkeys(np.asarray(by).tolist()))
    groups = None if cluster is None else np.asarray(cluster)
    if groups is not None and groups.shape != (len(scores),):
        raise ValueError(f"cluster has {groups.size} labels for {len(scores)} questions; give one per question.")
    rows = []
    for protocol in PROTOCOLS:
        try:
            picked = picked_values(scores, metric, protocol, report, select, seed=seed, cluster=groups)
        except NothingToChoose:
            picked = None
        for label in labels:
            row = {
                "dataset": scores.dataset,
                "protocol": protocol,
                "metric": metric,
                "a": a,
                "b": b,
                "group": label,
                "n": 0,
                "diff": math.nan,
            }
            if groups is None:
                row.update({"se_paired": math.nan, "p_two_sample": math.nan, "p_paired": math.nan})
            else:
                row.update(
                    n_clusters=0, se_clustered=math.nan, ci_low=math.nan, ci_high=math.nan, p_clustered=math.nan
                )
            if picked is not None and a in picked and b in picked:
                sel = np.ones(len(scores), dtype=bool) if label == "all" else (np.asarray(by) == label)
                va, vb = picked[a].values[sel], picked[b].values[sel]
                ok = ~np.isnan(va) & ~np.isnan(vb)
                row["n"] = int(ok.sum())
                if groups is not None:
                    row.update(_clustered(va[ok], vb[ok], groups[sel][ok]))
                    rows.append(row)
                    continue
                if ok.any():
                    row["diff"] = float(va[ok].mean() - vb[ok].mean())
                if ok.sum() >= 2:
                    row["p_two_sample"] = float(qa_metrics.ttest_per_question(va[ok], vb[ok], ddof=0).pvalue)
                    d = va[ok] - vb[ok]
                    row["se_paired"] = mean_se(d)[1]
                    row["p_paired"] = 1.0 if np.all(d == 0) else float(scipy.stats.ttest_rel(va[ok], vb[ok]).pvalue)
            rows.append(row)
    return pd.DataFrame(rows)


def _clustered(va: np.ndarray, vb: np.ndarray, groups: np.ndarray) -> dict:
    """The person-mean columns of :func:`significance` for paired values ``va``, ``vb`` (no NaN)."""
    if not len(va):
        return {}
    pc = paired_difference(va, vb, groups=groups)
    out = {"diff": pc.mean, "n_clusters": pc.n_groups}
    if pc.n_groups >= 2:
        lo, hi = interval(pc.mean, pc.se, critical(pc.n_groups))
        out.update(se_clustered=pc.se, ci_low=lo, ci_high=hi, p_clustered=p_t(pc.mean, pc.se, pc.n_groups))
    return out


def gap_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The paper's gap-closure rows from a :func:`summary` table with a reference ("ref") method:
    ``APD vs CD`` = (APD - CD) / (LLM - ELM) and ``APD vs LLM`` = (APD - ELM) / (LLM - ELM), as
    fractions (the paper prints x100), NaN where the reference LLM is not better than the ELM (the
    paper's "NA"). Empty when the table has no reference or no APD."""
    rows = []
    keys = ["dataset", "protocol", "metric", "group"]
    for key, g in table.groupby(keys, sort=False):
        v = dict(zip(g["method"], g["value"]))
        if not {"elm", "cd", "apd", "ref"} <= set(v):
            continue
        hib = METRICS[key[2]]
        base = dict(zip(keys, key))
        rows.append(
            {
                **base,
                "row": "APD vs CD",
                "value": qa_metrics.gap_closure(v["apd"], v["cd"], v["ref"], v["elm"], higher_is_better=hib),
            }
        )
        rows.append(
            {
                **base,
                "row": "APD vs LLM",
                "value": qa_metrics.gap_closure(v["apd"], v["elm"], v["ref"], v["elm"], higher_is_better=hib),
            }
        )
    return pd.DataFrame(rows, columns=keys + ["row", "value"])


def chance_accuracy(scores: QAScores) -> float:
    """Expected accuracy of a uniform guess among the options that pass the filter, averaged over
    the questions counted for accuracy (NaN when none is)."""
    if scores.kind != "mc" or not scores.kept_mc.any():
        return math.nan
    return float(np.mean(1.0 / scores.option_kept[scores.kept_mc].sum(axis=1)))


#: row labels of :func:`table_layout`, in the paper's order
LAYOUT_ROWS = {
    "elm": "LLM (ELM)",
    "cd": "CD",
    "apd": "APD",
    "ref": "LLM (bigger)",
    "APD vs CD": "APD vs CD",
    "APD vs LLM": "APD vs LLM (ELM)",
}


def table_layout(
    table: pd.DataFrame, gaps: pd.DataFrame | None = None, protocol: str = "paper", group: str = "all"
) -> pd.DataFrame:
    """The paper's Table 2 layout from concatenated :func:`summary` tables (and :func:`gap_rows`):
    one row per method (then the gap rows), one column per (dataset, metric), for one protocol."""
    t = table[(table["protocol"] == protocol) & (table["group"] == group)]
    datasets = list(dict.fromkeys(t["dataset"]))
    present = set(zip(t["dataset"], t["metric"]))
    columns = [(d, m) for d in datasets for m in METRICS if (d, m) in present]
    wide = t.pivot_table(index="method", columns=["dataset", "metric"], values="value", sort=False, dropna=False)
    if gaps is not None and len(gaps):
        g = gaps[(gaps["protocol"] == protocol) & (gaps["group"] == group)]
        if len(g):
            wide = pd.concat(
                [
                    wide,
                    g.pivot_table(
                        index="row", columns=["dataset", "metric"], values="value", sort=False, dropna=False
                    ),
                ]
            )
    order = [r for r in LAYOUT_ROWS if r in wide.index]
    wide = wide.reindex(columns=pd.MultiIndex.from_tuples(columns, names=["dataset", "metric"])).loc[order]
    wide.index = [LAYOUT_ROWS[r] for r in order]
    return wide
