"""Gluing a chapter's summary values in one call (the chapter modules build them as plain dicts), and
recording a chapter's typed headline (a frozen dataclass) field by field.

A headline field's ``metadata["fmt"]`` (:func:`fmt`) is the format its value is glued with for the
prose (:meth:`apd.report.results.Run.glue_text`; a missing value reads "n/a"); a field without one
is glued as it is (:meth:`apd.report.results.Run.glue`). A field marked :func:`per_name` holds a
``{name: value}`` mapping, glued as one key per name, ``<field>_<name>``.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def glue_values(run, values: dict[str, Any]) -> None:
    """Glue every ``key: value`` of ``values`` on ``run`` (an :class:`apd.report.results.Run`):
    ``(value, fmt)`` goes through ``run.glue_text(key, value, fmt)`` (a missing value reads "n/a"),
    ``(value, None)`` and anything else through ``run.glue(key, value)``.

    Example:
        >>> class Demo:
        ...     values = {}
        ...     def glue(self, k, v): self.values[k] = v
        ...     def glue_text(self, k, v, fmt): self.values[k] = fmt.format(v)
        >>> run = Demo(); glue_values(run, {"n": 3, "ratio": (0.51234, "{:.2f}")}); run.values
        {'n': 3, 'ratio': '0.51'}
    """
    for key, value in values.items():
        if isinstance(value, tuple) and value[1] is None:
            run.glue(key, value[0])
        elif isinstance(value, tuple):
            run.glue_text(key, value[0], value[1])
        else:
            run.glue(key, value)


def fmt(spec: str, **kwargs: Any) -> Any:
    """A dataclass field glued with the format ``spec`` (e.g. ``"{:.4f}"``).

    Example:
        >>> import dataclasses
        >>> @dataclasses.dataclass(frozen=True)
        ... class H:
        ...     kl: float | None = fmt("{:.4f}", default=None)
        >>> dataclasses.fields(H)[0].metadata["fmt"]
        '{:.4f}'
    """
    return dataclasses.field(metadata={"fmt": spec}, **kwargs)


def per_name(**kwargs: Any) -> Any:
    """A dataclass field holding ``{name: value}``, glued as ``<field>_<name>`` per name.

    Example:
        >>> import dataclasses
        >>> @dataclasses.dataclass(frozen=True)
        ... class H:
        ...     gate: dict = per_name(default_factory=dict)
        >>> dataclasses.fields(H)[0].metadata["per_name"]
        True
    """
    return dataclasses.field(metadata={"per_name": True}, **kwargs)


def record_headline(run, headline) -> None:
    """Glue every field of ``headline`` under its own name into ``run`` (its results JSON key).

    Example:
        >>> import dataclasses
        >>> class FakeRun:
        ...     values = {}
        ...     def glue(self, k, v): self.values[k] = v
        ...     def glue_text(self, k, v, f): self.values[k] = "n/a" if v is None else v
        >>> @dataclasses.dataclass(frozen=True)
        ... class H:
        ...     n: int
        ...     kl: float | None = fmt("{:.4f}", default=None)
        >>> run = FakeRun(); record_headline(run, H(n=3)); run.values
        {'n': 3, 'kl': 'n/a'}
    """
    for f in dataclasses.fields(headline):
        value = getattr(headline, f.name)
        if f.metadata.get("per_name"):
            for name, v in value.items():
                run.glue(f"{f.name}_{name}", v)
        elif f.metadata.get("fmt") is not None:
            run.glue_text(f.name, value, f.metadata["fmt"])
        else:
            run.glue(f.name, value)


def result_keys(headline_type, names=()) -> set[str]:
    """The results JSON keys a headline dataclass writes: its field names, and ``<field>_<name>``
    for every ``names`` of a :func:`per_name` field.

    Example:
        >>> import dataclasses
        >>> @dataclasses.dataclass(frozen=True)
        ... class H:
        ...     n: int
        >>> result_keys(H)
        {'n'}
    """
    keys = set()
    for f in dataclasses.fields(headline_type):
        keys |= {f"{f.name}_{n}" for n in names} if f.metadata.get("per_name") else {f.name}
    return keys
