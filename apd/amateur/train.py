"""Training ALM' (the fine-tuned amateur) jointly with the curve MLP: resumable, deterministic.
With ``APDTrainConfig(objective="distill")`` ALM' is trained alone to match the fitter's asymptotes
(:class:`apd.amateur.objective.DistillObjective`, targets from :mod:`apd.amateur.distill`).

Device-agnostic (CPU fp32, CUDA, several processes through ``accelerate``). A run folder holds
``alm_prime/`` (``save_pretrained``, with ``curve_mlp.pt`` and ``digests.json``), ``train_config.json``
(the run record), ``train_log.jsonl`` and checkpoints; the record and, once the run is done, the log
have their SHA-256 beside them (``<name>.sha256``).
    python -m apd.amateur.train --help
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import hashlib
import json
import os
import shutil
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

import torch
from torch import nn

if TYPE_CHECKING:
    import pandas as pd

from apd.amateur.config import NOT_FINGERPRINTED, APDTrainConfig, lr_at, warmup_for
from apd.amateur.data import RECORD_KEYS, CollectedChunks, collate_chunks, collected_chunks, epoch_order
from apd.amateur.distill import DISTILL_FIT, WithTargets, targets_for_records
from apd.amateur.objective import APDObjective, ConditionedCurveMLP, CurveMLP, DistillObjective, start_amplitude
from apd.base.device import cpu_threads, resolve_device
from apd.base.io import (
    check_file,
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
from apd.base.progress import progress_bar


def _micro_batch(config: APDTrainConfig, device: torch.device, world: int) -> int:
    per_process, rem = divmod(config.batch_size, world)
    if rem:
        raise ValueError(
            f"batch_size {config.batch_size} is not divisible by the {world} processes; "
            "pick a multiple of the number of GPUs."
        )
    want = config.micro_batch_size or (8 if device.type == "cuda" else 4)
    want = min(want, per_process)
    if config.micro_batch_size is not None and per_process % want:
        raise ValueError(
            f"micro_batch_size {want} does not divide the {per_process} chunks per process "
            f"and step (batch_size {config.batch_size} / {world} processes)."
        )
    while per_process % want:  # automatic choice: the largest divisor below the target
        want -= 1
    return want


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
    return {
        "n_chunks": len(data),
        "seq_len": data.seq_len,
        "set_size": data.set_size,
        "members": data.member_names,
        "log_sizes": data.log_sizes.tolist(),
        "sample_sha256": h.hexdigest()[:16],
    }


def _fingerprint(cfg: dict, data_info: dict, model_digest: str) -> str:
    keep = {k: v for k, v in cfg.items() if k not in NOT_FINGERPRINTED}
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


def _log_step(line: str, path: Path):
    """The step of one ``train_log.jsonl`` line, or None for a line cut short by a stopped run."""
    try:
        return json.loads(line)["step"]
    except (ValueError, KeyError, TypeError):
        warnings.warn(f"apd: dropping a truncated line of {path} ({line[:40]!r}...) on resume.", stacklevel=3)
        return None


def _checkpoints(out_dir: Path) -> list[Path]:
    return sorted((out_dir / "checkpoints").glob("step_*.pt"))


def _accelerator():
    """An accelerate.Accelerator when launched with several processes, else None."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    try:
        from accelerate import Accelerator
    except ImportError as e:  # pragma: no cover
        raise ImportError(
            "several processes were launched but `accelerate` is not installed; "
            "pip install accelerate (or `pip install apd[gpu]`)."
        ) from e
    acc = Accelerator(cpu=not torch.cuda.is_available())  # cpu=True: gloo data parallel (tests, no GPU)
    if acc.num_processes != int(os.environ["WORLD_SIZE"]):
        raise RuntimeError(
            f"WORLD_SIZE={os.environ['WORLD_SIZE']} but accelerate set up {acc.num_processes} "
            "process(es); launch with `accelerate launch --multi_gpu --num_processes N` (or torchrun)."
        )
    return acc


#: torch CPU threads of ALM' training on the CPU (None: leave torch's setting).
CPU_THREADS = 1


