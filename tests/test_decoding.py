"""Tests for apd.decoding: CD/APD logits processors, filters, generate settings, DoLa."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import GPTNeoXConfig, LogitsProcessorList, TopPLogitsWarper

import tiny_models

from apd.core import contrastive, curves
from apd.core import filters as filters_mod
from apd.core.filters import AlphaMask, TopK, TopP
from apd.decoding import generation
from apd.decoding.processors import (
    APDLogitsProcessor,
    ContrastiveLogitsProcessor,
    FilteredLogitsProcessor,
    OnTheFlyLogitsProcessor,
)

V = 60  # the shared "tokenizer" vocabulary
PAD, EOS = 2, 1


def tiny_neox(seed, vocab, layers, hidden=32):
    kw = dict(heads=4, bos_token_id=0, eos_token_id=EOS, pad_token_id=PAD, initializer_range=0.3)
    return tiny_models.tiny_neox(seed, vocab, hidden, layers, attn_implementation="eager", **kw)


def gen(elm, ids, mask, proc, n, do_sample=False, **kw):
    """generation.generate for ``n`` new tokens, returning the scores of every step."""
    kw = dict(output_scores=True, return_dict_in_generate=True, pad_token_id=PAD, **kw)
    return generation.generate(elm, ids, mask, proc, max_new_tokens=n, do_sample=do_sample, **kw)


@pytest.fixture(scope="module")
def models():
    # different padded vocabularies, like Pythia members; peaked distributions (init range 0.3)
    return tiny_neox(0, vocab=72, layers=4), tiny_neox(1, vocab=64, layers=2)


@pytest.fixture(scope="module")
def batch():
    g = torch.Generator().manual_seed(5)
    lengths = [7, 3, 5]
    L = max(lengths)
    ids = torch.full((3, L), PAD, dtype=torch.long)
    mask = torch.zeros((3, L), dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, L - n :] = torch.randint(3, V, (n,), generator=g)
        mask[i, L - n :] = 1
    return ids, mask


def manual_logits(model, seq, prompt_mask):
    """Next-token logits of every row of seq, no cache, mask = prompt mask then ones."""
    B, n = seq.shape
    mask = torch.cat([prompt_mask, torch.ones(B, n - prompt_mask.shape[1], dtype=torch.long)], dim=1)
    pos = (mask.cumsum(1) - 1).clamp(min=0)
    with torch.no_grad():
        return model(input_ids=seq, attention_mask=mask, position_ids=pos).logits[:, -1, :].double()


def manual_keep(elm_lp, top_p=None, top_k=None, alpha=None):
    """Independent numpy implementation of the filters on one row of ELM log-probs."""
    p = np.exp(elm_lp)
    order = np.argsort(-p, kind="stable")
    keep = np.ones_like(p, dtype=bool)
    if top_p is not None:
        k = np.zeros_like(keep)
        mass = 0.0
        for tok in order:
            if mass < top_p:
                k[tok] = True
            mass += p[tok]
        keep &= k
    if top_k is not None:
        k = np.zeros_like(keep)
        k[order[:top_k]] = True
        keep &= k
    if alpha is not None:
        keep &= p >= alpha * p.max()
    return keep


def check_steps(out, elm, amateur, prompt_mask, inv_T, filt):
    L = prompt_mask.shape[1]
    assert len(out.scores) >= 4
    n_kept = 0
    for t, got in enumerate(out.scores):
        seq = out.sequences[:, : L + t]
        le = manual_logits(elm, seq, prompt_mask)[:, :V]
        la = manual_logits(amateur, seq, prompt_mask)[:, :V]
        elm_lp = F.log_softmax(le, -1)
        want = elm_lp - inv_T * F.log_softmax(la, -1)
        for b in range(seq.shape[0]):
            keep = manual_keep(elm_lp[b].numpy(), **filt)
            row = got[b, :V].double()
            assert torch.isinf(row[~torch.from_numpy(keep)]).all(), f"step {t} row {b}: filtered token not -inf"
            assert torch.isfinite(row[torch.from_numpy(keep)]).all()
            torch.testing.assert_close(row[torch.from_numpy(keep)], want[b][torch.from_numpy(keep)], atol=1e-4, rtol=0)
        assert torch.isneginf(got[:, V:]).all(), "ids beyond the shared vocabulary must be -inf"
        n_kept += int(torch.isfinite(got).sum())
    if filt:  # the filters really removed tokens, and kept more than one now and then
        assert out.sequences.shape[0] * len(out.scores) < n_kept < out.sequences.shape[0] * len(out.scores) * V


@pytest.mark.parametrize(
    "do_sample,filt",
    [(False, {}), (True, {"top_p": 0.8, "top_k": 20}), (True, {"alpha": 0.1})],
)
def test_processor_matches_manual_recomputation(models, batch, do_sample, filt):
    elm, alm = models
    ids, mask = batch
    make = {"top_p": TopP, "top_k": TopK, "alpha": AlphaMask}
    filters = [make[k](v) for k, v in filt.items()]
    proc = ContrastiveLogitsProcessor(alm, T=2.0, filters=filters, vocab_size=V)
    torch.manual_seed(0)
    out = gen(elm, ids, mask, proc, 6, do_sample)
    assert out.sequences.shape[1] == ids.shape[1] + 6
    check_steps(out, elm, alm, mask, 0.5, filt)
    # the amateur's cache really was used incrementally: it has seen all but the last token
    assert proc._ids.shape[1] == out.sequences.shape[1] - 1


def test_apd_processor_with_direct_generate_call(models, batch):
    """The documented raw HF call (prepare, then generate with neutral warpers) also matches."""
    elm, alm_prime = models
    ids, mask = batch
    proc = APDLogitsProcessor(alm_prime, filters=[TopP(0.9)], vocab_size=V)
    assert proc.T == 1.0
    proc.prepare(mask)
    torch.manual_seed(1)
    neutral = dict(top_k=0, top_p=1.0, temperature=1.0, output_scores=True, return_dict_in_generate=True)
    procs = LogitsProcessorList([proc])
    out = elm.generate(
        ids, attention_mask=mask, logits_processor=procs, max_new_tokens=5, do_sample=True, pad_token_id=PAD, **neutral
    )
    check_steps(out, elm, alm_prime, mask, 1.0, {"top_p": 0.9})


def test_generate_ignores_the_models_own_sampling_defaults(models, batch):
    """A generation_config with top_k / repetition_penalty (as Qwen1.5 ships) must not act."""
    elm, alm = models
    ids, mask = batch
    saved = elm.generation_config.top_k, elm.generation_config.repetition_penalty
    elm.generation_config.top_k, elm.generation_config.repetition_penalty = 3, 1.5
    try:
        proc = ContrastiveLogitsProcessor(alm, T=2.0, filters=[TopP(0.9)], vocab_size=V)
        torch.manual_seed(2)
        out = gen(elm, ids, mask, proc, 4, True)
    finally:
        elm.generation_config.top_k, elm.generation_config.repetition_penalty = saved
    check_steps(out, elm, alm, mask, 0.5, {"top_p": 0.9})


def test_left_padding_is_masked_for_the_amateur(models, batch):
    """Row 1 of the padded batch gets the same scores as that prompt alone, unpadded."""
    elm, alm = models
    ids, mask = batch
    proc = ContrastiveLogitsProcessor(alm, T=2.0, vocab_size=V)
    out = gen(elm, ids, mask, proc, 4)
    alone = ids[1:2, mask[1].bool()]
    proc1 = ContrastiveLogitsProcessor(alm, T=2.0, vocab_size=V)
    out1 = gen(elm, alone, None, proc1, 4)
    assert torch.equal(out.sequences[1, ids.shape[1] :], out1.sequences[0, alone.shape[1] :])
    for s, s1 in zip(out.scores, out1.scores):
        torch.testing.assert_close(s[1, :V], s1[0, :V], atol=1e-4, rtol=0)


def test_positions_from_the_mask_for_an_absolute_position_amateur(models, batch):
    """GPT-2 has learned absolute positions, so wrong position ids on left-padded rows would
    change its scores (rotary GPT-NeoX would not notice a shift)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(3)
    cfg = dict(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=4, initializer_range=0.3)
    gpt2 = GPT2LMHeadModel(GPT2Config(**cfg, attn_implementation="eager")).eval()
    elm, _ = models
    ids, mask = batch
    proc = ContrastiveLogitsProcessor(gpt2, T=2.0, vocab_size=V)
    out = gen(elm, ids, mask, proc, 4)
    check_steps(out, elm, gpt2, mask, 0.5, {})


