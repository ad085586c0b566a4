"""One chapter's execution: papermill runs its notebook in a kernel with a quiet environment,
the kernel's notices are relayed to the terminal, its staged results are committed on success, and
the executed notebook is written for the book (injected cell hidden, no machine paths)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

from apd.base.io import NOTICES_ENV, is_disk_full
from apd.base.paths import describe_folders
from apd.base.notebooks import KEY_ENV, RUNNER_ENV, STAGING_ENV, BookError
from apd.book import terminal
from apd.book.cache import cache_key, damaged_chapters, is_cached
from apd.book.pages import select_cells
from apd.book.project import ROOT, notebook_path, results_root
from apd.book.staging import commit_results, new_staging, staging_base

INJECTED_TAG = "injected-parameters"

#: Environment of the kernels that execute the chapters: no progress bars (apd's own, tqdm's,
#: Hugging Face's) and no library chatter on the pages. A user running apd in a terminal or a
#: notebook of their own keeps them. Warnings raised after ``Run.start`` go to the chapter's run
#: log (``results/<profile>/runs/<stem>.log``) instead of the page (see apd.report.results).
KERNEL_ENV = {
    "APD_PROGRESS": "0",  # apd.base.progress
    "APD_WARNINGS_TO_LOG": "1",  # apd.report.results.Run.start
    "TQDM_DISABLE": "1",  # any other tqdm bar (tqdm >= 4.66 reads TQDM_*)
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # huggingface_hub and transformers downloads/loading
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    # tqdm.auto warns at import time (transformers imports it) when ipywidgets is missing
    "PYTHONWARNINGS": "ignore:IProgress not found",
}


@contextlib.contextmanager
def kernel_environment(extra: dict[str, str] | None = None):
    """Set :data:`KERNEL_ENV` (and ``extra``) in ``os.environ`` while kernels start (they inherit it),
    then restore it. A variable the user already set to something else wins, except
    ``PYTHONWARNINGS``, which is extended."""
    saved = dict(os.environ)
    try:
        for key, value in {**KERNEL_ENV, **(extra or {})}.items():
            if key == "PYTHONWARNINGS" and os.environ.get(key):
                os.environ[key] = f"{os.environ[key]},{value}"
            else:
                os.environ.setdefault(key, value)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def relay_notices(stem: str, stream=None, every: float = 0.5):
    """Yield the path of a fresh notices file (``$APD_NOTICES`` of a kernel, written by
    :func:`apd.base.io.notify`, e.g. "damaged ... moved aside") and, while the block runs and once
    more when it ends, print its new lines to ``stream`` (default stderr) as ``[apd] <stem>: ...``:
    the person running the build sees them, not only the chapter's run log."""
    import tempfile
    import threading

    stream = stream or sys.stderr
    fd, name = tempfile.mkstemp(prefix=f"apd-notices-{stem}-", suffix=".txt")
    os.close(fd)
    path, done, pos = Path(name), threading.Event(), [0]

    def drain() -> None:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                f.seek(pos[0])
                text = f.read()
        except OSError:
            return
        complete = text[: text.rfind("\n") + 1]  # whole lines only; the rest next time
        pos[0] += len(complete.encode("utf-8"))
        for line in complete.splitlines():
            if line.strip():
                print(f"[apd] {stem}: {line}", file=stream, flush=True)

    def loop() -> None:
        while not done.wait(every):
            drain()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        done.set()
        thread.join()
        drain()
        path.unlink(missing_ok=True)


