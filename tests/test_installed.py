"""The package as a user installs it: a wheel in a clean virtual environment, run from any folder.

The wheel is built from this checkout's sources and installed into a new virtual environment that
sees nothing of the test interpreter's packages: CPU torch first (``pip install torch==2.13.0``, as
the README says), then the wheel with the dependencies it declares, from the package index, with
``requirements.lock`` as constraints (``pip install -c requirements.lock apd-*.whl``). From empty
folders it then runs ``apd --help``, ``apd --version`` and ``apd list``, reads the claims table
(package data), runs the README's example, and the tutorial's first cells (the smoke pico family,
its ALM' and a few continuations, through the public API) twice: the first run trains into the per-user cache (``$XDG_CACHE_HOME/apd``), the
second finds it there and trains nothing, and no folder gets a ``cache/`` of its own.

The first run downloads the dependencies (minutes); later runs install from pip's cache. Marked
``installed`` (``make test`` runs it; ``pytest -m "not installed"`` leaves it out).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from apd.base.notebooks import toc_notebooks
from apd.report import claims

pytestmark = pytest.mark.installed

REPO = Path(__file__).resolve().parents[1]
TUTORIAL = REPO / "notebooks" / "tutorial.ipynb"
#: What a wheel is built from (setup.py copies profiles/ into it).
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "_toc.yml")
#: The CPU build of torch the README tells a user without CUDA to install first (the lock's version).
TORCH = "torch==2.13.0"
#: The tutorial's cells run here: its parameters, the family and ALM', the processors, the continuations.
N_CODE_CELLS = 4
OVERRIDES = 'profile = "smoke"\npico_scale = "smoke"\ndevice = "cpu"\nmax_new_tokens = 8\n'
REPORT = """
import json, os, apd
from apd.base import paths
print("APD-REPORT " + json.dumps({"apd_file": apd.__file__, "cache": str(paths.cache_dir()),
      "family_dir": str(built.family_dir), "variant": result.variant, "rows": len(rows)}))
"""
#: Variables the user's shell would not have, or that would point the venv at this checkout.
DROPPED = ("PYTHONPATH", "PYTHONHOME", "APD_CACHE_DIR", "APD_RESULTS_DIR", "APD_DATA_DIR", "VIRTUAL_ENV")


def _tutorial_script() -> str:
    nb = json.loads(TUTORIAL.read_text())
    # the cells a user types: the book's bookkeeping cells (tagged remove-cell) are not for the reader
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "remove-cell" not in c["metadata"].get("tags", [])][
        :N_CODE_CELLS
    ]
    assert "parameters" in code[0]["metadata"].get("tags", []), "the tutorial's first code cell is its parameters"
    sources = ["".join(c["source"]) for c in code]
    return "\n\n".join([sources[0], OVERRIDES, *sources[1:], REPORT])


def readme_example() -> str:
    """The README's example: the python block of its section "Using `apd` in your own notebook"."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Using `apd` in your own notebook", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, f"expected one python block in the README's 'Using apd' section, found {len(blocks)}"
    return blocks[0]


