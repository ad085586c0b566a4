"""The fields of a JSON row checked against the types its loader reads, one line per problem.

A loader names the type of each field it reads in one schema, and checks each row against it
before reading it; ``apd data check`` checks the files with the same schema, so the two cannot
drift. A schema is ``{field: type}``, where a type is ``str``, ``int``, ``float`` or a union such
as ``str | int`` (a JSON ``true`` is never an int), ``[type]`` (a list of items of that type),
``(type, type)`` (a list whose first items have those types: ``[title, id]``) or a nested
``{field: type}`` (an object). Other fields of the row are not checked. Standard library only.

    >>> schema = {"prompt": str, "evidence_info": [(str, str | int)]}
    >>> problems({"prompt": "Ada was born.", "evidence_info": [["Ada Lovelace", 7]]}, schema)
    []
    >>> problems({"prompt": 123, "evidence_info": "Ada"}, schema)
    ['prompt: expected str, got int (123)', "evidence_info: expected a list of [str, str or int], got str ('Ada')"]
"""

from __future__ import annotations

from types import UnionType
from typing import Any, get_args

#: The most problem lines a check lists for one file (``apd data check``).
MAX_LISTED = 10

_JSON_NAMES = {dict: "object", list: "list", str: "str", int: "int", float: "float", bool: "bool", type(None): "null"}


def _name(spec) -> str:
    """What ``spec`` asks for, in words."""
    if isinstance(spec, UnionType):
        return " or ".join(_name(t) for t in get_args(spec))
    if isinstance(spec, list):
        return f"a list of {_name(spec[0])}"
    if isinstance(spec, tuple):
        return "[" + ", ".join(_name(t) for t in spec) + "]"
    if isinstance(spec, dict):
        return "an object"
    return _JSON_NAMES.get(spec, spec.__name__)


def _got(value) -> str:
    """The JSON type of ``value``, and the value itself when it is short."""
    text = repr(value)
    return _JSON_NAMES.get(type(value), type(value).__name__) + (f" ({text})" if len(text) <= 40 else "")


def problems(value: Any, spec, field: str = "") -> list[str]:
    """One line per field of ``value`` that is missing or not of the type ``spec`` gives (see the
    module docstring): ``"field: expected str, got int (123)"``, nested fields named
    ``question.choices[1].text``; empty when ``value`` fits."""
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return [f"{field or 'the row'}: expected an object, got {_got(value)}"]
        out = []
        for key, sub in spec.items():
            name = f"{field}.{key}" if field else key
            out += problems(value[key], sub, name) if key in value else [f"{name}: missing"]
        return out
    if isinstance(spec, (list, tuple)):
        if not isinstance(value, list) or (isinstance(spec, tuple) and len(value) < len(spec)):
            return [f"{field}: expected {_name(spec)}, got {_got(value)}"]
        pairs = zip(value, spec) if isinstance(spec, tuple) else ((item, spec[0]) for item in value)
        return [line for i, (item, sub) in enumerate(pairs) for line in problems(item, sub, f"{field}[{i}]")]
    types = get_args(spec) or (spec,)
    if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
        return []
    return [f"{field}: expected {_name(spec)}, got {_got(value)}"]
