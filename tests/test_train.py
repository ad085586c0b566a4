"""apd.amateur.train: losses, the curve MLP, the collected-data reader, and collect -> train -> save -> resume
on a family of tiny random GPTNeoX models (records synthesised here, in collect's schema)."""

import json
import math
import os
import warnings

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, GPTNeoXConfig, GPTNeoXForCausalLM

from apd.amateur import config, objective, train
from apd.amateur import data as data_mod
from apd.core import curves

VOCAB = 160


# ----------------------------------------------------------------------------- a tiny family and its records


def tiny_family(hidden=(8, 16, 24, 32)):
    """GPTNeoX members of growing width; log sizes = ln(non-embedding parameter count)."""
    models, sizes = [], []
    for i, h in enumerate(hidden):
        torch.manual_seed(100 + i)
        kw = dict(max_position_embeddings=64, rotary_pct=1.0, initializer_range=0.3, tie_word_embeddings=False)
        kw.update(vocab_size=VOCAB, hidden_size=h, intermediate_size=2 * h)
        cfg = GPTNeoXConfig(num_hidden_layers=2, num_attention_heads=2, **kw)
        m = GPTNeoXForCausalLM(cfg).eval()
        models.append(m)
        n = sum(p.numel() for p in m.parameters()) - m.gpt_neox.embed_in.weight.numel() - m.embed_out.weight.numel()
        sizes.append(math.log(n))
    return models, sizes


@torch.no_grad()
def make_records(models, sizes, n_chunks, seq_len=12, seed=0):
    """Records as apd.amateur.collect writes them: ELM top 20, 5 ranks from 20-100, 5 from 100 on (K = 30)."""
    g = torch.Generator().manual_seed(seed)
    records = []
    for _ in range(n_chunks):
        ids = torch.randint(0, VOCAB, (seq_len,), generator=g)
        logits = [m(input_ids=ids[None]).logits[0] for m in models]
        order = logits[-1].argsort(-1, descending=True)
        mid = torch.stack([20 + torch.randperm(80, generator=g)[:5] for _ in range(seq_len)])
        tail = torch.stack([100 + torch.randperm(VOCAB - 100, generator=g)[:5] for _ in range(seq_len)])
        tok = order.gather(1, torch.cat([torch.arange(20).expand(seq_len, 20), mid, tail], 1))
        lps = torch.stack([torch.log_softmax(lg, -1).gather(1, tok) for lg in logits])
        record = {"input_ids": ids.numpy(), "token_ids": tok.numpy(), "member_logprobs": lps.half().numpy()}
        record.update(
            alm_logits=logits[0].gather(1, tok).half().numpy(), elm_logits=logits[-1].gather(1, tok).half().numpy()
        )
        records.append({**record, "log_sizes": np.array(sizes), "member_names": [f"m{i}" for i in range(len(models))]})
    return records


@pytest.fixture(scope="module")
def family():
    models, sizes = tiny_family()
    return models, sizes, make_records(models, sizes, 16)


def small_config(**kw):
    base = dict(family="pico", lambda3=0.1, lr=3e-3, warmup_steps=0.1, epochs=3, batch_size=4, micro_batch_size=2)
    return config.APDTrainConfig(**{**base, "checkpoint_every": 100, "device": "cpu", **kw})


def final_state(path):
    return AutoModelForCausalLM.from_pretrained(path).state_dict()


# ----------------------------------------------------------------------------- losses, by hand


def test_loss_l1_hand_value():
    curve = torch.tensor([[0.5, 0.3, 9.0], [0.2, 0.2, 9.0]])  # last column (ELM) is ignored
    target = torch.tensor([[0.4, 0.1, 0.0], [0.2, 0.5, 0.0]])
    expect = math.sqrt((0.01 + 0.04 + 0.0 + 0.09) / 4)
    assert objective.loss_l1(curve, target).item() == pytest.approx(expect, rel=1e-6)


