"""Report: results and run records, tables (``show``, ``compare_word``), the house plot style, the paper's numbers, claims and verdicts, the book runner.
"""
from apd.base.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    # apd.report.results
    "RECORDED_PACKAGES": "apd.report.results", "BY_HAND_SUFFIX": "apd.report.results",
    "UnknownParameterError": "apd.report.results", "results_dir": "apd.report.results",
    "write_dir": "apd.report.results", "injected_parameters": "apd.report.results",
    "check_injected": "apd.report.results", "package_versions": "apd.report.results",
    "describe_device": "apd.report.results", "parameters_from_namespace": "apd.report.results",
    "Run": "apd.report.results", "notebook_defaults": "apd.report.results",
    "run_record_html": "apd.report.results", "run_record_markdown": "apd.report.results",
    "load_results": "apd.report.results", "last_run_outputs": "apd.report.results",
    "results": "apd.report.results",
    # apd.report.plots
    "XLABEL_LOG_SIZE": "apd.report.plots", "COLORS": "apd.report.plots", "PALETTE": "apd.report.plots",
    "use_style": "apd.report.plots", "figure": "apd.report.plots", "probability_curve": "apd.report.plots",
    "wrap": "apd.report.plots", "panels": "apd.report.plots", "plots": "apd.report.plots",
    # apd.report.paper
    "COLUMNS": "apd.report.paper", "NA": "apd.report.paper", "QA_PPL_COLUMNS": "apd.report.paper",
    "MRC_COLUMNS": "apd.report.paper", "MRR_DATASETS": "apd.report.paper",
    "table1_factuality_prompts": "apd.report.paper", "table2_qa_pythia": "apd.report.paper",
    "table3_qa_opt_qwen": "apd.report.paper", "table4_mrc": "apd.report.paper",
    "table5_mrr": "apd.report.paper", "table6_human_eval": "apd.report.paper",
    "table7_story_writing": "apd.report.paper", "TABLES": "apd.report.paper", "table": "apd.report.paper",
    "all_tables": "apd.report.paper", "qa_accuracy_sizes": "apd.report.paper",
    "claim_texts": "apd.report.paper", "PaperItem": "apd.report.paper", "PAPER_TABLES": "apd.report.paper",
    "PAPER_FIGURES": "apd.report.paper", "paper": "apd.report.paper",
    # apd.report.evidence
    "REPRODUCED": "apd.report.evidence", "NOT_REPRODUCED": "apd.report.evidence",
    "NOT_TESTABLE": "apd.report.evidence", "INCONCLUSIVE": "apd.report.evidence",
    "VERDICTS": "apd.report.evidence", "PICO_PROFILES": "apd.report.evidence",
    "HUB_PROFILES": "apd.report.evidence", "KINDS": "apd.report.evidence", "Cell": "apd.report.evidence",
    "Missing": "apd.report.evidence", "Outcome": "apd.report.evidence", "Comparison": "apd.report.evidence",
    "less_than": "apd.report.evidence", "greater_than": "apd.report.evidence",
    "at_most": "apd.report.evidence", "at_least": "apd.report.evidence",
    "within_relative": "apd.report.evidence", "more_than_z_se": "apd.report.evidence",
    "detects": "apd.report.evidence", "is_largest": "apd.report.evidence",
    "difference_larger": "apd.report.evidence", "non_increasing": "apd.report.evidence",
    "EvidenceSpec": "apd.report.evidence", "Claim": "apd.report.evidence", "Results": "apd.report.evidence",
    "check": "apd.report.evidence", "checks": "apd.report.evidence", "verdict_of": "apd.report.evidence",
    "judge": "apd.report.evidence", "verdict_counts": "apd.report.evidence",
    "claims_markdown": "apd.report.evidence", "evidence": "apd.report.evidence",
    # apd.report.claims
    "ABLATIONS_TABLE": "apd.report.claims", "QA_WORLD_GAIN_TABLE": "apd.report.claims",