def train_alm_prime(
    config: APDTrainConfig,
    alm_model_or_path,
    records,
    out_dir,
    *,
    tokenizer=None,
    log_sizes=None,
    member_names=None,
    stop_after: Optional[int] = None,
    callback: Optional[Callable[[int, dict], None]] = None,
    progress: bool = True,
    heldout=None,
) -> Path:
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
    ``heldout``: held-out chunks (a :class:`CollectedChunks`, e.g. the gates' collection's first
    chunks): the run's objective on them, dropout off, is written to ``heldout_log.jsonl`` before the
    first step and :data:`HELDOUT_PER_EPOCH` times an epoch (:func:`read_heldout_log`). It changes
    no trained weight and is not part of the run's identity.
    On the CPU the run uses one torch thread (:data:`CPU_THREADS`; its matrices are small, and threads
    contend on a shared CPU: design notes, "ALM' training cost").

    Example (what :func:`apd.apd_model` does, by hand):
        >>> import apd, tempfile
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> result = apd.apd_model(fam, built, scale="smoke", progress=False)   # collected data + config
        >>> data = apd.amateur.data.collected_chunks(result.collect_dir)
        >>> out = apd.train_alm_prime(result.config, fam.locations[fam.alm], data, tempfile.mkdtemp(),
        ...                           tokenizer=fam.tokenizer, progress=False)
        >>> out.name
        'alm_prime'
    """
    device = resolve_device(config.device)
    with cpu_threads(CPU_THREADS if device.type == "cpu" and _accelerator() is None else None):
        return _train_alm_prime(
            config,
            alm_model_or_path,
            records,
            out_dir,
            tokenizer=tokenizer,
            log_sizes=log_sizes,
            member_names=member_names,
            stop_after=stop_after,
            callback=callback,
            progress=progress,
            heldout=heldout,
        )


#: How often a run given held-out chunks reads its objective on them: this many times an epoch.
HELDOUT_PER_EPOCH = 4
#: The held-out readings' file in a run's folder (:func:`read_heldout_log`).
HELDOUT_LOG = "heldout_log.jsonl"


def heldout_steps(steps_per_epoch: int, total: int) -> list[int]:
    """The steps after which a run reads its held-out objective: 0, every ``steps_per_epoch //
    HELDOUT_PER_EPOCH`` steps (at least 1), and the last.

    Example:
        >>> heldout_steps(262, 262)   # the release configuration at default scale: one epoch
        [0, 65, 130, 195, 260, 262]
    """
    every = max(1, steps_per_epoch // HELDOUT_PER_EPOCH)
    return sorted({*range(0, total + 1, every), total})


@torch.no_grad()
def mean_terms(objective, data, device, n: Optional[int] = None, batch_size: int = 4) -> dict:
    """Mean of each of ``objective``'s loss terms over the first ``n`` chunks of ``data`` (all by
    default), dropout off, in batches of ``batch_size``; with ``n_chunks``."""
    was_training = objective.training
    objective.eval()
    n = len(data) if n is None else min(len(data), n)
    sums, count = {}, 0
    for start in range(0, n, batch_size):
        idx = range(start, min(n, start + batch_size))
        batch = {k: v.to(device) for k, v in collate_chunks([data[i] for i in idx]).items()}
        for k, v in objective(**batch).items():
            sums[k] = sums.get(k, 0.0) + float(v) * len(idx)
        count += len(idx)
    objective.train(was_training)
    return {k: v / count for k, v in sums.items()} | {"n_chunks": count}


def _heldout_reading(objective, held: CollectedChunks, device, step: int, steps_per_epoch: int) -> dict:
    """The objective's terms on the held-out chunks (:func:`mean_terms`), at ``step``."""
    terms = {k: v for k, v in mean_terms(objective, held, device).items() if k != "flip_frac"}
    return {"step": step, "epoch": step / steps_per_epoch, **terms}


def _heldout_data(config: APDTrainConfig, plan, heldout) -> Optional[CollectedChunks]:
    """``heldout`` with the run's members (and, for a distilled run, the fitter's targets), or None."""
    if heldout is None or not plan.main:
        return None
    if not isinstance(heldout, CollectedChunks):
        raise TypeError(
            f"heldout must be a CollectedChunks (apd.amateur.data.collected_chunks), got {type(heldout).__name__}."
        )
    held = CollectedChunks(
        heldout.records, log_sizes=heldout.all_log_sizes, member_names=heldout.all_member_names, members=config.members
    )
    if config.objective == "distill":
        held.records = WithTargets(
            held.records, targets_for_records(held.records, held.all_log_sizes, held.member_index, len(held))
        )
    return held


