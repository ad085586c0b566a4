"""Benchmarks of decoding, on-the-fly fitting, collection and ALM' training; writes one JSON file.

    .venv/bin/python scripts/benchmarks.py                     # smoke pico family, < 3 minutes
    .venv/bin/python scripts/benchmarks.py --quick             # tiny random models, < 1 minute
    .venv/bin/python scripts/benchmarks.py --scale default     # the book's pico family, if cached
    make bench                                                 # the first line

What is measured (issue 4, section 6). The machine may be shared and noisy, so the targets are
RATIOS of times measured in the same run: the methods are interleaved (their order rotates from
one repeat to the next), every ratio is taken within one repeat, and medians are reported.

Generation (greedy, fixed prompt length and number of new tokens, batch 1 and 8; the prompts are
windows of the fine-tuning text; ``min_new_tokens`` keeps EOS from ending a run early):

- ELM alone: ``apd.decoding.generation.generate(elm, ...)`` with no processor.
- CD: the ELM with ``ContrastiveLogitsProcessor(ALM, T=2)`` (no filters: they cost the same for
  CD and APD and are not what the targets are about).
- APD: the ELM with ``APDLogitsProcessor(ALM', T=1)``. ALM' here is a COPY of the ALM (same
  architecture, same weights): decoding speed does not depend on the weights, and the benchmark
  must not train one.
- APD on the fly: the ELM with ``OnTheFlyLogitsProcessor`` (every smaller member's forward pass
  at every step, plus the vectorised curve fit, 400 Adam iterations, over the ELM's top 20 tokens).
  It is ~100x slower, so it runs fewer new tokens and repeats; its tokens/s are per new token.

Targets: APD time / CD time <= 1.05, and CD time / ELM time within 10% of the FLOPs prediction
1 + F(ALM) / F(ELM), with the forward FLOPs per token of a model

    F = 2 * (N_nonembedding + d_model * V_out)

(2 FLOPs per multiply-add; the unembedding matmul counted, the input embedding being a lookup
counts 0; attention over the context left out). ``flops_with_attention`` adds the context term
4 * n_layer * d_model * ctx at the mean context of the run, as extra information. Tiny models are
dominated by fixed per-call costs (Python, Hugging Face's generate, kernel launches), which the
FLOPs model ignores: a MISS there says so, and is reported as measured.

REAL: a THF model (a copy of the ALM with its head) over the last 40 tokens at every step; the THF
forward time over the ELM's one-token forward time, and ELM + REAL over ELM + top-p generation,
each a median of ratios taken within one repeat.

Fitter: ``apd.core.curves.benchmark_fitter``: curves per second of the vectorised fit against the same
fit one curve at a time (target >= 100x). Collection: ``apd.amateur.collect.collect_probabilities`` on a slice of the
fine-tuning text (positions per second, all members). Training: optimizer steps per second of
``apd.amateur.train.train_alm_prime`` on that collection (a few steps; wall time between steps).

The device is CUDA when available (GPU figures), else the CPU. On the CPU, torch runs on
``--threads`` threads (default 1: tiny models gain nothing from more, and the machine is shared);
the JSON records it with the machine's CPU count and load.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from apd.amateur import collect  # noqa: E402 (after the sys.path line above)
from apd.core import curves  # noqa: E402
from apd.decoding import generation, processors  # noqa: E402
from apd.family.registry import count_nonembedding  # noqa: E402

TARGET_APD_OVER_CD = 1.05
TARGET_CD_TOLERANCE = 0.10
TARGET_FITTER_SPEEDUP = 100.0
METHODS = ("elm", "cd", "apd")
LABELS = {"elm": "ELM alone", "cd": "CD (ELM + ALM)", "apd": "APD (ELM + ALM')", "otf": "APD on the fly"}


# ============================================================================ settings


@dataclass
class Settings:
    """Sizes of one run (full or --quick)."""

    prompt_len: int = 32
    new_tokens: int = 64
    batch_sizes: tuple = (1, 8)
    repeats: int = 15  # a multiple of 3: every method as often first, second, third
    otf_new_tokens: int = 4
    otf_repeats: int = 2
    otf_iterations: int = 400
    fitter_vectorised: int = 4096
    fitter_loop: int = 4
    fitter_repeats: int = 2
    collect_seq_len: int = 64
    collect_chunks: int = 32
    collect_batch: int = 8
    collect_repeats: int = 3
    train_batch: int = 4

    @classmethod
    def quick(cls) -> "Settings":
        return cls(
            prompt_len=16,
            new_tokens=16,
            repeats=6,
            otf_new_tokens=2,
            otf_repeats=1,
            fitter_vectorised=1024,
            fitter_loop=4,
            fitter_repeats=1,
            collect_chunks=16,
            collect_repeats=2,
        )


@dataclass
class Setup:
    """The family under test: models smallest first, their x values, and a token stream."""

    name: str
    models: list
    names: list
    log_sizes: list
    vocab_size: int
    pad_id: int
    eos_id: int
    family: object  # what apd.amateur.collect.collect_probabilities takes
    stream: np.ndarray  # fine-tuning text as one token stream (int64)
    notes: list = field(default_factory=list)

    @property
    def elm(self):
        return self.models[-1]

    @property
    def alm(self):
        return self.models[0]


# ============================================================================ the family


def tiny_setup(device) -> Setup:
    """Four random GPT-NeoX members (about the size of the smoke pico family), random tokens."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    vocab, models = 512, []
    for i, (layers, hidden) in enumerate([(1, 16), (1, 32), (2, 32), (2, 64)]):
        torch.manual_seed(i)
        cfg = GPTNeoXConfig(
            vocab_size=vocab,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=2,
            intermediate_size=4 * hidden,
            max_position_embeddings=512,
            rotary_pct=0.25,
            bos_token_id=0,
            eos_token_id=0,
            pad_token_id=1,
            tie_word_embeddings=False,
        )
        models.append(GPTNeoXForCausalLM(cfg).eval().to(device))
    names = [f"tiny-{count_nonembedding(m) / 1e3:.1f}k" for m in models]
    fam = collect.ModelFamily(models, vocab_size=vocab, names=names, device=device)
    g = np.random.default_rng(0)
    stream = g.integers(2, vocab, size=200_000).astype(np.int64)
    return Setup(
        "tiny (random weights)",
        models,
        names,
        [float(x) for x in fam.log_sizes],
        vocab,
        1,
        0,
        fam,
        stream,
        ["tiny: four randomly initialised GPT-NeoX models and random tokens (speed only)"],
    )


