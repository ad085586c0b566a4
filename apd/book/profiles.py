"""A build's parameters: a profile (``profiles/<name>.yml``) read and validated against the
chapters' declared parameters (:mod:`apd.chapters.params`, through :func:`apd.book.params.declared`)
and :mod:`apd.book.schema`, with the ``--set`` overrides merged in."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from apd.base.notebooks import BookError
from apd.book import schema
from apd.book.params import declared, drift
from apd.book.project import ROOT, profiles_dir, toc_notebooks

PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")

#: The parameters the runner gives every notebook itself, and the option that sets each: a profile
#: or ``--set`` may not set them.
RUNNER_OWNED = {"profile": "--profile NAME"}

#: The command line's options that a ``--set`` without a notebook may have meant (see ``--help``).
OPTIONS = {
    **RUNNER_OWNED,
    "device": "--device DEVICE",
    "local_dir": "--local-dir FOLDER",
    "data_dir": "--data-dir FOLDER",
}


_KINDS = (
    (bool, "true or false"),
    (int, "an integer"),
    (float, "a number"),
    (str, "a string"),
    (list, "a list such as [1, 2]"),
    (dict, "a mapping such as {a: 1}"),
)


def check_type(where: str, value: Any, default: Any, literal: bool = True) -> Any:
    """``value`` if it fits the type of the parameter's ``default``, else a one-line BookError.

    Rules: a bool default takes a bool; an int default an int; a float default an int or a float;
    a str default a string; a list default a list; a dict default a mapping; a None default, or a
    default that is an expression (``literal=False``), anything."""
    if not literal or default is None:
        return value
    for kind, words in _KINDS:
        if isinstance(default, kind):
            ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
            if kind is float:
                ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if kind is list:
                ok = isinstance(value, (list, tuple))
            if not ok:
                raise BookError(f"{where}: expected {words} (default {default!r}), got {value!r}")
            return value
    return value


def known_profiles(root: Path = ROOT) -> list[str]:
    """The names of the profiles (``profiles/*.yml``, :func:`apd.book.project.profiles_dir`), sorted."""
    return sorted(p.stem for p in profiles_dir(root).glob("*.yml"))


def profile_descriptions(root: Path = ROOT) -> dict[str, str]:
    """``{name: its one-line description}`` of every profile (its ``description:``; empty when it has
    none or cannot be read: the build says what is wrong with it)."""
    out = {}
    for name in known_profiles(root):
        try:
            data = yaml.safe_load((profiles_dir(root) / f"{name}.yml").read_text())
        except (OSError, yaml.YAMLError):
            data = None
        text = data.get("description") if isinstance(data, dict) else None
        out[name] = " ".join(text.split()) if isinstance(text, str) else ""
    return out


def profile_path(profile: str, root: Path = ROOT) -> Path:
    """``profiles/<profile>.yml``; ``profile`` must be a plain name (letters, digits, ``_``, ``-``)."""
    known = known_profiles(root)
    if not PROFILE_NAME.match(str(profile)):
        raise BookError(f"--profile {profile!r}: takes a profile name, not a path; known profiles: {', '.join(known)}")
    path = profiles_dir(root) / f"{profile}.yml"
    if not path.is_file():
        raise BookError(f"unknown profile {profile!r}: no {path}; known profiles: {', '.join(known)}")
    return path


def load_profile(profile: str, root: Path = ROOT) -> dict[str, dict[str, Any]]:
    """``{stem: parameters}`` of a profile, validated (see :func:`validate_profile`)."""
    path = profile_path(profile, root)
    notebooks = read_profile_file(path)
    validate_profile(profile, notebooks, root)
    return {stem: dict(notebooks.get(stem) or {}) for stem in toc_notebooks(root)}


def read_profile_file(path: Path) -> dict[str, dict]:
    """The ``notebooks`` mapping of a profile file, after its YAML (duplicate keys refused) and its
    shape are checked (:mod:`apd.book.schema`). Raises BookError listing every problem."""
    try:
        data = schema.load_yaml(path.read_text())
    except schema.ProfileShapeError as err:
        raise BookError(f"{path}: {err}") from None
    except yaml.YAMLError as err:
        raise BookError(f"{path} is not valid YAML: {_yaml_problem(err)}") from None
    problems = schema.shape_problems(data)
    if problems:
        raise BookError(f"{path} is not a valid profile:\n  - " + "\n  - ".join(problems))
    return {stem: params or {} for stem, params in (data.get("notebooks") or {}).items()}


def validate_profile(profile: str, notebooks: dict, root: Path = ROOT) -> None:
    """Every toc notebook appears in the profile; every profile notebook is in the toc, with a
    parameters cell that declares what its class does (:func:`apd.book.params.drift`); every
    parameter is declared (:func:`apd.book.params.declared`) and not one the runner sets itself
    (:data:`RUNNER_OWNED`), with a value of its default's type
    (:func:`check_type`) and in its declared range (:func:`apd.book.schema.check_value`).
    Raises BookError listing every problem."""
    stems = toc_notebooks(root)
    problems = []
    for stem in stems:
        if stem not in notebooks:
            problems.append(f"notebook {stem!r} (in _toc.yml) has no entry; add `{stem}: {{}}`")
    for stem, params in notebooks.items():
        if stem not in stems:
            problems.append(f"notebook {stem!r} is not in _toc.yml (typo?); known: {', '.join(stems)}")
            continue
        stale = drift(stem, root)
        if stale:
            problems.append(stale)
        defaults = declared(stem, root)
        if "profile" not in defaults:
            problems.append(f"notebooks/{stem}.ipynb has no `profile` parameter")
        for name, value in (params or {}).items():
            if name in RUNNER_OWNED:
                problems.append(f"{stem}.{name}: the runner sets `{name}` itself; use {RUNNER_OWNED[name]} instead")
                continue
            if name not in defaults:
                problems.append(
                    f"{stem}.{name} is not a parameter of notebooks/{stem}.ipynb"
                    f"{schema.did_you_mean(name, defaults)} (its parameters: {', '.join(defaults)})"
                )
                continue
            try:
                check_type(f"{stem}.{name}", value, *defaults[name])
            except BookError as err:
                problems.append(str(err))
                continue
            bad = schema.check_value(stem, name, value)
            if bad:
                problems.append(bad)
    if problems:
        raise BookError(
            f"profile {profile!r} ({profile_path(profile, root)}) is invalid:\n  - " + "\n  - ".join(problems)
        )


def _yaml_problem(err: yaml.YAMLError) -> str:
    """One line out of a YAML error (its problem and where)."""
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    mark = getattr(err, "problem_mark", None)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else problem


def parse_value(text: str) -> Any:
    """A ``--set`` value: YAML first (``[1, 2]``, ``true``, ``null``, ``'a b'``); a string that reads
    as a number becomes one (YAML 1.1 reads ``5e-2`` as a string; this gives 0.05)."""
    value = yaml.safe_load(text)
    if isinstance(value, str):
        for number in (int, float):
            try:
                return number(value)
            except ValueError:
                pass
    return value


def parse_overrides(items: list[str], profile_params: dict[str, dict], root: Path = ROOT) -> dict:
    """``['nb.param=value', ...]`` -> ``{nb: {param: value}}``: names checked against the declared
    parameters (:func:`apd.book.params.declared`), values parsed by :func:`parse_value`,
    then checked against the type of the parameter's default (:func:`check_type`); a string
    parameter takes a number's or a boolean's text as given; a name the runner sets itself
    (:data:`RUNNER_OWNED`) is refused. Errors are one line: ``--set ITEM: problem``."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, _, text = item.partition("=")
        last = key.rsplit(".", 1)[-1]
        if last in RUNNER_OWNED:
            raise BookError(f"--set {item}: the runner sets `{last}` itself; use {RUNNER_OWNED[last]} instead")
        if "=" not in item or "." not in key:
            hint = f"; for every chapter, use {OPTIONS[key]}" if key in OPTIONS else ""
            raise BookError(f"--set {item}: expected NOTEBOOK.PARAMETER=VALUE, e.g. theorem1.seed=3{hint}")
        stem, name = key.split(".", 1)
        if stem not in profile_params:
            raise BookError(f"--set {item}: no notebook {stem!r}; known: {', '.join(profile_params)}")
        defaults = declared(stem, root)
        if name not in defaults:
            raise BookError(
                f"--set {item}: {name!r} is not a parameter of {stem}{schema.did_you_mean(name, defaults)} "
                f"(its parameters: {', '.join(defaults)})"
            )
        default, literal = defaults[name]
        try:
            value = parse_value(text)
        except yaml.YAMLError as err:
            if not (literal and isinstance(default, str)):
                raise BookError(
                    f"--set {item}: not a valid value ({_yaml_problem(err)}); "
                    "quote lists and mappings, e.g. --set 'nb.grid=[1, 2]'"
                ) from None
            value = text
        if literal and isinstance(default, str) and isinstance(value, (bool, int, float)):
            value = text  # a string parameter: a scalar's text as given (e.g. a folder named 2024)
        try:
            value = check_type(f"--set {item}", value, default, literal)
        except BookError as err:
            raise BookError(str(err).rsplit(", got ", 1)[0]) from None
        bad = schema.check_value(stem, name, value)
        if bad:
            raise BookError(f"--set {item}: " + bad.split(": ", 1)[1])
        out.setdefault(stem, {})[name] = value
    return out


#: The command line's global switches: ``--device DEVICE`` and ``--local-dir FOLDER`` set that
#: parameter in every chapter that declares it.
SWITCHES = {"device": "--device", "local_dir": "--local-dir"}


def switch_overrides(switches: dict[str, Any] | None, stems: list[str], root: Path = ROOT) -> dict:
    """``{stem: {parameter: value}}`` for each global switch given (:data:`SWITCHES`; ``None``: not
    given): the value in every chapter of ``stems`` that declares the parameter, checked against
    each one's type and range. Errors are one line: ``--device VALUE: problem``."""
    out: dict[str, dict[str, Any]] = {}
    for name, value in (switches or {}).items():
        if value is None:
            continue
        flag = f"{SWITCHES.get(name, '--' + name)} {value}"
        for stem in stems:
            defaults = declared(stem, root)
            if name not in defaults:
                continue
            try:
                check_type(flag, value, *defaults[name])
            except BookError as err:
                raise BookError(str(err).rsplit(", got ", 1)[0]) from None
            bad = schema.check_value(stem, name, value)
            if bad:
                raise BookError(f"{flag}: " + bad.split(": ", 1)[1])
            out.setdefault(stem, {})[name] = value
    return out


def resolve(
    profile: str,
    overrides: list[str] | None = None,
    only: list[str] | None = None,
    root: Path = ROOT,
    switches: dict[str, Any] | None = None,
) -> tuple[dict[str, dict], list[str]]:
    """The parameters every notebook runs with (profile, global switches such as ``--device``
    (:func:`switch_overrides`), ``--set`` overrides, which win over a switch, and ``profile``), all
    validated, and the toc's notebooks in order. Raises BookError (one line per problem)."""
    params = load_profile(profile, root)
    extra = parse_overrides(overrides or [], params, root)
    stems = toc_notebooks(root)
    for stem, values in switch_overrides(switches, stems, root).items():
        extra[stem] = {**values, **extra.get(stem, {})}
    if only:
        unknown = [s for s in only if s not in stems]
        if unknown:
            raise BookError(f"--only {', '.join(unknown)}: not in _toc.yml; known: {', '.join(stems)}")
    return {stem: {**params[stem], **extra.get(stem, {}), "profile": profile} for stem in stems}, stems
