"""Amateur: collecting a family's probabilities and training ALM' (the fine-tuned amateur).

``collect`` (token sets and member probabilities), ``config`` / ``data`` / ``objective`` / ``train``
(the curve model, losses and training loop), ``runs`` / ``tuning`` / ``variants`` / ``pipeline``
(cached runs, lambda3, the APD variants, ``apd_model`` and the engaged variant), ``composition``
(what a collection holds).
"""
from apd.amateur import (
    collect, config, data, distill, objective, train, runs, tuning, pipeline, composition, gates, entropies, thf,
    variants,
)
from apd.amateur.collect import (
    FORMAT, MANIFEST, CollectConfig, ModelFamily, draw_ranks, token_set, bytes_per_position, collection_identity,
    read_manifest, load_shard, iter_records,
)
from apd.amateur.config import (
    LAMBDA3, LAMBDA3_GRID, X_ORIGINS, OBJECTIVES, STARTS, APDTrainConfig, LATER_DEFAULTS, warmup_for, lr_at,
)
from apd.amateur.data import (
    RECORD_KEYS, CollectedChunks, resolve_members, collate_chunks, epoch_order, collected_batches, collected_chunks,
)
from apd.amateur.distill import (
    DISTILL_FIT, fit_member_curves, fit_targets, targets_dir, collection_targets, WithTargets, targets_for_records,
)
from apd.amateur.objective import (
    member_values, asymptote, CurveOutput, CurveMLP, ConditionedCurveMLP, start_amplitude, loss_l1, loss_l2, loss_l3,
    HEAD_GATHER_CLASSES, loss_distill, DistillObjective, APDObjective, CurvePrediction, predict_curves,
)
from apd.amateur.train import CPU_THREADS, train_alm_prime, START_CHUNKS, evaluate_losses, sweep_lambda3, main
from apd.amateur.runs import (
    SCALES, PICO_TRAIN, PICO_LAMBDA3_GRID, HUB_TRAIN, collect_family, collection_key, member_identity, train_dir,
    train_apd, variant, load_alm_prime, family_name, train_config, collect_config, finetune_texts, read_train_log,
    run_record,
)
from apd.amateur.tuning import (
    TUNING_SCORE, TUNING_SCORES, validation_score, tune_lambda3, best_inv_T_score, scoring_threads,
)
from apd.amateur.pipeline import (
    GATE_CHUNKS, APDResult, apd_model, gate_collection, run_gates, VariantSelection, assess, engaged_variant,
    choose_variant, tuning_table,
)
from apd.amateur.composition import token_set_composition
from apd.amateur.gates import Thresholds, FORMER_THRESHOLDS, THRESHOLDS, Gates, measure_gates, gates_or_none
from apd.amateur.entropies import LABELS, EntropyLabels, collect_entropies, entropy_key, entropy_labels, load_entropies
from apd.amateur.thf import (
    HEAD_FILE, RAW_MAX, THFConfig, THF_TRAIN, thf_config, THFOutput, THFModel, load_thf, train_thf, evaluate_thf,
    THFResult, thf_key, thf_model,
)
from apd.amateur.variants import (
    RELEASE, Variant, VARIANTS, VARIANT_NAMES, ENGAGED, get_variant, variant_config, lambda3_grid,
)
from apd.amateur.collect import collect_probabilities

__all__ = [
    "collect", "config", "data", "distill", "objective", "train", "runs", "tuning", "pipeline", "composition", "gates",
    "entropies", "thf", "variants", "FORMAT", "MANIFEST", "CollectConfig", "ModelFamily", "draw_ranks", "token_set",
    "bytes_per_position", "collection_identity", "read_manifest", "load_shard", "iter_records", "LAMBDA3",
    "LAMBDA3_GRID", "X_ORIGINS", "OBJECTIVES", "STARTS", "APDTrainConfig", "LATER_DEFAULTS", "warmup_for", "lr_at",
    "RECORD_KEYS", "CollectedChunks", "resolve_members", "collate_chunks", "epoch_order", "collected_batches",
    "collected_chunks", "DISTILL_FIT", "fit_member_curves", "fit_targets", "targets_dir", "collection_targets",
    "WithTargets", "targets_for_records", "member_values", "asymptote", "CurveOutput", "CurveMLP",
    "ConditionedCurveMLP", "start_amplitude", "loss_l1", "loss_l2", "loss_l3", "HEAD_GATHER_CLASSES", "loss_distill",
    "DistillObjective", "APDObjective", "CurvePrediction", "predict_curves", "CPU_THREADS", "train_alm_prime",
    "START_CHUNKS", "evaluate_losses", "sweep_lambda3", "main", "SCALES", "PICO_TRAIN", "PICO_LAMBDA3_GRID",
    "HUB_TRAIN", "collect_family", "collection_key", "member_identity", "train_dir", "train_apd", "variant",
    "load_alm_prime", "family_name", "train_config", "collect_config", "finetune_texts", "read_train_log",
    "run_record", "TUNING_SCORE", "TUNING_SCORES", "validation_score", "tune_lambda3", "best_inv_T_score",
    "scoring_threads", "GATE_CHUNKS", "APDResult", "apd_model", "gate_collection", "run_gates", "VariantSelection",
    "assess", "engaged_variant", "choose_variant", "tuning_table", "token_set_composition", "Thresholds",
    "FORMER_THRESHOLDS", "THRESHOLDS", "Gates", "measure_gates", "gates_or_none", "LABELS", "EntropyLabels",
    "collect_entropies", "entropy_key", "entropy_labels", "load_entropies", "HEAD_FILE", "RAW_MAX", "THFConfig",
    "THF_TRAIN", "thf_config", "THFOutput", "THFModel", "load_thf", "train_thf", "evaluate_thf", "THFResult",
    "thf_key", "thf_model", "RELEASE", "Variant", "VARIANTS", "VARIANT_NAMES", "ENGAGED", "get_variant",
    "variant_config", "lambda3_grid", "collect_probabilities",
]
