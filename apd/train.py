"""Training ALM' (the fine-tuned amateur of APD) jointly with the curve MLP.

What is trained (paper section 3, appendix "Method Details", and the facts about the authors'
release in ``reference/official-implementation.md``; where they differ we follow the release and
say so):

- For every position of a chunk and every token w of its token set A (ELM's top 20, then random
  lower ranks; K tokens), each member's probability is renormalised over A. The asymptote is
  ``c = softmax_A(L_ELM - L_ALM')`` (T = 1), where L are raw logits at A; ALM' is the only model
  that gets gradients, and the curve losses reach it only through c.
- Flip R(.): if p(ALM) < p(ELM) for that token, every probability and c become 1 - p.
- The MLP (:class:`CurveMLP`) reads the N (flipped) probabilities and c, has three hidden
  Linear(100) + GELU layers and a zero-initialised final layer whose outputs are exponentiated, so
  the curve parameters a, b, d start at exactly 1. Dropout(0.5) hides the mid-size members
  (members 3 .. N-1, 1-based; not the two smallest, not the ELM, not c) from the MLP's input;
  the loss targets are never dropped. nn.Dropout scales the kept inputs by 2.
- Curve (paper eq. 4): ``p(x) = c + a exp(-max(0, b (x - d)))`` at x = natural log of each
  member's NON-embedding parameter count (the release's raw values, e.g. 16.7555 .. 22.5864 for
  Pythia 70m .. 6.9b). With a = b = d = 1 at the start the curve is c + exp(-(x - 1)), i.e. flat
  at c to within 1e-7 over those x: training starts from "the asymptote explains every member",
  and Adam's scale-free steps still move a, b, d. We keep the raw x. ``x_origin='alm'`` (an option,
  off by default) measures x from the ALM instead; its initial curve is c + 1 at the ALM, far
  above any probability, and on the tiny test family it started at a 5x larger loss and ended
  no better (loss 0.637 vs 0.615 after 80 steps).
- Losses (:func:`loss_l1`, :func:`loss_l2`, :func:`loss_l3`): L1 = sqrt(MSE(curve, p')) over the
  N-1 smaller members; L2 = sqrt(mean(max(curve(x_ELM) - p'_ELM, 0))) (square root of the mean
  hinge); L3 = sqrt(MSE(L_ALM', L_ALM)) of raw logits at A; Loss = L1 + lambda2 L2 + lambda3 L3,
  lambda2 = 10, lambda3 = 0.8 Pythia / 0.4 OPT / 1.0 Qwen (:data:`LAMBDA3`; the embedded 'pico'
  family has no published value: tune it on a validation split over :data:`LAMBDA3_GRID`, the
  paper's grid, with :func:`tune_lambda3`, and pass it explicitly). The means run over the micro-batch (see below).
- AdamW, lr 1e-4 (weight decay: not stated by paper or release; torch's default 0.01), linear
  warm-up over 100 steps then linear decay to 0, 64 sequences per optimizer step, 5 epochs. The
  release trained in fp32; on CUDA we run the ALM' forward pass under bf16 autocast (``bf16``),
  the MLP and every loss in fp32. On CPU everything is fp32.

Ours, beyond the paper:
- Square roots use :func:`apd.curves.safe_sqrt` (same values, gradient 0 at exactly 0 instead of
  NaN when e.g. no hinge is active in a micro-batch).
- A batch of ``batch_size`` chunks is processed as ``batch_size / (micro_batch_size * world)``
  accumulated micro-batches; the square roots are taken per micro-batch, and the micro-batch
  losses are averaged.
- Data order: epoch e visits the chunks in ``randperm(n, seed=(seed, e))``; the last incomplete
  batch of an epoch is dropped. Dropout draws are re-seeded from (seed, step, rank) at every step,
  so a run resumed from a checkpoint draws exactly what the uninterrupted run drew and ends with
  the same weights (checkpoints therefore carry no RNG state; the lr schedule is a pure function
  of the step, so they carry no scheduler either).

Variants (ablations of the paper), by configuration: ``decay`` ('exponential', 'logistic',
'poly1', 'poly3'; shared with :mod:`apd.curves`), ``flip=False`` (no R(.), the amplitude a is the
raw MLP output and may be negative), ``space='logit'`` (curves over the log of the renormalised
probabilities and c = log_softmax_A(L_ELM - L_ALM'); the flip is then v -> -v, see
:func:`apd.curves.flip_values`; loss values are in log-probability units), ``members`` (a subset,
which must keep the ALM and the ELM), ``data_fraction`` (the first fraction of the chunks),
``lambda2 = 0``, other ``lambda3``.

Input data (written by :mod:`apd.collect`): records, one per chunk of S positions, with
``input_ids`` (S,) int, ``token_ids`` (S, K) int (ELM top-20 first), ``member_logprobs``
(N, S, K) float16 (each member's FULL-vocabulary log-softmax at those ids, smallest member first),
``alm_logits`` and ``elm_logits`` (S, K) float16 raw logits, and the metadata ``log_sizes`` (N,) and
``member_names`` (in each record, as attributes of the record sequence, or as arguments).
See :class:`CollectedChunks`.

Outputs in ``out_dir``: ``checkpoints/step_XXXXXXXX.pt`` (written atomically; ALM', MLP,
optimizer, step), ``train_log.jsonl`` (every loss term at every ``log_every``-th step),
``train_config.json``, and at the end ``alm_prime/`` (``save_pretrained``: loads like any HF
causal LM; plus the tokenizer if given, and ``curve_mlp.pt``). A finished run with the same
fingerprint (config + data + initial weights) is returned as is.

Several GPUs (data parallel, e.g. Pythia-scale runs): the same code runs under Hugging Face
Accelerate when it is launched with more than one process::

    accelerate launch --multi_gpu --num_processes 8 -m apd.train \\
        --alm EleutherAI/pythia-70m-deduped --data results/pythia/collected --out results/pythia/alm_prime_run \\
        --family pythia --set micro_batch_size=8

Each process takes its share of every batch; gradients are averaged by DDP. On one device run
``python -m apd.train ...`` with the same arguments.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import hashlib
import json
import math
import os
import shutil
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

import numpy as np
import torch
from torch import nn

from apd import curves

LAMBDA3 = {"pythia": 0.8, "opt": 0.4, "qwen": 1.0}   # the paper's values, tuned on FactualityPrompts validation
LAMBDA3_GRID = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2)        # the paper's tuning grid
X_ORIGINS = ("zero", "alm")
RECORD_KEYS = ("input_ids", "token_ids", "member_logprobs", "alm_logits", "elm_logits")


# ============================================================================ configuration

@dataclass
class APDTrainConfig:
    """Everything that decides an ALM' training run. Defaults are the paper's/release's."""

    family: str = "pythia"                 # pythia | opt | qwen | pico | any name (then give lambda3)
    lambda2: float = 10.0
    lambda3: Optional[float] = None        # None: LAMBDA3[family]
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup_steps: float = 100              # >= 1: steps; in (0, 1): fraction of all steps
    epochs: int = 5
    batch_size: int = 64                   # chunks (sequences) per optimizer step, all processes together
    micro_batch_size: Optional[int] = None # chunks per forward pass and process; None: 8 on CUDA, 4 on CPU
    decay: str = "exponential"             # exponential | logistic | poly1 | poly3 (see apd.curves)
    flip: bool = True
    space: str = "prob"                    # prob | logit
    x_origin: str = "zero"                 # zero: raw log sizes (release) | alm: measured from the ALM
    members: Optional[tuple] = None        # subset by index or name; must keep the ALM and the ELM
    data_fraction: float = 1.0
    hidden: int = 100
    n_hidden_layers: int = 3
    mid_dropout: float = 0.5
    grad_clip: float = 0.0                 # 0: off (nothing stated in paper or release)
    seed: int = 0
    device: Optional[str] = None           # None: cuda if available, else cpu
    bf16: bool = True                      # bf16 autocast of the ALM' forward pass, CUDA only
    checkpoint_every: int = 200
    keep_checkpoints: int = 1
    log_every: int = 1

    def __post_init__(self):
        if self.members is not None:
            self.members = tuple(self.members)
        if self.space not in curves.SPACES:
            raise ValueError(f"space must be 'prob' or 'logit', got {self.space!r}.")
        if self.x_origin not in X_ORIGINS:
            raise ValueError(f"x_origin must be one of {X_ORIGINS}, got {self.x_origin!r}.")
        curves.get_decay(self.decay)  # raises on an unknown name
        if not 0.0 < self.data_fraction <= 1.0:
            raise ValueError(f"data_fraction must be in (0, 1], got {self.data_fraction}.")
        for name in ("epochs", "batch_size", "checkpoint_every", "log_every", "keep_checkpoints"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.micro_batch_size is not None and self.micro_batch_size < 1:
            raise ValueError(f"micro_batch_size must be >= 1 or None, got {self.micro_batch_size}.")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {self.warmup_steps}.")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}.")
        if not 0.0 <= self.mid_dropout < 1.0:
            raise ValueError(f"mid_dropout must be in [0, 1), got {self.mid_dropout}.")

    @property
    def lambda3_value(self) -> float:
        if self.lambda3 is not None:
            return float(self.lambda3)
        if self.family in LAMBDA3:
            return LAMBDA3[self.family]
        raise ValueError(
            f"no published lambda3 for family {self.family!r} (the paper has {LAMBDA3}); tune it on a "
            f"validation split over LAMBDA3_GRID = {LAMBDA3_GRID} and pass it, e.g. APDTrainConfig("
            f"family={self.family!r}, lambda3=0.8).")

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["members"] = list(self.members) if self.members is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "APDTrainConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown APDTrainConfig fields {sorted(unknown)}; known: {sorted(known)}.")
        return cls(**d)


