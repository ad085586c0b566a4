"""The paper's curve model and losses: what ALM' is trained with.

Asymptote c = softmax over the token set of (L_ELM - L_ALM') (T = 1). The curve MLP reads the N
(flipped) renormalised member probabilities plus c and outputs positive (a, b, d);
curve(x) = c + a exp(-max(0, b (x - d))) on x = ln(non-embedding size). Losses (probabilities):
L1 = sqrt(MSE(curve, p)) over the N-1 smaller members; L2 = sqrt(mean(max(curve(x_ELM) - p_ELM, 0)));
L3 = sqrt(MSE(L_ALM', L_ALM)) over the token set (logits).

A conditioned start (``APDTrainConfig(start="conditioned")``, :class:`ConditionedCurveMLP`) measures x
from the ALM in units of the members' span and starts the curve through the members (the bend at the
ALM) instead of flat at c; the known-answer chapter (:mod:`apd.evaluation.known_answer`) uses the same
class.

The distilled variant (``APDTrainConfig(objective="distill")``, :class:`DistillObjective`) has no
curve MLP: L_distill = KL(target || c) over the token set, mean over positions, where the target is
the fitter's asymptotes (:mod:`apd.amateur.distill`), plus the same lambda3 L3.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Union

import torch
from torch import nn

from apd.amateur.config import X_ORIGINS
from apd.base.io import set_aside
from apd.core import curves


def member_values(member_logprobs: torch.Tensor, space: str = "prob", dim: int = -1) -> torch.Tensor:
    """Renormalise members' log-probabilities over the token set (axis ``dim``): probabilities
    (space 'prob') or their logs (space 'logit'). Same shape as the input."""
    curves.check_space(space)
    return torch.softmax(member_logprobs, dim) if space == "prob" else torch.log_softmax(member_logprobs, dim)


def asymptote(elm_logits: torch.Tensor, alm_prime_logits: torch.Tensor, space: str = "prob") -> torch.Tensor:
    """APD's asymptote at the token set (last axis), T = 1: softmax(L_ELM - L_ALM') over the set
    (space 'prob'), or its log (space 'logit'). Raw logits in, (..., K) out."""
    return member_values(elm_logits - alm_prime_logits, space)


@dataclass
class CurveOutput:
    """What :meth:`CurveMLP.forward` returns, all in flipped space.

    target (..., N): the (flipped) renormalised member values; curve (..., N): the curve at the
    members' x; params (..., P); flipped (...) bool; c (...) the (flipped) asymptote.
    """

    target: torch.Tensor
    curve: torch.Tensor
    params: torch.Tensor
    flipped: torch.Tensor
    c: torch.Tensor


class CurveMLP(nn.Module):
    """The curve model: flip, MLP -> decay parameters, decay curve at the members' log sizes.

    ``log_sizes`` (N,): natural logs of the members' non-embedding parameter counts, ALM first.
    Input of the MLP proper (:meth:`curve_params`): (..., N + 1) = N (flipped) values then c.
    Hidden: ``n_hidden_layers`` x (Linear(hidden) + GELU); final Linear zero-initialised; outputs
    exponentiated (all parameters positive, start at 1), except the amplitude a when ``flip`` is
    False (then a is the raw output, starts at 0, may be negative).
    """

    def __init__(
        self,
        log_sizes,
        *,
        decay: str = "exponential",
        space: str = "prob",
        flip: bool = True,
        x_origin: str = "zero",
        hidden: int = 100,
        n_hidden_layers: int = 3,
        mid_dropout: float = 0.5,
        member_names: Optional[Sequence[str]] = None,
    ):
        super().__init__()
        x = torch.as_tensor(log_sizes, dtype=torch.float64).reshape(-1)
        if x.numel() < 2 or not bool((x[1:] > x[:-1]).all()):
            raise ValueError(f"log_sizes must hold >= 2 increasing log sizes (ALM first), got {x.tolist()}.")
        curves.check_space(space)
        if x_origin not in X_ORIGINS:
            raise ValueError(f"x_origin must be one of {X_ORIGINS}, got {x_origin!r}.")
        self.settings = dict(
            log_sizes=x.tolist(),
            decay=curves.get_decay(decay).name,
            space=space,
            flip=bool(flip),
            x_origin=x_origin,
            hidden=int(hidden),
            n_hidden_layers=int(n_hidden_layers),
            mid_dropout=float(mid_dropout),
            member_names=list(member_names) if member_names is not None else None,
        )
        self.decay = curves.get_decay(decay)
        self.space, self.flip, self.x_origin = space, bool(flip), x_origin
        self.n_members = x.numel()
        self.register_buffer("log_sizes", x.float(), persistent=False)
        layers, width = [], self.n_members + 1
        for _ in range(n_hidden_layers):
            layers += [nn.Linear(width, hidden), nn.GELU()]
            width = hidden
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, self.decay.n_params)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)
        self.dropout = nn.Dropout(mid_dropout)

    def x(self, log_sizes: Optional[torch.Tensor] = None) -> torch.Tensor:
        """The curve's x for given log sizes (default: the members'), after ``x_origin``."""
        x = (
            self.log_sizes
            if log_sizes is None
            else torch.as_tensor(log_sizes, dtype=torch.float32, device=self.log_sizes.device)
        )
        return x - self.log_sizes[0] if self.x_origin == "alm" else x

    def curve_params(self, inputs: torch.Tensor) -> torch.Tensor:
        """(..., N + 1) inputs (values, then c) -> (..., P) curve parameters."""
        n = self.n_members
        if inputs.shape[-1] != n + 1:
            raise ValueError(f"CurveMLP expects {n} member values plus c in the last axis, got {inputs.shape[-1]}.")
        if n > 3:  # dropout on members 3 .. N-1 (1-based): indices 2 .. N-2
            inputs = torch.cat([inputs[..., :2], self.dropout(inputs[..., 2 : n - 1]), inputs[..., n - 1 :]], dim=-1)
        raw = self.head(self.body(inputs))
        if self.flip:
            return torch.exp(raw)
        return torch.cat([raw[..., :1], torch.exp(raw[..., 1:])], dim=-1)

    def forward(self, values: torch.Tensor, c: torch.Tensor) -> CurveOutput:
        """values (..., N): renormalised member values (probabilities, or their logs in logit space);
        c (...): the asymptote in the same space. Returns the curve at the members' x, flipped space."""
        if values.shape[-1] != self.n_members:
            raise ValueError(
                f"values must have N = {self.n_members} members in the last axis, got {values.shape[-1]}."
            )
        if self.flip:
            flipped = curves.flip_mask(values[..., 0], values[..., -1])
        else:
            flipped = torch.zeros(values.shape[:-1], dtype=torch.bool, device=values.device)
        target = curves.flip_values(values, flipped[..., None], self.space)
        c_flipped = curves.flip_values(c, flipped, self.space)
        params = self.curve_params(torch.cat([target, c_flipped[..., None]], dim=-1))
        curve = self.decay(self.x(), c_flipped, params)
        return CurveOutput(target=target, curve=curve, params=params, flipped=flipped, c=c_flipped)

    def save(self, path) -> None:
        torch.save({"settings": self.settings, "state_dict": self.state_dict()}, path)

    @classmethod
    def load(cls, path, map_location="cpu") -> "CurveMLP":
        path = Path(path)
        if path.is_dir():
            path = path / "curve_mlp.pt"
        if not path.exists():
            raise FileNotFoundError(f"{path} not found; train_alm_prime writes <out_dir>/alm_prime/curve_mlp.pt.")
        try:
            blob = torch.load(path, map_location=map_location, weights_only=False)
            settings, state = dict(blob["settings"]), blob["state_dict"]
        except Exception as err:  # truncated or overwritten (a folder without digests is not checked on load)
            raise unreadable_curve_mlp(path, err) from None
        kind = ConditionedCurveMLP if settings.pop("start", "release") == "conditioned" else CurveMLP
        model = kind(**settings)
        model.load_state_dict(state)
        return model


