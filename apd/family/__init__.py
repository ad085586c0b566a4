"""Family: LM families (Hub or the embedded pico family), loading, and next-token log-probabilities.

``registry`` (members and sizes), ``loading`` (``Family``, ``load_family``), ``select`` (``get_family``
by name), ``text`` / ``logprobs`` / ``heldout`` (tokens and log-probabilities), ``knowledge`` (what
each member knows of the world), ``pretrain`` / ``pico`` (the embedded family, trained here).
"""

from apd.base.names import on_first_use as _on_first_use
from apd.family import registry, loading, select, text, logprobs, heldout
from apd.family.registry import MemberSpec, FamilySpec, FAMILIES, SCALES, get_family_spec, count_nonembedding
from apd.family.loading import default_dtype, needs_offload, Family, load_family
from apd.family.select import get_family
from apd.family.text import left_padded_batches, token_stream, texts_for_tokens, tokenizer_identity
from apd.family.logprobs import prompt_log_probs, text_log_probs, next_token_log_probs, window_log_probs
from apd.family.heldout import heldout_positions, sample_positions
from apd.base.device import resolve_device as default_device

# The embedded pico family (``pico``, ``pretrain``) and ``knowledge`` (which reads the world) load on
# first use, so a Hub family never imports them: ``apd.family.build``, ``apd.family.saturation_table``.
_ON_FIRST_USE = {
    "knowledge": (
        "apd.family.knowledge",
        (
            "WorldQAScores",
            "first_token_id",
            "score_world_qa",
            "qa_frame",
            "accuracy_table",
            "paired_gain",
            "saturation_table",
        ),
    ),
    "pretrain": (
        "apd.family.pretrain",
        (
            "FORMAT_VERSION",
            "TrainingInterrupted",
            "Member",
            "PicoConfig",
            "nonembedding_count",
            "member_configs",
            "learning_rate",
            "training_plan",
            "chunk_order",
            "data_hash",
            "tokenizer_hash",
            "family_key",
            "CPU_THREADS",
            "training_threads",
            "train_family",
            "family_dir",
            "evaluate_loss",
        ),
    ),
    "pico": (
        "apd.family.pico",
        (
            "configs",
            "PicoBuild",
            "build",
            "build_configured",
            "find_cached",
            "STAND_IN_NAMES",
            "export_stand_in",
        ),
    ),
}

__getattr__ = _on_first_use(__name__, _ON_FIRST_USE)


__all__ = [
    "FAMILIES",
    "Family",
    "FamilySpec",
    "MemberSpec",
    "SCALES",
    "count_nonembedding",
    "default_device",
    "default_dtype",
    "get_family",
    "get_family_spec",
    "heldout",
    "heldout_positions",
    "left_padded_batches",
    "load_family",
    "loading",
    "logprobs",
    "needs_offload",
    "next_token_log_probs",
    "prompt_log_probs",
    "registry",
    "sample_positions",
    "select",
    "text",
    "text_log_probs",
    "texts_for_tokens",
    "token_stream",
    "tokenizer_identity",
    "window_log_probs",
]
__all__ += [name for attribute, (_, names) in _ON_FIRST_USE.items() for name in (attribute, *names)]
