"""The known-answer chapter's summaries, tables and figures (``notebooks/known_answer.ipynb``).

**The known-answer condition** (the precondition of the verdicts on APD's claims C3 to C8) is read
on the world, where the truth is known: on the questions about the book's **dev** people, is APD on
the fly's fitted asymptote, mixed with p_ELM at the weight the APD chapter chose on dev
(:func:`fitter_settings`), closer to the true answer distribution than p_ELM itself? Total variation
over the expert's top 20, paired per question, averaged per person, a 95% Student t interval over
people (:func:`apd.evaluation.known_answer.world_condition`); it holds when the interval lies above 0.
:func:`dev_questions` scores the dev questions, :func:`world_table` reads the condition at that
weight and at w = 1, per frequency bucket, and :func:`condition_values` gives the results keys.

**Synthetic families** are context: the recovery table (does the APD objective identify the
asymptote; errors are median ``|c_hat - c_true|`` in probability units, a *ratio* an estimator's
error over p_ELM's on the same tokens) and the truth-like families
(:func:`apd.evaluation.known_answer.truthlike_table`: one-hot and near-one-hot asymptotes, noise at
this family's held-out residual and over a grid, :func:`truthlike_values`, :func:`plot_truthlike`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pandas as pd
import torch

from apd.amateur.tuning import scoring_threads
from apd.base.memo import memoized
from apd.chapters.apd import ApdHeadline
from apd.evaluation import known_answer as ka
from apd.evaluation.known_answer import LABELS
from apd.evaluation.noise import HELD_OUT, IN_SAMPLE, family_noise
from apd.family.knowledge import score_world_qa
from apd.family.select import get_family
from apd.report.plots import COLORS, PALETTE, figure, legend, wrap
from apd.report.results import chapter_ran, load_results
from apd.report.tables import yes_no
from apd.world import truth as wt
from apd.world.world import BUCKETS

#: The modules whose code computes the synthetic families' tables (:func:`recovery`, :func:`truthlike`):
#: an edit to any of them recomputes the cached tables.
TABLE_CODE = (
    "apd.evaluation.known_answer",
    "apd.core.curves",
    "apd.core.stats",
    "apd.amateur.objective",
    "apd.amateur.config",
    "apd.family.pico",
    "apd.world.truth",
)


def recovery(size: str, **kwargs) -> pd.DataFrame:
    """:func:`apd.evaluation.known_answer.recovery_table` (``size`` and its keyword arguments), computed
    once per arguments and code (:func:`apd.base.memo.memoized`): a rerun of the chapter reads it back.

    Example:
        >>> t = recovery("smoke", grids=["pico"], regimes=["saturating"], estimators=["p_elm"], pico_scale="smoke")
        >>> t["estimator"].tolist(), t.equals(recovery("smoke", grids=["pico"], regimes=["saturating"],
        ...                                            estimators=["p_elm"], pico_scale="smoke"))
        (['p_elm'], True)
    """
    parts = {"size": size, **kwargs, "torch": torch.__version__}
    return memoized("known-answer-recovery", parts, TABLE_CODE, lambda: ka.recovery_table(size, **kwargs))


def truthlike(x, noises, **kwargs) -> pd.DataFrame:
    """:func:`apd.evaluation.known_answer.truthlike_table` (``x``, ``noises`` and its keyword arguments),
    computed once per arguments and code, as :func:`recovery`."""
    parts = {"x": [float(v) for v in x], "noises": [float(v) for v in noises], **kwargs, "torch": torch.__version__}
    return memoized("known-answer-truthlike", parts, TABLE_CODE, lambda: ka.truthlike_table(x, noises, **kwargs))


#: An estimator "beats p_ELM" in a cell of the recovery table when its median error is below this
#: share of p_ELM's on the same tokens (at least 5% lower).
BEAT = 0.95
#: Rows that are references, not estimators: the expert's own probability and the true asymptote.
REFERENCES = ("p_elm", "oracle")


def recovery_summary(table: pd.DataFrame, beat: float = BEAT) -> dict[str, Any]:
    """The recovery table's glued values (``value`` or ``(value, fmt)``, see
    :func:`apd.chapters.gluing.glue_values`): the cells beaten, the best estimator, and the
    ratio ranges of the joint objective and the fitter.

    ``table``: :func:`apd.evaluation.known_answer.recovery_table`'s frame (``attrs['config']`` kept).

    Example:
        >>> s = recovery_summary(tiny_recovery_table())
        >>> s["ka_n_beating"], s["ka_n_cells"], s["ka_best_estimator"]
        (1, 2, 'on-the-fly fitter, tuned settings')
    """
    cfg = table.attrs["config"]
    cells = [(g, r) for g in cfg["grids"] for r in cfg["regimes"]]
    ratio = table.assign(ratio=table.median_abs_error / table.p_elm_error)
    estimators = ratio[~ratio.estimator.isin(REFERENCES)]
    beats = estimators[estimators.ratio < beat]
    best = estimators.sort_values("ratio").iloc[0]
    joint, cond_long, fitted = (
        ratio[ratio.estimator == e].ratio for e in ("joint_release", "joint_cond_long", "fit_tuned")
    )
    alive = table[table.estimator == "joint_release"]
    return {
        "ka_positions": cfg["n_positions"],
        "ka_tokens": cfg["n_positions"] * cfg["k"],
        "ka_fit_iterations": cfg["fit_iterations"],
        "ka_release_steps": cfg["release_steps"],
        "ka_long_steps": cfg["long_steps"],
        "ka_beat_margin": f"{1 - beat:.0%}",
        "ka_n_cells": len(cells),
        "ka_n_beating": int(beats.groupby(["grid", "regime"]).ngroups),
        "ka_any_beating": len(beats) > 0,
        "ka_best_estimator": LABELS[best.estimator],
        "ka_best_ratio": (best.ratio, "{:.2f}"),
        "ka_best_cell": f"{best.grid}, {best.regime.replace('_', ' ')}",
        "ka_joint_ratio_min": (joint.min(), "{:.2f}"),
        "ka_joint_ratio_max": (joint.max(), "{:.2f}"),
        "ka_cond_long_ratio_min": (cond_long.min(), "{:.2f}"),
        "ka_cond_long_ratio_max": (cond_long.max(), "{:.2f}"),
        "ka_joint_collapsed_max": (table[table.estimator.str.startswith("joint")].share_collapsed.max(), "{:.0%}"),
        "ka_oracle_collapsed_max": (table[table.estimator == "oracle"].share_collapsed.max(), "{:.0%}"),
        "ka_release_alive_pythia": (alive[alive.grid == "pythia"].curve_alive.max(), "{:.2f}"),
        "ka_release_alive_pico": (alive[alive.grid == "pico"].curve_alive.max(), "{:.2f}"),
        "ka_fit_ratio_min": (fitted.min(), "{:.2f}"),
        "ka_fit_ratio_max": (fitted.max(), "{:.2f}"),
        "ka_minutes": (table.seconds.sum() / 60, "{:.1f}"),
    }


def cell_records(table: pd.DataFrame) -> dict[str, float]:
    """``err_<estimator>_<grid>_<regime>`` (median error, 6 decimals) and ``collapsed_...`` (share,
    4 decimals) for every row of the recovery table, for the results JSON.

    Example:
        >>> sorted(cell_records(tiny_recovery_table()))[:2]
        ['collapsed_fit_tuned_pico_saturating', 'collapsed_fit_tuned_pico_still_rising']
    """
    out = {}
    for row in table.itertuples():
        out[f"err_{row.estimator}_{row.grid}_{row.regime}"] = round(row.median_abs_error, 6)
        out[f"collapsed_{row.estimator}_{row.grid}_{row.regime}"] = round(row.share_collapsed, 4)
    return out


def by_cell(table: pd.DataFrame, values: str = "median_abs_error") -> pd.DataFrame:
    """``values`` with one row per estimator (its label) and one column per "grid, regime" cell.

    Example:
        >>> list(by_cell(tiny_recovery_table()).columns)
        ['pico, saturating', 'pico, still rising']
    """
    wide = table.pivot_table(index="estimator", columns=["grid", "regime"], values=values, sort=False)
    wide.index = [LABELS[e] for e in wide.index]
    wide.columns = [f"{g}, {r.replace('_', ' ')}" for g, r in wide.columns]
    return wide


def diagnostics(table: pd.DataFrame) -> pd.DataFrame:
    """Curve alive and share collapsed of the joint, diagnostic and fitter rows, mean over regimes,
    one column per (measure, grid).

    Example:
        >>> diagnostics(tiny_recovery_table()).shape
        (3, 2)
    """
    diag = table[table.estimator.str.startswith(("joint", "diag", "fit"))]
    out = diag.pivot_table(
        index="estimator", columns="grid", values=["curve_alive", "share_collapsed"], aggfunc="mean", sort=False
    )
    out.index = [LABELS[e] for e in out.index]
    out.columns = [f"{m.replace('_', ' ')}, {g} (mean of regimes)" for m, g in out.columns]
    return out


def plot_traces(table: pd.DataFrame):
    """The joint objective's median error against the optimisation step, one panel per grid and
    regime, with p_ELM's error dashed; returns the figure.

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> fig = plot_traces(tiny_recovery_table())
    """
    cfg, traces = table.attrs["config"], table.attrs["traces"]
    nrows, ncols = len(cfg["grids"]), len(cfg["regimes"])
    fig, axes = figure(ncols=ncols, nrows=nrows, height=2.6 * nrows + 1.4, squeeze=False, sharex=True)
    for i, grid in enumerate(cfg["grids"]):
        for j, regime in enumerate(cfg["regimes"]):
            ax = axes[i][j]
            names = [k[0] for k in traces if k[1] == grid and k[2] == regime]
            for n, name in enumerate(names):
                t = traces[(name, grid, regime)]
                ax.plot(t["step"], t["median_abs_error"], color=PALETTE[n % len(PALETTE)], label=LABELS[name])
            cell = table[(table.grid == grid) & (table.regime == regime)]
            base = cell[cell.estimator == "p_elm"].median_abs_error.iloc[0]
            ax.axhline(base, color=COLORS["elm"], ls="--", lw=1.2, label="p_ELM")
            ax.set_title(f"{grid}, {regime.replace('_', ' ')}")
            if i == nrows - 1:
                ax.set_xlabel("optimisation step")
            if j == 0:
                ax.set_ylabel("median |c_hat - c_true|")
    handles, labels = axes[0][0].get_legend_handles_labels()
    labels = [wrap(label, 34) for label in labels]
    legend(fig, handles=handles, labels=labels, loc="outside lower center", ncols=2)
    return fig


# -- the known-answer condition on the world ---------------------------------------------------------

#: The candidates of APD on the fly: the expert's top k (the paper's k).
TOP_K = 20


@dataclass(frozen=True)
class FitterSettings:
    """How the fitter is run, as the APD chapter ran it under this profile: ``w`` its dev-chosen
    weight (``fly_w``; None where that chapter chose none), ``iterations`` its Adam steps
    (``fly_iterations``; None: not recorded), ``world``: whether that chapter scored world questions
    (False for a Hub family, which has no world), ``ran``: whether that chapter has run."""

    w: Optional[float]
    iterations: Optional[int]
    world: bool
    ran: bool


def _number(v) -> Optional[float]:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def fitter_settings(values: Optional[dict[str, Any]]) -> FitterSettings:
    """:class:`FitterSettings` from the APD chapter's results ``values`` (None: it has not run; see
    :func:`apd_fitter`).

    Example:
        >>> fitter_settings({"fly_w": 0.05, "fly_iterations": 400, "n_dev_items": 760})
        FitterSettings(w=0.05, iterations=400, world=True, ran=True)
        >>> fitter_settings({"fly_w": None, "n_dev_items": 0}).world, fitter_settings(None).ran
        (False, False)
    """
    if values is None:
        return FitterSettings(None, None, False, False)
    w, it = _number(values.get("fly_w")), _number(values.get("fly_iterations"))
    w = w if w is not None and 0 < w <= 1 else None
    return FitterSettings(
        w, None if it is None else int(it), bool((_number(values.get("n_dev_items")) or 0) > 0), True
    )


def apd_fitter(profile: str) -> FitterSettings:
    """:func:`fitter_settings` of ``results/<profile>/apd.json`` (not run: ``ran`` False).

    Example:
        >>> import os, tempfile
        >>> os.environ["APD_RESULTS_DIR"] = tempfile.mkdtemp()
        >>> apd_fitter("nowhere").ran
        False
        >>> del os.environ["APD_RESULTS_DIR"]
    """
    return fitter_settings(load_results(profile, "apd") if chapter_ran(profile, "apd") else None)


def world_available(settings: FitterSettings) -> tuple[bool, str]:
    """Whether this build's family has a world to read the condition on, and why not: the APD
    chapter (which runs before this one) scored world questions, so the family is a pico family,
    cached under this profile. Nothing is trained or guessed here.

    Example:
        >>> world_available(fitter_settings(None))
        (False, 'the APD chapter has not run under this profile (run it first)')
    """
    if not settings.ran:
        return False, "the APD chapter has not run under this profile (run it first)"
    if not settings.world:
        return False, "this build's family has no world whose truth is known (a Hub family)"
    return True, ""


@dataclass
class DevQuestions:
    """The world's questions about the dev people, scored by every member: ``logprobs`` (N, B, V)
    (smallest first), ``truth`` (B, V) the true next-token distributions, ``ids`` (B, k) the
    expert's top k, ``people`` and ``buckets`` (B,), ``log_sizes`` (N,)."""

    logprobs: np.ndarray
    truth: np.ndarray
    ids: np.ndarray
    people: np.ndarray
    buckets: np.ndarray
    log_sizes: np.ndarray


