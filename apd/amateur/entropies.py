"""THF training labels: every member's next-token entropy at every position of the fine-tuning text.

Collected beside the APD collection (:mod:`apd.amateur.collect`), on the same EOS-joined token
stream, cut into chunks of ``seq_len``. Member-major (each member loaded once): one part file per
member (``member-00.safetensors``, entropies float32 (C, S)), then ``entropies.safetensors``::

    input_ids   uint16/int32 (C, S)     the chunks; position t predicts token t+1
    entropies   float32      (C, N, S)  each member's next-token entropy, full vocabulary, nats

and ``manifest.json`` (members, log sizes, vocabulary, seq_len, corpus fingerprint, tokenizer).
Every file is written atomically with a digest; a rerun resumes from the finished parts.
:func:`entropy_labels` caches it under ``cache/entropy/<key>`` (:func:`entropy_key`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from safetensors.numpy import save_file

from apd.amateur.collect import (
    chunks_fingerprint,
    corpus_chunks,
    load_checked,
    member_logits_on_device,
    token_id_dtype,
)
from apd.amateur.runs import hash_key, member_identity
from apd.base import paths
from apd.base.device import cpu_threads
from apd.base.io import atomic_write, check_file, read_json_checked, remove_stale_tmp, write_json
from apd.base.lock import file_lock
from apd.base.progress import progress_bar
from apd.core.entropy import entropy_from_logits
from apd.family.text import token_stream

FORMAT = "apd-entropy/1"
MANIFEST = "manifest.json"
LABELS = "entropies.safetensors"


@dataclass
class EntropyLabels:
    """Entropy labels in memory: input_ids int64 (C, S), entropies float32 (C, N, S) nats,
    log_sizes (N,) (ln non-embedding size, ALM first), member_names (N,), folder."""

    input_ids: np.ndarray
    entropies: np.ndarray
    log_sizes: np.ndarray
    member_names: list
    folder: Optional[Path] = None

    def __len__(self) -> int:
        return self.input_ids.shape[0]


def _save(arrays: dict, path: Path) -> None:
    atomic_write(
        path, lambda tmp: save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(tmp)), digest=True
    )


def collect_entropies(
    family,
    token_ids,
    out_dir,
    seq_len: int = 128,
    *,
    batch_size: int = 8,
    progress: bool = True,
    threads: Optional[int] = 1,
) -> dict:
    """Each member's next-token entropy (nats, full vocabulary) at every position; returns the manifest.

    family: an ``apd.family.loading.Family`` (or anything :func:`apd.amateur.collect.collect_probabilities` takes as one);
    token_ids: 1-D token stream (cut into ``seq_len`` chunks, the last partial one dropped) or
    (C, seq_len); out_dir: the folder (a rerun resumes; another corpus or family there is an error).
    threads: torch CPU threads meanwhile (small members run faster on one uncontended thread; None:
    leave torch's setting).
    """
    with cpu_threads(threads):
        return _collect_entropies(family, token_ids, out_dir, int(seq_len), batch_size, progress)


def _collect_entropies(family, token_ids, out_dir, seq_len, batch_size, progress) -> dict:
    names = list(family.names)
    log_sizes = [float(x) for x in family.log_sizes]
    V = int(family.vocab_size)
    chunks, dropped = corpus_chunks(token_ids, int(seq_len), V)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_tmp(out)
    identity = {
        "format": FORMAT,
        "members": names,
        "log_sizes": log_sizes,
        "vocab_size": V,
        "seq_len": int(seq_len),
        "corpus": {
            "n_chunks": int(chunks.shape[0]),
            "dropped_tail_tokens": int(dropped),
            "sha256_16": chunks_fingerprint(chunks),
        },
    }
    manifest = read_json_checked(out / MANIFEST, "entropy-label manifest", "collecting again")
    if manifest is not None:
        diff = [k for k in identity if manifest.get(k) != json.loads(json.dumps(identity[k]))]
        if diff:
            raise ValueError(
                f"{out} holds entropy labels made with a different {', '.join(diff)}; pass another "
                "out_dir or delete that folder."
            )
        if manifest.get("complete") and check_file(out / LABELS, "entropy labels", "collecting again"):
            return manifest
    tokenizer = getattr(family, "tokenizer", None)
    manifest = dict(identity, tokenizer=getattr(tokenizer, "name_or_path", None), complete=False)
    write_json(out / MANIFEST, manifest, indent=1)
    parts = []
    bar = progress_bar(total=len(names), progress=progress, desc="entropy labels", unit="member")
    for m, name in enumerate(names):
        part = out / f"member-{m:02d}.safetensors"
        got = load_checked(part, "entropy-label part")
        if got is None:
            rows = []
            with member_logits_on_device(family, name, V) as member_logits, torch.no_grad():
                for b in range(0, chunks.shape[0], batch_size):
                    rows.append(entropy_from_logits(member_logits(chunks[b : b + batch_size])).cpu().numpy())
            got = {"entropies": np.concatenate(rows).astype(np.float32)}
            _save(got, part)
        parts.append(got["entropies"])
        bar.update(1)
    bar.close()
    _save({"input_ids": chunks.astype(token_id_dtype(V)), "entropies": np.stack(parts, axis=1)}, out / LABELS)
    manifest["complete"] = True
    manifest["n_positions"] = int(chunks.size)
    write_json(out / MANIFEST, manifest, indent=1)
    for m in range(len(names)):
        part = out / f"member-{m:02d}.safetensors"
        part.unlink(missing_ok=True)
        part.with_name(part.name + ".sha256").unlink(missing_ok=True)
    return manifest


def entropy_key(members, log_sizes, ids: bytes, seq_len: int) -> str:
    """The cache key of entropy labels: ``members`` as (name, :func:`apd.amateur.runs.member_identity`)
    pairs, their log sizes, the token stream and the chunk length (nothing about where files live)."""
    return hash_key("entropy-v1", [list(m) for m in members], [float(x) for x in log_sizes], ids, int(seq_len))


def _ready(out: Path) -> bool:
    manifest = read_json_checked(out / MANIFEST, "entropy-label manifest", "collecting again")
    return bool(manifest and manifest.get("complete")) and check_file(
        out / LABELS, "entropy labels", "collecting again"
    )


def entropy_labels(
    fam,
    texts,
    seq_len: int = 128,
    *,
    cache=None,
    progress: bool = True,
    batch_size: int = 8,
    max_chunks: Optional[int] = None,
) -> Path:
    """Entropy labels of ``fam`` on the documents ``texts`` (EOS-joined, cut into ``seq_len`` chunks,
    the first ``max_chunks`` of them when given), cached under ``cache/entropy/<key>``; returns the
    folder (read it with :func:`load_entropies`)."""
    if not texts:
        raise ValueError("no documents: pass the fine-tuning split, e.g. built.corpus.finetune")
    ids = token_stream(fam.tokenizer, texts)
    if max_chunks is not None:
        ids = ids[: int(max_chunks) * int(seq_len)]
    key = entropy_key(
        [(n, member_identity(fam.locations[n])) for n in fam.names],
        np.asarray(fam.log_sizes).tolist(),
        ids.tobytes(),
        seq_len,
    )
    out = Path(cache or paths.cache_dir()) / "entropy" / key
    if _ready(out):
        return out
    with file_lock(out.parent / f"{key}.lock"):
        if not _ready(out):
            collect_entropies(fam, ids, out, seq_len, batch_size=batch_size, progress=progress)
    return out


def load_entropies(folder) -> EntropyLabels:
    """The labels of an :func:`entropy_labels` / :func:`collect_entropies` folder."""
    folder = Path(folder)
    manifest = read_json_checked(folder / MANIFEST, "entropy-label manifest", "stopping")
    if not manifest or not manifest.get("complete") or manifest.get("format") != FORMAT:
        raise FileNotFoundError(
            f"no finished entropy labels in {folder}: run apd.amateur.entropies.entropy_labels(fam, texts)."
        )
    arrays = load_checked(folder / LABELS, "entropy labels")
    if arrays is None:
        raise ValueError(f"the entropy labels in {folder} were damaged and set aside; run entropy_labels again.")
    return EntropyLabels(
        input_ids=arrays["input_ids"].astype(np.int64),
        entropies=arrays["entropies"],
        log_sizes=np.asarray(manifest["log_sizes"]),
        member_names=list(manifest["members"]),
        folder=folder,
    )
