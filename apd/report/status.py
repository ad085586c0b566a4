"""Old import path of :mod:`apd.book.status` (the book runner's package), kept for users."""

import sys

from apd.book import status as _moved

sys.modules[__name__] = _moved
