"""The dose-response study's bookkeeping: points per design and seed, the adoption rule, the figure,
and the study script's arguments (which train through ``scripts/testbed_study.py``)."""

import importlib.util
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

from apd.report import dose_response as dr
from apd.report.plots import figure

ROOT = Path(__file__).resolve().parents[1]


def _row(design, seed, gain, se, inv_T=0.25):
    return {
        "configuration": dr.point_name(design, seed),
        "overrides": json.dumps({"scale": "default", "pico.seed": seed}),
        "device": "cpu",
        "dev_inv_T": inv_T,
        "kl_gain_dev_T": gain,
        "kl_gain_dev_T_se": se,
        "nll_gain_dev_T": gain / 2,
        "nll_gain_dev_T_se": se,
        "fit_ratio_head": 0.97,
        "flat_head": 0.3,
        "flat_tail": 0.5,
        "train_seconds": 800.0,
    }


@pytest.fixture
def table():
    return pd.DataFrame(
        [
            _row("exact truth", 0, 0.005, 0.003),
            _row("exact truth", 1, 0.015, 0.005),  # 3.0 se: passes on this seed alone
            _row("misstatements 0.15", 0, 0.012, 0.003),
            _row("misstatements 0.15", 1, 0.008, 0.003),  # 2.7 se: fails
            _row("misstatements 0.3", 1, 0.025, 0.005),
            _row("misstatements 0.3", 0, 0.030, 0.006),
            _row("misstatements 0.45", 0, 0.040, 0.006),  # one seed so far
            _row("decoys 0.3", 0, 0.002, 0.004),
            {**_row("exact truth", 0, 1.0, 0.01), "configuration": "a configuration of another study"},
        ]
    )


def test_points_follow_the_rule_order_and_read_the_kl_control(table):
    pts = dr.points(table)
    assert pts["design"].tolist()[:6] == ["exact truth"] * 2 + ["misstatements 0.15"] * 2 + ["misstatements 0.3"] * 2
    assert pts.loc[pts["design"] == "misstatements 0.3", "seed"].tolist() == [0, 1]
    assert "a configuration of another study" not in set(pts["design"])
    assert pts.loc[1, "passes"] and not pts.loc[0, "passes"]  # 0.015 >= 3 x 0.005; 0.005 < 3 x 0.003
    assert pts.loc[1, "z"] == pytest.approx(3.0)


def test_a_design_passes_only_when_every_seed_passes_and_the_least_departure_is_adopted(table):
    s = dr.designs(dr.points(table))
    assert s.loc["exact truth", "passes"] is False  # one of two seeds
    assert s.loc["misstatements 0.15", "passes"] is False
    assert s.loc["misstatements 0.3", "passes"] is True
    assert s.loc["misstatements 0.45", "passes"] is None  # a seed is missing
    assert s.loc["decoys 0.3", "passes"] is False
    assert s.loc["misstatements 0.3", "passing"] == "2 of 2"
    assert "+0.0300 ± 0.0060 (1/T 0.25)" in s.loc["misstatements 0.3", "gains"]
    assert dr.adopted(s) == "misstatements 0.3"
    none_pass = dr.designs(dr.points(table[~table["configuration"].str.startswith("misstatements 0.3")]))
    assert dr.adopted(none_pass) is None
    assert dr.adopted(dr.designs(dr.points(table.iloc[:0]))) is None


def test_overrides_of_a_design():
    assert dr.overrides_of("exact truth") == {}
    assert dr.overrides_of("misstatements 0.3, falling with exposure") == {
        "misstatement_rate": 0.3,
        "misstatement_decay": 0.5,
    }
    with pytest.raises(KeyError, match="not a design"):
        dr.overrides_of("misstatements 0.99")


def test_plot_marks_passing_points_filled(table):
    every = pd.concat(
        [table, pd.DataFrame([_row(d.name, 0, 0.01, 0.005) for d in dr.DESIGNS if d.process != "misstatements"])]
    )
    fig, ax = figure()
    dr.plot(ax, dr.points(every))  # every process in one legend, each drawn its own way
    labels = ax.get_legend().get_texts()
    assert {t.get_text() for t in labels} >= {"misstatements (mean of seeds)", "decoys", "open: fails"}
    faces = [c.get_markerfacecolor() for c in ax.lines if c.get_marker() == "o" and len(c.get_xdata())]
    assert "white" in faces and any(f != "white" for f in faces)
    assert "nats" in ax.get_ylabel()


def test_plot_draws_the_ne_er_gain_filled_where_it_passes_and_refuses_an_unknown_measure(table):
    ne = table.assign(ne_er_gain=0.05, ne_er_gain_se=0.01)
    ne.loc[ne.index[0], "ne_er_gain"] = 0.01  # 1 se: open
    fig, ax = figure()
    dr.plot(ax, dr.points(ne), "ne_er_gain", legend=False)
    assert ax.get_legend() is None and "NE$_{ER}$" in ax.get_ylabel()
    faces = [c.get_markerfacecolor() for c in ax.lines if c.get_marker() == "o" and len(c.get_xdata())]
    assert "white" in faces and any(f != "white" for f in faces)
    with pytest.raises(ValueError, match="use one of"):
        dr.plot(ax, dr.points(ne), "nll_gain")


