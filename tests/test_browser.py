"""Open every page of a built book (the smoke build, or the one ``APD_BOOK_PROFILE`` names) in headless Chromium, with no network, and check that
every image loaded, every math block was rendered by the locally served MathJax, and no table is
wider than the text column at 1,280 px (a wide table goes to a download or a folded cell).

The text checks (:func:`test_every_page_reads_clean`) read the HTML files directly, so they run
where Chromium is missing too: no progress bars, tracebacks or warnings in outputs, no raw Markdown
tables, no 'nan' or 'n/a n/a', no absolute machine paths, and no table whose numbers can run into
the next cell for lack of padding."""

import importlib.util
import shutil
import tempfile
from pathlib import Path

import page_checks
import pytest

pytestmark = pytest.mark.book

# the book-length benchmark's browser, server and measure (scripts/book_length.py)
_spec = importlib.util.spec_from_file_location(
    "book_length", Path(__file__).resolve().parents[1] / "scripts" / "book_length.py"
)
length = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(length)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
SKIP_PAGES = {"genindex.html", "search.html"}


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip(
            "headless Chromium not found (apt-get install chromium chromium-driver); "
            ".ci/run installs it so CI runs this test"
        )
    profile = tempfile.mkdtemp(prefix="apd-chromium-")
    driver = length.chrome(profile)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def server(book_html):
    return length.serve(book_html)


def pages(html_dir):
    out = []
    for path in sorted(html_dir.rglob("*.html")):
        rel = path.relative_to(html_dir).as_posix()
        if rel.startswith(("_static/", "_sources/", "_images/")) or rel in SKIP_PAGES:
            continue
        out.append(rel)
    return out


WAIT_FOR_PAGE = (
    length.SETTLE
    + """
settled.then(() => done({
      images: imgs.map(i => [i.getAttribute('src'), i.naturalWidth]),
      math: document.querySelectorAll('.math').length,
      mathRendered: Array.from(document.querySelectorAll('.math')).filter(m => m.querySelector('mjx-container')).length,
      mathErrors: document.querySelectorAll('mjx-merror, merror').length,
      mathjax: window.MathJax ? (MathJax.version || 'loaded') : null,
      // a folded table (a closed <details>, apd.report.tables.Folded) opens on a click: not in the text
      wide: Array.from(document.querySelectorAll('main table')).filter(t => !t.closest('details:not([open])')).filter(t => {
          const column = t.closest('article') || t.closest('main');
          return column && t.getBoundingClientRect().width > column.getBoundingClientRect().width + 2;
        }).map(t => {
          const cap = t.querySelector('caption');
          const head = Array.from(t.querySelectorAll('th')).slice(0, 3).map(h => h.textContent.trim()).join(' | ');
          return ((cap ? cap.textContent.trim() : '') || head).slice(0, 80) + ' (' +
                 Math.round(t.getBoundingClientRect().width) + ' px)';
        }),
      // opened, a folded table scrolls inside the column: its scroll box is no wider than the column
      openedWide: Array.from(document.querySelectorAll('details.apd-wide-table')).filter(d => {
          const was = d.open; d.open = true;
          const box = d.querySelector('.apd-scroll') || d;
          const column = d.closest('article') || d.closest('main');
          const over = column && box.getBoundingClientRect().width > column.getBoundingClientRect().width + 2;
          d.open = was;
          return over;
        }).map(d => d.querySelector('summary').textContent.trim().slice(0, 80)),
      remote: Array.from(document.querySelectorAll('script[src], link[rel=stylesheet]'))
        .map(e => e.getAttribute('src') || e.getAttribute('href'))
        .filter(u => /^(https?:)?\\/\\//.test(u) && !u.startsWith(location.origin)),
  }))
  .catch(e => done({error: String(e)}));
"""
)


