"""How the book prints a number, in one place: the prose's glued values and the tables' cells.

- a count (an integer, or a float holding a whole number) prints as an integer with thousands
  separators, ``5,000`` (:func:`format_count`);
- a value with a standard error prints to the precision the error supports: two significant figures
  of the error, the value rounded to the same decimal place, ``+0.0177 ± 0.0058`` (:func:`format_pm`);
- a value without one prints to three significant figures, ``0.355``, ``28.4``, ``8,120``
  (:func:`format_sig`; :func:`format_number` also drops trailing zeros and prints whole floats as
  integers, the default for a value glued without a format);
- a tiny value (``|x| < 1e-4``) or a huge non-integer one (``|x| >= 1e6``) prints in scientific notation,
  ``2.7 × 10⁻⁹`` (:func:`format_sci`);
- no function here prints a run of zeros after the decimal point (``0.00000000``) or decimals on an
  integer (``5000.000``).

:func:`glue_literal` is what a value glued without a format becomes for MyST-NB: a number literal
without round-off tails (``56640.00000000002`` -> ``56640``), so that a format the prose applies
(``{glue:text}`name:,.0f```) still works.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

from apd.core.stats import Z_TEST, critical, interval

#: Below this magnitude a number prints in scientific notation.
TINY = 1e-4
#: From this magnitude a number that is not an integer prints in scientific notation.
HUGE = 1e6

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_TRAILING = re.compile(r"(\.\d*?)0+(?=$|\D)")


def _real(value: Any, what: str = "value") -> float:
    """``value`` as a finite float; a bool, a non-number, NaN or an infinity raises ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{what} must be a real number, got {value!r} ({type(value).__name__})")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{what} is {x}; print a missing value as text (e.g. 'n/a') before formatting")
    return x


def _whole(x: float) -> bool:
    """Whether ``x`` is a whole number to round-off (a few units in the last place, as
    ``56640.00000000002``; not ``6443901392.98``), below 1e15."""
    nearest = round(x)
    return abs(x) < 1e15 and (x == nearest or (nearest != 0 and abs(x - nearest) <= 16 * math.ulp(x)))


def _sign(x: float, signed: bool) -> str:
    return "+" if signed and x >= 0 else ""


def power_of_ten(exponent: int) -> str:
    """``10`` with ``exponent`` as a superscript.

    Example:
        >>> power_of_ten(-9), power_of_ten(12)
        ('10⁻⁹', '10¹²')
    """
    return "10" + str(int(exponent)).translate(_SUPERSCRIPT)


def _mantissa_exponent(x: float, sig: int) -> tuple[str, int]:
    """``x`` rounded to ``sig`` significant figures, as (mantissa text, exponent)."""
    mantissa, exponent = f"{x:.{sig - 1}e}".split("e")
    return mantissa, int(exponent)


def format_sci(value: float, sig: int = 2, signed: bool = False) -> str:
    """``value`` in scientific notation with ``sig`` significant figures.

    Example:
        >>> format_sci(-2.7e-9), format_sci(4.87e-8, signed=True), format_sci(6443901392.98, sig=3)
        ('-2.7 × 10⁻⁹', '+4.9 × 10⁻⁸', '6.44 × 10⁹')
    """
    x = _real(value)
    if sig < 1:
        raise ValueError(f"sig must be at least 1, got {sig}")
    if x == 0:
        return _sign(x, signed) + "0"
    mantissa, exponent = _mantissa_exponent(x, sig)
    return f"{_sign(x, signed)}{mantissa} × {power_of_ten(exponent)}"


def format_count(value: Any) -> str:
    """A count: an integer (or a float holding a whole number) with thousands separators.

    Example:
        >>> format_count(5000), format_count(5000.0), format_count(20_000_000), format_count(-12)
        ('5,000', '5,000', '20,000,000', '-12')
        >>> format_count(2.5)
        Traceback (most recent call last):
        ...
        ValueError: a count must be a whole number, got 2.5: format it with format_sig or format_number
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return f"{int(value):,}"
    x = _real(value, "a count")
    if x != round(x):
        raise ValueError(f"a count must be a whole number, got {value!r}: format it with format_sig or format_number")
    return f"{int(round(x)):,}"


def format_sig(value: float, sig: int = 3, signed: bool = False) -> str:
    """``value`` to ``sig`` significant figures, trailing zeros kept (``0.500``), thousands
    separators from 1,000; scientific notation below ``TINY`` and, for a non-integer, from ``HUGE``.

    Example:
        >>> format_sig(0.35512), format_sig(28.4173), format_sig(8122.4), format_sig(0.5), format_sig(0.09996)
        ('0.355', '28.4', '8,120', '0.500', '0.100')
        >>> format_sig(2.7e-9), format_sig(6443901392.98), format_sig(0.0123, signed=True), format_sig(0)
        ('2.70 × 10⁻⁹', '6.44 × 10⁹', '+0.0123', '0')
    """
    x = _real(value)
    if sig < 1:
        raise ValueError(f"sig must be at least 1, got {sig}")
    if x == 0:
        return "0"
    if isinstance(value, numbers.Integral):
        return _sign(x, signed) + format_count(value)
    mantissa, exponent = _mantissa_exponent(x, sig)
    rounded = float(f"{mantissa}e{exponent}")
    if abs(rounded) < TINY or abs(rounded) >= HUGE:
        return format_sci(x, sig, signed)
    decimals = max(0, sig - 1 - exponent)
    return f"{rounded:{'+' if signed else ''},.{decimals}f}"


def _strip_zeros(text: str) -> str:
    """``text`` without trailing zeros after a decimal point (``0.500`` -> ``0.5``, ``2.0`` -> ``2``)."""
    return _TRAILING.sub(lambda m: m.group(1).rstrip("."), text)


def format_number(value: Any, sig: int = 3, signed: bool = False) -> str:
    """A number with no format given: integers and whole floats (to round-off) as counts
    (:func:`format_count`), other floats to ``sig`` significant figures without trailing zeros (:func:`format_sig`).

    Example:
        >>> format_number(2.0), format_number(5000.0), format_number(0.30000000000000004), format_number(0.001)
        ('2', '5,000', '0.3', '0.001')
        >>> format_number(2.191194474697113), format_number(-2.7e-9), format_number(19431.941), format_number(1)
        ('2.19', '-2.7 × 10⁻⁹', '19,400', '1')
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return _sign(value, signed) + format_count(value)
    x = _real(value)
    if _whole(x):
        return _sign(x, signed) + format_count(round(x))
    return _strip_zeros(format_sig(x, sig, signed))


