"""How the last book build used the machine: per chapter and per job, and the ratios.

    .venv/bin/python scripts/build_report.py [--profile default]      # part of `make bench`

Reads ``_build/<profile>/timing.json``, which every build writes (:mod:`apd.book.timing`: the job
log of chapters and pool jobs, each core's busy share and the GPU's utilisation sampled during the
build), and prints, as Markdown:

- the build's wall time, its work (the chapters' time less their waits on their own workers, plus
  every worker's job) and the parallel efficiency, work / (wall x slots);
- each core's busy share, and on a GPU its mean and largest utilisation, its mean while a model
  trained and its largest memory in use;
- each chapter's and each job's seconds;
- the family's pretraining against the machine: each member's tokens per second times about
  6 x its parameters (a forward and backward pass), against a one-thread float32 matmul's rate
  measured here, now (so the same machine, though not the same minute, as the build);
- the machine's parallel capacity: as many one-thread matmuls as the build had slots, run at once,
  their summed rate over one alone (on cores that share execution units or memory bandwidth, less
  than the slot count: no build can run faster side by side than that).

Writes the same as JSON to ``results/bench/build-<profile>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apd.book.timing import matmul_gflops, parallel_capacity  # noqa: E402


def pretraining_rows(results: Path, gflops: float) -> list[dict]:
    """Each member's tokens/s and its rate as a share of ``gflops`` (from its training.json)."""
    import pandas as pd

    table = results / "tables" / "family_members.csv"
    if not table.is_file():
        return []
    rows = []
    for location in pd.read_csv(table)["location"]:
        record = Path(str(location)) / "training.json"
        if not record.is_file():
            continue
        r = json.loads(record.read_text())
        rate = 6 * r["n_parameters"] * r["tokens_per_second"] / 1e9
        rows.append(
            {
                "member": r["name"],
                "parameters": r["n_parameters"],
                "tokens_per_s": r["tokens_per_second"],
                "train_s": r["wall_seconds"],
                "gflops": round(rate, 2),
                "share_of_matmul": round(rate / gflops, 3),
            }
        )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="default")
    ap.add_argument("--out", default=None, help="JSON file (default results/bench/build-<profile>.json)")
    args = ap.parse_args(argv)
    path = ROOT / "_build" / args.profile / "timing.json"
    if not path.is_file():
        print(f"no build to report: {path} is missing; build the book first (make book PROFILE={args.profile})")
        return 1
    timing = json.loads(path.read_text())
    gflops = matmul_gflops()
    capacity = parallel_capacity(timing["slots"]) if timing["slots"] > 1 else 1.0
    results = ROOT / "results" / args.profile
    train = pretraining_rows(results, gflops)
    print(f"## The `{args.profile}` build\n")
    print("| measure | value |\n|---|---|")
    ended = "" if timing.get("finished", True) else " (stopped before the end: interrupted or failed)"
    print(f"| wall time | {timing['wall_s']:.1f} s{ended} |")
    print(f"| work (chapters and jobs, less waiting) | {timing['work_s']:.1f} s |")
    print(f"| slots (jobs at once) | {timing['slots']} |")
    print(f"| parallel efficiency, work / (wall x slots) | {timing['parallel_efficiency']:.2f} |")
    if timing.get("core_busy"):
        print(f"| busy share of each core | {', '.join(f'{b:.0%}' for b in timing['core_busy'])} |")
    if timing.get("gpu_util_mean") is not None:
        print(f"| GPU utilisation, mean / max | {timing['gpu_util_mean']:.0f}% / {timing['gpu_util_max']:.0f}% |")
        if timing.get("gpu_util_training_mean") is not None:
            print(f"| GPU utilisation while a model trained, mean | {timing['gpu_util_training_mean']:.0f}% |")
        if timing.get("gpu_mem_max_mib") is not None:
            print(f"| GPU memory in use, at most | {timing['gpu_mem_max_mib']:,.0f} MiB |")
    print(f"| one-thread float32 matmul here | {gflops:.1f} GFLOP/s |")
    print(
        f"| {timing['slots']} matmuls at once, their summed rate over one alone (the speed-up's ceiling) | {capacity:.2f} |"
    )
    print("\n| job | seconds |\n|---|---|")
    for job in sorted(timing["jobs"], key=lambda j: -j["seconds"]):
        print(f"| {job['name']} | {job['seconds']:.1f} |")
    if train:
        print("\n| member | parameters | tokens/s | train s | GFLOP/s (6 N tokens/s) | share of the matmul rate |")
        print("|---|---|---|---|---|---|")
        for r in train:
            print(
                f"| {r['member']} | {r['parameters']:,} | {r['tokens_per_s']:,.0f} | {r['train_s']:.1f} | "
                f"{r['gflops']:.2f} | {r['share_of_matmul']:.2f} |"
            )
    out = Path(args.out) if args.out else ROOT / "results" / "bench" / f"build-{args.profile}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    timing.pop("gpu_samples", None)  # kept in timing.json
    report = {**timing, "matmul_gflops_one_thread": gflops, "parallel_capacity": capacity, "pretraining": train}
    out.write_text(json.dumps(report, indent=1))
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
