"""The book runner: execute the chapters' notebooks under a profile and render the book.

    python -m apd --profile default          # or python -m apd.book, make book

``runner`` (profiles, preflight, execution with papermill, staged results, rendering), ``schema``
(a profile's shape, types and ranges), ``data_check`` (can the datasets be had), ``pages`` (cells
shown or hidden by the results), ``status`` (the build report page), ``terminal`` (a chapter's line
while it runs). The science stages (``apd.base`` ... ``apd.report``) never import this package.
"""
from apd.base.names import renamed as _renamed_getattr
from apd.book import data_check, pages, runner, schema, status, terminal
from apd.book.runner import (
    FINDINGS_MARKER, INJECTED_TAG, INPUT_PATHS, KERNEL_ENV, PREFLIGHT_CHECKS, PROFILE_NAME, ROOT, BookError, build_book, build_lock,
    cache_folder, cache_key, chapter_files, check_environment, check_type, commit_results, data_problems, data_source,
    environment_problems, execute, folder_problems, input_path_problems, insert_findings, kernel_environment,
    load_profile, lock_paths, main, notebook_parameters, notebook_path, parameter_defaults, parse_overrides,
    parse_value, portable_notebook, preflight, preflight_data, profile_path, read_profile_file, recover, relay_notices,
    render, resolve, results_intact, results_root, stage, summary_page, toc_notebooks, use_data_dir, validate_profile,
)


# old name (``build`` also names the pico family's builder, apd.family.pico.build)
__getattr__ = _renamed_getattr(__name__, {"build": "build_book"}, globals())


__all__ = [
    "BookError", "FINDINGS_MARKER", "INJECTED_TAG", "INPUT_PATHS", "KERNEL_ENV", "PREFLIGHT_CHECKS", "PROFILE_NAME",
    "ROOT", "build_book", "build_lock", "cache_folder", "cache_key", "chapter_files", "check_environment",
    "check_type", "commit_results", "data_check", "data_problems", "data_source", "environment_problems", "execute",
    "folder_problems", "input_path_problems", "insert_findings", "kernel_environment", "load_profile", "lock_paths",
    "main", "notebook_parameters", "notebook_path", "pages", "parameter_defaults", "parse_overrides", "parse_value",
    "portable_notebook", "preflight", "preflight_data", "profile_path", "read_profile_file", "recover",
    "relay_notices", "render", "resolve", "results_intact", "results_root", "runner", "schema", "stage", "status",
    "summary_page", "terminal", "toc_notebooks", "use_data_dir", "validate_profile",
]
