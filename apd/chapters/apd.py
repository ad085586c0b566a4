"""The APD chapter's bookkeeping (``notebooks/apd.ipynb``): its tables, the values it glues, the
fallbacks of a Hub family (no world) and its headline numbers, :class:`ApdHeadline`.

Most functions return ``(table, values)``; ``values`` maps a result key to ``(value, fmt)``, glued
by :func:`glue` (``fmt`` None: the number as is, :meth:`Run.glue`; a format: text for the prose,
"n/a" when the value is missing, :meth:`Run.glue_text`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pandas as pd

from apd.amateur.collect import read_manifest
from apd.amateur.composition import token_set_composition
from apd.amateur.gates import (
    LOOSE_THRESHOLDS,
    NEAR_TRIVIAL,
    NO_GAIN,
    NOT_MEASURED,
    THRESHOLDS,
    Gates,
)
from apd.amateur.objective import CurveMLP, predict_curves
from apd.amateur.pipeline import apd_model, run_gates, tuning_table
from apd.amateur.runs import finetune_texts, run_record
from apd.amateur.tuning import TIE_NATS
from apd.core.curves import flip_values, get_decay
from apd.core.stats import holm, p_two_sided
from apd.evaluation import known_answer
from apd.evaluation.ablations import verdict
from apd.family.knowledge import score_world_qa
from apd.family.logprobs import next_token_log_probs
from apd.chapters.gluing import ChapterResult
from apd.report.findings import family_saturation
from apd.report.plots import COLORS, SMALL_PT, XLABEL_LOG_SIZE, figure, legend, outer_labels, panels, wrap
from apd.report.tables import compare_flags, plus_minus, yes_no
from apd.report.results import chapter_ran, load_results
from apd.world.corpus import CorpusConfig, build_corpus
from apd.world.truth import (
    at,
    best_knobs,
    bucket_summary,
    dev_test_people,
    dev_test_split,
    method_label,
    paired_methods,
    paired_table,
    sample_per_bucket,
)
from apd.world.world import BUCKETS

Values = dict[str, tuple[Any, Optional[str]]]

#: the release configuration's loss terms: (log column, panel title)
LOSS_TERMS = (
    ("l1", "$L_1$ (fit to smaller members)"),
    ("l2", "$L_2$ (not above the ELM)"),
    ("l3", "$L_3$ (ALM' logits vs ALM)"),
    ("loss", "total $L_1 + \\lambda_2 L_2 + \\lambda_3 L_3$"),
)

#: the measures against the world's truth: key -> axis title
TRUTH_MEASURES = {"kl": "KL(truth || method), nats", "nll": "gold-token -log(p + 0.01), nats"}


def glue(run, values: Values) -> None:
    """Glue every ``{key: (value, fmt)}`` of ``values`` on ``run`` (see the module docstring).

    Example:
        >>> class R:
        ...     def glue(self, k, v): print("glue", k, v)
        ...     def glue_text(self, k, v, fmt): print("text", k, v, fmt)
        >>> glue(R(), {"n": (3, None), "kl": (0.25, "{:.3f}")})
        glue n 3
        text kl 0.25 {:.3f}
    """
    for name, (value, fmt) in values.items():
        if fmt is None:
            run.glue(name, value)
        else:
            run.glue_text(name, value, fmt)


def quote(table: pd.DataFrame, row: str, col: str = "all") -> float:
    """``table.loc[row, col]`` as a float, NaN when the row is absent.

    Example:
        >>> quote(pd.DataFrame({"all": [0.5]}, index=["ELM"]), "ELM"), quote(pd.DataFrame({"all": []}), "CD")
        (0.5, nan)
    """
    return float(table.loc[row, col]) if row in table.index else float("nan")


# -- training --------------------------------------------------------------------------------------


def release_setup(result, x, names, top_k: int) -> Values:
    """The release configuration's training settings (``result``: an ``apd.amateur.pipeline.APDResult``), the
    ALM's log size ``x[0]`` and the members' names ``names`` (ALM first, ELM last)."""
    meta = json.loads((result.train_dir / "train_config.json").read_text())
    cfg, log = result.config, result.train_log()
    values: Values = {f"cfg_{k}": (getattr(cfg, k), None) for k in ("lr", "epochs", "batch_size", "data_fraction")}
    values.update(
        cfg_lambda2=(cfg.lambda2, None),
        x_alm=(float(x[0]), None),
        top_k=(top_k, None),
        cfg_steps=(int(meta["total_steps"]), None),
        cfg_warmup=(int(meta["warmup_steps"]), None),
        cfg_chunks=(int(meta["data"]["n_chunks"]), None),
        lambda3=(result.lambda3, None),
        train_seconds=(float(log["seconds"].iloc[-1]), None),
        alm=(names[0], None),
        elm=(names[-1], None),
    )
    return values


def collection(collect_dir) -> tuple[pd.DataFrame, pd.DataFrame, Values]:
    """The collected training data of ``collect_dir``: what it holds (one row per quantity), the
    token sets' composition (:func:`apd.amateur.composition.token_set_composition`) and their glue values."""
    manifest = read_manifest(collect_dir)
    bpp, ccfg, corpus = manifest["bytes_per_position"], manifest["config"], manifest["corpus"]
    k = ccfg["top_k"] + ccfg["n_mid"] + ccfg["n_tail"]
    data = pd.DataFrame(
        [
            {"quantity": "members (ALM ... ELM)", "value": ", ".join(manifest["members"])},
            {"quantity": "positions", "value": f"{corpus['n_positions']:,}"},
            {"quantity": "chunks x tokens", "value": f"{corpus['n_chunks']:,} x {ccfg['seq_len']}"},
            {"quantity": "tokens per set (K)", "value": str(k)},
            {"quantity": "bytes per position, measured", "value": f"{bpp['measured']:.1f}"},
            {"quantity": "bytes per position, our format", "value": str(bpp["ours"])},
            {"quantity": "bytes per position, release format", "value": str(bpp["release"])},
        ]
    )
    composition = token_set_composition(collect_dir)
    top = composition.iloc[0]
    values: Values = {
        "n_positions": (f"{corpus['n_positions']:,}", None),
        "set_size": (k, None),
        "bytes_measured": (bpp["measured"], None),
        "bytes_release": (bpp["release"], None),
        "bytes_ratio": (bpp["release"] / bpp["measured"], None),
        "top_mass": (float(top["ELM probability mass"]), None),
        "top_next": (float(top["share of next tokens"]), None),
        "rising_top": (float(top["share of rising curves"]), None),
    }
    return data, composition, values


def release_tuning(result) -> tuple[Optional[pd.DataFrame], dict, Values]:
    """The release configuration's lambda3 tuning on the dev people: (its table as shown, the ELM's
    and CD's dev scores on the same items, values: the chosen run's dev KL at APD's dev-best 1/T, the
    values tried, the dev questions it is over, ``tune_n_items``, of which the KL scores
    ``tune_n_scored``, and the tie rule's tolerance, ``tune_tie_nats``); ``(None, {}, ...)`` when
    lambda3 is the paper's value (a Hub family has no dev people).

    Example:
        >>> t = pd.DataFrame({"lambda3": [0.2, 0.6], "score": [2.45, 2.94], "inv_T": [0.15, 0.25],
        ...                   "n_scored": [682, 682], "n_items": [800, 800], "widened": [False, False],
        ...                   "chosen": [True, False]})
        >>> t.attrs["reference"] = {"ELM": 2.43, "CD 1/T=1": 3.0}
        >>> shown, ref, values = release_tuning(type("R", (), {"tuning": t})())
        >>> values["tune_best"][0], values["tune_n_items"][0], values["tune_n_scored"][0]
        (2.45, 800, 682)
        >>> shown.columns.tolist()[:3], shown["added past the grid"].tolist()
        (['lambda3', '1/T (dev-best)', 'dev KL at that 1/T (nats)'], ['no', 'no'])
    """
    keys = ("tune_best", "tune_elm", "tune_cd", "tune_grid", "tune_n_items", "tune_n_scored")
    rule: Values = {"tune_tie_nats": (TIE_NATS, "{:g}")}
    if result.tuning is None:
        return None, {}, {**{k: (None, "{:.3g}") for k in keys}, **rule}
    tuning = result.tuning
    ref = tuning.attrs["reference"]
    shown = pd.DataFrame(
        {
            "lambda3": tuning["lambda3"],
            "1/T (dev-best)": tuning["inv_T"] if "inv_T" in tuning else 1.0,
            "dev KL at that 1/T (nats)": tuning["score"],
            "items scored": tuning["n_scored"],
            "dev items": tuning["n_items"],
            "added past the grid": [yes_no(w) for w in tuning.get("widened", [False] * len(tuning))],
            "chosen": tuning["chosen"],
        }
    )
    chosen = tuning.loc[tuning["chosen"]].iloc[0]
    return (
        shown,
        ref,
        {
            **rule,
            "tune_best": (float(chosen["score"]), "{:.3f}"),
            "tune_elm": (ref["ELM"], "{:.3f}"),
            "tune_cd": (ref["CD 1/T=1"], "{:.3f}"),
            "tune_grid": (", ".join(f"{v:g}" for v in tuning["lambda3"]), "{}"),
            "tune_n_items": (int(chosen["n_items"]), "{:,}"),  # every question about the dev people
            "tune_n_scored": (int(chosen["n_scored"]), "{:,}"),  # those whose truth has mass on the ELM's top 20
        },
    )


def variant_tuning(results: dict) -> tuple[pd.DataFrame, Values]:
    """Every variant's lambda3 runs (``results``: {variant: APDResult}; :func:`apd.amateur.pipeline.tuning_table`),
    with, per variant, the values it tried (its grid, widened where the choice fell at an end), its
    runs' steps, whether the choice lies inside the values tried (``<variant>_lambda3_interior``; None
    where lambda3 was not tuned: :func:`apd.amateur.tuning.choose_lambda3`) and whether it is still at
    an end of a grid of more than one value (``<variant>_lambda3_on_edge``)."""
    table = tuning_table(results)
    values: Values = {}
    for v, r in results.items():
        rows = table[table["variant"] == v]
        steps = int(rows["steps"].iloc[0]) if len(rows) else None
        interior = r.tuning.attrs.get("interior") if r.tuning is not None else None
        values[f"{v}_lambda3"] = (r.lambda3, None)
        values[f"{v}_tune_grid"] = (", ".join(f"{g:g}" for g in rows["lambda3"]) if len(rows) else None, "{}")
        values[f"{v}_tune_steps"] = (steps, "{:,}")
        values[f"{v}_lambda3_interior"] = (
            (None, "{}") if interior is None else (bool(interior), None)
        )  # None: a format
        values[f"{v}_lambda3_on_edge"] = (len(rows) > 1 and interior is False, None)
    dist = results["distilled"].tuning
    ref = dist.attrs["reference"] if dist is not None else {}
    values["tune_cd_best"] = (ref.get("CD dev-best 1/T"), "{:.4f}")
    values["tune_cd_best_invT"] = (ref.get("CD dev-best 1/T value"), "{:g}")
    return table, values


