"""APD end to end, cached: collect, tune lambda3 (pico), train ALM'; for every variant of
:mod:`apd.amateur.variants`, and the choice of the variant the book uses.

    fam, built = apd.get_family("pico", "default")
    result = apd.apd_model(fam, built, scale="default")                      # the release configuration
    result = apd.apd_model(fam, built, scale="default", variant="engaged")   # the engaged variant
    alm_prime = apd.load_alm_prime(result)

**The engaged variant** (:func:`engaged_variant`): every registered variant is trained (cached) and
assessed (:func:`assess`, cached in its run folder): its mechanism gates (:mod:`apd.amateur.gates`) on
``Settings.gate_chunks`` held-out chunks of the validation text (:func:`gate_collection`), and, where the
family has a world, its dev KL: mean KL(truth || APD) over the ELM's top 20 of every dev person's
world question, at APD's dev-best 1/T of ``Settings.inv_T_grid``. The chosen variant is
the one with every gate passing and the lowest dev KL (ties, and families without a world: the
order of :data:`apd.amateur.variants.VARIANTS`). When no variant engages, the release configuration
is returned with ``engaged=False``. Everything is read from cached artifacts, so every chapter that
asks gets the same variant.

The entry points (:func:`apd_model`, :func:`engaged_variant`, :func:`run_gates`) take a ``scale`` and
build its :class:`apd.family.settings.Settings` once; everything below them receives it.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from apd.amateur.config import APDTrainConfig, check_loss_weight
from apd.amateur.distill import DISTILL_FIT
from apd.amateur.gates import THRESHOLDS, Gates, measure_gates
from apd.amateur.train import read_heldout_log
from apd.amateur.runs import (
    hash_key,
    collect_config,
    collect_family,
    family_name,
    finetune_texts,
    load_alm_prime,
    read_train_log,
    run_record,
    train_apd,
    train_side_by_side,
    trained,
)
from apd.amateur.tuning import TUNING_CODE, dev_scores, best_inv_T_score, scoring_threads, tune_lambda3
from apd.amateur.variants import ENGAGED, RELEASE, VARIANT_NAMES, get_variant, lambda3_grid, variant_config
from apd.base import paths
from apd.base.io import read_json_checked, write_json
from apd.base.jobs import job_count, run_jobs
from apd.base.lock import file_lock
from apd.base.memo import code_digest
from apd.base.progress import progress_note
from apd.core.stats import best_knob
from apd.family.logprobs import next_token_log_probs
from apd.family.select import get_family
from apd.family.settings import Settings, settings_for
from apd.family.text import texts_for_tokens
from apd.world import corpus, truth

_ASSESSMENT_VERSION = 1  # bump when what assess() measures changes


@dataclass
class APDResult:
    """A trained ALM' and how it was made.

    alm_prime_path: the ``save_pretrained`` folder (also holds ``curve_mlp.pt``, except for a distilled
    run); config: its training configuration (lambda3 filled in); lambda3: the value used; tuning: one
    row per tried lambda3 (None when lambda3 was given or published); collect_dir: the collected
    training data; variant: its name in :data:`apd.amateur.variants.VARIANTS`; selection: how it was
    chosen, when it was asked for as ``variant="engaged"`` (:class:`VariantSelection`).

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> result = apd.apd_model(fam, built, scale="smoke", progress=False)
        >>> sorted(result.train_log().columns)[:3]
        ['epoch', 'flip_frac', 'l1']
    """

    alm_prime_path: Path
    config: APDTrainConfig
    lambda3: float
    tuning: Optional[pd.DataFrame]
    collect_dir: Path
    variant: str = RELEASE
    selection: Optional["VariantSelection"] = None

    @property
    def train_dir(self) -> Path:
        """The training folder (``train_log.jsonl``, ``train_config.json``, ``alm_prime/``)."""
        return self.alm_prime_path.parent

    def train_log(self) -> pd.DataFrame:
        """One row per logged optimizer step: step, epoch, lr, loss, l1, l2, l3, flip_frac, seconds."""
        return read_train_log(self.train_dir)

    def heldout_log(self) -> Optional[pd.DataFrame]:
        """The objective on the gates' held-out chunks as the run trained (step, epoch, loss and its
        terms), or None for a run trained before these readings were kept."""
        return read_heldout_log(self.train_dir)


def apd_model(
    fam,
    built=None,
    *,
    scale: str = "default",
    lambda3: Optional[float] = None,
    progress: bool = True,
    cache=None,
    seed: int = 0,
    variant: str = RELEASE,
    leave_out=(),
) -> APDResult:
    """Collect, (tune lambda3 and) train ALM' for ``fam``; everything cached (module docstring).

    fam, built: what ``pico.get_family`` returns (built is None for Hub families).
    scale: a pico scale (pass the chapter's ``pico_scale``); its :func:`apd.family.settings.settings_for`
    is built here once and passed down.
    lambda3: None = the paper's value (Pythia, OPT, Qwen) or tuned on the dev people (pico).
    seed: the dev/test split of the world's people (:func:`apd.world.truth.dev_test_split`).
    variant: ``"release"`` (the release configuration), ``"conditioned"``, ``"distilled"``
    (:data:`apd.amateur.variants.VARIANTS`), or ``"engaged"``: the variant that passes the mechanism
    gates with the best dev KL (:func:`engaged_variant`; ``result.selection`` says how it was chosen
    and ``result.selection.engaged`` is False when none engaged and the release configuration stands in).
    leave_out: names of world people whose documents are dropped from the fine-tuning text
    (:func:`apd.amateur.runs.finetune_texts`); a named variant only.

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> result = apd.apd_model(fam, built, scale="smoke", progress=False)   # cached after the first call
        >>> alm_prime = apd.load_alm_prime(result, device="cpu")
        >>> result.lambda3 in set(result.tuning["lambda3"])   # tuned: its grid, widened where the choice was at an end
        True
        >>> used = apd.apd_model(fam, built, scale="smoke", variant="engaged", progress=False)
        >>> used.variant == used.selection.variant
        True
    """
    settings = settings_for(family_name(fam), scale)
    settings.check_built(built)
    if lambda3 is not None:
        check_loss_weight("lambda3", lambda3)
    return _apd_model(
        fam,
        built,
        settings,
        lambda3=lambda3,
        progress=progress,
        cache=cache,
        seed=seed,
        variant=variant,
        leave_out=leave_out,
    )


def _apd_model(fam, built, settings: Settings, *, lambda3, progress, cache, seed, variant, leave_out) -> APDResult:
    """:func:`apd_model` under ``settings``, its arguments checked."""
    if variant == ENGAGED:
        if leave_out:
            raise ValueError(
                "leave_out trains one ALM' of a named variant; choose the variant first (variant='engaged' "
                "without leave_out) and pass its name, e.g. variant=used.variant, lambda3=used.lambda3."
            )
        if lambda3 is not None:
            raise ValueError(
                "variant='engaged' chooses among the registered variants with their own lambda3; "
                "pass lambda3 only with a named variant, e.g. variant='release'."
            )
        sel = _engaged_variant(fam, built, settings, progress=progress, cache=cache, seed=seed, variants=VARIANT_NAMES)
        return replace(sel.result, selection=sel)
    spec = get_variant(variant)
    if settings.family == "pico" and built is None:
        raise ValueError(
            "the pico family needs its build (corpus, world): pass both values of "
            "pico.get_family('pico', scale), i.e. apd_model(fam, built, scale=...)."
        )
    texts = finetune_texts(fam, built, leave_out)
    collect_dir = collect_family(fam, texts, collect_config(settings, built), cache=cache, progress=progress)
    heldout = (gate_collection(fam, built, settings, cache=cache), settings.gate_chunks)  # read as each run trains
    tuning = None
    if lambda3 is None and settings.family == "pico":
        lambda3, tuning = tune_lambda3(
            fam,
            built,
            collect_dir,
            variant_config(variant, settings, tuning=True),
            lambda3_grid(variant, settings),
            cache=cache,
            seed=seed,
            progress=progress,
            score=spec.score,
            inv_T_grid=settings.inv_T_grid,
            heldout=heldout,
        )
    config = variant_config(variant, settings, lambda3)
    path = train_apd(fam, collect_dir, config, cache=cache, progress=progress, heldout=heldout)
    return APDResult(
        alm_prime_path=Path(path),
        config=config,
        lambda3=float(config.lambda3_value),
        tuning=tuning,
        collect_dir=Path(collect_dir),
        variant=variant,
    )


def gate_collection(fam, built, settings: Settings, *, cache=None, progress: bool = False) -> Path:
    """The held-out chunks the mechanism gates are measured on: the first ``settings.gate_chunks``
    chunks' worth of the validation split (pico), or of its Wikipedia leads (Hub families), collected
    like the training data (cached)."""
    if built is not None:
        texts = list(built.corpus.validation)
    else:
        corp = corpus.build_corpus(corpus.CorpusConfig())
        texts = [d for d, s in zip(corp.validation, corp.sources["validation"]) if s == "wiki"]
    config = collect_config(settings, built)
    texts = texts_for_tokens(fam.tokenizer, texts, settings.gate_chunks * (config.seq_len + 1))
    return collect_family(fam, texts, config, cache=cache, progress=progress)


def run_gates(alm_prime, fam, built=None, *, scale: str = "default", cache=None) -> Gates:
    """:func:`apd.amateur.gates.measure_gates` of the ALM' in ``alm_prime`` (a folder or an
    :class:`APDResult`) on :func:`gate_collection`'s chunks; cached in the run's folder. ``scale``: a
    pico scale, whose :func:`apd.family.settings.settings_for` is built here."""
    settings = settings_for(family_name(fam), scale)
    settings.check_built(built)
    return _run_gates(alm_prime, fam, built, settings, cache)


def _run_gates(alm_prime, fam, built, settings: Settings, cache) -> Gates:
    folder = Path(getattr(alm_prime, "alm_prime_path", alm_prime))
    val_dir = gate_collection(fam, built, settings, cache=cache)
    n = settings.gate_chunks
    key = hash_key("gates-v5", Path(val_dir).name, n, asdict(THRESHOLDS), DISTILL_FIT, _run_identity(folder))
    path = folder.parent / f"gates-{key}.json"
    with file_lock(path.with_suffix(".lock")):
        saved = read_json_checked(path, "mechanism gates", "measuring them again")
        if saved is None:
            with scoring_threads(fam):
                saved = measure_gates(folder, val_dir, max_chunks=n, device=fam.device).to_dict()
            write_json(path, saved, digest=True)
    return Gates.from_dict(saved)


def _run_identity(folder: Path) -> str:
    """The fingerprint recorded with a trained ALM' (its folder name when there is no record)."""
    record = folder / "apd_train_config.json"
    if record.is_file():
        return str(json.loads(record.read_text()).get("fingerprint", folder.parent.name))
    return folder.parent.name


