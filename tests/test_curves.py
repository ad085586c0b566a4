"""apd.core.curves: flip, decay functions, and the on-the-fly fitter (APD on the fly, appendix C.2)."""

import math

import pytest
import torch

from apd.core import curves

# ----------------------------------------------------------------------------- flip


def test_flip_mask_flips_rising_curves_only_ties_kept():
    first = torch.tensor([0.5, 0.2, 0.3])
    last = torch.tensor([0.1, 0.4, 0.3])
    assert curves.flip_mask(first, last).tolist() == [False, True, False]


def test_flip_values_prob_and_logit_and_involution():
    v = torch.tensor([[0.2, 0.5, 0.9], [0.7, 0.4, 0.1]])
    mask = torch.tensor([True, False])[:, None]
    out = curves.flip_values(v, mask)
    assert torch.allclose(out, torch.tensor([[0.8, 0.5, 0.1], [0.7, 0.4, 0.1]]))
    assert torch.allclose(curves.flip_values(out, mask), v)
    logv = torch.log(v)
    assert torch.allclose(curves.flip_values(logv, mask, "logit")[0], -logv[0])
    with pytest.raises(ValueError, match="space"):
        curves.flip_values(v, mask, "logits")


# ----------------------------------------------------------------------------- decay functions

X = torch.tensor([16.0, 17.5, 18.0], dtype=torch.float64)
C = torch.tensor(0.1, dtype=torch.float64)


def test_exponential_decay_hand_values():
    out = curves.exponential_decay(X, C, torch.tensor([0.5, 2.0, 17.0], dtype=torch.float64))
    expect = [0.1 + 0.5, 0.1 + 0.5 * math.exp(-1.0), 0.1 + 0.5 * math.exp(-2.0)]
    assert torch.allclose(out, torch.tensor(expect, dtype=torch.float64))


def test_logistic_decay_hand_values():
    out = curves.logistic_decay(X, C, torch.tensor([0.5, 2.0, 17.0], dtype=torch.float64))
    expect = [0.1 + 0.5 / 2, 0.1 + 0.5 / (1 + math.e), 0.1 + 0.5 / (1 + math.exp(2.0))]
    assert torch.allclose(out, torch.tensor(expect, dtype=torch.float64))


def test_polynomial_decay_hand_values():
    p1 = torch.tensor([0.5, 2.0, 17.0, 0.3, 0.2], dtype=torch.float64)  # a, b, d, e_0.5, e_1
    out = curves.get_decay("poly1")(X, C, p1)
    # z = max(1, 2 (x - 17)) = 1, 1, 2
    expect = [0.1 + 0.5 * (0.3 + 0.2), 0.1 + 0.5 * (0.3 + 0.2), 0.1 + 0.5 * (0.3 / math.sqrt(2) + 0.2 / 2)]
    assert torch.allclose(out, torch.tensor(expect, dtype=torch.float64))
    p3 = torch.tensor([0.5, 2.0, 17.0, 0.3, 0.2, 0.1, 0.05], dtype=torch.float64)
    out3 = curves.get_decay("poly3")(torch.tensor([18.0], dtype=torch.float64), C, p3)
    z = 2.0
    assert out3.item() == pytest.approx(0.1 + 0.5 * (0.3 / z**0.5 + 0.2 / z + 0.1 / z**2 + 0.05 / z**3))


@pytest.mark.parametrize("name", curves.DECAY_NAMES)
def test_every_decay_tends_to_c_decreases_and_broadcasts(name):
    dec = curves.get_decay(name)
    params = torch.rand(2, 3, dec.n_params, dtype=torch.float64) + 0.5
    c = torch.rand(2, 3, dtype=torch.float64)
    x = torch.linspace(0, 4000, 9, dtype=torch.float64)
    out = dec(x, c, params)
    assert out.shape == (2, 3, 9)
    assert torch.all(out[..., 1:] <= out[..., :-1] + 1e-12)  # positive params: non-increasing in x
    assert torch.allclose(out[..., -1], c, atol=0.05 if name.startswith("poly") else 1e-9)  # poly: slow z^-0.5 tail
    assert dec.param_names[:3] == ("a", "b", "d")


