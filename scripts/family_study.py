"""Which family lets extrapolation beat the expert? Train one world + family per design of
``apd.report.family_study.DESIGNS`` and training seed, record the testbed controls (dev people only)
in ``docs/testbed/family_study.csv`` and read the rule written before the first row
(``docs/design-notes.md``, "A family whose curves carry something to extrapolate").

    APD_CACHE_DIR=... python scripts/family_study.py            # every point not yet in the table
    python scripts/family_study.py --only "longer training"     # one design's points
    python scripts/family_study.py --rule                       # the rule's reading of the table

Each point is one ``scripts/testbed_study.py`` run (the cached family path: resumable, progress
shown); a point already in the table is skipped, so an interrupted study resumes where it stopped.
Today's family is the dose-response study's "exact truth" rows.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from apd.report import family_study as fs  # noqa: E402


def argv_of(design: str, world: dict, pico: dict, seed: int, table: Path) -> list[str]:
    """``scripts/testbed_study.py``'s arguments for one point.

    Example:
        >>> argv_of("x", {"zipf_exponent": 1.25}, {"members": fs.SIX}, 1, Path("t.csv"))[:6]
        ['--name', 'x, training seed 1', '--scale', 'default', '--world', 'zipf_exponent=1.25']
    """
    pairs = lambda d: [f"{k}={v}" for k, v in d.items()]  # noqa: E731
    world_args = ["--world", *pairs(world)] if world else []
    return [
        "--name", fs.point_name(design, seed), "--scale", "default", *world_args,
        "--pico", *pairs(pico), f"seed={seed}", "--no-ne-er", "--table", str(table),
    ]  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", default=None, help="run only this design (repeatable)")
    ap.add_argument("--seeds", default=",".join(map(str, fs.SEEDS)), help="training seeds, comma-separated")
    ap.add_argument("--rule", action="store_true", help="print the rule's reading of the table and exit")
    args = ap.parse_args(argv)
    known = {d[0] for d in fs.DESIGNS}
    if set(args.only or ()) - known:
        raise SystemExit(f"--only: unknown design(s) {sorted(set(args.only) - known)}; use one of {sorted(known)}")
    table = ROOT / fs.TABLE
    if not args.rule:
        import testbed_study

        for name, world, pico, _ in fs.DESIGNS:
            if args.only and name not in args.only:
                continue
            for seed in (int(s) for s in args.seeds.split(",") if s.strip()):
                if fs.point_name(name, seed) in {fs.point_name(r.design, r.seed) for r in fs.read().itertuples()}:
                    print(f"[family] {fs.point_name(name, seed)}: in the table, skipped", flush=True)
                    continue
                print(f"[family] {fs.point_name(name, seed)}", flush=True)
                testbed_study.main(argv_of(name, world, pico, seed, table))
    print(fs.reading(fs.read()).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