@dataclass
class VariantSelection:
    """Which variant the book uses (:func:`engaged_variant`).

    variant: its name; engaged: whether it passes every mechanism gate (False: no variant does and the
    release configuration stands in); result: its :class:`APDResult`; results: every variant's; table:
    one row per variant (variant, lambda3, the gates' measurements and pass flags, dev_kl at
    dev_inv_T, n_dev_items, chosen, alm_prime).

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> sel = apd.apd_model(fam, built, scale="smoke", variant="engaged", progress=False).selection
        >>> sel.engaged == sel.gates.engaged, int(sel.table["chosen"].sum())
        (True, 1)
    """

    variant: str
    engaged: bool
    result: APDResult
    results: dict
    table: pd.DataFrame

    @property
    def gates(self) -> Gates:
        """The chosen variant's mechanism gates."""
        return self.gates_of(self.variant)

    def gates_of(self, variant: str) -> Gates:
        """One variant's mechanism gates, as measured for this selection."""
        row = self.table.set_index("variant").loc[variant]
        return Gates.from_dict(row.to_dict())

    @property
    def note(self) -> str:
        """The choice in words, e.g. "the distilled variant (it passes every mechanism gate; 2 of 3 variants do)"."""
        n = int(self.table["engaged"].sum())
        if not self.engaged:
            return (
                f"the release configuration, as a stand-in: none of the {len(self.table)} variants passes "
                "every mechanism gate"
            )
        what = "the release configuration" if self.variant == RELEASE else f"the {self.variant} variant"
        return (
            f"{what} (it passes every mechanism gate, {n} of {len(self.table)} variants do, and has the "
            "lowest dev KL among them)"
            if n > 1
            else f"{what} (the only variant that passes every mechanism gate)"
        )


