"""Execute the book's notebooks with papermill under a profile, then render them with Jupyter Book.

    python -m apd --profile default                  # what `make book` runs
    python -m apd --profile smoke --only theorem1     # one chapter
    python -m apd --profile default --set theorem1.n_draws=500 --set theorem1.seed=3

A profile, ``profiles/<name>.yml``, is ``notebooks: {<stem>: {<parameter>: <value>}}`` for every
notebook in ``_toc.yml``; each notebook also receives ``profile=<name>``, and an unknown parameter
fails (:func:`validate_profile`). Executed notebooks go to ``_build/<profile>/book/notebooks/``, the
HTML to ``_build/<profile>/book/_build/html``. A notebook is re-executed only when its source, its
parameters, the ``apd`` sources or the lock file changed, or when its results files are missing
or edited (``--force`` re-executes anyway).

Results are written per chapter through a staging folder: the kernel's ``Run`` writes into
``<results root>/.staging/<profile>/<stem>/`` (``$APD_RESULTS_STAGING``), and only when the notebook
succeeds do its files replace the chapter's files in ``results/<profile>/`` (:func:`commit_results`);
a failed or interrupted run leaves them as the last successful build left them. Everything is
validated before any kernel starts: the profile's shape and keys, parameter names, types and ranges
(``--set`` included; :mod:`apd.book.schema`), and what the build needs here (:func:`preflight`:
the CUDA device and the Hub access the profile asks for, writable cache, results and build folders).

One build per checkout and profile runs at a time (:func:`build_lock`): a second one waits for the
first (or stops, ``--no-wait``), and every run stages its results in a folder of its own.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from apd.base.io import NOTICES_ENV
from apd.base.lock import LockBusy, file_lock
from apd.book import data_check, schema, terminal
from apd.book import status as build_status
from apd.book.pages import fill_page, select_cells
from apd.base.notebooks import toc_notebooks as _toc_notebooks
from apd.base.notebooks import (
    KEY_ENV,
    RUNNER_ENV,
    STAGING_ENV,
    BookError,
    notebook_parameters,
    parameter_defaults,
)

ROOT = Path(__file__).resolve().parents[2]
INJECTED_TAG = "injected-parameters"
PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")

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


# -- table of contents and parameters -----------------------------------------------------------


def toc_notebooks(root: Path = ROOT) -> list[str]:
    """Stems of the notebooks listed in ``root/_toc.yml``, in order (:func:`apd.base.notebooks.toc_notebooks`)."""
    return _toc_notebooks(root)


def notebook_path(stem: str, root: Path = ROOT) -> Path:
    path = root / "notebooks" / f"{stem}.ipynb"
    if not path.is_file():
        raise BookError(f"notebook {path} does not exist (listed in _toc.yml or a profile?)")
    return path


_KINDS = (
    (bool, "true or false"),
    (int, "an integer"),
    (float, "a number"),
    (str, "a string"),
    (list, "a list such as [1, 2]"),
    (dict, "a mapping such as {a: 1}"),
)


def check_type(where: str, value: Any, default: Any, literal: bool = True) -> Any:
    """``value`` if it fits the type of the parameter's ``default``, else a one-line BookError.

    Rules: a bool default takes a bool; an int default an int; a float default an int or a float;
    a str default a string; a list default a list; a dict default a mapping; a None default, or a
    default that is an expression (``literal=False``), anything."""
    if not literal or default is None:
        return value
    for kind, words in _KINDS:
        if isinstance(default, kind):
            ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
            if kind is float:
                ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if kind is list:
                ok = isinstance(value, (list, tuple))
            if not ok:
                raise BookError(f"{where}: expected {words} (default {default!r}), got {value!r}")
            return value
    return value


def profile_path(profile: str, root: Path = ROOT) -> Path:
    """``profiles/<profile>.yml``; ``profile`` must be a plain name (letters, digits, ``_``, ``-``)."""
    known = sorted(p.stem for p in (root / "profiles").glob("*.yml"))
    if not PROFILE_NAME.match(str(profile)):
        raise BookError(f"--profile {profile!r}: takes a profile name, not a path; known profiles: {', '.join(known)}")
    path = root / "profiles" / f"{profile}.yml"
    if not path.is_file():
        raise BookError(f"unknown profile {profile!r}: no {path}; known profiles: {', '.join(known)}")
    return path


def load_profile(profile: str, root: Path = ROOT) -> dict[str, dict[str, Any]]:
    """``{stem: parameters}`` of a profile, validated (see :func:`validate_profile`)."""
    path = profile_path(profile, root)
    notebooks = read_profile_file(path)
    validate_profile(profile, notebooks, root)
    return {stem: dict(notebooks.get(stem) or {}) for stem in toc_notebooks(root)}


def read_profile_file(path: Path) -> dict[str, dict]:
    """The ``notebooks`` mapping of a profile file, after its YAML (duplicate keys refused) and its
    shape are checked (:mod:`apd.book.schema`). Raises BookError listing every problem."""
    try:
        data = schema.load_yaml(path.read_text())
    except schema.ProfileShapeError as err:
        raise BookError(f"{path}: {err}") from None
    except yaml.YAMLError as err:
        raise BookError(f"{path} is not valid YAML: {_yaml_problem(err)}") from None
    problems = schema.shape_problems(data)
    if problems:
        raise BookError(f"{path} is not a valid profile:\n  - " + "\n  - ".join(problems))
    return {stem: params or {} for stem, params in (data.get("notebooks") or {}).items()}


def validate_profile(profile: str, notebooks: dict, root: Path = ROOT) -> None:
    """Every toc notebook appears in the profile; every profile notebook is in the toc; every
    parameter exists in its notebook's parameters cell, with a value of its default's type
    (:func:`check_type`) and in its declared range (:func:`apd.book.schema.check_value`).
    Raises BookError listing every problem."""
    stems = toc_notebooks(root)
    problems = []
    for stem in stems:
        if stem not in notebooks:
            problems.append(f"notebook {stem!r} (in _toc.yml) has no entry; add `{stem}: {{}}`")
    for stem, params in notebooks.items():
        if stem not in stems:
            problems.append(f"notebook {stem!r} is not in _toc.yml (typo?); known: {', '.join(stems)}")
            continue
        declared = parameter_defaults(notebook_path(stem, root))
        if "profile" not in declared:
            problems.append(f"notebooks/{stem}.ipynb has no `profile` parameter")
        for name, value in (params or {}).items():
            if name not in declared:
                problems.append(
                    f"{stem}.{name} is not a parameter of notebooks/{stem}.ipynb "
                    f"(its parameters: {', '.join(declared)})"
                )
                continue
            try:
                check_type(f"{stem}.{name}", value, *declared[name])
            except BookError as err:
                problems.append(str(err))
                continue
            bad = schema.check_value(stem, name, value)
            if bad:
                problems.append(bad)
    if problems:
        raise BookError(
            f"profile {profile!r} ({profile_path(profile, root)}) is invalid:\n  - " + "\n  - ".join(problems)
        )


def _yaml_problem(err: yaml.YAMLError) -> str:
    """One line out of a YAML error (its problem and where)."""
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    mark = getattr(err, "problem_mark", None)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else problem


def parse_value(text: str) -> Any:
    """A ``--set`` value: YAML first (``[1, 2]``, ``true``, ``null``, ``'a b'``); a string that reads
    as a number becomes one (YAML 1.1 reads ``5e-2`` as a string; this gives 0.05)."""
    value = yaml.safe_load(text)
    if isinstance(value, str):
        for number in (int, float):
            try:
                return number(value)
            except ValueError:
                pass
    return value


def parse_overrides(items: list[str], profile_params: dict[str, dict], root: Path = ROOT) -> dict:
    """``['nb.param=value', ...]`` -> ``{nb: {param: value}}``: values parsed by :func:`parse_value`,
    then checked against the type of the parameter's default (:func:`check_type`); a string
    parameter takes a number's or a boolean's text as given. Errors are one line: ``--set ITEM: problem``."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise BookError(f"--set {item}: expected NOTEBOOK.PARAMETER=VALUE, e.g. theorem1.seed=3")
        key, text = item.split("=", 1)
        stem, name = key.split(".", 1)
        if stem not in profile_params:
            raise BookError(f"--set {item}: no notebook {stem!r}; known: {', '.join(profile_params)}")
        declared = parameter_defaults(notebook_path(stem, root))
        if name not in declared:
            raise BookError(
                f"--set {item}: {name!r} is not a parameter of {stem} (its parameters: {', '.join(declared)})"
            )
        default, literal = declared[name]
        try:
            value = parse_value(text)
        except yaml.YAMLError as err:
            if not (literal and isinstance(default, str)):
                raise BookError(
                    f"--set {item}: not a valid value ({_yaml_problem(err)}); "
                    "quote lists and mappings, e.g. --set 'nb.grid=[1, 2]'"
                ) from None
            value = text
        if literal and isinstance(default, str) and isinstance(value, (bool, int, float)):
            value = text  # a string parameter: a scalar's text as given (e.g. a folder named 2024)
        try:
            value = check_type(f"--set {item}", value, default, literal)
        except BookError as err:
            raise BookError(str(err).rsplit(", got ", 1)[0]) from None
        bad = schema.check_value(stem, name, value)
        if bad:
            raise BookError(f"--set {item}: " + bad.split(": ", 1)[1])
        out.setdefault(stem, {})[name] = value
    return out


