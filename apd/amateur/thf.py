"""The THF model of REAL sampling: the ALM with a linear head predicting an entropy curve per position.

Per position, the head reads the ALM's last hidden state (after its final layer norm) and outputs
raw values whose exponentials are the asymptotic entropy c, the curve parameters (b, f, g, a_0.5,
a_1 .. a_K for ``poly10``; b, f, g for ``exponential``) and a direct prediction of the largest
member's entropy. The curve is :func:`apd.core.entropy.entropy_curve`; the loss
:func:`apd.core.entropy.thf_loss`; labels :mod:`apd.amateur.entropies`.

A saved THF model is a folder: the ALM's ``save_pretrained`` files, ``thf_head.pt`` (the head and
its settings: log sizes, member names, curve, condition, tokenizer identity), the tokenizer, and
``digests.json``. :func:`thf_model` trains it (cached under ``cache/thf/<key>``, resumable,
checkpointed); :func:`load_thf` reads it and refuses other log sizes or another tokenizer.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import torch
from torch import nn

from apd.amateur.config import lr_at, warmup_for
from apd.amateur.data import epoch_order
from apd.amateur.entropies import EntropyLabels, entropy_labels, load_entropies
from apd.amateur.runs import hash_key, family_name, finetune_texts
from apd.base import paths
from apd.base.checks import bounded, count
from apd.base.device import cpu_threads, resolve_device
from apd.base.io import (
    check_file,
    check_folder,
    check_log,
    read_json_checked,
    record_digest,
    remove_checkpoints,
    remove_stale_tmp,
    set_aside,
    torch_save,
    write_folder_digests,
    write_json,
)
from apd.base.lock import file_lock
from apd.base.progress import progress_bar
from apd.core import entropy as H
from apd.family.settings import Settings, settings_for
from apd.family.text import tokenizer_identity

HEAD_FILE = "thf_head.pt"
RAW_MAX = 20.0  # raw head outputs are clamped here before exp (e^20: far beyond any entropy)


@dataclass
class THFConfig:
    """Everything that decides a THF training run.

    decay: 'poly10' (the release's "a10") or 'exponential'; condition: 'normalised' (the family's x
    range to [1, 4]) or 'release' (raw ln sizes); weight_ratio: the loss weights' 0.8. Optimiser:
    AdamW, linear warm-up (``warmup_steps``: steps, or a fraction when < 1) then linear decay.
    batch_size: chunks per optimizer step. threads: torch CPU threads while training on the CPU (1: a
    small ALM trains many times faster on one thread than on contended ones). label_chunks: label and train on the first this many
    chunks of the fine-tuning text (None: all of it; the labels cost a forward pass per member).
    """

    decay: str = "poly10"
    condition: str = "normalised"
    weight_ratio: float = H.WEIGHT_RATIO
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup_steps: float = 100
    epochs: int = 3
    batch_size: int = 16
    seed: int = 0
    label_chunks: Optional[int] = None
    checkpoint_every: int = 100
    device: Optional[str] = None
    threads: Optional[int] = 1

    def __post_init__(self):
        for name in ("decay", "condition"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"THFConfig.{name} must be a str, got {getattr(self, name)!r}.")
        H.check_decay(self.decay)
        if self.condition not in H.CONDITIONS:
            raise ValueError(f"condition must be one of {H.CONDITIONS}, got {self.condition!r}.")
        for name in ("epochs", "batch_size", "checkpoint_every"):  # checked, not converted (the cache key)
            count(name, getattr(self, name), 1, strict=True)
        count("seed", self.seed, 0, strict=True)
        for name in ("label_chunks", "threads"):
            if getattr(self, name) is not None:
                count(name, getattr(self, name), 1, strict=True, hint="or None")
        bounded("lr", self.lr, above=0, hint="AdamW's learning rate, e.g. 1e-4")
        bounded("weight_decay", self.weight_decay, 0, hint="AdamW's, e.g. 0.01")
        bounded("warmup_steps", self.warmup_steps, 0, hint="steps (>= 1) or a fraction of all steps (< 1)")
        bounded("weight_ratio", self.weight_ratio, above=0, maximum=1, hint=f"the release's is {H.WEIGHT_RATIO}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def fingerprinted(self) -> dict:
        """The fields that change the trained weights (the cache key's part)."""
        return {k: v for k, v in self.to_dict().items() if k not in ("checkpoint_every", "device", "threads")}


def thf_config(settings: Settings, **changes) -> THFConfig:
    """The THF training configuration of a family's ``settings`` (``settings.thf_train``), with ``changes``.

    Example:
        >>> thf_config(settings_for("pico", "default")).label_chunks, thf_config(settings_for("opt", "smoke")).lr
        (384, 0.0001)
    """
    return THFConfig(**{**settings.thf_train, **changes})


@dataclass
class THFOutput:
    """Per position: c (..., S) asymptotic entropy, params (..., S, P), last (..., S) the direct
    prediction of the largest member's entropy, curve (..., S, N) at the members, h_last (..., S)
    the curve at the largest member. All nats."""

    c: torch.Tensor
    params: torch.Tensor
    last: torch.Tensor
    curve: torch.Tensor

    @property
    def h_last(self) -> torch.Tensor:
        return self.curve[..., -1]


class THFModel(nn.Module):
    """The THF model: a causal LM (the ALM) and a linear head on its last hidden state.

    lm: a Hugging Face causal LM (its ``base_model`` gives the hidden states); log_sizes (N,): the
    family's ln non-embedding sizes, ALM first; decay / condition: see :mod:`apd.core.entropy`.
    ``forward(input_ids (B, S), attention_mask, position_ids)`` -> :class:`THFOutput`.
    """

    def __init__(
        self,
        lm,
        log_sizes: Sequence[float],
        *,
        decay: str = "poly10",
        condition: str = "normalised",
        member_names: Optional[Sequence[str]] = None,
        tokenizer_id: Optional[str] = None,
    ):
        super().__init__()
        x = [float(v) for v in log_sizes]
        if len(x) < 2 or not all(b > a for a, b in zip(x, x[1:])):
            raise ValueError(f"log_sizes must hold >= 2 increasing values (ALM first), got {x}.")
        self.lm = lm
        self.decay = H.check_decay(decay)
        self.settings = dict(
            log_sizes=x,
            decay=self.decay.name,
            condition=condition,
            member_names=list(member_names) if member_names is not None else None,
            tokenizer_id=tokenizer_id,
        )
        H.condition_x(x, x, condition)  # checks the condition
        self.head = nn.Linear(lm.config.hidden_size, 1 + self.decay.n_params + 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    @property
    def log_sizes(self) -> list:
        return self.settings["log_sizes"]

    @property
    def tokenizer_id(self) -> Optional[str]:
        return self.settings["tokenizer_id"]

    def curve_at(self, x, c: torch.Tensor, params: torch.Tensor) -> torch.Tensor:
        """The entropy curve at log sizes x (X,): c (...), params (..., P) -> (..., X) nats."""
        return H.entropy_curve(
            x, c, params, self.log_sizes, decay=self.decay.name, condition=self.settings["condition"]
        )

    def forward(self, input_ids, attention_mask=None, position_ids=None) -> THFOutput:
        kwargs = {"attention_mask": attention_mask}
        if position_ids is not None:
            kwargs["position_ids"] = position_ids
        hidden = self.lm.base_model(input_ids=input_ids, **kwargs).last_hidden_state
        out = torch.exp(self.head(hidden.float()).clamp(max=RAW_MAX))
        c, params, last = out[..., 0], out[..., 1:-1], out[..., -1]
        return THFOutput(c=c, params=params, last=last, curve=self.curve_at(self.log_sizes, c, params))

    @torch.no_grad()
    def at_last(self, input_ids, attention_mask=None, window: Optional[int] = None) -> THFOutput:
        """The outputs at each row's last position, reading its last ``window`` tokens (all by default):
        input_ids (B, L), left-padded where ``attention_mask`` (B, L) is 0; positions counted from
        each row's first token. Returns a :class:`THFOutput` with shapes (B,), (B, P), (B, N)."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if window is not None:
            input_ids, attention_mask = input_ids[:, -window:], attention_mask[:, -window:]
        _ids_fit(self, input_ids)
        dev = next(self.parameters()).device
        position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        out = self(input_ids.to(dev), attention_mask=attention_mask.to(dev), position_ids=position_ids.to(dev))
        return THFOutput(c=out.c[:, -1], params=out.params[:, -1], last=out.last[:, -1], curve=out.curve[:, -1])

    def save_pretrained(self, folder, tokenizer=None) -> Path:
        """Write the LM (``save_pretrained``), ``thf_head.pt`` and the tokenizer into ``folder``."""
        folder = Path(folder)
        self.lm.save_pretrained(folder)
        if tokenizer is not None:
            tokenizer.save_pretrained(folder)
        torch.save({"settings": self.settings, "state_dict": self.head.state_dict()}, folder / HEAD_FILE)
        return folder


def _ids_fit(model: THFModel, input_ids: torch.Tensor) -> None:
    rows = model.lm.get_input_embeddings().weight.shape[0]
    if int(input_ids.max()) >= rows:
        raise ValueError(
            f"token id {int(input_ids.max())} is beyond the THF model's {rows} embedding rows: "
            "the THF model was trained with another tokenizer; train one for this family (apd.thf_model)."
        )


def load_thf(path, *, log_sizes: Optional[Sequence[float]] = None, tokenizer=None, device=None) -> THFModel:
    """A saved THF model (folder or :class:`THFResult`) in eval mode on ``device``.

    With ``log_sizes`` (the family's) or ``tokenizer``, refuse a model trained for other sizes or with
    another tokenizer (ValueError naming the fix).

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> thf = apd.load_thf(apd.thf_model(fam, built, scale="smoke", progress=False), log_sizes=fam.log_sizes,
        ...                    tokenizer=fam.tokenizer, device="cpu")
        >>> out = thf(fam.tokenizer(["Ada was born in"], return_tensors="pt").input_ids)
        >>> tuple(out.curve.shape[-1:]) == (len(fam.names),)
        True
    """
    from transformers import AutoModelForCausalLM

    folder = Path(getattr(path, "path", path))
    if not (folder / HEAD_FILE).is_file():
        raise FileNotFoundError(
            f"no THF model in {folder} (no {HEAD_FILE}): train one with apd.thf_model(fam, built)."
        )
    if not check_folder(folder, "THF model", "stopping"):
        raise ValueError(f"the THF model in {folder} was damaged and has been set aside; run apd.thf_model again.")
    blob = torch.load(folder / HEAD_FILE, map_location="cpu", weights_only=False)
    settings = blob["settings"]
    if log_sizes is not None:
        want = [float(v) for v in log_sizes]
        if len(want) != len(settings["log_sizes"]) or not np.allclose(want, settings["log_sizes"], atol=1e-6):
            raise ValueError(
                f"the THF model in {folder} was trained for log sizes {settings['log_sizes']}, not "
                f"{want}: train a THF model for this family (apd.thf_model(fam, built))."
            )
    if tokenizer is not None and settings.get("tokenizer_id") not in (None, tokenizer_identity(tokenizer)):
        raise ValueError(
            f"the THF model in {folder} was trained with another tokenizer than the one given; REAL "
            "needs the family's tokenizer: train a THF model for this family (apd.thf_model(fam, built))."
        )
    lm = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)
    model = THFModel(
        lm,
        settings["log_sizes"],
        decay=settings["decay"],
        condition=settings["condition"],
        member_names=settings.get("member_names"),
        tokenizer_id=settings.get("tokenizer_id"),
    )
    model.head.load_state_dict(blob["state_dict"])
    return model.to(resolve_device(device)).eval()


# --------------------------------------------------------------------------------------------- training


def _init_head(model: THFModel, labels: EntropyLabels) -> None:
    """Start every position at the labels' mean curve: c at 0.8 x the largest member's mean entropy,
    the direct prediction at that mean, the amplitude b so the curve meets the ALM's mean (others 1)."""
    mean = labels.entropies.mean(axis=(0, 2)).astype(np.float64)  # (N,)
    c0 = max(0.8 * mean[-1], 1e-3)
    params = torch.ones(1, model.decay.n_params)
    unit = float(model.curve_at(model.log_sizes[:1], torch.zeros(1), params)[0, 0])
    b0 = max(mean[0] - c0, 1e-3) / max(unit, 1e-6)
    with torch.no_grad():
        model.head.bias.zero_()
        model.head.bias[0] = float(np.log(c0))
        model.head.bias[1] = float(np.log(b0))
        model.head.bias[-1] = float(np.log(max(mean[-1], 1e-3)))


def _fingerprint(config: THFConfig, labels: EntropyLabels, lm: nn.Module) -> str:
    h = hashlib.sha256()
    for name, p in sorted(lm.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().float().numpy().tobytes())
    h.update(labels.input_ids.tobytes())
    h.update(labels.entropies.tobytes())
    blob = json.dumps(
        {"config": config.fingerprinted(), "log_sizes": labels.log_sizes.tolist(), "weights_and_data": h.hexdigest()},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def train_thf(
    config: THFConfig, alm, labels, out_dir, *, tokenizer=None, stop_after: Optional[int] = None, progress: bool = True
) -> Path:
    """Train the THF model from the ALM on entropy labels; returns the saved folder ``out_dir/thf``.

    alm: the ALM (a model, copied; or a folder / Hub id); labels: :class:`EntropyLabels` or their
    folder; out_dir: checkpoints (``checkpoints/step_*.pt``), ``train_log.jsonl``, ``thf/``. A rerun
    resumes from the latest checkpoint of the same run; ``stop_after``: leave after that many steps
    of this call (returns the checkpoint). Deterministic for a given seed.
    """
    on_cpu = resolve_device(config.device).type == "cpu"
    with cpu_threads(config.threads if on_cpu else None):
        return _train_thf(config, alm, labels, out_dir, tokenizer=tokenizer, stop_after=stop_after, progress=progress)


def _train_thf(
    config: THFConfig, alm, labels, out_dir, *, tokenizer=None, stop_after: Optional[int] = None, progress: bool = True
) -> Path:
    from transformers import AutoModelForCausalLM

    out_dir = Path(out_dir)
    labels = labels if isinstance(labels, EntropyLabels) else load_entropies(labels)
    lm = (
        copy.deepcopy(alm).float()
        if isinstance(alm, nn.Module)
        else AutoModelForCausalLM.from_pretrained(alm, torch_dtype=torch.float32)
    )
    fingerprint = _fingerprint(config, labels, lm)
    final = out_dir / "thf"
    meta_path = out_dir / "train_config.json"
    meta = read_json_checked(meta_path, "THF run record", "training again")
    if meta is not None:
        if meta.get("fingerprint") != fingerprint:
            raise ValueError(f"{out_dir} holds a different THF run; use a new out_dir or delete that one.")
        if meta.get("status") == "done" and final.exists() and _log_intact(out_dir, meta):
            return final
    device = resolve_device(config.device)
    torch.manual_seed(config.seed)
    model = THFModel(
        lm,
        labels.log_sizes.tolist(),
        decay=config.decay,
        condition=config.condition,
        member_names=labels.member_names,
        tokenizer_id=tokenizer_identity(tokenizer),
    )
    _init_head(model, labels)
    model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    n = len(labels)
    steps_per_epoch = n // config.batch_size
    if steps_per_epoch == 0:
        raise ValueError(f"{n} chunks are fewer than one batch of {config.batch_size}; lower batch_size.")
    total = steps_per_epoch * config.epochs
    warmup = warmup_for(config, total)
    ids_all = torch.from_numpy(labels.input_ids)
    ent_all = torch.from_numpy(labels.entropies).permute(0, 2, 1).contiguous()  # (C, S, N)

    ckpt_dir = out_dir / "checkpoints"
    out_dir.mkdir(parents=True, exist_ok=True)
    remove_stale_tmp(ckpt_dir)
    step = 0
    for path in sorted(ckpt_dir.glob("step_*.pt"), reverse=True):
        if not check_file(path, "THF checkpoint", "resuming from an earlier one"):
            continue
        try:
            state = torch.load(path, map_location="cpu", weights_only=False)
        except Exception as err:
            set_aside(path, "THF checkpoint", f"unreadable: {type(err).__name__}", "resuming from an earlier one")
            continue
        if state["fingerprint"] != fingerprint:
            raise ValueError(f"checkpoint {path} belongs to another run; delete {ckpt_dir}.")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = int(state["step"])
        break
    write_json(
        meta_path,
        {
            "fingerprint": fingerprint,
            "status": "running",
            "config": config.to_dict(),
            "total_steps": total,
            "steps_per_epoch": steps_per_epoch,
            "warmup_steps": warmup,
            "n_chunks": n,
            "members": labels.member_names,
            "log_sizes": labels.log_sizes.tolist(),
        },
        digest=True,
    )
    log_path = out_dir / "train_log.jsonl"
    log_path.with_name(log_path.name + ".sha256").unlink(missing_ok=True)  # recorded again when the run finishes
    kept = [
        ln
        for ln in (log_path.read_text().splitlines() if log_path.exists() else [])
        if ln.strip() and json.loads(ln)["step"] <= step
    ]
    log_path.write_text("".join(ln + "\n" for ln in kept))

    def save_checkpoint() -> Path:
        path = ckpt_dir / f"step_{step:08d}.pt"
        torch_save(
            {
                "step": step,
                "fingerprint": fingerprint,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
            },
            path,
            digest=True,
        )
        for old in sorted(ckpt_dir.glob("step_*.pt"))[:-1]:
            old.unlink()
            old.with_name(old.name + ".sha256").unlink(missing_ok=True)
        return path

    bar = progress_bar(total=total, initial=step, desc="THF", progress=progress)
    t0, done_here = time.time(), 0
    while step < total:
        if stop_after is not None and done_here >= stop_after:
            bar.close()
            return save_checkpoint()
        epoch, pos = divmod(step, steps_per_epoch)
        idx = epoch_order(n, config.seed, epoch)[pos * config.batch_size : (pos + 1) * config.batch_size]
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, total, warmup, config.lr)
        out = model(ids_all[idx].to(device))
        loss = H.thf_loss(out.curve, out.last, ent_all[idx].to(device), ratio=config.weight_ratio)
        value = float(loss.detach())
        if not np.isfinite(value):
            raise FloatingPointError(f"non-finite THF loss at step {step}; lower lr.")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        step += 1
        done_here += 1
        with open(log_path, "a") as f:
            f.write(
                json.dumps({"step": step, "epoch": epoch, "loss": value, "seconds": round(time.time() - t0, 3)}) + "\n"
            )
        bar.update(1)
        bar.set_postfix(loss=f"{value:.4f}")
        if step % config.checkpoint_every == 0 and step < total:
            save_checkpoint()
    bar.close()
    tmp = out_dir / "thf.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.eval().cpu().save_pretrained(tmp, tokenizer=tokenizer)
    write_folder_digests(tmp)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    record_digest(log_path)  # checked when the run is found again (_log_intact)
    write_json(
        meta_path,
        {**json.loads(meta_path.read_text()), "status": "done", "seconds": round(time.time() - t0, 3)},
        digest=True,
    )
    remove_checkpoints(ckpt_dir)
    return final


@torch.no_grad()
def evaluate_thf(model: THFModel, labels, *, max_chunks: Optional[int] = None, batch_size: int = 16) -> dict:
    """Mean THF loss and mean absolute errors (nats) of the curve at each member and of the direct
    last-member prediction, on entropy labels (e.g. held-out text)."""
    labels = labels if isinstance(labels, EntropyLabels) else load_entropies(labels)
    n = len(labels) if max_chunks is None else min(len(labels), max_chunks)
    dev = next(model.parameters()).device
    loss, abs_curve, abs_last = 0.0, 0.0, 0.0
    for s in range(0, n, batch_size):
        ids = torch.from_numpy(labels.input_ids[s : min(n, s + batch_size)]).to(dev)
        true = torch.from_numpy(labels.entropies[s : min(n, s + batch_size)]).permute(0, 2, 1).to(dev)
        out = model(ids)
        k = ids.shape[0] / n
        loss += k * float(H.thf_loss(out.curve, out.last, true))
        abs_curve = abs_curve + k * (out.curve - true).abs().mean(dim=(0, 1)).cpu().numpy()
        abs_last += k * float((out.last - true[..., -1]).abs().mean())
    return {
        "loss": loss,
        "mae_curve": dict(zip(labels.member_names, np.round(abs_curve, 4).tolist())),
        "mae_last": abs_last,
        "n_chunks": n,
    }


# --------------------------------------------------------------------------------------------- cached runs


@dataclass
class THFResult:
    """A trained THF model: path (its folder), config, labels_dir (entropy labels), train_dir."""

    path: Path
    config: THFConfig
    labels_dir: Path

    @property
    def train_dir(self) -> Path:
        return self.path.parent

    def train_log(self):
        """One row per optimizer step: step, epoch, loss, seconds. The log is checked against the
        digest recorded when the run finished: a damaged one is set aside and a ValueError names it."""
        import pandas as pd

        path = self.train_dir / "train_log.jsonl"
        if not _log_intact(self.train_dir, self.record(), "training the THF model again on the next apd.thf_model"):
            raise ValueError(
                f"the THF training log {path} is damaged or missing; run apd.thf_model(fam, built) again "
                "to train the THF model again."
            )
        return pd.read_json(path, lines=True)

    def record(self) -> dict:
        """The run record (``train_config.json``: config, steps, seconds, status)."""
        record = read_json_checked(self.train_dir / "train_config.json", "THF run record", "stopping")
        if record is None:
            raise FileNotFoundError(
                f"no intact THF run record in {self.train_dir}; run apd.thf_model(fam, built) again to train it."
            )
        return record


def _log_intact(out: Path, meta: dict, action: str = "training the THF model again") -> bool:
    """Whether a finished THF run's ``train_log.jsonl`` is intact (:func:`apd.base.io.check_log`); a
    damaged one is set aside."""
    return check_log(Path(out) / "train_log.jsonl", "THF training log", action, last_step=meta.get("total_steps"))


def _finished(out: Path) -> Optional[Path]:
    meta = read_json_checked(out / "train_config.json", "THF run record", "training the THF model again")
    if meta is None or meta.get("status") != "done":
        return None
    intact = check_folder(out / "thf", "THF model", "training the THF model again", backfill=True)
    return out / "thf" if intact and _log_intact(out, meta) else None


def thf_key(labels_key: str, config: THFConfig) -> str:
    """The cache key of a THF run: its entropy labels' key and the configuration's weight-changing fields."""
    return hash_key("thf-v1", labels_key, config.fingerprinted())


def thf_model(
    fam, built=None, *, scale: str = "default", config: Optional[THFConfig] = None, cache=None, progress: bool = True
) -> THFResult:
    """Entropy labels on the fine-tuning text, then the THF model trained from the ALM; all cached.

    fam, built: what ``apd.get_family`` returns (built None for Hub families); scale: a pico scale
    (its :func:`apd.family.settings.settings_for`, built here once); config: default :func:`thf_config`.
    Labels use the APD collection's chunk length.

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> result = apd.thf_model(fam, built, scale="smoke", progress=False)   # cached after the first call
        >>> result.config.decay, result.path.name
        ('poly10', 'thf')
    """
    settings = settings_for(family_name(fam), scale)
    settings.check_built(built)
    config = config or thf_config(settings)
    seq_len = int(built.pico_config.seq_len) if built is not None else 128
    labels_dir = entropy_labels(
        fam, finetune_texts(fam, built), seq_len, cache=cache, progress=progress, max_chunks=config.label_chunks
    )
    out = Path(cache or paths.cache_dir()) / "thf" / thf_key(labels_dir.name, config)
    done = _finished(out)
    if done is None:
        with file_lock(out.parent / f"{out.name}.lock"):
            done = _finished(out) or train_thf(
                config, fam.locations[fam.alm], labels_dir, out, tokenizer=fam.tokenizer, progress=progress
            )
    return THFResult(path=Path(done), config=config, labels_dir=labels_dir)
