"""Progress bars that show in a terminal and stay out of the book.

Every progress bar of ``apd`` goes through :func:`progress_bar`. A bar is shown when the caller asks
for one (``progress=True``, the default of the long-running functions) *and* the environment allows
it: ``APD_PROGRESS=0`` (set by the build, ``make book``, for the kernels that execute the
chapters) turns every bar off, so the rendered pages carry no progress lines; a user running
``apd`` from a terminal or a notebook of their own still sees them.

    >>> import os
    >>> os.environ["APD_PROGRESS"] = "0"
    >>> progress_enabled(True)
    False
    >>> bar = progress_bar(total=3, desc="demo")   # disabled: draws nothing
    >>> bar.update(1); bar.close()
    >>> del os.environ["APD_PROGRESS"]
    >>> progress_enabled(True), progress_enabled(False)
    (True, False)
"""

from __future__ import annotations

import os
import sys
import warnings

#: The environment variable that turns every progress bar of ``apd`` off when it is ``0``.
PROGRESS_ENV = "APD_PROGRESS"
_OFF = {"0", "false", "no", "off"}


def progress_enabled(progress: bool = True) -> bool:
    """Whether a bar asked for with ``progress`` is drawn: ``progress`` and not ``APD_PROGRESS=0``."""
    return bool(progress) and os.environ.get(PROGRESS_ENV, "1").strip().lower() not in _OFF


#: The environment variable naming a file where every bar reports its state (set by the book
#: runner for its kernels, whose bars are off, so the terminal can show what a chapter is doing).
PROGRESS_FILE_ENV = "APD_PROGRESS_FILE"


def _report(path: str, desc, n=0, total=None, unit=None) -> None:
    """Write ``{"desc", "n", "total", "unit", "time"}`` to ``path`` (JSON, replaced atomically)."""
    import json
    import time

    state = {"desc": desc, "n": n, "total": total, "unit": unit, "time": time.time()}
    try:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, path)
    except OSError:
        pass


def _reporting_bar(iterable, path: str, kwargs: dict):
    """A ``tqdm`` bar that draws nothing and reports its state to ``path`` (:func:`_report`) at most
    once a second and when it closes."""
    from tqdm.std import tqdm

    class _Report(tqdm):
        def display(self, msg=None, pos=None):
            _report(path, self.desc, self.n, self.total, self.unit)
            return True

    # disable=False explicitly: the kernels' TQDM_DISABLE=1 would otherwise turn this bar off too
    kwargs = {**kwargs, "mininterval": 1.0, "file": open(os.devnull, "w"), "disable": False}
    return _Report(iterable, **kwargs)


def progress_bar(iterable=None, *, progress: bool = True, **kwargs):
    """A ``tqdm`` bar (the notebook widget where ipywidgets is installed, text otherwise), disabled
    unless :func:`progress_enabled`. ``kwargs`` go to ``tqdm`` (``total``, ``desc``, ``unit``, ...).
    Under ``$APD_PROGRESS_FILE`` a bar that is off still reports its state to that file."""
    on = progress_enabled(progress) and not kwargs.pop("disable", False)
    if not on and os.environ.get(PROGRESS_FILE_ENV):
        return _reporting_bar(iterable, os.environ[PROGRESS_FILE_ENV], kwargs)
    if not on:
        from tqdm.std import tqdm  # no widget import, so no "IProgress not found" warning either

        return tqdm(iterable, disable=True, **kwargs)
    with warnings.catch_warnings():
        # tqdm.auto warns once when a notebook has no ipywidgets, then falls back to a text bar
        warnings.filterwarnings("ignore", message="IProgress not found")
        from tqdm.auto import tqdm
    return tqdm(iterable, **kwargs)


def progress_note(what: str, where=None, *, progress: bool = True, file=None) -> None:
    """Say what a long step is about to do, and where its result is kept, as a bar would: the line
    ``apd: <what>; cached in <where>`` on ``file`` (default stderr) when :func:`progress_enabled`,
    so that a script of your own does not sit silent while it trains; under ``$APD_PROGRESS_FILE``
    (the book's kernels, whose bars are off) ``what`` becomes the chapter's line on the build's
    terminal; else nothing.

    Example:
        >>> import sys
        >>> progress_note("training 2 members of the pico family", "/tmp/apd/families/pico-1", file=sys.stdout)
        apd: training 2 members of the pico family; cached in /tmp/apd/families/pico-1
        >>> progress_note("training ALM'", progress=False, file=sys.stdout)   # asked for no bar: silent
    """
    if progress_enabled(progress):
        print(f"apd: {what}" + (f"; cached in {where}" if where else ""), file=file or sys.stderr, flush=True)
    elif os.environ.get(PROGRESS_FILE_ENV):
        _report(os.environ[PROGRESS_FILE_ENV], what)
