"""Every chapter's parameters, declared once: one frozen dataclass per notebook of ``_toc.yml``,
whose fields are the notebook's parameters in its order, each with its default, its range
(:mod:`apd.chapters.ranges`) and its doc (the comment beside it in the notebook).

The notebooks' ``parameters`` cells are generated from these classes (:func:`parameters_cell`;
``python -m apd.book.params --write`` rewrites them and ``book/parameters.md``), and the book
runner takes the names, default types and ranges it checks profiles against from them
(:mod:`apd.book.schema`, :mod:`apd.book.profiles`). Standard library only: no torch.

Example:
    >>> defaults("theorem1")["n_draws"]
    20000
    >>> print(parameters_cell("paper_vs_book"))
    profile = "default"
    paper_family = "Pythia"   # which family of the paper's tables to show beside ours (Table 3: OPT and Qwen1.5)
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from apd.chapters.ranges import (
    ANY,
    BATCH_SIZE,
    DEV_OR_POSITIVE,
    DEVICE_RULE,
    FAMILY,
    FLAG,
    ITEMS_PER_BUCKET,
    KNOWN_ANSWER_SIZES,
    NAME,
    NEW_TOKENS,
    PICO_SCALE,
    PROBABILITY,
    SEED,
    SEEDS,
    TEMPERATURE,
    TEXT,
    TOP_K,
    Rule,
    integer,
    list_of,
    number,
    one_of,
)

#: The gap (spaces) before a comment that does not fit before its class's ``COLUMN``.
OVERFLOW_GAP = 2


def param(default: Any, rule: Rule, doc: str = "", *, gap: int | None = None, wrap: int | None = None) -> Any:
    """One parameter, as a dataclass field: ``default``, its range ``rule`` and its ``doc``. ``gap``
    and ``wrap`` only lay out its line of the notebook's cell: the spaces before its comment (when
    not the class's ``COLUMN``) and the items per line of a long list.

    Example:
        >>> @dataclass(frozen=True)
        ... class P:
        ...     grid: list = param([1, 2], SEEDS, "the grid")
        >>> P().grid, dataclasses.fields(P)[0].metadata["doc"]
        ([1, 2], 'the grid')
    """
    meta = {"doc": doc, "rule": rule}
    if gap is not None:
        meta["gap"] = gap
    if wrap is not None:
        meta["wrap"] = wrap
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def literal(value: Any, wrap: int | None = None, indent: int = 0) -> str:
    """``value`` as the parameters cell writes it: strings in double quotes, lists and mappings
    with ``", "``; a list of more than ``wrap`` items goes on, ``wrap`` per line, at ``indent``.

    Example:
        >>> literal({"a": [1, 2.0, None]}), literal("x")
        ('{"a": [1, 2.0, None]}', '"x"')
        >>> print(literal([1, 2, 3], wrap=2, indent=1))
        [1, 2,
         3]
    """
    if isinstance(value, str):
        return f'"{value}"' if '"' not in value and "\\" not in value and value.isprintable() else repr(value)
    if isinstance(value, (list, tuple)):
        items = [literal(v) for v in value]
        rows = [items[i : i + wrap] for i in range(0, len(items), wrap)] if wrap else [items]
        return "[" + (",\n" + " " * indent).join(", ".join(row) for row in rows) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def chapter(stem: str) -> type:
    """The parameters class of notebook ``stem`` (KeyError naming the known ones if it has none).

    Example:
        >>> chapter("theorem1").__name__
        'Theorem1Params'
    """
    try:
        return CHAPTERS[stem]
    except KeyError:
        raise KeyError(f"no parameters class for notebook {stem!r}; known: {', '.join(CHAPTERS)}") from None


def fields(stem: str) -> tuple[dataclasses.Field, ...]:
    """The parameters of notebook ``stem``, in order, as dataclass fields (``.metadata["doc"]``,
    ``.metadata["rule"]``).

    Example:
        >>> [f.name for f in fields("paper_vs_book")]
        ['profile', 'paper_family']
    """
    return dataclasses.fields(chapter(stem))


def defaults(stem: str) -> dict[str, Any]:
    """``{name: default}`` of notebook ``stem``'s parameters, in order (fresh copies of lists).

    Example:
        >>> defaults("paper_vs_book")
        {'profile': 'default', 'paper_family': 'Pythia'}
    """
    return dataclasses.asdict(chapter(stem)())


def ranges() -> dict[str, Rule]:
    """``{"stem.name": rule}`` of every parameter of every chapter.

    Example:
        >>> ranges()["theorem1.n_draws"].words
        'an integer in [1, 1000000]'
    """
    return {f"{stem}.{f.name}": f.metadata["rule"] for stem in CHAPTERS for f in fields(stem)}


def parameters_cell(stem: str) -> str:
    """The source of notebook ``stem``'s ``parameters`` cell: one ``name = default`` line per
    parameter, its doc as a comment at the class's ``COLUMN`` (or ``OVERFLOW_GAP`` spaces after a
    longer line; a field's ``gap`` overrides both).

    Example:
        >>> print(parameters_cell("theorem1").splitlines()[2])
        n_draws = 20000              # random linear families checked
    """
    cls = chapter(stem)
    lines = []
    for f, value in zip(dataclasses.fields(cls), defaults(stem).values()):
        line = f"{f.name} = " + literal(value, f.metadata.get("wrap"), len(f"{f.name} = ["))
        doc = f.metadata["doc"]
        if doc:
            last = len(line.rsplit("\n", 1)[-1])
            gap = f.metadata.get("gap") or (cls.COLUMN - last if last < cls.COLUMN else OVERFLOW_GAP)
            line += " " * gap + "# " + doc
        lines.append(line)
    return "\n".join(lines)


# -- the chapters, in _toc.yml order ---------------------------------------------------------------


@dataclass(frozen=True)
class LoadedFamilyParams:
    """The parameters every chapter that loads a family starts with (a chapter may give one its own
    doc by declaring it again, which keeps its place)."""

    COLUMN: ClassVar[int] = 34  # where the comments of the parameters cell start
    profile: str = param("default", NAME)
    family: str = param("pico", FAMILY, "pico (trained here), or pythia / opt / qwen1.5 from the Hub")
    pico_scale: str = param("default", PICO_SCALE, "pico only: smoke or default")
    members: list[str] | None = param(None, list_of(NAME), "None: every member of the family")
    local_dir: str | None = param(None, NAME, "Hub families: a folder with one subfolder per member")
    device: str = param("auto", DEVICE_RULE, "auto: cuda when available, else cpu")
    load_kwargs: dict = param(
        {}, ANY, 'more apd.family.loading.load_family arguments, e.g. {"check_sizes": False} or {"offload": True}'
    )


@dataclass(frozen=True)
class Theorem1Params:
    """The parameters of ``notebooks/theorem1.ipynb``."""

    COLUMN: ClassVar[int] = 29  # where the comments of the parameters cell start
    profile: str = param("default", NAME)
    seed: int = param(0, SEED)
    n_draws: int = param(20000, integer(1, 10**6), "random linear families checked")
    vocab_size: int = param(1000, integer(2, 10**6), "tokens per family")
    T_grid: list[float] = param(
        [1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 8.0],
        list_of(number(1, TEMPERATURE.high)),
        "amateur temperatures (T > 1)",
        gap=3,
    )
    alm_log_size: float = param(16.7555, number(0, 100), "ln non-embedding size of the amateur (Pythia-70M)")
    elm_log_size: float = param(22.5864, number(0, 100), "ln non-embedding size of the expert (Pythia-6.9B)")
    curvature_grid: list[float] = param(
        [0.0, 0.01, 0.02, 0.05, 0.1, 0.2], list_of(number(0, 10, low_open=False)), "logit units per (ln size)^2"
    )


@dataclass(frozen=True)
class FamilyParams(LoadedFamilyParams):
    """The parameters of ``notebooks/family.ipynb``."""

    COLUMN: ClassVar[int] = 25  # where the comments of the parameters cell start
    heldout_tokens: int = param(20000, integer(1, 10**6), "tokens of held-out text for the loss")
    qa_items_per_bucket: int = param(400, ITEMS_PER_BUCKET, "world QA items per frequency bucket (pico only)")
    alpha: float = param(0.01, PROBABILITY, "significance level of the paired test of tail knowledge", gap=10)
    seed: int = param(0, SEED)


@dataclass(frozen=True)
class ApdParams(LoadedFamilyParams):
    """The parameters of ``notebooks/apd.ipynb``."""

    COLUMN: ClassVar[int] = 34  # where the comments of the parameters cell start
    pico_scale: str = param("default", PICO_SCALE, "pico: smoke or default; also the scale of ALM' training")
    seed: int = param(0, SEED, "dev/test split of the world's people and all sampling")
    top_k: int = param(20, TOP_K, "every method is compared over the ELM's top-k tokens")
    inv_T_grid: list[float] = param(
        [0.05, 0.1, 0.15, 0.25, 0.5, 0.75, 1.0],
        list_of(number(0, 100)),
        "1/T values of CD and APD (the paper's sweep reaches 0.05)",
        gap=3,
    )
    qa_items_per_bucket: int = param(400, ITEMS_PER_BUCKET, "world QA items per frequency bucket and half (at most)")
    fly: bool = param(True, FLAG, 'also fit "APD on the fly" (curves fitted at inference time)')
    n_text_positions: int = param(2000, integer(1, 10**5), "held-out text positions")
    text_seq_len: int = param(128, integer(2, 4096), "window of held-out text around each position")
    n_curve_examples: int = param(4, integer(0, 100), "fitted curves drawn")
    fly_iterations: int = param(400, integer(1, 10**4), "Adam iterations of the on-the-fly fit (the paper: 400)")
    fitter_noise: float = param(
        0.005,
        number(0, 1, low_open=False),
        "sd of the noise on the members' probabilities in the fitter's known-answer check",
    )


@dataclass(frozen=True)
class KnownAnswerParams:
    """The parameters of ``notebooks/known_answer.ipynb``."""

    COLUMN: ClassVar[int] = 33  # where the comments of the parameters cell start
    profile: str = param("default", NAME)
    size: str = param(
        "default",
        one_of(*KNOWN_ANSWER_SIZES),
        "smoke, default or full: positions and step budgets (apd.evaluation.known_answer.SIZES)",
    )
    noise: float = param(0.005, number(0, 1, low_open=False), "sd of the noise on every member's probability")
    seed: int = param(0, SEED)
    pico_scale: str = param(
        "default", PICO_SCALE, "whose members' sizes the pico grid has (the pico family this build trains)"
    )
    noise_free_check: bool = param(True, FLAG, "also run the closed forms and the fitters without noise")
    family_noise: bool = param(
        True,
        FLAG,
        "the truth-like families at this family's own noise (held out on its dev questions; else the APD chapter's in-sample residual)",
    )
    condition_seeds: list[int] = param([0, 1, 2], SEEDS, "one synthetic family per seed, for intervals over seeds")
    condition_positions: int = param(
        40, integer(1, 2000), "positions per seed and cell of the truth-like synthetic families"
    )


@dataclass(frozen=True)
class CurvesParams(LoadedFamilyParams):
    """The parameters of ``notebooks/curves.ipynb``."""

    COLUMN: ClassVar[int] = 34  # where the comments of the parameters cell start
    prompt: str = param("", TEXT, "empty: a biography of a torso person of the world (pico)")
    T_values: list[float] = param([1.0, 2.0], list_of(TEMPERATURE), "CD temperatures drawn in the curve figures")
    top_k: int = param(20, TOP_K, "CD/APD act on the ELM's top-k tokens")
    max_panels: int = param(8, integer(1, 100), "positions shown in the prompt figure")
    blind_T_grid: list[float] = param([1.0, 1.5, 2.0, 4.0], list_of(TEMPERATURE))
    qa_items_per_bucket: int = param(400, ITEMS_PER_BUCKET, "world QA items per frequency bucket (pico)")
    qa_dataset: str = param("lambada", NAME, "Hub families: contexts with a gold next word")
    qa_limit: int = param(1000, integer(1, 10**5))
    data_dir: str | None = param(None, NAME, "Hub families: local copy of the QA data (APD_DATA_DIR)")
    n_positions: int = param(2000, integer(1, 10**5), "held-out positions for the linearity study")
    curve_top_k: int = param(10, TOP_K, "ELM top tokens per position whose curves are fitted")
    hlm_positions: int = param(600, integer(1, 10**4), "held-out positions for the HLM check")
    hlm_elm: int = param(
        -1,
        integer(-1, 100),
        "index of the expert in the HLM check; -1: the middle member",
    )
    hlm_T_grid: list[float] = param([1.25, 1.5, 2.0, 3.0, 4.0, 8.0], list_of(TEMPERATURE))
    seed: int = param(0, SEED)


@dataclass(frozen=True)
class QaParams(LoadedFamilyParams):
    """The parameters of ``notebooks/qa.ipynb``."""

    COLUMN: ClassVar[int] = 34  # where the comments of the parameters cell start
    alm_prime_path: str | None = param(None, NAME, "a folder with ALM' (save_pretrained); None: apd.apd_model")
    use_reference: bool = param(
        True, FLAG, 'Hub families: also run the family\'s bigger model (Pythia-12B) as "LLM (bigger)"'
    )
    top_k: int = param(20, TOP_K)
    inv_T_grid: list[float] = param(
        [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0],
        list_of(number(0, 100)),
        "the paper's grid (appendix), apd.family.settings.PAPER_INV_T",
        wrap=14,
    )
    batch_size: int = param(64, BATCH_SIZE)
    max_length: int | None = param(
        None, integer(2, 10**5), "cut prompts from the left to this many tokens (None: no cut)"
    )
    qa_items_per_bucket: int | None = param(
        None, ITEMS_PER_BUCKET, "world questions per frequency bucket before the dev/test split (None: all)"
    )
    split_seed: int = param(0, SEED, "dev/test split of the world's evaluation people (apd.world.truth)")
    qa_datasets: list[str] = param(
        ["lambada", "commonsense_qa", "qasc", "qasc_q", "arc", "social_iqa", "multirc", "squad", "squad_q"],
        list_of(NAME),
    )
    stand_ins: dict = param(
        {"qasc_q": "openbookqa", "arc": "arc_easy"}, ANY, "run offline when the paper's dataset cannot be had"
    )
    qa_limit: int = param(200, integer(1, 10**5), "examples per real dataset (None: all)")
    data_dir: str | None = param(None, NAME, "offline copies of the QA data; None: $APD_DATA_DIR, else the Hub")
    seed: int = param(0, SEED)


@dataclass(frozen=True)
class RealParams(LoadedFamilyParams):
    """The parameters of ``notebooks/real.ipynb``."""

    COLUMN: ClassVar[int] = 34  # where the comments of the parameters cell start
    pico_scale: str = param("default", PICO_SCALE, "pico: smoke or default; also the scale of THF training")
    seed: int = param(0, SEED, "which world questions are drawn")
    qa_items_per_bucket: int = param(200, ITEMS_PER_BUCKET, "world questions per frequency bucket (at most)")
    window: int = param(40, integer(1, 4096), "tokens the THF model reads (the release: 40)")
    T_r: float = param(4.0, TEMPERATURE, "REAL's decay temperature for the threshold illustration (paper: 4.0)")
    heldout_docs: int = param(200, integer(1, 10**4), "validation documents for the held-out fit")


@dataclass(frozen=True)
class FactualityParams(LoadedFamilyParams):
    """The parameters of ``notebooks/factuality.ipynb``."""

    COLUMN: ClassVar[int] = 32  # where the comments of the parameters cell start
    alm_prime_path: str | None = param(None, NAME, "a folder with ALM' (save_pretrained); None: apd.apd_model")
    thf_path: str | None = param(
        None, NAME, "a folder with REAL's THF model (apd.load_thf); None: apd.thf_model (the REAL chapter's, cached)"
    )
    cpu_threads: int = param(1, integer(1, 256), "torch threads for generation on a CPU (tiny models: 1 is fastest)")
    split_seed: int = param(0, SEED, "dev/test split of the world's evaluation people (by person)")
    world_n_prompts: int = param(
        100, integer(0, 10**4), "world prompts from the TEST half (pico); 0 skips the world section"
    )
    seeds: list[int] = param([0, 1], SEEDS, "one continuation per prompt and seed")
    verdict_seeds: int = param(
        8, integer(0, 100), "the verdict comparison (APD vs CD, every opener x test person): seeds 0..n-1; 0 skips it"
    )
    max_new_tokens: int = param(32, NEW_TOKENS)
    batch_size: int = param(128, BATCH_SIZE)
    p_grid: list[float] = param([0.4, 0.6, 0.8, 0.95], list_of(PROBABILITY), "top-p values of the curves")
    temperatures: list[float] = param([0.6, 0.8, 1.0], list_of(TEMPERATURE), "Temperature + NA")
    cd_T: float | str = param(
        "dev",
        DEV_OR_POSITIVE,
        'CD amateur temperature of the top-p k20 curve: "dev" (chosen on dev people from cd_T_dev_grid) or a number',
    )
    cd_T_dev_grid: list[float] = param(
        [1.0, 1.33, 2.0, 4.0, 10.0], list_of(TEMPERATURE), "the paper's grid for CD's T (its Section 5)"
    )
    cd_T_grid: list[float] = param(
        [1.0, 1.33, 2.0, 4.0, 10.0],
        list_of(TEMPERATURE),
        "CD temperature tuning on the test people, at p of table_ps[0]",
    )
    cd_alpha_T_grid: list[float] = param([1.0, 2.0, 4.0], list_of(TEMPERATURE), "CD + alpha")
    alpha: float = param(0.1, PROBABILITY)
    apd_T: float = param(1.0, TEMPERATURE, "fixed at 1 in the paper")
    table_ps: list[float] = param([0.8, 0.6], list_of(PROBABILITY), "Table 1's rows (top-p k20)")
    real_T_r_grid: list[float] = param(
        [1.0, 2.0, 4.0],
        list_of(TEMPERATURE, nonempty=False),
        "REAL's decay temperatures in the sweep (ELM, CD and APD + REAL); [] leaves REAL out",
    )
    real_T_r: float | str = param(
        "dev",
        DEV_OR_POSITIVE,
        'REAL\'s headline T_r (its Table 6 rows, the complementarity comparison): "dev" (chosen on dev people) or a number',
    )
    real_T_r_dev_grid: list[float] = param(
        [0.5, 1.0, 2.0, 4.0, 8.0], list_of(TEMPERATURE), "REAL's decay temperatures tried on dev people"
    )
    dev_n_prompts: int = param(
        100,
        integer(0, 10**4),
        "world prompts from the DEV half that choose cd_T and real_T_r; 0: the paper's settings",
    )
    dev_seeds: list[int] = param([0, 1], SEEDS, "one continuation per dev prompt and seed")
    real_verdict_seeds: int = param(
        8,
        integer(0, 100),
        "the complementarity comparison (APD + REAL vs APD, vs ELM + REAL; every opener x test person); 0 skips it",
    )
    dola_layers: list[str] = param(["low", "high"], list_of(one_of("low", "high")), "DoLa + alpha, DoLa Last + alpha")
    fp_kinds: list[str] = param(["factual", "nonfactual"], list_of(one_of("factual", "nonfactual")))
    fp_split: str = param(
        "test",
        one_of("test", "validation", "all"),
        "FactualityPrompts split: test (7k each), validation (1k), all (8k)",
    )
    fp_n_prompts: int = param(40, integer(0, 10**4), "real prompts per kind; 0 skips the real-prompt section")
    fp_methods: str = param("table1", one_of("table1", "all"), '"table1" (ELM/CD/APD top-p k20 at table_ps) or "all"')
    fp_seeds: list[int] = param([0], SEEDS)
    fp_max_new_tokens: int = param(32, NEW_TOKENS)
    fp_covered_only: bool = param(True, FLAG, "sample only prompts whose evidence pages are all available")
    data_dir: str | None = param(None, NAME, "local FactualityPrompts copy (else APD_DATA_DIR, else download)")
    evidence: str = param(
        "auto", one_of("kilt", "wiki", "auto"), '"kilt" (needs kilt_path), "wiki" (offline lead sections), "auto"'
    )
    kilt_path: str | None = param(None, NAME, 'kilt_knowledgesource.json, or "hub" for facebook/kilt_wikipedia')
    nli_model: str = param("FacebookAI/roberta-large-mnli", NAME)
    run_nli: bool = param(True, FLAG)


@dataclass(frozen=True)
class AblationsParams:
    """The parameters of ``notebooks/ablations.ipynb``."""

    COLUMN: ClassVar[int] = 28  # where the comments of the parameters cell start
    profile: str = param("default", NAME)
    family: str = param("pico", FAMILY, "the ablations need the world's truth: pico only")
    pico_scale: str = param("default", PICO_SCALE, "smoke or default")
    device: str = param("auto", DEVICE_RULE)
    ablation_names: list[str] | None = param(
        None,
        list_of(NAME),
        "None: all 16 (apd.evaluation.ablations.ABLATION_NAMES, the distilled variant and its member subsets last); or a list",
    )
    epochs: int | None = param(
        None, integer(1, 100), "None: the main config's; fewer makes every run (the reference APD too) cheaper"
    )
    batch_size: int | None = param(None, BATCH_SIZE, "None: the main config's")
    data_fraction: float = param(
        1.0, PROBABILITY, "share of the collected chunks every run uses (half-data halves it)"
    )
    qa_items_per_bucket: int = param(
        400, ITEMS_PER_BUCKET, "world QA items per frequency bucket and half (at most), as the APD chapter draws them"
    )
    val_chunks: int = param(16, integer(0, 1000), "held-out collected chunks for the training losses (0: skip them)")
    top_k: int = param(20, TOP_K, "CD/APD act on the ELM's top-k tokens")
    z: float = param(2.0, number(0, 100), "a difference counts when it exceeds z paired standard errors ...")
    min_effect: float = param(
        0.001, number(0, 10, low_open=False), "... and min_effect nats (smaller ones are ties however sure)"
    )
    split_seed: int = param(0, SEED, "the dev/test split of the world's people")
    seed: int = param(0, SEED, "which QA items are drawn")


@dataclass(frozen=True)
class TestbedParams:
    """The parameters of ``notebooks/testbed.ipynb``."""

    COLUMN: ClassVar[int] = 30  # where the comments of the parameters cell start
    profile: str = param("default", NAME)
    pico_scale: str = param("default", PICO_SCALE, "the pico scale whose family this build trained")
    device: str = param("auto", DEVICE_RULE, "where that family was trained (auto: CUDA if present, else the CPU)")
    current_controls: bool = param(
        True, FLAG, "also measure the controls on this build's family (it is cached by the family chapter)"
    )
    ne_er: bool = param(
        False,
        FLAG,
        "the sampled NE_ER control for this build's family (minutes on a CPU; the table has it per configuration)",
    )
    fit_iterations: int = param(
        400, integer(1, 10**4), "Adam iterations of the on-the-fly fitter in the extrapolation control"
    )
    table_path: str | None = param(None, NAME, "the testbed table; None: docs/testbed/configurations.csv")
    dose_path: str | None = param(None, NAME, "the dose-response table; None: docs/testbed/dose_response.csv")


@dataclass(frozen=True)
class PaperVsBookParams:
    """The parameters of ``notebooks/paper_vs_book.ipynb``."""

    COLUMN: ClassVar[int] = 26  # where the comments of the parameters cell start
    profile: str = param("default", NAME)
    paper_family: str = param(
        "Pythia", NAME, "which family of the paper's tables to show beside ours (Table 3: OPT and Qwen1.5)"
    )


@dataclass(frozen=True)
class TutorialParams(LoadedFamilyParams):
    """The parameters of ``notebooks/tutorial.ipynb``."""

    COLUMN: ClassVar[int] = 27  # where the comments of the parameters cell start
    prompts: list[str] = param(["The capital of France is", "She was born in"], list_of(TEXT))
    max_new_tokens: int = param(24, NEW_TOKENS)
    top_p: float = param(0.8, PROBABILITY, "the paper's top-p k20 threshold, on the expert's distribution")
    cd_T: float = param(2.0, TEMPERATURE, "CD amateur temperature (1/T of 0.5, the best for Pythia in the paper)")
    top_k: int = param(20, TOP_K, "tokens whose curves are fitted on the fly (the expert's top k)")
    seed: int = param(0, SEED)


#: The parameters class of every notebook of ``_toc.yml``, by stem, in its order.
CHAPTERS: dict[str, type] = {
    "theorem1": Theorem1Params,
    "family": FamilyParams,
    "testbed": TestbedParams,
    "apd": ApdParams,
    "known_answer": KnownAnswerParams,
    "curves": CurvesParams,
    "qa": QaParams,
    "real": RealParams,
    "factuality": FactualityParams,
    "ablations": AblationsParams,
    "paper_vs_book": PaperVsBookParams,
    "tutorial": TutorialParams,
}
