"""Open-ended factuality (the paper's FactualityPrompts experiment) on the world and on real prompts.

from apd.evaluation import factuality as fx
methods = fx.paper_methods(p_grid=(0.4, 0.6, 0.8, 0.95))
dec = fx.Decoders(elm, tokenizer, alm=alm, alm_prime=alm_prime, vocab_size=fam.vocab_size)
gens = fx.sweep(dec, methods, prompts, seeds=(0, 1), max_new_tokens=32, cache=fx.sweep_cache(...))
table = fx.score_sweep(methods, gens, fx.WorldScorer(world, prompts))
"""

from apd.base.names import renamed as _renamed_getattr
from apd.evaluation.factuality import methods, sweeps, world_scoring, sources, prompts, ner, nli, scoring, power
from apd.evaluation.factuality.methods import (
    DISTRIBUTIONS,
    THRESHOLD_NAMES,
    Method,
    paper_methods,
    REAL_DISTRIBUTIONS,
    real_methods,
    table6_methods,
    table1_methods,
    TemperatureLogitsProcessor,
    Decoders,
)
from apd.evaluation.factuality.sweeps import (
    batch_seed,
    generate_continuations,
    config_key,
    model_identity,
    decoder_identity,
    sweep_cache,
    sweep,
    diversity,
    score_sweep,
)
from apd.evaluation.factuality.world_scoring import WorldFacts, world_facts, WorldScorer, world_test_prompts
from apd.evaluation.factuality.sources import KINDS, FOLDER, SOURCES, prompts_file
from apd.evaluation.factuality.prompts import (
    FactualityPrompt,
    resolve_data_dir,
    load_factuality_prompts,
    wiki_lead_evidence,
    kilt_evidence,
    evidence_coverage,
)
from apd.evaluation.factuality.ner import (
    MeasureUnavailable,
    SPACY_MODELS,
    SPACY_INSTALL,
    IMPORTANT_TYPES,
    DROPPED_TYPES,
    load_ner,
    Unit,
    checkworthy,
    entity_supported,
    continuation_units,
    unit_ne_error,
)
from apd.evaluation.factuality.nli import load_nli, top_evidence_sentences
from apd.evaluation.factuality.scoring import (
    FactualityPromptsScorer,
    table1_rows,
    row_of,
    table6_rows,
    plot_tradeoff,
    matched_gap,
)
from apd.evaluation.factuality.power import (
    world_verdict_prompts,
    ne_er_units,
    PairedVerdict,
    paired_verdict,
    reading,
    summary,
    matched_gap_paired,
)


# old names, renamed to say which of two things they are
__getattr__ = _renamed_getattr(__name__, {"THRESHOLDS": "THRESHOLD_NAMES"}, globals())


__all__ = [
    "DISTRIBUTIONS",
    "DROPPED_TYPES",
    "Decoders",
    "FOLDER",
    "FactualityPrompt",
    "FactualityPromptsScorer",
    "IMPORTANT_TYPES",
    "KINDS",
    "MeasureUnavailable",
    "Method",
    "PairedVerdict",
    "REAL_DISTRIBUTIONS",
    "SOURCES",
    "SPACY_INSTALL",
    "SPACY_MODELS",
    "THRESHOLD_NAMES",
    "TemperatureLogitsProcessor",
    "Unit",
    "WorldFacts",
    "WorldScorer",
    "batch_seed",
    "checkworthy",
    "config_key",
    "continuation_units",
    "decoder_identity",
    "diversity",
    "entity_supported",
    "evidence_coverage",
    "generate_continuations",
    "kilt_evidence",
    "load_factuality_prompts",
    "load_ner",
    "load_nli",
    "matched_gap",
    "matched_gap_paired",
    "methods",
    "model_identity",
    "ne_er_units",
    "ner",
    "nli",
    "paired_verdict",
    "paper_methods",
    "plot_tradeoff",
    "power",
    "prompts",
    "prompts_file",
    "reading",
    "real_methods",
    "resolve_data_dir",
    "row_of",
    "score_sweep",
    "scoring",
    "sources",
    "summary",
    "sweep",
    "sweep_cache",
    "sweeps",
    "table1_methods",
    "table1_rows",
    "table6_methods",
    "table6_rows",
    "top_evidence_sentences",
    "unit_ne_error",
    "wiki_lead_evidence",
    "world_facts",
    "world_scoring",
    "world_test_prompts",
    "world_verdict_prompts",
]