def dev_questions(pico_scale: str, seed: int = 0, k: int = TOP_K, device: str = "auto") -> DevQuestions:
    """Every world question about the dev people of the book's split (``seed``:
    :func:`apd.world.truth.dev_test_split`, never a test person), scored by every member of the pico
    family of ``pico_scale`` (:func:`apd.get_family`, cached by the family chapter;
    :func:`apd.family.knowledge.score_world_qa`, one torch thread on the CPU)."""

    fam, built = get_family("pico", pico_scale, device=device, progress=False)
    dev, _ = wt.dev_test_split(built.corpus.qa_items, built.corpus.world, seed)
    if not dev:
        raise ValueError("the world has no dev people; raise WorldConfig.n_people.")
    with scoring_threads(fam):
        scores = score_world_qa(fam, built.corpus.world, dev)
    return DevQuestions(
        scores.logprobs,
        scores.truth,
        wt.topk_ids(scores.logprobs[-1], k),
        np.array([it.person for it in dev]),
        np.array([it.bucket for it in dev]),
        np.asarray(fam.log_sizes, dtype=np.float64),
    )


def weight_label(w: float, source: str) -> str:
    """A row label of the world table.

    Example:
        >>> weight_label(0.05, "chosen on the dev people"), weight_label(1.0, "")
        ('w = 0.05 (chosen on the dev people)', 'w = 1 (the asymptote alone)')
    """
    return f"w = {w:g} ({source})" if w != 1.0 else "w = 1 (the asymptote alone)"


