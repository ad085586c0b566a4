"""The results convention every chapter follows, and the run record shown at the end of each page.

A run writes under ``results/<profile>/``: ``<stem>.json`` (headline numbers, a flat object name ->
number or string), ``figures/<name>.png`` and ``.pdf``, ``tables/<name>.csv``, and ``runs/<stem>.json``
(the run record: profile, parameters, package versions, device, wall time). The results root is
``$APD_RESULTS_DIR`` if set, else ``results/`` in the project root (the folder holding ``_toc.yml``,
searched upwards from the working directory), else ``./results``. Right after a notebook's
parameters cell::

    from apd.report.results import Run
    run = Run.start("theorem1", globals())   # records the parameters defined so far
    run.glue("max_abs_error", err)            # quoted in the prose with {glue:text}`max_abs_error`
    run.savefig(fig, "identity_error"); run.save_table(df, "hlm_sizes")
    run.finish()                              # writes the JSON files, shows the run record

Where a run writes (reads always go to ``results_dir(profile)``):

- under the build (``make book``), into the chapter's staging folder
  ``$APD_RESULTS_STAGING``; the build moves the files into ``results/<profile>/`` when the
  notebook succeeds (:func:`apd.build.run`);
- with ``$APD_RESULTS_DIR`` set, into ``$APD_RESULTS_DIR/<profile>`` (the caller chose the place);
- otherwise (a notebook run by hand, e.g. ``papermill ... -p profile smoke``) into
  ``results/<profile>-by-hand/``, so the book's results are never overwritten by a run that did
  not get the profile's parameters; :meth:`Run.start` prints one line saying so.

A notebook run by hand with a parameter its parameters cell does not define (``-p n_drawz 5``)
stops in :meth:`Run.start` with :class:`UnknownParameterError`: the names papermill injected (the
cell starting ``# Parameters`` in the kernel's input history ``In``) are compared with the names
of ``notebooks/<stem>.ipynb``'s parameters cell. The run record lists the injected names.

Inside a kernel, ``Run.start`` shows the parameters this run actually uses where they differ from
the defaults of the notebook's parameters cell (the profile's values and ``--set`` overrides), and
``Run.finish`` shows the run record as a table. Under the build (``APD_WARNINGS_TO_LOG=1``)
warnings raised after ``Run.start`` go to ``runs/<stem>.log`` instead of the page.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
import os
import platform
import re
import time
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from apd.base.io import file_digest, write_json
from apd.base.jobs import hold_slot
from apd.base.paths import project_root, results_root
from apd.base.notebooks import KEY_ENV, RUNNER_ENV, STAGING_ENV, BookError, notebook_parameters
from apd.report.numbers import TINY, format_number, format_sci, glue_literal
from apd.report.tables import show as show_table

#: Packages whose versions every run record lists.
RECORDED_PACKAGES = (
    "apd",
    "torch",
    "transformers",
    "tokenizers",
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "seaborn",
    "papermill",
    "myst-nb",
    "jupyter-book",
)
_IPYTHON_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}
#: Suffix of the profile folder a notebook run by hand writes into (``results/<profile>-by-hand``).
BY_HAND_SUFFIX = "-by-hand"
_PAPERMILL_HEADER = "# Parameters"


class UnknownParameterError(ValueError):
    """papermill injected a parameter that the notebook's parameters cell does not define."""


class DamagedResultsError(ValueError):
    """A chapter's results file does not parse, or differs from the digest its run record holds;
    the message names the file and the command that rebuilds the chapter."""


def results_dir(profile: str) -> Path:
    """``results/<profile>`` under the results root (see the module docstring)."""
    if not profile or "/" in profile:
        raise ValueError(f"profile must be a plain name such as 'default', got {profile!r}")
    return results_root() / profile


def write_dir(profile: str) -> Path:
    """Where a run under ``profile`` writes its files (see the module docstring): the build's
    staging folder, ``$APD_RESULTS_DIR/<profile>``, or ``results/<profile>-by-hand``."""
    staging = os.environ.get(STAGING_ENV)
    if staging and os.environ.get(RUNNER_ENV) == "1":
        return Path(staging)
    if os.environ.get("APD_RESULTS_DIR"):
        return results_dir(profile)
    return results_dir(profile + BY_HAND_SUFFIX)


