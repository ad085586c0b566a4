"""The factuality chapter's bookkeeping (apd.chapters.factuality): its typed headline holds
every key the verdicts read, its fallbacks glue every key as missing, and its tables and figures
are built from a scored sweep."""

import dataclasses
import json
import math
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from apd.report import pages
from apd.chapters import factuality as ch
from apd.chapters.gluing import glue_values
from apd.report.claims import keys_read
from apd.world.world import World, WorldConfig

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[1]


class FakeRun:
    """What the chapter's helpers call on a Run: glue, glue_text (a missing value reads "n/a")."""

    def __init__(self):
        self.values, self.glued = {}, []

    def glue(self, key, value):
        self.values[key] = value
        self.glued.append(key)

    def glue_text(self, key, value, fmt):
        missing = value is None or (isinstance(value, float) and not math.isfinite(value))
        self.values[key] = "n/a" if missing else value
        self.glued.append(key)


def test_every_key_the_verdicts_read_from_factuality_is_a_headline_field():
    read = keys_read("factuality")
    assert read, "the claims read nothing from the factuality chapter?"
    assert read <= set(ch.headline_keys()), sorted(read - set(ch.headline_keys()))


def test_headline_from_values_reads_missing_as_none_and_names_an_absent_field():
    values = {k: "n/a" for k in ch.headline_keys()}
    values.update(ne_er_apd=0.55, ne_er_cd=float("nan"), headline_from_sweep=True)  # a key beside the fields
    h = ch.FactualityHeadline.from_values(values)
    assert (h.ne_er_apd, h.ne_er_cd, h.comp_apd_diff) == (0.55, None, None)
    with pytest.raises(KeyError, match="ne_er_cd_gain"):
        ch.FactualityHeadline.from_values({k: v for k, v in values.items() if k != "ne_er_cd_gain"})


def _headline(d, d_se, comp, comp_se, gain, gain_se):
    return ch.FactualityHeadline(
        ne_er_diff_verdict=d,
        ne_er_diff_se_verdict=d_se,
        comp_apd_diff=comp,
        comp_apd_diff_se=comp_se,
        ne_er_cd_gain=gain,
        ne_er_cd_gain_se=gain_se,
    )


def test_conditions_follow_the_interval_and_are_false_where_nothing_ran():
    c = _headline(-0.0155, 0.0109, -0.084, 0.0093, 0.05, 0.01).conditions()
    assert c["verdict_apd_undecided"] and not (c["verdict_apd_fewer"] or c["verdict_apd_more"])
    assert c["comp_real_more"] and not (c["comp_real_fewer"] or c["comp_real_undecided"])
    assert c["cd_control_holds"] and not c["cd_control_fails"]
    assert not any(ch.FactualityHeadline().conditions().values())


def _headline_sources():
    """The glued dicts of every cell that glues a headline field, as where nothing ran."""
    _, labelled = ch.labelled_rows([("c", "s", "verdict_paper", None, 0.05), ("c", "s", "comp_paper_apd", None, 0.02)])
    return [
        ch.control_values(None),
        ch.verdict_values(),
        ch.complementarity_values({}, {}),
        ch.real_world_values(),
        labelled,
        ch.headline_values(False, {}, {}, {"fp_ne_er_apd": 0.4}),
        ch.real_headline_values({}, {}, None, {}, None, None),
    ]


def test_each_headline_field_is_glued_once_with_its_format_by_the_cell_that_computes_it():
    formats = {f.name: f.metadata["fmt"] for f in dataclasses.fields(ch.FactualityHeadline)}
    glued = [(k, f) for values in _headline_sources() for k, (_, f) in values.items() if k in formats]
    assert sorted(k for k, _ in glued) == sorted(formats)  # every field, none twice
    assert all(f == formats[k] for k, f in glued), [(k, f, formats[k]) for k, f in glued if f != formats[k]]


