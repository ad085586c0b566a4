"""The chapters' dependency graph (book.mk, which make runs): it covers the book, names only earlier
chapters, and names every chapter whose artifacts or results a chapter's module or notebook reads."""

import json
import re
from pathlib import Path

import pytest

from apd.build import chapters

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = chapters(ROOT)
#: modules of apd.chapters that are no chapter: shared helpers
NOT_CHAPTERS = {"gluing"}
REFERENCE = re.compile(
    r"from apd\.chapters\.(\w+) import|(?<![\w.])apd\.chapters\.(\w+)\.|from apd\.chapters import (\w+)"
    r"|import apd\.chapters\.(\w+)"
)


def needs() -> dict[str, set[str]]:
    """``{chapter: the chapters it reads}`` from book.mk's rules ``$(OUT)/a.ipynb: $(OUT)/b.ipynb ...``."""
    text = (ROOT / "book.mk").read_text().replace("\\\n", " ")
    out = {stem: set() for stem in CHAPTERS}
    for target, prerequisites in re.findall(r"^\$\(OUT\)/(\w+)\.ipynb:(.*)$", text, flags=re.M):
        out[target] |= set(re.findall(r"\$\(OUT\)/(\w+)\.ipynb", prerequisites))
    return out


NEEDS = needs()


def upstream(stem: str) -> set[str]:
    found = set(NEEDS[stem])
    for need in NEEDS[stem]:
        found |= upstream(need)
    return found


def sources(stem: str) -> str:
    """The chapter's module (the tutorial has none) and the code cells of its notebook."""
    module = ROOT / "apd" / "chapters" / f"{stem}.py"
    text = module.read_text() if module.is_file() else ""
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
    return text + "\n" + "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def test_a_chapter_needs_only_chapters_before_it():
    for stem, direct in NEEDS.items():
        assert all(CHAPTERS.index(n) < CHAPTERS.index(stem) for n in direct), (stem, direct)
    assert upstream("known_answer") == {"family", "apd"}
    assert upstream("factuality") == {"family", "apd", "real"}


@pytest.mark.parametrize("stem", CHAPTERS)
def test_every_chapter_a_chapter_reads_is_upstream(stem):
    named = {next(g for g in m.groups() if g) for m in REFERENCE.finditer(sources(stem))}
    others = {x for x in named if x in CHAPTERS and x != stem and x not in NOT_CHAPTERS}
    assert others <= upstream(stem), f"{stem} reads {sorted(others - upstream(stem))}"


@pytest.mark.parametrize("stem", CHAPTERS)
def test_a_chapter_that_loads_an_artifact_needs_the_chapter_that_builds_it(stem):
    text = sources(stem)
    for builder, call in (
        ("apd", r"\b(apd_model|load_alm_prime)\("),
        ("family", r"\bget_family\("),
        ("real", r"\bthf_model\("),
    ):
        if stem != builder and re.search(call, text):
            assert builder in NEEDS[stem], f"{stem} loads what the {builder} chapter builds; book.mk must say so"


def test_paper_vs_book_reads_every_chapter_but_the_tutorial():
    assert NEEDS["paper_vs_book"] == set(CHAPTERS) - {"paper_vs_book", "tutorial"}
