"""Chapter logic the book's notebooks call: table assembly, fallbacks and figures, one module per chapter
(``gluing``: the glue helpers they share)."""

from apd.report.chapters import (
    ablations,
    apd,
    curves,
    factuality,
    family,
    gluing,
    known_answer,
    paper_vs_book,
    qa,
    real,
    testbed,
    theorem1,
)

__all__ = [
    "ablations",
    "apd",
    "curves",
    "factuality",
    "family",
    "gluing",
    "known_answer",
    "paper_vs_book",
    "qa",
    "real",
    "testbed",
    "theorem1",
]
