"""The book's build report: for each chapter, when it ran, executed or cached, wall time, device,
package versions and the digest of its results, read from the run records in
``results/<profile>/runs/`` and the runner's log of the last build (``_build/<profile>/status.json``);
and the sections the chapters skipped for data this machine does not have (:func:`read_skipped`).

    >>> rec = {"started": "2026-01-02T03:04:05", "wall_time_s": 12.5, "device": "cpu",
    ...        "packages": {"apd": "0.1.0", "torch": "2.13.0"}, "results_sha256": {"a.json": "00"}}
    >>> print(status_markdown({"theorem1": rec}, {"theorem1": {"status": "cached"}}, "smoke").splitlines()[4])
    | theorem1 | 2026-01-02 03:04:05 | cached | 12.5 s | cpu | 1 files, ab5afef4875d |
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

#: Where the build report page takes the table (``book/status.md``).
STATUS_MARKER = "<!-- apd:status -->"


def build_log_path(profile: str, root: Path) -> Path:
    """``_build/<profile>/status.json``: what the last build did with each chapter."""
    return root / "_build" / profile / "status.json"


def log_chapter(profile: str, stem: str, status: str, seconds: float, root: Path) -> None:
    """Note in the build log that ``stem`` was ``status`` ("executed" or "cached") in ``seconds``."""
    path = build_log_path(profile, root)
    try:
        log = json.loads(path.read_text())
    except (OSError, ValueError):
        log = {}
    log[stem] = {"status": status, "seconds": round(seconds, 1), "at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(log, indent=1))
    tmp.replace(path)


def results_digest(record: dict) -> str:
    """``<n> files, <12 hex>``: one SHA-256 over the chapter's results files and their digests."""
    files = record.get("results_sha256") or {}
    h = hashlib.sha256("".join(f"{k}:{v}\n" for k, v in sorted(files.items())).encode())
    return f"{len(files)} files, {h.hexdigest()[:12]}"


def read_records(profile: str, stems: list[str], results: Path) -> dict[str, dict]:
    """``{stem: run record}`` of the chapters that have one under ``results/<profile>/runs``."""
    out = {}
    for stem in stems:
        try:
            out[stem] = json.loads((results / profile / "runs" / f"{stem}.json").read_text())
        except (OSError, ValueError):
            pass
    return out


#: A chapter result whose key ends so is a section skipped for lack of data; its value, the page's
#: one line saying what is missing and how to get it (``qa_data_missing``, ``fp_data_missing``).
SKIPPED_SUFFIX = "_data_missing"


def read_skipped(profile: str, stems: list[str], results: Path) -> dict[str, list[str]]:
    """``{stem: lines}``: the sections each chapter skipped, one line each saying what is missing and
    how to get it (the :data:`SKIPPED_SUFFIX` values of its results file ``results/<profile>/<stem>.json``,
    e.g. a dataset that is not on this machine); chapters that skipped none are left out."""
    out = {}
    for stem in stems:
        try:
            values = json.loads((results / profile / f"{stem}.json").read_text())
        except (OSError, ValueError):
            continue
        lines = (
            [str(v) for k, v in values.items() if k.endswith(SKIPPED_SUFFIX) and v] if isinstance(values, dict) else []
        )
        if lines:
            out[stem] = lines
    return out


def skipped_markdown(skipped: dict[str, list[str]]) -> str:
    """The build report's list of skipped sections (Markdown; empty when none was skipped).

    Example:
        >>> print(skipped_markdown({"qa": ["The QA datasets are not here; this section is skipped."]}))
        Sections skipped in this build:
        <BLANKLINE>
        - **qa**: The QA datasets are not here; this section is skipped.
    """
    if not skipped:
        return ""
    items = [f"- **{stem}**: {line}" for stem, lines in skipped.items() for line in lines]
    return "Sections skipped in this build:\n\n" + "\n".join(items)


def status_markdown(
    records: dict[str, dict],
    log: dict[str, dict],
    profile: str,
    stems: list[str] | None = None,
    skipped: dict[str, list[str]] | None = None,
) -> str:
    """The build report's tables (Markdown): one row per chapter, then the sections the chapters
    skipped (:func:`read_skipped`; nothing when none was), then the package versions."""
    stems = stems or list(records)
    rows = [
        "| chapter | ran (local time) | this build | wall time | device | results (SHA-256) |",
        "|---|---|---|---|---|---|",
    ]
    for stem in stems:
        rec, how = records.get(stem), (log.get(stem) or {}).get("status", "not run")
        if rec is None:
            rows.append(f"| {stem} | never | {how} | | | |")
            continue
        rows.append(
            f"| {stem} | {str(rec.get('started', '')).replace('T', ' ')} | {how} | "
            f"{float(rec.get('wall_time_s') or 0):.1f} s | {rec.get('device', '')} | "
            f"{results_digest(rec)} |"
        )
    groups: dict[str, list[str]] = {}
    for stem in stems:
        packages = (records.get(stem) or {}).get("packages")
        if packages:
            text = ", ".join(f"{k} {v}" for k, v in packages.items())
            groups.setdefault(text, []).append(stem)
    pk = ["| chapters | package versions |", "|---|---|"]
    pk += [f"| {'all' if len(g) == len(records) else ', '.join(g)} | {text} |" for text, g in groups.items()]
    skipped_text = skipped_markdown(skipped or {})
    return (
        f"Profile `{profile}`.\n\n"
        + "\n".join(rows)
        + "\n\n"
        + (skipped_text + "\n\n" if skipped_text else "")
        + "\n".join(pk)
        if records
        else f"No chapter has run under the profile `{profile}` yet."
    )


def insert_status(page: str, profile: str, stems: list[str], results: Path, root: Path) -> str:
    """``page`` with :data:`STATUS_MARKER` replaced by this profile's build report."""
    if STATUS_MARKER not in page:
        return page
    try:
        log = json.loads(build_log_path(profile, root).read_text())
    except (OSError, ValueError):
        log = {}
    records, skipped = read_records(profile, stems, results), read_skipped(profile, stems, results)
    return page.replace(STATUS_MARKER, status_markdown(records, log, profile, stems, skipped))
