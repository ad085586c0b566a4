"""Report: results and run records, tables (``show``, ``compare_word``), the house plot style, the paper's
numbers, claims and verdicts, findings. The book runner is :mod:`apd.book`, which this stage never imports.
"""
import importlib

from apd.base.deprecation import renamed

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
_MOVED = {"data_check": "apd.book.data_check", "status": "apd.book.status", "terminal": "apd.book.terminal",
          "schema": "apd.book.schema", "pages": "apd.book.pages", "book": "apd.book.runner"}
_ON_FIRST_USE = {
    "data_check": ("DATA_ENV", "DataNeed", "DataUnavailable", "data_needs", "hub_offline", "reachable", "check_data",),
    "status": ("STATUS_MARKER", "build_log_path", "log_chapter", "results_digest", "read_records", "status_markdown",
        "insert_status",),
    "terminal": ("IPCKernelManager", "duration", "last_wall_time", "progress_line", "ChapterProgress",),
    "schema": ("TOP_KEYS", "PICO_SCALES", "FAMILIES", "KNOWN_ANSWER_SIZES", "DEVICE", "ProfileShapeError",
        "UniqueKeyLoader", "load_yaml", "shape_problems", "Rule", "number", "one_of", "list_of", "ANY", "TEXT", "NAME",
        "FLAG", "COUNT", "COUNT0", "SEED", "POSITIVE", "NONNEG", "PROBABILITY", "DEVICE_RULE", "RANGES", "rule_for",
        "check_value",),
    "pages": ("GLUE_ROLE", "MISSING_TEXT", "present", "conditions", "cell_shown", "select_cells", "render_markdown",
        "page_markdown", "MISSING_WORD", "missing_walls", "paragraphs", "BLOCK", "fill_page",),
    "book": ("ROOT", "INJECTED_TAG", "RUNNER_ENV", "STAGING_ENV", "KEY_ENV", "PROFILE_NAME", "KERNEL_ENV", "BookError",
        "toc_notebooks", "notebook_path", "notebook_parameters", "parameter_defaults", "check_type", "profile_path",
        "load_profile", "read_profile_file", "validate_profile", "parse_value", "parse_overrides", "check_environment",
        "environment_problems", "cache_folder", "folder_problems", "INPUT_PATHS", "input_path_problems",
        "data_problems", "preflight", "use_data_dir", "preflight_data", "cache_key", "data_source", "results_root",
        "chapter_files", "results_intact", "recover", "commit_results", "kernel_environment", "relay_notices",
        "execute", "lock_paths", "build_lock", "portable_notebook", "FINDINGS_MARKER", "insert_findings",
        "summary_page", "stage", "render", "resolve", "build", "main",),
}


# old names, renamed to say which of two things they are
_RENAMED = {"Claim": "PaperClaim"}
_renamed = renamed(__name__, _RENAMED, globals(), stacklevel=3)


def __getattr__(name: str):
    if name in _RENAMED:
        return _renamed(name)
    for module, names in _ON_FIRST_USE.items():
        if name == module or name in names:
            loaded = importlib.import_module(_MOVED[module])
            return loaded if name == module else getattr(loaded, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(__all__)


__all__ = [
    "results", "plots", "paper", "evidence", "claims", "coverage", "beside", "findings", "tables", "testbed",
    "RECORDED_PACKAGES", "BY_HAND_SUFFIX", "UnknownParameterError", "results_dir", "write_dir", "injected_parameters",
    "check_injected", "package_versions", "describe_device", "parameters_from_namespace", "format_value", "Run",
    "notebook_defaults", "run_record_html", "run_record_markdown", "load_results", "last_run_outputs",
    "XLABEL_LOG_SIZE", "COLORS", "PALETTE", "use_style", "figure", "probability_curve", "wrap", "panels", "legend",
    "caption_metadata", "figure_cells", "sphinx_setup", "COLUMNS", "NA", "QA_PPL_COLUMNS", "MRC_COLUMNS",
    "MRR_DATASETS", "table1_factuality_prompts", "table2_qa_pythia", "table3_qa_opt_qwen", "table4_mrc", "table5_mrr",
    "table6_human_eval", "table7_story_writing", "TABLES", "table", "all_tables", "qa_accuracy_sizes", "claim_texts",
    "PaperItem", "PAPER_TABLES", "PAPER_FIGURES", "REPRODUCED", "NOT_REPRODUCED", "NOT_TESTABLE", "INCONCLUSIVE",
    "VERDICTS", "PICO_PROFILES", "HUB_PROFILES", "KINDS", "Cell", "Missing", "Outcome", "Comparison", "less_than",
    "greater_than", "at_most", "at_least", "within_relative", "more_than_z_se", "detects", "significant", "is_largest",
    "difference_larger", "non_increasing", "EvidenceSpec", "PaperClaim", "Results", "check", "checks", "verdict_of",
    "in_words", "preconditions_text", "judge", "verdict_counts", "claims_markdown", "ABLATIONS_TABLE",
    "QA_WORLD_GAIN_TABLE", "QA_DATASETS_TABLE", "RELEASE_CONTEXT", "paper_qa_gain", "paper_qa_share",
    "paper_fly_share", "paper_ne_er_gain", "paper_ne_er_share", "paper_real_gain", "paper_real_share", "KNOWN_ANSWER",
    "paper_claims", "figure_status", "MIN_SAME_ROWS_ITEMS", "table_status", "REGENERATED_COLUMNS", "qa_summary_rows",
    "qa_gap_rows", "ADAPTERS", "regenerated_rows", "ROLE_NAMES", "Beside", "paper_beside_ours", "paper_rows",
    "STRENGTH", "CHAPTER_TITLES", "size_in_words", "scale_note", "findings_markdown", "variant_note", "gate_verdict",
    "family_saturation", "MISSING", "TABLE_CSS", "MAX_COLUMNS", "Folded", "format_number", "format_label", "show",
    "compare_word", "better_word", "short_path", "se_decimals", "plus_minus", "TESTBED_TABLE", "TESTBED_KEY",
    "table_path", "read_configurations", "append_configuration", "TESTBED_SUMMARY", "summary_table",
]
__all__ += [name for names in _ON_FIRST_USE.values() for name in names] + list(_ON_FIRST_USE)
