"""APD end to end, cached: collect a family's probabilities on a corpus, then train ALM'.

    from apd import pico, pipeline
    fam, built = pico.get_family("pico", "default")
    data = pipeline.collect_family(fam, built.corpus.finetune)            # cache/collected/<key>/
    alm_prime = pipeline.train_apd(fam, data, APDTrainConfig(family="pico", lambda3=1.0))
    # -> cache/apd/<key>/alm_prime  (save_pretrained; load with AutoModelForCausalLM)

Keys: the collection folder is keyed by the members' locations and sizes, the token stream and the
collection config; the training folder by the collection key and the full training config. Both
steps resume after an interruption (see ``apd.collect`` and ``apd.train``).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from apd import collect, pico
from apd.train import APDTrainConfig, CollectedChunks, train_alm_prime


def _key(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode() if not isinstance(p, bytes) else p)
    return h.hexdigest()[:12]


def collect_family(family, texts, config: collect.CollectConfig | None = None, cache=None,
                   progress: bool = True) -> Path:
    """Collect ``family`` on the documents ``texts`` (joined by EOS, cut into chunks of
    ``config.seq_len``); returns the collection folder (``apd.collect`` format)."""
    from apd.pretrain import token_stream

    if not texts:
        raise ValueError("no documents to collect on: pass the fine-tuning split, e.g. built.corpus.finetune")
    config = config or collect.CollectConfig(seq_len=128, chunks_per_shard=64)
    ids = token_stream(family.tokenizer, texts)
    key = _key([str(family.locations[n]) for n in family.names], np.asarray(family.log_sizes).tolist(),
               ids.tobytes(), asdict(config))
    out = Path(cache or pico.cache_dir()) / "collected" / key
    manifest = out / "manifest.json"
    if manifest.is_file() and json.loads(manifest.read_text()).get("complete"):
        return out
    collect.collect(family, ids, out, config, progress=progress)
    return out


def train_apd(family, collect_dir, config: APDTrainConfig, cache=None, progress: bool = True) -> Path:
    """Train ALM' from ``family``'s ALM on a collection folder; returns the ``alm_prime`` folder."""
    manifest = collect.read_manifest(collect_dir)
    if not manifest.get("complete"):
        raise ValueError(f"{collect_dir} is an unfinished collection; run pipeline.collect_family again to finish it")
    key = _key(manifest["config_hash"], manifest["corpus"], manifest["members"], config.to_dict())
    out = Path(cache or pico.cache_dir()) / "apd" / key
    data = CollectedChunks(list(collect.iter_records(collect_dir)), log_sizes=manifest["log_sizes"],
                           member_names=manifest["members"])
    return train_alm_prime(config, family.locations[family.alm], data, out, tokenizer=family.tokenizer,
                           progress=progress)


def variant(config: APDTrainConfig, **changes) -> APDTrainConfig:
    """A copy of ``config`` with some fields changed (for ablations)."""
    return replace(config, **changes)


def load_alm_prime(path, device=None, dtype=None):
    """ALM' from its folder, in eval mode, on ``device`` (default: cuda if available, else cpu)."""
    import torch
    from transformers import AutoModelForCausalLM

    device = pico.resolve_device(device)
    model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=dtype or torch.float32)
    return model.to(device).eval()
