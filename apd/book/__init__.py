"""The book runner: execute the chapters' notebooks under a profile and render the book.

    python -m apd --profile default          # or python -m apd.book, make book

``runner`` (profiles, preflight, execution with papermill, staged results, rendering), ``schema``
(a profile's shape, types and ranges), ``data_check`` (can the datasets be had), ``pages`` (cells
shown or hidden by the results), ``status`` (the build report page), ``terminal`` (a chapter's line
while it runs). The science stages (``apd.base`` ... ``apd.report``) never import this package.
"""

from apd.base.names import submodules

__getattr__ = submodules(__name__, __path__)