# -- what the machine must have ------------------------------------------------------------------


def _cuda_available() -> bool:
    """Whether torch sees a CUDA device (torch is imported only when an NVIDIA driver is present)."""
    if not (
        Path("/proc/driver/nvidia").exists()
        or Path("/dev/nvidiactl").exists()
        or os.environ.get("CUDA_VISIBLE_DEVICES")
    ):
        return False
    try:
        import torch
    except ImportError:  # pragma: no cover
        return False
    return bool(torch.cuda.is_available())


def _hub_reachable(timeout: float = 2.0) -> bool:
    """A TCP connection to the Hub (``$HF_ENDPOINT`` or huggingface.co:443) within ``timeout`` s."""
    return data_check.reachable(os.environ.get("HF_ENDPOINT") or "https://huggingface.co", timeout)


def _hub_cached(family: str) -> bool:
    """Whether the local Hugging Face cache holds any model whose id names ``family``."""
    hub = os.environ.get("HF_HUB_CACHE") or str(
        Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "hub"
    )
    key = family.lower().split(".")[0]
    return any(key in p.name.lower() for p in Path(hub).glob("models--*"))


def environment_problems(params: dict[str, dict], stems: list[str]) -> list[str]:
    """What this machine lacks for the chapters ``stems``, one line each (empty: nothing): a CUDA
    device (``device: cuda``) or the Hub (a Hub family with no ``local_dir``, while
    ``HF_HUB_OFFLINE=1`` and no local Hugging Face copy, or no connection to the Hub in 2 s)."""
    problems = []
    cuda = [s for s in stems if str(params[s].get("device") or "").startswith("cuda")]
    if cuda and not _cuda_available():
        problems.append(
            f"{', '.join(cuda)} ask for device cuda, but there is no CUDA device here: "
            f"run on a GPU or add {' '.join(f'--set {s}.device=cpu' for s in cuda)}"
        )
    hub = [s for s in stems if params[s].get("family") not in (None, "pico") and not params[s].get("local_dir")]
    if hub:
        family = params[hub[0]]["family"]
        offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
        if offline and not _hub_cached(str(family)):
            why = f"HF_HUB_OFFLINE=1 and no {family} model in the Hugging Face cache"
        elif not offline and not _hub_reachable():
            why = "the Hub cannot be reached (no connection within 2 s)"
        else:
            why = ""
        if why:
            problems.append(
                f"{', '.join(hub)} load the {family} family from the Hub, but {why}: give local "
                f"copies with {' '.join(f'--set {s}.local_dir=FOLDER' for s in hub)} (see "
                "book/rerun.md), or HF_HUB_OFFLINE=1 with the models already in the Hugging Face cache"
            )
    return problems


