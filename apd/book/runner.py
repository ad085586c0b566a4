"""Execute the book's notebooks with papermill under a profile, then render them with Jupyter Book.

    python -m apd --profile default                  # what `make book` runs
    python -m apd --profile smoke --only theorem1     # one chapter
    python -m apd --profile smoke --jobs 1            # one chapter at a time (default: side by side)
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
those of a chapter it needs (:data:`apd.chapters.graph.NEEDS`), or when its results files are
missing or edited (``--force`` re-executes anyway; :mod:`apd.book.cache`).

Results are written per chapter through a staging folder: the kernel's ``Run`` writes into
``<results root>/.staging/<profile>/<stem>/`` (``$APD_RESULTS_STAGING``), and only when the notebook
succeeds do its files replace the chapter's files in ``results/<profile>/``
(:func:`apd.book.staging.commit_results`); a failed or interrupted run leaves them as the last
successful build left them. Everything is validated before any kernel starts: the profile's shape
and keys, parameter names, types and ranges (``--set`` included; :mod:`apd.book.schema`), and what
the build needs here (:func:`apd.book.preflight.preflight`: the CUDA device and the Hub access the
profile asks for, writable cache, results and build folders).

Chapters run side by side as their dependencies allow (:data:`apd.chapters.graph.NEEDS`: a chapter
starts when the chapters whose artifacts or results it reads have finished), up to ``--jobs N`` at
once (``make book JOBS=N``; default ``$APD_JOBS``, else the CPU count; ``--jobs 1`` runs them one
at a time, in book order, in this process), each in a process of its own. Every job, a chapter's
kernel or a worker of a pool inside one, computes on one torch thread and holds one of the build's
``N`` slots (:mod:`apd.base.jobs`, ``_build/<profile>/slots``; each chapter's run is logged in
``_build/<profile>/jobs.jsonl``), so the numbers do not depend on ``N``. A failed chapter stops the
chapters that need it; the others run on, and the build ends with one error naming every failure.

One build per checkout and profile runs at a time (:func:`apd.book.staging.build_lock`): a second one
waits for the first (or stops, ``--no-wait``), and every run stages its results in a folder of its own.

This module is the command line and the build's order of work; the parts live in
:mod:`apd.book.profiles`, :mod:`apd.book.preflight`, :mod:`apd.book.cache`, :mod:`apd.book.staging`,
:mod:`apd.book.execution` (papermill) and :mod:`apd.book.rendering` (Jupyter Book).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import sys
import threading
import time
import traceback
from importlib import metadata
from pathlib import Path
from typing import Any

from apd.base.jobs import JOBS_ENV, JOBS_LOG_ENV, SLOTS_ENV, job_count, log_job, make_slots
from apd.base.memo import SCORES_ENV
from apd.base.notebooks import BookError
from apd.base.paths import data_folder_problem
from apd.book import datafiles
from apd.book import status as build_status
from apd.book import terminal, timing
from apd.book.cache import chapter_keys, is_cached
from apd.book.execution import disk_full_line, execute, with_damaged
from apd.book.preflight import preflight
from apd.book.profiles import profile_descriptions, resolve
from apd.book.project import ROOT, is_checkout, results_root, toc_notebooks
from apd.book.rendering import render
from apd.book.staging import build_lock, recover
from apd.chapters.graph import NEEDS
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
    jobs: int | None = None,
) -> Path | None:
    """Execute every notebook of ``_toc.yml`` under ``profile`` and render the book (``switches``:
    ``{"device": ..., "local_dir": ...}`` for every chapter that declares them, ``overrides`` win).
    Up to ``jobs`` chapters run at once (default :func:`apd.base.jobs.job_count`: ``$APD_JOBS``, else
    the CPU count; 1: one at a time, in book order). Everything is checked first
    (:func:`apd.book.profiles.resolve`, :func:`apd.book.preflight.preflight`); then the
    profile's build lock is taken for the whole build (:func:`apd.book.staging.build_lock`; ``wait=False``:
    stop if another build holds it) and an interrupted commit of an earlier build is finished
    (:func:`apd.book.staging.recover`)."""
    try:
        jobs = job_count(jobs)
    except ValueError as err:
        raise BookError(str(err)) from None
    params, stems = resolve(profile, overrides, only, root, switches)
    preflight(profile, params, [s for s in stems if not only or s in only], root)
    with build_lock(profile, root, wait=wait):
        return _build_locked(profile, params, stems, only, force, html, root, jobs)


def _build_locked(
    profile: str,
    params: dict[str, dict],
    stems: list[str],
    only: list[str] | None,
    force: bool,
    html: bool,
    root: Path,
    jobs: int = 1,
) -> Path | None:
    """The body of :func:`build_book`, run while holding the profile's build lock."""
    for stem in recover(profile, root):
        print(f"[apd] {stem}: finished moving the results of an interrupted build into place", flush=True)
    out_dir = root / "_build" / profile / "book" / "notebooks"
    t_all = time.time()
    keys = chapter_keys(stems, params, root, NEEDS)  # from the inputs alone, before anything runs
    run = [stem for stem in stems if not only or stem in only]
    run = with_damaged(run, stems, results_root(root) / profile, NEEDS)  # damaged results execute again
    missing = [stem for stem in stems if stem not in run and not (out_dir / f"{stem}.ipynb").is_file()]
    machine, log = timing.MachineSampler(), None
    finished = False
    try:
        with build_environment(profile, root, jobs) as env, machine:
            log = Path(env[JOBS_LOG_ENV])  # this build's job log from here on
            if jobs > 1 and len(run) > 1:
                _run_side_by_side(profile, params, stems, run, keys, force, root, jobs)
            else:
                for stem in run:
                    t0 = time.time()
                    print(f"[apd] {stem}: executing under profile {profile!r} ...", flush=True)
                    try:
                        with terminal.ChapterProgress(stem, *_progress(profile, stem, root)):
                            status = execute(stem, params[stem], out_dir / f"{stem}.ipynb", root, force, keys[stem][1])
                    finally:
                        log_job(f"chapter {stem}", t0, time.time())
                    print(f"[apd] {stem}: {status} in {time.time() - t0:.1f} s", flush=True)
                    build_status.log_chapter(profile, stem, status, time.time() - t0, root)
        finished = True
    finally:  # an interrupted or failed build reports what it did too ("finished": false)
        if log is not None:
            spent = timing.build_timing(timing.read_jobs(log), time.time() - t_all, jobs, machine.result())
            timing.write_timing(root / "_build" / profile / "timing.json", {**spent, "finished": finished})
    print(f"[apd] notebooks done in {time.time() - t_all:.1f} s", flush=True)
    if spent["work_s"] > 0:  # something ran
        print(timing.summary_line(spent), flush=True)
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


