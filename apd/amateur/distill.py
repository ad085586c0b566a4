"""Targets of distilled on-the-fly APD (``APDTrainConfig(objective="distill")``).

Per position of the collected data, every token's curve (its members' probabilities, renormalised
over the token set, ALM first) is fitted by the vectorised fitter :func:`apd.core.curves.fit_curves`
with :data:`DISTILL_FIT`; the fitted asymptotes, renormalised over the set, are the target that ALM'
is trained to reproduce as c = softmax over the set of (L_ELM - L_ALM') (loss:
:func:`apd.amateur.objective.loss_distill`). Targets are probabilities (S, K) per chunk; a NaN row
marks a position that was not fitted (see ``stride``).

Cost. The fitter runs 200 Adam steps per curve (TUNED_FIT's start and schedule, half of the 400 of
APD on the fly); tokens whose largest member probability is below ``min_prob`` are not fitted
(their asymptote is p_ELM: they hold a few per cent of a set's mass), and only every ``stride``-th
position gets a target (16: 8 of a default pico chunk's 128 positions). The fit runs on one torch
thread: its tensors are small, and threads only contend on a shared CPU (design notes).
Targets are cached per shard under
``<cache>/distill/<key>/`` (key: the collection, the members fitted, :data:`DISTILL_FIT`), written
atomically with a digest under a lock, like the collection itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import torch
from safetensors.numpy import save_file

from apd.amateur import collect
from apd.amateur.data import resolve_members
from apd.base import paths
from apd.base.io import atomic_write, remove_stale_tmp
from apd.base.lock import file_lock
from apd.core import curves

#: The fitter's settings for distillation targets (part of the targets' and the run's cache keys).
DISTILL_FIT = dict(version=2, fit=dict(curves.TUNED_FIT, iterations=200), min_prob=0.01, stride=16)


@contextlib.contextmanager
def _one_thread():
    """torch on one thread for the fit: its tensors are small ((curves, N) with N ~ 6), and on a
    shared CPU two threads only contend (design notes); restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fit_member_curves(probs, log_sizes: Sequence[float], fit: Optional[dict] = None) -> curves.CurveFit:
    """:func:`apd.core.curves.fit_curves` of ``probs`` (M curves, N members; probabilities
    renormalised over the token set, ALM first) at ``log_sizes`` (N,) with TUNED_FIT updated by
    ``fit``, on one torch thread (see the module docstring).

    Example:
        >>> import torch
        >>> x = [9.5, 10.1, 10.9, 11.7, 12.6, 14.4]
        >>> p = 0.6 - 0.3 * torch.exp(-0.8 * (torch.tensor(x) - 9.5))
        >>> round(float(fit_member_curves(p[None], x).asymptote[0]), 2)
        0.6
    """
    with _one_thread():
        return curves.fit_curves(probs, log_sizes, **dict(curves.TUNED_FIT, **(fit or {})))


def fit_targets(
    member_logprobs, log_sizes: Sequence[float], *, min_prob: float = 0.01, stride: int = 1, fit: Optional[dict] = None
) -> torch.Tensor:
    """Target asymptotes at a token set from the members' log-probabilities.

    member_logprobs (N, ..., S, K): log-probabilities (or logits) of the N members (ALM first) at
    the token set (last axis); log_sizes (N,): ln non-embedding sizes. Returns (..., S, K) float32
    probabilities summing to 1 over K: the fitted asymptotes renormalised over the set (p_ELM for a
    token whose members all stay below ``min_prob``, and for a set whose asymptotes sum to 0). Only
    positions s with s % ``stride`` == 0 are fitted; the other rows are NaN.

    Example (two tokens whose curves approach 0.7 / 0.3; the ELM says 0.64 / 0.36):
        >>> import math, torch
        >>> x = [9.45, 10.25, 11.51, 12.72, 13.58, 14.39]
        >>> p = torch.tensor([0.7 - 0.4 * math.exp(-0.6 * (v - 9.45)) for v in x])
        >>> lp = torch.log(torch.stack([p, 1 - p], -1))[:, None, :]           # (N, S=1, K=2)
        >>> [round(v, 2) for v in fit_targets(lp, x)[0].tolist()]
        [0.7, 0.3]
    """
    lp = torch.as_tensor(member_logprobs).float()
    if lp.ndim < 3:
        raise ValueError(f"member_logprobs must be (N members, ..., S, K), got shape {tuple(lp.shape)}.")
    if int(stride) < 1 or not 0.0 <= float(min_prob) < 1.0:
        raise ValueError(f"stride must be >= 1 and min_prob in [0, 1), got {stride}, {min_prob}.")
    n = lp.shape[0]
    p = torch.softmax(lp, -1).movedim(0, -1)  # (..., S, K, N)
    out = torch.full(p.shape[:-1], float("nan"))  # (..., S, K)
    rows = p[..., :: int(stride), :, :]  # (..., S', K, N)
    flat = rows.reshape(-1, n)
    ap = flat[:, -1].clone()  # p_ELM by default
    fitted = flat.max(-1).values >= float(min_prob)
    if bool(fitted.any()):
        res = fit_member_curves(flat[fitted], log_sizes, fit)
        ap[fitted] = res.asymptote.float()
    ap = ap.reshape(rows.shape[:-1])  # (..., S', K)
    total = ap.sum(-1, keepdim=True)
    p_elm = rows[..., -1]
    out[..., :: int(stride), :] = torch.where(total > 0, ap / total.clamp_min(1e-30), p_elm)
    return out


