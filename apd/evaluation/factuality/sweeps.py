"""Generating continuations for every method and seed (cached), and scoring a sweep.

The random stream of a batch is seeded by (seed, batch index): the same config gives the same
text, and all methods share seeds. Diversity: Dist-2 and Rep (:mod:`apd.evaluation.text_metrics`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np
import pandas as pd
import torch

from apd.amateur.runs import member_identity
from apd.base.io import read_json_checked, set_aside, write_json
from apd.base.jobs import job_count, run_jobs
from apd.base.paths import cache_dir
from apd.base.progress import progress_bar, progress_enabled
from apd.decoding import generation
from apd.evaluation import text_metrics
from apd.evaluation.factuality.methods import Decoders, Method


@contextlib.contextmanager
def _quiet_transformers(quiet: bool):
    """transformers' logging at ERROR level inside the block (when ``quiet``)."""
    from transformers.utils import logging as hf_logging

    before = hf_logging.get_verbosity()
    if quiet:
        hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(before)


def batch_seed(seed: int, batch: int) -> int:
    """The torch seed of one generation batch: a hash of (seed, batch index)."""
    return int(np.random.SeedSequence([int(seed), int(batch), 7]).generate_state(1)[0])


@torch.no_grad()
def generate_continuations(
    decoders: Decoders,
    method: Method,
    prompts: Sequence[str],
    seeds: Sequence[int] = (0,),
    max_new_tokens: int = 32,
    batch_size: int = 64,
    progress=None,
    stats: Optional[dict] = None,
) -> list[list[str]]:
    """Sample one continuation per (prompt, seed) with ``method``.

    Returns ``out[i][j]``: the decoded new text (special tokens removed, cut at EOS) of prompt i
    under seed j. Prompts are batched in order (``batch_size`` per batch, left-padded);
    ``progress``: an optional tqdm to ``update`` once per batch. ``stats``: a dict that receives
    ``mean_top_p``, REAL's mean threshold over every (row, step) of a running row (REAL settings
    only).
    """
    if isinstance(prompts, str):
        raise TypeError("prompts must be a list of str, got one str; wrap it: [prompt].")
    if not prompts:
        raise ValueError("no prompts to continue.")
    if int(max_new_tokens) < 1 or int(batch_size) < 1:
        raise ValueError(f"max_new_tokens and batch_size must be >= 1, got {max_new_tokens}, {batch_size}.")
    tok = decoders.tokenizer
    out = [[None] * len(seeds) for _ in prompts]
    top_p_sum, top_p_count = 0.0, 0
    for j, seed in enumerate(seeds):
        for b, start in enumerate(range(0, len(prompts), batch_size)):
            chunk = list(prompts[start : start + batch_size])
            ids, mask = decoders.encode(chunk)
            procs, extra = decoders.processors_and_kwargs(method)
            torch.manual_seed(batch_seed(seed, b))
            with _quiet_transformers(method.dist == "DoLa"):  # its "moving to custom_generate" notice
                seq = generation.generate(
                    decoders.elm,
                    ids,
                    mask,
                    procs,
                    do_sample=True,
                    max_new_tokens=int(max_new_tokens),
                    pad_token_id=decoders.pad_id,
                    num_beams=1,
                    **extra,
                )
            for p in procs:
                if hasattr(p, "top_p_count"):  # REAL: its thresholds over this batch
                    top_p_sum, top_p_count = top_p_sum + p.top_p_sum, top_p_count + p.top_p_count
            for i, row in enumerate(seq[:, ids.shape[1] :].tolist()):
                if tok.eos_token_id is not None and tok.eos_token_id in row:
                    row = row[: row.index(tok.eos_token_id)]
                out[start + i][j] = tok.decode(row, skip_special_tokens=True)
            if progress is not None:
                progress.update(1)
    if stats is not None and method.threshold == "REAL":
        stats["mean_top_p"] = top_p_sum / top_p_count if top_p_count else float("nan")
    return out


def config_key(*parts) -> str:
    """A short hash of JSON-able parts (model identities, prompts, seeds, ...) for cache folders."""
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\x00")
    return h.hexdigest()[:12]


def model_identity(location) -> Optional[str]:
    """What identifies a model for a sweep's cache key wherever it lives: a Hub id as it is; a local
    folder by a digest of its weight files (:func:`apd.amateur.runs.member_identity`); None for None.

    Example:
        >>> model_identity("EleutherAI/pythia-70m-deduped"), model_identity(None)
        ('EleutherAI/pythia-70m-deduped', None)
    """
    return None if location is None else member_identity(location)


