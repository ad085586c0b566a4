"""How linear are a family's logits in log size, and does CD's hypothetical LM exist?

Shapes: ``log_sizes`` is ``(N,)`` (natural log of non-embedding parameters, increasing);
per-member values are ``(N, ...)`` (logits, log-probabilities or probabilities of the same tokens
in the same contexts), fitted independently along every trailing position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import rel_entr, softmax

from apd.core import theory
from apd.core.stats import paired_difference


@dataclass
class LineFits:
    """Least-squares fits of values against log size, one per trailing position.

    slope, intercept, r2: straight-line fit ``v = intercept + slope * x``;
    curvature: the quadratic coefficient of ``v = c0 + c1 x + curvature * x^2`` (units of the
    values per (ln size)^2); rmse: the line's root-mean-square residual.
    """

    slope: np.ndarray
    intercept: np.ndarray
    r2: np.ndarray
    curvature: np.ndarray
    rmse: np.ndarray


def _check_log_sizes(log_sizes, n_values: int, min_members: int) -> np.ndarray:
    x = np.asarray(log_sizes, dtype=np.float64)
    if x.ndim != 1 or len(x) != n_values:
        raise ValueError(f"log_sizes must be 1-D with one entry per member ({n_values}), got shape {x.shape}")
    if len(x) < min_members:
        raise ValueError(f"need at least {min_members} members for this fit, got {len(x)}")
    if np.any(np.diff(x) <= 0):
        raise ValueError(f"log sizes must increase strictly from the smallest member, got {x.tolist()}")
    return x


def fit_lines(log_sizes, values) -> LineFits:
    """Fit a line and a parabola in log size to ``values`` of shape ``(N, ...)``."""
    v = np.asarray(values, dtype=np.float64)
    x = _check_log_sizes(log_sizes, v.shape[0], 3)
    if not np.isfinite(v).all():
        raise ValueError("values contain NaN or inf; drop -inf logits (masked tokens) before fitting")
    flat = v.reshape(v.shape[0], -1)
    xc = x - x.mean()  # centred for a well-conditioned fit
    lin = np.polynomial.polynomial.polyfit(xc, flat, 1)  # (2, M)
    quad = np.polynomial.polynomial.polyfit(xc, flat, 2)  # (3, M)
    pred = lin[0] + np.outer(xc, lin[1])
    resid = flat - pred
    ss_res = (resid**2).sum(0)
    ss_tot = ((flat - flat.mean(0)) ** 2).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.where(ss_tot > 0, 1 - ss_res / ss_tot, 1.0)
    shape = v.shape[1:]
    return LineFits(
        slope=lin[1].reshape(shape),
        intercept=(lin[0] - lin[1] * x.mean()).reshape(shape),
        r2=r2.reshape(shape),
        curvature=quad[2].reshape(shape),
        rmse=np.sqrt(ss_res / len(x)).reshape(shape),
    )


def interpolate_members(log_sizes, values, x) -> np.ndarray:
    """Values at log size ``x`` by piecewise-linear interpolation between members ``(N, ...)``.

    ``x`` must lie within [min(log_sizes), max(log_sizes)]: the family cannot say what happens
    beyond its largest member.
    """
    v = np.asarray(values, dtype=np.float64)
    xs = _check_log_sizes(log_sizes, v.shape[0], 2)
    x = float(x)
    if not xs[0] <= x <= xs[-1]:
        raise ValueError(f"log size {x:.3f} is outside the family's range [{xs[0]:.3f}, {xs[-1]:.3f}]")
    j = int(np.clip(np.searchsorted(xs, x), 1, len(xs) - 1))
    w = (x - xs[j - 1]) / (xs[j] - xs[j - 1])
    return (1 - w) * v[j - 1] + w * v[j]


def hlm_prediction_check(log_sizes, logits, alm: int, elm: int, T: float) -> dict:
    """Does CD's hypothetical LM exist inside the family?

    Uses members ``alm`` and ``elm`` (indices into the N members) as CD's amateur and expert,
    computes where Theorem 1 puts the HLM, and compares CD's implied HLM logits
    ``L_CD / (1 - 1/T)`` with the family's real logits at that size (interpolated between members).
    ``logits``: ``(N, ..., V)`` over the full vocabulary so that softmax is meaningful.

    Returns a dict with ``log_size`` (ln s_HLM), the predicted and real logits (centred per
    context, since a softmax ignores offsets), and the predicted and real probabilities.
    """
    x = np.asarray(log_sizes, dtype=np.float64)
    lg = np.asarray(logits, dtype=np.float64)
    if not 0 <= alm < elm < len(x):
        raise ValueError(f"need 0 <= alm < elm < {len(x)}, got alm={alm}, elm={elm}")
    x_h = float(theory.hlm_log_size(x[elm], x[alm], T))
    pred = theory.cd_logits(lg[elm], lg[alm], T) / (1 - 1 / T)
    real = interpolate_members(x, lg, x_h)
    pred = pred - pred.mean(-1, keepdims=True)
    real = real - real.mean(-1, keepdims=True)
    return {
        "log_size": x_h,
        "pred_logits": pred,
        "real_logits": real,
        "pred_probs": softmax(pred, axis=-1),
        "real_probs": softmax(real, axis=-1),
    }


def _kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL(p || q) in nats along the last axis (0 log 0 = 0; q floored at 1e-30)."""
    return rel_entr(p, np.maximum(q, 1e-30)).sum(-1)


