"""Old import path of :mod:`apd.book.data_check` (the book runner's package), kept for users."""

import sys

from apd.book import data_check as _moved

sys.modules[__name__] = _moved