def assess(result: APDResult, fam, built, settings: Settings, *, cache=None, seed: int = 0, dev_qa=None) -> dict:
    """A trained variant's mechanism gates (:func:`run_gates`) and, where the family has a world, its dev
    KL: mean KL(truth || APD) over the ELM's top 20 of every dev person's world question at APD's
    dev-best 1/T of ``settings.inv_T_grid`` (``dev_kl``, ``dev_inv_T``, ``n_dev_items``; None without a
    world). Cached in the run's folder, keyed by the scoring code too (:data:`apd.amateur.tuning.TUNING_CODE`). ``dev_qa``: the dev items' :func:`apd.family.knowledge.score_world_qa`,
    a callable returning it (computed only when needed), or None."""
    gates = _run_gates(result, fam, built, settings, cache)
    row = {
        "variant": result.variant,
        "lambda3": result.lambda3,
        **gates.to_dict(),
        "dev_kl": None,
        "dev_inv_T": None,
        "n_dev_items": 0,
        "alm_prime": str(result.alm_prime_path),
    }
    if built is None:
        return row
    dev, _ = truth.dev_test_split(built.corpus.qa_items, built.corpus.world, seed)
    folder = Path(result.alm_prime_path)
    dev_items = [(it.prompt, it.gold) for it in dev]
    key = hash_key("dev-kl-v1", code_digest(TUNING_CODE), _run_identity(folder), dev_items, list(settings.inv_T_grid))
    path = folder.parent / f"dev-{key}.json"
    with file_lock(path.with_suffix(".lock")):
        saved = read_json_checked(path, "dev score", "scoring again")
        if saved is None:
            with scoring_threads(fam):
                qa = dev_qa() if callable(dev_qa) else dev_qa
                if qa is None:
                    qa = dev_scores(fam, built.corpus.world, dev)
                model = load_alm_prime(folder, device=fam.device)
                lp = next_token_log_probs(model, fam.tokenizer, [it.prompt for it in dev], fam.vocab_size)
                saved = best_inv_T_score(qa.logprobs[-1], lp, qa.truth, grid=settings.inv_T_grid)
            write_json(path, saved, digest=True)
    row.update(dev_kl=float(saved["score"]), dev_inv_T=float(saved["inv_T"]), n_dev_items=int(saved["n_items"]))
    return row


