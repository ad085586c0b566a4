"""APD end to end, cached: collect a family's probabilities on a corpus, then train ALM'.

What every chapter calls::

    from apd import pico, pipeline
    fam, built = pico.get_family("pico", "default")
    result = pipeline.apd_model(fam, built, scale="default")   # collect, tune lambda3, train (all cached)
    alm_prime = pipeline.load(result)                          # ALM', a causal LM in eval mode

:func:`apd_model`:

- collects the family on its fine-tuning text: ``built.corpus.finetune`` for pico (fresh world
  biographies, QA documents of the qa_train people and Wikipedia leads); for Hub families, the
  Wikipedia leads of the fine-tuning split of ``apd.corpus.build_corpus(CorpusConfig())`` (400
  leads, about 0.2 M characters: far less than the release's 270 M tokens of Wikipedia, so a Hub
  ALM' trained here moves much less than the paper's);
- trains ALM' with the per-scale configuration of :func:`train_config`;
- lambda3: the paper's value for Pythia (0.8), OPT (0.4) and Qwen1.5 (1.0); for pico (no published
  value) it is *tuned* as the paper tuned it, on a validation split: one ALM' per value of
  :data:`PICO_LAMBDA3_GRID`, scored on the "dev" half of the world's evaluation people
  (:func:`apd.truth.dev_test_split`) by the mean KL(truth || APD at T = 1) over the ELM's top 20
  (:func:`validation_score`); the lowest wins. Chapters report on the "test" half only.

Caching: the collection folder is keyed by the members' locations and sizes, the token stream and
the collection config (``cache/collected/<key>``); a training folder by the collection key and the
full training config (``cache/apd/<key>``); the tuning result by the collection, the base training
config, the grid and the dev items (``cache/apd/tuning-<key>.json``). A rerun with everything cached
tokenizes the fine-tuning text (for the collection key), reads three small JSON files and returns.
Collection and training resume after an interruption (see ``apd.collect`` and ``apd.train``), and
a file lock next to each artifact makes a second process wait for the first instead of computing
the same thing at the same time.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
import torch

from apd import collect, pico, truth
from apd.train import LAMBDA3, APDTrainConfig, CollectedChunks, train_alm_prime

SCALES = ("smoke", "default")

#: ALM' training of the pico family, per scale (see :func:`train_config` for the reasons).
PICO_TRAIN = {
    "smoke": dict(lr=1e-3, epochs=1, batch_size=8, micro_batch_size=8, warmup_steps=0.1, data_fraction=0.5),
    "default": dict(lr=1e-3, epochs=1, batch_size=8, micro_batch_size=8, warmup_steps=0.1),
}
#: lambda3 values tried for pico (a subset of the paper's grid apd.train.LAMBDA3_GRID, to keep it cheap).
PICO_LAMBDA3_GRID = {"smoke": (0.2, 1.2), "default": (0.2, 0.6, 1.2)}
#: Hub families: the paper's optimiser settings; smaller batches because our corpus is small.
HUB_TRAIN = {
    "smoke": dict(lr=1e-4, epochs=1, batch_size=8, micro_batch_size=8, warmup_steps=0.1),
    "default": dict(lr=1e-4, epochs=5, batch_size=16, micro_batch_size=8, warmup_steps=0.1),
}
TUNING_SCORE = "mean KL(truth || APD 1/T=1) over the ELM top-20, dev people"
_TUNING_VERSION = 1  # bump when the tuning score changes


def _key(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode() if not isinstance(p, bytes) else p)
    return h.hexdigest()[:12]


@contextlib.contextmanager
def _lock(path: Path):
    """An exclusive lock on ``path`` (POSIX ``flock``) while the block runs: two processes asking for
    the same cached artifact (e.g. two chapters at once) compute it once; the second then finds it
    done. A no-op where ``fcntl`` does not exist."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover (Windows)
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=str))
    os.replace(tmp, path)


# ============================================================================ collect and train

def collect_family(family, texts, config: collect.CollectConfig | None = None, cache=None,
                   progress: bool = True, batch_size: int = 8) -> Path:
    """Collect ``family`` on the documents ``texts`` (joined by EOS, cut into chunks of
    ``config.seq_len``); returns the collection folder (``apd.collect`` format). ``batch_size``:
    chunks per forward pass (not part of the cache key)."""
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
    with _lock(out.parent / f"{key}.lock"):
        if not (manifest.is_file() and json.loads(manifest.read_text()).get("complete")):
            collect.collect(family, ids, out, config, batch_size=batch_size, progress=progress)
    return out