def cache_folder(root: Path = ROOT) -> Path:
    """The cache folder the chapters' kernels use (they run in ``root``): ``$APD_CACHE_DIR``, else
    ``<root>/cache`` (as :func:`apd.base.paths.cache_dir` finds it from there)."""
    env = os.environ.get("APD_CACHE_DIR")
    return Path(env) if env else root / "cache"


def _writable_problem(folder: Path, label: str, fix: str) -> str | None:
    """None if ``folder`` is (or can be made) a folder this process can write a file into, else one
    line: ``label`` (what the folder is), why, and ``fix``. A missing folder is made for the probe
    and removed again, so a build that stops in its preflight leaves nothing behind."""
    if folder.exists() and not folder.is_dir():
        return f"{label} is a file, not a folder: {fix}"
    made = [p for p in [folder, *folder.parents] if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".apd-write-check-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        return f"{label} cannot be written ({err.strerror or type(err).__name__}): {fix}"
    finally:
        for p in made:  # deepest first
            with contextlib.suppress(OSError):
                p.rmdir()
    return None


def folder_problems(profile: str, root: Path = ROOT) -> list[str]:
    """The folders a build writes: the cache (``$APD_CACHE_DIR``), ``results/<profile>/`` (or
    ``$APD_RESULTS_DIR/<profile>``) with its staging folders, and ``_build/<profile>/``; one line
    per folder that is a file or cannot be written."""
    cache, results = cache_folder(root), results_root(root)
    if os.environ.get("APD_CACHE_DIR"):
        cache_check = (
            cache,
            f"the cache folder APD_CACHE_DIR={cache}",
            "point APD_CACHE_DIR at a folder you can write, or unset it to use the checkout's cache/",
        )
    else:
        cache_check = (
            cache,
            f"the cache folder {cache}",
            f"make {cache} a writable folder, or set APD_CACHE_DIR to one",
        )
    fix_results = (
        "point APD_RESULTS_DIR at a folder you can write"
        if os.environ.get("APD_RESULTS_DIR")
        else f"make {results} writable (chmod -R u+w {results}), or set APD_RESULTS_DIR to a writable folder"
    )
    problems = [bad for bad in (_writable_problem(*cache_check),) if bad]
    bad = _writable_problem(
        results / profile, f"the results folder {results / profile}", fix_results
    ) or _writable_problem(
        _staging_base(profile, root), f"the staging folder {_staging_base(profile, root)}", fix_results
    )
    problems += [bad] if bad else []
    build_dir = root / "_build" / profile
    bad = _writable_problem(build_dir, f"the build folder {build_dir}", f"make {root / '_build'} writable")
    return problems + ([bad] if bad else [])


#: Parameters that name a file or folder a chapter reads (data folders aside: :func:`data_problems`),
#: what each must be, and the value that means "download it" instead.
INPUT_PATHS = {
    "local_dir": ("folder", None),
    "alm_prime_path": ("folder", None),
    "thf_path": ("folder", None),
    "kilt_path": ("file", "hub"),
}


def input_path_problems(params: dict[str, dict], stems: list[str], root: Path = ROOT) -> list[str]:
    """One line per parameter of :data:`INPUT_PATHS` set in a chapter of ``stems`` whose file or
    folder is not there (relative paths are read from ``root``, where the kernels run)."""
    problems = []
    for stem in stems:
        for name, (kind, download) in INPUT_PATHS.items():
            value = params[stem].get(name)
            if not value or value == download:
                continue
            path = Path(str(value)).expanduser()
            path = path if path.is_absolute() else root / path
            ok = path.is_dir() if kind == "folder" else path.is_file()
            if not ok:
                why = (
                    f"is a {'file' if path.is_file() else 'folder'}, not a {kind}"
                    if path.exists()
                    else f"no such {kind}"
                )
                problems.append(
                    f"{stem}.{name} = {str(value)!r}: {why} ({path}); give an existing {kind} "
                    f"or leave {name} unset" + (f" (or {download!r} to download it)" if download else "")
                )
    return problems


def data_problems(params: dict[str, dict], stems: list[str], root: Path = ROOT) -> list[str]:
    """The data every chapter of ``stems`` reads: can it be had, from the data directory or the Hub
    (:mod:`apd.book.data_check`)? One line per problem, naming ``APD_DATA_DIR`` (empty: nothing)."""
    defaults = {s: notebook_parameters(notebook_path(s, root)) for s in stems}
    try:
        data_check.check_data(params, stems, root, defaults)
    except data_check.DataUnavailable as err:
        return [str(err)]
    return []


#: What :func:`preflight` checks, each ``(profile, params, stems, root) -> problem lines``.
PREFLIGHT_CHECKS = {
    "machine": lambda profile, params, stems, root: environment_problems(params, stems),
    "folders": lambda profile, params, stems, root: folder_problems(profile, root),
    "inputs": lambda profile, params, stems, root: input_path_problems(params, stems, root),
    "data": lambda profile, params, stems, root: data_problems(params, stems, root),
}


def preflight(
    profile: str | None, params: dict[str, dict], stems: list[str], root: Path = ROOT, checks=tuple(PREFLIGHT_CHECKS)
) -> None:
    """Everything a build needs, checked before the first notebook starts: this machine (CUDA, the
    Hub: :func:`environment_problems`), the folders it writes (:func:`folder_problems`), the files
    and folders it reads (:func:`input_path_problems`) and its data (:func:`data_problems`); or only
    the ``checks`` named (keys of :data:`PREFLIGHT_CHECKS`; ``profile`` may be None without
    ``"folders"``). Raises one BookError with a line per problem."""
    problems = [line for name in checks for line in PREFLIGHT_CHECKS[name](profile, params, stems, root)]
    if problems:
        raise BookError(
            "a build would stop here: " + ("\n  - " + "\n  - ".join(problems) if len(problems) > 1 else problems[0])
        )


def use_data_dir(folder: str | None) -> None:
    """``--data-dir FOLDER``: set ``$APD_DATA_DIR`` (absolute) for this build and its kernels."""
    if folder:
        os.environ["APD_DATA_DIR"] = str(Path(folder).expanduser().resolve())


# -- execution ----------------------------------------------------------------------------------


def _source_fingerprint(root: Path) -> str:
    """Hash of every ``apd`` source file (subpackages included, by relative path) and the lock file."""
    h = hashlib.sha256()
    files = sorted((root / "apd").rglob("*.py")) + [root / "requirements.lock"]
    for path in files:
        if path.is_file():
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def cache_key(stem: str, params: dict, root: Path = ROOT, upstream: str = "") -> str:
    """Key of one execution: the notebook, its parameters, the ``apd`` sources and the lock file,
    chained with the key of the chapter before it (``upstream``), since later chapters read the
    artifacts and results of earlier ones."""
    h = hashlib.sha256()
    h.update(upstream.encode())
    h.update(notebook_path(stem, root).read_bytes())
    h.update(json.dumps(params, sort_keys=True, default=str).encode())
    h.update(_source_fingerprint(root).encode())
    h.update(data_source().encode())
    h.update(input_fingerprint(stem, params, root).encode())
    return h.hexdigest()[:16]


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
        parts.append(f"{rel}:{_sha256(path) if path.is_file() else 'missing'}")
    return ";".join(parts)


def data_source() -> str:
    """Where the chapters read their datasets, part of every cache key: the resolved
    ``$APD_DATA_DIR``, else ``hub`` (the Hub and the original sources)."""
    folder = os.environ.get("APD_DATA_DIR")
    return f"data:{Path(folder).expanduser().resolve()}" if folder else "data:hub"


def results_root(root: Path = ROOT) -> Path:
    """``$APD_RESULTS_DIR``, else ``<root>/results`` (what the kernels see: they run in ``root``)."""
    env = os.environ.get("APD_RESULTS_DIR")
    return Path(env) if env else root / "results"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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


def results_intact(dest: Path, digests: dict[str, str] | None) -> bool:
    """Whether every file of ``digests`` (``{relative path: sha256}``) exists under ``dest`` with
    that digest. ``None`` (an executed notebook from before digests were kept) is not intact."""
    if digests is None:
        return False
    for rel, digest in digests.items():
        path = dest / rel
        if not path.is_file() or _sha256(path) != digest:
            return False
    return True


def _staging_base(profile: str, root: Path) -> Path:
    """``<results root>/.staging/<profile>``: one folder per run, plus the commit journals."""
    return results_root(root) / ".staging" / profile


def _new_staging(profile: str, stem: str, root: Path) -> Path:
    """A fresh staging folder for one execution of chapter ``stem``, owned by this run alone:
    ``.staging/<profile>/run-<pid>-<random>/<stem>`` (a second build never touches it)."""
    import uuid

    return _staging_base(profile, root) / f"run-{os.getpid()}-{uuid.uuid4().hex[:8]}" / stem


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
    base = _staging_base(profile, root)
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
    staging = Path(staging) if staging is not None else _staging_base(profile, root) / stem
    dest = results_root(root) / profile
    new = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
    record_rel = f"runs/{stem}.json"
    if record_rel in new:
        record_path = staging / record_rel
        record = json.loads(record_path.read_text())
        record["cache_key"] = key
        record["results_sha256"] = {rel: _sha256(staging / rel) for rel in new if rel != record_rel}
        record_path.write_text(json.dumps(record, indent=2, default=str) + "\n")
        new = [rel for rel in new if rel != record_rel] + [record_rel]  # the record moves last
    digests = {rel: _sha256(staging / rel) for rel in new}
    journal = _staging_base(profile, root) / f"{stem}.commit.json"
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


def _cached(out: Path, key: str, dest: Path | None = None) -> bool:
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
    ``results/<profile>/`` only when every cell succeeded (:func:`commit_results`). A failing cell
    raises BookError naming the notebook, the cell and the error; the previous results stay."""
    import papermill as pm

    profile = str(params.get("profile") or "default")
    key = cache_key(stem, params, root, upstream)
    dest = results_root(root) / profile
    if not force and _cached(out, key, dest):
        return "cached"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.stem + ".partial.ipynb")
    staging = _new_staging(profile, stem, root)
    staging.mkdir(parents=True)
    relay = contextlib.ExitStack()  # "damaged ... moved aside" lines from the kernel, on this terminal
    notices = relay.enter_context(relay_notices(stem))
    env = {RUNNER_ENV: "1", STAGING_ENV: str(staging), KEY_ENV: key, NOTICES_ENV: str(notices)}
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)  # the kernel inherits this process's environment
    committed = False
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
        digests = commit_results(profile, stem, key, root, staging)
        committed = True
    except pm.PapermillExecutionError as err:
        raise BookError(
            f"notebook notebooks/{stem}.ipynb failed in cell {err.cell_index} "
            f"(execution count {err.exec_count}): {err.ename}: {err.evalue}\n"
            f"  the partly executed notebook is {tmp}\n"
            f"  results/{profile}/ keeps the last successful run's results of {stem} "
            "(this run's were discarded)"
        ) from None
    finally:
        relay.close()  # the last notices, before the error or the status line
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if not committed:
            shutil.rmtree(staging.parent, ignore_errors=True)
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
    return "executed"


# -- one build per checkout and profile ---------------------------------------------------------


def lock_paths(profile: str, root: Path = ROOT) -> list[Path]:
    """The lock files a build of ``profile`` holds: one beside its staging folders (guarding
    ``results/<profile>/``, wherever ``$APD_RESULTS_DIR`` puts it) and one in ``_build/<profile>/``
    (guarding the executed notebooks and the HTML). Always taken in this order."""
    return [_staging_base(profile, root).with_suffix(".lock"), root / "_build" / profile / "build.lock"]


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
                    f"its results in results/{profile}/ are left to it"
                ) from None
        yield


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


# -- rendering ----------------------------------------------------------------------------------

#: Where the intro page takes the findings table the paper-vs-book chapter wrote
#: (``results/<profile>/findings.md``, made by :func:`apd.report.findings.findings_markdown`).
FINDINGS_MARKER = "<!-- apd:findings -->"


def insert_findings(page: str, findings: str | None, profile: str) -> str:
    """``page`` with :data:`FINDINGS_MARKER` replaced by ``findings``, or by a sentence saying how to get them.

    Example:
        >>> insert_findings("a\\n<!-- apd:findings -->\\nb", "F", "smoke")
        'a\\nF\\nb'
    """
    if FINDINGS_MARKER not in page:
        return page
    if not findings:
        findings = (
            f"The verdicts appear here once the paper-vs-book chapter has run under the profile "
            f"`{profile}` (`make book PROFILE={profile}`)."
        )
    return page.replace(FINDINGS_MARKER, findings.strip())


#: The chapter whose results fill the book's summary page, and the figure that page shows.
SUMMARY_STEM, HEADLINE_FIGURE = "paper_vs_book", "headline"


def summary_page(page: str, profile: str, book_dir: Path, root: Path = ROOT) -> str:
    """The summary page (``book/intro.md``) filled from :data:`SUMMARY_STEM`'s results under
    ``profile`` (:func:`apd.book.pages.fill_page`), with its headline figure copied beside it as
    ``headline.png`` (the value ``headline_figure`` says whether it exists)."""
    results = results_root(root) / profile
    path = results / f"{SUMMARY_STEM}.json"
    values = json.loads(path.read_text()) if path.is_file() else {}
    figure = results / "figures" / f"{HEADLINE_FIGURE}.png"
    values["headline_figure"] = figure.is_file()
    if figure.is_file():
        shutil.copy2(figure, book_dir / f"{HEADLINE_FIGURE}.png")
    try:
        return fill_page(page, values)
    except ValueError as err:
        raise BookError(f"book/intro.md: {err}") from None


def stage(profile: str, root: Path = ROOT) -> Path:
    """Copy the book's hand-written sources and a local MathJax into ``_build/<profile>/book``, with
    the findings of this profile's results in the intro page."""
    dest = root / "_build" / profile / "book"
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / name, dest / name)
    if (dest / "book").exists():
        shutil.rmtree(dest / "book")
    shutil.copytree(root / "book", dest / "book")
    findings = results_root(root) / profile / "findings.md"
    intro = dest / "book" / "intro.md"
    if intro.is_file():
        text = insert_findings(intro.read_text(), findings.read_text() if findings.is_file() else None, profile)
        intro.write_text(summary_page(text, profile, dest / "book", root))
    status_page = dest / "book" / "status.md"  # the build report: the run records of this profile
    if status_page.is_file():
        status_page.write_text(
            build_status.insert_status(status_page.read_text(), profile, toc_notebooks(root), results_root(root), root)
        )
    mathjax = root / "node_modules" / "mathjax" / "es5"
    if not (mathjax / "tex-chtml.js").is_file():
        raise BookError(
            f"{mathjax}/tex-chtml.js is missing: the book serves MathJax locally so that math "
            "renders offline. Run `npm install` (or `make env`) in the project root."
        )
    static = dest / "_mathjax" / "mathjax"
    if not (static / "tex-chtml.js").is_file():
        shutil.copytree(mathjax, static, dirs_exist_ok=True)
    return dest