def unreadable_curve_mlp(path, err: BaseException) -> ValueError:
    """The error for a ``curve_mlp.pt`` that does not load (one line naming it and the fix). In a
    folder ALM' training wrote (it holds ``apd_train_config.json``) the folder is set aside first
    (:func:`apd.base.io.set_aside`), so the next :func:`apd.apd_model` trains the run again instead of
    failing on the same file every time."""
    path = Path(path)
    why = f"{type(err).__name__}: {' '.join(str(err).split())[:120]}"
    folder = path.parent
    if (folder / "apd_train_config.json").is_file():
        new = set_aside(
            folder, "ALM' model", f"unreadable {path.name}: {type(err).__name__}", "training it again on the next run"
        )
        return ValueError(
            f"the curve MLP {path} cannot be read ({why}); its ALM' folder was moved aside to {new}: run "
            "apd.apd_model(fam, built) again to train it again."
        )
    return ValueError(
        f"the curve MLP {path} cannot be read ({why}); delete it and save it again (CurveMLP.save), or train "
        "ALM' again with apd.apd_model(fam, built)."
    )


class ConditionedCurveMLP(CurveMLP):
    """CurveMLP with a conditioned start (``APDTrainConfig(start="conditioned")``): x' = (x - x_ALM) /
    (x_ELM - x_ALM), 0 at the ALM and 1 at the ELM, and the zero-initialised head's bias set so the
    curve starts at a = ``a0``, b = ``b0`` (per unit of x', i.e. exp(-b0) of the amplitude left at the
    ELM), d = ``d0`` (the bend at the ALM). Everything else (flip, inputs, dropout, exp outputs) is
    the paper's CurveMLP. Saved and loaded like it (:meth:`CurveMLP.load` reads ``start``).

    Example:
        >>> mlp = ConditionedCurveMLP([9.5, 11.0, 14.4], a0=0.05)
        >>> [round(float(v), 3) for v in mlp.x()]
        [0.0, 0.306, 1.0]
        >>> [round(float(v), 3) for v in mlp.curve_params(torch.zeros(4)).detach()]
        [0.05, 2.0, 0.02]
    """

    def __init__(self, log_sizes, *, a0: float = 0.1, b0: float = 2.0, d0: float = 0.02, **kw):
        kw.pop("x_origin", None)
        super().__init__(log_sizes, x_origin="alm", **kw)
        if not self.flip or self.decay.param_names != ("a", "b", "d"):
            raise ValueError(
                "ConditionedCurveMLP needs flip=True and a decay with parameters (a, b, d) "
                f"(exponential, logistic); got flip={self.flip}, decay {self.decay.name!r}."
            )
        if min(a0, b0, d0) <= 0:
            raise ValueError(
                f"a0, b0 and d0 must be > 0 (they start the exponentiated outputs), got {a0}, {b0}, {d0}."
            )
        with torch.no_grad():
            self.head.bias.copy_(torch.log(torch.tensor([a0, b0, d0], dtype=self.head.bias.dtype)))
        self.settings.update(start="conditioned", a0=float(a0), b0=float(b0), d0=float(d0))

    def x(self, log_sizes=None):
        return super().x(log_sizes) / (self.log_sizes[-1] - self.log_sizes[0])


