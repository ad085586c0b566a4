"""The HTML book: the hand-written sources staged in ``_build/<profile>/book`` (the intro page
filled from this profile's summary results, the build report page, a local MathJax),
then built by Jupyter Book with warnings as errors."""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from apd.base.notebooks import BookError
from apd.book import status as build_status
from apd.book.pages import fill_page
from apd.book.profiles import profile_descriptions
from apd.book.project import ROOT, is_checkout, results_root, toc_notebooks
from apd.report.results import GLUE_FORMATS

#: The chapter whose results fill the book's summary page, and the figure that page shows.
SUMMARY_STEM, HEADLINE_FIGURE = "paper_vs_book", "headline"
#: The profile whose book is the report; every other profile's pages carry a banner (:func:`banner`).
BOOK_PROFILE = "default"
#: The values the summary page reads from the build itself, not from :data:`SUMMARY_STEM`'s results
#: (:func:`build_values`).
BUILD_KEYS = ("book_profile", "qa_max_examples", "skipped_sections")


def banner(profile: str, root: Path = ROOT) -> str:
    """The line at the top of every page of a book built under ``profile`` (HTML): its name and the
    profile file's ``description``; empty for :data:`BOOK_PROFILE`, whose book has no banner.

    Example:
        >>> banner("default")
        ''
    """
    if profile == BOOK_PROFILE:
        return ""
    about = profile_descriptions(root).get(profile) or ""
    return f"Built under the <code>{html.escape(profile)}</code> profile, not the default" + (
        f": {html.escape(about)}" if about else "."
    )


def stage_config(profile: str, dest: Path, root: Path = ROOT) -> Path:
    """``root/_config.yml`` written to ``dest``, with :func:`banner` as the theme's announcement (a
    line at the top of every page) when the profile has one."""
    text = (root / "_config.yml").read_text()
    line = banner(profile, root)
    if line:
        config = yaml.safe_load(text) or {}
        config.setdefault("html", {})["announcement"] = line
        text = yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
    path = dest / "_config.yml"
    path.write_text(text)
    return path


def build_values(profile: str, root: Path = ROOT) -> dict:
    """What the summary page says about the build itself (:data:`BUILD_KEYS`): the profile, the most
    examples a real QA dataset was scored on (from the QA chapter's results; absent when none ran),
    the sections skipped for data this machine does not have (a Markdown list, one item per section,
    from :func:`apd.book.status.read_skipped`; absent when none was)."""
    results = results_root(root)
    values: dict = {"book_profile": profile}
    try:
        qa = json.loads((results / profile / "qa.json").read_text())
    except (OSError, ValueError):
        qa = {}
    examples = qa.get("qa_max_examples") if isinstance(qa, dict) else None
    if isinstance(examples, (int, float)) and examples > 0 and not qa.get("qa_data_missing"):
        values["qa_max_examples"] = f"{int(examples):,}"
    stems = toc_notebooks(root) if is_checkout(root) else sorted(p.stem for p in (results / profile).glob("*.json"))
    skipped = build_status.read_skipped(profile, stems, results)
    if skipped:
        values["skipped_sections"] = "\n".join(
            f"- {{doc}}`../notebooks/{stem}`: {line}" for stem, lines in skipped.items() for line in lines
        )
    return values


def summary_page(page: str, profile: str, book_dir: Path, root: Path = ROOT) -> str:
    """The summary page (``book/intro.md``) filled from :data:`SUMMARY_STEM`'s results under
    ``profile`` and the build's own values (:func:`build_values`; :func:`apd.book.pages.fill_page`),
    with its headline figure copied beside it as ``headline.png`` (the value ``headline_figure`` says
    whether it exists)."""
    results = results_root(root) / profile
    path = results / f"{SUMMARY_STEM}.json"
    values = json.loads(path.read_text()) if path.is_file() else {}
    record = results / "runs" / f"{SUMMARY_STEM}.json"  # how each value was printed in its chapter
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


def stage(profile: str, root: Path = ROOT) -> Path:
    """Copy the book's hand-written sources and a local MathJax into ``_build/<profile>/book``, with
    this profile's summary results in the intro page (:func:`summary_page`) and, for a profile other
    than :data:`BOOK_PROFILE`, its banner on every page (:func:`stage_config`)."""
    dest = root / "_build" / profile / "book"
    dest.mkdir(parents=True, exist_ok=True)
    stage_config(profile, dest, root)
    shutil.copy2(root / "_toc.yml", dest / "_toc.yml")
    if (dest / "book").exists():
        shutil.rmtree(dest / "book")
    shutil.copytree(root / "book", dest / "book")
    intro = dest / "book" / "intro.md"
    if intro.is_file():
        intro.write_text(summary_page(intro.read_text(), profile, dest / "book", root))
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
    html = src / "_build" / "html"
    copy_results(profile, html, root)
    return html


def copy_results(profile: str, html: Path, root: Path = ROOT) -> Path:
    """Copy the chapters' results (``results/<profile>/*.json`` and ``tables/*.csv``) to ``html/results/``,
    where each chapter's run record links them; returns that folder."""
    src, dest = results_root(root) / profile, html / "results"
    (dest / "tables").mkdir(parents=True, exist_ok=True)
    for f in src.glob("*.json"):
        shutil.copy2(f, dest / f.name)
    for f in (src / "tables").glob("*.csv"):
        shutil.copy2(f, dest / "tables" / f.name)
    return dest
