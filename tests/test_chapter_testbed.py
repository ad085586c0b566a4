"""apd.chapters.testbed on a tiny controls table."""

import pandas as pd

from apd.chapters import testbed as ch
from apd.report.results import Run


def test_configurations_glue_and_the_table_in_the_text(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    run = Run(stem="testbed", profile="p", parameters={})
    table = pd.DataFrame({"configuration": ["a", "b"]})
    summary = pd.DataFrame(
        {
            "CD KL gain (dev 1/T)": [0.3, 0.4],
            "its se": [0.04, 0.05],
            "head flatten": [0.2, 0.3],
            "tail flatten": [0.3, 0.3],
            "train s": [1, 2],
            "passes": ["2 of 4", "4 of 4"],
        },
        index=pd.Index(["a", "b"], name="configuration"),
    )
    ch.glue_configurations(run, table, summary)
    assert (
        run.values["best_passes"] == "4 of 4" and run.values["n_best"] == 1 and run.values["all_pass_configs"] == "b"
    )
    ch.glue_configurations(run, table, summary.assign(passes=["2 of 4", "2 of 4"]))
    assert run.values["n_best"] == 2 and run.values["all_pass_configs"] == "none"
    shown = ch.in_text(summary)
    assert shown.columns[0] == "passes" and shown.shape[1] + 1 <= 7
    assert shown["CD KL gain (dev 1/T) ± se"].iloc[0] == "+0.300 ± 0.040"
    assert shown["head / tail flatten"].iloc[0] == "20% / 30%"
    assert ch.verdict_first(summary).columns[0] == "passes"
    ch.glue_configurations(run, table.iloc[:0], pd.DataFrame())
    assert run.values["best_passes"] == "none"


def test_docstring_examples_of_the_chapter_modules_run():
    import doctest

    from apd.chapters import ablations, family, gluing, paper_vs_book, qa, testbed

    for module in (ablations, family, gluing, paper_vs_book, qa, testbed):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
        assert result.attempted and result.failed == 0, module.__name__


def test_the_best_each_control_reached_names_its_configuration_and_whether_it_passes():
    import doctest

    from apd.report import testbed

    table = pd.DataFrame(
        {
            "configuration": ["default", "bigger", "smaller"],
            "kl_gain_dev_T": [0.02, 0.012, -0.01],
            "kl_gain_dev_T_se": [0.01, 0.004, 0.01],  # z = 2, 3, -1
            "ne_er_gain": [0.004, None, -0.02],
            "ne_er_gain_se": [0.01, None, 0.01],  # z = 0.4, not measured, -2
            "fit_ratio_head": [0.95, 1.0, 0.99],
            "flat_head": [0.3, 0.4, 0.5],
            "flat_tail": [0.5, 0.8, 0.45],
        }
    )
    best = testbed.best_per_control(table)
    assert best["configuration"].tolist() == ["bigger", "default", "default", "smaller"]
    assert best["passes"].tolist() == ["yes", "no", "no", "yes"]
    assert best["best reached"].tolist() == [
        "+0.0120 ± 0.0040 (3.0 se)",
        "+0.004 ± 0.010 (0.4 se)",
        "95% of p_ELM's error",
        "50% / 45%",
    ]
    none = testbed.best_per_control(table.drop(columns=["ne_er_gain", "ne_er_gain_se"]))
    assert none.loc["CD names fewer wrong entities (NE_ER)", "best reached"] == "not measured"
    assert doctest.testmod(testbed, optionflags=doctest.ELLIPSIS).failed == 0


def test_a_design_trained_with_two_seeds_is_counted_once_per_seed_and_nothing_ranks_the_designs():
    import json

    from apd.report import testbed

    run = Run(stem="testbed", profile="p", parameters={})
    table = pd.DataFrame(
        {
            "configuration": ["default", "other", "default, seed 1"],
            "overrides": [
                json.dumps({"scale": "default"}),
                json.dumps({"scale": "default", "world.value_zipf": 0.0}),
                json.dumps({"pico.seed": 1, "scale": "default"}),
            ],
            "flat_head": [0.5, 0.35, 0.1],
            "flat_tail": [0.5, 0.5, 0.5],
            "pass_head_flattens": [True, False, False],
        }
    )
    summary = testbed.summary_table(table)
    assert summary["seeds"].tolist() == [2, 1, 2]
    assert not any("closeness" in c for c in summary.columns)
    ch.glue_configurations(run, table, summary)
    assert run.values["has_replicates"] is True
    assert not any(k.startswith("closest") for k in run.values)


def test_the_dose_response_glue_names_the_rules_choice_and_whether_this_build_uses_it():
    import dataclasses

    from apd.report import dose_response as dr
    from apd.world.world import WorldConfig

    def row(design, seed, gain, se):
        return {
            "configuration": dr.point_name(design, seed),
            "dev_inv_T": 0.25,
            "kl_gain_dev_T": gain,
            "kl_gain_dev_T_se": se,
            "nll_gain_dev_T": 0.0,
            "nll_gain_dev_T_se": 0.01,
        }

    table = pd.DataFrame(
        [row("exact truth", 0, 0.005, 0.003), row("exact truth", 1, 0.01, 0.005)]
        + [row("misstatements 0.15", s, 0.03, 0.005) for s in (0, 1)]
        + [row("misstatements 0.3", 0, 0.05, 0.005)]
    )
    pts = dr.points(table)
    summary = dr.designs(pts)
    run = Run(stem="testbed", profile="p", parameters={})
    ch.glue_dose_response(run, pts, summary, WorldConfig())
    assert run.values["dr_points"] == 5 and run.values["dr_designs"] == 3
    assert run.values["dr_adopted"] == "misstatements 0.15" and run.values["dr_build_is_adopted"] is False
    assert (run.values["dr_best_point_design"], run.values["dr_best_point_seed"]) == ("misstatements 0.3", 0)
    assert run.values["dr_z_max"] == 10.0 and "dr_best_point" not in run.values  # a name and a number, no phrase
    assert run.values["dr_best_design"] == "misstatements 0.3" and run.values["dr_best_design_z"] == 10.0
    assert run.values["dr_ne_er_points"] == 0 and "dr_ne_er_significant" not in run.values  # none measured
    ne = table.assign(ne_er_gain=[0.03, 0.01, -0.02, float("nan"), 0.05], ne_er_gain_se=0.01)
    with_ne = Run(stem="testbed", profile="p", parameters={})
    ch.glue_dose_response(with_ne, dr.points(ne), dr.designs(dr.points(ne)), WorldConfig())
    assert with_ne.values["dr_ne_er_points"] == 4 and with_ne.values["dr_ne_er_significant"] == 2  # 3 and 5 se
    ch.glue_dose_response(run, pts, summary, dataclasses.replace(WorldConfig(), misstatement_rate=0.15))
    assert run.values["dr_build_is_adopted"] is True
    ch.glue_dose_response(run, pts.iloc[:0], dr.designs(pts.iloc[:0]), WorldConfig())
    assert run.values["dr_points"] == 0 and run.values["dr_adopted"] == "none"
    assert ch.world_config("smoke") == WorldConfig.smoke() and ch.world_config("pythia") is None