def train_dir(collect_dir, config: APDTrainConfig, cache=None) -> Path:
    """The folder where :func:`train_apd` trains ``config`` on ``collect_dir`` (it may not exist yet)."""
    manifest = collect.read_manifest(collect_dir)
    key = _key(manifest["config_hash"], manifest["corpus"], manifest["members"], config.to_dict())
    return Path(cache or pico.cache_dir()) / "apd" / key


def _finished(out: Path) -> Optional[Path]:
    meta = out / "train_config.json"
    if meta.is_file() and (out / "alm_prime").is_dir() and json.loads(meta.read_text()).get("status") == "done":
        return out / "alm_prime"
    return None


def train_apd(family, collect_dir, config: APDTrainConfig, cache=None, progress: bool = True) -> Path:
    """Train ALM' from ``family``'s ALM on a collection folder; returns the ``alm_prime`` folder.
    A finished run is returned without reading the data."""
    manifest = collect.read_manifest(collect_dir)
    if not manifest.get("complete"):
        raise ValueError(f"{collect_dir} is an unfinished collection; run pipeline.collect_family again to finish it")
    out = train_dir(collect_dir, config, cache)
    done = _finished(out)
    if done is not None:
        return done
    with _lock(out.parent / f"{out.name}.lock"):
        done = _finished(out)   # another process may have finished it while we waited
        if done is not None:
            return done
        data = CollectedChunks(list(collect.iter_records(collect_dir)), log_sizes=manifest["log_sizes"],
                               member_names=manifest["members"])
        return train_alm_prime(config, family.locations[family.alm], data, out, tokenizer=family.tokenizer,
                               progress=progress)


def variant(config: APDTrainConfig, **changes) -> APDTrainConfig:
    """A copy of ``config`` with some fields changed (for ablations)."""
    return replace(config, **changes)


def load_alm_prime(path, device=None, dtype=None):
    """ALM' from its folder, in eval mode, on ``device`` (default: cuda if available, else cpu)."""
    from transformers import AutoModelForCausalLM

    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"no ALM' in {path} (no config.json): train it with pipeline.apd_model(fam, built).")
    device = pico.resolve_device(device)
    model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=dtype or torch.float32)
    return model.to(device).eval()


# ============================================================================ configurations

def family_name(fam) -> str:
    """'pico', 'pythia', 'opt' or 'qwen' (the keys of apd.train.LAMBDA3) for a loaded family."""
    spec = getattr(fam, "spec", None)
    name = getattr(spec, "name", None)
    if name is None:
        raise TypeError(f"expected an apd.family.Family (from pico.get_family), got {type(fam).__name__}.")
    return "qwen" if name.startswith("qwen") else name


