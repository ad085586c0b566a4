"""How long the book reads: the first page and each chapter at 1,280 px wide in headless Chromium,
folds closed, as a reader first sees them. Per page its height (px) and its visible words (the
article's rendered text, split on white space, tokens with a letter or digit); the totals against
the target of at most 50,000 px and 10,000 words for the first page and the chapters together.

    .venv/bin/python scripts/book_length.py [--profile default]    # part of `make bench`

Reads the built book ``_build/<profile>/book/_build/html`` (build it first), prints a Markdown
table and writes it as JSON to ``results/bench/length-<profile>.json``. Needs ``chromium`` and
``chromedriver`` (``apt-get install chromium chromium-driver``).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import re
import shutil
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_PX, TARGET_WORDS = 50_000, 10_000

# A page settled: its images loaded and MathJax done (MathJax loads deferred: on a busy machine
# window.MathJax may still be the bare configuration object, so its startup is awaited, up to 30 s).
# With a first argument true, every <details> is opened first. The browser tests build on it.
SETTLE = """
const done = arguments[arguments.length - 1];
if (arguments.length > 1 && arguments[0] === true) document.querySelectorAll('details').forEach(d => { d.open = true; });
const imgs = Array.from(document.images);
const mathjaxReady = () => new Promise(resolve => {
  const t0 = Date.now();
  (function poll() {
    if (!document.querySelector('.math') || (window.MathJax && MathJax.startup && MathJax.startup.promise)
        || Date.now() - t0 > 30000) resolve();
    else setTimeout(poll, 100);
  })();
});
const settled = Promise.all(imgs.map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; })))
  .then(mathjaxReady)
  .then(() => (window.MathJax && MathJax.startup && MathJax.startup.promise) ? MathJax.startup.promise : null);
"""
# its height and the article's rendered text (a closed <details> renders only its summary, so a
# folded table or dropdown adds no words)
MEASURE = (
    SETTLE
    + """
settled.then(() => done({
    height: document.documentElement.scrollHeight,
    text: (document.querySelector('main article') || document.querySelector('main') || document.body).innerText,
  }))
  .catch(e => done({error: String(e)}));
"""
)


def chapter_pages(toc: Path = ROOT / "_toc.yml") -> list[str]:
    """The first page and the pages of the table of contents' "Chapters" part, as paths in the HTML.

    Example:
        >>> chapter_pages()[:3]
        ['book/intro.html', 'notebooks/theorem1.html', 'notebooks/family.html']
    """
    import yaml

    spec = yaml.safe_load(toc.read_text())
    chapters = next(p for p in spec["parts"] if p["caption"] == "Chapters")["chapters"]
    return [f"{spec['root']}.html", *(f"{c['file']}.html" for c in chapters)]


def words(text: str) -> int:
    """The words of a rendered text: white-space tokens with a letter or digit.

    Example:
        >>> words("CD beats the expert by +0.065 ± 0.013 — on 100 people.")
        10
    """
    return sum(1 for t in text.split() if re.search(r"\w", t))


def measure(driver, base_url: str, page: str, open_folds: bool = False) -> dict:
    """One page's height (px) and visible words in ``driver`` (a selenium driver at 1,280 px)."""
    driver.get(f"{base_url}/{page}")
    got = driver.execute_async_script(MEASURE, open_folds)
    if "error" in got:
        raise RuntimeError(f"{page}: the page did not settle ({got['error']})")
    return {"page": page, "px": int(got["height"]), "words": words(got["text"])}


#: Headless Chromium at 1,280 x 900 with no network of its own (the book's tests read pages the same way).
CHROME_FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1280,900",
)  # fmt: skip


def chrome(profile_dir: str):
    """Headless Chromium (:data:`CHROME_FLAGS`) with its profile in ``profile_dir``; raises SystemExit
    naming the packages when chromium or chromedriver is absent."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not (chromium and shutil.which("chromedriver")):
        raise SystemExit(
            "book_length: chromium and chromedriver are needed (apt-get install chromium chromium-driver)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in (*CHROME_FLAGS, f"--user-data-dir={profile_dir}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    driver.set_script_timeout(60)
    return driver


def serve(html: Path) -> str:
    """Serve ``html`` on a local port in a daemon thread; returns its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # no line per request on the terminal
            pass

    handler = functools.partial(Quiet, directory=str(html))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="default", help="the build to read: _build/<profile> (default: default)")
    args = ap.parse_args(argv)
    html = ROOT / "_build" / args.profile / "book" / "_build" / "html"
    if not (html / "index.html").is_file():
        raise SystemExit(
            f"book_length: {html}/index.html is missing; build it first (make book PROFILE={args.profile})"
        )
    with tempfile.TemporaryDirectory(prefix="apd-length-") as profile:
        driver, base = chrome(profile), serve(html)
        try:
            rows = [measure(driver, base, page) for page in chapter_pages()]
        finally:
            driver.quit()
    px, n = sum(r["px"] for r in rows), sum(r["words"] for r in rows)
    print("| page | height (px) | words |\n|---|---|---|")
    for r in rows:
        print(f"| {r['page']} | {r['px']:,} | {r['words']:,} |")
    print(f"| **total** | **{px:,}** ({px / TARGET_PX:.2f} x the {TARGET_PX:,} target) "
          f"| **{n:,}** ({n / TARGET_WORDS:.2f} x the {TARGET_WORDS:,} target) |")  # fmt: skip
    out = ROOT / "results" / "bench" / f"length-{args.profile}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"pages": rows, "px": px, "words": n, "target_px": TARGET_PX,
                               "target_words": TARGET_WORDS}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
