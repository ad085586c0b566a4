"""Entropy across sizes: REAL sampling's entropy curve, its loss, and its top-p threshold.

Units. Entropies are in nats (natural log, full vocabulary). ``x`` is the natural log of a
member's non-embedding parameter count, as everywhere in apd.

The entropy curve is one of the decays of :mod:`apd.core.curves` (one formula, one place):
``poly10`` is REAL's fractional polynomial with K = 10 (the release's "a10"),

    H(x) = c + b * (a_0.5 / z^0.5 + sum_{k=1..10} a_k / z^k),   z = max(1, f * (x' - g)),

with params (b, f, g, a_0.5, a_1 .. a_10) in :func:`apd.core.curves.polynomial_decay`'s order
(there named a, b, d, e_k), and ``exponential`` is c + b * exp(-max(0, f (x' - g))). c is the
asymptotic entropy. ``x'`` is the conditioned x (:func:`condition_x`): the release feeds the raw
log size (``"release"``); the default (``"normalised"``) maps the family's x range to [1, 1 +
NORMALISED_SPAN], ALM at 1, ELM at 1 + NORMALISED_SPAN, so the same head starts with a curve that
decays across the members whatever the family's sizes (the release's parameters start near 1 and
suit Pythia's x of 16.8 to 23.1, not pico's 8 to 14).

The loss (the release's): square root of a weighted MSE between predicted and true entropies over
the members plus a direct prediction of the largest member's entropy; member weights grow by
1 / 0.8 per step toward the largest member, the direct prediction weighs as the largest member, and
the weights are normalised to mean 1 (:func:`loss_weights`).

The threshold (REAL's "exp_1_win"), top-p = min(1, exp((c - H_last) / T_r)) with H_last the curve
at the largest member, is :func:`apd.core.filters.real_top_p`.
"""

from __future__ import annotations

from typing import Sequence

import torch

from apd.base import checks
from apd.base.checks import bounded, count
from apd.core import curves

DECAYS = ("poly10", "exponential")
CONDITIONS = ("normalised", "release")
NORMALISED_SPAN = 3.0
WEIGHT_RATIO = 0.8


def check_decay(name: str) -> curves.Decay:
    """The :class:`apd.core.curves.Decay` of an entropy curve: 'poly10' (the release's) or 'exponential'."""
    if name not in DECAYS:
        raise ValueError(
            f"unknown entropy curve {name!r}; use one of {DECAYS} ('poly10' is REAL's K = 10 polynomial)."
        )
    return curves.get_decay(name)


def condition_x(x, log_sizes: Sequence[float], condition: str = "normalised") -> torch.Tensor:
    """x' for the curve: ``x`` (X,) log sizes, conditioned on the family's ``log_sizes`` (N,).

    'normalised': 1 + NORMALISED_SPAN * (x - x_ALM) / (x_ELM - x_ALM); 'release': x unchanged.

    Example:
        >>> condition_x([8.0, 10.0, 12.0], [8.0, 12.0]).tolist()
        [1.0, 2.5, 4.0]
    """
    if condition not in CONDITIONS:
        raise ValueError(f"condition must be one of {CONDITIONS}, got {condition!r}.")
    x = torch.as_tensor(x, dtype=torch.float32)
    if condition == "release":
        return x
    s = [float(v) for v in log_sizes]
    if len(s) < 2 or not s[-1] > s[0]:
        raise ValueError(f"log_sizes must hold >= 2 increasing values (ALM first), got {s}.")
    return 1.0 + NORMALISED_SPAN * (x - s[0]) / (s[-1] - s[0])


def entropy_curve(
    x,
    c: torch.Tensor,
    params: torch.Tensor,
    log_sizes: Sequence[float],
    *,
    decay: str = "poly10",
    condition: str = "normalised",
) -> torch.Tensor:
    """The entropy curve (nats) at log sizes ``x`` (X,): c (...), params (..., P) -> (..., X).

    Example:
        >>> import torch
        >>> c, params = torch.tensor([0.5]), torch.tensor([[2.0, 1.0, 1.0]])   # b, f, g
        >>> entropy_curve([8.0, 12.0], c, params, [8.0, 12.0], decay="exponential")   # x' = 1, 4
        tensor([[2.5000, 0.5996]])
    """
    xc = condition_x(x, log_sizes, condition).to(params.device, params.dtype)
    return check_decay(decay)(xc, c, params)


def loss_weights(n_members: int, ratio: float = WEIGHT_RATIO, with_last: bool = True) -> torch.Tensor:
    """Weights (N,) or (N + 1,) of the THF loss: ratio^(N-1-i) for member i (ALM first), then the
    direct last-member prediction with the largest member's weight; normalised to mean 1.

    Example:
        >>> loss_weights(2, 0.5, with_last=False).tolist()
        [0.6666666865348816, 1.3333333730697632]
    """
    count("n_members", n_members, 1, "the number of family members")
    bounded("ratio", ratio, above=0, maximum=1, hint=f"the release uses {WEIGHT_RATIO}")
    w = torch.tensor([ratio ** (n_members - 1 - i) for i in range(n_members)], dtype=torch.float64)
    if with_last:
        w = torch.cat([w, w[-1:]])
    return (w / w.mean()).float()


def thf_loss(
    curve: torch.Tensor,
    last: torch.Tensor,
    labels: torch.Tensor,
    *,
    ratio: float = WEIGHT_RATIO,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """sqrt(weighted MSE) of predicted entropies: curve (..., N) at the members, last (...) the direct
    prediction of the largest member, labels (..., N) true entropies (nats); mask (...) bool keeps
    positions (default all). Weights: :func:`loss_weights`.

    Example:
        >>> import torch
        >>> labels = torch.tensor([[3.0, 2.0]])
        >>> round(float(thf_loss(labels + 1.0, torch.tensor([2.0]), labels)), 4)  # errors 1, 1, 0
        0.8018
    """
    n = labels.shape[-1]
    if curve.shape != labels.shape or last.shape != labels.shape[:-1]:
        raise ValueError(
            f"curve {tuple(curve.shape)} and labels {tuple(labels.shape)} must match, last must be "
            f"{tuple(labels.shape[:-1])}, got {tuple(last.shape)}."
        )
    pred = torch.cat([curve, last[..., None]], dim=-1)
    true = torch.cat([labels, labels[..., -1:]], dim=-1)
    sq = (pred - true) ** 2 * loss_weights(n, ratio).to(pred.device, pred.dtype)
    if mask is not None:
        sq = sq[mask]
    return curves.safe_sqrt(sq.mean())


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy (nats) of softmax(logits) over the last axis: (..., V) -> (...), computed in float32.

    -inf rules a token out (it adds 0); NaN and +inf logits are a ValueError (no NaN entropies).

    Example:
        >>> import torch
        >>> round(float(entropy_from_logits(torch.zeros(4))), 4)   # ln 4
        1.3863
    """
    checks.logits("logits", logits, "check the model's forward pass (half-precision overflow: run it in float32)")
    lp = torch.log_softmax(logits.float(), dim=-1)
    return -(lp.exp() * lp).nan_to_num(0.0).sum(-1)
