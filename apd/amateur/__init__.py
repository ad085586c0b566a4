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
    "APDObjective", "APDResult", "APDTrainConfig", "CPU_THREADS", "CollectConfig", "CollectedChunks",
    "ConditionedCurveMLP", "CurveMLP", "CurveOutput", "CurvePrediction", "DISTILL_FIT", "DistillObjective", "ENGAGED",
    "EntropyLabels", "FORMAT", "FORMER_THRESHOLDS", "GATE_CHUNKS", "Gates", "HEAD_FILE", "HEAD_GATHER_CLASSES",
    "HUB_TRAIN", "LABELS", "LAMBDA3", "LAMBDA3_GRID", "LATER_DEFAULTS", "MANIFEST", "ModelFamily", "OBJECTIVES",
    "PICO_LAMBDA3_GRID", "PICO_TRAIN", "RAW_MAX", "RECORD_KEYS", "RELEASE", "SCALES", "STARTS", "START_CHUNKS",
    "THFConfig", "THFModel", "THFOutput", "THFResult", "THF_TRAIN", "THRESHOLDS", "TUNING_SCORE", "TUNING_SCORES",
    "Thresholds", "VARIANTS", "VARIANT_NAMES", "Variant", "VariantSelection", "WithTargets", "X_ORIGINS", "apd_model",
    "assess", "asymptote", "best_inv_T_score", "bytes_per_position", "choose_variant", "collate_chunks", "collect",
    "collect_config", "collect_entropies", "collect_family", "collect_probabilities", "collected_batches",
    "collected_chunks", "collection_identity", "collection_key", "collection_targets", "composition", "config", "data",
    "distill", "draw_ranks", "engaged_variant", "entropies", "entropy_key", "entropy_labels", "epoch_order",
    "evaluate_losses", "evaluate_thf", "family_name", "finetune_texts", "fit_member_curves", "fit_targets",
    "gate_collection", "gates", "gates_or_none", "get_variant", "iter_records", "lambda3_grid", "load_alm_prime",
    "load_entropies", "load_shard", "load_thf", "loss_distill", "loss_l1", "loss_l2", "loss_l3", "lr_at", "main",
    "measure_gates", "member_identity", "member_values", "objective", "pipeline", "predict_curves", "read_manifest",
    "read_train_log", "resolve_members", "run_gates", "run_record", "runs", "scoring_threads", "start_amplitude",
    "sweep_lambda3", "targets_dir", "targets_for_records", "thf", "thf_config", "thf_key", "thf_model", "token_set",
    "token_set_composition", "train", "train_alm_prime", "train_apd", "train_config", "train_dir", "train_thf",
    "tune_lambda3", "tuning", "tuning_table", "validation_score", "variant", "variant_config", "variants",
    "warmup_for",
]
