"""REAL's THF model: the entropy curve and loss on known inputs, entropy labels, recovery of known
asymptotic entropies from synthetic curves, resume and determinism, save/load checks."""

import json
import math

import numpy as np
import pytest
import torch
from tiny_models import tiny_neox

from apd.amateur import entropies as E
from apd.amateur import thf as T
from apd.amateur.collect import ModelFamily
from apd.core import curves
from apd.core import entropy as H

V = 12


def test_poly10_curve_is_the_release_formula():
    # H(s) = c + b (a_0.5 / x^0.5 + sum_k a_k / x^k), x = max(f (s - g), 1), on raw log sizes
    rng = np.random.default_rng(0)
    s = np.array([16.76, 18.2, 19.8, 21.0, 23.1])
    c, b, f, g = 0.7, 1.3, 0.9, 15.0
    a = rng.uniform(0.1, 1.0, 11)
    x = np.maximum(f * (s - g), 1.0)
    want = c + b * (a[0] / x**0.5 + sum(a[k] / x**k for k in range(1, 11)))
    params = torch.tensor([[b, f, g, *a]], dtype=torch.float64)
    got = H.entropy_curve(s, torch.tensor([c], dtype=torch.float64), params, s, decay="poly10", condition="release")
    assert np.allclose(got.numpy()[0], want, rtol=1e-5)


def test_normalised_condition_maps_the_family_range():
    x = H.condition_x([9.45, 11.9, 14.39], [9.45, 14.39])
    assert np.allclose(
        x.numpy(), [1.0, 1.0 + H.NORMALISED_SPAN * (11.9 - 9.45) / (14.39 - 9.45), 1 + H.NORMALISED_SPAN]
    )
    with pytest.raises(ValueError, match="condition"):
        H.condition_x([1.0], [1.0, 2.0], "raw")
    with pytest.raises(ValueError, match="entropy curve"):
        H.check_decay("logistic")


def test_loss_weights_and_loss_on_known_inputs():
    w = H.loss_weights(3, 0.8)
    raw = np.array([0.64, 0.8, 1.0, 1.0])
    assert np.allclose(w.numpy(), raw / raw.mean())
    labels = torch.tensor([[[3.0, 2.0, 1.5]]])
    curve = labels + torch.tensor([0.5, 0.0, -1.0])
    last = torch.tensor([[2.5]])
    want = math.sqrt(float((w * torch.tensor([0.25, 0.0, 1.0, 1.0])).mean()))
    assert float(H.thf_loss(curve, last, labels)) == pytest.approx(want, rel=1e-6)
    assert float(H.thf_loss(labels, labels[..., -1], labels)) == 0.0


def test_entropy_labels_match_a_direct_computation(tmp_path):
    members = [tiny_neox(i, V, hidden=16, layers=1) for i in range(3)]
    fam = ModelFamily(members, vocab_size=V, log_sizes=[1.0, 2.0, 3.0], device="cpu")
    ids = np.random.default_rng(0).integers(0, V, 50)
    manifest = E.collect_entropies(fam, ids, tmp_path, seq_len=8, batch_size=2, progress=False)
    assert manifest["complete"] and manifest["corpus"]["n_chunks"] == 6
    labels = E.load_entropies(tmp_path)
    assert labels.entropies.shape == (6, 3, 8)
    with torch.no_grad():
        lp = torch.log_softmax(members[1](torch.from_numpy(ids[8:16])[None]).logits[0], -1)
    assert np.allclose(labels.entropies[1, 1], (-(lp.exp() * lp).sum(-1)).numpy(), atol=1e-5)
    again = E.collect_entropies(fam, ids, tmp_path, seq_len=8, progress=False)  # finished: read, not redone
    assert again["corpus"] == manifest["corpus"]
    with pytest.raises(ValueError, match="different"):
        E.collect_entropies(fam, ids[::-1].copy(), tmp_path, seq_len=8, progress=False)


