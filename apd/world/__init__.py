"""World: the synthetic knowledge world whose truth is known exactly, and the pico corpus.

``world`` (people, facts, documents, QA items, claim checker), ``corpus`` (Wikipedia leads + world,
splits, tokenizer), ``truth`` (true answer distributions, dev/test people, closeness to the truth).
"""

from apd.base.names import submodules

__getattr__ = submodules(__name__, __path__)