def test_new_generation_resets_the_cache(models, batch):
    elm, alm = models
    ids, mask = batch
    proc = ContrastiveLogitsProcessor(alm, T=2.0, vocab_size=V)
    first = gen(elm, ids, mask, proc, 4)
    other = gen(elm, ids[:2, 2:], mask[:2, 2:], proc, 4)  # another batch
    again = gen(elm, ids, mask, proc, 4)
    fresh = gen(elm, ids[:2, 2:], mask[:2, 2:], ContrastiveLogitsProcessor(alm, T=2.0, vocab_size=V), 4)
    assert torch.equal(first.sequences, again.sequences)
    for a, b in zip(first.scores, again.scores):
        torch.testing.assert_close(a, b)
    assert torch.equal(other.sequences, fresh.sequences)


def test_missing_mask_and_vocab_errors(models, batch):
    elm, alm = models
    ids, mask = batch
    proc = ContrastiveLogitsProcessor(alm, T=2.0, vocab_size=V)
    with pytest.raises(ValueError, match="prepare"):
        elm.generate(
            ids, attention_mask=mask, logits_processor=LogitsProcessorList([proc]), max_new_tokens=2, pad_token_id=PAD
        )
    proc = ContrastiveLogitsProcessor(alm, T=2.0)  # 72 vs 64 padded ids and no vocab_size
    with pytest.raises(ValueError, match="vocab_size"):
        generation.generate(elm, ids, mask, proc, max_new_tokens=2, do_sample=False, pad_token_id=PAD)
    with pytest.raises(ValueError, match="top_p"):
        gen(elm, ids, mask, ContrastiveLogitsProcessor(alm, T=2.0, vocab_size=V), 2, True, top_p=0.9)
    with pytest.raises(ValueError, match="T must be > 0"):
        ContrastiveLogitsProcessor(alm, T=0.0)
    proc = ContrastiveLogitsProcessor(alm, T=2.0, vocab_size=V).prepare(mask[:, 1:])
    with pytest.raises(ValueError, match="prompt is"):
        proc(ids, torch.zeros(3, 72))


