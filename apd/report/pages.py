"""Old import path of :mod:`apd.book.pages` (the book runner's package), kept for users."""

import sys

from apd.book import pages as _moved

sys.modules[__name__] = _moved
