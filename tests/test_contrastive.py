"""The one contrastive score against an independent NumPy formula, and every caller through it."""

import numpy as np
import pytest
import torch

from apd.core.contrastive import Reciprocal, contrastive_scores
from apd.core.filters import TopK, TopP
from apd.core.theory import cd_logits
from apd.decoding.processors import ContrastiveLogitsProcessor
from apd.evaluation import blindness, qa_metrics
from apd.world import truth

rng = np.random.default_rng(0)


def np_log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def reference(elm, am, T, k=None, ties="keep", renorm=False):
    """Written out independently: log_softmax(ELM) - log_softmax(AM) / T on the ELM's top k."""
    e, a = np_log_softmax(elm), np_log_softmax(am)
    s = e - a / T
    if k is not None:
        if ties == "keep":
            keep = e >= np.sort(e, -1)[..., -k][..., None]
        else:
            keep = np.zeros_like(e, dtype=bool)
            np.put_along_axis(keep, np.argsort(-e, -1, kind="stable")[..., :k], True, -1)
        s = np.where(keep, s, -np.inf)
    if renorm:
        s = np_log_softmax(s)
    return s


@pytest.mark.parametrize("T", [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("k", [None, 1, 5, 20])
def test_matches_an_independent_numpy_formula(T, k):
    elm, am = rng.normal(size=(6, 40)) * 3, rng.normal(size=(6, 40)) * 3
    want = reference(elm, am, T, k)
    for inv_T in (1.0 / T, Reciprocal(T)):
        np.testing.assert_allclose(contrastive_scores(elm, am, inv_T, top_k=k), want, rtol=1e-12, atol=1e-12)
        got = contrastive_scores(torch.tensor(elm), torch.tensor(am), inv_T, top_k=k).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if k is not None:
        ren = contrastive_scores(elm, am, inv_T=1.0 / T, top_k=k, renormalize="log")
        np.testing.assert_allclose(ren, reference(elm, am, T, k, renorm=True), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(np.exp(ren).sum(-1), 1.0)


def test_tie_rules():
    elm = np.log(np.array([[0.4, 0.2, 0.2, 0.2]]))
    am = np.zeros((1, 4))
    kept = np.isfinite(contrastive_scores(elm, am, 1.0, top_k=2, ties="keep"))
    assert kept.tolist() == [[True, True, True, True]]  # the release's QA rule keeps every tie
    exact = np.isfinite(contrastive_scores(elm, am, 1.0, top_k=2, ties="exact"))
    assert exact.sum() == 2 and exact[0, 0]
    assert np.isfinite(contrastive_scores(torch.tensor(elm), torch.tensor(am), 1.0, top_k=2, ties="exact")).sum() == 2
    with pytest.raises(ValueError, match="ties"):
        contrastive_scores(elm, am, 1.0, top_k=2, ties="some")


def test_temperature_conventions_and_bad_input():
    elm, am = rng.normal(size=(3, 10)), rng.normal(size=(3, 10))
    np.testing.assert_allclose(
        contrastive_scores(elm, am, Reciprocal(4.0)), contrastive_scores(elm, am, 0.25), atol=1e-12
    )
    # a float inv_T multiplies, Reciprocal(T) divides: each exactly as written
    np.testing.assert_array_equal(contrastive_scores(elm, am, Reciprocal(3.0), normalize=False), elm - am / 3.0)
    np.testing.assert_array_equal(contrastive_scores(elm, am, 0.3, normalize=False), elm - 0.3 * am)
    grid = contrastive_scores(elm, am, inv_T=[0.0, 0.5], top_k=3, renormalize="log")
    assert grid.shape == (2, 3, 10)
    np.testing.assert_allclose(grid[1], contrastive_scores(elm, am, inv_T=0.5, top_k=3, renormalize="log"))
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="T"):
            contrastive_scores(elm, am, Reciprocal(bad))
    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="inv_T"):
            contrastive_scores(elm, am, inv_T=bad)
    with pytest.raises(ValueError, match="differ in shape"):
        contrastive_scores(elm, am[:, :9], 1.0)
    with pytest.raises(TypeError, match="both"):
        contrastive_scores(elm, torch.tensor(am), 1.0)
    with pytest.raises(ValueError, match="finite"):
        contrastive_scores(elm, np.full((3, 10), -np.inf), inv_T=1.0, top_k=2, check_finite=True)


def test_every_caller_goes_through_it():
    elm, am = rng.normal(size=(4, 30)), rng.normal(size=(4, 30))
    # Theorem 1 (raw logits, no normalisation)
    np.testing.assert_array_equal(cd_logits(elm, am, 2.0), elm - am / 2.0)
    # blindness: log-softmax, top-k with ties kept, no renormalisation
    np.testing.assert_allclose(blindness.cd_scores(elm, am, 2.0, top_k=5), reference(elm, am, 2.0, 5), atol=1e-12)
    # QA metrics: renormalised over the top k (ties kept)
    np.testing.assert_allclose(
        qa_metrics.cd_scores_over_topk(elm, am, 0.5, k=5), reference(elm, am, 2.0, 5, renorm=True), atol=1e-9
    )
    # truth: probabilities over candidate ids
    lp_e, lp_a = np_log_softmax(elm), np_log_softmax(am)
    ids = np.argsort(-lp_e, -1)[:, :5]
    q = truth.contrastive_topk(lp_e, lp_a, 0.5, ids)
    want = np.exp(reference(elm, am, 2.0, 5, renorm=True))
    np.testing.assert_allclose(q, np.take_along_axis(want, ids, -1), atol=1e-9)
    # the decoding processors: filters on the ELM, -inf outside
    scores = contrastive_scores(
        torch.tensor(elm, dtype=torch.float32),
        torch.tensor(am, dtype=torch.float32),
        Reciprocal(2.0),
        filters=[TopK(5), TopP(0.99)],
    )
    kept = torch.isfinite(scores)
    np.testing.assert_allclose(scores[kept].numpy(), reference(elm, am, 2.0, 5)[kept.numpy()], rtol=1e-5, atol=1e-5)
    assert issubclass(ContrastiveLogitsProcessor, object)


# ----------------------------------------------------------------------------- bad inputs (reliability issue)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("who", ["elm", "amateur"])
def test_nan_or_plus_inf_in_either_input_is_refused_and_named(kind, bad, who):
    elm, am = rng.normal(size=(2, 5)), rng.normal(size=(2, 5))
    (elm if who == "elm" else am)[1, 2] = bad
    if kind == "torch":
        elm, am = torch.tensor(elm, dtype=torch.float32), torch.tensor(am, dtype=torch.float32)
    for kwargs in ({}, {"renormalize": "prob"}, {"normalize": False}, {"top_k": 2}):
        with pytest.raises(
            ValueError,
            match=rf"^{who} \(the \w+'s logits\) holds NaN or \+inf \(1 of 10 values, the first at index \(1, 2\)\)",
        ):
            contrastive_scores(elm, am, 0.5, **kwargs)
    with pytest.raises(ValueError, match=rf"^{who} \(the \w+'s logits\) holds NaN"):
        cd_logits(elm, am, 2.0)


def test_minus_inf_stays_a_masked_token():
    elm, am = rng.normal(size=(2, 5)), rng.normal(size=(2, 5))
    elm[0, 1], am[0, 1], am[1, 3] = -np.inf, -np.inf, -np.inf
    elm[1, 3] = -9.0  # outside the top 2: the amateur's -inf there does not matter
    for e, a in ((elm, am), (torch.tensor(elm), torch.tensor(am))):
        s = np.asarray(contrastive_scores(e, a, 0.5, top_k=2, renormalize="prob"))
        assert s[0, 1] == 0.0 and s[1, 3] == 0.0 and not np.isnan(s).any()
        np.testing.assert_allclose(s.sum(-1), 1.0)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_ids_must_be_integer_ids_inside_the_vocabulary(kind):
    elm, am = rng.normal(size=(1, 3)), rng.normal(size=(1, 3))
    as_ids = np.array if kind == "numpy" else torch.tensor
    if kind == "torch":
        elm, am = torch.tensor(elm), torch.tensor(am)
    for bad in ([[0, -1]], [[0, 3]]):
        with pytest.raises(ValueError, match=r"ids must lie in \[0, 3\)"):
            contrastive_scores(elm, am, 1.0, ids=as_ids(bad))
    with pytest.raises(TypeError, match="ids must be integer token ids, got dtype"):
        contrastive_scores(elm, am, 1.0, ids=as_ids([[0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"ids \(2,\) must have as many axes as the logits \(1, 3\)"):
        contrastive_scores(elm, am, 1.0, ids=as_ids([0, 1]))
    full = np.asarray(contrastive_scores(elm, am, 1.0))
    for dtype in ("int64", "int32"):
        ids = as_ids([[2, 0]]).astype(dtype) if kind == "numpy" else as_ids([[2, 0]]).to(getattr(torch, dtype))
        np.testing.assert_array_equal(np.asarray(contrastive_scores(elm, am, 1.0, ids=ids)), full[:, [2, 0]])


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_vocab_size_is_a_positive_int_within_the_logits(kind):
    elm, am = rng.normal(size=(1, 4)), rng.normal(size=(1, 5))
    if kind == "torch":
        elm, am = torch.tensor(elm), torch.tensor(am)
    for bad in (-1, 0, 5):
        with pytest.raises(ValueError, match=rf"vocab_size must be an integer in \[1, 4\], got {bad}"):
            contrastive_scores(elm, am, 1.0, vocab_size=bad)
    with pytest.raises(ValueError, match=r"vocab_size must be an integer in \[1, 4\], got 2\.5"):
        contrastive_scores(elm, am, 1.0, vocab_size=2.5)
    with pytest.raises(TypeError, match=r"vocab_size must be a number, got the str '3'"):
        contrastive_scores(elm, am, 1.0, vocab_size="3")
    assert contrastive_scores(elm, am, 1.0, vocab_size=3).shape[-1] == 3
    assert contrastive_scores(elm, am, 1.0, vocab_size=4).shape[-1] == 4


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_T_inf_and_inv_T_zero_give_the_expert_alone_even_where_the_amateur_is_minus_inf(kind):
    elm, am = rng.normal(size=(3, 6)), rng.normal(size=(3, 6))
    am[0, 2] = -np.inf
    am[1, :] = -np.inf  # an amateur with nothing to say: the expert alone does not need it
    if kind == "torch":
        elm, am = torch.tensor(elm), torch.tensor(am)
    expert = contrastive_scores(elm, elm, 0.0)
    for inv_T in (Reciprocal(float("inf")), 0.0):
        np.testing.assert_array_equal(np.asarray(contrastive_scores(elm, am, inv_T)), np.asarray(expert))
    grid = contrastive_scores(elm, am, [0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(grid[0]), np.asarray(expert))
    per_row = Reciprocal(np.array([[np.inf], [np.inf], [np.inf]]) if kind == "numpy" else torch.full((3, 1), np.inf))
    np.testing.assert_array_equal(np.asarray(contrastive_scores(elm, am, per_row)), np.asarray(expert))
    with pytest.raises(ValueError, match="amateur has no finite"):  # a finite T still needs the amateur
        contrastive_scores(elm, am, Reciprocal(2.0))


def test_type_errors_name_the_argument():
    elm, am = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    with pytest.raises(TypeError, match=r"T must hold numbers, got the str '2\.0'.*without quotes"):
        contrastive_scores(elm, am, Reciprocal("2.0"))
    with pytest.raises(TypeError, match=r"T must hold numbers, got the str '2\.0'"):
        cd_logits(elm, am, "2.0")
    with pytest.raises(TypeError, match=r"inv_T must hold numbers, got the str '0\.5'"):
        contrastive_scores(elm, am, "0.5")
    with pytest.raises(TypeError, match="inv_T must hold numbers, got the bool True"):
        contrastive_scores(elm, am, True)
    with pytest.raises(TypeError, match=r"elm must be a numpy array or a torch tensor.*got list"):
        contrastive_scores(elm.tolist(), am, 0.5)
    with pytest.raises(TypeError, match=r"amateur .*real-valued logits, got dtype bool"):
        contrastive_scores(elm, am > 0, 0.5)
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, 4\], got 5"):
        contrastive_scores(elm, am, 0.5, top_k=5)
    with pytest.raises(TypeError, match="top_k must be a number, got the str '2'"):
        contrastive_scores(elm, am, 0.5, top_k="2")


def test_integer_torch_logits_are_scored_in_float32():
    e, a = torch.tensor([[1, 2, 3]]), torch.tensor([[3, 1, 2]])
    got = contrastive_scores(e, a, 0.5, top_k=2)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, contrastive_scores(e.float(), a.float(), 0.5, top_k=2), rtol=0, atol=0)
    torch.testing.assert_close(cd_logits(e, a, 2.0), torch.tensor([[-0.5, 1.5, 2.0]]), rtol=0, atol=0)


def test_numpy_is_scored_by_the_torch_code_and_handed_back_as_numpy():
    elm, am = rng.normal(size=(3, 12)), rng.normal(size=(3, 12))
    for kwargs in ({}, {"top_k": 4, "renormalize": "prob"}, {"filters": [TopP(0.9)]}, {"normalize": False}):
        for inv_T in (0.5, [0.0, 0.5], Reciprocal(2.0)):
            got = contrastive_scores(elm, am, inv_T, **kwargs)
            want = contrastive_scores(torch.tensor(elm), torch.tensor(am), inv_T, **kwargs)
            assert isinstance(got, np.ndarray) and got.dtype == np.float64
            np.testing.assert_array_equal(got, want.numpy())
    e32, a32 = elm.astype(np.float32), am.astype(np.float32)
    assert contrastive_scores(e32, a32, 0.5).dtype == np.float32
    assert contrastive_scores(e32, a32, [0.0, 0.5]).dtype == np.float64  # numpy's float64 grid promotes, as before