#: Where the weight comes from (:func:`choose_weight`).
W_CHOSEN_HERE = "chosen on the dev people: the lowest mean total variation over the on-the-fly grid"


def choose_weight(dq: DevQuestions, settings: FitterSettings, iterations: int) -> tuple[float, str]:
    """The fitter's weight, chosen by the criterion the condition reads: on the dev questions ``dq``,
    the lowest mean total variation to the truth over :data:`apd.core.curves.ON_THE_FLY_WEIGHTS`
    (:func:`apd.evaluation.known_answer.weight_on_dev`; one fit of ``iterations`` steps), and where it
    comes from (:data:`W_CHOSEN_HERE`). The APD chapter's weight (``settings.w``) is chosen by dev KL,
    for APD's own scores, and does not decide this one.
    """
    p_elm, p_ap, _ = wt.on_the_fly_topk(dq.logprobs, dq.log_sizes, dq.ids, iterations=iterations)
    return ka.weight_on_dev(p_elm, p_ap, wt.at(dq.truth, dq.ids), dq.people), W_CHOSEN_HERE


def world_table(dq: DevQuestions, w: float, iterations: int, w_source: str = "") -> tuple[pd.DataFrame, dict]:
    """The condition on the dev questions ``dq`` at the weight ``w`` and at w = 1, over all
    questions and per frequency bucket (a bucket with questions about fewer than 2 people is left
    out): ``(table, {weight: the Condition over all questions})``, the weights ``w`` and 1. The
    fitter runs once (:func:`apd.world.truth.on_the_fly_topk`, ``iterations`` steps). Columns:
    weight, bucket, tv_elm, tv_fitter, ratio, gain, gain_se, ci_low, ci_high, people, items, passes."""

    p_elm, p_ap, _ = wt.on_the_fly_topk(dq.logprobs, dq.log_sizes, dq.ids, iterations=iterations)
    rows, overall = [], {}
    for wv in dict.fromkeys([float(w), 1.0]):
        for bucket in ("all", *BUCKETS):
            sel = np.ones(len(dq.people), bool) if bucket == "all" else dq.buckets == bucket
            if len(set(dq.people[sel])) < 2:
                continue
            c = ka.world_condition(
                dq.logprobs[:, sel],
                dq.log_sizes,
                dq.truth[sel],
                dq.ids[sel],
                dq.people[sel],
                wv,
                asymptotes=(p_elm[sel], p_ap[sel]),
            )
            if bucket == "all":
                overall[wv] = c
            rows.append(
                dict(
                    weight=weight_label(wv, w_source),
                    bucket=bucket,
                    **c.columns(),
                    people=c.n_groups,
                    items=c.n_items,
                    passes=c.passes,
                )
            )
    return pd.DataFrame(rows), overall


