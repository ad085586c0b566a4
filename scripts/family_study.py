"""Which family lets extrapolation beat the expert? Train one world + family per design and training
seed, record the testbed controls (dev people only) in ``docs/testbed/family_study.csv`` and read
the rule written before the first row (``docs/design-notes.md``, "A family whose curves carry
something to extrapolate").

    APD_CACHE_DIR=... python scripts/family_study.py            # every point not yet in the table
    python scripts/family_study.py --only "longer training"     # one design's points
    python scripts/family_study.py --rule                       # the rule's reading of the table

Each point is one ``scripts/testbed_study.py`` run (the cached family path: resumable, progress
shown); a point already in the table is skipped, so an interrupted study resumes where it stopped.
The default family's two points are the dose-response study's "exact truth" rows.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

#: the default family's six shapes (n_layer, d_model, n_head), 13k to 1.8M
SIX = "1,32,2;1,48,2;2,64,4;3,96,4;4,128,4;4,192,4"
#: the same span with three members interleaved in the widest gaps of log size (55k, 230k, 600k)
NINE = "1,32,2;1,48,2;2,48,4;2,64,4;3,80,4;3,96,4;4,112,4;4,128,4;4,192,4"

#: (name, --world fields, --pico fields, changes the world): the rule's order of preference
DESIGNS = (
    ("longer training", {}, {"members": SIX, "max_tokens": 1_750_000, "epochs": 5.6}, False),
    ("denser sizes", {}, {"members": NINE}, False),
    ("more exposures per head fact", {"zipf_exponent": 1.25}, {"members": SIX}, True),
)
SEEDS = (0, 1)
TABLE = ROOT / "docs" / "testbed" / "family_study.csv"
DEFAULT_TABLE, DEFAULT_DESIGN = ROOT / "docs" / "testbed" / "dose_response.csv", "exact truth"

#: the rule's numbers: the standard error of a difference of two-seed means (a family design keeps
#: the dev people; a world design changes them), the z it needs, and the budget in member seconds
SE_FAMILY, SE_WORLD, Z, BUDGET_S = 0.018, 0.027, 1.96, 1440.0


def point_name(design: str, seed: int) -> str:
    """The table's configuration name of one point.

    Example:
        >>> point_name("denser sizes", 1)
        'denser sizes, training seed 1'
    """
    return f"{design}, training seed {seed}"


def argv_of(design: str, world: dict, pico: dict, seed: int, table: Path) -> list[str]:
    """``scripts/testbed_study.py``'s arguments for one point.

    Example:
        >>> argv_of("x", {"zipf_exponent": 1.25}, {"members": SIX}, 1, Path("t.csv"))[:6]
        ['--name', 'x, training seed 1', '--scale', 'default', '--world', 'zipf_exponent=1.25']
    """
    pairs = lambda d: [f"{k}={v}" for k, v in d.items()]  # noqa: E731
    world_args = ["--world", *pairs(world)] if world else []
    return [
        "--name", point_name(design, seed), "--scale", "default", *world_args,
        "--pico", *pairs(pico), f"seed={seed}", "--no-ne-er", "--table", str(table),
    ]  # fmt: skip


def reading(table: Path = TABLE, default_table: Path = DEFAULT_TABLE):
    """The rule's reading: one row per design measured (the default first) with its two-seed mean head
    ratio, the drop from the default's, the threshold, the most member seconds, and the verdict."""
    import pandas as pd

    rows = []
    base = pd.read_csv(default_table)
    base = base[base["configuration"].str.startswith(f"{DEFAULT_DESIGN}, training seed")]
    base_mean = float(base["fit_ratio_head"].mean())
    rows.append({"design": "today's family", "seeds": len(base), "head ratio": base_mean, "drop": 0.0})
    got = pd.read_csv(table) if table.is_file() else pd.DataFrame(columns=["configuration"])
    for name, _, _, world in DESIGNS:
        sub = got[got["configuration"].astype(str).str.startswith(f"{name}, training seed")]
        if not len(sub):
            continue
        mean, need = float(sub["fit_ratio_head"].mean()), Z * (SE_WORLD if world else SE_FAMILY)
        slowest = float(sub["train_seconds"].max())
        if len(sub) < len(SEEDS):
            verdict = "waits for its second seed"
        elif base_mean - mean <= need:
            verdict = "does not pass"
        else:
            verdict = "passes" if slowest <= BUDGET_S else "passes, over budget"
        rows.append(
            {"design": name, "seeds": len(sub), "head ratio": mean, "drop": base_mean - mean,
             "needs": need, "member s": slowest, "verdict": verdict}
        )  # fmt: skip
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", default=None, help="run only this design (repeatable)")
    ap.add_argument("--seeds", default="0,1", help="training seeds, comma-separated")
    ap.add_argument("--rule", action="store_true", help="print the rule's reading of the table and exit")
    args = ap.parse_args(argv)
    known = {d[0] for d in DESIGNS}
    if set(args.only or ()) - known:
        raise SystemExit(f"--only: unknown design(s) {sorted(set(args.only) - known)}; use one of {sorted(known)}")
    if args.rule:
        print(reading().to_string(index=False))
        return 0
    import pandas as pd
    import testbed_study

    for name, world, pico, _ in DESIGNS:
        if args.only and name not in args.only:
            continue
        for seed in (int(s) for s in args.seeds.split(",") if s.strip()):
            done = set(pd.read_csv(TABLE)["configuration"].astype(str)) if TABLE.is_file() else set()
            if point_name(name, seed) in done:
                print(f"[family] {point_name(name, seed)}: in the table, skipped", flush=True)
                continue
            print(f"[family] {point_name(name, seed)}", flush=True)
            testbed_study.main(argv_of(name, world, pico, seed, TABLE))
    print(reading().to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