def read_heldout_log(run_dir) -> Optional[pd.DataFrame]:
    """A run's held-out objective (one row per reading: step, epoch, loss and its terms, n_chunks), or
    None for a run trained without held-out chunks."""
    import pandas as pd

    path = Path(run_dir) / HELDOUT_LOG
    if not path.is_file():
        return None
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return pd.DataFrame(rows).drop_duplicates("step", keep="last").sort_values("step").reset_index(drop=True)


@dataclasses.dataclass
class _Plan:
    """What one ALM' run needs to know before its first step: processes, data, batch geometry, identity."""

    out_dir: Path
    acc: object  # an accelerate.Accelerator, or None on one process
    world: int
    rank: int
    device: torch.device
    data: CollectedChunks
    micro: int  # chunks per forward pass
    accum: int  # forward passes per optimizer step
    steps_per_epoch: int
    total: int
    warmup: int
    lambda3: float
    cfg: dict  # the recorded configuration (with lambda3 and the micro-batch size)
    data_info: dict
    fingerprint: str

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def final(self) -> Path:
        return self.out_dir / "alm_prime"

    @property
    def meta_path(self) -> Path:
        return self.out_dir / "train_config.json"

    @property
    def log_path(self) -> Path:
        return self.out_dir / "train_log.jsonl"


def _plan(config: APDTrainConfig, alm_model_or_path, records, out_dir, log_sizes, member_names):
    """The run's :class:`_Plan` and the ALM it starts from (a copy)."""
    acc = _accelerator()
    world = acc.num_processes if acc else 1
    rank = acc.process_index if acc else 0
    device = acc.device if acc else resolve_device(config.device)
    if isinstance(records, CollectedChunks):  # the config decides members and data fraction
        records, log_sizes, member_names = records.records, records.all_log_sizes, records.all_member_names
    data = CollectedChunks(
        records,
        log_sizes=log_sizes,
        member_names=member_names,
        members=config.members,
        data_fraction=config.data_fraction,
    )
    micro = _micro_batch(config, device, world)
    accum = config.batch_size // (world * micro)
    steps_per_epoch = len(data) // config.batch_size
    if steps_per_epoch == 0:
        raise ValueError(
            f"{len(data)} chunks are fewer than one batch of {config.batch_size}; lower batch_size "
            "or collect more data."
        )
    total = steps_per_epoch * config.epochs
    warmup = warmup_for(config, total)
    lambda3 = config.lambda3_value

    alm = _load_alm(alm_model_or_path)
    cfg = config.to_dict()
    cfg.update(lambda3=lambda3, micro_batch_size=micro)
    if config.objective == "distill":
        cfg["distill_fit"] = DISTILL_FIT
    data_info = _data_digest(data)
    fingerprint = _fingerprint(cfg, data_info, _model_digest(alm))
    plan = _Plan(
        Path(out_dir),
        acc,
        world,
        rank,
        device,
        data,
        micro,
        accum,
        steps_per_epoch,
        total,
        warmup,
        lambda3,
        cfg,
        data_info,
        fingerprint,
    )
    return plan, alm


#: What a finished run's ``train_log.jsonl`` is called in messages (its digest is recorded when the run
#: finishes; :func:`apd.base.io.check_log`).
LOG_WHAT = "ALM' training log"


def log_intact(out_dir, meta: dict, action: str = "training ALM' again") -> bool:
    """Whether the finished run in ``out_dir`` (its run record ``meta``) has its training log intact
    (:func:`apd.base.io.check_log`: its recorded digest, or for a run from before logs were digested,
    every line JSON and the last at ``total_steps``); a damaged log is set aside and False returned."""
    return check_log(Path(out_dir) / "train_log.jsonl", LOG_WHAT, action, last_step=meta.get("total_steps"))


