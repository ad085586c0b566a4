"""Known-answer experiment: does the APD objective identify the asymptote?

We build synthetic "families" whose member probabilities follow decay curves with KNOWN asymptotes
``c_true`` and measure how well each estimator recovers them: the median |c_hat - c_true| over all
tokens, next to the error of simply using p_ELM (the largest member's probability).

Units and shapes used throughout:
- ``x`` (N,): natural log of each member's NON-embedding parameter count, smallest (ALM) first.
- ``probs`` (P, K, N): P positions, K tokens per position (the token set), N members; every
  member's probabilities are renormalised over the K tokens (they sum to 1 over axis 1).
- ``c_true`` / ``c_hat`` (P, K): asymptotic probabilities over the same token set (sum to 1 over K).
The recovery table's errors are absolute differences of probabilities (no logs); the condition's
are total variations (probability units, in [0, 1]).

Estimators (each returns an :class:`Estimate`):
- :func:`estimate_p_elm`  the baseline, c_hat = p_ELM;
- :func:`estimate_cd`     contrastive decoding at T = 1 over the set, softmax(log p_ELM - log p_ALM)
                          (the starting point of ALM' in the joint objective);
- :func:`estimate_fitter` APD on the fly: :func:`apd.core.curves.fit_curves` per token with TUNED_FIT or
                          PLAIN_FIT (the release's plainest reading), asymptotes renormalised over the
                          set as APD on the fly does (or left raw, ``renormalise=False``);
- :func:`estimate_joint`  the paper's joint objective with a per-token FREE c standing in for ALM':
                          c = softmax_K(z), z initialised at log p_ELM - log p_ALM (CD at T = 1, as ALM'
                          starts at the ALM), trained jointly with :class:`apd.amateur.objective.CurveMLP` on
                          L1 + 10 L2 (no L3), AdamW. ``start='release'`` is the release's start
                          (raw x, a = b = d = 1); ``start='conditioned'`` measures x from the ALM in
                          units of the members' span (x' in [0, 1]) and starts the bend d at the ALM.
                          ``l2='mean_hinge'`` is a DIAGNOSTIC variant of L2 (hinge of the mean, see
                          :func:`loss_l2_mean_hinge`), not the paper's loss.

:func:`recovery_table` runs everything over both x grids (pico, Pythia) and both regimes
('saturating', 'still_rising') and returns one row per estimator x grid x regime.

**The known-answer condition** (:func:`world_condition`): where the truth is known (the world's
questions), is APD on the fly's fitted asymptote, mixed with p_ELM at the fitter's weight w, closer
to the truth than p_ELM? Total variation over the candidates (:func:`total_variation`), paired per
item, averaged per person, a 95% Student t interval over people (:func:`paired_condition`,
:class:`Condition`); :func:`weight_on_dev` chooses w where no chapter did. :func:`truthlike_table`
asks the same on synthetic families shaped like the world's truths (one-hot and near-one-hot
asymptotes, noise proportional to sqrt(p (1 - p))), at any noise. Diagnostics:
:func:`share_collapsed` (c_hat within 0.005 of p_ELM) and :func:`share_beyond` (c_hat beyond p_ELM on
the extrapolation side).
Everything is deterministic given the seeds (data from numpy's PCG64, MLP init and dropout from
``torch.manual_seed``), with ``torch.set_num_threads(1)`` recommended for exact reproducibility.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import pandas as pd
import torch

from apd.amateur.config import lr_at
from apd.amateur.objective import ConditionedCurveMLP, CurveMLP, loss_l1, loss_l2
from apd.core import curves, stats
from apd.family import pico, pretrain
from apd.world import truth as wt

# ----------------------------------------------------------------------------- x grids

#: Non-embedding parameter counts of the default pico members (apd.family.pretrain.PicoConfig.default()).
PICO_NONEMBEDDING = (12_768, 28_368, 100_096, 335_712, 793_344, 1_779_840)
PICO_X = tuple(math.log(n) for n in PICO_NONEMBEDDING)  # 9.4547 .. 14.3921
PYTHIA_X = tuple(curves.PYTHIA_LOG_SIZES)  # 16.7555 .. 22.5864 (70m .. 6.9b)
GRIDS = {"pico": PICO_X, "pythia": PYTHIA_X}


def pico_x(scale: str = "default") -> tuple[float, ...]:
    """x = ln(non-embedding parameters) of the members of a pico scale (:func:`apd.family.pico.configs`):
    the "pico" grid of the tables run for that scale.

    Example:
        >>> pico_x("default") == PICO_X, len(pico_x("default-200"))
        (True, 6)
    """
    return tuple(math.log(pretrain.nonembedding_count(m)) for m in pico.configs(scale)[1].members)


def grid_x(grid: str, pico_scale: str = "default") -> tuple[float, ...]:
    """The sizes of a grid of :data:`GRIDS`; ``"pico"`` follows ``pico_scale`` (:func:`pico_x`)."""
    if grid not in GRIDS:
        raise ValueError(f"unknown grid {grid!r}; use one of {sorted(GRIDS)}")
    return pico_x(pico_scale) if grid == "pico" else GRIDS[grid]


REGIMES = ("saturating", "still_rising")

COLLAPSE_TOL = 0.005  # |c_hat - p_ELM| below this: "collapsed to the expert"


# ----------------------------------------------------------------------------- synthetic families

# Per-token decay, in normalised units u = (x - x_ALM) / (x_ELM - x_ALM):
#   g(u) = exp(-beta * max(0, u - delta)),  remaining fraction at the ELM r = g(1).
_REGIME_RANGES = {
    # curves flatten by the largest member: the bend starts around the ALM, so the flattening is
    # visible across the members, and 5-30 % of the way is left at the ELM
    "saturating": dict(delta=(-0.2, 0.2), remaining=(0.05, 0.3), log_remaining=False),
    # bend near the top: flat over the first members, 25-60 % of the way still to go at the ELM
    "still_rising": dict(delta=(0.3, 0.7), remaining=(0.25, 0.6), log_remaining=False),
}


SYNTHETIC_DECAYS = ("exponential", "logistic")


def _logistic_decay(u: np.ndarray, delta: np.ndarray, remaining: np.ndarray) -> np.ndarray:
    """g(u) = s(-k (u - delta)) / s(k delta), s the logistic function: 1 at u = 0, falling through its
    midpoint at ``delta``, with the rate k per token found by bisection so that g(1) = ``remaining``.
    ``u`` (N,), ``delta`` and ``remaining`` (P, K); returns (P, K, N).

    Example:
        >>> g = _logistic_decay(np.array([0.0, 1.0]), np.array([[0.2]]), np.array([[0.1]]))
        >>> [round(float(v), 4) for v in g[0, 0]]
        [1.0, 0.1]
    """

    def log_sig(z):  # log s(z), stable for large |z|
        return -np.logaddexp(0.0, -z)

    def g_at(uu, kk, dd):
        return np.exp(log_sig(-kk * (uu - dd)) - log_sig(kk * dd))

    lo, hi = np.full(delta.shape, 1e-6), np.full(delta.shape, 500.0)
    for _ in range(80):  # g(1) falls as k grows
        mid = 0.5 * (lo + hi)
        above = g_at(1.0, mid, delta) > remaining
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    kk = 0.5 * (lo + hi)
    return g_at(np.asarray(u, dtype=np.float64)[None, None, :], kk[..., None], delta[..., None])


def synthetic_family(
    x: Sequence[float],
    n_positions: int,
    k: int = 20,
    regime: str = "saturating",
    noise: float = 0.005,
    seed: int = 0,
    concentration: float = 1.0,
    amateur_tau=(0.2, 0.6),
    amateur_sigma: float = 1.0,
    decay: str = "exponential",
    asymptote: str = "dirichlet",
    noise_shape: str = "uniform",
):
    """Synthetic member probabilities with known asymptotes.

    Per position: the asymptote ``c_true`` ~ Dirichlet(concentration) over the K tokens (1.0: flat
    over the simplex, top token ~0.18 on average for K = 20; 0.3: peaked, top token ~0.31); the
    ALM's distribution is a flatter, noisier version q ~ c^tau * exp(amateur_sigma * eps)
    (tau ~ U(amateur_tau), eps ~ N(0, 1), renormalised). Per token, the curve is
    ``c + (q - c) g(x)``, g an exponential decay (1 at the ALM side, -> 0) with its own bend and
    rate drawn by ``regime`` ('saturating' or 'still_rising', see ``_REGIME_RANGES``); tokens with
    q < c rise, the others fall. Each member's curve values are renormalised over the set, then
    Gaussian noise of sd ``noise`` is added, clipped to >= 0 and renormalised again. ``decay``:
    ``"exponential"`` (the paper's form, above) or ``"logistic"`` (:func:`_logistic_decay`: the same
    bend position and remaining fraction at the ELM, a smooth S instead of a kink; the fitters, which
    assume the exponential, are then misspecified, as they may be on a real family).

    ``asymptote``: ``"dirichlet"`` (above), or a truth like the world's (:data:`TRUTHLIKE`, see
    :func:`_truthlike_ends`): ``"one_hot"`` (every position has one true token, c = 1 there and 0
    elsewhere) or ``"near_one_hot"`` (the true token holds :data:`NEAR_ONE_HOT_PEAK` of c, the rest is
    spread over the others); the ALM then gives the true token :data:`TRUE_TOKEN_AMATEUR` of its
    mass. ``noise_shape``: ``"uniform"`` (the same sd on every probability) or ``"binomial"`` (sd
    proportional to sqrt(p (1 - p)), as the fitter's residuals on the world's questions are, scaled
    so that its root mean square over every position, token and member is ``noise``).

    Returns ``probs`` (P, K, N) float64 (members ALM first, sums to 1 over K) and ``c_true``
    (P, K) float64 (sums to 1 over K; the curves' exact limit as x -> infinity, before noise).

    Example (one-hot truths: each position's asymptote puts all its mass on one token):
        >>> probs, c = synthetic_family(PICO_X, 3, k=5, asymptote="one_hot", noise=0.01, noise_shape="binomial")
        >>> probs.shape, sorted(set(c.ravel().tolist())), c.sum(-1).tolist()
        ((3, 5, 6), [0.0, 1.0], [1.0, 1.0, 1.0])
    """
    if regime not in _REGIME_RANGES:
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}.")
    if decay not in SYNTHETIC_DECAYS:
        raise ValueError(f"decay must be one of {SYNTHETIC_DECAYS}, got {decay!r}.")
    if asymptote not in ASYMPTOTES:
        raise ValueError(f"asymptote must be one of {ASYMPTOTES}, got {asymptote!r}.")
    if noise_shape not in NOISE_SHAPES:
        raise ValueError(f"noise_shape must be one of {NOISE_SHAPES}, got {noise_shape!r}.")
    xs = np.asarray(x, dtype=np.float64)
    if xs.ndim != 1 or xs.size < 3 or not np.all(np.diff(xs) > 0):
        raise ValueError(f"x must hold >= 3 increasing log sizes, got {x}.")
    rng = np.random.default_rng(seed)
    p = int(n_positions)
    if asymptote == "dirichlet":
        c = rng.dirichlet(np.full(k, concentration), size=p)
        c = np.clip(c, 1e-6, None)
        c /= c.sum(-1, keepdims=True)
        tau = rng.uniform(*amateur_tau, size=(p, 1))
        q = np.exp(tau * np.log(c) + amateur_sigma * rng.standard_normal((p, k)))
        q /= q.sum(-1, keepdims=True)
    else:
        c, q = _truthlike_ends(rng, p, k, asymptote)
    r = _REGIME_RANGES[regime]
    delta = rng.uniform(*r["delta"], size=(p, k))
    lo, hi = r["remaining"]
    remaining = (
        np.exp(rng.uniform(np.log(lo), np.log(hi), size=(p, k)))
        if r["log_remaining"]
        else rng.uniform(lo, hi, size=(p, k))
    )
    beta = -np.log(remaining) / (1.0 - delta)
    u = (xs - xs[0]) / (xs[-1] - xs[0])  # (N,)
    if decay == "logistic":
        g = _logistic_decay(u, delta, remaining)  # (P, K, N)
    else:
        g = np.exp(-beta[..., None] * np.maximum(0.0, u - delta[..., None]))  # (P, K, N)
    curve = c[..., None] + (q - c)[..., None] * g
    curve /= curve.sum(1, keepdims=True)
    if noise > 0:
        sd = noise
        if noise_shape == "binomial":
            spread = curve * (1.0 - curve)
            sd = noise * np.sqrt(spread / max(float(spread.mean()), 1e-12))
        curve = np.clip(curve + sd * rng.standard_normal(curve.shape), 0.0, None)
        curve /= curve.sum(1, keepdims=True)
    return curve, c


#: Asymptotes of :func:`synthetic_family`: a Dirichlet draw, or a truth like the world's.
ASYMPTOTES = ("dirichlet", "one_hot", "near_one_hot")
#: The truth-like asymptotes (the world's facts have one true value; its two distributional
#: attributes put most of their mass on a few).
TRUTHLIKE = ("one_hot", "near_one_hot")
#: Noise shapes of :func:`synthetic_family`.
NOISE_SHAPES = ("uniform", "binomial")
#: Near-one-hot asymptotes: the true token's share of c, drawn uniformly in this range.
NEAR_ONE_HOT_PEAK = (0.8, 0.95)
#: Truth-like families: the smallest member's (ALM's) probability of the true token, drawn uniformly.
TRUE_TOKEN_AMATEUR = (0.02, 0.3)


def _truthlike_ends(rng, p: int, k: int, asymptote: str) -> tuple[np.ndarray, np.ndarray]:
    """Both ends of truth-like curves, ``(c, q)`` (P, K) each summing to 1 over K: one true token
    per position (uniform over K); c is one-hot on it (``"one_hot"``) or gives it a share drawn from
    :data:`NEAR_ONE_HOT_PEAK` and the rest Dirichlet(1) over the other tokens (``"near_one_hot"``);
    the ALM's distribution q gives it a share drawn from :data:`TRUE_TOKEN_AMATEUR` and the rest
    Dirichlet(1) over the other tokens (it guesses among wrong values).

    Example:
        >>> c, q = _truthlike_ends(np.random.default_rng(0), 4, 6, "near_one_hot")
        >>> bool((c.argmax(-1) == (c >= 0.8).argmax(-1)).all()), np.allclose(q.sum(-1), 1.0)
        (True, True)
    """
    if k < 2:
        raise ValueError(f"truth-like families need k >= 2 tokens, got {k}.")
    hot = np.eye(k)[rng.integers(k, size=p)]  # (P, K)

    def others(share):
        rest = rng.dirichlet(np.ones(k), size=p) * (1.0 - hot)
        return share * hot + (1.0 - share) * rest / rest.sum(-1, keepdims=True)

    c = hot if asymptote == "one_hot" else others(rng.uniform(*NEAR_ONE_HOT_PEAK, size=(p, 1)))
    q = others(rng.uniform(*TRUE_TOKEN_AMATEUR, size=(p, 1)))
    return c, q


# ----------------------------------------------------------------------------- metrics


def median_abs_error(c_hat, c_true) -> float:
    """Median over all tokens of |c_hat - c_true| (probability units)."""
    return float(np.median(np.abs(np.asarray(c_hat) - np.asarray(c_true))))


def share_collapsed(c_hat, probs, tol: float = COLLAPSE_TOL) -> float:
    """Share of tokens whose estimate lies within ``tol`` of p_ELM (``probs[..., -1]``)."""
    return float(np.mean(np.abs(np.asarray(c_hat) - np.asarray(probs)[..., -1]) < tol))


def share_beyond(c_hat, probs, tol: float = COLLAPSE_TOL) -> float:
    """Share of tokens whose estimate lies more than ``tol`` beyond p_ELM on the extrapolation
    side, i.e. (c_hat - p_ELM) * sign(p_ELM - p_ALM) > tol (CD-like amplification)."""
    probs = np.asarray(probs)
    direction = np.sign(probs[..., -1] - probs[..., 0])
    return float(np.mean((np.asarray(c_hat) - probs[..., -1]) * direction > tol))


@dataclass
class Estimate:
    """One estimator's result on one family.

    c_hat (P, K) float64; trace: a DataFrame with columns step, median_abs_error, share_collapsed
    (and curve_alive for the joint objective), one row per logged step (empty without c_true);
    steps: optimisation steps (0 for closed forms); seconds: wall time; curve_alive: median
    |curve(x_ALM) - c| / median |p_ALM - p_ELM| (NaN where there is no curve; ~0 = a flat, "dead"
    curve; a perfect curve gives median |p_ALM - c_true| / median |p_ALM - p_ELM|, the oracle row);
    fit_error: median |curve(x_i) - p_i| over the N-1 smaller members (NaN where there is no curve)."""

    c_hat: np.ndarray
    trace: pd.DataFrame = field(default_factory=pd.DataFrame)
    steps: int = 0
    seconds: float = 0.0
    curve_alive: float = float("nan")
    fit_error: float = float("nan")


def _trace(rows):
    return pd.DataFrame(rows, columns=["step", "median_abs_error", "share_collapsed", "curve_alive"])


def _alive(curve_alm, c, probs) -> float:
    """median |curve(x_ALM) - c| / median |p_ALM - p_ELM| (flip-invariant)."""
    spread = float(np.median(np.abs(probs[..., 0] - probs[..., -1])))
    return float(np.median(np.abs(np.asarray(curve_alm) - np.asarray(c)))) / max(spread, 1e-12)


# ----------------------------------------------------------------------------- closed-form estimators


def estimate_p_elm(probs, c_true=None) -> Estimate:
    """c_hat = p_ELM, the largest member's probability. probs (P, K, N) -> c_hat (P, K)."""
    t0 = time.perf_counter()
    probs = np.asarray(probs, dtype=np.float64)
    c_hat = probs[..., -1].copy()
    rows = [] if c_true is None else [(0, median_abs_error(c_hat, c_true), 1.0, float("nan"))]
    return Estimate(c_hat, _trace(rows), 0, time.perf_counter() - t0)


def _cd_logits(probs: np.ndarray) -> np.ndarray:
    lp = np.log(np.clip(probs, 1e-6, None))
    return lp[..., -1] - lp[..., 0]


def estimate_cd(probs, c_true=None) -> Estimate:
    """Contrastive decoding at T = 1 over the set: softmax_K(log p_ELM - log p_ALM) (probabilities
    clipped at 1e-6 before the log). probs (P, K, N) -> c_hat (P, K)."""
    t0 = time.perf_counter()
    probs = np.asarray(probs, dtype=np.float64)
    z = _cd_logits(probs)
    c_hat = np.exp(z - z.max(-1, keepdims=True))
    c_hat /= c_hat.sum(-1, keepdims=True)
    rows = (
        [] if c_true is None else [(0, median_abs_error(c_hat, c_true), share_collapsed(c_hat, probs), float("nan"))]
    )
    return Estimate(c_hat, _trace(rows), 0, time.perf_counter() - t0)


def estimate_fitter(
    probs, x, settings: str = "tuned", c_true=None, iterations: int = 400, renormalise: bool = True, device=None
) -> Estimate:
    """APD on the fly: :func:`apd.core.curves.fit_curves` on every token's N probabilities.

    ``settings``: 'tuned' (:data:`apd.core.curves.TUNED_FIT`) or 'plain' (:data:`apd.core.curves.PLAIN_FIT`,
    the release's plainest reading). Adam lr 1e-2, ``iterations`` steps, L1 + 10 L2. The fitted
    asymptotes are renormalised over the K tokens (as APD on the fly does; a set summing to 0
    falls back to p_ELM) unless ``renormalise`` is False. probs (P, K, N) -> c_hat (P, K).
    curve_alive uses the fitted curves' value at the ALM. The trace has one row (the end). ``device``:
    where the curves are fitted (default: the CPU); the estimate comes back as NumPy arrays.
    """
    kw = {"tuned": curves.TUNED_FIT, "plain": curves.PLAIN_FIT}[settings]
    t0 = time.perf_counter()
    probs = np.asarray(probs, dtype=np.float64)
    p, k, n = probs.shape
    fit = curves.fit_curves(torch.as_tensor(probs.reshape(-1, n)), x, iterations=iterations, device=device, **kw)
    fit = fit.to("cpu")
    ap = fit.asymptote.double().numpy().reshape(p, k)
    if renormalise:
        tot = ap.sum(-1, keepdims=True)
        c_hat = np.where(tot > 0, ap / np.where(tot > 0, tot, 1.0), probs[..., -1])
    else:
        c_hat = ap
    with torch.no_grad():
        xt = torch.as_tensor(x, dtype=fit.c.dtype)
        curve = curves.get_decay("exponential")(xt, fit.c, fit.params)  # flipped space
        target = curves.flip_values(torch.as_tensor(probs.reshape(-1, n), dtype=fit.c.dtype), fit.flipped[:, None])
    alive = _alive(curve[:, 0].double().numpy(), fit.c.double().numpy(), probs.reshape(-1, n))
    fit_err = float((curve[:, :-1] - target[:, :-1]).abs().median())
    sec = time.perf_counter() - t0
    rows = (
        [] if c_true is None else [(iterations, median_abs_error(c_hat, c_true), share_collapsed(c_hat, probs), alive)]
    )
    return Estimate(c_hat, _trace(rows), iterations, sec, alive, fit_err)


# ----------------------------------------------------------------------------- the joint objective


def loss_l2_mean_hinge(curve: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """DIAGNOSTIC variant of L2 (not the paper's): sqrt(max(mean(curve_ELM - target_ELM), 0)),
    the hinge of the MEAN signed overshoot at the ELM (tokens above the ELM can be offset by
    tokens below it), instead of the paper's sqrt(mean(max(curve_ELM - target_ELM, 0)))."""
    return curves.safe_sqrt(torch.relu((curve[..., -1] - target[..., -1]).mean()))


def estimate_joint(
    probs,
    x,
    c_true=None,
    *,
    start: str = "release",
    steps: int = 300,
    l2: str = "paper",
    lr: float = 1e-4,
    lr_c: float = 1e-2,
    weight_decay: float = 0.01,
    warmup: Optional[int] = None,
    lambda2: float = 10.0,
    log_every: int = 50,
    seed: int = 0,
) -> Estimate:
    """The paper's joint objective with a per-token free c standing in for ALM'.

    c = softmax_K(z) with free logits z (P, K) initialised at log p_ELM - log p_ALM (CD at T = 1),
    trained jointly with a CurveMLP on L1 + lambda2 * L2 (no L3), full batch (all P*K tokens per
    step), AdamW: the MLP at ``lr`` (release: 1e-4, weight decay 0.01), z at ``lr_c`` without weight
    decay (z stands for a whole fine-tuned ALM', whose logits move by units over a run; at 1e-4 a
    free logit could move by at most ~steps * 1e-4). Schedule: the release's linear warm-up then
    linear decay to 0 (:func:`apd.train.lr_at`), warm-up ``min(100, steps // 10)`` by default.
    MLP dropout(0.5) on the mid members is on while training (as in the release), off for the
    final curve. ``start``: 'release' (raw x, a = b = d = 1) or 'conditioned'
    (:class:`ConditionedCurveMLP`, a0 = median |p_ALM - p_ELM|). ``l2``: 'paper' or 'mean_hinge'
    (:func:`loss_l2_mean_hinge`, a diagnostic). probs (P, K, N) -> c_hat (P, K); the trace logs
    every ``log_every`` steps (needs ``c_true``).
    """
    if start not in ("release", "conditioned"):
        raise ValueError(f"start must be 'release' or 'conditioned', got {start!r}.")
    l2_fn = {"paper": loss_l2, "mean_hinge": loss_l2_mean_hinge}[l2]
    t0 = time.perf_counter()
    probs = np.asarray(probs, dtype=np.float64)
    values = torch.as_tensor(probs, dtype=torch.float32)
    torch.manual_seed(seed)
    if start == "release":
        mlp = CurveMLP(x)
    else:
        a0 = max(float(np.median(np.abs(probs[..., 0] - probs[..., -1]))), 1e-3)
        mlp = ConditionedCurveMLP(x, a0=a0)
    z = torch.as_tensor(_cd_logits(probs), dtype=torch.float32).clone().requires_grad_(True)
    opt = torch.optim.AdamW(
        [
            {"params": list(mlp.parameters()), "lr": lr, "weight_decay": weight_decay},
            {"params": [z], "lr": lr_c, "weight_decay": 0.0},
        ]
    )
    base = [lr, lr_c]
    wu = min(100, steps // 10) if warmup is None else int(warmup)
    rows = []

    def log(step):
        if c_true is None:
            return
        mlp.eval()
        with torch.no_grad():
            c = torch.softmax(z, -1)
            out = mlp(values, c)
        mlp.train()
        c_np = c.double().numpy()
        rows.append(
            (
                step,
                median_abs_error(c_np, c_true),
                share_collapsed(c_np, probs),
                _alive(out.curve[..., 0].double().numpy(), out.c.double().numpy(), probs),
            )
        )

    mlp.train()
    log(0)
    for step in range(steps):
        for group, b in zip(opt.param_groups, base):
            group["lr"] = lr_at(step, steps, wu, b)
        out = mlp(values, torch.softmax(z, -1))
        loss = loss_l1(out.curve, out.target) + lambda2 * l2_fn(out.curve, out.target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (step + 1) % log_every == 0 or step + 1 == steps:
            log(step + 1)
    mlp.eval()
    with torch.no_grad():
        c = torch.softmax(z, -1)
        out = mlp(values, c)
    c_hat = c.double().numpy()
    alive = _alive(out.curve[..., 0].double().numpy(), out.c.double().numpy(), probs)
    fit_err = float((out.curve[..., :-1] - out.target[..., :-1]).abs().median())
    return Estimate(c_hat, _trace(rows), steps, time.perf_counter() - t0, alive, fit_err)


# ----------------------------------------------------------------------------- the table

#: Table sizes: positions per family (K = 20 tokens each), the step budgets of the joint runs, the
#: fitter's Adam iterations, and whether the long run from the release's start is included.
SIZES = {
    "smoke": dict(
        n_positions=6, release_steps=60, short_steps=40, long_steps=120, fit_iterations=200, long_release=True
    ),
    "default": dict(
        n_positions=25, release_steps=300, short_steps=200, long_steps=2000, fit_iterations=400, long_release=False
    ),
    "full": dict(
        n_positions=25, release_steps=300, short_steps=200, long_steps=2000, fit_iterations=400, long_release=True
    ),
}


def _oracle(probs, c_true) -> Estimate:
    """c_hat = c_true; its curve_alive is the value a perfect curve would have."""
    c = np.asarray(c_true, dtype=np.float64).copy()
    return Estimate(c, curve_alive=_alive(probs[..., 0], c, probs), fit_error=0.0)


#: What each estimator of :func:`estimator_specs` is, for tables and figures (step counts are in the table).
LABELS = {
    "p_elm": "p_ELM (the expert itself)",
    "cd_t1": "CD at T = 1 (where ALM' starts)",
    "fit_tuned": "on-the-fly fitter, tuned settings",
    "fit_tuned_raw": "on-the-fly fitter, tuned, not renormalised",
    "fit_plain": "on-the-fly fitter, the release's settings",
    "joint_release": "joint objective, release start",
    "joint_release_lrc1e-4": "joint objective, release start, c at lr 1e-4",
    "joint_release_lrc1e-1": "joint objective, release start, c at lr 1e-1",
    "joint_release_long": "joint objective, release start, long",
    "joint_cond_short": "joint objective, conditioned start, short",
    "joint_cond_long": "joint objective, conditioned start, long",
    "diag_mean_hinge": "diagnostic: hinge of the mean, conditioned, long",
    "oracle": "c_hat = c_true (reference)",
}


def estimator_specs(
    release_steps: int = 300,
    short_steps: int = 200,
    long_steps: int = 2000,
    fit_iterations: int = 400,
    long_release: bool = True,
):
    """(name, callable(probs, x, c_true, seed) -> Estimate) for every estimator of the table."""
    j, it = estimate_joint, fit_iterations
    specs = [
        ("p_elm", lambda p, x, c, s: estimate_p_elm(p, c)),
        ("cd_t1", lambda p, x, c, s: estimate_cd(p, c)),
        ("fit_tuned", lambda p, x, c, s: estimate_fitter(p, x, "tuned", c, it)),
        ("fit_tuned_raw", lambda p, x, c, s: estimate_fitter(p, x, "tuned", c, it, renormalise=False)),
        ("fit_plain", lambda p, x, c, s: estimate_fitter(p, x, "plain", c, it)),
        ("joint_release", lambda p, x, c, s: j(p, x, c, start="release", steps=release_steps, seed=s)),
        (
            "joint_release_lrc1e-4",
            lambda p, x, c, s: j(p, x, c, start="release", steps=release_steps, lr_c=1e-4, seed=s),
        ),
        (
            "joint_release_lrc1e-1",
            lambda p, x, c, s: j(p, x, c, start="release", steps=release_steps, lr_c=1e-1, seed=s),
        ),
    ]
    if long_release:
        specs.append(("joint_release_long", lambda p, x, c, s: j(p, x, c, start="release", steps=long_steps, seed=s)))
    specs += [
        ("joint_cond_short", lambda p, x, c, s: j(p, x, c, start="conditioned", steps=short_steps, seed=s)),
        ("joint_cond_long", lambda p, x, c, s: j(p, x, c, start="conditioned", steps=long_steps, seed=s)),
        (
            "diag_mean_hinge",
            lambda p, x, c, s: j(p, x, c, start="conditioned", steps=long_steps, l2="mean_hinge", seed=s),
        ),
        ("oracle", lambda p, x, c, s: _oracle(p, c)),
    ]
    return specs


def recovery_table(
    size: str = "default",
    *,
    grids: Sequence[str] = ("pico", "pythia"),
    regimes: Sequence[str] = REGIMES,
    k: int = 20,
    noise: float = 0.005,
    seed: int = 0,
    n_positions: Optional[int] = None,
    estimators: Optional[Sequence[str]] = None,
    threads: Optional[int] = 1,
    decay: str = "exponential",
    pico_scale: str = "default",
) -> pd.DataFrame:
    """Run every estimator on every grid x regime; one row each.

    Columns: estimator, grid, regime, median_abs_error (|c_hat - c_true|, median over P*K tokens),
    p90_abs_error, p_elm_error (the median error of p_ELM on that family), share_collapsed
    (|c_hat - p_ELM| < 0.005), share_beyond (:func:`share_beyond`), curve_alive, fit_error (see :class:`Estimate`), steps, seconds.
    ``size``: a key of :data:`SIZES` (positions, step budgets); ``n_positions`` overrides it.
    ``pico_scale``: whose members' sizes the ``"pico"`` grid has (:func:`grid_x`).
    ``estimators``: names to keep (default all). The traces of the joint runs are in
    ``table.attrs['traces']`` (a dict keyed by (estimator, grid, regime)). The oracle row
    (c_hat = c_true) gives the share of TRUE asymptotes within 0.005 of p_ELM and a perfect
    curve's curve_alive. Family seeds: ``seed + 100 * grid index + 10 * regime index``.
    """
    if threads is not None:
        torch.set_num_threads(int(threads))
    cfg = dict(SIZES[size])
    if n_positions is not None:
        cfg["n_positions"] = int(n_positions)
    specs = estimator_specs(
        cfg["release_steps"], cfg["short_steps"], cfg["long_steps"], cfg["fit_iterations"], cfg["long_release"]
    )
    if estimators is not None:
        specs = [s for s in specs if s[0] in set(estimators)]
    rows, traces = [], {}
    for gi, grid in enumerate(grids):
        x = grid_x(grid, pico_scale)
        for ri, regime in enumerate(regimes):
            probs, c_true = synthetic_family(
                x, cfg["n_positions"], k, regime, noise, seed + 100 * gi + 10 * ri, decay=decay
            )
            base = median_abs_error(probs[..., -1], c_true)
            for name, fn in specs:
                est = fn(probs, x, c_true, seed)
                err = np.abs(est.c_hat - c_true)
                rows.append(
                    dict(
                        estimator=name,
                        grid=grid,
                        regime=regime,
                        median_abs_error=float(np.median(err)),
                        p90_abs_error=float(np.quantile(err, 0.9)),
                        p_elm_error=base,
                        share_collapsed=share_collapsed(est.c_hat, probs),
                        share_beyond=share_beyond(est.c_hat, probs),
                        curve_alive=est.curve_alive,
                        fit_error=est.fit_error,
                        steps=est.steps,
                        seconds=round(est.seconds, 3),
                    )
                )
                if len(est.trace) > 1:
                    traces[(name, grid, regime)] = est.trace
    table = pd.DataFrame(rows)
    table.attrs["traces"] = traces
    table.attrs["config"] = dict(
        cfg,
        size=size,
        k=k,
        noise=noise,
        seed=seed,
        grids=list(grids),
        regimes=list(regimes),
        decay=decay,
        pico_scale=pico_scale,
    )
    return table


# ----------------------------------------------------------------------------- the known-answer condition

#: A decay curve has four parameters (c, a, b, d): fewer members leave nothing to extrapolate from.
MIN_MEMBERS = 4


def total_variation(q, truth_k) -> np.ndarray:
    """Total variation 0.5 * sum_k |q - t| per row between ``q`` (B, k), rows summing to 1 over the
    candidates, and the truth there ``truth_k`` (B, k), renormalised over the candidates (mass
    outside them dropped); NaN where the truth has no mass on the candidates. -> (B,), in [0, 1].

    Example:
        >>> total_variation(np.array([[0.5, 0.5], [0.9, 0.1]]), np.array([[1.0, 0.0], [0.0, 0.0]])).tolist()
        [0.5, nan]
    """
    q, t = np.asarray(q, dtype=np.float64), np.asarray(truth_k, dtype=np.float64)
    if q.shape != t.shape or q.ndim != 2:
        raise ValueError(f"q {q.shape} and truth_k {t.shape} must have one (B, k) shape.")
    mass = t.sum(-1, keepdims=True)
    tn = np.divide(t, mass, out=np.zeros_like(t), where=mass > 0)
    return np.where(mass[:, 0] > 0, 0.5 * np.abs(q - tn).sum(-1), np.nan)


@dataclass(frozen=True)
class Condition:
    """The known-answer condition read once: is the fitter's asymptote, mixed with p_ELM at weight
    ``w`` as APD on the fly mixes it, closer to the known truth than p_ELM itself?

    gain: p_ELM's mean total variation to the truth minus the fitter's (positive: the fitter is
    closer), items averaged per group (person) first, then over groups; se: its standard error over
    groups; n_groups (people, or positions where each is its own group), n_items; tv_elm, tv_fitter:
    the two mean total variations (the same group means, so gain = tv_elm - tv_fitter); low, high:
    the 95% Student t interval of the gain over n_groups (:func:`apd.core.stats.critical`)."""

    gain: float
    se: float
    n_groups: int
    n_items: int
    tv_elm: float
    tv_fitter: float
    w: float
    low: float
    high: float

    @property
    def ratio(self) -> float:
        """The fitter's mean total variation over p_ELM's (below 1: the fitter is closer)."""
        return self.tv_fitter / self.tv_elm if self.tv_elm > 0 else float("nan")

    @property
    def passes(self) -> bool:
        """The 95% t interval of the gain lies above 0."""
        return bool(self.low > 0)

    def columns(self) -> dict:
        """The condition as the columns of a table row: the two TVs, their ratio, the gain, its se
        and 95% interval.

        Example:
            >>> Condition(0.01, 0.004, 100, 800, 0.5, 0.49, 0.05, 0.002, 0.018).columns()["ci_low"]
            0.002
        """
        return dict(
            tv_elm=self.tv_elm,
            tv_fitter=self.tv_fitter,
            ratio=self.ratio,
            gain=self.gain,
            gain_se=self.se,
            ci_low=self.low,
            ci_high=self.high,
        )

    def reason(self, where: str = "dev people") -> str:
        """The outcome in one plain sentence, naming the units (``where``) and the interval.

        Example:
            >>> Condition(0.01, 0.004, 100, 800, 0.5, 0.49, 0.05, 0.002, 0.018).reason()
            "the fitter's asymptote (mixed at w = 0.05) is 2.0% closer to the truth than the expert's own probability (total variation 0.4900 against 0.5000 over 100 dev people; gain +0.0100, 95% t interval [+0.0020, +0.0180], above 0: the condition holds)"
        """
        r = self.ratio
        side = "closer to" if r < 1 else "farther from" if r > 1 else "as far from"
        how = f"{abs(1 - r):.1%} {side}" if r == r and r != 1 else side
        if self.passes:
            verdict = "above 0: the condition holds"
        elif self.high < 0:
            verdict = "below 0: the condition fails"
        else:
            verdict = "holding 0: the condition fails"
        return (
            f"the fitter's asymptote (mixed at w = {self.w:g}) is {how} the truth than the expert's own "
            f"probability (total variation {self.tv_fitter:.4f} against {self.tv_elm:.4f} over "
            f"{self.n_groups} {where}; gain {self.gain:+.4f}, 95% t interval [{self.low:+.4f}, "
            f"{self.high:+.4f}], {verdict})"
        )


def paired_condition(tv_elm, tv_fitter, groups=None, w: float = 1.0) -> Condition:
    """:class:`Condition` from per-item total variations ``tv_elm`` and ``tv_fitter`` (B,) (NaN drops
    an item) and ``groups`` (B,) labels (people; None: every item its own group), through
    :func:`apd.core.stats.paired_difference`; ``w`` is recorded. Needs at least two groups.

    Example:
        >>> c = paired_condition([0.5, 0.6, 0.4, 0.7], [0.3, 0.5, 0.3, 0.4], groups=["a", "a", "b", "b"])
        >>> round(c.gain, 3), c.n_groups, c.passes
        (0.175, 2, False)
    """
    a, b = np.asarray(tv_elm, dtype=np.float64), np.asarray(tv_fitter, dtype=np.float64)
    g = np.arange(a.size) if groups is None else np.asarray(groups)
    d = stats.paired_difference(a, b, groups=g)
    if d.n_groups < 2:
        raise ValueError(
            f"the condition needs items about at least 2 people (groups), got {d.n_groups} with a defined "
            "error; give more people, or items whose truth has mass on the candidates."
        )
    ok = ~(np.isnan(a) | np.isnan(b))
    labels, inv = np.unique(g[ok], return_inverse=True)
    count = np.bincount(inv, minlength=labels.size)
    elm = float(np.mean(np.bincount(inv, weights=a[ok], minlength=labels.size) / count))
    fit = float(np.mean(np.bincount(inv, weights=b[ok], minlength=labels.size) / count))
    low, high = stats.interval(d.mean, d.se, stats.critical(d.n_groups))
    return Condition(d.mean, d.se, d.n_groups, d.n, elm, fit, float(w), low, high)


def _check_world_inputs(lp, x, truth, ids, people, w) -> None:
    """Shapes and values of :func:`world_condition`'s inputs, or an error naming the problem."""
    if lp.ndim != 3:
        raise ValueError(f"member_logprobs must be (N members, B items, V), got shape {lp.shape}.")
    n, b, v = lp.shape
    if n < MIN_MEMBERS:
        raise ValueError(
            f"the condition needs at least {MIN_MEMBERS} members (a decay curve has 4 parameters), got {n}; "
            "use the whole family, smallest first."
        )
    if x.shape != (n,):
        raise ValueError(f"log_sizes must hold one x per member, ({n},), got shape {x.shape}.")
    if b == 0 or people.size == 0:
        raise ValueError("no items or no people: score the dev people's questions and pass one person per item.")
    if truth.shape != (b, v):
        raise ValueError(f"truth must be (B, V) = ({b}, {v}) like one member's log-probs, got {truth.shape}.")
    if ids.ndim != 2 or ids.shape[0] != b:
        raise ValueError(f"ids must be (B, k) = ({b}, k) candidate ids, got shape {ids.shape}.")
    if people.shape != (b,):
        raise ValueError(f"people must give one person per item, ({b},), got shape {people.shape}.")
    if not 0 < float(w) <= 1:
        raise ValueError(f"w must be in (0, 1], the weight of the fitted asymptote in APD on the fly; got {w}.")


def world_condition(
    member_logprobs, log_sizes, truth, ids, people, w: float, *, iterations: int = 400, asymptotes=None
) -> Condition:
    """The known-answer condition where the truth is known: APD on the fly at weight ``w``,
    (1 - w) p_ELM + w p_AP (:func:`apd.core.curves.mix_on_the_fly`; p_AP the fitter's asymptotes,
    :func:`apd.world.truth.on_the_fly_topk`, TUNED_FIT, ``iterations`` Adam steps), against p_ELM,
    both renormalised over the candidates ``ids``: the total variation to the truth per item
    (:func:`total_variation`), paired, averaged per person, interval over people (:func:`paired_condition`).

    ``member_logprobs`` (N, B, V), N >= :data:`MIN_MEMBERS`, smallest first; ``log_sizes`` (N,);
    ``truth`` (B, V) the true next-token distribution; ``ids`` (B, k); ``people`` (B,) the person
    each item asks about; ``w`` in (0, 1]. ``asymptotes``: ``(p_elm, p_ap)`` (B, k) already fitted
    (skips the fit). Where the truth is one-hot on a candidate, an item's total variation is linear
    in w, so the gain at w is w times the gain at w = 1 and ``passes`` does not depend on w; only
    items with a spread truth make it depend on w.

    Example (curves rising toward one true token, flattening by the largest member):
        >>> x = np.log([1e4, 3e4, 1e5, 3e5, 1e6, 2e6]); g = np.exp(-1.2 * (x - x[0]))
        >>> gold = 0.9 - 0.8 * g                                   # gold token, ALM 0.1 -> truth 0.9+
        >>> p = np.stack([np.stack([[v, 1 - v]] * 6) for v in gold])  # (N, B=6, V=2)
        >>> truth = np.tile([1.0, 0.0], (6, 1)); ids = np.tile([0, 1], (6, 1))
        >>> c = world_condition(np.log(p), x, truth, ids, list("aabbcc"), w=1.0, iterations=200)
        >>> c.gain > 0, c.n_groups, c.n_items
        (True, 3, 6)
    """
    lp = np.asarray(member_logprobs, dtype=np.float64)
    x, truth, ids = np.asarray(log_sizes, dtype=np.float64), np.asarray(truth), np.asarray(ids)
    people = np.asarray(people)
    _check_world_inputs(lp, x, truth, ids, people, w)
    if asymptotes is None:
        p_elm, p_ap, _ = wt.on_the_fly_topk(lp, x, ids, iterations=iterations)
    else:
        p_elm, p_ap = (np.asarray(a, dtype=np.float64) for a in asymptotes)
        if p_elm.shape != ids.shape or p_ap.shape != ids.shape:
            raise ValueError(f"asymptotes must be two (B, k) = {ids.shape} arrays, got {p_elm.shape}, {p_ap.shape}.")
    t = wt.at(truth, ids)
    if not (t.sum(-1) > 0).any():
        raise ValueError("the truth has no mass on any item's candidates: pass the true distributions over V.")
    mixed = (1.0 - float(w)) * p_elm + float(w) * p_ap
    return paired_condition(total_variation(p_elm, t), total_variation(mixed, t), people, w)


def weight_on_dev(p_elm, p_ap, truth_k, people, weights: Sequence[float] = curves.ON_THE_FLY_WEIGHTS) -> float:
    """The fitter's weight chosen on dev people where no chapter chose one: the w of ``weights`` whose
    mix (1 - w) p_ELM + w p_AP has the lowest mean total variation to the truth (``truth_k``, (B, k),
    averaged per person of ``people``, then over people); ties go to the smallest w. Choosing w and
    reading the gain on the same people favours the fitter slightly; where the truth is one-hot the
    choice cannot change whether the gain is significant (see :func:`world_condition`).

    Example:
        >>> weight_on_dev(np.array([[0.5, 0.5]] * 2), np.array([[0.9, 0.1]] * 2), np.array([[1.0, 0.0]] * 2), [0, 1])
        1.0
    """
    p_elm, p_ap = np.asarray(p_elm, dtype=np.float64), np.asarray(p_ap, dtype=np.float64)
    people = np.asarray(people)
    best, best_tv = None, np.inf
    for w in sorted(float(v) for v in weights):
        tv = total_variation((1 - w) * p_elm + w * p_ap, truth_k)
        ok = ~np.isnan(tv)
        labels, inv = np.unique(people[ok], return_inverse=True)
        mean = float(np.mean(np.bincount(inv, weights=tv[ok]) / np.bincount(inv))) if ok.any() else np.inf
        if mean < best_tv - 1e-12:
            best, best_tv = w, mean
    if best is None:
        raise ValueError("no item has truth on its candidates: the weight cannot be chosen.")
    return best


# ----------------------------------------------------------------------------- truth-like synthetic families


def truthlike_table(
    x: Sequence[float],
    noises: Sequence[float],
    *,
    w: float = 1.0,
    seeds: Sequence[int] = (0, 1, 2),
    n_positions: int = 40,
    k: int = 20,
    asymptotes: Sequence[str] = TRUTHLIKE,
    regimes: Sequence[str] = REGIMES,
    decays: Sequence[str] = SYNTHETIC_DECAYS,
    iterations: int = 400,
    threads: Optional[int] = 1,
) -> pd.DataFrame:
    """The known-answer condition on truth-like synthetic families (:func:`synthetic_family` with
    one-hot or near-one-hot asymptotes and ``"binomial"`` noise, the world's shapes): for every
    asymptote x regime x decay x noise cell, ``len(seeds) * n_positions`` positions of ``k`` tokens
    at the sizes ``x``, the fitter (TUNED_FIT, ``iterations`` steps; every family fitted in one
    call) at ``w`` and at w = 1 against p_ELM, total variation to c_true per position, paired
    (:func:`paired_condition`, every position its own group: positions are independent draws).

    One row per cell and weight: asymptote, regime, decay, noise, w, tv_elm, tv_fitter, ratio,
    gain, gain_se, ci_low, ci_high, n (positions), beats (the interval lies above 0). Family seeds:
    ``1000 * seed + 100 * asymptote index + 10 * regime index + decay index``, the same at every
    noise (so the noise levels share their clean curves).

    Example:
        >>> t = truthlike_table(PICO_X, [0.0], seeds=[0], n_positions=4, k=5, asymptotes=["one_hot"],
        ...                     regimes=["saturating"], decays=["exponential"], iterations=50)
        >>> t[["asymptote", "w", "n"]].values.tolist()
        [['one_hot', 1.0, 4]]
    """
    if threads is not None:
        torch.set_num_threads(int(threads))
    if len(seeds) < 1 or n_positions * len(seeds) < 2:
        raise ValueError("truth-like families need at least 2 positions in all (seeds x n_positions).")
    xs = tuple(float(v) for v in x)
    cells, probs, truths = [], [], []
    for ai, asym in enumerate(asymptotes):
        for ri, regime in enumerate(regimes):
            for di, decay in enumerate(decays):
                for noise in noises:
                    fam = [
                        synthetic_family(
                            xs,
                            n_positions,
                            k,
                            regime,
                            float(noise),
                            1000 * int(s) + 100 * ai + 10 * ri + di,
                            decay=decay,
                            asymptote=asym,
                            noise_shape="binomial",
                        )
                        for s in seeds
                    ]
                    cells.append((asym, regime, decay, float(noise)))
                    probs.append(np.concatenate([f[0] for f in fam]))
                    truths.append(np.concatenate([f[1] for f in fam]))
    allp = np.concatenate(probs)  # (cells * P, K, N)
    c_hat = estimate_fitter(allp, xs, "tuned", iterations=iterations).c_hat
    rows, start = [], 0
    for (asym, regime, decay, noise), pr, c in zip(cells, probs, truths):
        ap = c_hat[start : start + len(pr)]
        start += len(pr)
        p_elm = pr[..., -1]
        tv_elm = total_variation(p_elm, c)
        for wv in sorted({float(w), 1.0}):
            cond = paired_condition(tv_elm, total_variation((1 - wv) * p_elm + wv * ap, c), None, wv)
            rows.append(
                dict(
                    asymptote=asym,
                    regime=regime,
                    decay=decay,
                    noise=noise,
                    w=wv,
                    **cond.columns(),
                    n=cond.n_groups,
                    beats=cond.passes,
                )
            )
    table = pd.DataFrame(rows)
    table.attrs["config"] = dict(
        x=list(xs), seeds=[int(s) for s in seeds], n_positions=int(n_positions), k=int(k), iterations=int(iterations)
    )
    return table
