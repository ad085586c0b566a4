"""The package's shape: stages in data-flow order, no import cycles, no hidden imports, a lazy front door."""

import ast
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import apd

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "apd"
STAGES = ("base", "core", "world", "family", "amateur", "decoding", "evaluation", "report")
# old import paths kept for users (aliases of the new modules); they sit outside the stages
COMPAT = {
    "apd",
    "apd.__main__",
    "apd.theory",
    "apd.curves",
    "apd.report.book",
    "apd.report.data_check",
    "apd.report.schema",
    "apd.report.terminal",
    "apd.report.status",
    "apd.report.pages",
}
# the book runner: after the stages, and imported by none of them
RUNNER = "apd.book"
# imports inside functions that are deliberate (an optional, heavy builder loaded only when asked for)
DEFERRED = {
    ("apd.family.select", "apd.family.pico"),
    # the runner reads the datasets' specifications only for a chapter that reads datasets
    ("apd.book.data_check", "apd.evaluation.qa_data"),
    ("apd.book.data_check", "apd.evaluation.factuality.sources"),
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
    loose = [m for m in MODULES if m not in COMPAT and stage(m) is None and m.split(".")[:2] != ["apd", "book"]]
    assert not loose, f"modules outside the stages {STAGES}: {loose}"


def test_no_import_runs_from_a_lower_stage_up():
    upward = []
    for name, tree in MODULES.items():
        if name in COMPAT or stage(name) is None:  # the runner may import every stage
            continue
        for _node, target in apd_imports(tree):
            if stage(target) is not None and stage(target) > stage(name):
                upward.append(f"{name} -> {target}")
    assert not upward, upward


def test_no_stage_imports_the_book_runner():
    into_runner = [
        f"{name} -> {target}"
        for name, tree in MODULES.items()
        if stage(name) is not None and name not in COMPAT
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


def test_old_import_paths_keep_working():
    import apd.book.runner
    from apd import curves, theory
    from apd.report import book, data_check, pages

    assert book is apd.book.runner and data_check is apd.book.data_check and pages is apd.book.pages
    assert subprocess.run([sys.executable, "-m", "apd.book", "--help"], capture_output=True, cwd=ROOT).returncode == 0
    from apd.core import curves as core_curves
    from apd.core import theory as core_theory
    from apd.decoding import APDLogitsProcessor, TopP, contrastive_scores, generate  # noqa: F401
    from apd.family import Family, count_nonembedding, load_family  # noqa: F401

    assert theory is core_theory and curves is core_curves
    assert callable(generate)


OLD_NAMES = ROOT / "tests" / "data" / "old_namespace_names.json"  # the names each package listed before


def test_names_users_may_hold_stay_importable():
    import importlib
    import json

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # a renamed name warns (tests/test_renamed_names.py)
        missing = [
            f"{package}.{name}"
            for package, names in json.loads(OLD_NAMES.read_text()).items()
            for name in names
            if not hasattr(importlib.import_module(package), name)
        ]
    assert not missing, missing


def test_a_module_and_a_function_of_the_same_name_are_both_reachable():
    import types

    import apd.amateur

    assert isinstance(apd.amateur.collect, types.ModuleType)
    assert apd.amateur.collect_probabilities is apd.amateur.collect.collect_probabilities


def test_subpackages_import_their_modules_plainly():
    for init in sorted(PKG.rglob("__init__.py")):
        package = ".".join(init.relative_to(ROOT).parent.parts)
        namespace = __import__(package, fromlist=["_"])
        assert sorted(set(namespace.__all__)) == sorted(namespace.__all__), f"{package}: a name listed twice"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # an old name listed beside its new one
            for name in namespace.__all__:
                assert getattr(namespace, name) is not None, f"{package}.{name}"


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
