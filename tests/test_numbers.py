"""The book's number rules (apd.report.numbers): counts, significant figures, value ± se, tiny values."""

import math
import re

import numpy as np
import pytest

from apd.report import numbers as nb

ZERO_RUN = re.compile(r"\d\.\d*?0{7,}")


def test_counts_are_integers_with_separators():
    assert nb.format_count(5000) == "5,000" and nb.format_count(np.int64(20_000_000)) == "20,000,000"
    assert nb.format_count(5000.0) == "5,000" and nb.format_count(np.float64(1.0)) == "1"
    for bad in (2.5, float("nan"), True, "12"):
        with pytest.raises(ValueError):
            nb.format_count(bad)


@pytest.mark.parametrize(
    "value, sig, shown",
    [
        (0.35512, 3, "0.355"),
        (28.4173, 3, "28.4"),
        (8122.437, 3, "8,120"),
        (2195.2125687019275, 3, "2,200"),
        (340.6651397695411, 3, "341"),
        (0.5, 3, "0.500"),
        (0.09996, 3, "0.100"),
        (999.7, 3, "1,000"),
        (-0.0123, 2, "-0.012"),
        (2.7e-9, 2, "2.7 × 10⁻⁹"),
        (-2.7e-9, 2, "-2.7 × 10⁻⁹"),
        (6443901392.983684, 3, "6.44 × 10⁹"),
        (0.0, 3, "0"),
    ],
)
def test_significant_figures(value, sig, shown):
    assert nb.format_sig(value, sig) == shown


def test_format_number_is_the_default_for_a_value_without_a_format():
    assert [nb.format_number(v) for v in (2.0, 10.0, 5000.0, 1, 0.2, 0.001)] == [
        "2",
        "10",
        "5,000",
        "1",
        "0.2",
        "0.001",
    ]
    assert nb.format_number(0.30000000000000004) == "0.3" and nb.format_number(56640.00000000002) == "56,640"
    assert nb.format_number(2.191194474697113) == "2.19" and nb.format_number(19431.941) == "19,400"
    assert nb.format_number(-2.7e-9) == "-2.7 × 10⁻⁹" and nb.format_number(2.842170943040401e-14) == "2.84 × 10⁻¹⁴"
    assert nb.format_number(0.0157, signed=True) == "+0.0157" and nb.format_number(3, signed=True) == "+3"
    with pytest.raises(ValueError, match="n/a"):
        nb.format_number(float("inf"))


@pytest.mark.parametrize(
    "value, se, shown",
    [
        (0.017681, 0.005753, "+0.0177 ± 0.0058"),
        (0.0031, 0.0013, "+0.0031 ± 0.0013"),
        (-0.0052, 0.0046, "-0.0052 ± 0.0046"),
        (0.02412, 0.0085, "+0.0241 ± 0.0085"),
        (0.045, 0.024, "+0.045 ± 0.024"),
        (1.234, 0.00996, "+1.234 ± 0.010"),  # the se rounds up to 0.010: three decimals, not four
        (1234.5, 37.0, "+1,234 ± 37"),
        (1234.5, 370.0, "+1,230 ± 370"),
        (-2e-9, 0.003, "+0.0000 ± 0.0030"),  # no "-0.0000"
        (-2.7e-9, 1.04e-9, "(-2.7 ± 1.0) × 10⁻⁹"),
        (4.87e-8, 1.6e-8, "(+4.9 ± 1.6) × 10⁻⁸"),
        (3e-6, 2e-8, "(+3.000 ± 0.020) × 10⁻⁶"),
        (0.5, 2e-9, "+0.500 ± 2.0 × 10⁻⁹"),
        (0.1, 0.0, "+0.100 ± 0"),
    ],
)
def test_value_with_its_standard_error(value, se, shown):
    assert nb.format_pm(value, se) == shown


def test_value_and_se_as_table_cells_share_the_precision():
    assert nb.pm_parts(0.017681, 0.005753, signed=False) == ("0.0177", "0.0058")
    assert nb.pm_parts(-2.7e-9, 1.04e-9) == ("-2.7 × 10⁻⁹", "1.0 × 10⁻⁹")
    with pytest.raises(ValueError, match="negative"):
        nb.format_pm(0.1, -0.01)
    with pytest.raises(ValueError, match="standard error"):
        nb.format_pm(0.1, float("nan"))


def test_no_rule_prints_a_run_of_zeros_or_decimals_on_an_integer():
    rng = np.random.default_rng(0)
    values = np.concatenate([10.0 ** rng.uniform(-15, 12, 400) * rng.choice([-1, 1], 400), [5000.0, 1.0, 1e-12]])
    for v in values:
        for text in (nb.format_number(v), nb.format_sig(v), nb.format_sci(v), nb.format_pm(v, abs(v) / 3)):
            assert not ZERO_RUN.search(text), (v, text)
            assert not re.search(r"\d\.000\b", nb.format_number(v)) or abs(v) < 10, (v, text)
        assert "e" not in nb.format_number(v) and "nan" not in nb.format_number(v).lower()
        m, _, p = nb.format_sci(v, 3).partition(" × 10")
        exponent = int(p.translate(str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")))
        assert math.isclose(float(m) * 10.0**exponent, v, rel_tol=5e-3)  # the notation reads back


def test_glue_literal_keeps_a_number_for_the_prose_spec():
    assert nb.glue_literal(2.0) == 2 and isinstance(nb.glue_literal(2.0), int)
    assert nb.glue_literal(56640.00000000002) == 56640 and nb.glue_literal(0.30000000000000004) == 0.3
    tiny = nb.glue_literal(2.842170943040401e-14)  # not rounded to 0: precision for the prose's spec
    assert math.isclose(tiny, 2.842170943040401e-14, rel_tol=1e-11) and format(tiny, ".1e") == "2.8e-14"
    assert nb.glue_literal(True) is True and nb.glue_literal("a") == "a" and nb.glue_literal(7) == 7
    assert format(nb.glue_literal(1779840.0), ",.0f") == "1,779,840"
    assert nb.glue_literal(6443901392.983684) == 6443901392.98  # an estimate, not a whole number
    assert nb.format_number(6443901392.983684) == "6.44 × 10⁹" and nb.format_number(6443901393.0) == "6,443,901,393"