def _files(folder: Path) -> dict[str, float]:
    return {
        p.relative_to(folder).as_posix(): p.stat().st_mtime_ns
        for p in folder.rglob("*")
        if p.is_file() and ".lock" not in p.name
    }


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``(the fresh venv, the environment to run it in, the work root)`` with the wheel installed."""
    tmp = tmp_path_factory.mktemp("installed")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        shutil.copy2(REPO / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "apd", src / "apd", ignore=ignore)
    shutil.copytree(REPO / "profiles", src / "profiles", ignore=ignore)
    pip_env = {k: v for k, v in os.environ.items() if k not in DROPPED}  # pip's own cache stays where it is
    wheel_cmd = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    _run([*wheel_cmd, "-w", str(tmp / "dist"), str(src)], env=pip_env)
    (wheel,) = (tmp / "dist").glob("apd-*.whl")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    _run([*pip, TORCH], env=pip_env, timeout=1200)
    _run([*pip, "-c", str(REPO / "requirements.lock"), str(wheel)], env=pip_env, timeout=1200)
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        XDG_CACHE_HOME=str(tmp / "user-cache"),
        MPLBACKEND="Agg",
        APD_PROGRESS="0",
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
    )
    return venv, env, tmp


def _empty(tmp: Path, name: str) -> Path:
    folder = tmp / name
    folder.mkdir()
    return folder


def test_the_venv_borrows_nothing(installed):
    venv, env, tmp = installed
    here = {p for p in sys.path if "site-packages" in p}
    code = "import sys, apd; print(apd.__file__); print(*sys.path, sep='\\n')"
    out = _run([str(venv / "bin" / "python"), "-c", code], cwd=_empty(tmp, "borrow"), env=env)
    apd_file, *path = out.stdout.splitlines()
    assert Path(apd_file).is_relative_to(venv), apd_file  # the wheel, not the checkout
    assert not here & set(path), sorted(here & set(path))
    pth = [p for p in venv.rglob("*.pth") if any(h in p.read_text() for h in here)]
    assert not pth, f"{pth} add this interpreter's site-packages to the venv"
    frozen = _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "freeze"]).stdout
    assert "transformers==4.53.3" in frozen and re.search(r"^torch==2\.13\.0\+cpu$", frozen, flags=re.M), frozen


def test_the_claims_table_ships_with_the_wheel(installed):
    """The claims table (``apd/report/claims.yml``) is package data: the installed package reads all of it."""
    venv, env, tmp = installed
    code = "from apd.report import claims; print(claims.TABLE); print(len(claims.CHECKS))"
    table, n = _run([str(venv / "bin" / "python"), "-c", code], cwd=_empty(tmp, "claims"), env=env).stdout.split()
    assert Path(table).is_relative_to(venv) and int(n) == len(claims.CHECKS)


def test_apd_command_from_an_empty_folder(installed):
    venv, env, tmp = installed
    folder = _empty(tmp, "command")
    profiles = {
        p.stem: yaml.safe_load(p.read_text())["description"] for p in sorted((REPO / "profiles").glob("*.yml"))
    }
    helped = _run(["apd", "--help"], cwd=folder, env=env).stdout
    assert helped.startswith("usage: apd "), helped[:200]
    for name, description in profiles.items():
        assert f"  {name} " in helped and description in helped, name
    version = re.search(r'^version = "(.*)"$', (REPO / "pyproject.toml").read_text(), flags=re.M).group(1)
    assert _run(["apd", "--version"], cwd=folder, env=env).stdout.strip() == f"apd {version}"
    listed = _run(["apd", "list"], cwd=folder, env=env).stdout
    chapters = re.findall(r"^\s+\d+\. (\w+)$", listed, flags=re.M)
    assert chapters == toc_notebooks(REPO), listed
    for name, description in profiles.items():
        assert re.search(rf"^  {re.escape(name)} +{re.escape(description)}$", listed, flags=re.M), listed
    build = subprocess.run(
        ["apd", "prepare", "--profile", "smoke"], cwd=folder, env=env, capture_output=True, text=True
    )
    assert build.returncode == 1 and "build the book from a checkout" in build.stderr, build.stderr
    assert sorted(p.name for p in folder.iterdir()) == [], "apd wrote into the folder it ran in"


def test_readme_example_runs_from_an_empty_folder(installed):
    """The README's example, as a script with progress shown, on the fresh user cache (it runs
    before the tutorial's cells): it says what it trains and where it caches it, and prints what
    each of its print calls prints."""
    venv, env, tmp = installed
    folder = _empty(tmp, "readme")
    (folder / "example.py").write_text(readme_example())
    shown = {k: v for k, v in env.items() if k != "APD_PROGRESS"}  # as on a user's terminal
    proc = _run([str(venv / "bin" / "python"), "example.py"], cwd=folder, env=shown, timeout=900)
    assert len(proc.stdout.strip().splitlines()) >= readme_example().count("print("), proc.stdout
    said = [line for line in proc.stderr.splitlines() if line.startswith("apd: training")]
    assert said and all(str(tmp / "user-cache" / "apd") in line for line in said), proc.stderr[-3000:]
    assert not (folder / "cache").exists(), "the README's example made a cache/ in its folder"


def _run_tutorial(venv: Path, env: dict, folder: Path) -> dict:
    folder.mkdir()
    (folder / "first_cells.py").write_text(_tutorial_script())
    proc = _run([str(venv / "bin" / "python"), "first_cells.py"], cwd=folder, env=env, timeout=900)
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("APD-REPORT ")]
    return json.loads(line.removeprefix("APD-REPORT "))


def test_installed_wheel_runs_the_tutorial_from_any_folder_and_trains_once(installed):
    venv, env, tmp = installed
    user_cache = tmp / "user-cache" / "apd"
    first = _run_tutorial(venv, env, tmp / "first-folder")
    assert Path(first["apd_file"]).is_relative_to(venv), first["apd_file"]  # the wheel, not the checkout
    assert Path(first["cache"]) == user_cache
    assert Path(first["family_dir"]).is_relative_to(user_cache)
    assert first["rows"] > 0
    trained = _files(user_cache)
    assert any(p.startswith("families/") and p.endswith(".safetensors") for p in trained), sorted(trained)[:20]
    second = _run_tutorial(venv, env, tmp / "second-folder")
    assert second["family_dir"] == first["family_dir"] and second["variant"] == first["variant"]
    again = _files(user_cache)
    assert again == trained, "the second folder re-trained or re-wrote cached artifacts: " + ", ".join(
        sorted(p for p in set(again) | set(trained) if again.get(p) != trained.get(p))[:10]
    )
    for folder in ("first-folder", "second-folder"):
        assert not (tmp / folder / "cache").exists(), f"{folder} got a cache/ of its own"