def _check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; use one of {SCALES} (pass the chapter's pico_scale).")


def train_config(family: str, scale: str = "default", lambda3: Optional[float] = None) -> APDTrainConfig:
    """The ALM' training configuration of a family at a scale.

    pico: lr 1e-3, 10x the paper's 1e-4 and half the members' own pretraining peak (2e-3 default,
    3e-3 smoke): a pico run has ten optimizer steps (smoke) to ~160 (default), not the
    paper's ~20,000, and at 1e-4 ALM' hardly moves in that many (on the smoke family, even at 1e-3
    L3 reached only 0.05 after 20 steps with lambda3 = 1). Batches of 8 chunks (the paper: 64)
    to get more steps from the same data; one epoch (default: ~160 steps over all ~1,270 chunks;
    smoke: half of the chunks), warm-up over 10% of the steps. On an idle 2-core CPU a default run
    took 7 s per 80 steps; on the default family a second epoch or lr 3e-3 changed the dev score
    by under 0.005 nats (noise), and one epoch over all chunks beat half of them (dev KL at 1/T = 1
    2.187 vs 2.203, lambda3 = 0.2). The curve x stays the raw log size (the release's); the
    micro-batch is fixed (8 chunks) so that CPU and GPU runs of the same configuration share a
    fingerprint.
    Hub families: the paper's lr 1e-4 and 5 epochs, batches of 16 chunks of 128 tokens (our corpus
    has only ~50 k tokens, see the module docstring).
    """
    _check_scale(scale)
    if family == "pico":
        fields = PICO_TRAIN[scale]
    elif family in LAMBDA3:
        fields = HUB_TRAIN[scale]
        lambda3 = LAMBDA3[family] if lambda3 is None else lambda3
    else:
        raise ValueError(f"unknown family {family!r}; use 'pico' or one of {sorted(LAMBDA3)}.")
    return APDTrainConfig(family=family, lambda3=None if lambda3 is None else float(lambda3), **fields)


def collect_config(family: str, scale: str = "default", built=None) -> collect.CollectConfig:
    """Token sets as the release (top 20 + 5 from ranks 20-100 + 5 (10 for OPT) from the rest);
    chunks as long as the pico members' training windows (pico) or 128 tokens (Hub families)."""
    _check_scale(scale)
    seq_len = int(built.pico_config.seq_len) if built is not None else 128
    return collect.CollectConfig(seq_len=seq_len, chunks_per_shard=64, n_tail=10 if family == "opt" else 5)


def finetune_texts(fam, built=None) -> list[str]:
    """The documents ALM' is trained on (see the module docstring)."""
    if built is not None:
        return list(built.corpus.finetune)
    from apd import corpus

    corp = corpus.build_corpus(corpus.CorpusConfig())
    return [d for d, s in zip(corp.finetune, corp.sources["finetune"]) if s == "wiki"]


# ============================================================================ the trained ALM'

@dataclass
class APDResult:
    """A trained ALM' and how it was made.

    alm_prime_path: the ``save_pretrained`` folder (also holds ``curve_mlp.pt``); config: its training
    configuration (lambda3 filled in); lambda3: the value used; tuning: one row per tried lambda3
    (None when lambda3 was given or published); collect_dir: the collected training data.
    """

    alm_prime_path: Path
    config: APDTrainConfig
    lambda3: float
    tuning: Optional[pd.DataFrame]
    collect_dir: Path

    @property
    def train_dir(self) -> Path:
        """The training folder (``train_log.jsonl``, ``train_config.json``, ``alm_prime/``)."""
        return self.alm_prime_path.parent

    def train_log(self) -> pd.DataFrame:
        """One row per logged optimizer step: step, epoch, lr, loss, l1, l2, l3, flip_frac, seconds."""
        return read_train_log(self.train_dir)


def read_train_log(run_dir) -> pd.DataFrame:
    """The ``train_log.jsonl`` of a training folder as a DataFrame, one row per step in step order
    (a step logged twice, e.g. by two processes that trained the same run before runs were locked,
    keeps its last line; a deterministic run logs the same values both times)."""
    path = Path(run_dir) / "train_log.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"no training log at {path}; train ALM' first (pipeline.apd_model).")
    df = pd.DataFrame([json.loads(line) for line in path.read_text().splitlines() if line.strip()])
    return df.drop_duplicates("step", keep="last").sort_values("step").reset_index(drop=True)


def apd_model(fam, built=None, *, scale: str = "default", lambda3: Optional[float] = None,
              progress: bool = True, cache=None, seed: int = 0) -> APDResult:
    """Collect, (tune lambda3 and) train ALM' for ``fam``; everything cached (module docstring).

    fam, built: what ``pico.get_family`` returns (built is None for Hub families).
    scale: 'smoke' or 'default' (pass the chapter's ``pico_scale``).
    lambda3: None = the paper's value (Pythia, OPT, Qwen) or tuned on the dev people (pico).
    seed: the dev/test split of the world's people (:func:`apd.truth.dev_test_split`).
    """
    name = family_name(fam)
    _check_scale(scale)
    if name == "pico" and built is None:
        raise ValueError("the pico family needs its build (corpus, world): pass both values of "
                         "pico.get_family('pico', scale), i.e. apd_model(fam, built, scale=...).")
    texts = finetune_texts(fam, built)
    collect_dir = collect_family(fam, texts, collect_config(name, scale, built), cache=cache, progress=progress)
    tuning = None
    if lambda3 is None and name == "pico":
        lambda3, tuning = tune_lambda3(fam, built, collect_dir, train_config(name, scale),
                                       PICO_LAMBDA3_GRID[scale], cache=cache, seed=seed, progress=progress)
    config = train_config(name, scale, lambda3)
    path = train_apd(fam, collect_dir, config, cache=cache, progress=progress)
    return APDResult(alm_prime_path=Path(path), config=config, lambda3=float(config.lambda3_value), tuning=tuning,
                     collect_dir=Path(collect_dir))


def load(result: APDResult, device=None):
    """The ALM' of an :class:`APDResult` (eval mode, on ``device``; default cuda if available)."""
    return load_alm_prime(result.alm_prime_path, device=device)


# ============================================================================ ALM' outputs

@torch.no_grad()
def next_token_log_probs(model, tokenizer, prompts, vocab_size: Optional[int] = None,
                         batch_size: int = 64) -> np.ndarray:
    """Log-probabilities ``(B, V)`` (float32, log-softmax over the first ``vocab_size`` ids, default
    ``len(tokenizer)``) of the token after each prompt, for one causal LM (e.g. ALM'). Prompts are
    left-padded; position ids count from each prompt's first real token, as ``apd.family`` does."""
    from apd.family import left_padded_batches

    V = int(vocab_size or len(tokenizer))
    dev = next(model.parameters()).device
    out = np.zeros((len(prompts), V), dtype=np.float32)
    for s, ids, mask in left_padded_batches(tokenizer, prompts, batch_size):
        ids, mask = ids.to(dev), mask.to(dev)
        logits = model(input_ids=ids, attention_mask=mask,
                       position_ids=(mask.cumsum(-1) - 1).clamp(min=0)).logits[:, -1, :V]
        out[s:s + len(ids)] = torch.log_softmax(logits.float(), -1).cpu().numpy()
    return out


@torch.no_grad()
def sequence_log_probs(model, input_ids, vocab_size: int, batch_size: int = 16) -> np.ndarray:
    """Log-probabilities ``(B, S, V)`` (float32) at every position of unpadded ``input_ids`` ``(B, S)``:
    row ``t`` is the distribution of the token after the first ``t + 1`` tokens."""
    x = torch.as_tensor(np.asarray(input_ids), dtype=torch.long)
    if x.ndim == 1:
        x = x[None]
    dev = next(model.parameters()).device
    out = []
    for s in range(0, x.shape[0], batch_size):
        logits = model(input_ids=x[s:s + batch_size].to(dev)).logits[..., :vocab_size]
        out.append(torch.log_softmax(logits.float(), -1).cpu().numpy())
    return np.concatenate(out)


# ============================================================================ lambda3 on the dev people

def validation_score(elm_logprobs, alm_prime_logprobs, truth_probs, k: int = 20, inv_T: float = 1.0) -> dict:
    """The tuning score of one ALM': mean KL(truth || APD at ``inv_T`` = 1/T = 1) over the ELM's top k
    (lower is better), and the number of items scored (those whose truth has mass on the top k).
    Inputs ``(B, V)``: the ELM's and ALM''s log-probabilities and the true next-token probabilities."""
    ids = truth.topk_ids(elm_logprobs, k)
    q = truth.contrastive_topk(elm_logprobs, alm_prime_logprobs, inv_T, ids)
    kl = truth.kl_to_truth(truth.at(truth_probs, ids), q)
    ok = ~np.isnan(kl)
    if not ok.any():
        raise ValueError("the truth puts no mass on the ELM's top tokens for any dev item: nothing to tune on "
                         "(is the family trained?).")
    return {"score": float(kl[ok].mean()), "n_scored": int(ok.sum()), "n_items": int(len(kl))}


def tune_lambda3(fam, built, collect_dir, base: APDTrainConfig, grid, *, cache=None, seed: int = 0,
                 progress: bool = True) -> tuple[float, pd.DataFrame]:
    """Train one ALM' per lambda3 in ``grid`` and keep the one with the lowest :func:`validation_score`
    on the world QA items of the dev people. Returns (best lambda3, table); the table (one row per
    value: lambda3, score, n_scored, n_items, alm_prime) is cached in ``cache/apd/tuning-<key>.json``,
    with the ELM's and CD's (1/T = 1) scores on the same items in its ``attrs["reference"]``."""
    if not len(grid):
        raise ValueError("the lambda3 grid is empty; pass values such as apd.train.LAMBDA3_GRID.")
    world = built.corpus.world
    dev, _ = truth.dev_test_split(built.corpus.qa_items, world, seed)
    manifest = collect.read_manifest(collect_dir)
    base_fields = {k: v for k, v in base.to_dict().items() if k != "lambda3"}
    key = _key(_TUNING_VERSION, manifest["config_hash"], manifest["corpus"], manifest["members"], base_fields,
               [float(g) for g in grid], [(it.prompt, it.gold) for it in dev])
    path = Path(cache or pico.cache_dir()) / "apd" / f"tuning-{key}.json"
    with _lock(path.with_suffix(".lock")):
        if path.is_file():
            saved = json.loads(path.read_text())
            if all(Path(r["alm_prime"]).is_dir() for r in saved["rows"]):
                return float(saved["best"]), _tuning_frame(saved)
        saved = _tune(fam, world, dev, collect_dir, base, grid, cache, seed, progress)
        _write_json(path, saved)
    return float(saved["best"]), _tuning_frame(saved)


def _tune(fam, world, dev, collect_dir, base, grid, cache, seed, progress) -> dict:
    qa = _dev_scores(fam, world, dev)
    elm = qa.logprobs[-1]
    reference = {"ELM": validation_score(elm, elm, qa.truth, inv_T=0.0)["score"],
                 "CD 1/T=1": validation_score(elm, qa.logprobs[0], qa.truth)["score"]}
    rows = []
    for value in grid:
        config = replace(base, lambda3=float(value))
        alm_prime = train_apd(fam, collect_dir, config, cache=cache, progress=progress)
        model = load_alm_prime(alm_prime, device=fam.device)
        lp = next_token_log_probs(model, fam.tokenizer, [it.prompt for it in dev], fam.vocab_size)
        rows.append({"lambda3": float(value), **validation_score(elm, lp, qa.truth), "alm_prime": str(alm_prime)})
        del model
    best = min(rows, key=lambda r: r["score"])["lambda3"]
    return {"best": best, "score": TUNING_SCORE, "seed": seed, "n_dev_items": len(dev), "rows": rows,
            "reference": reference}


def _dev_scores(fam, world, dev):
    from apd import knowledge

    if not dev:
        raise ValueError("the world has no dev people to tune lambda3 on; use a larger world.")
    return knowledge.score_world_qa(fam, world, dev)


def _tuning_frame(saved: dict) -> pd.DataFrame:
    df = pd.DataFrame(saved["rows"])
    df["chosen"] = np.isclose(df["lambda3"], saved["best"])
    df.attrs["reference"] = dict(saved.get("reference", {}))
    df.attrs["score"] = saved.get("score", TUNING_SCORE)
    return df


# ============================================================================ held-out text positions

def heldout_positions(fam, model, texts, n_positions: int, seq_len: int = 128, seed: int = 0,
                      batch_size: int = 16) -> dict:
    """``apd.probcurves.heldout_positions`` with ``model`` (e.g. ALM') as the amateur: every
    member's ``member_logprobs`` ``(N, P, V)``, ``amateur_logprobs`` ``(P, V)`` and ``next_ids``
    ``(P,)`` at positions of held-out ``texts``."""
    from apd.probcurves import heldout_positions as sample
    return sample(fam, texts, n_positions, seq_len, seed, batch_size, amateur=model)


# ============================================================================ what was collected

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
    groups = [("top", f"ELM top {c['top_k']}", 0, c["top_k"]),
              ("mid", f"random ranks {c['top_k']}-{c['mid_end']}", c["top_k"], c["top_k"] + c["n_mid"]),
              ("tail", f"random ranks {c['mid_end']}+", c["top_k"] + c["n_mid"], c["top_k"] + c["n_mid"] + c["n_tail"])]
    mass = {g[0]: [] for g in groups}
    hit = {g[0]: [] for g in groups}
    rising = {g[0]: [] for g in groups}
    for s in manifest["shards"][:max_shards]:
        shard = collect.load_shard(Path(collect_dir) / s["file"])
        lp = shard["member_logprobs"].astype(np.float32)                  # (C, N, S, K)
        ids, inp = shard["token_ids"], shard["input_ids"]                 # (C, S, K), (C, S)
        p_elm = np.exp(lp[:, -1])                                         # (C, S, K)
        renorm = np.exp(lp - lp.max(-1, keepdims=True))
        renorm /= renorm.sum(-1, keepdims=True)
        up = renorm[:, 0] < renorm[:, -1]                                 # (C, S, K)
        nxt = inp[:, 1:]                                                  # the token after position t
        for key, _, lo, hi in groups:
            mass[key].append(p_elm[..., lo:hi].sum(-1).ravel())
            hit[key].append((ids[:, :-1, lo:hi] == nxt[..., None]).any(-1).ravel())
            rising[key].append(up[..., lo:hi].ravel())
    return pd.DataFrame([{"group": label, "tokens per position": hi - lo,
                          "ELM probability mass": float(np.concatenate(mass[key]).mean()),
                          "share of next tokens": float(np.concatenate(hit[key]).mean()),
                          "share of rising curves": float(np.concatenate(rising[key]).mean())}
                         for key, label, lo, hi in groups])