# ---------------------------------------------------------------- filters on hand-made rows


def lp(row):
    return torch.log(torch.tensor([row], dtype=torch.float64))


# probabilities deliberately not in vocabulary order: token 3 is the most likely
HAND = [0.15, 0.05, 0.2, 0.5, 0.1]


def kept(f, row=HAND):
    return set(torch.nonzero(f(lp(row))[0]).flatten().tolist())


def test_top_p_by_hand():
    assert kept(TopP(0.4)) == {3}  # 0.5 alone reaches 0.4
    assert kept(TopP(0.6)) == {3, 2}  # 0.5 < 0.6, add 0.2 -> 0.7
    assert kept(TopP(0.8)) == {3, 2, 0}  # 0.7 < 0.8, add 0.15 -> 0.85
    assert kept(TopP(0.9)) == {3, 2, 0, 4}  # 0.85 < 0.9, add 0.1 -> 0.95
    assert kept(TopP(1.0)) == {0, 1, 2, 3, 4}
    assert kept(TopP(1e-6)) == {3}  # never empty


def test_top_k_alpha_and_composition_by_hand():
    assert kept(TopK(2)) == {3, 2}
    assert kept(TopK(99)) == {0, 1, 2, 3, 4}
    assert kept(AlphaMask(0.25)) == {3, 2, 0}  # threshold 0.125
    assert kept(AlphaMask(0.35)) == {3, 2}  # threshold 0.175
    assert kept(AlphaMask(0.0)) == {0, 1, 2, 3, 4}
    both = filters_mod.keep_mask(lp(HAND), [TopP(0.9), TopK(2)])
    assert set(torch.nonzero(both[0]).flatten().tolist()) == {3, 2}
    assert [repr(f) for f in filters_mod.make_filters("top-p k20", 0.8)] == ["TopP(0.8)", "TopK(20)"]
    assert filters_mod.make_filters("NA") == []
    with pytest.raises(ValueError, match="unknown filter"):
        filters_mod.make_filters("typical", 0.9)
    with pytest.raises(ValueError):
        TopP(0.0)


def test_filters_work_row_by_row():
    rows = lp(HAND).repeat(2, 1)
    rows[1] = torch.log(torch.tensor([0.9, 0.04, 0.03, 0.02, 0.01], dtype=torch.float64))
    keep = TopP(0.8)(rows)
    assert keep[0].tolist() == [True, False, True, True, False]
    assert keep[1].tolist() == [True, False, False, False, False]