def condition_values(cond, why_not: str = "", at_one=None) -> dict[str, Any]:
    """The world condition's results keys and glue (``value`` or ``(value, fmt)``,
    :func:`apd.chapters.gluing.glue_values`): ``ka_world_gain``, ``ka_world_gain_se``,
    ``ka_world_n_people``, ``ka_world_ratio``, ``ka_world_w``, ``ka_condition_passes`` (1 or 0),
    ``ka_condition_reason``, ``ka_condition_holds`` (a bool, for the prose's conditional cells),
    the interval, and the w = 1 row's (``at_one``, a Condition) as
    ``ka_world1_*``. ``cond`` None: not measured, ``why_not`` says why (the condition is missing, so the claims that
    need it read "not testable here" for a missing result, not for a failed one).

    Example:
        >>> v = condition_values(None, why_not="this build's family has no world")
        >>> v["ka_condition_passes"], v["ka_condition_reason"]
        ((None, '{}'), "not measured: this build's family has no world, so the condition cannot be read")
    """
    if cond is None:
        out: dict[str, Any] = {
            k: (None, f) for k, f in _WORLD_FORMATS.items() if k not in ("ka_world_n_people", "ka_world_w")
        }
        out.update(
            {
                "ka_world_n_people": (None, "{}"),
                "ka_world_w": (None, "{:g}"),
                "ka_condition_passes": (None, "{}"),  # not measured: missing, not failed
                "ka_condition_holds": False,
                "ka_condition_reason": f"not measured: {why_not}, so the condition cannot be read",
            }
        )
        for k in ("gain", "gain_se", "ratio"):
            out[f"ka_world1_{k}"] = (None, _WORLD_FORMATS[f"ka_world_{k}"])
        out["ka_world1_holds"] = False
        return out
    out = {
        "ka_world_gain": (cond.gain, _WORLD_FORMATS["ka_world_gain"]),
        "ka_world_gain_se": (cond.se, _WORLD_FORMATS["ka_world_gain_se"]),
        "ka_world_ci_low": (cond.low, _WORLD_FORMATS["ka_world_ci_low"]),
        "ka_world_ci_high": (cond.high, _WORLD_FORMATS["ka_world_ci_high"]),
        "ka_world_ratio": (cond.ratio, _WORLD_FORMATS["ka_world_ratio"]),
        "ka_world_tv_elm": (cond.tv_elm, _WORLD_FORMATS["ka_world_tv_elm"]),
        "ka_world_tv_fitter": (cond.tv_fitter, _WORLD_FORMATS["ka_world_tv_fitter"]),
        "ka_world_n_items": (cond.n_items, None),
        "ka_world_n_people": cond.n_groups,
        "ka_world_w": (cond.w, "{:g}"),
        "ka_condition_passes": int(cond.passes),
        "ka_condition_holds": bool(cond.passes),
        "ka_condition_reason": cond.reason(),
    }
    one = at_one if at_one is not None else cond
    out.update(
        {
            "ka_world1_gain": (one.gain, _WORLD_FORMATS["ka_world_gain"]),
            "ka_world1_gain_se": (one.se, _WORLD_FORMATS["ka_world_gain_se"]),
            "ka_world1_ratio": (one.ratio, _WORLD_FORMATS["ka_world_ratio"]),
            "ka_world1_holds": bool(one.passes),
        }
    )
    return out