def test_get_decay_names_and_errors():
    assert curves.get_decay("poly2").n_params == 6
    with pytest.raises(ValueError, match="exponential"):
        curves.get_decay("gaussian")
    with pytest.raises(ValueError):
        curves.get_decay("poly0")


def test_safe_sqrt_value_and_finite_gradient_at_zero():
    x = torch.tensor([0.0, 4.0], requires_grad=True)
    y = curves.safe_sqrt(x)
    y.sum().backward()
    assert y.tolist() == [0.0, 2.0]
    assert x.grad.tolist() == [0.0, 0.25]


def test_curve_losses_hand_values():
    curve = torch.tensor([[0.5, 0.3, 0.25]])
    target = torch.tensor([[0.4, 0.3, 0.21]])
    # L1 = sqrt(mean(0.1^2, 0)) ; L2 = sqrt(0.04)
    expect = math.sqrt(0.01 / 2) + 10 * math.sqrt(0.04)
    assert curves.curve_losses(curve, target, 10.0).item() == pytest.approx(expect, rel=1e-5)
    assert curves.curve_losses(curve, torch.tensor([[0.4, 0.3, 0.3]]), 10.0).item() == pytest.approx(
        math.sqrt(0.005), rel=1e-5
    )


# ----------------------------------------------------------------------------- the fitter


def test_fitter_recovers_known_asymptotes_from_noisy_curves():
    probs, truth = curves.synthetic_curves(1000, seed=3)
    fit = curves.fit_curves(probs, curves.PYTHIA_LOG_SIZES)
    err = (fit.asymptote.double() - truth).abs()
    naive = (probs[:, -1] - truth).abs()  # p_ELM as the asymptote: what extrapolation must beat
    assert fit.ok.all()
    assert bool((fit.flipped == (truth > 0.5)).all())  # rising curves (asymptote above 0.5 here) were flipped
    assert err.median() < 0.02
    assert err.median() < 0.5 * naive.median()
    assert err.quantile(0.9) < 0.75 * naive.quantile(0.9)
    assert fit.asymptote.min() >= 0 and fit.asymptote.max() <= 1
    assert (fit.params >= 0).all() and (fit.c >= 0).all()


def test_fitter_recovers_a_noiseless_curve_closely():
    x = torch.tensor(curves.PYTHIA_LOG_SIZES, dtype=torch.float64)
    p = curves.exponential_decay(
        x, torch.tensor([0.2], dtype=torch.float64), torch.tensor([[0.4, 0.45, 16.0]], dtype=torch.float64)
    )
    fit = curves.fit_curves(p, x, dtype=torch.float64)
    assert abs(fit.asymptote.item() - 0.2) < 0.01 < abs(p[0, -1].item() - 0.2)
    rising = curves.fit_curves(1 - p, x, dtype=torch.float64)
    assert rising.flipped.item() and abs(rising.asymptote.item() - 0.8) < 0.01


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_vectorised_fit_equals_one_by_one_bit_for_bit(dtype):
    """A curve's fit depends on that curve alone: no batch size changes a bit of it."""
    probs, _ = curves.synthetic_curves(9, seed=4)
    a = curves.fit_curves(probs, curves.PYTHIA_LOG_SIZES, iterations=150, dtype=dtype)
    b = curves.fit_curves_one_by_one(probs, curves.PYTHIA_LOG_SIZES, iterations=150, dtype=dtype)
    assert torch.equal(a.params, b.params) and torch.equal(a.asymptote, b.asymptote)


