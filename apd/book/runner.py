"""Execute the book's notebooks with papermill under a profile, then render them with Jupyter Book.

    python -m apd --profile default                  # what `make book` runs
    python -m apd --profile smoke --only theorem1     # one chapter
    python -m apd --profile default --set theorem1.n_draws=500 --set theorem1.seed=3

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
import sys
import time
from pathlib import Path

from apd.base.notebooks import BookError
from apd.book import status as build_status
from apd.book import terminal
from apd.book.cache import cache_key
from apd.book.execution import disk_full_line, execute
from apd.book.preflight import preflight
from apd.book.profiles import resolve
from apd.book.project import ROOT, results_root
from apd.book.rendering import render
from apd.book.staging import build_lock, recover


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
    checked first (:func:`apd.book.profiles.resolve`, :func:`apd.book.preflight.preflight`); then the
    profile's build lock is taken for the whole build (:func:`apd.book.staging.build_lock`; ``wait=False``:
    stop if another build holds it) and an interrupted commit of an earlier build is finished
    (:func:`apd.book.staging.recover`)."""
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


def use_data_dir(folder: str | None) -> None:
    """``--data-dir FOLDER``: set ``$APD_DATA_DIR`` (absolute) for this build and its kernels."""
    if folder:
        os.environ["APD_DATA_DIR"] = str(Path(folder).expanduser().resolve())


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
