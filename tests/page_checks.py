"""What a reader should never see on a page of the book, checked on its HTML text (no browser):
progress-bar lines, tracebacks or warnings in outputs, raw Markdown tables, 'nan' or 'n/a n/a',
absolute machine paths, tables whose numbers run into the next cell for lack of padding, stray
outputs (a cell's bare value printed as plain text, e.g. ``'1.7%'`` from a cell ending in a call
that returns a string), raw Markdown left on the page (a table row ``| a | b |`` in a paragraph, as
when a blank line cuts a table; ``$$`` of display math), and paragraphs made of missing values (more than one "n/a" or lone dash: a
chapter says once, with the reason, that a measure does not exist; ``apd.report.pages.missing_walls``),
glue roles left unrendered (``{glue:text}`...```), figures without a numbered caption or with a file
name for alt text, and sentences that contradict their own numbers: two equal numbers compared as
better or worse, a result called significant at p >= 0.05, ``z x name_se = value`` where the value
is the product (it reads as the standard error), and numbers printed against the book's rules
(:mod:`apd.report.numbers`): a run of seven or more zeros after the decimal point, an integer with
decimals (``5000.000``), four or more digits with three or more decimals (``3860.800``), a missing
value printed as ``NaN`` in an output. Code inputs are not checked (``float("nan")`` in code is fine). Used by ``test_browser.py``."""

import re

from apd.report.pages import missing_walls

PROGRESS_LINE = re.compile(r"\d+%\|[^|\n]*\||\d+(?:\.\d+)?\s*(?:it|s|step|batch|shard)/s\]|\d+/\d+ \[\d+:\d\d<")
TRACEBACK_OR_WARNING = re.compile(r"Traceback \(most recent call last\)|\b\w*Warning\b")
RAW_MARKDOWN_TABLE = re.compile(r"\|\s*:?(?:-{3,}|[\u2014\u2013]+)\s*:?\|")
#: A Markdown table row left as text (``| a | b |`` in a paragraph: a table cut by a blank line)
RAW_TABLE_ROW = re.compile(r"^[ \t]*\|(?:[^|\n]*\|){2,}[ \t]*$", re.MULTILINE)
#: Display math left as text (MathJax renders ``$$...$$`` into ``\[...\]``: none stays on a page)
RAW_DOLLAR_MATH = re.compile(r"\$\$")
NAN = re.compile(r"(?<![\w.])nan(?![\w(])|n/a n/a")  # how Python prints a missing number
#: how pandas prints a missing value in an output or a table (prose may name NaN as a word)
NAN_VALUE = re.compile(r"(?<![\w.])(?:NaN|<NA>|NaT)(?![\w(])")
#: a run of 7 or more zeros after the decimal point: "0.00000000", "-0.0000000027", "0.30000000000000004"
#: (apd.report.numbers prints a tiny number in scientific notation and drops round-off tails)
ZERO_RUN = re.compile(r"\d\.\d*?0{7,}")
#: an integer printed as a float, "5000.000", "5,000.000", "10.000" ("0.000" and "1.000" are rates)
WHOLE_AS_FLOAT = re.compile(r"(?<![\d.,])(?:\d{2,}|\d{1,3}(?:,\d{3})+)\.0{3,}(?![\d])")
#: a number of four or more digits with three or more decimals, "3860.800", "19431.941" (not an
#: identifier such as arXiv:2309.14316)
BIG_WITH_DECIMALS = re.compile(r"(?<![\d.,:/])(?:\d{4,}|\d{1,3}(?:,\d{3})+)\.\d{3,}")
MACHINE_PATH = re.compile(r"(?<![\w.:/~\-\\])/(?:[\w.\-]+/)+[\w.\-]+")
DIGIT_END, DIGIT_START = re.compile(r"[\d%]$"), re.compile(r"^[-+\u2212]?\d")
PADDED_CLASSES = {"dataframe", "table", "docutils", "highlighttable"}
GLUE_LEFT = re.compile(r"\{glue(?::\w+)?\}|\{glue:")
NUMBER = r"[-+\u2212]?\d+(?:[.,]\d+)*%?"
#: "APD's ppl is 1.230, worse than CD's 1.230": a comparison of two numbers that print the same
EQUAL_COMPARED = re.compile(
    rf"({NUMBER}),? (?:\w+ )?(?:\((?:better|worse)\) )?(?:better|worse|lower|higher|smaller|larger)"
    rf"(?: \((?:better|worse)\))? than [\w' ]{{0,40}}?({NUMBER})(?!\d|\.\d)"
)
#: "significant (p = 0.1": a result called significant at a p-value of 0.05 or more
SIGNIFICANT_AT = re.compile(r"(?<!not )(?<!no )\bsignificant\b[^.;]{0,80}?\bp\s*[=<]\s*(\d*\.\d+|\d+)")
#: "1.96 x gain_se = 0.0105": the value after '=' is the product, so write the se before it
PRODUCT_AS_SE = re.compile(rf"(?<![\d.])(\d+(?:\.\d+)?) x (\S+?_se\b\S*) = (?!\1 x )({NUMBER})")
HASH_ALT = re.compile(r"^[0-9a-f]{16,}|\.(?:png|jpe?g|svg|pdf)$", re.IGNORECASE)


