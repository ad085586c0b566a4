"""What a profile may say: its YAML read with duplicate keys refused, its shape, and the range of
every notebook parameter's value.

A profile is ``{description: <text>, notebooks: {<stem>: {<parameter>: <value>}}}``. Each chapter's
parameters (names, defaults, whose types the values must have, and ranges) are declared once, in
its class in :mod:`apd.chapters.params`; :data:`RANGES` is derived from them. A ``None`` value is
left to the type check (it is allowed only where the default is None).

Example:
    >>> check_value("theorem1", "n_draws", 10**12)
    'theorem1.n_draws = 1000000000000: expected an integer in [1, 1000000]'
    >>> check_value("family", "device", "cuda:0") is None
    True
"""

from __future__ import annotations

import difflib
from typing import Any

import yaml

from apd.chapters import params
from apd.chapters.ranges import Rule

#: Top-level keys of a profile and what each holds.
TOP_KEYS = {
    "description": "one line saying what the profile is for",
    "notebooks": "a mapping {notebook: {parameter: value}}",
}


class ProfileShapeError(ValueError):
    """The profile's YAML has a duplicate key (the message names it and its line)."""


# -- YAML with duplicate keys refused ------------------------------------------------------------


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (plain YAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise ProfileShapeError(
                    f"key {key!r} is given twice in one mapping (lines {seen[key]} and {line}); "
                    "YAML would silently keep the last: keep one"
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """Parse YAML text like ``yaml.safe_load``, but a duplicate key raises ProfileShapeError."""
    return yaml.load(text, Loader=UniqueKeyLoader)


# -- shape ---------------------------------------------------------------------------------------


def did_you_mean(word: str, known) -> str:
    """The hint that follows an unknown ``word``: the entry of ``known`` closest to it, or "" if none is close.

    Example:
        >>> did_you_mean("n_drawz", ["seed", "n_draws"])
        " (did you mean 'n_draws'?)"
    """
    close = difflib.get_close_matches(str(word), list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def shape_problems(data: Any) -> list[str]:
    """Problems with the profile's shape: a mapping with only :data:`TOP_KEYS`, ``notebooks`` a
    mapping of notebook names to mappings (or empty). Values are not looked at here."""
    if data is None:
        return ["the file is empty: it needs `notebooks:` with one entry per chapter"]
    if not isinstance(data, dict):
        return [
            f"the file holds {type(data).__name__} {_short(data)}, but a profile is a mapping "
            "with `description:` and `notebooks:`"
        ]
    problems = []
    for key in data:
        if key not in TOP_KEYS:
            problems.append(
                f"unknown top-level key {key!r}{did_you_mean(key, TOP_KEYS)}: a profile has only "
                + ", ".join(f"`{k}:` ({v})" for k, v in TOP_KEYS.items())
                + "; notebook parameters go under `notebooks: {<notebook>: {...}}`"
            )
    if "description" in data and not isinstance(data["description"], str):
        problems.append(f"description: expected one line of text, got {_short(data['description'])}")
    notebooks = data.get("notebooks")
    if "notebooks" not in data:
        if not any("notebooks" in p for p in problems):
            problems.append("no `notebooks:` key: add `notebooks:` with one entry per chapter")
    elif not isinstance(notebooks, dict):
        problems.append(
            f"notebooks: expected a mapping {{<notebook>: {{<parameter>: <value>}}}}, got "
            f"{type(notebooks).__name__} {_short(notebooks)}"
            + ("; write `theorem1: {}` rather than `- theorem1`" if isinstance(notebooks, list) else "")
        )
    else:
        for stem, params in notebooks.items():
            if params is not None and not isinstance(params, dict):
                problems.append(
                    f"notebooks.{stem}: expected a mapping of parameters such as "
                    f"`{stem}: {{seed: 1}}` (or `{stem}: {{}}`), got {type(params).__name__} {_short(params)}"
                )
    return problems


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- ranges --------------------------------------------------------------------------------------

#: The range of every notebook parameter, ``{"stem.name": rule}``, derived from the chapters'
#: parameters classes (:func:`apd.chapters.params.ranges`).
RANGES: dict[str, Rule] = params.ranges()


def rule_for(stem: str, name: str) -> Rule | None:
    """The range rule of parameter ``name`` of notebook ``stem`` (None: not declared).

    Example:
        >>> rule_for("factuality", "p_grid").words
        'a non-empty list of at most 100 items, each a number in (0, 1]'
    """
    return RANGES.get(f"{stem}.{name}")


def check_value(stem: str, name: str, value: Any) -> str | None:
    """None if ``value`` is in the range of ``stem.name`` (or is None, or has no rule), else one
    line naming the key, the value and the range."""
    rule = rule_for(stem, name)
    if value is None or rule is None or rule.ok(value):
        return None
    return f"{stem}.{name} = {_short(value)}: expected {rule.words}"