def test_top_p_agrees_with_hugging_face_warper():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(64, 50, generator=g) * 3
    for p in (0.3, 0.6, 0.8, 0.95):
        ours = TopP(p)(F.log_softmax(logits, -1))
        hf = torch.isfinite(TopPLogitsWarper(top_p=p)(None, logits.clone()))
        assert torch.equal(ours, hf), p


def test_filtered_processor_is_filtered_elm():
    g = torch.Generator().manual_seed(1)
    scores = torch.randn(2, 12, generator=g) * 2
    out = FilteredLogitsProcessor([TopK(3)], vocab_size=10)(None, scores)
    elm_lp = F.log_softmax(scores[:, :10], -1)
    top3 = elm_lp.topk(3, -1).indices
    for b in range(2):
        finite = torch.isfinite(out[b]).nonzero().flatten()
        assert set(finite.tolist()) == set(top3[b].tolist())
        torch.testing.assert_close(out[b, finite], elm_lp[b, finite])
    assert torch.isneginf(out[:, 10:]).all()


def test_contrastive_scores_formula_by_hand():
    elm = torch.tensor([[2.0, 1.0, 0.0]])
    alm = torch.tensor([[0.0, 1.0, 3.0]])
    got = contrastive.contrastive_scores(elm, alm, contrastive.Reciprocal(4.0))
    e = elm - torch.logsumexp(elm, -1, keepdim=True)
    a = alm - torch.logsumexp(alm, -1, keepdim=True)
    torch.testing.assert_close(got, e - a / 4.0)
    # the token ELM finds unlikely but ALM finds even less likely: removed by alpha masking
    got = contrastive.contrastive_scores(elm, alm, contrastive.Reciprocal(4.0), filters=[AlphaMask(0.3)])
    assert torch.isneginf(got[0, 2]) and torch.isfinite(got[0, :2]).all()


# ---------------------------------------------------------------- baselines


def test_temperature_baseline_uses_hf_warper(models, batch):
    elm, _ = models
    ids, mask = batch
    out = gen(elm, ids, mask, None, 2, True, temperature=0.5)
    raw = manual_logits(elm, ids, mask).float()
    torch.testing.assert_close(out.scores[0], raw / 0.5, atol=1e-4, rtol=0)


def test_dola_layers_for_gpt_neox(models, batch, monkeypatch):
    from transformers.generation import utils as gen_utils

    for n, which, want in (
        (32, "high", range(16, 32, 2)),
        (32, "low", range(0, 16, 2)),
        (6, "high", [3, 5]),
        (44, "high", range(24, 44, 2)),
    ):
        assert generation.dola_candidate_layers(GPTNeoXConfig(num_hidden_layers=n), which) == list(want)
    elm, _ = models
    ids, mask = batch
    seen = []
    real = gen_utils._dola_select_contrast

    def spy(layers, logits, final):
        seen.append(list(layers))
        return real(layers, logits, final)

    monkeypatch.setattr(gen_utils, "_dola_select_contrast", spy)
    for layers in ("high", "low"):
        seen.clear()
        kw = generation.dola_generate_kwargs(elm, layers)
        assert kw == {"dola_layers": layers, "repetition_penalty": 1.2}
        out = generation.generate(elm, ids, mask, None, max_new_tokens=3, do_sample=True, pad_token_id=PAD, **kw)
        assert out.shape == (3, ids.shape[1] + 3)
        assert seen and all(s == generation.dola_candidate_layers(elm, layers) for s in seen)
    assert generation.dola_candidate_layers(elm, "high") == [2]  # the 4-layer tiny ELM


# --------------------------------------------------------------------------------------------
# APD on the fly as a logits processor (appended with scripts/benchmarks.py)
# --------------------------------------------------------------------------------------------


OTF_SIZES = [1.0, 2.0, 3.5]  # x of (smallest, mid, ELM); any increasing values


@pytest.fixture(scope="module")
def smallest():
    return tiny_neox(2, vocab=64, layers=1, hidden=16)


