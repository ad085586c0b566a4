"""Family: LM families (Hub or the embedded pico family), loading, and next-token log-probabilities.

``registry`` (members and sizes), ``loading`` (``Family``, ``load_family``), ``select`` (``get_family``
by name), ``text`` / ``logprobs`` / ``heldout`` (tokens and log-probabilities), ``knowledge`` (what
each member knows of the world), ``pretrain`` / ``pico`` (the embedded family, trained here).
"""
from apd.base.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    # apd.family.registry
    "MemberSpec": "apd.family.registry", "FamilySpec": "apd.family.registry",
    "FAMILIES": "apd.family.registry", "get_family_spec": "apd.family.registry",
    "count_nonembedding": "apd.family.registry", "registry": "apd.family.registry",
    # apd.family.loading
    "default_dtype": "apd.family.loading", "needs_offload": "apd.family.loading",
    "Family": "apd.family.loading", "load_family": "apd.family.loading", "loading": "apd.family.loading",
    # apd.family.select
    "get_family": "apd.family.select", "select": "apd.family.select",
    # apd.family.text
    "left_padded_batches": "apd.family.text", "token_stream": "apd.family.text",
    "texts_for_tokens": "apd.family.text", "tokenizer_identity": "apd.family.text", "text": "apd.family.text",
    # apd.family.logprobs
    "prompt_log_probs": "apd.family.logprobs", "text_log_probs": "apd.family.logprobs",
    "next_token_log_probs": "apd.family.logprobs", "window_log_probs": "apd.family.logprobs",
    "logprobs": "apd.family.logprobs",
    # apd.family.heldout
    "heldout_positions": "apd.family.heldout", "sample_positions": "apd.family.heldout",
    "heldout": "apd.family.heldout",
    # apd.family.knowledge
    "WorldQAScores": "apd.family.knowledge", "first_token_id": "apd.family.knowledge",
    "score_world_qa": "apd.family.knowledge", "qa_frame": "apd.family.knowledge",
    "accuracy_table": "apd.family.knowledge", "paired_gain": "apd.family.knowledge",
    "saturation_table": "apd.family.knowledge", "knowledge": "apd.family.knowledge",
    # apd.family.pretrain
    "FORMAT_VERSION": "apd.family.pretrain", "TrainingInterrupted": "apd.family.pretrain",
    "Member": "apd.family.pretrain", "PicoConfig": "apd.family.pretrain",
    "nonembedding_count": "apd.family.pretrain", "member_configs": "apd.family.pretrain",
    "learning_rate": "apd.family.pretrain", "training_plan": "apd.family.pretrain",
    "chunk_order": "apd.family.pretrain", "data_hash": "apd.family.pretrain",
    "tokenizer_hash": "apd.family.pretrain", "family_key": "apd.family.pretrain",
    "CPU_THREADS": "apd.family.pretrain", "training_threads": "apd.family.pretrain",
    "train_family": "apd.family.pretrain", "family_dir": "apd.family.pretrain",
    "evaluate_loss": "apd.family.pretrain", "pretrain": "apd.family.pretrain",
    # apd.family.pico
    "SCALES": "apd.family.pico", "configs": "apd.family.pico", "PicoBuild": "apd.family.pico",
    "build": "apd.family.pico", "build_configured": "apd.family.pico", "find_cached": "apd.family.pico",
    "STAND_IN_NAMES": "apd.family.pico", "export_stand_in": "apd.family.pico", "pico": "apd.family.pico",
    # apd.base.device
    "default_device": "apd.base.device:resolve_device",
})
