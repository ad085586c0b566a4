"""apd.evaluation.ablations: each ablation maps to the right APDTrainConfig fields, member subsets (and their
errors), the metric plumbing by hand, and train -> score end to end on a tiny random family."""

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import tiny_models
from transformers import AutoModelForCausalLM

from apd.amateur import collect, objective, runs
from apd.amateur.config import APDTrainConfig
from apd.evaluation import ablations
from apd.family import logprobs, text
from apd.world import truth

NAMES = ["m0", "m1", "m2", "m3", "m4", "m5"]
X = [9.45, 10.52, 11.51, 12.72, 13.58, 14.39]  # the default pico family's ln sizes, rounded
PYTHIA = ["70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b"]
PYTHIA_X = [16.7555, 18.2588, 19.5270, 20.5073, 20.9127, 21.6466, 22.5864]


def main_config(**kw):
    base = dict(family="pico", lambda3=0.6, lr=3e-3, warmup_steps=0.1, epochs=3, batch_size=4, device="cpu")
    base.update(kw)
    return APDTrainConfig(**base)


# ----------------------------------------------------------------------------- configurations


def test_member_subsets_by_hand():
    # midpoint of [9.45, 14.39] = 11.92: nearest mid-size member m2 (11.51); at or above it: m3, m4, m5
    assert ablations.member_subset("alm+elm", NAMES, X) == ("m0", "m5")
    assert ablations.member_subset("alm+mid+elm", NAMES, X) == ("m0", "m2", "m5")
    assert ablations.member_subset("no-small", NAMES, X) == ("m0", "m3", "m4", "m5")
    # Pythia: midpoint 19.671, so "no-small" is the paper's 1B-7B (plus the 70M ALM)
    assert ablations.member_subset("no-small", PYTHIA, PYTHIA_X) == ("70m", "1b", "1.4b", "2.8b", "6.9b")
    assert ablations.member_subset("alm+mid+elm", PYTHIA, PYTHIA_X) == ("70m", "410m", "6.9b")


def test_every_ablation_changes_exactly_its_fields():
    main = main_config()
    cfgs = ablations.ablation_configs(main, NAMES, X)
    assert list(cfgs) == ["APD", *ablations.ABLATION_NAMES] and len(cfgs) == 17
    assert cfgs["APD"] == main
    expect = {
        "lambda2=0": {"lambda2": 0.0},
        "lambda3=0": {"lambda3": 0.0},
        "lambda3x2": {"lambda3": 1.2},
        "lambda3x6": {"lambda3": 3.75},
        "alm+elm": {"members": ["m0", "m5"]},
        "alm+mid+elm": {"members": ["m0", "m2", "m5"]},
        "no-small": {"members": ["m0", "m3", "m4", "m5"]},
        "logistic": {"decay": "logistic"},
        "poly1": {"decay": "poly1"},
        "poly3": {"decay": "poly3"},
        "no-flip": {"flip": False},
        "logit": {"space": "logit"},
        "half-data": {"data_fraction": 0.5},
        "distilled": {"objective": "distill"},
        "distilled-alm+mid+elm": {"objective": "distill", "members": ["m0", "m2", "m5"]},
        "distilled-no-small": {"objective": "distill", "members": ["m0", "m3", "m4", "m5"]},
    }
    base = main.to_dict()
    for name, changes in expect.items():
        got = cfgs[name].to_dict()
        diff = {k: v for k, v in got.items() if v != base.get(k)}
        assert diff.keys() == changes.keys(), name
        for k, v in changes.items():
            assert diff[k] == pytest.approx(v) if isinstance(v, float) else diff[k] == v, (name, k)
    assert ablations.config_changes(cfgs["lambda3x2"], main) == "lambda3=1.2"
    assert ablations.config_changes(cfgs["alm+elm"], main) == "members=m0+m5"
    assert ablations.config_changes(main, main) == "(main)"
    # the distilled variant is a new row: the other rows' configurations (hence cache keys) are unchanged
    assert all("objective" not in cfgs[n].to_dict() for n in cfgs if not n.startswith("distilled"))
    # the distilled member subsets are compared with the distilled variant, every other run with the reference APD
    assert {n: ablations.reference_of(n) for n in cfgs if n.startswith("distilled")} == {
        "distilled": "APD",
        "distilled-alm+mid+elm": "distilled",
        "distilled-no-small": "distilled",
    }


