"""Which author-written paragraphs a chapter's page shows, chosen from its results.

A measure that does not exist under a profile (the synthetic world under a Hub family, a dataset
where no item qualified) must not turn a paragraph into a string of "n/a". The author writes the
paragraph that reads the measure and, where it can be missing, one sentence saying why it is
missing, each in its own markdown cell, and tags them:

- ``needs:<key>``: shown only when the chapter's result ``<key>`` is present (:func:`present`);
- ``unless:<key>``: shown only when it is not.

After a chapter has run, the build (:func:`apd.build.run`) reads its
``results/<profile>/<stem>.json`` and hides, with ``remove-cell``, every cell whose condition
fails (:func:`select_cells`); the downloadable notebook keeps them all. Glue still pastes values
only. :func:`render_markdown` fills a cell's glue references from a results dict, as the page
shows them, so that tests can read a chapter's text under a profile without running it.

A hand-written page (the book's summary, ``book/intro.md``) marks its conditional sentences as
blocks, ``<!-- needs:<key> -->`` ... ``<!-- end -->`` (or ``unless:``), and the build fills it
from one chapter's results with :func:`fill_page`.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

from apd.report.numbers import format_number
from apd.report.results import GLUE_FORMATS, format_value

#: A MyST glue reference: {glue:text}`key`, {glue:text}`key:.3f`, {glue}`key`, {glue:md}`key`.
GLUE_ROLE = re.compile(r"\{glue(?::(?:text|md|any))?\}`([^`:]+)(?::([^`]*))?`")

#: What a missing value reads as on a page (``Run.glue_text``'s default and its variants).
MISSING_TEXT = re.compile(r"^\s*(?:n/a\b|none found\b|none\s*$|-$|\u2014$)", re.IGNORECASE)


def present(value: Any) -> bool:
    """Whether a glued result exists: not None, NaN, False, an empty string, or a missing text
    ("n/a ...", "none found", "none", a dash).

    Example:
        >>> [present(v) for v in (0.2, 0, True, "head", None, float("nan"), False, "", "n/a (pico only)")]
        [True, True, True, True, False, False, False, False, False]
    """
    if value is None or value is False:
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if isinstance(value, str):
        return bool(value.strip()) and not MISSING_TEXT.match(value)
    return True


def conditions(tags: Iterable[str]) -> list[tuple[str, str]]:
    """The ``(needs|unless, key)`` conditions among a cell's tags."""
    out = []
    for tag in tags:
        kind, _, key = str(tag).partition(":")
        if kind in ("needs", "unless") and key:
            out.append((kind, key))
    return out


def cell_shown(tags: Iterable[str], values: dict[str, Any]) -> bool:
    """Whether a cell with ``tags`` is shown for a chapter with result ``values`` (every condition must hold).

    Example:
        >>> cell_shown(["needs:world_n_test"], {"world_n_test": 306}), cell_shown(["unless:world_n_test"], {"world_n_test": "n/a"})
        (True, True)
        >>> cell_shown(["needs:world_n_test"], {}), cell_shown(["hide-input"], {})
        (False, True)
    """
    for kind, key in conditions(tags):
        if present(values.get(key)) != (kind == "needs"):
            return False
    return True


def select_cells(nb: dict, values: dict[str, Any]) -> list[int]:
    """Tag ``remove-cell`` on every cell of the notebook dict ``nb`` whose ``needs:``/``unless:``
    conditions fail for ``values``; return their indices. Cells already removed stay removed."""
    hidden = []
    for i, cell in enumerate(nb.get("cells", [])):
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if conditions(tags) and not cell_shown(tags, values):
            if "remove-cell" not in tags:
                tags.append("remove-cell")
            hidden.append(i)
    return hidden


def _format(value: Any, spec: str | None) -> str:
    """``value`` as a glue role shows it: with the role's ``spec``, else a float as the book prints
    a number glued without a format (:func:`apd.report.numbers.format_number`)."""
    if spec and not isinstance(value, str):
        try:
            return format(value, spec)
        except (TypeError, ValueError):
            pass
    if isinstance(value, float) and math.isfinite(value):
        return format_number(value)
    return str(value)