def execute(stem: str, params: dict, out: Path, root: Path = ROOT, force: bool = False, upstream: str = "") -> str:
    """Execute one notebook with papermill into ``out``; return 'cached' or 'executed'.

    The kernel writes its results into a staging folder; they replace the chapter's results in
    ``results/<profile>/`` only when every cell succeeded (:func:`apd.book.staging.commit_results`). A failing cell
    raises BookError naming the notebook, the cell and the error; the previous results stay. A write
    of the runner's own that fails (a full disk: :func:`disk_full_line`) raises BookError naming the
    file; every message names the real results folder (``$APD_RESULTS_DIR``)."""
    import papermill as pm

    profile = str(params.get("profile") or "default")
    key = cache_key(stem, params, root, upstream)
    dest = results_root(root) / profile
    if not force and is_cached(out, key, dest):
        return "cached"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.stem + ".partial.ipynb")
    staging = new_staging(profile, stem, root)
    staging.mkdir(parents=True)
    relay = contextlib.ExitStack()  # "damaged ... moved aside" lines from the kernel, on this terminal
    notices = relay.enter_context(relay_notices(stem))
    env = {RUNNER_ENV: "1", STAGING_ENV: str(staging), KEY_ENV: key, NOTICES_ENV: str(notices)}
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)  # the kernel inherits this process's environment
    committed, doing = False, f"writing the executed notebook {tmp}"
    try:
        with kernel_environment():
            pm.execute_notebook(
                str(notebook_path(stem, root)),
                str(tmp),
                parameters=params,
                cwd=str(root),
                kernel_name="python3",
                progress_bar=False,
                log_output=False,
                kernel_manager_class=terminal.IPCKernelManager,  # IPC: no TCP port, no encryption warning
            )
        doing = f"moving its results from {staging} into {dest}"
        digests = commit_results(profile, stem, key, root, staging)
        committed = True
    except pm.PapermillExecutionError as err:
        raise BookError(
            f"notebook notebooks/{stem}.ipynb failed in cell {err.cell_index} "
            f"(execution count {err.exec_count}): {err.ename}: {err.evalue}\n"
            + disk_full_line(f"{err.ename}: {err.evalue}", root)
            + f"  the partly executed notebook is {tmp}\n"
            f"  {dest}/ keeps the last successful run's results of {stem} (this run's were discarded)"
        ) from None
    except OSError as err:  # the runner's own writes: the executed notebook, the staged files, the commit
        half = commit_pending(profile, stem, root)
        raise BookError(
            f"chapter {stem}: {err}, while {doing}\n"
            + disk_full_line(err, root)
            + (
                f"  the next build finishes moving {stem}'s results into {dest}/"
                if half
                else f"  {dest}/ keeps the last successful run's results of {stem} (this run's were discarded)"
            )
        ) from None
    finally:
        relay.close()  # the last notices, before the error or the status line
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if not committed and not commit_pending(profile, stem, root):  # a half-done commit needs its files
            shutil.rmtree(staging.parent, ignore_errors=True)
    try:
        nb = json.loads(tmp.read_text())
        for cell in nb["cells"]:  # hide the injected cell on the page; keep it in the .ipynb
            tags = cell.get("metadata", {}).get("tags", [])
            if INJECTED_TAG in tags and "remove-cell" not in tags:
                tags.append("remove-cell")
        values_path = dest / f"{stem}.json"  # needs:/unless: cells: the paragraphs this run's results can fill
        select_cells(nb, json.loads(values_path.read_text()) if values_path.is_file() else {})
        nb["metadata"]["apd"] = {"cache_key": key, "parameters": params, "results_sha256": digests}
        nb = portable_notebook(nb, stem, out, root)
        tmp.write_text(json.dumps(nb, indent=1))
        tmp.replace(out)
    except OSError as err:
        raise BookError(
            f"chapter {stem}: its results are in {dest}/, but the executed notebook {out} could not be "
            f"written ({err}); the next build executes {stem} again\n" + disk_full_line(err, root)
        ) from None
    return "executed"


