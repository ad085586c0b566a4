"""No number of this build's results is typed into the book's prose: each decimal, percentage and
large integer a chapter's markdown or a hand-written page states must be glued from the chapter's
results ({glue:text}`key`), unless it is a fact quoted from the paper or a fixed constant of the
design, listed in :data:`ALLOWED` with its source. No build is needed: the test reads the markdown
cells of ``notebooks/*.ipynb`` and the pages ``book/*.md`` as committed."""

import json
import re
from pathlib import Path
from typing import NamedTuple

import pytest

from apd.report.pages import GLUE_ROLE

ROOT = Path(__file__).resolve().parents[1]

#: What is not prose, each replaced by a placeholder before numbers are looked for, in this order:
#: fenced code, HTML comments (the intro's needs: markers), glue roles, display and inline math, MyST
#: roles ({ref}, {doc}, {cite}, {numref}, ...), code spans, link targets, bare URLs, references to a
#: numbered figure, table, section, equation, theorem or claim, and a heading's own numbering.
NOT_PROSE = [
    (re.compile(r"^(```+|~~~+).*?^\1", re.S | re.M), " [code] "),
    (re.compile(r"<!--.*?-->", re.S), " "),
    (GLUE_ROLE, "[glued]"),
    (re.compile(r"\$\$.*?\$\$", re.S), "[math]"),
    (re.compile(r"(?<![\\$])\$[^$\n]+?\$"), "[math]"),
    (re.compile(r"\{[\w:\-]+\}`[^`]*`"), "[ref]"),
    (re.compile(r"`[^`\n]*`"), "[code]"),
    (re.compile(r"\]\([^)\s]*\)"), "]"),
    (re.compile(r"<?https?://[^\s>)]+>?"), "[url]"),
    (
        re.compile(
            r"\b(?:Tables?|Figures?|Figs?\.|Sections?|Appendix|Eqs?\.|Equations?|Theorems?|Lemmas?|Claims?)"
            r"\s+[A-Z]?\d+(?:\.\d+)*(?:\s*(?:,|and|to)\s*[A-Z]?\d+(?:\.\d+)*)*",
            re.I,
        ),
        "[ref]",
    ),
    (re.compile(r"^(#+)\s+\d+(?:\.\d+)*\.?", re.M), r"\1"),
]

#: A model of the paper's families named by its size in billions or millions, alone or in a range
#: ("Pythia 70M to 6.9B", "70M-7B", "70M, 1B and 6.9B"): names, not results (no pico member has a
#: billion parameters, so a size in B is always the paper's).
PAPER_MODEL = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?[MB](?:\s*(?:to|-|\u2013|,|,? and)\s*\d+(?:\.\d+)?[MB])*(?![\w.]\w|\w)"
)

#: A typed number: a decimal (0.215, .5, 1.59), a percentage (3.1%, 80%), an integer of three or more
#: digits (400, 1,024, 20,000), or a count with a unit letter (13k, 1.78M, 139x). Digits inside a word
#: or a name (k20, C1b, pico-13k, 1/T) are not numbers of the prose.
NUMBER = re.compile(
    r"(?<![\w.,/^])(?<!\w-)"
    r"(\d+\.\d+%?|\.\d+|\d+%|\d{1,3}(?:,\d{3})+|\d{3,}|\d+(?:\.\d+)?(?:[kKM]|x|\u00d7))"
    r"(?:[kKMx\u00d7])?(?![\w.]\w|\w)"
)


class Typed(NamedTuple):
    """A number typed into prose: the file (relative to the repository), the markdown cell's index
    (None for a page), the number as typed and the sentence around it."""

    file: str
    cell: int | None
    number: str
    sentence: str


def prose(markdown: str) -> str:
    """``markdown`` with everything that is not prose replaced (:data:`NOT_PROSE`)."""
    for pattern, placeholder in NOT_PROSE:
        markdown = pattern.sub(placeholder, markdown)
    return PAPER_MODEL.sub(lambda m: "[model]" if "B" in m.group(0) else m.group(0), markdown)


