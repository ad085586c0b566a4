"""The package's shape: stages in data-flow order, no import cycles, no hidden imports, a lazy front door."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import apd

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "apd"
STAGES = ("base", "core", "world", "family", "amateur", "decoding", "evaluation", "report", "chapters")
# the front door and ``python -m apd``: above every stage
TOP = {"apd", "apd.__main__", "apd.build"}
# the build: after the stages, and imported by none of them
RUNNER = "apd.build"
# imports inside functions that are deliberate (an optional, heavy builder loaded only when asked for)
DEFERRED = {
    ("apd.family.select", "apd.family.pico"),
    # `apd data check` validates each file with its loader's check, read only when a file is checked
    ("apd.evaluation.datafiles", "apd.evaluation.qa_data"),
    ("apd.evaluation.datafiles", "apd.evaluation.factuality.sources"),
}


def modules():
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = ast.parse(path.read_text())
    return out


def apd_imports(tree, top_level_only=False):
    nodes = tree.body if top_level_only else ast.walk(tree)
    found = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "apd":
            for alias in node.names:
                found.append(
                    (
                        node,
                        f"{node.module}.{alias.name}"
                        if (PKG.parent / (node.module + "." + alias.name).replace(".", "/"))
                        .with_suffix(".py")
                        .exists()
                        or (PKG.parent / (node.module + "." + alias.name).replace(".", "/")).is_dir()
                        else node.module,
                    )
                )
        elif isinstance(node, ast.Import):
            found += [(node, a.name) for a in node.names if a.name.split(".")[0] == "apd"]
    return found


def stage(module: str):
    parts = module.split(".")
    return STAGES.index(parts[1]) if len(parts) > 1 and parts[1] in STAGES else None


MODULES = modules()


def test_every_module_is_in_a_stage():
    loose = [m for m in MODULES if m not in TOP and stage(m) is None]
    assert not loose, f"modules outside the stages {STAGES}: {loose}"


def test_no_import_runs_from_a_lower_stage_up():
    upward = []
    for name, tree in MODULES.items():
        if name in TOP or stage(name) is None:  # the runner may import every stage
            continue
        for _node, target in apd_imports(tree):
            if stage(target) is not None and stage(target) > stage(name):
                upward.append(f"{name} -> {target}")
    assert not upward, upward


def test_no_stage_imports_the_build():
    into_runner = [
        f"{name} -> {target}"
        for name, tree in MODULES.items()
        if stage(name) is not None and name not in TOP
        for _, target in apd_imports(tree)
        if target == RUNNER or target.startswith(RUNNER + ".")
    ]
    assert not into_runner, into_runner
    loaded = _modules_after("import apd.report, apd.evaluation, apd.amateur, apd.report.results")
    assert not {m for m in loaded if m == RUNNER or m.startswith(RUNNER + ".")}, loaded


def test_no_imports_hidden_inside_functions():
    hidden = []
    for name, tree in MODULES.items():
        top = {id(n) for n, _ in apd_imports(tree, top_level_only=True)}
        for node, target in apd_imports(tree):
            if id(node) not in top and (name, target) not in DEFERRED:
                hidden.append(f"{name}:{node.lineno} -> {target}")
    assert not hidden, hidden


def test_no_import_cycles():
    graph = {name: set() for name in MODULES}
    for name, tree in MODULES.items():
        for _, target in apd_imports(tree, top_level_only=True):
            while target not in graph and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in graph and target != name and target != "apd":
                graph[name].add(target)
    state, stack = {}, []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in graph[n]:
            if state.get(m) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(m) :] + [m]))
            if m not in state:
                visit(m)
        stack.pop()
        state[n] = "done"

    for n in graph:
        if n not in state:
            visit(n)


def test_front_door_lists_what_a_notebook_needs():
    for name in (
        "get_family",
        "load_family",
        "apd_model",
        "load_alm_prime",
        "ContrastiveLogitsProcessor",
        "APDLogitsProcessor",
        "OnTheFlyLogitsProcessor",
        "TopP",
        "TopK",
        "AlphaMask",
        "make_filters",
        "generate",
        "fit_curves",
        "contrastive_scores",
        "cd_logits",
        "hlm_log_size",
        "Run",
    ):
        assert name in apd.__all__
        assert getattr(apd, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        _ = apd.nosuch


def _modules_after(code: str) -> set:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return set(out.stdout.split())


def test_import_apd_is_lazy_and_the_hub_path_never_loads_the_pico_builder():
    assert not {m for m in _modules_after("import apd") if m.startswith("apd.") and not m.startswith("apd.base")}
    hub = _modules_after("import apd; apd.load_family; apd.get_family")
    assert not hub & {"apd.family.pico", "apd.family.pretrain", "apd.world.corpus", "apd.world.world"}, hub


def test_no_module_stands_in_for_another():
    aliases = [
        name
        for name, tree in MODULES.items()
        if any(
            isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "modules"
            for node in ast.walk(tree)
        )
    ]
    assert not aliases, f"modules that replace themselves in sys.modules: {aliases}"
    assert subprocess.run([sys.executable, "-m", "apd", "--help"], capture_output=True, cwd=ROOT).returncode == 0


def test_subpackage_inits_list_no_names():
    """A subpackage's ``__init__`` is a docstring and the module-path getter; names live in their modules."""
    inits = sorted(p for p in PKG.rglob("__init__.py") if p.parent != PKG)
    lines = sum(len(p.read_text().splitlines()) for p in inits)
    assert lines <= 300, f"the subpackage __init__ files hold {lines} lines"
    for init in inits:
        tree = ast.parse(init.read_text())
        assert ast.get_docstring(tree), f"{init} has no docstring"
        imported = [a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names]
        assert imported in ([], ["submodules"]), f"{init} imports {imported}"