<<<<<<< HEAD
    "QA_DATASETS_TABLE": "apd.report.claims", "paper_qa_gain": "apd.report.claims",
    "paper_ne_er_gain": "apd.report.claims", "paper_real_gain": "apd.report.claims",
=======
    "QA_DATASETS_TABLE": "apd.report.claims", "RELEASE_CONTEXT": "apd.report.claims",
    "paper_qa_gain": "apd.report.claims", "paper_ne_er_gain": "apd.report.claims",
>>>>>>> apd-variants
    "paper_claims": "apd.report.claims", "claims": "apd.report.claims",
    # apd.report.coverage
    "figure_status": "apd.report.coverage", "MIN_SAME_ROWS_ITEMS": "apd.report.coverage",
    "table_status": "apd.report.coverage", "coverage": "apd.report.coverage",
    # apd.report.beside
    "REGENERATED_COLUMNS": "apd.report.beside", "qa_summary_rows": "apd.report.beside",
    "qa_gap_rows": "apd.report.beside", "ADAPTERS": "apd.report.beside",
    "regenerated_rows": "apd.report.beside", "ROLE_NAMES": "apd.report.beside", "Beside": "apd.report.beside",
    "paper_beside_ours": "apd.report.beside", "paper_rows": "apd.report.beside",
    "beside": "apd.report.beside",
    # apd.report.book
    "ROOT": "apd.report.book", "INJECTED_TAG": "apd.report.book", "RUNNER_ENV": "apd.report.book",
    "STAGING_ENV": "apd.report.book", "KEY_ENV": "apd.report.book", "PROFILE_NAME": "apd.report.book",
    "KERNEL_ENV": "apd.report.book", "BookError": "apd.report.book", "toc_notebooks": "apd.report.book",
    "notebook_path": "apd.report.book", "notebook_parameters": "apd.report.book",
    "parameter_defaults": "apd.report.book", "check_type": "apd.report.book",
    "profile_path": "apd.report.book", "load_profile": "apd.report.book",
    "validate_profile": "apd.report.book", "parse_value": "apd.report.book",
    "parse_overrides": "apd.report.book", "check_environment": "apd.report.book",
    "cache_key": "apd.report.book", "results_root": "apd.report.book", "chapter_files": "apd.report.book",
    "results_intact": "apd.report.book", "recover": "apd.report.book", "commit_results": "apd.report.book",
    "kernel_environment": "apd.report.book", "execute": "apd.report.book",
    "FINDINGS_MARKER": "apd.report.book", "insert_findings": "apd.report.book", "stage": "apd.report.book",
    "render": "apd.report.book", "resolve": "apd.report.book", "build": "apd.report.book",
    "main": "apd.report.book", "book": "apd.report.book",
    # apd.report.findings
    "STRENGTH": "apd.report.findings", "CHAPTER_TITLES": "apd.report.findings",
    "scale_note": "apd.report.findings", "findings_markdown": "apd.report.findings",
    "variant_note": "apd.report.findings", "gate_verdict": "apd.report.findings",
    "family_saturation": "apd.report.findings", "findings": "apd.report.findings",
    # apd.report.pages
    "GLUE_ROLE": "apd.report.pages", "MISSING_TEXT": "apd.report.pages", "present": "apd.report.pages",
    "conditions": "apd.report.pages", "cell_shown": "apd.report.pages", "select_cells": "apd.report.pages",
    "render_markdown": "apd.report.pages", "page_markdown": "apd.report.pages",
    "MISSING_WORD": "apd.report.pages", "missing_walls": "apd.report.pages", "paragraphs": "apd.report.pages",
    "pages": "apd.report.pages",
    # apd.report.tables
    "MISSING": "apd.report.tables", "TABLE_CSS": "apd.report.tables", "format_number": "apd.report.tables",
    "format_label": "apd.report.tables", "show": "apd.report.tables", "compare_word": "apd.report.tables",
    "better_word": "apd.report.tables", "short_path": "apd.report.tables", "tables": "apd.report.tables",
})