def _moved_by_noise(iterations: int, m: int = 600, noise: float = 1e-6) -> torch.Tensor:
    """|change| of each fitted asymptote when every probability moves by Gaussian ``noise``."""
    probs, _ = curves.synthetic_curves(m, seed=1)
    g = torch.Generator().manual_seed(5)
    noisy = (probs + noise * torch.randn(probs.shape, generator=g, dtype=probs.dtype)).clamp(0.0, 1.0)
    fit = lambda p: curves.fit_curves(p, curves.PYTHIA_LOG_SIZES, iterations=iterations).asymptote  # noqa: E731
    return (fit(probs) - fit(noisy)).abs()


def test_float_noise_cannot_choose_the_asymptote():
    """Rounding-sized noise (1e-6: a batched against a single forward pass) moves at most 1% of
    600 asymptotes by more than 1e-3 after 30 steps, none by 0.01. A start chosen by argmin over
    the grid, or placed on the ELM hinge's kink, moved 37% of them, some by 0.28: float noise chose
    among near-equal fits."""
    moved = _moved_by_noise(30)
    assert float((moved > 1e-3).double().mean()) <= 0.01 and float(moved.max()) < 0.01


def test_float_noise_moves_few_asymptotes_at_the_papers_400_steps():
    """At the paper's 400 steps Adam's path through a flat valley still amplifies noise for a few
    curves (docs/design-notes.md, "A fit that float noise cannot move"): at most 5% move by more
    than 1e-3 and none by 0.05 (with the argmin start: 14%, and 0.24)."""
    moved = _moved_by_noise(400)
    assert float((moved > 1e-3).double().mean()) <= 0.05 and float(moved.max()) < 0.05


def test_nan_rows_are_refitted_with_half_the_lr(monkeypatch):
    real = curves._adam_fit
    calls = []

    def flaky(q, x, theta0, decay, lambda2, lr, iterations, betas, final):
        out = real(q, x, theta0, decay, lambda2, lr, iterations, betas, final)
        calls.append((len(q), lr))
        if lr == 1e-2:
            out[0] = float("nan")  # the first row "diverges" at the initial lr
        return out

    probs, _ = curves.synthetic_curves(4, seed=5)
    monkeypatch.setattr(curves, "_adam_fit", flaky)
    fit = curves.fit_curves(probs, curves.PYTHIA_LOG_SIZES, iterations=20, max_halvings=3)
    assert calls[0] == (4, 1e-2) and calls[1] == (1, 5e-3)
    assert torch.allclose(fit.lr, torch.tensor([5e-3, 1e-2, 1e-2, 1e-2])) and fit.ok.all() and len(calls) == 2
    assert torch.isfinite(fit.params).all() and torch.isfinite(fit.asymptote).all()


def test_rows_that_never_converge_fall_back_to_p_elm(monkeypatch):
    real = curves._adam_fit

    def broken(q, x, theta0, *args):
        out = real(q, x, theta0, *args)
        out[-1] = float("nan")
        return out

    monkeypatch.setattr(curves, "_adam_fit", broken)
    probs, _ = curves.synthetic_curves(3, seed=6)
    fit = curves.fit_curves(probs, curves.PYTHIA_LOG_SIZES, iterations=5, max_halvings=2)
    assert fit.ok.tolist() == [True, True, False]
    assert fit.asymptote[-1].item() == pytest.approx(probs[-1, -1].item(), abs=1e-6)


def test_fitter_runs_under_inference_mode_and_no_grad():
    probs, _ = curves.synthetic_curves(8, seed=7)
    with torch.inference_mode():
        fit = curves.fit_curves(probs, curves.PYTHIA_LOG_SIZES, iterations=10)
    assert torch.isfinite(fit.asymptote).all()
    with torch.no_grad():
        assert torch.isfinite(curves.fit_curves(probs, curves.PYTHIA_LOG_SIZES, iterations=10).asymptote).all()


