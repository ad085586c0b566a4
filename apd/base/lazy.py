"""Lazy package namespaces: a name is imported from its module on first use.

A package's ``__init__`` lists ``{name: "module path"}``; nothing is imported until a name is
read, so ``import apd`` stays cheap and a Hub-family user never loads the pico builder.
"""
from __future__ import annotations

import importlib


def attach(package: str, exports: dict[str, str]):
    """``(__getattr__, __dir__, __all__)`` for ``package``, exporting ``exports`` lazily.

    ``exports`` maps a public name to the absolute module that defines it (``"apd.core.theory"``),
    with ``"module:attr"`` to another attribute name there, or to a submodule of that name
    (``"plots": "apd.report.plots"``).

    Example:
        >>> getattr_, dir_, all_ = attach("demo", {"sqrt": "math", "tau": "math:tau"})
        >>> getattr_("tau") > 6
        True
    """
    def __getattr__(name: str):
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = target.partition(":")
        if not attr and module.rsplit(".", 1)[-1] == name:  # a submodule or subpackage
            return importlib.import_module(module)
        return getattr(importlib.import_module(module), attr or name)

    def __dir__():
        return sorted(exports)

    return __getattr__, __dir__, sorted(exports)