def render_markdown(source: str, values: dict[str, Any], unknown: str = "<<{key} not glued>>") -> str:
    """``source`` with every glue reference replaced by its value from ``values`` (formatted with
    the reference's format spec, else with the format the chapter glued it with, recorded under
    :data:`apd.report.results.GLUE_FORMATS`), as the page shows it; a key the chapter never glued
    reads ``unknown``.

    Example:
        >>> render_markdown("KL is {glue:text}`kl:.2f` on {glue:text}`n` items", {"kl": 0.1234, "n": 5})
        'KL is 0.12 on 5 items'
        >>> render_markdown("{glue:text}`share` of tokens", {"share": 0.812, "glue_formats": {"share": "{:.0%}"}})
        '81% of tokens'
    """

    formats = values.get(GLUE_FORMATS) or {}

    def one(m: re.Match) -> str:
        key, spec = m.group(1), m.group(2)
        if key not in values:
            return unknown.format(key=key)
        if not spec and key in formats and not isinstance(values[key], str):  # as the chapter glued it
            return format_value(formats[key], values[key])
        return _format(values[key], spec)

    return GLUE_ROLE.sub(one, source)


def page_markdown(nb: dict, values: dict[str, Any]) -> list[str]:
    """The markdown cells of notebook dict ``nb`` that a page shows for ``values``, glue filled in."""
    out = []
    for cell in nb.get("cells", []):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.get("cell_type") != "markdown" or "remove-cell" in tags or not cell_shown(tags, values):
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        out.append(render_markdown(source, values))
    return out


#: A value a reader cannot use: "n/a" (with or without a reason) or a lone dash.
MISSING_WORD = re.compile(r"(?<![\w/])n/a(?![\w/])|(?<![\w\-])[\u2014](?![\w\-])")


def missing_walls(paragraphs: Iterable[str], at_most: int = 1) -> list[str]:
    """The paragraphs that show more than ``at_most`` missing values ("n/a", a lone em dash):
    where a measure does not exist, a chapter says so once, with the reason, not value by value.

    Example:
        >>> missing_walls(["APD n/a, CD n/a.", "Under pythia there is no world (n/a).", "KL 0.2"])
        ['APD n/a, CD n/a.']
    """
    return [p for p in paragraphs if len(MISSING_WORD.findall(p)) > at_most]


def paragraphs(markdown: str) -> list[str]:
    """``markdown`` split into paragraphs and list items (blank lines and ``- `` items)."""
    out = []
    for block in re.split(r"\n\s*\n", markdown):
        items = re.split(r"\n(?=\s*(?:[-*]|\d+\.)\s)", block)
        out += [" ".join(i.split()) for i in items if i.strip()]
    return out


#: A conditional block of a hand-written page: ``<!-- needs:key unless:other -->`` ... ``<!-- end -->``.
BLOCK = re.compile(r"<!--\s*((?:(?:needs|unless):[\w.\-]+\s*)+)-->[ \t]*\n?(.*?)<!--\s*end\s*-->[ \t]*\n?", re.S)


def fill_page(markdown: str, values: dict[str, Any]) -> str:
    r"""A hand-written page as its readers see it: each conditional block kept or dropped by its
    ``needs:``/``unless:`` conditions (:func:`cell_shown`), markers removed, then every glue
    reference filled from ``values`` (:func:`render_markdown`). A glue reference to a value that is
    missing raises ValueError naming it: put such a sentence in a ``needs:`` block.

    Example:
        >>> page = "A.\n<!-- needs:gain -->\nGain {glue:text}`gain:+.2f`.\n<!-- end -->\n<!-- unless:gain -->\nNo gain.\n<!-- end -->\n"
        >>> fill_page(page, {"gain": 0.123}), fill_page(page, {})
        ('A.\nGain +0.12.\n', 'A.\nNo gain.\n')
    """
    kept = BLOCK.sub(lambda m: m.group(2) if cell_shown(m.group(1).split(), values) else "", markdown)
    missing = sorted({m.group(1) for m in GLUE_ROLE.finditer(kept) if not present(values.get(m.group(1)))})
    if missing:
        raise ValueError(
            f"the page quotes {', '.join(missing)}, which the results do not have; "
            "put those sentences in a <!-- needs:KEY --> ... <!-- end --> block"
        )
    return render_markdown(kept, values)
