"""Before the first notebook runs: can this machine have every dataset the profile's chapters read?

A chapter reads its datasets from a data directory when one is given (the notebook's ``data_dir``
parameter, else ``$APD_DATA_DIR``), else from the Hugging Face Hub (QA data) or the original source
(FactualityPrompts), cached in the user's cache. A data directory named that does not exist or is a
file stops the build (:func:`folder_problems`). :func:`check_data` raises one line naming
``APD_DATA_DIR`` and the files needed when neither way works: the folder lacks a file, or the
source cannot be reached (``HF_HUB_OFFLINE=1``, or no connection within 2 s) and the
file is not already cached (the Hugging Face caches found as its libraries find them:
:func:`hub_cache`, :func:`datasets_cache`). That is a notice, not a stop
(:func:`apd.book.preflight.data_notices`): the build runs every chapter, and the sections that read
the data say on their page what is missing. :func:`invalid_files` then reads every file of the data
directory a chapter needs, line by line, as its loader would
(:func:`apd.evaluation.qa_data.check_offline_file`,
:func:`apd.evaluation.factuality.sources.check_prompts_file`): one line per problem, naming the
file, the line and the problem, a field of the wrong type included (0.7 s of CPU for the default
profile's 9 files, 19 MB); a damaged file stops the build. Standard library only (the datasets'
specifications are read from :mod:`apd.evaluation` when a chapter needs them), so a build stops in
seconds. :func:`local_files` is what a chapter reads, for its cache key
(:func:`apd.book.cache.data_fingerprint`).

    >>> needs = data_needs({"qa": {"qa_datasets": ["lambada", "qasc"], "data_dir": None}}, ["qa"])
    >>> [(n.chapter, n.file, n.source) for n in needs]
    [('qa', 'qa/lambada_openai.jsonl', 'hub:EleutherAI/lambada_openai')]
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from apd.base import paths

#: The environment variable that names the folder of offline copies (``qa/``, ``factuality_prompts/``).
DATA_ENV = "APD_DATA_DIR"
_OFFLINE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class DataNeed:
    """One file a chapter reads: ``file`` relative to a data directory; ``source`` where it comes
    from without one (``hub:<dataset id>`` or a URL); ``data_dir`` the chapter's own ``data_dir``;
    ``dataset`` the QA dataset read from it (None: a FactualityPrompts file)."""

    chapter: str
    file: str
    source: str
    data_dir: str | None = None
    dataset: str | None = None


def _param(params: dict, defaults: dict, name: str) -> Any:
    return params[name] if name in params else defaults.get(name)


class DataUnavailable(RuntimeError):
    """A dataset a chapter needs can be had neither from the data directory nor from its source."""


#: The chapters that read datasets (:func:`data_needs`).
DATA_CHAPTERS = ("qa", "factuality", "curves")


def data_needs(params: dict[str, dict], stems: list[str], defaults: dict[str, dict] | None = None) -> list[DataNeed]:
    """The data files the chapters ``stems`` read with ``params`` (profile plus ``--set``; a missing
    parameter takes ``defaults[stem]``, its notebook's default): the QA chapter's datasets (a stand-in's
    where the dataset has no offline copy), FactualityPrompts when ``fp_n_prompts > 0``, and the
    curves chapter's QA dataset for a Hub family. Datasets with neither an offline copy nor a
    stand-in are left out: the QA chapter reports them as not run."""
    out: list[DataNeed] = []
    for stem in stems:
        p = params.get(stem) or {}
        if stem not in DATA_CHAPTERS:
            continue
        # the datasets' specifications, read only for a chapter that needs them: importing apd.evaluation
        # loads torch, and a profile without these chapters is checked in about a second
        from apd.evaluation import qa_data
        from apd.evaluation.factuality import sources as fp_sources

        d = (defaults or {}).get(stem) or {}
        data_dir = _param(p, d, "data_dir")
        data_dir = str(data_dir) if data_dir else None
        names: list[str] = []
        if stem == "qa":
            stand_ins = _param(p, d, "stand_ins") or {}
            for name in _param(p, d, "qa_datasets") or ():
                if qa_data.offline_file(name) is None and name in stand_ins:
                    name = stand_ins[name]
                names.append(name)
        elif stem == "curves" and _param(p, d, "family") not in (None, "pico"):
            names.append(_param(p, d, "qa_dataset"))
        for name in names:
            if name in qa_data.DATASETS and qa_data.offline_file(name) is not None:
                out.append(
                    DataNeed(stem, qa_data.offline_file(name), f"hub:{qa_data.DATASETS[name].hub_id}", data_dir, name)
                )
        if stem == "factuality" and (_param(p, d, "fp_n_prompts") or 0) > 0:
            for kind in _param(p, d, "fp_kinds") or ():
                rel, url = fp_sources.prompts_file(kind, _param(p, d, "fp_split") or "test")
                out.append(DataNeed(stem, rel, url, data_dir))
    return out


def hub_offline() -> bool:
    """Whether Hugging Face is told to stay offline (``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE``)."""
    return any(os.environ.get(v, "").strip().lower() in _OFFLINE for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def reachable(url: str, timeout: float = 2.0) -> bool:
    """A TCP connection to ``url``'s host within ``timeout`` seconds."""
    u = urlparse(url)
    try:
        socket.create_connection((u.hostname, u.port or 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def hf_home() -> Path:
    """The Hugging Face home, as the Hub library finds it: ``$HF_HOME``, else
    ``$XDG_CACHE_HOME/huggingface``, else ``~/.cache/huggingface``."""
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "huggingface"


def hub_cache() -> Path:
    """The Hub library's cache of models and datasets: ``$HF_HUB_CACHE`` (or the older
    ``$HUGGINGFACE_HUB_CACHE``), else ``<hf_home()>/hub``."""
    named = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    return Path(named).expanduser() if named else hf_home() / "hub"


def datasets_cache() -> Path:
    """The ``datasets`` library's cache: ``$HF_DATASETS_CACHE``, else ``<hf_home()>/datasets``."""
    named = os.environ.get("HF_DATASETS_CACHE")
    return Path(named).expanduser() if named else hf_home() / "datasets"


def _hub_dataset_cached(dataset_id: str) -> bool:
    """Whether the ``datasets`` cache (``<namespace>___<name>``) or the Hub cache
    (``datasets--<namespace>--<name>``) holds ``dataset_id``."""
    return (datasets_cache() / dataset_id.replace("/", "___")).is_dir() or (
        hub_cache() / f"datasets--{dataset_id.replace('/', '--')}"
    ).is_dir()


def _source_host(need: DataNeed, cache: Path) -> str | None:
    """The host to reach for ``need`` without a data directory; None when the file is cached already."""
    if need.source.startswith("hub:"):
        if _hub_dataset_cached(need.source[4:]):
            return None
        return os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    return None if (cache / need.file).is_file() else need.source


def _probe(urls: set[str]) -> dict[str, bool]:
    """``{url: reachable}``, all probed at once (so several hosts cost one timeout, not several)."""
    if hub_offline():
        return {u: False for u in urls}
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, len(urls))) as pool:
        return dict(zip(urls, pool.map(reachable, urls)))


def _named_dir(need: DataNeed) -> str | None:
    """The data directory ``need`` is read from, as named: the chapter's ``data_dir``, else ``$APD_DATA_DIR``."""
    return need.data_dir or os.environ.get(DATA_ENV) or None


def _folder(named: str, root: Path) -> Path:
    """The data directory ``named`` (relative: from ``root``, where the kernels run)."""
    folder = Path(named).expanduser()
    return folder if folder.is_absolute() else root / folder


def _local_path(need: DataNeed, named: str, root: Path) -> Path:
    """Where ``need``'s file is in the data directory ``named`` (relative: from ``root``; the ``qa/``
    folder itself may be named for the QA files)."""
    folder = _folder(named, root)
    qa_alone = need.file.startswith("qa/") and folder.name == "qa"
    return folder / (need.file[3:] if qa_alone else need.file)


def folder_problems(params: dict[str, dict], stems: list[str], root: Path) -> list[str]:
    """One line per data folder named for this build that does not exist or is a file
    (:func:`apd.base.paths.data_folder_problem`): ``$APD_DATA_DIR`` (``--data-dir`` sets it), and the
    ``data_dir`` of each chapter of ``stems`` (its profile or ``--set``). Such a folder stops the
    build before anything runs: going on would read nothing and skip the sections that need the data.
    Without any data folder named, nothing (the chapters read the Hub and the original sources).

        >>> print(*folder_problems({"qa": {"data_dir": "/no/such/data"}}, ["qa"], Path(".")))  # doctest: +ELLIPSIS
        data: qa.data_dir=/no/such/data: no such folder; give the folder of the offline dataset copies ...
    """
    named = [(DATA_ENV, os.environ.get(DATA_ENV))]
    named += [(f"{stem}.data_dir", (params.get(stem) or {}).get("data_dir")) for stem in stems]
    problems = (paths.data_folder_problem(value, source, root) for source, value in named if value)
    return [f"data: {problem}" for problem in problems if problem]


def local_files(
    params: dict[str, dict], stems: list[str], root: Path, defaults: dict[str, dict] | None = None
) -> list[tuple[DataNeed, Path]]:
    """``(need, path)`` of every file the chapters ``stems`` read from a data directory (their
    ``data_dir``, else ``$APD_DATA_DIR``); none for what they read from the Hub or the original source."""
    out = []
    for need in data_needs(params, stems, defaults):
        named = _named_dir(need)
        if named:
            out.append((need, _local_path(need, named, root)))
    return out


def invalid_files(
    params: dict[str, dict], stems: list[str], root: Path, defaults: dict[str, dict] | None = None
) -> list[str]:
    """One line per problem of each file of :func:`local_files` that is there but invalid, as its
    loader would say it (the file, the line, the problem: not UTF-8, not JSON, empty, a field missing
    or not of the type the loader's schema gives, a row without usable answer options or gold
    answer), with the fix; each file is read once, line by line, keeping nothing."""
    problems, seen = [], set()
    for need, path in local_files(params, stems, root, defaults):
        if (path, need.dataset) in seen or not path.is_file():
            continue
        seen.add((path, need.dataset))
        try:
            if need.dataset is None:
                from apd.evaluation.factuality.sources import check_prompts_file

                check_prompts_file(path)
            else:
                from apd.evaluation import qa_data

                qa_data.check_offline_file(need.dataset, path.parent)
        except ValueError as err:
            where = f"{need.chapter}.data_dir={need.data_dir}" if need.data_dir else f"{DATA_ENV}={_named_dir(need)}"
            problems += [
                f"data: {line} (read by the {need.chapter} chapter from {where})" for line in str(err).splitlines()
            ]
    return problems


def check_data(params: dict[str, dict], stems: list[str], root: Path, defaults: dict[str, dict] | None = None) -> None:
    """Raise :class:`DataUnavailable` in one line when a dataset the chapters ``stems`` need cannot be had
    (see the module docstring); return quietly when every one can. A relative ``data_dir`` is
    taken from ``root``, where the kernels run."""
    needs = data_needs(params, stems, defaults)
    if not needs:
        return
    cache = Path(os.environ["APD_CACHE_DIR"]) if os.environ.get("APD_CACHE_DIR") else root / "cache"
    env_dir = os.environ.get(DATA_ENV) or None
    missing: dict[str, list[str]] = {}  # the data directory (as named) -> files it lacks
    from_source: list[tuple[DataNeed, str]] = []
    for need in needs:
        named = need.data_dir or env_dir
        if named:
            path = _local_path(need, named, root)
            # a data folder that is not there stops the build (folder_problems): no notice about its files
            if not path.is_file() and _folder(named, root).is_dir():
                missing.setdefault(named if need.data_dir else f"{DATA_ENV}={named}", []).append(need.file)
        else:
            host = _source_host(need, cache)
            if host is not None:
                from_source.append((need, host))
    if missing:
        where = next(iter(missing))
        files = sorted({f for fs in missing.values() for f in fs})
        raise DataUnavailable(
            f"data: {where} lacks {', '.join(files)}; point {DATA_ENV} at a folder holding these files, "
            f"or unset it to read them from the Hub and their original sources"
        )
    ok = _probe({host for _, host in from_source})
    unreachable = [need for need, host in from_source if not ok[host]]
    if unreachable:
        files = sorted({n.file for n in unreachable})
        why = "HF_HUB_OFFLINE=1" if hub_offline() else "no connection within 2 s"
        raise DataUnavailable(
            f"data: {DATA_ENV} is not set and the Hub and original sources cannot be reached "
            f"({why}); set {DATA_ENV}=FOLDER holding {', '.join(files)} (a folder made by "
            f"`apd data fetch FOLDER` on a connected machine)"
        )