#: Where a sentence ends: after a full stop (or ; ! ?), at a blank line, before a list item, around a table row.
SENTENCE_END = re.compile(r"(?<=[.;!?])\s+|\n\s*\n|\n(?=\s*(?:[-*] |\d+\. |\|))|(?<=\|)[ \t]*\n")


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` around ``text[start:end]``, on one line."""
    left, right = 0, len(text)
    for m in SENTENCE_END.finditer(text):
        if m.end() <= start:
            left = m.end()
        elif m.start() >= end:
            right = m.start()
            break
    return " ".join(text[left:right].split()).rstrip(".")


def typed_numbers(file: str, markdown: str, cell: int | None = None) -> list[Typed]:
    """Every number typed into the prose of ``markdown`` (:data:`NUMBER`, after :func:`prose`).

    Example:
        >>> [t.number for t in typed_numbers("x.md", "KL {glue:text}`kl:.3f` ($T = 1.5$), gain 0.215 over 1,024 tokens.")]
        ['0.215', '1,024']
    """
    text = prose(markdown)
    return [Typed(file, cell, m.group(0), _sentence(text, m.start(), m.end())) for m in NUMBER.finditer(text)]


def book_prose() -> list[Typed]:
    """The typed numbers of every chapter's markdown cells and every hand-written page."""
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, c in enumerate(json.loads(path.read_text())["cells"]):
            if c["cell_type"] == "markdown":
                source = c["source"] if isinstance(c["source"], str) else "".join(c["source"])
                found += typed_numbers(f"notebooks/{path.name}", source, i)
    for path in sorted((ROOT / "book").glob("*.md")):
        found += typed_numbers(f"book/{path.name}", path.read_text())
    return found


_STATS = "the statistics' convention (apd.core.stats: a two-sided 5% test, 80% power, 95% intervals)"
_NB = "notebooks/"

#: Every number the prose may type, keyed by (file, number as typed), with its source: a fact of the
#: paper (its tables, its settings, its models), a fixed constant of the design (with the code that
#: holds it), or a fact of a dataset or of a recorded study. Nothing measured by a build belongs here.
ALLOWED = {
    # -- the chapters
    (_NB + "ablations.ipynb", "0.5"): "paper Figure 4's name of the half-data ablation, 0.5|D|",
    (_NB + "apd.ipynb", "1.96"): _STATS + ": 1.96 standard errors",
    (_NB + "apd.ipynb", "270"): "the paper's released code (official implementation): about 270M tokens of Wikipedia",
    (
        _NB + "apd.ipynb",
        "100",
    ): "the paper's released code: a token set of the top 20 and random ranks between 20 and 100",
    (_NB + "apd.ipynb", "0.8"): "paper's lambda3 per family: 0.8 Pythia (apd.family.settings.LAMBDA3)",
    (_NB + "apd.ipynb", "0.4"): "paper's lambda3 per family: 0.4 OPT (apd.family.settings.LAMBDA3)",
    (_NB + "apd.ipynb", "1.0"): "paper's lambda3 per family: 1.0 Qwen (apd.family.settings.LAMBDA3)",
    (_NB + "apd.ipynb", "1,024"): "the paper's released code: batches of 64 sequences of 1,024 tokens",
    (_NB + "apd.ipynb", "20,000"): "the paper's released code: about 20,000 steps (5 epochs)",
    (_NB + "apd.ipynb", "0.001"): "design constant: apd.amateur.gates.LOOSE_THRESHOLDS.moved_min",
    (_NB + "apd.ipynb", "400"): "the paper's on-the-fly fit: 400 Adam iterations per curve",
    (_NB + "apd.ipynb", "5%"): _STATS,
    (_NB + "apd.ipynb", "80%"): _STATS,
    (_NB + "known_answer.ipynb", "95%"): _STATS,
    (_NB + "known_answer.ipynb", "0.005"): "design constant: apd.evaluation.known_answer.COLLAPSE_TOL",
    (_NB + "qa.ipynb", "95%"): _STATS,
    (_NB + "qa.ipynb", "80%"): _STATS,
    (_NB + "qa.ipynb", "0.05"): "the paper's significance level: a two-sample t-test at p < 0.05",
    (_NB + "real.ipynb", "16.8"): "Pythia's ln non-embedding sizes, 70M to 12B (apd.core.curves.PYTHIA_LOG_SIZES)",
    (_NB + "real.ipynb", "23.1"): "Pythia's ln non-embedding sizes, 70M to 12B (apd.core.curves.PYTHIA_LOG_SIZES)",
    (_NB + "testbed.ipynb", "13k"): "the recorded dose-response study's family (docs/testbed/dose_response.csv)",
    (_NB + "testbed.ipynb", "1.78M"): "the recorded dose-response study's family (docs/testbed/dose_response.csv)",
    (_NB + "testbed.ipynb", "139x"): "the recorded dose-response study's family (docs/testbed/dose_response.csv)",
    (_NB + "testbed.ipynb", "400"): "the recorded dose-response study's world of 400 people (its `people` column)",
    (
        _NB + "testbed.ipynb",
        "0.05",
    ): "design constant: the controls' 1/T grid (apd.family.settings.CONTROL_INV_T_GRID)",
    (_NB + "testbed.ipynb", "1.96"): _STATS + " (apd.core.stats.Z_TEST)",
    (_NB + "testbed.ipynb", "90%"): "design constant: apd.evaluation.controls.CONTROL_THRESHOLDS head_error_ratio",
    (_NB + "testbed.ipynb", "10%"): "design constant: apd.evaluation.controls.CONTROL_THRESHOLDS head_error_ratio",
    (_NB + "factuality.ipynb", "5%"): _STATS,
    (_NB + "factuality.ipynb", "80%"): _STATS,
    (_NB + "factuality.ipynb", "95%"): _STATS,
    (_NB + "factuality.ipynb", "2.8"): _STATS + ": 1.96 + 0.84 standard errors",
    (_NB + "factuality.ipynb", "0.8"): "the paper's p = 0.8 of top-p k20",
    (_NB + "factuality.ipynb", "6.9"): "the paper's expert, Pythia-6.9B: 6.9 billion parameters",
    (_NB + "factuality.ipynb", "37.5"): "paper Table 6: APD + REAL's NE_ER",
    (_NB + "factuality.ipynb", "39.2"): "paper Table 6: APD + top-p k20's NE_ER",
    (_NB + "factuality.ipynb", "42.0"): "paper Table 6: APD + REAL's Dist-2",
    (_NB + "factuality.ipynb", "47.1"): "paper Table 6: APD + top-p k20's Dist-2",
    (_NB + "paper_vs_book.ipynb", "95%"): _STATS,
    # -- the hand-written pages
    ("book/data.md", "5,153"): "a dataset's split size (its source, listed on the page)",
    ("book/data.md", "9,741"): "a dataset's split size (its source, listed on the page)",
    ("book/data.md", "500"): "a dataset's split size (its source, listed on the page)",
    ("book/data.md", "2,376"): "a dataset's split size (its source, listed on the page)",
    ("book/data.md", "1,954"): "a dataset's split size (its source, listed on the page)",
    ("book/data.md", "10,570"): "a dataset's split size (its source, listed on the page)",
    ("book/data.md", "7,000"): "FactualityPrompts' test prompts, 7,000 per split (its source)",
    ("book/data.md", "953"): "MultiRC dev: 83 passages, 953 questions (its source)",
    ("book/data.md", "7k"): "the paper's FactualityPrompts test split, 7k prompts",
    ("book/glossary.md", "5%"): _STATS,
    ("book/glossary.md", "80%"): _STATS,
    ("book/glossary.md", "95%"): _STATS,
    ("book/intro.md", "95%"): _STATS,
    ("book/about.md", "2026"): "the book's citation year",
    ("book/about.md", "400"): "the default profile's world: 400 people (profiles/default.yml)",
    ("book/about.md", "200"): "the default-200 profile's world: 200 people (profiles/default-200.yml)",
    ("book/about.md", "1,000"): "the gpu profile's world: 1,000 people (profiles/gpu.yml)",
    ("book/about.md", "1.8M"): "the default profile's member shapes (apd.family.registry): 13k to 1.8M parameters",
    ("book/about.md", "13k"): "the default profile's member shapes (apd.family.registry): 13k to 1.8M parameters",
    ("book/about.md", "4.7M"): "the gpu profile's member shapes (apd.family.registry): up to 4.7M parameters",
    ("book/about.md", "3.11"): "the Python version the build needs",
    ("book/parameters.md", "0.05"): "the paper's 1/T sweep reaches 0.05",
    ("book/parameters.md", "400"): "the paper's on-the-fly fit: 400 Adam iterations",
    ("book/parameters.md", "4.0"): "the paper's decay temperature for the threshold illustration, 4.0",
    ("book/parameters.md", "0.5"): "the paper's best 1/T for Pythia, 0.5",
    ("book/parameters.md", "7k"): "FactualityPrompts' split sizes: test 7k each, validation 1k, all 8k",
    ("book/parameters.md", "1k"): "FactualityPrompts' split sizes: test 7k each, validation 1k, all 8k",
    ("book/parameters.md", "8k"): "FactualityPrompts' split sizes: test 7k each, validation 1k, all 8k",
}


def test_no_result_is_typed_into_the_prose():
    """A number typed into prose that :data:`ALLOWED` does not list fails,
    naming the file, the cell, the sentence and the fix."""
    allowed = set(ALLOWED)
    loose = [t for t in book_prose() if (t.file, t.number) not in allowed]
    assert not loose, "numbers typed into the prose:\n" + "\n".join(
        f"- {t.file}" + (f", markdown cell {t.cell}" if t.cell is not None else "") + f": {t.number!r} in "
        f'"{t.sentence}"' + "\n  fix: glue it from the chapter's results ({glue:text}`key`, the key written by "
        "the chapter's code through run.glue or apd.chapters.gluing), or, if it is a fact of the paper or a "
        "constant of the design, add (file, number) to ALLOWED in tests/test_prose_numbers.py with its source"
        for t in loose
    )


def test_every_allowed_number_is_still_in_its_file():
    """The allowlist stays short: an entry whose number its file no longer types is removed."""
    typed = {(t.file, t.number) for t in book_prose()}
    stale = sorted(key for key in ALLOWED if key not in typed)
    assert not stale, f"remove these entries from ALLOWED, their files no longer type them: {stale}"


@pytest.mark.parametrize(
    "markdown, numbers",
    [
        (
            "The gain is 0.215 nats, 3.1% of the KL, over 1,024 tokens and 400 people.",
            ["0.215", "3.1%", "1,024", "400"],
        ),
        ("A family of 13k to 1.78M parameters (139x).", ["13k", "1.78M", "139x"]),
        ("The gain is -0.215 \u00b1 .019 nats.", ["0.215", ".019"]),
        ("| method | KL |\n|---|---|\n| CD | 0.338 |", ["0.338"]),
        ("### The table\n\nRate 0.80 at the end.", ["0.80"]),
    ],
)
def test_typed_numbers_are_found(markdown, numbers):
    assert [t.number for t in typed_numbers("x.md", markdown)] == numbers


@pytest.mark.parametrize(
    "markdown",
    [
        "KL {glue:text}`kl:.3f` and {glue}`n` and {glue:text}`rate`.",
        "The score $L^{ELM} - 0.5 L^{ALM}$ and $$x = 1.59$$ here.",
        "Call `apd.generate(..., top_p=0.95)` or\n\n```python\nx = 0.215\n```\n",
        "See [the paper](https://aclanthology.org/2024.emnlp-main.484) and <https://arxiv.org/abs/2411.01610>.",
        "As {cite}`chang2024` show in their {numref}`fig-1.2`, and {doc}`notebooks/apd`.",
        "The paper's Table 6 and Figure 4, Section 4.2 and Appendix B.1, Theorem 1 and claim C1b.",
        "## 3.1 Results\n\nNothing typed here.",
        "Pythia 70M to 6.9B, 70M-7B; 70M, 1B and 6.9B; Pythia-12B and k20, pico-13k, 1/T, C8.",
        "Two members and 12 positions; 99 people.",
        "<!-- needs:kl_gain -->\nGain {glue:text}`kl_gain`.\n<!-- end -->",
    ],
)
def test_what_is_not_prose_is_not_a_typed_number(markdown):
    assert typed_numbers("x.md", markdown) == []


def test_the_failure_names_file_sentence_and_fix():
    [t] = typed_numbers("notebooks/x.ipynb", "Intro.\n\nCD's KL is 0.215 nats lower. Next sentence.", cell=3)
    assert (t.file, t.cell, t.number, t.sentence) == ("notebooks/x.ipynb", 3, "0.215", "CD's KL is 0.215 nats lower")