def trend(first: float, last: float, key: str, digits: int = 4) -> Values:
    """Whether a quantity fell, rose or stayed put from ``first`` to ``last``, as the booleans the
    prose's ``needs:`` tags read: ``<key>_falls``, ``<key>_rises``, ``<key>_flat`` (equal when
    printed to ``digits`` decimals, :func:`apd.report.tables.compare_flags`; all False when either
    is missing).

    Example:
        >>> {k: v[0] for k, v in trend(4.0, 2.0, "l1").items()}
        {'l1_falls': True, 'l1_rises': False, 'l1_flat': False}
        >>> trend(0.12341, 0.12344, "l2")["l2_flat"]
        (True, None)
    """
    flags = compare_flags(last, first, digits=digits)
    return {
        f"{key}_falls": (flags["lower"], None),
        f"{key}_rises": (flags["higher"], None),
        f"{key}_flat": (flags["same"], None),
    }


def loss_terms(log: pd.DataFrame, lambda2: float) -> tuple[pd.DataFrame, Values]:
    """Each loss term of a training log averaged over its first and last steps (at most 10, a
    quarter of the log), whether it fell, rose or stayed put (:func:`trend`, to the 4 decimals the
    prose prints), and the shares of lambda2 L2 and L1 in the final total.

    Example:
        >>> log = pd.DataFrame({"l1": [4.0, 2.0], "l2": [1.0, 1.0], "l3": [0.0, 0.5], "loss": [5.0, 3.5]})
        >>> table, values = loss_terms(log, lambda2=1.0)
        >>> float(table.loc["l1", "last steps"]), values["l1_falls"][0], values["l2_flat"][0], round(values["l2_share"][0], 3)
        (2.0, True, True, 0.286)
    """
    n = max(1, min(10, len(log) // 4))
    rows, values = [], {}
    for key, _ in LOSS_TERMS:
        first, last = float(log[key].iloc[:n].mean()), float(log[key].iloc[-n:].mean())
        rows.append({"term": key, "first steps": first, "last steps": last})
        values.update({f"{key}_first": (first, None), f"{key}_last": (last, None), **trend(first, last, key)})
    end = log.iloc[-n:].mean(numeric_only=True)
    values.update(
        log_window=(n, None),
        l2_share=(float(lambda2 * end["l2"] / end["loss"]), None),
        l1_share=(float(end["l1"] / end["loss"]), None),
    )
    return pd.DataFrame(rows).set_index("term"), values


def training_seconds(result) -> float:
    """The training seconds, as logged when each run trained (one core each), of an
    :class:`apd.amateur.pipeline.APDResult`'s final run and of its lambda3 tuning runs: what the
    variant cost, whether its runs came from the cache or trained side by side."""
    runs = {str(result.alm_prime_path)}
    if result.tuning is not None and "alm_prime" in result.tuning:
        runs |= {str(p) for p in result.tuning["alm_prime"]}
    return float(sum(run_record(p)["train_seconds"] for p in sorted(runs)))


def variant_records(results: dict) -> tuple[dict, Values]:
    """Every variant's run record (:func:`apd.amateur.runs.run_record`: steps, warm-up, joint steps,
    training seconds), its training seconds with tuning (:func:`training_seconds`) and the
    conditioned start's a0."""
    records = {v: run_record(r) for v, r in results.items()}
    values: Values = {}
    for v, rec in records.items():
        values.update({f"{v}_{k}": (rec[k], None) for k in ("steps", "mlp_warmup_steps", "joint_steps")})
        values[f"{v}_train_seconds"] = (rec["train_seconds"], "{:.0f}")
        values[f"{v}_seconds"] = (training_seconds(results[v]), "{:.0f}")
    a0 = CurveMLP.load(results["conditioned"].alm_prime_path).settings.get("a0")
    values["conditioned_a0"] = (a0, "{:.3f}")
    return records, values


def fitter_recovery(scale: str, noise: float, seed: int = 0) -> pd.DataFrame:
    """The on-the-fly fitter (tuned settings) and p_ELM on the known-answer chapter's synthetic
    families (:func:`apd.evaluation.known_answer.recovery_table`, two grids x two regimes), without
    noise and with Gaussian noise of sd ``noise`` on every member's probability. One row per
    (noise, grid, regime): the fitter's and p_ELM's median |c_hat - c_true| and their ratio.
    ``scale``: the pico scale, whose members' sizes the pico grid has; also the size of
    ``known_answer.SIZES`` (another pico scale reads as ``"default"``)."""
    size = scale if scale in known_answer.SIZES else "default"
    rows = []
    for sd in (0.0, float(noise)):
        t = known_answer.recovery_table(size, noise=sd, seed=seed, estimators=["p_elm", "fit_tuned"], pico_scale=scale)
        t = t[t["estimator"] == "fit_tuned"]
        rows.append(
            pd.DataFrame(
                {
                    "noise": sd,
                    "grid": t["grid"],
                    "regime": t["regime"],
                    "fitter error": t["median_abs_error"],
                    "p_ELM error": t["p_elm_error"],
                    "ratio": t["median_abs_error"] / t["p_elm_error"],
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def fitter_values(table: pd.DataFrame) -> Values:
    """The fitter's error as a multiple of p_ELM's (:func:`fitter_recovery`), smallest and largest
    over the cells, without noise (``fit_clean_ratio_*``) and with it (``fit_noisy_ratio_*``), and which
    sentence holds with noise: worse than p_ELM in every cell, better in every cell, or mixed.

    Example:
        >>> t = pd.DataFrame({"noise": [0.0, 0.0, 0.005, 0.005], "ratio": [0.01, 0.02, 1.7, 2.4]})
        >>> v = fitter_values(t)
        >>> v["fit_noisy_ratio_min"][0], v["fit_noisy_worse"][0], v["fit_noisy_beats"][0]
        (1.7, True, False)
    """
    clean, noisy = table.loc[table["noise"] == 0, "ratio"], table.loc[table["noise"] > 0, "ratio"]
    return {
        "fit_noise": (float(table["noise"].max()), "{:g}"),
        "fit_clean_ratio_min": (float(clean.min()), "{:.2f}"),
        "fit_clean_ratio_max": (float(clean.max()), "{:.2f}"),
        "fit_noisy_ratio_min": (float(noisy.min()), "{:.2f}"),
        "fit_noisy_ratio_max": (float(noisy.max()), "{:.2f}"),
        "fit_noisy_worse": (bool(noisy.min() > 1), None),
        "fit_noisy_beats": (bool(noisy.max() < 1), None),
        "fit_noisy_mixed": (bool(noisy.min() <= 1 <= noisy.max()), None),
    }


def noise_comparison(fit_noise: float, family_noise: Optional[float]) -> Values:
    """Whether this family's own noise is larger than the fitter check's setting ``fit_noise``
    (probability units): ``fit_noise_below_family``, True when ``family_noise`` (the distilled variant's
    in-sample residual, its gate L1 ``distilled_l1_curve``; see :mod:`apd.evaluation.noise`) is above
    it, None when the family's noise was not measured here.

    Example:
        >>> noise_comparison(0.005, 0.036), noise_comparison(0.005, None)
        ({'fit_noise_below_family': (True, None)}, {'fit_noise_below_family': (None, None)})
    """
    known = family_noise is not None and bool(np.isfinite(family_noise))
    return {"fit_noise_below_family": (bool(family_noise > fit_noise) if known else None, None)}


# -- gates -----------------------------------------------------------------------------------------


def gate_table(sel, result, fam, built, scale: str) -> pd.DataFrame:
    """Every variant's gates as the engaged-variant choice read them (``sel``: an
    ``apd.amateur.pipeline.VariantSelection``), plus the release configuration's other lambda3 runs
    (:func:`apd.amateur.pipeline.run_gates`, cached beside each run), one row per run."""
    table = sel.table.assign(run=sel.table["variant"])
    if result.tuning is None:
        return table
    extra = [
        {
            **run_gates(r.alm_prime, fam, built, scale=scale).to_dict(),
            "run": f"release, lambda3 = {r.lambda3:g}",
            "variant": "release",
            "lambda3": r.lambda3,
        }
        for r in result.tuning.itertuples()
        if not r.chosen
    ]
    return pd.concat([table, pd.DataFrame(extra)], ignore_index=True)


def lambda3_sweep(gates: pd.DataFrame, chosen: float) -> pd.DataFrame:
    """The release configuration's lambda3 runs from :func:`gate_table` (``gates``), one row per run by
    lambda3: how far ALM' moved from the ALM (``moved_kl``, nats) and APD's position between CD at
    T = 1 (0) and the expert (1) (``toward_expert``), with the ``chosen`` lambda3 flagged.

    Example:
        >>> g = pd.DataFrame({"variant": ["release", "distilled", "release"], "lambda3": [0.2, 0.6, 0.05],
        ...                   "moved_kl": [0.9, 0.3, 1.4], "toward_expert": [0.97, 0.65, 0.99]})
        >>> lambda3_sweep(g, 0.2).to_dict("list")
        {'lambda3': [0.05, 0.2], 'moved_kl': [1.4, 0.9], 'toward_expert': [0.99, 0.97], 'chosen': [False, True]}
    """
    rows = gates[gates["variant"] == "release"].sort_values("lambda3")
    return pd.DataFrame(
        {
            "lambda3": rows["lambda3"].astype(float),
            "moved_kl": rows["moved_kl"].astype(float),
            "toward_expert": rows["toward_expert"].astype(float),
            "chosen": np.isclose(rows["lambda3"].astype(float), chosen),
        }
    ).reset_index(drop=True)


def positive_checks(gates: pd.DataFrame, chosen: float) -> Values:
    """Where the release configuration's gates pass on their positive check, from :func:`gate_table`'s
    rows (``gates``): ``gate_positive_lambda3``, the smallest lambda3 of its runs at which the
    attainable solution passes every gate (None: none), and ``gate_chosen_no_gain``, whether at the
    ``chosen`` lambda3 the attainable solution costs at least a trivial one (then no ALM' can pass
    *not trivial* there).

    Example:
        >>> g = Gates(0.0, 0.02, 0.02, 0.3, 0.2, 0.0, 0.0, 10, 200, loss_trained=2.0, loss_attainable=0.5,
        ...           loss_expert=1.0, loss_cd=2.0, curve_alive_attainable=0.4, l1_curve_attainable=0.01,
        ...           l1_flat_attainable=0.02, moved_kl_attainable=0.8)
        >>> heavy = Gates.from_dict({**g.to_dict(), "loss_attainable": 3.0})
        >>> rows = pd.DataFrame([{**g.to_dict(), "variant": "release", "lambda3": 0.1},
        ...                      {**heavy.to_dict(), "variant": "release", "lambda3": 1.6}])
        >>> v = positive_checks(rows, 1.6)
        >>> v["gate_positive_lambda3"][0], v["gate_chosen_no_gain"][0]
        (0.1, True)
    """
    rows = gates[gates["variant"] == "release"].sort_values("lambda3")
    passing, no_gain = [], None
    for r in rows.to_dict("records"):
        g = Gates.from_dict(r)
        attainable = g.checks()[1]
        if attainable["alive"] and attainable["not trivial"] and attainable["moved"]:
            passing.append(float(r["lambda3"]))
        if np.isclose(float(r["lambda3"]), chosen):
            no_gain = not math.isfinite(g.share_of(g.loss_attainable))
    return {
        "gate_positive_lambda3": (passing[0] if passing else None, "{:g}"),
        "gate_chosen_no_gain": (bool(no_gain), None),
    }


def _star(ax, x, y, color: str, label: str) -> None:
    """The chosen point of a sweep, a large star outlined in the expert's colour."""
    ax.plot(x, y, ls="none", marker="*", ms=16, color=color, mec=COLORS["elm"], label=label)


def plot_lambda3_sweep(sweep: pd.DataFrame):
    """:func:`lambda3_sweep` against lambda3 (log scale), two panels: KL(ALM || ALM') (nats, log scale)
    above, APD between CD (0) and the expert (1) below, dashed lines at both ends, the chosen lambda3
    starred; the figure."""
    sweep = sweep[sweep["lambda3"] > 0]
    fig, axes = panels(2, ncols=1, panel_height=2.4, sharex=True)
    chosen = sweep[sweep["chosen"]]
    for ax, col, label in (
        (axes[0], "moved_kl", "KL(ALM || ALM')\n(nats)"),
        (axes[1], "toward_expert", "APD between CD (0)\nand the expert (1)"),
    ):
        ax.plot(sweep["lambda3"], sweep[col], marker="o", color=COLORS["apd"], label="a tuning run")
        _star(ax, chosen["lambda3"], chosen[col], COLORS["apd"], "the chosen λ3")
        ax.set_ylabel(label)
    if (sweep["moved_kl"] > 0).all():
        axes[0].set_yscale("log")
    axes[1].axhline(1.0, color=COLORS["elm"], ls="--", label="the expert")
    axes[1].axhline(0.0, color=COLORS["cd"], ls="--", label="CD at T = 1")
    axes[1].set_xscale("log")
    axes[1].set_xticks(sweep["lambda3"], [f"{v:g}" for v in sweep["lambda3"]], minor=False)
    axes[1].minorticks_off()
    axes[1].set_xlabel("λ3, the weight of L3 (log scale)")
    axes[0].set_title("The release configuration's λ3 runs (held-out chunks)")
    handles, labels = axes[1].get_legend_handles_labels()
    legend(fig, handles=handles, labels=labels, loc="outside lower center", ncol=2)
    return fig


#: a failed gate (:attr:`apd.amateur.gates.Gates.reason`, parts joined by "; ") in a reader's words
GATE_WORDS = {
    "curve model inert": "flat curves",
    "ALM' does not realise its distillation targets (fidelity)": "misses its targets",
    NEAR_TRIVIAL: "near a trivial solution",
    NO_GAIN: "no gain to attain",
    NOT_MEASURED: "objective not measured",
    "ALM' did not move from the ALM": "ALM' barely moved",
    "all gates pass": "",
}


def gates_in_words(reason) -> str:
    """A gates' ``reason`` (failed gates joined by "; ") in a reader's words (:data:`GATE_WORDS`).

    Example:
        >>> gates_in_words("curve model inert; ALM' near a trivial solution")
        'flat curves, near a trivial solution'
    """
    parts = [p.strip() for p in str(reason or "").split(";") if p.strip()]
    return ", ".join(w for w in (GATE_WORDS.get(p, p) for p in parts) if w)


def variants_shown(table: pd.DataFrame) -> pd.DataFrame:
    """The variant selection's table (``sel.table``, one row per variant) as the page shows it: its
    λ3, whether it engages, the gates it fails in words (:data:`GATE_WORDS`), the 1/T at which its dev
    KL is read (APD's dev-best, ``dev_inv_T``; None where the table lacks it), that dev KL (nats) and
    whether later chapters use it, flags as yes/no. For display only: nothing saved reads it.

    Example:
        >>> t = pd.DataFrame({"variant": ["release", "distilled"], "lambda3": [0.2, 0.6], "engaged": [False, True],
        ...                   "reason": ["curve model inert; ALM' near a trivial solution", "all gates pass"],
        ...                   "dev_kl": [2.43, 2.41], "dev_inv_T": [0.05, 0.5], "chosen": [False, True]})
        >>> variants_shown(t)[["variant", "engages?", "why not", "used by later chapters"]].iloc[0].tolist()
        ['release', 'no', 'flat curves, near a trivial solution', 'no']
        >>> variants_shown(t).columns[2:].tolist()
        ['engages?', 'why not', '1/T (dev-best)', 'dev KL at that 1/T (nats)', 'used by later chapters']
        >>> variants_shown(t)["1/T (dev-best)"].tolist()
        [0.05, 0.5]
    """
    inv_T = table["dev_inv_T"] if "dev_inv_T" in table else [None] * len(table)
    return pd.DataFrame(
        {
            "variant": table["variant"],
            "λ3": table["lambda3"],
            "engages?": [yes_no(e) for e in table["engaged"]],
            "why not": [gates_in_words(r) for r in table["reason"]],
            "1/T (dev-best)": list(inv_T),
            "dev KL at that 1/T (nats)": table["dev_kl"],
            "used by later chapters": [yes_no(c) for c in table["chosen"]],
        }
    ).reset_index(drop=True)


def gate_table_shown(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`gate_table`'s columns a reader reads, with names in words."""
    return table[
        [
            "run",
            "lambda3",
            "curve_alive",
            "l1_curve",
            "l1_flat",
            "gap_share",
            "collapsed",
            "collapsed_cd",
            "moved_kl",
            "toward_expert",
            "reason",
        ]
    ].rename(
        columns={
            "curve_alive": "curve alive",
            "l1_curve": "L1 of the curves",
            "l1_flat": "L1 of a flat line",
            "gap_share": "gap share (objective)",
            "collapsed": "share at the expert",
            "collapsed_cd": "same for CD (T = 1)",
            "moved_kl": "KL(ALM || ALM')",
            "toward_expert": "APD between CD (0) and the expert (1)",
            "reason": "gates",
        }
    )


def gate_values(sel, variant_names) -> Values:
    """Per variant its gates' measurements and verdict; which variants engage; the gates of the
    ALM' the book uses (``gate_*``) and the thresholds (:data:`apd.amateur.gates.THRESHOLDS`)."""
    by_variant = sel.table.set_index("variant")
    values: Values = {}
    for v in variant_names:
        row = by_variant.loc[v]
        values.update(
            {
                f"{v}_gate_engaged": (int(row["engaged"]), None),
                f"{v}_gate_reason": (row["reason"], None),
                f"{v}_gate_verdict": ("engaged" if row["engaged"] else f"not engaged ({row['reason']})", None),
            }
        )
        for key in ("curve_alive", "l1_curve", "l1_flat", "collapsed", "moved_kl", "toward_expert"):
            values[f"{v}_{key}"] = (float(row[key]), None)
        values[f"{v}_gap"] = (gap_words(sel.gates_of(v)), None)
    engaged = [v for v in variant_names if by_variant.loc[v, "engaged"]]
    values.update(
        n_variants=(len(variant_names), None),
        n_engaged=(len(engaged), None),
        engaged_list=(", ".join(engaged) or "none of them", None),
        any_engaged=(bool(engaged), None),
        variant_used=(sel.variant, None),
        variant_used_engaged=(int(sel.engaged), None),
        variant_used_note=(sel.note, None),
    )
    g = sel.gates.to_dict()
    for key in ("curve_alive", "l1_curve", "l1_flat", "collapsed", "collapsed_cd", "moved_kl", "toward_expert"):
        values[f"gate_{key}"] = (g[key], None)
    for key in ("alive", "not_trivial", "on_expert", "moved", "engaged"):
        values[f"gate_{key}"] = (int(g[key]), None)
    values["gate_gap"] = (gap_words(sel.gates), None)
    what = "the release configuration" if sel.variant == "release" else f"the {sel.variant} variant"
    values["gate_verdict"] = (
        f"engaged ({what})"
        if sel.engaged
        else f"not engaged ({what}: {gates_in_words(sel.gates.reason)}; no variant engages)",
        None,
    )
    values["gate_reason"] = (f"{what}: {gates_in_words(sel.gates.reason) or 'all gates pass'}", None)
    values["gate_positions"] = (g["n_positions"], None)
    values.update(
        gate_alive_min=(THRESHOLDS.alive_min, None),
        gate_collapse_tol=(THRESHOLDS.collapse_tol, None),
        gate_gap_min=(THRESHOLDS.gap_min, None),
        gate_moved_min=(THRESHOLDS.moved_min, None),
    )
    for v in variant_names:
        for w in ("apd", "elm", "cd"):
            values[f"{v}_fidelity_{w}"] = (by_variant.loc[v].get(f"fidelity_{w}"), "{:.3f}")
    return values


def gap_words(g: Gates) -> str:
    """*not trivial*'s reading as a predicate of "ALM'": the share of the objective's gap it closes (from
    the better trivial solution, 0, to the attainable one, 1), or why there is none.

    Example:
        >>> gap_words(Gates(0.5, 0.01, 0.02, 0.3, 0.2, 0.1, 0.4, 10, 200, loss_trained=0.9,
        ...                 loss_attainable=0.5, loss_expert=1.0, loss_cd=1.3))
        "closes 0.20 of the objective's gap"
        >>> gap_words(Gates(0.5, 0.01, 0.02, 0.3, 0.2, 0.1, 0.4, 10, 200))
        'was not measured on the objective'
    """
    if math.isfinite(g.gap_share):
        return f"closes {g.gap_share:.2f} of the objective's gap"
    if NOT_MEASURED in g.reason:
        return "was not measured on the objective"
    return "has no attainable gain on the objective to close"


#: the solutions at which *not trivial* reads the objective (:data:`apd.amateur.gates.SOLUTIONS`), in words
SOLUTION_WORDS = {
    "trained": "trained ALM'",
    "attainable": "attainable (the fitter's curves)",
    "expert": "expert (c = p_ELM)",
    "cd": "CD (ALM' = ALM)",
}


def objective_table(sel, variant_names) -> pd.DataFrame:
    """Every variant's objective at the four solutions of *not trivial* (:meth:`Gates.objective_rows`):
    variant, solution, L1, L2, L3, L (a distilled variant's: its KL to the fitter's targets), the share of
    tokens at the expert, and every gate read on every solution (:meth:`Gates.checks`: the gap share,
    NaN without a gain to attain; the curve-alive ratio; KL(ALM || ALM'); the gates passed): the trained
    ALM' row is the gates' reading, the attainable solution's their positive check and the trivial
    ones' their negative checks.

    Example:
        >>> from types import SimpleNamespace
        >>> g = Gates(0.5, 0.01, 0.02, 0.3, 0.2, 0.1, 0.4, 10, 200, loss_trained=0.9, loss_attainable=0.5,
        ...           loss_expert=1.0, loss_cd=1.3)
        >>> t = objective_table(SimpleNamespace(gates_of=lambda v: g), ["release"])
        >>> t["L"].tolist(), [round(v, 2) for v in t["gap share"]], t["gates passed"].tolist()[:2]
        ([0.9, 0.5, 1.0, 1.3], [0.2, 1.0, 0.0, -0.6], ['alive, moved', 'not trivial'])
    """
    rows = []
    for v in variant_names:
        g = sel.gates_of(v)
        for r, c in zip(g.objective_rows(), g.checks()):
            passed = [name for name in ("alive", "not trivial", "moved") if c[name]]
            rows.append(
                {
                    "variant": v,
                    **r,
                    "solution": SOLUTION_WORDS[r["solution"]],
                    "gap share": c["gap share"],
                    "curve alive": c["curve alive"],
                    "KL(ALM || ALM')": c["moved KL"],
                    "gates passed": ", ".join(passed) or "none",
                }
            )
    return pd.DataFrame(rows)


def gate_reading(sel, variant_names) -> tuple[pd.DataFrame, Values]:
    """Every variant under the looser thresholds (:data:`apd.amateur.gates.LOOSE_THRESHOLDS`) and the
    current ones, beside its moved KL and its fidelity to the distillation targets."""
    by_variant = sel.table.set_index("variant")

    def word(g):
        return "engaged" if g.engaged else g.reason

    table = pd.DataFrame(
        [
            {
                "variant": v,
                "KL(ALM || ALM')": by_variant.loc[v, "moved_kl"],
                "fidelity: KL(target || c_APD)": by_variant.loc[v].get("fidelity_apd"),
                "KL(target || p_ELM)": by_variant.loc[v].get("fidelity_elm"),
                "KL(target || c_CD)": by_variant.loc[v].get("fidelity_cd"),
                "looser thresholds": word(sel.gates_of(v).under(LOOSE_THRESHOLDS)),
                "current thresholds": word(sel.gates_of(v)),
            }
            for v in variant_names
        ]
    )
    return table, {f"{v}_gate_loose": (f, None) for v, f in zip(variant_names, table["looser thresholds"])}


# -- the evaluation sets ---------------------------------------------------------------------------


@dataclass
class WorldQuestions:
    """The world's questions of the chapter: ``items`` (dev first, then test), ``qa`` (every member's
    scores, :func:`apd.family.knowledge.score_world_qa`), ``amateurs`` ({variant: (n, V) log-probabilities of
    its ALM'}), ``split`` ("dev"/"test"), ``bucket`` and ``person`` per item, and the glue ``values``."""

    items: list
    qa: Any
    amateurs: dict
    split: np.ndarray
    bucket: np.ndarray
    person: np.ndarray
    values: Values


def world_questions(fam, built, models: dict, seed: int, per_bucket: int, rng) -> Optional[WorldQuestions]:
    """At most ``per_bucket`` questions per frequency bucket from each half (dev, test) of the world's
    evaluation people (``rng`` draws them, dev first), scored by every member and every ALM' of
    ``models``; None for a Hub family (``built`` None)."""
    if built is None:
        return None
    world = built.corpus.world
    dev_all, test_all = dev_test_split(built.corpus.qa_items, world, seed)
    dev, test = sample_per_bucket(dev_all, per_bucket, rng), sample_per_bucket(test_all, per_bucket, rng)
    items = dev + test
    qa = score_world_qa(fam, world, items)
    prompts = [it.prompt for it in items]
    amateurs = {v: next_token_log_probs(m, fam.tokenizer, prompts, fam.vocab_size) for v, m in models.items()}
    values: Values = {
        "n_dev_items": (len(dev), None),
        "n_test_items": (len(test), None),
        "n_dev_people": (len({it.person for it in dev}), None),
        "n_test_people": (len({it.person for it in test}), None),
    }
    return WorldQuestions(
        items,
        qa,
        amateurs,
        np.array(["dev"] * len(dev) + ["test"] * len(test)),
        np.array([it.bucket for it in items]),
        np.array([it.person for it in items]),
        values,
    )


def question_counts(wq: Optional[WorldQuestions]) -> Values:
    """The numbers of dev and test questions and people (all 0 without a world).

    Example:
        >>> question_counts(None)["n_test_items"]
        (0, None)
    """
    if wq is None:
        return {k: (0, None) for k in ("n_dev_items", "n_test_items", "n_dev_people", "n_test_people")}
    return wq.values


def heldout_texts(built) -> list[str]:
    """The held-out documents: pico's validation split, or for a Hub family the Wikipedia leads of
    the synthetic corpus's validation split."""
    if built is not None:
        return built.corpus.validation
    corp = build_corpus(CorpusConfig())
    return [d for d, s in zip(corp.validation, corp.sources["validation"]) if s == "wiki"]


# -- fitted curves ---------------------------------------------------------------------------------


@dataclass
class CurveSource:
    """Where the fitted-curve examples come from: the method distributions ``dist`` (their top-k
    ``ids`` and on-the-fly fit), every member's (N, n, V) ``logprobs``, the ALM' models' ``amateurs``,
    the ``gold`` ids, the ``truth`` (None on held-out text), the candidate rows ``pool``, a ``label``
    per row and the ``bucket`` per row (None on held-out text)."""

    dist: Any
    logprobs: Any
    amateurs: dict
    gold: Any
    truth: Any
    pool: np.ndarray
    label: list
    bucket: Optional[np.ndarray]


def curve_source(wq: Optional[WorldQuestions], mdist, text: dict, tdist) -> CurveSource:
    """The test questions of the world (``wq``, ``mdist``) or, without a world, the held-out text."""
    if wq is not None:
        return CurveSource(
            mdist,
            wq.qa.logprobs,
            wq.amateurs,
            wq.qa.gold,
            wq.qa.truth,
            np.nonzero(wq.split == "test")[0],
            [f"{it.bucket}: {it.prompt.splitlines()[0][:48]}" for it in wq.items],
            wq.bucket,
        )
    gold = text["next_ids"]
    return CurveSource(
        tdist,
        text["member_logprobs"],
        text["amateurs_logprobs"],
        gold,
        None,
        np.arange(len(gold)),
        [f"held-out position {i}" for i in range(len(gold))],
        None,
    )


def curve_examples(src: CurveSource, n: int) -> list[int]:
    """Up to ``n`` rows whose gold token is among the expert's top tokens: one per frequency bucket
    first (on the world), then the first others."""
    candidates = [int(i) for i in src.pool if (src.dist.ids[i] == src.gold[i]).any()]
    chosen = []
    if src.bucket is not None:
        for b in BUCKETS:
            chosen += [i for i in candidates if src.bucket[i] == b][:1]
    chosen += [i for i in candidates if i not in chosen]
    return chosen[:n]


def curve_predictions(src: CurveSource, chosen: list[int], results: dict, n_members: int) -> dict:
    """{variant: its curve MLP's prediction (:func:`apd.amateur.objective.predict_curves`) on the ``chosen``
    rows' top-k tokens} for every variant with a curve MLP (``results``: {variant: APDResult})."""
    if not chosen:
        return {}
    pick = np.array(chosen)
    cid = src.dist.ids[pick]  # (n, k)
    lp_k = np.take_along_axis(src.logprobs[:, pick], np.broadcast_to(cid, (n_members,) + cid.shape), -1)  # (N, n, k)
    return {
        v: predict_curves(r.alm_prime_path, lp_k, at(src.logprobs[-1][pick], cid), at(src.amateurs[v][pick], cid))
        for v, r in results.items()
        if (r.alm_prime_path / "curve_mlp.pt").is_file()
    }


def draw_fitted_curve(ax, src: CurveSource, preds: dict, j: int, i: int, x, top_k: int, tokenizer) -> None:
    """Panel ``j`` (row ``i`` of ``src``): the members' probabilities of the gold token at their log
    sizes ``x``, each MLP's curve and asymptote (``preds``, :func:`curve_predictions`), the on-the-fly
    curve and the truth, all renormalised over the expert's top ``top_k`` tokens."""
    cid = src.dist.ids[i]
    w = int(np.nonzero(cid == src.gold[i])[0][0])
    first = next(iter(preds.values()), None)
    if first is not None:
        ax.plot(x, first.observed[j, w].numpy(), "o", color=COLORS["members"], label="members", zorder=3)
    styles = {"release": (COLORS["apd"], "-"), "conditioned": (COLORS["apd_conditioned"], "-")}
    for v, pred in preds.items():
        color, ls = styles.get(v, (COLORS["apd"], "--"))
        ax.plot(pred.x.numpy(), pred.curve[j, w].numpy(), color=color, ls=ls, label=f"MLP curve, {v}")
        ax.axhline(float(pred.asymptote[j, w]), color=color, ls="--", lw=1, label=f"its c (APD {v}, T = 1)")
    fit = src.dist.fly_fit
    if fit is not None and first is not None:
        r = i * top_k + w
        fc = get_decay("exponential")(first.x, fit.c[r : r + 1], fit.params[r : r + 1])
        fc = flip_values(fc, fit.flipped[r : r + 1, None])[0]
        ax.plot(first.x.numpy(), fc.numpy(), color=COLORS["apd_fly"], label="on-the-fly curve")
    if src.truth is not None:
        t_k = at(src.truth[i][None], cid[None])[0]
        if t_k.sum() > 0:
            ax.axhline(float(t_k[w] / t_k.sum()), color=COLORS["truth"], lw=1.2, label="truth")
    ax.set_xlabel(XLABEL_LOG_SIZE)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(wrap(f"{src.label[i]} → {tokenizer.decode([int(src.gold[i])])!r}", 40), fontsize=SMALL_PT)
    ax.title.set_fontweight("normal")
    ax.set_ylabel(f"probability\n(over the ELM's top {top_k})")


def plot_fitted_curves(src: CurveSource, preds: dict, chosen: list[int], x, top_k: int, tokenizer):
    """One :func:`draw_fitted_curve` panel per example of ``chosen`` (rows of ``src``), two per row,
    with one legend for all of them below; returns the figure."""
    fig, axes = panels(len(chosen), ncols=2, panel_height=3.0, sharex=True, sharey=True)
    for j, (ax, i) in enumerate(zip(axes, chosen)):
        draw_fitted_curve(ax, src, preds, j, i, x, top_k, tokenizer)
    outer_labels(axes, XLABEL_LOG_SIZE, axes[0].get_ylabel())
    handles, labels = axes[0].get_legend_handles_labels()
    legend(fig, handles=handles, labels=labels, loc="outside lower center", ncol=2)
    return fig


def plot_training_losses(log: pd.DataFrame, window: int):
    """Each term of :data:`LOSS_TERMS` against the optimizer step (``log``: the training log), per
    step and as a running mean over ``window`` steps, one panel per term; returns the figure."""
    fig, axes = panels(len(LOSS_TERMS), ncols=2, panel_height=2.8, sharex=True)
    for ax, (key, label) in zip(axes, LOSS_TERMS):
        ax.plot(
            log["step"],
            log[key],
            color=COLORS["alm"] if window > 1 else COLORS["apd"],
            lw=0.8,
            marker="" if window > 1 else "o",
            label="per step",
        )
        if window > 1:
            mean = log[key].rolling(window, min_periods=1).mean()
            ax.plot(log["step"], mean, color=COLORS["apd"], lw=2, label=f"mean of the last {window} steps")
        ax.set_title(label)
    outer_labels(axes, "optimizer step", "loss term\n(probability units)")
    handles, labels = axes[0].get_legend_handles_labels()
    legend(fig, handles=handles, labels=labels, loc="outside lower center", ncol=2)
    return fig


def plot_conditioned_losses(log: pd.DataFrame, warmup_steps: int, lambda3: float):
    """The conditioned variant's first three loss terms (:data:`LOSS_TERMS`) against the optimizer
    step, as running means over a fiftieth of the steps, one panel per row, with a dotted line where
    the MLP-only warm-up of ``warmup_steps`` ends; returns the figure."""
    window = max(1, len(log) // 50)
    terms = LOSS_TERMS[:3]
    fig, axes = panels(len(terms), ncols=1, panel_height=1.9, sharex=True)
    for ax, (key, label) in zip(axes, terms):
        ax.plot(log["step"], log[key].rolling(window, min_periods=1).mean(), color=COLORS["apd"], lw=1.5)
        ax.axvline(warmup_steps, color=COLORS["members"], ls=":", label="end of the MLP-only warm-up")
        ax.set_title(label, loc="left")
        ax.set_ylabel("loss term")
    axes[-1].set_xlabel("optimizer step")
    legend(axes[0], loc="upper right")
    fig.suptitle(f"Conditioned variant, lambda3 = {lambda3:g}: loss terms, mean of {window} steps (probability units)")
    return fig


def curve_values(preds: dict, chosen: list[int]) -> Values:
    """How far from flat each MLP's curves are (mean |curve at the ALM - asymptote| over the drawn
    tokens), the ALM-expert spread of the members' probabilities, and the number of examples."""
    values: Values = {
        f"{v}_mlp_gap": (float((p.curve[..., 0] - p.asymptote).abs().mean()), "{:.3f}") for v, p in preds.items()
    }
    if chosen:
        first = next(iter(preds.values()), None)
        spread = (first.observed[..., 0] - first.observed[..., -1]).abs().mean() if first is not None else float("nan")
        values["member_spread"] = (float(spread), "{:.3f}")
    else:
        values["member_spread"] = (None, "{:.3g}")
    for v in ("release", "conditioned"):
        if not (chosen and v in preds):
            values[f"{v}_mlp_gap"] = (None, "{:.3g}")
    values["n_curve_examples_drawn"] = (len(chosen), None)
    return values


# -- the world's truth -----------------------------------------------------------------------------


def dev_knobs(dev_frame: pd.DataFrame, inv_T_grid) -> tuple[dict, Values]:
    """Each method's knob with the lowest KL on the dev questions ({method: 1/T or w}; the mean over
    people of each person's mean where the frame has a ``person`` column, the estimand the chapter
    reports), with CD's and APD's 1/T, the grid they are chosen from and the number of dev questions
    the KL scores (``n_dev_scored``: those whose truth has mass on the expert's top tokens).

    Example:
        >>> f = pd.DataFrame({"method": ["CD", "CD", "APD"], "knob": [0.5, 1.0, 1.0], "kl": [0.8, 0.9, 0.7]})
        >>> knobs, values = dev_knobs(f, [1.0, 0.5])
        >>> knobs["CD"], values["apd_best_invT"][0], values["invT_grid_text"][0], values["n_dev_scored"][0]
        (0.5, 1.0, '0.5, 1', 1)
    """
    cluster = "person" if "person" in dev_frame.columns else None  # the reported estimand: person means
    knobs, grid = best_knobs(dev_frame, "kl", cluster=cluster), sorted(inv_T_grid)
    cd = dev_frame[(dev_frame["method"] == "CD") & np.isclose(dev_frame["knob"], knobs["CD"])]
    return knobs, {
        "n_dev_scored": (int(cd["kl"].notna().sum()), None),  # dev questions the KL scores (truth on the top k)
        "cd_best_invT": (knobs["CD"], "{:g}"),
        "apd_best_invT": (knobs["APD"], "{:g}"),
        "invT_grid_text": (", ".join(f"{v:g}" for v in grid), "{}"),
        "fly_w": (knobs.get("APD on the fly"), "{:g}"),
    }


def truth_table(test_frame: pd.DataFrame, measure: str, knobs: dict, fly: bool, label_of: dict) -> pd.DataFrame:
    """Mean ``measure`` on the test questions per method row (every 1/T of CD and APD, the expert,
    APD on the fly at its dev-chosen w) and frequency bucket; the variants (``label_of``'s methods)
    have their own table. Columns carry their item counts, ``"head (n=40)"``, the last is all items."""
    keep = {"APD on the fly": knobs["APD on the fly"]} if fly else {}
    tab = bucket_summary(test_frame[~test_frame["method"].isin(list(label_of.values()))], measure, knobs=keep)
    counts = tab.attrs["n"]
    tab.columns = [f"{c} (n={counts[c]})" for c in tab.columns]
    return tab


def truth_values(tab: pd.DataFrame, measure: str, knobs: dict, fly: bool) -> Values:
    """The expert, CD (dev-best and T = 1), APD (T = 1 and dev-best) and APD on the fly over all test
    questions of :func:`truth_table`, and APD and CD (each at its dev-best 1/T) on tail and head."""
    allcol = tab.columns[-1]
    elm = float(tab.loc["ELM", allcol])
    cd = float(tab.loc[method_label("CD", knobs["CD"]), allcol])
    apd1 = quote(tab, method_label("APD", 1.0), allcol)
    apdb = float(tab.loc[method_label("APD", knobs["APD"]), allcol])
    fly_v = float(tab.loc[method_label("APD on the fly", knobs["APD on the fly"]), allcol]) if fly else float("nan")
    cd1 = quote(tab, method_label("CD", 1.0), allcol)
    values: Values = {
        f"{measure}_{k}": (v, "{:.4f}")
        for k, v in (("elm", elm), ("cd", cd), ("apd1", apd1), ("apdbest", apdb), ("fly", fly_v), ("cd1", cd1))
    }
    for name in ("tail", "head"):
        cols = [c for c in tab.columns if c.startswith(name)]
        a = float(tab.loc[method_label("APD", knobs["APD"]), cols[0]]) if cols else float("nan")
        c = float(tab.loc[method_label("CD", knobs["CD"]), cols[0]]) if cols else float("nan")
        values.update(
            {
                f"{measure}_{name}_apd": (a, "{:.3f}"),
                f"{measure}_{name}_cd": (c, "{:.3f}"),
            }
        )
    return values


def no_truth_values() -> Values:
    """The world's measures as missing, for a Hub family (no world, no truth).

    Example:
        >>> values = no_truth_values()
        >>> values["kl_elm"], len(values)
        ((None, '{:.3g}'), 25)
    """
    names = ["n_dev_scored", "cd_best_invT", "apd_best_invT", "invT_grid_text", "fly_w"]
    names += [
        f"{m}_{k}"
        for m in TRUTH_MEASURES
        for k in (
            "elm",
            "cd",
            "apd1",
            "apdbest",
            "fly",
            "cd1",
            "tail_apd",
            "tail_cd",
            "head_apd",
            "head_cd",
        )
    ]
    return {k: (None, "{:.3g}") for k in names}


def draw_sweep(ax, tab: pd.DataFrame, col: str, inv_T_grid, fly_knob: Optional[float] = None) -> None:
    """CD's and APD's column ``col`` of ``tab`` against 1/T, the expert (dashed) and APD on the fly at
    ``fly_knob`` (dotted; None: not drawn)."""
    for method, color, marker in (("CD", COLORS["cd"], "o"), ("APD", COLORS["apd"], "s")):
        ax.plot(
            inv_T_grid,
            [quote(tab, method_label(method, v), col) for v in inv_T_grid],
            marker=marker,
            color=color,
            label=method,
        )
    ax.axhline(quote(tab, "ELM", col), color=COLORS["elm"], ls="--", label="ELM")
    if fly_knob is not None:
        ax.axhline(
            quote(tab, method_label("APD on the fly", fly_knob), col),
            color=COLORS["apd_fly"],
            ls=":",
            lw=2,
            label=f"on the fly, w = {fly_knob:g}",
        )
    ax.set_xlabel("1/T (inverse amateur temperature)")


def plot_truth(tab: pd.DataFrame, inv_T_grid, fly_knob: Optional[float], title: str):
    """One :func:`draw_sweep` panel per column of :func:`truth_table` (per bucket, then all); the figure."""
    fig, axes = panels(len(tab.columns), ncols=2, panel_height=2.8, sharex=True)
    for ax, col in zip(axes, tab.columns):
        draw_sweep(ax, tab, col, inv_T_grid, fly_knob)
        ax.set_title(col)
    outer_labels(axes, axes[0].get_xlabel(), wrap(title, 24))
    handles, labels = axes[0].get_legend_handles_labels()
    legend(fig, handles=handles, labels=labels, loc="outside lower center", ncol=len(labels))
    fig.suptitle(f"World questions about the test people: {title} (lower is better)")
    return fig


def truth_figure(run, test_frame: pd.DataFrame, measure: str, knobs: dict, fly: bool, labels: dict, inv_T_grid):
    """The world's test questions scored by ``measure`` (a key of :data:`TRUTH_MEASURES`): its
    :func:`truth_table` saved as ``tables/apd_truth_<measure>.csv``, its :func:`truth_values` glued,
    its :func:`plot_truth` saved as ``figures/apd_truth_<measure>``. Returns ``(figure, table)``."""
    tab = truth_table(test_frame, measure, knobs, fly, labels)
    run.save_table(tab.reset_index(names="method"), f"apd_truth_{measure}")
    glue(run, truth_values(tab, measure, knobs, fly))
    fig = plot_truth(tab, inv_T_grid, knobs.get("APD on the fly") if fly else None, TRUTH_MEASURES[measure])
    run.savefig(fig, f"apd_truth_{measure}")
    return fig, tab


def cd_control_grid(test_frame: pd.DataFrame, inv_T_grid, knob: float) -> pd.DataFrame:
    """CD's positive control at every 1/T of ``inv_T_grid`` (descriptive; the verdicts read CD at its
    dev-chosen ``knob`` only): the expert's KL to the truth minus CD's, paired by question and averaged
    per person (:func:`apd.world.truth.paired_table`, standard errors over people), with the questions
    and people it is over and whether that 1/T is ``knob``. One row per 1/T, smallest first.

    Example:
        >>> f = pd.DataFrame([dict(method=m, knob=v, item=i, person=i // 2, kl=kl + 0.01 * i * (m == "CD"))
        ...                   for i in range(4) for m, v, kl in (("ELM", 0.0, 1.0), ("CD", 0.5, 0.8), ("CD", 1.0, 1.1))])
        >>> g = cd_control_grid(f, [1.0, 0.5], 0.5)
        >>> g["1/T"].tolist(), g["KL gain over the expert"].round(3).tolist(), g["dev-chosen"].tolist()
        ([0.5, 1.0], [0.185, -0.115], [True, False])
    """
    grid = sorted(float(v) for v in inv_T_grid)
    t = paired_table(test_frame, {v: ("CD", v) for v in grid}, ("ELM", 0.0), "kl", by=None, cluster="person")
    return pd.DataFrame(
        {
            "1/T": grid,
            "KL gain over the expert": t["gain"].to_numpy(dtype=float),
            "gain se": t["gain_se"].to_numpy(dtype=float),
            "questions": t["n"].to_numpy(dtype=int),
            "people": t["n_clusters"].to_numpy(dtype=int),
            "dev-chosen": np.isclose(grid, knob),
        }
    )


def plot_cd_control(grid: pd.DataFrame):
    """:func:`cd_control_grid`'s gains against 1/T with bars of one standard error over people, 0 (the
    expert alone) dashed and CD's dev-chosen 1/T starred; the figure."""
    fig, ax = figure(height=3.6)
    x, y = grid["1/T"], grid["KL gain over the expert"]
    ax.errorbar(x, y, yerr=grid["gain se"], fmt="none", ecolor=COLORS["cd"], capsize=3)
    ax.plot(x, y, marker="o", color=COLORS["cd"], label="CD, ± 1 standard error over people")
    ax.axhline(0.0, color=COLORS["elm"], ls="--", label="the expert alone")
    chosen = grid[grid["dev-chosen"]]
    _star(
        ax,
        chosen["1/T"],
        chosen["KL gain over the expert"],
        COLORS["cd"],
        "CD's dev-chosen 1/T (the verdicts read this point)",
    )
    ax.set_xlabel("1/T (amateur weight)")
    ax.set_ylabel("KL gain over the expert (nats)")
    ax.set_title("CD against the expert, test people (above 0: CD is closer to the truth)")
    legend(ax)
    return fig


#: the paired comparisons over the test questions: key -> (method a, method b, measure); a's value minus b's,
#: every method at its dev-best knob (``None``: the key of ``knobs``), the T = 1 comparison at 1/T = 1
_PAIRS = {
    "kl_fly_gain": (("APD on the fly", None), ("APD", None), "kl"),
    "kl_cd_gain": (("ELM", 0.0), ("CD", None), "kl"),
    "kl_apd_gain": (("CD", None), ("APD", None), "kl"),
    "nll_apd_gain": (("CD", None), ("APD", None), "nll"),
    "kl_apd1_gain": (("CD", 1.0), ("APD", 1.0), "kl"),
}


def paired_world(test_frame: Optional[pd.DataFrame], knobs: dict) -> Values:
    """The paired differences of :data:`_PAIRS` over the test questions (standard errors over people,
    :func:`apd.world.truth.paired_methods`): mean, se, smallest detectable difference, questions and people;
    the verdict of APD against CD (1.96 standard errors; ``apd_vs_cd_verdict``: better, worse or tie)
    and its three conditions (``apd_closer``, ``cd_closer``, ``apd_cd_tie``), and CD's KL minus APD's as
    ``difference ± se``.

    Example:
        >>> f = pd.DataFrame([dict(method=m, knob=1.0, item=i, person=i // 2, kl=kl + 0.01 * i, nll=1.0)
        ...                   for i in range(4) for m, kl in (("ELM", 1.0), ("CD", 0.8), ("APD", 0.7))])
        >>> v = paired_world(f, {"CD": 1.0, "APD": 1.0})
        >>> v["kl_apd_gain_pm"][0], v["apd_closer"][0], paired_world(None, {})["apd_cd_tie"][0]
        ('+0.100 ± 0', True, False)
    """
    values: Values = {}
    paired = {}
    for name, (a, b, measure) in _PAIRS.items():
        a, b = (a[0], knobs.get(a[0]) if a[1] is None else a[1]), (b[0], knobs.get(b[0]) if b[1] is None else b[1])
        ok = test_frame is not None and None not in (a[1], b[1])
        r = paired[name] = paired_methods(test_frame, a, b, measure, cluster="person") if ok else None
        values.update(
            {
                name: (r.mean if r else None, "{:+.4f}" if "apd_gain" in name else "{:.4f}"),
                f"{name}_se": (r.se if r else None, "{:.4f}"),
                f"{name}_mde": (r.mde if r else None, "{:.4f}"),
                f"{name}_n": (r.n if r else None, "{:d}"),
                f"{name}_people": (r.n_groups if r else None, "{:d}"),
            }
        )
    r = paired["kl_apd_gain"]
    word = verdict(-r.mean, r.se, z=1.96) if r else None  # 'better': APD's KL is lower
    values["apd_vs_cd_verdict"] = (word, "{}")
    values.update(
        apd_closer=(word == "better", None), cd_closer=(word == "worse", None), apd_cd_tie=(word == "tie", None)
    )
    values["kl_apd_gain_pm"] = (plus_minus(r.mean, r.se) if r else None, "{}")
    cd_rows = (
        test_frame[(test_frame["method"] == "CD") & np.isclose(test_frame["knob"], knobs["CD"])]
        if test_frame is not None
        else None
    )
    values["kl_apd_gain_rel"] = (r.mean / cd_rows["kl"].mean() if r else None, "{:.2%}")
    return values


def variants_against_cd(
    test_frame: Optional[pd.DataFrame], knobs: dict, sel, results: dict, records: dict, label_of: dict
) -> tuple[Optional[pd.DataFrame], Optional[dict], Values]:
    """Every variant (``label_of``: {variant: its method label}) against CD on the test questions,
    each at its dev-best 1/T (:func:`apd.world.truth.paired_table`, standard errors over people): the table
    (gates, lambda3, 1/T, KL and NLL, CD's minus its own with se and MDE, per bucket), the paired
    tables {"kl", "nll"} with CD's plain mean KL per bucket ("cd_kl", a Series), and the values
    (each variant's dev KL over every dev question, at its dev-best 1/T ``<variant>_dev_inv_T``);
    ``(None, None, missing values)`` without a world."""
    names = list(label_of)
    by_variant = sel.table.set_index("variant")
    vt = gains = None
    if test_frame is not None:
        rows = {v: (label_of[v], knobs[label_of[v]]) for v in names}
        gains = {m: paired_table(test_frame, rows, ("CD", knobs["CD"]), m, cluster="person") for m in ("kl", "nll")}
        cd = test_frame[(test_frame["method"] == "CD") & np.isclose(test_frame["knob"], knobs["CD"])]
        gains["cd_kl"] = cd.groupby("bucket")["kl"].mean()  # CD's plain mean KL per bucket (the gains are per person)
        vt = pd.DataFrame(
            {
                "variant": names,
                "engaged": [bool(by_variant.loc[v, "engaged"]) for v in names],
                "used": [v == sel.variant for v in names],
                "lambda3": [results[v].lambda3 for v in names],
                "1/T (dev)": [knobs[label_of[v]] for v in names],
            }
        )
        for m in ("kl", "nll"):
            g = gains[m].loc[names]
            vt[f"{m}"], vt[f"{m} gain over CD"], vt[f"{m} gain se"] = (
                g["mean"].to_numpy(),
                g["gain"].to_numpy(),
                g["gain_se"].to_numpy(),
            )
            vt[f"{m} smallest detectable"] = g["gain_mde"].to_numpy()
        for b in BUCKETS:
            vt[f"kl gain, {b}"] = gains["kl"].loc[names, f"gain_{b}"].to_numpy()
        vt["steps"] = [records[v]["steps"] for v in names]
    values: Values = {}
    for i, v in enumerate(names):
        g = {m: (gains[m].loc[v] if vt is not None else None) for m in ("kl", "nll")}
        values[f"{v}_inv_T"] = (None if vt is None else vt["1/T (dev)"].iloc[i], "{:g}")
        values[f"{v}_dev_kl"] = (by_variant.loc[v, "dev_kl"], "{:.4f}")  # over every dev question, at:
        values[f"{v}_dev_inv_T"] = (by_variant.loc[v].get("dev_inv_T"), "{:g}")
        for m in ("kl", "nll"):
            for key, col, fmt in (
                ("", "mean", "{:.4f}"),
                ("_gain", "gain", "{:+.4f}"),
                ("_gain_se", "gain_se", "{:.4f}"),
                ("_gain_mde", "gain_mde", "{:.4f}"),
            ):
                values[f"{v}_{m}{key}"] = (None if g[m] is None else g[m][col], fmt)
    return vt, gains, values


# -- robustness: ALM' without the test people's documents ---------------------------------------------

#: the method label of APD with the ALM' fine-tuned without the test people's documents
LEFT_OUT = "APD, test people left out"


def left_out_model(fam, built, used, *, scale: str, seed: int = 0):
    """The ALM' the book uses (``used``: an :class:`apd.amateur.pipeline.APDResult`, its variant and lambda3),
    trained again on the fine-tuning text without the test people's documents
    (:func:`apd.amateur.runs.finetune_texts` with ``leave_out``), and the values saying how much text
    that removes; ``(None, values)`` for a Hub family, which has no people. Cached like every run."""
    if built is None:
        return None, {k: (None, "{:,}") for k in ("left_out_docs", "left_out_docs_all", "left_out_people")}
    test = sorted(n for n, side in dev_test_people(built.corpus.world, seed).items() if side == "test")
    result = apd_model(
        fam, built, scale=scale, seed=seed, variant=used.variant, lambda3=used.lambda3, leave_out=test, progress=False
    )
    n_all, n_kept = len(finetune_texts(fam, built)), len(finetune_texts(fam, built, test))
    return result, {
        "left_out_docs": (n_all - n_kept, "{:,}"),
        "left_out_docs_all": (n_all, "{:,}"),
        "left_out_people": (len(test), "{:,}"),
    }


#: the robustness table's rows: label -> method of the test frame
_ROBUST_ROWS = {"APD, every document": "APD", "APD, test people left out": LEFT_OUT}


def robustness_shown(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`robustness`'s table as the text shows it: each gain over CD beside its standard error in
    one column, so that it fits the page.

    Example:
        >>> t = pd.DataFrame({"1/T (dev)": [0.5], "KL": [0.7], "KL gain over CD": [0.1], "KL gain se": [0.02],
        ...                   "gold -log(p+0.01)": [1.0], "gain over CD": [0.0], "gain se": [0.01]}, index=["APD"])
        >>> robustness_shown(t).columns.tolist()
        ['1/T (dev)', 'KL', 'KL gain over CD ± se', 'gold -log(p+0.01)', 'its gain over CD ± se']
    """
    out = table[["1/T (dev)", "KL"]].copy()
    out["KL gain over CD ± se"] = [plus_minus(g, e) for g, e in zip(table["KL gain over CD"], table["KL gain se"])]
    out["gold -log(p+0.01)"] = table["gold -log(p+0.01)"]
    out["its gain over CD ± se"] = [plus_minus(g, e) for g, e in zip(table["gain over CD"], table["gain se"])]
    return out


def robustness(test_frame: Optional[pd.DataFrame], knobs: dict) -> tuple[Optional[pd.DataFrame], Values]:
    """APD with the ALM' fine-tuned on every document and with the one fine-tuned without the test
    people's documents (:data:`LEFT_OUT`), each at its dev-best 1/T, against CD on the test questions
    (paired, standard errors over people), and the second's KL minus the first's (``left_out_shift``:
    positive when leaving the test people out moves APD away from the truth), with its verdict
    (:func:`apd.evaluation.ablations.verdict`, 1.96 standard errors) as the booleans the prose's tags
    read: ``left_out_away``, ``left_out_closer``, ``left_out_same``.

    Example:
        >>> f = pd.DataFrame([dict(method=m, knob=1.0, item=i, person=i // 2, bucket="head", nll=1.0,
        ...                        kl=kl + (0.01 * i if m == LEFT_OUT else 0.0))
        ...                   for i in range(8) for m, kl in (("CD", 0.8), ("APD", 0.7), (LEFT_OUT, 0.7))])
        >>> table, values = robustness(f, {"CD": 1.0, "APD": 1.0, LEFT_OUT: 1.0})
        >>> list(table.index), values["left_out_shift_pm"][0], values["left_out_away"][0], values["left_out_same"][0]
        (['APD, every document', 'APD, test people left out'], '+0.035 ± 0.013', True, False)
    """
    keys = ("left_out_inv_T", "left_out_kl", "left_out_kl_gain", "left_out_kl_gain_se", "left_out_shift")
    if test_frame is None or LEFT_OUT not in set(test_frame["method"]):
        values: Values = {k: (None, "{:.4f}") for k in keys}
        values["left_out_shift_pm"] = (None, "{}")
        values.update({k: (False, None) for k in ("left_out_away", "left_out_closer", "left_out_same")})
        return None, values
    rows = {label: (m, knobs[m]) for label, m in _ROBUST_ROWS.items()}
    gains = {
        m: paired_table(test_frame, rows, ("CD", knobs["CD"]), m, by=None, cluster="person") for m in ("kl", "nll")
    }
    table = pd.DataFrame(
        {
            "1/T (dev)": [knobs[m] for m in _ROBUST_ROWS.values()],
            "KL": gains["kl"]["mean"],
            "KL gain over CD": gains["kl"]["gain"],
            "KL gain se": gains["kl"]["gain_se"],
            "gold -log(p+0.01)": gains["nll"]["mean"],
            "gain over CD": gains["nll"]["gain"],
            "gain se": gains["nll"]["gain_se"],
        },
        index=list(_ROBUST_ROWS),
    )
    shift = paired_methods(test_frame, (LEFT_OUT, knobs[LEFT_OUT]), ("APD", knobs["APD"]), "kl", cluster="person")
    g = gains["kl"].loc["APD, test people left out"]
    word = verdict(shift.mean, shift.se, z=1.96)
    return table, {
        "left_out_inv_T": (knobs[LEFT_OUT], "{:g}"),
        "left_out_kl": (g["mean"], "{:.4f}"),
        "left_out_kl_gain": (g["gain"], "{:+.4f}"),
        "left_out_kl_gain_se": (g["gain_se"], "{:.4f}"),
        "left_out_shift": (shift.mean, "{:+.4f}"),
        "left_out_shift_pm": (plus_minus(shift.mean, shift.se), "{}"),
        "left_out_away": (word == "worse", None),
        "left_out_closer": (word == "better", None),
        "left_out_same": (word == "tie", None),
    }


def regime(
    profile: str, gains: Optional[dict], variant_used: str, variant_names
) -> tuple[Optional[pd.DataFrame], Values]:
    """Per frequency bucket, CD's plain mean KL and each variant's KL gain over CD ± se, averaged per
    person (``gains``: :func:`variants_against_cd`'s), beside the family chapter's shares of rising gold
    curves and of those flattening (:func:`apd.report.findings.family_saturation`); for the variant the
    book uses, the gains, the bucket where it is highest, and which buckets' gains differ from zero after Holm's correction
    (``regime_<bucket>_signif``; ``regime_none_signif`` when none does; all False without gains); the bucket
    whose rising curves flatten most (``regime_flattest_bucket``) and whether the gain is highest there
    (``regime_best_is_flattest``; False without gains or shares)."""
    sat = family_saturation(profile)
    table = None
    if gains is not None:
        kl = gains["kl"]
        table = pd.DataFrame(index=list(BUCKETS))
        if sat is not None:
            table["gold curves rising (family)"] = sat["share rising"].reindex(table.index)
            table["of which flattening (family)"] = sat["share flattening (of rising)"].reindex(table.index)
        table["test questions"] = [int(kl.loc[variant_used, f"n_{b}"]) for b in table.index]
        table["CD KL"] = [float(gains["cd_kl"].get(b, np.nan)) for b in table.index]  # a plain mean over questions
        for v in variant_names:
            table[f"{v}: gain"] = [kl.loc[v, f"gain_{b}"] for b in table.index]
            table[f"{v}: se"] = [kl.loc[v, f"gain_{b}_se"] for b in table.index]
    have, flat_known = table is not None, table is not None and sat is not None
    gain, se = f"{variant_used}: gain", f"{variant_used}: se"
    values: Values = {}
    for b in BUCKETS:
        values[f"regime_{b}_gain"] = (table.loc[b, gain] if have else None, "{:+.4f}")
        values[f"regime_{b}_gain_se"] = (table.loc[b, se] if have else None, "{:.4f}")
        values[f"regime_{b}_flat"] = (table.loc[b, "of which flattening (family)"] if flat_known else None, "{:.0%}")
    values["regime_best_bucket"] = (table[gain].idxmax() if have else None, "{}")
    flattest = table["of which flattening (family)"].idxmax() if flat_known else None
    values["regime_flattest_bucket"] = (flattest, "{}")
    values["regime_best_is_flattest"] = (have and flat_known and table[gain].idxmax() == flattest, None)
    values["regime_flat_order"] = (
        None
        if not flat_known
        else ", ".join(table["of which flattening (family)"].sort_values(ascending=False).index),
        "{}",
    )
    # three buckets, three tests: Holm's correction keeps the chance of any false "significant" at 5%
    pv = [p_two_sided(table.loc[b, gain], table.loc[b, se]) if have else float("nan") for b in BUCKETS]
    signif = [b for b, ok in zip(BUCKETS, holm(pv)) if ok]
    values.update({f"regime_{b}_p": (p, "{:.3g}") for b, p in zip(BUCKETS, pv)})
    values.update({f"regime_{b}_signif": (b in signif, None) for b in BUCKETS})
    values["regime_none_signif"] = (have and not signif, None)
    return table, values


# -- held-out text ---------------------------------------------------------------------------------


def text_summary(
    tframe: pd.DataFrame, knobs: dict, world: bool, inv_T_grid, fly: bool, label_of: dict
) -> tuple[pd.DataFrame, Optional[float], Values]:
    """The next-token -log(p + 0.01) on held-out text per method row (the variants aside), the on-the-fly
    w used (chosen on the world's dev questions, or without a ``world`` the best here) and the values:
    the expert, the best CD and APD over the grid, APD at T = 1, on the fly, and the on-the-fly fit
    minus the best APD paired over positions."""
    w_text = knobs.get("APD on the fly") if world else best_knobs(tframe, "nll").get("APD on the fly")
    core = tframe[~tframe["method"].isin(list(label_of.values()))]
    ttab = bucket_summary(core, "nll", by=None, knobs={"APD on the fly": w_text} if fly else None)
    elm = quote(ttab, "ELM")
    cd_best = min(quote(ttab, method_label("CD", v)) for v in inv_T_grid)
    apd_best = min(quote(ttab, method_label("APD", v)) for v in inv_T_grid)
    apd1 = quote(ttab, method_label("APD", 1.0))
    fly_t = quote(ttab, method_label("APD on the fly", w_text)) if fly else float("nan")
    values: Values = {"text_outside": (float(tframe.loc[tframe["method"] == "ELM", "nll"].isna().mean()), None)}
    values.update(
        {
            f"text_{k}": (v, "{:.3f}")
            for k, v in (("elm", elm), ("cdbest", cd_best), ("apdbest", apd_best), ("apd1", apd1), ("fly", fly_t))
        }
    )
    # paired over positions: the on-the-fly fit's nll minus the best APD's (positive: APD is better)
    apd_knob = min(inv_T_grid, key=lambda v: quote(ttab, method_label("APD", v)))
    rt = paired_methods(tframe, ("APD on the fly", w_text), ("APD", apd_knob), "nll") if fly else None
    values.update(
        text_fly_gain=(rt.mean if rt else None, "{:.4f}"), text_fly_gain_se=(rt.se if rt else None, "{:.4f}")
    )
    return ttab, w_text, values


def plot_text(ttab: pd.DataFrame, inv_T_grid, fly_knob: Optional[float]):
    """:func:`draw_sweep` of the held-out text's loss (:func:`text_summary`'s table); the figure."""
    fig, ax = figure(height=3.6)
    draw_sweep(ax, ttab, "all", inv_T_grid, fly_knob)
    ax.set_ylabel("next-token -log(p + 0.01) (nats)")
    ax.set_title("Held-out text (lower is better)")
    legend(ax)
    return fig


def text_variants(
    tframe: pd.DataFrame, knobs: dict, world: bool, label_of: dict
) -> tuple[pd.DataFrame, pd.DataFrame, Values]:
    """Every variant on held-out text at its 1/T chosen on the world's dev questions (without a
    ``world``: the best 1/T here), paired over positions with CD chosen the same way: the table, its
    columns as shown, and the values."""
    tk = knobs if world else best_knobs(tframe, "nll")
    gain = paired_table(
        tframe, {v: (label, tk[label]) for v, label in label_of.items()}, ("CD", tk["CD"]), "nll", by=None
    )
    values: Values = {}
    for v in label_of:
        values.update(
            {
                f"{v}_text_nll": (gain.loc[v, "mean"], "{:.4f}"),
                f"{v}_text_gain": (gain.loc[v, "gain"], "{:+.4f}"),
                f"{v}_text_gain_se": (gain.loc[v, "gain_se"], "{:.4f}"),
            }
        )
    values["text_cd_knob"] = (tk["CD"], "{:g}")
    shown = gain[["knob", "mean", "gain", "gain_se", "n"]].rename(
        columns={
            "knob": "1/T",
            "mean": "-log(p + 0.01)",
            "gain": "CD minus variant",
            "gain_se": "se",
            "n": "positions",
        }
    )
    return gain, shown, values


# -- the headline ----------------------------------------------------------------------------------

Number = Optional[float | int | str]  # a glued value: a number, or the text a missing one reads as ("n/a")


@dataclass(frozen=True)
class ApdHeadline(ChapterResult):
    """The APD chapter's headline numbers: what other chapters (through :meth:`ChapterResult.load`),
    the claims (:mod:`apd.report.claims`) and the findings (:mod:`apd.report.findings`) read from
    ``results/<profile>/apd.json``."""

    STEM = "apd"

    n_variants: int  # variants of ALM' trained (apd.amateur.variants.VARIANTS)
    engaged_list: str  # the variants that pass every mechanism gate, "none of them" if none
    variant_used: str  # the variant every chapter uses ("release", "conditioned", "distilled")
    variant_used_note: str  # the ALM' every chapter uses, in words (apd.amateur.pipeline.VariantSelection.note)
    gate_engaged: int  # 1 when that ALM' passes every mechanism gate
    gate_reason: str  # which of its gates fail ("...: all gates pass" if none)
    gate_verdict: str  # its gates' verdict in words ("engaged (...)" / "not engaged (...)")
    release_gate_engaged: int  # 1 when the release configuration passes every gate
    release_gate_reason: str  # the release configuration's failed gates
    distilled_toward_expert: float  # the distilled variant's APD between CD at T = 1 (0) and the expert (1)
    distilled_l1_curve: float  # the distilled variant's gate L1, the family's noise in sample (apd.evaluation.noise)
    n_test_items: int  # world questions about the test people (0 for a Hub family)
    kl_elm: Number  # the expert's KL(truth || method) on the test questions, nats
    kl_cd: Number  # CD's, at its dev-best 1/T
    kl_cd_gain: Number  # the expert's KL minus CD's, paired (the positive control)
    kl_cd_gain_se: Number  # its standard error over people
    kl_apd_gain: Number  # CD's KL minus APD's, paired over the test questions, nats
    kl_apd_gain_se: Number  # its standard error over people
    kl_apd_gain_mde: Number  # the smallest difference this comparison detects (5% test, 80% power)
    kl_apd_gain_n: Number  # test questions the pair defines
    kl_apd_gain_people: Number  # people those questions are about (the clusters of the se)
    kl_fly_gain: Number  # APD on the fly's KL minus APD's, paired
    kl_fly_gain_se: Number  # its standard error over people
    regime_head_gain: Number  # CD's KL minus APD's on head questions
    regime_torso_gain: Number  # ... on torso questions
    regime_tail_gain: Number  # ... on tail questions
    regime_head_flat: Number  # share of head questions' rising gold curves that flatten (family chapter)
    regime_torso_flat: Number  # ... of torso questions'
    regime_tail_flat: Number  # ... of tail questions'
    text_apdbest: Number  # held-out text: the best APD's -log(p + 0.01) over the 1/T grid
    text_fly: Number  # held-out text: APD on the fly's
    text_fly_gain: Number  # held-out text: on the fly minus the best APD, paired over positions
    text_fly_gain_se: Number  # its standard error over positions


def headline(values: dict) -> ApdHeadline:
    """The :class:`ApdHeadline` of a chapter's results ``values`` (a run's ``values`` or a loaded
    ``apd.json``); raises :class:`apd.chapters.gluing.MissingResultError` (a KeyError) naming every
    missing key.

    Example:
        >>> import dataclasses
        >>> h = headline({f.name: 0 for f in dataclasses.fields(ApdHeadline)})
        >>> h.kl_apd_gain
        0
    """
    return ApdHeadline.from_results(values)


#: What :func:`gate_verdict` reads when the APD chapter has not run under the profile.
GATE_NOT_MEASURED = "not measured (the APD chapter has not run)"


def gate_verdict(profile: str) -> str:
    """The APD chapter's mechanism-gate verdict under ``profile`` (:attr:`ApdHeadline.gate_verdict`:
    ``"engaged (...)"`` or ``"not engaged (...)"``, see :mod:`apd.amateur.gates`), for the chapters
    that use its ALM'; :data:`GATE_NOT_MEASURED` when that chapter has not run.

    Example:
        >>> import os, tempfile
        >>> os.environ["APD_RESULTS_DIR"] = tempfile.mkdtemp()
        >>> gate_verdict("nowhere")
        'not measured (the APD chapter has not run)'
        >>> del os.environ["APD_RESULTS_DIR"]
    """
    h = ApdHeadline.load(profile, missing_ok=True)
    return GATE_NOT_MEASURED if h is None else str(h.gate_verdict)


def glue_near_expert(run, profile: str) -> dict:
    """Glue what the APD chapter's results (``results/<profile>/apd.json``) say about any APD-against-CD
    comparison: whether its mechanism gates find ALM' collapsed onto the expert (``apd_near_expert``:
    the failed "not trivial" gate with APD nearer the expert than CD, ``Gates.on_expert``), with the
    share of held-out tokens whose asymptote sits at the expert's probability (``apd_expert_share``),
    CD's share (``apd_expert_share_cd``), APD's place between CD at T = 1 (0) and the expert (1)
    (``apd_toward_expert``) and the tolerance (``apd_collapse_tol``); missing where the APD chapter did
    not record them. Returns the APD chapter's results ({} when it has not run)."""
    apd = load_results(profile, "apd") if chapter_ran(profile, "apd") else {}

    def number(key):
        v = apd.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    near = number("gate_collapsed") is not None and apd.get("gate_on_expert") == 1
    run.glue("apd_near_expert", bool(near))
    for name, key, spec in (
        ("apd_expert_share", "gate_collapsed", "{:.0%}"),
        ("apd_expert_share_cd", "gate_collapsed_cd", "{:.0%}"),
        ("apd_toward_expert", "gate_toward_expert", "{:.2f}"),
        ("apd_collapse_tol", "gate_collapse_tol", "{:g}"),
    ):
        run.glue_text(name, number(key) if near else None, spec)
    return apd


def alm_prime_words(res) -> str:
    """The ALM' of ``apd_model(..., variant="engaged")`` (an :class:`apd.amateur.pipeline.APDResult`) in
    words: its choice (:attr:`~apd.amateur.pipeline.VariantSelection.note`) and its lambda3.

    Example:
        >>> from types import SimpleNamespace
        >>> note = "the release configuration, as a stand-in: none of the 3 variants passes every mechanism gate"
        >>> alm_prime_words(SimpleNamespace(variant="release", lambda3=0.2, selection=SimpleNamespace(note=note)))
        'the release configuration, as a stand-in: none of the 3 variants passes every mechanism gate; lambda3 = 0.2'
    """
    note = res.selection.note if getattr(res, "selection", None) is not None else f"the {res.variant} variant"
    return f"{note}; lambda3 = {res.lambda3:g}"
