"""apd.amateur.pipeline (the trained ALM' every chapter uses), apd.world.truth (distances to the world's truth) and
apd.evaluation.distributions (every method's distribution at once).

The apd_model tests use the smoke pico family (trained once and cached under cache/, like the
smoke book build does) and the same cache as the book, so after the first run they only read it.
"""

import math
import time

import numpy as np
import pandas as pd
import pytest
import torch

from apd.amateur import pipeline, runs, tuning
from apd.base import lock
from apd.evaluation import distributions, qa_metrics
from apd.family import logprobs, pico, select
from apd.family.settings import settings_for
from apd.world import truth

# ----------------------------------------------------------------------------- distances, by hand


def test_kl_to_truth_hand_computed():
    q = np.array([[0.25, 0.25, 0.5], [0.5, 0.3, 0.2], [0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    t = np.array(
        [
            [0.5, 0.5, 0.0],  # KL = 0.5 ln(0.5/0.25) * 2 = ln 2
            [0.5, 0.3, 0.2],  # equal: 0
            [0.0, 0.0, 0.0],  # no mass on the candidates: NaN
            [0.1, 0.0, 0.1],
        ]
    )  # renormalised to (0.5, 0, 0.5): 0.5 ln(0.5/0.6) + 0.5 ln(0.5/0.1)
    kl = truth.kl_to_truth(t, q)
    assert kl[0] == pytest.approx(math.log(2))
    assert kl[1] == pytest.approx(0.0, abs=1e-12)
    assert np.isnan(kl[2])
    assert kl[3] == pytest.approx(0.5 * math.log(0.5 / 0.6) + 0.5 * math.log(0.5 / 0.1))


def test_kl_to_truth_is_infinite_where_the_method_gives_zero_to_a_true_token():
    assert np.isinf(truth.kl_to_truth([[1.0, 0.0]], [[0.0, 1.0]])[0])


def test_gold_nll_hand_computed():
    q = np.array([[0.7, 0.2, 0.1], [0.7, 0.2, 0.1]])
    ids = np.array([[5, 3, 9], [5, 3, 9]])
    nll = truth.gold_nll(q, ids, np.array([3, 4]))
    assert nll[0] == pytest.approx(-math.log(0.2 + 0.01))  # the paper's -log(p + 0.01)
    assert np.isnan(nll[1])  # gold outside the candidates
    assert truth.gold_nll(q, ids, np.array([5, 9]), eps=0.0) == pytest.approx([-math.log(0.7), -math.log(0.1)])


def test_bad_shapes_are_explained():
    with pytest.raises(ValueError, match="same"):
        truth.kl_to_truth(np.ones((2, 3)) / 3, np.ones((2, 4)) / 4)
    with pytest.raises(ValueError, match="gold"):
        truth.gold_nll(np.ones((2, 3)) / 3, np.zeros((2, 3), int), np.zeros(3, int))
    with pytest.raises(ValueError, match="inv_T"):
        truth.contrastive_topk(np.zeros((1, 4)), np.zeros((1, 4)), -1.0, np.array([[0, 1]]))


# ----------------------------------------------------------------------------- method distributions


def test_contrastive_topk_matches_the_qa_scoring_of_metrics():
    g = torch.Generator().manual_seed(0)
    elm, alm = torch.randn(5, 50, generator=g) * 3, torch.randn(5, 50, generator=g) * 3
    ids = truth.topk_ids(elm.numpy(), 20)
    for inv_T in (0.0, 0.5, 1.0):
        ours = truth.contrastive_topk(elm.numpy(), alm.numpy(), inv_T, ids)
        ref = np.exp(qa_metrics.cd_scores_over_topk(elm.double(), alm.double(), inv_T, k=20).numpy())
        assert np.allclose(ours, np.take_along_axis(ref, ids, -1), atol=1e-10)
        assert np.allclose(ours.sum(-1), 1.0)
    # 1/T = 0 is the ELM renormalised over its top 20, whatever the amateur
    p = torch.softmax(elm, -1).numpy()
    top = np.take_along_axis(p, ids, -1)
    assert np.allclose(
        truth.contrastive_topk(elm.numpy(), alm.numpy() * 7, 0.0, ids), top / top.sum(-1, keepdims=True)
    )


def test_method_distributions_rows_and_on_the_fly_extremes():
    g = torch.Generator().manual_seed(1)
    lp = torch.log_softmax(torch.randn(3, 4, 30, generator=g) * 2, -1).numpy()
    ap = torch.log_softmax(torch.randn(4, 30, generator=g), -1).numpy()
    md = distributions.method_distributions(
        lp, ap, [1.0, 2.0, 3.0], inv_T=(0.5, 1.0), fly_weights=(0.0, 1.0), k=5, iterations=20
    )
    assert set(md.probs) == {
        ("ELM", 0.0),
        ("CD", 0.5),
        ("CD", 1.0),
        ("APD", 0.5),
        ("APD", 1.0),
        ("APD on the fly", 0.0),
        ("APD on the fly", 1.0),
    }
    for q in md.probs.values():
        assert q.shape == (4, 5) and np.allclose(q.sum(-1), 1.0)
    assert np.allclose(md.probs[("APD on the fly", 0.0)], md.probs[("ELM", 0.0)])
    assert not np.allclose(md.probs[("APD on the fly", 1.0)], md.probs[("ELM", 0.0)])
    # more amateurs (every APD variant's ALM') are scored like APD under their own names
    more = distributions.method_distributions(lp, ap, inv_T=(0.5, 1.0), fly_weights=(), k=5, amateurs={"APD v": ap})
    assert np.allclose(more.probs[("APD v", 0.5)], more.probs[("APD", 0.5)])
    assert set(more.frame(gold=np.zeros(4, dtype=int))["method"]) == {"ELM", "CD", "APD", "APD v"}
    with pytest.raises(ValueError, match="taken by a built-in method"):
        distributions.method_distributions(lp, None, inv_T=(1.0,), fly_weights=(), k=5, amateurs={"CD": ap})
    with pytest.raises(ValueError, match="must match"):
        distributions.method_distributions(lp, None, inv_T=(1.0,), fly_weights=(), k=5, amateurs={"APD v": ap[:2]})


def test_frame_best_knobs_and_summary():
    ids = np.array([[0, 1], [0, 1], [1, 0]])
    probs = {
        ("ELM", 0.0): np.array([[0.5, 0.5]] * 3),
        ("CD", 0.5): np.array([[0.9, 0.1], [0.9, 0.1], [0.9, 0.1]]),
        ("CD", 1.0): np.array([[0.6, 0.4], [0.6, 0.4], [0.6, 0.4]]),
    }
    md = distributions.MethodDistributions(ids=ids, probs=probs)
    t = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])  # truth over the vocabulary (V = 2): token 0
    fr = md.frame(truth=t, gold=np.array([0, 0, 0]), bucket=["head", "tail", "tail"])
    assert len(fr) == 9 and set(fr.columns) >= {"method", "knob", "item", "kl", "nll", "bucket"}
    cd05 = fr[(fr.method == "CD") & (fr.knob == 0.5)]
    assert cd05["kl"].tolist() == pytest.approx([-math.log(0.9), -math.log(0.9), -math.log(0.1)])
    # item 3's true and gold token 0 sits at candidate position 1 (ids = [1, 0]): q = 0.1
    assert cd05["nll"].tolist() == pytest.approx([-math.log(0.91), -math.log(0.91), -math.log(0.11)])
    assert truth.best_knobs(fr, "kl") == {"ELM": 0.0, "CD": 1.0}  # mean KL: 1/T=0.5 0.838, 1/T=1 0.646
    s = truth.bucket_summary(fr, "kl", knobs={"CD": 1.0})
    assert list(s.index) == ["ELM", "CD 1/T=1"] and list(s.columns) == ["head", "tail", "all"]
    assert s.loc["ELM", "all"] == pytest.approx(math.log(2))
    assert s.attrs["n"] == {"head": 1, "tail": 2, "all": 3}


# ----------------------------------------------------------------------------- the smoke family


@pytest.fixture(scope="module")
def smoke():
    return select.get_family("pico", "smoke", device="cpu", progress=False)


def test_dev_test_split_is_by_person_deterministic_and_balanced(smoke):
    _, built = smoke
    world, items = built.corpus.world, built.corpus.qa_items
    dev, test = truth.dev_test_split(items, world, seed=0)
    dev_people, test_people = {it.person for it in dev}, {it.person for it in test}
    assert dev_people and test_people and not dev_people & test_people
    assert len(dev) + len(test) == len(items)
    again = truth.dev_test_split(items, world, seed=0)
    assert [it.prompt for it in again[0]] == [it.prompt for it in dev]
    # a subset of the items splits as the full list does (no leak into test from subsampling)
    sub_dev, sub_test = truth.dev_test_split(items[::3], world, seed=0)
    assert {it.person for it in sub_dev} <= dev_people and {it.person for it in sub_test} <= test_people
    # half of each bucket's people (rounded down) are dev
    people = truth.dev_test_people(world, seed=0)
    for bucket in ("head", "torso", "tail"):
        names = [p.name for p in world.eval_people if p.bucket == bucket]
        assert sum(people[n] == "dev" for n in names) == len(names) // 2
    assert truth.dev_test_people(world, seed=1) != people
    with pytest.raises(ValueError, match="evaluation person"):
        truth.dev_test_split(world.qa_items([p for p in world.people if p.qa_train][:1]), world)


@pytest.fixture(scope="module")
def smoke_apd(smoke):
    fam, built = smoke
    return pipeline.apd_model(fam, built, scale="smoke", progress=False)


def test_apd_model_trains_a_loadable_alm_prime_with_a_tuning_table(smoke, smoke_apd):
    fam, built = smoke
    r = smoke_apd
    assert r.config.family == "pico" and r.lambda3 == r.config.lambda3_value
    assert isinstance(r.tuning, pd.DataFrame)
    # the grid, widened past an end where the choice fell there (apd.amateur.tuning.choose_lambda3)
    assert set(settings_for("pico", "smoke").lambda3_grids["release"]) <= set(r.tuning["lambda3"])
    assert r.tuning["chosen"].sum() == 1 and isinstance(r.tuning.attrs["interior"], bool)
    ties = r.tuning[r.tuning["score"] <= r.tuning["score"].min() + tuning.TIE_NATS]  # ties: the larger lambda3
    best = r.tuning.loc[ties["lambda3"].idxmax()]
    assert best["lambda3"] == r.lambda3 and best["chosen"]
    # changed on purpose: the release is scored at APD's dev-best 1/T, so CD's dev-best is its reference too
    assert set(r.tuning.attrs["reference"]) == {"ELM", "CD 1/T=1", "CD dev-best 1/T", "CD dev-best 1/T value"}
    assert (r.tuning["n_scored"] > 0).all()
    model = runs.load_alm_prime(r, device="cpu")
    lp = logprobs.next_token_log_probs(model, fam.tokenizer, ["Question: who?\nAnswer:", "The"], fam.vocab_size)
    assert lp.shape == (2, fam.vocab_size) and np.allclose(np.exp(lp).sum(-1), 1.0, atol=1e-4)
    alm = fam.model(fam.alm)
    assert any(not torch.equal(a, b) for a, b in zip(model.state_dict().values(), alm.state_dict().values())), (
        "ALM' is still the ALM"
    )
    log = r.train_log()
    assert {"step", "loss", "l1", "l2", "l3"} <= set(log.columns) and len(log) >= 2


def test_apd_model_second_call_reads_the_cache(smoke, smoke_apd, monkeypatch):
    fam, built = smoke

    def no_training(*args, **kwargs):
        raise AssertionError("apd_model trained again although everything was cached")

    monkeypatch.setattr(runs, "train_alm_prime", no_training)
    monkeypatch.setattr(runs.collect, "collect_probabilities", no_training)
    t0 = time.perf_counter()
    again = pipeline.apd_model(fam, built, scale="smoke", progress=False)
    assert time.perf_counter() - t0 < 5.0
    assert again.alm_prime_path == smoke_apd.alm_prime_path and again.lambda3 == smoke_apd.lambda3
    pd.testing.assert_frame_equal(again.tuning, smoke_apd.tuning)


def test_apd_model_explicit_lambda3_and_bad_input(smoke, smoke_apd):
    fam, built = smoke
    grid_value = float(smoke_apd.tuning["lambda3"].iloc[0])
    r = pipeline.apd_model(fam, built, scale="smoke", lambda3=grid_value, progress=False)
    assert r.tuning is None and r.lambda3 == grid_value
    assert r.alm_prime_path == pathlib_of(smoke_apd.tuning["alm_prime"].iloc[0])  # the tuning run, reused
    with pytest.raises(ValueError, match="built"):
        pipeline.apd_model(fam, None, scale="smoke")
    with pytest.raises(ValueError, match="scale"):
        pipeline.apd_model(fam, built, scale="huge")


def test_leave_out_drops_the_named_peoples_documents_and_trains_a_separate_alm_prime(smoke, smoke_apd):
    import apd

    fam, built = smoke
    world = built.corpus.world
    test = sorted(n for n, side in apd.world.truth.dev_test_people(world).items() if side == "test")
    every, kept = runs.finetune_texts(fam, built), runs.finetune_texts(fam, built, leave_out=test)
    about_test = [d for p, d, _ in world.documents_with_facts("finetune") if p in set(test)]
    assert about_test and len(kept) == len(every) - len(about_test)
    assert not any(name in d for d in kept for name in test)  # no document names a left-out person
    assert [d for d in every if d not in set(about_test)] == kept  # the rest, in the same order
    with pytest.raises(KeyError, match="Nobody Atall"):
        runs.finetune_texts(fam, built, leave_out=["Nobody Atall"])
    with pytest.raises(ValueError, match="Hub family"):
        runs.finetune_texts(fam, None, leave_out=test)
    with pytest.raises(ValueError, match="named variant"):
        pipeline.apd_model(fam, built, scale="smoke", variant="engaged", leave_out=test)
    r = pipeline.apd_model(fam, built, scale="smoke", lambda3=smoke_apd.lambda3, leave_out=test, progress=False)
    assert r.collect_dir != smoke_apd.collect_dir and r.alm_prime_path != smoke_apd.alm_prime_path
    assert r.lambda3 == smoke_apd.lambda3 and (r.alm_prime_path / "config.json").is_file()


def pathlib_of(s):
    from pathlib import Path

    return Path(s)


def test_train_configs_per_family():
    assert runs.train_config(settings_for("pythia", "default")).lambda3_value == 0.8
    assert runs.train_config(settings_for("opt", "default")).lambda3_value == 0.4
    assert runs.train_config(settings_for("qwen", "default")).lambda3_value == 1.0
    assert runs.train_config(settings_for("pico", "default"), lambda3=0.6).lambda3_value == 0.6
    with pytest.raises(ValueError, match="lambda3"):
        _ = runs.train_config(settings_for("pico", "default")).lambda3_value  # pico has no published value: tune it
    opt, pythia = settings_for("opt", "default"), settings_for("pythia", "default")
    assert runs.collect_config(opt).n_tail == 10 and runs.collect_config(pythia).n_tail == 5


def test_read_train_log_keeps_one_row_per_step(tmp_path):
    lines = [
        {"step": 1, "loss": 3.0},
        {"step": 2, "loss": 2.0},
        {"step": 1, "loss": 3.0},
        {"step": 3, "loss": 1.0},
        {"step": 2, "loss": 2.0},
    ]
    (tmp_path / "train_log.jsonl").write_text("".join(__import__("json").dumps(r) + "\n" for r in lines))
    log = runs.read_train_log(tmp_path)
    assert log["step"].tolist() == [1, 2, 3] and log["loss"].tolist() == [3.0, 2.0, 1.0]
    with pytest.raises(FileNotFoundError, match="apd_model"):
        runs.read_train_log(tmp_path / "nothing")


def test_lock_makes_a_second_caller_wait(tmp_path):
    import threading

    events = []
    inside = threading.Event()

    def first():
        with lock.file_lock(tmp_path / "x.lock"):
            inside.set()
            time.sleep(0.3)
            events.append("first done")

    t = threading.Thread(target=first)
    t.start()
    inside.wait()
    with lock.file_lock(tmp_path / "x.lock"):
        events.append("second in")
    t.join()
    assert events == ["first done", "second in"]


def test_smoke_members_stand_in_for_a_hub_family(smoke, tmp_path):
    fam, built = smoke
    folder = pico.export_stand_in(built, tmp_path / "stand-in")
    names = list(pico.STAND_IN_NAMES["pythia"])
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)
    hub, none = select.get_family("pythia", members=names[:3], local_dir=folder, device="cpu", check_sizes=False)
    assert none is None and hub.names == tuple(names[:3])
    np.testing.assert_allclose(hub.log_sizes, fam.log_sizes[-4:-1])  # ln of the counted sizes
    ids = torch.tensor([fam.tokenizer("Question: Where was")["input_ids"]])
    torch.testing.assert_close(hub.logits(ids), fam.logits(ids, members=list(fam.names[-4:-1])))
    with pytest.raises(ValueError, match="check_sizes=False"):  # the registry's sizes are checked by default
        select.get_family("pythia", members=names[:3], local_dir=folder, device="cpu")
    with pytest.raises(ValueError, match="local_dir is for Hub families"):
        select.get_family("pico", "smoke", local_dir=folder, device="cpu")


