"""Execute the book's notebooks with papermill under a profile, then render them with Jupyter Book.

    python -m apd --profile default                  # what `make book` runs
    python -m apd --profile smoke --only theorem1     # one chapter
    python -m apd --profile default --set theorem1.n_draws=500 --set theorem1.seed=3

A profile, ``profiles/<name>.yml``, is ``notebooks: {<stem>: {<parameter>: <value>}}`` for every
notebook in ``_toc.yml``; each notebook also receives ``profile=<name>``, and an unknown parameter
fails (:func:`validate_profile`). Executed notebooks go to ``_build/<profile>/book/notebooks/``, the
HTML to ``_build/<profile>/book/_build/html``. A notebook is re-executed only when its source, its
parameters, the ``apd`` sources or the lock file changed (``--force`` re-executes anyway).
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
INJECTED_TAG = "injected-parameters"

#: Environment of the kernels that execute the chapters: no progress bars (apd's own, tqdm's,
#: Hugging Face's) and no library chatter on the pages. A user running apd in a terminal or a
#: notebook of their own keeps them. Warnings raised after ``Run.start`` go to the chapter's run
#: log (``results/<profile>/runs/<stem>.log``) instead of the page (see apd.report.results).
KERNEL_ENV = {
    "APD_PROGRESS": "0",                       # apd.base.progress
    "APD_WARNINGS_TO_LOG": "1",                # apd.report.results.Run.start
    "TQDM_DISABLE": "1",                       # any other tqdm bar (tqdm >= 4.66 reads TQDM_*)
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",       # huggingface_hub and transformers downloads/loading
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    # tqdm.auto warns at import time (transformers imports it) when ipywidgets is missing
    "PYTHONWARNINGS": "ignore:IProgress not found",
}


class BookError(RuntimeError):
    """A build step failed; the message names the notebook/cell/file and the fix."""


# -- table of contents and parameters -----------------------------------------------------------

def toc_notebooks(root: Path = ROOT) -> list[str]:
    """Stems of the notebooks listed in ``_toc.yml`` (entries ``notebooks/<stem>``), in order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
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


def notebook_path(stem: str, root: Path = ROOT) -> Path:
    path = root / "notebooks" / f"{stem}.ipynb"
    if not path.is_file():
        raise BookError(f"notebook {path} does not exist (listed in _toc.yml or a profile?)")
    return path


def notebook_parameters(path: Path) -> dict[str, Any]:
    """Names and default values assigned in the cell tagged ``parameters`` of a notebook."""
    nb = json.loads(Path(path).read_text())
    cells = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise BookError(f"{path} must have exactly one cell tagged 'parameters', found {len(cells)}")
    source = "".join(cells[0]["source"])
    out: dict[str, Any] = {}
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        for t in targets:
            if isinstance(t, ast.Name):
                try:
                    out[t.id] = ast.literal_eval(node.value)
                except ValueError:
                    out[t.id] = ast.unparse(node.value)
    return out


def profile_path(profile: str, root: Path = ROOT) -> Path:
    path = root / "profiles" / f"{profile}.yml"
    if not path.is_file():
        known = sorted(p.stem for p in (root / "profiles").glob("*.yml"))
        raise BookError(f"unknown profile {profile!r}: no {path}; known profiles: {', '.join(known)}")
    return path


def load_profile(profile: str, root: Path = ROOT) -> dict[str, dict[str, Any]]:
    """``{stem: parameters}`` of a profile, validated (see :func:`validate_profile`)."""
    data = yaml.safe_load(profile_path(profile, root).read_text()) or {}
    notebooks = data.get("notebooks") or {}
    validate_profile(profile, notebooks, root)
    return {stem: dict(notebooks.get(stem) or {}) for stem in toc_notebooks(root)}


def validate_profile(profile: str, notebooks: dict, root: Path = ROOT) -> None:
    """Every toc notebook appears in the profile; every profile notebook is in the toc; every
    parameter exists in its notebook's parameters cell. Raises BookError listing every problem."""
    stems = toc_notebooks(root)
    problems = []
    for stem in stems:
        if stem not in notebooks:
            problems.append(f"notebook {stem!r} (in _toc.yml) has no entry; add `{stem}: {{}}`")
    for stem, params in notebooks.items():
        if stem not in stems:
            problems.append(f"notebook {stem!r} is not in _toc.yml (typo?); known: {', '.join(stems)}")
            continue
        declared = notebook_parameters(notebook_path(stem, root))
        if "profile" not in declared:
            problems.append(f"notebooks/{stem}.ipynb has no `profile` parameter")
        for name in (params or {}):
            if name not in declared:
                problems.append(
                    f"{stem}.{name} is not a parameter of notebooks/{stem}.ipynb "
                    f"(its parameters: {', '.join(declared)})")
    if problems:
        raise BookError(f"profile {profile!r} ({profile_path(profile, root)}) is invalid:\n  - "
                        + "\n  - ".join(problems))


