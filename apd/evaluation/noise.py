"""The family's own noise, :func:`family_noise`: the root mean square, in probability units, of the
members' distance from the on-the-fly fitter's curve through them.

The book measures it two ways, which give different numbers on one family; each use keeps its own:

- :data:`HELD_OUT`, **held out** (the testbed controls, :func:`apd.evaluation.controls.measure_controls`):
  on the dev world questions, each inner member j (neither the smallest nor the expert) is left out
  in turn, a curve is fitted per token to the other N - 1 members
  (:func:`apd.world.truth.on_the_fly_topk`: :data:`apd.core.curves.TUNED_FIT`, ``iterations`` steps)
  and read at x_j; the residual is that prediction minus member j's probability, the probabilities
  renormalised over the expert's top k. RMS over j = 1..N-2, questions and the k tokens.
  The known-answer chapter (:mod:`apd.chapters.known_answer`) measures it the same way on the same
  dev questions, as the noise of its truth-like synthetic families.
- :data:`IN_SAMPLE`, **in sample** (the known-answer chapter's fallback where no world is scored):
  the distilled ALM''s gate ``l1_curve`` (:func:`apd.amateur.gates.measure_gates`, recorded by the
  APD chapter as ``distilled_l1_curve``): on the held-out validation chunks, a curve is fitted per
  token to *all* the members it was distilled from (:func:`apd.amateur.distill.fit_member_curves`,
  ``DISTILL_FIT["fit"]``: TUNED_FIT, 200 steps) and read at the same members; the residual is the
  curve minus the probabilities at every member but the expert (the smallest included), the
  probabilities renormalised over the whole collected token set, then its first ``top_k`` kept. RMS
  over positions, the ``top_k`` tokens and N - 1 members. The gates measure it in the amateur stage,
  before this one; here it is read, not recomputed.

So the two differ in whether the member a residual is read at took part in the fit (held out / in
sample), which members count (inner ones / all but the expert), the renormalisation (top k / token
set), the text (world questions / held-out text) and the fitter's steps.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import softmax

from apd.core import curves
from apd.world import truth as wt

#: Leave one inner member out, predict it from the curve fitted to the others (the testbed controls).
HELD_OUT = "held_out"
#: The distilled ALM''s gate L1: the curve fitted to every member, read at the same members (the
#: known-answer chapter's fallback for a family without a world).
IN_SAMPLE = "in_sample"
METHODS = (HELD_OUT, IN_SAMPLE)


def family_noise(
    method: str,
    *,
    member_logprobs=None,
    log_sizes=None,
    ids=None,
    iterations: int = 400,
    gates_l1_curve=None,
    device=None,
) -> float | None:
    """The family's own noise sd (probability units), measured by ``method`` (see the module
    docstring for how the two differ):

    - :data:`HELD_OUT`: from ``member_logprobs`` ``(N, B, V)`` (smallest first, N >= 4),
      ``log_sizes`` ``(N,)`` and the candidates ``ids`` ``(B, k)``, each fit ``iterations`` steps on
      ``device`` (default: the CPU); always a float.
    - :data:`IN_SAMPLE`: the distilled ALM''s gate L1 ``gates_l1_curve`` as the APD chapter recorded
      it (:attr:`apd.amateur.gates.Gates.l1_curve`); None when it is not a positive number (not
      measured).

    Example (curves exactly on the fitter's family: the held-out residual is small):
        >>> x = np.array([9.5, 10.3, 11.5, 12.7, 14.4])
        >>> p = 0.5 - 0.3 * np.exp(-0.8 * (x - 9.5))
        >>> lp = np.log(np.stack([np.stack([[q, 1 - q]]) for q in p]))   # (N, 1, 2)
        >>> family_noise(HELD_OUT, member_logprobs=lp, log_sizes=x, ids=np.array([[0, 1]])) < 0.01
        True
        >>> family_noise(IN_SAMPLE, gates_l1_curve=0.047), family_noise(IN_SAMPLE, gates_l1_curve="n/a")
        (0.047, None)
    """
    if method == HELD_OUT:
        if member_logprobs is None or log_sizes is None or ids is None:
            raise ValueError("the held-out family noise needs member_logprobs, log_sizes and ids.")
        return _held_out(member_logprobs, log_sizes, ids, iterations, device)
    if method == IN_SAMPLE:
        v = gates_l1_curve
        return float(v) if isinstance(v, (int, float)) and v > 0 else None
    raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}.")


def _topk_probs(member_logprobs, ids) -> np.ndarray:
    """Every member's probabilities renormalised over the candidates ``ids``: ``(N, B, k)``."""
    lp = np.asarray(member_logprobs, dtype=np.float64)
    return softmax(np.take_along_axis(lp, np.broadcast_to(ids, lp.shape[:1] + ids.shape), axis=-1), axis=-1)


def _held_out(member_logprobs, log_sizes, ids, iterations: int, device=None) -> float:
    """:data:`HELD_OUT`: RMS over the candidates ``ids`` ``(B, k)`` of (curve fitted without member
    j, at x_j) minus member j's probability, j over the inner members (probability units, over the
    top k as APD on the fly sees them). member_logprobs ``(N, B, V)``."""
    lp = np.asarray(member_logprobs, dtype=np.float64)
    x = np.asarray(log_sizes, dtype=np.float64)
    if lp.shape[0] < 4:
        raise ValueError(
            f"a held-out residual needs at least 4 members (3 to fit, 1 inner to predict), got {lp.shape[0]}."
        )
    p = _topk_probs(lp, ids)
    sq = []
    for j in range(1, lp.shape[0] - 1):
        keep = [i for i in range(lp.shape[0]) if i != j]
        _, _, fit = wt.on_the_fly_topk(lp[keep], x[keep], ids, iterations=iterations, device=device)
        with torch.no_grad():
            xj = torch.tensor([x[j]], dtype=fit.c.dtype, device=fit.c.device)
            at_j = curves.get_decay(fit.decay)(xj, fit.c, fit.params)[:, 0]
            pred = curves.flip_values(at_j, fit.flipped).double().cpu().numpy().reshape(ids.shape)
        sq.append((pred - p[j]) ** 2)
    return float(np.sqrt(np.mean(sq)))
