"""One way to show a table on a page: readable, padded, numbers formatted by what they are.

Every chapter displays its tables through :func:`show` instead of ad-hoc ``df.style`` calls::

    apd.report.tables.show(df, caption="World QA, test half", digits=3)

- cells have padding and numbers are right-aligned, so neighbouring numbers never run together;
- integer columns (and float columns holding only whole numbers below a billion, e.g. counts that
  became floats next to a missing value) print as integers with thousands separators, ``5,000`` and not ``5000.000``;
- other float columns print with ``digits`` decimals (fewer when every value needs fewer, as in a
  grid 1.1, 1.5, 2.0), values from 1,000 up as integers (``3,861``, not ``3860.800``), tiny
  (round-off) values in scientific notation, so ``1.5e-14`` prints as ``1.50 × 10⁻¹⁴`` and not
  ``0.000``, and with three significant digits in columns of large values (sizes); the rules are
  those of :mod:`apd.report.numbers`;
- a column of numbers of mixed types (counts beside scores, object dtype) prints its integers as
  counts and its floats as above;
- numeric row and column labels print as numbers (``1.1``, not ``1.100000``);
- missing values print as an em dash;
- ``formats`` overrides the format of given columns (``{"gain": "{:+.3f}"}``);
- a table of more than :data:`MAX_COLUMNS` columns (row labels included) is folded: the page shows
  a line saying what it holds, and the table opens on a click (its CSV is under ``results/``).

:func:`compare_word` words a comparison of two numbers for the prose ("lower than", ...), and
:func:`compare_flags` gives its outcome as booleans for the prose's ``needs:`` tags;
:func:`plus_minus` prints a difference with its standard error, to the precision the error supports
(:func:`apd.report.numbers.format_pm`).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from apd.report.numbers import HUGE, format_count, format_pm, format_sci, format_sig, pm_parts

#: What a missing value prints as in every table.
MISSING = "\u2014"

#: Cell padding and alignment of every table :func:`show` returns.
TABLE_CSS = [
    {"selector": "", "props": [("border-collapse", "collapse"), ("margin", "0.5em 0 1em 0"), ("font-size", "0.9em")]},
    {
        "selector": "th, td",
        "props": [("padding", "0.3em 0.75em"), ("border-bottom", "1px solid #d8dde6"), ("vertical-align", "top")],
    },
    # long headers and row labels wrap, so that a table of a few columns fits the text column
    {
        "selector": "thead th",
        "props": [
            ("border-bottom", "2px solid #8f9bb3"),
            ("text-align", "left"),
            ("white-space", "normal"),
            ("max-width", "10em"),
        ],
    },
    {
        "selector": "th.row_heading",
        "props": [("text-align", "left"), ("white-space", "normal"), ("min-width", "8em"), ("max-width", "18em")],
    },
    {"selector": "th.index_name", "props": [("text-align", "left")]},
    {
        "selector": "caption",
        "props": [("caption-side", "top"), ("text-align", "left"), ("font-weight", "bold"), ("padding", "0.3em 0")],
    },
]


#: The most columns (row labels included) a table shows in the text column; wider ones fold.
MAX_COLUMNS = 7


class Folded:
    """A table too wide for the text column, folded into ``<details>``: the summary line names it
    and its size, the table opens on a click. Behaves as its ``styler`` otherwise."""

    def __init__(self, styler, summary: str):
        self.styler, self.summary = styler, summary

    def to_html(self, **kwargs) -> str:
        import html

        return (
            f'<details class="apd-wide-table"><summary>{html.escape(self.summary)}</summary>'
            f'<div class="apd-scroll">{self.styler.to_html(**kwargs)}</div></details>'
        )  # opened, the table scrolls sideways inside the column (book/_static/apd.css)

    def _repr_html_(self) -> str:
        return self.to_html()

    def __repr__(self) -> str:
        return f"<{self.summary}>"

    def __getattr__(self, name):
        if name == "styler":
            raise AttributeError(name)
        return getattr(self.styler, name)


def _is_missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    try:
        return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isnan(value)
    except TypeError:  # pragma: no cover
        return False


def format_number(value: Any, digits: int = 3) -> str:
    """One number as a table prints it (the rules of :mod:`apd.report.numbers`): integers, whole
    floats from 10 up and any float from 1,000 up as integers with separators (``5,000``,
    ``3,861``); other floats with ``digits`` decimals; scientific notation below ``10**-digits``
    or from a million up; :data:`MISSING` for None/NaN.

    >>> format_number(5000), format_number(5000.0), format_number(0.35512), format_number(3860.8), format_number(1.5e-14)
    ('5,000', '5,000', '0.355', '3,861', '1.50 × 10⁻¹⁴')
    >>> format_number(2.4e11), format_number(-0.0001234, digits=3), format_number(True), format_number(float("nan"))
    ('2.40 × 10¹¹', '-1.23 × 10⁻⁴', 'True', '—')
    """
    if _is_missing(value):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return format_count(value)
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v == 0:
            return f"{0:.{digits}f}"
        if abs(v) < 10**-digits or abs(v) >= HUGE:
            return format_sci(v, 3)
        if abs(v) >= 1000 or (abs(v) >= 10 and v == round(v)):
            return format_count(round(v))
        return f"{v:.{digits}f}"
    return str(value)


def yes_no(flag: Any, missing: Any = MISSING) -> Any:
    """A flag as a table cell a reader reads: "yes" or "no", ``missing`` for None/NaN.

    >>> yes_no(True), yes_no(0), yes_no(1.0), yes_no(float("nan")), yes_no(None, missing="seeds missing")
    ('yes', 'no', 'yes', '—', 'seeds missing')
    """
    return missing if _is_missing(flag) else ("yes" if bool(flag) else "no")


def format_label(value: Any) -> str:
    """A row or column label: numbers as short as they can be (``1.1``, ``0.25``, ``5``), the rest
    as text.

    >>> format_label(1.1), format_label(2.0), format_label("top-p k20"), format_label(None)
    ('1.1', '2', 'top-p k20', '—')
    """
    if _is_missing(value):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Real):
        return f"{float(value):g}"
    return str(value)


def _column_kind(series: pd.Series) -> str:
    """'int', 'float', 'bool' or 'other' (text, mixed) for a column."""
    if pd.api.types.is_bool_dtype(series):
        return "bool"
    if pd.api.types.is_integer_dtype(series):
        return "int"
    if pd.api.types.is_float_dtype(series):
        finite = series.dropna()
        finite = finite[np.isfinite(finite.to_numpy(dtype=float))]
        if len(finite) and (finite == finite.round()).all() and finite.abs().max() < 1e9:
            return "int"
        return "float"
    return "other"


def _numbers_only(series: pd.Series) -> bool:
    """Whether every non-missing value of a column is a number (not a bool), and one is there."""
    values = [v for v in series if not _is_missing(v)]
    return bool(values) and all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in values)


def _decimals(series: pd.Series, digits: int) -> int:
    """The fewest decimals (1 to ``digits``) that print every value of a float column exactly, so
    a grid such as 1.1, 1.5, 2.0 prints as such and measured values get ``digits``."""
    values = series.dropna().to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    for d in range(1, digits):
        if np.allclose(values, np.round(values, d), rtol=0, atol=1e-12):
            return d
    return digits


def _large(series: pd.Series) -> bool:
    """Whether a float column holds values of 100,000 or more (printed as ``9.69e+05``)."""
    values = series.dropna().to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    return bool(len(values)) and float(np.abs(values).max()) >= 1e5


def _formatter(kind: str, digits: int) -> Callable[[Any], str]:
    if kind == "int":
        return lambda v: (
            MISSING
            if _is_missing(v)
            else (f"{int(round(float(v))):,}" if isinstance(v, numbers.Real) and not isinstance(v, bool) else str(v))
        )
    if kind == "float":
        return lambda v: format_number(v, digits)
    return lambda v: (
        MISSING
        if _is_missing(v)
        else (
            format_number(v, digits) if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) else str(v)
        )
    )


def show(
    df: pd.DataFrame | pd.Series,
    caption: str | None = None,
    digits: int = 3,
    *,
    formats: dict[Any, str | Callable] | None = None,
    index: bool = True,
    wrap: Iterable = (),
    percent: Iterable = (),
    fold: bool | None = None,
    errors: dict | None = None,
):
    """``df`` as a styled table for a page (a pandas ``Styler``; the last expression of a cell, or
    ``display(show(df))``). See the module docstring for the formats.

    ``caption``: a title above the table. ``digits``: decimals of float columns. ``formats``:
    ``{column: format string or function}`` for columns that need another format. ``index``: show
    the row labels (``False`` for a plain 0, 1, 2 ... index). ``wrap``: text columns whose long
    values wrap (at least 18em wide). ``percent``: fraction columns shown as percentages.
    ``fold``: fold the table (:class:`Folded`); by default when it has more than
    :data:`MAX_COLUMNS` columns, row labels included. ``errors``: ``{column: its standard-error
    column}``; both print, row by row, to the precision the standard error supports
    (:func:`apd.report.numbers.pm_parts`), in percent when the column is in ``percent``.

    Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"steps": [5000.0, 12.0], "KL": [0.35512, None]}, index=[1.1, 2.0])
    >>> html = show(df, caption="demo").to_html()
    >>> "5,000" in html and "0.355" in html and ">1.1<" in html and "—" in html and "padding" in html
    True
    """
    if isinstance(df, pd.Series):
        df = df.to_frame()
    formats = dict(formats or {})
    percent = set(percent)
    aligned = []
    for col, se_col in (errors or {}).items():
        if col not in df.columns or se_col not in df.columns:
            continue
        df = df.copy() if not aligned else df
        scale = 100.0 if col in percent else 1.0
        unit = "%" if scale != 1 else ""
        pairs = [_pm_cells(v, e, scale, digits) for v, e in zip(df[col], df[se_col])]
        df[col] = [MISSING if a is None else a + unit for a, _ in pairs]
        df[se_col] = [MISSING if b is None else b + unit for _, b in pairs]
        percent -= {col, se_col}
        aligned += [col, se_col]
    col_formats: dict[Any, Callable[[Any], str]] = {}
    for col in df.columns:
        if col in formats:
            f = formats[col]
            col_formats[col] = (lambda v, f=f: MISSING if _is_missing(v) else f.format(v)) if isinstance(f, str) else f
        elif col in percent:
            col_formats[col] = lambda v: MISSING if _is_missing(v) else f"{100 * float(v):.{max(0, digits - 2)}f}%"
        else:
            kind = _column_kind(df[col])
            mixed = kind == "other" and _numbers_only(df[col])  # counts beside scores (object dtype)
            if mixed:
                scores = pd.Series([float(v) for v in df[col] if not _is_missing(v)], dtype=float)
                col_formats[col] = _formatter(kind, _decimals(scores[scores != scores.round()], digits))
            elif kind == "float" and _large(df[col]):  # sizes: three significant figures
                col_formats[col] = lambda v: MISSING if _is_missing(v) else format_sig(float(v), 3)
            else:
                col_formats[col] = _formatter(kind, _decimals(df[col], digits) if kind == "float" else digits)
    if not df.columns.is_unique:  # Styler.format needs unique labels: format by position instead
        df = df.copy()
        labels = list(df.columns)
        df.columns = range(len(labels))
        col_formats = {i: col_formats[labels[i]] for i in range(len(labels))}
        sty = df.style.format(col_formats)
        sty = sty.format_index(lambda i: format_label(labels[i]), axis=1)
    else:
        sty = df.style.format(col_formats)
        sty = sty.format_index(format_label, axis=1)
    sty = sty.format_index(format_label, axis=0)
    sty = sty.set_table_styles(TABLE_CSS).set_table_attributes('class="dataframe apd-table"')
    numeric = [
        c
        for c in df.columns
        if (pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]))
        or c in aligned
        or (pd.api.types.is_object_dtype(df[c]) and _numbers_only(df[c]))
    ]
    text = [c for c in df.columns if c not in numeric]
    if numeric:
        sty = sty.set_properties(
            subset=numeric, **{"text-align": "right", "white-space": "nowrap", "font-variant-numeric": "tabular-nums"}
        )
        try:  # numbers' headers sit right, over the numbers
            sty = sty.set_table_styles(
                {c: [{"selector": "th", "props": [("text-align", "right")]}] for c in numeric}, overwrite=False
            )
        except (KeyError, ValueError, TypeError):  # pragma: no cover - unusual column labels
            pass
    if text:
        sty = sty.set_properties(subset=text, **{"text-align": "left"})
    wrap = [c for c in wrap if c in df.columns]
    if wrap:
        sty = sty.set_properties(subset=wrap, **{"white-space": "pre-wrap", "min-width": "18em"})
    if caption:
        sty = sty.set_caption(caption)
    if not index:
        sty = sty.hide(axis="index")
    width = df.shape[1] + (df.index.nlevels if index else 0)
    if fold or (fold is None and width > MAX_COLUMNS):
        what = f"{caption}: " if caption else ""
        return Folded(
            sty, f"{what}a table of {len(df):,} rows and {width} columns, wider than the text; click to open it"
        )
    return sty


def listed(parts, last: str = "and") -> str:
    """Words as a phrase, the last joined by ``last``.

    Example:
        >>> listed(["a"]), listed(["a", "b"]), listed(["KL", "QA ppl", "NE_ER"], "or")
        ('a', 'a and b', 'KL, QA ppl or NE_ER')
    """
    parts = list(parts)
    if not parts:
        raise ValueError("nothing to list; pass at least one phrase")
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} {last} {parts[-1]}"


def compare_word(
    a: float | None,
    b: float | None,
    *,
    lower_is_better: bool | None = None,
    digits: int = 3,
    missing: str = "not comparable with",
) -> str:
    """How ``a`` compares with ``b``, worded to be followed by ``b``: ``"lower than"``,
    ``"higher than"``, ``"the same as"`` (equal when printed to ``digits`` decimals) or ``missing``
    when either is missing. With ``lower_is_better`` the word says which is better too:
    ``"lower (better) than"``.

    >>> compare_word(0.31, 0.35), compare_word(0.31, 0.35, lower_is_better=False)
    ('lower than', 'lower (worse) than')
    >>> compare_word(0.3551, 0.3549), compare_word(None, 1.0)
    ('the same as', 'not comparable with')
    """
    if _is_missing(a) or _is_missing(b) or not (math.isfinite(float(a)) and math.isfinite(float(b))):
        return missing
    a, b = float(a), float(b)
    if round(a, digits) == round(b, digits):
        return "the same as"
    lower = a < b
    word = "lower" if lower else "higher"
    if lower_is_better is None:
        return f"{word} than"
    better = lower == bool(lower_is_better)
    return f"{word} ({'better' if better else 'worse'}) than"


def better_word(
    a: float | None, b: float | None, *, lower_is_better: bool, digits: int = 3, missing: str = "not comparable with"
) -> str:
    """Whether ``a`` is better than ``b``, worded to be followed by ``b``: ``"better than"``,
    ``"worse than"``, ``"the same as"`` (equal to ``digits`` decimals) or ``missing``.

    >>> better_word(0.31, 0.35, lower_is_better=True), better_word(0.31, 0.35, lower_is_better=False)
    ('better than', 'worse than')
    >>> better_word(float("nan"), 0.35, lower_is_better=True)
    'not comparable with'
    """
    word = compare_word(a, b, digits=digits, missing=missing)
    if word in ("lower than", "higher than"):
        return "better than" if (word == "lower than") == bool(lower_is_better) else "worse than"
    return word


def compare_flags(
    a: float | None, b: float | None, *, digits: int = 3, lower_is_better: bool | None = None
) -> dict[str, bool]:
    """:func:`compare_word`'s outcome as the booleans a page's ``needs:`` tags read: ``{"lower",
    "higher", "same"}`` (``a`` against ``b``, the same when equal to ``digits`` decimals), or with
    ``lower_is_better`` ``{"better", "worse", "same"}`` (:func:`better_word`); all False when
    either is missing.

    Example:
        >>> compare_flags(0.31, 0.35), compare_flags(0.3551, 0.3549)["same"], any(compare_flags(None, 0.3).values())
        ({'lower': True, 'higher': False, 'same': False}, True, False)
        >>> compare_flags(0.31, 0.35, lower_is_better=False)
        {'better': False, 'worse': True, 'same': False}
    """
    word = compare_word(a, b, digits=digits)
    lower, higher = word == "lower than", word == "higher than"
    if lower_is_better is None:
        return {"lower": lower, "higher": higher, "same": word == "the same as"}
    better, worse = (lower, higher) if lower_is_better else (higher, lower)
    return {"better": better, "worse": worse, "same": word == "the same as"}


def _pm_cells(value, se, scale: float, digits: int) -> tuple[str | None, str | None]:
    """A value and its standard error as two table cells, both to the precision the error
    supports (:func:`apd.report.numbers.pm_parts`); None for a missing one."""
    v = None if _is_missing(value) else scale * float(value)
    e = None if _is_missing(se) or not math.isfinite(float(se)) else scale * float(se)
    if v is None:
        return None, None if e is None else format_number(e, digits)
    if e is None or e <= 0:
        return format_number(v, digits), None if e is None else format_number(e, digits)
    return pm_parts(v, e, signed=False)


def plus_minus(value: float | None, se: float | None, signed: bool = True) -> str | None:
    """``value ± se`` with both printed to the precision ``se`` supports
    (:func:`apd.report.numbers.format_pm`); None when either is missing (the caller glues a
    missing value).

    >>> plus_minus(0.0031, 0.0013), plus_minus(0.02412, 0.0085), plus_minus(1.2, None)
    ('+0.0031 ± 0.0013', '+0.0241 ± 0.0085', None)
    >>> plus_minus(-2.7e-9, 1.04e-9)
    '(-2.7 ± 1.0) × 10⁻⁹'
    """
    if _is_missing(value) or _is_missing(se) or not (math.isfinite(float(value)) and math.isfinite(float(se))):
        return None
    return format_pm(float(value), abs(float(se)), signed=signed)