def render(profile: str, root: Path = ROOT) -> Path:
    """Build the HTML book from the staged sources with warnings as errors; return the html dir."""
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
    # the API reference imports apd (sphinx.ext.autodoc): this project's, installed or not
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(cmd, cwd=root, text=True, capture_output=True, env=env)
    if proc.returncode != 0:
        raise BookError(
            f"jupyter-book build failed (warnings are errors):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
        )
    return src / "_build" / "html"


def resolve(
    profile: str, overrides: list[str] | None = None, only: list[str] | None = None, root: Path = ROOT
) -> tuple[dict[str, dict], list[str]]:
    """The parameters every notebook runs with (profile, ``--set`` overrides and ``profile``), all
    validated, and the toc's notebooks in order. Raises BookError (one line per problem)."""
    params = load_profile(profile, root)
    extra = parse_overrides(overrides or [], params, root)
    stems = toc_notebooks(root)
    if only:
        unknown = [s for s in only if s not in stems]
        if unknown:
            raise BookError(f"--only {', '.join(unknown)}: not in _toc.yml; known: {', '.join(stems)}")
    return {stem: {**params[stem], **extra.get(stem, {}), "profile": profile} for stem in stems}, stems


def build_book(
    profile: str,
    overrides: list[str] | None = None,
    only: list[str] | None = None,
    force: bool = False,
    html: bool = True,
    root: Path = ROOT,
    wait: bool = True,
) -> Path | None:
    """Execute every notebook of ``_toc.yml`` under ``profile`` and render the book. Everything is
    checked first (:func:`resolve`, :func:`preflight`); then the profile's build lock is
    taken for the whole build (:func:`build_lock`; ``wait=False``: stop if another build holds it)
    and an interrupted commit of an earlier build is finished (:func:`recover`)."""
    params, stems = resolve(profile, overrides, only, root)
    preflight(profile, params, [s for s in stems if not only or s in only], root)
    with build_lock(profile, root, wait=wait):
        return _build_locked(profile, params, stems, only, force, html, root)


