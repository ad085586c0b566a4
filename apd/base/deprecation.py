"""Old names kept for users: reading one warns and gives the object under its new name."""
from __future__ import annotations

import warnings


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
