"""Report: results and run records, tables (``show``, ``compare_word``), the house plot style, the paper's
numbers, claims and verdicts, findings. The build is :mod:`apd.build`, which this stage never imports.
"""

from apd.base.names import submodules

__getattr__ = submodules(__name__, __path__)