# Fields that do not change the trained weights (left out of the run's fingerprint).
_NOT_FINGERPRINTED = ("device", "checkpoint_every", "keep_checkpoints", "log_every")


def resolve_device(device: Optional[str]) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but CUDA is not available; use device=None or 'cpu'.")
    return dev


def _micro_batch(config: APDTrainConfig, device: torch.device, world: int) -> int:
    per_process, rem = divmod(config.batch_size, world)
    if rem:
        raise ValueError(f"batch_size {config.batch_size} is not divisible by the {world} processes; "
                         "pick a multiple of the number of GPUs.")
    want = config.micro_batch_size or (8 if device.type == "cuda" else 4)
    want = min(want, per_process)
    if config.micro_batch_size is not None and per_process % want:
        raise ValueError(f"micro_batch_size {want} does not divide the {per_process} chunks per process "
                         f"and step (batch_size {config.batch_size} / {world} processes).")
    while per_process % want:  # automatic choice: the largest divisor below the target
        want -= 1
    return want


def warmup_for(config: APDTrainConfig, total_steps: int) -> int:
    """Warm-up steps for a run of ``total_steps``: a fraction if warmup_steps < 1, else steps.
    A warm-up as long as the whole run (tiny runs with the paper's 100) becomes 10% of it, with a warning."""
    w = config.warmup_steps
    steps = int(round(w * total_steps)) if 0 < w < 1 else int(w)
    if steps >= total_steps and total_steps > 0:
        scaled = max(1, int(math.ceil(0.1 * total_steps)))
        warnings.warn(f"warmup_steps={w} is not shorter than the whole run ({total_steps} steps); using "
                      f"{scaled} (10%). Pass warmup_steps as a fraction, e.g. 0.05, to choose yourself.")
        steps = scaled
    return steps


