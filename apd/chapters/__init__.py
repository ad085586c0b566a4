"""Chapters: the logic each of the book's notebooks calls (table assembly, fallbacks, figures), one module
per notebook, above ``report`` and below the build (:mod:`apd.build`); ``gluing`` holds the glue helpers
they share."""

from apd.base.names import submodules

__getattr__ = submodules(__name__, __path__)