def injected_parameters(namespace: dict) -> list[str]:
    """Names assigned by papermill's injected cell(s) (inputs starting ``# Parameters`` in the
    kernel's history ``namespace['In']``); empty outside a papermill kernel."""
    import ast

    names: list[str] = []
    for source in namespace.get("In") or ():
        if isinstance(source, str) and source.lstrip().startswith(_PAPERMILL_HEADER):
            try:
                body = ast.parse(source).body
            except SyntaxError:
                continue
            names += [
                t.id for node in body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)
            ]
    return sorted(set(names))


def _notebook_file(stem: str) -> Path | None:
    """``notebooks/<stem>.ipynb`` of the project (from the working directory, else beside apd)."""
    for root in (project_root(), Path(__file__).resolve().parents[2]):
        if root is not None and (root / "notebooks" / f"{stem}.ipynb").is_file():
            return root / "notebooks" / f"{stem}.ipynb"
    return None


#: A glue role in a notebook's prose: ``{glue:text}`name:spec```, ``{glue}`name```.
_GLUE_ROLE = re.compile(r"\{glue(?::(?:text|md|any))?\}`([^`:]+)(?::([^`]*))?`")
_PROSE_FORMATS: dict[tuple[str, float], dict[str, set[str]]] = {}


def prose_formats(stem: str) -> dict[str, set[str]]:
    """``{name: the format specs its glue roles use}`` in the prose of ``notebooks/<stem>.ipynb``
    (``""`` for a role without one); empty when there is no such notebook.

    Example:
        >>> prose_formats("no-such-notebook")
        {}
    """
    path = _notebook_file(stem)
    if path is None:
        return {}
    key = (str(path), path.stat().st_mtime)
    if key not in _PROSE_FORMATS:
        found: dict[str, set[str]] = {}
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        for cell in cells:
            if cell.get("cell_type") == "markdown":
                source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
                for m in _GLUE_ROLE.finditer(source):
                    found.setdefault(m.group(1).strip(), set()).add(m.group(2) or "")
        _PROSE_FORMATS[key] = found
    return _PROSE_FORMATS[key]


def check_injected(stem: str, injected: list[str]) -> None:
    """Raise UnknownParameterError when ``injected`` names a parameter that the parameters cell
    of ``notebooks/<stem>.ipynb`` lacks (no check when there is no such notebook)."""
    path = _notebook_file(stem)
    if not injected or path is None:
        return
    declared = notebook_parameters(path)
    unknown = [n for n in injected if n not in declared]
    if unknown:
        raise UnknownParameterError(
            f"notebook {stem} got parameter(s) {', '.join(unknown)} that its parameters cell does "
            f"not define (a typo in papermill -p?); its parameters: {', '.join(declared)}"
        )


def package_versions(names=RECORDED_PACKAGES) -> dict[str, str]:
    """Installed version of each package (``'not installed'`` when absent)."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    out["python"] = platform.python_version()
    return out


def describe_device(device: str | None = None) -> str:
    """A human-readable device string: the CUDA device name, or the CPU with its thread count."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        return "cpu"
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if str(device).startswith("cuda") and torch.cuda.is_available():
        return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
    n = torch.get_num_threads()
    return f"cpu ({platform.processor() or platform.machine()}, {n} thread{'' if n == 1 else 's'})"


def _jsonable(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _jsonable(v) for k, v in value.items())
    return False


def parameters_from_namespace(namespace: dict) -> dict[str, Any]:
    """The plain-data variables of a notebook namespace (its papermill parameters, when called
    right after the parameters cell): JSON-able values whose names do not start with ``_``."""
    return {
        k: (list(v) if isinstance(v, tuple) else v)
        for k, v in namespace.items()
        if not k.startswith("_") and k not in _IPYTHON_NAMES and _jsonable(v)
    }


_FIXED = re.compile(r"^\{:([+ ]?)\.(\d+)([f%])\}$")