def test_headline_reads_the_glued_values_and_glue_conditions_adds_only_the_conditions():
    run = FakeRun()
    for values in _headline_sources():
        glue_values(run, values)
    glue_values(run, {"ne_er_diff_verdict": (-0.05, "{:.2%}"), "ne_er_diff_se_verdict": (0.01, "{:.2%}")})
    before = len(run.glued)
    h = ch.FactualityHeadline.from_values(run.values)
    ch.glue_conditions(run, h)
    assert h.ne_er_apd == 0.4 and h.ne_er_cd is None and h.ne_er_diff_verdict == -0.05
    assert run.glued[before:] == list(h.conditions())  # no field glued a second time
    assert run.values["verdict_apd_more"] is True and run.values["cd_control_fails"] is False


def test_sweep_methods_add_real_and_table6_rows_only_with_a_T_r_grid():
    args = ([0.8], [1.0], 2.0, [1.0], [2.0], 0.1, 1.0, [0.8, 0.6], ["low"])
    methods, grid = ch.sweep_methods(*args, [4.0, 1.0], 4.0)
    assert grid == [1.0, 4.0] and len(methods) == len({m.label for m in methods})
    assert {"APD + REAL", "ELM + REAL"} <= {m.curve for m in methods}
    plain, none = ch.sweep_methods(*args, [], 4.0)
    assert none == [] and not any(m.threshold == "REAL" for m in plain)
    assert ch.settings_values(2.0, [0.8, 0.6], 4.0, [])["real_T_r_used"] == (None, "{:g}")


@pytest.fixture(scope="module")
def world():
    return World(WorldConfig.smoke())


def test_world_prompts_and_the_checker_example(world):
    prompts, n_test = ch.world_prompts(world, 0, 5)
    assert len(prompts) == 5 and n_test >= 5 and len({p.person for p in prompts}) == 5
    again, _ = ch.world_prompts(world, 0, 5)
    assert [p.prompt for p in again] == [p.prompt for p in prompts]  # the draw is the seed's
    lines = ch.checker_example(world, prompts[0])
    assert lines[0].startswith(prompts[0].prompt) and lines[1].startswith("entities:")
    assert "wrong" not in lines[2] or "claims about the person" in lines[2]


def _sweep(cd_T=2.0, apd_T=1.0):
    """A scored sweep of two p per ELM, CD and APD with top-p k20 and the three REAL settings."""
    rows = []
    for role, T, base in (("elm", None, 0.50), ("cd", cd_T, 0.45), ("apd", apd_T, 0.40)):
        name = {"elm": "ELM", "cd": f"CD T={cd_T:g}", "apd": "APD"}[role]
        common = {"role": role, "T": T, "NE_ER_se": 0.02}
        for p in (0.8, 0.6):
            k20 = {"threshold": "top-p k20", "value": p, "curve": f"{name} + top-p k20", "NE_ER": base + p / 10}
            rest = {
                "true_rate": 0.3 + p / 10,
                "Dist-2": 0.3 + p / 5,
                "Rep": 0.01,
                "seconds": 1.0,
                "mean_top_p": np.nan,
            }
            rows.append({**common, **k20, "label": f"{name} + top-p k20 (p={p:g})", **rest})
        real = {"threshold": "REAL", "value": 4.0, "curve": f"{name} + REAL", "label": f"{name} + REAL (T_r=4)"}
        rest = {"NE_ER": base, "true_rate": 0.35, "Dist-2": 0.5, "Rep": 0.0, "seconds": 2.0, "mean_top_p": 0.9}
        rows.append({**common, **real, **rest})
    return pd.DataFrame(rows)


def _cities(world, prompts):
    """Each prompt's person's own birth city, and another person's, as continuations."""
    own = [" " + world.person(q.person).birth_city + "." for q in prompts]
    other = [
        " " + next(o.birth_city for o in world.people if o.birth_city != world.person(q.person).birth_city) + "."
        for q in prompts
    ]
    return own, other