_WORLD_FORMATS = {
    "ka_world_gain": "{:+.4f}",
    "ka_world_gain_se": "{:.4f}",
    "ka_world_ci_low": "{:+.4f}",
    "ka_world_ci_high": "{:+.4f}",
    "ka_world_ratio": "{:.3f}",
    "ka_world_tv_elm": "{:.4f}",
    "ka_world_tv_fitter": "{:.4f}",
    "ka_world_n_items": "{}",
    "ka_world_n_people": "{}",
    "ka_world_w": "{:g}",
}


#: How the condition tables (:func:`world_shown`, :func:`truthlike_shown`) name the columns of
#: :meth:`apd.evaluation.known_answer.Condition.columns` they show.
TV_NAMES = {"tv_elm": "TV, p_ELM", "tv_fitter": "TV, fitter", "ratio": "fitter / p_ELM"}


def world_shown(table: pd.DataFrame) -> pd.DataFrame:
    """The world table as the text shows it: one row per weight and bucket, the verdict first (yes/no),
    the gain's standard error as ``se``. Display only: the saved table keeps its own names.

    Example:
        >>> t = pd.DataFrame(dict(weight=["w = 1 (the asymptote alone)"], bucket=["all"], tv_elm=[0.5],
        ...     tv_fitter=[0.4], ratio=[0.8], gain=[0.1], gain_se=[0.01], ci_low=[0.08], ci_high=[0.12],
        ...     people=[10], items=[30], passes=[True]))
        >>> shown = world_shown(t)
        >>> list(shown.columns)[:2], shown["interval above 0"].iloc[0], "se" in shown
        (['interval above 0', 'TV, p_ELM'], 'yes', True)
    """
    out = table.set_index(["weight", "bucket"])
    out = out.rename(columns={"passes": "interval above 0", "gain_se": "se", **TV_NAMES})
    out["interval above 0"] = out["interval above 0"].map(lambda f: yes_no(f, missing="n/a"))
    cols = ["interval above 0", "TV, p_ELM", "TV, fitter", "fitter / p_ELM", "gain", "se", "people", "items"]
    return out[cols]


