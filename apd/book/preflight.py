"""What a build needs here, checked before the first notebook starts: a CUDA device and the Hub
when the profile asks for them, writable cache, results and build folders, the files and folders
the profile names, and the datasets (:mod:`apd.book.data_check`: a damaged file stops the build,
absent data is a notice and the sections that read it are skipped)."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from apd.base import paths
from apd.base.notebooks import BookError
from apd.book import data_check
from apd.book.params import defaults_of
from apd.book.project import ROOT, results_root
from apd.book.staging import staging_base


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
    """Whether the local Hugging Face cache (:func:`apd.book.data_check.hub_cache`, found as the
    Hub library finds it) holds any model whose id names ``family``."""
    key = family.lower().split(".")[0]
    return any(key in p.name.lower() for p in data_check.hub_cache().glob("models--*"))


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
    return paths.cache_dir(root)


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
        staging_base(profile, root), f"the staging folder {staging_base(profile, root)}", fix_results
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


#: The chapters that skip their sections that read data this machine cannot have (each says so on
#: its page); any other chapter (the curves chapter under a Hub family) stops the build instead.
SKIPS_WITHOUT_DATA = ("qa", "factuality")


def _unavailable(params: dict[str, dict], stems: list[str], root: Path) -> list[str]:
    """:func:`apd.book.data_check.check_data`'s line for the chapters ``stems``, or none."""
    defaults = defaults_of([s for s in stems if s in data_check.DATA_CHAPTERS], root)
    try:
        data_check.check_data(params, stems, root, defaults)
    except data_check.DataUnavailable as err:
        return [str(err)]
    return []


def data_problems(params: dict[str, dict], stems: list[str], root: Path = ROOT) -> list[str]:
    """What stops a build for its data: a data folder named (``APD_DATA_DIR``, a chapter's
    ``data_dir``) that is not a folder (:func:`apd.book.data_check.folder_problems`), a dataset that a
    chapter of ``stems`` outside :data:`SKIPS_WITHOUT_DATA` cannot have here (one line naming
    ``APD_DATA_DIR`` and the files), and every damaged file of the data directory
    (:func:`apd.book.data_check.invalid_files`: one line per problem, naming the file, the line and
    the problem). Empty: nothing. The chapters of :data:`SKIPS_WITHOUT_DATA` go on without theirs:
    :func:`data_notices`."""
    defaults = defaults_of([s for s in stems if s in data_check.DATA_CHAPTERS], root)
    others = [s for s in stems if s not in SKIPS_WITHOUT_DATA]
    return (
        data_check.folder_problems(params, stems, root)
        + _unavailable(params, others, root)
        + data_check.invalid_files(params, stems, root, defaults)
    )


def data_notices(params: dict[str, dict], stems: list[str], root: Path = ROOT) -> list[str]:
    """The datasets that the chapters of ``stems`` in :data:`SKIPS_WITHOUT_DATA` read but cannot have
    here, from the data directory or the Hub (:func:`apd.book.data_check.check_data`): one line
    naming ``APD_DATA_DIR`` and the files (empty: every one can be had). The build goes on: the
    sections that read them say on their page what is missing and how to get it, and the build
    report lists them."""
    lines = _unavailable(params, [s for s in stems if s in SKIPS_WITHOUT_DATA], root)
    return [
        f"{line}; the build goes on and skips the sections that read them (the build report lists them)"
        for line in lines
    ]


#: What :func:`preflight` checks, each ``(profile, params, stems, root) -> problem lines``.
PREFLIGHT_CHECKS = {
    "machine": lambda profile, params, stems, root: environment_problems(params, stems),
    "folders": lambda profile, params, stems, root: folder_problems(profile, root),
    "inputs": lambda profile, params, stems, root: input_path_problems(params, stems, root),
    "data": lambda profile, params, stems, root: data_problems(params, stems, root),
}

#: What :func:`preflight` reports without stopping, by the check it belongs to (``-> notice lines``).
PREFLIGHT_NOTICES = {
    "data": lambda profile, params, stems, root: data_notices(params, stems, root),
}


def preflight(
    profile: str | None,
    params: dict[str, dict],
    stems: list[str],
    root: Path = ROOT,
    checks=tuple(PREFLIGHT_CHECKS),
    stream=None,
) -> list[str]:
    """Everything a build needs, checked before the first notebook starts: this machine (CUDA, the
    Hub: :func:`environment_problems`), the folders it writes (:func:`folder_problems`), the files
    and folders it reads (:func:`input_path_problems`) and its data (:func:`data_problems`); or only
    the ``checks`` named (keys of :data:`PREFLIGHT_CHECKS`; ``profile`` may be None without
    ``"folders"``). Raises one BookError with a line per problem. What a build can do without
    (datasets that cannot be had here: :func:`data_notices`) is printed to ``stream`` (default
    stderr) as ``[apd] notice: ...`` lines, and returned."""
    notices = [
        line
        for name in checks
        if name in PREFLIGHT_NOTICES
        for line in PREFLIGHT_NOTICES[name](profile, params, stems, root)
    ]
    for line in notices:
        print(f"[apd] notice: {line}", file=stream or sys.stderr, flush=True)
    problems = [line for name in checks for line in PREFLIGHT_CHECKS[name](profile, params, stems, root)]
    if problems:
        raise BookError(
            "a build would stop here: " + ("\n  - " + "\n  - ".join(problems) if len(problems) > 1 else problems[0])
        )
    return notices
