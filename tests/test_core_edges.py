"""Edge numbers in apd.core: -inf and NaN in either model, bool/complex/integer dtypes, half-precision
fits, NaN entropies. Each is refused with an error naming it, or has a documented value; never a silent NaN."""

import math

import numpy as np
import pytest
import torch

from apd.core.contrastive import Reciprocal, contrastive_scores
from apd.core.curves import PYTHIA_LOG_SIZES, fit_curves, on_the_fly_asymptotes, synthetic_curves
from apd.core.entropy import entropy_from_logits
from apd.core.filters import REAL, real_top_p

ELM = [[0.0, -1.0, -2.0, -0.5]]
AMATEUR = [[-0.5, -1.5, 0.0, -1.0]]
RENORMALIZE = (False, "log", "prob")
INF_AT_KEPT = (
    r"amateur \(the amateur's logits\) is -inf \(a probability of 0\) at a token the ELM keeps, index \(0, 1\)"
)

# (who, value at token 1, check_finite, renormalize) -> what comes back: "finite" (-inf only where ruled
# out), "+inf" (raw score +inf at token 1) or the ValueError's message
CASES = [
    (who, bad, check, ren, expect)
    for check in (False, True)
    for ren in RENORMALIZE
    for who, bad, expect in [
        ("elm", math.nan, r"^elm \(the expert's logits\) holds NaN or \+inf"),
        ("amateur", math.nan, r"^amateur \(the amateur's logits\) holds NaN or \+inf"),
        ("elm", -math.inf, "finite"),  # the ELM rules the token out: -inf, whatever the amateur says
        ("amateur", -math.inf, "+inf" if not (check or ren) else INF_AT_KEPT),
        ("both", -math.inf, "finite"),  # ruled out on the ELM: the amateur's -inf does not count
    ]
]


def _pair(who, bad, kind):
    elm, amateur = np.array(ELM), np.array(AMATEUR)
    if who in ("elm", "both"):
        elm[0, 1] = bad
    if who in ("amateur", "both"):
        amateur[0, 1] = bad
    return (elm, amateur) if kind == "numpy" else (torch.tensor(elm), torch.tensor(amateur))


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("who, bad, check_finite, renormalize, expect", CASES)
def test_minus_inf_and_nan_in_either_model_under_every_normalisation(
    who, bad, check_finite, renormalize, expect, kind
):
    elm, amateur = _pair(who, bad, kind)
    score = lambda: np.asarray(  # noqa: E731
        contrastive_scores(elm, amateur, 0.5, renormalize=renormalize, check_finite=check_finite)
    )
    if expect not in ("finite", "+inf"):
        with pytest.raises(ValueError, match=expect):
            score()
        return
    got = score()
    assert not np.isnan(got).any()
    if expect == "+inf":
        assert got[0, 1] == math.inf and np.isfinite(np.delete(got, 1, axis=1)).all()
        return
    ruled_out = 0.0 if renormalize == "prob" else -math.inf
    assert got[0, 1] == ruled_out and np.isfinite(np.delete(got, 1, axis=1)).all()
    if renormalize:
        assert math.isclose(float(np.exp(got).sum() if renormalize == "log" else got.sum()), 1.0, rel_tol=1e-6)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_an_amateur_at_minus_inf_is_refused_on_kept_tokens_only_and_named_through_grids_and_ids(kind):
    elm, amateur = _pair("amateur", -math.inf, kind)
    with pytest.raises(ValueError, match=INF_AT_KEPT):  # the grid's axis is not part of the index
        contrastive_scores(elm, amateur, [0.0, 0.5], renormalize="log")
    ids = np.array([[2, 1]]) if kind == "numpy" else torch.tensor([[2, 1]])
    with pytest.raises(ValueError, match=r"at a token the ELM keeps, index \(0, 1\) of ids"):
        contrastive_scores(elm, amateur, 0.5, ids=ids, renormalize="prob")
    for weightless in (0.0, Reciprocal(math.inf)):  # 1/T = 0: the ELM alone, the amateur unused
        got = contrastive_scores(elm, amateur, weightless, renormalize="prob", check_finite=True)
        np.testing.assert_allclose(np.asarray(got), np.exp(np.asarray(contrastive_scores(elm, elm, 0.0))))
    got = np.asarray(contrastive_scores(elm, amateur, 0.5, top_k=1, renormalize="prob", check_finite=True))
    assert got.tolist() == [[1.0, 0.0, 0.0, 0.0]]  # outside the ELM's top 1: the amateur's -inf does not count