def test_comparison_values_state_the_difference_and_its_se(monkeypatch):
    res = _sweep()
    out = ch.compare(res, 0.8, "", apd_T=1.0, cd_T=2.0)
    assert out["ne_er_diff"] == pytest.approx(0.05) and out["ne_er_diff_se"] == pytest.approx(math.hypot(0.02, 0.02))
    assert out["ne_er_apd_lower"] and not (out["ne_er_apd_higher"] or out["ne_er_apd_same"])
    glued = ch.comparison_values(res, [0.8, 0.6], "_world", 1.0, 2.0)
    assert glued["ne_er_diff_p2_world"][0] == pytest.approx(0.05) and glued["ne_er_apd_world"][1] == "{:.1%}"
    empty = ch.comparison_values(None, [0.8, 0.6], "_world", 1.0, 2.0)
    assert glued["ne_er_apd_lower_world"] == (True, None) and glued["ne_er_apd_higher_p2_world"] == (False, None)
    assert set(empty) == set(glued) and all(v is None or v is False for v, _ in empty.values())


def test_real_values_and_the_fallbacks_of_the_headline(monkeypatch):
    res = _sweep()
    trio = ch.real_trio(4.0, 2.0, 1.0)
    monkeypatch.setattr(ch.scoring, "row_of", lambda r, m: r[r["curve"] == m.curve].iloc[0])
    glued, rows = ch.real_values(res, trio, "", "_world")
    assert glued["ne_er_apd_real_world"][0] == pytest.approx(0.40) and set(rows) == {"apd", "cd", "elm"}
    none, no_rows = ch.real_values(None, trio, "fp_", "")
    assert no_rows == {} and all(v is None for v, _ in none.values()) and "fp_rep_elm_real" in none
    k20 = ch.apd_k20(0.8, 1.0)
    world = ch.real_world_values(res, rows, k20, {"gap": 0.01, "se": 0.02, "n": 1, "n_outside": 0})
    assert world["real_seconds_ratio_world"][0] == pytest.approx(2.0)
    # APD + REAL's NE_ER 0.40 against APD + top-p k20's 0.48: one outcome of three, for every measure
    assert world["ne_er_apd_real_vs_k20_lower_world"] == (True, None)
    for name in ("ne_er", "true_rate", "dist2"):
        for vs in ("k20", "elm_real"):
            assert sum(world[f"{name}_apd_real_vs_{vs}_{o}_world"][0] for o in ch.ORDER) == 1
    assert all(v is None or v is False for v, _ in ch.real_world_values().values())
    head = ch.real_headline_values({}, rows, res, {}, None, k20)
    assert not [k for k in head if k.endswith("_source")]  # the page names the source, by the rule
    assert head["ne_er_apd_k20"][0] == pytest.approx(0.48)
    assert ch.real_headline_values({}, {}, None, {}, None, k20)["ne_er_apd_real"] == (None, "{:.3f}")


def test_headline_values_prefer_the_verdict_then_the_sweep_then_factuality_prompts():
    sweep = ch.compare(_sweep(), 0.8, "", 1.0, 2.0)
    verdict = {f"{m}_{w}": 0.1 for m in ("ne_er", "true_rate", "dist2") for w in ("apd", "cd")}
    sources = ("headline_from_verdict", "headline_from_sweep", "headline_from_fp")
    from_verdict = ch.headline_values(True, verdict, sweep, {})
    assert from_verdict["ne_er_apd"][0] == 0.1 and [from_verdict[k][0] for k in sources] == [True, False, False]
    from_sweep = ch.headline_values(True, {}, sweep, {})
    assert from_sweep["ne_er_apd"][0] == pytest.approx(0.48)
    assert [from_sweep[k][0] for k in sources] == [False, True, False]
    fp = ch.compare(_sweep(), 0.8, "fp_", 1.0, 2.0)
    assert [ch.headline_values(False, {}, {}, fp)[k][0] for k in sources] == [False, False, True]
    assert not any(ch.headline_values(False, {}, {}, {})[k][0] for k in sources)  # no source: no sentence


def test_choice_values_glue_the_dev_rules_numbers():
    rows = [
        {"threshold": "top-p k20", "role": "cd", "T": T, "Dist-2": d, "NE_ER": ne}
        for T, pts in {1.0: [(0.2, 0.5), (0.4, 0.6)], 2.0: [(0.25, 0.6), (0.5, 0.7)]}.items()
        for d, ne in pts
    ]
    cd = ch.selection.choose_cd_T(pd.DataFrame(rows), grid=(1.0, 2.0))
    tr = ch.selection.fixed_choice("REAL's T_r", 4.0)
    values = ch.choice_values(cd, tr, 12)
    assert values["cd_T_dist2_from"][0] == 0.25 and values["cd_T_dist2_to"][0] == 0.4
    assert values["real_T_r_n_matched"][0] is None and values["dev_prompts_used"][0] == 12
    assert not [k for k in values if k.endswith("_how")]  # the rule is written in the notebook


