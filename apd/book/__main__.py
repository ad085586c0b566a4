"""``python -m apd.book --profile default``: the same as ``python -m apd`` (:mod:`apd.book.runner`)."""

import sys

from apd.book.runner import main

sys.exit(main())