def test_on_the_fly_processor_fits_all_members_at_every_step(models, batch, smallest, monkeypatch):
    """At every step the fitter gets the logits of all three members (ALM first, ELM last, over the
    shared vocabulary; checked against a recomputation without caches), and the scores are
    log((1 - w) p_ELM + w p_AP) of that fit at the ELM's top k, -inf elsewhere.
    (The fit itself is checked on the recorded inputs: it is so sensitive that float32
    cache-vs-no-cache logit differences of 1e-6 moved some outputs by 0.3 after 25 Adam steps.)"""
    elm, mid = models
    ids, mask = batch
    fit = dict(iterations=25)
    seen = []
    real = curves.on_the_fly_asymptotes

    def spy(logits, log_sizes, **kw):
        seen.append((logits.clone(), list(log_sizes), kw))
        return real(logits, log_sizes, **kw)

    monkeypatch.setattr(curves, "on_the_fly_asymptotes", spy)
    proc = OnTheFlyLogitsProcessor([smallest, mid], OTF_SIZES, w=0.4, top_k=8, vocab_size=V, **fit)
    out = gen(elm, ids, mask, proc, 3)
    L = ids.shape[1]
    assert len(seen) == len(out.scores) == 3
    for t, (got, (stack, sizes, kw)) in enumerate(zip(out.scores, seen)):
        seq = out.sequences[:, : L + t]
        manual = torch.stack([manual_logits(m, seq, mask)[:, :V].float() for m in (smallest, mid, elm)])
        torch.testing.assert_close(stack, manual, atol=1e-4, rtol=0)
        assert sizes == OTF_SIZES and kw == dict(top_k=8, **fit)
        top, p_elm, p_ap, _ = real(stack, OTF_SIZES, top_k=8, **fit)
        want = curves.mix_on_the_fly(p_elm, p_ap, 0.4).log()
        assert torch.isfinite(got).sum(-1).eq(8).all(), "exactly the top 8 tokens get a score"
        torch.testing.assert_close(got.gather(-1, top), want, atol=1e-6, rtol=0)
        assert torch.isneginf(got[:, V:]).all()
        assert torch.equal(out.sequences[:, L + t], top.gather(-1, want.argmax(-1, keepdim=True))[:, 0])
        # the asymptotes moved the distribution: w = 0.4 is not the ELM renormalised over its top 8
        assert not torch.allclose(want.exp(), p_elm, atol=1e-3)
    assert proc.last_fit.asymptote.shape == (ids.shape[0] * 8,)


def test_on_the_fly_with_weight_zero_is_greedy_elm(models, batch, smallest):
    elm, mid = models
    ids, mask = batch
    plain = generation.generate(
        elm, ids, mask, FilteredLogitsProcessor(vocab_size=V), max_new_tokens=4, do_sample=False, pad_token_id=PAD
    )  # greedy ELM over the shared vocabulary
    proc = OnTheFlyLogitsProcessor([smallest, mid], OTF_SIZES, w=0.0, vocab_size=V, iterations=5)
    out = generation.generate(elm, ids, mask, proc, max_new_tokens=4, do_sample=False, pad_token_id=PAD)
    assert torch.equal(out, plain)


def test_on_the_fly_bad_arguments(models, smallest):
    _, mid = models
    with pytest.raises(ValueError, match="log_sizes"):
        OnTheFlyLogitsProcessor([smallest, mid], [1.0, 2.0], w=0.5)
    with pytest.raises(ValueError, match="must increase"):
        OnTheFlyLogitsProcessor([smallest, mid], [1.0, 3.0, 2.0], w=0.5)
    for bad in (1.5, -0.1):
        with pytest.raises(ValueError, match="w must be in"):
            OnTheFlyLogitsProcessor([smallest, mid], OTF_SIZES, w=bad)
    with pytest.raises(TypeError, match="w must be a number"):
        OnTheFlyLogitsProcessor([smallest, mid], OTF_SIZES, w="0.5")
    with pytest.raises(ValueError, match="at least 3 members"):
        OnTheFlyLogitsProcessor([smallest], [1.0, 2.0], w=0.5)
    proc = OnTheFlyLogitsProcessor([smallest, mid], OTF_SIZES, w=0.25)
    assert proc.w == 0.25 and "w=0.25" in repr(proc)


def test_generate_refuses_an_empty_batch_with_a_clear_error():
    expert = tiny_neox(0, V, 2)
    for ids in (torch.zeros(0, 3, dtype=torch.long), torch.zeros(1, 0, dtype=torch.long)):
        with pytest.raises(ValueError, match=r"input_ids hold no"):
            generation.generate(expert, ids, None, (), max_new_tokens=2, pad_token_id=PAD)
    with pytest.raises(ValueError, match=r"\(batch, length\) tensor"):
        generation.generate(expert, torch.tensor([3, 4, 5]), None, (), max_new_tokens=2, pad_token_id=PAD)