def test_paired_comparison_values_are_all_missing_where_nothing_ran():
    verdict = ch.verdict_values()
    assert all(v is None or (v is False and f is None) for v, f in verdict.values())
    assert {f"verdict_{r}" for r in ch.READINGS} | {f"ne_er_apd_{o}_verdict" for o in ch.ORDER} <= set(verdict)
    comp = ch.complementarity_values({}, {}, 8, 0)
    assert all(v is None or v is False for v, _ in comp.values()) and "comp_apd_diff_se" in comp
    assert not any(comp[f"comp_{w}_{o}"][0] for w in ("apd", "elm") for o in ch.ORDER + ch.READINGS)


@pytest.mark.parametrize(
    "a, b, outcome", [(0.31, 0.35, "lower"), (0.35, 0.31, "higher"), (0.3551, 0.3549, "same"), (None, 0.3, None)]
)
def test_order_flags_exactly_one_outcome(a, b, outcome):
    flags = ch.order(a, b)
    assert list(flags) == list(ch.ORDER) and [o for o, f in flags.items() if f] == ([outcome] if outcome else [])


@pytest.mark.parametrize(
    "d, se, effect, outcome",
    [
        (0.05, 0.01, 0.03, "significant"),
        (-0.05, 0.01, 0.03, "reversed"),
        (0.001, 0.01, 0.1, "ruled_out"),
        (0.001, 0.1, 0.1, "inconclusive"),
        (0.001, 0.1, None, "inconclusive"),
    ],
)
def test_reading_flags_map_every_reading_to_one_outcome(d, se, effect, outcome):
    flags = ch.reading_flags(ch.power.reading_outcome(d, se, effect))
    assert list(flags) == list(ch.READINGS) and [r for r, f in flags.items() if f] == [outcome]


def test_reading_flags_refuse_an_unknown_reading():
    assert not any(ch.reading_flags(None).values())
    for bad in ("maybe", ch.power.reading(-0.05, 0.01, 0.03)):  # a sentence is not an outcome
        with pytest.raises(ValueError, match="unknown reading outcome"):
            ch.reading_flags(bad)


def test_complementarity_values_flag_the_order_and_the_reading_of_each_comparison():
    comp = {}
    for who, (d, se, effect) in {"apd": (-0.05, 0.01, 0.03), "elm": (0.001, 0.1, None)}.items():
        comp[f"comp_{who}_reading"] = ch.power.reading(d, se, effect)
        comp[f"comp_{who}_outcome"] = ch.power.reading_outcome(d, se, effect)
    head = {"ne_er_apd_real": 0.40, "ne_er_apd_k20": 0.30, "ne_er_elm_real": 0.40}
    out = ch.complementarity_values(comp, head, 8, 100)
    assert [o for o in ch.ORDER + ch.READINGS if out[f"comp_apd_{o}"][0]] == ["higher", "reversed"]
    assert [o for o in ch.ORDER + ch.READINGS if out[f"comp_elm_{o}"][0]] == ["same", "inconclusive"]
    assert out["comp_apd_reading"] == ("significant in the other direction", "{}")
    assert "comp_apd_outcome" not in out  # the code decides the flags; it is not glued
    assert ch.control_values(None)["ne_er_cd_gain"] == (None, "{:.2%}")
    del comp["comp_elm_outcome"]
    with pytest.raises(ValueError, match="comp_elm_outcome"):
        ch.complementarity_values(comp, head, 8, 100)


