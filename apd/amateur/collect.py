"""ALM' training data: a family's log-probabilities at a sampled token set, at every corpus position.

A position's token set is the ELM's top ``top_k`` ids in rank order, then ``n_mid`` distinct random
ranks from [top_k, mid_end) and ``n_tail`` from [mid_end, V), each ascending (the release: 20, then
5 from [20, 100), then 5 for Pythia or 10 for OPT; K = 30 ids for Pythia). :func:`collect` writes
``manifest.json`` (members, log sizes, vocabulary, config, seeds, corpus fingerprint, finished
shards) and ``shard-00000.safetensors``, ... to ``out_dir``, resumably; :func:`iter_records` yields
one record per chunk of S = ``seq_len`` positions (N members, smallest = ALM first, ELM last)::

    input_ids        int64   (S,)        the chunk's tokens; position t predicts token t+1
    token_ids        int64   (S, K)      the token set (ELM top-k first, then the random ranks)
    member_logprobs  float16 (N, S, K)   each member's full-vocabulary log-softmax (nats) there
    alm_logits       float16 (S, K)      raw logits of the ALM at token_ids
    elm_logits       float16 (S, K)      raw logits of the ELM at token_ids
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from apd.base.checks import count
from apd.base.io import atomic_write, check_file, read_json_checked, remove_stale_tmp, set_aside, write_json
from apd.base.progress import progress_bar

FORMAT = "apd-collect/1"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class CollectConfig:
    """What decides the collected data (all of it goes into ``config_hash``).

    seq_len: positions per chunk (the release: 1,024). chunks_per_shard: chunks per shard file.
    top_k / n_mid / mid_end / n_tail: the token set (see the module docstring; OPT used n_tail=10).
    seed: seeds the random ranks (with the shard index).
    """

    seq_len: int = 1024
    top_k: int = 20
    n_mid: int = 5
    mid_end: int = 100
    n_tail: int = 5
    chunks_per_shard: int = 64
    seed: int = 0

    def __post_init__(self):
        for name, value in asdict(self).items():  # checked, not converted (they enter config_hash)
            count(f"CollectConfig.{name}", value, 0 if name in ("seed", "n_mid", "n_tail") else 1, strict=True)

    @property
    def k(self) -> int:
        """Token-set size K."""
        return self.top_k + self.n_mid + self.n_tail

    def check(self, vocab_size: int) -> None:
        """ValueError unless the config makes sense for a vocabulary of ``vocab_size`` tokens."""
        if self.n_mid > self.mid_end - self.top_k:
            raise ValueError(
                f"n_mid={self.n_mid} random ranks do not fit in [{self.top_k}, {self.mid_end}); "
                "lower n_mid or raise mid_end."
            )
        if vocab_size < self.mid_end + self.n_tail:
            raise ValueError(
                f"the vocabulary has {vocab_size} tokens, fewer than mid_end + n_tail = "
                f"{self.mid_end + self.n_tail}; lower mid_end/n_tail for this vocabulary."
            )

    def hash(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# Families given as plain model lists
# --------------------------------------------------------------------------------------------


class ModelFamily:
    """A family from plain causal LMs sharing one tokenizer (for lists of models and tests).

    models: HF causal LMs, smallest first. vocab_size: the shared tokenizer vocabulary.
    log_sizes: x-axis values (default ln of each model's non-embedding parameter count: all
    parameters minus input embedding and output unembedding). device: where a member runs
    (default cuda if available); members wait on the CPU and visit it one at a time.
    """

    def __init__(
        self,
        models: Sequence,
        vocab_size: int,
        names: Optional[Sequence[str]] = None,
        log_sizes: Optional[Sequence[float]] = None,
        tokenizer=None,
        device=None,
    ):
        self._models = list(models)
        if len(self._models) < 2:
            raise ValueError("a family needs at least two members (ALM and ELM), smallest first.")
        self.names = tuple(names) if names is not None else tuple(f"member{i}" for i in range(len(self._models)))
        if len(self.names) != len(self._models) or len(set(self.names)) != len(self.names):
            raise ValueError(f"names must be {len(self._models)} distinct strings, got {list(self.names)}.")
        if log_sizes is None:
            log_sizes = [math.log(_nonembedding(m)) for m in self._models]
        self.log_sizes = np.asarray(log_sizes, dtype=np.float64)
        self.vocab_size = int(vocab_size)
        self.tokenizer = tokenizer
        self.device = (
            torch.device(device)
            if device is not None
            else torch.device("cuda" if torch.cuda.is_available() else "cpu")
        )

    def model(self, name: str):
        return self._models[self.names.index(name)].eval()

    @contextlib.contextmanager
    def on_device(self, name: str):
        model = self.model(name)
        home = next(model.parameters()).device
        model.to(self.device)
        try:
            yield model
        finally:
            model.to(home)


def _nonembedding(model) -> int:
    params = {id(p): p for p in model.parameters()}
    n = sum(p.numel() for p in params.values()) - model.get_input_embeddings().weight.numel()
    out = model.get_output_embeddings()
    if out is not None and out.weight is not model.get_input_embeddings().weight:
        n -= out.weight.numel()
    return int(n)


@contextlib.contextmanager
def member_logits_on_device(family, name: str, vocab_size: int):
    """A function ids (B, S) -> float32 logits (B, S, V), with the member kept on its device for
    the whole block (``family.on_device`` when the family has it)."""
    ctx = family.on_device(name) if hasattr(family, "on_device") else contextlib.nullcontext(family.model(name))
    with ctx as model:
        device = next(model.parameters()).device

        @torch.no_grad()
        def logits(ids: np.ndarray) -> torch.Tensor:
            x = torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64)).to(device)
            out = model(input_ids=x).logits[..., :vocab_size].float()
            if out.shape[-1] != vocab_size:
                raise ValueError(
                    f"member {name!r} has {out.shape[-1]} output ids, fewer than the vocabulary's {vocab_size}."
                )
            return out

        yield logits


# --------------------------------------------------------------------------------------------
# Token sets
# --------------------------------------------------------------------------------------------


def draw_ranks(config: CollectConfig, vocab_size: int, n_positions: int, shard_index: int):
    """The random part of the token sets of one shard, from a generator seeded by (seed, shard).

    Returns ``mid_ranks`` int64 (P, n_mid): distinct ranks in [top_k, mid_end), ascending, and
    ``tail_index`` int64 (P, n_tail): distinct indices into the tokens outside the ELM's top
    ``mid_end`` (in token-id order); a uniform index there is a uniform rank in [mid_end, V).
    """
    rng = np.random.default_rng([config.seed, shard_index])
    n_span = config.mid_end - config.top_k
    keys = rng.random((n_positions, n_span))
    mid = np.argpartition(keys, config.n_mid - 1, axis=1)[:, : config.n_mid] if config.n_mid else keys[:, :0]
    mid = np.sort(mid, axis=1) + config.top_k  # n_mid distinct ranks, each subset equally likely
    tail = rng.integers(0, vocab_size - config.mid_end, size=(n_positions, config.n_tail))
    while config.n_tail > 1:  # redraw the rows with a repeated index (rare for real vocabularies)
        s = np.sort(tail, axis=1)
        dup = (s[:, 1:] == s[:, :-1]).any(axis=1)
        if not dup.any():
            break
        tail[dup] = rng.integers(0, vocab_size - config.mid_end, size=(int(dup.sum()), config.n_tail))
    return mid.astype(np.int64), tail.astype(np.int64)


def token_set(
    elm_logits: torch.Tensor, mid_ranks: torch.Tensor, tail_index: torch.Tensor, top_k: int, mid_end: int
) -> torch.Tensor:
    """Token ids (..., K) in descending ELM rank: top ``top_k``, the ``mid_ranks``, then the tail.

    elm_logits (..., V) float; mid_ranks (..., n_mid) ranks in [top_k, mid_end); tail_index
    (..., n_tail) indices into the ids outside the top ``mid_end``, taken in increasing id order.
    """
    top = elm_logits.topk(mid_end, dim=-1).indices  # (..., mid_end), rank order
    head = top[..., :top_k]
    mid = top.gather(-1, mid_ranks)
    excluded = top.sort(dim=-1).values  # ascending ids
    # the j-th id not excluded is j + #{i : excluded_i - i <= j}
    below = excluded - torch.arange(mid_end, device=excluded.device)
    tail = tail_index + torch.searchsorted(below, tail_index, right=True)
    order = elm_logits.gather(-1, tail).argsort(dim=-1, descending=True, stable=True)
    return torch.cat([head, mid, tail.gather(-1, order)], dim=-1)


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def token_id_dtype(vocab_size: int):
    return np.uint16 if vocab_size <= 2**16 else np.int32


def _save_arrays(arrays: dict, path: Path, metadata: Optional[dict] = None) -> None:
    atomic_write(
        path,
        lambda tmp: save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(tmp), metadata=metadata),
        digest=True,
    )


def load_checked(path: Path, what: str) -> Optional[dict]:
    """The arrays of a part or shard file, or None when it is missing or damaged (digest mismatch
    or unreadable, e.g. truncated); a damaged file is set aside so that it is computed again."""
    if not check_file(path, what, "computing it again"):
        return None
    try:
        return load_file(str(path))
    except Exception as err:
        set_aside(path, what, f"unreadable: {type(err).__name__}: {err}", "computing it again")
        return None


def corpus_chunks(token_ids, seq_len: int, vocab_size: int) -> tuple[np.ndarray, int]:
    """(n_chunks, seq_len) view of the corpus and the number of dropped tail tokens."""
    if isinstance(token_ids, torch.Tensor):
        token_ids = token_ids.detach().cpu().numpy()
    arr = np.asarray(token_ids)
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"token_ids must be integer token ids, got dtype {arr.dtype}; tokenize the corpus first.")
    if arr.ndim == 1:
        n = arr.shape[0] // seq_len
        dropped = arr.shape[0] - n * seq_len
        arr = arr[: n * seq_len].reshape(n, seq_len)
    elif arr.ndim == 2:
        if arr.shape[1] != seq_len:
            raise ValueError(
                f"token_ids has chunks of {arr.shape[1]} tokens but seq_len={seq_len}; "
                "pass a 1-D token stream or set CollectConfig(seq_len=...)."
            )
        dropped = 0
    else:
        raise ValueError(f"token_ids must be a 1-D token stream or (n_chunks, seq_len), got shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise ValueError(f"the corpus has fewer than seq_len={seq_len} tokens: nothing to collect.")
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= vocab_size:
        raise ValueError(
            f"token ids must lie in [0, {vocab_size}), got min {lo}, max {hi}; tokenize with the family's tokenizer."
        )
    return arr, dropped


def chunks_fingerprint(chunks: np.ndarray) -> str:
    h = hashlib.sha256()
    for start in range(0, chunks.shape[0], 4096):
        h.update(np.ascontiguousarray(chunks[start : start + 4096], dtype="<i8").tobytes())
    return h.hexdigest()[:16]


def bytes_per_position(n_members: int, k: int = 30, vocab_size: int = 50277) -> dict:
    """Bytes per corpus position of our shards and of the same content as the release stored it.

    ours: ids (input + K) as uint16 (int32 above 65,536 tokens), N*K float16 log-probs, two
    float32 log-normalisers (ALM and ELM raw logits are derived). release: the same content as
    fp32 torch tensors with int64 ids: input id + K ids (int64), N*K fp32 probabilities, 2*K fp32
    raw logits. Safetensors headers (a few hundred bytes per shard) are not counted.
    """
    id_bytes = np.dtype(token_id_dtype(vocab_size)).itemsize
    ours = id_bytes * (1 + k) + 2 * n_members * k + 2 * 4
    release = 8 * (1 + k) + 4 * n_members * k + 2 * 4 * k
    return {"ours": ours, "release": release, "ratio": release / ours}


# --------------------------------------------------------------------------------------------
# Collecting
# --------------------------------------------------------------------------------------------


def collect_probabilities(
    family,
    token_ids,
    out_dir,
    config: CollectConfig = CollectConfig(),
    *,
    batch_size: int = 1,
    progress: bool = True,
    side_by_side: Optional[Callable[[list[int]], None]] = None,
) -> dict:
    """Collect the family's log-probabilities at the token sets of every corpus position.

    family: an ``apd.family.loading.Family``, any object with ``names`` (smallest first), ``log_sizes``,
        ``vocab_size`` and ``model(name)`` (``on_device(name)`` and ``tokenizer`` are used when
        present), or a list of HF causal LMs (smallest first, equal output widths; for padded
        vocabularies pass a :class:`ModelFamily` with the tokenizer's size).
    token_ids: the tokenized corpus, a 1-D stream (cut into ``config.seq_len`` chunks, the last
        partial chunk dropped) or an (n_chunks, seq_len) integer array.
    out_dir: where shards and ``manifest.json`` go. A rerun with the same family, corpus and
        config resumes; anything else there raises ValueError.
    batch_size: chunks per forward pass (memory: batch_size * seq_len * V float32 logits).
    side_by_side: called once the ELM's parts are there with the indices of the other members
        (largest first); it collects their parts (:func:`collect_member_parts`, e.g. in worker
        processes), which this then merges. None: one member after another, here.
    Returns the manifest (a dict; see the module docstring for the files).
    """
    family = _as_family(family)
    names = list(family.names)
    log_sizes = [float(x) for x in family.log_sizes]
    _check_members(names, log_sizes, batch_size)
    V = int(family.vocab_size)
    config.check(V)
    chunks, dropped = corpus_chunks(token_ids, config.seq_len, V)
    n_shards = -(-chunks.shape[0] // config.chunks_per_shard)

    out = Path(out_dir)
    (out / "parts").mkdir(parents=True, exist_ok=True)
    identity = _identity(names, log_sizes, V, config, chunks, dropped, n_shards)
    manifest, done = _open_manifest(out, identity, getattr(family, "tokenizer", None))
    N = len(names)
    order = [N - 1] + list(range(N - 1))  # ELM first: it chooses the token sets
    for step, m in enumerate(order):
        if step == 1 and side_by_side is not None and N > 2:
            side_by_side(list(range(N - 2, -1, -1)))
        finish = step == N - 1
        _collect_member(family, m, step, chunks, out, manifest, done, n_shards, config, batch_size, progress, finish)
    for i in range(n_shards):  # shards whose parts all exist but were not merged yet
        if i not in done:
            _finish_shard(i, out, manifest, names, config)
    return _complete(out, manifest, N, config, V)


def _as_family(family):
    """``family`` itself, or a list of models as a :class:`ModelFamily` (a TypeError for anything else)."""
    if isinstance(family, (list, tuple)):
        widths = {m.get_output_embeddings().weight.shape[0] for m in family}
        if len(widths) > 1:
            raise ValueError(
                f"the models have {sorted(widths)} output ids (padded embedding matrices): wrap "
                "them as ModelFamily(models, vocab_size=len(tokenizer)) to say which ids are tokens."
            )
        family = ModelFamily(family, vocab_size=widths.pop())
    for attr in ("names", "log_sizes", "vocab_size", "model"):
        if not hasattr(family, attr):
            raise TypeError(
                f"family has no {attr!r}: pass an apd.family.loading.Family, a ModelFamily or a list of models."
            )
    return family


def _check_members(names: list[str], log_sizes: list[float], batch_size: int) -> None:
    if len(names) < 2:
        raise ValueError(f"collect needs at least two members (ALM and ELM), got {names}.")
    if not all(b > a for a, b in zip(log_sizes, log_sizes[1:])):
        raise ValueError(f"members must be ordered smallest first (log sizes strictly increasing), got {log_sizes}.")
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")


def _identity(
    names, log_sizes, V: int, config: CollectConfig, chunks: np.ndarray, dropped: int, n_shards: int
) -> dict:
    """What a collection is made of: a rerun resumes only when all of it is the same."""
    n_chunks = chunks.shape[0]
    return {
        "format": FORMAT,
        "members": names,
        "log_sizes": log_sizes,
        "alm": names[0],
        "elm": names[-1],
        "vocab_size": V,
        "config": asdict(config),
        "config_hash": config.hash(),
        "corpus": {
            "n_chunks": n_chunks,
            "n_positions": n_chunks * config.seq_len,
            "dropped_tail_tokens": dropped,
            "sha256_16": chunks_fingerprint(chunks),
        },
        "n_shards": n_shards,
        "storage": {
            "input_ids": "(chunks, S) " + np.dtype(token_id_dtype(V)).name,
            "token_ids": "(chunks, S, K) " + np.dtype(token_id_dtype(V)).name,
            "member_logprobs": "(chunks, N, S, K) float16",
            "alm_lse": "(chunks, S) float32",
            "elm_lse": "(chunks, S) float32",
            "derived": "alm_logits = member_logprobs[:, 0] + alm_lse; elm_logits = member_logprobs[:, -1] + elm_lse",
        },
    }


def _open_manifest(out: Path, identity: dict, tokenizer) -> tuple[dict, set]:
    """The folder's manifest (a new one, or the one there when its identity matches) and the
    indices of its intact finished shards."""
    manifest_path = out / MANIFEST
    remove_stale_tmp(out)  # files a dead writer was writing (callers hold the folder's lock)
    remove_stale_tmp(out / "parts")
    manifest = read_json_checked(manifest_path, "collection manifest", "collecting again")
    if manifest is not None:
        old = {k: manifest.get(k) for k in identity}
        if old != json.loads(json.dumps(identity)):
            diff = [k for k in identity if old.get(k) != json.loads(json.dumps(identity[k]))]
            raise ValueError(
                f"{out} holds a collection made with a different {', '.join(diff)}; "
                "pass another out_dir (e.g. one named by config_hash) or delete that folder."
            )
    else:
        manifest = dict(identity, tokenizer=getattr(tokenizer, "name_or_path", None), shards=[], complete=False)
        write_json(manifest_path, manifest, indent=1)
    done = {s["index"] for s in manifest["shards"] if shard_intact(out / s["file"])}
    manifest["shards"] = [s for s in manifest["shards"] if s["index"] in done]
    return manifest, done


def _shard_file(out: Path, i: int) -> Path:
    return out / f"shard-{i:05d}.safetensors"


def _part_file(out: Path, i: int, m: int) -> Path:
    return out / "parts" / f"shard-{i:05d}.m{m:02d}.safetensors"


def _collect_member(
    family,
    m: int,
    step: int,
    chunks,
    out: Path,
    manifest: dict,
    done: set,
    n_shards: int,
    config: CollectConfig,
    batch_size: int,
    progress: bool,
    finish: bool,
) -> None:
    """Member ``m``'s part of every shard not done (the ``step``-th member, the ELM first); with
    ``finish`` (the last member's pass) each shard is merged as soon as its part is there."""
    names = list(family.names)
    N, V, C = len(names), int(family.vocab_size), config.chunks_per_shard
    todo = [
        i
        for i in range(n_shards)
        if i not in done and not check_file(_part_file(out, i, m), "collection part", "computing it again")
    ]
    bar = progress_bar(
        total=n_shards,
        initial=n_shards - len(todo),
        progress=progress,
        desc=f"collect {names[m]} ({step + 1}/{N})",
        unit="shard",
    )
    if todo:
        with member_logits_on_device(family, names[m], V) as member_logits:
            for i in todo:
                rows = chunks[i * C : (i + 1) * C]
                part = _shard_part(member_logits, m, N, rows, out, i, config, V, batch_size)
                _save_arrays(part, _part_file(out, i, m))
                if finish:
                    _finish_shard(i, out, manifest, names, config)
                    done.add(i)
                bar.update(1)
    bar.close()


def collect_member_parts(
    family, token_ids, out_dir, config: CollectConfig, m: int, *, batch_size: int = 1, progress: bool = False
) -> None:
    """Member ``m``'s part of every shard that :func:`collect_probabilities` (running now, over the same
    family, corpus and config) has not merged; the ELM's parts must be there. Writes only its own
    part files, so several members can be collected at once in other processes; the numbers are
    those of a one-at-a-time collection (same batches, same code)."""
    family = _as_family(family)
    names = list(family.names)
    if not 0 <= m < len(names) - 1:
        raise ValueError(f"m must index a member below the ELM (0 to {len(names) - 2}), got {m}.")
    chunks, _ = corpus_chunks(token_ids, config.seq_len, int(family.vocab_size))
    n_shards = -(-chunks.shape[0] // config.chunks_per_shard)
    out = Path(out_dir)
    manifest = read_json_checked(out / MANIFEST, "collection manifest", "collecting again")
    if manifest is None:
        raise FileNotFoundError(f"{out} has no collection manifest; collect_probabilities writes it first.")
    done = {s["index"] for s in manifest["shards"]}
    _collect_member(family, m, m + 1, chunks, out, manifest, done, n_shards, config, batch_size, progress, False)


def _shard_part(
    member_logits, m: int, N: int, rows, out: Path, i: int, config: CollectConfig, V: int, batch_size: int
) -> dict:
    """Member ``m``'s arrays for shard ``i``: the ELM chooses the token sets, the others are read there."""
    if m == N - 1:
        return _elm_part(member_logits, rows, config, V, i, batch_size, token_id_dtype(V))
    elm = load_checked(_part_file(out, i, N - 1), "collection part")
    if elm is None:
        raise RuntimeError(
            f"the ELM part of shard {i} ({_part_file(out, i, N - 1)}) was damaged "
            "and set aside; rerun collect to compute it again."
        )
    return _member_part(member_logits, rows, elm["token_ids"], batch_size, keep_lse=(m == 0))


def _complete(out: Path, manifest: dict, N: int, config: CollectConfig, V: int) -> dict:
    """Mark the collection complete with its measured bytes per position; drop the parts folder."""
    manifest["complete"] = True
    positions = sum(s["positions"] for s in manifest["shards"])
    total = sum(s["bytes"] for s in manifest["shards"])
    manifest["bytes_per_position"] = {**bytes_per_position(N, config.k, V), "measured": total / positions}
    write_json(out / MANIFEST, manifest, indent=1)
    with contextlib.suppress(OSError):
        (out / "parts").rmdir()
    return manifest


def _elm_part(member_logits, rows, config, V, shard_index, batch_size, id_dtype) -> dict:
    """The ELM's pass over one shard: token sets, its log-probs there, its log-normaliser."""
    S = config.seq_len
    mid, tail = draw_ranks(config, V, rows.shape[0] * S, shard_index)
    mid = mid.reshape(rows.shape[0], S, -1)
    tail = tail.reshape(rows.shape[0], S, -1)
    ids, lps, lses = [], [], []
    for b in range(0, rows.shape[0], batch_size):
        logits = member_logits(rows[b : b + batch_size])
        dev = logits.device
        tok = token_set(
            logits,
            torch.from_numpy(mid[b : b + batch_size]).to(dev),
            torch.from_numpy(tail[b : b + batch_size]).to(dev),
            config.top_k,
            config.mid_end,
        )
        lse = torch.logsumexp(logits, dim=-1)
        ids.append(tok.cpu().numpy().astype(id_dtype))
        lps.append((logits.gather(-1, tok) - lse[..., None]).half().cpu().numpy())
        lses.append(lse.cpu().numpy())
    return {
        "input_ids": rows.astype(id_dtype),
        "token_ids": np.concatenate(ids),
        "logprobs": np.concatenate(lps),
        "lse": np.concatenate(lses),
    }


def _member_part(member_logits, rows, token_ids, batch_size, keep_lse: bool) -> dict:
    """Another member's pass over one shard: its log-probs at the ELM's token sets."""
    lps, lses = [], []
    for b in range(0, rows.shape[0], batch_size):
        logits = member_logits(rows[b : b + batch_size])
        tok = torch.from_numpy(token_ids[b : b + batch_size].astype(np.int64)).to(logits.device)
        lse = torch.logsumexp(logits, dim=-1)
        lps.append((logits.gather(-1, tok) - lse[..., None]).half().cpu().numpy())
        lses.append(lse.cpu().numpy())
    part = {"logprobs": np.concatenate(lps)}
    if keep_lse:
        part["lse"] = np.concatenate(lses)
    return part


def _finish_shard(i, out, manifest, names, config) -> None:
    """Merge the members' parts of shard i into its shard file; record it in the manifest."""
    N = len(names)
    parts = [_part_file(out, i, m) for m in range(N)]
    missing = [p.name for p in parts if not p.exists()]
    if missing:
        raise RuntimeError(f"shard {i} lacks parts {missing}; rerun collect to compute them.")
    loaded = [load_checked(p, "collection part") for p in parts]
    if any(d is None for d in loaded):
        raise RuntimeError(f"parts of shard {i} in {out} were damaged and set aside; rerun collect to compute them.")
    arrays = {
        "input_ids": loaded[-1]["input_ids"],
        "token_ids": loaded[-1]["token_ids"],
        "member_logprobs": np.stack([d["logprobs"] for d in loaded], axis=1),  # (C, N, S, K)
        "alm_lse": loaded[0]["lse"],
        "elm_lse": loaded[-1]["lse"],
    }
    path = _shard_file(out, i)
    # one metadata key: safetensors writes several in no fixed order, and shards must be byte-identical
    _save_arrays(arrays, path, metadata={"apd": json.dumps({"format": FORMAT, "members": names})})
    first = i * config.chunks_per_shard
    n = arrays["input_ids"].shape[0]
    manifest["shards"] = sorted(
        [s for s in manifest["shards"] if s["index"] != i]
        + [
            {
                "index": i,
                "file": path.name,
                "first_chunk": first,
                "n_chunks": n,
                "positions": n * config.seq_len,
                "bytes": path.stat().st_size,
            }
        ],
        key=lambda s: s["index"],
    )
    write_json(out / MANIFEST, manifest, indent=1)
    for p in parts:
        p.unlink()
        p.with_name(p.name + ".sha256").unlink(missing_ok=True)


def shard_intact(path: Path) -> bool:
    """True if a finished shard file is there and matches its recorded digest (else set aside)."""
    return check_file(path, "collection shard", "collecting it again")


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def collection_identity(collect_dir) -> list:
    """What identifies a collection's content in the keys of everything made from it (ALM' runs,
    lambda3 tuning, distillation targets): its config hash, corpus summary and member names, and its
    folder name, which for collections made by :func:`apd.amateur.runs.collect_family` is the
    collection key (member weight digests included). Member names alone are not enough: a family
    retrained under the same names and text (say, at another learning rate) gives other probabilities.

    Example:
        >>> import json, tempfile
        >>> d = Path(tempfile.mkdtemp()) / "abc123"; d.mkdir()
        >>> _ = (d / MANIFEST).write_text(json.dumps({"format": FORMAT, "config_hash": "h", "corpus": {"n": 1},
        ...                                           "members": ["a", "b"]}))
        >>> collection_identity(d)
        ['h', {'n': 1}, ['a', 'b'], 'abc123']
    """
    manifest = read_manifest(collect_dir)
    return [manifest["config_hash"], manifest["corpus"], manifest["members"], Path(collect_dir).resolve().name]


def read_manifest(collect_dir) -> dict:
    """The manifest of a collection folder (FileNotFoundError if there is none)."""
    path = Path(collect_dir) / MANIFEST
    if not path.exists():
        raise FileNotFoundError(
            f"no {MANIFEST} in {collect_dir}: run apd.amateur.collect.collect_probabilities(family, tokens, "
            f"{str(collect_dir)!r}) first."
        )
    try:
        manifest = json.loads(path.read_text())
    except ValueError as err:
        raise ValueError(
            f"the collection manifest {path} is damaged ({err}); rerun collect_family, which "
            "sets it aside and collects again."
        ) from None
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{path} has format {manifest.get('format')!r}, this reader reads {FORMAT!r}.")
    return manifest


def load_shard(path, as_torch: bool = False) -> dict:
    """One shard file as arrays with a leading chunk axis, in the record schema.

    Returns input_ids int64 (C, S), token_ids int64 (C, S, K), member_logprobs float16
    (C, N, S, K), alm_logits and elm_logits float16 (C, S, K) (derived from the log-probs and the
    stored float32 log-normalisers). numpy arrays, or torch tensors with ``as_torch``.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"shard {path} does not exist; list a collection's shards with read_manifest().")
    if not shard_intact(path):
        raise ValueError(
            f"the collection shard {path} was damaged and has been set aside; rerun collect_family "
            "(or collect) to compute it again."
        )
    try:
        with safe_open(str(path), "np") as f:
            meta = (f.metadata() or {}).get("apd", "{}")
        raw = load_file(str(path))
    except Exception as err:  # truncated, without a recorded digest (an older cache)
        set_aside(path, "collection shard", f"unreadable: {type(err).__name__}", "leaving it for collect")
        raise ValueError(
            f"the collection shard {path} is damaged ({err}); rerun collect_family (or collect) to compute it again."
        ) from None
    if json.loads(meta).get("format") != FORMAT:
        raise ValueError(f"{path} is not an {FORMAT} shard.")
    lp = raw["member_logprobs"]
    rec = {
        "input_ids": raw["input_ids"].astype(np.int64),
        "token_ids": raw["token_ids"].astype(np.int64),
        "member_logprobs": lp,
        "alm_logits": (lp[:, 0].astype(np.float32) + raw["alm_lse"][..., None]).astype(np.float16),
        "elm_logits": (lp[:, -1].astype(np.float32) + raw["elm_lse"][..., None]).astype(np.float16),
    }
    if as_torch:
        rec = {k: torch.from_numpy(v) for k, v in rec.items()}
    return rec


def iter_records(collect_dir, as_torch: bool = False, allow_incomplete: bool = False) -> Iterator[dict]:
    """Yield one record per chunk, shard by shard in corpus order (schema: module docstring).

    Reads one shard at a time. Raises ValueError on an unfinished collection unless
    ``allow_incomplete`` (then only the finished shards are read).
    """
    manifest = read_manifest(collect_dir)
    if not manifest.get("complete") and not allow_incomplete:
        raise ValueError(
            f"the collection in {collect_dir} is unfinished ({len(manifest['shards'])} of "
            f"{manifest['n_shards']} shards): rerun collect to resume it, or pass allow_incomplete=True."
        )
    for s in manifest["shards"]:
        shard = load_shard(Path(collect_dir) / s["file"], as_torch=as_torch)
        for c in range(shard["input_ids"].shape[0]):
            yield {k: v[c] for k, v in shard.items()}