def with_damaged(run: list[str], stems: list[str], dest: Path, graph: dict[str, tuple[str, ...]]) -> list[str]:
    """``run`` plus every chapter of ``stems`` whose committed results in ``dest`` are damaged, among
    those of ``run`` and the chapters they need (:func:`apd.book.cache.damaged_chapters`: a file
    that differs from the digest recorded when it was written, or is missing), in book order; one
    line on the terminal for each, naming its files. Such a chapter is never read as cached: it
    executes again (before the chapters that read it), even when ``--only`` left it out."""
    damaged = {stem: files for stem, files in damaged_chapters(run, dest, graph).items() if stem in stems}
    for stem, files in damaged.items():
        named = ", ".join(f"{dest / rel}{'' if (dest / rel).is_file() else ' (missing)'}" for rel in files)
        readers = sorted(s for s in run if s != stem and stem in graph.get(s, ()))
        why = "" if stem in run else f", since {', '.join(readers) or 'a chapter of this build'} reads it"
        print(
            f"[apd] {stem}: its results differ from the digests recorded when they were written (damaged "
            f"or edited): {named}; executing {stem} again{why}",
            flush=True,
        )
    return [stem for stem in stems if stem in run or stem in damaged]


def disk_full_line(err, root: Path = ROOT) -> str:
    """``"  the disk is full: <the folders, their free space>; <fix>\\n"`` when ``err`` (an exception,
    or a kernel's error as text) says the disk is full, else ``""``. The folders are those the
    environment resolves (:func:`apd.base.paths.describe_folders`: ``$APD_RESULTS_DIR``, ``$APD_CACHE_DIR``,
    ``$APD_DATA_DIR``), never a path written into the message beforehand.

    Example:
        >>> disk_full_line("ValueError: bad value")
        ''
    """
    if not is_disk_full(err if isinstance(err, BaseException) else RuntimeError(str(err))):
        return ""
    return (
        f"  the disk is full: {describe_folders(root)}; free space there, or point APD_RESULTS_DIR and "
        "APD_CACHE_DIR at a larger disk\n"
    )


def commit_pending(profile: str, stem: str, root: Path = ROOT) -> bool:
    """Whether a commit of ``stem``'s results was started and not finished (its journal is there:
    :func:`apd.book.staging.recover` finishes it on the next build)."""
    return (staging_base(profile, root) / f"{stem}.commit.json").is_file()


def portable_notebook(nb: dict, stem: str, out: Path, root: Path = ROOT) -> dict:
    """``nb`` as the book offers it for download: no absolute path of the machine that built it.

    papermill's ``input_path`` and ``output_path`` become paths relative to the project root, and
    any other mention of the root, of ``$APD_CACHE_DIR``, ``$APD_DATA_DIR``, ``$APD_RESULTS_DIR``
    or of the home folder in the cells and their outputs is written relative (``results/...``) or
    by name (``$APD_CACHE_DIR/...``, ``~/...``).

    Example:
        >>> nb = {"metadata": {"papermill": {"input_path": "/x/proj/notebooks/a.ipynb"}},
        ...       "cells": [{"outputs": [{"text": "wrote /x/proj/results/s/a.json"}]}]}
        >>> p = portable_notebook(nb, "a", Path("/x/proj/_build/s/book/notebooks/a.ipynb"), Path("/x/proj"))
        >>> p["metadata"]["papermill"], p["cells"][0]["outputs"][0]["text"]
        ({'input_path': 'notebooks/a.ipynb', 'output_path': '_build/s/book/notebooks/a.ipynb'}, 'wrote results/s/a.json')
    """
    pm = nb.get("metadata", {}).get("papermill")
    if isinstance(pm, dict):
        pm["input_path"] = f"notebooks/{stem}.ipynb"
        pm["output_path"] = Path(os.path.relpath(out, root)).as_posix()
    named = {str(Path(root).resolve()): "", str(root): ""}
    for var in ("APD_CACHE_DIR", "APD_DATA_DIR", "APD_RESULTS_DIR"):
        if os.environ.get(var):
            named.setdefault(str(Path(os.environ[var]).expanduser().resolve()), f"${var}")
    named.setdefault(str(Path.home()), "~")
    text = json.dumps(nb)
    for prefix in sorted((p for p in named if len(p) > 1), key=len, reverse=True):
        name = named[prefix]
        text = text.replace(prefix + "/", f"{name}/" if name else "")
        text = re.sub(re.escape(prefix) + r'(?=["\s\'),:;])', name or ".", text)
    return json.loads(text)