def parse_overrides(items: list[str], profile_params: dict[str, dict], root: Path = ROOT) -> dict:
    """``['nb.param=value', ...]`` -> ``{nb: {param: value}}`` (values parsed as YAML)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise BookError(f"--set {item!r}: expected NOTEBOOK.PARAMETER=VALUE, e.g. theorem1.seed=3")
        key, value = item.split("=", 1)
        stem, name = key.split(".", 1)
        if stem not in profile_params:
            raise BookError(f"--set {item!r}: no notebook {stem!r}; known: {', '.join(profile_params)}")
        declared = notebook_parameters(notebook_path(stem, root))
        if name not in declared:
            raise BookError(f"--set {item!r}: {name!r} is not a parameter of {stem} "
                            f"(its parameters: {', '.join(declared)})")
        out.setdefault(stem, {})[name] = yaml.safe_load(value)
    return out


# -- execution ----------------------------------------------------------------------------------

def _source_fingerprint(root: Path) -> str:
    """Hash of every ``apd`` source file (subpackages included, by relative path) and the lock file."""
    h = hashlib.sha256()
    files = sorted((root / "apd").rglob("*.py")) + [root / "requirements.lock"]
    for path in files:
        if path.is_file():
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def cache_key(stem: str, params: dict, root: Path = ROOT, upstream: str = "") -> str:
    """Key of one execution: the notebook, its parameters, the ``apd`` sources and the lock file,
    chained with the key of the chapter before it (``upstream``), since later chapters read the
    artifacts and results of earlier ones."""
    h = hashlib.sha256()
    h.update(upstream.encode())
    h.update(notebook_path(stem, root).read_bytes())
    h.update(json.dumps(params, sort_keys=True, default=str).encode())
    h.update(_source_fingerprint(root).encode())
    return h.hexdigest()[:16]


def _cached(out: Path, key: str) -> bool:
    if not out.is_file():
        return False
    try:
        return json.loads(out.read_text())["metadata"].get("apd", {}).get("cache_key") == key
    except (ValueError, KeyError):
        return False


@contextlib.contextmanager
def kernel_environment(extra: dict[str, str] | None = None):
    """Set :data:`KERNEL_ENV` (and ``extra``) in ``os.environ`` while kernels start (they inherit it),
    then restore it. A variable the user already set to something else wins, except
    ``PYTHONWARNINGS``, which is extended."""
    saved = dict(os.environ)
    try:
        for key, value in {**KERNEL_ENV, **(extra or {})}.items():
            if key == "PYTHONWARNINGS" and os.environ.get(key):
                os.environ[key] = f"{os.environ[key]},{value}"
            else:
                os.environ.setdefault(key, value)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def execute(stem: str, params: dict, out: Path, root: Path = ROOT, force: bool = False,
            upstream: str = "") -> str:
    """Execute one notebook with papermill into ``out``; return 'cached' or 'executed'.

    A failing cell raises BookError naming the notebook, the cell and the error."""
    import papermill as pm

    key = cache_key(stem, params, root, upstream)
    if not force and _cached(out, key):
        return "cached"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.stem + ".partial.ipynb")
    try:
        with kernel_environment():
            pm.execute_notebook(
                str(notebook_path(stem, root)), str(tmp), parameters=params, cwd=str(root),
                kernel_name="python3", progress_bar=False, log_output=False,
            )
    except pm.PapermillExecutionError as err:
        raise BookError(
            f"notebook notebooks/{stem}.ipynb failed in cell {err.cell_index} "
            f"(execution count {err.exec_count}): {err.ename}: {err.evalue}\n"
            f"  the partly executed notebook is {tmp}"
        ) from None
    nb = json.loads(tmp.read_text())
    for cell in nb["cells"]:  # hide the injected cell on the page; keep it in the .ipynb
        tags = cell.get("metadata", {}).get("tags", [])
        if INJECTED_TAG in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
    nb["metadata"]["apd"] = {"cache_key": key, "parameters": params}
    tmp.write_text(json.dumps(nb, indent=1))
    tmp.replace(out)
    return "executed"


# -- rendering ----------------------------------------------------------------------------------

def stage(profile: str, root: Path = ROOT) -> Path:
    """Copy the book's hand-written sources and a local MathJax into ``_build/<profile>/book``."""
    dest = root / "_build" / profile / "book"
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / name, dest / name)
    if (dest / "book").exists():
        shutil.rmtree(dest / "book")
    shutil.copytree(root / "book", dest / "book")
    mathjax = root / "node_modules" / "mathjax" / "es5"
    if not (mathjax / "tex-chtml.js").is_file():
        raise BookError(
            f"{mathjax}/tex-chtml.js is missing: the book serves MathJax locally so that math "
            "renders offline. Run `npm install` (or `make env`) in the project root.")
    static = dest / "_mathjax" / "mathjax"
    if not (static / "tex-chtml.js").is_file():
        shutil.copytree(mathjax, static, dirs_exist_ok=True)
    return dest