def test_every_page_renders_offline(browser, server, book_html):
    checked = pages(book_html)
    assert any(p.startswith("notebooks/") for p in checked), f"no chapter pages among {checked}"
    total_images = total_math = 0
    problems = []
    for rel in checked:
        browser.get(f"{server}/{rel}")
        info = browser.execute_async_script(WAIT_FOR_PAGE)
        if "error" in info:
            problems.append(f"{rel}: script error {info['error']}")
            continue
        for src, width in info["images"]:
            if not width:
                problems.append(f"{rel}: image {src} did not load (naturalWidth 0)")
        if info["math"]:
            if not info["mathjax"]:
                problems.append(f"{rel}: {info['math']} math blocks but MathJax did not load")
            if info["mathRendered"] != info["math"]:
                problems.append(f"{rel}: only {info['mathRendered']} of {info['math']} math blocks rendered")
            if info["mathErrors"]:
                problems.append(f"{rel}: {info['mathErrors']} MathJax errors")
        for table in info.get("wide", []):
            problems.append(f"{rel}: a table wider than the text column at 1,280 px: {table}")
        for table in info.get("openedWide", []):
            problems.append(f"{rel}: a folded table that, opened, runs past the text column: {table}")
        if info["remote"]:
            problems.append(f"{rel}: loads remote resources {info['remote']}")
        total_images += len(info["images"])
        total_math += info["math"]
    assert not problems, "\n".join(problems)
    assert total_images > 0 and total_math > 0, (total_images, total_math)


def test_every_page_reads_clean(book_html):
    checked = pages(book_html)
    assert any(p.startswith("notebooks/") for p in checked), f"no chapter pages among {checked}"
    problems = []
    for rel in checked:
        problems += page_checks.page_text_problems(rel, (book_html / rel).read_text(encoding="utf-8"))
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def test_the_first_screen_shows_the_claims_table_and_figure_1(browser, server):
    """At a 1,280 x 900 viewport the first page shows the claims table and the whole of Figure 1 (its
    axis label included) without scrolling, below the banner a non-default build adds (the default
    build, which readers see, has none)."""
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    )
    try:
        browser.get(f"{server}/book/intro.html")  # the first page (index.html redirects to it)
        browser.execute_async_script(WAIT_FOR_PAGE)
        tops = browser.execute_script(
            """const t = document.querySelector('div.apd-claims table');
            const f = document.querySelector('figure img[src*="headline"]');
            const b = document.querySelector('.bd-header-announcement');
            return [t ? t.getBoundingClientRect().bottom : null, f ? f.getBoundingClientRect().bottom : null,
                    window.scrollY, b ? b.getBoundingClientRect().height : 0];"""
        )
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    table_bottom, figure_bottom, scrolled, banner = tops
    table_bottom, figure_bottom = (v - banner if v is not None else None for v in (table_bottom, figure_bottom))
    assert scrolled == 0
    assert table_bottom is not None and table_bottom <= 900, f"the claims table ends at {table_bottom} px"
    assert figure_bottom is not None and figure_bottom <= 900, f"Figure 1 ends at {figure_bottom} px"


def _luminance(rgb: str) -> float:
    """WCAG relative luminance of a CSS ``rgb(r, g, b)`` colour."""
    channels = [int(v) / 255 for v in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3]]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_figure_captions_are_legible(browser, server):
    """Captions are set like body text: a contrast ratio against the white page of at least 7 (WCAG
    AAA), at the body's weight, not the theme's light grey at weight 300."""
    browser.get(f"{server}/book/intro.html")
    browser.execute_async_script(WAIT_FOR_PAGE)
    styles = browser.execute_script(
        """return Array.from(document.querySelectorAll('figure figcaption .caption-text'))
                .map(e => [getComputedStyle(e).color, parseInt(getComputedStyle(e).fontWeight)]);"""
    )
    assert styles, "the first page shows no figure caption"
    for color, weight in styles:
        ratio = 1.05 / (_luminance(color) + 0.05)
        assert ratio >= 7, f"a caption's colour {color} has contrast {ratio:.1f} against white"
        assert weight >= 400, f"a caption is set at weight {weight}"


def test_the_length_measure_reads_what_a_reader_sees_with_folds_closed(browser, server):
    """``scripts/book_length.py`` (the book-length benchmark) measures the first page and every
    chapter at 1,280 px: each has a height and words, and on the page with the most folds, opening
    them adds words (folded text is not counted while closed) and height."""
    browser.set_window_size(1280, 900)
    rows = [length.measure(browser, server, page) for page in length.chapter_pages()]
    assert all(r["px"] > 900 and r["words"] > 50 for r in rows), rows
    print(f"book length (folds closed): {sum(r['px'] for r in rows):,} px, {sum(r['words'] for r in rows):,} words")
    folds = {}
    for r in rows:
        browser.get(f"{server}/{r['page']}")
        folds[r["page"]] = browser.execute_script("return document.querySelectorAll('main article details').length")
    page = max(folds, key=folds.get)
    assert folds[page] > 0, "no chapter has a fold"
    closed = next(r for r in rows if r["page"] == page)
    opened = length.measure(browser, server, page, open_folds=True)
    assert opened["words"] > closed["words"] and opened["px"] > closed["px"], (closed, opened)