def test_the_study_script_trains_each_design_with_its_world_and_the_six_members(tmp_path):
    spec = importlib.util.spec_from_file_location("dose_response_script", ROOT / "scripts" / "dose_response.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    argv = script.argv_of({"misstatement_rate": 0.3}, 1, tmp_path / "t.csv", "misstatements 0.3, training seed 1")
    assert argv[argv.index("--world") + 1] == "misstatement_rate=0.3"
    assert f"members={dr.DOSE_MEMBERS}" in argv and "seed=1" in argv and "--no-ne-er" in argv
    assert len(dr.DOSE_MEMBERS.split(";")) >= 6
    with pytest.raises(SystemExit, match="unknown design"):
        script.main(["--only", "nothing like it", "--table", str(tmp_path / "t.csv")])
    assert argv[argv.index("--scale") + 1] == "default" and argv[argv.index("--device") + 1] == "cpu"
    gpu = script.argv_of({"misstatement_rate": 0.3}, 0, tmp_path / "g.csv", "x", scale="gpu", device="cuda")
    assert not any(a.startswith("members=") for a in gpu)  # the gpu scale trains its own members
    assert gpu[gpu.index("--scale") + 1] == "gpu" and gpu[gpu.index("--device") + 1] == "cuda"


def test_the_default_world_is_the_design_the_rule_adopts_from_the_committed_table():
    from apd.family import pico
    from apd.world.world import BOOK_ERRORS, WorldConfig

    table = dr.read_dose_response(ROOT / "docs" / "testbed" / "dose_response.csv")
    choice = dr.adopted(dr.designs(dr.points(table)))
    assert BOOK_ERRORS == (dr.overrides_of(choice) if choice else {})
    world = pico.configs("default")[0].world
    assert world == WorldConfig.book() and pico.configs("exact-truth")[0].world == WorldConfig()
    assert pico.configs("default")[1] == pico.configs("exact-truth")[1]  # one family, two worlds


def test_verdicts_are_plain_booleans_when_every_design_is_decided(table):
    decided = table[table["configuration"].str.startswith(("exact truth", "misstatements 0.15"))]
    s = dr.designs(dr.points(decided))
    assert s["passes"].tolist() == [False, False] and s.loc["exact truth", "passes"] is False
    passing = dr.designs(dr.points(table[table["configuration"].str.startswith("misstatements 0.3")]))
    assert passing.loc["misstatements 0.3", "passes"] is True and dr.adopted(passing) == "misstatements 0.3"


def test_ne_er_is_context_beside_each_point_and_not_measured_where_absent(table):
    with_ne = table.assign(ne_er_gain=[0.025] + [float("nan")] * (len(table) - 1), ne_er_gain_se=0.01)
    pts = dr.points(with_ne)
    assert pts.loc[0, "ne_er_gain"] == 0.025 and pts["ne_er_gain"].isna().sum() == len(pts) - 1
    s = dr.designs(pts)
    assert s.loc["exact truth", "ne_er_gains"] == "+0.025 ± 0.010; not measured"
    assert s["passes"].tolist() == dr.designs(dr.points(table))["passes"].tolist()  # NE_ER never decides
    assert dr.points(table)["ne_er_gain"].isna().all()  # a table measured without NE_ER


def _script():
    spec = importlib.util.spec_from_file_location("dose_response_script", ROOT / "scripts" / "dose_response.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_the_ne_er_pass_fills_a_measured_point_and_refuses_a_different_family(tmp_path, monkeypatch):
    """``--ne-er`` measures a point again on its cached family (never training) and writes only the
    NE_ER columns into its row; a point whose controls come out different stops it."""
    import sys
    import types

    script = _script()
    path = tmp_path / "t.csv"
    row = {**_row("exact truth", 0, 0.0177, 0.0058), "kl_elm": 2.43, "ne_er_gain": float("nan")}
    pd.DataFrame([row]).to_csv(path, index=False)
    calls = []

    def fake_main(argv):  # what scripts/testbed_study.py appends: the same controls, now with NE_ER
        calls.append(argv)
        out = Path(argv[argv.index("--table") + 1])
        kl = 0.0177 if len(calls) == 1 else 0.02
        pd.DataFrame(
            [
                {
                    **row,
                    "kl_gain_dev_T": kl,
                    "ne_er_elm": 0.74,
                    "ne_er_cd": 0.71,
                    "ne_er_gain": 0.03,
                    "ne_er_gain_se": 0.01,
                    "ne_er_people": 100,
                }
            ]
        ).to_csv(out, index=False)

    monkeypatch.setitem(sys.modules, "testbed_study", types.SimpleNamespace(main=fake_main))
    monkeypatch.setenv("APD_CACHE_DIR", str(tmp_path / "cache"))
    script.add_ne_er(path, seeds=[0])
    assert "--no-train" in calls[0] and "--no-ne-er" not in calls[0]
    filled = pd.read_csv(path).iloc[0]
    assert filled["ne_er_gain"] == 0.03 and filled["ne_er_people"] == 100 and filled["kl_gain_dev_T"] == 0.0177
    script.add_ne_er(path, seeds=[0])
    assert len(calls) == 1  # a point with NE_ER is skipped
    pd.DataFrame([row]).to_csv(path, index=False)
    with pytest.raises(SystemExit, match="kl_gain_dev_T measured again"):
        script.add_ne_er(path, seeds=[0])
    assert pd.read_csv(path)["ne_er_gain"].isna().all()  # nothing written
