"""The contrastive score of CD and APD, in one place.

    score(w) = log_softmax(L_ELM)(w) - (1/T) log_softmax(L_amateur)(w)   for w kept on the ELM
    score(w) = -inf                                                        otherwise

The amateur is the ALM for CD and ALM' for APD (paper eq. 2 and 4; the release uses the same
order of operations). The knob is ``inv_T`` = 1/T, the paper's parameter; a caller that holds a
temperature T passes :class:`Reciprocal` ``(T)``, which divides by T. Inputs are ``(..., V)`` over
the same vocabulary. Tokens are kept by ``filters`` (top-p, top-k, alpha-masking, computed on the
ELM's log-probabilities) and by ``top_k`` with an explicit tie rule.

The arithmetic is written once, in torch. Torch in gives torch out, on the input's device and in its
float dtype. numpy in gives numpy out: :func:`contrastive_scores` turns numpy arrays into CPU tensors
(each in its own float dtype, integers in float64, so the dtypes promote as numpy's would), scores
them with the same code and hands the result back as a numpy array. (torch's exp and sums round
differently from numpy's and scipy's, so a log-softmax can differ from scipy's in the last bit.)
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np
import torch

from apd.base.checks import count, logits, numbers_of
from apd.core.filters import keep_mask

TIES = ("keep", "exact")
RENORMALIZE = (False, "log", "prob")


def check_temperature(T, *, allow_one: bool = True) -> None:
    """Raise ValueError unless every T > 0 (and, if ``allow_one`` is False, T != 1).

    Example:
        >>> check_temperature(2.0)
        >>> check_temperature(0.0)
        Traceback (most recent call last):
        ...
        ValueError: T must be > 0, got 0: T is the amateur's softmax temperature in L_ELM - L_ALM / T; use T > 1 for the extrapolation of Theorem 1 (the paper's best 1/T were 0.25-1).
    """
    t = numbers_of("T", T, "T is the amateur's temperature, e.g. 2.0")
    if t.size == 0:
        raise ValueError("T is empty; pass the amateur's temperature as a positive number such as 2.0.")
    if np.isnan(t).any():
        raise ValueError("T is NaN; pass the amateur's temperature as a positive number such as 2.0.")
    if (t <= 0).any():
        raise ValueError(
            f"T must be > 0, got {t.min():g}: T is the amateur's softmax temperature in "
            "L_ELM - L_ALM / T; use T > 1 for the extrapolation of Theorem 1 (the paper's best "
            "1/T were 0.25-1)."
        )
    if not allow_one and (t == 1).any():
        raise ValueError(
            "T == 1 puts the hypothetical LM at infinite size (ln s_HLM = (T ln s_ELM - ln s_ALM)"
            " / (T - 1) divides by zero); use T > 1, for example T = 2."
        )


@dataclass(frozen=True, eq=False)
class Reciprocal:
    """``inv_T`` = 1/T given as the temperature ``T`` itself: the score divides, ``amateur / T``.

    A float ``inv_T`` multiplies (``inv_T * amateur``), and ``x * (1/T)`` can differ from ``x / T`` in
    the last bit. Callers that hold a temperature (the processors, :func:`apd.core.theory.cd_logits`,
    blindness) pass ``Reciprocal(T)``, so they score exactly as they always did. ``T`` > 0 (``inf``: the
    ELM alone): a float, or an array or tensor broadcastable to the scores ``(..., V)``.

    Example:
        >>> import numpy as np
        >>> contrastive_scores(np.zeros((1, 2)), np.log([[0.5, 0.5]]), Reciprocal(3.0), normalize=False).round(4)
        array([[0.231, 0.231]])
    """

    T: object

    def __post_init__(self):
        check_temperature(self.T)


def contrastive_scores(
    elm,
    amateur,
    inv_T,
    *,
    filters: Iterable = (),
    top_k: Optional[int] = None,
    ties: str = "keep",
    ids=None,
    normalize: bool = True,
    renormalize=False,
    vocab_size: Optional[int] = None,
    check_finite: bool = False,
):
    """CD/APD scores ``log_softmax(elm) - inv_T * log_softmax(amateur)`` with tokens outside the kept set at -inf.

    Args:
        elm, amateur: ``(..., V)`` logits of the expert and the amateur (ALM for CD, ALM' for APD),
            numpy arrays or torch tensors of real numbers (both of one kind). Torch half precision
            and integers are scored in float32, the amateur in the expert's dtype; numpy arrays are
            scored as CPU tensors, each in its own float dtype, integers in float64. bool and complex
            are refused (TypeError naming the argument). NaN and +inf are always refused (ValueError
            naming the argument, whatever ``check_finite``). -inf in the ELM rules a token out: it scores -inf whatever
            the amateur says. -inf in the amateur is a probability of 0: on a token the ELM keeps,
            with 1/T > 0, the score log p_ELM - (1/T) log p_amateur is +inf (see ``check_finite``).
        inv_T: 1/T >= 0 with T the amateur's temperature (0: the ELM alone): a float, a 1-D grid
            that adds a leading axis ``(G, ..., V)``, or :class:`Reciprocal` ``(T)`` to divide by T
            (``T = inf``: the ELM alone, as 1/T = 0, even where the amateur is -inf).
        filters: keep masks computed on the ELM's log-probabilities (``TopP``, ``TopK``, ``AlphaMask``),
            for numpy inputs too.
        top_k, ties: also keep only the ELM's top ``top_k``; ``ties="keep"`` keeps every token tied
            with the k-th (the release's QA rule), ``"exact"`` exactly k.
        ids: ``(..., k)`` candidate token ids in [0, V): score those only; the result is ``(..., k)``.
        normalize: apply log-softmax to both inputs first (False when they are log-probabilities
            already, or for Theorem 1's raw-logit identity).
        renormalize: ``False`` (raw scores), ``"log"`` (log-softmax over the kept tokens, i.e.
            log-probabilities) or ``"prob"`` (softmax: probabilities). A row whose scores hold +inf
            (the amateur at -inf on a kept token) has no distribution (the limit depends on how fast
            p_amateur goes to 0), and a row of -inf only has none either: both raise a ValueError.
        vocab_size: score the first ``vocab_size`` ids only (padded embedding rows dropped): an int
            in [1, the smaller of the two inputs' V].
        check_finite: raise a ValueError for raw scores too when a kept token scores +inf (the
            amateur at -inf there, with 1/T > 0), naming the amateur and the index; off, raw scores
            keep that +inf, the exact value (greedy decoding picks such a token). Renormalised scores
            raise either way; a weightless amateur (1/T = 0, T = inf) may be -inf anywhere.

    Returns:
        Scores of the input's kind (a numpy array for numpy inputs) and float dtype, shape ``(..., V)``
        (``(..., k)`` with ``ids``; ``(G, ...)`` with a grid of 1/T, float64 for numpy inputs).

    Example:
        >>> import numpy as np
        >>> elm = np.log([[0.6, 0.3, 0.1]]); alm = np.log([[0.7, 0.1, 0.2]])
        >>> contrastive_scores(elm, alm, 1.0, top_k=2).round(3)
        array([[-0.154,  1.099,   -inf]])
        >>> contrastive_scores(elm, alm, 0.5, top_k=2, renormalize="prob").round(3)
        array([[0.431, 0.569, 0.   ]])
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}.")
    if renormalize not in RENORMALIZE:
        raise ValueError(f"renormalize must be one of {RENORMALIZE}, got {renormalize!r}.")
    elm, amateur, from_numpy = _tensors(elm, amateur)
    elm, amateur = _matched(elm, amateur, vocab_size)
    inv = inv_T if isinstance(inv_T, Reciprocal) else _inv_T(inv_T, elm, torch.float64 if from_numpy else elm.dtype)
    if normalize:  # a row of -inf only gives NaN, resolved in _outside_kept
        elm, amateur = torch.log_softmax(elm, dim=-1), torch.log_softmax(amateur, dim=-1)
    if ids is not None:
        elm, amateur = _at_ids(elm, amateur, ids)
    keep = _kept(elm, top_k, ties, filters)
    if keep is not None:  # outside the kept set the amateur is irrelevant (and may be -inf)
        amateur = torch.where(keep, amateur, 0.0)
    scores = _outside_kept(elm - _amateur_part(inv, amateur), elm, keep)
    if renormalize or check_finite:
        _refuse_plus_inf(scores, grid=isinstance(inv, torch.Tensor), at_ids=ids is not None)
    if renormalize and not bool((scores > -math.inf).any(-1).all()):
        raise ValueError(
            "every token of some row scores -inf (the ELM rules out every token kept there: its logits are "
            "all -inf, e.g. a fully masked row, or -inf at every id of ids=), so there is no distribution to "
            "renormalise; drop such rows or use renormalize=False (they then score -inf)."
        )
    if renormalize:
        scores = (torch.log_softmax if renormalize == "log" else torch.softmax)(scores, dim=-1)
    return scores.numpy() if from_numpy else scores


def _array(name: str, x) -> None:
    if not isinstance(x, (torch.Tensor, np.ndarray, np.generic)):
        raise TypeError(
            f"{name} must be a numpy array or a torch tensor of logits (..., V), got {type(x).__name__}; "
            f"pass np.asarray({name}) or torch.as_tensor({name})."
        )


def _tensors(elm, amateur):
    """The expert and the amateur as float tensors, and whether they came as numpy arrays (a copy on the
    CPU, each in its own float dtype, integers in float64: numpy's promotion); bool and complex refused."""
    _array("elm", elm)
    _array("amateur", amateur)
    from_numpy = not isinstance(elm, torch.Tensor)
    if from_numpy == isinstance(amateur, torch.Tensor):
        raise TypeError("elm and amateur must both be torch tensors or both numpy arrays.")
    names = ("elm (the expert's logits)", "amateur (the amateur's logits)")
    for name, x in zip(names, (elm, amateur)):  # bool and complex refused before any conversion
        if not (x.dtype.kind == "f" if from_numpy else x.is_floating_point()):
            logits(name, x, "bool and complex values are not logits (integers are scored as floats)")
    if from_numpy:
        elm, amateur = (
            torch.from_numpy(np.array(x, x.dtype if x.dtype.kind == "f" else np.float64)) for x in (elm, amateur)
        )
        return elm, amateur, True
    if elm.dtype in (torch.float16, torch.bfloat16) or not elm.is_floating_point():
        elm = elm.float()  # half precision and integer logits are scored in float32
    return elm, amateur.to(dtype=elm.dtype, device=elm.device), False


def _matched(elm, amateur, vocab_size):
    """The expert and the amateur sliced to ``vocab_size``, of one shape, without NaN or +inf."""
    if vocab_size is not None:
        if elm.ndim == 0 or amateur.ndim == 0:
            raise ValueError("vocab_size needs logits of shape (..., V) with a vocabulary axis, got a scalar.")
        widest = min(elm.shape[-1], amateur.shape[-1])
        vocab_size = count(
            "vocab_size",
            vocab_size,
            1,
            f"pass the tokenizer's vocabulary size (at most the logits' {widest} ids), or None for all of them",
            maximum=widest,
        )
        elm, amateur = elm[..., :vocab_size], amateur[..., :vocab_size]
    if elm.shape != amateur.shape:
        raise ValueError(
            f"elm {tuple(elm.shape)} and amateur {tuple(amateur.shape)} differ in shape; both must score "
            "the same positions over the same vocabulary (slice both to the tokenizer's vocabulary, e.g. "
            "x[..., :len(tokenizer)], since Pythia members pad their embeddings differently)."
        )
    hint = "check the model's forward pass (half-precision overflow: run it in float32) and its inputs"
    logits("elm (the expert's logits)", elm, hint)
    logits("amateur (the amateur's logits)", amateur, hint)
    return elm, amateur


def _inv_T(inv_T, like, dtype):
    """1/T as a float, or a 1-D grid as a tensor ``(G, 1, ..., 1)`` of ``dtype`` that adds a leading axis."""
    values = numbers_of("inv_T", inv_T, "inv_T is 1/T, e.g. 0.5, or Reciprocal(T)")
    if values.ndim > 1 or values.size == 0:
        raise ValueError(f"inv_T must be a float or a 1-D sequence of floats, got shape {values.shape}.")
    if not np.isfinite(values).all() or (values < 0).any():
        raise ValueError(f"inv_T (= 1/T) must be finite and >= 0, got {values.tolist()}; use 0 for the plain ELM.")
    if values.ndim == 0:
        return float(values)
    return torch.as_tensor(values, dtype=dtype, device=like.device).reshape((-1,) + (1,) * like.ndim)


def _at_ids(elm, amateur, ids):
    """Both inputs at the candidate ids only, ``(..., k)``; ids must be integers in [0, V)."""
    V = elm.shape[-1] if elm.ndim else 0
    if not isinstance(ids, torch.Tensor):  # numpy ids (of any integer dtype) as int64
        ids = np.asarray(ids)
        ids = torch.from_numpy(ids.astype(np.int64 if ids.dtype.kind in "iu" else ids.dtype))
    ids = ids.to(elm.device)
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(
            f"ids must be integer token ids, got dtype {ids.dtype}; pass ids.astype(int) (numpy) or ids.long()."
        )
    if ids.ndim != elm.ndim:
        raise ValueError(
            f"ids {tuple(ids.shape)} must have as many axes as the logits {tuple(elm.shape)}: (..., k) candidate "
            "ids per position, e.g. ids[None] for one row."
        )
    if ids.numel():
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= V:
            raise ValueError(
                f"ids must lie in [0, {V}) (the logits' {V} ids; a negative id does not count from the end), "
                f"got ids from {low} to {high}."
            )
    ids = ids.long()  # gather takes int64 only
    return elm.gather(-1, ids), amateur.gather(-1, ids)


def _top_k_keep(elm_lp, k, ties: str):
    """Boolean keep mask ``(..., V)`` of the top ``k`` of ``elm_lp``: ``ties="keep"`` keeps every token
    tied with the k-th value (a row may keep more than k, as in the release's QA scoring); ``"exact"``
    keeps exactly k (``torch.topk``'s choice among ties)."""
    if elm_lp.ndim == 0:
        raise ValueError("top_k needs logits of shape (..., V) with a vocabulary axis, got a scalar.")
    V = elm_lp.shape[-1]
    k = count("top_k", k, 1, f"keep between 1 and all {V} tokens (the paper uses 20)", maximum=V)
    top = elm_lp.topk(k, dim=-1)
    if ties == "keep":
        return elm_lp >= top.values[..., -1:]
    return torch.zeros_like(elm_lp, dtype=torch.bool).scatter(-1, top.indices, True)


def _kept(elm, top_k, ties, filters):
    """The tokens the ELM keeps (its top k and the filters' masks, all of them), or None for all."""
    keep = None if top_k is None else _top_k_keep(elm, top_k, ties)
    filters = list(filters or ())
    if filters:
        fk = keep_mask(elm, filters)
        keep = fk if keep is None else keep & fk
    return keep


def _amateur_part(inv, amateur):
    """(1/T) log p_amateur, the part of the score the amateur brings: ``amateur / T`` for a
    :class:`Reciprocal`, ``inv * amateur`` for a float or a grid; 0 where the amateur has no weight
    (T = inf, 1/T = 0), even where it is -inf or +inf (0 * -inf is 0 there, not NaN)."""
    if isinstance(inv, float):
        return 0.0 if inv == 0.0 else inv * amateur
    if isinstance(inv, Reciprocal):
        T = inv.T
        if not isinstance(T, (numbers.Real, torch.Tensor)):  # a numpy array or a sequence of temperatures
            T = torch.from_numpy(np.array(T)).to(amateur.device)
        part, no_weight = amateur / T, torch.isinf(torch.as_tensor(T))
    else:
        part, no_weight = inv * amateur, inv == 0
    return torch.where(no_weight & ~torch.isfinite(amateur), 0.0, part) if bool(no_weight.any()) else part


def _outside_kept(scores, elm, keep):
    """-inf outside the kept set and wherever the ELM rules a token out; a ValueError for a NaN left."""
    # A token the ELM rules out (-inf; every token of an all -inf row, whose log-softmax is NaN) scores
    # -inf whatever the amateur says: -inf - (-inf) would otherwise be NaN.
    alive = elm > -math.inf
    scores = torch.where(alive if keep is None else keep & alive, scores, -math.inf)
    if bool(torch.isnan(scores).any()):
        raise ValueError(
            "the amateur has no finite log-probability in some row (all its logits -inf or NaN) "
            "where the ELM keeps tokens, so the contrastive score is undefined there; check the "
            "amateur's inputs (attention mask, vocabulary slice)."
        )
    return scores


def _refuse_plus_inf(scores, grid: bool, at_ids: bool) -> None:
    """A ValueError naming the amateur and the first index where a kept token scores +inf."""
    plus = scores == math.inf
    if not bool(plus.any()):
        return
    index = tuple(int(i) for i in plus.nonzero()[0])
    index = index[1:] if grid else index  # drop the 1/T grid's axis: an index into the amateur's logits
    raise ValueError(
        f"amateur (the amateur's logits) is -inf (a probability of 0) at a token the ELM keeps, index {index} of "
        f"{'ids' if at_ids else 'its logits'} ({int(plus.sum())} such scores): the score log p_ELM - (1/T) log "
        "p_amateur is +inf there, so renormalised scores have no distribution (and check_finite=True refuses raw "
        "ones); give the amateur a finite logit there, rule the token out on the ELM (-inf or a filter), or take "
        "the raw +inf with renormalize=False."
    )