def test_overrides_reach_the_main_run_and_every_ablation():
    cfgs = ablations.ablation_configs(
        main_config(), NAMES, X, names=["half-data", "lambda3x2"], overrides={"epochs": 1, "data_fraction": 0.5}
    )
    assert list(cfgs) == ["APD", "half-data", "lambda3x2"]
    assert all(c.epochs == 1 for c in cfgs.values())
    assert cfgs["APD"].data_fraction == 0.5 and cfgs["half-data"].data_fraction == 0.25
    assert cfgs["lambda3x2"].data_fraction == 0.5 and cfgs["lambda3x2"].lambda3 == pytest.approx(1.2)


def test_lambda3_factors_use_the_published_value_when_the_config_has_none():
    cfgs = ablations.ablation_configs(
        APDTrainConfig(family="pythia"), PYTHIA, PYTHIA_X, names=["lambda3x2", "lambda3x6"]
    )
    assert cfgs["lambda3x2"].lambda3 == pytest.approx(1.6) and cfgs["lambda3x6"].lambda3 == pytest.approx(5.0)


def test_invalid_member_subsets_raise_clearly():
    main = main_config()
    with pytest.raises(ValueError, match="ALM"):
        ablations.with_members(main, ["m1", "m5"], NAMES)  # no ALM
    with pytest.raises(ValueError, match="ELM"):
        ablations.with_members(main, ["m0", "m3"], NAMES)  # no ELM
    with pytest.raises(ValueError, match="unknown member"):
        ablations.with_members(main, ["m0", "mX", "m5"], NAMES)
    with pytest.raises(ValueError, match="out of range"):
        ablations.with_members(main, [0, 9], NAMES)
    with pytest.raises(ValueError, match="empty member subset"):
        ablations.with_members(main, [], NAMES)
    ok = ablations.with_members(main, [0, "m3", -1], NAMES)  # indices and names mix; stored as names
    assert ok.members == ("m0", "m3", "m5")
    with pytest.raises(ValueError, match="mid-size member"):
        ablations.member_subset("alm+mid+elm", ["a", "b"], [1.0, 2.0])
    with pytest.raises(ValueError, match="increasing"):
        ablations.member_subset("alm+elm", ["a", "b"], [2.0, 1.0])


def test_bad_ablation_requests_raise():
    with pytest.raises(ValueError, match="unknown ablation"):
        ablations.ablation_configs(main_config(), NAMES, X, names=["lambda4=0"])
    with pytest.raises(ValueError, match="repeat"):
        ablations.ablation_configs(main_config(), NAMES, X, names=["logit", "logit"])
    with pytest.raises(ValueError, match="already selects members"):
        ablations.ablation_configs(main_config(members=("m0", "m5")), NAMES, X, names=["logit"])
    with pytest.raises(ValueError, match="lambda3"):
        ablations.ablation_configs(APDTrainConfig(family="pico"), NAMES, X)
    with pytest.raises(ValueError, match="compared with 'distilled'; add 'distilled'"):
        ablations.ablation_configs(main_config(), NAMES, X, names=["distilled-no-small"])


# ----------------------------------------------------------------------------- the metric, by hand