#: The run record's entry ``{relative path: SHA-256}`` of the files the run wrote (the build
#: records every file's when it commits them; a run outside it, its results file's), which
#: :func:`read_results` checks: the results files themselves stay flat.
RESULTS_DIGESTS = "results_sha256"

#: The run record's entry ``{key: format}`` for the values glued as text with a format
#: (:meth:`Run.glue_text`), so that a page filled from the results (the intro) prints them as the
#: chapter does; the results file itself stays flat (one number or string per key).
GLUE_FORMATS = "glue_formats"


def format_value(fmt: str | None, value: Any) -> str:
    """``fmt.format(value)`` with the book's number rules (:mod:`apd.report.numbers`): no ``fmt``
    (None, or ``"{}"`` for a number) prints :func:`~apd.report.numbers.format_number` (integers as
    integers, three significant figures); a fixed-point or percent format (``"{:+.4f}"``,
    ``"{:.2%}"``) that would print a nonzero number as zero gets more places, or scientific
    notation when the number is below 1e-4 (no run of zeros).

    Example:
        >>> format_value("{:+.4f}", 3.2e-04), format_value("{:.4f}", 0.0), format_value("{:.2%}", -2e-05)
        ('+0.0003', '0.0000', '-0.002%')
        >>> format_value("{:+.3f}", -2.7e-09), format_value(None, 2.191194474697113), format_value("{}", 5000.0)
        ('-2.7 × 10⁻⁹', '2.19', '5,000')
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool) and (fmt is None or fmt == "{}"):
        return format_number(value) if math.isfinite(value) else str(value)
    if fmt is None:
        return str(value)
    m = _FIXED.match(fmt)
    if m and isinstance(value, (int, float)) and value != 0 and math.isfinite(value):
        places, kind = int(m.group(2)), m.group(3)
        shown = value * (100 if kind == "%" else 1)
        if round(shown, places) == 0 and abs(shown) < TINY:
            return format_sci(shown, 2, signed=m.group(1) == "+") + ("%" if kind == "%" else "")
        while round(shown, places) == 0:
            places += 1
        return f"{{:{m.group(1)}.{places}{kind}}}".format(value)
    return fmt.format(value)


def _plain(value: Any) -> Any:
    """numpy / torch scalars -> Python numbers; anything else must already be a number or string."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return value.item()
    if type(value).__module__.startswith("torch") and getattr(value, "ndim", None) == 0:
        return value.item()
    raise TypeError(
        f"results must be numbers or strings (a flat JSON object), got {type(value).__name__}; "
        "store arrays and frames with Run.save_table instead"
    )


