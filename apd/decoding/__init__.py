"""Decoding: Hugging Face logits processors for CD, APD and APD on the fly, and ``generate``.

The filters and the contrastive score live in :mod:`apd.core`; they are re-exported here.
"""

from apd.decoding import processors, generation
from apd.decoding.processors import (
    NEG_INF,
    FilteredLogitsProcessor,
    ContrastiveLogitsProcessor,
    APDLogitsProcessor,
    OnTheFlyLogitsProcessor,
    REALLogitsProcessor,
)
from apd.decoding.generation import generate, dola_candidate_layers, dola_generate_kwargs
from apd.core.filters import TopP, TopK, AlphaMask, real_top_p, REAL, make_filters, keep_mask
from apd.core.contrastive import contrastive_scores


__all__ = [
    "APDLogitsProcessor",
    "AlphaMask",
    "ContrastiveLogitsProcessor",
    "FilteredLogitsProcessor",
    "NEG_INF",
    "OnTheFlyLogitsProcessor",
    "REAL",
    "REALLogitsProcessor",
    "TopK",
    "TopP",
    "contrastive_scores",
    "dola_candidate_layers",
    "dola_generate_kwargs",
    "generate",
    "generation",
    "keep_mask",
    "make_filters",
    "processors",
    "real_top_p",
]
