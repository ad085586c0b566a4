"""Training ALM' (the fine-tuned amateur) jointly with the curve MLP: resumable, deterministic.
With ``APDTrainConfig(objective="distill")`` ALM' is trained alone to match the fitter's asymptotes
(:class:`apd.amateur.objective.DistillObjective`, targets from :mod:`apd.amateur.distill`).

Device-agnostic (CPU fp32, CUDA, several processes through ``accelerate``). A run folder holds
``alm_prime/`` (``save_pretrained``), ``curve_mlp.pt``, ``train_log.jsonl`` and checkpoints.
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
from typing import Callable, Optional, Sequence

import torch
from torch import nn

from apd.amateur.config import NOT_FINGERPRINTED, LAMBDA3_GRID, APDTrainConfig, lr_at, warmup_for
from apd.amateur.data import RECORD_KEYS, CollectedChunks, collate_chunks, collected_chunks, epoch_order
from apd.amateur.distill import DISTILL_FIT, WithTargets, targets_for_records
from apd.amateur.objective import APDObjective, ConditionedCurveMLP, CurveMLP, DistillObjective, start_amplitude
from apd.base.device import cpu_threads, resolve_device
from apd.base.io import (
    check_file,
    read_json_checked,
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
        raise ImportError("several processes were launched but `accelerate` is not installed; "
                          "pip install accelerate (or `pip install apd[gpu]`).") from e
    acc = Accelerator(cpu=not torch.cuda.is_available())  # cpu=True: gloo data parallel (tests, no GPU)
    if acc.num_processes != int(os.environ["WORLD_SIZE"]):
        raise RuntimeError(f"WORLD_SIZE={os.environ['WORLD_SIZE']} but accelerate set up {acc.num_processes} "
                           "process(es); launch with `accelerate launch --multi_gpu --num_processes N` (or torchrun).")
    return acc


#: torch CPU threads of ALM' training on the CPU (None: leave torch's setting).
CPU_THREADS = 1


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
    On the CPU the run uses one torch thread (:data:`CPU_THREADS`): its matrices are small, and on a
    shared 2-core machine two threads made a default pico step 2 to 30 times slower (measured).

    Example (what :func:`apd.apd_model` does, by hand):
        >>> import apd, tempfile
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> result = apd.apd_model(fam, built, scale="smoke", progress=False)   # collected data + config
        >>> data = apd.amateur.collected_chunks(result.collect_dir)
        >>> out = apd.train_alm_prime(result.config, fam.locations[fam.alm], data, tempfile.mkdtemp(),
        ...                           tokenizer=fam.tokenizer, progress=False)
        >>> out.name
        'alm_prime'
    """
    device = resolve_device(config.device)
    with cpu_threads(CPU_THREADS if device.type == "cpu" and _accelerator() is None else None):
        return _train_alm_prime(config, alm_model_or_path, records, out_dir, tokenizer=tokenizer,
                                log_sizes=log_sizes, member_names=member_names, stop_after=stop_after,
                                callback=callback, progress=progress)