def test_loss_l2_hand_value():
    curve = torch.tensor([[9.0, 0.30], [9.0, 0.10], [9.0, 0.5]])  # only the last column (ELM) counts
    target = torch.tensor([[0.0, 0.21], [0.0, 0.20], [0.0, 0.4]])
    expect = math.sqrt((0.09 + 0.0 + 0.1) / 3)
    assert objective.loss_l2(curve, target).item() == pytest.approx(expect, rel=1e-5)
    assert objective.loss_l2(target, target).item() == 0.0


def test_loss_l3_hand_value_and_zero_gradient_at_zero():
    a = torch.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
    b = torch.tensor([[0.0, -2.0], [1.5, 1.0]])
    assert objective.loss_l3(a, b).item() == pytest.approx(math.sqrt((1 + 0 + 1 + 4) / 4))
    same = b.clone().requires_grad_(True)
    objective.loss_l3(same, b).backward()
    assert torch.equal(same.grad, torch.zeros_like(b))  # no NaN at the minimum


# ----------------------------------------------------------------------------- the curve MLP

SIZES = [16.7555, 18.2588, 19.5270, 20.5073, 20.9127]


def test_mlp_initial_parameters_are_one_and_layout():
    torch.manual_seed(0)
    mlp = objective.CurveMLP(SIZES)
    assert [type(m).__name__ for m in mlp.body] == ["Linear", "GELU"] * 3
    assert mlp.body[0].in_features == len(SIZES) + 1 and mlp.body[0].out_features == 100
    assert mlp.head.out_features == 3 and torch.all(mlp.head.weight == 0) and torch.all(mlp.head.bias == 0)
    params = mlp.curve_params(torch.rand(7, len(SIZES) + 1))
    assert torch.equal(params, torch.ones(7, 3))
    noflip = objective.CurveMLP(SIZES, flip=False).curve_params(torch.rand(7, len(SIZES) + 1))
    assert torch.equal(noflip[:, 0], torch.zeros(7)) and torch.equal(noflip[:, 1:], torch.ones(7, 2))
    assert objective.CurveMLP(SIZES, decay="poly3").head.out_features == 7
    # one definition of each curve, shared with the on-the-fly fitter
    assert objective.CurveMLP(SIZES).decay.fn is curves.exponential_decay
    assert objective.CurveMLP(SIZES, decay="logistic").decay.fn is curves.logistic_decay


def test_mlp_curve_at_init_and_flip():
    mlp = objective.CurveMLP(SIZES).eval()
    values = torch.tensor([[0.6, 0.5, 0.4, 0.35, 0.3], [0.1, 0.2, 0.3, 0.35, 0.4]])  # falling: kept; rising: flipped
    c = torch.tensor([0.25, 0.5])
    out = mlp(values, c)
    assert out.flipped.tolist() == [False, True]
    assert torch.allclose(out.target[1], 1 - values[1]) and torch.allclose(out.c, torch.tensor([0.25, 0.5]))
    x = torch.tensor(SIZES)
    assert torch.allclose(out.curve, out.c[:, None] + torch.exp(-torch.relu(x - 1.0)))  # a = b = d = 1
    # x_origin='alm' measures x from the ALM
    out_alm = objective.CurveMLP(SIZES, x_origin="alm").eval()(values, c)
    assert torch.allclose(out_alm.curve[0], 0.25 + torch.exp(-torch.relu(x - x[0] - 1.0)))
    # no flip: the rising curve is left as it is
    assert not objective.CurveMLP(SIZES, flip=False)(values, c).flipped.any()
    # logit space: the flip is a negation
    lo = objective.CurveMLP(SIZES, space="logit").eval()(values.log(), c.log())
    assert torch.allclose(lo.target[1], -values[1].log()) and torch.allclose(lo.c[1], -c[1].log())


