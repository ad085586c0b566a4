"""Evaluation: QA and open-ended factuality as in the paper, probability curves, blindness, ablations.
"""
from apd.base.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    # apd.evaluation.text_metrics
    "word_tokenize": "apd.evaluation.text_metrics", "split_sentences": "apd.evaluation.text_metrics",
    "first_sentences": "apd.evaluation.text_metrics", "distinct_n": "apd.evaluation.text_metrics",
    "distinct_n_per_prompt": "apd.evaluation.text_metrics", "repeated_suffix": "apd.evaluation.text_metrics",
    "ends_in_repetition": "apd.evaluation.text_metrics", "repetition_ratio": "apd.evaluation.text_metrics",
    "ne_error_rate": "apd.evaluation.text_metrics", "entailment_ratio": "apd.evaluation.text_metrics",
    "text_metrics": "apd.evaluation.text_metrics",
    # apd.evaluation.qa_metrics
    "top_k_mask": "apd.evaluation.qa_metrics", "cd_scores_over_topk": "apd.evaluation.qa_metrics",
    "elm_over_topk": "apd.evaluation.qa_metrics", "gold_rank": "apd.evaluation.qa_metrics",
    "answer_ppl": "apd.evaluation.qa_metrics", "accuracy_lowest_ppl": "apd.evaluation.qa_metrics",
    "mrr": "apd.evaluation.qa_metrics", "in_topk_filter": "apd.evaluation.qa_metrics",
    "keep_multiple_choice": "apd.evaluation.qa_metrics", "ttest_from_stats": "apd.evaluation.qa_metrics",
    "ttest_per_question": "apd.evaluation.qa_metrics", "gap_closure": "apd.evaluation.qa_metrics",
    "qa_metrics": "apd.evaluation.qa_metrics",
    # apd.evaluation.qa_data
    "QAExample": "apd.evaluation.qa_data", "DatasetUnavailable": "apd.evaluation.qa_data",
    "DatasetInvalid": "apd.evaluation.qa_data",
    "TEMPLATES": "apd.evaluation.qa_data", "render_prompt": "apd.evaluation.qa_data",
    "multirc_passage": "apd.evaluation.qa_data", "DatasetSpec": "apd.evaluation.qa_data",
    "DATASETS": "apd.evaluation.qa_data", "resolve_data_dir": "apd.evaluation.qa_data",
    "subsample": "apd.evaluation.qa_data", "load_dataset": "apd.evaluation.qa_data",
    "try_load": "apd.evaluation.qa_data", "qa_data": "apd.evaluation.qa_data",
    # apd.evaluation.qa_scoring
    "PAPER_INV_T": "apd.evaluation.qa_scoring", "METRICS": "apd.evaluation.qa_scoring",
    "METHOD_ROLES": "apd.evaluation.qa_scoring", "PROTOCOLS": "apd.evaluation.qa_scoring",
    "PAPER_DATASETS": "apd.evaluation.qa_scoring", "EncodedPairs": "apd.evaluation.qa_scoring",
    "encode_pairs": "apd.evaluation.qa_scoring", "iter_answer_log_probs": "apd.evaluation.qa_scoring",
    "ExpertTopK": "apd.evaluation.qa_scoring", "expert_topk": "apd.evaluation.qa_scoring",
    "amateur_at": "apd.evaluation.qa_scoring", "method_token_scores": "apd.evaluation.qa_scoring",
    "answer_ppl_matrix": "apd.evaluation.qa_scoring", "answer_rr_matrix": "apd.evaluation.qa_scoring",
    "answers_in_topk": "apd.evaluation.qa_scoring", "QAScores": "apd.evaluation.qa_scoring",
    "question_group": "apd.evaluation.qa_scoring", "world_examples": "apd.evaluation.qa_scoring",
    "score_qa": "apd.evaluation.qa_scoring", "NothingToChoose": "apd.evaluation.qa_scoring",
    "best_index": "apd.evaluation.qa_scoring", "Picked": "apd.evaluation.qa_scoring",
    "half_split": "apd.evaluation.qa_scoring", "pick": "apd.evaluation.qa_scoring",
    "picked_values": "apd.evaluation.qa_scoring", "qa_summary": "apd.evaluation.qa_scoring",
    "significance": "apd.evaluation.qa_scoring", "gap_rows": "apd.evaluation.qa_scoring",
    "chance_accuracy": "apd.evaluation.qa_scoring", "LAYOUT_ROWS": "apd.evaluation.qa_scoring",
    "table_layout": "apd.evaluation.qa_scoring", "qa_scoring": "apd.evaluation.qa_scoring",
    # apd.evaluation.probcurves
    "cd_probs_over_topk": "apd.evaluation.probcurves", "prompt_curves": "apd.evaluation.probcurves",
    "top_token_curves": "apd.evaluation.probcurves", "score_answers": "apd.evaluation.probcurves",
    "probcurves": "apd.evaluation.probcurves",
    # apd.evaluation.linearity
    "LineFits": "apd.evaluation.linearity", "fit_lines": "apd.evaluation.linearity",
    "interpolate_members": "apd.evaluation.linearity", "hlm_prediction_check": "apd.evaluation.linearity",
    "hlm_vs_real_table": "apd.evaluation.linearity", "linearity": "apd.evaluation.linearity",
    # apd.evaluation.blindness
    "cd_scores": "apd.evaluation.blindness", "Blindness": "apd.evaluation.blindness",
    "find_obvious_blindness": "apd.evaluation.blindness", "blindness_table": "apd.evaluation.blindness",
    "clearest_example": "apd.evaluation.blindness", "blindness": "apd.evaluation.blindness",
    # apd.evaluation.ablations
    "GROUPS": "apd.evaluation.ablations", "GROUP_TITLES": "apd.evaluation.ablations",
    "LAMBDA3_FACTORS": "apd.evaluation.ablations", "MEMBER_SUBSETS": "apd.evaluation.ablations",
    "Ablation": "apd.evaluation.ablations", "ABLATIONS": "apd.evaluation.ablations",
    "ABLATION_NAMES": "apd.evaluation.ablations", "MAIN": "apd.evaluation.ablations",
    "get_ablation": "apd.evaluation.ablations", "member_subset": "apd.evaluation.ablations",
    "with_members": "apd.evaluation.ablations", "variant_config": "apd.evaluation.ablations",
    "variant_configs": "apd.evaluation.ablations", "config_changes": "apd.evaluation.ablations",
    "QASet": "apd.evaluation.ablations", "score_amateur": "apd.evaluation.ablations",
    "pick_inv_T": "apd.evaluation.ablations", "summarise": "apd.evaluation.ablations",
    "AblationResults": "apd.evaluation.ablations", "texts_for_tokens": "apd.evaluation.ablations",
    "training_record": "apd.evaluation.ablations", "validation_losses": "apd.evaluation.ablations",
    "run_ablations": "apd.evaluation.ablations", "reference_rows": "apd.evaluation.ablations",
    "paired_difference": "apd.evaluation.ablations", "verdict": "apd.evaluation.ablations",
    "verdicts": "apd.evaluation.ablations", "label": "apd.evaluation.ablations",
    "ablations": "apd.evaluation.ablations",
    # apd.evaluation.factuality
    "factuality": "apd.evaluation.factuality",
})