def _train_alm_prime(config: APDTrainConfig, alm_model_or_path, records, out_dir, *, tokenizer=None,
                    log_sizes=None, member_names=None, stop_after: Optional[int] = None,
                     callback: Optional[Callable[[int, dict], None]] = None, progress: bool = True) -> Path:
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
    distill = config.objective == "distill"
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
    if distill:
        cfg["distill_fit"] = DISTILL_FIT
    data_info = _data_digest(data)
    fingerprint = _fingerprint(cfg, data_info, _model_digest(alm))
    final = out_dir / "alm_prime"
    meta_path = out_dir / "train_config.json"
    meta = read_json_checked(meta_path, "ALM' run record", "training again")
    if meta is not None:
        if meta.get("fingerprint") != fingerprint:
            raise ValueError(f"{out_dir} holds a different run (fingerprint {meta.get('fingerprint')} != {fingerprint}: "
                             "other config, data or initial ALM); use a new out_dir or delete that one.")
        if meta.get("status") == "done" and final.exists():
            return final

    if distill and "targets" not in data.records[0]:   # records given by hand: fit the targets here
        data.records = WithTargets(data.records, targets_for_records(data.records, data.all_log_sizes,
                                                                     data.member_index, len(data)))
    mlp_warmup = int(config.mlp_warmup_steps)
    if mlp_warmup >= total:
        raise ValueError(f"mlp_warmup_steps={mlp_warmup} leaves no joint step of the {total} in this run; lower it "
                         "or train for more epochs.")
    if mlp_warmup and acc is not None:
        raise ValueError("mlp_warmup_steps freezes ALM' for the first steps, which data-parallel training over "
                         "several processes does not support here; train on one process (or leave it at 0).")
    torch.manual_seed(config.seed)
    if distill:
        mlp = None
        objective = DistillObjective(alm, lambda3=lambda3, bf16=config.bf16).to(device)
    else:
        mlp = _curve_mlp(config, data)
        objective = APDObjective(alm, mlp, lambda2=config.lambda2, lambda3=lambda3, bf16=config.bf16).to(device)
    objective.train()
    if mlp_warmup:   # two groups: ALM' starts its own lr schedule when the MLP-only warm-up ends
        groups = [{"params": list(objective.alm.parameters())}, {"params": list(objective.mlp.parameters())}]
        optimizer = torch.optim.AdamW(groups, lr=config.lr, weight_decay=config.weight_decay)
    else:
        optimizer = torch.optim.AdamW(objective.parameters(), lr=config.lr, weight_decay=config.weight_decay)

    step = 0
    log_path = out_dir / "train_log.jsonl"
    if main:
        remove_stale_tmp(out_dir / "checkpoints")   # what a dead writer was saving (callers hold the run's lock)
    state = None
    for path in reversed(_checkpoints(out_dir)):   # the latest intact checkpoint
        if not check_file(path, "ALM' checkpoint", "resuming from an earlier one"):
            continue
        try:
            state = torch.load(path, map_location="cpu", weights_only=False)  # load_state_dict moves it
        except Exception as err:
            set_aside(path, "ALM' checkpoint", f"unreadable: {type(err).__name__}", "resuming from an earlier one")
            continue
        if state["fingerprint"] != fingerprint:
            raise ValueError(f"checkpoint {path} belongs to another run; delete {out_dir / 'checkpoints'}.")
        break
    if state is not None:
        objective.alm.load_state_dict(state["alm"])
        if mlp is not None:
            objective.mlp.load_state_dict(state["mlp"])
        optimizer.load_state_dict(state["optimizer"])
        step = int(state["step"])
    if main:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_json(meta_path, {"fingerprint": fingerprint, "status": "running", "config": cfg, "data": data_info,
                                "total_steps": total, "steps_per_epoch": steps_per_epoch, "warmup_steps": warmup,
                                "grad_accum": accum, "world_size": world, "device": str(device)}, digest=True)
        lines = log_path.read_text().splitlines() if log_path.exists() else []
        kept = [ln for ln in lines if ln.strip() and (_log_step(ln, log_path) or step + 1) <= step]
        log_path.write_text("".join(ln + "\n" for ln in kept))

    model = objective
    if acc:
        model, optimizer = acc.prepare(objective, optimizer)

    def save_checkpoint() -> Path:
        path = out_dir / "checkpoints" / f"step_{step:08d}.pt"
        if main:
            torch_save({"step": step, "fingerprint": fingerprint, "alm": objective.alm.state_dict(),
                          "mlp": None if mlp is None else objective.mlp.state_dict(),
                          "optimizer": optimizer.state_dict()}, path,
                       digest=True)
            for old in _checkpoints(out_dir)[:-config.keep_checkpoints]:
                old.unlink()
                old.with_name(old.name + ".sha256").unlink(missing_ok=True)
        if acc:
            acc.wait_for_everyone()
        return path

    bar = progress_bar(total=total, initial=step, desc="ALM'", progress=progress and main)
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
        if mlp_warmup:   # ALM' frozen (no gradient, no update, no weight decay) for the first mlp_warmup steps
            objective.freeze_alm = step < mlp_warmup
            optimizer.param_groups[0]["lr"] = 0.0 if step < mlp_warmup else lr_at(
                step - mlp_warmup, total - mlp_warmup, warmup_for(config, total - mlp_warmup), config.lr)
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
        if mlp_warmup:
            record["alm_lr"] = optimizer.param_groups[0]["lr"]
        if main and (step % config.log_every == 0 or step == total):
            with open(log_path, "a") as f:
                f.write(json.dumps(record) + "\n")
        if bar is not None:
            bar.update(1)
            bar.set_postfix(**{k: f"{record[k]:.4f}" for k in ("loss", "l1", "l2", "distill", "l3") if k in record})
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
        if mlp is not None:
            objective.mlp.save(tmp / "curve_mlp.pt")
        write_json(tmp / "apd_train_config.json", {"fingerprint": fingerprint, "config": cfg, "data": data_info})
        write_folder_digests(tmp)   # checked when the run is found again (runs._finished)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        meta = json.loads(meta_path.read_text())
        meta["status"] = "done"
        write_json(meta_path, meta, digest=True)
        remove_checkpoints(out_dir / "checkpoints")
    if acc:
        acc.wait_for_everyone()
    return final


#: Chunks whose ALM-ELM spread sets a conditioned start's amplitude a0 (the first ones of the data).
START_CHUNKS = 32


def _curve_mlp(config: APDTrainConfig, data: CollectedChunks) -> CurveMLP:
    """The curve MLP a run starts from: the paper's (``start="release"``) or the conditioned one,
    whose amplitude a0 is the median ALM-ELM spread over the first :data:`START_CHUNKS` chunks."""
    kw = dict(decay=config.decay, space=config.space, flip=config.flip, hidden=config.hidden,
              n_hidden_layers=config.n_hidden_layers, mid_dropout=config.mid_dropout, member_names=data.member_names)
    if config.start == "conditioned":
        lp = torch.stack([torch.as_tensor(data[i]["member_logprobs"]).float()
                          for i in range(min(len(data), START_CHUNKS))])                     # (C, N, S, K)
        return ConditionedCurveMLP(data.log_sizes, a0=start_amplitude(lp, config.space), **kw)
    return CurveMLP(data.log_sizes, x_origin=config.x_origin, **kw)


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


def sweep_lambda3(config: APDTrainConfig, alm_model_or_path, records, out_root, score: Callable[[Path], float], *,
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


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Train ALM' (APD) from collected data; see apd.amateur.train's docstring.")
    ap.add_argument("--alm", required=True, help="the ALM: a save_pretrained folder or a Hub id")
    ap.add_argument("--data", required=True, help="collected data (apd.amateur.collect output)")
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
    path = train_alm_prime(config, args.alm, collected_chunks(args.data), args.out, tokenizer=tokenizer)
    print(path)


if __name__ == "__main__":
    main()
