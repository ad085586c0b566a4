"""Where the tests find the offline copies of the datasets: ``$APD_DATA_DIR``, else ``../shared/data``
beside the checkout; ``DATA`` is None when neither holds ``qa/``."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def find_data_dir() -> Path | None:
    for cand in (os.environ.get("APD_DATA_DIR"), REPO.parent / "shared" / "data"):
        if cand and (Path(cand) / "qa").is_dir():
            return Path(cand)
    return None


DATA = find_data_dir()
