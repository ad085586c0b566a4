"""The family's own noise (apd.evaluation.noise.family_noise): the held-out and the in-sample measurement."""

import doctest

import numpy as np
import pytest

from apd.evaluation import noise


def test_examples():
    assert doctest.testmod(noise).failed == 0


def _bent_family(noise_sd=0.0, seed=0):
    """Member log-probs ``(N, B, k)`` on a gentle bend toward per-item asymptotes, with noise of sd
    ``noise_sd`` on the probabilities; the candidates are every token."""
    x = np.log([1e4, 3e4, 1e5, 3e5, 1e6])
    rng = np.random.default_rng(seed)
    B, k = 6, 4
    c = rng.dirichlet(np.ones(k), size=B)
    q = rng.dirichlet(np.ones(k), size=B)
    g = np.exp(-0.3 * (x - x[0]))  # (N,)
    p = c[None] + (q - c)[None] * g[:, None, None]  # (N, B, k), sums to 1 over k
    if noise_sd:
        p = np.clip(p + noise_sd * rng.standard_normal(p.shape), 1e-4, None)
        p = p / p.sum(-1, keepdims=True)
    return np.log(p), x, np.tile(np.arange(k), (B, 1))


def test_held_out_noise_grows_with_the_members_noise():
    lp, x, ids = _bent_family()
    clean = noise.family_noise(noise.HELD_OUT, member_logprobs=lp, log_sizes=x, ids=ids, iterations=200)
    lp_noisy, _, _ = _bent_family(noise_sd=0.05)
    noisy = noise.family_noise(noise.HELD_OUT, member_logprobs=lp_noisy, log_sizes=x, ids=ids, iterations=200)
    assert clean < 0.02 and noisy > 2 * clean


def test_held_out_noise_needs_four_members_and_its_inputs():
    with pytest.raises(ValueError, match="at least 4 members"):
        noise.family_noise(
            noise.HELD_OUT, member_logprobs=np.zeros((3, 2, 5)), log_sizes=[1.0, 2.0, 3.0], ids=np.zeros((2, 2), int)
        )
    with pytest.raises(ValueError, match="needs member_logprobs, log_sizes and ids"):
        noise.family_noise(noise.HELD_OUT, gates_l1_curve=0.04)


def test_in_sample_noise_is_the_gates_l1_when_it_was_measured():
    assert noise.family_noise(noise.IN_SAMPLE, gates_l1_curve=0.047) == 0.047
    assert noise.family_noise(noise.IN_SAMPLE, gates_l1_curve=1) == 1.0
    for missing in (None, "n/a", 0.0, -0.01, float("nan")):
        assert noise.family_noise(noise.IN_SAMPLE, gates_l1_curve=missing) is None


def test_an_unknown_method_is_refused():
    with pytest.raises(ValueError, match="held_out, in_sample"):
        noise.family_noise("loo")
