"""Old import path of :mod:`apd.core.theory` (kept so that ``from apd import theory`` keeps working)."""

import sys

from apd.core import theory as _theory

sys.modules[__name__] = _theory