def test_factuality_prompts_bookkeeping():
    methods, _ = ch.sweep_methods([0.8], [1.0], 2.0, [1.0], [2.0], 0.1, 1.0, [0.8, 0.6], ["low"], [4.0], 4.0)
    table1 = ch.fp_method_list(methods, "table1", [0.8, 0.6], 2.0, 1.0, 4.0, real_run=False)
    with_real = ch.fp_method_list(methods, "table1", [0.8, 0.6], 2.0, 1.0, 4.0, real_run=True)
    assert len(table1) == 6 and set(table1) < set(with_real) and ch.real_trio(4.0, 2.0, 1.0)["elm"] in with_real
    assert ch.fp_method_list(methods, "all", [0.8], 2.0, 1.0, 4.0, True) is methods
    res = _sweep().assign(ne_units=3)
    assert ch.fp_status("Entail_R", {"Entail_R": "run_nli = False"}, res) == "not run: run_nli = False"
    assert ch.fp_status("NE_ER", {}, res).startswith("computed on 3")
    shown, caption = ch.fp_sweep_table(res.assign(true_rate=np.nan))
    assert "true_rate" not in shown and caption.startswith("not shown: true_rate")
    glued, vals = ch.fp_comparison_values(res, 0.8, 1.0, 2.0)
    assert glued["fp_ne_er_diff"][0] == pytest.approx(0.05) and vals["fp_ne_er_apd"] == pytest.approx(0.48)
    assert all(v is None for v, _ in ch.fp_comparison_values(None, 0.8, 1.0, 2.0)[0].values())
    start = ch.fp_values_start("test", True)
    assert start["fp_n_used"] == 0 and start["fp_sampling"].startswith("sampled among those")


def test_beside_paper_keeps_the_metrics_asked_for():
    ours = pd.DataFrame(
        {"role": ["apd", "apd"], "setting": ["p=0.8"] * 2, "metric": ["NE_ER", "Rep"], "value": [40.0, 1.0]}
    )
    side = ch.beside_paper(ours, ours.assign(value=[39.2, 2.0]), "ours", "paper", metrics=("NE_ER",))
    assert list(side.columns) == [("ours", "NE_ER"), ("paper", "NE_ER")]


def test_figures_draw_every_curve_of_the_sweep():
    res = _sweep()
    fig = ch.figure4(res, "Dist-2", "NE_ER", "NE_ER (%), lower is better", "t", 2.0, [1.0])
    assert len(fig.axes) == 3 and fig.axes[1].get_legend() is not None
    assert len(fig.axes[1].get_lines()) >= 3
    fig = ch.figure_real(res, "true claims", "t", 2.0)
    assert len(fig.axes) == 2 and {"APD + REAL", "APD + top-p k20"} <= set(fig.axes[0].get_legend_handles_labels()[1])


def test_continuation_examples_skip_empty_continuations():
    gens = {"A": [[""], [" Kelmor."], [" x"]]}
    lines = ch.continuation_examples(gens, "A", ["p0", "p1", "p2"], 1)
    assert len(lines) == 2 and "p1" in lines[1] and "Kelmor" in lines[1]
    assert "ended the text" in ch.continuation_examples({"A": [[""]]}, "A", ["p"], 2)[0]


def _opening(values):
    nb = json.loads((ROOT / "notebooks" / "factuality.ipynb").read_text())
    shown = pages.page_markdown(nb, values)
    start = next(i for i, md in enumerate(shown) if md.startswith("**What this chapter finds.**"))
    end = next(i for i, md in enumerate(shown) if md.startswith("The paper's main experiment"))
    return shown[start:end]


@pytest.mark.parametrize("case", ["undecided", "more", "fewer"])
def test_the_opening_has_three_sentences_chosen_by_the_numbers(case):
    d = {"undecided": -0.015, "more": -0.05, "fewer": 0.05}[case]
    h = _headline(d, 0.01, -0.08, 0.009, -0.003, 0.034)
    values = {
        **{k: v for k, v in dataclasses.asdict(h).items() if v is not None},
        **h.conditions(),
        "ne_er_apd_verdict": 0.55,
        "ne_er_apd_world": 0.47,
        "real_T_r_used": 4.0,
        "comp_apd_n_pairs": 1857,
        "comp_apd_reading": "significant in the other direction",
        "fp_ne_er_diff": 0.01,
    }
    opening = _opening(values)
    assert len(opening) == 3, opening
    assert {
        "undecided": "cannot tell",
        "more": "more wrong entities than CD",
        "fewer": "fewer wrong entities than CD",
    }[case] in opening[0]
    assert "makes APD name more wrong" in opening[1] and "not clearly there" in opening[2]


