"""What a chapter's kernel and the build share: the notebooks' parameters cell and the
environment variables the build sets for its kernels.

Standard library only: the build (:mod:`apd.build`) imports it and stays light; the science stages
never import the build.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

#: Environment variables the build sets for its kernels (read by ``apd.report.results.Run``).
RUNNER_ENV = "APD_BOOK_RUNNER"  # "1": this kernel runs under the build
STAGING_ENV = "APD_RESULTS_STAGING"  # the folder the running chapter writes its results into
KEY_ENV = "APD_RUN_CACHE_KEY"  # the cache key of this execution (kept in the run record)


class BookError(RuntimeError):
    """A build step failed; the message names the notebook/cell/file and the fix."""


def notebook_parameters(path: Path) -> dict[str, Any]:
    """Names and default values assigned in the cell tagged ``parameters`` of a notebook."""
    return {name: value for name, (value, _) in parameter_defaults(path).items()}


def parameters_source(path: Path) -> str:
    """The source of a notebook's one cell tagged ``parameters`` (a BookError when there is not one)."""
    nb = json.loads(Path(path).read_text())
    cells = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise BookError(f"{path} must have exactly one cell tagged 'parameters', found {len(cells)}")
    return "".join(cells[0]["source"])


def parameter_defaults(path: Path) -> dict[str, tuple[Any, bool]]:
    """``{name: (default, literal)}`` of a notebook's parameters cell; ``literal`` is False when the
    default is an expression (then ``default`` is its source text and any value is accepted)."""
    source = parameters_source(path)
    out: dict[str, tuple[Any, bool]] = {}
    for node in ast.parse(source).body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else ([node.target] if isinstance(node, ast.AnnAssign) else [])
        )
        for t in targets:
            if isinstance(t, ast.Name):
                try:
                    out[t.id] = (ast.literal_eval(node.value), True)
                except ValueError:
                    out[t.id] = (ast.unparse(node.value), False)
    return out


def toc_notebooks(root: Path) -> list[str]:
    """Stems of the notebooks listed in ``_toc.yml`` (entries ``notebooks/<stem>``), in order."""
    import yaml  # the book environment has it; a kernel that never reads the table of contents does not need it

    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text())
    files: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for key in ("root", "file"):
                if key in node:
                    files.append(str(node[key]))
            for value in node.values():
                if isinstance(value, (list, dict)):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    return [f.split("/", 1)[1].removesuffix(".ipynb") for f in files if f.startswith("notebooks/")]
