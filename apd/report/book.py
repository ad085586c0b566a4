"""Old import path of the book runner, :mod:`apd.book.runner` (``python -m apd``), kept for users."""

import sys

from apd.book import runner as _moved

sys.modules[__name__] = _moved