def pm_parts(value: float, se: float, signed: bool = True, sig: int = 2) -> tuple[str, str]:
    """``value`` and ``se`` as two texts at the precision ``se`` supports (:func:`format_pm`'s
    parts, e.g. a table's value and se columns); both with the same power of ten when ``se`` is tiny.

    Example:
        >>> pm_parts(0.017681, 0.005753), pm_parts(4.87e-8, 1.6e-8, signed=False)
        (('+0.0177', '0.0058'), ('4.9 × 10⁻⁸', '1.6 × 10⁻⁸'))
    """
    v, s = _real(value), _real(se, "the standard error")
    if s < 0:
        raise ValueError(f"a standard error cannot be negative, got {se}")
    if s == 0:
        return format_sig(v, 3, signed), "0"
    _, se_exponent = _mantissa_exponent(s, sig)
    if 10.0**se_exponent < TINY:
        exponent = max(_mantissa_exponent(max(abs(v), s), sig)[1], se_exponent)
        d = sig - 1 - (se_exponent - exponent)
        if d > sig + 2:  # a value far larger than its tiny error: the value, and the error apart
            return format_sig(v, 3, signed), format_sci(s, sig)
        mv, ms = v / 10.0**exponent, s / 10.0**exponent
        mv = 0.0 if round(mv, d) == 0 else mv
        power = power_of_ten(exponent)
        return f"{mv:{'+' if signed else ''}.{d}f} × {power}", f"{ms:.{d}f} × {power}"
    d = sig - 1 - se_exponent
    rv, rs = round(v, d), round(s, d)
    rv = 0.0 if rv == 0 else rv  # no "-0.0000"
    places = max(d, 0)
    return f"{rv:{'+' if signed else ''},.{places}f}", f"{rs:,.{places}f}"


def format_pm(value: float, se: float, signed: bool = True, sig: int = 2) -> str:
    """``value ± se``: ``se`` to ``sig`` significant figures and ``value`` to the same decimal
    place; with a common power of ten when ``se`` is tiny (``< 1e-4``), or, when ``value`` is far
    larger than such an ``se``, ``value`` to three significant figures and ``se`` in scientific
    notation; ``value`` to three significant figures and ``± 0`` when ``se`` is zero.

    Example:
        >>> format_pm(0.017681, 0.005753), format_pm(0.0031, 0.0013), format_pm(1234.5, 370.0)
        ('+0.0177 ± 0.0058', '+0.0031 ± 0.0013', '+1,230 ± 370')
        >>> format_pm(-2.7e-9, 1.04e-9), format_pm(4.87e-8, 1.6e-8), format_pm(0.1, 0.0), format_pm(-2e-9, 0.003)
        ('(-2.7 ± 1.0) × 10⁻⁹', '(+4.9 ± 1.6) × 10⁻⁸', '+0.100 ± 0', '+0.0000 ± 0.0030')
        >>> format_pm(0.5, 2e-9)
        '+0.500 ± 2.0 × 10⁻⁹'
    """
    a, b = pm_parts(value, se, signed, sig)
    if " × " in a and " × " in b:
        (ma, pa), (mb, pb) = a.split(" × "), b.split(" × ")
        if pa == pb:  # one power of ten for both
            return f"({ma} ± {mb}) × {pa}"
    return f"{a} ± {b}"


def interval_text(d: float, se: float, n: int | None = None) -> str:
    """The 95% interval of a difference ``d`` with standard error ``se`` as ``[low, high]``, the
    bounds to the decimal place ``se`` supports (:func:`pm_parts`): Student's t with ``n`` - 1
    degrees of freedom over ``n`` clusters (:func:`apd.core.stats.critical`), the normal 1.96
    without ``n``.

    Example:
        >>> interval_text(0.0059, 0.0058, 100), interval_text(0.0059, 0.0058)
        ('[-0.0056, 0.0174]', '[-0.0055, 0.0173]')
    """
    lo, hi = interval(d, se, Z_TEST if n is None else critical(n))
    return "[{}, {}]".format(*(pm_parts(x, se, signed=False)[0] for x in (lo, hi)))


def glue_literal(value: Any) -> Any:
    """What a value glued without a format becomes for MyST-NB: a float holding a whole number (to
    round-off) becomes an int, any other float loses its round-off tail (12 significant figures);
    the rest is returned as it is. A format the prose applies still works on the result.

    Example:
        >>> glue_literal(2.0), glue_literal(56640.00000000002), glue_literal(0.30000000000000004), glue_literal("a")
        (2, 56640, 0.3, 'a')
    """
    if isinstance(value, bool) or not isinstance(value, float) or not math.isfinite(value):
        return value
    if _whole(value):
        return int(round(value))
    return float(f"{value:.12g}")