def test_the_opening_under_a_hub_family_reads_without_the_world():
    values = {"gate_verdict": "not engaged", "fp_ne_er_diff": 0.01, "fp_ne_er_diff_se": 0.02, "fp_n_used": 4}
    opening = _opening(values)
    assert opening[0].startswith("**What this chapter finds.** There are no world prompts here")
    assert len(opening) == 3 and "gates" in opening[2]


def test_without_factuality_prompts_the_section_says_so_in_one_line(tmp_path, monkeypatch):
    """Prompts that cannot be had are :class:`PromptsMissing` (the page's one line, a skipped section
    in the build report); a damaged prompts file still fails."""
    from apd.build import notebook_path
    from apd.evaluation.factuality.ner import MeasureUnavailable
    from apd.report.results import Run

    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path / "results"))
    with pytest.raises(ch.PromptsMissing):
        ch.fp_prompts(["factual"], "test", 2, 0, data_dir=tmp_path)
    bad = tmp_path / "factuality_prompts" / "fever_factual_test7k_final.jsonl"
    bad.parent.mkdir()
    bad.write_text("")
    with pytest.raises(ValueError) as err:
        ch.fp_prompts(["factual"], "test", 2, 0, data_dir=tmp_path)
    assert not isinstance(err.value, ch.PromptsMissing) and "empty" in str(err.value)

    run = Run(stem="factuality", profile="p", parameters={})
    ch.record_missing(run, MeasureUnavailable("no spaCy model"))
    assert run.values == {}
    ch.record_missing(run, ch.PromptsMissing("no file"))
    assert run.values == {"fp_data_missing": ch.FP_MISSING}
    nb = json.loads(notebook_path("factuality").read_text())
    text = "\n".join(pages.page_markdown(nb, run.values))
    assert "## Real FactualityPrompts prompts" in text and "FactualityPrompts is not on this machine" in text
    assert "Nothing was generated" not in text and "Dist-2 and Rep need none" not in text
    assert "not on this machine" not in "\n".join(pages.page_markdown(nb, {}))


def test_the_sweeps_control_reads_one_unit_per_person_where_the_verdicts_design_cannot(world):
    prompts, _ = ch.world_prompts(world, 0, 4)  # the sweep's sample: one prompt per person, here one seed
    own, other = ([[c] for c in cities] for cities in _cities(world, prompts))
    elm = other[:2] + own[2:]  # the expert names another person's city for the first two people
    wres = pd.DataFrame(
        [
            {"threshold": "top-p k20", "role": "elm", "value": 0.8, "T": np.nan, "label": "elm"},
            {"threshold": "top-p k20", "role": "cd", "value": 0.8, "T": 2.0, "label": "cd"},
            {"threshold": "top-p k20", "role": "cd", "value": 0.8, "T": 1.0, "label": "cd-T1"},
        ]
    )
    gens = {"elm": elm, "cd": own, "cd-T1": other}
    ctrl = ch.positive_control(world, prompts, wres, gens, 0.8, 2.0)
    assert (ctrl.mean, ctrl.n, ctrl.n_groups) == (0.5, 4, 4)
    assert ctrl.se == pytest.approx(np.std([1.0, 1.0, 0.0, 0.0], ddof=1) / 2)
    assert ch.positive_control(world, prompts, wres, gens, 0.8, 1.0).mean == -0.5  # CD at T = 1 names others
    # the verdict's design needs a person with two units for its variance components: none here
    with pytest.raises(ValueError, match="at least two units"):
        ch.power.paired_verdict(world, prompts, own, elm)
    # the control needs no variance components: it reads the same sample as the sweep's control
    assert ch.verdict_control(world, prompts, own, elm).mean == ctrl.mean
    with pytest.raises(ValueError, match="same prompts and seeds"):  # a shape mismatch is never a missing control
        ch.verdict_control(world, prompts, own, [g * 2 for g in elm])
    one = {k: g[:1] for k, g in gens.items()}
    assert ch.positive_control(world, prompts[:1], wres, one, 0.8, 2.0) is None  # one person: no standard error