def lr_at(step: int, total_steps: int, warmup: int, lr: float) -> float:
    """lr of optimizer update ``step`` (0-based): linear warm-up to ``lr`` over ``warmup`` updates
    (the first update uses lr / warmup, not 0), then linear decay reaching 0 after the last."""
    if step < warmup:
        return lr * (step + 1) / warmup
    return lr * max(0.0, (total_steps - step) / max(1, total_steps - warmup))


# ============================================================================ data

def _tensor(x, dtype=None) -> torch.Tensor:
    t = x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
    return t.to(dtype) if dtype is not None else t


class CollectedChunks(torch.utils.data.Dataset):
    """A map-style dataset over collected records (see the module docstring for their schema).

    ``records``: a sequence (``len`` + indexing; read lazily, e.g. a shard reader over memory-mapped
    files) or any iterable of dict records (read into memory once). Values may be numpy arrays or
    tensors. ``log_sizes``/``member_names`` are taken from the arguments, else from attributes of
    ``records``, else from the first record. ``members`` selects a subset (indices or names, must
    include the ALM and the ELM); ``data_fraction`` keeps the first fraction of the chunks.

    Items: ``input_ids`` (S,) int64, ``token_ids`` (S, K) int64, ``member_logprobs`` (N', S, K)
    float32 (selected members), ``alm_logits``/``elm_logits`` (S, K) float32.
    """

    def __init__(self, records, *, log_sizes=None, member_names=None, members=None, data_fraction: float = 1.0):
        if isinstance(records, (str, os.PathLike)):
            raise TypeError(f"records must be records (dicts) or a sequence of them, got the path {records!r}; "
                            "open the collected shards first (apd.collect) or use `python -m apd.train --data`.")
        if not (hasattr(records, "__len__") and hasattr(records, "__getitem__")) or isinstance(records, dict):
            if isinstance(records, dict):
                raise TypeError("records must be a sequence/iterable of per-chunk dict records, got one dict; "
                                "wrap it in a list: [record].")
            records = list(records)
        if len(records) == 0:
            raise ValueError("no collected records: run apd.collect first (or check the shard path).")
        self.records = records
        first = records[0]
        missing = [k for k in RECORD_KEYS if k not in first]
        if missing:
            raise ValueError(f"collected records lack {missing}; each record needs {list(RECORD_KEYS)} "
                             "(see apd.train's module docstring for shapes).")
        log_sizes = log_sizes if log_sizes is not None else getattr(records, "log_sizes", None)
        log_sizes = log_sizes if log_sizes is not None else first.get("log_sizes")
        if log_sizes is None:
            raise ValueError("log_sizes (natural logs of the members' non-embedding parameter counts) are "
                             "neither in the records nor given; pass log_sizes=[...].")
        all_x = np.asarray(_tensor(log_sizes, torch.float64).cpu().numpy(), dtype=np.float64).reshape(-1)
        names = member_names if member_names is not None else getattr(records, "member_names", None)
        names = names if names is not None else first.get("member_names")
        all_names = [str(n) for n in names] if names is not None else [f"member{i}" for i in range(len(all_x))]
        n_all = len(all_x)
        if len(all_names) != n_all:
            raise ValueError(f"{len(all_names)} member names for {n_all} log sizes.")
        if not np.all(np.diff(all_x) > 0):
            raise ValueError(f"log_sizes must increase (members ordered smallest = ALM first, ELM last), got {all_x}.")
        lp = _tensor(first["member_logprobs"])
        if lp.ndim != 3 or lp.shape[0] != n_all:
            raise ValueError(f"member_logprobs must be (N={n_all} members, S, K), got {tuple(lp.shape)}.")
        self.seq_len, self.set_size = int(lp.shape[1]), int(lp.shape[2])
        self.member_index = resolve_members(members, all_names)
        self.log_sizes = torch.tensor(all_x[self.member_index], dtype=torch.float64)
        self.all_log_sizes = all_x
        self.member_names = [all_names[i] for i in self.member_index]
        self.all_member_names = all_names
        if not 0.0 < data_fraction <= 1.0:
            raise ValueError(f"data_fraction must be in (0, 1], got {data_fraction}.")
        self.n = max(1, int(round(data_fraction * len(records))))

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict:
        if not 0 <= i < self.n:
            raise IndexError(i)
        r = self.records[i]
        item = {
            "input_ids": _tensor(r["input_ids"], torch.long),
            "token_ids": _tensor(r["token_ids"], torch.long),
            "member_logprobs": _tensor(r["member_logprobs"])[list(self.member_index)].float(),
            "alm_logits": _tensor(r["alm_logits"]).float(),
            "elm_logits": _tensor(r["elm_logits"]).float(),
        }
        s, k = self.seq_len, self.set_size
        expect = {"input_ids": (s,), "token_ids": (s, k), "member_logprobs": (len(self.member_index), s, k),
                  "alm_logits": (s, k), "elm_logits": (s, k)}
        for key, shape in expect.items():
            if tuple(item[key].shape) != shape:
                raise ValueError(f"record {i}: {key} has shape {tuple(item[key].shape)}, expected {shape} "
                                 f"(every chunk must have S={s} positions and K={k} tokens per set).")
        for key in ("member_logprobs", "alm_logits", "elm_logits"):
            if torch.isnan(item[key]).any():
                raise ValueError(f"record {i}: {key} contains NaN; re-collect that shard.")
            item[key] = torch.nan_to_num(item[key], neginf=-1e4)
        return item


