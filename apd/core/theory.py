"""Contrastive decoding as linear extrapolation in log model size (Theorem 1 of the paper).

Units: *logits* are unnormalised scores (any additive offset per context cancels in a softmax);
*log sizes* are natural logs of non-embedding parameter counts, the x-axis of every curve in the
book. Every function accepts numpy arrays or torch tensors of any leading shape (they broadcast),
and returns the same kind it was given.

Theorem 1: if the logits of a family are linear in log size and T > 1, then
``L_CD = L_ELM - L_ALM / T = (1 - 1/T) * L_HLM`` where HLM sits at
``ln s_HLM = (T ln s_ELM - ln s_ALM) / (T - 1)``. The identity is algebraic and also holds for
0 < T < 1, where ln s_HLM falls *below* ln s_ALM and the factor (1 - 1/T) is negative; at T = 1
the HLM is infinitely far away and CD keeps only the slope. See ``notebooks/theorem1.ipynb``.
"""

from __future__ import annotations

import math
from typing import Union

import numpy as np

try:  # torch is a dependency, but the theory does not need it
    import torch
except ImportError:  # pragma: no cover
    torch = None

from apd.base.checks import numbers_of
from apd.core.contrastive import Reciprocal, check_temperature, contrastive_scores  # noqa: F401 (re-exported)

ArrayLike = Union[np.ndarray, "torch.Tensor", float]


def _is_tensor(x) -> bool:
    return torch is not None and isinstance(x, torch.Tensor)


def _as_array(x, name: str):
    """Tensors stay tensors; everything else becomes a numpy float array (a TypeError naming ``name``
    for strings and other non-numbers)."""
    if _is_tensor(x):
        return x
    if isinstance(x, np.ndarray) and x.dtype.kind in "iuf":
        return x
    return numbers_of(name, x)


def _values(x, name: str) -> np.ndarray:
    """A numpy copy of x for checks (never used for the result)."""
    return numbers_of(name, x)


def _scalar(name: str, x) -> float:
    """One number (a float, a 0-d or one-element array or tensor) as a float, or an error naming ``name``."""
    v = numbers_of(name, x)
    if v.size != 1:
        raise ValueError(f"{name} must be one number here, got shape {v.shape}; use hlm_log_size for arrays.")
    return float(v.reshape(()))


def check_sizes(log_s_elm, log_s_alm) -> None:
    """Raise ValueError unless the expert is strictly larger than the amateur (log sizes)."""
    e, a = np.broadcast_arrays(_values(log_s_elm, "log_s_elm"), _values(log_s_alm, "log_s_alm"))
    check_log_sizes(e, "log_s_elm")
    check_log_sizes(a, "log_s_alm")
    if (e <= a).any():
        i = int(np.argmax((e <= a).ravel()))
        raise ValueError(
            f"log_s_elm must be larger than log_s_alm, got log_s_elm={e.ravel()[i]:g} <= "
            f"log_s_alm={a.ravel()[i]:g}. Pass the expert (larger) model's log size first; sizes "
            "are natural logs of non-embedding parameter counts (e.g. 22.5864 for Pythia-6.9B, "
            "16.7555 for Pythia-70M)."
        )


#: The largest plausible natural log of a parameter count (e^40 is 2.4e17 parameters).
MAX_LOG_SIZE = 40.0


def check_log_sizes(log_sizes, what: str = "log sizes") -> None:
    """Raise ValueError if a log size is NaN or infinite, or above :data:`MAX_LOG_SIZE`: such values are raw
    parameter counts passed where their natural logs belong (e.g. 6.9e9 instead of ln(6.9e9) = 22.65)."""
    v = _values(log_sizes, what)
    if not np.isfinite(v).all():
        raise ValueError(
            f"{what} must be finite natural logs of non-embedding parameter counts, got "
            f"{v[~np.isfinite(v)].ravel()[0]}; pass e.g. math.log(70e6) = 18.06 for 70M parameters."
        )
    big = v[np.isfinite(v) & (v > MAX_LOG_SIZE)]
    if big.size:
        raise ValueError(
            f"{what} must be natural logs of parameter counts, but got {big.ravel()[0]:g} (> {MAX_LOG_SIZE:g}, "
            f"i.e. more than e^{MAX_LOG_SIZE:g} = 2.4e17 parameters): these look like raw counts; pass "
            f"math.log(n) (e.g. ln(6.9e9) = {math.log(6.9e9):.4f})."
        )


def _check_same_shape(a, b, what: str) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(
            f"{what} have different shapes {tuple(a.shape)} and {tuple(b.shape)}; both must score "
            "the same vocabulary for the same contexts (restrict both to the shared tokenizer's "
            "vocabulary first, e.g. logits[..., :len(tokenizer)])."
        )


def cd_logits(elm_logits, alm_logits, T) -> ArrayLike:
    """Contrastive-decoding logits ``L_ELM - L_ALM / T`` on raw logits (Theorem 1's quantity).

    elm_logits, alm_logits: logits (or log-probabilities) of the same shape ``(..., vocab)``.
    T: the amateur's temperature, > 0 (scalar, or broadcastable to the logits).
    Returns an array or tensor of the same shape and kind (:func:`apd.core.contrastive.contrastive_scores`
    without normalisation).

    Example:
        >>> cd_logits(np.array([[2.0, 1.0]]), np.array([[1.0, 2.0]]), 2.0)
        array([[1.5, 0. ]])
    """
    e, a = _as_array(elm_logits, "elm_logits"), _as_array(alm_logits, "alm_logits")
    _check_same_shape(e, a, "elm_logits and alm_logits")
    return contrastive_scores(e, a, Reciprocal(T), normalize=False)