def test_the_verdicts_control_is_the_experts_ne_er_minus_cds_on_the_verdict_sample(world):
    prompts = ch.power.world_verdict_prompts(world, openers=[" was born in"])[:4]
    own, other = ([[c] * 3 for c in cities] for cities in _cities(world, prompts))
    ctrl = ch.verdict_control(world, prompts, own, other)  # CD right, the expert wrong: +1
    assert (ctrl.mean, ctrl.n_groups) == (1.0, 4)
    assert ch.verdict_control(world, prompts, other, own).mean == -1.0
    assert ch.verdict_control(world, prompts[:1], own[:1], other[:1]) is None  # one person: no standard error
    glued = ch.control_values(ctrl, "_sweep")
    assert glued["ne_er_cd_gain_sweep"] == (1.0, "{:.2%}") and glued["ne_er_cd_gain_sweep_people"] == (4, "{:d}")


def test_verdict_values_flag_the_order_and_the_reading(world):
    prompts = ch.power.world_verdict_prompts(world, openers=[" was born in"])[:4]
    mine, theirs = _cities(world, prompts)
    own = [[c] * 2 for c in mine]
    other = [[t] * 2 if i % 2 else [t, c] for i, (c, t) in enumerate(zip(mine, theirs))]
    v = ch.power.paired_verdict(world, prompts, own, other)  # APD names its people's own cities, CD not always
    out = ch.verdict_values(v, len(prompts), len(world.eval_people), effect=0.03)
    assert [o for o in ch.ORDER if out[f"ne_er_apd_{o}_verdict"][0]] == ["lower"]
    # CD's minus APD's: 0.75 +- 0.14 (1 or 1/2 per person), well above 0
    assert out["ne_er_diff_verdict"][0] == pytest.approx(0.75)
    assert [r for r in ch.READINGS if out[f"verdict_{r}"][0]] == ["significant"]


def _fp_section(values):
    """The paragraphs the page shows for ``values`` in the section on FactualityPrompts' own prompts."""
    nb = json.loads((ROOT / "notebooks" / "factuality.ipynb").read_text())
    text = [p for md in pages.page_markdown(nb, values) for p in pages.paragraphs(md)]
    start = text.index("## Real FactualityPrompts prompts")
    end = next(i for i, p in enumerate(text[start + 1 :], start + 1) if p.startswith("#"))
    return text[start:end]


def test_on_pico_the_factuality_prompts_section_is_one_sentence_and_under_a_hub_family_in_full():
    res = _sweep()  # the lowest NE_ER: the expert's 0.50, CD's 0.45, APD's 0.40 (each with REAL)
    v = ch.fp_brief_values(res, pico=True)
    assert v["fp_brief"] == (True, None)
    assert v["fp_brief_ne_er"] == (0.4, "{:.0%}") and v["fp_brief_ne_er_elm"] == (0.5, "{:.0%}")
    assert ch.fp_brief_values(res, pico=False)["fp_brief"] == (False, None)  # a Hub family: in full
    undefined = ch.fp_brief_values(res.assign(NE_ER=np.nan), pico=True)
    assert undefined["fp_brief"] == (False, None) and undefined["fp_brief_ne_er"] == (None, "{:.0%}")
    assert ch.fp_brief_values(None, pico=True)["fp_brief"] == (False, None)

    pico = {
        "fp_brief": True,
        "fp_brief_ne_er": "96%",
        "fp_brief_ne_er_elm": "90%",
        "fp_n_used": 80,
        "fp_dist2_apd": 0.84,
        "fp_ne_er_apd": 0.98,
        "fp_dist2_apd_real": 0.94,
        "fp_ne_er_apd_real": 0.97,
    }
    section = _fp_section(pico)
    assert len(section) == 2 and "below 96% (the expert: 90%)" in section[1] and "pythia" in section[1]
    hub = json.loads((ROOT / "tests" / "data" / "pythia_results" / "factuality.json").read_text())
    full = _fp_section(hub)
    assert full == _fp_section({**hub, "fp_brief": False}) and len(full) > 2
    assert not any(p.startswith("On pico") for p in full)
