"""Evaluation: QA and open-ended factuality as in the paper, probability curves, blindness, ablations.
"""
from apd.base.deprecation import renamed
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

__all__ = [
    "text_metrics", "qa_metrics", "qa_data", "qa_scoring", "probcurves", "linearity", "blindness", "ablations",
    "known_answer", "controls", "entropy_truth", "factuality", "word_tokenize", "split_sentences", "first_sentences",
    "distinct_n", "distinct_n_per_prompt", "repeated_suffix", "ends_in_repetition", "repetition_ratio",
    "ne_error_rate", "entailment_ratio", "top_k_mask", "cd_scores_over_topk", "elm_over_topk", "gold_rank",
    "answer_ppl", "accuracy_lowest_ppl", "mrr", "in_topk_filter", "keep_multiple_choice", "ttest_from_stats",
    "ttest_per_question", "gap_closure", "QAExample", "DatasetUnavailable", "DatasetInvalid", "TEMPLATES",
    "render_prompt", "multirc_passage", "DatasetSpec", "DATASETS", "resolve_data_dir", "offline_file", "subsample",
    "load_dataset", "try_load", "PAPER_INV_T", "METRICS", "METHOD_ROLES", "PROTOCOLS", "PAPER_DATASETS",
    "EncodedPairs", "encode_pairs", "iter_answer_log_probs", "ExpertTopK", "expert_topk", "amateur_at",
    "method_token_scores", "answer_ppl_matrix", "answer_rr_matrix", "answers_in_topk", "QAScores", "question_group",
    "world_examples", "score_qa", "NothingToChoose", "best_index", "Picked", "half_split", "pick", "picked_values",
    "qa_summary", "significance", "gap_rows", "chance_accuracy", "LAYOUT_ROWS", "table_layout", "cd_probs_over_topk",
    "prompt_curves", "top_token_curves", "score_answers", "LineFits", "fit_lines", "interpolate_members",
    "hlm_prediction_check", "hlm_vs_real_table", "cd_scores", "Blindness", "find_obvious_blindness", "blindness_table",
    "clearest_example", "GROUPS", "GROUP_TITLES", "LAMBDA3_FACTORS", "MEMBER_SUBSETS", "Ablation", "ABLATIONS",
    "ABLATION_NAMES", "MAIN", "DISTILLED", "distilled_subset", "reference_of", "get_ablation", "member_subset",
    "with_members", "ablation_config", "ablation_configs", "config_changes", "QASet", "score_amateur", "pick_inv_T",
    "summarise", "AblationResults", "training_record", "validation_losses", "run_ablations", "reference_rows",
    "measure_difference", "verdict", "verdicts", "gate_sentence", "label", "PICO_NONEMBEDDING", "PICO_X", "PYTHIA_X",
    "GRIDS", "REGIMES", "COLLAPSE_TOL", "SYNTHETIC_DECAYS", "synthetic_family", "median_abs_error", "share_collapsed",
    "share_beyond", "dead_curve_loss", "Estimate", "estimate_p_elm", "estimate_cd", "estimate_fitter",
    "loss_l2_mean_hinge", "estimate_joint", "SIZES", "LABELS", "estimator_specs", "recovery_table",
    "CONDITION_ESTIMATORS", "condition_table", "CONTROL_INV_T_GRID", "CD_PAPER_INV_T", "CONTROL_THRESHOLDS",
    "Controls", "cd_gain_table", "heldout_residual", "known_answer_at_noise", "asymptote_errors", "dev_bio_prompts",
    "ne_er_gain", "measure_controls", "true_entropy", "member_entropies", "thf_at_prompts", "entropy_vs_truth",
    "entropy_truth_table",
]

# old names, renamed to say which of two things they are
__getattr__ = renamed(__name__, {"variant_config": "ablation_config", "variant_configs": "ablation_configs",
                                 "paired_difference": "measure_difference"}, globals())
