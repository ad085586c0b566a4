"""Module-level ``__getattr__`` for names a package keeps for users: an old name that warns and gives
the object under its new name (:func:`renamed`), and modules loaded on first use (:func:`on_first_use`)."""

from __future__ import annotations

import importlib
import warnings
from typing import Callable, Optional


def renamed(module: str, renames: dict[str, str], namespace: dict, stacklevel: int = 2):
    """A module-level ``__getattr__`` serving each old name of ``renames`` (``{old: new}``) as
    ``namespace[new]`` with a ``DeprecationWarning`` that names the new one (``stacklevel``: as for
    :func:`warnings.warn`, 3 when another ``__getattr__`` calls this one).

    Example:
        >>> import warnings
        >>> getattr_ = renamed("demo", {"old": "new"}, {"new": 42})
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     value = getattr_("old")
        >>> value, str(caught[0].message)
        (42, 'demo.old is deprecated; use demo.new')
    """

    def __getattr__(name: str):
        new = renames.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} is deprecated; use {module}.{new}", DeprecationWarning, stacklevel=stacklevel)
        return namespace[new]

    return __getattr__


def on_first_use(package: str, modules: dict[str, tuple[str, tuple[str, ...]]], then: Optional[Callable] = None):
    """A module-level ``__getattr__`` for ``package`` that imports a module when one of its names is
    first read: ``modules`` maps an attribute to ``(module path, names)``; the attribute is the
    module itself and each of ``names`` is read from it. Any other name goes to ``then(name)`` when
    given (e.g. a :func:`renamed` getter), else raises AttributeError.

    Example:
        >>> getattr_ = on_first_use("demo", {"maths": ("math", ("tau",))})
        >>> getattr_("tau") > 6, getattr_("maths").__name__
        (True, 'math')
    """

    def __getattr__(name: str):
        for attribute, (module, names) in modules.items():
            if name == attribute or name in names:
                loaded = importlib.import_module(module)
                return loaded if name == attribute else getattr(loaded, name)
        if then is not None:
            return then(name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
