"""Where the project, its cache, its results and its data live, resolved from the environment
(``APD_CACHE_DIR``, ``APD_RESULTS_DIR``, ``APD_DATA_DIR``), and a phrase naming them for messages
(:func:`describe_folders`: a full disk, a lock, a failed chapter name the real folders)."""

from __future__ import annotations

import os
from pathlib import Path


def project_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (default: cwd) holding ``_toc.yml`` and ``apd/``."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file() and (folder / "apd").is_dir():
            return folder
    return None


def user_cache_dir() -> Path:
    """The platform's per-user cache folder for ``apd``: ``$XDG_CACHE_HOME/apd``, else ``~/.cache/apd``
    (where Hugging Face keeps its own cache, ``~/.cache/huggingface``)."""
    base = os.environ.get("XDG_CACHE_HOME")
    return Path(base).expanduser() / "apd" if base else Path.home() / ".cache" / "apd"


def cache_dir(root: Path | None = None) -> Path:
    """Where trained models and other artifacts are cached: ``$APD_CACHE_DIR``, else the checkout's
    ``cache/`` (``root``, default: the checkout holding the working directory), else
    :func:`user_cache_dir` (so an installed ``apd`` trains a family once per user, not once per folder).

        >>> import os
        >>> os.environ["APD_CACHE_DIR"] = "/tmp/apd-cache"
        >>> str(cache_dir())
        '/tmp/apd-cache'
        >>> del os.environ["APD_CACHE_DIR"]
    """
    env = os.environ.get("APD_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    root = root or project_root()
    return (Path(root) / "cache") if root else user_cache_dir()


def results_root(root: Path | None = None) -> Path:
    """Where results go: ``$APD_RESULTS_DIR``, else ``results/`` in the checkout ``root`` (default: the
    one holding the working directory), else ``results`` in the working directory.

        >>> import os
        >>> os.environ["APD_RESULTS_DIR"] = "/tmp/apd-results"
        >>> str(results_root())
        '/tmp/apd-results'
        >>> del os.environ["APD_RESULTS_DIR"]
    """
    env = os.environ.get("APD_RESULTS_DIR")
    if env:
        return Path(env)
    root = root or project_root()
    return (Path(root) / "results") if root else Path("results")


def data_dir() -> Path | None:
    """The folder of offline dataset copies, ``$APD_DATA_DIR``; None when unset (the Hub and the
    datasets' original sources)."""
    env = os.environ.get("APD_DATA_DIR")
    return Path(env).expanduser() if env else None


def data_folder_problem(value, source: str, root: Path | None = None) -> str | None:
    """None when ``value``, a data folder named by ``source`` (``APD_DATA_DIR``,
    ``qa.data_dir``, ``data_dir``), is a folder (a relative one taken from ``root``, else the working
    directory); else one line naming the source, the path and the fix.

    Example:
        >>> print(data_folder_problem("/no/such/apd-data", "APD_DATA_DIR"))  # doctest: +ELLIPSIS
        APD_DATA_DIR=/no/such/apd-data: no such folder; give the folder ... or leave APD_DATA_DIR unset ...
    """
    folder = Path(value).expanduser()
    folder = Path(root) / folder if root is not None and not folder.is_absolute() else folder
    if folder.is_dir():
        return None
    why = "is a file, not a folder" if folder.exists() else "no such folder"
    where = "" if str(folder.absolute()) == str(value) else f" ({folder.absolute()})"
    return (
        f"{source}={value}: {why}{where}; give the folder of the offline dataset copies (`apd data fetch "
        f"FOLDER` makes one), or leave {source} unset to read the Hub and the datasets' original sources"
    )


def data_folder(given=None, source: str = "data_dir") -> Path | None:
    """The folder of offline dataset copies a loader reads: ``given``, else ``$APD_DATA_DIR``; None when
    neither names one (the Hub and the datasets' original sources). A folder named that does not exist
    or is a file is a NotADirectoryError (:func:`data_folder_problem`), never the Hub instead."""
    if given is None or str(given) == "":
        given, source = os.environ.get("APD_DATA_DIR") or None, "APD_DATA_DIR"
        if given is None:
            return None
    problem = data_folder_problem(given, source)
    if problem:
        raise NotADirectoryError(problem)
    return Path(given).expanduser()


def free_space(folder) -> str:
    """The free space of the file system holding ``folder`` (or its nearest existing parent), e.g.
    ``"12.3 MB free"``; ``"free space unknown"`` when it cannot be read."""
    import shutil

    folder = Path(folder)
    for f in (folder, *folder.parents):
        if f.exists():
            try:
                free = shutil.disk_usage(f).free
            except OSError:
                break
            return f"{free / 1e6:.1f} MB free" if free < 1e9 else f"{free / 1e9:.1f} GB free"
    return "free space unknown"


def describe_folders(root: Path | None = None) -> str:
    """The folders a build writes and reads, as the environment resolves them, with their free space,
    for messages: ``results <path> (<free>), cache <path> (<free>), data <path or the Hub>``.
    ``root``: the checkout the build runs in (default: the one holding the working directory)."""
    results, cache, data = results_root(root), cache_dir(root), data_dir()
    how = lambda var: " set by " + var if os.environ.get(var) else ""  # noqa: E731
    return (
        f"results {results}{how('APD_RESULTS_DIR')} ({free_space(results)}), "
        f"cache {cache}{how('APD_CACHE_DIR')} ({free_space(cache)}), "
        + (f"data {data} set by APD_DATA_DIR" if data else "data from the Hub and the original sources")
    )
