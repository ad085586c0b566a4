"""The APD variants (apd.amateur.variants), apd_model(variant=...), and the choice of the engaged
variant (apd.amateur.pipeline.engaged_variant), on the registry alone and on the smoke family."""

import json

import numpy as np
import pandas as pd
import pytest

from apd.amateur import gates, pipeline, runs, tuning, variants
from apd.family import settings
from apd.family.settings import HUB_TRAIN, settings_for

#: Chunks of the default pico collection (the fine-tuning split cut into 128-token windows).
DEFAULT_CHUNKS = 1277  # the default-200 collection, the smaller of the two default worlds' (the default's: 2,104)


# ----------------------------------------------------------------------------- the registry


def test_registry_names_and_unknown_variant():
    assert variants.VARIANT_NAMES == ("release", "conditioned", "distilled")
    with pytest.raises(ValueError, match="unknown APD variant 'bent'.*release"):
        variants.get_variant("bent")


@pytest.mark.parametrize("scale", ["smoke", "default", "gpu"])
def test_release_variant_is_the_release_configuration_with_its_pinned_keys(scale):
    pico = settings_for("pico", scale)
    for lam in (None, 0.6):
        assert variants.variant_config("release", pico, lam) == runs.train_config(pico, lam)
        assert variants.variant_config("release", pico, lam, tuning=True) == runs.train_config(pico, lam)
    assert variants.lambda3_grid("release", pico) == pico.lambda3_grids["release"]
    # changed on purpose (design notes, "lambda3 on the claims' criterion"): the release is scored as the others
    assert variants.get_variant("release").score == tuning.SCORE_BEST_INV_T
    for hub in ("pythia", "opt"):
        s = settings_for(hub, scale)
        assert variants.variant_config("release", s) == runs.train_config(s)
        assert variants.lambda3_grid("release", s) is None


def test_new_variants_get_their_own_keys():
    keys = {
        v: runs.hash_key("abc", variants.variant_config(v, settings_for("pico", "default"), 0.6).to_dict())
        for v in variants.VARIANT_NAMES
    }
    assert len(set(keys.values())) == 3
    assert keys["release"] == runs.hash_key("abc", runs.train_config(settings_for("pico", "default"), 0.6).to_dict())


