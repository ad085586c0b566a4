"""The ranges a chapter parameter's value may take (:class:`Rule`), in a shared vocabulary: counts,
seeds, probabilities, known scales, families and devices. Standard library only: the book runner
checks profiles with them without importing torch.

Example:
    >>> COUNT.words, COUNT.ok(3), COUNT.ok(0)
    ('an integer >= 1', True, False)
    >>> list_of(PROBABILITY).ok([0.5, 1.5])
    False
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

#: Known values, copied here so that validation needs no torch (their sources import it); tests
#: compare them with apd.family.registry.SCALES, apd.family.registry.FAMILIES and
#: apd.evaluation.known_answer.SIZES.
PICO_SCALES = ("smoke", "default", "gpu", "default-200", "exact-truth")
FAMILIES = ("pico", "pythia", "opt", "qwen1.5", "qwen")
KNOWN_ANSWER_SIZES = ("smoke", "default", "full")
DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


@dataclass(frozen=True)
class Rule:
    """A value's allowed range: ``words`` says it (after "expected"), ``ok`` tests a value.

    Example:
        >>> Rule("an even integer", lambda v: v % 2 == 0).ok(4)
        True
    """

    words: str
    ok: Callable[[Any], bool]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def at_least(n: int) -> Rule:
    """An integer >= ``n`` (a bool is not one).

    Example:
        >>> at_least(2).words, at_least(2).ok(2), at_least(2).ok(True)
        ('an integer >= 2', True, False)
    """
    return Rule(f"an integer >= {n}", lambda v: _is_int(v) and v >= n)


def number(
    low: float | None = None, high: float | None = None, low_open: bool = True, high_open: bool = False
) -> Rule:
    """A finite number in the interval ``(low, high]`` by default (the openness is adjustable).

    Example:
        >>> number(0, 1).words, number(0, 1).ok(1), number(0, 1).ok(0)
        ('a number in (0, 1]', True, False)
    """
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    words = (
        "a finite number"
        if low is None and high is None
        else f"a number > {low}"
        if high is None and low_open
        else f"a number >= {low}"
        if high is None
        else f"a number in {lo}{low}, {high}{hi}"
    )

    def ok(v):
        if not _is_num(v):
            return False
        if low is not None and (v <= low if low_open else v < low):
            return False
        return high is None or (v < high if high_open else v <= high)

    return Rule(words, ok)


def one_of(*choices: str, lower: bool = False) -> Rule:
    """One of the strings ``choices`` (compared in lower case with ``lower``).

    Example:
        >>> one_of("a", "b", lower=True).ok("B")
        True
    """
    return Rule(
        "one of " + ", ".join(choices), lambda v: isinstance(v, str) and (v.lower() if lower else v) in choices
    )


def list_of(rule: Rule, nonempty: bool = True) -> Rule:
    """A list (or tuple) whose every item is in ``rule``; non-empty unless ``nonempty=False``.

    Example:
        >>> list_of(COUNT).words, list_of(COUNT).ok([]), list_of(COUNT, nonempty=False).ok([])
        ('a non-empty list, each an integer >= 1', False, True)
    """
    return Rule(
        f"a {'non-empty ' if nonempty else ''}list, each {rule.words}",
        lambda v: isinstance(v, (list, tuple)) and (len(v) > 0 or not nonempty) and all(rule.ok(x) for x in v),
    )


ANY = Rule("anything", lambda v: True)
TEXT = Rule("a string", lambda v: isinstance(v, str))
NAME = Rule("a non-empty string", lambda v: isinstance(v, str) and v.strip() != "")
FLAG = Rule("true or false", lambda v: isinstance(v, bool))
INTEGER = Rule("an integer", _is_int)
COUNT = at_least(1)
COUNT0 = at_least(0)  # 0 skips a section
SEED = at_least(0)
POSITIVE = number(0)
NONNEG = number(0, low_open=False)
PROBABILITY = number(0, 1)  # (0, 1]
DEVICE_RULE = Rule("auto, cpu, mps, cuda or cuda:N", lambda v: isinstance(v, str) and bool(DEVICE.match(v)))
FAMILY = one_of(*FAMILIES, lower=True)
PICO_SCALE = one_of(*PICO_SCALES)
#: an operating point: "dev" (chosen on the dev people) or a number > 0 (fixed)
DEV_OR_POSITIVE = Rule('"dev" or a number > 0', lambda v: v == "dev" or POSITIVE.ok(v))
