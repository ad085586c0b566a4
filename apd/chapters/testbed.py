"""The testbed chapter's bookkeeping: the configurations tried and their controls, and the controls
of this build's family (``notebooks/testbed.ipynb``). Gains are in nats (the expert's minus CD's)."""

from __future__ import annotations

import dataclasses
import json


import numpy as np
import pandas as pd

from apd.chapters.gluing import glue_values
from apd.family import pico
from apd.family.pretrain import PicoConfig
from apd.report import dose_response as dr
from apd.report.tables import plus_minus

# the control gains of this build's family: glue key -> format (a gain signed, its se not)
GAIN_KEYS = (
    "kl_gain_dev_T",
    "kl_gain_dev_T_se",
    "nll_gain_dev_T",
    "nll_gain_dev_T_se",
    "kl_gain_paper_T",
    "kl_gain_paper_T_se",
)
RATIOS = {
    "cur_ka_ratio": ("ka_ratio_saturating", "{:.2f}"),
    "cur_head_ratio": ("fit_ratio_head", "{:.2f}"),
    "cur_flat_head": ("flat_head", "{:.0%}"),
    "cur_flat_tail": ("flat_tail", "{:.0%}"),
}
NE_ER = {
    "cur_ne_er_elm": ("ne_er_elm", "{:.3f}"),
    "cur_ne_er_cd": ("ne_er_cd", "{:.3f}"),
    "cur_ne_er_gain": ("ne_er_gain", "{:+.3f}"),
    "cur_ne_er_gain_se": ("ne_er_gain_se", "{:.3f}"),
}


def n_passed(passes: pd.Series) -> pd.Series:
    """The number of controls passed, from ``"k of n"`` texts.

    Example:
        >>> n_passed(pd.Series(["2 of 4", "4 of 4"])).tolist()
        [2, 4]
    """
    return passes.str.split(" of ").str[0].astype(int)


def glue_configurations(run, table: pd.DataFrame, summary: pd.DataFrame) -> None:
    """Glue how many configurations were tried, the most controls any passes and how many reach it,
    those passing all four,
    and whether a design was trained with more than one seed (``has_replicates``). No ranking of the
    configurations chooses the book's world: the dose-response study's rule does
    (:func:`glue_dose_response`)."""
    run.glue("n_configs", len(table))
    run.glue("configs_tried", "; ".join(map(str, table["configuration"])) if len(table) else "none")
    if not len(summary):
        run.glue("best_passes", "none")
        run.glue("n_best", 0)
        run.glue_text("all_pass_configs", None, missing="none")
        return
    n = n_passed(summary["passes"])
    best = summary.index[int(np.argmax(n.to_numpy()))]
    run.glue("best_passes", summary.loc[best, "passes"])
    run.glue("n_best", int((n == n.max()).sum()))  # how many configurations reach it
    run.glue_text("all_pass_configs", ", ".join(summary.index[n == 4]) or None, "{}", missing="none")
    run.glue("has_replicates", bool("seeds" in summary and (summary["seeds"] > 1).any()))


def build_train_minutes(built) -> float:
    """Minutes the pico family of ``built`` took to train, as its ``family.json`` records (NaN when
    it does not)."""
    return float(built.manifest().get("total_train_seconds", float("nan"))) / 60


