"""When does CD help? Train one world + family per error dose and training seed and record the
testbed controls (dev people only) in ``docs/testbed/dose_response.csv``.

    APD_CACHE_DIR=... python scripts/dose_response.py              # every point not yet in the table
    python scripts/dose_response.py --only "misstatements 0.3"     # the points of one design
    python scripts/dose_response.py --list                         # the designs and their overrides
    python scripts/dose_response.py --ne-er                        # add NE_ER to the points measured
    python scripts/dose_response.py --scale gpu --device cuda --seeds 0 --only "exact truth"
                                   # on a GPU: the gpu scale's own family, fits on the device too,
                                   # rows in docs/testbed/dose_response_gpu.csv

``--ne-er`` measures the sampled NE_ER control (CD against the expert on the dev people's biography
prompts) for every point of the table that lacks it, on the point's cached family (it never
trains), and writes it into that point's row, after checking that the controls measured again
equal the row's (the study is deterministic). NE_ER does not enter the adoption rule.

Each point is one ``scripts/testbed_study.py`` run (the cached family path: resumable, progress
shown); a point already in the table is skipped, so an interrupted study resumes where it stopped.
The designs, the family they share and the rule that chooses the default among them are in
``docs/design-notes.md`` ("A world whose text is not the truth"); the rule was committed before the
first point was measured.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from apd.report.dose_response import DESIGNS, DOSE_MEMBERS, DOSE_SEEDS, point_name, table_path  # noqa: E402


def done(table: Path) -> set[str]:
    """The configurations already in the table."""
    from apd.report.dose_response import read_dose_response

    return set(read_dose_response(table)["configuration"].astype(str))


def argv_of(
    overrides: dict, seed: int, table: Path, name: str, ne_er: bool = False, scale: str = "default", device="cpu"
) -> list[str]:
    """``scripts/testbed_study.py``'s arguments for one point: the design's world, the training seed,
    and the study's six members at the default scale (another scale keeps its own members).

    Example:
        >>> argv_of({"misstatement_rate": 0.3}, 1, Path("t.csv"), "x", scale="gpu", device="cuda")[2:9]
        ['--scale', 'gpu', '--device', 'cuda', '--world', 'misstatement_rate=0.3', '--pico']
    """
    world = [f"{k}={v}" for k, v in overrides.items()]
    flags = ["--no-train"] if ne_er else ["--no-ne-er"]
    members = [f"members={DOSE_MEMBERS}"] if scale == "default" else []
    return ["--name", name, "--scale", scale, "--device", str(device), "--world", *world, "--pico", *members] + [
        f"seed={seed}",
        *flags,
        "--table",
        str(table),
    ]


#: The columns ``--ne-er`` checks against the row it fills: the deterministic controls.
CHECKED = ("dev_inv_T", "kl_gain_dev_T", "kl_gain_dev_T_se", "nll_gain_dev_T", "kl_elm")
NE_ER_COLUMNS = ("ne_er_elm", "ne_er_cd", "ne_er_gain", "ne_er_gain_se", "ne_er_people")


def _writer(frame):
    """``atomic_write``'s writer of ``frame`` as CSV."""
    return lambda tmp: frame.to_csv(tmp, index=False)


def add_ne_er(table: Path, only=None, seeds=DOSE_SEEDS, scale: str = "default", device="cpu") -> int:
    """Fill the NE_ER columns of every point in ``table`` that lacks them (see the module docstring).
    Processes given disjoint ``seeds`` can run side by side: each writes its row under a lock."""
    import tempfile

    import numpy as np
    import pandas as pd
    import testbed_study

    from apd.base.io import atomic_write
    from apd.base.lock import file_lock
    from apd.base.paths import cache_dir
    from apd.report.dose_response import read_dose_response

    for d in DESIGNS:
        if only and d.name not in only:
            continue
        for seed in seeds:
            name = point_name(d.name, seed)
            rows = read_dose_response(table)
            row = rows[rows["configuration"].astype(str) == name]
            if row.empty or row["ne_er_gain"].notna().all():
                continue
            print(f"[dose] NE_ER for {name}", flush=True)
            with tempfile.TemporaryDirectory() as tmp:
                side = Path(tmp) / "point.csv"
                testbed_study.main(argv_of(dict(d.world), seed, side, name, True, scale, device))
                new = pd.read_csv(side).iloc[0]
            old = row.iloc[0]
            for col in CHECKED:
                if not np.isclose(float(old[col]), float(new[col]), rtol=0, atol=1e-12):
                    raise SystemExit(
                        f"{name}: {col} measured again is {new[col]!r}, the table has {old[col]!r}; the "
                        "cached family is not the one the table measured. Rerun the point from scratch."
                    )
            with file_lock(cache_dir() / "dose-response.lock"):  # read again: another process may have written
                rows = read_dose_response(table)
                at = rows.index[rows["configuration"].astype(str) == name]
                for col in NE_ER_COLUMNS:
                    rows.loc[at, col] = new[col]
                atomic_write(table, _writer(rows))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", default=None, help="run only this design (repeatable)")
    ap.add_argument("--seeds", default=",".join(map(str, DOSE_SEEDS)), help="training seeds, comma-separated")
    ap.add_argument("--table", default=None, help="default: docs/testbed/dose_response.csv")
    ap.add_argument("--list", action="store_true", help="print the designs and exit")
    ap.add_argument("--all-seeds", action="store_true", help="measure every point, also after the rule has decided")
    ap.add_argument("--ne-er", action="store_true", help="add the NE_ER control to the points already measured")
    ap.add_argument("--scale", default="default", help="the pico scale (gpu: its own members, on --device cuda)")
    ap.add_argument("--device", default="cpu", help="cpu (the book's reference) or cuda (fits there too)")
    args = ap.parse_args(argv)
    if args.list:
        for d in DESIGNS:
            print(f"{d.name}: {d.process}, dose {d.dose}, world {dict(d.world) or '(none)'}")
        return 0
    known = {d.name for d in DESIGNS}
    unknown = sorted(set(args.only or ()) - known)
    if unknown:
        raise SystemExit(f"--only: unknown design(s) {unknown}; use one of {sorted(known)}")
    import testbed_study

    table = table_path(args.table)
    if args.scale != "default" and not args.table:  # another scale's points: a table of their own
        table = table.with_name(f"dose_response_{args.scale}.csv")
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    if args.ne_er:
        return add_ne_er(table, args.only, seeds, args.scale, args.device)
    # In the rule's order, a design's seeds before the next design. Until the rule has chosen, a
    # design that failed on one seed is decided and its other seeds wait, and the study stops at
    # the first design that passes on every seed; --all-seeds measures every point (the figure).
    from apd.report import dose_response as dr

    def verdict(name):
        summary = dr.designs(dr.points(dr.read_dose_response(table)), seeds)
        return summary["passes"].get(name) if len(summary) and name in summary.index else None

    for d in DESIGNS:
        if args.only and d.name not in args.only:
            continue
        for seed in seeds:
            name = point_name(d.name, seed)
            if name in done(table):
                print(f"[dose] {name}: in the table, skipped", flush=True)
                continue
            if verdict(d.name) is False and not args.all_seeds:
                print(f"[dose] {name}: the design failed on another seed, skipped (--all-seeds runs it)", flush=True)
                continue
            print(f"[dose] {name}", flush=True)
            testbed_study.main(argv_of(dict(d.world), seed, table, name, scale=args.scale, device=args.device))
        if verdict(d.name) is True and not args.all_seeds:
            print(
                f"[dose] the rule's choice: {d.name} (passes on every seed); --all-seeds measures the rest", flush=True
            )
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