def test_every_module_path_is_an_attribute_path():
    import importlib
    import types

    for init in sorted(PKG.rglob("__init__.py")):
        package = ".".join(init.relative_to(ROOT).parent.parts)
        namespace = importlib.import_module(package)
        for child in sorted(init.parent.iterdir()):
            if child.suffix == ".py" and child.stem not in ("__init__", "__main__"):
                assert isinstance(getattr(namespace, child.stem), types.ModuleType), f"{package}.{child.stem}"
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        _ = apd.evaluation.nosuch


def _used_paths():
    """Every ``apd.a.b...`` path and ``from apd.a import b`` name in the notebooks, the README and the book."""
    import json
    import re

    texts = [(p.name, p.read_text()) for p in [ROOT / "README.md", *sorted((ROOT / "book").glob("*.md"))]]
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            texts.append((nb.name, "".join(cell["source"])))
    found = set()
    for where, text in texts:
        for m in re.finditer(r"(?<![\w.])apd(?:\.[A-Za-z_]\w*)+", text):
            found.add((where, m.group(0)))
        for m in re.finditer(r"from (apd(?:\.\w+)*) import ([\w, ]+)", text):
            for name in m.group(2).split(","):
                if name.strip():
                    found.add((where, f"{m.group(1)}.{name.strip().split(' as ')[0]}"))
    return found


def test_the_names_the_notebooks_readme_and_book_use_exist():
    import importlib
    import json
    import re

    missing = []
    for where, path in sorted(_used_paths()):
        parts = path.split(".")
        if parts[1] not in apd.__all__ and not (PKG / parts[1]).is_dir():
            continue  # not a name of the package: a chapter's file or parameter (apd.json, apd.local_dir)
        obj = importlib.import_module("apd")
        for i, part in enumerate(parts[1:], start=1):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                if i == len(parts) - 1 and not isinstance(obj, type(apd)):
                    break  # an attribute of an object (a method), read at run time
                missing.append(f"{where}: {path}")
                break
            if not isinstance(obj, type(apd)):
                break  # past the module path: the rest are attributes of a class or object
    assert not missing, missing
    calls = set()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] == "code":
                calls |= set(re.findall(r"(?<![\w.])apd\.(\w+)\(", "".join(cell["source"])))
    assert calls <= set(apd.__all__), calls - set(apd.__all__)


def test_no_private_name_crosses_a_module_boundary():
    crossing = []
    for name, tree in MODULES.items():
        modules = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "apd":
                for alias in node.names:
                    if alias.name.startswith("_"):
                        crossing.append(f"{name}:{node.lineno} imports {node.module}.{alias.name}")
                    modules[alias.asname or alias.name] = node.module
            elif isinstance(node, ast.Import):
                modules.update(
                    {(a.asname or a.name).split(".")[0]: a.name for a in node.names if a.name.split(".")[0] == "apd"}
                )
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
            ):
                crossing.append(f"{name}:{node.lineno} reads {node.value.id}.{node.attr}")
    assert not crossing, crossing


def test_no_function_takes_both_T_and_inv_T():
    """One knob, one name: a function takes the temperature ``T`` or its reciprocal ``inv_T``, never both."""
    both = []
    for name, tree in MODULES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = node.args
                params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if p}
                if {"T", "inv_T"} <= params:
                    both.append(f"{name}:{node.lineno} {getattr(node, 'name', 'lambda')}")
    assert not both, both