def resolve_members(members, names: Sequence[str]) -> list[int]:
    """Indices (sorted) of a member subset given by index or name; it must keep the ALM and the ELM."""
    n = len(names)
    if members is None:
        return list(range(n))
    out = set()
    for m in members:
        if isinstance(m, (int, np.integer)):
            i = int(m) + (n if int(m) < 0 else 0)
            if not 0 <= i < n:
                raise ValueError(f"member index {m} out of range for {n} members {list(names)}.")
        elif m in names:
            i = list(names).index(m)
        else:
            raise ValueError(f"unknown member {m!r}; members are {list(names)} (or indices 0..{n - 1}).")
        out.add(i)
    idx = sorted(out)
    if idx[0] != 0 or idx[-1] != n - 1 or len(idx) < 2:
        raise ValueError(f"a member subset must keep the ALM ({names[0]!r}) and the ELM ({names[-1]!r}): ALM' is "
                         f"fine-tuned from the ALM and the asymptote uses the ELM's logits; got {[names[i] for i in idx]}.")
    return idx


def collate_chunks(items: Sequence[dict]) -> dict:
    """Stack items of :class:`CollectedChunks` into a batch: (B, S), (B, S, K), (B, N, S, K), ..."""
    return {k: torch.stack([it[k] for it in items]) for k in items[0]}


def epoch_order(n: int, seed: int, epoch: int) -> torch.Tensor:
    """The order in which epoch ``epoch`` visits ``n`` chunks (a seeded permutation)."""
    g = torch.Generator().manual_seed(int(seed) * 1_000_003 + int(epoch))
    return torch.randperm(n, generator=g)


def collected_batches(chunks: CollectedChunks, batch_size: int, *, shuffle: bool = False, seed: int = 0,
                      epoch: int = 0, drop_last: bool = False):
    """Yield stacked batches of ``batch_size`` chunks (in order, or in :func:`epoch_order`)."""
    order = epoch_order(len(chunks), seed, epoch) if shuffle else torch.arange(len(chunks))
    for start in range(0, len(chunks), batch_size):
        idx = order[start:start + batch_size]
        if drop_last and len(idx) < batch_size:
            return
        yield collate_chunks([chunks[int(i)] for i in idx])


# ============================================================================ the curve model

