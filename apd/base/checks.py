"""Argument checks shared by the public API: numbers that are numbers, counts that are counts,
arrays of numbers, logits without NaN.

A string such as ``"0.8"`` where a number belongs is refused with a message naming the argument
(never converted silently, never left to fail later in a comparison).
"""

from __future__ import annotations

import math
import numbers

import numpy as np


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


def count(name: str, value, minimum: int = 1, hint: str = "", maximum: int | None = None, *, strict=False) -> int:
    """``value`` as an int >= ``minimum`` (and <= ``maximum``, if given): a TypeError for what is not a
    number, a ValueError for a number that is not a whole number or out of range (``20.0`` is 20;
    with ``strict``, a TypeError: for a config field that enters a cache key as given).

    Example:
        >>> count("vocab_size", 50)
        50
        >>> count("vocab_size", 0)
        Traceback (most recent call last):
        ...
        ValueError: vocab_size must be an integer >= 1, got 0.
        >>> count("vocab_size", 60, maximum=50)
        Traceback (most recent call last):
        ...
        ValueError: vocab_size must be an integer in [1, 50], got 60.
    """
    x = number(name, value, hint)
    need = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    tail = f"; {hint}" if hint else ""
    if strict and not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer {need}, got the {type(value).__name__} {value!r}{tail}.")
    if x != x or x in (math.inf, -math.inf) or int(x) != x or x < minimum or (maximum is not None and x > maximum):
        raise ValueError(f"{name} must be an integer {need}, got {value!r}{tail}.")
    return int(x)


def bounded(
    name: str,
    value,
    minimum: float | None = None,
    *,
    above: float | None = None,
    maximum: float | None = None,
    below: float | None = None,
    hint: str = "",
) -> float:
    """``value`` as a finite float with ``minimum <= value`` (or ``above < value``) and ``value <= maximum``
    (or ``value < below``): a TypeError for what is not a number, a ValueError for NaN, an infinity or a
    value out of range.

    Example:
        >>> bounded("lambda2", 10, 0)
        10.0
        >>> bounded("lambda2", -1, 0, hint="the paper uses 10")
        Traceback (most recent call last):
        ...
        ValueError: lambda2 must be a finite number >= 0, got -1; the paper uses 10.
    """
    x = number(name, value, hint)
    if (
        math.isfinite(x)
        and (minimum is None or x >= minimum)
        and (above is None or x > above)
        and (maximum is None or x <= maximum)
        and (below is None or x < below)
    ):
        return x
    low = f"[{minimum:g}" if minimum is not None else f"({above:g}" if above is not None else None
    high = f"{maximum:g}]" if maximum is not None else f"{below:g})" if below is not None else None
    if low and high:
        need = f" in {low}, {high}"
    elif low:
        need = f" {'>=' if low[0] == '[' else '>'} {low[1:]}"
    else:
        need = f" {'<=' if high[-1] == ']' else '<'} {high[:-1]}" if high else ""
    raise ValueError(f"{name} must be a finite number{need}, got {value!r}{'; ' + hint if hint else ''}.")