def verdict_first(summary: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with its ``passes`` column first (the verdict).

    Example:
        >>> verdict_first(pd.DataFrame({"gain": [0.3], "passes": ["1 of 4"]})).columns.tolist()
        ['passes', 'gain']
    """
    return summary[["passes", *[c for c in summary.columns if c != "passes"]]] if "passes" in summary else summary


def glue_controls(run, cur) -> None:
    """Glue the controls of this build's family (an :func:`apd.evaluation.controls.measure_controls` result):
    questions, the chosen 1/T, CD's gains, the fitter's noise and error ratios, flattening shares,
    NE_ER when measured, and each pass ("not measured" where a control did not run)."""
    row = cur.row()
    run.glue("cur_dev_people", cur.n_people)
    run.glue("cur_dev_items", cur.n_items)
    run.glue_text("cur_dev_inv_T", cur.dev_inv_T, "{:g}")
    for key in GAIN_KEYS:
        run.glue_text(f"cur_{key}", row[key], "{:.4f}" if key.endswith("_se") else "{:+.4f}")
    run.glue_text("cur_kl_gain_dev_T_pm", plus_minus(row["kl_gain_dev_T"], row["kl_gain_dev_T_se"]), "{}")
    run.glue_text("cur_residual", cur.residual_noise, "{:.3f}")
    for name, (key, spec) in RATIOS.items():
        run.glue_text(name, row.get(key), spec)
    if cur.ne_er is not None:
        for name, (key, spec) in NE_ER.items():
            run.glue_text(name, row[key], spec)
        run.glue("cur_ne_er_people", row["ne_er_people"])
    for name, ok in cur.passes().items():
        run.glue(f"cur_pass_{name}", "not measured" if ok is None else ok)


# the controls table in the text: the verdict, then one number per control (every column folds below it)
IN_TEXT = [
    "passes",
    "CD KL gain (dev 1/T) ± se",
    "NE_ER, ELM minus CD",
    "world head fit/p_ELM",
    "head / tail flatten",
]


def in_text(summary: pd.DataFrame) -> pd.DataFrame:
    """The columns of :data:`IN_TEXT` that ``summary`` has, the verdict first and CD's KL gain with
    its standard error in one column (:func:`apd.report.tables.plus_minus`): with the configurations'
    index, at most 7 columns, so the table is not folded."""
    out = summary.copy()
    if {"CD KL gain (dev 1/T)", "its se"} <= set(out.columns):
        out["CD KL gain (dev 1/T) ± se"] = [
            plus_minus(v, e) for v, e in zip(out["CD KL gain (dev 1/T)"], out["its se"])
        ]
    if {"head flatten", "tail flatten"} <= set(out.columns):
        out["head / tail flatten"] = [f"{h:.0%} / {t:.0%}" for h, t in zip(out["head flatten"], out["tail flatten"])]
    return out[[c for c in IN_TEXT if c in out.columns]]


def control_tables(cur):
    """``(CD against the expert per 1/T, the fitter against p_ELM per bucket)`` as the text shows
    them: the gain the control reads first, beside its standard error (the CSVs keep every column)."""
    cd = cur.cd_gain[
        [
            c
            for c in ("kl_gain", "kl_gain_se", "nll_gain", "nll_gain_se", "kl_elm", "kl_cd")
            if c in cur.cd_gain.columns
        ]
    ]
    asym = cur.asymptote
    asym = asym[[c for c in ("ratio", "gain", "gain_se", "tv_elm", "tv_fitter", "n") if c in asym.columns]]
    return cd, asym


#: Reader-facing names of the columns (and index) of :func:`control_tables`, for display only: the
#: saved tables keep their own names.
READER_NAMES = {
    "inv_T": "1/T",
    "kl_gain": "KL gain",
    "kl_gain_se": "its se",
    "nll_gain": "NLL gain",
    "nll_gain_se": "NLL se",
    "kl_elm": "expert's KL",
    "kl_cd": "CD's KL",
    "ratio": "fitter / p_ELM",
    "gain_se": "gain se",
    "tv_elm": "p_ELM's TV (mean over questions)",
    "tv_fitter": "fitter's TV (mean over questions)",
    "n": "questions",
}


def for_reader(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the column and index names of :data:`READER_NAMES` (for display only).

    Example:
        >>> t = pd.DataFrame({"kl_gain": [0.1], "n": [5]}, index=pd.Index([0.25], name="inv_T"))
        >>> shown = for_reader(t)
        >>> shown.columns.tolist(), shown.index.name
        (['KL gain', 'questions'], '1/T')
    """
    out = table.rename(columns=READER_NAMES)
    return out.rename_axis(index=READER_NAMES.get(out.index.name, out.index.name))


def glue_dose_response(run, pts: pd.DataFrame, summary: pd.DataFrame, world) -> None:
    """Glue the dose-response study's rule (:mod:`apd.report.dose_response`): how many points and
    designs were measured (``dr_points``, ``dr_designs``), the largest gain in standard errors
    (``dr_z_max``, at ``dr_best_point_design`` seed ``dr_best_point_seed``), the design whose weaker
    seed is strongest (``dr_best_design`` at ``dr_best_design_z``), the rule's choice (``dr_adopted``,
    "none" when no design passes on every seed) and whether this build's world (``world``: its
    ``WorldConfig``) is that design (``dr_build_is_adopted``). NE_ER, context beside the rule: the
    points measured (``dr_ne_er_points``) and those where CD's NE_ER is significantly below the
    expert's (``dr_ne_er_significant``, gain above 1.96 se)."""
    run.glue("dr_points", len(pts))
    run.glue("dr_designs", len(summary))
    ne = pts.dropna(subset=["ne_er_gain"]) if len(pts) else pts
    run.glue("dr_ne_er_points", len(ne))
    if len(ne):
        run.glue("dr_ne_er_significant", int(ne["ne_er_passes"].sum()))
    if len(pts):
        run.glue_text("dr_z_max", float(pts["z"].max()), "{:.1f}")
        best = pts.loc[pts["z"].idxmax()]
        run.glue("dr_best_point_design", str(best["design"]))
        run.glue_text("dr_best_point_seed", int(best["seed"]), "{:d}")
        low = pts.groupby("design", sort=False)["z"].min()
        run.glue("dr_best_design", str(low.idxmax()))
        run.glue_text("dr_best_design_z", float(low.max()), "{:.1f}")
    if not len(summary):
        run.glue_text("dr_adopted", None, "{}", missing="none")
        return
    choice = dr.adopted(summary)
    run.glue_text("dr_adopted", choice, "{}", missing="none")
    # every design is the 400-person world (WorldConfig()) with its error processes
    is_adopted = (
        choice is not None
        and world is not None
        and world == dataclasses.replace(type(world)(), **dr.overrides_of(choice))
    )
    run.glue("dr_build_is_adopted", bool(is_adopted))


def world_config(scale: str | None):
    """The ``WorldConfig`` of a pico scale (None for a Hub family, whose world is the web)."""
    if scale is None or scale not in pico.SCALES:
        return None
    return pico.configs(scale)[0].world


def n_members(overrides: str) -> int:
    """The number of members of a testbed row's family, from its ``overrides`` (JSON): its
    ``pico.members``, else its scale's family.

    Example:
        >>> n_members('{"pico.members": "1,32,2;1,48,2", "scale": "default"}'), n_members('{"scale": "default-200"}')
        (2, 6)
    """
    o = json.loads(overrides)
    if "pico.members" in o:
        return len(str(o["pico.members"]).split(";"))
    shapes = {"smoke": PicoConfig.smoke, "default": PicoConfig.default, "default-200": PicoConfig.default200}
    return len(shapes[o["scale"]]().members)


def glue_ne_er_by_members(run, rows: pd.DataFrame) -> None:
    """Glue CD's NE_ER gain over the expert by the family's size, over ``rows`` (testbed rows that
    measured it): per size (``four`` or fewer members, ``five``, ``six``) the number of rows above 0
    and of rows, ``ne_er_members_<size>_pos`` and ``_n``."""
    rows = rows.dropna(subset=["ne_er_gain"])
    size = rows["overrides"].map(n_members).map(lambda n: "four" if n <= 4 else ("five" if n == 5 else "six"))
    values = {}
    for label, gains in rows["ne_er_gain"].groupby(size):
        values[f"ne_er_members_{label}_pos"] = (int((gains > 0).sum()), "{:d}")
        values[f"ne_er_members_{label}_n"] = (len(gains), "{:d}")
    glue_values(run, values)