def hlm_log_size(log_s_elm, log_s_alm, T) -> ArrayLike:
    """ln s_HLM = (T ln s_ELM - ln s_ALM) / (T - 1), the log size of CD's hypothetical LM.

    Arguments are natural logs of non-embedding parameter counts (scalars or arrays that
    broadcast); T > 0 and T != 1. For T > 1 the HLM is larger than the ELM; for 0 < T < 1 it is
    smaller than the ALM (CD then reverses that small model's preferences, since 1 - 1/T < 0). At
    T = inf (the amateur weighs nothing) it is the limit, ln s_ELM.

    Example (Pythia-6.9B as the ELM, Pythia-70M as the ALM, T = 2):
        >>> round(float(hlm_log_size(22.5864, 16.7555, 2.0)), 4)
        28.4173
        >>> float(hlm_log_size(22.5864, 16.7555, float("inf")))
        22.5864
    """
    check_temperature(T, allow_one=False)
    check_sizes(log_s_elm, log_s_alm)
    e, a = _as_array(log_s_elm, "log_s_elm"), _as_array(log_s_alm, "log_s_alm")
    at_inf = np.isinf(_values(T, "T"))
    if not at_inf.any():
        return (T * e - a) / (T - 1)
    # T = inf: (T e - a) / (T - 1) -> e; the formula gives inf / inf = NaN there
    if _is_tensor(T):
        T_finite = T.masked_fill(torch.as_tensor(at_inf, device=T.device), 2.0)
    else:
        T_finite = 2.0 if at_inf.ndim == 0 else np.where(at_inf, 2.0, numbers_of("T", T))
    out = (T_finite * e - a) / (T_finite - 1)
    if _is_tensor(out):
        e_like = torch.as_tensor(e, dtype=out.dtype, device=out.device)
        return torch.where(torch.as_tensor(at_inf, device=out.device), e_like, out)
    return np.where(at_inf, e, out)


def line_logit(log_s, log_s_alm, alm_logits, log_s_elm, elm_logits) -> ArrayLike:
    """Logit at log size ``log_s`` on the straight line through (ALM, ELM) in (log size, logit).

    ``alm_logits``/``elm_logits``: shape ``(..., vocab)``; log sizes: scalars or broadcastable to
    the logits (``log_s`` may carry extra leading axes if you add them yourself).
    """
    check_sizes(log_s_elm, log_s_alm)
    e, a = _as_array(elm_logits, "elm_logits"), _as_array(alm_logits, "alm_logits")
    _check_same_shape(e, a, "elm_logits and alm_logits")
    slope = (e - a) / (log_s_elm - log_s_alm)
    return e + slope * (log_s - log_s_elm)


def hlm_logits(elm_logits, alm_logits, log_s_elm, log_s_alm, T) -> ArrayLike:
    """Logits of the hypothetical LM of Theorem 1: the line through ALM and ELM at ln s_HLM.

    Example (CD's logits are (1 - 1/T) times these, when logits are linear in log size):
        >>> elm, alm = np.array([2.0, 1.0]), np.array([1.0, 2.0])
        >>> hlm_logits(elm, alm, 22.5864, 16.7555, 2.0)
        array([3., 0.])
        >>> cd_logits(elm, alm, 2.0) / (1 - 1 / 2.0)
        array([3., 0.])
    """
    x = hlm_log_size(log_s_elm, log_s_alm, T)
    return line_logit(x, log_s_alm, alm_logits, log_s_elm, elm_logits)


def hlm_size(log_s_elm: float, log_s_alm: float, T: float) -> float:
    """s_HLM = (s_ELM^T / s_ALM)^(1/(T-1)) as a parameter count (scalar inputs, floats).

    Example:
        >>> f"{hlm_size(22.5864, 16.7555, 2.0):.3g}"
        '2.2e+12'
    """
    T = _scalar("T", T)
    x = float(hlm_log_size(_scalar("log_s_elm", log_s_elm), _scalar("log_s_alm", log_s_alm), T))
    if x > math.log(np.finfo(np.float64).max):
        raise ValueError(
            f"s_HLM = e^{x:.4g} does not fit in a float: T = {float(T)!r} is so close to 1 that the HLM is "
            f"astronomically far away (at T = 1 it is infinitely far). Use hlm_log_size(...) for its log "
            f"size, or a T further from 1."
        )
    return math.exp(x)


def bent_logits(log_s, log_s_alm, alm_logits, log_s_elm, elm_logits, curvature) -> ArrayLike:
    """Logits that pass through the ALM and ELM points but bend: the straight line plus
    ``curvature * (x - ln s_ALM) * (x - ln s_ELM)`` (curvature in logit units per (ln size)^2).

    CD sees only the two endpoints, so it cannot tell this family from the straight one; the gap
    between CD and the bent family at ln s_HLM is :func:`bent_extrapolation_error`.
    """
    line = line_logit(log_s, log_s_alm, alm_logits, log_s_elm, elm_logits)
    return line + curvature * (log_s - log_s_alm) * (log_s - log_s_elm)


def bent_extrapolation_error(curvature, log_s_elm, log_s_alm, T) -> ArrayLike:
    """``L_CD - (1 - 1/T) L_bent(ln s_HLM)`` in closed form for :func:`bent_logits`:
    ``-(1 - 1/T) * curvature * (x_H - x_A) * (x_H - x_E)``, quadratic in the extrapolation
    distance (x = ln size; A, E, H = ALM, ELM, HLM)."""
    x_h = hlm_log_size(log_s_elm, log_s_alm, T)
    return -(1 - 1 / T) * curvature * (x_h - log_s_alm) * (x_h - log_s_elm)