def _topk_renorm(logp: np.ndarray, keep: np.ndarray) -> np.ndarray:
    z = np.where(keep, logp, -np.inf)
    return softmax(z, axis=-1)


def _hlm_position_kls(x, lp, alm: int, elm: int, T: float, keep) -> dict:
    """Per position ``(P,)``: KL(real || CD's HLM) and KL(real || ELM), full vocabulary and over the
    ELM's top tokens ``keep`` ``(P, V)`` (renormalised), with the predicted, real and ELM
    probabilities and the centred logits (see :func:`hlm_vs_real_table`)."""
    out = hlm_prediction_check(x, lp, alm, elm, T)
    real_p, pred_p, elm_p = out["real_probs"], out["pred_probs"], softmax(lp[elm], axis=-1)
    real_k = _topk_renorm(out["real_logits"], keep)
    return out | {
        "elm_probs": elm_p,
        "kl_hlm": _kl(real_p, pred_p),
        "kl_elm": _kl(real_p, elm_p),
        "kl_hlm_k": _kl(real_k, _topk_renorm(out["pred_logits"], keep)),
        "kl_elm_k": _kl(real_k, _topk_renorm(lp[elm], keep)),
    }


def _in_family(x, alm: int, elm: int, T_grid) -> list[tuple[float, float]]:
    """``(T, ln s_HLM)`` for the T of ``T_grid`` whose HLM lies at or below the largest member."""
    pts = [(float(T), float(theory.hlm_log_size(x[elm], x[alm], T))) for T in T_grid]
    return [(T, x_h) for T, x_h in pts if x_h <= x[-1] + 1e-9]


def _topk_mask(lp_elm: np.ndarray, k: int) -> np.ndarray:
    return lp_elm >= np.sort(lp_elm, axis=-1)[..., -k][..., None]


