"""The HTML book: the hand-written sources staged in ``_build/<profile>/book`` (the intro page
filled from this profile's summary results, the build report page, a local MathJax),
then built by Jupyter Book with warnings as errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from apd.base.notebooks import BookError
from apd.book import status as build_status
from apd.book.pages import fill_page
from apd.book.project import ROOT, results_root, toc_notebooks
from apd.report.results import GLUE_FORMATS

#: The chapter whose results fill the book's summary page, and the figure that page shows.
SUMMARY_STEM, HEADLINE_FIGURE = "paper_vs_book", "headline"


def summary_page(page: str, profile: str, book_dir: Path, root: Path = ROOT) -> str:
    """The summary page (``book/intro.md``) filled from :data:`SUMMARY_STEM`'s results under
    ``profile`` (:func:`apd.book.pages.fill_page`), with its headline figure copied beside it as
    ``headline.png`` (the value ``headline_figure`` says whether it exists)."""
    results = results_root(root) / profile
    path = results / f"{SUMMARY_STEM}.json"
    values = json.loads(path.read_text()) if path.is_file() else {}
    record = results / "runs" / f"{SUMMARY_STEM}.json"  # how each value was printed in its chapter
    if record.is_file():
        values[GLUE_FORMATS] = json.loads(record.read_text()).get(GLUE_FORMATS, {})
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
    this profile's summary results in the intro page (:func:`summary_page`)."""
    dest = root / "_build" / profile / "book"
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / name, dest / name)
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