def _page_parts(html_text):
    """(prose and output text, output text, CSS, soup) of a page; code inputs and scripts removed."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html_text, "html.parser")
    styles = " ".join(s.get_text() for s in soup.find_all("style"))
    main = soup.find("main") or soup
    for tag in main.select("script, style, div.cell_input, nav, .headerlink, .toctree-wrapper"):
        tag.decompose()
    for block in main.select("div.highlight, code"):  # code written in the prose (outputs are checked)
        if not block.decomposed and not block.find_parent("div", class_="cell_output"):
            block.decompose()
    outputs = " \n".join(o.get_text(" ") for o in main.select("div.cell_output"))
    return main.get_text(" "), outputs, styles, soup


def _padded(table, styles: str) -> bool:
    """Whether a table's cells have padding: a themed class, a padding rule on its id, or inline."""
    if PADDED_CLASSES & set(table.get("class") or []):
        return True
    tid = table.get("id")
    if tid and re.search(rf"#{re.escape(tid)}\b[^{{}}]*(?:td|th)[^{{}}]*\{{[^}}]*padding", styles):
        return True
    cells = table.find_all(["td", "th"])
    return bool(cells) and all("padding" in (c.get("style") or "") for c in cells)


def _runs_together(table) -> str | None:
    for row in table.find_all("tr"):
        texts = [c.get_text(" ").strip() for c in row.find_all(["td", "th"], recursive=False)]
        for a, b in zip(texts, texts[1:]):
            if a and b and DIGIT_END.search(a) and DIGIT_START.search(b):
                return f"{a!r} | {b!r}"
    return None


def page_text_problems(rel: str, html_text: str) -> list[str]:
    """What a reader should never see on a page (see the module docstring)."""
    text, outputs, styles, soup = _page_parts(html_text)
    problems = []

    def first(pattern, where):
        m = pattern.search(where)
        return None if m is None else where[max(0, m.start() - 60) : m.end() + 40].replace("\n", " ")

    for what, pattern, where in (
        ("a progress-bar line", PROGRESS_LINE, outputs),
        ("a traceback or warning in an output", TRACEBACK_OR_WARNING, outputs),
        ("a raw Markdown table", RAW_MARKDOWN_TABLE, text),
        ("'nan' or 'n/a n/a'", NAN, text),
        ("a missing value printed as NaN", NAN_VALUE, outputs),
        ("a run of zeros after the decimal point (print it in scientific notation)", ZERO_RUN, text),
        ("an integer printed with decimals", WHOLE_AS_FLOAT, text),
        ("a number of four or more digits printed with three or more decimals", BIG_WITH_DECIMALS, text),
        ("an absolute machine path", MACHINE_PATH, text),
    ):
        hit = first(pattern, where)
        if hit:
            problems.append(f"{rel}: {what}: ...{hit}...")
    hit = first(GLUE_LEFT, text)
    if hit:
        problems.append(f"{rel}: a glue role left unrendered: ...{hit}...")
    hit = first(RAW_DOLLAR_MATH, text)
    if hit:
        problems.append(f"{rel}: display math left unrendered ($$): ...{hit}...")
    main = soup.find("main") or soup
    for par in main.find_all("p"):
        if par.find_parent("div", class_="cell_output") or par.find_parent("table"):
            continue
        m = RAW_TABLE_ROW.search(par.get_text())
        if m:
            problems.append(
                f"{rel}: a raw Markdown table row (pipes in a paragraph; is the table cut by a blank "
                f"line?): {m.group(0).strip()[:100]!r}"
            )
    for m in EQUAL_COMPARED.finditer(text):
        if m.group(1).lstrip("+\u2212-") == m.group(2).lstrip("+\u2212-"):
            problems.append(f"{rel}: two equal numbers compared as different: {m.group(0)!r}")
    for m in SIGNIFICANT_AT.finditer(text):
        if float(m.group(1)) >= 0.05 and "<" not in m.group(0)[-12:]:
            problems.append(f"{rel}: called significant at p = {m.group(1)}: {m.group(0)!r}")
    for m in PRODUCT_AS_SE.finditer(text):
        problems.append(f"{rel}: a product that reads as the standard error: {m.group(0)!r}")
    for img in main.find_all("img"):
        fig = img.find_parent("figure")
        cap = fig.find("figcaption") if fig else None
        where = img.get("src", "")[-40:]
        if cap is None or not cap.get_text(" ").strip():
            problems.append(
                f"{rel}: a figure without a caption ({where}): add mystnb figure metadata "
                "(apd.report.plots.caption_metadata)"
            )
        elif not re.search(r"\b(?:Fig(?:ure)?\.?)\s*\d", cap.get_text(" ")):
            problems.append(f"{rel}: a figure caption without a number ({where})")
        alt = (img.get("alt") or "").strip()
        if not alt or HASH_ALT.search(alt):
            problems.append(f"{rel}: a figure whose alt text is not words ({alt[:40]!r})")
    for out in main.select("div.cell_output div.output.text_plain"):
        problems.append(f"{rel}: a stray output (a cell's bare value): {out.get_text(' ').strip()[:100]!r}")
    prose = [
        " ".join(el.get_text(" ").split())
        for el in main.select("p, li")
        if not el.find_parent("div", class_="cell_output") and not el.find_parent("table") and not el.find(["p", "li"])
    ]
    for wall in missing_walls(prose):
        problems.append(f"{rel}: a paragraph made of missing values: {wall[:160]!r}")
    for table in soup.find_all("table"):
        if not _padded(table, styles):
            pair = _runs_together(table)
            if pair:
                problems.append(f"{rel}: a table without cell padding whose digits run into the next cell: {pair}")
    return problems
