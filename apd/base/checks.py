"""Argument checks shared by the public API: numbers that are numbers, counts that are counts.

A string such as ``"0.8"`` where a number belongs is refused with a message naming the argument
(never converted silently, never left to fail later in a comparison).
"""

from __future__ import annotations

import numbers


def number(name: str, value, hint: str = "") -> float:
    """``value`` as a float, or a TypeError naming ``name`` when it is not a real number (a string,
    a bool, None, a tensor with more than one element).

    Example:
        >>> number("p", 0.8)
        0.8
        >>> number("p", "0.8")
        Traceback (most recent call last):
        ...
        TypeError: p must be a number, got the str '0.8'; pass 0.8 without quotes.
    """
    if hasattr(value, "numel") and value.numel() == 1:  # a one-element tensor
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        quoted = f"; pass {value} without quotes" if isinstance(value, str) else ""
        raise TypeError(
            f"{name} must be a number, got the {type(value).__name__} {value!r}{quoted}{'; ' + hint if hint else ''}."
        )
    return float(value)


def count(name: str, value, minimum: int = 1, hint: str = "") -> int:
    """``value`` as an int >= ``minimum``: a TypeError for what is not a number, a ValueError for a
    number that is not a whole number or is below ``minimum`` (``20.0`` is accepted as 20).

    Example:
        >>> count("vocab_size", 50)
        50
        >>> count("vocab_size", 0)
        Traceback (most recent call last):
        ...
        ValueError: vocab_size must be an integer >= 1, got 0.
    """
    x = number(name, value, hint)
    if x != x or x in (float("inf"), float("-inf")) or int(x) != x or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}{'; ' + hint if hint else ''}.")
    return int(x)