def _already_done(plan: _Plan) -> bool:
    """True when ``out_dir`` holds this run finished (its ALM' there, its log intact: a damaged log is
    set aside and the run trained again); a ValueError when it holds another run."""
    meta = read_json_checked(plan.meta_path, "ALM' run record", "training again")
    if meta is None:
        return False
    if meta.get("fingerprint") != plan.fingerprint:
        raise ValueError(
            f"{plan.out_dir} holds a different run (fingerprint {meta.get('fingerprint')} != "
            f"{plan.fingerprint}: other config, data or initial ALM); use a new out_dir or delete that one."
        )
    return meta.get("status") == "done" and plan.final.exists() and log_intact(plan.out_dir, meta)


def _check_mlp_warmup(config: APDTrainConfig, plan: _Plan) -> int:
    """The MLP-only warm-up steps, refused when they leave no joint step or the run is data-parallel."""
    mlp_warmup = int(config.mlp_warmup_steps)
    if mlp_warmup >= plan.total:
        raise ValueError(
            f"mlp_warmup_steps={mlp_warmup} leaves no joint step of the {plan.total} in this run; lower "
            "it or train for more epochs."
        )
    if mlp_warmup and plan.acc is not None:
        raise ValueError(
            "mlp_warmup_steps freezes ALM' for the first steps, which data-parallel training over "
            "several processes does not support here; train on one process (or leave it at 0)."
        )
    return mlp_warmup


