"""Core: Theorem 1, the one contrastive score, thresholds on the expert, and probability-vs-size curves.

``theory`` (CD as extrapolation to a hypothetical LM), ``contrastive`` (the CD/APD score),
``filters`` (top-p, top-k, alpha and REAL on the ELM), ``curves`` (decay functions, flip, the on-the-fly
fitter), ``entropy`` (REAL's entropy curves and loss), ``stats`` (standard errors, paired differences, power).
"""

from apd.base.names import submodules

__getattr__ = submodules(__name__, __path__)
