"""``python -m apd``: the ``apd`` command (:mod:`apd.build`)."""

import sys

from apd.build import main

sys.exit(main())
