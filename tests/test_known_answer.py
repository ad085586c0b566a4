"""apd.evaluation.known_answer: synthetic families with known asymptotes (each test well under 10 s)."""

import math

import numpy as np
import pytest
import torch

from apd.evaluation import known_answer as ka


@pytest.mark.parametrize("grid", ["pico", "pythia"])
@pytest.mark.parametrize("regime", ka.REGIMES)
def test_family_shapes_and_normalisation(grid, regime):
    x = ka.GRIDS[grid]
    probs, c = ka.synthetic_family(x, 7, 20, regime, 0.005, 3)
    assert probs.shape == (7, 20, len(x)) and c.shape == (7, 20)
    assert np.all(probs >= 0) and np.all(c > 0)
    np.testing.assert_allclose(probs.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(c.sum(-1), 1.0, atol=1e-12)


def test_family_is_deterministic_and_seeded():
    a = ka.synthetic_family(ka.PICO_X, 5, 20, "saturating", 0.005, 11)
    b = ka.synthetic_family(ka.PICO_X, 5, 20, "saturating", 0.005, 11)
    c = ka.synthetic_family(ka.PICO_X, 5, 20, "saturating", 0.005, 12)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.allclose(a[1], c[1])


def test_regimes_differ_as_designed():
    """Noise-free, p_ELM is further from the asymptote when the curves are still rising."""
    sat = ka.synthetic_family(ka.PICO_X, 40, 20, "saturating", 0.0, 0)
    ris = ka.synthetic_family(ka.PICO_X, 40, 20, "still_rising", 0.0, 0)
    e_sat = ka.median_abs_error(sat[0][..., -1], sat[1])
    e_ris = ka.median_abs_error(ris[0][..., -1], ris[1])
    assert e_ris > 1.5 * e_sat


def test_pico_grid_matches_the_package():
    from apd.family import pretrain

    counts = [pretrain.nonembedding_count(m) for _, m in pretrain.PicoConfig.default().sorted_members()]
    assert tuple(counts) == ka.PICO_NONEMBEDDING
    assert ka.PICO_X == pytest.approx([math.log(n) for n in counts])


def test_tuned_fitter_beats_p_elm_without_noise():
    """The known answer is recoverable in principle: noise-free saturating curves, the on-the-fly
    fitter (TUNED_FIT) lands closer to c_true than p_ELM, and the release's PLAIN_FIT does not."""
    probs, c = ka.synthetic_family(ka.PICO_X, 25, 20, "saturating", 0.0, 0)
    base = ka.median_abs_error(probs[..., -1], c)
    tuned = ka.estimate_fitter(probs, ka.PICO_X, "tuned", c)
    plain = ka.estimate_fitter(probs, ka.PICO_X, "plain", c)
    assert tuned.c_hat.shape == c.shape
    assert ka.median_abs_error(tuned.c_hat, c) < 0.6 * base
    assert ka.median_abs_error(plain.c_hat, c) > base
    assert tuned.fit_error < 1e-3  # the curves really pass through the members


def test_release_start_is_dead_and_conditioned_start_is_alive():
    probs, c = ka.synthetic_family(ka.PYTHIA_X, 5, 20, "saturating", 0.005, 1)
    rel = ka.estimate_joint(probs, ka.PYTHIA_X, c, start="release", steps=20, log_every=10)
    con = ka.estimate_joint(probs, ka.PYTHIA_X, c, start="conditioned", steps=20, log_every=10)
    assert rel.c_hat.shape == c.shape and list(rel.trace.step) == [0, 10, 20]
    assert rel.curve_alive < 1e-3  # c + exp(-(x - 1)) is flat at Pythia's x
    assert con.trace.curve_alive.iloc[0] == pytest.approx(1.0, abs=1e-4)  # a0 = median |p_ALM - p_ELM|
    np.testing.assert_allclose(rel.c_hat.sum(-1), 1.0, atol=1e-5)


def test_joint_starts_at_cd_and_is_deterministic():
    probs, c = ka.synthetic_family(ka.PICO_X, 5, 20, "still_rising", 0.005, 2)
    cd = ka.estimate_cd(probs, c)
    a = ka.estimate_joint(probs, ka.PICO_X, c, start="conditioned", steps=30, seed=4)
    b = ka.estimate_joint(probs, ka.PICO_X, c, start="conditioned", steps=30, seed=4)
    np.testing.assert_array_equal(a.c_hat, b.c_hat)
    assert a.trace.median_abs_error.iloc[0] == pytest.approx(ka.median_abs_error(cd.c_hat, c), abs=1e-6)
    frozen = ka.estimate_joint(probs, ka.PICO_X, c, start="release", steps=30, lr_c=1e-4)
    assert np.abs(frozen.c_hat - cd.c_hat).max() < 2e-3  # at the release's lr a free c cannot leave CD


def test_mean_hinge_is_a_hinge_of_the_mean():
    curve = torch.tensor([[0.0, 0.3], [0.0, 0.1]])
    target = torch.tensor([[0.0, 0.2], [0.0, 0.3]])  # overshoots +0.1 and -0.2: mean -0.05
    assert float(ka.loss_l2_mean_hinge(curve, target)) == 0.0
    from apd.amateur.objective import loss_l2

    assert float(loss_l2(curve, target)) == pytest.approx(math.sqrt(0.05), rel=1e-5)


def test_recovery_table_columns_and_rows():
    tab = ka.recovery_table("smoke", estimators=["p_elm", "cd_t1", "oracle"], n_positions=4)
    assert len(tab) == 3 * 2 * 2
    for col in (
        "estimator",
        "grid",
        "regime",
        "median_abs_error",
        "p_elm_error",
        "share_collapsed",
        "curve_alive",
        "steps",
        "seconds",
    ):
        assert col in tab.columns
    p = tab[tab.estimator == "p_elm"]
    np.testing.assert_allclose(p.median_abs_error, p.p_elm_error)
    assert (p.share_collapsed == 1.0).all()
    assert (tab[tab.estimator == "oracle"].median_abs_error == 0).all()


def test_logistic_decay_has_the_same_ends_as_the_exponential():
    """Noise-free: both decays share the asymptotes and differ along the members; the logistic one is 1
    at the ALM side and leaves the drawn remaining fraction at the ELM (before renormalisation)."""
    x = ka.GRIDS["pico"]
    e, c_e = ka.synthetic_family(x, 4, regime="saturating", noise=0.0, seed=3)
    lg, c_l = ka.synthetic_family(x, 4, regime="saturating", noise=0.0, seed=3, decay="logistic")
    assert np.allclose(c_e, c_l)  # same asymptotes
    assert not np.allclose(e[..., 1:-1], lg[..., 1:-1])
    g = ka._logistic_decay(np.linspace(0, 1, 5), np.array([[0.1, -0.2]]), np.array([[0.2, 0.05]]))
    assert np.allclose(g[..., 0], 1.0) and np.allclose(g[..., -1], [[0.2, 0.05]], atol=1e-6)
    assert np.all(np.diff(g, axis=-1) < 0)  # falls monotonically
    with pytest.raises(ValueError, match="decay must be one of"):
        ka.synthetic_family(x, 2, decay="power")


@pytest.mark.parametrize("asymptote", ka.TRUTHLIKE)
def test_truthlike_families_have_one_true_token(asymptote):
    """One-hot / near-one-hot asymptotes: one token holds all / most of c; the ALM gives it little
    (still rising curves bend after the ALM, so the ALM's probabilities are exactly its draw)."""
    probs, c = ka.synthetic_family(ka.PICO_X, 30, 10, "still_rising", 0.0, 4, asymptote=asymptote)
    np.testing.assert_allclose(c.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(probs.sum(1), 1.0, atol=1e-12)
    top = c.max(-1)
    lo, hi = (1.0, 1.0) if asymptote == "one_hot" else ka.NEAR_ONE_HOT_PEAK
    assert np.all(top >= lo - 1e-12) and np.all(top <= hi + 1e-12)
    gold = c.argmax(-1)
    alm_gold = probs[np.arange(30), gold, 0]
    assert np.all((alm_gold >= ka.TRUE_TOKEN_AMATEUR[0] - 1e-9) & (alm_gold <= ka.TRUE_TOKEN_AMATEUR[1] + 1e-9))
    assert np.all(probs[np.arange(30), gold, -1] > alm_gold)  # the true token's curve rises toward c


def test_binomial_noise_has_the_requested_rms():
    """The noise sd follows sqrt(p (1 - p)) and its root mean square is the noise level (before the
    clip at 0 and the renormalisation, which move it a little)."""
    clean, _ = ka.synthetic_family(ka.PICO_X, 200, 20, "saturating", 0.0, 5, asymptote="one_hot")
    noisy, _ = ka.synthetic_family(
        ka.PICO_X, 200, 20, "saturating", 0.02, 5, asymptote="one_hot", noise_shape="binomial"
    )
    rms = float(np.sqrt(np.mean((noisy - clean) ** 2)))
    assert 0.014 < rms < 0.026
    small = clean < 0.01  # near-zero probabilities get little noise, large ones most of it
    assert np.abs(noisy - clean)[small].mean() < np.abs(noisy - clean)[~small].mean() / 3
    with pytest.raises(ValueError, match="noise_shape must be one of"):
        ka.synthetic_family(ka.PICO_X, 2, noise_shape="gaussian")
    with pytest.raises(ValueError, match="asymptote must be one of"):
        ka.synthetic_family(ka.PICO_X, 2, asymptote="two_hot")
