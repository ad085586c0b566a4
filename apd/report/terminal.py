"""Old import path of :mod:`apd.book.terminal` (the book runner's package), kept for users."""

import sys

from apd.book import terminal as _moved

sys.modules[__name__] = _moved
