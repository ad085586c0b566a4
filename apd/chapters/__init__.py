"""Chapters: the logic each of the book's notebooks calls (table assembly, fallbacks, figures), one module
per notebook, above ``report`` and below the book runner; ``gluing`` holds the glue helpers they share,
``params`` every chapter's parameters (with ``ranges``, their range rules), ``graph`` which chapters
each one reads."""

from apd.base.names import submodules

__getattr__ = submodules(__name__, __path__)