# -- truth-like synthetic families ----------------------------------------------------------------------

#: The noise levels (probability units, RMS over tokens) the truth-like figure sweeps.
NOISE_GRID = (0.0, 0.01, 0.02, 0.04, 0.08)
#: The cells of a truth-like table (a cell: one row per weight).
TRUTHLIKE_CELLS = ("asymptote", "regime", "decay")


#: Where the truth-like families' noise comes from (:func:`truthlike_noise`): this family's held-out
#: residual on its dev questions, the APD chapter's in-sample residual, or the chapter's ``noise``.
NOISE_SOURCES = ("held_out", "in_sample", "parameter")


def truthlike_noise(
    held_out: Optional[float], apd_headline: Optional[ApdHeadline], noise: float, use_family: bool = True
) -> tuple[float, str]:
    """The truth-like families' noise sd (probability units) and its source, one of
    :data:`NOISE_SOURCES`: with ``use_family``, this family's held-out residual on the dev questions
    (``held_out``, :func:`apd.evaluation.noise.family_noise` with ``HELD_OUT``) where measured, else
    the APD chapter's in-sample residual (``IN_SAMPLE``) of the distilled variant's fits where that
    chapter measured it, else ``noise``.

    Example:
        >>> truthlike_noise(0.054, None, 0.005), truthlike_noise(None, None, 0.005)
        ((0.054, 'held_out'), (0.005, 'parameter'))
    """
    if use_family and held_out is not None:
        return float(held_out), "held_out"
    measured = None if apd_headline is None else apd_headline.distilled_l1_curve
    sd = family_noise(IN_SAMPLE, gates_l1_curve=measured) if use_family else None
    if sd is not None:
        return sd, "in_sample"
    return float(noise), "parameter"


