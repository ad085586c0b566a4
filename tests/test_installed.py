"""The package as a user installs it: a wheel in a fresh virtual environment, run from any folder.

The wheel is built from this checkout and installed (``pip install --no-deps``) into a new virtual
environment that borrows the test interpreter's site-packages for the dependencies (torch and
friends) through a ``.pth`` file, so nothing is downloaded. The tutorial's first cells (the smoke
pico family, its ALM' and a few continuations, through the public API) then run from an empty
temporary folder and from a second one: the first trains the family into the per-user cache
(``$XDG_CACHE_HOME/apd``), the second finds it there and trains nothing, and neither folder gets
a ``cache/`` of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TUTORIAL = REPO / "notebooks" / "tutorial.ipynb"
#: The tutorial's cells run here: its parameters, the family and ALM', the processors, the continuations.
N_CODE_CELLS = 4
OVERRIDES = 'profile = "smoke"\npico_scale = "smoke"\ndevice = "cpu"\nmax_new_tokens = 8\n'
REPORT = """
import json, os, apd
from apd.base import paths
print("APD-REPORT " + json.dumps({"apd_file": apd.__file__, "cache": str(paths.cache_dir()),
      "family_dir": str(built.family_dir), "variant": result.variant, "rows": len(rows)}))
"""


def _tutorial_script() -> str:
    nb = json.loads(TUTORIAL.read_text())
    # the cells a user types: the book's bookkeeping cells (tagged remove-cell) are not for the reader
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "remove-cell" not in c["metadata"].get("tags", [])][
        :N_CODE_CELLS
    ]
    assert "parameters" in code[0]["metadata"].get("tags", []), "the tutorial's first code cell is its parameters"
    sources = ["".join(c["source"]) for c in code]
    return "\n\n".join([sources[0], OVERRIDES, *sources[1:], REPORT])


def _files(folder: Path) -> dict[str, float]:
    return {
        p.relative_to(folder).as_posix(): p.stat().st_mtime_ns
        for p in folder.rglob("*")
        if p.is_file() and ".lock" not in p.name
    }


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``(python of the fresh venv, its environment, the work root)`` with the wheel installed."""
    tmp = tmp_path_factory.mktemp("installed")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "apd", src / "apd", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    quiet = {"check": True, "capture_output": True, "text": True}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp / "dist"),
            str(src),
        ],
        **quiet,
    )
    (wheel,) = (tmp / "dist").glob("apd-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], **quiet)
    python = venv / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        **quiet,
    )
    # the dependencies come from this interpreter's site-packages, added after the venv's own (so the
    # wheel's apd wins, and the checkout's editable install, which needs its own .pth, is not seen)
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], **quiet
        ).stdout.strip()
    )
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "zz_borrowed_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "APD_CACHE_DIR", "APD_RESULTS_DIR", "APD_DATA_DIR", "VIRTUAL_ENV")
    }
    env.update(
        XDG_CACHE_HOME=str(tmp / "user-cache"),
        MPLBACKEND="Agg",
        APD_PROGRESS="0",
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
    )
    return python, env, tmp


def _run_tutorial(python: Path, env: dict, folder: Path) -> dict:
    folder.mkdir()
    (folder / "first_cells.py").write_text(_tutorial_script())
    proc = subprocess.run(
        [str(python), "first_cells.py"], cwd=folder, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, (
        f"the tutorial's first cells failed in {folder}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("APD-REPORT ")]
    return json.loads(line.removeprefix("APD-REPORT "))


def test_installed_wheel_runs_the_tutorial_from_any_folder_and_trains_once(installed):
    python, env, tmp = installed
    user_cache = tmp / "user-cache" / "apd"
    first = _run_tutorial(python, env, tmp / "first-folder")
    assert Path(first["apd_file"]).is_relative_to(tmp / "venv"), first["apd_file"]  # the wheel, not the checkout
    assert Path(first["cache"]) == user_cache
    assert Path(first["family_dir"]).is_relative_to(user_cache)
    assert first["rows"] > 0
    trained = _files(user_cache)
    assert any(p.startswith("families/") and p.endswith(".safetensors") for p in trained), sorted(trained)[:20]
    second = _run_tutorial(python, env, tmp / "second-folder")
    assert second["family_dir"] == first["family_dir"] and second["variant"] == first["variant"]
    again = _files(user_cache)
    assert again == trained, "the second folder re-trained or re-wrote cached artifacts: " + ", ".join(
        sorted(p for p in set(again) | set(trained) if again.get(p) != trained.get(p))[:10]
    )
    for folder in ("first-folder", "second-folder"):
        assert not (tmp / folder / "cache").exists(), f"{folder} got a cache/ of its own"