@pytest.mark.parametrize("name", ["logistic", "poly1", "poly3"])
def test_fitter_accepts_every_decay(name):
    probs, truth = curves.synthetic_curves(64, seed=8)
    fit = curves.fit_curves(probs, curves.PYTHIA_LOG_SIZES, decay=name, iterations=100)
    assert fit.params.shape == (64, curves.get_decay(name).n_params)
    assert fit.ok.all() and (fit.asymptote - truth.float()).abs().median() < 0.1


def test_fitter_input_errors():
    with pytest.raises(ValueError, match="M curves"):
        curves.fit_curves(torch.rand(7), curves.PYTHIA_LOG_SIZES)
    with pytest.raises(ValueError, match="increase"):
        curves.fit_curves(torch.rand(2, 3), [3.0, 2.0, 4.0])
    with pytest.raises(ValueError, match="one entry per member"):
        curves.fit_curves(torch.rand(2, 3), [1.0, 2.0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        curves.fit_curves(torch.rand(2, 3) + 1, [1.0, 2.0, 3.0])


# ----------------------------------------------------------------------------- APD on the fly


def test_on_the_fly_distribution():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 2, 3, 50, generator=g) * 3  # N=4 members, 2 x 3 contexts, vocab 50
    sizes = [10.0, 11.0, 12.5, 14.0]
    ids, p_elm, p_ap, fit = curves.on_the_fly_asymptotes(logits, sizes, top_k=5, iterations=30)
    assert ids.shape == p_elm.shape == p_ap.shape == (2, 3, 5)
    assert torch.equal(ids, logits[-1].topk(5, -1).indices)
    assert torch.allclose(p_elm, torch.softmax(logits[-1].gather(-1, ids), -1))
    assert torch.allclose(p_ap.sum(-1), torch.ones(2, 3)) and (p_ap >= 0).all()
    assert fit.asymptote.shape == (2 * 3 * 5,)
    # log-probabilities give the same answer as logits (only the softmax over the top k matters)
    a = curves.on_the_fly_asymptotes(logits.double(), sizes, top_k=5, iterations=30, dtype=torch.float64)[2]
    b = curves.on_the_fly_asymptotes(
        torch.log_softmax(logits.double(), -1), sizes, top_k=5, iterations=30, dtype=torch.float64
    )[2]
    assert torch.allclose(a, b, atol=1e-3)  # same inputs up to rounding; Adam at the hinge kink amplifies it
    assert torch.allclose(curves.mix_on_the_fly(p_elm, p_ap, 0.0), p_elm)
    mixed = curves.mix_on_the_fly(p_elm, p_ap, 0.3)
    assert torch.allclose(mixed, 0.7 * p_elm + 0.3 * p_ap) and torch.allclose(mixed.sum(-1), torch.ones(2, 3))
    for w in (0.0, 0.05, 0.3, 0.55, 1.0):  # exactly (1 - w) p + w q, w by position or by name
        assert torch.equal(curves.mix_on_the_fly(p_elm, p_ap, w), (1 - w) * p_elm + w * p_ap)
        assert torch.equal(curves.mix_on_the_fly(p_elm, p_ap, w=w), (1 - w) * p_elm + w * p_ap)
    for bad in (1.5, -0.1):
        with pytest.raises(ValueError, match="w must be"):
            curves.mix_on_the_fly(p_elm, p_ap, bad)


def test_benchmark_reports_speedup():
    out = curves.benchmark_fitter(n_vectorised=256, n_loop=2, iterations=40)
    assert out["curves_per_s_vectorised"] > out["curves_per_s_one_by_one"] > 0


# ----------------------------------------------------------------------------- bad settings and inputs


def _one_curve():
    x = [9.5, 10.1, 10.9, 11.7, 12.6, 14.4]
    return (0.6 - 0.3 * torch.exp(-0.8 * (torch.tensor(x) - 9.5)))[None], x


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(lambda2=-1), ValueError, r"lambda2 must be a finite number >= 0, got -1"),
        (dict(lambda2=math.nan), ValueError, r"lambda2 must be a finite number >= 0, got nan"),
        (dict(lambda2=math.inf), ValueError, r"lambda2 must be a finite number >= 0, got inf"),
        (dict(lambda2="10"), TypeError, r"lambda2 must be a number, got the str '10'"),
        (dict(lr=0.0), ValueError, r"lr must be a finite number > 0, got 0\.0"),
        (dict(lr="1e-3"), TypeError, r"lr must be a number, got the str '1e-3'"),
        (dict(iterations=0), ValueError, r"iterations must be an integer >= 1, got 0"),
        (dict(iterations=2.5), ValueError, r"iterations must be an integer >= 1, got 2\.5"),
        (dict(max_halvings=-1), ValueError, r"max_halvings must be an integer >= 0, got -1"),
        (dict(final_lr_fraction=0.0), ValueError, r"final_lr_fraction must be a finite number in \(0, 1\], got 0"),
        (dict(final_lr_fraction=2.0), ValueError, r"final_lr_fraction must be a finite number in \(0, 1\], got 2"),
        (dict(betas=(1.0, 0.9)), ValueError, r"betas\[0\] must be in \[0, 1\)"),
        (dict(betas=0.9), ValueError, r"betas must be two numbers in \[0, 1\) \(Adam's\), got 0\.9"),
        (dict(dtype="float32"), TypeError, r"dtype must be a torch floating dtype, got 'float32'"),
    ],
)
def test_fit_settings_out_of_range_are_refused_by_name(kwargs, error, match):
    p, x = _one_curve()
    with pytest.raises(error, match=match):
        curves.fit_curves(p, x, **kwargs)


