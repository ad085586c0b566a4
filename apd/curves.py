"""Old import path of :mod:`apd.core.curves` (kept so that ``from apd import curves`` keeps working)."""

import sys

from apd.core import curves as _curves

sys.modules[__name__] = _curves
