"""Old path of the book runner: ``python -m apd.book`` still works; prefer ``python -m apd`` (:mod:`apd.report.book`)."""
import sys

from apd.report import book as _book

if __name__ == "__main__":
    sys.exit(_book.main())
sys.modules[__name__] = _book