def pico_setup(scale: str, device) -> Setup:
    """The pico family of ``scale`` ('smoke' trains in seconds and is cached; 'default' only if cached)."""
    from apd.base import paths
    from apd.family import pico, select
    from apd.family.loading import load_family
    from apd.family.text import token_stream

    notes = []
    if scale == "default":
        built = pico.find_cached("default", device=device)
        if built is None:
            notes.append(
                f"scale 'default' asked for, but no default pico family trained on {torch.device(device).type} "
                f"is cached under {paths.cache_dir() / 'families'} (the benchmark never trains it; "
                "`make book` does, or `python -c \"from apd import pico; pico.build('default')\"`): "
                "fell back to 'smoke'"
            )
            scale = "smoke"
        else:
            fam, corp = load_family("pico", local_dir=built.family_dir, device=device), built.corpus
    if scale == "smoke":
        fam, built = select.get_family("pico", "smoke", device=device, progress=False)
        corp = built.corpus
    models = [fam.model(n) for n in fam.names]
    stream = token_stream(fam.tokenizer, corp.finetune)
    tok = fam.tokenizer
    return Setup(
        f"pico {scale}",
        models,
        list(fam.names),
        [float(x) for x in fam.log_sizes],
        fam.vocab_size,
        tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
        tok.eos_token_id,
        fam,
        stream,
        notes,
    )


# ============================================================================ helpers


def sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device):
    """(wall seconds, this process's CPU seconds, fn's result)."""
    sync(device)
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    sync(device)
    return time.perf_counter() - t0, time.process_time() - c0, out


def median(xs):
    return float(statistics.median(xs)) if xs else float("nan")