@contextlib.contextmanager
def build_environment(profile: str, root: Path, jobs: int):
    """While the block runs, ``$APD_SLOTS`` (``_build/<profile>/slots``, ``jobs`` slot files:
    :func:`apd.base.jobs.make_slots`), ``$APD_JOBS`` (``jobs``), ``$APD_JOBS_LOG`` (a fresh
    ``_build/<profile>/jobs.jsonl``) and ``$APD_MEMO_SCORES`` (1: the family's scores are cached by
    their weights, :mod:`apd.family.digest`) are set for the build: the chapters' processes and kernels
    inherit them, so every computing process of the build holds one of the slots (a kernel from
    ``Run.start``, a pool's workers while their jobs run), and the runner logs each chapter there."""
    folder = root / "_build" / profile
    slots = make_slots(folder / "slots", jobs)
    log = folder / "jobs.jsonl"
    log.write_text("")
    values = {
        SLOTS_ENV: str(slots.resolve()),
        JOBS_ENV: str(jobs),
        JOBS_LOG_ENV: str(log.resolve()),
        SCORES_ENV: "1",
    }
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield values
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _progress(profile: str, stem: str, root: Path) -> tuple[Path, float | None]:
    """:class:`apd.book.terminal.ChapterProgress`'s folder and estimate (the last run's wall time)."""
    record = results_root(root) / profile / "runs" / f"{stem}.json"
    return root / "_build" / profile / "progress", terminal.last_wall_time(record)