def test_conditioned_variant_meets_the_issue_budget():
    """At least 2,000 joint steps after an MLP-only warm-up, at default scale; a lambda3 grid with 0 and
    a value above the paper's largest (1.2); tuned on shorter runs than it is trained with."""
    default = settings_for("pico", "default")
    cfg = variants.variant_config("conditioned", default, 0.6)
    assert cfg.start == "conditioned" and cfg.mlp_warmup_steps > 0 and cfg.objective == "paper"
    steps = (int(DEFAULT_CHUNKS * cfg.data_fraction) // cfg.batch_size) * cfg.epochs
    assert steps - cfg.mlp_warmup_steps >= 2000
    short = variants.variant_config("conditioned", default, 0.6, tuning=True)
    assert (int(DEFAULT_CHUNKS * short.data_fraction) // short.batch_size) * short.epochs < steps / 4
    assert short.start == "conditioned" and short.mlp_warmup_steps < cfg.mlp_warmup_steps
    for scale in ("smoke", "default", "gpu"):
        grid = variants.lambda3_grid("conditioned", settings_for("pico", scale))
        assert 0.0 in grid and max(grid) > 1.2
    assert variants.get_variant("conditioned").score == tuning.SCORE_BEST_INV_T
    hub = variants.variant_config("conditioned", settings_for("pythia", "default"))
    assert hub.start == "conditioned" and hub.lambda3_value == 0.8 and hub.lr == HUB_TRAIN["default"]["lr"]
    assert variants.variant_config("conditioned", settings_for("pythia", "smoke")).mlp_warmup_steps == 2


def test_distilled_variant_is_the_distill_objective():
    cfg = variants.variant_config("distilled", settings_for("pico", "default"), 0.2)
    assert cfg.objective == "distill" and cfg.start == "release"
    assert variants.variant_config("distilled", settings_for("pico", "default"), 0.2, tuning=True) == cfg


# ----------------------------------------------------------------------------- the choice


def _table(engaged, dev_kl):
    return pd.DataFrame({"variant": list(variants.VARIANT_NAMES), "engaged": engaged, "dev_kl": dev_kl})


def test_choose_variant_reads_the_gates_first_then_the_dev_kl():
    assert pipeline.choose_variant(_table([False, True, True], [1.0, 2.0, 1.5])) == "distilled"
    assert pipeline.choose_variant(_table([True, True, True], [1.0, 2.0, 1.5])) == "release"
    assert pipeline.choose_variant(_table([False, True, True], [1.0, 1.5, 1.5])) == "conditioned"  # ties: first
    assert pipeline.choose_variant(_table([False, False, True], [1.0, 1.5, np.nan])) == "distilled"
    assert pipeline.choose_variant(_table([False, True, True], [None, None, None])) == "conditioned"  # no world
    assert pipeline.choose_variant(_table([False, False, False], [0.1, 0.2, 0.3])) is None


@pytest.fixture(scope="module")
def selection(smoke_family):
    fam, built, _ = smoke_family
    return pipeline.engaged_variant(fam, built, scale="smoke", progress=False)


def test_engaged_variant_on_the_smoke_family(smoke_family, selection):
    fam, built, release = smoke_family
    t = selection.table
    assert list(t["variant"]) == list(variants.VARIANT_NAMES) and t["chosen"].sum() == 1
    assert {
        "curve_alive",
        "collapsed",
        "moved_kl",
        "toward_expert",
        "engaged",
        "reason",
        "dev_kl",
        "dev_inv_T",
        "n_dev_items",
        "lambda3",
        "alm_prime",
    } <= set(t.columns)
    assert (t["n_dev_items"] > 0).all() and t["dev_inv_T"].isin(settings.INV_T_GRID).all()
    assert selection.results["release"].alm_prime_path == release.alm_prime_path  # the release run, unchanged
    assert selection.variant == (pipeline.choose_variant(t) or "release")
    assert selection.engaged == bool(t["engaged"].any())
    assert selection.result is selection.results[selection.variant]
    assert selection.gates.engaged == selection.engaged
    assert selection.variant.split()[0] in selection.note or "release" in selection.note
    # the distilled run has no curve MLP; the conditioned one a ConditionedCurveMLP
    assert not (selection.results["distilled"].alm_prime_path / "curve_mlp.pt").exists()
    from apd.amateur import objective

    cond = objective.CurveMLP.load(selection.results["conditioned"].alm_prime_path)
    assert type(cond) is objective.ConditionedCurveMLP
    rec = runs.run_record(selection.results["conditioned"])
    assert rec["steps"] == rec["mlp_warmup_steps"] + rec["joint_steps"] and rec["mlp_warmup_steps"] == 4
    # every variant's tuning rows, with the length of the runs that were scored
    tab = pipeline.tuning_table(selection.results)
    assert set(tab["variant"]) == set(variants.VARIANT_NAMES) and tab.groupby("variant")["chosen"].sum().eq(1).all()


def test_engaged_variant_is_read_from_the_cache_and_is_what_apd_model_returns(smoke_family, selection, monkeypatch):
    fam, built, _ = smoke_family

    def boom(*a, **k):
        raise AssertionError("measured or trained again although everything was cached")

    monkeypatch.setattr(pipeline, "measure_gates", boom)
    monkeypatch.setattr(runs, "train_alm_prime", boom)
    monkeypatch.setattr(pipeline, "dev_scores", boom)
    again = pipeline.engaged_variant(fam, built, scale="smoke", progress=False)
    pd.testing.assert_frame_equal(again.table, selection.table)
    used = pipeline.apd_model(fam, built, scale="smoke", variant="engaged", progress=False)
    assert used.variant == selection.variant and used.selection.table.equals(selection.table)
    assert used.alm_prime_path == selection.result.alm_prime_path
    with pytest.raises(ValueError, match="variant='engaged' chooses"):
        pipeline.apd_model(fam, built, scale="smoke", variant="engaged", lambda3=0.2)
    with pytest.raises(ValueError, match="unknown APD variant"):
        pipeline.apd_model(fam, built, scale="smoke", variant="bent")
    with pytest.raises(ValueError, match="fallback"):
        pipeline.engaged_variant(fam, built, scale="smoke", variants=("distilled",))


def test_no_engaged_variant_falls_back_to_the_release_configuration(smoke_family, selection, monkeypatch):
    fam, built, release = smoke_family
    real = pipeline.assess

    def nothing_engages(*a, **k):
        return dict(real(*a, **k), engaged=False, reason="curve model inert")

    monkeypatch.setattr(pipeline, "assess", nothing_engages)
    sel = pipeline.engaged_variant(fam, built, scale="smoke", progress=False)
    assert sel.variant == "release" and not sel.engaged and sel.result.alm_prime_path == release.alm_prime_path
    assert "stand-in" in sel.note and sel.table["chosen"].tolist() == [True, False, False]


def test_gates_are_cached_beside_the_run_and_round_trip(smoke_family, selection):
    fam, built, release = smoke_family
    g = pipeline.run_gates(release, fam, built, scale="smoke")
    files = list(release.train_dir.glob("gates-*.json"))  # a cache may also hold older gate versions' files
    assert any(gates.Gates.from_dict(json.loads(f.read_text())) == g for f in files)
    assert g.n_positions == settings_for("pico", "smoke").gate_chunks * built.pico_config.seq_len
    row = selection.table.set_index("variant").loc["release"]
    assert row["curve_alive"] == pytest.approx(g.curve_alive) and bool(row["engaged"]) == g.engaged


def test_best_inv_T_score_picks_the_1_over_T_with_the_lowest_dev_kl():
    rng = np.random.default_rng(0)
    elm = np.log(rng.dirichlet(np.ones(30), size=8)).astype(np.float32)
    amateur = np.log(rng.dirichlet(np.ones(30), size=8)).astype(np.float32)
    truth_p = np.exp(elm)  # the expert is the truth: 1/T = 0 would be best
    best = tuning.best_inv_T_score(elm, amateur, truth_p, k=20, grid=(1.0, 0.25, 0.5))
    each = {v: tuning.validation_score(elm, amateur, truth_p, 20, v)["score"] for v in (1.0, 0.25, 0.5)}
    assert best["inv_T"] == 0.25 and best["score"] == pytest.approx(min(each.values()))


def test_every_variant_tunes_lambda3_and_1_over_T_together(selection):
    for v in variants.VARIANT_NAMES:  # the release included (design notes, "lambda3 on the claims' criterion")
        tab = selection.results[v].tuning
        assert tab.attrs["score"] == tuning.TUNING_SCORES[tuning.SCORE_BEST_INV_T]
        assert {"CD dev-best 1/T", "CD dev-best 1/T value"} <= set(tab.attrs["reference"])
        assert tab["inv_T"].isin(settings.INV_T_GRID).all()
        # the choice: the largest lambda3 within the tie tolerance of the best dev KL, on the grid widened
        ties = tab[tab["score"] <= tab["score"].min() + tuning.TIE_NATS]
        assert tab.loc[tab["chosen"], "lambda3"].iloc[0] == ties["lambda3"].max()
        grid = variants.lambda3_grid(v, settings_for("pico", "smoke"))
        assert set(grid) <= set(tab["lambda3"]) and list(tab["lambda3"]) == sorted(tab["lambda3"])
        assert set(tab.loc[tab["widened"], "lambda3"]) == set(tab["lambda3"]) - set(grid)
        assert tab.attrs["interior"] in (True, False) and tab.attrs["grid"] == list(grid)


# ----------------------------------------------------------------------------- choosing lambda3


def _fake_kl(best: float, tried: list):
    """A fake dev KL (no training): the squared distance of log2(lambda3) from log2(``best``); notes each
    value scored in ``tried``."""

    def score_of(value):
        tried.append(value)
        return {"score": (np.log2(value) - np.log2(best)) ** 2, "n_items": 1}

    return score_of


def test_choose_lambda3_widens_to_the_left_until_the_choice_is_interior():
    tried = []
    best, rows, interior = tuning.choose_lambda3((0.2, 0.4, 0.8), _fake_kl(0.05, tried))
    assert best == 0.05 and interior
    assert tried == [0.2, 0.4, 0.8, 0.1, 0.05, 0.025]  # the smallest halved, three times
    assert [r["lambda3"] for r in rows] == [0.025, 0.05, 0.1, 0.2, 0.4, 0.8]
    assert [r["widened"] for r in rows] == [True, True, True, False, False, False]
    assert all(r["n_items"] == 1 for r in rows)  # the scoring function's fields are kept


def test_choose_lambda3_widens_to_the_right():
    tried = []
    best, rows, interior = tuning.choose_lambda3((0.2, 0.4, 0.8), _fake_kl(1.6, tried))
    assert (best, interior) == (1.6, True) and tried[3:] == [1.6, 3.2]
    assert [r["lambda3"] for r in rows if r["widened"]] == [1.6, 3.2]


def test_choose_lambda3_stops_after_three_values_and_says_it_is_at_the_edge():
    tried = []
    best, rows, interior = tuning.choose_lambda3((0.2, 0.4), _fake_kl(100.0, tried))
    assert tried == [0.2, 0.4, 0.8, 1.6, 3.2] and best == 3.2 and not interior and len(rows) == 5
    # an interior choice adds nothing; a grid of one value is a given value; nothing lies below 0
    tried = []
    assert tuning.choose_lambda3((0.2, 0.4, 0.8), _fake_kl(0.4, tried))[::2] == (0.4, True) and len(tried) == 3
    best, rows, interior = tuning.choose_lambda3((0.2,), _fake_kl(0.05, []))
    assert (best, [r["lambda3"] for r in rows], interior) == (0.2, [0.2], False)
    kl = {0.0: 1.0, 0.6: 2.0, 2.4: 3.0}
    best, rows, interior = tuning.choose_lambda3((0.0, 0.6, 2.4), lambda v: {"score": kl[v]})
    assert (best, len(rows), interior) == (0.0, 3, False)


def test_choose_lambda3_does_not_follow_a_plateau():
    # the default build's reading under the first rule: every value from 0.8 up tied within 0.0005 nats,
    # so the larger kept winning and the choice ended at the edge; now the first tie past the end stops it
    kl = {0.05: 2.433, 0.1: 2.433, 0.2: 2.434, 0.4: 2.432, 0.8: 2.4168, 1.6: 2.4166, 3.2: 2.4167, 6.4: 2.4165}
    tried = []

    def score_of(v):
        tried.append(v)
        return {"score": kl[v]}

    best, rows, interior = tuning.choose_lambda3((0.05, 0.1, 0.2, 0.4, 0.8, 1.6), score_of)
    assert (best, interior) == (1.6, True) and tried[6:] == [3.2]
    # a value past the end that is better by more than the tie is followed
    kl[3.2] = 2.40
    best, rows, interior = tuning.choose_lambda3((0.05, 0.1, 0.2, 0.4, 0.8, 1.6), lambda v: {"score": kl[v]})
    assert (best, interior) == (3.2, True) and [r["lambda3"] for r in rows][-1] == 6.4


def test_choose_lambda3_gives_ties_to_the_larger_value():
    kl = {0.1: 2.2000, 0.2: 2.2004, 0.4: 2.2010, 0.8: 2.3000}
    best, rows, interior = tuning.choose_lambda3((0.1, 0.2, 0.4, 0.8), lambda v: {"score": kl[v]})
    assert (best, interior, len(rows)) == (0.2, True, 4)  # 0.2 is within 0.0005 nats of 0.1; 0.4 is not
    kl[0.4] = 2.20049  # within the tolerance too: the larger wins
    assert tuning.choose_lambda3((0.1, 0.2, 0.4, 0.8), lambda v: {"score": kl[v]})[0] == 0.4
    with pytest.raises(ValueError, match="empty"):
        tuning.choose_lambda3((), lambda v: {"score": 0.0})