def iqr(xs):
    """(25th, 75th) percentiles: the spread of paired ratios shows the noise of the machine."""
    return [float(np.percentile(xs, 25)), float(np.percentile(xs, 75))] if xs else None


def flops_per_token(model, ctx: float = 0.0) -> dict:
    """Forward FLOPs per token: 2 (N_nonembedding + d V_out), and with 4 n_layer d ctx of attention."""
    out = model.get_output_embeddings().weight
    v_out, d = out.shape
    n_non = count_nonembedding(model)
    base = 2 * (n_non + d * v_out)
    n_layer = model.config.num_hidden_layers
    return {
        "n_nonembedding": int(n_non),
        "d_model": int(d),
        "v_out": int(v_out),
        "n_layer": int(n_layer),
        "flops": float(base),
        "flops_with_attention": float(base + 4 * n_layer * d * ctx),
    }


def machine_info(device, threads) -> dict:
    import transformers

    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "threads_asked": threads,
        "device": str(device),
        "load_average_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
    if torch.device(device).type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


# ============================================================================ generation


def prompts(setup: Setup, batch: int, length: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` consecutive windows of the fine-tuning stream, all ``length`` tokens (no padding)."""
    need = batch * length
    if setup.stream.shape[0] < need:
        raise ValueError(
            f"the fine-tuning stream has {setup.stream.shape[0]} tokens, fewer than {need}; lower --prompt-len."
        )
    ids = torch.from_numpy(setup.stream[:need].reshape(batch, length).copy()).to(device)
    return ids, torch.ones_like(ids)


@torch.no_grad()
def forward_time_ratio(small, big, ids, steps: int, repeats: int, device) -> dict:
    """Median time of ``steps`` one-token forward passes with a KV cache (after the prompt): small / big.

    Tells how far a model's forward time is from its FLOPs (fixed per-call costs dominate tiny models)."""

    def run(model):
        cache = model(input_ids=ids, use_cache=True).past_key_values
        tok = ids[:, -1:]

        def go():
            c = cache
            for _ in range(steps):
                c = model(input_ids=tok, past_key_values=c, use_cache=True).past_key_values

        return go

    t_small, t_big = [], []
    for r in range(repeats):
        pair = [(small, t_small), (big, t_big)]
        for model, acc in pair if r % 2 == 0 else pair[::-1]:
            acc.append(timed(run(model), device)[0] / steps)
    return {
        "alm_s_per_forward": median(t_small),
        "elm_s_per_forward": median(t_big),
        "alm_over_elm": median([a / b for a, b in zip(t_small, t_big)]),
    }


def bench_generation(setup: Setup, s: Settings, device, log) -> dict:
    alm_prime = copy.deepcopy(setup.alm)  # stands in for ALM': same architecture, speed only
    V = setup.vocab_size

    def runner(method, ids, mask, n):
        if method == "elm":
            procs = []
        elif method == "cd":
            procs = [processors.ContrastiveLogitsProcessor(setup.alm, T=2.0, vocab_size=V)]
        elif method == "apd":
            procs = [processors.APDLogitsProcessor(alm_prime, T=1.0, vocab_size=V)]
        else:
            procs = [
                processors.OnTheFlyLogitsProcessor(
                    setup.models[:-1], setup.log_sizes, w=0.5, top_k=20, vocab_size=V, iterations=s.otf_iterations
                )
            ]

        def run():
            out = generation.generate(
                setup.elm,
                ids,
                mask,
                procs,
                max_new_tokens=n,
                min_new_tokens=n,
                do_sample=False,
                pad_token_id=setup.pad_id,
                eos_token_id=setup.eos_id,
            )
            if out.shape[1] != ids.shape[1] + n:
                raise RuntimeError(f"{method} generated {out.shape[1] - ids.shape[1]} tokens, not {n}")
            return out

        return run

    results = {}
    for b in s.batch_sizes:
        ids, mask = prompts(setup, b, s.prompt_len, device)
        times = {m: [] for m in METHODS}
        cpu = {m: [] for m in METHODS}
        for m in METHODS:  # warm-up (first-call costs)
            timed(runner(m, ids, mask, s.new_tokens), device)
        for r in range(s.repeats):
            order = METHODS[r % 3 :] + METHODS[: r % 3]  # rotate the order from repeat to repeat
            for m in order:
                wall, c, _ = timed(runner(m, ids, mask, s.new_tokens), device)
                times[m].append(wall)
                cpu[m].append(c)
        row = {
            m: {
                "times_s": times[m],
                "cpu_times_s": cpu[m],
                "median_s": median(times[m]),
                "tokens_per_s": b * s.new_tokens / median(times[m]),
            }
            for m in METHODS
        }
        pairs = {"cd_over_elm": ("cd", "elm"), "apd_over_cd": ("apd", "cd"), "apd_over_elm": ("apd", "elm")}
        paired = {k: [x / y for x, y in zip(times[a], times[b_])] for k, (a, b_) in pairs.items()}
        paired_cpu = {k: [x / y for x, y in zip(cpu[a], cpu[b_])] for k, (a, b_) in pairs.items()}
        row["ratios"] = {k: median(v) for k, v in paired.items()}
        row["ratios_iqr"] = {k: iqr(v) for k, v in paired.items()}
        row["ratios_per_repeat"] = paired
        row["cpu_time_ratios"] = {k: median(v) for k, v in paired_cpu.items()}
        # APD on the fly: fewer tokens and repeats (about 1 s per step on a CPU)
        warm = runner("otf", ids, mask, 1)
        timed(warm, device)
        otf = [timed(runner("otf", ids, mask, s.otf_new_tokens), device)[0] for _ in range(s.otf_repeats)]
        row["otf"] = {
            "times_s": otf,
            "median_s": median(otf),
            "new_tokens": s.otf_new_tokens,
            "tokens_per_s": b * s.otf_new_tokens / median(otf),
        }
        row["ratios"]["otf_time_per_token_over_elm"] = row["elm"]["tokens_per_s"] / row["otf"]["tokens_per_s"]
        row["forward_time"] = forward_time_ratio(setup.alm, setup.elm, ids, s.new_tokens, 6, device)
        results[f"batch_{b}"] = row
        log(
            f"  batch {b}: "
            + ", ".join(f"{m} {row[m]['tokens_per_s']:.1f} tok/s" for m in METHODS)
            + f", on the fly {row['otf']['tokens_per_s']:.2f} tok/s"
        )

    ctx = s.prompt_len + (s.new_tokens - 1) / 2
    f_elm, f_alm = flops_per_token(setup.elm, ctx), flops_per_token(setup.alm, ctx)
    return {
        "settings": {
            "prompt_len": s.prompt_len,
            "new_tokens": s.new_tokens,
            "repeats": s.repeats,
            "batch_sizes": list(s.batch_sizes),
            "greedy": True,
            "cd_T": 2.0,
            "apd_T": 1.0,
            "filters": [],
            "otf": {
                "new_tokens": s.otf_new_tokens,
                "repeats": s.otf_repeats,
                "top_k": 20,
                "w": 0.5,
                "iterations": s.otf_iterations,
                "members": len(setup.models),
            },
            "alm_prime": "a copy of the ALM (same architecture and weights): speed does not depend on the weights",
            "order": "ELM, CD, APD interleaved, order rotated every repeat; ratios taken within a repeat",
            "timer": "wall clock (time.perf_counter, CUDA synchronised); cpu_time_ratios use this "
            "process's CPU time (time.process_time) as a cross-check on a shared CPU",
        },
        "flops": {
            "elm": f_elm,
            "alm": f_alm,
            "formula": "F = 2 * (N_nonembedding + d_model * V_out) per token (unembedding matmul counted, "
            "embedding lookup 0); flops_with_attention adds 4 * n_layer * d_model * ctx at the "
            f"mean context ctx = prompt_len + (new_tokens - 1) / 2 = {ctx:g}",
            "alm_over_elm": f_alm["flops"] / f_elm["flops"],
            "alm_over_elm_with_attention": f_alm["flops_with_attention"] / f_elm["flops_with_attention"],
            "predicted_cd_over_elm": 1 + f_alm["flops"] / f_elm["flops"],
        },
        "results": results,
    }


@torch.no_grad()
def bench_real(setup: Setup, s: Settings, device, log) -> dict:
    """REAL's per-token overhead: a THF model (a copy of the ALM with its head; speed does not depend on
    the weights) reads the last 40 tokens at every step. Interleaved, ratios within a repeat:
    THF window forward over the ELM's one-token forward (KV cache), and generation with
    ELM + REAL over ELM + top-p (same nucleus code, a fixed p against REAL's per-step p)."""
    from apd.amateur.thf import THFModel
    from apd.core.filters import TopP

    thf = THFModel(copy.deepcopy(setup.alm), setup.log_sizes).to(device).eval()
    V, window, b = setup.vocab_size, 40, s.batch_sizes[0]
    ids, mask = prompts(setup, b, max(s.prompt_len, window), device)
    cache = setup.elm(input_ids=ids, use_cache=True).past_key_values
    tok = ids[:, -1:]

    def elm_step():
        setup.elm(input_ids=tok, past_key_values=copy.copy(cache), use_cache=True)

    def thf_step():
        thf.at_last(ids, mask, window=window)

    def generate(real: bool):
        procs = [
            processors.REALLogitsProcessor(thf, T_r=4.0, vocab_size=V, window=window)
            if real
            else processors.FilteredLogitsProcessor([TopP(0.9)], vocab_size=V)
        ]
        return lambda: generation.generate(
            setup.elm,
            ids,
            mask,
            procs,
            max_new_tokens=s.new_tokens,
            min_new_tokens=s.new_tokens,
            do_sample=False,
            pad_token_id=setup.pad_id,
            eos_token_id=setup.eos_id,
        )

    for fn in (elm_step, thf_step, generate(False), generate(True)):  # warm-up
        timed(fn, device)
    fwd, gen = [], []
    for r in range(s.repeats):
        order = [("elm", elm_step), ("thf", thf_step)]
        t = {name: timed(fn, device)[0] for name, fn in (order if r % 2 == 0 else order[::-1])}
        fwd.append(t["thf"] / t["elm"])
        order = [("top_p", generate(False)), ("real", generate(True))]
        t = {name: timed(fn, device)[0] for name, fn in (order if r % 2 == 0 else order[::-1])}
        gen.append(t["real"] / t["top_p"])
    out = {
        "settings": {
            "batch": b,
            "window": window,
            "new_tokens": s.new_tokens,
            "repeats": s.repeats,
            "thf": "a copy of the ALM with the THF head",
            "T_r": 4.0,
            "top_p": 0.9,
        },
        "thf_forward_over_elm_forward": median(fwd),
        "real_over_top_p_generation": median(gen),
    }
    log(
        f"  REAL: THF window forward / ELM forward {out['thf_forward_over_elm_forward']:.2f}, "
        f"ELM + REAL / ELM + top-p generation {out['real_over_top_p_generation']:.2f}"
    )
    return out


# ============================================================================ fitter, collection, training


def bench_fitter(s: Settings, device, log) -> dict:
    curves.fit_curves(curves.synthetic_curves(64)[0], curves.PYTHIA_LOG_SIZES, iterations=5, device=device)  # warm-up
    runs = []
    for r in range(s.fitter_repeats):
        runs.append(curves.benchmark_fitter(s.fitter_vectorised, s.fitter_loop, seed=r, device=device))
        log(
            f"  repeat {r + 1}: {runs[-1]['curves_per_s_vectorised']:.0f} vs "
            f"{runs[-1]['curves_per_s_one_by_one']:.2f} curves/s, {runs[-1]['speedup']:.0f}x"
        )
    return {
        "runs": runs,
        "curves_per_s_vectorised": median([x["curves_per_s_vectorised"] for x in runs]),
        "curves_per_s_one_by_one": median([x["curves_per_s_one_by_one"] for x in runs]),
        "speedup": median([x["speedup"] for x in runs]),
        "settings": {
            "n_vectorised": s.fitter_vectorised,
            "n_loop": s.fitter_loop,
            "iterations": 400,
            "members": len(curves.PYTHIA_LOG_SIZES),
            "curves": "apd.core.curves.synthetic_curves",
        },
    }


def bench_collection(setup: Setup, s: Settings, workdir: Path, log) -> dict:
    cfg = collect.CollectConfig(seq_len=s.collect_seq_len, chunks_per_shard=s.collect_chunks)
    n_pos = s.collect_seq_len * s.collect_chunks
    if setup.stream.shape[0] < n_pos:
        raise ValueError(f"the fine-tuning stream has {setup.stream.shape[0]} tokens, fewer than {n_pos}.")
    ids = setup.stream[:n_pos]
    times, first = [], None
    for r in range(s.collect_repeats):
        out = workdir / f"collect-{r}"
        t, _, _ = timed(
            lambda out=out: collect.collect_probabilities(
                setup.family, ids, out, cfg, batch_size=s.collect_batch, progress=False
            ),
            setup.elm.device,
        )
        times.append(t)
        first = first or out
    pos_s = n_pos / median(times)
    log(f"  {pos_s:.0f} positions/s ({len(setup.names)} members)")
    return {
        "positions": n_pos,
        "times_s": times,
        "positions_per_s": pos_s,
        "member_positions_per_s": pos_s * len(setup.names),
        "settings": {
            "seq_len": s.collect_seq_len,
            "chunks": s.collect_chunks,
            "batch_size": s.collect_batch,
            "members": len(setup.names),
            "token_set": cfg.k,
        },
    }, first


def bench_training(setup: Setup, s: Settings, collect_dir: Path, workdir: Path, device, log) -> dict:
    from apd.amateur.config import APDTrainConfig
    from apd.amateur.data import CollectedChunks
    from apd.amateur.train import train_alm_prime

    manifest = collect.read_manifest(collect_dir)
    data = CollectedChunks(
        list(collect.iter_records(collect_dir)), log_sizes=manifest["log_sizes"], member_names=manifest["members"]
    )
    cfg = APDTrainConfig(
        family="pico",
        lambda3=0.8,
        batch_size=s.train_batch,
        micro_batch_size=s.train_batch,
        epochs=1,
        warmup_steps=0.1,
        checkpoint_every=10**9,
        device=str(device),
    )
    stamps = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        train_alm_prime(
            cfg,
            setup.alm,
            data,
            workdir / "train",
            progress=False,
            callback=lambda step, rec: (sync(device), stamps.append(time.perf_counter())),
        )
        total = time.perf_counter() - t0
    steps = np.diff([t0] + stamps)
    per_step = median(list(steps[1:])) if len(steps) > 1 else float(steps[0])  # the first step carries warm-up
    log(f"  {1 / per_step:.2f} steps/s ({len(stamps)} steps of {s.train_batch} x {s.collect_seq_len} positions)")
    return {
        "steps": len(stamps),
        "step_times_s": steps.tolist(),
        "steps_per_s": 1 / per_step,
        "positions_per_s": s.train_batch * s.collect_seq_len / per_step,
        "total_s_incl_setup_and_save": total,
        "settings": {
            "batch_size": s.train_batch,
            "micro_batch_size": s.train_batch,
            "seq_len": s.collect_seq_len,
            "device": str(device),
            "bf16": torch.device(device).type == "cuda",
            "note": "median of the steps after the first; the paper's runs use 64 x 1024 per step",
        },
    }


# ============================================================================ report


def verdicts(gen: dict, fitter: dict) -> list[dict]:
    rows = []
    pred = gen["flops"]["predicted_cd_over_elm"]
    for key, res in gen["results"].items():
        r = res["ratios"]
        cd = r["cd_over_elm"]
        rows.append(
            {
                "name": f"CD/ELM time, {key.replace('_', ' ')}",
                "value": cd,
                "target": f"within 10% of 1 + F(ALM)/F(ELM) = {pred:.3f}, i.e. "
                f"[{pred * (1 - TARGET_CD_TOLERANCE):.3f}, {pred * (1 + TARGET_CD_TOLERANCE):.3f}]",
                "status": "PASS" if abs(cd / pred - 1) <= TARGET_CD_TOLERANCE else "MISS",
            }
        )
        rows.append(
            {
                "name": f"APD/CD time, {key.replace('_', ' ')}",
                "value": r["apd_over_cd"],
                "target": f"<= {TARGET_APD_OVER_CD}",
                "status": "PASS" if r["apd_over_cd"] <= TARGET_APD_OVER_CD else "MISS",
            }
        )
    if fitter is not None:
        rows.append(
            {
                "name": "fitter speed-up, vectorised / one by one",
                "value": fitter["speedup"],
                "target": f">= {TARGET_FITTER_SPEEDUP:g}",
                "status": "PASS" if fitter["speedup"] >= TARGET_FITTER_SPEEDUP else "MISS",
            }
        )
    return rows


def table(report: dict) -> str:
    lines = [
        f"apd benchmarks: {report['family']['name']} on {report['machine']['device']}, "
        f"{report['machine']['torch_threads']} torch thread(s), {report['machine']['cpu_count']} CPUs, "
        f"load {report['machine']['load_average_start']}"
    ]
    for n in report["notes"]:
        lines.append(f"note: {n}")
    gen = report["generation"]
    st = gen["settings"]
    lines.append(
        f"\nGeneration, greedy, prompt {st['prompt_len']} tokens, {st['new_tokens']} new tokens "
        f"(on the fly: {st['otf']['new_tokens']}), median of {st['repeats']} interleaved repeats"
    )
    keys = list(gen["results"])
    lines.append(f"{'tokens/s':<22}" + "".join(f"{k.replace('_', ' '):>14}" for k in keys))
    for m in (*METHODS, "otf"):
        lines.append(f"{LABELS[m]:<22}" + "".join(f"{gen['results'][k][m]['tokens_per_s']:>14.2f}" for k in keys))
    lines.append("time ratios (median of paired repeats [IQR]; CPU-time median)")
    for name in ("cd_over_elm", "apd_over_cd", "apd_over_elm"):
        cells = []
        for k in keys:
            res = gen["results"][k]
            lo, hi = res["ratios_iqr"][name]
            cells.append(f"{res['ratios'][name]:.3f} [{lo:.2f}, {hi:.2f}]; cpu {res['cpu_time_ratios'][name]:.3f}")
        lines.append(f"  {name:<14}" + "".join(f"{c:>32}" for c in cells))
    lines.append(
        f"  {'otf_over_elm':<14}"
        + "".join(f"{gen['results'][k]['ratios']['otf_time_per_token_over_elm']:>32.1f}" for k in keys)
        + "   (time per new token)"
    )
    fl = gen["flops"]
    lines.append(
        f"FLOPs/token: ALM {fl['alm']['flops']:.4g}, ELM {fl['elm']['flops']:.4g}; F(ALM)/F(ELM) = "
        f"{fl['alm_over_elm']:.3f} ({fl['alm_over_elm_with_attention']:.3f} with attention) -> predicted "
        f"CD/ELM {fl['predicted_cd_over_elm']:.3f}"
    )
    lines.append(
        "measured one-token forward time ALM/ELM (KV cache, no generate): "
        + ", ".join(f"{k.replace('_', ' ')} {gen['results'][k]['forward_time']['alm_over_elm']:.3f}" for k in keys)
    )
    if report.get("real"):
        r = report["real"]
        lines.append(
            f"REAL (batch {r['settings']['batch']}, window {r['settings']['window']}): THF forward / ELM "
            f"forward {r['thf_forward_over_elm_forward']:.2f}, ELM + REAL / ELM + top-p generation "
            f"{r['real_over_top_p_generation']:.2f}"
        )
    if report.get("fitter"):
        f = report["fitter"]
        lines.append(
            f"\nFitter (400 iterations, {f['settings']['members']} members): vectorised "
            f"{f['curves_per_s_vectorised']:.0f} curves/s, one by one {f['curves_per_s_one_by_one']:.2f} "
            f"curves/s, speed-up {f['speedup']:.0f}x"
        )
    if report.get("collection"):
        c = report["collection"]
        lines.append(
            f"Collection: {c['positions_per_s']:.0f} positions/s ({c['settings']['members']} members, "
            f"{c['positions']} positions, batch {c['settings']['batch_size']} x {c['settings']['seq_len']})"
        )
    if report.get("training"):
        t = report["training"]
        lines.append(
            f"ALM' training: {t['steps_per_s']:.2f} steps/s ({t['settings']['batch_size']} x "
            f"{t['settings']['seq_len']} positions per step, {t['positions_per_s']:.0f} positions/s)"
        )
    lines.append("\nTargets")
    for v in report["targets"]:
        lines.append(f"  [{v['status']}] {v['name']}: {v['value']:.3f} (target {v['target']})")
    lines.append(f"\nwall time {report['wall_s']:.1f} s")
    return "\n".join(lines)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--scale",
        choices=("smoke", "default", "tiny"),
        default=None,
        help="pico 'smoke' (default), pico 'default' (only if already cached; else smoke), or 'tiny' random models",
    )
    ap.add_argument("--quick", action="store_true", help="tiny random models, fewer repeats (< 1 minute)")
    ap.add_argument(
        "--out",
        default=str(ROOT / "results" / "bench" / "benchmarks.json"),
        help="the JSON file to write (default results/bench/benchmarks.json)",
    )
    ap.add_argument("--device", default="auto", help="auto (cuda if available), cpu or cuda")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default 1 on the CPU)")
    ap.add_argument("--repeats", type=int, default=None, help="interleaved repeats of each generation")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: fitter, collection, training")
    args = ap.parse_args(argv)
    if args.quick and args.scale not in (None, "tiny"):
        ap.error("--quick runs the tiny random models; leave out --scale or pass --scale tiny")
    scale = "tiny" if args.quick else (args.scale or "smoke")
    device = torch.device(
        "cuda"
        if args.device == "auto" and torch.cuda.is_available()
        else ("cpu" if args.device == "auto" else args.device)
    )
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda but CUDA is not available; use --device cpu or auto")
    threads = args.threads if args.threads is not None else (1 if device.type == "cpu" else torch.get_num_threads())
    torch.set_num_threads(threads)
    s = Settings.quick() if args.quick else Settings()
    if args.repeats is not None:
        if args.repeats < 1:
            ap.error(f"--repeats must be >= 1 (best a multiple of 3), got {args.repeats}")
        s.repeats = args.repeats
    skip = {x.strip() for x in args.skip.split(",") if x.strip()}
    unknown = skip - {"fitter", "collection", "training"}
    if unknown:
        ap.error(f"--skip knows fitter, collection, training; got {sorted(unknown)}")

    def log(msg):
        print(msg, flush=True)

    t_start = time.perf_counter()
    log(f"setting up the {scale} family on {device} ({threads} thread(s))")
    setup = tiny_setup(device) if scale == "tiny" else pico_setup(scale, device)
    report = {
        "machine": machine_info(device, threads),
        "scale_asked": scale,
        "quick": args.quick,
        "family": {
            "name": setup.name,
            "members": setup.names,
            "log_sizes": setup.log_sizes,
            "vocab_size": setup.vocab_size,
            "n_nonembedding": [count_nonembedding(m) for m in setup.models],
        },
        "notes": list(setup.notes),
    }
    log("generation")
    report["generation"] = bench_generation(setup, s, device, log)
    log("REAL")
    report["real"] = bench_real(setup, s, device, log)
    report["fitter"] = None
    if "fitter" not in skip:
        log("fitter")
        report["fitter"] = bench_fitter(s, device, log)
    report["collection"] = report["training"] = None
    with tempfile.TemporaryDirectory(prefix="apd-bench-") as tmp:
        if "collection" not in skip or "training" not in skip:
            log("collection")
            report["collection"], first = bench_collection(setup, s, Path(tmp), log)
            if "training" not in skip:
                log("ALM' training")
                report["training"] = bench_training(setup, s, first, Path(tmp), device, log)
    report["targets"] = verdicts(report["generation"], report["fitter"])
    report["machine"]["load_average_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    report["wall_s"] = time.perf_counter() - t_start
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    log("\n" + table(report))
    log(f"\nwritten to {out}")
    return report


if __name__ == "__main__":
    main()
