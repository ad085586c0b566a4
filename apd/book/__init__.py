"""The book runner: execute the chapters' notebooks under a profile and render the book.

    python -m apd --profile default          # or python -m apd.book, make book

``runner`` (the command line and the build's order of work), ``profiles`` (a profile read,
validated and merged with ``--set``), ``schema`` (a profile's shape, types and ranges), ``preflight``
(what this machine and the data lack before the first notebook), ``data_check`` (can the datasets be
had), ``project`` (the checkout's table of contents, notebooks and results folder), ``cache`` (a
chapter's cache key, whether it is current), ``staging`` (staged results, their commit, the build
lock), ``execution`` (one chapter with papermill), ``rendering`` (the Jupyter Book HTML), ``pages``
(cells shown or hidden by the results), ``status`` (the build report page), ``terminal`` (a
chapter's line while it runs). The science stages (``apd.base`` ... ``apd.report``) never import
this package.
"""

from apd.base.names import submodules

__getattr__ = submodules(__name__, __path__)