def _objective_and_optimizer(config: APDTrainConfig, alm, plan: _Plan, mlp_warmup: int):
    """The objective (ALM' and, unless distilled, the curve MLP, seeded) on the device and its AdamW."""
    torch.manual_seed(config.seed)
    if config.objective == "distill":
        mlp = None
        objective = DistillObjective(alm, lambda3=plan.lambda3, bf16=config.bf16).to(plan.device)
    else:
        mlp = _curve_mlp(config, plan.data)
        objective = APDObjective(alm, mlp, lambda2=config.lambda2, lambda3=plan.lambda3, bf16=config.bf16).to(
            plan.device
        )
    objective.train()
    if mlp_warmup:  # two groups: ALM' starts its own lr schedule when the MLP-only warm-up ends
        groups = [{"params": list(objective.alm.parameters())}, {"params": list(objective.mlp.parameters())}]
        optimizer = torch.optim.AdamW(groups, lr=config.lr, weight_decay=config.weight_decay)
    else:
        optimizer = torch.optim.AdamW(objective.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    return objective, mlp, optimizer


def _latest_checkpoint(plan: _Plan) -> Optional[dict]:
    """The state of the latest intact checkpoint of this run (damaged ones set aside), or None."""
    for path in reversed(_checkpoints(plan.out_dir)):
        if not check_file(path, "ALM' checkpoint", "resuming from an earlier one"):
            continue
        try:
            state = torch.load(path, map_location="cpu", weights_only=False)  # load_state_dict moves it
        except Exception as err:
            set_aside(path, "ALM' checkpoint", f"unreadable: {type(err).__name__}", "resuming from an earlier one")
            continue
        if state["fingerprint"] != plan.fingerprint:
            raise ValueError(f"checkpoint {path} belongs to another run; delete {plan.out_dir / 'checkpoints'}.")
        return state
    return None


def _resume(plan: _Plan, objective, mlp, optimizer) -> int:
    """Load the latest checkpoint into the objective and optimizer; the step it reached (0 without one)."""
    if plan.main:
        remove_stale_tmp(plan.out_dir / "checkpoints")  # what a dead writer was saving (callers hold the run's lock)
    state = _latest_checkpoint(plan)
    if state is None:
        return 0
    objective.alm.load_state_dict(state["alm"])
    if mlp is not None:
        objective.mlp.load_state_dict(state["mlp"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["step"])


def _start_record(plan: _Plan, step: int) -> None:
    """Write the run record (status "running") and cut the log back to ``step`` (main process only)."""
    if not plan.main:
        return
    plan.out_dir.mkdir(parents=True, exist_ok=True)
    write_json(
        plan.meta_path,
        {
            "fingerprint": plan.fingerprint,
            "status": "running",
            "config": plan.cfg,
            "data": plan.data_info,
            "total_steps": plan.total,
            "steps_per_epoch": plan.steps_per_epoch,
            "warmup_steps": plan.warmup,
            "grad_accum": plan.accum,
            "world_size": plan.world,
            "device": str(plan.device),
        },
        digest=True,
    )
    log_path = plan.log_path
    log_path.with_name(log_path.name + ".sha256").unlink(missing_ok=True)  # recorded again when the run finishes
    lines = log_path.read_text().splitlines() if log_path.exists() else []
    kept = [ln for ln in lines if ln.strip() and (_log_step(ln, log_path) or step + 1) <= step]
    log_path.write_text("".join(ln + "\n" for ln in kept))


def _save_checkpoint(plan: _Plan, config: APDTrainConfig, step: int, objective, mlp, optimizer) -> Path:
    """Save the step's checkpoint (keeping the last ``keep_checkpoints``); its path."""
    path = plan.out_dir / "checkpoints" / f"step_{step:08d}.pt"
    if plan.main:
        torch_save(
            {
                "step": step,
                "fingerprint": plan.fingerprint,
                "alm": objective.alm.state_dict(),
                "mlp": None if mlp is None else objective.mlp.state_dict(),
                "optimizer": optimizer.state_dict(),
            },
            path,
            digest=True,
        )
        for old in _checkpoints(plan.out_dir)[: -config.keep_checkpoints]:
            old.unlink()
            old.with_name(old.name + ".sha256").unlink(missing_ok=True)
    if plan.acc:
        plan.acc.wait_for_everyone()
    return path


def _set_learning_rates(
    config: APDTrainConfig, plan: _Plan, optimizer, objective, step: int, mlp_warmup: int
) -> float:
    """Set this step's learning rates (ALM' frozen during an MLP-only warm-up); the schedule's lr."""
    lr = lr_at(step, plan.total, plan.warmup, config.lr)
    for group in optimizer.param_groups:
        group["lr"] = lr
    if mlp_warmup:  # ALM' frozen (no gradient, no update, no weight decay) for the first mlp_warmup steps
        objective.freeze_alm = step < mlp_warmup
        optimizer.param_groups[0]["lr"] = (
            0.0
            if step < mlp_warmup
            else lr_at(
                step - mlp_warmup, plan.total - mlp_warmup, warmup_for(config, plan.total - mlp_warmup), config.lr
            )
        )
    return lr


def _accumulate(plan: _Plan, model, chunk_ids) -> dict:
    """Forward and backward passes over this process's chunks of the step; the loss terms' means."""
    acc, micro, accum = plan.acc, plan.micro, plan.accum
    mine = chunk_ids[plan.rank * micro * accum : (plan.rank + 1) * micro * accum]
    sums = {}
    for j in range(accum):
        batch = collate_chunks([plan.data[int(i)] for i in mine[j * micro : (j + 1) * micro]])
        batch = {k: v.to(plan.device, non_blocking=True) for k, v in batch.items()}
        sync = contextlib.nullcontext() if (acc is None or j == accum - 1) else acc.no_sync(model)
        with sync:
            out = model(**batch)
            if acc:
                acc.backward(out["loss"] / accum)
            else:
                (out["loss"] / accum).backward()
        for k, v in out.items():
            sums[k] = sums.get(k, 0.0) + v.detach() / accum
    return sums


def _optimizer_step(
    config: APDTrainConfig, plan: _Plan, model, objective, optimizer, step: int, mlp_warmup: int, t0: float
) -> dict:
    """One optimizer step (the ``step``-th, counted from 0); its log record."""
    epoch, pos = divmod(step, plan.steps_per_epoch)
    order = epoch_order(len(plan.data), config.seed, epoch)
    chunk_ids = order[pos * config.batch_size : (pos + 1) * config.batch_size]
    lr = _set_learning_rates(config, plan, optimizer, objective, step, mlp_warmup)
    torch.manual_seed((config.seed * 1_000_003 + step) * 997 + plan.rank)  # dropout draws of this step
    sums = _accumulate(plan, model, chunk_ids)
    if not all(bool(torch.isfinite(v)) for v in sums.values()):
        raise FloatingPointError(
            f"non-finite loss at step {step}: { {k: float(v) for k, v in sums.items()} }; "
            "lower lr, or check the collected data for inf/NaN."
        )
    if config.grad_clip > 0:
        params = objective.parameters()
        if plan.acc:
            plan.acc.clip_grad_norm_(params, config.grad_clip)
        else:
            torch.nn.utils.clip_grad_norm_(params, config.grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step += 1
    if plan.acc:
        sums = {k: plan.acc.reduce(v, reduction="mean") for k, v in sums.items()}
    record = {
        "step": step,
        "epoch": epoch,
        "lr": lr,
        **{k: float(v) for k, v in sums.items()},
        "seconds": round(time.time() - t0, 3),
    }
    if mlp_warmup:
        record["alm_lr"] = optimizer.param_groups[0]["lr"]
    return record


def _report_step(config: APDTrainConfig, plan: _Plan, record: dict, bar, callback) -> None:
    """Log the step's record (every ``log_every`` steps and the last), advance the bar, call back."""
    step = record["step"]
    if plan.main and (step % config.log_every == 0 or step == plan.total):
        with open(plan.log_path, "a") as f:
            f.write(json.dumps(record) + "\n")
    if bar is not None:
        bar.update(1)
        bar.set_postfix(**{k: f"{record[k]:.4f}" for k in ("loss", "l1", "l2", "distill", "l3") if k in record})
    if callback is not None:
        callback(step, record)


def _save_final(plan: _Plan, objective, mlp, tokenizer) -> None:
    """Write ``alm_prime/`` (ALM', its tokenizer, the curve MLP, digests), mark the run done, drop checkpoints."""
    if plan.main:
        tmp = plan.out_dir / "alm_prime.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        objective.alm.save_pretrained(tmp)
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp)
        if mlp is not None:
            objective.mlp.save(tmp / "curve_mlp.pt")
        write_json(
            tmp / "apd_train_config.json",
            {"fingerprint": plan.fingerprint, "config": plan.cfg, "data": plan.data_info},
        )
        write_folder_digests(tmp)  # checked when the run is found again (runs._finished)
        shutil.rmtree(plan.final, ignore_errors=True)
        os.replace(tmp, plan.final)
        record_digest(plan.log_path)  # the log feeds reported numbers: checked when the run is found again
        meta = json.loads(plan.meta_path.read_text())
        meta["status"] = "done"
        write_json(plan.meta_path, meta, digest=True)
        remove_checkpoints(plan.out_dir / "checkpoints")
    if plan.acc:
        plan.acc.wait_for_everyone()


def _train_alm_prime(
    config: APDTrainConfig,
    alm_model_or_path,
    records,
    out_dir,
    *,
    tokenizer=None,
    log_sizes=None,
    member_names=None,
    stop_after: Optional[int] = None,
    callback: Optional[Callable[[int, dict], None]] = None,
    progress: bool = True,
    heldout=None,
) -> Path:
    plan, alm = _plan(config, alm_model_or_path, records, out_dir, log_sizes, member_names)
    if _already_done(plan):
        return plan.final
    data = plan.data
    if config.objective == "distill" and "targets" not in data.records[0]:  # records by hand: fit targets here
        data.records = WithTargets(
            data.records, targets_for_records(data.records, data.all_log_sizes, data.member_index, len(data))
        )
    mlp_warmup = _check_mlp_warmup(config, plan)
    objective, mlp, optimizer = _objective_and_optimizer(config, alm, plan, mlp_warmup)
    step = _resume(plan, objective, mlp, optimizer)
    _start_record(plan, step)
    model = objective
    if plan.acc:
        model, optimizer = plan.acc.prepare(objective, optimizer)

    held = _heldout_data(config, plan, heldout)
    read_at = set(heldout_steps(plan.steps_per_epoch, plan.total)) if held is not None else set()
    held_path = plan.out_dir / HELDOUT_LOG

    def read_heldout() -> None:
        if step in read_at:
            with open(held_path, "a") as f:
                f.write(json.dumps(_heldout_reading(objective, held, plan.device, step, plan.steps_per_epoch)) + "\n")

    if held is not None:  # a resumed run keeps the readings up to its step
        kept = [ln for ln in held_path.read_text().splitlines() if ln.strip()] if held_path.exists() else []
        kept = [ln for ln in kept if json.loads(ln)["step"] < step]
        held_path.write_text("".join(ln + "\n" for ln in kept))
        read_heldout()
    bar = progress_bar(total=plan.total, initial=step, desc="ALM'", progress=progress and plan.main)
    done_here = 0
    t0 = time.time()
    while step < plan.total:
        if stop_after is not None and done_here >= stop_after:
            path = _save_checkpoint(plan, config, step, objective, mlp, optimizer)
            if bar is not None:
                bar.close()
            return path
        record = _optimizer_step(config, plan, model, objective, optimizer, step, mlp_warmup, t0)
        step += 1
        done_here += 1
        _report_step(config, plan, record, bar, callback)
        if held is not None:
            read_heldout()
        if step % config.checkpoint_every == 0 and step < plan.total:
            _save_checkpoint(plan, config, step, objective, mlp, optimizer)
    if bar is not None:
        bar.close()
    _save_final(plan, objective, mlp, tokenizer)
    return plan.final


#: Chunks whose ALM-ELM spread sets a conditioned start's amplitude a0 (the first ones of the data).
START_CHUNKS = 32


def _curve_mlp(config: APDTrainConfig, data: CollectedChunks) -> CurveMLP:
    """The curve MLP a run starts from: the paper's (``start="release"``) or the conditioned one,
    whose amplitude a0 is the median ALM-ELM spread over the first :data:`START_CHUNKS` chunks."""
    kw = dict(
        decay=config.decay,
        space=config.space,
        flip=config.flip,
        hidden=config.hidden,
        n_hidden_layers=config.n_hidden_layers,
        mid_dropout=config.mid_dropout,
        member_names=data.member_names,
    )
    if config.start == "conditioned":
        lp = torch.stack(
            [torch.as_tensor(data[i]["member_logprobs"]).float() for i in range(min(len(data), START_CHUNKS))]
        )  # (C, N, S, K)
        return ConditionedCurveMLP(data.log_sizes, a0=start_amplitude(lp, config.space), **kw)
    return CurveMLP(data.log_sizes, x_origin=config.x_origin, **kw)


@torch.no_grad()
def evaluate_losses(
    alm_prime,
    mlp: CurveMLP,
    records,
    *,
    lambda2: float = 10.0,
    lambda3: float = 0.0,
    batch_size: int = 4,
    max_chunks: Optional[int] = None,
    device=None,
    log_sizes=None,
    member_names=None,
    members=None,
) -> dict:
    """Mean L1, L2, L3 (and the weighted loss) over held-out chunks, dropout off: the numbers to
    report for a validation split (e.g. when choosing lambda3 for the pico family)."""
    dev = resolve_device(device)
    data = (
        records
        if isinstance(records, CollectedChunks)
        else CollectedChunks(records, log_sizes=log_sizes, member_names=member_names, members=members)
    )
    if data.log_sizes.numel() != mlp.n_members:
        raise ValueError(
            f"the MLP was trained on {mlp.n_members} members, the data have {data.log_sizes.numel()}; "
            "select the same members (members=...)."
        )
    objective = APDObjective(alm_prime, mlp, lambda2=lambda2, lambda3=lambda3).to(dev)
    return mean_terms(objective, data, dev, max_chunks, batch_size)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(
        description="Train ALM' (APD) from collected data; see apd.amateur.train's docstring."
    )
    ap.add_argument("--alm", required=True, help="the ALM: a save_pretrained folder or a Hub id")
    ap.add_argument("--data", required=True, help="collected data (apd.amateur.collect output)")
    ap.add_argument("--out", required=True, help="output folder (checkpoints, log, alm_prime/)")
    ap.add_argument("--family", default=None, help="pythia | opt | qwen | pico ...")
    ap.add_argument("--config", default=None, help="JSON or YAML file of APDTrainConfig fields")
    ap.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE", help="override one field (YAML value)"
    )
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
    path = train_alm_prime(config, args.alm, collected_chunks(args.data), args.out, tokenizer=tokenizer)
    print(path)


if __name__ == "__main__":
    main()
