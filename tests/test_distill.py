"""Distilled on-the-fly APD (APDTrainConfig(objective="distill")): the loss by hand, the targets, the
known-answer check (a per-token free logit standing in for ALM' recovers the asymptotes better than
p_ELM, as the fitter does), the trainer, the cached targets, the gates, and bad input."""

import json
import math

import numpy as np
import pytest
import torch
from test_train import VOCAB, make_records, small_config, tiny_family  # noqa: F401

from apd.amateur import collect, config, distill, gates, objective, runs, train
from apd.core import curves
from apd.evaluation import ablations
from apd.evaluation import known_answer as ka


# ----------------------------------------------------------------------------- the loss, by hand


def test_loss_distill_hand_value_zero_at_target_and_nan_rows_left_out():
    t = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [float("nan")] * 3])
    q = torch.tensor([[0.25, 0.5, 0.25], [0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    want = (0.5 * math.log(0.5 / 0.25) + 0.0) / 2  # row 1: KL = 0; row 3: no target
    assert float(objective.loss_distill(t, q.log())) == pytest.approx(want, rel=1e-6)
    assert float(objective.loss_distill(t[1:2], q[1:2].log())) == pytest.approx(0.0, abs=1e-7)
    # a zero target probability with c = 0 there is no NaN (0 log 0 = 0)
    z = objective.loss_distill(torch.tensor([[1.0, 0.0]]), torch.log(torch.tensor([[1.0, 0.0]])))
    assert float(z) == 0.0
    # every row without a target: loss 0, gradient 0 (not NaN)
    c = torch.zeros(2, 3, requires_grad=True)
    loss = objective.loss_distill(torch.full((2, 3), float("nan")), torch.log_softmax(c, -1))
    loss.backward()
    assert float(loss.detach()) == 0.0 and bool(torch.isfinite(c.grad).all())
    with pytest.raises(ValueError, match="same shape"):
        objective.loss_distill(torch.ones(2, 3) / 3, torch.zeros(2, 4))


def test_distill_gradient_is_c_minus_target_in_the_logits():
    t = torch.tensor([[0.6, 0.3, 0.1]])
    z = torch.tensor([[0.3, -0.2, 0.5]], requires_grad=True)  # L_ELM - L_ALM'
    objective.loss_distill(t, torch.log_softmax(z, -1)).backward()
    assert torch.allclose(z.grad, torch.softmax(z, -1).detach() - t, atol=1e-6)


# ----------------------------------------------------------------------------- configuration, bad input


def test_objective_field_unknown_name_and_keys_of_paper_runs_unchanged():
    with pytest.raises(ValueError, match="objective must be one of"):
        config.APDTrainConfig(family="pico", lambda3=0.2, objective="distil")
    paper = config.APDTrainConfig(family="pico", lambda3=0.2)
    assert "objective" not in paper.to_dict()  # old cache keys and fingerprints stay
    d = config.APDTrainConfig(family="pico", lambda3=0.2, objective="distill")
    assert d.to_dict()["objective"] == "distill"
    assert config.APDTrainConfig.from_dict(d.to_dict()) == d
    assert config.APDTrainConfig.from_dict(paper.to_dict()) == paper
    assert runs.hash_key("a", d.to_dict()) != runs.hash_key("a", paper.to_dict())


def test_fit_targets_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="N members"):
        distill.fit_targets(torch.zeros(3, 4), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="stride"):
        distill.fit_targets(torch.zeros(3, 2, 4), [1.0, 2.0, 3.0], stride=0)


# ----------------------------------------------------------------------------- targets


def test_fit_targets_sum_to_one_stride_rows_and_small_tokens_keep_p_elm():
    models, sizes = tiny_family()
    rec = make_records(models, sizes, 1)[0]
    lp = torch.tensor(rec["member_logprobs"]).float()  # (N, S, K)
    t = distill.fit_targets(lp, sizes, stride=3, min_prob=0.02, fit=dict(iterations=50))
    assert t.shape == (12, 30)
    fitted = torch.isfinite(t).all(-1)
    assert fitted.tolist() == [s % 3 == 0 for s in range(12)] and bool(torch.isnan(t[~fitted]).all())
    assert torch.allclose(t[fitted].sum(-1), torch.ones(4), atol=1e-5)
    p = torch.softmax(lp, -1)
    small = (p.max(0).values < 0.02) & fitted[:, None]  # not fitted: p_ELM, up to the renormalisation
    assert small.any()
    for s in range(12):  # one renormalisation constant per position
        ratio = t[s][small[s]] / p[-1, s][small[s]]
        assert ratio.numel() == 0 or torch.allclose(ratio, ratio[0].expand_as(ratio), rtol=1e-4)


def _pairs(m, seed):
    """Token sets of K = 2 with known asymptotes: (p, 1 - p) with p from synthetic_curves at pico's x."""
    probs, c = curves.synthetic_curves(m, ka.PICO_X, noise=0.005, seed=seed)
    p = torch.stack([probs, 1 - probs], 1).clamp(1e-6, 1 - 1e-6)  # (P, K=2, N)
    return p, torch.stack([c, 1 - c], 1)  # (P, 2)


def test_distilled_objective_recovers_known_asymptotes_better_than_p_elm():
    """A per-token free logit z stands in for ALM' (as the known-answer chapter does for the joint
    objective), starting at the ALM; the distilled objective alone (no L3) moves c = softmax(L_ELM - z)
    onto the fitter's targets, which recover c_true far better than p_ELM at pico's sizes."""
    torch.manual_seed(0)
    p, c_true = _pairs(400, seed=1)
    lp = p.log().permute(2, 0, 1)  # (N, P, K)
    target = distill.fit_targets(
        lp, ka.PICO_X, **{k: distill.DISTILL_FIT[k] for k in ("min_prob",)}, fit=distill.DISTILL_FIT["fit"]
    )  # (P, K), every position
    l_elm, l_alm = lp[-1], lp[0]
    z = l_alm.clone().requires_grad_(True)  # ALM' starts at the ALM
    opt = torch.optim.Adam([z], lr=0.05)
    for _ in range(300):
        opt.zero_grad()
        objective.loss_distill(target, objective.asymptote(l_elm, z, "logit")).backward()
        opt.step()
    c_hat = objective.asymptote(l_elm, z.detach(), "prob")
    err = ka.median_abs_error(c_hat.numpy(), c_true.numpy())
    err_elm = ka.median_abs_error(p[..., -1].numpy(), c_true.numpy())
    err_cd = ka.median_abs_error(objective.asymptote(l_elm, l_alm, "prob").numpy(), c_true.numpy())
    err_fit = ka.median_abs_error(target.numpy(), c_true.numpy())
    assert err < 0.6 * err_elm and err < err_cd  # ~0.02 vs ~0.05 for p_ELM
    assert abs(err - err_fit) < 0.005  # it inherits the fitter's accuracy


# ----------------------------------------------------------------------------- the trainer


def test_distilled_training_lowers_its_loss_saves_an_alm_prime_without_mlp(tmp_path):
    models, sizes = tiny_family()
    records = make_records(models, sizes, 8)
    cfg = small_config(objective="distill", epochs=4, lr=1e-2)
    steps = []
    out = train.train_alm_prime(
        cfg, models[0], records, tmp_path / "run", progress=False, callback=lambda s, r: steps.append(r)
    )
    assert all(math.isfinite(r[k]) for r in steps for k in ("loss", "distill", "l3"))
    assert np.mean([r["distill"] for r in steps[-2:]]) < 0.9 * np.mean([r["distill"] for r in steps[:2]])
    assert not (out / "curve_mlp.pt").exists()
    saved = json.loads((out / "apd_train_config.json").read_text())["config"]
    assert saved["objective"] == "distill" and saved["distill_fit"] == json.loads(json.dumps(distill.DISTILL_FIT))
    assert gates._objective(out) == "distill"
    # the same folder refuses the paper's objective (another fingerprint)
    with pytest.raises(ValueError, match="different run"):
        train.train_alm_prime(small_config(epochs=4, lr=1e-2), models[0], records, tmp_path / "run", progress=False)


def _collection(tmp_path, models, sizes, n_chunks=4):
    """A collection folder in apd.amateur.collect's format, from the tiny family."""
    family = collect.ModelFamily(
        models, VOCAB, names=[f"m{i}" for i in range(len(models))], log_sizes=sizes, device="cpu"
    )
    ids = torch.randint(0, VOCAB, (n_chunks * 12 + 1,), generator=torch.Generator().manual_seed(0))
    out = tmp_path / "collected"
    collect.collect_probabilities(
        family, ids.numpy(), out, collect.CollectConfig(seq_len=12, chunks_per_shard=2), progress=False
    )
    return out


def test_cached_targets_gates_and_ablation_config(tmp_path):
    models, sizes = tiny_family()
    cdir = _collection(tmp_path, models, sizes)
    settings = dict(distill.DISTILL_FIT, fit=dict(distill.DISTILL_FIT["fit"], iterations=30))
    t1 = distill.collection_targets(cdir, None, 3, settings=settings, cache=tmp_path / "cache")
    folder = distill.targets_dir(cdir, ["m0", "m1", "m2", "m3"], settings, tmp_path / "cache")
    assert len(t1) == 3 and t1[0].shape == (12, 30)
    assert sorted(p.name for p in folder.glob("*.safetensors")) == [
        "targets-00000.safetensors",
        "targets-00001.safetensors",
    ]
    assert (folder / "targets-00000.safetensors.sha256").exists()
    t2 = distill.collection_targets(cdir, None, 3, settings=settings, cache=tmp_path / "cache")  # from the cache
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(t1, t2))
    other = distill.targets_dir(cdir, ["m0", "m3"], settings, tmp_path / "cache")
    assert other != folder  # keyed by the members fitted
    # a trained distilled ALM' passes through the gates like any ALM'
    records = list(collect.iter_records(cdir))
    cfg = small_config(objective="distill", epochs=1, batch_size=2, micro_batch_size=2)
    out = train.train_alm_prime(
        cfg,
        models[0],
        distill.WithTargets(records, t1 + [t1[0]]),
        tmp_path / "run",
        log_sizes=sizes,
        member_names=["m0", "m1", "m2", "m3"],
        progress=False,
    )
    g = gates.gates_or_none(out, cdir, max_chunks=1, device="cpu")
    assert g is not None and g.n_positions == 12 and math.isfinite(g.curve_alive) and math.isfinite(g.moved_kl)
    # its fidelity: KL from the fitter's targets to its own c, to the expert's and to CD's, all measured
    assert g.distilled and all(math.isfinite(v) and v >= 0 for v in (g.fidelity_apd, g.fidelity_elm, g.fidelity_cd))
    assert g.alive == (g.fidelity_apd < g.fidelity_elm)
    # the ablations chapter's row
    main = small_config()
    v = ablations.ablation_config(main, "distilled", ["m0", "m1", "m2", "m3"], sizes)
    assert v.objective == "distill" and ablations.config_changes(v, main) == "objective=distill"
    assert ablations.label("distilled", v) == "distilled on the fly"
    assert ablations.validation_losses(out, v, cdir, 1) == {}


def test_docstring_examples_run():
    import doctest

    for module in (distill, objective):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
        assert result.attempted and result.failed == 0, module.__name__