def _build_locked(
    profile: str,
    params: dict[str, dict],
    stems: list[str],
    only: list[str] | None,
    force: bool,
    html: bool,
    root: Path,
) -> Path | None:
    """The body of :func:`build_book`, run while holding the profile's build lock."""
    for stem in recover(profile, root):
        print(f"[apd] {stem}: finished moving the results of an interrupted build into place", flush=True)
    out_dir = root / "_build" / profile / "book" / "notebooks"
    t_all = time.time()
    missing: list[str] = []
    upstream = ""
    for stem in stems:
        p = params[stem]
        out = out_dir / f"{stem}.ipynb"
        key = cache_key(stem, p, root, upstream)
        if only and stem not in only:
            if not out.is_file():
                missing.append(stem)
        else:
            t0 = time.time()
            print(f"[apd] {stem}: executing under profile {profile!r} ...", flush=True)
            with terminal.ChapterProgress(
                stem,
                root / "_build" / profile / "progress",
                terminal.last_wall_time(results_root(root) / profile / "runs" / f"{stem}.json"),
            ):
                status = execute(stem, p, out, root, force=force, upstream=upstream)
            print(f"[apd] {stem}: {status} in {time.time() - t0:.1f} s", flush=True)
            build_status.log_chapter(profile, stem, status, time.time() - t0, root)
        upstream = key
    print(f"[apd] notebooks done in {time.time() - t_all:.1f} s", flush=True)
    if not html:
        return None
    if missing:
        print(
            f"[apd] not rendering the HTML: {', '.join(missing)} never ran under profile "
            f"{profile!r}; build the whole book once (make book PROFILE={profile})",
            flush=True,
        )
        return None
    t0 = time.time()
    html_dir = render(profile, root)
    print(f"[apd] HTML built in {time.time() - t0:.1f} s: {html_dir}/index.html", flush=True)
    return html_dir


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m apd", description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="default", help="profiles/<name>.yml (smoke, default, pythia)")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NB.PARAM=VALUE",
        help="override one notebook parameter for this run (repeatable)",
    )
    ap.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="NB",
        help="execute only this notebook (repeatable); others keep earlier outputs",
    )
    ap.add_argument("--force", action="store_true", help="re-execute even when cached")
    ap.add_argument("--no-html", action="store_true", help="execute notebooks, skip Jupyter Book")
    ap.add_argument(
        "--no-wait",
        action="store_true",
        help="stop at once if another build of this profile is running here (default: wait)",
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="only validate the profile with every --set applied and check what a build "
        "needs here, then exit (0: a build could start; 1: it would stop, and why)",
    )
    ap.add_argument(
        "--data-dir",
        default=None,
        metavar="FOLDER",
        help="offline copies of the datasets (sets APD_DATA_DIR for this build; default: "
        "$APD_DATA_DIR, else the Hub and the original sources)",
    )
    args = ap.parse_args(argv)
    use_data_dir(args.data_dir)
    try:
        if args.check:
            params, stems = resolve(args.profile, args.set, args.only)
            print(f"profile {args.profile!r} is valid" + (" with " + " ".join(args.set) if args.set else ""))
            preflight(args.profile, params, [s for s in stems if not args.only or s in args.only])
            print("this machine has what a build needs")
            return 0
        build_book(args.profile, args.set, args.only, args.force, not args.no_html, wait=not args.no_wait)
    except BookError as err:
        print(f"apd: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            f"apd: interrupted; results/{args.profile}/ holds what the last successful run of each chapter wrote",
            file=sys.stderr,
        )
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
