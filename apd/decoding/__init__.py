"""Decoding: Hugging Face logits processors for CD, APD and APD on the fly, and ``generate``.

The filters and the contrastive score live in :mod:`apd.core`; they are re-exported here.
"""
from apd.base.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    # apd.decoding.processors
    "NEG_INF": "apd.decoding.processors", "FilteredLogitsProcessor": "apd.decoding.processors",
    "ContrastiveLogitsProcessor": "apd.decoding.processors", "APDLogitsProcessor": "apd.decoding.processors",
    "OnTheFlyLogitsProcessor": "apd.decoding.processors", "REALLogitsProcessor": "apd.decoding.processors",
    "processors": "apd.decoding.processors",
    # apd.decoding.generation
    "generate": "apd.decoding.generation", "dola_candidate_layers": "apd.decoding.generation",
    "dola_generate_kwargs": "apd.decoding.generation", "generation": "apd.decoding.generation",
    # apd.core.filters
    "TopP": "apd.core.filters", "TopK": "apd.core.filters", "AlphaMask": "apd.core.filters",
    "real_top_p": "apd.core.filters", "REAL": "apd.core.filters", "make_filters": "apd.core.filters",
    "keep_mask": "apd.core.filters",
    # apd.core.contrastive
    "contrastive_scores": "apd.core.contrastive",
})
