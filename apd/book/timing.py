"""How well a build used the machine: each core's busy share, the GPU's utilisation, and the
parallel efficiency of its jobs.

While a build runs, :class:`MachineSampler` reads ``/proc/stat`` (each core's busy and idle
ticks) and, where ``nvidia-smi`` exists, the GPU's utilisation, once a second. At the end the
runner writes :func:`build_timing` to ``_build/<profile>/timing.json``: the wall time, the jobs of
``_build/<profile>/jobs.jsonl`` (chapters, and the pool jobs inside them, :mod:`apd.base.jobs`), the
work they did (a chapter's time less the time it waited on its own workers, plus each worker's
job), and the ratios ``make bench`` reports (``scripts/benchmarks.py --build``).

    >>> jobs = [{"name": "chapter a", "start": 0, "end": 10}, {"name": "chapter b", "start": 0, "end": 6},
    ...         {"name": "waiting: chapter a", "start": 2, "end": 6}, {"name": "pretrain x", "start": 2, "end": 6}]
    >>> t = build_timing(jobs, wall=10.0, slots=2)
    >>> t["work_s"], t["parallel_efficiency"]
    (16.0, 0.8)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from pathlib import Path

from apd.base.jobs import INSIDE, WAITING, run_jobs


def read_jobs(path: Path) -> list[dict]:
    """The job log's entries (``name``, ``start``, ``end``, ``pid``); [] when there is none."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line cut by a killed build
    return out


