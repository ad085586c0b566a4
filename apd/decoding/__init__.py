"""Decoding: Hugging Face logits processors for CD, APD and APD on the fly, and ``generate``.

The filters and the contrastive score live in :mod:`apd.core`; they are re-exported here.
"""

from apd.base.names import submodules

__getattr__ = submodules(__name__, __path__)
