"""Properties of apd.core over shapes, dtypes and special values (hypothesis; a few seconds in all)."""

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from apd.core.contrastive import Reciprocal, contrastive_scores
from apd.core.curves import fit_curves
from apd.core.theory import hlm_log_size, hlm_size

# deterministic (derandomize) and without an example database folder: the same examples every run
FAST = settings(max_examples=40, deadline=None, derandomize=True, database=None)

SHAPES = array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6)
FINITE = st.floats(-30.0, 30.0, allow_nan=False, allow_infinity=False, width=32)
WITH_MINUS_INF = st.one_of(FINITE, FINITE, FINITE, st.just(-math.inf))  # masked tokens, now and then
# whole numbers: ties are exact ties in every backend's log-softmax, never near-ties rounded apart
WHOLE = st.one_of(st.integers(-30, 30).map(float), st.integers(-30, 30).map(float), st.just(-math.inf))
INV_T = st.floats(0.0, 4.0, allow_nan=False, width=32)
TEMPERATURE = st.floats(0.05, 50.0, allow_nan=False)
DTYPES = st.sampled_from([np.float32, np.float64])


@st.composite
def pairs(draw, elements=FINITE, live_rows=True):
    """Expert and amateur logits of one shape (..., V); with ``live_rows`` every row keeps a finite token."""
    shape = draw(SHAPES)
    dtype = draw(DTYPES)
    elm = draw(arrays(dtype, shape, elements=elements))
    amateur = draw(arrays(dtype, shape, elements=FINITE))
    if live_rows:
        elm[..., 0] = np.where(np.isfinite(elm[..., 0]), elm[..., 0], 0.0)
    return elm, amateur


@FAST
@given(pairs(WITH_MINUS_INF), INV_T, st.integers(1, 6), st.sampled_from(["numpy", "torch"]))
def test_scores_are_minus_inf_exactly_outside_the_kept_set(pair, inv_T, k, kind):
    elm, amateur = pair
    k = min(k, elm.shape[-1])
    e, a = (elm, amateur) if kind == "numpy" else (torch.from_numpy(elm), torch.from_numpy(amateur))
    scores = np.asarray(contrastive_scores(e, a, inv_T, top_k=k))
    lp = np.asarray(contrastive_scores(e, e, 0.0))  # the ELM's log-probs; ties with the k-th are kept
    keep = (lp >= np.sort(lp, axis=-1)[..., -k][..., None]) & np.isfinite(elm)
    assert not np.isnan(scores).any()
    assert np.isneginf(scores[~keep]).all()
    assert np.isfinite(scores[keep]).all()


@FAST
@given(pairs(WITH_MINUS_INF), st.integers(1, 6))
def test_no_amateur_weight_is_the_experts_log_softmax_on_the_kept_set(pair, k):
    elm, amateur = pair
    k = min(k, elm.shape[-1])
    amateur[..., -1] = -np.inf  # the amateur's own masked tokens do not matter without its weight
    expert = contrastive_scores(elm, elm, 0.0, top_k=k)
    for weightless in (0.0, Reciprocal(math.inf), [0.0]):
        got = contrastive_scores(elm, amateur, weightless, top_k=k)
        np.testing.assert_array_equal(got.reshape(expert.shape), expert)
    lp = contrastive_scores(elm, elm, 0.0)  # no keep set: the log-softmax itself
    keep = np.isfinite(expert)
    np.testing.assert_array_equal(expert[keep], lp[keep])


@FAST
@given(
    st.one_of(pairs(WITH_MINUS_INF), pairs(WHOLE)),
    INV_T,
    st.integers(1, 6),
    st.sampled_from([False, "log", "prob"]),
    st.booleans(),
)
def test_numpy_and_torch_agree(pair, inv_T, k, renormalize, with_top_k):
    elm, amateur = pair
    whole = np.isinf(elm) | (elm == np.round(elm))
    k = min(k, elm.shape[-1]) if with_top_k and whole.all() else None  # top k on exact ties only
    kwargs = dict(top_k=k, renormalize=renormalize)
    want = contrastive_scores(elm, amateur, inv_T, **kwargs)
    got = contrastive_scores(torch.from_numpy(elm), torch.from_numpy(amateur), inv_T, **kwargs)
    assert got.dtype == {np.float32: torch.float32, np.float64: torch.float64}[elm.dtype.type]
    tol = 1e-4 if elm.dtype == np.float32 else 1e-9
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


@FAST
@given(pairs(), INV_T, st.sampled_from([torch.float16, torch.bfloat16, torch.float32, torch.int64]))
def test_half_and_integer_torch_logits_are_scored_in_float32(pair, inv_T, dtype):
    elm, amateur = (torch.from_numpy(x).to(dtype) for x in pair)
    got = contrastive_scores(elm, amateur, inv_T, renormalize="prob")
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, contrastive_scores(elm.float(), amateur.float(), inv_T, renormalize="prob"))


@FAST
@given(pairs(WITH_MINUS_INF), INV_T, st.integers(1, 6), st.sampled_from(["numpy", "torch"]))
def test_renormalised_probabilities_sum_to_one(pair, inv_T, k, kind):
    elm, amateur = pair
    k = min(k, elm.shape[-1])
    e, a = (elm, amateur) if kind == "numpy" else (torch.from_numpy(elm), torch.from_numpy(amateur))
    p = np.asarray(contrastive_scores(e, a, inv_T, top_k=k, renormalize="prob"), dtype=np.float64)
    assert (p >= 0).all()
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-5)
    logp = np.asarray(contrastive_scores(e, a, inv_T, top_k=k, renormalize="log"), dtype=np.float64)
    np.testing.assert_allclose(np.exp(logp).sum(-1), 1.0, rtol=1e-5)


