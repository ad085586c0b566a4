"""Cached collection and ALM' training runs, keyed by the configuration that produced them.

``collect_family``: ``cache/collected/<key>`` (key: member locations and sizes, token stream,
collection config). ``train_apd``: ``cache/apd/<key>`` (key: collection and training config).
``train_config``/``collect_config``: the configurations of a family's :class:`apd.family.settings.Settings`.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
import torch

from apd.amateur import collect, distill
from apd.amateur.config import APDTrainConfig
from apd.amateur.data import collected_chunks
from apd.amateur.train import LOG_WHAT, log_intact, train_alm_prime
from apd.base import paths
from apd.base.device import resolve_device
from apd.base.io import check_folder, file_sha256, read_json_checked, recorded_digest
from apd.base.jobs import in_worker_job, job_count, run_jobs
from apd.base.lock import file_lock
from apd.base.progress import progress_note
from apd.family.loading import Family
from apd.family.settings import Settings, train_family
from apd.family.text import token_stream
from apd.world import corpus


def hash_key(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode() if not isinstance(p, bytes) else p)
    return h.hexdigest()[:12]


def collect_family(
    family, texts, config: collect.CollectConfig | None = None, cache=None, progress: bool = True, batch_size: int = 8
) -> Path:
    """Collect ``family`` on the documents ``texts`` (joined by EOS, cut into chunks of
    ``config.seq_len``); returns the collection folder (``apd.amateur.collect`` format). ``batch_size``:
    chunks per forward pass (not part of the cache key)."""

    if not texts:
        raise ValueError("no documents to collect on: pass the fine-tuning split, e.g. built.corpus.finetune")
    config = config or collect.CollectConfig(seq_len=128, chunks_per_shard=64)
    ids = token_stream(family.tokenizer, texts)
    key = collection_key(
        [(n, member_identity(family.locations[n])) for n in family.names],
        np.asarray(family.log_sizes).tolist(),
        ids.tobytes(),
        asdict(config),
    )
    out = Path(cache or paths.cache_dir()) / "collected" / key
    if _collection_ready(out):
        return out
    with file_lock(out.parent / f"{key}.lock"):
        if not _collection_ready(out):
            progress_note(
                f"collecting what the family's {len(family.names)} members predict on {len(texts):,} documents",
                out,
                progress=progress,
            )
            side = _side_by_side(family, ids, out, config, batch_size)
            collect.collect_probabilities(
                family, ids, out, config, batch_size=batch_size, progress=progress, side_by_side=side
            )
    return out


def _side_by_side(family, ids, out: Path, config, batch_size: int):
    """With more than one job (:func:`apd.base.jobs.job_count`), a family that a worker can load
    again (an ``apd.family.loading.Family``), and not already inside a worker's job, a function
    collecting members' parts in worker processes, one thread each (:func:`apd.base.jobs.run_jobs`);
    else None (one after another, here)."""
    if job_count() < 2 or not isinstance(family, Family) or in_worker_job():
        return None

    def side_by_side(members: list[int]) -> None:
        items = [(family, ids, out, config, batch_size, m) for m in members]
        run_jobs(_collect_part_job, items, names=[f"collect {family.names[m]}" for m in members])

    return side_by_side


def _collect_part_job(args) -> None:
    """One member's parts of a collection, in a worker (:func:`apd.amateur.collect.collect_member_parts`)."""
    family, ids, out, config, batch_size, m = args
    collect.collect_member_parts(family, ids, out, config, m, batch_size=batch_size)


def collection_key(members, log_sizes, ids: bytes, config: dict) -> str:
    """The cache key of a collection: ``members`` as (name, :func:`member_identity`) pairs, their log
    sizes, the token stream and the collection config. Nothing in it depends on where the cache or
    the members' folders live, so a moved cache is found again."""
    return hash_key("collection-v2", [list(m) for m in members], log_sizes, ids, config)


