"""The APD chapter's bookkeeping (apd.chapters.apd): its headline numbers cover what the rest
of the book reads, and its tables and values come out right on tiny inputs and the smoke family."""

import dataclasses
import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import numpy as np
import pandas as pd
import pytest

import apd.chapters.apd as ch
from apd.report import pages
from apd.chapters.gluing import MissingResultError
from apd.report import claims, plots
from apd.world.truth import method_label

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[1]


def _fits_the_page(fig):
    assert plots.text_sizes(fig)["min_rendered_pt"] >= plots.MIN_RENDERED_PT
    assert fig.get_size_inches()[0] <= plots.COLUMN_WIDTH_IN


def _keys_read_from_apd() -> set[str]:
    """Every result key of the APD chapter that the claims, the findings and other chapters read."""
    keys = claims.keys_read("apd")
    keys |= {
        "variant_used_note",
        "engaged_list",
        "n_variants",
        "kl_apd_gain",
        "kl_apd_gain_se",
        "kl_apd_gain_mde",
        "kl_apd_gain_n",
        "n_test_items",
        "kl_apd_gain_people",
        "gate_verdict",
    }  # apd.report.findings
    keys |= {f"regime_{b}_{k}" for b in ("head", "torso", "tail") for k in ("gain", "flat")}  # apd.report.findings
    # the chapters that read the typed headline (ApdHeadline.load; notebook and module): its attributes they read
    for stem in ("known_answer", "ablations", "paper_vs_book"):
        for path in (ROOT / "notebooks" / f"{stem}.ipynb", ROOT / "apd" / "chapters" / f"{stem}.py"):
            keys |= set(re.findall(r"\b(?:apd_headline|done\.apd)\.(\w+)", path.read_text()))
    return keys


def test_the_headline_has_every_key_the_book_reads_from_the_chapter():
    keys = _keys_read_from_apd()
    assert {"gate_engaged", "kl_cd_gain", "text_fly", "distilled_l1_curve", "distilled_toward_expert"} <= keys
    assert "variant_used" in keys  # the paper-vs-book chapter's headline figure
    fields = {f.name for f in dataclasses.fields(ch.ApdHeadline)}
    assert not keys - fields, f"read from apd.json but not in ApdHeadline: {sorted(keys - fields)}"


def test_headline_reads_a_results_dict_and_names_a_missing_key():
    values = {f.name: 1 for f in dataclasses.fields(ch.ApdHeadline)}
    assert ch.headline(values).kl_apd_gain == 1
    del values["kl_cd"]
    with pytest.raises(KeyError, match="kl_cd"):
        ch.headline(values)