def member_values(member_logprobs: torch.Tensor, space: str = "prob", dim: int = -1) -> torch.Tensor:
    """Renormalise members' log-probabilities over the token set (axis ``dim``): probabilities
    (space 'prob') or their logs (space 'logit'). Same shape as the input."""
    curves._check_space(space)
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

    def __init__(self, log_sizes, *, decay: str = "exponential", space: str = "prob", flip: bool = True,
                 x_origin: str = "zero", hidden: int = 100, n_hidden_layers: int = 3, mid_dropout: float = 0.5,
                 member_names: Optional[Sequence[str]] = None):
        super().__init__()
        x = torch.as_tensor(log_sizes, dtype=torch.float64).reshape(-1)
        if x.numel() < 2 or not bool((x[1:] > x[:-1]).all()):
            raise ValueError(f"log_sizes must hold >= 2 increasing log sizes (ALM first), got {x.tolist()}.")
        curves._check_space(space)
        if x_origin not in X_ORIGINS:
            raise ValueError(f"x_origin must be one of {X_ORIGINS}, got {x_origin!r}.")
        self.settings = dict(log_sizes=x.tolist(), decay=curves.get_decay(decay).name, space=space, flip=bool(flip),
                             x_origin=x_origin, hidden=int(hidden), n_hidden_layers=int(n_hidden_layers),
                             mid_dropout=float(mid_dropout),
                             member_names=list(member_names) if member_names is not None else None)
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
        x = self.log_sizes if log_sizes is None else torch.as_tensor(log_sizes, dtype=torch.float32,
                                                                     device=self.log_sizes.device)
        return x - self.log_sizes[0] if self.x_origin == "alm" else x

    def curve_params(self, inputs: torch.Tensor) -> torch.Tensor:
        """(..., N + 1) inputs (values, then c) -> (..., P) curve parameters."""
        n = self.n_members
        if inputs.shape[-1] != n + 1:
            raise ValueError(f"CurveMLP expects {n} member values plus c in the last axis, got {inputs.shape[-1]}.")
        if n > 3:  # dropout on members 3 .. N-1 (1-based): indices 2 .. N-2
            inputs = torch.cat([inputs[..., :2], self.dropout(inputs[..., 2:n - 1]), inputs[..., n - 1:]], dim=-1)
        raw = self.head(self.body(inputs))
        if self.flip:
            return torch.exp(raw)
        return torch.cat([raw[..., :1], torch.exp(raw[..., 1:])], dim=-1)

    def forward(self, values: torch.Tensor, c: torch.Tensor) -> CurveOutput:
        """values (..., N): renormalised member values (probabilities, or their logs in logit space);
        c (...): the asymptote in the same space. Returns the curve at the members' x, flipped space."""
        if values.shape[-1] != self.n_members:
            raise ValueError(f"values must have N = {self.n_members} members in the last axis, got {values.shape[-1]}.")
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
        blob = torch.load(path, map_location=map_location, weights_only=False)
        model = cls(**blob["settings"])
        model.load_state_dict(blob["state_dict"])
        return model


# ============================================================================ losses

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


class APDObjective(nn.Module):
    """ALM' plus the curve MLP; ``forward(**batch)`` returns the loss terms of one (micro-)batch."""

    def __init__(self, alm: nn.Module, mlp: CurveMLP, *, lambda2: float, lambda3: float, bf16: bool = True):
        super().__init__()
        self.alm, self.mlp = alm, mlp
        self.lambda2, self.lambda3, self.bf16 = float(lambda2), float(lambda3), bool(bf16)

    def alm_prime_logits(self, input_ids: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
        """Raw logits of ALM' at the token sets: (B, S) ids, (B, S, K) token ids -> (B, S, K) float32."""
        dev = input_ids.device
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=self.bf16 and dev.type == "cuda"):
            logits = self.alm(input_ids=input_ids).logits
        if int(token_ids.max()) >= logits.shape[-1]:
            raise ValueError(f"token id {int(token_ids.max())} >= ALM' vocabulary size {logits.shape[-1]}: the "
                             "collected data were made with another tokenizer/model family.")
        return torch.gather(logits, -1, token_ids).float()

    def forward(self, input_ids, token_ids, member_logprobs, alm_logits, elm_logits) -> dict:
        lp = self.alm_prime_logits(input_ids, token_ids)
        with torch.autocast(device_type=input_ids.device.type, enabled=False):
            values = member_values(member_logprobs.float(), self.mlp.space).permute(0, 2, 3, 1)  # (B, S, K, N)
            c = asymptote(elm_logits.float(), lp, self.mlp.space)                                 # (B, S, K)
            out = self.mlp(values, c)
            l1, l2, l3 = loss_l1(out.curve, out.target), loss_l2(out.curve, out.target), loss_l3(lp, alm_logits.float())
            loss = l1 + self.lambda2 * l2 + self.lambda3 * l3
        return {"loss": loss, "l1": l1, "l2": l2, "l3": l3, "flip_frac": out.flipped.float().mean()}


# ============================================================================ training loop

