"""Collected chunks as a torch dataset, and the batches ALM' trains on.

Records as :mod:`apd.amateur.collect` writes them: ``input_ids`` (S,), ``token_ids`` (S, K),
``member_logprobs`` (N, S, K), ``alm_logits`` / ``elm_logits`` (S, K).
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np
import torch

from apd.amateur import collect

RECORD_KEYS = ("input_ids", "token_ids", "member_logprobs", "alm_logits", "elm_logits")


def _tensor(x, dtype=None) -> torch.Tensor:
    t = x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
    return t.to(dtype) if dtype is not None else t


class CollectedChunks(torch.utils.data.Dataset):
    """A map-style dataset over collected records (see the module docstring for their schema).

    ``records``: a sequence (``len`` + indexing; read lazily, e.g. a shard reader over memory-mapped
    files) or any iterable of dict records (read into memory once). Values may be numpy arrays or
    tensors. ``log_sizes``/``member_names`` are taken from the arguments, else from attributes of
    ``records``, else from the first record. ``members`` selects a subset (indices or names, must
    include the ALM and the ELM); ``data_fraction`` keeps the first fraction of the chunks.

    Items: ``input_ids`` (S,) int64, ``token_ids`` (S, K) int64, ``member_logprobs`` (N', S, K)
    float32 (selected members), ``alm_logits``/``elm_logits`` (S, K) float32.
    """

    def __init__(self, records, *, log_sizes=None, member_names=None, members=None, data_fraction: float = 1.0):
        if isinstance(records, (str, os.PathLike)):
            raise TypeError(
                f"records must be records (dicts) or a sequence of them, got the path {records!r}; "
                "open the collected shards first (apd.amateur.collect) or use `python -m apd.amateur.train --data`."
            )
        if not (hasattr(records, "__len__") and hasattr(records, "__getitem__")) or isinstance(records, dict):
            if isinstance(records, dict):
                raise TypeError(
                    "records must be a sequence/iterable of per-chunk dict records, got one dict; "
                    "wrap it in a list: [record]."
                )
            records = list(records)
        if len(records) == 0:
            raise ValueError("no collected records: run apd.amateur.collect first (or check the shard path).")
        self.records = records
        first = records[0]
        missing = [k for k in RECORD_KEYS if k not in first]
        if missing:
            raise ValueError(
                f"collected records lack {missing}; each record needs {list(RECORD_KEYS)} "
                "(see apd.amateur.train's module docstring for shapes)."
            )
        log_sizes = log_sizes if log_sizes is not None else getattr(records, "log_sizes", None)
        log_sizes = log_sizes if log_sizes is not None else first.get("log_sizes")
        if log_sizes is None:
            raise ValueError(
                "log_sizes (natural logs of the members' non-embedding parameter counts) are "
                "neither in the records nor given; pass log_sizes=[...]."
            )
        all_x = np.asarray(_tensor(log_sizes, torch.float64).cpu().numpy(), dtype=np.float64).reshape(-1)
        names = member_names if member_names is not None else getattr(records, "member_names", None)
        names = names if names is not None else first.get("member_names")
        all_names = [str(n) for n in names] if names is not None else [f"member{i}" for i in range(len(all_x))]
        n_all = len(all_x)
        if len(all_names) != n_all:
            raise ValueError(f"{len(all_names)} member names for {n_all} log sizes.")
        if not np.all(np.diff(all_x) > 0):
            raise ValueError(f"log_sizes must increase (members ordered smallest = ALM first, ELM last), got {all_x}.")
        lp = _tensor(first["member_logprobs"])
        if lp.ndim != 3 or lp.shape[0] != n_all:
            raise ValueError(f"member_logprobs must be (N={n_all} members, S, K), got {tuple(lp.shape)}.")
        self.seq_len, self.set_size = int(lp.shape[1]), int(lp.shape[2])
        self.member_index = resolve_members(members, all_names)
        self.log_sizes = torch.tensor(all_x[self.member_index], dtype=torch.float64)
        self.all_log_sizes = all_x
        self.member_names = [all_names[i] for i in self.member_index]
        self.all_member_names = all_names
        if not 0.0 < data_fraction <= 1.0:
            raise ValueError(f"data_fraction must be in (0, 1], got {data_fraction}.")
        self.n = max(1, int(round(data_fraction * len(records))))

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict:
        if not 0 <= i < self.n:
            raise IndexError(i)
        r = self.records[i]
        item = {
            "input_ids": _tensor(r["input_ids"], torch.long),
            "token_ids": _tensor(r["token_ids"], torch.long),
            "member_logprobs": _tensor(r["member_logprobs"])[list(self.member_index)].float(),
            "alm_logits": _tensor(r["alm_logits"]).float(),
            "elm_logits": _tensor(r["elm_logits"]).float(),
        }
        if "targets" in r:  # distillation targets (S, K) probabilities, see apd.amateur.distill
            item["targets"] = _tensor(r["targets"]).float()
        s, k = self.seq_len, self.set_size
        expect = {
            "input_ids": (s,),
            "token_ids": (s, k),
            "member_logprobs": (len(self.member_index), s, k),
            "alm_logits": (s, k),
            "elm_logits": (s, k),
            "targets": (s, k),
        }
        for key, shape in expect.items():
            if key in item and tuple(item[key].shape) != shape:
                raise ValueError(
                    f"record {i}: {key} has shape {tuple(item[key].shape)}, expected {shape} "
                    f"(every chunk must have S={s} positions and K={k} tokens per set)."
                )
        for key in ("member_logprobs", "alm_logits", "elm_logits"):
            if torch.isnan(item[key]).any():
                raise ValueError(f"record {i}: {key} contains NaN; re-collect that shard.")
            item[key] = torch.nan_to_num(item[key], neginf=-1e4)
        return item


def resolve_members(members, names: Sequence[str]) -> list[int]:
    """Indices (sorted) of a member subset given by index or name; it must keep the ALM and the ELM."""
    n = len(names)
    if members is None:
        return list(range(n))
    out = set()
    for m in members:
        if isinstance(m, (int, np.integer)):
            i = int(m) + (n if int(m) < 0 else 0)
            if not 0 <= i < n:
                raise ValueError(f"member index {m} out of range for {n} members {list(names)}.")
        elif m in names:
            i = list(names).index(m)
        else:
            raise ValueError(f"unknown member {m!r}; members are {list(names)} (or indices 0..{n - 1}).")
        out.add(i)
    idx = sorted(out)
    if idx[0] != 0 or idx[-1] != n - 1 or len(idx) < 2:
        raise ValueError(
            f"a member subset must keep the ALM ({names[0]!r}) and the ELM ({names[-1]!r}): ALM' is "
            f"fine-tuned from the ALM and the asymptote uses the ELM's logits; got {[names[i] for i in idx]}."
        )
    return idx


def collate_chunks(items: Sequence[dict]) -> dict:
    """Stack items of :class:`CollectedChunks` into a batch: (B, S), (B, S, K), (B, N, S, K), ..."""
    return {k: torch.stack([it[k] for it in items]) for k in items[0]}


def epoch_order(n: int, seed: int, epoch: int) -> torch.Tensor:
    """The order in which epoch ``epoch`` visits ``n`` chunks (a seeded permutation)."""
    g = torch.Generator().manual_seed(int(seed) * 1_000_003 + int(epoch))
    return torch.randperm(n, generator=g)


def collected_chunks(path) -> CollectedChunks:
    """The records of an ``apd.amateur.collect`` folder, with the members and log sizes of its manifest."""
    manifest = collect.read_manifest(path)
    return CollectedChunks(
        list(collect.iter_records(path)), log_sizes=manifest["log_sizes"], member_names=manifest["members"]
    )