def hlm_vs_real_table(log_sizes, logprobs, alm: int, elm: int, T_grid, k: int = 20) -> pd.DataFrame:
    """Compare CD's hypothetical LM with the family's real members at ln s_HLM.

    ``logprobs``: ``(N, P, V)`` next-token log-probabilities of every member at P positions.
    For every T whose ln s_HLM lies inside the family (at or below the largest member), CD built
    from members ``alm`` and ``elm`` predicts the HLM's log-probabilities as ``L_CD / (1 - 1/T)``;
    the real HLM is interpolated between the members around ln s_HLM. Reported per T, averaged
    over positions, on the full vocabulary and on the ELM's top-k (renormalised, as CD is used):
    KL(real || CD's HLM) and, as the no-extrapolation baseline, KL(real || ELM); agreement of the
    top-1 token with the real HLM; mean absolute difference of centred log-probabilities on the
    ELM's top-k tokens. Ts whose HLM falls outside the family are skipped.
    """
    x = np.asarray(log_sizes, dtype=np.float64)
    lp = np.asarray(logprobs, dtype=np.float64)
    keep = _topk_mask(lp[elm], k)
    rows = []
    for T, x_h in _in_family(x, alm, elm, T_grid):
        out = _hlm_position_kls(x, lp, alm, elm, T, keep)
        real_p, pred_p, elm_p = out["real_probs"], out["pred_probs"], out["elm_probs"]

        def centred_gap(a, out=out):
            a = np.where(keep, a, np.nan)
            b = np.where(keep, out["real_logits"], np.nan)
            a = a - np.nanmean(a, -1, keepdims=True)
            b = b - np.nanmean(b, -1, keepdims=True)
            return float(np.nanmean(np.abs(a - b)))

        rows.append(
            {
                "T": T,
                "ln s_HLM": x_h,
                "KL(real || CD-HLM), full vocab": float(out["kl_hlm"].mean()),
                "KL(real || ELM), full vocab": float(out["kl_elm"].mean()),
                f"KL(real || CD-HLM), ELM top-{k}": float(out["kl_hlm_k"].mean()),
                f"KL(real || ELM), ELM top-{k}": float(out["kl_elm_k"].mean()),
                "top-1 agrees, CD-HLM": float((pred_p.argmax(-1) == real_p.argmax(-1)).mean()),
                "top-1 agrees, ELM": float((elm_p.argmax(-1) == real_p.argmax(-1)).mean()),
                f"mean |log-prob gap|, CD-HLM, top-{k}": centred_gap(out["pred_logits"]),
                f"mean |log-prob gap|, ELM, top-{k}": centred_gap(lp[elm]),
            }
        )
    return pd.DataFrame(rows)


def hlm_gain(log_sizes, logprobs, alm: int, elm: int, T_grid, k: int = 20, groups=None):
    """Is CD's hypothetical LM closer to the real member of its size than the expert? Per position,
    KL(real || ELM) minus KL(real || CD's HLM) over the ELM's top ``k`` (nats; positive: CD's HLM is
    closer), averaged over the T of ``T_grid`` whose HLM lies inside the family; returns
    :func:`apd.core.stats.paired_difference` over positions, clustered by ``groups`` ``(P,)`` (e.g.
    the text window of each position), or None when no T falls inside the family.

    Example (a family exactly linear in log size: CD's HLM is the real member, the expert is not):
        >>> x = np.log([1e4, 1e5, 1e6, 1e7])
        >>> a, b = np.random.default_rng(0).normal(size=(2, 8, 6))
        >>> lp = np.stack([a + b * xi for xi in x]); lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
        >>> d = hlm_gain(x, lp, alm=0, elm=1, T_grid=[2.0], k=6)
        >>> d.mean > 0, d.n
        (True, 8)
    """
    x = np.asarray(log_sizes, dtype=np.float64)
    lp = np.asarray(logprobs, dtype=np.float64)
    keep = _topk_mask(lp[elm], k)
    pts = _in_family(x, alm, elm, T_grid)
    if not pts:
        return None
    kls = [_hlm_position_kls(x, lp, alm, elm, T, keep) for T, _ in pts]
    elm_kl = np.mean([o["kl_elm_k"] for o in kls], axis=0)
    hlm_kl = np.mean([o["kl_hlm_k"] for o in kls], axis=0)
    return paired_difference(elm_kl, hlm_kl, groups=groups)


def curvature_bias(curvature, log_s_elm: float, log_s_alm: float, T: float) -> float:
    """The size of the error a curvature puts into CD's hypothetical LM (log-probability units):
    ``|`` :func:`apd.core.theory.bent_extrapolation_error` ``| / (1 - 1/T)``, i.e. how far a curve
    bending by ``curvature`` (log-prob per (ln size)^2) at ln s_HLM lies from the line CD extends
    through the amateur and the expert.

    Example:
        >>> round(curvature_bias(0.1, np.log(1e5), np.log(1e4), 2.0), 3)
        1.06
    """
    err = theory.bent_extrapolation_error(curvature, log_s_elm, log_s_alm, T)
    return float(abs(err) / (1 - 1 / T))