def noise_values(sd: float, source: str, w: float) -> dict[str, Any]:
    """Glue of the truth-like families' noise: its sd (``ka_family_noise``), one boolean per source
    of :data:`NOISE_SOURCES` (``ka_noise_held_out``, ...; the prose's ``needs:`` tags) and the
    fitter's weight on these families (``ka_synth_w``).

    Example:
        >>> v = noise_values(0.054, "held_out", 0.05)
        >>> v["ka_noise_held_out"], v["ka_noise_parameter"], v["ka_synth_w"]
        (True, False, (0.05, '{:g}'))
    """
    if source not in NOISE_SOURCES:
        raise ValueError(f"noise source {source!r} is none of {NOISE_SOURCES}; take it from truthlike_noise().")
    out: dict[str, Any] = {"ka_family_noise": (sd, "{:.3f}"), "ka_synth_w": (w, "{:g}")}
    out.update({f"ka_noise_{name}": name == source for name in NOISE_SOURCES})
    return out


def held_out_noise(dq: Optional[DevQuestions], iterations: int) -> Optional[float]:
    """:func:`apd.evaluation.noise.family_noise` with ``HELD_OUT`` on the dev questions ``dq`` (None
    without them).

    Example:
        >>> held_out_noise(None, 400) is None
        True
    """
    if dq is None:
        return None
    return family_noise(
        HELD_OUT, member_logprobs=dq.logprobs, log_sizes=dq.log_sizes, ids=dq.ids, iterations=iterations
    )


def truthlike_values(at_noise: pd.DataFrame, sweep: pd.DataFrame, w: float) -> dict[str, Any]:
    """Glue of the truth-like families: the cells (one row each at ``w``) where the fitter at ``w``
    beats p_ELM at this family's noise (``at_noise``), p_ELM's own total variation there and the
    fitted asymptote's alone (w = 1) as a share of it; from the noise ``sweep``, the smallest noise
    at which some cell stops beating p_ELM at ``w`` and the asymptote's largest share without noise.

    Example:
        >>> t = pd.DataFrame(dict(asymptote=["one_hot"] * 2, regime=["saturating"] * 2, decay=["exponential"] * 2,
        ...     noise=[0.0, 0.04], w=[1.0, 1.0], tv_elm=[0.2, 0.3], ratio=[0.5, 1.1], beats=[True, False]))
        >>> v = truthlike_values(t[t.noise == 0.04], t, 1.0)
        >>> v["ka_n_beating_family"], v["ka_synth_first_failing_noise"], v["ka_synth_clean_ratio_max"]
        (0, (0.04, '{:g}'), (0.5, '{:.2f}'))
    """
    at, at_one = at_noise[at_noise.w == float(w)], at_noise[at_noise.w == 1.0]
    failing = sweep[(sweep.w == float(w)) & ~sweep.beats].noise
    clean = sweep[(sweep.w == 1.0) & (sweep.noise == 0.0)].ratio
    return {
        "ka_n_beating_family": int(at.beats.sum()),
        "ka_n_cells_family": int(len(at)),
        "ka_family_beats": bool(at.beats.any()),
        "ka_synth_elm_tv_min": (float(at.tv_elm.min()), "{:.3f}"),
        "ka_synth_elm_tv_max": (float(at.tv_elm.max()), "{:.3f}"),
        "ka_synth_ratio_min": (float(at_one.ratio.min()), "{:.2f}"),
        "ka_synth_ratio_max": (float(at_one.ratio.max()), "{:.2f}"),
        "ka_synth_first_failing_noise": (float(failing.min()) if len(failing) else None, "{:g}"),
        "ka_synth_clean_ratio_max": (float(clean.max()) if len(clean) else None, "{:.2f}"),
    }


def truthlike_shown(table: pd.DataFrame) -> pd.DataFrame:
    """A truth-like table as the text shows it: one row per cell and weight, "gain [95% interval]",
    whether the fitter is closer as yes/no. Display only: the saved table keeps its own names.

    Example:
        >>> t = pd.DataFrame(dict(asymptote=["one_hot"], regime=["still_rising"], decay=["logistic"], noise=[0.05],
        ...     w=[1.0], tv_elm=[0.4], tv_fitter=[0.37], ratio=[0.92], gain=[0.03], ci_low=[0.01], ci_high=[0.05],
        ...     n=[120], beats=[True]))
        >>> row = truthlike_shown(t).iloc[0]
        >>> row["gain [95% interval]"], row["fitter closer"]
        ('+0.0300 [+0.0100, +0.0500]', 'yes')
    """
    out = table.assign(
        asymptote=table.asymptote.str.replace("_", "-"),
        regime=table.regime.str.replace("_", " "),
        interval=[f"{g:+.4f} [{lo:+.4f}, {hi:+.4f}]" for g, lo, hi in zip(table.gain, table.ci_low, table.ci_high)],
    )
    out = out.rename(
        columns={"interval": "gain [95% interval]", "beats": "fitter closer", "n": "positions", **TV_NAMES}
    )
    out["w"] = [f"{v:g}" for v in out["w"]]
    out["fitter closer"] = out["fitter closer"].map(lambda f: yes_no(f, missing="n/a"))
    return out.set_index(["asymptote", "regime", "decay", "w"])[
        ["fitter closer", "gain [95% interval]", "TV, p_ELM", "fitter / p_ELM", "positions"]
    ]


