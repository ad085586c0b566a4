"""Family: LM families (Hub or the embedded pico family), loading, and next-token log-probabilities.

``registry`` (members and sizes), ``loading`` (``Family``, ``load_family``), ``select`` (``get_family``
by name), ``text`` / ``logprobs`` / ``heldout`` (tokens and log-probabilities), ``knowledge`` (what
each member knows of the world), ``pretrain`` / ``pico`` (the embedded family, trained here).
"""

from apd.base.names import submodules

__getattr__ = submodules(__name__, __path__)
