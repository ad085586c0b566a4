"""Gluing a chapter's summary values in one call (the chapter modules build them as plain dicts), and
recording a chapter's typed headline (a frozen dataclass) field by field.

A headline field's ``metadata["fmt"]`` (:func:`fmt`) is the format its value is glued with for the
prose (:meth:`apd.report.results.Run.glue_text`; a missing value reads "n/a"); a field without one
is glued as it is (:meth:`apd.report.results.Run.glue`). A field marked :func:`per_name` holds a
``{name: value}`` mapping, glued as one key per name, ``<field>_<name>``.

A chapter whose results another chapter reads types them: :class:`ChapterResult` reads a headline
back from ``results/<profile>/<stem>.json`` (:meth:`ChapterResult.load`), and a missing chapter or
field raises :class:`MissingResultError` naming the chapter to run first.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from apd.report.results import chapter_ran, load_results


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


class MissingResultError(KeyError):
    """A chapter's typed result cannot be read: the chapter has not run under the profile, or its
    results lack a field (an older run); the message names the chapter to run first."""

    def __str__(self) -> str:  # a KeyError would print its message quoted
        return str(self.args[0]) if self.args else ""


class ChapterResult:
    """A chapter's typed result that other chapters read: a frozen dataclass subclass whose fields
    are keys of ``results/<profile>/<STEM>.json`` (plain fields, no :func:`per_name`), ``STEM`` the
    notebook that records it.

    Example:
        >>> @dataclasses.dataclass(frozen=True)
        ... class Demo(ChapterResult):
        ...     STEM = "demo"
        ...     n: int
        >>> Demo.from_results({"n": 3, "other": 1}).n
        3
        >>> Demo.from_results({})
        Traceback (most recent call last):
        ...
        apd.chapters.gluing.MissingResultError: the demo chapter's results lack n (fields of Demo): run the demo chapter (again) first, `make book PROFILE=<profile> ONLY=demo FORCE=1`
    """

    STEM = ""

    @classmethod
    def from_results(cls, values: dict[str, Any], profile: str = "<profile>"):
        """``cls`` from a chapter's results ``values`` (a run's ``values`` or its loaded JSON);
        raises :class:`MissingResultError` listing every field ``values`` lacks."""
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [n for n in names if n not in values]
        if missing:
            raise MissingResultError(
                f"the {cls.STEM} chapter's results lack {', '.join(missing)} (fields of {cls.__name__}): "
                f"run the {cls.STEM} chapter (again) first, `make book PROFILE={profile} ONLY={cls.STEM} FORCE=1`"
            )
        return cls(**{n: values[n] for n in names})

    @classmethod
    def load(cls, profile: str, *, missing_ok: bool = False):
        """``cls`` from ``results/<profile>/<STEM>.json``. When that chapter has not run: None with
        ``missing_ok``, else :class:`MissingResultError`; a field missing from its results raises
        :class:`MissingResultError` either way.

        Example:
            >>> import os, tempfile
            >>> os.environ["APD_RESULTS_DIR"] = tempfile.mkdtemp()
            >>> @dataclasses.dataclass(frozen=True)
            ... class Demo(ChapterResult):
            ...     STEM = "demo"
            ...     n: int
            >>> Demo.load("nowhere", missing_ok=True) is None
            True
            >>> del os.environ["APD_RESULTS_DIR"]
        """
        if not chapter_ran(profile, cls.STEM):
            if missing_ok:
                return None
            raise MissingResultError(
                f"the {cls.STEM} chapter has not run under the profile {profile!r}, so {cls.__name__} cannot be "
                f"read: run it first, `make book PROFILE={profile} ONLY={cls.STEM} FORCE=1`"
            )
        return cls.from_results(load_results(profile, cls.STEM), profile)