def _key(collect_dir, member_names: Sequence[str], settings: dict) -> str:
    blob = json.dumps(
        ["distill-targets", *collect.collection_identity(collect_dir), list(member_names), settings],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def targets_dir(collect_dir, member_names: Sequence[str], settings: dict = DISTILL_FIT, cache=None) -> Path:
    """The folder of the cached targets of ``collect_dir`` for these members and settings."""
    return Path(cache or paths.cache_dir()) / "distill" / _key(collect_dir, member_names, settings)


def collection_targets(
    collect_dir, members=None, n_chunks: Optional[int] = None, *, settings: dict = DISTILL_FIT, cache=None
) -> list[np.ndarray]:
    """Targets (S, K) float32 of the first ``n_chunks`` chunks of a collection (all by default),
    fitted with the members ``members`` (names or indices; None: all), computed once per shard and
    cached (see the module docstring)."""
    manifest = collect.read_manifest(collect_dir)
    names = manifest["members"]
    idx = resolve_members(None if members is None else tuple(members), names)
    x = [manifest["log_sizes"][i] for i in idx]
    folder = targets_dir(collect_dir, [names[i] for i in idx], settings, cache)
    want = None if n_chunks is None else int(n_chunks)
    out: list[np.ndarray] = []
    for j, s in enumerate(manifest["shards"]):
        if want is not None and len(out) >= want:
            break
        path = folder / f"targets-{j:05d}.safetensors"
        arr = collect.load_checked(path, "distillation targets")
        if arr is None:
            with file_lock(folder.parent / f"{folder.name}.lock"):
                arr = collect.load_checked(path, "distillation targets")
                if arr is None:
                    remove_stale_tmp(folder)
                    shard = collect.load_shard(Path(collect_dir) / s["file"], as_torch=True)
                    lp = shard["member_logprobs"].float()[:, idx].movedim(1, 0)  # (N, C, S, K)
                    t = fit_targets(
                        lp, x, min_prob=settings["min_prob"], stride=settings["stride"], fit=settings["fit"]
                    ).numpy()
                    folder.mkdir(parents=True, exist_ok=True)
                    atomic_write(
                        path, lambda tmp, t=t: save_file({"targets": np.ascontiguousarray(t)}, str(tmp)), digest=True
                    )
                    arr = {"targets": t}
        out.extend(list(arr["targets"]))
    return out if want is None else out[:want]


class WithTargets:
    """A sequence of collected records whose item ``i`` also carries ``targets[i]`` (S, K)."""

    def __init__(self, records, targets):
        self.records, self.targets = records, targets
        for name in ("log_sizes", "member_names"):
            if hasattr(records, name):
                setattr(self, name, getattr(records, name))

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, i: int) -> dict:
        if i >= len(self.targets):
            raise IndexError(f"chunk {i} has no distillation target (targets cover {len(self.targets)} chunks).")
        return {**self.records[i], "targets": self.targets[i]}


def targets_for_records(
    records, log_sizes, member_index: Sequence[int], n: int, settings: dict = DISTILL_FIT, batch: int = 64
) -> list[torch.Tensor]:
    """Targets (S, K) for the first ``n`` records (uncached; for records given by hand), fitted on
    the members ``member_index`` at ``log_sizes`` (all members' log sizes)."""
    x = [float(log_sizes[i]) for i in member_index]
    out = []
    for start in range(0, n, batch):
        lp = torch.stack(
            [
                torch.as_tensor(np.asarray(records[i]["member_logprobs"])).float()[list(member_index)]
                for i in range(start, min(n, start + batch))
            ],
            1,
        )  # (N, C, S, K)
        t = fit_targets(lp, x, min_prob=settings["min_prob"], stride=settings["stride"], fit=settings["fit"])
        out.extend(list(t))
    return out