def test_other_chapters_load_the_headline_or_learn_which_chapter_to_run(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    (tmp_path / "p").mkdir()
    assert ch.ApdHeadline.load("p", missing_ok=True) is None
    assert ch.gate_verdict("p") == ch.GATE_NOT_MEASURED
    with pytest.raises(MissingResultError, match=r"the apd chapter has not run.*ONLY=apd"):
        ch.ApdHeadline.load("p")
    values = {f.name: 1 for f in dataclasses.fields(ch.ApdHeadline)}
    values.update(gate_verdict="engaged (the distilled variant)", profile="p", wall_time_s=3.0)
    (tmp_path / "p" / "apd.json").write_text(json.dumps(values))
    h = ch.ApdHeadline.load("p")
    assert h.gate_verdict == ch.gate_verdict("p") == "engaged (the distilled variant)"
    del values["distilled_l1_curve"], values["variant_used"]  # results of an older run
    (tmp_path / "p" / "apd.json").write_text(json.dumps(values))
    with pytest.raises(MissingResultError, match=r"lack variant_used, distilled_l1_curve .*PROFILE=p ONLY=apd"):
        ch.ApdHeadline.load("p", missing_ok=True)


def test_glue_sends_numbers_and_text_to_their_run_methods():
    calls = []

    class Run:
        def glue(self, k, v):
            calls.append(("glue", k, v))

        def glue_text(self, k, v, fmt):
            calls.append(("text", k, v, fmt))

    ch.glue(Run(), {"n": (3, None), "kl": (None, "{:.3f}")})
    assert calls == [("glue", "n", 3), ("text", "kl", None, "{:.3f}")]


def test_loss_terms_and_fitter_values_on_tiny_inputs():
    log = pd.DataFrame(
        {"l1": [4.0, 3.0, 2.0, 1.0], "l2": [1.0] * 4, "l3": [0.0, 0.1, 0.2, 0.3], "loss": [5.0, 4.1, 3.2, 2.3]}
    )
    table, values = ch.loss_terms(log, lambda2=2.0)
    assert values["log_window"] == (1, None) and table.loc["l3", "first steps"] == 0.0
    assert values["l3_rises"][0] and values["l1_falls"][0] and values["l2_flat"][0]
    assert not (values["l3_falls"][0] or values["l3_flat"][0]) and math.isclose(values["l2_share"][0], 2.0 / 2.3)
    t = pd.DataFrame({"noise": [0.0, 0.0, 0.005, 0.005], "ratio": [0.3, 1.6, 0.9, 2.4]})
    v = ch.fitter_values(t)
    assert v["fit_noisy_mixed"][0] and not v["fit_noisy_worse"][0] and not v["fit_noisy_beats"][0]
    assert v["fit_clean_ratio_max"] == (1.6, "{:.2f}")


def _frame():
    """A tiny method frame: 4 test questions about 2 people; CD and APD at two 1/T, the expert."""
    rows = [
        dict(method=method, knob=knob, kl=kl, nll=kl + 1, bucket="head", split="test", person=q // 2, item=q)
        for q in range(4)
        for method, knob, kl in (
            ("ELM", 0, 1.0),
            ("CD", 0.5, 0.8),
            ("CD", 1, 0.9),
            ("APD", 0.5, 0.7 + q / 100),
            ("APD", 1, 0.75),
        )
    ]
    return pd.DataFrame(rows)


def test_paired_world_chooses_exactly_one_verdict_sentence():
    frame = _frame()
    values = ch.paired_world(frame, {"CD": 0.5, "APD": 0.5})
    verdicts = [k for k in ("apd_closer", "cd_closer", "apd_cd_tie") if values[k][0]]
    assert len(verdicts) == 1
    assert values["kl_apd_gain_n"][0] == 4 and values["kl_apd_gain_people"][0] == 2
    assert values["kl_apd_gain_pm"][0].startswith("+0.0")
    missing = ch.paired_world(None, {})
    assert not any(missing[k][0] for k in ("apd_closer", "cd_closer", "apd_cd_tie"))
    assert missing["kl_apd_gain"][0] is None and missing["apd_vs_cd_verdict"][0] is None


def test_truth_values_and_the_dev_knobs():
    frame = _frame()
    knobs, values = ch.dev_knobs(frame, [0.5, 1.0])
    assert knobs["CD"] == 0.5 and values["invT_grid_text"][0] == "0.5, 1"
    assert not [k for k in values if k.endswith("_where")]  # the grid is glued; the prose reads its ends
    tab = ch.truth_table(frame, "kl", knobs, fly=False, label_of={})
    assert tab.columns[-1].startswith("all") and method_label("APD", 0.5) in tab.index
    v = ch.truth_values(tab, "kl", knobs, fly=False)
    assert v["kl_elm"][0] == 1.0 and v["kl_apdbest"][0] < v["kl_cd"][0] and math.isnan(v["kl_fly"][0])
    assert not [k for k in v if "_vs_" in k]  # the prose states the numbers; it pastes no words
    assert set(ch.no_truth_values()) >= {"kl_elm", "nll_head_cd", "fly_w", "n_dev_scored"}
    assert values["n_dev_scored"][0] == 4
    unscored = frame.assign(kl=np.where(frame["item"] == 3, np.nan, frame["kl"]))  # truth off the top tokens
    assert ch.dev_knobs(unscored, [0.5, 1.0])[1]["n_dev_scored"][0] == 3


def test_cd_control_grid_gives_the_per_person_gain_and_its_se_at_every_inverse_temperature():
    """The expert's KL minus CD's at every 1/T: averaged per person (person 0 has three questions, the
    others one each), the se over the people's means; the dev-chosen 1/T is flagged, and the figure draws."""
    person = [0, 0, 0, 1, 2, 3]
    gain = {0.5: [0.3, 0.1, 0.2, 0.25, 0.15, 0.3], 1.0: [-0.1, -0.2, -0.3, -0.1, -0.2, -0.1]}  # CD helps, then hurts
    rows = [dict(method="ELM", knob=0.0, item=i, person=p, kl=2.0) for i, p in enumerate(person)]
    rows += [
        dict(method="CD", knob=v, item=i, person=p, kl=2.0 - g[i])
        for v, g in gain.items()
        for i, p in enumerate(person)
    ]
    grid = ch.cd_control_grid(pd.DataFrame(rows), [1.0, 0.5], knob=0.5)
    assert grid["1/T"].tolist() == [0.5, 1.0] and grid["dev-chosen"].tolist() == [True, False]
    assert grid["KL gain over the expert"].iloc[0] > 0 > grid["KL gain over the expert"].iloc[1]
    means = np.array([0.2, 0.25, 0.15, 0.3])  # the people's mean gains at 1/T = 0.5
    assert grid["KL gain over the expert"].iloc[0] == pytest.approx(means.mean())  # not the mean over questions
    assert grid["gain se"].iloc[0] == pytest.approx(means.std(ddof=1) / 2)
    assert grid[["questions", "people"]].iloc[0].tolist() == [6, 4]
    fig = ch.plot_cd_control(grid)
    ax = fig.axes[0]
    assert "1/T" in ax.get_xlabel() and "nats" in ax.get_ylabel()
    assert len(ax.get_legend().get_texts()) == 3
    _fits_the_page(fig)


def test_the_lambda3_sweep_draws_every_release_run_against_lambda3():
    """The release configuration's lambda3 runs from the gate table (other variants' rows left out), by
    lambda3, the chosen one flagged; the figure has a log lambda3 axis, units on both panels and the star."""
    gates = pd.DataFrame(
        {
            "run": ["release", "conditioned", "release, lambda3 = 0.05", "release, lambda3 = 1.6"],
            "variant": ["release", "conditioned", "release", "release"],
            "lambda3": [0.2, 0.6, 0.05, 1.6],
            "moved_kl": [0.9, 0.3, 1.4, 0.02],
            "toward_expert": [0.97, 0.6, 0.99, 0.05],
        }
    )
    sweep = ch.lambda3_sweep(gates, 0.2)
    assert sweep["lambda3"].tolist() == [0.05, 0.2, 1.6] and sweep["chosen"].tolist() == [False, True, False]
    assert sweep["toward_expert"].tolist() == [0.99, 0.97, 0.05]
    fig = ch.plot_lambda3_sweep(sweep)
    top, bottom = fig.axes[:2]
    assert bottom.get_xscale() == "log" and top.get_yscale() == "log"
    assert "nats" in top.get_ylabel() and "CD (0)" in bottom.get_ylabel() and "log scale" in bottom.get_xlabel()
    assert any("chosen" in t.get_text() for t in fig.legends[0].get_texts())
    _fits_the_page(fig)


def _cells_with_glue(stem: str):
    """Every markdown cell of a notebook (its id and source) with the glue keys it reads."""
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            yield cell["id"], cell["source"], set(re.findall(r"\{glue:text\}`(\w+)", cell["source"]))


def test_every_paired_difference_on_the_world_says_it_is_averaged_per_person():
    """The world's paired differences weigh every person the same (paired_difference with groups=people);
    a cell that quotes one, by KL or by the gold token's loss, says so (held-out text is paired over positions)."""
    world = re.compile(r"(^|_)(kl|nll|gain|shift)(_|$)")
    quoted = {
        cid: src
        for cid, src, keys in _cells_with_glue("apd")
        if "paired" in src.lower() and any(world.search(k) and "text" not in k for k in keys)
    }
    # the opening, the truth section, the variants, the buckets, the left-out run (two): each quotes its
    # difference once, in a neutral cell, beside one short sentence per outcome that quotes none
    assert len(quoted) >= 6, sorted(quoted)
    assert not [cid for cid, src in quoted.items() if "per person" not in src]


def test_the_apd_page_names_the_count_each_number_is_over():
    """The world questions the KL scores and those drawn are two counts; the prose says which it quotes."""
    text = "\n".join(src for _, src, _ in _cells_with_glue("apd"))
    assert (
        "Paired over the {glue:text}`n_test_items`" not in text
        and "over the {glue:text}`n_text_used` positions" not in text
    )
    assert "{glue:text}`kl_apd_gain_n` of the {glue:text}`n_test_items`" in text
    assert "{glue:text}`n_dev_scored` of the {glue:text}`n_dev_items`" in text


@pytest.mark.book  # reads the smoke build: runs after it, with the book tests
def test_the_smoke_results_open_with_three_sentences():
    """On a built smoke chapter: the opening shows one sentence per condition (gates, APD vs CD, the
    fitter with noise), and every key the headline lists is in the results."""
    path = ROOT / "results" / "smoke" / "apd.json"
    if not path.is_file():
        pytest.skip("no smoke build of the APD chapter")
    values = json.loads(path.read_text())
    ch.headline(values)
    nb = json.loads((ROOT / "notebooks" / "apd.ipynb").read_text())
    shown = [
        c["id"]
        for c in nb["cells"][:12]
        if c["cell_type"] == "markdown"
        and pages.cell_shown(c["metadata"].get("tags", []), values)
        and c["id"] != "c00"
    ]
    opening = [i for i in shown if i.startswith(("c00-s1", "c00b", "c00s3"))]
    assert len(opening) == 3, opening


@pytest.fixture(scope="module")
def smoke():
    import apd

    fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
    results = {
        v: apd.apd_model(fam, built, scale="smoke", variant=v, progress=False)
        for v in apd.amateur.variants.VARIANT_NAMES
    }
    sel = apd.apd_model(fam, built, scale="smoke", variant="engaged", progress=False).selection
    return fam, built, results, sel


def test_tables_of_the_smoke_family(smoke):
    fam, built, results, sel = smoke
    names = list(results)
    data, composition, values = ch.collection(results["release"].collect_dir)
    assert len(data) == 7 and values["set_size"][0] > 20 and len(composition)
    tune, tv = ch.variant_tuning(results)
    assert {f"{v}_tune_grid" for v in names} <= set(tv)
    assert not [k for k in tv if k.endswith(("_where", "_note"))]  # numbers only: steps, grids, values
    assert tv["conditioned_tune_steps"][0] == int(tune.loc[tune["variant"] == "conditioned", "steps"].iloc[0])
    interior = {v: results[v].tuning.attrs["interior"] for v in names}  # the choice inside the values tried
    assert {v: tv[f"{v}_lambda3_interior"][0] for v in names} == interior
    shown, _, tuned = ch.release_tuning(results["release"])
    assert tuned["tune_tie_nats"][0] == 0.0005 and len(shown) == len(results["release"].tuning)
    chosen = results["release"].tuning.loc[results["release"].tuning["chosen"]].iloc[0]
    assert (tuned["tune_n_items"][0], tuned["tune_n_scored"][0]) == (chosen["n_items"], chosen["n_scored"])
    assert 0 < tuned["tune_n_scored"][0] <= tuned["tune_n_items"][0] == shown["dev items"].iloc[0]
    three = ch.variants_shown(sel.table)  # each dev KL beside the 1/T it is read at
    assert len(three.columns) <= 7 and list(three["1/T (dev-best)"]) == list(sel.table["dev_inv_T"])
    values = ch.gate_values(sel, names)
    assert values["n_variants"] == (len(names), None)
    assert values["any_engaged"][0] == bool(values["n_engaged"][0])
    reading, rv = ch.gate_reading(sel, names)
    assert list(reading["variant"]) == names and set(rv) == {f"{v}_gate_loose" for v in names}
    records, rec = ch.variant_records(results)
    assert rec["conditioned_a0"][1] == "{:.3f}" and records["release"]["steps"] > 0
    _, _, against = ch.variants_against_cd(None, {}, sel, results, records, {v: f"APD {v}" for v in names})
    by_variant = sel.table.set_index("variant")
    assert [against[f"{v}_dev_inv_T"][0] for v in names] == [by_variant.loc[v, "dev_inv_T"] for v in names]
    for v in names:  # a variant's training seconds: its final run's, plus its tuning runs' where it was tuned
        assert rec[f"{v}_seconds"][0] >= records[v]["train_seconds"] > 0
    assert rec["release_seconds"][0] > records["release"]["train_seconds"]  # release is tuned over a grid
    assert ch.question_counts(None)["n_test_items"] == (0, None)
    assert np.all([isinstance(t, str) for t in ch.heldout_texts(built)[:3]])


def test_variants_against_cd_gives_plain_means_beside_per_person_gains():
    """A variant's KL and CD's per-bucket KL are plain means over questions; the gain is averaged per
    person, so with unequal people the two differ (person 0 has three questions, person 1 one)."""
    frame = _frame().assign(
        person=lambda f: (f["item"] == 3).astype(int),
        bucket=lambda f: f["item"].map(dict(enumerate(ch.BUCKETS + ("head",)))),
    )
    frame.loc[(frame["method"] == "CD") & (frame["item"] == 3), "kl"] = 1.2  # CD is worse on person 1's question
    sel = SimpleNamespace(
        variant="release",
        table=pd.DataFrame({"variant": ["release"], "engaged": [False], "dev_kl": [2.4], "dev_inv_T": [0.5]}),
    )
    _, gains, values = ch.variants_against_cd(
        frame,
        {"CD": 0.5, "APD": 0.5},
        sel,
        {"release": SimpleNamespace(lambda3=0.2)},
        {"release": {"steps": 1}},
        {"release": "APD"},
    )
    assert gains["cd_kl"]["head"] == pytest.approx((0.8 + 1.2) / 2)  # CD's plain mean over the head questions
    per_person = np.mean([np.mean([0.8 - (0.7 + 0.01 * q) for q in range(3)]), 1.2 - 0.73])
    assert values["release_kl_gain"][0] == pytest.approx(per_person)
    plain = (0.8 * 3 + 1.2) / 4 - values["release_kl"][0]  # CD's plain mean minus the variant's
    assert abs(values["release_kl_gain"][0] - plain) > 0.05
    assert values["release_dev_inv_T"][0] == 0.5


def test_robustness_compares_both_alm_primes_with_cd_and_with_each_other():
    frame = _frame()
    left = frame[frame["method"] == "APD"].assign(method=ch.LEFT_OUT)
    left["kl"] = left["kl"] + 0.05 * (left["item"] + 1)  # worse on every question, by a varying amount
    frame = pd.concat([frame, left], ignore_index=True)
    table, values = ch.robustness(frame, {"CD": 0.5, "APD": 0.5, ch.LEFT_OUT: 0.5})
    assert list(table.index) == ["APD, every document", "APD, test people left out"]
    assert len(ch.robustness_shown(table).columns) + 1 <= 7  # with its index: fits the page unfolded
    assert values["left_out_shift"][0] == pytest.approx(0.125)  # mean of 0.05 * (1, 2, 3, 4)
    assert values["left_out_away"][0] and not (values["left_out_closer"][0] or values["left_out_same"][0])
    assert table.loc["APD, test people left out", "KL gain over CD"] == pytest.approx(
        table.loc["APD, every document", "KL gain over CD"] - 0.125
    )
    none_table, missing = ch.robustness(_frame(), {"CD": 0.5, "APD": 0.5})  # no left-out run: nothing to compare
    assert none_table is None and missing["left_out_kl"][0] is None
    assert not any(missing[f"left_out_{o}"][0] for o in ("away", "closer", "same"))


@pytest.mark.parametrize("shift, outcome", [(-0.05, "closer"), (0.0, "same"), (0.05, "away")])
def test_robustness_flags_exactly_one_outcome(shift, outcome):
    frame = _frame()
    left = frame[frame["method"] == "APD"].assign(method=ch.LEFT_OUT)
    left["kl"] = left["kl"] + shift + 0.01 * (2 * left["person"] - 1)  # people differ: se 0.01 over 2 people
    _, values = ch.robustness(pd.concat([frame, left], ignore_index=True), {"CD": 0.5, "APD": 0.5, ch.LEFT_OUT: 0.5})
    assert [o for o in ("away", "closer", "same") if values[f"left_out_{o}"][0]] == [outcome]


@pytest.mark.parametrize(
    "first, last, outcome",
    [(4.0, 2.0, "falls"), (2.0, 4.0, "rises"), (0.12341, 0.12344, "flat"), (0.1234, 0.1236, "rises")],
)
def test_trend_flags_exactly_one_outcome_to_the_printed_decimals(first, last, outcome):
    flags = ch.trend(first, last, "l1")
    assert [o for o in ("falls", "rises", "flat") if flags[f"l1_{o}"][0]] == [outcome]
    assert not any(v for v, _ in ch.trend(float("nan"), 1.0, "l1").values())


def _regime_gains(gains: dict, se: float = 0.01):
    """:func:`apd.chapters.apd.variants_against_cd`'s KL table for one variant, ``gains`` per bucket."""
    row = {}
    for b in ("head", "torso", "tail"):
        row.update({f"n_{b}": 30, f"mean_{b}": 0.5, f"gain_{b}": gains[b], f"gain_{b}_se": se})
    cd_kl = pd.Series({b: 0.5 + 2 * g for b, g in gains.items()})  # CD's plain means: not the variant's + its gain
    return {"kl": pd.DataFrame([row], index=["release"]), "cd_kl": cd_kl}


@pytest.mark.parametrize(
    "gains, signif",
    [
        ({"head": 0.0, "torso": 0.001, "tail": -0.002}, []),
        ({"head": 0.1, "torso": 0.0, "tail": 0.001}, ["head"]),
        ({"head": 0.1, "torso": -0.08, "tail": 0.001}, ["head", "torso"]),
        ({"head": 0.1, "torso": 0.09, "tail": 0.08}, ["head", "torso", "tail"]),
    ],
)
def test_regime_flags_the_buckets_whose_gain_differs_from_zero(tmp_path, monkeypatch, gains, signif):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))  # no family saturation table
    table, values = ch.regime("nowhere", _regime_gains(gains), "release", ["release"])
    assert [b for b in ("head", "torso", "tail") if values[f"regime_{b}_signif"][0]] == signif
    assert values["regime_none_signif"][0] is (not signif)
    assert table is not None and "of which flattening (family)" not in table
    assert list(table["CD KL"]) == [0.5 + 2 * gains[b] for b in ("head", "torso", "tail")]


