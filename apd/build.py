"""The book build's three steps, which ``make`` runs (see the Makefile; ``make book`` is the command):

    apd prepare --profile smoke [--set theorem1.n_draws=500] [--device cpu] [--local-dir D] [--jobs N]
    apd run theorem1 --profile smoke      # one chapter's notebook, with papermill
    apd html --profile smoke              # the Jupyter Book HTML
    apd list                              # the chapters and the profiles
    apd data fetch FOLDER | apd data check [FOLDER]    # the datasets' offline copies
    apd parameters [--write]              # book/parameters.md, from the notebooks' parameters cells

``prepare`` reads ``profiles/<name>.yml`` (``notebooks: {<stem>: {<parameter>: <value>}}``), applies
``--set``, ``--device`` and ``--local-dir``, checks every name and type against the notebooks'
``parameters`` cells, where each parameter is declared once, and writes each chapter's parameters to
``_build/<profile>/params/<stem>.json`` only when they changed. make then re-executes a chapter when
its notebook, its parameters file, the ``apd`` sources, the lock file or a chapter it reads is newer
than its executed notebook, up to ``JOBS`` at once, a chapter waiting for those it reads.

``run`` executes one notebook. Its kernel writes results into a staging folder; they replace the
chapter's files in ``results/<profile>/`` only when every cell succeeded, so a failed or interrupted
run leaves the last good results. The executed notebook, make's target, is written last.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import hashlib
import html as html_lib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from jupyter_client.manager import AsyncKernelManager

from apd.base import paths
from apd.base.io import NOTICES_ENV, atomic_write, file_digest
from apd.base.jobs import job_count, make_slots
from apd.base.notebooks import (
    KEY_ENV,
    RUNNER_ENV,
    STAGING_ENV,
    BookError,
    parameter_defaults,
    parameters_source,
    toc_notebooks,
)
from apd.base.progress import PROGRESS_FILE_ENV
from apd.evaluation import datafiles
from apd.report.pages import fill_page, select_cells
from apd.report.results import GLUE_FORMATS

ROOT = Path(__file__).resolve().parents[1]
#: The profiles an installed wheel carries (``setup.py`` copies ``profiles/`` there; absent in a checkout).
PACKAGED_PROFILES = Path(__file__).resolve().parent / "packaged_profiles"
#: Switches that set a parameter in every chapter that declares it.
SWITCHES = {"device": "--device", "local_dir": "--local-dir"}
#: The profile whose book is the report; every other profile's pages carry a banner.
BOOK_PROFILE = "default"
#: The chapter whose results fill the first page, and the figure it shows.
SUMMARY_STEM, HEADLINE_FIGURE = "paper_vs_book", "headline"
#: What the first page reads from the build itself rather than from the summary chapter.
BUILD_KEYS = ("book_profile", "qa_max_examples", "skipped_sections")
#: A results key ending so is a section skipped for lack of data; its value says what is missing.
SKIPPED_SUFFIX = "_data_missing"
STATUS_MARKER = "<!-- apd:status -->"
#: The kernels' environment: no progress bars or library chatter on the pages (a user's own
#: terminal or notebook keeps them); warnings after ``Run.start`` go to the chapter's run log.
KERNEL_ENV = {
    "APD_PROGRESS": "0",
    "APD_WARNINGS_TO_LOG": "1",
    "TQDM_DISABLE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONWARNINGS": "ignore:IProgress not found",
}


# -- where things are ------------------------------------------------------------------------------


def is_checkout(root: Path = ROOT) -> bool:
    """Whether ``root`` holds the book's sources (``_toc.yml``): a checkout, not an installed wheel."""
    return (Path(root) / "_toc.yml").is_file()


def profiles_dir(root: Path = ROOT) -> Path:
    """``root/profiles``, or for an installed wheel the copies it carries."""
    if Path(root) == ROOT and PACKAGED_PROFILES.is_dir():
        return PACKAGED_PROFILES
    return Path(root) / "profiles"


def results_root(root: Path = ROOT) -> Path:
    """``$APD_RESULTS_DIR``, else ``<root>/results``."""
    return paths.results_root(root)


def notebook_path(stem: str, root: Path = ROOT) -> Path:
    path = Path(root) / "notebooks" / f"{stem}.ipynb"
    if not path.is_file():
        raise BookError(f"notebook {path} does not exist (is {stem!r} misspelt in _toc.yml or a profile?)")
    return path