def member_identity(location) -> str:
    """What identifies a member's weights wherever they live: a Hub id as it is; for a local folder
    a digest of its weight files (the digests recorded when the member was saved, when there are
    any; otherwise hashed once per process)."""
    folder = Path(str(location)).expanduser()
    if not folder.is_dir():
        return str(location)
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".safetensors", ".bin", ".pt"))
    if not files:
        raise FileNotFoundError(f"no weight files (*.safetensors, *.bin) in the member folder {folder}.")
    listing = [[p.name, recorded_digest(p) or file_sha256(p)] for p in files]
    return "sha256:" + hashlib.sha256(json.dumps(listing).encode()).hexdigest()[:16]


def _collection_ready(out: Path) -> bool:
    """True if ``out`` holds a complete collection whose shards are intact (damaged ones are set aside)."""
    manifest = read_json_checked(out / collect.MANIFEST, "collection manifest", "collecting again")
    if not manifest or not manifest.get("complete"):
        return False
    intact = [collect.shard_intact(out / s["file"]) for s in manifest.get("shards", [])]
    return all(intact)


def train_dir(collect_dir, config: APDTrainConfig, cache=None) -> Path:
    """The folder where :func:`train_apd` trains ``config`` on ``collect_dir`` (it may not exist yet)."""
    parts = [*collect.collection_identity(collect_dir), config.to_dict()]
    if config.objective == "distill":  # only then: the keys of the paper's runs stay as they were
        parts.append(distill.DISTILL_FIT)
    key = hash_key(*parts)
    return Path(cache or paths.cache_dir()) / "apd" / key


def _finished(out: Path) -> Optional[Path]:
    """``out/alm_prime`` if the run there is done and intact; a damaged ALM', run record or training
    log (its reported losses and seconds come from it) is set aside (then the run trains again)."""
    meta = read_json_checked(out / "train_config.json", "ALM' run record", "training ALM' again")
    if meta is None or meta.get("status") != "done":
        return None
    if check_folder(out / "alm_prime", "ALM' model", "training ALM' again", backfill=True) and log_intact(out, meta):
        return out / "alm_prime"
    return None


def trained(collect_dir, config: APDTrainConfig, cache=None) -> Optional[Path]:
    """The ``alm_prime`` folder of a finished, intact run of ``config`` on ``collect_dir``, else None."""
    return _finished(train_dir(collect_dir, config, cache))


def train_apd(family, collect_dir, config: APDTrainConfig, cache=None, progress: bool = True, heldout=None) -> Path:
    """Train ALM' from ``family``'s ALM on a collection folder; returns the ``alm_prime`` folder.
    A finished run is returned without reading the data. ``heldout``: ``(collection folder, n)``,
    whose first ``n`` chunks the run reads its objective on as it trains
    (:func:`apd.amateur.train.read_heldout_log`)."""
    manifest = collect.read_manifest(collect_dir)
    if not manifest.get("complete"):
        raise ValueError(f"{collect_dir} is an unfinished collection; run pipeline.collect_family again to finish it")
    out = train_dir(collect_dir, config, cache)
    done = _finished(out)
    if done is not None:
        return done
    with file_lock(out.parent / f"{out.name}.lock"):
        done = _finished(out)  # another process may have finished it while we waited
        if done is not None:
            return done
        lambda3 = "" if config.lambda3 is None else f", lambda3 = {config.lambda3:g}"
        progress_note(
            f"training ALM' from {family.alm} ({config.objective} objective{lambda3})", out, progress=progress
        )
        data = collected_chunks(collect_dir)
        if config.objective == "distill":  # the fitter's targets, cached beside the collection
            n = max(1, int(round(config.data_fraction * len(data.records))))
            data.records = distill.WithTargets(
                data.records, distill.collection_targets(collect_dir, config.members, n, cache=cache)
            )
        held = None
        if heldout is not None:
            held = collected_chunks(heldout[0])
            held.records = held.records[: int(heldout[1])]
        return train_alm_prime(
            config,
            family.locations[family.alm],
            data,
            out,
            tokenizer=family.tokenizer,
            progress=progress,
            heldout=held,
        )