@pytest.mark.parametrize(
    "flat, gains, flattest, agrees",
    [
        ((0.15, 0.35, 0.53), {"head": 0.017, "torso": -0.014, "tail": -0.007}, "tail", False),
        ((0.15, 0.35, 0.53), {"head": -0.01, "torso": 0.0, "tail": 0.02}, "tail", True),
        ((0.60, 0.35, 0.10), {"head": 0.02, "torso": 0.03, "tail": 0.0}, "head", False),
    ],
)
def test_regime_says_whether_the_gain_is_highest_where_curves_flatten_most(
    tmp_path, monkeypatch, flat, gains, flattest, agrees
):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    (tmp_path / "p" / "tables").mkdir(parents=True)
    sat = pd.DataFrame(
        {"bucket": ["head", "torso", "tail"], "share rising": 0.8, "share flattening (of rising)": flat}
    )
    sat.to_csv(tmp_path / "p" / "tables" / "family_saturation.csv", index=False)
    table, values = ch.regime("p", _regime_gains(gains), "release", ["release"])
    assert list(table["of which flattening (family)"]) == list(flat)
    assert values["regime_flattest_bucket"][0] == flattest
    assert values["regime_best_is_flattest"][0] is agrees


@pytest.mark.parametrize(
    "ours, family, below",
    [(0.005, 0.036, True), (0.05, 0.036, False), (0.005, None, None), (0.005, float("nan"), None)],
)
def test_the_fitter_check_noise_is_compared_with_the_familys_own(ours, family, below):
    assert ch.noise_comparison(ours, family)["fit_noise_below_family"][0] is below


def test_regime_without_gains_flags_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    table, values = ch.regime("nowhere", None, "release", ["release"])
    assert table is None and not any(values[k][0] for k in values if k.endswith("_signif"))
    assert values["regime_best_is_flattest"][0] is False and values["regime_flattest_bucket"][0] is None


def test_module_examples_run():
    import doctest

    assert doctest.testmod(ch, optionflags=doctest.ELLIPSIS).failed == 0