@dataclass
class Run:
    """One execution of one notebook under one profile (see the module docstring).

    Example (results go to ``$APD_RESULTS_DIR/<profile>`` when it is set):
        >>> import os, tempfile
        >>> os.environ["APD_RESULTS_DIR"] = tempfile.mkdtemp()
        >>> profile, n_draws = "demo", 100                     # a notebook's parameters cell
        >>> run = Run.start("my_chapter", globals())
        >>> run.glue("max_abs_error", 1.5e-12)
        >>> run.finish(show=False)
        >>> load_results("demo", "my_chapter")["max_abs_error"]
        1.5e-12
        >>> del os.environ["APD_RESULTS_DIR"]
    """

    stem: str
    profile: str
    parameters: dict[str, Any]
    device: str | None = None
    values: dict[str, Any] = field(default_factory=dict)
    formats: dict[str, str] = field(default_factory=dict)  # glue_text's formats, in the run record
    figures: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    injected: list[str] = field(default_factory=list)
    defaults: dict[str, Any] | None = None
    warnings_logged: int = 0

    @classmethod
    def start(
        cls,
        stem: str,
        namespace: dict | None = None,
        *,
        profile: str | None = None,
        parameters: dict | None = None,
        device: str | None = None,
        show: bool | None = None,
    ) -> "Run":
        """Begin a run. ``namespace`` is the notebook's ``globals()`` right after its parameters
        cell; its ``profile`` variable names the profile (default ``'default'``). Raises
        UnknownParameterError when papermill injected a name the parameters cell lacks.

        ``show`` (default: when running in a kernel) displays the parameters that differ from the
        defaults of ``notebooks/<stem>.ipynb``'s parameters cell, when that notebook exists.

        Under the build (``$APD_BOOK_RUNNER``) the kernel takes one of the build's slots
        (:func:`apd.base.jobs.hold_slot`) and computes on one torch thread, in a build of one chapter
        at a time as beside others, so that its numbers do not depend on how many jobs run at once."""
        if os.environ.get(RUNNER_ENV) == "1" and hold_slot():
            import torch

            torch.set_num_threads(1)
        params = dict(parameters or {})
        injected: list[str] = []
        if namespace is not None:
            params = {**parameters_from_namespace(namespace), **params}
            injected = injected_parameters(namespace)
            check_injected(stem, injected)
        profile = profile or params.get("profile") or "default"
        run = cls(
            stem=stem,
            profile=str(profile),
            parameters=params,
            device=device,
            injected=injected,
            defaults=notebook_defaults(stem),
        )
        if run.dir.name == run.profile + BY_HAND_SUFFIX:
            print(
                f"apd: not run through the build (make book): results go to {run.dir}, "
                f"not {results_dir(run.profile)}; the book's are made by "
                f"`make book PROFILE={run.profile} ONLY={stem}`"
            )
        run.dir.mkdir(parents=True, exist_ok=True)
        if os.environ.get("APD_WARNINGS_TO_LOG", "").strip() == "1":
            run._warnings_to_log()
        if show is None:
            show = _in_kernel()
        if show:
            run.show_parameters()
        return run

    # -- parameters -----------------------------------------------------------------------
    def changed_parameters(self) -> dict[str, tuple[Any, Any]]:
        """``{name: (this run's value, the default)}`` for every parameter (but ``profile``) whose
        value differs from the notebook's parameters cell; ``{}`` when the defaults are unknown."""
        if self.defaults is None:
            return {}
        missing = object()
        out = {}
        for name, value in self.parameters.items():
            default = self.defaults.get(name, missing)
            default = list(default) if isinstance(default, tuple) else default
            if name != "profile" and (default is missing or default != value):
                out[name] = (value, None if default is missing else default)
        return out

    def show_parameters(self) -> None:
        """Display what :meth:`changed_parameters` returns, as a table (nothing outside IPython)."""
        try:
            from IPython.display import Markdown, display
        except ImportError:  # pragma: no cover
            return
        import pandas as pd

        changed = self.changed_parameters()
        if self.defaults is None:
            return
        if not changed:
            display(Markdown(f"This run (profile `{self.profile}`) uses the defaults above."))
            return
        frame = pd.DataFrame(
            [{"parameter": k, "this run": _short(v), "default": _short(d)} for k, (v, d) in changed.items()]
        )
        display(
            show_table(
                frame,
                caption=f"This run (profile {self.profile}) changes these defaults",
                index=False,
                wrap=["this run"],
            )
        )

    def _warnings_to_log(self) -> None:
        """Send every warning shown from now on to ``runs/<stem>.log`` (started empty)."""
        log = self.dir / "runs" / f"{self.stem}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("")

        def showwarning(message, category, filename, lineno, file=None, line=None):
            self.warnings_logged += 1
            with open(log, "a") as f:
                f.write(warnings.formatwarning(message, category, filename, lineno, line))

        warnings.showwarning = showwarning

    @property
    def dir(self) -> Path:
        """Where this run writes (:func:`write_dir`); reads go to ``results_dir(profile)``."""
        return write_dir(self.profile)

    # -- numbers --------------------------------------------------------------------------
    def glue(self, name: str, value: Any, display: bool = False) -> None:
        """Record a headline number (for the JSON) and glue it for the prose (myst_nb.glue). Returns
        nothing, so a cell that ends with it shows no stray value; read it back from ``values``.

        A float is glued as the book prints a number with no format
        (:func:`apd.report.numbers.format_number`: ``2.0`` reads "2", ``0.30000000000000004`` "0.3")
        when the notebook's prose quotes it only without a format spec; otherwise as a number
        without round-off tails (:func:`apd.report.numbers.glue_literal`), for the prose's spec."""
        plain = _plain(value)
        if isinstance(plain, float) and not math.isfinite(plain):
            raise ValueError(f"result {name!r} is {plain}; a headline number must be finite")
        self.values[name] = plain
        try:
            from myst_nb import glue
        except ImportError:  # outside the book, recording is enough
            return
        shown = glue_literal(plain)
        if isinstance(plain, float) and prose_formats(self.stem).get(name) == {""}:
            shown = format_number(plain)
        glue(name, shown, display=display)

    def glue_text(self, name: str, value: Any, fmt: str | None = None, missing: str = "n/a") -> None:
        """Glue ``value`` formatted with ``fmt`` (:func:`format_value`; None: the book's default,
        :func:`apd.report.numbers.format_number`) as text for the prose, or ``missing`` when the
        value is None or NaN (e.g. a measure this profile cannot compute). The JSON gets the number,
        or the ``missing`` text. Returns nothing (no stray value at the end of a cell)."""
        absent = value is None or (isinstance(value, float) and not math.isfinite(value))
        text = missing if absent else format_value(fmt, _plain(value))
        self.values[name] = missing if absent else _plain(value)
        if fmt and not absent:  # a page filled from the JSON (the intro) prints it as the chapter does
            self.formats[name] = fmt
        else:
            self.formats.pop(name, None)
        try:
            from myst_nb import glue
        except ImportError:
            return
        glue(name, text, display=False)

    def record(self, **values: Any) -> None:
        """Record several headline numbers without gluing them."""
        for k, v in values.items():
            self.values[k] = _plain(v)

    # -- figures and tables ---------------------------------------------------------------
    def savefig(self, fig, name: str, glue_name: str | None = None):
        """Save ``fig`` as ``figures/<name>.png`` and ``.pdf``; return the PNG path.
        With ``glue_name``, also glue the figure so prose can place it (``{glue:figure}``)."""
        out = self.dir / "figures"
        out.mkdir(parents=True, exist_ok=True)
        png = out / f"{name}.png"
        fig.savefig(png, dpi=150, bbox_inches="tight")
        fig.savefig(out / f"{name}.pdf", bbox_inches="tight")
        self.figures.append(name)
        if glue_name:
            from myst_nb import glue

            glue(glue_name, fig, display=False)
        return png

    def save_table(self, df, name: str, index: bool = False):
        """Save a DataFrame as ``tables/<name>.csv``; return the path."""
        out = self.dir / "tables"
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{name}.csv"
        df.to_csv(path, index=index)
        self.tables.append(name)
        return path

    # -- the end --------------------------------------------------------------------------
    def record_dict(self) -> dict[str, Any]:
        return {
            "notebook": self.stem,
            "profile": self.profile,
            "parameters": self.parameters,
            "device": describe_device(self.device),
            "packages": package_versions(),
            "started": _dt.datetime.fromtimestamp(self.started).isoformat(timespec="seconds"),
            "wall_time_s": round(time.time() - self.started, 2),
            "figures": self.figures,
            "tables": self.tables,
            "injected_parameters": self.injected,
            "cache_key": os.environ.get(KEY_ENV) if os.environ.get(RUNNER_ENV) == "1" else None,
            "changed_parameters": {k: v for k, (v, _) in self.changed_parameters().items()},
            "warnings_logged": self.warnings_logged,
            GLUE_FORMATS: dict(sorted(self.formats.items())),
        }

    def finish(self, show: bool = True) -> None:
        """Write ``<stem>.json`` and ``runs/<stem>.json``; display the run record (returns None so
        that a notebook's last cell shows only the record's table)."""
        record = self.record_dict()
        self.values.setdefault("profile", self.profile)
        self.values["wall_time_s"] = record["wall_time_s"]
        path = write_json(self.dir / f"{self.stem}.json", self.values, trailing_newline=True)
        record[RESULTS_DIGESTS] = {path.name: file_digest(path)}  # the build records every file's at commit
        write_json(self.dir / "runs" / f"{self.stem}.json", record, trailing_newline=True)
        if show:
            try:
                from IPython.display import HTML, display

                display(HTML(run_record_html(record)))
            except ImportError:  # pragma: no cover
                print(json.dumps(record, indent=2))


