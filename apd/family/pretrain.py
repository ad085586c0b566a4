"""Pretraining the embedded "pico" family: small GPT-NeoX LMs trained the way Pythia was.

``train_family(config, tokenizer, documents_or_ids, cache_dir)`` trains every member of a
:class:`PicoConfig` (``GPTNeoXForCausalLM``; only the shape differs) on the same token stream in the
same order, with the same hyperparameters and seed: AdamW, linear warmup then cosine decay, loss =
mean next-token cross-entropy in nats/token; fp32 on CPU, bf16 autocast on CUDA. Sizes are
non-embedding parameter counts (:func:`apd.family.registry.count_nonembedding`); the book's x-axis
is their natural log. Output: ``<cache_dir>/pico-<key>/`` holding ``family.json`` (members smallest
first) and one ``save_pretrained`` folder per member. A finished member is never retrained; an
interrupted one resumes from ``_checkpoints/<member>.pt`` to the weights an uninterrupted run gives.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from apd.base.checks import bounded, count, sequence
from apd.base.device import cpu_threads, resolve_device
from apd.base.jobs import run_jobs
from apd.base.io import (
    check_file,
    check_folder,
    read_json_checked,
    remove_checkpoints,
    remove_stale_tmp,
    set_aside,
    torch_save,
    write_folder_digests,
    write_json,
)
from apd.base.lock import file_lock
from apd.base.progress import progress_bar, progress_note
from apd.family.registry import count_nonembedding
from apd.family.text import hash_parts, token_stream, tokenizer_hash

FORMAT_VERSION = 1  # bump when a code change alters what training produces (it enters the cache key)


class TrainingInterrupted(RuntimeError):
    """Raised when ``max_steps_this_run`` stopped training early; call again to resume."""


# ----------------------------------------------------------------------------------------------
# Configuration


@dataclass(frozen=True)
class Member:
    """One member's shape. ``d_ff`` defaults to 4 * d_model; ``name`` defaults to
    ``pico-<non-embedding count>`` (e.g. ``pico-13k``, ``pico-1.8m``)."""

    n_layer: int
    d_model: int
    n_head: int
    d_ff: int | None = None
    name: str | None = None

    def __post_init__(self):
        for key in ("n_layer", "d_model", "n_head"):  # checked, not converted (they enter the cache key)
            count(f"Member.{key}", getattr(self, key), 1, strict=True)
        if self.d_ff is not None:
            count("Member.d_ff", self.d_ff, 1, strict=True)
        if self.name is not None and not isinstance(self.name, str):
            raise TypeError(f"Member.name must be a str or None, got {self.name!r}.")

    @property
    def ff(self) -> int:
        return self.d_ff if self.d_ff is not None else 4 * self.d_model


@dataclass(frozen=True)
class PicoConfig:
    """Everything that determines the trained family (all of it enters the cache key).

    members: the shapes, any order (trained and listed smallest first).
    seq_len / batch_size: tokens per window / windows per step; one step = seq_len*batch_size tokens.
    epochs: passes over the windows (fractions allowed); ``max_tokens`` caps tokens per member.
    lr, warmup_frac, min_lr_ratio: peak learning rate, warmup fraction of the steps, final lr / peak.
    weight_decay, betas, grad_clip: AdamW and clipping (Pythia: 0.01, (0.9, 0.95), 1.0).
    rotary_pct: fraction of each head's dimensions that get rotary embeddings (Pythia: 0.25).
    seed: model initialisation (the same for every member) and data order.
    dtype: "auto" (fp32 on CPU, bf16 autocast on CUDA), "float32", or "bfloat16" (autocast).
    """

    members: tuple[Member, ...]
    seq_len: int = 128
    batch_size: int = 32
    epochs: float = 4.0
    max_tokens: int | None = None
    lr: float = 2e-3
    warmup_frac: float = 0.05
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = 1.0
    rotary_pct: float = 0.25
    max_position_embeddings: int = 2048
    seed: int = 0
    dtype: str = "auto"
    prefix: str = "pico"

    def __post_init__(self):
        shapes = sequence("PicoConfig.members", self.members, hint="give a tuple of Member(n_layer, d_model, n_head)")
        members = tuple(
            m if isinstance(m, Member) else Member(*sequence(f"PicoConfig.members[{i}]", m))
            for i, m in enumerate(shapes)
        )
        object.__setattr__(self, "members", members)
        betas = sequence("PicoConfig.betas", self.betas, 2, hint="AdamW's (beta1, beta2), e.g. (0.9, 0.95)")
        object.__setattr__(
            self, "betas", tuple(bounded(f"PicoConfig.betas[{i}]", b, 0, below=1) for i, b in enumerate(betas))
        )
        if not members:
            raise ValueError("PicoConfig.members is empty; give at least one Member(n_layer, d_model, n_head).")
        for key in ("seq_len", "batch_size", "max_position_embeddings"):  # checked, not converted (the cache key)
            count(f"PicoConfig.{key}", getattr(self, key), 1, strict=True)
        if self.max_tokens is not None:
            count("PicoConfig.max_tokens", self.max_tokens, 1, strict=True)
        count("PicoConfig.seed", self.seed, 0, strict=True)
        bounded("PicoConfig.epochs", self.epochs, above=0, hint="passes over the windows (fractions allowed)")
        bounded("PicoConfig.lr", self.lr, above=0, hint="the peak learning rate, e.g. 2e-3")
        bounded("PicoConfig.warmup_frac", self.warmup_frac, 0, below=1)
        bounded("PicoConfig.min_lr_ratio", self.min_lr_ratio, 0, maximum=1)
        bounded("PicoConfig.weight_decay", self.weight_decay, 0, hint="Pythia's is 0.01")
        bounded("PicoConfig.grad_clip", self.grad_clip, 0, hint="the gradient-norm clip, 0: off (Pythia: 1.0)")
        bounded("PicoConfig.rotary_pct", self.rotary_pct, above=0, maximum=1, hint="Pythia's is 0.25")
        if self.dtype not in ("auto", "float32", "bfloat16"):
            raise ValueError(f"PicoConfig.dtype must be 'auto', 'float32' or 'bfloat16', got {self.dtype!r}.")
        if not isinstance(self.prefix, str):
            raise TypeError(f"PicoConfig.prefix must be a str such as 'pico', got {self.prefix!r}.")
        for m in members:
            if m.d_model % m.n_head:
                raise ValueError(
                    f"{m}: d_model={m.d_model} is not divisible by n_head={m.n_head}; pick n_head dividing d_model."
                )
            rot = int(m.d_model // m.n_head * self.rotary_pct)
            if rot < 2 or rot % 2:
                raise ValueError(
                    f"{m}: rotary dimensions int(head_dim * rotary_pct) = {rot} must be even and >= 2; "
                    f"change n_head (head_dim = {m.d_model // m.n_head}) or rotary_pct."
                )
        names = self.names
        if len(set(names)) != len(names):
            raise ValueError(f"member names must be unique, got {names}; give the members explicit names.")
        if self.seq_len > self.max_position_embeddings:
            raise ValueError(
                f"seq_len={self.seq_len} exceeds max_position_embeddings="
                f"{self.max_position_embeddings}; raise the latter."
            )

    # -- sizes and names --
    @property
    def names(self) -> list[str]:
        """Member names in ``members`` order."""
        return [m.name or f"{self.prefix}-{_short_count(nonembedding_count(m))}" for m in self.members]

    def sorted_members(self) -> list[tuple[str, Member]]:
        """(name, member) smallest first (by non-embedding count, then name)."""
        pairs = list(zip(self.names, self.members))
        return sorted(pairs, key=lambda p: (nonembedding_count(p[1]), p[0]))

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["members"] = [dataclasses.asdict(m) for m in self.members]
        d["betas"] = list(self.betas)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "PicoConfig":
        d = dict(d)
        d["members"] = tuple(Member(**m) for m in d["members"])
        return cls(**d)

    def replace(self, **changes) -> "PicoConfig":
        return dataclasses.replace(self, **changes)

    # -- profiles --
    @classmethod
    def smoke(cls) -> "PicoConfig":
        """Four tiny members (~3.4k to ~56k non-embedding, 16x), seconds on a CPU."""
        return cls(
            members=(Member(1, 16, 2), Member(1, 32, 2), Member(2, 32, 2), Member(2, 48, 2)),
            seq_len=64,
            batch_size=16,
            epochs=2.0,
            lr=3e-3,
            seed=0,
        )

    @classmethod
    def default(cls) -> "PicoConfig":
        """Six members from ~13k to ~1.8M non-embedding parameters (139x, 2.2-3.5x apart), the shapes
        of :meth:`default200` (the same budget); the dose-response study's family.

        Width grows at every step, one to four layers. Budget: 4 epochs capped at 1.25M tokens (305
        steps of 32 x 128 tokens) per member; peak learning rate 4e-3. Training on the CPU uses one
        thread (:data:`CPU_THREADS`). Why these shapes, this budget and this learning rate, with the
        measurements behind them: ``docs/design-notes.md`` ("The pico family's shapes and budget").
        """
        return cls.default200()

    @classmethod
    def default200(cls) -> "PicoConfig":
        """The six members of the ``default`` and ``default-200`` scales, ~13k to ~1.8M non-embedding
        parameters (139x): one to four layers, widths 32 to 192."""
        return cls(
            members=(
                Member(1, 32, 2),  # 12,768
                Member(1, 48, 2),  # 28,368
                Member(2, 64, 4),  # 100,096
                Member(3, 96, 4),  # 335,712
                Member(4, 128, 4),  # 793,344
                Member(4, 192, 4),  # 1,779,840
            ),
            seq_len=128,
            batch_size=32,
            epochs=4.0,
            max_tokens=1_250_000,
            lr=4e-3,
            seed=0,
        )

    @classmethod
    def gpu(cls) -> "PicoConfig":
        """Seven members from ~13k to ~4.7M non-embedding parameters (371x; Pythia 70M to 6.9B spans
        about 340x), for one GPU: the default's six shapes plus a six-layer width-256 member.

        Budget: 16 epochs of the gpu world's text capped at 24M tokens (1,464 steps of 64 x 256
        tokens) per member, about 5 tokens per parameter of the largest member, with the same
        data, order and steps for every member. Its timings on one H100 are in
        ``docs/gpu-profile.md``; the smoke-size test builds the same code path on a CPU.
        """
        return cls(
            members=cls.default200().members + (Member(6, 256, 8),),  # ... and 4,739,072
            seq_len=256,
            batch_size=64,
            epochs=16.0,
            max_tokens=24_000_000,
            lr=2e-3,
            seed=0,
        )


def nonembedding_count(member: Member) -> int:
    """Non-embedding parameters of a GPT-NeoX member, computed from its shape (no model built).

    Per layer: two LayerNorms (4d), fused QKV (3d^2 + 3d), attention output (d^2 + d), MLP
    (d*ff + ff + ff*d + d); plus the final LayerNorm (2d). Equals
    ``apd.family.registry.count_nonembedding`` of the built model.
    """
    d, ff = member.d_model, member.ff
    per_layer = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (2 * d * ff + ff + d)
    return member.n_layer * per_layer + 2 * d


def _short_count(n: int) -> str:
    """12768 -> '13k', 1779840 -> '1.8m' (Pythia-style lower-case suffixes)."""
    for div, suffix in ((1e9, "b"), (1e6, "m"), (1e3, "k")):
        if n >= div:
            v = n / div
            return (f"{v:.1f}" if v < 10 else f"{v:.0f}") + suffix
    return str(n)


def member_configs(config: PicoConfig, vocab_size: int, **special_token_ids):
    """The ``GPTNeoXConfig`` of every member, in ``config.members`` order.

    vocab_size: rows of embed_in / embed_out (use ``len(tokenizer)``).
    special_token_ids: e.g. bos_token_id=, eos_token_id=, pad_token_id= (from the tokenizer).
    """
    from transformers import GPTNeoXConfig

    if not isinstance(vocab_size, (int, np.integer)) or vocab_size < 2:
        raise ValueError(f"vocab_size must be an int >= 2 (use len(tokenizer)), got {vocab_size!r}.")
    out = []
    for m in config.members:
        out.append(
            GPTNeoXConfig(
                vocab_size=int(vocab_size),
                hidden_size=m.d_model,
                num_hidden_layers=m.n_layer,
                num_attention_heads=m.n_head,
                intermediate_size=m.ff,
                hidden_act="gelu",
                rotary_pct=config.rotary_pct,
                max_position_embeddings=config.max_position_embeddings,
                use_parallel_residual=True,
                tie_word_embeddings=False,
                attention_dropout=0.0,
                hidden_dropout=0.0,
                attn_implementation="sdpa",
                **special_token_ids,
            )
        )
    return out


def learning_rate(step: int, n_steps: int, config: PicoConfig) -> float:
    """Learning rate of the update that takes the model from ``step`` to ``step + 1``
    (0-based): linear warmup over ``max(1, round(warmup_frac * n_steps))`` updates to
    ``config.lr``, then cosine decay reaching ``min_lr_ratio * lr`` at the last update."""
    warmup = max(1, round(config.warmup_frac * n_steps))
    if step < warmup:
        return config.lr * (step + 1) / warmup
    lo = config.lr * config.min_lr_ratio
    progress = (step - warmup) / max(1, n_steps - 1 - warmup)
    return lo + 0.5 * (config.lr - lo) * (1 + math.cos(math.pi * min(1.0, progress)))


# ----------------------------------------------------------------------------------------------
# Data


def training_plan(n_tokens: int, config: PicoConfig) -> tuple[int, int]:
    """(n_chunks, n_steps) for a token stream of ``n_tokens`` tokens."""
    n_chunks = (n_tokens - 1) // config.seq_len
    if n_chunks < config.batch_size:
        raise ValueError(
            f"{n_tokens} tokens make only {n_chunks} windows of seq_len={config.seq_len}, fewer than "
            f"batch_size={config.batch_size}; give more text or lower seq_len / batch_size."
        )
    n_steps = int(config.epochs * n_chunks) // config.batch_size
    if config.max_tokens is not None:
        n_steps = min(n_steps, config.max_tokens // (config.batch_size * config.seq_len))
    return n_chunks, max(1, n_steps)


def chunk_order(n_chunks: int, n_steps: int, batch_size: int, seed: int) -> np.ndarray:
    """(n_steps, batch_size) window indices: epoch e visits all windows in the permutation
    ``default_rng([seed, e])``; epochs are concatenated and cut into batches."""
    need = n_steps * batch_size
    epochs = [np.random.default_rng([seed, e]).permutation(n_chunks) for e in range(-(-need // n_chunks))]
    return np.concatenate(epochs)[:need].reshape(n_steps, batch_size)


def data_hash(ids: np.ndarray) -> str:
    """sha256 of a token stream (as int64), the data part of the family key."""
    return hash_parts(np.ascontiguousarray(ids, dtype=np.int64).tobytes())


def family_key(
    config: PicoConfig, ids_hash: str, tok_hash: str, precision: str = "fp32", cpu_threads: int | None = None
) -> str:
    """12 hex digits identifying the family: config, token stream, tokenizer, training precision
    ("fp32" or "bf16-autocast", as resolved on the device by ``_autocast``) and, for training on the
    CPU, the torch thread count (the weights depend on it; None: not on the CPU)."""
    parts = {
        "config": config.to_dict(),
        "data": ids_hash,
        "tokenizer": tok_hash,
        "precision": precision,
        "format": FORMAT_VERSION,
    }
    if cpu_threads is not None:
        parts["cpu_threads"] = int(cpu_threads)
    blob = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


#: torch threads of pretraining on the CPU, on every machine. The trained weights depend on the
#: thread count (torch splits float sums differently), so the count is fixed, not picked for the
#: machine found, and it enters the family's key. One thread, because a CPU is rarely idle and
#: pico's matrices are small (design notes, apd.family.pretrain: "One thread, on every machine").
CPU_THREADS = 1


def training_threads(device: torch.device, num_threads: int | None = None) -> int | None:
    """The torch thread count pretraining on ``device`` uses and keys by: ``num_threads`` when
    given, else :data:`CPU_THREADS`, on the CPU; None (torch's setting, not keyed) elsewhere.

    Example:
        >>> training_threads(torch.device("cpu")), training_threads(torch.device("cpu"), 4)
        (1, 4)
    """
    if device.type != "cpu":
        return None
    return int(num_threads) if num_threads is not None else CPU_THREADS


# ----------------------------------------------------------------------------------------------
# Training


def _autocast(device: torch.device, dtype: str):
    """bf16 autocast on CUDA (dtype auto, where supported) or when asked; fp32 otherwise."""
    if dtype == "bfloat16" or (dtype == "auto" and device.type == "cuda" and torch.cuda.is_bf16_supported()):
        return torch.autocast(device.type, dtype=torch.bfloat16), "bf16-autocast"
    return torch.autocast(device.type, enabled=False), "fp32"


def _no_padding(batch_size: int, seq_len: int, device) -> torch.Tensor:
    """An all-ones (batch_size, seq_len) attention mask. Passing it (rather than None) lets
    transformers hand SDPA ``is_causal=True``; with None, transformers 4.53 checks the position ids
    for packed sequences and builds an explicit 4-D mask every step (design notes, apd.family.pretrain)."""
    return torch.ones(batch_size, seq_len, dtype=torch.long, device=device)


def _optimizer(model: torch.nn.Module, config: PicoConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only (no decay on biases and LayerNorm weights)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.lr, betas=config.betas)


@dataclass
class _Pretraining:
    """What every member's training shares: the configuration, the windows and their order, the
    tokenizer saved beside each member, the family key, the device and how to report and checkpoint."""

    config: PicoConfig
    inputs: torch.Tensor  # (n_chunks, seq_len) token ids, on the device
    targets: torch.Tensor  # the same shifted by one
    order: torch.Tensor  # (n_steps, batch_size) window indices, on the device
    tokenizer: object
    key: str
    device: torch.device
    progress: bool
    checkpoint_every: float | None

    @property
    def cuda(self) -> list:
        return [self.device] if self.device.type == "cuda" else []


@dataclass
class _MemberState:
    """One member's training in progress: what its checkpoint holds."""

    model: torch.nn.Module
    opt: torch.optim.Optimizer
    step: int = 0
    losses: list = dataclasses.field(default_factory=list)
    elapsed: float = 0.0


def _checkpoint_path(folder: Path) -> Path:
    return folder.parent / "_checkpoints" / f"{folder.name}.pt"


def _resume_member(job: _Pretraining, name: str, ckpt_path: Path, state: _MemberState) -> None:
    """Load the member's intact checkpoint of this run into ``state`` (a damaged one is set aside)."""
    n_steps = job.order.shape[0]
    saved = None
    if check_file(ckpt_path, "pretraining checkpoint", f"training {name} from the start"):
        # To the CPU: RNG states must stay CPU byte tensors; load_state_dict moves the rest.
        try:
            saved = torch.load(ckpt_path, map_location="cpu", weights_only=True)
        except Exception as err:  # truncated or otherwise unreadable
            set_aside(
                ckpt_path,
                "pretraining checkpoint",
                f"unreadable: {type(err).__name__}",
                f"training {name} from the start",
            )
    if saved is None:
        return
    if saved["key"] != job.key or saved["n_steps"] != n_steps:
        raise ValueError(f"checkpoint {ckpt_path} belongs to another training run; delete it.")
    state.model.load_state_dict(saved["model"])
    state.opt.load_state_dict(saved["optimizer"])
    state.step, state.losses, state.elapsed = saved["step"], saved["losses"], saved["elapsed"]
    torch.set_rng_state(saved["rng"])
    if job.cuda and saved.get("cuda_rng") is not None:
        torch.cuda.set_rng_state(saved["cuda_rng"], job.device)


def _save_member_checkpoint(job: _Pretraining, ckpt_path: Path, state: _MemberState) -> None:
    ckpt_path.parent.mkdir(exist_ok=True)
    torch_save(
        {
            "key": job.key,
            "n_steps": job.order.shape[0],
            "step": state.step,
            "losses": state.losses,
            "elapsed": state.elapsed,
            "model": state.model.state_dict(),
            "optimizer": state.opt.state_dict(),
            "rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(job.device) if job.cuda else None,
        },
        ckpt_path,
        digest=True,
    )


def _pretraining_loss(job: _Pretraining, state: _MemberState, autocast, mask: torch.Tensor) -> torch.Tensor:
    """The step's cross-entropy on its windows, with the gradients computed."""
    idx = job.order[state.step]  # (batch_size,) window indices, on the device
    x, y = job.inputs[idx], job.targets[idx]
    with autocast:
        logits = state.model(input_ids=x, attention_mask=mask, use_cache=False).logits
    loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.view(-1))
    loss.backward()
    return loss