def plot_truthlike(sweep: pd.DataFrame, noise: float, w: float):
    """The fitter's gain over p_ELM (p_ELM's total variation to c_true minus the fitter's, at ``w``)
    against the noise of the truth-like families, one panel per regime, one line per asymptote
    (exponential decay), 95% t intervals as bars; the dashed line marks this family's ``noise``.

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> t = pd.DataFrame(dict(asymptote=["one_hot"] * 2, regime=["saturating"] * 2, decay=["exponential"] * 2,
        ...     noise=[0.0, 0.04], w=[1.0, 1.0], gain=[0.08, 0.01], ci_low=[0.07, -0.01], ci_high=[0.09, 0.03]))
        >>> len(plot_truthlike(t, 0.03, 1.0).axes)
        1
    """
    sw = sweep[(sweep.w == float(w)) & (sweep.decay == "exponential")]
    regimes = list(dict.fromkeys(sw.regime))
    fig, axes = figure(ncols=len(regimes), width=6.9, height=3.4, squeeze=False, sharey=True)
    styles = {"one_hot": ("o", "-", PALETTE[0]), "near_one_hot": ("s", "--", PALETTE[1])}
    for ax, regime in zip(axes[0], regimes):
        for asym, g in sw[sw.regime == regime].groupby("asymptote", sort=False):
            marker, ls, color = styles.get(asym, ("^", ":", PALETTE[2]))
            g = g.sort_values("noise")
            err = np.vstack([g.gain - g.ci_low, g.ci_high - g.gain])
            ax.errorbar(g.noise, g.gain, yerr=err, fmt="none", ecolor=color, capsize=3)
            ax.plot(g.noise, g.gain, marker=marker, ls=ls, color=color, label=asym.replace("_", "-"))
        ax.axhline(0.0, color=COLORS["elm"], lw=1.0)
        ax.axvline(noise, color=COLORS["truth"], ls=":", lw=1.2, label="this family's noise")
        ax.set_title(regime.replace("_", " "))
        ax.set_xlabel("noise sd (probability)")
    axes[0][0].set_ylabel(f"TV gain over p_ELM (w = {w:g})")
    handles, labels = axes[0][0].get_legend_handles_labels()
    legend(fig, handles=handles, labels=labels, loc="outside lower center", ncols=len(labels))
    return fig


def tiny_recovery_table() -> pd.DataFrame:
    """A two-cell recovery table of made-up numbers (p_ELM, the true asymptote, the joint objective
    and the tuned fitter on pico), shaped as :func:`apd.evaluation.known_answer.recovery_table`'s, for
    the examples and tests."""
    rows = []
    for regime, fit_err in (("saturating", 0.008), ("still_rising", 0.012)):
        for est, err, alive in (
            ("p_elm", 0.01, 0.0),
            ("oracle", 0.0, 0.0),
            ("joint_release", 0.02, 0.1),
            ("joint_cond_long", 0.011, 0.3),
            ("fit_tuned", fit_err, 0.5),
        ):
            rows.append(
                dict(
                    estimator=est,
                    grid="pico",
                    regime=regime,
                    median_abs_error=err,
                    p_elm_error=0.01,
                    share_collapsed=0.1,
                    curve_alive=alive,
                    seconds=1.5,
                )
            )
    table = pd.DataFrame(rows)
    steps = {"step": [0, 10], "median_abs_error": [0.03, 0.02]}
    table.attrs["config"] = dict(
        grids=["pico"],
        regimes=["saturating", "still_rising"],
        n_positions=2,
        k=3,
        fit_iterations=5,
        release_steps=10,
        long_steps=20,
    )
    table.attrs["traces"] = {("joint_release", "pico", r): steps for r in ("saturating", "still_rising")}
    return table
