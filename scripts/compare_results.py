"""Compare two results folders value for value: did a change alter any number the book reports?

    python scripts/compare_results.py results-before/smoke results/smoke

Compares every chapter's results JSON (``<stem>.json``) and every table (``tables/*.csv``).
Timings (keys or columns naming seconds, time or wall) and the run records (``runs/``, which hold
timings, versions and paths) are left out. Numbers must be equal up to ``--rtol`` (default 0:
exactly equal). Prints each difference and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import pandas as pd

TIMING = re.compile(r"(second|minute|hour|_s$|_min$|wall|time|elapsed|duration)", re.I)
PATHLIKE = re.compile(r"^(/|[A-Za-z]:\\)")


def same(a, b, rtol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b or (rtol > 0 and math.isclose(a, b, rel_tol=rtol, abs_tol=0.0))
    return a == b


def compare_values(a, b, where: str, rtol: float, out: list) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if TIMING.search(str(k)):
                continue
            if k not in a or k not in b:
                out.append(f"{where}.{k}: only in {'after' if k in b else 'before'}")
                continue
            compare_values(a[k], b[k], f"{where}.{k}", rtol, out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            compare_values(x, y, f"{where}[{i}]", rtol, out)
    elif isinstance(a, str) and isinstance(b, str) and PATHLIKE.match(a) and PATHLIKE.match(b):
        return  # absolute paths of the machine that ran it
    elif not same(a, b, rtol):
        out.append(f"{where}: {a!r} -> {b!r}")


def read_table(path: Path) -> pd.DataFrame:
    """A saved table; an empty file (a table with no rows or columns) reads as an empty frame."""
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def compare_tables(a: Path, b: Path, rtol: float, out: list) -> None:
    x, y = read_table(a), read_table(b)
    keep = [c for c in x.columns if not TIMING.search(str(c))]
    if list(x.columns) != list(y.columns) or x.shape != y.shape:
        out.append(f"{a.name}: shape/columns {x.shape} {list(x.columns)} -> {y.shape} {list(y.columns)}")
        return
    for c in keep:
        for i, (u, v) in enumerate(zip(x[c].tolist(), y[c].tolist())):
            if isinstance(u, str) and isinstance(v, str) and PATHLIKE.match(u) and PATHLIKE.match(v):
                continue
            if not (same(u, v, rtol) or (pd.isna(u) and pd.isna(v))):
                out.append(f"{a.name}[{i}, {c!r}]: {u!r} -> {v!r}")


def compare(before: Path, after: Path, rtol: float = 0.0) -> list[str]:
    out: list[str] = []
    for f in sorted(before.glob("*.json")):
        g = after / f.name
        if not g.is_file():
            out.append(f"{f.name}: missing after")
            continue
        compare_values(json.loads(f.read_text()), json.loads(g.read_text()), f.stem, rtol, out)
    for f in sorted((before / "tables").glob("*.csv")):
        g = after / "tables" / f.name
        if not g.is_file():
            out.append(f"tables/{f.name}: missing after")
            continue
        compare_tables(f, g, rtol, out)
    for g in sorted(after.glob("*.json")) + sorted((after / "tables").glob("*.csv")):
        rel = g.relative_to(after)
        if not (before / rel).is_file():
            out.append(f"{rel}: only after")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--rtol", type=float, default=0.0, help="relative tolerance for numbers (default 0: exact)")
    args = ap.parse_args(argv)
    diffs = compare(args.before, args.after, args.rtol)
    n_json = len(list(args.before.glob("*.json")))
    n_csv = len(list((args.before / "tables").glob("*.csv")))
    for d in diffs:
        print(d)
    print(
        f"{len(diffs)} differences in {n_json} results files and {n_csv} tables "
        f"({'exact' if not args.rtol else f'rtol {args.rtol:g}'}; timings and run records left out)"
    )
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