def render(profile: str, root: Path = ROOT) -> Path:
    """Build the HTML book from the staged sources with warnings as errors; return the html dir."""
    src = stage(profile, root)
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb if jb.exists() else "jupyter-book"), "build", str(src), "--builder", "html",
           "-W", "-n", "--keep-going", "--quiet"]
    # the API reference imports apd (sphinx.ext.autodoc): this project's, installed or not
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(cmd, cwd=root, text=True, capture_output=True, env=env)
    if proc.returncode != 0:
        raise BookError(f"jupyter-book build failed (warnings are errors):\n{proc.stdout[-6000:]}"
                        f"\n{proc.stderr[-6000:]}")
    return src / "_build" / "html"


def build(profile: str, overrides: list[str] | None = None, only: list[str] | None = None,
          force: bool = False, html: bool = True, root: Path = ROOT) -> Path | None:
    """Execute every notebook of ``_toc.yml`` under ``profile`` and render the book."""
    params = load_profile(profile, root)
    extra = parse_overrides(overrides or [], params, root)
    stems = toc_notebooks(root)
    if only:
        unknown = [s for s in only if s not in stems]
        if unknown:
            raise BookError(f"--only {unknown}: not in _toc.yml; known: {', '.join(stems)}")
    out_dir = root / "_build" / profile / "book" / "notebooks"
    t_all = time.time()
    missing: list[str] = []
    upstream = ""
    for stem in stems:
        p = {**params[stem], **extra.get(stem, {}), "profile": profile}
        out = out_dir / f"{stem}.ipynb"
        key = cache_key(stem, p, root, upstream)
        if only and stem not in only:
            if not out.is_file():
                missing.append(stem)
        else:
            t0 = time.time()
            print(f"[apd] {stem}: executing under profile {profile!r} ...", flush=True)
            status = execute(stem, p, out, root, force=force, upstream=upstream)
            print(f"[apd] {stem}: {status} in {time.time() - t0:.1f} s", flush=True)
        upstream = key
    print(f"[apd] notebooks done in {time.time() - t_all:.1f} s", flush=True)
    if not html:
        return None
    if missing:
        print(f"[apd] not rendering the HTML: {', '.join(missing)} never ran under profile "
              f"{profile!r}; build the whole book once (make book PROFILE={profile})", flush=True)
        return None
    t0 = time.time()
    html_dir = render(profile, root)
    print(f"[apd] HTML built in {time.time() - t0:.1f} s: {html_dir}/index.html", flush=True)
    return html_dir


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m apd", description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="default", help="profiles/<name>.yml (smoke, default, pythia)")
    ap.add_argument("--set", action="append", default=[], metavar="NB.PARAM=VALUE",
                    help="override one notebook parameter for this run (repeatable)")
    ap.add_argument("--only", action="append", default=None, metavar="NB",
                    help="execute only this notebook (repeatable); others keep earlier outputs")
    ap.add_argument("--force", action="store_true", help="re-execute even when cached")
    ap.add_argument("--no-html", action="store_true", help="execute notebooks, skip Jupyter Book")
    ap.add_argument("--check", action="store_true", help="only validate the profile and exit")
    args = ap.parse_args(argv)
    try:
        if args.check:
            load_profile(args.profile)
            print(f"profile {args.profile!r} is valid")
            return 0
        build(args.profile, args.set, args.only, args.force, not args.no_html)
    except BookError as err:
        print(f"[apd] ERROR: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
