"""Every decoding method's next-token distribution over the ELM's top ``k`` candidates, at once:
the ELM, CD and APD at each 1/T of a grid, more amateurs scored like APD, and APD on the fly at each
mixing weight w (:func:`method_distributions`); :meth:`MethodDistributions.frame` measures each
against the world's truth (KL, nats) and the gold token (-log(p + 0.01)), one row per item. The
per-method formulas and the measures are :mod:`apd.world.truth`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from apd.core import curves
from apd.family.settings import INV_T_GRID
from apd.world.truth import (
    as_float64,
    at,
    contrastive_topk,
    gold_nll,
    kl_to_truth,
    on_the_fly_topk,
    topk_ids,
)


@dataclass
class MethodDistributions:
    """Every method's distribution over the ELM's top-k candidates.

    ids ``(B, k)``; probs: {(method, knob): ``(B, k)``}, knob = 1/T for ELM (0), CD and APD, the
    mixing weight w for "APD on the fly"; fly_fit: the on-the-fly :class:`apd.core.curves.CurveFit`
    (rows in the order of ``ids.reshape(-1)``), None when it was not fitted.
    """

    ids: np.ndarray
    probs: dict
    fly_fit: object = None

    def frame(self, truth=None, gold=None, eps: float = 0.01, **columns) -> pd.DataFrame:
        """One row per (method, knob, item): ``kl`` (needs ``truth`` ``(B, V)``) and ``nll`` (needs
        ``gold`` ``(B,)``, the gold or actual next token ids); extra per-item ``columns`` (e.g.
        bucket=...) are repeated for every method."""
        truth_k = at(truth, self.ids) if truth is not None else None
        rows = []
        B = self.ids.shape[0]
        for (method, knob), q in self.probs.items():
            part = {"method": method, "knob": float(knob), "item": np.arange(B)}
            part.update({k: np.asarray(v) for k, v in columns.items()})
            if truth_k is not None:
                part["kl"] = kl_to_truth(truth_k, q)
            if gold is not None:
                part["nll"] = gold_nll(q, self.ids, gold, eps)
            rows.append(pd.DataFrame(part))
        return pd.concat(rows, ignore_index=True)


def method_distributions(
    member_logprobs,
    alm_prime_logprobs=None,
    log_sizes=None,
    *,
    inv_T=INV_T_GRID,
    fly_weights=curves.ON_THE_FLY_WEIGHTS,
    k: int = 20,
    amateurs=None,
    **fit_kwargs,
) -> MethodDistributions:
    """ELM, CD and APD at each 1/T in ``inv_T``, and APD on the fly at each w in ``fly_weights``.

    member_logprobs ``(N, B, V)`` (ALM first, ELM last); alm_prime_logprobs ``(B, V)`` (None: no
    APD rows); log_sizes ``(N,)`` (needed for the on-the-fly fit; None or empty ``fly_weights``:
    no on-the-fly rows). ``amateurs``: {method name: ``(B, V)`` log-probabilities} of more amateurs
    (e.g. each APD variant's ALM'), each scored like APD at every 1/T under its own name.

    Example:
        >>> lp = np.log(np.full((2, 3, 5), 0.2))   # two members, three items, five tokens
        >>> md = method_distributions(lp, inv_T=(0.5, 1.0), k=2)
        >>> sorted(md.probs), md.ids.shape
        ([('CD', 0.5), ('CD', 1.0), ('ELM', 0.0)], (3, 2))
    """
    lp = as_float64(member_logprobs)
    if lp.ndim != 3 or lp.shape[0] < 2:
        raise ValueError(f"member_logprobs must be (N >= 2 members, B, V), got shape {lp.shape}.")
    elm, alm = lp[-1], lp[0]
    ids = topk_ids(elm, k)
    probs = {("ELM", 0.0): contrastive_topk(elm, alm, 0.0, ids)}
    for v in inv_T:
        probs[("CD", float(v))] = contrastive_topk(elm, alm, float(v), ids)
    if alm_prime_logprobs is not None:
        ap = as_float64(alm_prime_logprobs)
        if ap.shape != elm.shape:
            raise ValueError(f"alm_prime_logprobs {ap.shape} must match one member's {elm.shape}.")
        for v in inv_T:
            probs[("APD", float(v))] = contrastive_topk(elm, ap, float(v), ids)
    for name, lp_am in (amateurs or {}).items():
        am = as_float64(lp_am)
        if am.shape != elm.shape:
            raise ValueError(f"amateurs[{name!r}] has shape {am.shape}; it must match one member's {elm.shape}.")
        if name in ("ELM", "CD", "APD", "APD on the fly"):
            raise ValueError(f"amateur name {name!r} is taken by a built-in method; name it e.g. 'APD {name}'.")
        for v in inv_T:
            probs[(name, float(v))] = contrastive_topk(elm, am, float(v), ids)
    fit = None
    if log_sizes is not None and len(fly_weights):
        p_elm, p_ap, fit = on_the_fly_topk(lp, log_sizes, ids, **fit_kwargs)
        for w in fly_weights:
            probs[("APD on the fly", float(w))] = curves.mix_on_the_fly(
                torch.as_tensor(p_elm), torch.as_tensor(p_ap), float(w)
            ).numpy()
    return MethodDistributions(ids=ids, probs=probs, fly_fit=fit)