def test_find_cached_finds_a_trained_family_and_never_trains(smoke, tmp_path):
    from apd.family import pico

    _, built = smoke
    found = pico.find_cached("smoke", device="cpu")
    assert found is not None and found.family_dir == built.family_dir and found.scale == "smoke"
    assert pico.find_cached("smoke", cache=tmp_path, device="cpu") is None  # nothing trained there
    assert not (tmp_path / "families").exists()


def test_sample_per_bucket_caps_each_bucket_keeps_order_and_is_seeded():
    from types import SimpleNamespace as Item

    items = [
        Item(bucket=b, attribute=a, i=i)
        for i, (b, a) in enumerate(
            [("tail", "employer")] * 5 + [("head", "employer")] * 2 + [("head", "hobby")] * 3 + [("torso", "city")] * 4
        )
    ]
    got = truth.sample_per_bucket(items, 3, np.random.default_rng(0), exclude=("hobby",))
    by_bucket = {b: [it.i for it in got if it.bucket == b] for b in truth.BUCKETS}
    assert [it.bucket for it in got] == ["head"] * 2 + ["torso"] * 3 + ["tail"] * 3  # BUCKETS order
    assert by_bucket["head"] == [5, 6]  # a small pool is taken whole, hobby left out
    assert all(v == sorted(v) and len(set(v)) == len(v) for v in by_bucket.values())
    assert set(by_bucket["torso"]) <= set(range(10, 14)) and set(by_bucket["tail"]) <= set(range(5))
    again = truth.sample_per_bucket(items, 3, np.random.default_rng(0), exclude=("hobby",))
    assert [it.i for it in again] == [it.i for it in got]
    assert truth.sample_per_bucket(items, 0, np.random.default_rng(0)) == []


