"""What a collection holds: its token sets by group of ELM ranks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from apd.amateur import collect


def token_set_composition(collect_dir, max_shards: int = 1) -> pd.DataFrame:
    """The token sets of a collection, by group of ELM ranks (from the first ``max_shards`` shards).

    One row per group (the ELM's top ``top_k``; ``n_mid`` random ranks in [top_k, mid_end);
    ``n_tail`` random ranks from mid_end on): tokens per position, the mean ELM probability mass
    of the group (full-vocabulary probabilities), the share of positions whose actual next token is
    in the group, and the share of the group's curves that rise with size (p_ALM < p_ELM after
    renormalising over the set: the curves R(.) flips).
    """
    manifest = collect.read_manifest(collect_dir)
    c = manifest["config"]
    groups = [
        ("top", f"ELM top {c['top_k']}", 0, c["top_k"]),
        ("mid", f"random ranks {c['top_k']}-{c['mid_end']}", c["top_k"], c["top_k"] + c["n_mid"]),
        ("tail", f"random ranks {c['mid_end']}+", c["top_k"] + c["n_mid"], c["top_k"] + c["n_mid"] + c["n_tail"]),
    ]
    mass = {g[0]: [] for g in groups}
    hit = {g[0]: [] for g in groups}
    rising = {g[0]: [] for g in groups}
    for s in manifest["shards"][:max_shards]:
        shard = collect.load_shard(Path(collect_dir) / s["file"])
        lp = shard["member_logprobs"].astype(np.float32)  # (C, N, S, K)
        ids, inp = shard["token_ids"], shard["input_ids"]  # (C, S, K), (C, S)
        p_elm = np.exp(lp[:, -1])  # (C, S, K)
        renorm = np.exp(lp - lp.max(-1, keepdims=True))
        renorm /= renorm.sum(-1, keepdims=True)
        up = renorm[:, 0] < renorm[:, -1]  # (C, S, K)
        nxt = inp[:, 1:]  # the token after position t
        for key, _, lo, hi in groups:
            mass[key].append(p_elm[..., lo:hi].sum(-1).ravel())
            hit[key].append((ids[:, :-1, lo:hi] == nxt[..., None]).any(-1).ravel())
            rising[key].append(up[..., lo:hi].ravel())
    return pd.DataFrame(
        [
            {
                "group": label,
                "tokens per position": hi - lo,
                "ELM probability mass": float(np.concatenate(mass[key]).mean()),
                "share of next tokens": float(np.concatenate(hit[key]).mean()),
                "share of rising curves": float(np.concatenate(rising[key]).mean()),
            }
            for key, label, lo, hi in groups
        ]
    )
