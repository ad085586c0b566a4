"""Module paths as attributes: ``apd.evaluation.blindness`` after ``import apd``, each module imported
when first read, so a package's ``__init__`` needs no list of the names its modules define."""

from __future__ import annotations

import importlib
import pkgutil


def submodules(package: str, path: list[str]):
    """A module-level ``__getattr__`` for ``package`` (its ``__path__`` is ``path``) that imports the
    submodule ``package.name`` when ``name`` is first read; any other name raises AttributeError.

    Example:
        >>> import json
        >>> getattr_ = submodules("json", json.__path__)
        >>> getattr_("decoder").__name__
        'json.decoder'
    """
    names = {info.name for info in pkgutil.iter_modules(path)}

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return importlib.import_module(f"{package}.{name}")

    return __getattr__
