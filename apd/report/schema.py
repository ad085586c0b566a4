"""Old import path of :mod:`apd.book.schema` (the book runner's package), kept for users."""

import sys

from apd.book import schema as _moved

sys.modules[__name__] = _moved
