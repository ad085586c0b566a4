"""Gluing a chapter's summary values in one call (the chapter modules build them as plain dicts)."""

from __future__ import annotations

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
