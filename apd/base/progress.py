"""Progress bars that show in a terminal and stay out of the book.

Every progress bar of ``apd`` goes through :func:`progress_bar`. A bar is shown when the caller asks
for one (``progress=True``, the default of the long-running functions) *and* the environment allows
it: ``APD_PROGRESS=0`` (set by the book runner, ``python -m apd``, for the kernels that execute the
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


def _reporting_bar(iterable, path: str, kwargs: dict):
    """A ``tqdm`` bar that draws nothing and writes ``{"desc", "n", "total", "unit", "time"}`` to
    ``path`` (JSON, replaced atomically) at most once a second and when it closes."""
    import json
    import time

    from tqdm.std import tqdm

    class _Report(tqdm):
        def display(self, msg=None, pos=None):
            state = {"desc": self.desc, "n": self.n, "total": self.total, "unit": self.unit, "time": time.time()}
            try:
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "w") as f:
                    json.dump(state, f)
                os.replace(tmp, path)
            except OSError:
                pass
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
