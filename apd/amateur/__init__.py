"""Amateur: collecting a family's probabilities and training ALM' (the fine-tuned amateur).

``collect`` (token sets and member probabilities), ``config`` / ``data`` / ``objective`` / ``train``
(the curve model, losses and training loop), ``runs`` / ``tuning`` / ``variants`` / ``pipeline``
(cached runs, lambda3, the APD variants, ``apd_model`` and the engaged variant), ``composition``
(what a collection holds).
"""
from apd.base.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    # apd.amateur.collect
    "FORMAT": "apd.amateur.collect", "MANIFEST": "apd.amateur.collect",
    "CollectConfig": "apd.amateur.collect", "ModelFamily": "apd.amateur.collect",
    "draw_ranks": "apd.amateur.collect", "token_set": "apd.amateur.collect",
    "bytes_per_position": "apd.amateur.collect", "collect": "apd.amateur.collect",
    "collection_identity": "apd.amateur.collect", "read_manifest": "apd.amateur.collect",
    "load_shard": "apd.amateur.collect", "iter_records": "apd.amateur.collect",
    # apd.amateur.config
    "LAMBDA3": "apd.amateur.config", "LAMBDA3_GRID": "apd.amateur.config", "X_ORIGINS": "apd.amateur.config",
    "OBJECTIVES": "apd.amateur.config", "STARTS": "apd.amateur.config",
    "APDTrainConfig": "apd.amateur.config", "LATER_DEFAULTS": "apd.amateur.config",
    "warmup_for": "apd.amateur.config", "lr_at": "apd.amateur.config", "config": "apd.amateur.config",
    # apd.amateur.data
    "RECORD_KEYS": "apd.amateur.data", "CollectedChunks": "apd.amateur.data",
    "resolve_members": "apd.amateur.data", "collate_chunks": "apd.amateur.data",
    "epoch_order": "apd.amateur.data", "collected_batches": "apd.amateur.data",
    "collected_chunks": "apd.amateur.data", "data": "apd.amateur.data",
    # apd.amateur.distill
    "DISTILL_FIT": "apd.amateur.distill", "fit_member_curves": "apd.amateur.distill",
    "fit_targets": "apd.amateur.distill", "targets_dir": "apd.amateur.distill",
    "collection_targets": "apd.amateur.distill", "WithTargets": "apd.amateur.distill",
    "targets_for_records": "apd.amateur.distill", "distill": "apd.amateur.distill",
    # apd.amateur.objective
    "member_values": "apd.amateur.objective", "asymptote": "apd.amateur.objective",
    "CurveOutput": "apd.amateur.objective", "CurveMLP": "apd.amateur.objective",
    "ConditionedCurveMLP": "apd.amateur.objective", "start_amplitude": "apd.amateur.objective",
    "loss_l1": "apd.amateur.objective", "loss_l2": "apd.amateur.objective",
    "loss_l3": "apd.amateur.objective", "HEAD_GATHER_CLASSES": "apd.amateur.objective",
    "loss_distill": "apd.amateur.objective", "DistillObjective": "apd.amateur.objective",
    "APDObjective": "apd.amateur.objective", "CurvePrediction": "apd.amateur.objective",
    "predict_curves": "apd.amateur.objective", "objective": "apd.amateur.objective",
    # apd.amateur.train
    "CPU_THREADS": "apd.amateur.train", "train_alm_prime": "apd.amateur.train",
    "START_CHUNKS": "apd.amateur.train", "evaluate_losses": "apd.amateur.train",
    "sweep_lambda3": "apd.amateur.train", "main": "apd.amateur.train", "train": "apd.amateur.train",
    # apd.amateur.runs
    "SCALES": "apd.amateur.runs", "PICO_TRAIN": "apd.amateur.runs", "PICO_LAMBDA3_GRID": "apd.amateur.runs",
    "HUB_TRAIN": "apd.amateur.runs", "collect_family": "apd.amateur.runs",
    "collection_key": "apd.amateur.runs", "member_identity": "apd.amateur.runs",
    "train_dir": "apd.amateur.runs", "train_apd": "apd.amateur.runs", "variant": "apd.amateur.runs",
    "load_alm_prime": "apd.amateur.runs", "family_name": "apd.amateur.runs",
    "train_config": "apd.amateur.runs", "collect_config": "apd.amateur.runs",
    "finetune_texts": "apd.amateur.runs", "read_train_log": "apd.amateur.runs",
    "run_record": "apd.amateur.runs", "runs": "apd.amateur.runs",
    # apd.amateur.tuning
    "TUNING_SCORE": "apd.amateur.tuning", "TUNING_SCORES": "apd.amateur.tuning",
    "validation_score": "apd.amateur.tuning", "tune_lambda3": "apd.amateur.tuning",
    "best_inv_T_score": "apd.amateur.tuning", "scoring_threads": "apd.amateur.tuning",
    "tuning": "apd.amateur.tuning",
    # apd.amateur.pipeline
    "GATE_CHUNKS": "apd.amateur.pipeline", "APDResult": "apd.amateur.pipeline",
    "apd_model": "apd.amateur.pipeline", "gate_collection": "apd.amateur.pipeline",
    "run_gates": "apd.amateur.pipeline", "VariantSelection": "apd.amateur.pipeline",
    "assess": "apd.amateur.pipeline", "engaged_variant": "apd.amateur.pipeline",
    "choose_variant": "apd.amateur.pipeline", "tuning_table": "apd.amateur.pipeline",
    "pipeline": "apd.amateur.pipeline",
    # apd.amateur.composition
    "token_set_composition": "apd.amateur.composition", "composition": "apd.amateur.composition",
    # apd.amateur.gates
    "Thresholds": "apd.amateur.gates", "FORMER_THRESHOLDS": "apd.amateur.gates",
    "THRESHOLDS": "apd.amateur.gates", "Gates": "apd.amateur.gates", "measure_gates": "apd.amateur.gates",
    "gates_or_none": "apd.amateur.gates", "gates": "apd.amateur.gates",
    # apd.amateur.entropies
    "LABELS": "apd.amateur.entropies", "EntropyLabels": "apd.amateur.entropies",
    "collect_entropies": "apd.amateur.entropies", "entropy_key": "apd.amateur.entropies",
    "entropy_labels": "apd.amateur.entropies", "load_entropies": "apd.amateur.entropies",
    "entropies": "apd.amateur.entropies",
    # apd.amateur.thf
    "HEAD_FILE": "apd.amateur.thf", "RAW_MAX": "apd.amateur.thf", "THFConfig": "apd.amateur.thf",
    "THF_TRAIN": "apd.amateur.thf", "thf_config": "apd.amateur.thf", "THFOutput": "apd.amateur.thf",
    "THFModel": "apd.amateur.thf", "load_thf": "apd.amateur.thf", "train_thf": "apd.amateur.thf",
    "evaluate_thf": "apd.amateur.thf", "THFResult": "apd.amateur.thf", "thf_key": "apd.amateur.thf",
    "thf_model": "apd.amateur.thf", "thf": "apd.amateur.thf",
    # apd.amateur.variants
    "RELEASE": "apd.amateur.variants", "Variant": "apd.amateur.variants", "VARIANTS": "apd.amateur.variants",
    "VARIANT_NAMES": "apd.amateur.variants", "ENGAGED": "apd.amateur.variants",
    "get_variant": "apd.amateur.variants", "variant_config": "apd.amateur.variants",
    "lambda3_grid": "apd.amateur.variants", "variants": "apd.amateur.variants",
})
