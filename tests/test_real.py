"""REAL sampling's decoding side: the threshold formula, the REAL filter, and REALLogitsProcessor
inside apd.generate on left-padded batches against a step-by-step reference."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tiny_models import tiny_neox

import apd
from apd.amateur.thf import THFModel
from apd.core.filters import REAL, TopP, make_filters, real_top_p

V = 16


def test_threshold_formula_matches_an_independent_computation():
    rng = np.random.default_rng(0)
    c, h, T_r = rng.uniform(0, 3, 50), rng.uniform(0, 3, 50), 2.5
    want = [min(1.0, math.exp((ci - hi) / T_r)) for ci, hi in zip(c, h)]
    got = real_top_p(torch.tensor(c), torch.tensor(h), T_r)
    assert np.allclose(got.numpy(), want, atol=1e-6)
    assert float(real_top_p(torch.tensor(1.0), torch.tensor(1.0), 4.0)) == 1.0  # c = H_last: no truncation


def test_real_filter_is_top_p_per_row():
    lp = torch.log_softmax(torch.randn(3, V, generator=torch.Generator().manual_seed(1)), -1)
    real = REAL(1.0)
    real.set_entropies(torch.tensor([0.0, 1.0, 5.0]), torch.tensor([0.5, 3.0, 1.0]))
    p = real.top_p.tolist()
    got = real(lp)
    for row in range(3):
        assert torch.equal(got[row], TopP(min(1.0, p[row]))(lp[row : row + 1])[0])
    assert got[2].all()  # top-p 1 keeps everything


def test_make_filters_real_and_bad_temperatures():
    (f,) = make_filters("REAL", 4.0)
    assert isinstance(f, REAL) and f.T_r == 4.0
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="T_r"):
            make_filters("REAL", bad)
        with pytest.raises(ValueError, match="T_r"):
            real_top_p(torch.zeros(1), torch.zeros(1), bad)
    with pytest.raises(RuntimeError, match="REALLogitsProcessor"):
        REAL(1.0)(torch.zeros(1, V))


def _thf(seed=3, log_sizes=(1.0, 2.0, 3.0)):
    """A random THF model on a tiny LM whose thresholds vary with the context (top-p well below 1)."""
    model = THFModel(tiny_neox(seed, V), list(log_sizes), decay="exponential")
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        model.head.weight.copy_(torch.randn(model.head.weight.shape, generator=g) * 0.8)
        model.head.bias.zero_()
        model.head.bias[0] = -1.0  # c small, the curve well above it: top-p < 1
    return model.eval()


def _reference(elm, alm, thf, prompt, steps, T, T_r, window):
    """One unpadded row, step by step: THF on the last ``window`` tokens, nucleus on the ELM, CD masked."""
    ids, top_ps = list(prompt), []
    with torch.no_grad():
        for _ in range(steps):
            x = torch.tensor([ids])
            elm_lp = F.log_softmax(elm(x).logits[0, -1, :V].double(), -1)
            alm_lp = F.log_softmax(alm(x).logits[0, -1, :V].double(), -1)
            out = thf(torch.tensor([ids[-window:]]))
            c, h_last = float(out.c[0, -1]), float(out.curve[0, -1, -1])
            p = min(1.0, math.exp((c - h_last) / T_r))
            order = torch.argsort(elm_lp, descending=True)
            probs = elm_lp[order].exp()
            keep_sorted = (probs.cumsum(0) - probs) < p
            keep_sorted[0] = True
            keep = torch.zeros(V, dtype=torch.bool)
            keep[order[keep_sorted]] = True
            score = (elm_lp - alm_lp / T).masked_fill(~keep, -math.inf)
            ids.append(int(score.argmax()))
            top_ps.append(p)
    return ids[len(prompt) :], top_ps


def test_processor_in_generate_matches_step_by_step_reference_with_left_padding():
    elm, alm, thf = tiny_neox(0, V, initializer_range=0.3), tiny_neox(1, V, initializer_range=0.3), _thf()
    prompts, pad, steps, window = [[3, 5, 7, 9, 11, 2], [4, 6]], 0, 6, 4
    L = max(map(len, prompts))
    ids = torch.tensor([[pad] * (L - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (L - len(p)) + [1] * len(p) for p in prompts])
    cd = apd.ContrastiveLogitsProcessor(alm, T=2.0, filters=make_filters("REAL", 1.5), vocab_size=V)
    real = apd.REALLogitsProcessor(thf, processor=cd, window=window)
    seen = []
    real_call = real.thresholds
    real.thresholds = lambda input_ids: seen.append(real_call(input_ids).clone()) or seen[-1]
    out = apd.generate(
        elm, ids, mask, real, max_new_tokens=steps, do_sample=False, pad_token_id=pad, eos_token_id=None
    )
    top_ps = torch.stack(seen)  # (steps, B)
    assert (top_ps < 0.999).any(), "the test needs thresholds that truncate"
    for row, prompt in enumerate(prompts):
        want_ids, want_p = _reference(elm, alm, thf, prompt, steps, 2.0, 1.5, window)
        assert out[row, L:].tolist() == want_ids
        assert np.allclose(top_ps[:, row].numpy(), want_p, atol=1e-5)


def test_elm_plus_real_default_processor_and_sampling_is_seeded():
    elm, thf = tiny_neox(0, V, initializer_range=0.3), _thf()
    ids, mask = torch.tensor([[0, 3, 5], [4, 6, 8]]), torch.tensor([[0, 1, 1], [1, 1, 1]])
    outs = []
    for _ in range(2):
        torch.manual_seed(0)
        real = apd.REALLogitsProcessor(thf, T_r=2.0, vocab_size=V)
        outs.append(apd.generate(elm, ids, mask, real, max_new_tokens=5, do_sample=True, pad_token_id=0))
    assert torch.equal(outs[0], outs[1])


def test_processor_bad_input():
    thf = _thf()
    with pytest.raises(ValueError, match="T_r"):
        apd.REALLogitsProcessor(thf, T_r=0.0)
    with pytest.raises(ValueError, match="T_r"):
        apd.REALLogitsProcessor(thf)
    cd = apd.ContrastiveLogitsProcessor(tiny_neox(1, V), T=1.0, filters=make_filters("top-p", 0.9))
    with pytest.raises(ValueError, match="REAL filter"):
        apd.REALLogitsProcessor(thf, processor=cd)
    apd.REALLogitsProcessor(thf, T_r=2.0, processor=cd)  # adds REAL(2) to the CD filters
    assert any(isinstance(f, REAL) for f in cd.filters)


def test_processor_refuses_a_thf_model_of_another_tokenizer(smoke_family):
    fam, built, _ = smoke_family
    thf = _thf()
    thf.settings["tokenizer_id"] = "50277:0123456789abcdef"  # as if trained with another tokenizer
    with pytest.raises(ValueError, match="another tokenizer"):
        apd.REALLogitsProcessor(thf, T_r=2.0, tokenizer=fam.tokenizer)


def test_factuality_methods_take_real_thresholds(smoke_family):
    fam, built, _ = smoke_family
    fx = apd.evaluation.factuality
    thf = apd.load_thf(apd.thf_model(fam, built, scale="smoke", progress=False), device="cpu")
    dec = fx.methods.Decoders(
        fam.model(fam.elm), fam.tokenizer, alm=fam.model(fam.alm), vocab_size=fam.vocab_size, thf=thf
    )
    method = fx.methods.Method("CD", "REAL", 4.0, 2.0)
    assert method.label == "CD T=2 + REAL (T_r=4)"
    (proc,), _ = dec.processors_and_kwargs(method)
    assert isinstance(proc, apd.REALLogitsProcessor)
    assert isinstance(proc.processor, apd.ContrastiveLogitsProcessor) and proc.reals[0].T_r == 4.0
    ids, mask = dec.encode(["Ada was born in", "The"])
    out = apd.generate(dec.elm, ids, mask, proc, max_new_tokens=3, do_sample=True, pad_token_id=dec.pad_id)
    assert out.shape == (2, ids.shape[1] + 3)
    with pytest.raises(ValueError, match="THF model"):
        fx.methods.Decoders(fam.model(fam.elm), fam.tokenizer, vocab_size=fam.vocab_size).processors_and_kwargs(
            fx.methods.Method("ELM", "REAL", 4.0)
        )


def test_mean_top_p_averages_the_steps_of_running_rows():
    real = apd.REALLogitsProcessor(_thf(), T_r=1.5, vocab_size=V, pad_token_id=0)
    mask = torch.ones(2, 3, dtype=torch.long)
    real.prepare(mask)
    first = real.thresholds(torch.tensor([[3, 5, 7], [4, 6, 8]])).clone()  # the prompts' last tokens: both count
    second = real.thresholds(torch.tensor([[3, 5, 7, 9], [4, 6, 8, 0]])).clone()  # row 1 has ended (padding): left out
    assert real.top_p_count == 3
    assert real.mean_top_p == pytest.approx(float(first.sum() + second[0]) / 3, abs=1e-6)
    assert real.mean_top_p < 0.999
    real.prepare(mask)  # a new generation starts afresh
    assert real.top_p_count == 0 and math.isnan(real.mean_top_p)
