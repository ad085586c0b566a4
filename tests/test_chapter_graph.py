"""The chapters' dependency graph (apd.chapters.graph): it covers the book, is acyclic, and names
every chapter whose artifacts or results a chapter's module or notebook reads."""

import doctest
import json
import re
from pathlib import Path

import pytest

from apd.chapters import graph
from apd.chapters.graph import NEEDS, needs, upstream
from apd.chapters.params import CHAPTERS

ROOT = Path(__file__).resolve().parent.parent
#: modules of apd.chapters that are no chapter: shared helpers and declarations
NOT_CHAPTERS = {"gluing", "params", "ranges", "graph"}
REFERENCE = re.compile(
    r"from apd\.chapters\.(\w+) import|(?<![\w.])apd\.chapters\.(\w+)\.|from apd\.chapters import (\w+)"
    r"|import apd\.chapters\.(\w+)"
)


def sources(stem: str) -> str:
    """The chapter's module (the tutorial has none) and the code cells of its notebook."""
    module = ROOT / "apd" / "chapters" / f"{stem}.py"
    text = module.read_text() if module.is_file() else ""
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    return text + "\n" + "\n".join(cells)


def test_the_graph_covers_the_chapters_in_book_order():
    assert list(NEEDS) == list(CHAPTERS)
    graph.check()
    for stem, direct in NEEDS.items():
        assert len(set(direct)) == len(direct), stem
        assert stem not in upstream(stem), stem


def test_the_check_refuses_cycles_unknown_chapters_and_another_order():
    with pytest.raises(ValueError, match="comes after it"):
        graph.check({"a": ("b",), "b": ("a",)}, ["a", "b"])
    with pytest.raises(ValueError, match="not a chapter"):
        graph.check({"a": ("zz",)}, ["a"])
    with pytest.raises(ValueError, match="not the book's"):
        graph.check({"b": (), "a": ()}, ["a", "b"])
    with pytest.raises(KeyError, match="not a chapter"):
        needs("nope")


def test_upstream_is_transitive_and_in_book_order():
    assert upstream("theorem1") == ()
    assert upstream("known_answer") == ("family", "apd")
    assert upstream("factuality") == ("family", "apd", "real")
    assert set(upstream("paper_vs_book")) == set(CHAPTERS) - {"paper_vs_book", "tutorial"}
    order = list(CHAPTERS)
    for stem in CHAPTERS:
        up = upstream(stem)
        assert list(up) == sorted(up, key=order.index)
    assert graph.downstream("family") == tuple(s for s in CHAPTERS if s not in ("theorem1", "family"))


@pytest.mark.parametrize("stem", list(CHAPTERS))
def test_every_chapter_a_chapter_reads_is_upstream(stem):
    text = sources(stem)
    named = {next(g for g in m.groups() if g) for m in REFERENCE.finditer(text)}
    others = {x for x in named if x in CHAPTERS and x != stem and x not in NOT_CHAPTERS}
    assert others <= set(upstream(stem)), f"{stem} reads {sorted(others - set(upstream(stem)))}"


@pytest.mark.parametrize("stem", list(CHAPTERS))
def test_a_chapter_that_loads_an_artifact_needs_the_chapter_that_builds_it(stem):
    text = sources(stem)
    if stem != "apd" and re.search(r"\b(apd_model|load_alm_prime)\(", text):
        assert "apd" in needs(stem), f"{stem} loads ALM' (apd_model) but does not need the apd chapter"
    if stem != "family" and re.search(r"\bget_family\(", text):
        assert "family" in needs(stem), f"{stem} loads the family (get_family) but does not need the family chapter"
    if stem != "real" and re.search(r"\bthf_model\(", text):
        assert "real" in needs(stem), f"{stem} loads REAL's THF model but does not need the real chapter"


def test_paper_vs_book_reads_every_chapter_but_the_tutorial():
    assert set(needs("paper_vs_book")) == set(CHAPTERS) - {"paper_vs_book", "tutorial"}


def test_the_module_examples_hold():
    assert doctest.testmod(graph).failed == 0