@FAST
@given(pairs(), TEMPERATURE, st.sampled_from(["numpy", "torch"]))
def test_reciprocal_T_equals_inv_T_within_rounding(pair, T, kind):
    elm, amateur = pair
    e, a = (elm, amateur) if kind == "numpy" else (torch.from_numpy(elm), torch.from_numpy(amateur))
    divided = np.asarray(contrastive_scores(e, a, Reciprocal(T)), dtype=np.float64)
    multiplied = np.asarray(contrastive_scores(e, a, 1.0 / T), dtype=np.float64)
    lp_elm, lp_am = (np.asarray(contrastive_scores(x, x, 0.0), dtype=np.float64) for x in (e, a))
    scale = np.abs(lp_elm) + np.abs(lp_am) / T + 1.0  # a few ulps of the terms
    np.testing.assert_array_less(np.abs(divided - multiplied), 4 * np.finfo(elm.dtype).eps * scale)


@FAST
@given(pairs(), INV_T, st.sampled_from(["elm", "amateur"]), st.sampled_from([math.nan, math.inf]), st.data())
def test_nan_or_plus_inf_always_raises_naming_the_input(pair, inv_T, who, bad, data):
    elm, amateur = pair
    target = elm if who == "elm" else amateur
    index = tuple(data.draw(st.integers(0, n - 1)) for n in target.shape)
    target[index] = bad
    kind = data.draw(st.sampled_from(["numpy", "torch"]))
    e, a = (elm, amateur) if kind == "numpy" else (torch.from_numpy(elm), torch.from_numpy(amateur))
    renormalize = data.draw(st.sampled_from([False, "log", "prob"]))
    with pytest.raises(ValueError, match=rf"^{who} \(the \w+'s logits\) holds NaN or \+inf"):
        contrastive_scores(e, a, inv_T, renormalize=renormalize)


@FAST
@given(pairs(WITH_MINUS_INF), INV_T, st.data())
def test_scores_at_ids_are_the_full_scores_at_those_ids(pair, inv_T, data):
    elm, amateur = pair
    V = elm.shape[-1]
    ids = data.draw(arrays(np.int64, elm.shape[:-1] + (data.draw(st.integers(1, 4)),), elements=st.integers(0, V - 1)))
    full = contrastive_scores(elm, amateur, inv_T)
    np.testing.assert_array_equal(contrastive_scores(elm, amateur, inv_T, ids=ids), np.take_along_axis(full, ids, -1))
    outside = ids.copy()
    outside.flat[0] = data.draw(st.sampled_from([-1, V]))
    with pytest.raises(ValueError, match=r"ids must lie in \[0, "):
        contrastive_scores(elm, amateur, inv_T, ids=outside)


@FAST
@given(pairs(), st.one_of(st.integers(-3, 0), st.integers(7, 9), st.floats(0.5, 5.5).filter(lambda v: v != int(v))))
def test_a_bad_vocab_size_is_refused(pair, vocab_size):
    elm, amateur = pair
    assume(not (isinstance(vocab_size, int) and 1 <= vocab_size <= elm.shape[-1]))
    with pytest.raises(ValueError, match="vocab_size must be an integer in"):
        contrastive_scores(elm, amateur, 0.5, vocab_size=vocab_size)


LOG_SIZES = st.tuples(st.floats(10.0, 30.0), st.floats(0.1, 8.0)).map(lambda t: (t[0] + t[1], t[0]))


@FAST
@given(LOG_SIZES, st.floats(1.001, 1e6), st.floats(1.001, 1e6))
def test_hlm_log_size_falls_with_T_toward_ln_s_elm(sizes, T1, T2):
    e, a = sizes
    lo, hi = sorted((T1, T2))
    x_lo, x_hi = float(hlm_log_size(e, a, lo)), float(hlm_log_size(e, a, hi))
    assert x_lo >= x_hi * (1 - 1e-14) and x_hi >= e * (1 - 1e-14)  # falls, within rounding
    assert float(hlm_log_size(e, a, math.inf)) == e
    assert abs(float(hlm_log_size(e, a, 1e12)) - e) < 1e-9 * e
    assert hlm_size(e, a, math.inf) == math.exp(e)


@FAST
@given(LOG_SIZES, st.lists(st.floats(0.05, 50.0).filter(lambda t: abs(t - 1) > 1e-3), min_size=1, max_size=5))
def test_hlm_log_size_of_an_array_of_T_holding_inf(sizes, Ts):
    e, a = sizes
    T = np.array(Ts + [math.inf])
    got = hlm_log_size(e, a, T)
    finite = np.array(Ts)
    np.testing.assert_array_equal(got[:-1], (finite * e - a) / (finite - 1))  # the formula, bit for bit
    assert got[-1] == e


@settings(max_examples=15, deadline=None, derandomize=True, database=None)
@given(
    st.sampled_from(["lambda2", "lr", "iterations", "final_lr_fraction"]),
    st.one_of(st.floats(-5.0, 0.0), st.just(math.nan), st.just(math.inf), st.just(-math.inf)),
)
def test_fit_settings_out_of_range_always_raise_naming_the_setting(name, value):
    assume(not (name == "lambda2" and value == 0.0))  # lambda2 = 0 is a valid weight
    p = torch.full((1, 3), 0.5)
    with pytest.raises(ValueError, match=rf"^{name} must be "):
        fit_curves(p, [1.0, 2.0, 3.0], **{name: value})
