"""Evaluation: QA and open-ended factuality as in the paper, probability curves, blindness, ablations."""

from apd.base.names import submodules

__getattr__ = submodules(__name__, __path__)