@dataclass(frozen=True)
class _Trainer:
    """What :func:`train_apd` reads of a family, small enough to send to a worker."""

    locations: dict
    alm: str
    tokenizer: object


def train_side_by_side(family, collect_dir, configs, cache=None, names=None, heldout=None) -> list[Optional[float]]:
    """Train the runs of ``configs`` on ``collect_dir`` that are not cached yet, side by side
    (:func:`apd.base.jobs.run_jobs`, one worker per run, each trained as it would be alone); then
    :func:`train_apd` finds each of them done. Returns each config's wall seconds in its worker (None
    where nothing was trained). Does nothing with one job or fewer than two runs to train.

    Example:
        >>> train_side_by_side(fam, collect_dir, [cfg_a, cfg_b])     # doctest: +SKIP
    """
    configs = list(configs)
    names = [f"ALM' {i}" for i in range(len(configs))] if names is None else list(names)
    todo = [i for i, c in enumerate(configs) if trained(collect_dir, c, cache) is None]
    seconds: list[Optional[float]] = [None] * len(configs)
    if len(todo) < 2 or job_count() < 2:
        return seconds
    trainer = _Trainer({family.alm: family.locations[family.alm]}, family.alm, family.tokenizer)
    walls = run_jobs(
        _train_job, [(trainer, collect_dir, configs[i], cache, heldout) for i in todo], names=[names[i] for i in todo]
    )
    for i, wall in zip(todo, walls):
        seconds[i] = wall
    return seconds


def _train_job(args) -> float:
    """One ALM' run in a worker: ``(trainer, collect_dir, config, cache, heldout)`` -> its wall seconds."""
    trainer, collect_dir, config, cache, heldout = args
    t0 = time.time()
    train_apd(trainer, collect_dir, config, cache=cache, progress=False, heldout=heldout)
    return time.time() - t0


def variant(config: APDTrainConfig, **changes) -> APDTrainConfig:
    """A copy of ``config`` with some fields changed (for ablations)."""
    return replace(config, **changes)


def load_alm_prime(path, device=None, dtype=None, *, trained_elsewhere: bool = False):
    """ALM' in eval mode on ``device`` (default: CUDA if available, else the CPU), from its folder or
    from an :class:`apd.amateur.pipeline.APDResult`.

    The folder must be one that ALM' training wrote (it holds ``apd_train_config.json``): a plain
    member's folder is refused, since "APD" with the untouched ALM is CD. ``trained_elsewhere=True``
    accepts a ``save_pretrained`` folder of an ALM' trained outside this package (e.g. the release's).

    Example:
        >>> result = apd.apd_model(fam, built, scale="smoke")      # doctest: +SKIP
        >>> alm_prime = apd.load_alm_prime(result)                  # doctest: +SKIP
    """
    from transformers import AutoModelForCausalLM

    path = Path(getattr(path, "alm_prime_path", path))
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"no ALM' in {path} (no config.json): train it with apd.apd_model(fam, built).")
    if not trained_elsewhere and not (path / "apd_train_config.json").is_file():
        what = "a family member's folder" if (path / "training.json").is_file() else "not a folder ALM' training wrote"
        raise ValueError(
            f"{path} is {what} (it has no apd_train_config.json), not ALM': APD with an untouched "
            "member is CD. Pass the folder apd.apd_model returns (result.alm_prime_path), or, for an "
            "ALM' trained outside apd, load_alm_prime(path, trained_elsewhere=True)."
        )
    if not check_folder(path, "ALM' model", "stopping"):
        raise ValueError(
            f"the ALM' in {path} was damaged (its files no longer match the digests recorded when it "
            "was saved) and has been set aside; run apd.apd_model(fam, built) again to retrain it."
        )
    device = resolve_device(device)
    model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=dtype or torch.float32)
    return model.to(device).eval()