def _model_digest(model: nn.Module) -> str:
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def _data_digest(data: CollectedChunks) -> dict:
    h = hashlib.sha256()
    for i in sorted({0, len(data) // 2, len(data) - 1}):
        item = data[i]
        for k in RECORD_KEYS:
            h.update(item[k].numpy().tobytes())
    return {"n_chunks": len(data), "seq_len": data.seq_len, "set_size": data.set_size,
            "members": data.member_names, "log_sizes": data.log_sizes.tolist(), "sample_sha256": h.hexdigest()[:16]}


def _fingerprint(cfg: dict, data_info: dict, model_digest: str) -> str:
    keep = {k: v for k, v in cfg.items() if k not in _NOT_FINGERPRINTED}
    blob = json.dumps({"config": keep, "data": data_info, "alm": model_digest}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _load_alm(alm_model_or_path) -> nn.Module:
    if isinstance(alm_model_or_path, nn.Module):
        return copy.deepcopy(alm_model_or_path).float()  # never modify the caller's model
    from transformers import AutoModelForCausalLM
    path = alm_model_or_path
    if str(path).startswith(("/", ".", "~")) and not Path(path).expanduser().exists():  # a local path, not a Hub id
        raise FileNotFoundError(f"ALM {path} not found: pass a model, a save_pretrained folder or a Hub id.")
    return AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32)


def _checkpoints(out_dir: Path) -> list[Path]:
    return sorted((out_dir / "checkpoints").glob("step_*.pt"))


def _atomic_save(obj, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def _write_json(path: Path, obj) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=str))
    os.replace(tmp, path)


def _accelerator():
    """An accelerate.Accelerator when launched with several processes, else None."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    try:
        from accelerate import Accelerator
    except ImportError as e:  # pragma: no cover
        raise ImportError("several processes were launched but `accelerate` is not installed; "
                          "pip install accelerate (or `pip install apd[gpu]`).") from e
    acc = Accelerator(cpu=not torch.cuda.is_available())  # cpu=True: gloo data parallel (tests, no GPU)
    if acc.num_processes != int(os.environ["WORLD_SIZE"]):
        raise RuntimeError(f"WORLD_SIZE={os.environ['WORLD_SIZE']} but accelerate set up {acc.num_processes} "
                           "process(es); launch with `accelerate launch --multi_gpu --num_processes N` (or torchrun).")
    return acc


def train_alm_prime(config: APDTrainConfig, alm_model_or_path, records, out_dir, *, tokenizer=None,
                    log_sizes=None, member_names=None, stop_after: Optional[int] = None,
                    callback: Optional[Callable[[int, dict], None]] = None, progress: bool = True) -> Path:
    """Fine-tune ALM' with the curve MLP; returns the ``alm_prime/`` folder (``save_pretrained``).

    ``alm_model_or_path``: the original ALM (a model, copied, never modified; or a folder/Hub id).
    ``records``: collected records, a sequence of them, or a :class:`CollectedChunks` (re-read with
    the config's ``members`` and ``data_fraction``).
    ``out_dir``: where checkpoints, the log and the result go. A run in an ``out_dir`` that already
    holds checkpoints of the same fingerprint resumes from the latest one; a finished one is
    returned at once; a different configuration there is an error.
    ``stop_after``: leave after this many optimizer steps of this call (a checkpoint is written;
    e.g. to fit a time slot) and return that checkpoint's path instead.
    ``callback(step, record)``: called after every optimizer step with the logged loss terms.
    """
    out_dir = Path(out_dir)
    acc = _accelerator()
    world = acc.num_processes if acc else 1
    rank = acc.process_index if acc else 0
    main = rank == 0
    device = acc.device if acc else resolve_device(config.device)

    if isinstance(records, CollectedChunks):  # the config decides members and data fraction
        records, log_sizes, member_names = records.records, records.all_log_sizes, records.all_member_names
    data = CollectedChunks(records, log_sizes=log_sizes, member_names=member_names, members=config.members,
                           data_fraction=config.data_fraction)
    micro = _micro_batch(config, device, world)
    accum = config.batch_size // (world * micro)
    steps_per_epoch = len(data) // config.batch_size
    if steps_per_epoch == 0:
        raise ValueError(f"{len(data)} chunks are fewer than one batch of {config.batch_size}; lower batch_size "
                         "or collect more data.")
    total = steps_per_epoch * config.epochs
    warmup = warmup_for(config, total)
    lambda3 = config.lambda3_value

    alm = _load_alm(alm_model_or_path)
    cfg = config.to_dict()
    cfg.update(lambda3=lambda3, micro_batch_size=micro)
    data_info = _data_digest(data)
    fingerprint = _fingerprint(cfg, data_info, _model_digest(alm))
    final = out_dir / "alm_prime"
    meta_path = out_dir / "train_config.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("fingerprint") != fingerprint:
            raise ValueError(f"{out_dir} holds a different run (fingerprint {meta.get('fingerprint')} != {fingerprint}: "
                             "other config, data or initial ALM); use a new out_dir or delete that one.")
        if meta.get("status") == "done" and final.exists():
            return final

    torch.manual_seed(config.seed)
    mlp = CurveMLP(data.log_sizes, decay=config.decay, space=config.space, flip=config.flip,
                   x_origin=config.x_origin, hidden=config.hidden, n_hidden_layers=config.n_hidden_layers,
                   mid_dropout=config.mid_dropout, member_names=data.member_names)
    objective = APDObjective(alm, mlp, lambda2=config.lambda2, lambda3=lambda3, bf16=config.bf16).to(device)
    objective.train()
    optimizer = torch.optim.AdamW(objective.parameters(), lr=config.lr, weight_decay=config.weight_decay)

    step = 0
    log_path = out_dir / "train_log.jsonl"
    found = _checkpoints(out_dir)
    if found:
        state = torch.load(found[-1], map_location="cpu", weights_only=False)  # load_state_dict moves it
        if state["fingerprint"] != fingerprint:
            raise ValueError(f"checkpoint {found[-1]} belongs to another run; delete {out_dir / 'checkpoints'}.")
        objective.alm.load_state_dict(state["alm"])
        objective.mlp.load_state_dict(state["mlp"])
        optimizer.load_state_dict(state["optimizer"])
        step = int(state["step"])
    if main:
        out_dir.mkdir(parents=True, exist_ok=True)
        _write_json(meta_path, {"fingerprint": fingerprint, "status": "running", "config": cfg, "data": data_info,
                                "total_steps": total, "steps_per_epoch": steps_per_epoch, "warmup_steps": warmup,
                                "grad_accum": accum, "world_size": world, "device": str(device)})
        lines = log_path.read_text().splitlines() if log_path.exists() else []
        kept = [ln for ln in lines if ln.strip() and json.loads(ln)["step"] <= step]
        log_path.write_text("".join(ln + "\n" for ln in kept))

    model = objective
    if acc:
        model, optimizer = acc.prepare(objective, optimizer)

    def save_checkpoint() -> Path:
        path = out_dir / "checkpoints" / f"step_{step:08d}.pt"
        if main:
            _atomic_save({"step": step, "fingerprint": fingerprint, "alm": objective.alm.state_dict(),
                          "mlp": objective.mlp.state_dict(), "optimizer": optimizer.state_dict()}, path)
            for old in _checkpoints(out_dir)[:-config.keep_checkpoints]:
                old.unlink()
        if acc:
            acc.wait_for_everyone()
        return path

    try:
        from tqdm.auto import tqdm
        bar = tqdm(total=total, initial=step, desc="ALM'", disable=not (progress and main))
    except ImportError:  # pragma: no cover
        bar = None
    done_here = 0
    t0 = time.time()
    while step < total:
        if stop_after is not None and done_here >= stop_after:
            path = save_checkpoint()
            if bar is not None:
                bar.close()
            return path
        epoch, pos = divmod(step, steps_per_epoch)
        order = epoch_order(len(data), config.seed, epoch)
        chunk_ids = order[pos * config.batch_size:(pos + 1) * config.batch_size]
        mine = chunk_ids[rank * micro * accum:(rank + 1) * micro * accum]
        lr = lr_at(step, total, warmup, config.lr)
        for group in optimizer.param_groups:
            group["lr"] = lr
        torch.manual_seed((config.seed * 1_000_003 + step) * 997 + rank)  # dropout draws of this step
        sums = {}
        for j in range(accum):
            batch = collate_chunks([data[int(i)] for i in mine[j * micro:(j + 1) * micro]])
            batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
            sync = contextlib.nullcontext() if (acc is None or j == accum - 1) else acc.no_sync(model)
            with sync:
                out = model(**batch)
                if acc:
                    acc.backward(out["loss"] / accum)
                else:
                    (out["loss"] / accum).backward()
            for k, v in out.items():
                sums[k] = sums.get(k, 0.0) + v.detach() / accum
        if not all(bool(torch.isfinite(v)) for v in sums.values()):
            raise FloatingPointError(f"non-finite loss at step {step}: { {k: float(v) for k, v in sums.items()} }; "
                                     "lower lr, or check the collected data for inf/NaN.")
        if config.grad_clip > 0:
            params = objective.parameters()
            (acc.clip_grad_norm_(params, config.grad_clip) if acc else torch.nn.utils.clip_grad_norm_(params, config.grad_clip))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        done_here += 1
        if acc:
            sums = {k: acc.reduce(v, reduction="mean") for k, v in sums.items()}
        record = {"step": step, "epoch": epoch, "lr": lr, **{k: float(v) for k, v in sums.items()},
                  "seconds": round(time.time() - t0, 3)}
        if main and (step % config.log_every == 0 or step == total):
            with open(log_path, "a") as f:
                f.write(json.dumps(record) + "\n")
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{record['loss']:.4f}", l1=f"{record['l1']:.4f}", l2=f"{record['l2']:.4f}",
                            l3=f"{record['l3']:.4f}")
        if callback is not None:
            callback(step, record)
        if step % config.checkpoint_every == 0 and step < total:
            save_checkpoint()
    if bar is not None:
        bar.close()

    if main:
        tmp = out_dir / "alm_prime.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        objective.alm.save_pretrained(tmp)
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp)
        objective.mlp.save(tmp / "curve_mlp.pt")
        _write_json(tmp / "apd_train_config.json", {"fingerprint": fingerprint, "config": cfg, "data": data_info})
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        meta = json.loads(meta_path.read_text())
        meta["status"] = "done"
        _write_json(meta_path, meta)
        shutil.rmtree(out_dir / "checkpoints", ignore_errors=True)
    if acc:
        acc.wait_for_everyone()
    return final


@torch.no_grad()
def evaluate_losses(alm_prime, mlp: CurveMLP, records, *, lambda2: float = 10.0, lambda3: float = 0.0,
                    batch_size: int = 4, max_chunks: Optional[int] = None, device=None, log_sizes=None,
                    member_names=None, members=None) -> dict:
    """Mean L1, L2, L3 (and the weighted loss) over held-out chunks, dropout off: the numbers to
    report for a validation split (e.g. when choosing lambda3 for the pico family)."""
    dev = resolve_device(device)
    data = records if isinstance(records, CollectedChunks) else CollectedChunks(
        records, log_sizes=log_sizes, member_names=member_names, members=members)
    if data.log_sizes.numel() != mlp.n_members:
        raise ValueError(f"the MLP was trained on {mlp.n_members} members, the data have {data.log_sizes.numel()}; "
                         "select the same members (members=...).")
    objective = APDObjective(alm_prime, mlp, lambda2=lambda2, lambda3=lambda3).to(dev)
    was_training = objective.training
    objective.eval()
    n = len(data) if max_chunks is None else min(len(data), max_chunks)
    sums, count = {}, 0
    for start in range(0, n, batch_size):
        idx = range(start, min(n, start + batch_size))
        batch = {k: v.to(dev) for k, v in collate_chunks([data[i] for i in idx]).items()}
        out = objective(**batch)
        for k, v in out.items():
            sums[k] = sums.get(k, 0.0) + float(v) * len(idx)
        count += len(idx)
    objective.train(was_training)
    return {k: v / count for k, v in sums.items()} | {"n_chunks": count}


def tune_lambda3(config: APDTrainConfig, alm_model_or_path, records, out_root, score: Callable[[Path], float], *,
                 grid: Sequence[float] = LAMBDA3_GRID, **train_kwargs) -> tuple[float, list[dict]]:
    """Train one ALM' per lambda3 in ``grid`` (each in ``out_root/lambda3_<value>``, cached and
    resumable like any run) and keep the one with the lowest ``score(alm_prime_dir)``.

    The paper picked lambda3 on FactualityPrompts' validation prompts, a decoding metric; pass the
    matching validation score (lower = better) for your family, e.g. the error of APD on the
    pico world's validation questions. Returns (best lambda3, one row per value with its score).
    """
    rows = []
    for value in grid:
        run = dataclasses.replace(config, lambda3=float(value))
        path = train_alm_prime(run, alm_model_or_path, records, Path(out_root) / f"lambda3_{value:g}", **train_kwargs)
        rows.append({"lambda3": float(value), "score": float(score(path)), "alm_prime": str(path)})
    best = min(rows, key=lambda r: r["score"])
    return best["lambda3"], rows


# ============================================================================ analysis

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
def predict_curves(mlp: Union[CurveMLP, str, os.PathLike], member_logprobs, elm_logits, alm_prime_logits, *,
                   x=None, n_points: int = 100) -> CurvePrediction:
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
    values = member_values(lp, mlp.space).movedim(0, -1)                                    # (..., K, N)
    c = asymptote(torch.as_tensor(elm_logits, dtype=torch.float32, device=dev),
                  torch.as_tensor(alm_prime_logits, dtype=torch.float32, device=dev), mlp.space)
    out = mlp(values, c)
    xs = mlp.log_sizes
    if x is None:
        span = float(xs[-1] - xs[0])
        x = torch.linspace(float(xs[0]), float(xs[-1]) + 1.5 * span, n_points)
    x = torch.as_tensor(x, dtype=torch.float32, device=dev).reshape(-1)
    curve = mlp.decay(mlp.x(x), out.c, out.params)                                          # (..., K, X)
    return CurvePrediction(
        x=x, curve=curves.flip_values(curve, out.flipped[..., None], mlp.space),
        asymptote=curves.flip_values(out.c, out.flipped, mlp.space), observed=values, member_log_sizes=xs.clone(),
        params=out.params, param_names=mlp.decay.param_names, flipped=out.flipped)


# ============================================================================ command line

def _open_records(path: str) -> CollectedChunks:
    """The records of an ``apd.collect`` folder, with the members and log sizes of its manifest."""
    from apd import collect

    manifest = collect.read_manifest(path)
    return CollectedChunks(list(collect.iter_records(path)), log_sizes=manifest["log_sizes"],
                           member_names=manifest["members"])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Train ALM' (APD) from collected data; see apd.train's docstring.")
    ap.add_argument("--alm", required=True, help="the ALM: a save_pretrained folder or a Hub id")
    ap.add_argument("--data", required=True, help="collected data (apd.collect output)")
    ap.add_argument("--out", required=True, help="output folder (checkpoints, log, alm_prime/)")
    ap.add_argument("--family", default=None, help="pythia | opt | qwen | pico ...")
    ap.add_argument("--config", default=None, help="JSON or YAML file of APDTrainConfig fields")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="override one field (YAML value)")
    ap.add_argument("--tokenizer", default=None, help="tokenizer to save with ALM' (default: the ALM's, if any)")
    args = ap.parse_args(argv)
    import yaml
    fields = yaml.safe_load(Path(args.config).read_text()) if args.config else {}
    if args.family:
        fields["family"] = args.family
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects FIELD=VALUE, got {item!r}")
        fields[key] = yaml.safe_load(value)
    config = APDTrainConfig.from_dict(fields)
    tokenizer = None
    from transformers import AutoTokenizer
    try:
        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer or args.alm)
    except Exception as e:  # noqa: BLE001
        if args.tokenizer:
            raise
        print(f"note: no tokenizer saved with ALM' ({type(e).__name__}: {e})")
    path = train_alm_prime(config, args.alm, _open_records(args.data), args.out, tokenizer=tokenizer)
    print(path)


if __name__ == "__main__":
    main()
