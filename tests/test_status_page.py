"""The build report page (book/status.md): every chapter's run record, executed or cached."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_build_report_page_lists_every_chapter_from_its_run_record(tmp_path):
    """The status page: one row per chapter from ``results/<profile>/runs``, executed or cached as the
    last build logged it, in the book's table of contents and linked from the intro."""
    from apd.book import status

    results = tmp_path / "results"
    (results / "p" / "runs").mkdir(parents=True)
    rec = {
        "started": "2030-01-01T10:00:00",
        "wall_time_s": 3.25,
        "device": "cpu (x86_64, 2 threads)",
        "packages": {"apd": "0.1.0", "torch": "2.13.0+cpu"},
        "results_sha256": {"a.json": "ab", "b.csv": "cd"},
    }
    (results / "p" / "runs" / "a.json").write_text(json.dumps(rec))
    status.log_chapter("p", "a", "cached", 0.4, tmp_path)
    page = status.insert_status(f"# Build report\n\n{status.STATUS_MARKER}\n", "p", ["a", "b"], results, tmp_path)
    row_a = next(line for line in page.splitlines() if line.startswith("| a |"))
    assert "2030-01-01 10:00:00" in row_a and "| cached |" in row_a and "3.2 s" in row_a
    assert "cpu (x86_64, 2 threads)" in row_a and "2 files, " in row_a
    assert "| b | never | not run |" in page
    assert "apd 0.1.0, torch 2.13.0+cpu" in page and status.STATUS_MARKER not in page
    assert "book/status" in (REPO / "_toc.yml").read_text()
    assert status.STATUS_MARKER in (REPO / "book" / "status.md").read_text()
    assert "{doc}`status`" in (REPO / "book" / "about.md").read_text()


def test_build_report_lists_the_sections_skipped_for_lack_of_data(tmp_path):
    """A chapter that skipped a section (a ``*_data_missing`` result) is listed with the line
    that says what is missing; a build that skipped none shows no such list."""
    from apd.book import status

    results = tmp_path / "results"
    (results / "p" / "runs").mkdir(parents=True)
    for stem in ("a", "b"):
        (results / "p" / "runs" / f"{stem}.json").write_text(json.dumps({"started": "2030-01-01T10:00:00"}))
    (results / "p" / "a.json").write_text(json.dumps({"x": 1}))
    page = f"# Build report\n\n{status.STATUS_MARKER}\n"
    assert "skipped" not in status.insert_status(page, "p", ["a", "b"], results, tmp_path)
    line = "The paper's QA datasets are not on this machine: set APD_DATA_DIR; this section is skipped."
    (results / "p" / "b.json").write_text(json.dumps({"qa_data_missing": line, "n": 3}))
    filled = status.insert_status(page, "p", ["a", "b"], results, tmp_path)
    assert "Sections skipped in this build:" in filled and f"- **b**: {line}" in filled
    assert status.read_skipped("p", ["a", "b"], results) == {"b": [line]}