def family_name(fam) -> str:
    """'pico', 'pythia', 'opt' or 'qwen' (:func:`apd.family.settings.train_family`) for a loaded family."""
    spec = getattr(fam, "spec", None)
    if getattr(spec, "name", None) is None:
        raise TypeError(f"expected an apd.family.loading.Family (from pico.get_family), got {type(fam).__name__}.")
    return train_family(spec)


def train_config(settings: Settings, lambda3: Optional[float] = None) -> APDTrainConfig:
    """The ALM' training configuration of the release configuration (``settings.alm_train``) with
    ``lambda3`` (None: ``settings.lambda3``, the paper's value, or None for pico until tuned).

    pico: lr 1e-3, 10x the paper's 1e-4 and a quarter to a third of the members' own pretraining
    peak (4e-3 default, 3e-3 smoke): a pico run has ten optimizer steps (smoke) to ~160 (default), not the
    paper's ~20,000, and at 1e-4 ALM' hardly moves in that many (on the smoke family, even at 1e-3
    L3 reached only 0.05 after 20 steps with lambda3 = 1). Batches of 8 chunks (the paper: 64)
    to get more steps from the same data; one epoch (default: ~160 steps over all ~1,270 chunks;
    smoke: half of the chunks), warm-up over 10% of the steps (the runs behind these choices: design
    notes, "ALM' training cost"). The curve x stays the raw log size (the release's); the
    micro-batch is fixed (8 chunks) so that CPU and GPU runs of the same configuration share a
    fingerprint.
    Hub families: the paper's lr 1e-4 and 5 epochs, batches of 16 chunks of 128 tokens (our corpus
    has only ~50 k tokens, see the module docstring).

    Example:
        >>> from apd.family.settings import settings_for
        >>> train_config(settings_for("pythia", "default")).lambda3_value
        0.8
        >>> train_config(settings_for("pico", "smoke"), lambda3=0.6).lr
        0.001
    """
    lambda3 = settings.lambda3 if lambda3 is None else lambda3
    return APDTrainConfig(
        family=settings.family, lambda3=None if lambda3 is None else float(lambda3), **settings.alm_train
    )


def collect_config(settings: Settings, built=None) -> collect.CollectConfig:
    """Token sets as the release (top 20 + 5 from ranks 20-100 + 5 (10 for OPT) from the rest);
    chunks as long as the pico members' training windows (pico, ``built``) or 128 tokens (Hub families)."""
    seq_len = int(built.pico_config.seq_len) if built is not None else 128
    return collect.CollectConfig(seq_len=seq_len, chunks_per_shard=64, n_tail=10 if settings.family == "opt" else 5)


def finetune_texts(fam, built=None, leave_out=()) -> list[str]:
    """The documents ALM' is trained on: pico's fine-tuning split, or a Hub family's Wikipedia leads.

    leave_out: names of world people whose documents (biographies, QA documents) are dropped from
    pico's split, e.g. the test people of :func:`apd.world.truth.dev_test_people`, so that ALM' never reads
    a biography of the people it is scored on.

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> world = built.corpus.world
        >>> test = [n for n, side in apd.world.truth.dev_test_people(world).items() if side == "test"]
        >>> kept = finetune_texts(fam, built, leave_out=test)
        >>> len(kept) < len(finetune_texts(fam, built)), any(test[0] in d for d in kept)
        (True, False)
    """
    leave_out = [leave_out] if isinstance(leave_out, str) else list(leave_out)
    if leave_out and built is None:
        raise ValueError(
            "leave_out names people of the synthetic world, but a Hub family's fine-tuning text (Wikipedia "
            "leads) has none; pass leave_out=() for a Hub family."
        )
    if built is not None:
        if not leave_out:
            return list(built.corpus.finetune)
        world = built.corpus.world
        names = {world.person(n).name for n in leave_out}  # KeyError names an unknown person
        drop = {text for person, text, _ in world.documents_with_facts("finetune") if person in names}
        return [d for d in built.corpus.finetune if d not in drop]

    corp = corpus.build_corpus(corpus.CorpusConfig())
    return [d for d, s in zip(corp.finetune, corp.sources["finetune"]) if s == "wiki"]