def _cpu_ticks() -> list[tuple[int, int]] | None:
    """(busy, total) ticks of each core from ``/proc/stat``; None where there is none."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    out = []
    for line in lines:
        if line.startswith("cpu") and line[3:4].isdigit():
            v = [int(x) for x in line.split()[1:]]
            idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
            out.append((sum(v) - idle, sum(v)))
    return out or None


class MachineSampler:
    """Context manager: samples each core's busy share (``/proc/stat``) and, with ``nvidia-smi``, the
    GPU's utilisation in percent and its memory in use (MiB), every ``interval`` seconds while the
    block runs. ``result()``: ``{"core_busy": [share per core], "gpu_util_mean": %, "gpu_util_max": %,
    "gpu_mem_max_mib": MiB, "gpu_samples": [[unix time s, %, MiB], ...]}`` (None or [] where not measured).
    """

    QUERY = ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits"]

    def __init__(self, interval: float = 1.0):
        self.interval = interval
        self.gpu: list[list[float]] = []  # [time, utilisation %, memory MiB], summed over the GPUs' memory
        self._stop = threading.Event()
        self._first = self._last = None

    def _gpu_sample(self) -> None:
        if not shutil.which("nvidia-smi"):
            return
        try:
            out = subprocess.run(self.QUERY, capture_output=True, text=True, timeout=5).stdout
            rows = [[float(x) for x in line.split(",")] for line in out.splitlines() if line.strip()]
        except (OSError, subprocess.SubprocessError, ValueError):
            return
        if rows:  # one row per GPU: the mean utilisation, the summed memory
            self.gpu.append(
                [round(time.time(), 2), sum(r[0] for r in rows) / len(rows), sum(r[1] for r in rows if len(r) > 1)]
            )

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._gpu_sample()

    def __enter__(self) -> "MachineSampler":
        self._first = _cpu_ticks()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._last = _cpu_ticks()

    def result(self) -> dict:
        busy = None
        if self._first and self._last and len(self._first) == len(self._last):
            busy = [round((b1 - b0) / max(t1 - t0, 1), 3) for (b0, t0), (b1, t1) in zip(self._first, self._last)]
        util = [u for _, u, _ in self.gpu]
        return {
            "core_busy": busy,
            "gpu_util_mean": round(sum(util) / len(util), 1) if util else None,
            "gpu_util_max": max(util) if util else None,
            "gpu_mem_max_mib": max(m for _, _, m in self.gpu) if self.gpu else None,
            "gpu_samples": self.gpu,
        }


#: the job-log names of the jobs that train a model (the GPU's utilisation "while training")
TRAINING = ("pretrain ", "ALM' ", "ablation ")


def utilisation_while(samples: list, jobs: list[dict], prefixes: tuple[str, ...] = TRAINING) -> float | None:
    """The mean GPU utilisation (%) over the ``samples`` (``[time, %, ...]``) taken while at least one
    job whose name starts with one of ``prefixes`` ran (``jobs``: the job log's ``name``, ``start``,
    ``end``; a job run in its caller's process counts too); None when no sample fell in one.

    Example:
        >>> jobs = [{"name": "pretrain a", "start": 0, "end": 2}, {"name": "chapter qa", "start": 2, "end": 4}]
        >>> utilisation_while([[0.5, 80, 0], [1.5, 60, 0], [3.0, 5, 0]], jobs)
        70.0
    """
    spans = [(float(j["start"]), float(j["end"])) for j in jobs if j["name"].removeprefix(INSIDE).startswith(prefixes)]
    inside = [s[1] for s in samples if any(a <= s[0] <= b for a, b in spans)]
    return round(sum(inside) / len(inside), 1) if inside else None


def matmul_gflops(n: int = 384, repeats: int = 20) -> float:
    """One torch thread's float32 matmul rate here, GFLOP/s (median of ``repeats`` n x n products)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = torch.randn(n, n), torch.randn(n, n)
        a @ b
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - t0)
        return 2 * n**3 / sorted(times)[len(times) // 2] / 1e9
    finally:
        torch.set_num_threads(before)


def _matmul_block(args: tuple[float, int, int]) -> tuple[float, float]:
    """``(start_at, n, repeats)``: wait until ``start_at`` (unix s), then ``repeats`` one-thread n x n
    float32 products; their (start, end) times."""
    import torch

    start_at, n, repeats = args
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = torch.randn(n, n), torch.randn(n, n)
        a @ b
        time.sleep(max(0.0, start_at - time.time()))
        t0 = time.time()
        for _ in range(repeats):
            a @ b
        return t0, time.time()
    finally:
        torch.set_num_threads(before)


def parallel_capacity(n: int, repeats: int = 400, size: int = 384) -> float:
    """How many one-thread matmuls' worth of work ``n`` of them at once get done here: the products
    ``n`` workers finish together, started at the same moment, over the time they take, against one
    worker alone (``n`` on ``n`` idle cores: close to ``n``; more workers than cores, cores that share
    execution units or memory bandwidth, or other load: less). The ceiling of a build's speed-up from
    running jobs side by side (:func:`apd.base.jobs.run_jobs`)."""

    def rate(k: int) -> float:
        spans = run_jobs(_matmul_block, [(time.time() + 5.0, size, repeats)] * k, jobs=k)
        return k * repeats / (max(e for _, e in spans) - min(s for s, _ in spans))

    return rate(n) / rate(1)


def build_timing(jobs: list[dict], wall: float, slots: int, machine: dict | None = None) -> dict:
    """The build's ratios from its job log: ``work_s`` (chapters' time less their waiting on their own
    workers, plus every worker's job; a job run inside its caller's process is part of the caller's
    time), ``parallel_efficiency`` = work / (wall x slots), and per job its seconds; ``machine``
    (:meth:`MachineSampler.result`) is added as it is, with the GPU's mean utilisation while a model
    trained (:func:`utilisation_while`) where it was sampled."""
    rows = [{"name": j["name"], "seconds": round(float(j["end"]) - float(j["start"]), 2)} for j in jobs]
    waiting = sum(r["seconds"] for r in rows if r["name"].startswith(WAITING))
    work = sum(r["seconds"] for r in rows if not r["name"].startswith((WAITING, INSIDE))) - waiting
    machine = dict(machine or {})
    if machine.get("gpu_samples"):
        machine["gpu_util_training_mean"] = utilisation_while(machine["gpu_samples"], jobs)
    return {
        "wall_s": round(wall, 2),
        "slots": int(slots),
        "work_s": round(work, 2),
        "parallel_efficiency": round(work / max(wall * slots, 1e-9), 3),
        "jobs": [r for r in rows if not r["name"].startswith(WAITING)],
        **machine,
    }


def summary_line(timing: dict) -> str:
    """One line for the terminal: wall time, work, parallel efficiency, the cores' busy shares.

    Example:
        >>> summary_line({"wall_s": 100, "work_s": 180, "slots": 2, "parallel_efficiency": 0.9,
        ...               "core_busy": [0.95, 0.9], "gpu_util_mean": None})
        '[apd] 180 s of work in 100 s on 2 slots: parallel efficiency 0.90; cores busy 95%, 90%'
    """
    line = (
        f"[apd] {timing['work_s']:.0f} s of work in {timing['wall_s']:.0f} s on {timing['slots']} slots: "
        f"parallel efficiency {timing['parallel_efficiency']:.2f}"
    )
    if timing.get("core_busy"):
        line += "; cores busy " + ", ".join(f"{b:.0%}" for b in timing["core_busy"])
    if timing.get("gpu_util_mean") is not None:
        line += f"; GPU {timing['gpu_util_mean']:.0f}% on average (at most {timing['gpu_util_max']:.0f}%)"
        if timing.get("gpu_util_training_mean") is not None:
            line += f", {timing['gpu_util_training_mean']:.0f}% while training"
    return line


def write_timing(path: Path, timing: dict) -> None:
    """Save ``timing`` as JSON (``_build/<profile>/timing.json``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(timing, indent=1))


__all__ = [
    "read_jobs",
    "MachineSampler",
    "matmul_gflops",
    "parallel_capacity",
    "TRAINING",
    "utilisation_while",
    "build_timing",
    "summary_line",
    "write_timing",
]