def _run_steps(
    job: _Pretraining, name: str, position: str, ckpt_path: Path, state: _MemberState, steps_left: int | None
) -> int:
    """Train from ``state.step`` to the end (or ``steps_left`` steps); the steps run. A checkpoint is
    saved every ``checkpoint_every`` seconds, when stopped early and on a KeyboardInterrupt."""
    config, model, opt = job.config, state.model, state.opt
    n_steps, batch_size = job.order.shape
    autocast, _ = _autocast(job.device, config.dtype)
    tokens_per_step = batch_size * config.seq_len
    mask = _no_padding(batch_size, config.seq_len, job.device)
    bar = progress_bar(
        total=n_steps,
        initial=state.step,
        desc=f"{name} ({position})",
        unit="step",
        progress=job.progress,
        dynamic_ncols=True,
        leave=True,
    )
    run_steps, t_last_ckpt, updating = 0, time.perf_counter(), False
    t_run = time.perf_counter()
    try:
        while state.step < n_steps:
            if steps_left is not None and run_steps >= steps_left:
                _save_member_checkpoint(job, ckpt_path, state)
                raise TrainingInterrupted(
                    f"stopped {name} at step {state.step}/{n_steps} after max_steps_this_run; call "
                    f"train_family again with the same arguments to resume."
                )
            t0 = time.perf_counter()
            loss = _pretraining_loss(job, state, autocast, mask)
            if config.grad_clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            for group in opt.param_groups:
                group["lr"] = learning_rate(state.step, n_steps, config)
            loss_value = loss.item()
            updating = True  # the state is inconsistent from here until step is advanced
            opt.step()
            opt.zero_grad(set_to_none=True)
            state.step += 1
            state.losses.append(loss_value)
            updating = False
            run_steps += 1
            now = time.perf_counter()
            state.elapsed += now - t0
            bar.update(1)
            bar.set_postfix(
                loss=f"{state.losses[-1]:.3f}",
                refresh=False,
                tok_s=f"{run_steps * tokens_per_step / max(now - t_run, 1e-9):,.0f}",
            )
            if job.checkpoint_every is not None and now - t_last_ckpt >= job.checkpoint_every and state.step < n_steps:
                _save_member_checkpoint(job, ckpt_path, state)
                t_last_ckpt = time.perf_counter()
    except KeyboardInterrupt:
        if not updating:  # a consistent state: resume from here
            _save_member_checkpoint(job, ckpt_path, state)
        raise
    finally:
        bar.close()
    return run_steps