def test_mlp_dropout_hits_mid_size_members_only():
    torch.manual_seed(0)
    mlp = objective.CurveMLP(SIZES)  # N = 5: members 3, 4 (indices 2, 3) are mid-size
    seen = []
    mlp.body.register_forward_hook(lambda mod, inp, out: seen.append(inp[0].clone()))
    inputs = torch.rand(2000, len(SIZES) + 1) + 0.1
    mlp.train()
    mlp.curve_params(inputs)
    got = seen[-1]
    for col in (0, 1, 4, 5):  # two smallest, the ELM, c: untouched
        assert torch.equal(got[:, col], inputs[:, col])
    for col in (2, 3):
        dropped = got[:, col] == 0
        assert 0.4 < dropped.float().mean() < 0.6
        assert torch.allclose(got[~dropped, col], 2 * inputs[~dropped, col])
    mlp.eval()
    mlp.curve_params(inputs)
    assert torch.equal(seen[-1], inputs)


def test_asymptote_is_softmax_of_elm_minus_alm_prime():
    elm, alm = torch.tensor([[2.0, 1.0, 0.0]]), torch.tensor([[1.0, 1.0, 1.0]])
    assert torch.allclose(objective.asymptote(elm, alm), torch.softmax(torch.tensor([[1.0, 0.0, -1.0]]), -1))
    assert torch.allclose(
        objective.asymptote(elm, alm, "logit"), torch.log_softmax(torch.tensor([[1.0, 0.0, -1.0]]), -1)
    )


# ----------------------------------------------------------------------------- config and schedule


def test_lambda3_per_family_and_pico_needs_a_value():
    for family, value in (("pythia", 0.8), ("opt", 0.4), ("qwen", 1.0)):
        assert config.APDTrainConfig(family=family).lambda3_value == value
    assert config.APDTrainConfig(family="pico", lambda3=0.6).lambda3_value == 0.6
    with pytest.raises(ValueError, match="LAMBDA3_GRID"):
        _ = config.APDTrainConfig(family="pico").lambda3_value
    with pytest.raises(ValueError, match="decay"):
        config.APDTrainConfig(decay="cubic")
    with pytest.raises(ValueError, match="space"):
        config.APDTrainConfig(space="logits")


def test_lr_schedule_warmup_then_linear_decay():
    lrs = [config.lr_at(s, 10, 4, 1.0) for s in range(10)]
    assert lrs[:4] == [0.25, 0.5, 0.75, 1.0]
    assert lrs[4:] == pytest.approx([1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6])
    cfg = config.APDTrainConfig(warmup_steps=100)
    assert config.warmup_for(cfg, 20000) == 100
    with pytest.warns(UserWarning, match="warmup"):
        assert config.warmup_for(cfg, 50) == 5
    assert config.warmup_for(config.APDTrainConfig(warmup_steps=0.25), 40) == 10


# ----------------------------------------------------------------------------- the reader


def test_reader_shapes_subsets_and_fraction(family):
    _, sizes, records = family
    data = data_mod.CollectedChunks(records)
    item = data[0]
    assert item["member_logprobs"].shape == (4, 12, 30) and item["member_logprobs"].dtype == torch.float32
    assert item["token_ids"].dtype == torch.long and data.member_names == ["m0", "m1", "m2", "m3"]
    sub = data_mod.CollectedChunks(iter(records), members=["m0", 2, "m3"], data_fraction=0.5)  # an iterator works too
    assert len(sub) == 8 and sub.member_names == ["m0", "m2", "m3"]
    assert torch.equal(sub[3]["member_logprobs"], data[3]["member_logprobs"][[0, 2, 3]])
    assert sub.log_sizes.tolist() == pytest.approx([sizes[0], sizes[2], sizes[3]])
    batch = data_mod.collate_chunks([data[i] for i in range(3)])
    assert batch["member_logprobs"].shape == (3, 4, 12, 30) and batch["input_ids"].shape == (3, 12)


