"""``python -m apd --profile default``: execute the book's notebooks and render the book (:mod:`apd.book`)."""

import sys

from apd.book.runner import main

sys.exit(main())