def engaged_variant(
    fam,
    built=None,
    *,
    scale: str = "default",
    progress: bool = True,
    cache=None,
    seed: int = 0,
    variants=VARIANT_NAMES,
) -> VariantSelection:
    """Train (cached) and :func:`assess` every variant in ``variants`` and choose the one the book uses:
    every mechanism gate passes and the dev KL is the lowest (module docstring); the release
    configuration with ``engaged=False`` when no variant engages.

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> sel = apd.engaged_variant(fam, built, scale="smoke", progress=False)
        >>> sel.variant in apd.amateur.variants.VARIANT_NAMES, list(sel.table["variant"]) == list(apd.amateur.variants.VARIANT_NAMES)
        (True, True)
    """
    settings = settings_for(family_name(fam), scale)
    settings.check_built(built)
    return _engaged_variant(fam, built, settings, progress=progress, cache=cache, seed=seed, variants=variants)


def _engaged_variant(fam, built, settings: Settings, *, progress, cache, seed, variants) -> VariantSelection:
    """:func:`engaged_variant` under ``settings``."""
    names = list(variants)
    if not names:
        raise ValueError(f"no variants to choose from; pass some of {VARIANT_NAMES}.")
    if RELEASE not in names:
        raise ValueError(f"the release configuration must be among the variants (it is the fallback); got {names}.")
    prefetch_variants(fam, built, settings, names, cache=cache, seed=seed, progress=progress)
    results = {
        n: _apd_model(
            fam, built, settings, lambda3=None, progress=progress, cache=cache, seed=seed, variant=n, leave_out=()
        )
        for n in names
    }
    qa_cache = {}

    def dev_qa():
        if "qa" not in qa_cache:
            dev, _ = truth.dev_test_split(built.corpus.qa_items, built.corpus.world, seed)
            qa_cache["qa"] = dev_scores(fam, built.corpus.world, dev)
        return qa_cache["qa"]

    rows = [assess(r, fam, built, settings, cache=cache, seed=seed, dev_qa=dev_qa) for r in results.values()]
    table = pd.DataFrame(rows)
    chosen = choose_variant(table)
    table["chosen"] = table["variant"] == (chosen or RELEASE)
    return VariantSelection(
        variant=chosen or RELEASE,
        engaged=chosen is not None,
        result=results[chosen or RELEASE],
        results=results,
        table=table,
    )


# -- the variants side by side --------------------------------------------------------------------


