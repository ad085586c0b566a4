"""Report: results and run records, tables (``show``, ``compare_word``), the house plot style, the paper's
numbers, claims and verdicts, findings. The book runner is :mod:`apd.book`, which this stage never imports.
"""
from apd.base.names import on_first_use as _on_first_use
from apd.base.names import renamed as _renamed_getattr

from apd.report import (
    results, plots, paper, evidence, claims, coverage, beside, findings, tables, testbed,
)
from apd.report.results import (
    RECORDED_PACKAGES, BY_HAND_SUFFIX, UnknownParameterError, results_dir, write_dir, injected_parameters,
    check_injected, package_versions, describe_device, parameters_from_namespace, format_value, Run, notebook_defaults,
    run_record_html, run_record_markdown, load_results, last_run_outputs,
)
from apd.report.plots import (
    XLABEL_LOG_SIZE, COLORS, PALETTE, use_style, figure, probability_curve, wrap, panels, legend, caption_metadata,
    figure_cells, sphinx_setup,
)
from apd.report.paper import (
    COLUMNS, NA, QA_PPL_COLUMNS, MRC_COLUMNS, MRR_DATASETS, table1_factuality_prompts, table2_qa_pythia,
    table3_qa_opt_qwen, table4_mrc, table5_mrr, table6_human_eval, table7_story_writing, TABLES, table, all_tables,
    qa_accuracy_sizes, claim_texts, PaperItem, PAPER_TABLES, PAPER_FIGURES,
)
from apd.report.evidence import (
    REPRODUCED, NOT_REPRODUCED, NOT_TESTABLE, INCONCLUSIVE, VERDICTS, PICO_PROFILES, HUB_PROFILES, KINDS, Cell,
    Missing, Outcome, Comparison, less_than, greater_than, at_most, at_least, within_relative, more_than_z_se, detects,
    significant, is_largest, difference_larger, non_increasing, EvidenceSpec, PaperClaim, Results, check, checks,
    verdict_of, in_words, preconditions_text, judge, verdict_counts, claims_markdown,
)
from apd.report.claims import (
    ABLATIONS_TABLE, QA_WORLD_GAIN_TABLE, QA_DATASETS_TABLE, RELEASE_CONTEXT, paper_qa_gain, paper_qa_share,
    paper_fly_share, paper_ne_er_gain, paper_ne_er_share, paper_real_gain, paper_real_share, KNOWN_ANSWER,
    paper_claims,
)
from apd.report.coverage import figure_status, MIN_SAME_ROWS_ITEMS, table_status
from apd.report.beside import (
    REGENERATED_COLUMNS, qa_summary_rows, qa_gap_rows, ADAPTERS, regenerated_rows, ROLE_NAMES, Beside,
    paper_beside_ours, paper_rows,
)
from apd.report.findings import (
    STRENGTH, CHAPTER_TITLES, size_in_words, scale_note, findings_markdown, variant_note, gate_verdict,
    family_saturation,
)
from apd.report.tables import (
    MISSING, TABLE_CSS, MAX_COLUMNS, Folded, format_number, format_label, show, compare_word, better_word, short_path,
    se_decimals, plus_minus,
)
from apd.report.testbed import (
    TESTBED_TABLE, TESTBED_KEY, table_path, read_configurations, append_configuration, TESTBED_SUMMARY, summary_table,
)

# The book runner and the modules only it uses live in apd.book (the stages never import it);
# their old names here load it on first use.
_ON_FIRST_USE = {
    "data_check": ("apd.book.data_check", (
        "DATA_ENV", "DataNeed", "DataUnavailable", "data_needs", "hub_offline", "reachable", "check_data",
    )),
    "status": ("apd.book.status", (
        "STATUS_MARKER", "build_log_path", "log_chapter", "results_digest", "read_records", "status_markdown",
        "insert_status",
    )),
    "terminal": ("apd.book.terminal", (
        "IPCKernelManager", "duration", "last_wall_time", "progress_line", "ChapterProgress",
    )),
    "schema": ("apd.book.schema", (
        "TOP_KEYS", "PICO_SCALES", "FAMILIES", "KNOWN_ANSWER_SIZES", "DEVICE", "ProfileShapeError", "UniqueKeyLoader",
        "load_yaml", "shape_problems", "Rule", "number", "one_of", "list_of", "ANY", "TEXT", "NAME", "FLAG", "COUNT",
        "COUNT0", "SEED", "POSITIVE", "NONNEG", "PROBABILITY", "DEVICE_RULE", "RANGES", "rule_for", "check_value",
    )),
    "pages": ("apd.book.pages", (
        "GLUE_ROLE", "MISSING_TEXT", "present", "conditions", "cell_shown", "select_cells", "render_markdown",
        "page_markdown", "MISSING_WORD", "missing_walls", "paragraphs", "BLOCK", "fill_page",
    )),
    "book": ("apd.book.runner", (
        "ROOT", "INJECTED_TAG", "RUNNER_ENV", "STAGING_ENV", "KEY_ENV", "PROFILE_NAME", "KERNEL_ENV", "BookError",
        "toc_notebooks", "notebook_path", "notebook_parameters", "parameter_defaults", "check_type", "profile_path",
        "load_profile", "read_profile_file", "validate_profile", "parse_value", "parse_overrides", "check_environment",
        "environment_problems", "cache_folder", "folder_problems", "INPUT_PATHS", "input_path_problems",
        "data_problems", "preflight", "use_data_dir", "preflight_data", "cache_key", "data_source", "results_root",
        "chapter_files", "results_intact", "recover", "commit_results", "kernel_environment", "relay_notices",
        "execute", "lock_paths", "build_lock", "portable_notebook", "FINDINGS_MARKER", "insert_findings",
        "summary_page", "stage", "render", "resolve", "build", "main",
    )),
}


