"""The ranges a chapter parameter's value may take (:class:`Rule`), in a shared vocabulary: counts,
seeds, probabilities, known scales, families and devices. Every number a chapter takes has a ceiling
as well as a floor (:attr:`Rule.high`), and every list a maximum length, so that no value given to
a chapter can make its work unbounded. Standard library only: the book runner checks profiles with
them without importing torch.

Example:
    >>> TOP_K.words, TOP_K.ok(20), TOP_K.ok(0), TOP_K.ok(10**12)
    ('an integer in [1, 1000]', True, False, False)
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
    """A value's allowed range: ``words`` says it (after "expected"), ``ok`` tests a value, ``high``
    is the largest number it allows (each item's, for a list; None: it takes no number, or has no
    ceiling).

    Example:
        >>> Rule("an even integer", lambda v: v % 2 == 0).ok(4)
        True
    """

    words: str
    ok: Callable[[Any], bool]
    high: float | None = None


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


def integer(low: int, high: int) -> Rule:
    """An integer in ``[low, high]`` (a bool is not one).

    Example:
        >>> integer(1, 10).words, integer(1, 10).ok(10), integer(1, 10).ok(11), integer(1, 10).ok(True)
        ('an integer in [1, 10]', True, False, False)
    """
    return Rule(f"an integer in [{low}, {high}]", lambda v: _is_int(v) and low <= v <= high, high)


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

    return Rule(words, ok, high)


def one_of(*choices: str, lower: bool = False) -> Rule:
    """One of the strings ``choices`` (compared in lower case with ``lower``).

    Example:
        >>> one_of("a", "b", lower=True).ok("B")
        True
    """
    return Rule(
        "one of " + ", ".join(choices), lambda v: isinstance(v, str) and (v.lower() if lower else v) in choices
    )


def list_of(rule: Rule, nonempty: bool = True, most: int = 100) -> Rule:
    """A list (or tuple) of at most ``most`` items, each in ``rule``; non-empty unless ``nonempty=False``.

    Example:
        >>> list_of(SEED, most=3).words
        'a non-empty list of at most 3 items, each an integer in [0, 2147483647]'
        >>> list_of(SEED).ok([]), list_of(SEED, nonempty=False).ok([]), list_of(SEED, most=3).ok([0] * 4)
        (False, True, False)
    """
    return Rule(
        f"a {'non-empty ' if nonempty else ''}list of at most {most} items, each {rule.words}",
        lambda v: (
            isinstance(v, (list, tuple))
            and (len(v) > 0 or not nonempty)
            and len(v) <= most
            and all(rule.ok(x) for x in v)
        ),
        rule.high,
    )


ANY = Rule("anything", lambda v: True)
TEXT = Rule("a string", lambda v: isinstance(v, str))
NAME = Rule("a non-empty string", lambda v: isinstance(v, str) and v.strip() != "")
FLAG = Rule("true or false", lambda v: isinstance(v, bool))
COUNT = at_least(1)  # no ceiling: not for a chapter's parameter
SEED = integer(0, 2**31 - 1)  # a signed 32-bit integer: every random generator here takes it
SEEDS = list_of(SEED)  # one run per seed
PROBABILITY = number(0, 1)  # (0, 1]
TEMPERATURE = number(0, 1000)  # the profiles use at most 10
TOP_K = integer(1, 1000)  # the paper's k is 20
BATCH_SIZE = integer(1, 4096)  # the profiles use at most 128
NEW_TOKENS = integer(1, 4096)  # the profiles generate at most 128
ITEMS_PER_BUCKET = integer(1, 10**4)  # world QA items per frequency bucket; the profiles use at most 400
DEVICE_RULE = Rule("auto, cpu, mps, cuda or cuda:N", lambda v: isinstance(v, str) and bool(DEVICE.match(v)))
FAMILY = one_of(*FAMILIES, lower=True)
PICO_SCALE = one_of(*PICO_SCALES)
#: an operating point: "dev" (chosen on the dev people) or a temperature (fixed)
DEV_OR_POSITIVE = Rule(f'"dev" or {TEMPERATURE.words}', lambda v: v == "dev" or TEMPERATURE.ok(v), TEMPERATURE.high)
