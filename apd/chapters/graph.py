"""Which chapters each chapter needs: the ones whose artifacts (the trained family, ALM', REAL's THF
model, their collections) or results it reads. The book runner schedules the chapters by it (a
chapter starts when those it needs have finished; the others run side by side) and chains each
chapter's cache key to the keys of those it needs (:mod:`apd.book.cache`), so a change to a chapter
re-executes it and what reads it, nothing else.

A chapter that calls :func:`apd.get_family` or :func:`apd.apd_model` itself (cached artifacts it
could also build) needs the chapter that builds them (``family``, ``apd``), so that two chapters
never build the same artifact at once. Every chapter needs only chapters before it in the book.
Standard library only, like :mod:`apd.chapters.params`.

Example:
    >>> needs("curves")
    ('family', 'apd')
    >>> upstream("known_answer")
    ('family', 'apd')
    >>> downstream("real")
    ('factuality', 'paper_vs_book')
"""

from __future__ import annotations

from apd.chapters.params import CHAPTERS

#: ``{chapter: the chapters it reads directly}``, for every chapter of
#: :data:`apd.chapters.params.CHAPTERS`, in its order.
NEEDS: dict[str, tuple[str, ...]] = {
    # random linear families and closed forms: nothing of another chapter
    "theorem1": (),
    # trains (or loads) the family itself (apd.get_family)
    "family": (),
    # the family (get_family) for the controls on this build's family
    "testbed": ("family",),
    # trains every ALM' variant from the family (get_family, apd_model); its regime table reads the
    # family chapter's tables/family_saturation.csv
    "apd": ("family",),
    # the family (get_family: the world's dev questions), the APD chapter's results (fly_w, fly_iterations,
    # n_dev_items; distilled_l1_curve as the noise fallback)
    "known_answer": ("family", "apd"),
    # the family (get_family), the engaged ALM' (apd_model, load_alm_prime), the gate verdict (ApdHeadline)
    "curves": ("family", "apd"),
    # the family, the engaged ALM' (qa.alm_prime_for: apd_model) and the gate verdict (ApdHeadline)
    "qa": ("family", "apd"),
    # the family (get_family); trains REAL's THF model itself (apd.thf_model)
    "real": ("family",),
    # the family, the engaged ALM' (apd_model) and the gate verdict, REAL's THF model (thf_model, the real chapter's)
    "factuality": ("family", "apd", "real"),
    # the family, the release ALM' and its collection (apd_model), the APD chapter's headline (ApdHeadline)
    "ablations": ("family", "apd"),
    # every chapter's results but the tutorial's (paper_vs_book.chapters_read, the claims' evidence,
    # the Theorem 1 and APD headlines, the family's member table)
    "paper_vs_book": (
        "theorem1",
        "family",
        "apd",
        "known_answer",
        "curves",
        "qa",
        "real",
        "factuality",
        "ablations",
        "testbed",
    ),
    # the family (get_family) and the engaged ALM' (apd_model, load_alm_prime)
    "tutorial": ("family", "apd"),
}


def needs(stem: str) -> tuple[str, ...]:
    """The chapters ``stem`` reads directly (:data:`NEEDS`); KeyError naming the known chapters for
    another name."""
    try:
        return NEEDS[stem]
    except KeyError:
        raise KeyError(f"{stem!r} is not a chapter; the chapters are {', '.join(NEEDS)}") from None


def upstream(stem: str) -> tuple[str, ...]:
    """Every chapter ``stem`` reads, directly or through another, in book order."""
    seen: set[str] = set()
    todo = list(needs(stem))
    while todo:
        s = todo.pop()
        if s not in seen:
            seen.add(s)
            todo.extend(needs(s))
    return tuple(s for s in NEEDS if s in seen)


def downstream(stem: str) -> tuple[str, ...]:
    """Every chapter that reads ``stem``, directly or through another, in book order."""
    needs(stem)
    return tuple(s for s in NEEDS if stem in upstream(s))


def check(graph: dict[str, tuple[str, ...]] | None = None, chapters=None) -> None:
    """Raise ValueError unless ``graph`` (default :data:`NEEDS`) has exactly the chapters of
    ``chapters`` (default :data:`apd.chapters.params.CHAPTERS`), in their order, each needing only
    chapters before it (so the graph is acyclic and book order is an order to run them in).

    Example:
        >>> check({"a": (), "b": ("a",)}, ["a", "b"])
        >>> check({"a": ("b",), "b": ()}, ["a", "b"])
        Traceback (most recent call last):
        ...
        ValueError: chapter a needs b, which comes after it in the book (the graph must be acyclic)
    """
    graph = NEEDS if graph is None else graph
    order = list(CHAPTERS if chapters is None else chapters)
    if list(graph) != order:
        raise ValueError(f"the graph's chapters {list(graph)} are not the book's, in order: {order}")
    for i, stem in enumerate(order):
        for need in graph[stem]:
            if need not in graph:
                raise ValueError(f"chapter {stem} needs {need!r}, which is not a chapter")
            if order.index(need) >= i:
                raise ValueError(
                    f"chapter {stem} needs {need}, which comes after it in the book (the graph must be acyclic)"
                )


check()

__all__ = ["NEEDS", "needs", "upstream", "downstream", "check"]