@pytest.mark.parametrize(
    "who, make",
    [
        ("elm", lambda x: x > 0),
        ("amateur", lambda x: x > 0),
        ("elm", lambda x: x.astype(np.complex64) if isinstance(x, np.ndarray) else x.to(torch.complex64)),
        ("amateur", lambda x: x.astype(np.complex64) if isinstance(x, np.ndarray) else x.to(torch.complex64)),
    ],
)
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_bool_and_complex_logits_are_refused_naming_the_argument(who, make, kind):
    elm, amateur = _pair("none", 0.0, kind)
    elm, amateur = (make(elm), amateur) if who == "elm" else (elm, make(amateur))
    with pytest.raises(TypeError, match=rf"^{who} \(the \w+'s logits\) must hold real-valued logits, got dtype"):
        contrastive_scores(elm, amateur, 0.5)


@pytest.mark.parametrize("kind, want", [("numpy", np.float64), ("torch", torch.float32)])
def test_integer_logits_are_scored_as_floats(kind, want):
    elm, amateur = np.array([[1, 2, 3]]), np.array([[3, 1, 2]])
    if kind == "torch":
        elm, amateur = torch.tensor(elm), torch.tensor(amateur)
    as_float = (lambda x: x.astype(np.float64)) if kind == "numpy" else (lambda x: x.float())  # noqa: E731
    for kwargs in ({}, {"top_k": 2, "renormalize": "prob"}, {"normalize": False, "inv_T": 0.0}):
        inv_T = kwargs.pop("inv_T", 0.5)
        got = contrastive_scores(elm, amateur, inv_T, **kwargs)
        assert got.dtype == want
        np.testing.assert_array_equal(got, contrastive_scores(as_float(elm), as_float(amateur), inv_T, **kwargs))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_fits_run_and_return_in_float32(dtype):
    probs, _ = synthetic_curves(8)
    want = fit_curves(probs, PYTHIA_LOG_SIZES, iterations=50)
    got = fit_curves(probs, PYTHIA_LOG_SIZES, iterations=50, dtype=dtype)
    assert got.ok.all() and got.asymptote.dtype == got.c.dtype == got.params.dtype == torch.float32
    torch.testing.assert_close(got.asymptote, want.asymptote, rtol=0, atol=0)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("who", ["c", "h_last"])
def test_real_refuses_non_finite_entropies_naming_them(who, bad):
    entropies = {"c": torch.tensor([0.5, 1.0]), "h_last": torch.tensor([1.0, 1.0])}
    entropies[who][1] = bad
    match = rf"REAL's {who} \(.*\) is NaN or infinite \(1 of 2 rows, the first at row 1\)"
    with pytest.raises(ValueError, match=match):
        real_top_p(entropies["c"], entropies["h_last"], 4.0)
    with pytest.raises(ValueError, match=match):
        REAL(4.0).set_entropies(entropies["c"], entropies["h_last"])


def test_entropies_refuse_nan_logits_and_rule_out_minus_inf():
    assert math.isclose(float(entropy_from_logits(torch.tensor([0.0, 0.0, -math.inf]))), math.log(2), rel_tol=1e-6)
    with pytest.raises(ValueError, match=r"^logits holds NaN or \+inf"):
        entropy_from_logits(torch.tensor([0.0, math.nan]))


def test_apd_on_the_fly_takes_a_member_at_minus_inf_as_probability_zero_and_refuses_nan():
    members = torch.randn(3, 2, 8, generator=torch.Generator().manual_seed(0))
    members[0, 0, members[-1, 0].argmax()] = -math.inf  # the ALM's probability 0: a point of the curve
    _, p_elm, p_ap, fit = on_the_fly_asymptotes(members, [1.0, 2.0, 3.0], top_k=4, iterations=20)
    assert fit.ok.all() and torch.isfinite(p_ap).all() and torch.allclose(p_ap.sum(-1), torch.ones(2))
    members[1, 1, 0] = math.nan
    with pytest.raises(ValueError, match=r"^member_logits holds NaN or \+inf"):
        on_the_fly_asymptotes(members, [1.0, 2.0, 3.0], top_k=4, iterations=20)


def test_the_contrastive_processor_refuses_an_amateur_at_minus_inf_on_a_kept_token():
    from tiny_models import tiny_neox

    from apd.decoding.processors import ContrastiveLogitsProcessor

    proc = ContrastiveLogitsProcessor(tiny_neox(0, 4), T=2.0)
    proc.amateur_logits = lambda ids: torch.tensor(AMATEUR)  # noqa: E731
    ids, scores = torch.tensor([[1, 2]]), torch.tensor(ELM)
    assert torch.isfinite(proc(ids, scores)).all()
    proc.amateur_logits = lambda ids: torch.tensor([[0.0, -math.inf, 0.0, 0.0]])  # noqa: E731
    with pytest.raises(ValueError, match=INF_AT_KEPT):
        proc(ids, scores)