def tiny_qaset():
    """B = 2 items over V = 4 tokens; the ELM's top 2 are {0, 1} in item 0 and {2, 3} in item 1."""
    elm = np.log(np.array([[0.5, 0.3, 0.1, 0.1], [0.1, 0.1, 0.2, 0.6]]))
    alm = np.log(np.array([[0.6, 0.2, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25]]))
    tr = np.array([[0.2, 0.6, 0.2, 0.0], [1.0, 0.0, 0.0, 0.0]])  # item 1: no true mass on its top 2
    return ablations.QASet(["q0", "q1"], elm, alm, tr, np.array([1, 2]), np.array(["head", "tail"]))


def test_score_amateur_by_hand():
    qa = tiny_qaset()
    s = ablations.score_amateur(qa, qa.alm_logprobs, inv_T=1.0, top_k=2)
    # item 0, CD at T = 1 over {0, 1}: scores 0.5/0.6 and 0.3/0.2 -> q = (5/6, 1.5) / (5/6 + 1.5)
    q = np.array([5 / 6, 1.5]) / (5 / 6 + 1.5)
    t = np.array([0.2, 0.6]) / 0.8
    assert s.loc[0, "kl"] == pytest.approx(float((t * np.log(t / q)).sum()), rel=1e-9)
    assert s.loc[0, "nll"] == pytest.approx(-math.log(q[1] + 0.01), rel=1e-9)
    # item 1: the truth has no mass on {2, 3} -> KL undefined; gold 2 is inside -> NLL defined
    q1 = np.array([0.2 / 0.25, 0.6 / 0.25])
    q1 = q1 / q1.sum()  # tokens 2, 3
    assert np.isnan(s.loc[1, "kl"])
    assert s.loc[1, "nll"] == pytest.approx(-math.log(q1[0] + 0.01), rel=1e-9)
    # 1/T = 0 is the ELM renormalised, whatever the amateur
    e = ablations.score_amateur(qa, np.zeros((2, 4)), inv_T=0.0, top_k=2)
    assert e.loc[0, "nll"] == pytest.approx(-math.log(0.3 / 0.8 + 0.01), rel=1e-9)


def test_summarise_means_by_bucket_and_paired_differences():
    per = pd.DataFrame({"kl": [1.0, 3.0, np.nan, 2.0], "nll": [0.5, 0.5, 1.0, 1.0]})
    ref = pd.DataFrame({"kl": [2.0, 2.0, 1.0, np.nan], "nll": [0.0, 1.0, 1.0, 0.0]})
    s = ablations.summarise(per, ["head", "head", "tail", "tail"], ref)
    assert s["kl"] == pytest.approx(2.0) and s["n_kl"] == 3
    assert s["kl_head"] == pytest.approx(2.0) and s["kl_tail"] == pytest.approx(2.0)
    assert np.isnan(s["kl_torso"])
    assert s["kl_diff"] == pytest.approx(0.0)  # pairs: (1 - 2), (3 - 2)
    assert s["kl_diff_se"] == pytest.approx(math.sqrt(2) / math.sqrt(2))
    assert s["nll_diff"] == pytest.approx((0.5 - 0.5 + 0 + 1) / 4)
    v = ablations.verdicts(
        pd.DataFrame(
            {
                "name": ["a", "b", "c", "APD"],
                "kl_diff": [-1.0, 1.0, 0.1, np.nan],
                "kl_diff_se": [0.1, 0.1, 0.1, np.nan],
            }
        )
    )
    assert v.to_dict() == {"a": "better", "b": "worse", "c": "tie", "APD": "n/a"}


def test_pick_inv_T_picks_the_lowest_dev_kl():
    qa = tiny_qaset()
    grid = [0.0, 0.5, 1.0]
    kls = [ablations.score_amateur(qa, qa.alm_logprobs, v, 2)["kl"].mean() for v in grid]
    assert ablations.pick_inv_T(qa, qa.alm_logprobs, grid, top_k=2) == grid[int(np.argmin(kls))]
    with pytest.raises(ValueError, match="empty"):
        ablations.pick_inv_T(qa, qa.alm_logprobs, [], top_k=2)