def _in_kernel() -> bool:
    """Whether this runs in an IPython kernel (a notebook), where ``display`` shows HTML."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _short(value: Any, width: int = 120) -> str:
    """A parameter value as the run's tables print it: ``repr`` cut to ``width`` characters."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def notebook_defaults(stem: str) -> dict[str, Any] | None:
    """The defaults of ``notebooks/<stem>.ipynb``'s parameters cell in the project, or None."""
    root = project_root()
    path = (root / "notebooks" / f"{stem}.ipynb") if root else None
    if path is None or not path.is_file():
        return None
    try:
        return notebook_parameters(path)
    except (BookError, SyntaxError, ValueError):
        return None


def _record_rows(record: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, html value) rows of the run record."""
    params = {k: v for k, v in record["parameters"].items() if k != "profile"}
    changed = record.get("changed_parameters") or {}
    pkgs = ", ".join(f"{k} {v}" for k, v in record["packages"].items())
    code = lambda s: f"<code>{html.escape(s)}</code>"  # noqa: E731
    rows = [
        ("profile", code(record["profile"])),
        ("parameters", ", ".join(code(f"{k}={_short(v)}") for k, v in params.items()) or "(none)"),
    ]
    if changed:
        rows.append(("changed from the defaults", ", ".join(code(k) for k in changed)))
    rows += [
        ("device", html.escape(record["device"])),
        ("wall time", html.escape(f"{record['wall_time_s']:.1f} s (started {record['started']})")),
        ("packages", html.escape(pkgs)),
    ]
    stem, tables = record.get("notebook"), record.get("tables") or ()
    if stem:
        # in the HTML book, the build copies results/<profile>/ beside the pages (apd.build.render)
        files = [(f"{stem}.json", f"../results/{stem}.json")] + [
            (f"tables/{t}.csv", f"../results/tables/{t}.csv") for t in sorted(tables)
        ]
        rows.append(("results", ", ".join(f'<a href="{href}">{html.escape(name)}</a>' for name, href in files)))
    if record.get("warnings_logged"):
        n = record["warnings_logged"]
        where = f"results/{record['profile']}/runs/{record['notebook']}.log"
        rows.append(("warnings", f"{n}, in {code(where)}"))
    return rows


def run_record_html(record: dict[str, Any]) -> str:
    """The run record as an HTML table (what the end of every chapter shows)."""
    cell = 'style="padding: 0.3em 0.75em; border-bottom: 1px solid #d8dde6; vertical-align: top; text-align: left"'
    body = "\n".join(f"<tr><th {cell}>{html.escape(k)}</th><td {cell}>{v}</td></tr>" for k, v in _record_rows(record))
    return (
        f'<table class="apd-run-record" style="border-collapse: collapse; font-size: 0.9em">'
        f'<caption style="caption-side: top; text-align: left; font-weight: bold">Run record</caption>'
        f"\n<tbody>\n{body}\n</tbody></table>"
    )


def load_results(profile: str, stem: str) -> dict[str, Any]:
    """Read ``results/<profile>/<stem>.json``, checked (:func:`read_results`); a clear error when the
    notebook has not run."""
    path = results_dir(profile) / f"{stem}.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist: run the notebook first, e.g. `make book PROFILE={profile} ONLY={stem} FORCE=1`"
        )
    return read_results(results_dir(profile), stem)


def read_results(folder: Path, stem: str) -> dict[str, Any]:
    """Chapter ``stem``'s results in ``folder`` (``results/<profile>``), checked: the file must match
    the SHA-256 its run record ``runs/<stem>.json`` holds (``results_sha256``, recorded when it was
    written; an older run records none) and parse as a JSON object. Otherwise
    :class:`DamagedResultsError` names the file and the command that rebuilds the chapter.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp()) / "demo"
        >>> _ = write_json(folder / "a.json", {"x": 1}), write_json(folder / "runs" / "a.json", {})
        >>> read_results(folder, "a")
        {'x': 1}
        >>> _ = (folder / "a.json").write_text("{ damaged")
        >>> read_results(folder, "a")
        Traceback (most recent call last):
        ...
        apd.report.results.DamagedResultsError: ...a.json is damaged: it is not valid JSON (...); rebuild that chapter: `make book PROFILE=demo ONLY=a FORCE=1`
    """
    path, fix = Path(folder) / f"{stem}.json", _rebuild(folder, stem)
    want = recorded_digests(folder, stem).get(path.name)
    if want is not None and file_digest(path) != want:
        raise DamagedResultsError(
            f"{path} is damaged: it differs from the SHA-256 recorded in its run record "
            f"{Path(folder) / 'runs' / path.name} when it was written; {fix}"
        )
    try:
        values = json.loads(path.read_bytes())
    except ValueError as err:  # UnicodeDecodeError included
        raise DamagedResultsError(
            f"{path} is damaged: it is not valid JSON ({type(err).__name__}: {err}); {fix}"
        ) from None
    if not isinstance(values, dict):
        raise DamagedResultsError(f"{path} is damaged: it is not a JSON object; {fix}")
    return values


def recorded_digests(folder: Path, stem: str) -> dict[str, str]:
    """``{relative path: SHA-256}`` of the files chapter ``stem``'s last run wrote in ``folder``, as its
    run record ``runs/<stem>.json`` holds them (:data:`RESULTS_DIGESTS`); empty when there is no
    record or it holds none. A record that does not parse raises :class:`DamagedResultsError`."""
    record = Path(folder) / "runs" / f"{stem}.json"
    if not record.is_file():
        return {}
    try:
        digests = json.loads(record.read_bytes()).get(RESULTS_DIGESTS) or {}
    except (ValueError, AttributeError):
        digests = None
    if not isinstance(digests, dict):
        raise DamagedResultsError(f"{record}, the run record of chapter {stem}, is damaged; {_rebuild(folder, stem)}")
    return digests


def _rebuild(folder: Path, stem: str) -> str:
    return f"rebuild that chapter: `make book PROFILE={Path(folder).name} ONLY={stem} FORCE=1`"


def last_run_outputs(profile: str, stem: str) -> dict[str, set]:
    """``{'figures': {...}, 'tables': {...}}`` that chapter ``stem``'s last run under ``profile``
    wrote (from its run record ``results/<profile>/runs/<stem>.json``; empty sets when there is
    none). Files in ``figures/`` or ``tables/`` that the last run did not write are stale."""
    path = results_dir(profile) / "runs" / f"{stem}.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        record = {}
    return {"figures": set(record.get("figures") or ()), "tables": set(record.get("tables") or ())}


def artefact_exists(profile: str, stem: str, name: str) -> bool:
    d, out = results_dir(profile), last_run_outputs(profile, stem)
    return (name in out["figures"] and (d / "figures" / f"{name}.png").is_file()) or (
        name in out["tables"] and (d / "tables" / f"{name}.csv").is_file()
    )


def chapter_ran(profile: str, stem: str) -> bool:
    return (results_dir(profile) / f"{stem}.json").is_file()


def recorded_wall_time(profile: str, stem: str) -> float:
    """The wall time (seconds) that chapter ``stem``'s last run under ``profile`` recorded in its
    results (``wall_time_s``, written by :meth:`Run.finish`); 0.0 when it has not run or lacks it.

    Example:
        >>> import os, tempfile
        >>> os.environ["APD_RESULTS_DIR"] = tempfile.mkdtemp()
        >>> run = Run(stem="demo", profile="demo", parameters={}); run.finish(show=False)
        >>> recorded_wall_time("demo", "demo") >= 0, recorded_wall_time("demo", "nowhere")
        (True, 0.0)
        >>> del os.environ["APD_RESULTS_DIR"]
    """
    if not chapter_ran(profile, stem):
        return 0.0
    return float(load_results(profile, stem).get("wall_time_s", 0) or 0)