def start_amplitude(member_logprobs: torch.Tensor, space: str = "prob") -> float:
    """a0 of a conditioned start: the median |v_ALM - v_ELM| over every token of the sets, v the
    members' values renormalised over the set (``space``). member_logprobs (..., N, S, K) as collected
    (members in axis -3); at least 1e-3.

    Example:
        >>> lp = torch.log(torch.tensor([[[[0.2, 0.8]], [[0.5, 0.5]]]]))    # (1, N=2, S=1, K=2)
        >>> round(start_amplitude(lp), 3)
        0.3
    """
    v = member_values(torch.as_tensor(member_logprobs).float(), space)
    spread = (v.select(-3, 0) - v.select(-3, -1)).abs()
    return max(float(spread.median()), 1e-3)


def loss_l1(curve: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """L1 = sqrt(mean((curve - target)^2)) over every token and the N-1 smaller members.
    curve, target: (..., N) in flipped space (the last column, the ELM, is left out)."""
    return curves.safe_sqrt(((curve[..., :-1] - target[..., :-1]) ** 2).mean())


def loss_l2(curve: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """L2 = sqrt(mean(max(curve_ELM - target_ELM, 0))): the curve must not pass above the ELM.
    curve, target: (..., N); only the last column (the ELM) is used."""
    return curves.safe_sqrt(torch.relu(curve[..., -1] - target[..., -1]).mean())


def loss_l3(alm_prime_logits: torch.Tensor, alm_logits: torch.Tensor) -> torch.Tensor:
    """L3 = sqrt(mean((L_ALM' - L_ALM)^2)) of raw logits at the token set, any equal shapes."""
    return curves.safe_sqrt(((alm_prime_logits - alm_logits) ** 2).mean())


#: Causal-LM classes whose logits are exactly ``get_output_embeddings()(base_model(...).last_hidden_state)``
#: (no logit scaling or soft-capping), so the logits at a token set can be computed from the hidden states
#: and the output-embedding rows of those tokens alone (:func:`_logits_at`).
HEAD_GATHER_CLASSES = ("GPTNeoXForCausalLM", "OPTForCausalLM", "Qwen2ForCausalLM", "LlamaForCausalLM")


def _logits_at(
    alm: nn.Module, bf16: bool, input_ids: torch.Tensor, token_ids: torch.Tensor, gather_head: bool = True
) -> torch.Tensor:
    """Raw logits of ``alm`` at the token sets: (B, S) ids, (B, S, K) token ids -> (B, S, K) float32
    (bf16 autocast on CUDA when ``bf16``).

    For the classes of :data:`HEAD_GATHER_CLASSES` (and ``gather_head``) only the K output-embedding
    rows of each position's set are multiplied with its last hidden state, instead of the whole
    (V, d) head: the same numbers up to float rounding (``tests/test_train.py`` checks it against the
    full computation), and the same gradients (the head's other rows get zero gradient either way),
    at a fraction of the cost when V >> K (pico: V = 4096, K = 30). Other classes compute every logit.
    """
    dev = input_ids.device
    fast = gather_head and type(alm).__name__ in HEAD_GATHER_CLASSES
    with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=bf16 and dev.type == "cuda"):
        if fast:
            head = alm.get_output_embeddings()
            vocab = head.weight.shape[0]
        else:
            logits = alm(input_ids=input_ids).logits
            vocab = logits.shape[-1]
        if int(token_ids.max()) >= vocab:
            raise ValueError(
                f"token id {int(token_ids.max())} >= ALM' vocabulary size {vocab}: the "
                "collected data were made with another tokenizer/model family."
            )
        if not fast:
            return torch.gather(logits, -1, token_ids).float()
        hidden = alm.base_model(input_ids=input_ids).last_hidden_state  # (B, S, d)
        rows = nn.functional.embedding(token_ids, head.weight)  # (B, S, K, d)
        out = (rows * hidden.unsqueeze(-2)).sum(-1)  # (B, S, K)
        if head.bias is not None:
            out = out + head.bias[token_ids]
    return out.float()


def loss_distill(target: torch.Tensor, c_log: torch.Tensor) -> torch.Tensor:
    """L_distill = KL(target || c) = sum_k t_k (ln t_k - ln c_k) over the token set (last axis),
    mean over the positions whose target is finite (a NaN row: no target, left out).

    target (..., K): probabilities summing to 1 over K (the fitter's asymptotes, renormalised);
    c_log (..., K): APD's asymptote as log-probabilities, ``asymptote(L_ELM, L_ALM', "logit")``.
    Nats; 0 where c = target.

    Example:
        >>> t = torch.tensor([[0.5, 0.5], [float("nan"), float("nan")]])
        >>> round(float(loss_distill(t, torch.log(torch.tensor([[0.25, 0.75], [0.5, 0.5]])))), 4)
        0.1438
    """
    if target.shape != c_log.shape:
        raise ValueError(
            f"target {tuple(target.shape)} and c_log {tuple(c_log.shape)} must have the same shape "
            "(positions..., K tokens of the set)."
        )
    valid = torch.isfinite(target).all(-1)  # (...)
    t = torch.where(valid[..., None], target, torch.zeros_like(target))
    per_pos = (torch.xlogy(t, t) - t * torch.where(t > 0, c_log, torch.zeros_like(c_log))).sum(-1)
    n = valid.sum()
    return torch.where(n > 0, (per_pos * valid).sum() / n.clamp_min(1), per_pos.sum() * 0.0)


class DistillObjective(nn.Module):
    """ALM' alone, trained to match per-token target asymptotes: ``forward(**batch)`` returns the
    loss terms of one (micro-)batch, loss = L_distill + lambda3 L3 (:func:`loss_distill`,
    :func:`loss_l3`). The batch carries ``targets`` (B, S, K) probabilities (NaN rows: no target)."""

    def __init__(self, alm: nn.Module, *, lambda3: float, bf16: bool = True):
        super().__init__()
        self.alm, self.lambda3, self.bf16 = alm, float(lambda3), bool(bf16)

    def alm_prime_logits(self, input_ids: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
        """Raw logits of ALM' at the token sets: (B, S) ids, (B, S, K) token ids -> (B, S, K) float32."""
        return _logits_at(self.alm, self.bf16, input_ids, token_ids)

    def forward(self, input_ids, token_ids, member_logprobs, alm_logits, elm_logits, targets) -> dict:
        lp = self.alm_prime_logits(input_ids, token_ids)
        with torch.autocast(device_type=input_ids.device.type, enabled=False):
            c_log = asymptote(elm_logits.float(), lp, "logit")  # (B, S, K)
            ld, l3 = loss_distill(targets.float(), c_log), loss_l3(lp, alm_logits.float())
            loss = ld + self.lambda3 * l3
        return {"loss": loss, "distill": ld, "l3": l3}


class APDObjective(nn.Module):
    """ALM' plus the curve MLP; ``forward(**batch)`` returns the loss terms of one (micro-)batch."""

    def __init__(self, alm: nn.Module, mlp: CurveMLP, *, lambda2: float, lambda3: float, bf16: bool = True):
        super().__init__()
        self.alm, self.mlp = alm, mlp
        self.lambda2, self.lambda3, self.bf16 = float(lambda2), float(lambda3), bool(bf16)
        self.freeze_alm = False  # True: ALM' runs without gradients (the MLP-only warm-up of a run)

    def alm_prime_logits(self, input_ids: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
        """Raw logits of ALM' at the token sets: (B, S) ids, (B, S, K) token ids -> (B, S, K) float32."""
        return _logits_at(self.alm, self.bf16, input_ids, token_ids)

    def forward(self, input_ids, token_ids, member_logprobs, alm_logits, elm_logits) -> dict:
        with torch.no_grad() if self.freeze_alm else contextlib.nullcontext():
            lp = self.alm_prime_logits(input_ids, token_ids)
        with torch.autocast(device_type=input_ids.device.type, enabled=False):
            values = member_values(member_logprobs.float(), self.mlp.space).permute(0, 2, 3, 1)  # (B, S, K, N)
            c = asymptote(elm_logits.float(), lp, self.mlp.space)  # (B, S, K)
            out = self.mlp(values, c)
            l1, l2, l3 = (
                loss_l1(out.curve, out.target),
                loss_l2(out.curve, out.target),
                loss_l3(lp, alm_logits.float()),
            )
            loss = l1 + self.lambda2 * l2 + self.lambda3 * l3
        return {"loss": loss, "l1": l1, "l2": l2, "l3": l3, "flip_frac": out.flipped.float().mean()}


@dataclass
class CurvePrediction:
    """APD's fitted curves at one token set, in original (un-flipped) units.

    x (X,): log sizes where ``curve`` is evaluated; curve (..., K, X); asymptote (..., K);
    observed (..., K, N): the members' renormalised values at ``member_log_sizes`` (N,);
    params (..., K, P) (flipped space, names ``param_names``); flipped (..., K) bool.
    """

    x: torch.Tensor
    curve: torch.Tensor
    asymptote: torch.Tensor
    observed: torch.Tensor
    member_log_sizes: torch.Tensor
    params: torch.Tensor
    param_names: tuple
    flipped: torch.Tensor


@torch.no_grad()
def predict_curves(
    mlp: Union[CurveMLP, str, os.PathLike],
    member_logprobs,
    elm_logits,
    alm_prime_logits,
    *,
    x=None,
    n_points: int = 100,
) -> CurvePrediction:
    """The curve APD's MLP draws through the members, e.g. to plot fitted curves.

    ``mlp``: a :class:`CurveMLP` or the ``alm_prime/`` folder (or its ``curve_mlp.pt``).
    member_logprobs (N, ..., K): the members' log-probabilities (or logits) at the token set, ALM
    first; elm_logits, alm_prime_logits (..., K): raw logits at the same set. ``x``: log sizes to
    evaluate the curve at (default: ``n_points`` from the ALM to 1.5x the members' span past the ELM).
    """
    if not isinstance(mlp, CurveMLP):
        mlp = CurveMLP.load(mlp)
    mlp = mlp.eval()
    dev = mlp.log_sizes.device
    lp = torch.as_tensor(member_logprobs, dtype=torch.float32, device=dev)
    if lp.shape[0] != mlp.n_members:
        raise ValueError(f"member_logprobs must have N = {mlp.n_members} members in axis 0, got {tuple(lp.shape)}.")
    values = member_values(lp, mlp.space).movedim(0, -1)  # (..., K, N)
    c = asymptote(
        torch.as_tensor(elm_logits, dtype=torch.float32, device=dev),
        torch.as_tensor(alm_prime_logits, dtype=torch.float32, device=dev),
        mlp.space,
    )
    out = mlp(values, c)
    xs = mlp.log_sizes
    if x is None:
        span = float(xs[-1] - xs[0])
        x = torch.linspace(float(xs[0]), float(xs[-1]) + 1.5 * span, n_points)
    x = torch.as_tensor(x, dtype=torch.float32, device=dev).reshape(-1)
    curve = mlp.decay(mlp.x(x), out.c, out.params)  # (..., K, X)
    return CurvePrediction(
        x=x,
        curve=curves.flip_values(curve, out.flipped[..., None], mlp.space),
        asymptote=curves.flip_values(out.c, out.flipped, mlp.space),
        observed=values,
        member_log_sizes=xs.clone(),
        params=out.params,
        param_names=mlp.decay.param_names,
        flipped=out.flipped,
    )
