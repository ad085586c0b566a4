"""Mechanism gates: did APD's objective engage for a trained ALM'?

Measured on collected positions (the ELM's top ``top_k`` tokens of each token set; probabilities
renormalised over the set; c = softmax over the set of L_ELM - L_ALM', T = 1):

- *curve alive*: median |curve(x_ALM) - c| over the median ALM-ELM spread |p_ALM - p_ELM| (about 0:
  the MLP draws a flat line at c), and the L1 of the MLP's curves against the L1 of a flat curve at c,
  both in the space the MLP models (log-probabilities for the "logit" ablation);
- *not trivial*: the share of tokens with |c - p_ELM| <= ``collapse_tol`` (c collapsed onto the
  expert, the trivial solution of the objective), beside CD's share at T = 1;
- *moved*: KL(ALM || ALM') over the token set, nats, mean over positions.

Beside the gates, ``toward_expert`` places APD between CD and the expert: the least-squares beta of
c_APD - c_CD = beta (p_ELM - c_CD) over the tokens (0: APD is CD at T = 1; 1: APD is the expert).

The thresholds live in :data:`THRESHOLDS`, and nowhere else.

A distilled run (``objective="distill"``, no curve MLP) is trained to make its c match the
asymptotes the on-the-fly fitter finds (:data:`apd.amateur.distill.DISTILL_FIT`). The fitter's curves
are alive by construction (it is refitted on the same tokens), so for a distilled run *curve alive* is
replaced by **fidelity**: the c of ALM' itself must be closer to the fitter's targets than the expert's
probability is, KL(target || c_APD) < ``fidelity_ratio_max`` x KL(target || p_ELM), both over the top
``top_k`` tokens renormalised, mean over held-out positions (CD at T = 1, KL(target || c_CD), is
measured beside them). The refitted curves' alive ratio and L1 are still measured, as context; that
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
from apd.amateur.objective import CurveMLP, asymptote, member_values, predict_curves
from apd.base.checks import bounded, number
from apd.base.device import cpu_threads, resolve_device
from apd.core import curves


@dataclass(frozen=True)
class Thresholds:
    """When a gate passes. ``alive_min``: curve-alive ratio at least this (a curve that moves a
    quarter of the ALM-ELM spread away from c); the MLP's L1 must also be below a flat curve's.
    ``collapse_tol``: probability distance that counts as "at the expert"; ``collapsed_max``: a share
    of collapsed tokens above this fails *not trivial*, unless CD at T = 1 already has as many
    (then APD has not moved c towards the expert). ``moved_min``: KL(ALM || ALM') at least this (nats):
    ALM' must differ from the ALM by more than round-off and regularisation noise, or APD is CD under
    another name (design notes: a conditioned run held at the ALM by lambda3 = 2.4 moved 0.002 nats and
    sat 0.02 of the way from CD to the expert, its KL to the truth within 0.0003 nats of CD's).
    ``fidelity_ratio_max``: a distilled ALM' passes *fidelity* when KL(target || c_APD) is below this
    times KL(target || p_ELM) (1: closer to its targets than the expert it starts from; inf: the
    fidelity gate is off and the refitted curves' *curve alive* stands in)."""

    alive_min: float = 0.25
    collapse_tol: float = 0.005
    collapsed_max: float = 0.5
    moved_min: float = 1e-2
    fidelity_ratio_max: float = 1.0

    def __post_init__(self):
        for name in ("alive_min", "moved_min"):
            bounded(f"Thresholds.{name}", getattr(self, name), 0)
        for name in ("collapse_tol", "collapsed_max"):  # a probability distance, a share of tokens
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


@dataclass
class Gates:
    """The gate measurements of one ALM' (see the module docstring) and whether each passes."""

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

    @property
    def not_trivial(self) -> bool:
        return bool(self.collapsed <= max(self.thresholds.collapsed_max, self.collapsed_cd))

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
            failed.append("c collapsed to the expert")
        if not self.moved:
            failed.append("ALM' did not move from the ALM")
        return "; ".join(failed)

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
            alive=self.alive,
            fidelity=self.fidelity,
            not_trivial=self.not_trivial,
            moved=self.moved,
            engaged=self.engaged,
            reason=self.reason or "all gates pass",
        )
        d.update({f"threshold_{k}": v for k, v in asdict(self.thresholds).items()})
        return d


@torch.no_grad()
def measure_gates(
    alm_prime, collect_dir, *, max_chunks: int = 8, top_k: int = 20, device=None, thresholds: Thresholds = THRESHOLDS
) -> Gates:
    """Gates of the ALM' in ``alm_prime`` (its ``alm_prime/`` folder, with ``curve_mlp.pt``) on the
    first ``max_chunks`` chunks of the collection ``collect_dir`` (use a held-out collection for the
    L1 comparison to be out of sample).

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> result = apd.apd_model(fam, built, scale="smoke", progress=False)
        >>> g = apd.amateur.gates.measure_gates(result.alm_prime_path, result.collect_dir, max_chunks=2, device="cpu")
        >>> sorted(g.to_dict())[:3]
        ['alive', 'collapsed', 'collapsed_cd']
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
    distilled = _objective(folder) == "distill"
    mlp = None if distilled else CurveMLP.load(folder / "curve_mlp.pt").to(dev).eval()
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).to(dev).eval()
    manifest = collect.read_manifest(collect_dir)
    if distilled:
        chosen = json.loads((folder / "apd_train_config.json").read_text())["config"].get("members")
        names = (
            [n if isinstance(n, str) else manifest["members"][n] for n in chosen] if chosen else manifest["members"]
        )
        x = torch.tensor([manifest["log_sizes"][manifest["members"].index(n)] for n in names])
    else:
        names = mlp.settings.get("member_names") or manifest["members"]
    rows = [manifest["members"].index(n) for n in names]
    alive_num, spread, l1_c, l1_f, coll, coll_cd, kl, num, den, n_pos = [], [], [], [], [], [], [], [], [], 0
    fid = {"apd": [], "elm": [], "cd": []}
    for i, rec in enumerate(collect.iter_records(collect_dir, as_torch=True)):
        if i >= max_chunks:
            break
        ids = rec["input_ids"].long().to(dev)[None]
        token_ids = rec["token_ids"].long().to(dev)  # (S, K)
        logits = model(input_ids=ids).logits[0].float()  # (S, V)
        prime = logits.gather(-1, token_ids)  # (S, K)
        alm, elm = rec["alm_logits"].float().to(dev), rec["elm_logits"].float().to(dev)
        lp = rec["member_logprobs"].float().to(dev)[rows]  # (N, S, K)
        p = member_values(lp, "prob")  # (N, S, K)
        c = asymptote(elm, prime, "prob")
        c_cd = asymptote(elm, alm, "prob")
        k = slice(0, top_k)
        if distilled:  # the fitter's curves (probabilities), flat reference at their own asymptotes
            v_k = p[:, :, k].permute(1, 2, 0)  # (S, k, N)
            fit = fit_member_curves(v_k.reshape(-1, v_k.shape[-1]).cpu(), x, DISTILL_FIT["fit"])
            dec = curves.get_decay(fit.decay)
            drawn = dec(x.to(fit.params), fit.c, fit.params)  # (S k, N) flipped
            curve = curves.flip_values(drawn, fit.flipped[:, None]).reshape(v_k.shape).to(v_k)
            c_sp = curves.flip_values(fit.c, fit.flipped).reshape(v_k.shape[:-1]).to(v_k)
            # fidelity: the c of ALM' itself against the fitter's targets, both renormalised over the top-k tokens
            target = _renorm(c_sp)
            for who, q in (("apd", c[:, k]), ("elm", p[-1, :, k]), ("cd", c_cd[:, k])):
                fid[who].append(_kl_rows(target, _renorm(q)))
        else:
            # the curve's own gates in the space the MLP models (probabilities, or log-probabilities for
            # the "logit" variant); the collapse and the position between CD and the expert in probabilities
            pred = predict_curves(mlp, lp, elm, prime, x=mlp.log_sizes)
            curve = pred.curve[:, k]  # (S, k, N)
            v_k = member_values(lp, mlp.space)[:, :, k].permute(1, 2, 0)  # (S, k, N)
            c_sp = asymptote(elm, prime, mlp.space)[:, k]
        p_k = p[:, :, k].permute(1, 2, 0)  # (S, k, N)
        c_k, c_cd_k = c[:, k], c_cd[:, k]
        alive_num.append((curve[..., 0] - c_sp).abs().flatten())
        spread.append((v_k[..., 0] - v_k[..., -1]).abs().flatten())
        l1_c.append(((curve[..., :-1] - v_k[..., :-1]) ** 2).flatten())
        l1_f.append(((c_sp[..., None] - v_k[..., :-1]) ** 2).flatten())
        coll.append(((c_k - p_k[..., -1]).abs() <= thresholds.collapse_tol).float().flatten())
        coll_cd.append(((c_cd_k - p_k[..., -1]).abs() <= thresholds.collapse_tol).float().flatten())
        num.append(((c_k - c_cd_k) * (p_k[..., -1] - c_cd_k)).flatten())
        den.append(((p_k[..., -1] - c_cd_k) ** 2).flatten())
        q_alm, q_prime = torch.log_softmax(alm, -1), torch.log_softmax(prime, -1)
        kl.append((q_alm.exp() * (q_alm - q_prime)).sum(-1))
        n_pos += ids.shape[1]
    if not n_pos:
        raise ValueError(f"{collect_dir} holds no chunks to measure the gates on; collect some text first.")
    cat = lambda xs: torch.cat(xs).double()  # noqa: E731
    med_spread = float(cat(spread).median())
    return Gates(
        curve_alive=float(cat(alive_num).median()) / max(med_spread, 1e-12),
        l1_curve=float(cat(l1_c).mean().sqrt()),
        l1_flat=float(cat(l1_f).mean().sqrt()),
        collapsed=float(cat(coll).mean()),
        collapsed_cd=float(cat(coll_cd).mean()),
        moved_kl=float(cat(kl).mean()),
        toward_expert=float(cat(num).sum() / cat(den).sum().clamp_min(1e-30)),
        n_positions=int(n_pos),
        n_tokens=int(cat(coll).numel()),
        **{f"fidelity_{w}": float(cat(v).mean()) if v else math.nan for w, v in fid.items()},
        thresholds=thresholds,
    )


def _renorm(q: torch.Tensor) -> torch.Tensor:
    """Rows of non-negative values (clipped at 1e-12) renormalised to sum to 1, ``(S, k)``."""
    q = q.double().clamp_min(1e-12)
    return q / q.sum(-1, keepdim=True)


def _kl_rows(t: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """KL(t || q) per row, nats, ``(S,)``: both ``(S, k)`` distributions.

    Example:
        >>> t = torch.tensor([[0.5, 0.5]]); round(float(_kl_rows(t, torch.tensor([[0.25, 0.75]]))[0]), 4)
        0.1438
    """
    t, q = t.double(), q.double()
    return (t * (t.clamp_min(1e-300).log() - q.clamp_min(1e-300).log())).sum(-1)


def _objective(folder: Path) -> str:
    """The objective a trained ALM' folder was trained with ("paper" unless its record says otherwise)."""
    record = folder / "apd_train_config.json"
    if not record.is_file():
        return "paper"
    return json.loads(record.read_text()).get("config", {}).get("objective", "paper")


def gates_or_none(alm_prime, collect_dir, **kwargs):
    """:func:`measure_gates`, or None when the run has no curves to measure (e.g. a hand-given ALM'
    without a curve MLP that was not trained by the distilled objective)."""
    folder = Path(alm_prime)
    if not (folder / "curve_mlp.pt").is_file() and _objective(folder) != "distill":
        return None
    return measure_gates(alm_prime, collect_dir, **kwargs)
