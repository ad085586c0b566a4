"""Evaluation: QA and open-ended factuality as in the paper, probability curves, blindness, ablations.
"""
from apd.base.names import renamed as _renamed_getattr
from apd.evaluation import (
    text_metrics, qa_metrics, qa_data, qa_scoring, probcurves, linearity, blindness, ablations, known_answer, controls,
    entropy_truth, factuality,
)
from apd.evaluation.text_metrics import (
    word_tokenize, split_sentences, first_sentences, distinct_n, distinct_n_per_prompt, repeated_suffix,
    ends_in_repetition, repetition_ratio, ne_error_rate, entailment_ratio,
)
from apd.evaluation.qa_metrics import (
    top_k_mask, cd_scores_over_topk, elm_over_topk, gold_rank, answer_ppl, accuracy_lowest_ppl, mrr, in_topk_filter,
    keep_multiple_choice, ttest_from_stats, ttest_per_question, gap_closure,
)
from apd.evaluation.qa_data import (
    QAExample, DatasetUnavailable, DatasetInvalid, TEMPLATES, render_prompt, multirc_passage, DatasetSpec, DATASETS,
    resolve_data_dir, offline_file, subsample, load_dataset, try_load,
)
from apd.evaluation.qa_scoring import (
    PAPER_INV_T, METRICS, METHOD_ROLES, PROTOCOLS, PAPER_DATASETS, EncodedPairs, encode_pairs, iter_answer_log_probs,
    ExpertTopK, expert_topk, amateur_at, method_token_scores, answer_ppl_matrix, answer_rr_matrix, answers_in_topk,
    QAScores, question_group, world_examples, score_qa, NothingToChoose, best_index, Picked, half_split, pick,
    picked_values, qa_summary, significance, gap_rows, chance_accuracy, LAYOUT_ROWS, table_layout,
)
from apd.evaluation.probcurves import cd_probs_over_topk, prompt_curves, top_token_curves, score_answers
from apd.evaluation.linearity import LineFits, fit_lines, interpolate_members, hlm_prediction_check, hlm_vs_real_table
from apd.evaluation.blindness import cd_scores, Blindness, find_obvious_blindness, blindness_table, clearest_example
from apd.evaluation.ablations import (
    GROUPS, GROUP_TITLES, LAMBDA3_FACTORS, MEMBER_SUBSETS, Ablation, ABLATIONS, ABLATION_NAMES, MAIN, DISTILLED,
    distilled_subset, reference_of, get_ablation, member_subset, with_members, ablation_config, ablation_configs,
    config_changes, QASet, score_amateur, pick_inv_T, summarise, AblationResults, training_record, validation_losses,
    run_ablations, reference_rows, measure_difference, verdict, verdicts, gate_sentence, label,
)
from apd.evaluation.known_answer import (
    PICO_NONEMBEDDING, PICO_X, PYTHIA_X, GRIDS, REGIMES, COLLAPSE_TOL, SYNTHETIC_DECAYS, synthetic_family,
    median_abs_error, share_collapsed, share_beyond, dead_curve_loss, Estimate, estimate_p_elm, estimate_cd,
    estimate_fitter, loss_l2_mean_hinge, estimate_joint, SIZES, LABELS, estimator_specs, recovery_table,
    CONDITION_ESTIMATORS, condition_table,
)
from apd.evaluation.controls import (
    CONTROL_INV_T_GRID, CD_PAPER_INV_T, CONTROL_THRESHOLDS, Controls, cd_gain_table, heldout_residual,
    known_answer_at_noise, asymptote_errors, dev_bio_prompts, ne_er_gain, measure_controls,
)
from apd.evaluation.entropy_truth import (
    true_entropy, member_entropies, thf_at_prompts, entropy_vs_truth, entropy_truth_table,
)


# old names, renamed to say which of two things they are
__getattr__ = _renamed_getattr(__name__, {"variant_config": "ablation_config", "variant_configs": "ablation_configs",
                                 "paired_difference": "measure_difference"}, globals())


__all__ = [
    "ABLATIONS", "ABLATION_NAMES", "Ablation", "AblationResults", "Blindness", "CD_PAPER_INV_T", "COLLAPSE_TOL",
    "CONDITION_ESTIMATORS", "CONTROL_INV_T_GRID", "CONTROL_THRESHOLDS", "Controls", "DATASETS", "DISTILLED",
    "DatasetInvalid", "DatasetSpec", "DatasetUnavailable", "EncodedPairs", "Estimate", "ExpertTopK", "GRIDS", "GROUPS",
    "GROUP_TITLES", "LABELS", "LAMBDA3_FACTORS", "LAYOUT_ROWS", "LineFits", "MAIN", "MEMBER_SUBSETS", "METHOD_ROLES",
    "METRICS", "NothingToChoose", "PAPER_DATASETS", "PAPER_INV_T", "PICO_NONEMBEDDING", "PICO_X", "PROTOCOLS",
    "PYTHIA_X", "Picked", "QAExample", "QAScores", "QASet", "REGIMES", "SIZES", "SYNTHETIC_DECAYS", "TEMPLATES",
    "ablation_config", "ablation_configs", "ablations", "accuracy_lowest_ppl", "amateur_at", "answer_ppl",
    "answer_ppl_matrix", "answer_rr_matrix", "answers_in_topk", "asymptote_errors", "best_index", "blindness",
    "blindness_table", "cd_gain_table", "cd_probs_over_topk", "cd_scores", "cd_scores_over_topk", "chance_accuracy",
    "clearest_example", "condition_table", "config_changes", "controls", "dead_curve_loss", "dev_bio_prompts",
    "distilled_subset", "distinct_n", "distinct_n_per_prompt", "elm_over_topk", "encode_pairs", "ends_in_repetition",
    "entailment_ratio", "entropy_truth", "entropy_truth_table", "entropy_vs_truth", "estimate_cd", "estimate_fitter",
    "estimate_joint", "estimate_p_elm", "estimator_specs", "expert_topk", "factuality", "find_obvious_blindness",
    "first_sentences", "fit_lines", "gap_closure", "gap_rows", "gate_sentence", "get_ablation", "gold_rank",
    "half_split", "heldout_residual", "hlm_prediction_check", "hlm_vs_real_table", "in_topk_filter",
    "interpolate_members", "iter_answer_log_probs", "keep_multiple_choice", "known_answer", "known_answer_at_noise",
    "label", "linearity", "load_dataset", "loss_l2_mean_hinge", "measure_controls", "measure_difference",
    "median_abs_error", "member_entropies", "member_subset", "method_token_scores", "mrr", "multirc_passage",
    "ne_er_gain", "ne_error_rate", "offline_file", "pick", "pick_inv_T", "picked_values", "probcurves",
    "prompt_curves", "qa_data", "qa_metrics", "qa_scoring", "qa_summary", "question_group", "recovery_table",
    "reference_of", "reference_rows", "render_prompt", "repeated_suffix", "repetition_ratio", "resolve_data_dir",
    "run_ablations", "score_amateur", "score_answers", "score_qa", "share_beyond", "share_collapsed", "significance",
    "split_sentences", "subsample", "summarise", "synthetic_family", "table_layout", "text_metrics", "thf_at_prompts",
    "top_k_mask", "top_token_curves", "training_record", "true_entropy", "try_load", "ttest_from_stats",
    "ttest_per_question", "validation_losses", "verdict", "verdicts", "with_members", "word_tokenize",
    "world_examples",
]
