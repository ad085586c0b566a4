"""The one contrastive score against an independent NumPy formula, and every caller through it."""

import numpy as np
import pytest
import torch

from apd.core.contrastive import Reciprocal, contrastive_scores, top_k_keep
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
    assert top_k_keep(torch.tensor(elm), 2, "exact").sum() == 2
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
