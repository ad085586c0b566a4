"""Mechanism gates: did APD's objective engage for a trained ALM'?

Measured on held-out collected positions, over the ELM's top ``top_k`` tokens of each token set
(members' probabilities and c renormalised over those tokens; c = softmax of L_ELM - L_ALM', T = 1):

- *curve alive*: median |curve(x_ALM) - c| over the median ALM-ELM spread |p_ALM - p_ELM| (about 0:
  the MLP draws a flat line at c), and the L1 of the MLP's curves against the L1 of a flat curve at c,
  both in the space the MLP models (log-probabilities for the "logit" ablation);
- *not trivial*: the paper's objective L = L1 + lambda2 L2 + lambda3 L3 (the run's own lambdas, in
  probabilities) at four solutions (:data:`SOLUTIONS`): the trained ALM'; the attainable one (the
  on-the-fly fitter's curves, their asymptotes renormalised as c, the smallest L3 that realises that c);
  the expert (c = p_ELM, flat curve); CD (ALM' = ALM, flat curve). The gap share g = (L_trivial -
  L_trained) / (L_trivial - L_attainable), L_trivial = min(L_expert, L_CD), must be at least
  ``gap_min``; when L_attainable >= L_trivial there is no attainable gain and the gate fails;
- *moved*: KL(ALM || ALM') over the tokens, nats, mean over positions.

Beside the gates, as context: the share of tokens at the expert (|c - p_ELM| <= ``collapse_tol``) of
each solution, and ``toward_expert``, APD between CD and the expert: the least-squares beta of
c_APD - c_CD = beta (p_ELM - c_CD) over the tokens (0: APD is CD at T = 1; 1: APD is the expert).

The measurement itself needs no model (:func:`gates_at`, on :class:`Solution` arrays); :func:`measure_gates`
runs the models on the collected chunks and feeds it. The thresholds live in :data:`THRESHOLDS`, and
nowhere else.

A distilled run (``objective="distill"``, no curve MLP) is trained to make its c match the
asymptotes the on-the-fly fitter finds (:data:`apd.amateur.distill.DISTILL_FIT`). The fitter's curves
are alive by construction (it is refitted on the same tokens), so for a distilled run *curve alive* is
replaced by **fidelity**: the c of ALM' itself must be closer to the fitter's targets than the expert's
probability is, KL(target || c_APD) < ``fidelity_ratio_max`` x KL(target || p_ELM), mean over held-out
positions (CD at T = 1, KL(target || c_CD), is measured beside them). Its objective is that distance,
so its gap share is g = (F_trivial - F_APD) / F_trivial with F = KL(target || .) and F_trivial =
min(F_ELM, F_CD). The refitted curves' alive ratio and L1 are still measured, as context; that
L1 (the fitter refitted on every member, read at every member but the expert) is the family's own
noise *in sample* the known-answer condition uses (``apd.evaluation.noise.IN_SAMPLE``).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch

from apd.amateur import collect
from apd.amateur.distill import DISTILL_FIT, fit_member_curves
from apd.amateur.objective import (
    CurveMLP,
    asymptote,
    loss_l1,
    loss_l2,
    loss_l3,
    member_values,
    predict_curves,
)
from apd.base.checks import bounded, number
from apd.base.device import cpu_threads, resolve_device
from apd.core import curves

#: the four solutions at which *not trivial* reads the paper's objective, in the order of the page's table
SOLUTIONS = ("trained", "attainable", "expert", "cd")

#: the attainable solution's asymptotes are raised to at least this before they are renormalised: the
#: fitter clamps an asymptote at 0, which only an infinite logit realises; 1e-4 is far below the 0.005 at
#: which the gates read probabilities, so L1 and L2 move by at most that much on such a token
C_FLOOR = 1e-4


@dataclass(frozen=True)
class Thresholds:
    """When a gate passes. ``alive_min``: curve-alive ratio at least this (a curve that moves a
    quarter of the ALM-ELM spread away from c); the MLP's L1 must also be below a flat curve's.
    ``gap_min``: *not trivial* passes when the trained ALM' closes at least this share of the objective's
    gap from the better trivial solution (the expert or CD) to the attainable one (0.5: more than half
    of the attainable gain realised). ``collapse_tol``: the probability distance that counts as "at the
    expert" (context beside the gate). ``moved_min``: KL(ALM || ALM') at least this (nats):
    ALM' must differ from the ALM by more than round-off and regularisation noise, or APD is CD under
    another name (design notes: a conditioned run held at the ALM by lambda3 = 2.4 moved 0.002 nats and
    sat 0.02 of the way from CD to the expert, its KL to the truth within 0.0003 nats of CD's).
    ``fidelity_ratio_max``: a distilled ALM' passes *fidelity* when KL(target || c_APD) is below this
    times KL(target || p_ELM) (1: closer to its targets than the expert it starts from; inf: the
    fidelity gate is off and the refitted curves' *curve alive* stands in)."""

    alive_min: float = 0.25
    gap_min: float = 0.5
    collapse_tol: float = 0.005
    moved_min: float = 1e-2
    fidelity_ratio_max: float = 1.0

    def __post_init__(self):
        for name in ("alive_min", "moved_min"):
            bounded(f"Thresholds.{name}", getattr(self, name), 0)
        for name in ("gap_min", "collapse_tol"):  # a share of the gap, a probability distance
            bounded(f"Thresholds.{name}", getattr(self, name), 0, maximum=1)
        if not number("Thresholds.fidelity_ratio_max", self.fidelity_ratio_max) > 0:
            raise ValueError(
                f"Thresholds.fidelity_ratio_max must be a number > 0 (inf: the fidelity gate off), "
                f"got {self.fidelity_ratio_max!r}."
            )


#: looser thresholds, shown beside :data:`THRESHOLDS` as a sensitivity row: *moved* at 1e-3 nats, the
#: distilled variant's *curve alive* read from the fitter's refit (no fidelity gate)
LOOSE_THRESHOLDS = Thresholds(moved_min=1e-3, fidelity_ratio_max=math.inf)


THRESHOLDS = Thresholds()

#: *not trivial*'s reasons when it fails
NO_GAIN = "no attainable gain on the objective"
NEAR_TRIVIAL = "ALM' near a trivial solution"
NOT_MEASURED = "objective not measured"


@dataclass
class Gates:
    """The gate measurements of one ALM' (see the module docstring) and whether each passes.

    The objective at each solution of :data:`SOLUTIONS` is held flat: ``l1_<s>``, ``l2_<s>``, ``l3_<s>``
    and ``loss_<s>`` (NaN for a distilled run, whose objective is its fidelity KL), with the share of
    its tokens at the expert (``collapsed`` for the trained ALM', ``collapsed_<s>`` for the others).
    """

    curve_alive: float
    l1_curve: float
    l1_flat: float
    collapsed: float
    collapsed_cd: float
    moved_kl: float
    toward_expert: float
    n_positions: int
    n_tokens: int
    fidelity_apd: float = math.nan  # distilled runs: KL(target || c_APD), nats (NaN otherwise)
    fidelity_elm: float = math.nan  # KL(target || p_ELM)
    fidelity_cd: float = math.nan  # KL(target || c_CD at T = 1)
    lambda2: float = math.nan  # the run's own weights, read from its training record
    lambda3: float = math.nan
    l1_trained: float = math.nan  # the objective at the trained ALM' and its curve MLP (probabilities)
    l2_trained: float = math.nan
    l3_trained: float = math.nan
    loss_trained: float = math.nan
    l1_attainable: float = math.nan  # ... at the attainable solution (the on-the-fly fitter's curves)
    l2_attainable: float = math.nan
    l3_attainable: float = math.nan
    loss_attainable: float = math.nan
    l1_expert: float = math.nan  # ... at the expert (c = p_ELM, flat curve)
    l2_expert: float = math.nan
    l3_expert: float = math.nan
    loss_expert: float = math.nan
    l1_cd: float = math.nan  # ... at CD (ALM' = ALM, flat curve)
    l2_cd: float = math.nan
    l3_cd: float = math.nan
    loss_cd: float = math.nan
    collapsed_attainable: float = math.nan  # share of tokens at the expert: the attainable solution's c
    collapsed_expert: float = math.nan  # the expert's (1 up to the ELM's stored precision)
    curve_alive_attainable: float = math.nan  # *curve alive* and *moved* read on the other solutions:
    l1_curve_attainable: float = math.nan  # the gates' checks both ways (:meth:`checks`)
    l1_flat_attainable: float = math.nan
    moved_kl_attainable: float = math.nan
    curve_alive_expert: float = math.nan
    l1_curve_expert: float = math.nan
    l1_flat_expert: float = math.nan
    moved_kl_expert: float = math.nan
    curve_alive_cd: float = math.nan
    l1_curve_cd: float = math.nan
    l1_flat_cd: float = math.nan
    moved_kl_cd: float = math.nan
    thresholds: Thresholds = field(default_factory=Thresholds)

    @property
    def distilled(self) -> bool:
        """A distilled run (its fidelity was measured)."""
        return math.isfinite(self.fidelity_apd)

    @property
    def fidelity(self) -> bool:
        """The c of ALM' is closer to its distillation targets than p_ELM (True for runs with a curve MLP)."""
        if not self.distilled:
            return True
        return bool(self.fidelity_apd < self.thresholds.fidelity_ratio_max * self.fidelity_elm)

    @property
    def alive(self) -> bool:
        """*curve alive*, or for a distilled run (fidelity gate on) *fidelity*."""
        if self.distilled and math.isfinite(self.thresholds.fidelity_ratio_max):
            return self.fidelity
        return bool(self.curve_alive >= self.thresholds.alive_min and self.l1_curve < self.l1_flat)

    def _gap(self) -> tuple[float, float, float]:
        """(trivial, attainable, trained) on the objective: L, or for a distilled run F = KL(target || .)."""
        if self.distilled:
            return min(self.fidelity_elm, self.fidelity_cd), 0.0, self.fidelity_apd
        return min(self.loss_expert, self.loss_cd), self.loss_attainable, self.loss_trained

    @property
    def gap_share(self) -> float:
        """g = (L_trivial - L_trained) / (L_trivial - L_attainable): 0 at the better trivial solution, 1
        at the attainable one; NaN when there is no attainable gain (or the objective was not measured).

        Example:
            >>> g = Gates(0.5, 0.01, 0.02, 0.3, 0.2, 0.1, 0.4, 10, 200, loss_trained=0.5,
            ...           loss_attainable=0.0, loss_expert=1.0, loss_cd=1.25)
            >>> g.gap_share, g.not_trivial
            (0.5, True)
        """
        return self.share_of(self._gap()[2])

    def share_of(self, loss: float) -> float:
        """The gap share of any solution whose objective is ``loss``: 1 for the attainable solution, at
        most 0 for the trivial ones (the gate's positive and negative checks, shown beside the trained
        ALM'); NaN when there is no attainable gain.

        Example:
            >>> g = Gates(0.5, 0.01, 0.02, 0.3, 0.2, 0.1, 0.4, 10, 200, loss_trained=0.5,
            ...           loss_attainable=0.0, loss_expert=1.0, loss_cd=1.25)
            >>> g.share_of(0.0), g.share_of(1.0), g.share_of(1.25)
            (1.0, 0.0, -0.25)
        """
        trivial, best, _ = self._gap()
        if not all(math.isfinite(v) for v in (trivial, best, loss)) or not trivial > best:
            return math.nan
        return (trivial - loss) / (trivial - best)

    @property
    def not_trivial(self) -> bool:
        """The trained ALM' closes at least ``gap_min`` of the objective's gap (False without a gain to attain)."""
        return bool(self.gap_share >= self.thresholds.gap_min)  # NaN compares False

    @property
    def on_expert(self) -> bool:
        """*not trivial* fails and APD sits nearer the expert than CD (``toward_expert`` at least 0.5)."""
        return bool(not self.not_trivial and self.toward_expert >= 0.5)

    @property
    def moved(self) -> bool:
        return bool(self.moved_kl >= self.thresholds.moved_min)

    @property
    def engaged(self) -> bool:
        """All three gates pass: APD's mechanism was exercised."""
        return self.alive and self.not_trivial and self.moved

    @property
    def reason(self) -> str:
        """The failed gates in words ("" when every gate passes)."""
        failed = []
        if not self.alive:
            failed.append(
                "ALM' does not realise its distillation targets (fidelity)"
                if self.distilled and math.isfinite(self.thresholds.fidelity_ratio_max)
                else "curve model inert"
            )
        if not self.not_trivial:
            trivial, best, got = self._gap()
            if not all(math.isfinite(v) for v in (trivial, best, got)):
                failed.append(NOT_MEASURED)
            else:
                failed.append(NEAR_TRIVIAL if trivial > best else NO_GAIN)
        if not self.moved:
            failed.append("ALM' did not move from the ALM")
        return "; ".join(failed)

    def checks(self) -> list[dict]:
        """Each gate read on each solution of :data:`SOLUTIONS` under this run's thresholds: the trained
        ALM' row is the gates' reading, the attainable solution's is their positive check and the
        trivial ones' (the expert, CD) their negative checks. One dict per solution: ``curve alive``
        (the ratio), ``alive``, ``gap share``, ``not trivial``, ``moved KL`` and ``moved``. Not trivial
        needs an attainable gain: without one it fails for every solution. A distilled run's rows other
        than the trained one are NaN.

        Example:
            >>> g = Gates(0.0, 0.02, 0.02, 0.3, 0.2, 0.0, 0.4, 10, 200, loss_trained=1.0, loss_attainable=0.5,
            ...           loss_expert=1.0, loss_cd=1.3, curve_alive_attainable=0.4, l1_curve_attainable=0.01,
            ...           l1_flat_attainable=0.02, moved_kl_attainable=0.8, moved_kl_cd=0.0)
            >>> [(r["solution"], r["alive"], r["not trivial"], r["moved"]) for r in g.checks()][:2]
            [('trained', False, False, False), ('attainable', True, True, True)]
        """
        th, rows = self.thresholds, []
        for s in SOLUTIONS:
            own = s == "trained"
            alive, l1, flat, moved = (
                getattr(self, name if own else f"{name}_{s}")
                for name in ("curve_alive", "l1_curve", "l1_flat", "moved_kl")
            )
            gap = self.share_of(self._gap()[2] if own else self._solution_loss(s))
            rows.append(
                {
                    "solution": s,
                    "curve alive": alive,
                    "alive": self.alive if own else bool(alive >= th.alive_min and l1 < flat),
                    "gap share": gap,
                    "not trivial": bool(gap >= th.gap_min),
                    "moved KL": moved,
                    "moved": bool(moved >= th.moved_min),
                }
            )
        return rows

    def _solution_loss(self, s: str) -> float:
        """The objective at solution ``s`` (a distilled run: its distance to the fitter's targets)."""
        if self.distilled:
            return {"attainable": 0.0, "expert": self.fidelity_elm, "cd": self.fidelity_cd}[s]
        return getattr(self, f"loss_{s}")

    def objective_rows(self) -> list[dict]:
        """The four solutions' L1, L2, L3, L and share of tokens at the expert, one dict each (for the
        page's table). A distilled run's L is its distance to the fitter's targets, KL(target || c)
        (0 at the attainable solution, the targets themselves), and its L1 to L3 are NaN.

        Example:
            >>> g = Gates(0.5, 0.01, 0.02, 0.3, 0.2, 0.1, 0.4, 10, 200, fidelity_apd=0.1, fidelity_elm=0.4,
            ...           fidelity_cd=0.5)
            >>> [(r["solution"], r["L"]) for r in g.objective_rows()]
            [('trained', 0.1), ('attainable', 0.0), ('expert', 0.4), ('cd', 0.5)]
        """
        share = dict(
            trained=self.collapsed,
            attainable=self.collapsed_attainable,
            expert=self.collapsed_expert,
            cd=self.collapsed_cd,
        )
        fid = dict(trained=self.fidelity_apd, attainable=0.0, expert=self.fidelity_elm, cd=self.fidelity_cd)
        return [
            {
                "solution": s,
                "L1": getattr(self, f"l1_{s}"),
                "L2": getattr(self, f"l2_{s}"),
                "L3": getattr(self, f"l3_{s}"),
                "L": fid[s] if self.distilled else getattr(self, f"loss_{s}"),
                "share at the expert": share[s],
            }
            for s in SOLUTIONS
        ]

    @classmethod
    def from_dict(cls, d: dict) -> "Gates":
        """The inverse of :meth:`to_dict` (pass flags are recomputed from the measurements and thresholds).

        Example:
            >>> g = Gates(0.5, 0.01, 0.02, 0.3, 0.2, 0.1, 0.4, 10, 200)
            >>> Gates.from_dict(g.to_dict()) == g
            True
        """
        names = [f.name for f in fields(cls) if f.name != "thresholds"]
        th = Thresholds(**{f.name: d[f"threshold_{f.name}"] for f in fields(Thresholds) if f"threshold_{f.name}" in d})
        return cls(**{k: d[k] for k in names if k in d}, thresholds=th)

    def under(self, thresholds: Thresholds) -> "Gates":
        """The same measurements read under other ``thresholds`` (e.g. :data:`LOOSE_THRESHOLDS`).

        Example:
            >>> g = Gates(0.5, 0.01, 0.02, 0.3, 0.2, 0.005, 0.4, 10, 200)
            >>> g.moved, g.under(LOOSE_THRESHOLDS).moved
            (False, True)
        """
        return Gates(
            **{f.name: getattr(self, f.name) for f in fields(self) if f.name != "thresholds"}, thresholds=thresholds
        )

    def to_dict(self) -> dict:
        """Measurements, pass flags and thresholds as plain values (for results JSON and tables)."""
        d = {k: v for k, v in asdict(self).items() if k != "thresholds"}
        d.update(
            gap_share=self.gap_share,
            alive=self.alive,
            fidelity=self.fidelity,
            not_trivial=self.not_trivial,
            on_expert=self.on_expert,
            moved=self.moved,
            engaged=self.engaged,
            reason=self.reason or "all gates pass",
        )
        d.update({f"threshold_{k}": v for k, v in asdict(self.thresholds).items()})
        return d


# -- the measurement, without models -----------------------------------------------------------------


@dataclass
class Solution:
    """One point of the paper's objective at P positions' K tokens: the ALM' logits ``prime`` (P, K),
    whose asymptote softmax(L_ELM - L_ALM') over the K tokens is APD's c; the curve through the N
    members ``curve`` (P, K, N; probabilities, unflipped); and that curve's own asymptote ``c`` (P, K),
    APD's c for a curve MLP's or a flat curve, the fitter's unnormalised asymptote for the fitter's."""

    prime: torch.Tensor
    curve: torch.Tensor
    c: torch.Tensor


def realising_logits(elm: torch.Tensor, alm: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """The ALM' logits nearest the ALM's (least squares: the smallest L3) whose asymptote is ``c``.

    softmax(L_ELM - L') = c fixes L' = L_ELM - ln c up to one shift per position; the shift that
    minimises mean (L' - L_ALM)^2 is the mean of L_ALM - L_ELM + ln c, so L3 is the standard deviation
    over the tokens of L_ELM - L_ALM - ln c (pooled over positions). elm, alm, c: (..., K).

    Example:
        >>> elm, alm = torch.tensor([[2.0, 1.0, 0.0]]), torch.tensor([[1.0, 1.0, 1.0]])
        >>> prime = realising_logits(elm, alm, torch.softmax(elm - alm, -1))   # CD's c: ALM' = ALM
        >>> torch.allclose(prime, alm)
        True
    """
    d = elm - torch.log(c) - alm
    return alm + d - d.mean(-1, keepdim=True)


def flat_solution(elm: torch.Tensor, prime: torch.Tensor, n_members: int) -> Solution:
    """The solution with ALM' logits ``prime`` and a flat curve at its c over ``n_members`` members."""
    c = asymptote(elm, prime)
    return Solution(prime, c[..., None].expand(*c.shape, n_members), c)


def expert_solution(member_logprobs: torch.Tensor, elm: torch.Tensor, alm: torch.Tensor) -> Solution:
    """c = p_ELM (the ELM member's probabilities over the tokens), a flat curve at c, and the ALM'
    nearest the ALM that realises it (L3 = the standard deviation of L_ALM over the tokens).
    member_logprobs (N, P, K), elm, alm (P, K)."""
    p_elm = member_values(member_logprobs[-1])
    return flat_solution(elm, realising_logits(elm, alm, p_elm), member_logprobs.shape[0])


def cd_solution(member_logprobs: torch.Tensor, elm: torch.Tensor, alm: torch.Tensor) -> Solution:
    """ALM' = ALM: c = c_CD at T = 1, a flat curve at c, L3 = 0."""
    return flat_solution(elm, alm, member_logprobs.shape[0])


def attainable_solution(
    member_logprobs: torch.Tensor,
    elm: torch.Tensor,
    alm: torch.Tensor,
    log_sizes,
    fit: dict | None = None,
    *,
    flip: bool = True,
) -> Solution:
    """The on-the-fly fitter's solution: every token's curve fitted to its members (probabilities
    renormalised over the K tokens; :func:`apd.amateur.distill.fit_member_curves` with ``fit``, default
    :data:`apd.amateur.distill.DISTILL_FIT`'s) as the curve, with its own asymptote; the asymptotes,
    raised to :data:`C_FLOOR` and renormalised over the tokens, as APD's c; and the ALM' that realises
    that c with the smallest L3 (:func:`realising_logits`). member_logprobs (N, P, K), elm, alm (P, K);
    ``flip``: the fitter flips rising curves, as the paper's objective does (False for a run without R(.)).

    Example (two tokens whose members approach 0.7 and 0.3):
        >>> import math
        >>> x = [9.45, 10.25, 11.51, 12.72, 13.58, 14.39]
        >>> p = torch.tensor([0.7 - 0.4 * math.exp(-0.6 * (v - 9.45)) for v in x])
        >>> lp = torch.log(torch.stack([p, 1 - p], -1))[:, None, :]          # (N, P=1, K=2)
        >>> sol = attainable_solution(lp, lp[-1], lp[0], x)
        >>> [round(v, 2) for v in asymptote(lp[-1], sol.prime)[0].tolist()]
        [0.7, 0.3]
    """
    p = member_values(member_logprobs).movedim(0, -1)  # (P, K, N)
    fit = fit_member_curves(p.reshape(-1, p.shape[-1]).cpu(), log_sizes, dict(fit or DISTILL_FIT["fit"], flip=flip))
    x = torch.as_tensor(log_sizes, dtype=fit.params.dtype)
    drawn = curves.get_decay(fit.decay)(x, fit.c, fit.params)  # (P K, N), flipped
    curve = curves.flip_values(drawn, fit.flipped[:, None]).reshape(p.shape).to(p)
    own = curves.flip_values(fit.c, fit.flipped).reshape(p.shape[:-1]).to(p)  # each curve's own asymptote
    a = fit.asymptote.reshape(p.shape[:-1]).to(p).clamp_min(C_FLOOR)
    return Solution(realising_logits(elm, alm, a / a.sum(-1, keepdim=True)), curve, own)


def objective_terms(member_logprobs, alm, sol: Solution, *, lambda2: float, lambda3: float, flip: bool = True) -> dict:
    """The paper's losses at one solution, in probabilities (:func:`apd.amateur.objective.loss_l1`,
    ``loss_l2``, ``loss_l3``; members flipped as in training when ``flip``): ``l1``, ``l2``, ``l3`` and
    ``loss`` = l1 + lambda2 l2 + lambda3 l3. member_logprobs (N, P, K), alm (P, K).

    Example (CD: a flat curve at c_CD and ALM' = ALM, so L3 = 0):
        >>> lp = torch.log(torch.tensor([[[0.6, 0.4]], [[0.5, 0.5]], [[0.3, 0.7]]]))   # (N=3, P=1, K=2)
        >>> t = objective_terms(lp, lp[0], cd_solution(lp, lp[-1], lp[0]), lambda2=10.0, lambda3=1.0)
        >>> t["l3"], round(t["loss"], 4) == round(t["l1"] + 10 * t["l2"], 4)
        (0.0, True)
    """
    p = member_values(member_logprobs).movedim(0, -1)  # (P, K, N)
    flipped = curves.flip_mask(p[..., :1], p[..., -1:]) if flip else torch.zeros_like(p[..., :1], dtype=torch.bool)
    target, drawn = curves.flip_values(p, flipped), curves.flip_values(sol.curve, flipped)
    l1, l2, l3 = (float(v) for v in (loss_l1(drawn, target), loss_l2(drawn, target), loss_l3(sol.prime, alm)))
    return dict(l1=l1, l2=l2, l3=l3, loss=l1 + lambda2 * l2 + lambda3 * l3)


def at_expert(member_logprobs, elm, prime, tol: float) -> float:
    """Share of tokens whose c = softmax(L_ELM - L_ALM') lies within ``tol`` of p_ELM."""
    p_elm = member_values(member_logprobs[-1])
    return float(((asymptote(elm, prime) - p_elm).abs() <= tol).double().mean())


def gate_readings(member_logprobs, elm, alm, trained: Solution, *, space: str = "prob", collapse_tol: float) -> dict:
    """*curve alive* (its ratio, the curves' L1 and a flat line's, in ``space``), the shares at the expert
    of ALM' and of CD, *moved* (KL(ALM || ALM')) and ``toward_expert`` of the ``trained`` solution.
    member_logprobs (N, P, K); elm, alm (P, K)."""
    to_space = (lambda q: q) if space == "prob" else (lambda q: q.clamp_min(1e-30).log())  # noqa: E731
    v = member_values(member_logprobs, space).movedim(0, -1)  # (P, K, N)
    curve, c = to_space(trained.curve), to_space(trained.c)
    p_elm = member_values(member_logprobs[-1])
    c_apd, c_cd = asymptote(elm, trained.prime), asymptote(elm, alm)
    q_alm, q_prime = torch.log_softmax(alm, -1), torch.log_softmax(trained.prime, -1)
    spread = float((v[..., 0] - v[..., -1]).abs().median())
    return dict(
        curve_alive=float((curve[..., 0] - c).abs().median()) / max(spread, 1e-12),
        l1_curve=float(loss_l1(curve, v)),
        l1_flat=float(loss_l1(c[..., None].expand_as(v), v)),
        collapsed=at_expert(member_logprobs, elm, trained.prime, collapse_tol),
        collapsed_cd=at_expert(member_logprobs, elm, alm, collapse_tol),
        moved_kl=float((q_alm.exp() * (q_alm - q_prime)).sum(-1).mean()),
        toward_expert=float(((c_apd - c_cd) * (p_elm - c_cd)).sum() / ((p_elm - c_cd) ** 2).sum().clamp_min(1e-30)),
    )


def gates_at(
    member_logprobs,
    elm,
    alm,
    trained: Solution,
    attainable: Solution | None,
    *,
    lambda2: float,
    lambda3: float,
    flip: bool = True,
    space: str = "prob",
    thresholds: Thresholds = THRESHOLDS,
) -> Gates:
    """The gates of the ``trained`` solution, with ``attainable`` as the objective's best reachable point:
    the whole measurement at P positions' K tokens, without models. member_logprobs (N, P, K) (ALM
    first); elm, alm (P, K) raw logits; every solution's arrays as in :class:`Solution`. ``attainable``
    None (the fitter needs 3 members): its rows are NaN and *not trivial* reads "objective not measured".

    Example (the attainable solution in the trained slot closes the whole gap):
        >>> import math
        >>> x = [9.45, 10.25, 11.51, 12.72, 13.58, 14.39]
        >>> p = torch.tensor([0.7 - 0.4 * math.exp(-0.6 * (v - 9.45)) for v in x])
        >>> lp = torch.log(torch.stack([p, 1 - p], -1))[:, None, :]
        >>> best = attainable_solution(lp, lp[-1], lp[0], x)
        >>> gates_at(lp, lp[-1], lp[0], best, best, lambda2=10.0, lambda3=0.1).gap_share
        1.0
    """
    lp, elm, alm = (torch.as_tensor(t).double() for t in (member_logprobs, elm, alm))
    trained = _double(trained)
    sols = dict(
        trained=trained,
        attainable=_double(attainable),
        expert=expert_solution(lp, elm, alm),
        cd=cd_solution(lp, elm, alm),
    )
    rows = {}
    for name, sol in sols.items():
        if sol is None:
            continue
        terms = objective_terms(lp, alm, sol, lambda2=lambda2, lambda3=lambda3, flip=flip)
        rows.update({f"{term}_{name}": value for term, value in terms.items()})
        if name in ("attainable", "expert"):  # the trained ALM's and CD's: gate_readings
            rows[f"collapsed_{name}"] = at_expert(lp, elm, sol.prime, thresholds.collapse_tol)
        if name != "trained":  # the gates' checks both ways: each gate read on the other solutions
            rows.update(_checked(lp, elm, alm, name, sol, space, thresholds))
    return Gates(
        **gate_readings(lp, elm, alm, trained, space=space, collapse_tol=thresholds.collapse_tol),
        n_positions=int(elm.shape[0]),
        n_tokens=int(elm.numel()),
        lambda2=float(lambda2),
        lambda3=float(lambda3),
        **rows,
        thresholds=thresholds,
    )


def _checked(lp, elm, alm, name: str, sol: Solution, space: str, thresholds: Thresholds) -> dict:
    """*curve alive* and *moved* read on solution ``sol`` (``name``): its fields of :class:`Gates`."""
    r = gate_readings(lp, elm, alm, sol, space=space, collapse_tol=thresholds.collapse_tol)
    return {f"{k}_{name}": r[k] for k in ("curve_alive", "l1_curve", "l1_flat", "moved_kl")}


def _double(sol: Solution | None) -> Solution | None:
    return None if sol is None else Solution(*(torch.as_tensor(t).double() for t in (sol.prime, sol.curve, sol.c)))


@torch.no_grad()
def measure_gates(
    alm_prime, collect_dir, *, max_chunks: int = 8, top_k: int = 20, device=None, thresholds: Thresholds = THRESHOLDS
) -> Gates:
    """Gates of the ALM' in ``alm_prime`` (its ``alm_prime/`` folder, with ``curve_mlp.pt``) on the
    first ``max_chunks`` chunks of the collection ``collect_dir`` (use a held-out collection for the
    L1 comparison to be out of sample): runs ALM' (and its curve MLP on the top ``top_k`` tokens,
    renormalised over them) and the on-the-fly fitter, then :func:`gates_at` (a distilled run: its
    fidelity), at the run's own lambda2 and lambda3 (its ``apd_train_config.json``).

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> result = apd.apd_model(fam, built, scale="smoke", progress=False)
        >>> g = apd.amateur.gates.measure_gates(result.alm_prime_path, result.collect_dir, max_chunks=2, device="cpu")
        >>> sorted(g.to_dict())[:3]
        ['alive', 'collapsed', 'collapsed_attainable']
    """
    dev = resolve_device(device)
    with cpu_threads(1 if dev.type == "cpu" else None):  # small models: one thread (see apd.amateur.train)
        return _measure_gates(
            alm_prime, collect_dir, max_chunks=max_chunks, top_k=top_k, device=dev, thresholds=thresholds
        )


@torch.no_grad()
def _measure_gates(
    alm_prime, collect_dir, *, max_chunks: int = 8, top_k: int = 20, device=None, thresholds: Thresholds = THRESHOLDS
) -> Gates:
    from transformers import AutoModelForCausalLM

    folder = Path(alm_prime)
    dev = resolve_device(device)
    config = _train_config(folder)
    distilled = config.get("objective", "paper") == "distill"
    mlp = None if distilled else CurveMLP.load(folder / "curve_mlp.pt").to(dev).eval()
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).to(dev).eval()
    manifest = collect.read_manifest(collect_dir)
    if distilled:
        chosen = config.get("members")
        names = (
            [n if isinstance(n, str) else manifest["members"][n] for n in chosen] if chosen else manifest["members"]
        )
    else:
        names = mlp.settings.get("member_names") or manifest["members"]
    rows = [manifest["members"].index(n) for n in names]
    x = [manifest["log_sizes"][i] for i in rows]
    k = slice(0, top_k)
    lp, elm, alm, prime, drawn = [], [], [], [], []
    for i, rec in enumerate(collect.iter_records(collect_dir, as_torch=True)):
        if i >= max_chunks:
            break
        ids = rec["input_ids"].long().to(dev)[None]
        token_ids = rec["token_ids"].long().to(dev)[:, k]  # (S, k)
        prime.append(model(input_ids=ids).logits[0].float().gather(-1, token_ids))  # (S, k)
        alm.append(rec["alm_logits"].float().to(dev)[:, k])
        elm.append(rec["elm_logits"].float().to(dev)[:, k])
        lp.append(rec["member_logprobs"].float().to(dev)[rows][..., k])  # (N, S, k)
        # the ELM's row from the logits c is computed from: the collection stores both in float16, so a c
        # at the expert would otherwise miss p_ELM by up to 0.002 (a floor on L2 no reference solution pays)
        if rows[-1] == len(manifest["members"]) - 1:
            lp[-1][-1] = elm[-1]
        if mlp is not None:  # the MLP's curves (in its space) at the members, the top-k tokens renormalised
            pred = predict_curves(mlp, lp[-1], elm[-1], prime[-1], x=mlp.log_sizes)
            drawn.append(pred.curve.exp() if mlp.space == "logit" else pred.curve)  # (S, k, N) probabilities
    if not prime:
        raise ValueError(f"{collect_dir} holds no chunks to measure the gates on; collect some text first.")
    lp, elm, alm, prime = torch.cat(lp, 1).cpu(), torch.cat(elm).cpu(), torch.cat(alm).cpu(), torch.cat(prime).cpu()
    flip = True if mlp is None else mlp.flip
    attainable = attainable_solution(lp, elm, alm, x, flip=flip) if len(x) >= 3 else None  # the fitter needs 3 members
    if mlp is not None:
        trained = Solution(prime, torch.cat(drawn).cpu(), asymptote(elm, prime))
        return gates_at(
            lp,
            elm,
            alm,
            trained,
            attainable,
            lambda2=config.get("lambda2", math.nan),
            lambda3=config.get("lambda3", math.nan),
            flip=flip,
            space=mlp.space,
            thresholds=thresholds,
        )
    # a distilled run: the fitter's refit beside its own ALM' (context), its fidelity to the targets
    lp, elm, alm, prime = (t.double() for t in (lp, elm, alm, prime))
    refit = Solution(prime, attainable.curve.double(), attainable.c.double())
    target, p_elm = asymptote(elm, attainable.prime.double()), member_values(lp[-1])  # the fitter's c, renormalised
    fid = {
        who: float(_kl_rows(target, q).mean())
        for who, q in (("apd", asymptote(elm, prime)), ("elm", p_elm), ("cd", asymptote(elm, alm)))
    }
    checks = {}  # each gate read on the other solutions: the checks both ways
    for name, sol in (
        ("attainable", _double(attainable)),
        ("expert", expert_solution(lp, elm, alm)),
        ("cd", cd_solution(lp, elm, alm)),
    ):
        checks.update(_checked(lp, elm, alm, name, sol, "prob", thresholds))
    return Gates(
        **gate_readings(lp, elm, alm, refit, collapse_tol=thresholds.collapse_tol),
        n_positions=int(elm.shape[0]),
        n_tokens=int(elm.numel()),
        **checks,
        **{f"fidelity_{w}": v for w, v in fid.items()},
        lambda2=config.get("lambda2", math.nan),
        lambda3=config.get("lambda3", math.nan),
        collapsed_attainable=float(((target - p_elm).abs() <= thresholds.collapse_tol).double().mean()),
        collapsed_expert=1.0,
        thresholds=thresholds,
    )


def _kl_rows(t: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """KL(t || q) per row, nats, ``(S,)``: both ``(S, k)`` distributions.

    Example:
        >>> t = torch.tensor([[0.5, 0.5]]); round(float(_kl_rows(t, torch.tensor([[0.25, 0.75]]))[0]), 4)
        0.1438
    """
    t, q = t.double(), q.double()
    return (t * (t.clamp_min(1e-300).log() - q.clamp_min(1e-300).log())).sum(-1)


def _train_config(folder: Path) -> dict:
    """The training configuration recorded in a trained ALM' folder ({} without a record)."""
    record = folder / "apd_train_config.json"
    return json.loads(record.read_text()).get("config", {}) if record.is_file() else {}


def _objective(folder: Path) -> str:
    """The objective a trained ALM' folder was trained with ("paper" unless its record says otherwise)."""
    return _train_config(folder).get("objective", "paper")


def gates_or_none(alm_prime, collect_dir, **kwargs):
    """:func:`measure_gates`, or None when the run has no curves to measure (e.g. a hand-given ALM'
    without a curve MLP that was not trained by the distilled objective)."""
    folder = Path(alm_prime)
    if not (folder / "curve_mlp.pt").is_file() and _objective(folder) != "distill":
        return None
    return measure_gates(alm_prime, collect_dir, **kwargs)