def _run_side_by_side(
    profile: str,
    params: dict[str, dict],
    stems: list[str],
    run: list[str],
    keys: dict[str, tuple[str, str]],
    force: bool,
    root: Path,
    jobs: int,
) -> None:
    """Execute the chapters of ``run``, up to ``jobs`` at once, each in a spawned process of its own
    (:func:`_chapter_process`). A chapter starts when every chapter it needs (:data:`NEEDS`) that is
    part of this build has finished (a chapter of ``stems`` not in ``run`` counts as finished);
    ready chapters start in book order. A failed chapter's dependents are not started, the others
    run on, and one BookError at the end names every failure. An interrupt (or any error here)
    stops the chapters' processes, and with them their kernels, and is raised again."""
    import multiprocessing
    from multiprocessing.connection import wait

    ctx = multiprocessing.get_context("spawn")
    out_dir = root / "_build" / profile / "book" / "notebooks"
    in_build = set(stems)
    pending = list(run)
    finished = set(stems) - set(run)
    failed: dict[str, str] = {}  # stem -> its error message
    skipped: dict[str, list[str]] = {}  # stem -> the failed chapters it (indirectly) needs
    running: dict[str, tuple[Any, Any, float]] = {}  # stem -> (process, its end of the pipe, start)
    answers: dict[str, tuple[str, str]] = {}  # stem -> what its process sent: (kind, text)

    def blocked_by(stem: str) -> list[str]:
        found = []
        for need in NEEDS.get(stem, ()):
            found += [need] if need in failed else skipped.get(need, [])
        return sorted(set(found), key=stems.index)

    def done(stem: str, t0: float, status: str) -> None:
        log_job(f"chapter {stem}", t0, time.time())
        print(f"[apd] {stem}: {status} in {time.time() - t0:.1f} s", flush=True)
        build_status.log_chapter(profile, stem, status, time.time() - t0, root)
        finished.add(stem)

    try:
        while pending or running:
            moved = False
            for stem in list(pending):
                why = blocked_by(stem)
                if why:
                    pending.remove(stem)
                    skipped[stem] = why
                    moved = True
                    print(f"[apd] {stem}: not run, it needs {', '.join(why)}, which failed", flush=True)
            for stem in list(pending):
                if len(running) >= jobs:
                    break
                if any(n in in_build and n not in finished for n in NEEDS.get(stem, ())):
                    continue
                pending.remove(stem)
                moved = True
                t0 = time.time()
                print(f"[apd] {stem}: executing under profile {profile!r} ...", flush=True)
                out, (key, upstream) = out_dir / f"{stem}.ipynb", keys[stem]
                if not force and is_cached(out, key, results_root(root) / profile):
                    done(stem, t0, "cached")
                    continue
                receive, send = ctx.Pipe(duplex=False)
                args = (stem, params[stem], out, root, force, upstream, *_progress(profile, stem, root), send)
                proc = ctx.Process(target=_chapter_process, args=args, name=f"apd-{stem}")
                proc.start()
                send.close()  # the child's end: EOF here once the child is gone
                running[stem] = (proc, receive, t0)
            if not running:
                if not moved:  # pragma: no cover (apd.chapters.graph.check: needs come earlier in the book)
                    raise BookError(f"chapters {', '.join(pending)} need each other: the graph has a cycle")
                continue  # the chapters ready were cached: look again
            unread = [r for s, (_, r, _) in running.items() if s not in answers]
            ready = wait([proc.sentinel for proc, _, _ in running.values()] + unread)
            for stem, (_, receive, _) in running.items():
                if receive in ready and stem not in answers:
                    try:  # read it now: a long message would block the child's exit
                        answers[stem] = receive.recv()
                    except (EOFError, OSError):
                        answers[stem] = ("failed", "")
            for stem in [s for s, (proc, _, _) in running.items() if proc.sentinel in ready]:
                proc, receive, t0 = running.pop(stem)
                proc.join()
                if stem not in answers and receive.poll():
                    try:
                        answers[stem] = receive.recv()
                    except (EOFError, OSError):
                        pass
                receive.close()
                kind, text = answers.pop(stem, ("failed", ""))
                if kind == "done":
                    done(stem, t0, text)
                    continue
                log_job(f"chapter {stem}", t0, time.time())
                if kind == "interrupted":
                    text = f"chapter {stem}: its process was interrupted (SIGTERM)"
                failed[stem] = text or f"chapter {stem}: its process ended with exit code {proc.exitcode}"
                print(f"[apd] {stem}: failed after {time.time() - t0:.1f} s", flush=True)
    except BaseException:
        _stop([proc for proc, _, _ in running.values()])
        raise
    if failed:
        raise BookError(_failure_message(failed, skipped))