def test_qaset_checks_shapes():
    qa = tiny_qaset()
    with pytest.raises(ValueError, match="truth"):
        ablations.QASet(qa.prompts, qa.elm_logprobs, qa.alm_logprobs, qa.truth[:, :3], qa.gold, qa.buckets)
    sub = qa.subset([1])
    assert len(sub) == 1 and sub.prompts == ["q1"] and sub.buckets.tolist() == ["tail"]
    with pytest.raises(ValueError, match="prompt string"):
        ablations.QASet([[1], [2]], qa.elm_logprobs, qa.alm_logprobs, qa.truth, qa.gold, qa.buckets)


# ----------------------------------------------------------------------------- end to end on a tiny family

V = 160


def tiny_neox(seed, hidden, layers):
    return tiny_models.tiny_neox(seed, V, hidden, layers, initializer_range=0.2)


def word_tokenizer():
    """One token per word "w0" .. "w159" (ids 0 .. 159; "w0" doubles as padding)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(V)}, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="w0", unk_token="w0")


@pytest.fixture(scope="module")
def tiny_setup(tmp_path_factory):
    """Four saved tiny members, their collection on random text, and a synthetic QA dev/test set."""
    root = tmp_path_factory.mktemp("abl")
    models = [tiny_neox(i, h, layers) for i, (h, layers) in enumerate([(8, 1), (16, 1), (16, 2), (24, 2)])]
    names = ["s0", "s1", "s2", "s3"]
    locations = {}
    for n, m in zip(names, models):
        m.save_pretrained(root / n)
        locations[n] = root / n
    mf = collect.ModelFamily(models, vocab_size=V, names=names, device="cpu")
    rng = np.random.default_rng(0)
    cdir = root / "collected"
    collect.collect_probabilities(
        mf,
        rng.integers(0, V, size=8 * 16),
        cdir,
        collect.CollectConfig(seq_len=16, chunks_per_shard=4),
        batch_size=4,
        progress=False,
    )
    tok = word_tokenizer()
    fam = SimpleNamespace(names=names, locations=locations, alm=names[0], tokenizer=tok)
    B = 24
    prompts = [" ".join(f"w{i}" for i in rng.integers(1, V, size=int(rng.integers(2, 7)))) for _ in range(B)]
    lp = np.stack([logprobs.next_token_log_probs(m, tok, prompts, V) for m in (models[0], models[-1])])
    top = np.argsort(-lp[1], -1)[:, :20]
    tr = np.zeros((B, V), np.float32)
    tr[np.arange(B), top[:, 0]] = 0.7  # the truth lives on the ELM's top 20
    tr[np.arange(B), top[:, 5]] = 0.3
    qa = ablations.QASet(prompts, lp[1], lp[0], tr, top[:, 0], np.array(["head", "torso", "tail"] * 8))
    return fam, cdir, qa.subset(range(12)), qa.subset(range(12, B)), root


def test_run_ablations_end_to_end_and_cached(tiny_setup):
    fam, cdir, dev, test, root = tiny_setup
    main = main_config(lr=1e-2, epochs=1, micro_batch_size=2)
    kw = dict(
        names=["lambda2=0", "alm+elm"],
        overrides={"epochs": 2},
        inv_T_grid=[0.5, 1.0],
        val_dir=cdir,
        val_chunks=2,
        cache=root / "cache",
        device="cpu",
        progress=False,
    )
    res = ablations.run_ablations(fam, cdir, main, test, dev, **kw)
    t = res.table.set_index("name")
    assert list(t.index) == ["APD", "lambda2=0", "alm+elm"]
    assert (t["steps"] == 4).all()  # 8 chunks / batch 4 x 2 epochs (override)
    assert res.configs["alm+elm"].members == ("s0", "s3") and res.configs["APD"].epochs == 2
    assert objective.CurveMLP.load(res.paths["alm+elm"]).n_members == 2
    assert objective.CurveMLP.load(res.paths["APD"]).n_members == 4
    # the main row is exactly apd.world.truth's measures of ALM' at the 1/T that is best on dev
    model = runs.load_alm_prime(res.paths["APD"], device="cpu")
    a_dev = logprobs.next_token_log_probs(model, fam.tokenizer, dev.prompts, V)
    a_test = logprobs.next_token_log_probs(model, fam.tokenizer, test.prompts, V)
    dev_kl = {v: np.nanmean(ablations.score_amateur(dev, a_dev, v)["kl"]) for v in (0.5, 1.0)}
    inv = min(dev_kl, key=dev_kl.get)
    assert t.loc["APD", "inv_T"] == inv
    ids = truth.topk_ids(test.elm_logprobs, 20)
    q = truth.contrastive_topk(test.elm_logprobs, a_test, inv, ids)
    expect = float(np.nanmean(truth.kl_to_truth(truth.at(test.truth, ids), q)))
    assert t.loc["APD", "kl"] == pytest.approx(expect, rel=1e-6)
    assert t.loc["APD", "n_kl"] == len(test)
    # paired differences
    d = res.per_item["lambda2=0"]["kl"] - res.per_item["APD"]["kl"]
    assert t.loc["lambda2=0", "kl_diff"] == pytest.approx(float(d.mean()), rel=1e-9, abs=1e-12)
    assert np.isfinite(t[["val_loss", "val_l1", "val_l2", "val_l3"]].to_numpy()).all()
    assert t.loc["lambda2=0", "val_loss"] == pytest.approx(
        t.loc["lambda2=0", "val_l1"] + 0.6 * t.loc["lambda2=0", "val_l3"], rel=1e-5
    )
    # training changed ALM' (the ablation runs are not the untouched ALM)
    assert not np.allclose(
        a_test,
        logprobs.next_token_log_probs(
            AutoModelForCausalLM.from_pretrained(fam.locations["s0"]).eval(), fam.tokenizer, test.prompts, V
        ),
    )
    # a second call finds every run in the cache and reproduces the table
    again = ablations.run_ablations(fam, cdir, main, test, dev, **kw).table.set_index("name")
    pd.testing.assert_series_equal(again["kl"], t["kl"])
    pd.testing.assert_series_equal(again["train_seconds"], t["train_seconds"])
    # references: CD at its own dev-picked 1/T, and the ELM
    ref, per = ablations.reference_rows(test, dev, inv_T_grid=[0.5, 1.0], apd_per_item=res.per_item["APD"])
    assert list(ref["name"]) == ["CD", "ELM"] and ref.loc[1, "inv_T"] == 0.0
    assert ref.loc[0, "inv_T"] == ablations.pick_inv_T(dev, dev.alm_logprobs, [0.5, 1.0])
    with pytest.raises(ValueError, match="dev"):
        ablations.run_ablations(fam, cdir, main, test, None, **kw)


def test_distilled_member_subsets_are_compared_with_the_distilled_variant(tiny_setup):
    fam, cdir, dev, test, root = tiny_setup
    main = main_config(lr=1e-2, epochs=1, micro_batch_size=2)
    res = ablations.run_ablations(
        fam,
        cdir,
        main,
        test,
        dev,
        names=["distilled", "distilled-alm+mid+elm"],
        inv_T_grid=[0.5, 1.0],
        cache=root / "cache",
        device="cpu",
        progress=False,
    )
    t = res.table.set_index("name")
    assert list(t["reference"]) == ["", "APD", "distilled"]
    cfg = res.configs["distilled-alm+mid+elm"]
    assert cfg.objective == "distill" and len(cfg.members) == 3 and cfg.members[0] == "s0" and cfg.members[-1] == "s3"
    d = (res.per_item["distilled-alm+mid+elm"]["kl"] - res.per_item["distilled"]["kl"]).dropna()
    assert t.loc["distilled-alm+mid+elm", "kl_diff"] == pytest.approx(float(d.mean()), rel=1e-9, abs=1e-12)
    d = (res.per_item["distilled"]["kl"] - res.per_item["APD"]["kl"]).dropna()
    assert t.loc["distilled", "kl_diff"] == pytest.approx(float(d.mean()), rel=1e-9, abs=1e-12)
    # the subset's targets were fitted on its three members only: its ALM' differs from the full variant's
    assert not np.allclose(
        res.per_item["distilled-alm+mid+elm"]["kl"], res.per_item["distilled"]["kl"], equal_nan=True
    )
    assert ablations.label("distilled-alm+mid+elm", cfg).startswith("distilled, alm+mid+elm: s0, ")


def test_paired_difference_verdict_and_labels():
    a = pd.DataFrame({"kl": [1.0, 2.0, np.nan, 4.0]})
    b = pd.DataFrame({"kl": [0.5, 1.0, 9.0, 3.0]})
    d, se = ablations.measure_difference(a, b)  # pairs: 0.5, 1.0, 1.0
    assert d == pytest.approx(2.5 / 3)
    assert se == pytest.approx(np.std([0.5, 1.0, 1.0], ddof=1) / math.sqrt(3))
    assert ablations.verdict(d, se) == "worse" and ablations.verdict(-d, se) == "better"
    assert ablations.verdict(0.1, 0.1) == "tie" and ablations.verdict(float("nan"), 0.1) == "n/a"
    assert ablations.verdict(-0.0005, 1e-5) == "better"
    assert ablations.verdict(-0.0005, 1e-5, min_effect=0.001) == "tie"  # clear, but too small to matter
    with pytest.raises(ValueError, match="same QA set"):
        ablations.measure_difference(a, b.iloc[:2])
    cfgs = ablations.ablation_configs(main_config(), NAMES, X)
    assert ablations.label("lambda3x2", cfgs["lambda3x2"]) == "λ3 = 1.2"
    assert ablations.label("alm+elm", cfgs["alm+elm"]) == "alm+elm: m0, m5"
    assert ablations.label("half-data", cfgs["half-data"]) == "half data (0.5 of the chunks)"
    assert ablations.label("APD") == "reference APD"


def test_texts_for_tokens_takes_the_shortest_prefix():
    tok = word_tokenizer()
    texts = ["w1 w2 w3", "w4", "w5 w6", "w7"]  # 3 + 1, 1 + 1, 2 + 1, 1 + 1 tokens with EOS
    assert text.texts_for_tokens(tok, texts, 4) == texts[:1]
    assert text.texts_for_tokens(tok, texts, 5) == texts[:2]
    assert text.texts_for_tokens(tok, texts, 7) == texts[:3]
    assert text.texts_for_tokens(tok, texts, 100) == texts


def test_ablation_differences_cluster_by_person():
    """Four questions about two people: differences (1, 3) and (0, 0): person means 2 and 0, so the
    clustered se is sd(2, 0) / sqrt(2) = 1; unclustered it is the se of the four differences."""
    import numpy as np
    import pandas as pd
    import pytest

    from apd.evaluation import ablations

    a = pd.DataFrame({"kl": [1.0, 3.0, 0.0, 0.0], "nll": [0.0] * 4})
    b = pd.DataFrame({"kl": [0.0] * 4, "nll": [0.0] * 4})
    d, se = ablations.measure_difference(a, b, "kl", groups=np.array(["p", "p", "q", "q"]))
    assert d == pytest.approx(1.0) and se == pytest.approx(1.0)
    assert ablations.measure_difference(a, b, "kl")[1] == pytest.approx(np.std([1, 3, 0, 0], ddof=1) / 2)
    s = ablations.summarise(a, np.array(["head"] * 4), b, np.array(["p", "p", "q", "q"]))
    assert s["kl_diff_se"] == pytest.approx(1.0)