def test_reader_errors_name_the_problem(family):
    _, sizes, records = family
    with pytest.raises(ValueError, match="keep the ALM"):
        data_mod.CollectedChunks(records, members=["m1", "m3"])
    with pytest.raises(ValueError, match="unknown member"):
        data_mod.CollectedChunks(records, members=["m0", "big", "m3"])
    bad = [{k: v for k, v in records[0].items() if k != "elm_logits"}]
    with pytest.raises(ValueError, match="elm_logits"):
        data_mod.CollectedChunks(bad)
    with pytest.raises(ValueError, match="increase"):
        data_mod.CollectedChunks(records, log_sizes=sizes[::-1])
    with pytest.raises(ValueError, match="log_sizes"):
        data_mod.CollectedChunks([{k: v for k, v in records[0].items() if k != "log_sizes"}])
    short = dict(records[1], token_ids=records[1]["token_ids"][:, :20])
    with pytest.raises(ValueError, match="token_ids"):
        data_mod.CollectedChunks([records[0], short])[1]
    with pytest.raises(TypeError, match="path"):
        data_mod.CollectedChunks("results/collected")


# ----------------------------------------------------------------------------- collect -> train -> save -> load


def test_training_lowers_the_loss_and_saves_a_loadable_alm_prime(family, tmp_path):
    models, sizes, records = family
    alm_before = {k: v.clone() for k, v in models[0].state_dict().items()}
    cfg = small_config(epochs=6)
    out = train.train_alm_prime(cfg, models[0], records, tmp_path / "run", progress=False)
    assert out == tmp_path / "run" / "alm_prime"
    log = [json.loads(line) for line in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == list(range(1, 25))
    for key in ("loss", "l1", "l2", "l3", "lr", "flip_frac"):
        assert all(math.isfinite(r[key]) for r in log)
    first, last = np.mean([r["loss"] for r in log[:4]]), np.mean([r["loss"] for r in log[-4:]])
    assert last < 0.95 * first
    assert all(torch.equal(v, alm_before[k]) for k, v in models[0].state_dict().items())  # caller's ALM untouched
    # ALM' loads like any HF causal LM and differs from the ALM
    prime = AutoModelForCausalLM.from_pretrained(out)
    ids = torch.tensor(records[0]["input_ids"])[None]
    assert not torch.allclose(prime(input_ids=ids).logits, models[0](input_ids=ids).logits)
    # the MLP comes back and draws curves through the members
    mlp = objective.CurveMLP.load(out)
    assert mlp.settings["decay"] == "exponential" and mlp.n_members == 4
    r = records[0]
    lp = torch.tensor(r["member_logprobs"]).float()
    with torch.no_grad():
        prime_logits = prime(input_ids=ids).logits[0].gather(1, torch.tensor(r["token_ids"]))
    pred = objective.predict_curves(out, lp, torch.tensor(r["elm_logits"]).float(), prime_logits, n_points=7)
    assert pred.curve.shape == (12, 30, 7) and pred.observed.shape == (12, 30, 4) and pred.params.shape == (12, 30, 3)
    assert torch.allclose(
        pred.asymptote, objective.asymptote(torch.tensor(r["elm_logits"]).float(), prime_logits), atol=1e-6
    )
    assert torch.allclose(pred.curve[..., -1], pred.asymptote, atol=1e-3)  # far right: the curve reaches c
    assert (tmp_path / "run" / "train_config.json").exists() and not (tmp_path / "run" / "checkpoints").exists()
    # validation losses on held-out chunks (dropout off: deterministic)
    val = make_records(models, sizes, 3, seed=9)
    v1 = train.evaluate_losses(prime, mlp, val, lambda3=0.1)
    v2 = train.evaluate_losses(prime, mlp, val, lambda3=0.1)
    assert v1 == v2 and v1["n_chunks"] == 3 and set(v1) >= {"loss", "l1", "l2", "l3"}
    # a finished run is returned as is, without training again
    mtime = (tmp_path / "run" / "train_log.jsonl").stat().st_mtime_ns
    assert train.train_alm_prime(cfg, models[0], records, tmp_path / "run", progress=False) == out
    assert (tmp_path / "run" / "train_log.jsonl").stat().st_mtime_ns == mtime


def test_resume_after_interruption_ends_where_an_uninterrupted_run_ends(family, tmp_path):
    models, _, records = family
    cfg = small_config(checkpoint_every=3)
    whole = train.train_alm_prime(cfg, models[0], records, tmp_path / "whole", progress=False)

    # 1. a planned stop (e.g. a time slot ending) after 5 steps, then resume
    ckpt = train.train_alm_prime(cfg, models[0], records, tmp_path / "stop", stop_after=5, progress=False)
    assert ckpt.name == "step_00000005.pt"
    resumed = train.train_alm_prime(cfg, models[0], records, tmp_path / "stop", progress=False)

    # 2. a crash at step 8: the last checkpoint is step 6, steps 7-8 are redone
    def crash(step, record):
        if step == 8:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train.train_alm_prime(cfg, models[0], records, tmp_path / "crash", callback=crash, progress=False)
    assert [p.name for p in (tmp_path / "crash" / "checkpoints").glob("*.pt")] == ["step_00000006.pt"]
    crashed = train.train_alm_prime(cfg, models[0], records, tmp_path / "crash", progress=False)

    ref = final_state(whole)
    for other in (resumed, crashed):
        state = final_state(other)
        assert all(torch.equal(ref[k], state[k]) for k in ref)
        assert torch.equal(objective.CurveMLP.load(whole).head.weight, objective.CurveMLP.load(other).head.weight)
    logs = [(tmp_path / d / "train_log.jsonl").read_text().splitlines() for d in ("whole", "stop", "crash")]
    strip = lambda lines: [{k: v for k, v in json.loads(x).items() if k != "seconds"} for x in lines]  # noqa: E731
    assert strip(logs[0]) == strip(logs[1]) == strip(logs[2])

    # another configuration in the same folder is refused
    with pytest.raises(ValueError, match="different run"):
        train.train_alm_prime(small_config(lambda3=0.2), models[0], records, tmp_path / "whole", progress=False)


def test_heldout_readings_change_no_weight_and_resume_with_the_run(family, tmp_path):
    models, sizes, records = family
    held = data_mod.CollectedChunks(make_records(models, sizes, 3, seed=9))
    cfg = small_config(checkpoint_every=3)
    plain = train.train_alm_prime(cfg, models[0], records, tmp_path / "plain", progress=False)
    read = train.train_alm_prime(cfg, models[0], records, tmp_path / "read", progress=False, heldout=held)
    ref, state = final_state(plain), final_state(read)
    assert all(torch.equal(ref[k], state[k]) for k in ref)  # the readings change no trained weight
    assert train.read_heldout_log(tmp_path / "plain") is None
    log = train.read_heldout_log(tmp_path / "read")
    assert list(log["step"]) == train.heldout_steps(4, 12) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    assert list(log["epoch"])[-1] == 3.0 and (log["n_chunks"] == 3).all()
    # the last reading is the objective of the saved ALM' and MLP on the held-out chunks
    last = train.evaluate_losses(
        AutoModelForCausalLM.from_pretrained(read), objective.CurveMLP.load(read), held, lambda3=0.1
    )
    assert log["loss"].iloc[-1] == pytest.approx(last["loss"], rel=1e-5) and log["loss"].iloc[-1] < log["loss"].iloc[0]
    # a run stopped and resumed reads the same values, each step once
    train.train_alm_prime(cfg, models[0], records, tmp_path / "stop", stop_after=5, progress=False, heldout=held)
    train.train_alm_prime(cfg, models[0], records, tmp_path / "stop", progress=False, heldout=held)
    again = train.read_heldout_log(tmp_path / "stop")
    assert len((tmp_path / "stop" / train.HELDOUT_LOG).read_text().splitlines()) == 13
    assert np.allclose(again["loss"], log["loss"], rtol=1e-6)
    # a distilled run reads its own objective (the distance to the fitter's targets)
    dcfg = small_config(objective="distill", epochs=1)
    train.train_alm_prime(dcfg, models[0], records, tmp_path / "distill", progress=False, heldout=held)
    assert {"distill", "l3", "loss"} <= set(train.read_heldout_log(tmp_path / "distill").columns)


@pytest.mark.parametrize(
    "variant",
    [dict(decay="logistic"), dict(decay="poly1"), dict(decay="poly3"), dict(flip=False), dict(space="logit")]
    + [dict(members=("m0", "m3")), dict(members=(0, 2, 3)), dict(data_fraction=0.5), dict(lambda2=0.0)]
    + [dict(x_origin="alm")],
)
def test_ablation_variants_train(family, tmp_path, variant):
    models, _, records = family
    cfg = small_config(epochs=1, batch_size=4, micro_batch_size=4, **variant)
    steps = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = train.train_alm_prime(
            cfg,
            models[0],
            records,
            tmp_path / "v",
            progress=False,
            stop_after=1,
            callback=lambda s, r: steps.append(r),
        )
    assert out.name == "step_00000001.pt" and len(steps) == 1
    assert all(math.isfinite(r[k]) for r in steps for k in ("loss", "l1", "l2", "l3"))
    if "members" in variant:
        n = len(variant["members"])
        assert torch.load(out, weights_only=False)["mlp"]["body.0.weight"].shape[1] == n + 1


def test_gradients_reach_alm_prime_through_c_when_lambda3_is_zero(family):
    models, _, records = family
    data = data_mod.CollectedChunks(records)
    mlp = objective.CurveMLP(data.log_sizes)
    obj = objective.APDObjective(train._load_alm(models[0]), mlp, lambda2=10.0, lambda3=0.0)
    batch = data_mod.collate_chunks([data[0], data[1]])
    out = obj(**batch)
    out["loss"].backward()
    grads = [p.grad for p in obj.alm.parameters()]
    assert all(g is not None for g in grads) and sum(float(g.abs().sum()) for g in grads) > 0
    assert out["l3"].item() < 1e-2  # ALM' == ALM: only float16 rounding of the stored logits


def test_command_line_trains_from_an_apd_collect_folder(family, tmp_path):
    from apd.amateur import collect, train

    models, sizes, _ = family
    models[0].save_pretrained(tmp_path / "alm")
    ids = torch.randint(0, VOCAB, (16 * 12,), generator=torch.Generator().manual_seed(5)).numpy()
    fam = collect.ModelFamily(models, VOCAB, log_sizes=sizes, device="cpu")
    ccfg = collect.CollectConfig(seq_len=12, chunks_per_shard=4)
    collect.collect_probabilities(fam, ids, tmp_path / "collected", ccfg, progress=False)
    (tmp_path / "cfg.yaml").write_text("lambda3: 0.1\nbatch_size: 8\nepochs: 1\nwarmup_steps: 0.5\n")
    args = f"--alm {tmp_path}/alm --data {tmp_path}/collected --out {tmp_path}/run --family pico"
    train.main(
        [*args.split(), "--config", str(tmp_path / "cfg.yaml"), "--set", "micro_batch_size=4", "--set", "device=cpu"]
    )
    meta = json.loads((tmp_path / "run" / "train_config.json").read_text())
    assert meta["status"] == "done" and meta["total_steps"] == 2 and meta["grad_accum"] == 2
    assert meta["config"]["lambda3"] == 0.1 and meta["config"]["family"] == "pico"
    assert (tmp_path / "run" / "alm_prime" / "config.json").exists()


def test_batch_that_does_not_fit_is_a_clear_error(family, tmp_path):
    models, _, records = family
    with pytest.raises(ValueError, match="fewer than one batch"):
        train.train_alm_prime(small_config(batch_size=64), models[0], records, tmp_path / "x", progress=False)
    with pytest.raises(ValueError, match="micro_batch_size"):
        train.train_alm_prime(
            small_config(batch_size=4, micro_batch_size=3), models[0], records, tmp_path / "y", progress=False
        )


DDP_SCRIPT = """
import sys, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
sys.path.insert(0, {tests!r})
from test_train import tiny_family, make_records, small_config
from apd.amateur import train
models, sizes = tiny_family()
train.train_alm_prime(small_config(epochs=2, mid_dropout=0.0), models[0], make_records(models, sizes, 16), sys.argv[1],
                      progress=False)
"""


@pytest.mark.skipif(not os.environ.get("APD_TEST_DDP"), reason="starts 2 processes (~15 s); set APD_TEST_DDP=1")
def test_two_process_data_parallel_matches_one_process(family, tmp_path):
    """torchrun/accelerate with 2 CPU processes (gloo): same weights as one process accumulating 2 micro-batches
    (mid_dropout=0, since each process draws its own dropout masks)."""
    import subprocess
    import sys
    from pathlib import Path

    models, _, records = family
    one = train.train_alm_prime(
        small_config(epochs=2, mid_dropout=0.0), models[0], records, tmp_path / "one", progress=False
    )
    script = tmp_path / "ddp.py"
    script.write_text(DDP_SCRIPT.format(tests=str(Path(__file__).parent)))
    torchrun = Path(sys.executable).parent / "torchrun"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent))
    cmd = [str(torchrun), "--nproc_per_node", "2", str(script), str(tmp_path / "two")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    meta = json.loads((tmp_path / "two" / "train_config.json").read_text())
    assert meta["world_size"] == 2 and meta["grad_accum"] == 1
    a, b = final_state(one), final_state(tmp_path / "two" / "alm_prime")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


# ----------------------------------------------------------------------------- ALM' logits at the token set


def test_gathered_head_matches_the_full_vocabulary_logits_and_gradients(family):
    """The token-set logits from hidden states and gathered output-embedding rows are the full head's,
    up to float rounding, and so are the gradients they send back (issue 13: the cheaper ALM' step)."""
    models, _, records = family
    data = data_mod.collate_chunks([data_mod.CollectedChunks(records)[i] for i in range(3)])
    ids, tok = data["input_ids"], data["token_ids"]
    grads, outs = [], []
    for gather in (False, True):
        alm = train._load_alm(models[0])
        out = objective._logits_at(alm, False, ids, tok, gather_head=gather)
        (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        outs.append(out.detach())
        grads.append({n: p.grad.clone() for n, p in alm.named_parameters()})
    assert outs[0].shape == tok.shape
    assert torch.allclose(outs[0], outs[1], atol=1e-5, rtol=1e-5)
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        assert torch.allclose(grads[0][name], grads[1][name], atol=1e-5, rtol=1e-4), name
    with pytest.raises(ValueError, match="vocabulary size"):
        objective._logits_at(models[0], False, ids, torch.full_like(tok, VOCAB))


def test_gathered_head_falls_back_to_the_full_head_for_other_classes(family):
    models, _, records = family

    class Wrapped(torch.nn.Module):  # a causal LM class not known to have a plain linear head
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):
            return self.inner(input_ids=input_ids)

    r = data_mod.collate_chunks([data_mod.CollectedChunks(records)[0]])
    full = objective._logits_at(models[0], False, r["input_ids"], r["token_ids"], gather_head=False)
    assert torch.equal(objective._logits_at(Wrapped(models[0]), False, r["input_ids"], r["token_ids"]), full)


# ----------------------------------------------------------------------------- conditioned start, MLP warm-up


def test_start_and_warmup_are_left_out_of_to_dict_at_their_defaults():
    base = small_config()
    assert "start" not in base.to_dict() and "mlp_warmup_steps" not in base.to_dict()
    cond = small_config(start="conditioned", mlp_warmup_steps=3)
    assert cond.to_dict()["start"] == "conditioned" and cond.to_dict()["mlp_warmup_steps"] == 3
    assert config.APDTrainConfig.from_dict(cond.to_dict()) == cond


@pytest.mark.parametrize(
    "fields, match",
    [
        (dict(start="bent"), "start must be one of"),
        (dict(mlp_warmup_steps=-1), "mlp_warmup_steps must be an integer >= 0"),
        (dict(objective="distill", start="conditioned"), "no curve MLP"),
        (dict(objective="distill", mlp_warmup_steps=2), "no curve MLP"),
        (dict(start="conditioned", x_origin="alm"), "leave x_origin"),
        (dict(start="conditioned", flip=False), "needs the flip"),
        (dict(start="conditioned", decay="poly1"), "exponential or logistic"),
    ],
)
def test_bad_start_settings_are_clear_errors(fields, match):
    with pytest.raises(ValueError, match=match):
        small_config(**fields)


def test_conditioned_mlp_starts_through_the_members_and_loads_back(tmp_path):
    x = [9.5, 10.1, 11.7, 14.4]
    mlp = objective.ConditionedCurveMLP(x, a0=0.2, mid_dropout=0.0)
    assert torch.allclose(mlp.x(), (torch.tensor(x) - 9.5) / (14.4 - 9.5))
    values = torch.tensor([[0.60, 0.50, 0.45, 0.42]])
    with torch.no_grad():
        out = mlp(values, torch.tensor([0.40]))
    assert torch.allclose(out.params, torch.tensor([[0.2, 2.0, 0.02]]), atol=1e-6)
    # the curve starts at c + a at the ALM and has fallen most of the way by the ELM: not flat at c
    assert abs(float(out.curve[0, 0]) - 0.6) < 0.01 and float(out.curve[0, -1]) < 0.44
    mlp.save(tmp_path / "curve_mlp.pt")
    back = objective.CurveMLP.load(tmp_path / "curve_mlp.pt")
    assert type(back) is objective.ConditionedCurveMLP and back.settings == mlp.settings
    assert torch.equal(back.x(), mlp.x())
    plain = objective.CurveMLP(x)
    plain.save(tmp_path / "plain.pt")
    assert type(objective.CurveMLP.load(tmp_path / "plain.pt")) is objective.CurveMLP


def test_mlp_warmup_freezes_alm_prime_then_trains_it(family, tmp_path):
    models, _, records = family
    cfg = small_config(start="conditioned", mlp_warmup_steps=4, epochs=2)  # 8 steps, 4 MLP-only
    log = []
    ckpt = train.train_alm_prime(
        cfg, models[0], records, tmp_path / "run", stop_after=4, progress=False, callback=lambda s, r: log.append(r)
    )
    state = torch.load(ckpt, weights_only=False)
    alm = models[0].state_dict()
    assert all(torch.equal(state["alm"][k], alm[k]) for k in alm)  # ALM' is still the ALM
    mlp0 = objective.ConditionedCurveMLP([0.0, 1.0, 2.0, 3.0], a0=0.1).state_dict()
    assert not torch.equal(state["mlp"]["head.weight"], mlp0["head.weight"])  # the MLP trained
    assert [r["alm_lr"] for r in log] == [0.0] * 4 and all(r["lr"] > 0 for r in log)
    out = train.train_alm_prime(
        cfg, models[0], records, tmp_path / "run", progress=False, callback=lambda s, r: log.append(r)
    )
    assert all(r["alm_lr"] > 0 for r in log[4:-1]) and len(log) == 8
    trained = final_state(out)
    assert any(not torch.equal(trained[k], alm[k]) for k in alm)  # then ALM' moves
    assert type(objective.CurveMLP.load(out)) is objective.ConditionedCurveMLP
    a0 = objective.CurveMLP.load(out).settings["a0"]
    lp = torch.stack([torch.tensor(r["member_logprobs"]).float() for r in records])
    assert a0 == pytest.approx(objective.start_amplitude(lp))
    with pytest.raises(ValueError, match="no joint step"):
        train.train_alm_prime(small_config(mlp_warmup_steps=12), models[0], records, tmp_path / "x", progress=False)