def _failure_message(failed: dict[str, str], skipped: dict[str, list[str]]) -> str:
    """One message for every failed chapter (each with its own message) and those not run because
    of them.

    Example:
        >>> print(_failure_message({"a": "notebook a failed", "b": "notebook b failed"}, {"c": ["a"]}))
        2 chapters failed:
        notebook a failed
        notebook b failed
        not run, because a chapter they need failed: c (needs a)
    """
    head = [] if len(failed) == 1 else [f"{len(failed)} chapters failed:"]
    lines = head + [text.rstrip("\n") for text in failed.values()]
    if skipped:
        lines.append(
            "not run, because a chapter they need failed: "
            + ", ".join(f"{stem} (needs {', '.join(why)})" for stem, why in skipped.items())
        )
    return "\n".join(lines)


def _stop(procs: list, grace: float = 30.0) -> None:
    """Stop the chapters' processes: SIGTERM, which each turns into an interrupt that shuts its
    kernel down and discards its staged results (:func:`_chapter_process`); whatever is still there
    after ``grace`` seconds is killed (its kernel then exits too: it watches its parent)."""
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    deadline = time.time() + grace
    for proc in procs:
        proc.join(max(0.0, deadline - time.time()))
        if proc.is_alive():
            proc.kill()
            proc.join()


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _watch_parent(parent: int, every: float = 1.0) -> None:
    """Interrupt this chapter's process (SIGTERM to itself) once the build's process ``parent`` is
    gone: a chapter never runs on, or commits its results, outside the build lock."""
    while os.getppid() == parent:
        time.sleep(every)
    os.kill(os.getpid(), signal.SIGTERM)


def _chapter_process(stem, params, out, root, force, upstream, progress_dir, estimate, conn) -> None:
    """One chapter in a process of its own (the book runner with ``jobs`` > 1): :func:`execute`, its
    progress shown as plain lines, and ``(kind, text)`` sent back on ``conn``: ``("done", "executed"
    or "cached")``, ``("failed", message)`` or ``("interrupted", "")``. The build's process decides
    when to stop: Ctrl-C is left to it, and its SIGTERM interrupts the chapter here, as does the end
    of the build's process (killed outright, it can send none)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _interrupt)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    try:
        with terminal.ChapterProgress(stem, progress_dir, estimate, tty=False):
            status = execute(stem, params, out, root, force=force, upstream=upstream)
        conn.send(("done", status))
    except BookError as err:
        conn.send(("failed", str(err)))
    except KeyboardInterrupt:
        conn.send(("interrupted", ""))
    except OSError as err:
        conn.send(("failed", f"chapter {stem}: {err}\n" + disk_full_line(err, root)))
    except Exception:
        conn.send(("failed", f"chapter {stem} stopped with an error in the book runner:\n{traceback.format_exc()}"))
    finally:
        conn.close()


def use_data_dir(folder: str | None) -> None:
    """``--data-dir FOLDER``: set ``$APD_DATA_DIR`` (absolute) for this build and its kernels; a
    BookError, before anything runs, when FOLDER does not exist or is a file."""
    if folder:
        problem = data_folder_problem(folder, "--data-dir")
        if problem:
            raise BookError(f"data: {problem}")
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
    ap.add_argument(
        "--jobs",
        type=_jobs,
        default=None,
        metavar="N",
        help="run up to N chapters side by side as their dependencies allow, each job on one thread "
        "(default: $APD_JOBS, else the CPU count; 1: one at a time, in book order); the numbers do "
        "not depend on N",
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


def _jobs(text: str) -> int:
    """``--jobs N``: a whole number >= 1."""
    try:
        return job_count(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


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
    given = switches(args)
    try:
        use_data_dir(args.data_dir)
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
            args.profile,
            args.set,
            args.only,
            args.force,
            not args.no_html,
            wait=not args.no_wait,
            switches=given,
            jobs=args.jobs,
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
