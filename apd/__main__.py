"""``python -m apd --profile default``: execute the book's notebooks and render the book (:mod:`apd.report.book`)."""
import sys

from apd.report.book import main

sys.exit(main())
