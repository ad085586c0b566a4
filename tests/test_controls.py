"""Testbed controls (apd.evaluation.controls) and the testbed table (apd.report.testbed)."""

import json
import multiprocessing

import numpy as np
import pandas as pd
import pytest

from apd.evaluation import controls as ct
from apd.family.settings import CONTROL_INV_T_GRID
from apd.report import testbed as tb


def _family(B=12, V=40, seed=0):
    """Member log-probs (3 members) where the truth is the ELM's top token for half the items and
    the ALM's top token (a shared mistake the ALM makes more strongly) for the other half."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(B, V))
    mistake = np.argmax(base, -1)
    right = (mistake + 1) % V
    elm = base.copy()
    elm[np.arange(B), right] += 2.5
    elm[np.arange(B), mistake] += 2.0
    alm = base.copy()
    alm[np.arange(B), mistake] += 4.0
    mid = (elm + alm) / 2
    lp = np.stack([alm, mid, elm])
    lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
    truth = np.eye(V)[right]
    return lp, truth, right


def test_cd_gain_positive_when_the_amateur_shares_the_mistake_more_strongly():
    lp, truth, gold = _family()
    people = np.repeat(np.arange(6), 2)
    t = ct.cd_gain_table(lp, truth, gold, people, inv_T=(0.25, 1.0))
    assert (t["kl_gain"] > 0).all() and (t["nll_gain"] > 0).all()
    assert t.loc[1.0, "kl_gain"] > t.loc[0.25, "kl_gain"]  # the stronger contrast helps more here
    assert (t["n_people"] == 6).all()


def test_cd_gain_se_is_clustered_by_person():
    lp, truth, gold = _family(B=12, seed=3)
    t_items = ct.cd_gain_table(lp, truth, gold, np.arange(12), inv_T=(0.5,), k=40)
    t_people = ct.cd_gain_table(lp, truth, gold, np.repeat(np.arange(3), 4), inv_T=(0.5,), k=40)
    assert t_items.loc[0.5, "kl_gain"] == pytest.approx(t_people.loc[0.5, "kl_gain"])  # equal-sized clusters
    assert t_people.loc[0.5, "n_people"] == 3 and t_items.loc[0.5, "n_people"] == 12
    # the clustered se is the se over the 3 persons' mean differences
    assert t_people.loc[0.5, "kl_gain_se"] != pytest.approx(t_items.loc[0.5, "kl_gain_se"])


def test_known_answer_at_noise_rows_and_ratio():
    t = ct.known_answer_at_noise(0.0, np.log([1e4, 3e4, 1e5, 3e5, 1e6, 2e6]), n_positions=4, iterations=100)
    assert list(t.index) == ["saturating", "still_rising"]
    np.testing.assert_allclose(t["ratio"], t["fitter_error"] / t["p_elm_error"])


def test_asymptote_errors_per_bucket():
    lp, truth, _ = _family(B=12)
    x = np.log([1e4, 1e5, 1e6])
    ids = np.argsort(-lp[-1], -1)[:, :5]
    buckets = np.array(["head"] * 4 + ["torso"] * 4 + ["tail"] * 4)
    t = ct.asymptote_errors(lp, x, truth, ids, np.repeat(np.arange(6), 2), buckets, iterations=50)
    assert list(t.index) == ["head", "torso", "tail", "all"]
    assert ((t["tv_elm"] >= 0) & (t["tv_elm"] <= 1)).all()
    # tv_* pool the items; the gain averages per person first: same sign
    assert (np.sign(t["gain"]) == np.sign(t["tv_elm"] - t["tv_fitter"])).all()


def _controls(kl_gain=0.05, se=0.01, ne=None, head_ratio=0.8, flat=(0.5, 0.4, 0.3)):
    gain = pd.DataFrame(
        {
            "inv_T": [0.1, 1.0],
            "kl_elm": [2.0, 2.0],
            "kl_cd": [2 - kl_gain, 2.1],
            "kl_gain": [kl_gain, -0.1],
            "kl_gain_se": [se, 0.02],
            "nll_gain": [0.01, -0.02],
            "nll_gain_se": [0.01, 0.01],
            "n": [10, 10],
            "n_people": [5, 5],
        }
    ).set_index("inv_T")
    asym = pd.DataFrame(
        {
            "tv_elm": [0.5],
            "tv_fitter": [0.5 * head_ratio],
            "ratio": [head_ratio],
            "gain": [0.1],
            "gain_se": [0.01],
            "n": [4],
        },
        index=pd.Index(["head"], name="bucket"),
    )
    known = pd.DataFrame(
        {"p_elm_error": [0.01], "fitter_error": [0.02], "ratio": [2.0]}, index=pd.Index(["saturating"], name="regime")
    )
    return ct.Controls(
        n_people=5,
        n_items=10,
        cd_gain=gain,
        dev_inv_T=0.1,
        residual_noise=0.03,
        known_answer=known,
        asymptote=asym,
        flattening=pd.Series(dict(zip(("head", "torso", "tail"), flat))),
        ne_er=ne,
    )


def test_passes_reads_the_four_thresholds():
    assert _controls().passes() == {"cd_kl": True, "cd_ne_er": None, "head_extrapolation": True, "head_flattens": True}
    p = _controls(
        kl_gain=0.029, se=0.01, head_ratio=0.95, flat=(0.3, 0.4, 0.5), ne={"diff": 0.01, "diff_se": 0.01}
    ).passes()
    assert p == {"cd_kl": False, "cd_ne_er": False, "head_extrapolation": False, "head_flattens": False}
    assert _controls(ne={"diff": 0.05, "diff_se": 0.01}).passes()["cd_ne_er"] is True


def test_row_is_flat_and_json_safe():
    r = _controls().row()
    assert r["kl_gain_dev_T"] == 0.05 and r["kl_gain_paper_T"] == -0.1 and r["dev_inv_T"] == 0.1
    assert r["pass_cd_kl"] is True and r["ne_er_gain"] is None
    json.dumps(r)


def test_testbed_table_appends_and_replaces(tmp_path):
    path = tmp_path / "t.csv"
    assert tb.read_configurations(path).empty
    row = {"configuration": "a", "overrides": "{}", "device": "cpu", **_controls().row()}
    tb.append_configuration(row, path)
    tb.append_configuration({**row, "configuration": "b"}, path)
    tb.append_configuration({**row, "kl_gain_dev_T": 0.07}, path)  # same key: replaces "a"
    t = tb.read_configurations(path)
    assert sorted(t["configuration"]) == ["a", "b"]
    assert float(t.loc[t["configuration"] == "a", "kl_gain_dev_T"].iloc[0]) == 0.07
    s = tb.summary_table(t)
    assert s.loc["b", "passes"] == "3 of 3"
    with pytest.raises(ValueError, match="needs"):
        tb.append_configuration({"configuration": "c"}, path)


def _append_many(path, prefix, n, row):
    for i in range(n):
        tb.append_configuration({**row, "configuration": f"{prefix}{i}"}, path)


def test_processes_appending_side_by_side_keep_every_row(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_CACHE_DIR", str(tmp_path / "cache"))  # where the table's lock lives
    path = tmp_path / "t.csv"
    row = {"overrides": "{}", "device": "cpu", **_controls().row()}
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(path, p, 15, row)) for p in "ab"]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0, 0]
    assert len(tb.read_configurations(path)) == 30  # without the lock, rows written at once are lost
    assert tb.table_lock(path).parent == tmp_path / "cache" / "locks"


def test_committed_table_reads():
    t = tb.read_configurations()
    assert set(tb.TESTBED_KEY) <= set(t.columns)


def test_controls_on_the_smoke_family(smoke_family):
    fam, built, _ = smoke_family
    c = ct.measure_controls(fam, built, ne_er=False, fit_iterations=50, known_answer_positions=4)
    dev_people = {
        n for n, side in __import__("apd").world.truth.dev_test_people(built.corpus.world).items() if side == "dev"
    }
    assert c.n_people == len(dev_people)
    assert c.dev_inv_T in CONTROL_INV_T_GRID and 0 < c.residual_noise < 1
    assert set(c.flattening.index) >= {"head", "torso", "tail"}
    assert c.passes()["cd_ne_er"] is None and c.ne_er is None
    g = c.gain_at(1.0)
    assert np.sign(g["kl_gain"]) == np.sign(g["kl_elm"] - g["kl_cd"])  # per-person mean vs pooled mean
    json.dumps(c.row())


def test_build_configured_without_training_refuses_an_untrained_family(tmp_path):
    from apd.family import pico

    corpus_cfg, pico_cfg = pico.configs("smoke")
    with pytest.raises(FileNotFoundError, match="not trained yet"):
        pico.build_configured(
            corpus_cfg, pico_cfg.replace(epochs=0.5), "untrained", cache=tmp_path, device="cpu", train=False
        )
    assert not list((tmp_path / "families").glob("pico-*/family.json"))


def test_docstring_examples_run():
    import doctest

    for module in (ct, tb):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_the_controls_fits_run_where_they_are_asked_and_come_back_as_numpy(monkeypatch):
    """Each fit of the extrapolation controls goes to the device it is given (a GPU family's own, by
    fit_device); on the CPU, asking for it changes nothing."""
    from apd.core import curves
    from apd.evaluation import noise

    rng = np.random.default_rng(0)
    x = np.array([9.5, 10.3, 11.5, 12.7, 14.4])
    lp = np.log(rng.dirichlet(np.ones(6), size=(5, 8)))  # (N, B, V)
    ids = np.argsort(-lp[-1], axis=-1)[:, :3]
    truth = rng.dirichlet(np.ones(6), size=8)
    people, buckets = np.arange(8) % 4, np.array(["head", "tail"] * 4)

    def run(device):
        return (
            noise.family_noise(noise.HELD_OUT, member_logprobs=lp, log_sizes=x, ids=ids, iterations=30, device=device),
            ct.known_answer_at_noise(0.01, x, n_positions=3, iterations=30, device=device),
            ct.asymptote_errors(lp, x, truth, ids, people, buckets, iterations=30, device=device),
        )

    base = run(None)
    on_cpu = run("cpu")
    assert base[0] == on_cpu[0]
    pd.testing.assert_frame_equal(base[1], on_cpu[1])
    pd.testing.assert_frame_equal(base[2], on_cpu[2])

    seen, fit = [], curves.fit_curves

    def recording(*args, device=None, **kw):
        seen.append(device)
        return fit(*args, device="cpu", **kw)  # where a GPU would be asked for, run here

    monkeypatch.setattr(curves, "fit_curves", recording)
    asked = run("cuda:3")
    assert seen and set(seen) == {"cuda:3"}, seen
    assert asked[0] == base[0]
    pd.testing.assert_frame_equal(asked[2], base[2])

    class Gpu:
        device = "cuda:0"

    class Cpu:
        device = "cpu"

    assert (ct.fit_device(Gpu()), ct.fit_device(Cpu())) == ("cuda:0", None)
