"""Execute the book's notebooks with papermill under a profile, then render them with Jupyter Book.

    python -m apd --profile default                  # what `make book` runs
    python -m apd --profile smoke --only theorem1     # one chapter
    python -m apd --profile default --set theorem1.n_draws=500 --set theorem1.seed=3
    python -m apd --profile pythia --device cpu --local-dir /data/pythia   # every chapter that takes them
    apd list                                          # the chapters and the profiles
    apd data check FOLDER                             # the datasets' offline copies (apd.book.datafiles)

``apd`` (the installed command) is ``python -m apd``. An installed wheel carries the profiles but not
the notebooks: it lists, checks data and runs the package; the book is built from a checkout.

A profile, ``profiles/<name>.yml``, is ``notebooks: {<stem>: {<parameter>: <value>}}`` for every
notebook in ``_toc.yml``; each notebook also receives ``profile=<name>``, and an unknown parameter
fails (:func:`apd.book.profiles.validate_profile`). Executed notebooks go to
``_build/<profile>/book/notebooks/``, the HTML to ``_build/<profile>/book/_build/html``. A notebook is
re-executed only when its source, its parameters, the ``apd`` sources or the lock file changed, or
when its results files are missing or edited (``--force`` re-executes anyway; :mod:`apd.book.cache`).

Results are written per chapter through a staging folder: the kernel's ``Run`` writes into
``<results root>/.staging/<profile>/<stem>/`` (``$APD_RESULTS_STAGING``), and only when the notebook
succeeds do its files replace the chapter's files in ``results/<profile>/``
(:func:`apd.book.staging.commit_results`); a failed or interrupted run leaves them as the last
successful build left them. Everything is validated before any kernel starts: the profile's shape
and keys, parameter names, types and ranges (``--set`` included; :mod:`apd.book.schema`), and what
the build needs here (:func:`apd.book.preflight.preflight`: the CUDA device and the Hub access the
profile asks for, writable cache, results and build folders).

One build per checkout and profile runs at a time (:func:`apd.book.staging.build_lock`): a second one
waits for the first (or stops, ``--no-wait``), and every run stages its results in a folder of its own.

This module is the command line and the build's order of work; the parts live in
:mod:`apd.book.profiles`, :mod:`apd.book.preflight`, :mod:`apd.book.cache`, :mod:`apd.book.staging`,
:mod:`apd.book.execution` (papermill) and :mod:`apd.book.rendering` (Jupyter Book).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from apd.base.notebooks import BookError
from apd.book import datafiles
from apd.book import status as build_status
from apd.book import terminal
from apd.book.cache import cache_key
from apd.book.execution import disk_full_line, execute
from apd.book.preflight import preflight
from apd.book.profiles import profile_descriptions, resolve
from apd.book.project import ROOT, is_checkout, results_root, toc_notebooks
from apd.book.rendering import render
from apd.book.staging import build_lock, recover
from apd.chapters.params import CHAPTERS


def build_book(
    profile: str,
    overrides: list[str] | None = None,
    only: list[str] | None = None,
    force: bool = False,
    html: bool = True,
    root: Path = ROOT,
    wait: bool = True,
    switches: dict[str, Any] | None = None,
) -> Path | None:
    """Execute every notebook of ``_toc.yml`` under ``profile`` and render the book (``switches``:
    ``{"device": ..., "local_dir": ...}`` for every chapter that declares them, ``overrides`` win).
    Everything is checked first (:func:`apd.book.profiles.resolve`, :func:`apd.book.preflight.preflight`); then the
    profile's build lock is taken for the whole build (:func:`apd.book.staging.build_lock`; ``wait=False``:
    stop if another build holds it) and an interrupted commit of an earlier build is finished
    (:func:`apd.book.staging.recover`)."""
    params, stems = resolve(profile, overrides, only, root, switches)
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


def use_data_dir(folder: str | None) -> None:
    """``--data-dir FOLDER``: set ``$APD_DATA_DIR`` (absolute) for this build and its kernels."""
    if folder:
        os.environ["APD_DATA_DIR"] = str(Path(folder).expanduser().resolve())


def version(root: Path = ROOT) -> str:
    """The installed package's version (its metadata), else (a checkout run without ``pip install
    -e .``) the one in its ``pyproject.toml``."""
    try:
        return metadata.version("apd")
    except metadata.PackageNotFoundError:
        path = Path(root) / "pyproject.toml"
        found = re.search(r'^version = "(.*)"$', path.read_text(), flags=re.M) if path.is_file() else None
        return found.group(1) if found else "unknown"


def chapters(root: Path = ROOT) -> list[str]:
    """The chapters in book order: ``_toc.yml`` in a checkout, else (an installed wheel) the order of
    :data:`apd.chapters.params.CHAPTERS`, which follows it."""
    return toc_notebooks(root) if is_checkout(root) else list(CHAPTERS)


def listing(root: Path = ROOT) -> str:
    """``apd list``: the chapters in order and the profiles with their one-line descriptions."""
    names = chapters(root)
    profiles = profile_descriptions(root)
    out = ["chapters, in book order:"]
    out += [f"  {i:2d}. {stem}" for i, stem in enumerate(names, 1)]
    out += ["", "profiles (--profile NAME):"]
    width = max((len(name) for name in profiles), default=0)
    out += [f"  {name:<{width}}  {text}".rstrip() for name, text in profiles.items()]
    return "\n".join(out)


def _epilog(root: Path = ROOT) -> str:
    profiles = profile_descriptions(root)
    width = max((len(name) for name in profiles), default=0)
    lines = ["profiles:"] + [f"  {name:<{width}}  {text}".rstrip() for name, text in profiles.items()]
    lines += [
        "",
        "commands:",
        "  list                    the chapters in order and the profiles",
        "  data fetch FOLDER       download the datasets' offline copies into FOLDER",
        "  data check [FOLDER]     check a folder of them (default: $APD_DATA_DIR)",
    ]
    return "\n".join(lines)


def _prog() -> str:
    return "apd" if Path(sys.argv[0]).name == "apd" else "python -m apd"


def parser(root: Path = ROOT) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=_prog(),
        description=__doc__.split("\n\n")[0],
        epilog=_epilog(root),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="version", version=f"apd {version()}")
    ap.add_argument("--profile", default="default", help="profiles/<name>.yml (listed below; default: default)")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NB.PARAM=VALUE",
        help="override one notebook parameter for this run (repeatable; wins over --device and --local-dir)",
    )
    ap.add_argument(
        "--device",
        default=None,
        metavar="DEVICE",
        help="set `device` (auto, cpu, mps, cuda, cuda:N) in every chapter that declares it",
    )
    ap.add_argument(
        "--local-dir",
        default=None,
        metavar="FOLDER",
        help="set `local_dir` (local copies of a Hub family, one folder per member) in every chapter that declares it",
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
    return ap


def switches(args: argparse.Namespace) -> dict[str, Any]:
    """The global switches given (``--local-dir`` made absolute: the kernels run in the checkout)."""
    local = str(Path(args.local_dir).expanduser().resolve()) if args.local_dir else None
    return {"device": args.device, "local_dir": local}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["data"]:
        return datafiles.main(argv[1:])
    if argv[:1] == ["list"]:
        if argv[1:]:
            print(f"{_prog()} list: takes no arguments, got {' '.join(argv[1:])}", file=sys.stderr)
            return 2
        print(listing())
        return 0
    args = parser().parse_args(argv)
    if not is_checkout():
        print(
            f"apd: the book's notebooks are not installed with the package ({ROOT / '_toc.yml'} is missing): "
            "build the book from a checkout of the project (make book, or python -m apd there); "
            f"here: {_prog()} list, {_prog()} data, and `import apd`",
            file=sys.stderr,
        )
        return 1
    use_data_dir(args.data_dir)
    given = switches(args)
    try:
        if args.check:
            params, stems = resolve(args.profile, args.set, args.only, switches=given)
            flags = [f"--device {given['device']}"] if given["device"] else []
            flags += [f"--local-dir {given['local_dir']}"] if given["local_dir"] else []
            flags += [f"--set {item}" for item in args.set] if flags else args.set
            print(f"profile {args.profile!r} is valid" + (" with " + " ".join(flags) if flags else ""))
            preflight(args.profile, params, [s for s in stems if not args.only or s in args.only])
            print("this machine has what a build needs")
            return 0
        build_book(
            args.profile, args.set, args.only, args.force, not args.no_html, wait=not args.no_wait, switches=given
        )
    except BookError as err:
        print(f"apd: {err}", file=sys.stderr)
        return 1
    except OSError as err:  # a write of the runner's own outside a chapter (e.g. the HTML, a full disk)
        print(f"apd: {err}" + ("\n" + disk_full_line(err).rstrip() if disk_full_line(err) else ""), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            f"apd: interrupted; {results_root() / args.profile}/ holds what the last successful run of each "
            "chapter wrote",
            file=sys.stderr,
        )
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