def read_train_log(run_dir) -> pd.DataFrame:
    """The ``train_log.jsonl`` of a training folder as a DataFrame, one row per step in step order
    (a step logged twice, e.g. by two processes that trained the same run before runs were locked,
    keeps its last line; a deterministic run logs the same values both times).

    The log of a finished run is checked against the digest recorded when it finished
    (:func:`apd.amateur.train.log_intact`): a damaged one is set aside and a ValueError names it, and
    the next :func:`apd.apd_model` trains the run again. Only a run still training (or stopped) may
    end in a line cut short, which is dropped with a warning."""
    path = Path(run_dir) / "train_log.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"no training log at {path}; train ALM' first (pipeline.apd_model).")
    meta = read_json_checked(path.parent / "train_config.json", "ALM' run record", "training ALM' again")
    if meta is not None and meta.get("status") == "done":
        if not log_intact(path.parent, meta, "training the run again on the next apd.apd_model"):
            raise ValueError(
                f"the {LOG_WHAT} {path} of a finished run is damaged and was moved aside; run "
                "apd.apd_model(fam, built) again to train that run again (its numbers come from the log)."
            )
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    rows = []
    for i, line in enumerate(lines):
        try:
            rows.append(json.loads(line))
        except ValueError:
            if i < len(lines) - 1:
                raise ValueError(
                    f"{path}, line {i + 1} is not JSON (damaged log); delete the folder "
                    f"{path.parent} to train the run again."
                ) from None
            warnings.warn(
                f"apd: the last line of {path} is truncated (a run stopped while writing it); ignoring it.",
                stacklevel=2,
            )
    df = pd.DataFrame(rows)
    return df.drop_duplicates("step", keep="last").sort_values("step").reset_index(drop=True)


def run_record(alm_prime) -> dict:
    """What a finished ALM' run did, read from its folder (so also known when it came from the cache):
    ``steps`` (optimizer steps), ``mlp_warmup_steps`` (of them, the curve MLP's alone, ALM' frozen),
    ``joint_steps``, ``n_chunks``, ``batch_size``, ``epochs`` and ``train_seconds`` (the training
    loop's wall time as logged, NaN without a log). ``alm_prime``: its folder or an
    :class:`apd.amateur.pipeline.APDResult`.

    Example:
        >>> r = run_record(apd.apd_model(fam, built, scale="smoke"))          # doctest: +SKIP
        >>> r["steps"] == r["mlp_warmup_steps"] + r["joint_steps"]            # doctest: +SKIP
        True
    """
    out = Path(getattr(alm_prime, "alm_prime_path", alm_prime)).parent
    meta = read_json_checked(out / "train_config.json", "ALM' run record", "stopping")
    if meta is None:
        raise FileNotFoundError(f"no run record in {out}; train ALM' first (apd.apd_model).")
    cfg = meta.get("config", {})
    steps, warm = int(meta.get("total_steps", 0)), int(cfg.get("mlp_warmup_steps", 0))
    try:
        seconds = float(read_train_log(out)["seconds"].iloc[-1])
    except (FileNotFoundError, KeyError, IndexError):
        seconds = float("nan")
    return {
        "steps": steps,
        "mlp_warmup_steps": warm,
        "joint_steps": steps - warm,
        "n_chunks": int(meta.get("data", {}).get("n_chunks", 0)),
        "batch_size": int(cfg.get("batch_size", 0)),
        "epochs": int(cfg.get("epochs", 0)),
        "train_seconds": seconds,
    }
