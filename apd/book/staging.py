"""Staged results and the build lock: each execution writes into a staging folder of its own;
a finished chapter's files replace its previous ones in ``results/<profile>/`` through a commit
journal (:func:`commit_results`, finished by :func:`recover` if interrupted); one build per checkout
and profile holds the lock (:func:`build_lock`)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import sys
import time
from pathlib import Path

from apd.base.lock import LockBusy, file_lock
from apd.base.notebooks import BookError
from apd.base.io import file_digest
from apd.book.project import ROOT, results_root


def staging_base(profile: str, root: Path) -> Path:
    """``<results root>/.staging/<profile>``: one folder per run, plus the commit journals."""
    return results_root(root) / ".staging" / profile


def new_staging(profile: str, stem: str, root: Path) -> Path:
    """A fresh staging folder for one execution of chapter ``stem``, owned by this run alone:
    ``.staging/<profile>/run-<pid>-<random>/<stem>`` (a second build never touches it)."""
    import uuid

    return staging_base(profile, root) / f"run-{os.getpid()}-{uuid.uuid4().hex[:8]}" / stem


def chapter_files(dest: Path, stem: str) -> set[str]:
    """Paths (relative to ``results/<profile>``) that chapter ``stem``'s last committed run owns:
    ``<stem>.json``, ``runs/<stem>.json`` and what its run record lists."""
    files = {f"{stem}.json", f"runs/{stem}.json"}
    try:
        record = json.loads((dest / "runs" / f"{stem}.json").read_text())
    except (OSError, ValueError):
        return files
    files |= set(record.get("results_sha256") or {})
    files |= {f"figures/{f}.{ext}" for f in record.get("figures") or () for ext in ("png", "pdf")}
    files |= {f"tables/{t}.csv" for t in record.get("tables") or ()}
    return files


def _apply_journal(journal: Path) -> None:
    """Carry out (or finish) one commit: remove the chapter's files the new run did not write, move
    the staged ones into place, run record last; then drop the staging folder and the journal.
    Idempotent, so an interrupted commit is finished by the next build (:func:`recover`)."""
    plan = json.loads(journal.read_text())
    dest, staging = Path(plan["dest"]), Path(plan["staging"])
    for rel in plan["remove"]:
        (dest / rel).unlink(missing_ok=True)
    for rel in plan["move"]:
        src = staging / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dest / rel)
    shutil.rmtree(staging, ignore_errors=True)
    if staging.parent != journal.parent and staging.parent.name.startswith("run-"):
        with contextlib.suppress(OSError):
            staging.parent.rmdir()  # the run's folder, once its last chapter is committed
    journal.unlink(missing_ok=True)


def recover(profile: str, root: Path = ROOT) -> list[str]:
    """Finish commits an interrupted build left half done, and drop staging folders of runs that
    never finished; return the chapters whose commit was finished. Call it only while holding the
    profile's build lock (:func:`build_lock`): then no other run is using those folders."""
    base = staging_base(profile, root)
    done = []
    for journal in sorted(base.glob("*.commit.json")):
        _apply_journal(journal)
        done.append(journal.name.removesuffix(".commit.json"))
    if base.is_dir():
        for folder in base.iterdir():
            if folder.is_dir():
                shutil.rmtree(folder, ignore_errors=True)
    return done


def commit_results(
    profile: str, stem: str, key: str, root: Path = ROOT, staging: Path | None = None
) -> dict[str, str]:
    """Move chapter ``stem``'s staged results (``staging``, default ``.staging/<profile>/<stem>``)
    into ``results/<profile>/``, replacing its previous files (those the new run no longer writes
    are removed). The run record gets ``cache_key`` and ``results_sha256`` (every other file's
    digest). Returns ``{relative path: sha256}`` of every committed file, run record included."""
    staging = Path(staging) if staging is not None else staging_base(profile, root) / stem
    dest = results_root(root) / profile
    new = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
    record_rel = f"runs/{stem}.json"
    if record_rel in new:
        record_path = staging / record_rel
        record = json.loads(record_path.read_text())
        record["cache_key"] = key
        record["results_sha256"] = {rel: file_digest(staging / rel) for rel in new if rel != record_rel}
        record_path.write_text(json.dumps(record, indent=2, default=str) + "\n")
        new = [rel for rel in new if rel != record_rel] + [record_rel]  # the record moves last
    digests = {rel: file_digest(staging / rel) for rel in new}
    journal = staging_base(profile, root) / f"{stem}.commit.json"
    tmp = journal.with_name(journal.name + ".tmp")
    tmp.write_text(
        json.dumps(
            {
                "dest": str(dest),
                "staging": str(staging),
                "move": new,
                "remove": sorted(chapter_files(dest, stem) - set(new)),
            }
        )
    )
    os.replace(tmp, journal)
    _apply_journal(journal)
    return digests


def lock_paths(profile: str, root: Path = ROOT) -> list[Path]:
    """The lock files a build of ``profile`` holds: one beside its staging folders (guarding
    ``results/<profile>/``, wherever ``$APD_RESULTS_DIR`` puts it) and one in ``_build/<profile>/``
    (guarding the executed notebooks and the HTML). Always taken in this order."""
    return [staging_base(profile, root).with_suffix(".lock"), root / "_build" / profile / "build.lock"]


@contextlib.contextmanager
def build_lock(profile: str, root: Path = ROOT, wait: bool = True):
    """Hold the build lock of ``profile`` for the block: a second build of the same profile in the
    same checkout (or on the same results folder) says so on stderr and waits for the first to end
    (``wait=True``, what ``python -m apd`` does), or stops with a BookError (``wait=False``,
    ``--no-wait``). The lock dies with its process: a killed build never leaves it stuck."""
    holder = (
        f"pid {os.getpid()} on {socket.gethostname()}, started "
        f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}: {' '.join(sys.argv) or 'python'}"
    )

    def busy(other: str) -> None:
        if wait:
            print(
                f"[apd] another build of profile {profile!r} is running here ({other or 'a process'}); "
                "waiting for it to finish (Ctrl-C stops this one; --no-wait stops at once)",
                file=sys.stderr,
                flush=True,
            )

    with contextlib.ExitStack() as stack:
        for path in lock_paths(profile, root):
            try:
                stack.enter_context(file_lock(path, holder, wait=wait, on_busy=busy))
            except LockBusy as err:
                raise BookError(
                    f"another build of profile {profile!r} is running here ({err.holder or 'a process'}; "
                    f"lock {path}): wait for it to finish, or run without --no-wait to wait for it; "
                    f"its results in {results_root(root) / profile}/ are left to it"
                ) from None
        yield