def test_negative_lambda2_no_longer_gives_a_wrong_asymptote_with_ok_true():
    p, x = _one_curve()
    with pytest.raises(ValueError, match="lambda2"):
        curves.fit_curves(p, x, lambda2=-1)
    fit = curves.fit_curves(p, x, lambda2=10.0)
    assert round(float(fit.asymptote[0]), 3) == 0.6 and bool(fit.ok[0]) and float(fit.loss[0]) >= 0


def test_strings_and_non_finite_log_sizes_are_refused():
    p, x = _one_curve()
    with pytest.raises(ValueError, match="log_sizes must be finite natural logs .*got inf"):
        curves.fit_curves(p, x[:-1] + [math.inf])
    with pytest.raises(ValueError, match="log_sizes must be finite natural logs .*got nan"):
        curves.fit_curves(p, x[:-1] + [math.nan])
    with pytest.raises(TypeError, match="log_sizes must hold real numbers"):
        curves.fit_curves(p, [str(v) for v in x])
    with pytest.raises(TypeError, match="probs must hold real numbers"):
        curves.fit_curves([[str(v) for v in p[0].tolist()]], x)
    with pytest.raises(TypeError, match=r"w must be a number, got the str '0\.5'"):
        curves.mix_on_the_fly(torch.tensor([0.5, 0.5]), torch.tensor([1.0, 0.0]), "0.5")
    logits = torch.randn(3, 2, 10)
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, 10\], got 11"):
        curves.on_the_fly_asymptotes(logits, x[:3], top_k=11)
    logits[0, 1, 4] = math.nan
    with pytest.raises(ValueError, match="member_logits holds NaN"):
        curves.on_the_fly_asymptotes(logits, x[:3], top_k=5)


def test_every_decay_pickles():
    """A decay travels to worker processes with the models that hold it (apd.base.jobs)."""
    import pickle

    x, c, p = torch.tensor([1.0, 2.0, 3.0]), torch.tensor(0.2), torch.ones(7)
    for name in ("exponential", "logistic", "poly3"):
        decay = curves.get_decay(name)
        again = pickle.loads(pickle.dumps(decay))
        assert torch.equal(again(x, c, p[: decay.n_params]), decay(x, c, p[: decay.n_params]))
