"""The configuration of one ALM' training run, and its learning-rate schedule.

Defaults are the release's: AdamW lr 1e-4, linear schedule with 100 warm-up steps, effective batch
64 sequences, 5 epochs, lambda2 = 10, lambda3 = 0.8 Pythia / 0.4 OPT / 1.0 Qwen
(:data:`apd.family.settings.LAMBDA3`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from dataclasses import dataclass
from typing import Optional

from apd.base.checks import bounded, count, flag, number, sequence
from apd.core import curves
from apd.family.settings import LAMBDA3, LAMBDA3_GRID

X_ORIGINS = ("zero", "alm")


#: What ALM' is trained with: "paper" (the curve MLP with L1 + lambda2 L2 + lambda3 L3) or "distill"
#: (match the asymptotes of curves fitted per token by apd.core.curves.fit_curves, + lambda3 L3;
#: see apd.amateur.distill).
OBJECTIVES = ("paper", "distill")


#: How the curve MLP starts (objective "paper" only): "release" (raw x = ln size, a = b = d = 1: the
#: bend far left of every member, the curve flat at c) or "conditioned" (x' = (x - x_ALM) / (x_ELM -
#: x_ALM), the head's bias set so the curve starts through the members: a = the median ALM-ELM spread,
#: b = 2, d = 0.02, the bend at the ALM; :class:`apd.amateur.objective.ConditionedCurveMLP`).
STARTS = ("release", "conditioned")


@dataclass
class APDTrainConfig:
    """Everything that decides an ALM' training run. Defaults are the paper's/release's.

    Example:
        >>> cfg = APDTrainConfig(family="pythia")
        >>> cfg.lr, cfg.lambda2, cfg.lambda3_value
        (0.0001, 10.0, 0.8)
    """

    family: str = "pythia"  # pythia | opt | qwen | pico | any name (then give lambda3)
    lambda2: float = 10.0
    lambda3: Optional[float] = None  # None: LAMBDA3[family]
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup_steps: float = 100  # >= 1: steps; in (0, 1): fraction of all steps
    epochs: int = 5
    batch_size: int = 64  # chunks (sequences) per optimizer step, all processes together
    micro_batch_size: Optional[int] = None  # chunks per forward pass and process; None: 8 on CUDA, 4 on CPU
    decay: str = "exponential"  # exponential | logistic | poly1 | poly3 (see apd.core.curves)
    flip: bool = True
    space: str = "prob"  # prob | logit
    x_origin: str = "zero"  # zero: raw log sizes (release) | alm: measured from the ALM
    members: Optional[tuple] = None  # subset by index or name; must keep the ALM and the ELM
    data_fraction: float = 1.0
    hidden: int = 100
    n_hidden_layers: int = 3
    mid_dropout: float = 0.5
    grad_clip: float = 0.0  # 0: off (nothing stated in paper or release)
    seed: int = 0
    device: Optional[str] = None  # None: cuda if available, else cpu
    bf16: bool = True  # bf16 autocast of the ALM' forward pass, CUDA only
    checkpoint_every: int = 200
    keep_checkpoints: int = 1
    log_every: int = 1
    objective: str = "paper"  # paper | distill (see OBJECTIVES)
    start: str = "release"  # release | conditioned: how the curve MLP starts (see STARTS)
    mlp_warmup_steps: int = 0  # first optimizer steps train the curve MLP alone, ALM' frozen

    def __post_init__(self):
        for name in ("family", "decay", "space", "x_origin", "objective", "start"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a str (see the field's comment), got {getattr(self, name)!r}.")
        if self.members is not None:
            self.members = sequence("members", self.members, hint="member indices or names, e.g. (0, 2, 5)")
            for m in self.members:
                if isinstance(m, bool) or not isinstance(m, (numbers.Integral, str)):
                    raise TypeError(f"members must hold member indices or names, got {m!r} in {self.members!r}.")
        for name in ("flip", "bf16"):
            flag(name, getattr(self, name))
        for name in (
            "epochs",
            "batch_size",
            "hidden",
            "n_hidden_layers",
            "checkpoint_every",
            "log_every",
            "keep_checkpoints",
        ):
            count(name, getattr(self, name), 1, strict=True)  # checked, not converted (they enter cache keys)
        count("seed", self.seed, 0, strict=True)
        if self.micro_batch_size is not None:
            count("micro_batch_size", self.micro_batch_size, 1, strict=True, hint="or None: 8 on CUDA, 4 on CPU")
        bounded("lr", self.lr, above=0, hint="AdamW's learning rate; the release uses 1e-4")
        bounded("warmup_steps", self.warmup_steps, 0, hint="steps (>= 1) or a fraction of all steps (< 1)")
        bounded("data_fraction", self.data_fraction, above=0, maximum=1)
        bounded("mid_dropout", self.mid_dropout, 0, below=1)
        bounded("grad_clip", self.grad_clip, 0, hint="the gradient-norm clip, 0: off")
        for name in ("lambda2", "lambda3", "weight_decay"):  # checked, not converted (they enter cache keys)
            if getattr(self, name) is not None:
                check_loss_weight(name, getattr(self, name))
        if self.space not in curves.SPACES:
            raise ValueError(f"space must be 'prob' or 'logit', got {self.space!r}.")
        if self.x_origin not in X_ORIGINS:
            raise ValueError(f"x_origin must be one of {X_ORIGINS}, got {self.x_origin!r}.")
        curves.get_decay(self.decay)  # raises on an unknown name
        if self.objective not in OBJECTIVES:
            raise ValueError(
                f"objective must be one of {OBJECTIVES}, got {self.objective!r}: 'paper' trains "
                "the curve MLP jointly (L1 + L2 + L3), 'distill' matches the fitter's asymptotes."
            )
        if self.start not in STARTS:
            raise ValueError(f"start must be one of {STARTS}, got {self.start!r}.")
        self.mlp_warmup_steps = count("mlp_warmup_steps", self.mlp_warmup_steps, 0)
        if self.objective == "distill" and (self.start != "release" or self.mlp_warmup_steps):
            raise ValueError(
                "a distilled run has no curve MLP: start='conditioned' and mlp_warmup_steps only "
                "apply to objective='paper'; leave them at their defaults."
            )
        if self.start == "conditioned":
            if self.x_origin != "zero":
                raise ValueError(
                    "start='conditioned' measures x from the ALM in units of the members' span "
                    "itself; leave x_origin at 'zero'."
                )
            if not self.flip:
                raise ValueError(
                    "start='conditioned' starts every curve falling from the ALM's value, which "
                    "needs the flip; use flip=True (or start='release' for the no-flip ablation)."
                )
            if curves.get_decay(self.decay).param_names != ("a", "b", "d"):
                raise ValueError(
                    f"start='conditioned' sets the start of (a, b, d); the {self.decay!r} decay has "
                    f"{curves.get_decay(self.decay).param_names}. Use exponential or logistic."
                )

    @property
    def lambda3_value(self) -> float:
        if self.lambda3 is not None:
            return float(self.lambda3)
        if self.family in LAMBDA3:
            return LAMBDA3[self.family]
        raise ValueError(
            f"no published lambda3 for family {self.family!r} (the paper has {LAMBDA3}); tune it on a "
            f"validation split over LAMBDA3_GRID = {LAMBDA3_GRID} and pass it, e.g. APDTrainConfig("
            f"family={self.family!r}, lambda3=0.8)."
        )

    def to_dict(self) -> dict:
        """The fields as plain values. Fields added after the paper's runs were made (``objective``,
        ``start``, ``mlp_warmup_steps``) are left out at their defaults (:data:`LATER_DEFAULTS`), so
        the cache keys and fingerprints of every run made before they existed stay the same."""
        d = dataclasses.asdict(self)
        d["members"] = list(self.members) if self.members is not None else None
        for name, default in LATER_DEFAULTS.items():
            if d[name] == default:
                del d[name]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "APDTrainConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown APDTrainConfig fields {sorted(unknown)}; known: {sorted(known)}.")
        return cls(**d)


def check_loss_weight(name: str, value) -> None:
    """Raise unless ``value`` is a finite number >= 0 (TypeError for a string or a bool): the one check
    of lambda2, lambda3 and the weight decay.

    Example:
        >>> check_loss_weight("lambda3", 0.8)
        >>> check_loss_weight("lambda3", -1)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: lambda3 must be a finite number >= 0 (a weight in the loss), got -1; the paper's lambda3 values ...
    """
    if not 0.0 <= number(name, value, "a loss weight such as 0.8") < math.inf:
        raise ValueError(
            f"{name} must be a finite number >= 0 (a weight in the loss), got {value!r}; "
            f"the paper's lambda3 values are {LAMBDA3} (lambda2 = 10)."
        )


#: Fields added after the release configuration's runs were cached, with their defaults: left out of
#: :meth:`APDTrainConfig.to_dict` at these values (tests/test_cache_keys.py pins the older keys).
LATER_DEFAULTS = {"objective": "paper", "start": "release", "mlp_warmup_steps": 0}


# Fields that do not change the trained weights (left out of the run's fingerprint).
NOT_FINGERPRINTED = ("device", "checkpoint_every", "keep_checkpoints", "log_every")


def warmup_for(config: APDTrainConfig, total_steps: int) -> int:
    """Warm-up steps for a run of ``total_steps``: a fraction if warmup_steps < 1, else steps.
    A warm-up as long as the whole run (tiny runs with the paper's 100) becomes 10% of it, with a warning."""
    w = config.warmup_steps
    steps = int(round(w * total_steps)) if 0 < w < 1 else int(w)
    if steps >= total_steps and total_steps > 0:
        scaled = max(1, int(math.ceil(0.1 * total_steps)))
        warnings.warn(
            f"warmup_steps={w} is not shorter than the whole run ({total_steps} steps); using "
            f"{scaled} (10%). Pass warmup_steps as a fraction, e.g. 0.05, to choose yourself.",
            stacklevel=2,
        )
        steps = scaled
    return steps


def lr_at(step: int, total_steps: int, warmup: int, lr: float) -> float:
    """lr of optimizer update ``step`` (0-based): linear warm-up to ``lr`` over ``warmup`` updates
    (the first update uses lr / warmup, not 0), then linear decay reaching 0 after the last."""
    if step < warmup:
        return lr * (step + 1) / warmup
    return lr * max(0.0, (total_steps - step) / max(1, total_steps - warmup))