def chapters(root: Path = ROOT) -> list[str]:
    """The chapters in book order: ``_toc.yml`` (an installed wheel carries a copy beside its profiles)."""
    return toc_notebooks(root if is_checkout(root) else profiles_dir(root))


def did_you_mean(word: str, known) -> str:
    """Example:
    >>> did_you_mean("n_drawz", ["seed", "n_draws"])
    " (did you mean 'n_draws'?)"
    """
    close = difflib.get_close_matches(str(word), list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


# -- profiles ----------------------------------------------------------------------------------------


class _UniqueKeys(yaml.SafeLoader):
    """A YAML loader that refuses a key given twice in one mapping (plain YAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key, line = self.construct_object(key_node, deep=True), key_node.start_mark.line + 1
            if key in seen:
                raise BookError(f"key {key!r} is given twice (lines {seen[key]} and {line}); keep one")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def read_profile(path: Path) -> dict:
    """A profile file as ``{"description": str, "notebooks": {stem: {parameter: value}}}``; a BookError
    naming the file for bad YAML or a bad shape."""
    try:
        data = yaml.load(Path(path).read_text(), Loader=_UniqueKeys)
    except yaml.YAMLError as err:
        raise BookError(f"{path}: not valid YAML: {err}") from None
    except BookError as err:
        raise BookError(f"{path}: {err}") from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("notebooks"), dict)
        or set(data) - {"description", "notebooks"}
    ):
        raise BookError(
            f"{path}: a profile is `description: <one line>` and `notebooks: {{<notebook>: {{<parameter>: <value>}}}}`"
        )
    for stem, params in data["notebooks"].items():
        if params is not None and not isinstance(params, dict):
            raise BookError(f"{path}: notebooks.{stem} must be a mapping of parameters, such as `{stem}: {{seed: 1}}`")
    data["notebooks"] = {stem: dict(params or {}) for stem, params in data["notebooks"].items()}
    return data


def known_profiles(root: Path = ROOT) -> list[str]:
    return sorted(p.stem for p in profiles_dir(root).glob("*.yml") if not p.name.startswith("_"))


def profile_descriptions(root: Path = ROOT) -> dict[str, str]:
    """``{profile: its description}`` for every profile file."""
    return {
        name: str(read_profile(profiles_dir(root) / f"{name}.yml").get("description") or "")
        for name in known_profiles(root)
    }


def check_type(where: str, value: Any, default: Any, literal: bool = True) -> Any:
    """``value`` if it has the type of the parameter's ``default`` (an int is a float too; a None
    default or an expression takes anything), else a BookError naming it.

    Example:
        >>> check_type("theorem1.n_draws", 500, 20000)
        500
        >>> check_type("theorem1.n_draws", "500", 20000)
        Traceback (most recent call last):
        ...
        apd.base.notebooks.BookError: theorem1.n_draws: expected int like the default 20000, got '500'
    """
    if not literal or default is None:
        return value
    kinds = {bool: (bool,), int: (int,), float: (int, float), str: (str,), list: (list, tuple), dict: (dict,)}
    kind = next(k for k in kinds if isinstance(default, k)) if isinstance(default, tuple(kinds)) else type(default)
    ok = isinstance(value, kinds.get(kind, (kind,))) and (kind is bool or not isinstance(value, bool))
    if not ok:
        raise BookError(f"{where}: expected {kind.__name__} like the default {default!r}, got {value!r}")
    return value


#: A range at the end of a parameter's comment in its notebook's parameters cell: ``in [1, 1000]``,
#: ``in (0, 1]``, ``in [0, inf)``, ``in {a, b}`` (``N`` in a choice stands for digits), alternatives
#: joined by ``or``; ``each in ...`` for every item of a list.
_SPEC = r"(?:\{[^}]*\}|[\[(][^\])]*[\])])"
RANGE = re.compile(rf"(?:^|;\s*)(?:each\s+)?in\s+({_SPEC}(?:\s+or\s+{_SPEC})*)\s*$")


def in_range(value: Any, spec: str) -> bool:
    """Whether ``value`` (each item of a list) lies in ``spec`` (:data:`RANGE`'s grammar).

    Example:
        >>> in_range(5, "[1, 10]"), in_range(0, "(0, 1]"), in_range([0.5, 2.0], "(0, 1]")
        (True, False, False)
        >>> in_range("dev", "{dev} or (0, 1000]"), in_range("cuda:1", "{auto, cpu, cuda:N}"), in_range(True, "[0, 1]")
        (True, True, False)
    """
    return all(
        any(_fits(x, alt) for alt in spec.split(" or ")) for x in (value if isinstance(value, list) else [value])
    )


def _fits(x: Any, alt: str) -> bool:
    if alt.startswith("{"):
        choices = [re.escape(c.strip()).replace("N", r"\d+") for c in alt[1:-1].split(",")]
        return isinstance(x, str) and any(re.fullmatch(c, x.lower()) for c in choices)
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return False
    lo, hi = (float(t) for t in alt[1:-1].split(","))
    return (lo < x if alt[0] == "(" else lo <= x) and (x < hi if alt[-1] == ")" else x <= hi)


def ranges(stem: str, root: Path = ROOT) -> dict[str, str]:
    """``{parameter: its range}`` from notebook ``stem``'s parameters cell (:data:`RANGE`)."""
    found = {name: RANGE.search(doc) for name, _, doc in _parameters_cell(notebook_path(stem, root))}
    return {name: m.group(1) for name, m in found.items() if m}


def resolve(
    profile: str, overrides: list[str] = (), switches: dict | None = None, root: Path = ROOT
) -> dict[str, dict]:
    """``{stem: parameters}`` for every chapter: its notebook's defaults, then the profile's values,
    then ``switches`` (``--device``, ``--local-dir``: every chapter that declares them), then
    ``overrides`` (``"nb.param=value"``, the value read as YAML); each name and type checked against
    the notebook's ``parameters`` cell. Every chapter also gets ``profile``."""
    path = profiles_dir(root) / f"{profile}.yml"
    if not path.is_file():
        raise BookError(
            f"no profile {profile!r}{did_you_mean(profile, known_profiles(root))}: the profiles are {', '.join(known_profiles(root))}"
        )
    stems = chapters(root)
    declared = {stem: parameter_defaults(notebook_path(stem, root)) for stem in stems}
    limits = {stem: ranges(stem, root) for stem in stems}
    given = read_profile(path)["notebooks"]
    items = [
        (stem, name, value, f"{path}: notebooks.{stem}.{name}")
        for stem, params in given.items()
        for name, value in params.items()
    ]
    items += [
        (stem, name, value, SWITCHES[name])
        for name, value in (switches or {}).items()
        if value is not None
        for stem in stems
        if name in declared[stem]
    ]
    for text in overrides:
        target, eq, value = text.partition("=")
        stem, dot, name = target.partition(".")
        if not (eq and dot):
            raise BookError(f"--set {text!r}: write NOTEBOOK.PARAMETER=VALUE, such as theorem1.n_draws=500")
        items.append((stem, name, _value(value), f"--set {text}"))
    out = {stem: {**{k: d for k, (d, lit) in declared[stem].items() if lit}, "profile": profile} for stem in stems}
    for stem, name, value, where in items:
        if stem not in declared:
            raise BookError(
                f"{where}: no notebook {stem!r}{did_you_mean(stem, stems)}; the chapters are {', '.join(stems)}"
            )
        if name == "profile" or name not in declared[stem]:
            why = (
                "is set by the profile's name"
                if name == "profile"
                else f"is not a parameter of notebooks/{stem}.ipynb{did_you_mean(name, declared[stem])}"
            )
            raise BookError(f"{where}: {stem}.{name} {why}")
        out[stem][name] = check_type(where, value, *declared[stem][name])
        spec = limits[stem].get(name)
        if spec and value is not None and not in_range(value, spec):
            raise BookError(f"{where}: {value!r} is not in {spec}, the range notebooks/{stem}.ipynb gives {name}")
    return out


def _value(text: str) -> Any:
    """A ``--set`` value read as YAML, and a string that reads as a number as that number (YAML 1.1
    reads ``5e-2`` as a string).

    Example:
        >>> [_value(t) for t in ("[1, 2]", "5e-2", "true", "cpu")]
        [[1, 2], 0.05, True, 'cpu']
    """
    value = yaml.safe_load(text)
    for number in (int, float) if isinstance(value, str) else ():
        with contextlib.suppress(ValueError):
            return number(value)
    return value


def prepare(profile: str, overrides=(), switches=None, jobs: int | None = None, root: Path = ROOT) -> dict[str, dict]:
    """Check the profile with every override, write each chapter's parameters file when it changed
    (make reads their times), drop staging folders an interrupted build left, and make the build's
    ``jobs`` slots (:mod:`apd.base.jobs`). Run while holding the profile's lock (the Makefile's flock)."""
    params = resolve(profile, overrides, switches, root)
    folder = Path(root) / "_build" / profile
    data = os.environ.get("APD_DATA_DIR") or "the Hub and the original sources"
    for stem, values in params.items():  # the data source is an input too: switching it re-executes
        path, text = (
            folder / "params" / f"{stem}.json",
            json.dumps({"parameters": values, "data": data}, indent=1) + "\n",
        )
        if not path.is_file() or path.read_text() != text:  # unchanged: its time stays, make runs nothing
            atomic_write(path, lambda tmp, text=text: tmp.write_text(text))
            print(f"[apd] {stem}: parameters changed", flush=True)
    shutil.rmtree(results_root(root) / ".staging" / profile, ignore_errors=True)
    make_slots(folder / "slots", job_count(jobs))
    return params


# -- one chapter -------------------------------------------------------------------------------------


class IPCKernelManager(AsyncKernelManager):
    """A kernel on IPC sockets in a private folder (no TCP port, no encryption warning), asked to shut
    down before it is interrupted: an idle kernel never logs "KeyboardInterrupt caught in kernel"."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._ipc_dir = tempfile.mkdtemp(prefix="apd-kernel-")
        self.transport, self.ip = "ipc", os.path.join(self._ipc_dir, "k")

    async def _async_shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
        if now or restart or not self.owns_kernel or not self.has_kernel:
            await super()._async_shutdown_kernel(now=now, restart=restart)
            return
        self.shutting_down = True  # as jupyter_client: the restarter leaves the kernel alone
        self.stop_restarter()
        await self._async_request_shutdown()
        try:
            await asyncio.wait_for(self._async_wait(pollinterval=0.1), timeout=3.0)
        except asyncio.TimeoutError:
            await self._async_interrupt_kernel()  # still running code: interrupted, as jupyter_client does
        await self._async_finish_shutdown()
        await self._async_cleanup_resources()

    shutdown_kernel = _async_shutdown_kernel

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            shutil.rmtree(self._ipc_dir, ignore_errors=True)

    cleanup_resources = _async_cleanup_resources


@contextlib.contextmanager
def relay(stem: str, every: float = 1.0, quiet_s: float = 30.0):
    """Yield ``(notices, progress)`` files for a kernel and, while the block runs, print its notices
    (:func:`apd.base.io.notify`) and what its bars are doing (:mod:`apd.base.progress`) as
    ``[apd] <stem>: ...`` lines: a new line when the work changes, else at most every ``quiet_s``."""
    folder = Path(tempfile.mkdtemp(prefix=f"apd-{stem}-"))
    notices, progress = folder / "notices.txt", folder / "progress.json"
    notices.touch()
    done, state = threading.Event(), {"pos": 0, "desc": None, "shown": 0.0}

    def show() -> None:
        with contextlib.suppress(OSError):
            with open(notices, encoding="utf-8", errors="replace") as f:
                f.seek(state["pos"])
                text = f.read()
            whole = text[: text.rfind("\n") + 1]
            state["pos"] += len(whole.encode("utf-8"))
            for line in filter(str.strip, whole.splitlines()):
                print(f"[apd] {stem}: {line}", file=sys.stderr, flush=True)
        with contextlib.suppress(OSError, ValueError):
            bar = json.loads(progress.read_text())
            now = time.time()
            if bar["desc"] != state["desc"] or now - state["shown"] >= quiet_s:
                step = f" {bar['n']}/{bar['total']}" if bar.get("total") else ""
                print(f"[apd] {stem}: {bar['desc'] or 'working'}{step}", flush=True)
                state.update(desc=bar["desc"], shown=now)

    def loop() -> None:
        while not done.wait(every):
            show()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield notices, progress
    finally:
        done.set()
        thread.join()
        show()
        shutil.rmtree(folder, ignore_errors=True)


def chapter_files(dest: Path, stem: str) -> set[str]:
    """The files (relative to ``results/<profile>``) that chapter ``stem``'s last run wrote."""
    files = {f"{stem}.json", f"runs/{stem}.json"}
    with contextlib.suppress(OSError, ValueError):
        files |= set(json.loads((dest / "runs" / f"{stem}.json").read_text()).get("results_sha256") or {})
    return files


def commit_results(staging: Path, dest: Path, stem: str, key: str) -> dict[str, str]:
    """Move a successful run's staged files into ``dest``, remove the files of its last run that this
    one did not write, and record every file's SHA-256 and ``key`` in the run record, moved last.
    An interruption here leaves the executed notebook, make's target, old: the chapter runs again."""
    new = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
    record_rel = f"runs/{stem}.json"
    digests = {rel: file_digest(staging / rel) for rel in new if rel != record_rel}
    if record_rel in new:
        record = json.loads((staging / record_rel).read_text())
        record.update(cache_key=key, results_sha256=digests)
        (staging / record_rel).write_text(json.dumps(record, indent=2, default=str) + "\n")
    for rel in chapter_files(dest, stem) - set(new):
        (dest / rel).unlink(missing_ok=True)
    for rel in [r for r in new if r != record_rel] + ([record_rel] if record_rel in new else []):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / rel, dest / rel)
    return digests


