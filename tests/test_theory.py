import math

import numpy as np
import pytest
import torch

from apd.core import theory


def test_cd_logits_is_elm_minus_alm_over_T():
    elm = np.array([[1.0, 2.0, 3.0]])
    alm = np.array([[0.5, 4.0, -1.0]])
    np.testing.assert_allclose(theory.cd_logits(elm, alm, 2.0), [[0.75, 0.0, 3.5]])


@pytest.mark.parametrize("T", [1.1, 1.5, 2.0, 4.0, 10.0, 0.5])
def test_identity_on_random_linear_family(T):
    rng = np.random.default_rng(0)
    x_a, x_e = 16.7555, 22.5864
    a, b = rng.normal(size=(4, 7, 50)), rng.normal(size=(4, 7, 50))
    l_a, l_e = a + b * x_a, a + b * x_e
    x_h = theory.hlm_log_size(x_e, x_a, T)
    l_h_direct = a + b * x_h  # the family's own line, evaluated independently
    np.testing.assert_allclose(theory.cd_logits(l_e, l_a, T), (1 - 1 / T) * l_h_direct, atol=1e-11)
    np.testing.assert_allclose(theory.hlm_logits(l_e, l_a, x_e, x_a, T), l_h_direct, atol=1e-11)


def test_hlm_size_matches_paper_formula():
    # s_HLM = (s_ELM^T / s_ALM)^(1/(T-1)), computed in linear space with Python floats
    s_alm, s_elm, T = 18_915_328.0, 6_444_163_072.0, 3.0
    direct = (s_elm**T / s_alm) ** (1 / (T - 1))
    got = theory.hlm_size(math.log(s_elm), math.log(s_alm), T)
    assert got == pytest.approx(direct, rel=1e-9)
    # T = 2: ln s_HLM = 2 ln s_ELM - ln s_ALM
    assert float(theory.hlm_log_size(22.5864, 16.7555, 2.0)) == pytest.approx(2 * 22.5864 - 16.7555)


def test_low_temperature_puts_hlm_below_alm():
    assert float(theory.hlm_log_size(22.0, 17.0, 0.5)) < 17.0


def test_line_logit_endpoints_and_midpoint():
    l_a, l_e = np.array([1.0, 5.0]), np.array([3.0, 1.0])
    np.testing.assert_allclose(theory.line_logit(10.0, 10.0, l_a, 14.0, l_e), l_a)
    np.testing.assert_allclose(theory.line_logit(14.0, 10.0, l_a, 14.0, l_e), l_e)
    np.testing.assert_allclose(theory.line_logit(12.0, 10.0, l_a, 14.0, l_e), [2.0, 3.0])


def test_bent_error_closed_form_matches_numeric():
    l_a, l_e, x_a, x_e, T, k = np.array([2.0]), np.array([1.0]), 17.0, 21.0, 1.5, 0.3
    x_h = theory.hlm_log_size(x_e, x_a, T)
    numeric = theory.cd_logits(l_e, l_a, T) - (1 - 1 / T) * theory.bent_logits(x_h, x_a, l_a, x_e, l_e, k)
    np.testing.assert_allclose(numeric, theory.bent_extrapolation_error(k, x_e, x_a, T), atol=1e-12)
    assert theory.bent_extrapolation_error(0.0, x_e, x_a, T) == 0.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_torch_tensors_any_leading_shape(dtype):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(2, 3, 5, 11, generator=g, dtype=dtype), torch.randn(2, 3, 5, 11, generator=g, dtype=dtype)
    x_a, x_e, T = 17.0, 20.0, 2.0
    l_a, l_e = a + b * x_a, a + b * x_e
    cd = theory.cd_logits(l_e, l_a, T)
    hlm = theory.hlm_logits(l_e, l_a, x_e, x_a, T)
    assert isinstance(cd, torch.Tensor) and cd.dtype == dtype and cd.shape == (2, 3, 5, 11)
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(cd, (1 - 1 / T) * hlm, atol=tol, rtol=tol)


def test_per_row_sizes_broadcast():
    x_a = np.array([[15.0], [17.0]])
    x_e = np.array([[18.0], [22.0]])
    l_a, l_e = np.zeros((2, 4)), np.ones((2, 4))
    out = theory.hlm_logits(l_e, l_a, x_e, x_a, 2.0)
    assert out.shape == (2, 4)


