"""The book build's exact pins: requirements.lock, environment.yml and requirements.in agree."""

import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent


def lock_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_environment_yml_has_the_same_pins_as_the_lock():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "python=3.11" in deps
    pip_section = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    env_pins = {}
    for line in pip_section:
        name, version = line.split("==")
        env_pins[name.lower().replace("_", "-")] = version
    assert env_pins == lock_pins()


def test_lock_satisfies_requirements_in():
    pins = lock_pins()
    for line in (ROOT / "requirements.in").read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        req = Requirement(line)
        name = req.name.lower().replace("_", "-")
        assert name in pins, f"{name} from requirements.in is not pinned in requirements.lock"
        assert req.specifier.contains(pins[name], prereleases=True), (name, req.specifier, pins[name])


def test_key_pins():
    pins = lock_pins()
    assert pins["torch"] == "2.13.0"  # the CPU wheel on local disk here
    assert pins["jupyter-book"].startswith("1.")  # 2.x ignores _config.yml
    assert pins["transformers"].startswith("4.")  # DoLa is built in before 4.56


@pytest.mark.skipif(
    Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
    reason="only meaningful inside the project's .venv (make env)",
)
def test_project_venv_matches_the_lock():
    pins = lock_pins()
    for name in ("torch", "transformers", "jupyter-book", "myst-nb", "papermill", "numpy"):
        assert metadata.version(name).split("+")[0] == pins[name], name