# the names above load on first use; old names, renamed to say which of two things they are, warn
__getattr__ = _on_first_use(__name__, _ON_FIRST_USE,
                            then=_renamed_getattr(__name__, {"Claim": "PaperClaim"}, globals(), stacklevel=3))


__all__ = [
    "ABLATIONS_TABLE", "ADAPTERS", "BY_HAND_SUFFIX", "Beside", "CHAPTER_TITLES", "COLORS", "COLUMNS", "Cell",
    "Comparison", "EvidenceSpec", "Folded", "HUB_PROFILES", "INCONCLUSIVE", "KINDS", "KNOWN_ANSWER", "MAX_COLUMNS",
    "MIN_SAME_ROWS_ITEMS", "MISSING", "MRC_COLUMNS", "MRR_DATASETS", "Missing", "NA", "NOT_REPRODUCED", "NOT_TESTABLE",
    "Outcome", "PALETTE", "PAPER_FIGURES", "PAPER_TABLES", "PICO_PROFILES", "PaperClaim", "PaperItem",
    "QA_DATASETS_TABLE", "QA_PPL_COLUMNS", "QA_WORLD_GAIN_TABLE", "RECORDED_PACKAGES", "REGENERATED_COLUMNS",
    "RELEASE_CONTEXT", "REPRODUCED", "ROLE_NAMES", "Results", "Run", "STRENGTH", "TABLES", "TABLE_CSS", "TESTBED_KEY",
    "TESTBED_SUMMARY", "TESTBED_TABLE", "UnknownParameterError", "VERDICTS", "XLABEL_LOG_SIZE", "all_tables",
    "append_configuration", "at_least", "at_most", "beside", "better_word", "caption_metadata", "check",
    "check_injected", "checks", "claim_texts", "claims", "claims_markdown", "compare_word", "coverage",
    "describe_device", "detects", "difference_larger", "evidence", "family_saturation", "figure", "figure_cells",
    "figure_status", "findings", "findings_markdown", "format_label", "format_number", "format_value", "gate_verdict",
    "greater_than", "in_words", "injected_parameters", "is_largest", "judge", "last_run_outputs", "legend",
    "less_than", "load_results", "more_than_z_se", "non_increasing", "notebook_defaults", "package_versions", "panels",
    "paper", "paper_beside_ours", "paper_claims", "paper_fly_share", "paper_ne_er_gain", "paper_ne_er_share",
    "paper_qa_gain", "paper_qa_share", "paper_real_gain", "paper_real_share", "paper_rows",
    "parameters_from_namespace", "plots", "plus_minus", "preconditions_text", "probability_curve", "qa_accuracy_sizes",
    "qa_gap_rows", "qa_summary_rows", "read_configurations", "regenerated_rows", "results", "results_dir",
    "run_record_html", "run_record_markdown", "scale_note", "se_decimals", "short_path", "show", "significant",
    "size_in_words", "sphinx_setup", "summary_table", "table", "table1_factuality_prompts", "table2_qa_pythia",
    "table3_qa_opt_qwen", "table4_mrc", "table5_mrr", "table6_human_eval", "table7_story_writing", "table_path",
    "table_status", "tables", "testbed", "use_style", "variant_note", "verdict_counts", "verdict_of",
    "within_relative", "wrap", "write_dir",
]
__all__ += [name for attribute, (_, names) in _ON_FIRST_USE.items() for name in (attribute, *names)]
