"""The results keys the paper's claims read from a chapter, and those a chapter's headline writes,
for the chapter modules' tests."""

import dataclasses

from apd.report import claims


def keys_read(stem: str) -> set[str]:
    """The JSON keys (not table cells) that ``apd.report.claims`` reads from chapter ``stem``."""
    return claims.keys_read(stem)


def result_keys(headline_type, names=()) -> set[str]:
    """The results JSON keys a headline dataclass writes: its field names, and ``<field>_<name>``
    for every ``names`` of a :func:`apd.chapters.gluing.per_name` field."""
    keys = set()
    for f in dataclasses.fields(headline_type):
        keys |= {f"{f.name}_{n}" for n in names} if f.metadata.get("per_name") else {f.name}
    return keys
