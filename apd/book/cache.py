"""A chapter's cache key (its notebook, parameters, the ``apd`` sources and data files, the lock file,
where its data come from and the digests of the data files it reads, its input files, chained with
the keys of the chapters it needs, :data:`apd.chapters.graph.NEEDS`), and whether an executed notebook is still
current: same key, and every results file it committed still there, unedited; and which chapters'
committed results no longer match the digests recorded when they were written (:func:`damaged_chapters`)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from apd.base.io import file_digest, file_sha256
from apd.book import data_check
from apd.book.params import defaults_of
from apd.book.project import ROOT, notebook_path
from apd.chapters.graph import NEEDS
from apd.report.results import DamagedResultsError, recorded_digests


def _source_fingerprint(root: Path) -> str:
    """Hash of every ``apd`` source and data file (``*.py`` and ``*.yml``, such as the claims table
    ``apd/report/claims.yml``; subpackages included, by relative path) and the lock file."""
    h = hashlib.sha256()
    package = root / "apd"
    files = sorted([*package.rglob("*.py"), *package.rglob("*.yml")]) + [root / "requirements.lock"]
    for path in files:
        if path.is_file():
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def cache_key(stem: str, params: dict, root: Path = ROOT, upstream: str = "") -> str:
    """Key of one execution: the notebook, its parameters, the ``apd`` sources and the lock file,
    where its data come from (:func:`data_source`) and the digests of the data files it reads
    (:func:`data_fingerprint`: a repaired or replaced file re-executes the chapter), chained with
    ``upstream``, the keys of the chapters it needs (:func:`upstream_key`), since it reads their
    artifacts and results."""
    h = hashlib.sha256()
    h.update(upstream.encode())
    h.update(notebook_path(stem, root).read_bytes())
    h.update(json.dumps(params, sort_keys=True, default=str).encode())
    h.update(_source_fingerprint(root).encode())
    h.update(data_source().encode())
    h.update(data_fingerprint(stem, params, root).encode())
    h.update(input_fingerprint(stem, params, root).encode())
    return h.hexdigest()[:16]


def upstream_key(stem: str, keys: dict[str, str], graph: dict[str, tuple[str, ...]] | None = None) -> str:
    """The part of ``stem``'s key that chains it to the chapters it needs: ``need:key`` of each
    chapter of ``graph[stem]`` (default :data:`apd.chapters.graph.NEEDS`) that has a key in ``keys``,
    sorted by name and joined by commas; empty for a chapter that needs none (or is not in the
    graph: a project of its own).

    Example:
        >>> upstream_key("c", {"a": "k1", "b": "k2"}, {"c": ("b", "a")})
        'a:k1,b:k2'
    """
    graph = NEEDS if graph is None else graph
    return ",".join(f"{need}:{keys[need]}" for need in sorted(graph.get(stem, ())) if need in keys)


def chapter_keys(
    stems: list[str], params: dict[str, dict], root: Path = ROOT, graph: dict[str, tuple[str, ...]] | None = None
) -> dict[str, tuple[str, str]]:
    """``{stem: (key, upstream)}`` for ``stems`` in book order, each chained to the keys of the
    chapters it needs (:func:`upstream_key`): computed up front, from the inputs alone, so that they
    do not depend on the order the chapters run in. A need that is not among ``stems`` is left out."""
    keys: dict[str, str] = {}
    out: dict[str, tuple[str, str]] = {}
    for stem in stems:
        up = upstream_key(stem, keys, graph)
        keys[stem] = cache_key(stem, params[stem], root, up)
        out[stem] = (keys[stem], up)
    return out


#: Committed files a chapter reads besides the package and its parameters (relative to the root); a
#: chapter parameter naming a file (``table_path``) replaces its default.
CHAPTER_INPUTS = {"testbed": ("docs/testbed/configurations.csv",)}


def input_fingerprint(stem: str, params: dict, root: Path = ROOT) -> str:
    """SHA-256 of the files chapter ``stem`` reads (:data:`CHAPTER_INPUTS`, or the file its
    ``table_path`` parameter names), so that a new row in the testbed table re-executes that chapter;
    empty for a chapter that reads none. A missing file hashes as ``missing``."""
    paths = [params["table_path"]] if params.get("table_path") else list(CHAPTER_INPUTS.get(stem, ()))
    parts = []
    for rel in paths:
        path = Path(rel) if Path(rel).is_absolute() else Path(root) / rel
        parts.append(f"{rel}:{file_digest(path) if path.is_file() else 'missing'}")
    return ";".join(parts)


def data_source() -> str:
    """Where the chapters read their datasets, part of every cache key: the resolved
    ``$APD_DATA_DIR``, else ``hub`` (the Hub and the original sources)."""
    folder = os.environ.get("APD_DATA_DIR")
    return f"data:{Path(folder).expanduser().resolve()}" if folder else "data:hub"


def data_fingerprint(stem: str, params: dict, root: Path = ROOT) -> str:
    """The SHA-256 of every file chapter ``stem`` reads from a data directory (its ``data_dir``, else
    ``$APD_DATA_DIR``: :func:`apd.book.data_check.local_files`), so that a damaged file replaced by a
    good copy re-executes the chapter; empty for a chapter that reads none, or reads the Hub. Each
    file is hashed once per process and size and mtime (:func:`apd.base.io.file_sha256`; the default
    profile's 9 files, 19 MB, take about 0.04 s). A missing file hashes as ``missing``."""
    if stem not in data_check.DATA_CHAPTERS:
        return ""
    parts = []
    for need, path in data_check.local_files({stem: params}, [stem], root, defaults_of([stem], root)):
        parts.append(f"{need.file}:{file_sha256(path) if path.is_file() else 'missing'}")
    return ";".join(sorted(set(parts)))


def damaged_files(dest: Path, digests: dict[str, str]) -> list[str]:
    """The files of ``digests`` (``{relative path: sha256}``) that are missing under ``dest`` or
    differ from their digest."""
    return [rel for rel, digest in digests.items() if not (dest / rel).is_file() or file_digest(dest / rel) != digest]


def results_intact(dest: Path, digests: dict[str, str] | None) -> bool:
    """Whether every file of ``digests`` (``{relative path: sha256}``) exists under ``dest`` with
    that digest. ``None`` (an executed notebook from before digests were kept) is not intact."""
    return digests is not None and not damaged_files(dest, digests)


def damaged_results(dest: Path, stem: str) -> list[str]:
    """The files of chapter ``stem``'s last committed run in ``dest`` (``results/<profile>``) that
    are missing or differ from the digests its run record holds (``results_sha256``, recorded when
    they were written: :func:`apd.book.staging.commit_results`); the run record itself when it does
    not parse. Empty when the chapter has not run, or its record holds no digests (an older run).

    Example:
        >>> import tempfile
        >>> dest = Path(tempfile.mkdtemp())
        >>> _ = (dest / "runs").mkdir(), (dest / "a.json").write_text("{}")
        >>> _ = (dest / "runs" / "a.json").write_text(json.dumps({"results_sha256": {"a.json": file_digest(dest / "a.json")}}))
        >>> damaged_results(dest, "a"), (dest / "a.json").write_text("{ damaged"), damaged_results(dest, "a")
        ([], 9, ['a.json'])
    """
    try:
        return damaged_files(dest, recorded_digests(dest, stem))
    except DamagedResultsError:
        return [f"runs/{stem}.json"]


def damaged_chapters(
    stems: list[str], dest: Path, graph: dict[str, tuple[str, ...]] | None = None
) -> dict[str, list[str]]:
    """``{chapter: its damaged files}`` (:func:`damaged_results`) for the chapters of ``stems`` and
    every chapter they need, directly or not (``graph``, default :data:`apd.chapters.graph.NEEDS`)."""
    graph = NEEDS if graph is None else graph
    out: dict[str, list[str]] = {}
    seen: set[str] = set()
    todo = list(stems)
    while todo:
        stem = todo.pop()
        if stem not in seen:
            seen.add(stem)
            out[stem] = damaged_results(dest, stem)
            todo += graph.get(stem, ())
    return {stem: files for stem, files in out.items() if files}


def is_cached(out: Path, key: str, dest: Path | None = None) -> bool:
    """The executed notebook ``out`` has cache key ``key`` and (with ``dest``) its results files
    in ``dest`` are all there, unedited."""
    if not out.is_file():
        return False
    try:
        meta = json.loads(out.read_text())["metadata"].get("apd", {})
    except (ValueError, KeyError):
        return False
    if meta.get("cache_key") != key:
        return False
    return dest is None or results_intact(dest, meta.get("results_sha256"))