def portable_notebook(nb: dict, stem: str, out: Path, root: Path = ROOT) -> dict:
    """``nb`` as the book offers it for download: no absolute path of the machine that built it.

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


def run(stem: str, profile: str, root: Path = ROOT) -> Path:
    """Execute chapter ``stem`` under ``profile`` (its parameters from :func:`prepare`'s file) into
    ``_build/<profile>/book/notebooks/<stem>.ipynb``; commit its results only when it succeeded."""
    import papermill as pm

    root = Path(root)
    params_file = root / "_build" / profile / "params" / f"{stem}.json"
    if not params_file.is_file():
        raise BookError(
            f"{params_file} is missing: run `make book PROFILE={profile}` (it prepares the parameters first)"
        )
    params = json.loads(params_file.read_text())["parameters"]
    key = hashlib.sha256(params_file.read_bytes()).hexdigest()[:16]
    out = root / "_build" / profile / "book" / "notebooks" / f"{stem}.ipynb"
    tmp = out.with_name(f"{stem}.partial.ipynb")
    dest = results_root(root) / profile
    staging = results_root(root) / ".staging" / profile / f"{stem}-{os.getpid()}"
    staging.mkdir(parents=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"[apd] {stem}: executing under profile {profile!r} ...", flush=True)
    t0 = time.time()
    try:
        with (
            relay(stem) as (notices, progress),
            kernel_environment(
                {
                    RUNNER_ENV: "1",
                    STAGING_ENV: str(staging),
                    KEY_ENV: key,
                    NOTICES_ENV: str(notices),
                    PROGRESS_FILE_ENV: str(progress),
                }
            ),
        ):
            pm.execute_notebook(
                str(notebook_path(stem, root)), str(tmp), parameters=params, cwd=str(root), kernel_name="python3",
                progress_bar=False, log_output=False, kernel_manager_class=IPCKernelManager,
            )  # fmt: skip
        digests = commit_results(staging, dest, stem, key)
    except pm.PapermillExecutionError as err:
        raise BookError(
            f"notebooks/{stem}.ipynb failed in cell {err.cell_index} (execution count {err.exec_count}): "
            f"{err.ename}: {err.evalue}\n  the partly executed notebook is {tmp}\n"
            f"  {dest}/ keeps the last successful run's results of {stem}"
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    nb = json.loads(tmp.read_text())
    for cell in nb["cells"]:  # the injected parameters stay in the .ipynb, off the page
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
    values = dest / f"{stem}.json"
    select_cells(nb, json.loads(values.read_text()) if values.is_file() else {})
    nb["metadata"]["apd"] = {"cache_key": key, "parameters": params, "results_sha256": digests}
    tmp.write_text(json.dumps(portable_notebook(nb, stem, out, root), indent=1))
    tmp.replace(out)
    print(f"[apd] {stem}: executed in {time.time() - t0:.1f} s", flush=True)
    return out


@contextlib.contextmanager
def kernel_environment(extra: dict[str, str] | None = None):
    """:data:`KERNEL_ENV` (what the user set wins; ``PYTHONWARNINGS`` is extended) and ``extra``
    in ``os.environ`` while the kernel starts and runs; restored after."""
    saved = dict(os.environ)
    try:
        for key, value in KERNEL_ENV.items():
            if key == "PYTHONWARNINGS" and os.environ.get(key):
                os.environ[key] = f"{os.environ[key]},{value}"
            else:
                os.environ.setdefault(key, value)
        os.environ.update(extra or {})
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


# -- the HTML ----------------------------------------------------------------------------------------


def banner(profile: str, root: Path = ROOT) -> str:
    """The line atop every page of a book built under ``profile``; none for :data:`BOOK_PROFILE`.

    Example:
        >>> banner("default")
        ''
    """
    if profile == BOOK_PROFILE:
        return ""
    about = profile_descriptions(root).get(profile) or ""
    return f"Built under the <code>{html_lib.escape(profile)}</code> profile, not the default" + (
        f": {html_lib.escape(about)}" if about else "."
    )


def read_skipped(profile: str, stems: list[str], results: Path) -> dict[str, list[str]]:
    """``{stem: lines}``: the sections each chapter skipped for lack of data (its ``*_data_missing`` values)."""
    out = {}
    for stem in stems:
        with contextlib.suppress(OSError, ValueError):
            values = json.loads((results / profile / f"{stem}.json").read_text())
            lines = [str(v) for k, v in values.items() if k.endswith(SKIPPED_SUFFIX) and v]
            if lines:
                out[stem] = lines
    return out


def build_values(profile: str, root: Path = ROOT) -> dict:
    """What the first page says of the build itself (:data:`BUILD_KEYS`)."""
    results = results_root(root)
    values: dict = {"book_profile": profile}
    with contextlib.suppress(OSError, ValueError):
        qa = json.loads((results / profile / "qa.json").read_text())
        if (
            isinstance(qa.get("qa_max_examples"), (int, float))
            and qa["qa_max_examples"] > 0
            and not qa.get("qa_data_missing")
        ):
            values["qa_max_examples"] = f"{int(qa['qa_max_examples']):,}"
    stems = chapters(root) if is_checkout(root) else sorted(p.stem for p in (results / profile).glob("*.json"))
    skipped = read_skipped(profile, stems, results)
    if skipped:
        values["skipped_sections"] = "\n".join(
            f"- {{doc}}`../notebooks/{stem}`: {line}" for stem, lines in skipped.items() for line in lines
        )
    return values


def summary_page(page: str, profile: str, book_dir: Path, root: Path = ROOT) -> str:
    """``book/intro.md`` filled from the summary chapter's results and :func:`build_values`, with
    its headline figure copied beside it."""
    results = results_root(root) / profile
    path = results / f"{SUMMARY_STEM}.json"
    values = json.loads(path.read_text()) if path.is_file() else {}
    record = results / "runs" / f"{SUMMARY_STEM}.json"
    if record.is_file():
        values[GLUE_FORMATS] = json.loads(record.read_text()).get(GLUE_FORMATS, {})
    values.update(build_values(profile, root))
    figure = results / "figures" / f"{HEADLINE_FIGURE}.png"
    values["headline_figure"] = figure.is_file()
    if figure.is_file():
        shutil.copy2(figure, book_dir / f"{HEADLINE_FIGURE}.png")
    try:
        return fill_page(page, values)
    except ValueError as err:
        raise BookError(f"book/intro.md: {err}") from None


def status_markdown(profile: str, stems: list[str], results: Path) -> str:
    """The build report of ``results/<profile>``: when and where each chapter of ``stems`` last ran,
    its results' digest, the sections skipped and the package versions."""
    results, top = Path(results) / profile, Path(results)
    records = {}
    for stem in stems:
        with contextlib.suppress(OSError, ValueError):
            records[stem] = json.loads((results / "runs" / f"{stem}.json").read_text())
    if not records:
        return f"No chapter has run under the profile `{profile}` yet."
    rows = ["| chapter | ran (local time) | wall time | device | results (SHA-256) |", "|---|---|---|---|---|"]
    for stem in stems:
        rec = records.get(stem)
        if rec is None:
            rows.append(f"| {stem} | never | | | |")
            continue
        files = rec.get("results_sha256") or {}
        digest = hashlib.sha256("".join(f"{k}:{v}\n" for k, v in sorted(files.items())).encode()).hexdigest()[:12]
        rows.append(
            f"| {stem} | {str(rec.get('started', '')).replace('T', ' ')} | {float(rec.get('wall_time_s') or 0):.1f} s | {rec.get('device', '')} | {len(files)} files, {digest} |"
        )
    groups: dict[str, list[str]] = {}
    for stem, rec in records.items():
        if rec.get("packages"):
            groups.setdefault(", ".join(f"{k} {v}" for k, v in rec["packages"].items()), []).append(stem)
    packages = ["| chapters | package versions |", "|---|---|"]
    packages += [f"| {'all' if len(g) == len(records) else ', '.join(g)} | {text} |" for text, g in groups.items()]
    skipped = read_skipped(profile, stems, top)
    lines = [f"- **{stem}**: {line}" for stem, found in skipped.items() for line in found]
    skipped_text = "Sections skipped in this build:\n\n" + "\n".join(lines) + "\n\n" if lines else ""
    return f"Profile `{profile}`.\n\n" + "\n".join(rows) + "\n\n" + skipped_text + "\n".join(packages)


def stage(profile: str, root: Path = ROOT) -> Path:
    """The book's sources in ``_build/<profile>/book``: the config (with the profile's banner), the
    table of contents, ``book/`` with the first page and the build report filled in, a local MathJax."""
    root = Path(root)
    dest = root / "_build" / profile / "book"
    dest.mkdir(parents=True, exist_ok=True)
    config = (root / "_config.yml").read_text()
    if banner(profile, root):
        data = yaml.safe_load(config) or {}
        data.setdefault("html", {})["announcement"] = banner(profile, root)
        config = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    (dest / "_config.yml").write_text(config)
    shutil.copy2(root / "_toc.yml", dest / "_toc.yml")
    shutil.rmtree(dest / "book", ignore_errors=True)
    shutil.copytree(root / "book", dest / "book")
    intro, status = dest / "book" / "intro.md", dest / "book" / "status.md"
    if intro.is_file():
        intro.write_text(summary_page(intro.read_text(), profile, dest / "book", root))
    if status.is_file():
        status.write_text(
            status.read_text().replace(STATUS_MARKER, status_markdown(profile, chapters(root), results_root(root)))
        )
    mathjax = root / "node_modules" / "mathjax" / "es5"
    if not (mathjax / "tex-chtml.js").is_file():
        raise BookError(
            f"{mathjax}/tex-chtml.js is missing: the book serves MathJax locally; run `npm install` (or `make env`)"
        )
    shutil.copytree(mathjax, dest / "_mathjax" / "mathjax", dirs_exist_ok=True)
    return dest


def render(profile: str, root: Path = ROOT) -> Path:
    """Build the HTML from the staged sources, warnings as errors, and put the chapters' results
    (``*.json``, ``tables/*.csv``) beside it; return the HTML folder."""
    root = Path(root)
    missing = [
        s for s in chapters(root) if not (root / "_build" / profile / "book" / "notebooks" / f"{s}.ipynb").is_file()
    ]
    if missing:
        raise BookError(
            f"{', '.join(missing)} never ran under profile {profile!r}: build the whole book once (make book PROFILE={profile})"
        )
    src = stage(profile, root)
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [
        str(jb if jb.exists() else "jupyter-book"),
        "build",
        str(src),
        "--builder",
        "html",
        "-W",
        "-n",
        "--keep-going",
        "--quiet",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=root, text=True, capture_output=True, env=env)
    if proc.returncode != 0:
        raise BookError(
            f"jupyter-book build failed (warnings are errors):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
        )
    html = src / "_build" / "html"
    copy_results(profile, html, root)
    print(f"[apd] HTML built in {time.time() - t0:.1f} s: {html}/index.html", flush=True)
    return html


def copy_results(profile: str, html: Path, root: Path = ROOT) -> Path:
    """The chapters' results (``*.json``, ``tables/*.csv``) in ``html/results/``, where each run
    record links them; returns that folder."""
    src, dest = results_root(root) / profile, Path(html) / "results"
    (dest / "tables").mkdir(parents=True, exist_ok=True)
    for f in [*src.glob("*.json"), *(src / "tables").glob("*.csv")]:
        shutil.copy2(f, dest / f.relative_to(src))
    return dest


# -- reference pages and the command line --------------------------------------------------------------


def parameters_page(root: Path = ROOT) -> str:
    """``book/parameters.md``: every chapter's parameters, with the default and the comment beside
    each in its notebook's ``parameters`` cell."""
    lines = [
        "# Chapter parameters",
        "",
        "<!-- generated from the notebooks' parameters cells by `apd parameters --write` -->",
        "",
        "Each chapter declares its parameters once, in its notebook's `parameters` cell. A profile "
        '(`profiles/<name>.yml`) sets them per notebook, and `make book SET="NOTEBOOK.PARAMETER=VALUE"` '
        "for one run ({doc}`rerun`). A value must have its default's type and lie in its range, which the "
        "comment beside it in the cell gives (`in [1, 1000]`, `each in (0, 1]` for a list's items). Every chapter also receives `profile`, the profile's name, which decides where its "
        "results go.",
    ]
    for stem in chapters(root):
        lines += [
            "",
            f"## {stem}",
            "",
            f"`notebooks/{stem}.ipynb`",
            "",
            "| parameter | default | range | what it does |",
        ]
        lines.append("|---|---|---|---|")
        for name, default, doc in _parameters_cell(notebook_path(stem, root)):
            found = RANGE.search(doc)
            limit = f"`{found.group(0).lstrip('; ')}`" if found else ""
            text = doc[: found.start()] if found else doc
            if name != "profile":
                lines.append(f"| `{name}` | `{default}` | {limit} | {text.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def _parameters_cell(path: Path) -> list[tuple[str, str, str]]:
    """``(name, default as written, comment)`` for each line of a notebook's parameters cell."""
    out = []
    for line in parameters_source(path).splitlines():
        found = re.match(r"^(\w+)\s*(?::[^=]+)?=\s*(.*?)\s*(?:#\s*(.*))?$", line)
        if found:
            out.append((found.group(1), found.group(2), found.group(3) or ""))
    return out


def listing(root: Path = ROOT) -> str:
    """``apd list``: the chapters in order and the profiles."""
    out = ["chapters, in book order:"] + [f"  {i:2d}. {stem}" for i, stem in enumerate(chapters(root), 1)]
    about = profile_descriptions(root)
    width = max(map(len, about), default=0)
    return "\n".join(
        out + ["", "profiles (make book PROFILE=NAME):"] + [f"  {n:<{width}}  {t}".rstrip() for n, t in about.items()]
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["data"]:
        return datafiles.main(argv[1:])
    ap = argparse.ArgumentParser(
        prog="apd",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n")[1] + "\n\n" + listing().split("\n\n")[1],
    )
    ap.add_argument("--version", action="version", version=f"apd {_version()}")
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("prepare", "run", "html"):
        p = sub.add_parser(name)
        if name == "run":
            p.add_argument("stem")
        p.add_argument("--profile", default=BOOK_PROFILE)
        if name == "prepare":
            p.add_argument("--set", action="append", default=[], metavar="NB.PARAM=VALUE")
            p.add_argument("--device", default=None)
            p.add_argument("--local-dir", default=None)
            p.add_argument("--jobs", default=None)
    sub.add_parser("list")
    sub.add_parser("data", help="fetch FOLDER | check [FOLDER]: the datasets' offline copies")
    sub.add_parser("parameters").add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    try:
        if args.command == "list":
            print(listing())
        elif args.command == "parameters":
            text, path = parameters_page(), ROOT / "book" / "parameters.md"
            if args.write:
                path.write_text(text)
            elif path.read_text() != text:
                print(
                    f"{path} differs from the notebooks' parameters cells: run `apd parameters --write`",
                    file=sys.stderr,
                )
                return 1
        elif not is_checkout():
            print(
                f"apd {args.command}: the book's notebooks are not installed with the package; build the book from a checkout (make book)",
                file=sys.stderr,
            )
            return 1
        elif args.command == "prepare":
            local = str(Path(args.local_dir).expanduser().resolve()) if args.local_dir else None
            prepare(args.profile, args.set, {"device": args.device, "local_dir": local}, args.jobs)
        elif args.command == "run":
            run(args.stem, args.profile)
        else:
            render(args.profile)
    except (BookError, ValueError) as err:
        print(f"apd: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            f"apd: interrupted; {results_root()}/ keeps what the last successful run of each chapter wrote",
            file=sys.stderr,
        )
        return 130
    return 0


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("apd")
    except metadata.PackageNotFoundError:
        found = re.search(r'^version = "(.*)"$', (ROOT / "pyproject.toml").read_text(), flags=re.M)
        return found.group(1) if found else "unknown"


if __name__ == "__main__":
    sys.exit(main())
