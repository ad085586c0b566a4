"""Pretraining on a CPU with one torch thread against two, on a quiet and on a busy machine, and
whether the trained weights depend on the thread count.

    .venv/bin/python scripts/bench_threads.py                  # default-scale member shapes, 12 steps each
    .venv/bin/python scripts/bench_threads.py --steps 6 --busy 1

Trains the default pico family's member shapes (``PicoConfig.default()``, capped at ``--steps``
optimizer steps per member) on the smoke corpus with ``train_family(num_threads=1)`` and
``num_threads=2``, each into a fresh cache folder, first on the machine as it is and then beside
``--busy`` processes that spin one core each. Reports the median wall time per configuration, the
ratio one thread / two threads (below 1: one thread is faster), and whether every member's
``model.safetensors`` is byte-identical across thread counts. Writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def weights_digest(family_dir: Path) -> dict[str, str]:
    return {
        p.parent.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16]
        for p in sorted(family_dir.glob("*/model.safetensors"))
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=12, help="optimizer steps per member")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--busy", type=int, default=1, help="spinning processes in the busy phase")
    ap.add_argument("--out", default="bench_threads.json")
    args = ap.parse_args()

    from apd.family import pretrain
    from apd.world import corpus as corpus_mod

    corp = corpus_mod.build_corpus(corpus_mod.CorpusConfig.smoke())
    work = Path(tempfile.mkdtemp(prefix="apd-bench-threads-"))
    tok = corp.tokenizer(cache_dir=work / "tokenizers")
    base = pretrain.PicoConfig.default()
    cfg = dataclasses.replace(base, max_tokens=args.steps * base.batch_size * base.seq_len)

    def train(threads: int, tag: str) -> tuple[float, dict]:
        cache = work / f"fam-{tag}"
        t0 = time.perf_counter()
        folder = pretrain.train_family(
            cfg, tok, corp.pretrain, cache, device="cpu", progress=False, checkpoint_every=None, num_threads=threads
        )
        return time.perf_counter() - t0, weights_digest(Path(folder))

    results = {"steps_per_member": args.steps, "members": [m.name or str(m) for m in cfg.members], "phases": {}}
    digests: dict[int, list[dict]] = {1: [], 2: []}
    for phase, n_busy in (("quiet", 0), ("busy", args.busy)):
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n_busy)]
        try:
            times: dict[int, list[float]] = {1: [], 2: []}
            for r in range(args.repeats):
                order = (1, 2) if r % 2 == 0 else (2, 1)
                for threads in order:
                    seconds, dig = train(threads, f"{phase}-{r}-{threads}")
                    times[threads].append(seconds)
                    digests[threads].append(dig)
                    print(f"{phase}: {threads} thread(s), repeat {r}: {seconds:.1f} s", flush=True)
        finally:
            for p in spinners:
                p.kill()
                p.wait()
        med = {t: statistics.median(v) for t, v in times.items()}
        results["phases"][phase] = {
            "busy_processes": n_busy,
            "seconds": times,
            "median_s": med,
            "ratio_1_over_2": med[1] / med[2],
        }
        print(
            f"{phase}: median 1 thread {med[1]:.1f} s, 2 threads {med[2]:.1f} s, ratio 1/2 = {med[1] / med[2]:.2f}",
            flush=True,
        )
    same_within = all(d == digests[t][0] for t in (1, 2) for d in digests[t])
    same_across = digests[1][0] == digests[2][0]
    results.update(
        weights_repeatable_per_thread_count=same_within,
        weights_identical_across_thread_counts=same_across,
        digests_1_thread=digests[1][0],
        digests_2_threads=digests[2][0],
    )
    print(
        f"weights repeatable at a fixed thread count: {same_within}; identical across 1 and 2 threads: {same_across}",
        flush=True,
    )
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