def flag(name: str, value, hint: str = "") -> bool:
    """``value`` when it is a bool (numpy's too), else a TypeError naming ``name``: ``"False"``, 0 and
    None are refused (a non-empty string is true, so ``"False"`` would silently mean True).

    Example:
        >>> flag("flip", True)
        True
        >>> flag("flip", "False")
        Traceback (most recent call last):
        ...
        TypeError: flip must be True or False, got the str 'False'.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(
        f"{name} must be True or False, got the {type(value).__name__} {value!r}{'; ' + hint if hint else ''}."
    )


def sequence(name: str, value, length: int | None = None, hint: str = "") -> tuple:
    """``value``'s items as a tuple (of ``length`` items, if given): a TypeError naming ``name`` for a
    string (which would split into characters) or what is not iterable, a ValueError for another length.

    Example:
        >>> sequence("betas", [0.9, 0.95], 2)
        (0.9, 0.95)
        >>> sequence("betas", "0.9, 0.95", 2)
        Traceback (most recent call last):
        ...
        TypeError: betas must be a sequence of 2 items, got the str '0.9, 0.95'.
    """
    need = f"a sequence of {length} items" if length is not None else "a sequence"
    try:
        items = None if isinstance(value, (str, bytes)) else tuple(value)
    except TypeError:
        items = None
    if items is None:
        raise TypeError(
            f"{name} must be {need}, got the {type(value).__name__} {value!r}{'; ' + hint if hint else ''}."
        )
    if length is not None and len(items) != length:
        raise ValueError(f"{name} must be {need}, got {len(items)}: {value!r}{'; ' + hint if hint else ''}.")
    return items


def numbers_of(name: str, value, hint: str = "") -> np.ndarray:
    """The values of a number, a sequence, a numpy array or a tensor as a float64 numpy array, for
    checks (never for results): a TypeError naming ``name`` for strings, bools, None or objects.

    Example:
        >>> numbers_of("T", [2.0, 3])
        array([2., 3.])
        >>> numbers_of("T", "2.0")
        Traceback (most recent call last):
        ...
        TypeError: T must hold numbers, got the str '2.0'; pass 2.0 without quotes.
    """
    if hasattr(value, "detach"):  # a tensor (torch is not imported here)
        if value.dtype.is_complex or str(value.dtype) == "torch.bool":
            raise TypeError(f"{name} must hold real numbers, got a {value.dtype} tensor{'; ' + hint if hint else ''}.")
        return value.detach().cpu().double().numpy()
    if isinstance(value, (str, bytes)) or value is None or isinstance(value, bool):
        quoted = f"; pass {value} without quotes" if isinstance(value, str) else ""
        raise TypeError(
            f"{name} must hold numbers, got the {type(value).__name__} {value!r}{quoted}{'; ' + hint if hint else ''}."
        )
    try:
        values = np.asarray(value)
    except (ValueError, TypeError) as err:  # ragged nesting
        raise TypeError(
            f"{name} must hold numbers, got {type(value).__name__}: {err}{'; ' + hint if hint else ''}."
        ) from None
    if values.dtype.kind not in "iuf":
        raise TypeError(
            f"{name} must hold real numbers, got {values.dtype} values such as {values.ravel()[:1].tolist()}"
            f"{'; ' + hint if hint else ''}."
        )
    return values.astype(np.float64)


def logits(name: str, x, hint: str = "") -> None:
    """Raise unless ``x`` (a numpy array or torch tensor) holds real numbers with no NaN and no +inf
    (-inf, a token ruled out, is fine): a TypeError for bool, complex or other dtypes, a ValueError
    naming ``name`` otherwise. Costs one reduction over ``x`` (a ``max``, which a NaN propagates to).

    Example:
        >>> logits("elm", np.array([0.0, -np.inf]))
        >>> logits("elm", np.array([0.0, np.nan]))
        Traceback (most recent call last):
        ...
        ValueError: elm holds NaN or +inf (1 of 2 values, the first at index (1,)); a logit must be finite, or -inf for a token ruled out.
    """
    if hasattr(x, "detach"):  # a tensor (torch is not imported here)
        kind = "f" if x.is_floating_point() else "c" if x.is_complex() else "b" if "bool" in str(x.dtype) else "i"
        size = x.numel()
    else:
        kind, size = x.dtype.kind, x.size
    if kind not in "iuf":
        raise TypeError(f"{name} must hold real-valued logits, got dtype {x.dtype}{'; ' + hint if hint else ''}.")
    if kind != "f" or size == 0:
        return
    top = float(x.max())
    if top == top and top != math.inf:
        return
    bad = (x != x) | (x == math.inf)
    first = tuple(int(i) for i in (bad.nonzero()[0] if hasattr(x, "detach") else np.argwhere(bad)[0]))
    raise ValueError(
        f"{name} holds NaN or +inf ({int(bad.sum())} of {size} values, the first at index {first}); a logit "
        f"must be finite, or -inf for a token ruled out{'; ' + hint if hint else ''}."
    )