def prefetch_variants(fam, built, settings: Settings, names, *, cache=None, seed: int = 0, progress=True) -> None:
    """Train what :func:`engaged_variant` needs, side by side (:func:`apd.base.jobs.run_jobs`), so that
    it then finds everything cached: first every short tuning run of every variant's lambda3 grid
    (:func:`apd.amateur.runs.train_side_by_side`), then each variant's tuning scores, final ALM' and
    gates. A pico family only, with more than one job (:func:`apd.base.jobs.job_count`), and nothing
    when the tuning runs are cached already. Each job trains as it would alone (one thread, its seed),
    so the numbers are those of a one-at-a-time build. ``progress``: say what it trains (the workers
    draw no bars)."""
    if built is None or settings.family != "pico" or job_count() < 2:
        return
    recipe = (settings.family, settings.scale, str(fam.device), cache)
    collect_dir = collect_family(
        fam, finetune_texts(fam, built), collect_config(settings, built), cache=cache, progress=progress
    )
    runs = [
        (n, replace(variant_config(n, settings, tuning=True), lambda3=float(value)))
        for n in names
        for value in lambda3_grid(n, settings) or ()
    ]
    if all(trained(collect_dir, c, cache) is not None for _, c in runs):  # tuned before: what is left is quick
        return
    progress_note(
        f"training ALM' {len(names)} ways ({', '.join(names)}): {len(runs)} short runs to tune lambda3, then "
        f"each way's ALM' and its gates, {job_count()} side by side",
        Path(cache or paths.cache_dir()) / "apd",
        progress=progress,
    )
    train_side_by_side(
        fam,
        collect_dir,
        [c for _, c in runs],
        cache,
        names=[f"ALM' {n} lambda3={c.lambda3:g} (tuning)" for n, c in runs],
        heldout=(gate_collection(fam, built, settings, cache=cache), settings.gate_chunks),
    )
    run_jobs(_variant_job, [(recipe, n, seed) for n in names], names=[f"ALM' {n}" for n in names])


@functools.lru_cache(maxsize=2)
def _family_of(recipe):
    """``(fam, built, settings)`` in a worker, from ``(family, scale, device, cache)``; kept for the
    worker's next job."""
    family, scale, device, _ = recipe
    fam, built = get_family(family, scale, device=device, progress=False)
    return fam, built, settings_for(family, scale)


def _variant_job(args) -> None:
    """One variant's tuning scores, final ALM' and gates, in a worker (all cached for the caller)."""
    recipe, name, seed = args
    fam, built, settings = _family_of(recipe)
    result = _apd_model(
        fam, built, settings, lambda3=None, progress=False, cache=recipe[3], seed=seed, variant=name, leave_out=()
    )
    _run_gates(result, fam, built, settings, recipe[3])


def choose_variant(table: pd.DataFrame) -> Optional[str]:
    """The variant a table of :func:`assess` rows chooses: among the rows whose gates all pass
    (``engaged``), the lowest ``dev_kl`` (missing dev KL counts as the highest; ties: the first row);
    None when no row engages.

    Example:
        >>> t = pd.DataFrame({"variant": ["release", "a", "b"], "engaged": [False, True, True],
        ...                   "dev_kl": [1.0, 2.0, 1.5]})
        >>> choose_variant(t), choose_variant(t.assign(engaged=False))
        ('b', None)
    """
    ok = table[table["engaged"].astype(bool)]
    if ok.empty:
        return None
    kl = pd.to_numeric(ok["dev_kl"], errors="coerce").fillna(np.inf).to_numpy()
    return str(best_knob(ok["variant"], kl))


def tuning_table(results: dict) -> pd.DataFrame:
    """One row per lambda3 each variant tried: variant, lambda3, dev_kl (its tuning score), inv_T (the 1/T
    it was scored at), steps (of the scored run: a variant may tune on shorter runs than it trains
    the chosen value with), widened (added past the grid: :func:`apd.amateur.tuning.choose_lambda3`),
    chosen, score (what dev_kl is), alm_prime. ``results``: {name:
    :class:`APDResult`}; variants without a tuning table (Hub families, a given lambda3) have no rows."""
    rows = []
    for name, r in results.items():
        if r.tuning is None:
            continue
        for t in r.tuning.itertuples():
            rows.append(
                {
                    "variant": name,
                    "lambda3": float(t.lambda3),
                    "dev_kl": float(t.score),
                    "inv_T": float(getattr(t, "inv_T", 1.0)),
                    "steps": run_record(t.alm_prime)["steps"],
                    "widened": bool(getattr(t, "widened", False)),
                    "chosen": bool(t.chosen),
                    "score": r.tuning.attrs.get("score", ""),
                    "alm_prime": t.alm_prime,
                }
            )
    cols = ["variant", "lambda3", "dev_kl", "inv_T", "steps", "widened", "chosen", "score", "alm_prime"]
    return pd.DataFrame(rows, columns=cols)
