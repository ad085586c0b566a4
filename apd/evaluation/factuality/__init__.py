"""Open-ended factuality (the paper's FactualityPrompts experiment) on the world and on real prompts.

    from apd.evaluation import factuality as fx
    methods = fx.paper_methods(p_grid=(0.4, 0.6, 0.8, 0.95))
    dec = fx.Decoders(elm, tokenizer, alm=alm, alm_prime=alm_prime, vocab_size=fam.vocab_size)
    gens = fx.sweep(dec, methods, prompts, seeds=(0, 1), max_new_tokens=32, cache=fx.sweep_cache(...))
    table = fx.score_sweep(methods, gens, fx.WorldScorer(world, prompts))
"""
from apd.base.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    # apd.evaluation.factuality.methods
    "DISTRIBUTIONS": "apd.evaluation.factuality.methods", "THRESHOLDS": "apd.evaluation.factuality.methods",
    "Method": "apd.evaluation.factuality.methods", "paper_methods": "apd.evaluation.factuality.methods",
    "REAL_DISTRIBUTIONS": "apd.evaluation.factuality.methods",
    "real_methods": "apd.evaluation.factuality.methods",
    "table6_methods": "apd.evaluation.factuality.methods",
    "table1_methods": "apd.evaluation.factuality.methods",
    "TemperatureLogitsProcessor": "apd.evaluation.factuality.methods",
    "Decoders": "apd.evaluation.factuality.methods", "methods": "apd.evaluation.factuality.methods",
    # apd.evaluation.factuality.sweeps
    "batch_seed": "apd.evaluation.factuality.sweeps",
    "generate_continuations": "apd.evaluation.factuality.sweeps",
    "config_key": "apd.evaluation.factuality.sweeps", "model_identity": "apd.evaluation.factuality.sweeps",
    "decoder_identity": "apd.evaluation.factuality.sweeps", "sweep_cache": "apd.evaluation.factuality.sweeps",
    "sweep": "apd.evaluation.factuality.sweeps", "diversity": "apd.evaluation.factuality.sweeps",
    "score_sweep": "apd.evaluation.factuality.sweeps", "sweeps": "apd.evaluation.factuality.sweeps",
    # apd.evaluation.factuality.world_scoring
    "WorldFacts": "apd.evaluation.factuality.world_scoring",
    "world_facts": "apd.evaluation.factuality.world_scoring",
    "WorldScorer": "apd.evaluation.factuality.world_scoring",
    "world_test_prompts": "apd.evaluation.factuality.world_scoring",
    "world_scoring": "apd.evaluation.factuality.world_scoring",
    # apd.evaluation.factuality.sources
    "KINDS": "apd.evaluation.factuality.sources", "FOLDER": "apd.evaluation.factuality.sources",
    "SOURCES": "apd.evaluation.factuality.sources", "prompts_file": "apd.evaluation.factuality.sources",
    "sources": "apd.evaluation.factuality.sources",
    # apd.evaluation.factuality.prompts
    "FactualityPrompt": "apd.evaluation.factuality.prompts",
    "resolve_data_dir": "apd.evaluation.factuality.prompts",
    "load_factuality_prompts": "apd.evaluation.factuality.prompts",
    "wiki_lead_evidence": "apd.evaluation.factuality.prompts",
    "kilt_evidence": "apd.evaluation.factuality.prompts",
    "evidence_coverage": "apd.evaluation.factuality.prompts", "prompts": "apd.evaluation.factuality.prompts",
    # apd.evaluation.factuality.ner
    "MeasureUnavailable": "apd.evaluation.factuality.ner", "SPACY_MODELS": "apd.evaluation.factuality.ner",
    "SPACY_INSTALL": "apd.evaluation.factuality.ner", "IMPORTANT_TYPES": "apd.evaluation.factuality.ner",
    "DROPPED_TYPES": "apd.evaluation.factuality.ner", "load_ner": "apd.evaluation.factuality.ner",
    "Unit": "apd.evaluation.factuality.ner", "checkworthy": "apd.evaluation.factuality.ner",
    "entity_supported": "apd.evaluation.factuality.ner",
    "continuation_units": "apd.evaluation.factuality.ner", "unit_ne_error": "apd.evaluation.factuality.ner",
    "ner": "apd.evaluation.factuality.ner",
    # apd.evaluation.factuality.nli
    "load_nli": "apd.evaluation.factuality.nli", "top_evidence_sentences": "apd.evaluation.factuality.nli",
    "nli": "apd.evaluation.factuality.nli",
    # apd.evaluation.factuality.scoring
    "FactualityPromptsScorer": "apd.evaluation.factuality.scoring",
    "table1_rows": "apd.evaluation.factuality.scoring", "row_of": "apd.evaluation.factuality.scoring",
    "table6_rows": "apd.evaluation.factuality.scoring", "plot_tradeoff": "apd.evaluation.factuality.scoring",
    "matched_gap": "apd.evaluation.factuality.scoring", "scoring": "apd.evaluation.factuality.scoring",
    # apd.evaluation.factuality.power
    "world_verdict_prompts": "apd.evaluation.factuality.power",
    "ne_er_units": "apd.evaluation.factuality.power", "PairedVerdict": "apd.evaluation.factuality.power",
    "paired_verdict": "apd.evaluation.factuality.power", "reading": "apd.evaluation.factuality.power",
    "summary": "apd.evaluation.factuality.power", "matched_gap_paired": "apd.evaluation.factuality.power",
    "power": "apd.evaluation.factuality.power",
})