def _member_record(job: _Pretraining, name: str, state: _MemberState) -> dict:
    """The member's ``training.json``: sizes, the loss curve, tokens, time, device and precision."""
    config, model, losses, elapsed = job.config, state.model, state.losses, state.elapsed
    n_steps, batch_size = job.order.shape
    tokens_per_step = batch_size * config.seq_len
    _, precision = _autocast(job.device, config.dtype)
    tail = max(1, n_steps // 20)
    return {
        "name": name,
        "n_nonembedding": count_nonembedding(model),
        "n_parameters": sum(p.numel() for p in model.parameters()),
        "final_loss": float(np.mean(losses[-tail:])),
        "final_loss_steps": tail,
        "loss_curve": [round(v, 5) for v in losses],
        "steps": n_steps,
        "tokens_seen": n_steps * tokens_per_step,
        "wall_seconds": round(elapsed, 2),
        "tokens_per_second": round(n_steps * tokens_per_step / max(elapsed, 1e-9), 1),
        "device": str(job.device),
        "precision": precision,
        "torch_threads": torch.get_num_threads(),  # during training (keyed on the CPU)
        "family_key": job.key,
        "config": config.to_dict(),
        "torch_version": torch.__version__,
    }


def _save_member(job: _Pretraining, folder: Path, ckpt_path: Path, model: torch.nn.Module, record: dict) -> None:
    """Save the member to a temporary folder, then rename: a member folder exists only when complete."""
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.to("cpu").eval()
    model.save_pretrained(tmp)
    job.tokenizer.save_pretrained(tmp)
    (tmp / "training.json").write_text(json.dumps(record, indent=1))
    write_folder_digests(tmp)  # checked whenever the member is found again (_finished_member, load_family)
    os.replace(tmp, folder)
    ckpt_path.unlink(missing_ok=True)
    ckpt_path.with_name(ckpt_path.name + ".sha256").unlink(missing_ok=True)


def _train_member(
    job: _Pretraining, name: str, model_config, folder: Path, steps_left: int | None, position: str
) -> tuple[dict, int]:
    """Train (or resume) one member; save it to ``folder``. Returns (training record, steps run)."""
    from transformers import GPTNeoXForCausalLM

    ckpt_path = _checkpoint_path(folder)
    with torch.random.fork_rng(devices=job.cuda):
        torch.manual_seed(job.config.seed)
        model = GPTNeoXForCausalLM(model_config)  # seeded init, on the CPU for every device
        model.to(job.device).train()
        state = _MemberState(model, _optimizer(model, job.config))
        _resume_member(job, name, ckpt_path, state)
        run_steps = _run_steps(job, name, position, ckpt_path, state, steps_left)
    record = _member_record(job, name, state)
    _save_member(job, folder, ckpt_path, model, record)
    return record, run_steps


def _on_cpu(job: _Pretraining) -> _Pretraining:
    """``job`` with its tensors on the CPU, to be sent to a worker process."""
    return dataclasses.replace(job, inputs=job.inputs.cpu(), targets=job.targets.cpu(), order=job.order.cpu())


def _train_member_job(args) -> dict:
    """One member's training in a worker of :func:`apd.base.jobs.run_jobs`: ``(job with CPU tensors,
    name, model config, folder, position, threads)`` -> its training record."""
    job, name, member_config, folder, position, threads = args
    d = job.device
    job = dataclasses.replace(job, inputs=job.inputs.to(d), targets=job.targets.to(d), order=job.order.to(d))
    with cpu_threads(threads):
        record, _ = _train_member(job, name, member_config, folder, None, position)
    return record


def train_family(
    config: PicoConfig,
    tokenizer,
    documents_or_ids,
    cache_dir,
    device=None,
    progress: bool = True,
    checkpoint_every: float | None = 60.0,
    max_steps_this_run: int | None = None,
    num_threads: int | None = None,
) -> Path:
    """Train every member of the family (or find it cached) and return the family folder.

    tokenizer: a ``PreTrainedTokenizerFast`` (saved beside every member; needs an EOS token when
        documents are given). The model vocabulary is ``len(tokenizer)``.
    documents_or_ids: a list of document strings, or a 1-D array of token ids (one stream).
    cache_dir: parent folder; the family goes to ``cache_dir/pico-<key>/`` (see the module doc).
    device: default cuda if available, else cpu.
    checkpoint_every: seconds between checkpoints of an unfinished member (None: only on stops).
    max_steps_this_run: stop after this many optimizer steps in this call (checkpoint written),
        raising ``TrainingInterrupted``; a later call resumes. For tests and time-sliced runs.
    num_threads: torch CPU threads while training on the CPU (default :data:`CPU_THREADS`, whatever
        the machine; the count enters the family's key, since the weights depend on it); restored
        afterwards.
    Returns the family folder (load it with ``apd.family.loading.load_family("pico", local_dir=...)``).
    """
    device = resolve_device(device)
    keyed = training_threads(device, num_threads)
    with cpu_threads(keyed if keyed is not None else num_threads):
        return _train_family(
            config,
            tokenizer,
            documents_or_ids,
            cache_dir,
            device,
            progress,
            checkpoint_every,
            max_steps_this_run,
            keyed,
        )


def _identity(
    config: PicoConfig, tokenizer, documents_or_ids, cache_dir, device: torch.device, threads: int | None = None
):
    """(token stream, its hash, tokenizer hash, precision, family key, family folder) of a run;
    ``threads``: the CPU thread count it trains with (:func:`training_threads`)."""
    ids = token_stream(tokenizer, documents_or_ids)
    ids_hash, tok_hash = data_hash(ids), tokenizer_hash(tokenizer)
    precision = _autocast(device, config.dtype)[1]
    key = family_key(config, ids_hash, tok_hash, precision, threads)
    return ids, ids_hash, tok_hash, precision, key, Path(cache_dir).expanduser() / f"{config.prefix}-{key}"


def family_dir(
    config: PicoConfig, tokenizer, documents_or_ids, cache_dir, device=None, num_threads: int | None = None
) -> Path:
    """The folder :func:`train_family` trains into (or finds) for these arguments; trains nothing.
    It exists with a ``family.json`` once the family is trained."""
    device = resolve_device(device)
    return _identity(config, tokenizer, documents_or_ids, cache_dir, device, training_threads(device, num_threads))[-1]


def _finished_member(folder: Path) -> dict | None:
    """The training record of a member folder that is complete and intact, else None (a damaged
    folder is set aside, so that the caller retrains it)."""
    if not check_folder(folder, "pico member", f"retraining {folder.name}", backfill=True):
        return None
    return read_json_checked(folder / "training.json", "member training record", f"retraining {folder.name}")


def family_intact(family_dir: Path) -> bool:
    """True if ``family.json`` and every member it lists are intact (damaged ones are set aside)."""
    manifest = read_json_checked(family_dir / "family.json", "family manifest", "rebuilding it")
    if manifest is None:
        return False
    ok = True
    for name in manifest.get("members", []):
        folder = family_dir / name
        if not folder.is_dir() or not check_folder(folder, "pico member", f"retraining {name}", backfill=True):
            ok = False
    return ok  # when False, the build retrains what is missing and rewrites family.json


def _train_family(
    config, tokenizer, documents_or_ids, cache_dir, device, progress, checkpoint_every, max_steps_this_run, threads
) -> Path:
    ids, ids_hash, tok_hash, precision, key, family_dir = _identity(
        config, tokenizer, documents_or_ids, cache_dir, device, threads
    )
    if (family_dir / "family.json").exists() and family_intact(family_dir):
        return family_dir
    # One writer per family: a second build waits here, then finds the family done.
    with file_lock(family_dir.parent / f"{family_dir.name}.lock"):
        if (family_dir / "family.json").exists() and family_intact(family_dir):
            return family_dir
        family_dir.mkdir(parents=True, exist_ok=True)
        remove_stale_tmp(family_dir)  # member folders a dead writer was saving
        return _train_family_locked(
            config,
            ids,
            ids_hash,
            tok_hash,
            precision,
            key,
            family_dir,
            tokenizer,
            device,
            progress,
            checkpoint_every,
            max_steps_this_run,
            threads,
        )


def _train_family_locked(
    config,
    ids,
    ids_hash,
    tok_hash,
    precision,
    key,
    family_dir,
    tokenizer,
    device,
    progress,
    checkpoint_every,
    max_steps_this_run,
    threads,
) -> Path:
    manifest_path = family_dir / "family.json"

    n_chunks, n_steps = training_plan(len(ids), config)
    order = torch.from_numpy(chunk_order(n_chunks, n_steps, config.batch_size, config.seed)).to(device)
    stream = torch.from_numpy(ids[: n_chunks * config.seq_len + 1]).to(device)
    inputs = stream[:-1].view(n_chunks, config.seq_len)
    targets = stream[1:].view(n_chunks, config.seq_len)
    special = {
        k: getattr(tokenizer, k)
        for k in ("bos_token_id", "eos_token_id", "pad_token_id")
        if getattr(tokenizer, k) is not None
    }
    configs = dict(zip(config.names, member_configs(config, len(tokenizer), **special)))

    job = _Pretraining(config, inputs, targets, order, tokenizer, key, device, progress, checkpoint_every)
    ladder = config.sorted_members()
    records: dict[str, dict] = {}
    todo = []  # (name, model config, folder, position) of the members still to train
    for i, (name, _) in enumerate(ladder):
        folder = family_dir / name
        done = _finished_member(folder) if (folder / "training.json").exists() else None
        if done is not None:  # finished earlier (and intact): never retrained
            records[name] = done
        else:
            todo.append((name, configs[name], folder, f"{i + 1}/{len(ladder)}"))
    if todo:
        which = f"the {len(ladder)}" if len(todo) == len(ladder) else f"{len(todo)} of the {len(ladder)}"
        progress_note(
            f"training {which} members of the {config.prefix} family ({', '.join(t[0] for t in todo)}), once",
            family_dir,
            progress=progress,
        )
    if max_steps_this_run is not None:  # time-sliced: one member after another, the budget shared
        run_steps = 0
        for name, member_config, folder, position in todo:
            record, ran = _train_member(job, name, member_config, folder, max_steps_this_run - run_steps, position)
            records[name] = record
            run_steps += ran
    else:  # independent members side by side, largest first (apd.base.jobs), each as it would train alone
        cpu_job = _on_cpu(job)
        trained = run_jobs(
            _train_member_job,
            [(cpu_job, *member, threads) for member in reversed(todo)],
            names=[f"pretrain {member[0]}" for member in reversed(todo)],
            threads=threads,
        )
        records.update((r["name"], r) for r in trained)
    records = [records[name] for name, _ in ladder]

    manifest = {
        "members": [r["name"] for r in records],
        "n_nonembedding": {r["name"]: r["n_nonembedding"] for r in records},
        "final_loss": {r["name"]: r["final_loss"] for r in records},
        "train_seconds": {r["name"]: r["wall_seconds"] for r in records},
        "total_train_seconds": round(sum(r["wall_seconds"] for r in records), 2),
        "key": key,
        "precision": precision,
        "cpu_threads": training_threads(device, torch.get_num_threads()),
        "device": device.type,
        "data_hash": ids_hash,
        "tokenizer_hash": tok_hash,
        "n_tokens": int(len(ids)),
        "n_chunks": n_chunks,
        "n_steps": n_steps,
        "tokens_per_member": n_steps * config.batch_size * config.seq_len,
        "epochs_seen": n_steps * config.batch_size / n_chunks,
        "config": config.to_dict(),
        "format": FORMAT_VERSION,
    }
    write_json(manifest_path, manifest, indent=1, digest=True)
    remove_checkpoints(family_dir / "_checkpoints")
    return family_dir


# ----------------------------------------------------------------------------------------------
# Evaluation


@torch.no_grad()
def evaluate_loss(model, ids, seq_len: int, batch_size: int = 32) -> float:
    """Mean next-token cross-entropy (nats/token) of ``model`` on a 1-D stream of token ids.

    The stream is cut into consecutive windows of ``seq_len + 1`` tokens overlapping by one, so
    every token after the first is predicted exactly once, from at most ``seq_len`` tokens of
    context inside its window (the last window may be shorter).
    """
    ids = torch.as_tensor(np.asarray(ids.cpu() if isinstance(ids, torch.Tensor) else ids), dtype=torch.long)
    if ids.dim() != 1 or ids.numel() < 2:
        raise ValueError(f"ids must be a 1-D stream of at least 2 token ids, got shape {tuple(ids.shape)}.")
    if seq_len < 1 or batch_size < 1:
        raise ValueError(f"seq_len and batch_size must be >= 1, got {seq_len}, {batch_size}.")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    n_full = (ids.numel() - 1) // seq_len
    pieces = [(ids[: n_full * seq_len].view(n_full, seq_len), ids[1 : n_full * seq_len + 1].view(n_full, seq_len))]
    rest = ids[n_full * seq_len :]
    if rest.numel() >= 2:
        pieces.append((rest[:-1].view(1, -1), rest[1:].view(1, -1)))
    total, count = 0.0, 0
    try:
        for x_all, y_all in pieces:
            for start in range(0, x_all.size(0), batch_size):
                x = x_all[start : start + batch_size].to(device)
                y = y_all[start : start + batch_size].to(device)
                mask = _no_padding(x.size(0), x.size(1), device)
                logits = model(input_ids=x, attention_mask=mask, use_cache=False).logits.float()
                total += F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1), reduction="sum").item()
                count += y.numel()
    finally:
        model.train(was_training)
    return total / count
