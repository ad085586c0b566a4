"""Foundations every stage uses: atomic files, a file lock, device resolution, project paths,
progress bars.

Nothing here imports another part of ``apd``.
"""

from apd.base.names import submodules

__getattr__ = submodules(__name__, __path__)