def decoder_identity(fam, alm_prime=None, thf=None) -> list:
    """The cache-key parts of the models a sweep decodes with: ``[ELM, ALM, ALM', THF]``, each a
    :func:`model_identity` (weight digests for local folders, never a path), so that a moved cache
    is found again. ``alm_prime``/``thf``: their folders (or an ``APDResult``/``THFResult``), or None.

    Example:
        >>> ids = decoder_identity(fam, res.alm_prime_path, None)       # doctest: +SKIP
        >>> ids[0].startswith("sha256:"), ids[3] is None                # doctest: +SKIP
        (True, True)
    """
    alm_prime = getattr(alm_prime, "alm_prime_path", alm_prime)
    thf = getattr(thf, "path", thf)
    return [
        model_identity(fam.locations[fam.elm]),
        model_identity(fam.locations[fam.alm]),
        model_identity(alm_prime),
        model_identity(thf),
    ]


def sweep_cache(*key_parts, root=None) -> Path:
    """``<cache>/factuality/<hash of key_parts>``: where :func:`sweep` keeps its generations.
    Pass everything that changes the text: the models (:func:`decoder_identity`, not their paths, so
    that a moved cache is used as it is), prompts, seeds, max_new_tokens, batch_size, device type."""
    if root is None:
        root = cache_dir()
    return Path(root) / "factuality" / config_key(*key_parts)


def _method_file(cache: Path, method: Method) -> Path:
    return cache / f"{config_key(asdict(method))}.json"


def _read_generations(path: Path, method: Method, n_prompts: int, n_seeds: int) -> Optional[dict]:
    """A method's cached generations, or None when there are none; a file that is damaged (digest
    mismatch, not JSON, truncated) or does not hold ``n_prompts`` x ``n_seeds`` strings of ``method``
    is set aside with a warning naming it, and None returned (the sweep generates it again)."""
    data = read_json_checked(path, "factuality generations", "generating them again")
    if data is None:
        return None
    gens = data.get("continuations") if isinstance(data, dict) else None
    ok = (
        isinstance(gens, list)
        and len(gens) == n_prompts
        and all(isinstance(g, list) and len(g) == n_seeds and all(isinstance(t, str) for t in g) for g in gens)
        and data.get("method") in (None, json.loads(json.dumps(asdict(method))))
    )
    if not ok:
        set_aside(
            path,
            "factuality generations",
            f"it does not hold {n_prompts} prompts x {n_seeds} seeds of {method.label}",
            "generating them again",
        )
        return None
    return data


def sweep(
    decoders: Decoders,
    methods: Sequence[Method],
    prompts: Sequence[str],
    seeds: Sequence[int] = (0,),
    max_new_tokens: int = 32,
    batch_size: int = 64,
    cache: Optional[Path] = None,
    progress: bool = True,
    seconds: Optional[dict] = None,
    top_p: Optional[dict] = None,
) -> dict[str, list[list[str]]]:
    """Generations of every method: ``{method.label: out}`` with ``out`` as in
    :func:`generate_continuations`. With ``cache`` (a folder, see :func:`sweep_cache`) each
    method's generations are saved as they finish, with a digest, and read back on the next call
    (resumable); a damaged file is set aside and generated again. The folder must be keyed by
    everything that changes the text. ``seconds``: a dict to receive
    each method's generation wall time in seconds (as measured when it was generated). ``top_p``:
    a dict to receive each REAL setting's mean threshold (``mean_top_p`` of
    :func:`generate_continuations`; NaN for generations cached before it was recorded). With a cache
    and small models on the CPU the methods run side by side (:func:`side_by_side`), each in a worker
    with this process's thread count, so the texts are the same as one after another.
    """
    labels = [m.label for m in methods]
    if len(set(labels)) != len(labels):
        raise ValueError("methods has duplicates; pass each setting once.")
    n_batches = len(seeds) * math.ceil(len(prompts) / batch_size)
    cached = {}
    if cache is not None:
        for m in methods:
            data = _read_generations(_method_file(Path(cache), m), m, len(prompts), len(seeds))
            if data is not None:
                cached[m.label] = data
    todo = [m for m in methods if m.label not in cached]
    args = (list(prompts), list(seeds), max_new_tokens, batch_size, cache)
    if cache is not None and len(todo) > 1 and side_by_side(decoders):  # each method in a worker, saved there
        run_jobs(
            _method_job,
            [(decoders, m, *args) for m in todo],
            names=[f"generate {m.label}" for m in todo],
            threads=torch.get_num_threads(),
        )
        for m in todo:
            data = _read_generations(_method_file(Path(cache), m), m, len(prompts), len(seeds))
            if data is not None:
                cached[m.label] = data
        todo = [m for m in methods if m.label not in cached]
    bar = None
    if progress_enabled(progress) and todo:
        bar = progress_bar(total=n_batches * len(todo), desc="generating", unit="batch")
    out = {}
    seconds = {} if seconds is None else seconds
    top_p = {} if top_p is None else top_p
    for m in methods:
        data = cached.get(m.label) or _generate_method(decoders, m, *args, bar)
        out[m.label] = data["continuations"]
        seconds[m.label] = data.get("seconds", float("nan"))
        if m.threshold == "REAL":
            top_p[m.label] = data.get("mean_top_p", float("nan"))
    if bar is not None:
        bar.close()
    return out