@pytest.mark.parametrize("T", [0.0, -1.0, float("nan")])
def test_bad_temperature(T):
    with pytest.raises(ValueError, match="T"):
        theory.cd_logits(np.ones(3), np.ones(3), T)
    with pytest.raises(ValueError, match="T"):
        theory.hlm_log_size(20.0, 17.0, T)


def test_T_equal_one_has_no_finite_hlm():
    with pytest.raises(ValueError, match="T == 1"):
        theory.hlm_log_size(20.0, 17.0, 1.0)
    # but CD itself is defined at T = 1
    np.testing.assert_allclose(theory.cd_logits(np.array([2.0]), np.array([1.0]), 1.0), [1.0])


@pytest.mark.parametrize("x_e,x_a", [(17.0, 17.0), (16.0, 17.0)])
def test_sizes_must_increase(x_e, x_a):
    with pytest.raises(ValueError, match="log_s_elm must be larger"):
        theory.hlm_log_size(x_e, x_a, 2.0)
    with pytest.raises(ValueError, match="log_s_elm must be larger"):
        theory.line_logit(18.0, x_a, np.ones(2), x_e, np.ones(2))


def test_mismatched_vocabularies_are_rejected():
    with pytest.raises(ValueError, match="same vocabulary"):
        theory.cd_logits(np.ones((2, 50304)), np.ones((2, 50432)), 2.0)


# ----------------------------------------------------------------------------- T = inf and bad values


def test_hlm_at_T_inf_is_the_limit_ln_s_elm_without_warnings():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(theory.hlm_log_size(22.5864, 16.7555, math.inf)) == 22.5864
        assert theory.hlm_size(22.5864, 16.7555, math.inf) == math.exp(22.5864)
        T = np.array([0.5, 2.0, math.inf, 3.0])
        got = theory.hlm_log_size(22.5864, 16.7555, T)
        want = (T[[0, 1, 3]] * 22.5864 - 16.7555) / (T[[0, 1, 3]] - 1)
        np.testing.assert_array_equal(got[[0, 1, 3]], want)  # finite T: the formula, bit for bit
        assert got[2] == 22.5864
        sizes = theory.hlm_log_size(np.array([[20.0], [22.0]]), np.array([[15.0], [17.0]]), np.array([2.0, math.inf]))
        np.testing.assert_array_equal(sizes, [[25.0, 20.0], [27.0, 22.0]])
        t = theory.hlm_log_size(torch.tensor([20.0, 22.0]), torch.tensor(15.0), torch.tensor([math.inf, 2.0]))
        assert t.tolist() == [20.0, 29.0]
        elm, alm = np.array([2.0, 1.0]), np.array([1.0, 2.0])
        np.testing.assert_array_equal(theory.hlm_logits(elm, alm, 22.5864, 16.7555, math.inf), elm)
        np.testing.assert_array_equal(theory.cd_logits(elm, alm, math.inf), elm)


def test_bad_types_and_non_finite_log_sizes_name_the_argument():
    with pytest.raises(TypeError, match=r"T must hold numbers, got the str '2\.0'"):
        theory.hlm_log_size(22.5864, 16.7555, "2.0")
    with pytest.raises(TypeError, match=r"T must hold numbers, got the str '2\.0'"):
        theory.hlm_size(22.5864, 16.7555, "2.0")
    assert theory.hlm_size(np.float64(22.5864), np.array(16.7555), np.array([2.0])) == theory.hlm_size(
        22.5864, 16.7555, 2
    )
    with pytest.raises(TypeError, match=r"log_s_alm must hold numbers, got the str '16\.7'"):
        theory.hlm_log_size(22.5864, "16.7", 2.0)
    for bad in (math.inf, -math.inf, math.nan):
        with pytest.raises(ValueError, match="log_s_elm must be finite natural logs"):
            theory.hlm_log_size(bad, 16.7555, 2.0)
    with pytest.raises(TypeError, match=r"elm_logits must hold real numbers, got <U3"):
        theory.cd_logits(["1.0"], [2.0], 2.0)