def _synthetic(n_chunks=64, S=16, log_sizes=(1.0, 1.5, 2.0, 2.5, 3.0, 3.5), seed=0):
    """Labels from known exponential curves: each token id t has asymptote c_t and amplitude b_t."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, V, (n_chunks, S))
    c_tok = np.linspace(0.2, 2.4, V)[rng.permutation(V)]
    b_tok = rng.uniform(1.0, 2.0, V)
    x = H.condition_x(list(log_sizes), log_sizes).numpy()
    decay = np.exp(-0.6 * np.maximum(0, x - 1.0))  # f = 0.6, g = 1
    ent = c_tok[ids][:, None, :] + b_tok[ids][:, None, :] * decay[None, :, None]
    labels = E.EntropyLabels(
        input_ids=ids,
        entropies=ent.astype(np.float32),
        log_sizes=np.array(log_sizes),
        member_names=[f"m{i}" for i in range(len(log_sizes))],
    )
    return labels, c_tok


def test_recovers_known_asymptotic_entropies(tmp_path):
    labels, c_tok = _synthetic()
    cfg = T.THFConfig(decay="exponential", lr=1e-2, epochs=40, batch_size=8, warmup_steps=0.05)
    path = T.train_thf(cfg, tiny_neox(0, V), labels, tmp_path, progress=False)
    model = T.load_thf(path, log_sizes=labels.log_sizes)
    with torch.no_grad():
        out = model(torch.arange(V)[None])  # the asymptote reads the current token
    c = out.c[0].numpy()
    elm_gap = np.abs(labels.entropies[..., -1, :].mean() - c_tok.mean())
    err = np.abs(c - c_tok)
    assert err.mean() < 0.1 and err.mean() < 0.3 * elm_gap, (err, elm_gap)
    assert np.abs(out.last[0].numpy() - (c_tok + 0)).mean() > err.mean()  # the ELM's entropy is not c


def test_training_resumes_to_the_same_weights_and_is_deterministic(tmp_path):
    labels, _ = _synthetic(n_chunks=16, S=8)
    cfg = T.THFConfig(decay="poly10", lr=1e-3, epochs=2, batch_size=4, warmup_steps=1, checkpoint_every=3)
    alm = tiny_neox(0, V)
    full = T.train_thf(cfg, alm, labels, tmp_path / "a", progress=False)
    ckpt = T.train_thf(cfg, alm, labels, tmp_path / "b", stop_after=3, progress=False)
    assert ckpt.suffix == ".pt"
    resumed = T.train_thf(cfg, alm, labels, tmp_path / "b", progress=False)
    a, b = (torch.load(p / T.HEAD_FILE, weights_only=False)["state_dict"] for p in (full, resumed))
    assert all(torch.equal(a[k], b[k]) for k in a)
    log = [json.loads(line) for line in (tmp_path / "b" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == list(range(1, 9))


def test_a_finished_runs_damaged_log_is_set_aside_and_the_run_trained_again(tmp_path):
    """A finished run's log digest is recorded; a cut log is set aside, named, and the run trained again."""
    from apd.base import io

    labels, _ = _synthetic(n_chunks=16, S=8)
    cfg = T.THFConfig(decay="poly10", lr=1e-3, epochs=2, batch_size=4, warmup_steps=1)
    alm = tiny_neox(0, V)
    final = T.train_thf(cfg, alm, labels, tmp_path, progress=False)
    log = tmp_path / "train_log.jsonl"
    assert io.recorded_digest(log) == io.file_sha256(log)

    def logged():
        return [{k: v for k, v in json.loads(ln).items() if k != "seconds"} for ln in log.read_text().splitlines()]

    want, head = logged(), torch.load(final / T.HEAD_FILE, weights_only=False)["state_dict"]
    log.write_text(log.read_text()[:-10])
    with (
        pytest.warns(UserWarning, match=r"THF training log .*train_log\.jsonl is damaged"),
        pytest.raises(ValueError, match=r"THF training log .*train_log\.jsonl .*apd\.thf_model"),
    ):
        T.THFResult(final, cfg, tmp_path).train_log()
    assert T.train_thf(cfg, alm, labels, tmp_path, progress=False) == final  # trained again
    again = torch.load(final / T.HEAD_FILE, weights_only=False)["state_dict"]
    assert logged() == want and all(torch.equal(head[k], again[k]) for k in head)
    assert list(T.THFResult(final, cfg, tmp_path).train_log()["step"]) == list(range(1, 9))


def test_load_refuses_other_log_sizes_or_tokenizer(tmp_path, smoke_family):
    fam, built, _ = smoke_family
    labels, _ = _synthetic(n_chunks=8, S=8)
    cfg = T.THFConfig(epochs=1, batch_size=8, warmup_steps=0)
    path = T.train_thf(cfg, tiny_neox(0, V), labels, tmp_path, progress=False)
    with pytest.raises(ValueError, match="log sizes.*apd.thf_model"):
        T.load_thf(path, log_sizes=[1.0, 2.0, 3.0])
    blob = torch.load(path / T.HEAD_FILE, weights_only=False)
    blob["settings"]["tokenizer_id"] = "7:0000000000000000"
    torch.save(blob, path / T.HEAD_FILE)
    (path / "digests.json").unlink()  # edited on purpose; no digest to check
    with pytest.raises(ValueError, match="another tokenizer"):
        T.load_thf(path, tokenizer=fam.tokenizer)


def test_curve_is_the_core_decay():
    params = torch.rand(2, 3) + 0.5
    c = torch.rand(2)
    x = [8.0, 9.0, 10.0]
    got = H.entropy_curve(x, c, params, x, decay="exponential")
    assert torch.allclose(got, curves.exponential_decay(H.condition_x(x, x), c, params))