#: above this many parameters in all (or on an accelerator), a sweep's methods run one after another here
SIDE_BY_SIDE_MAX_PARAMETERS = 50_000_000


def side_by_side(decoders: Decoders) -> bool:
    """Whether a sweep's methods run in worker processes (:func:`apd.base.jobs.run_jobs`): more than one
    job, models on the CPU and small enough (:data:`SIDE_BY_SIDE_MAX_PARAMETERS`) to send to each."""
    models = [m for m in (decoders.elm, decoders.alm, decoders.alm_prime, decoders.thf) if m is not None]
    size = sum(p.numel() for m in models for p in m.parameters())
    return job_count() > 1 and decoders.device.type == "cpu" and size <= SIDE_BY_SIDE_MAX_PARAMETERS


def _generate_method(decoders, m: Method, prompts, seeds, max_new_tokens, batch_size, cache, bar=None) -> dict:
    """Generate ``m``'s continuations; save them in ``cache`` (when given) with their wall time and
    stats; returns what the file holds."""
    t0 = time.time()
    stats = {}
    gens = generate_continuations(decoders, m, prompts, seeds, max_new_tokens, batch_size, progress=bar, stats=stats)
    data = {"method": asdict(m), "seconds": time.time() - t0, **stats, "continuations": gens}
    if cache is not None:
        write_json(_method_file(Path(cache), m), data, indent=None, digest=True)
    return data


def _method_job(args) -> None:
    """One method of a sweep in a worker: ``(decoders, method, prompts, seeds, max_new_tokens,
    batch_size, cache)``; its generations go to the cache."""
    _generate_method(*args)


def diversity(continuations: Sequence[str]) -> dict:
    """``{"Dist-2", "Rep"}`` fractions over a flat list of continuations (NaN Dist-2 when no
    continuation has two words)."""
    try:
        d2 = text_metrics.distinct_n(list(continuations), 2)
    except ValueError:
        d2 = float("nan")
    return {"Dist-2": d2, "Rep": text_metrics.repetition_ratio(list(continuations))}


def flatten(continuations: Sequence[Sequence[str]]) -> list[str]:
    return [c for per_prompt in continuations for c in per_prompt]


def score_sweep(
    methods: Sequence[Method],
    generations: dict,
    scorer: Callable[[Sequence[Sequence[str]]], dict],
    seconds: Optional[dict] = None,
    top_p: Optional[dict] = None,
) -> pd.DataFrame:
    """One row per method: its settings (dist, threshold, value, T, curve, label, role) and the
    scorer's measures (fractions, not percentages); with ``seconds`` / ``top_p`` (from :func:`sweep`),
    columns ``seconds`` and ``mean_top_p`` (REAL's mean threshold; NaN for the other settings)."""
    rows = []
    for m in methods:
        if m.label not in generations:
            raise KeyError(f"no generations for {m.label!r}; run sweep() with this method first.")
        row = {
            "label": m.label,
            "curve": m.curve,
            "dist": m.dist,
            "threshold": m.threshold,
            "value": m.value,
            "T": m.T,
            "role": m.role,
        }
        row.update(scorer(generations[m.label]))
        if seconds is not None:
            row["seconds"] = seconds.get(m.label, float("nan"))
        if top_p is not None:
            row["mean_top_p"] = top_p.get(m.label, float("nan"))
        rows.append(row)
    return pd.DataFrame(rows)
