"""Build the Hub-family code path of every chapter offline: profile ``hub-smoke``, the trained smoke
pico members standing in for Pythia members under their registry names
(:func:`apd.family.pico.export_stand_in`), no HTML.

    python scripts/hub_smoke.py          # what make test runs beside the smoke build

The stand-in folder is ``<cache>/stand-in/<smoke family>`` (:func:`apd.base.paths.cache_dir`), one per
trained smoke family, so a second call with nothing changed finds every chapter cached and takes
seconds (``tests/test_hub_smoke.py`` calls it again and reads the results). Exit status: the build's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the chapters with a Hub-family branch, then the chapter that judges the claims from them
HUB_CHAPTERS = ["family", "curves", "apd", "qa", "real", "factuality", "tutorial"]


def stand_in() -> Path:
    """The stand-in members' folder, exported once per trained smoke family."""
    from apd.base.paths import cache_dir
    from apd.family import pico

    built = pico.build("smoke", progress=False)
    return pico.export_stand_in(built, cache_dir() / "stand-in" / built.family_dir.name)


def command(folder: Path) -> list[str]:
    """The ``make book`` call that builds the hub-smoke chapters on the members in ``folder``."""
    only = " ".join(HUB_CHAPTERS + ["paper_vs_book"])
    return [
        "make",
        "--no-print-directory",
        "book",
        "PROFILE=hub-smoke",
        "HTML=0",
        f"ONLY={only}",
        f"LOCAL_DIR={folder}",
    ]


def main() -> int:
    env = dict(os.environ)
    shared = ROOT.parent / "shared" / "data"
    if "APD_DATA_DIR" not in env and shared.is_dir():
        env["APD_DATA_DIR"] = str(shared)  # the offline QA and FactualityPrompts copies
    return subprocess.run(command(stand_in()), cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