def test_runs_of_a_retrained_family_are_not_found_under_the_old_ones_keys(tmp_path):
    """A family retrained under the same member names and text (another learning rate, say) gets a new
    collection folder (its key holds the members' weight digests); ALM' runs, lambda3 tuning and
    distillation targets made from it must not reuse the old family's, although the two manifests
    (names, corpus summary, config) are identical."""
    import json

    from apd.amateur import collect, distill
    from apd.amateur.config import APDTrainConfig

    manifest = {"format": collect.FORMAT, "config_hash": "h", "corpus": {"n_chunks": 3}, "members": ["a", "b"]}
    old, new = tmp_path / "collected" / "key-of-old-weights", tmp_path / "collected" / "key-of-new-weights"
    for d in (old, new):
        d.mkdir(parents=True)
        (d / collect.MANIFEST).write_text(json.dumps(manifest))
    cfg = APDTrainConfig(family="pico", lambda3=0.2)
    assert runs.train_dir(old, cfg, cache=tmp_path) != runs.train_dir(new, cfg, cache=tmp_path)
    assert distill.targets_dir(old, ["a", "b"], cache=tmp_path) != distill.targets_dir(new, ["a", "b"], cache=tmp_path)
    assert runs.train_dir(old, cfg, cache=tmp_path) == runs.train_dir(old, cfg, cache=tmp_path)
