"""When does CD help? The dose-response of the world's error processes and the rule that adopts one.

``scripts/dose_response.py`` trains one world + family per design of :data:`DESIGNS` and training
seed and appends its controls (dev people only) to ``docs/testbed/dose_response.csv`` in the
testbed table's format (:mod:`apd.report.testbed`). :func:`points` reads one row per design and
seed, :func:`designs` one per design with the rule's verdict, :func:`adopted` applies the rule (in
``docs/design-notes.md``, "A world whose text is not the truth"), and :func:`plot` draws CD's KL
or NE_ER gain against the dose. Gains are the expert's KL to the world's truth minus CD's, in nats.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from apd.core.stats import Z_TEST
from apd.evaluation.controls import kl_control_passes
from apd.report import plots, testbed
from apd.report.tables import plus_minus, yes_no

#: Where the study's rows live, relative to the project root.
DOSE_TABLE = Path("docs") / "testbed" / "dose_response.csv"
#: The family every design trains: the six ``default-200`` shapes (13k to 1.78M, 139x).
DOSE_MEMBERS = "1,32,2;1,48,2;2,64,4;3,96,4;4,128,4;4,192,4"
#: Training seeds per design; the rule needs CD's KL control to pass on all of them.
DOSE_SEEDS = (0, 1)


@dataclass(frozen=True)
class Design:
    """One point of the study: ``name`` (the table's configuration, before ", training seed N"),
    ``process`` (what the text gets wrong), ``dose`` (its rate) and the ``WorldConfig`` fields."""

    name: str
    process: str
    dose: float
    world: tuple[tuple[str, float], ...] = ()


#: The designs in the adoption rule's order: how far their text departs from the truth.
DESIGNS = (
    Design("exact truth", "exact truth", 0.0),
    Design("misstatements 0.15", "misstatements", 0.15, (("misstatement_rate", 0.15),)),
    Design("misstatements 0.3", "misstatements", 0.3, (("misstatement_rate", 0.3),)),
    Design("misstatements 0.45", "misstatements", 0.45, (("misstatement_rate", 0.45),)),
    Design(
        "misstatements 0.3, falling with exposure",
        "misstatements falling with exposure",
        0.3,
        (("misstatement_rate", 0.3), ("misstatement_decay", 0.5)),
    ),
    Design("decoys 0.3", "decoys", 0.3, (("decoy_rate", 0.3),)),
    Design("confusable surnames 0.3", "confusable surnames", 0.3, (("confusable_share", 0.3),)),
)
_BY_NAME = {d.name: d for d in DESIGNS}
_SEED_SUFFIX = ", training seed "


def point_name(design: str, seed: int) -> str:
    """The table's configuration name of one design and training seed.

    Example:
        >>> point_name("misstatements 0.3", 1)
        'misstatements 0.3, training seed 1'
    """
    return f"{design}{_SEED_SUFFIX}{seed}"


def table_path(path=None) -> Path:
    """``path``, else ``<project root>/docs/testbed/dose_response.csv``."""
    if path is not None:
        return Path(path)
    return testbed.table_path(None).parent / DOSE_TABLE.name


def read_dose_response(path=None) -> pd.DataFrame:
    """The study's rows (the testbed table's columns); empty when none was measured."""
    return testbed.read_configurations(table_path(path))


def points(table: pd.DataFrame) -> pd.DataFrame:
    """One row per measured design and seed, in the rule's order: design, process, dose, seed,
    dev_inv_T, kl_gain, kl_gain_se, z (gain over se), passes (CD's KL control), nll_gain, nll_gain_se,
    ne_er_gain, ne_er_gain_se (the expert's NE_ER minus CD's at T = 2, a fraction; NaN where not
    measured), head_ratio (the fitter's head error over p_ELM's), flat_head, flat_tail,
    train_seconds. Rows whose configuration is not a design of :data:`DESIGNS` are left out.

    Example:
        >>> t = pd.DataFrame({"configuration": ["misstatements 0.3, training seed 0"], "dev_inv_T": [0.25],
        ...     "kl_gain_dev_T": [0.03], "kl_gain_dev_T_se": [0.006], "nll_gain_dev_T": [0.01],
        ...     "nll_gain_dev_T_se": [0.005], "fit_ratio_head": [0.95], "flat_head": [0.3], "flat_tail": [0.5],
        ...     "train_seconds": [800.0]})
        >>> points(t)[["design", "dose", "seed", "z", "passes"]].values.tolist()
        [['misstatements 0.3', 0.3, 0, 5.0, True]]
    """
    rows = []
    for _, r in table.iterrows():
        name, _, seed = str(r["configuration"]).rpartition(_SEED_SUFFIX)
        if name not in _BY_NAME or not seed.isdigit():
            continue
        d = _BY_NAME[name]
        gain, se = float(r["kl_gain_dev_T"]), float(r["kl_gain_dev_T_se"])
        rows.append(
            {
                "design": name,
                "process": d.process,
                "dose": d.dose,
                "seed": int(seed),
                "dev_inv_T": float(r["dev_inv_T"]),
                "kl_gain": gain,
                "kl_gain_se": se,
                "z": gain / se if se > 0 else np.nan,
                "passes": kl_control_passes(gain, se),
                "nll_gain": float(r["nll_gain_dev_T"]),
                "nll_gain_se": float(r["nll_gain_dev_T_se"]),
                "ne_er_gain": float(r.get("ne_er_gain", np.nan)),
                "ne_er_gain_se": float(r.get("ne_er_gain_se", np.nan)),
                "ne_er_passes": bool(r.get("ne_er_gain", np.nan) > Z_TEST * r.get("ne_er_gain_se", np.nan)),
                "head_ratio": float(r.get("fit_ratio_head", np.nan)),
                "flat_head": float(r.get("flat_head", np.nan)),
                "flat_tail": float(r.get("flat_tail", np.nan)),
                "train_seconds": float(r.get("train_seconds", np.nan)),
            }
        )
    cols = ["design", "process", "dose", "seed", "dev_inv_T", "kl_gain", "kl_gain_se", "z", "passes"]
    out = pd.DataFrame(
        rows,
        columns=cols
        + [
            "nll_gain",
            "nll_gain_se",
            "ne_er_gain",
            "ne_er_gain_se",
            "ne_er_passes",
            "head_ratio",
            "flat_head",
            "flat_tail",
        ]
        + ["train_seconds"],
    )
    order = {d.name: i for i, d in enumerate(DESIGNS)}
    return out.sort_values(["design", "seed"], key=lambda s: s.map(order) if s.name == "design" else s).reset_index(
        drop=True
    )


def designs(pts: pd.DataFrame, seeds=DOSE_SEEDS) -> pd.DataFrame:
    """One row per design of :data:`DESIGNS` with at least one point, in the rule's order (index:
    design): process, dose, seeds (measured), gains (each seed's KL gain +- se at its dev 1/T),
    passing (seeds whose KL control passes), mean_gain, ne_er_gains (each seed's NE_ER gain +- se,
    context: it does not enter the rule; "not measured" where absent), and passes: True when every
    seed of ``seeds`` was measured and passes, False when one fails, None while seeds are missing."""
    out = []
    for d in DESIGNS:
        sub = pts[pts["design"] == d.name]
        if not len(sub):
            continue
        measured = set(sub["seed"])
        failed = bool((~sub["passes"]).any())
        verdict = False if failed else (True if set(seeds) <= measured else None)
        out.append(
            {
                "design": d.name,
                "process": d.process,
                "dose": d.dose,
                "seeds": len(measured),
                "gains": "; ".join(
                    f"{plus_minus(g, s)} (1/T {t:g})"
                    for g, s, t in zip(sub["kl_gain"], sub["kl_gain_se"], sub["dev_inv_T"])
                ),
                "passing": f"{int(sub['passes'].sum())} of {len(sub)}",
                "mean_gain": float(sub["kl_gain"].mean()),
                "ne_er_gains": "; ".join(
                    plus_minus(g, s) if np.isfinite(g) else "not measured"
                    for g, s in zip(sub["ne_er_gain"], sub["ne_er_gain_se"])
                ),
                "passes": verdict,
            }
        )
    if not out:
        return pd.DataFrame()
    frame = pd.DataFrame(out).set_index("design")
    frame["passes"] = pd.Series([r["passes"] for r in out], index=frame.index, dtype=object)  # True/False/None
    return frame


#: The designs table as the testbed page shows it: (column of :func:`designs`, heading).
SHOWN = (
    ("process", "error process"),
    ("dose", "rate"),
    ("gains", "CD's KL gain per seed (1/T)"),
    ("passing", "seeds passing"),
    ("passes", "passes the rule"),
    ("ne_er_gains", "CD's NE_ER gain per seed (context)"),
)


def shown(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`designs` for a reader: the :data:`SHOWN` columns under their headings, the rule's verdict
    as yes / no / "seeds missing" (display only).

    Example:
        >>> s = pd.DataFrame({"process": ["decoys"], "dose": [0.3], "gains": ["+0.013 ± 0.007 (1/T 0.25)"],
        ...     "passing": ["0 of 1"], "passes": [False], "ne_er_gains": ["not measured"]}, index=["decoys 0.3"])
        >>> shown(s).loc["decoys 0.3", ["passes the rule", "CD's NE_ER gain per seed (context)"]].tolist()
        ['no', 'not measured']
    """
    out = summary[[c for c, _ in SHOWN]].copy()
    out["passes"] = [yes_no(v, missing="seeds missing") for v in summary["passes"]]
    return out.rename(columns=dict(SHOWN))


def adopted(summary: pd.DataFrame) -> str | None:
    """The rule's choice: the first design in :data:`DESIGNS` order (the least departure from the
    truth) whose KL control passes on every training seed; None when none does (the default stays
    the exact-truth world).

    Example:
        >>> s = pd.DataFrame({"passes": [False, None, True, True]},
        ...                  index=["exact truth", "misstatements 0.15", "misstatements 0.3", "misstatements 0.45"])
        >>> adopted(s)
        'misstatements 0.3'
    """
    if not len(summary):
        return None
    passing = [name for name, ok in summary["passes"].items() if ok is True]
    return passing[0] if passing else None


def overrides_of(design: str) -> dict:
    """The ``WorldConfig`` fields of a design (``{}`` for the exact-truth world)."""
    if design not in _BY_NAME:
        raise KeyError(f"{design!r} is not a design of the dose-response; use one of {sorted(_BY_NAME)}")
    return dict(_BY_NAME[design].world)


#: What :func:`plot` can draw: the column, its standard error's, the column whose truth fills a
#: marker, and the y label.
MEASURES = {
    "kl_gain": ("kl_gain_se", "passes", "CD's KL gain over the expert (nats)"),
    "ne_er_gain": ("ne_er_gain_se", "ne_er_passes", "the expert's NE$_{ER}$ minus CD's (share of entities)"),
}


def plot(ax, pts: pd.DataFrame, measure: str = "kl_gain", legend: bool = True):
    """One of CD's gains over the expert (:data:`MEASURES`: ``kl_gain`` at each point's dev 1/T, or
    ``ne_er_gain`` at T = 2) +- 1.96 se against the dose, dev people; filled markers where that
    control passes (KL: >= 3 se; NE_ER: > 1.96 se). Misstatements constant over people are a line
    through the exact-truth world; the other processes are markers a step to the right of their
    rate; with ``legend``, the legend sits below the axes."""
    if measure not in MEASURES:
        raise ValueError(f"measure {measure!r}: use one of {sorted(MEASURES)}")
    se_col, pass_col, ylabel = MEASURES[measure]
    pts = pts.dropna(subset=[measure])
    markers = {
        "exact truth": "o",
        "misstatements": "o",
        "misstatements falling with exposure": "s",
        "decoys": "^",
        "confusable surnames": "D",
    }
    colors = {
        "exact truth": plots.COLORS["cd"],
        "misstatements": plots.COLORS["cd"],
        "misstatements falling with exposure": plots.PALETTE[0],
        "decoys": plots.PALETTE[2],
        "confusable surnames": plots.PALETTE[4],
    }
    seeds = sorted(pts["seed"].unique()) if len(pts) else []
    offset = {s: (i - (len(seeds) - 1) / 2) * 0.01 for i, s in enumerate(seeds)}
    # the other processes beside the misstatement line at their rate, each a step to the right
    shift = {"misstatements falling with exposure": 0.03, "decoys": 0.055, "confusable surnames": 0.08}
    ax.axhline(0, color="0.5", lw=0.8)
    line = pts[pts["process"].isin(["exact truth", "misstatements"])]
    if len(line):
        mean = line.groupby("dose")[measure].mean()
        ax.plot(
            mean.index,
            mean.to_numpy(),
            color=plots.COLORS["cd"],
            lw=1.2,
            zorder=2,
            label="misstatements (mean of seeds)",
        )
    for process, sub in pts.groupby("process", sort=False):
        first = True
        for _, r in sub.iterrows():
            x = r["dose"] + offset[r["seed"]] + shift.get(process, 0.0)
            ax.errorbar(x, r[measure], yerr=1.96 * r[se_col], fmt="none", ecolor=colors[process], capsize=2, zorder=3)
            ax.plot(
                [x],
                [r[measure]],
                markers[process],
                ls="none",
                color=colors[process],
                mfc=colors[process] if r[pass_col] else "white",
                ms=6,
                zorder=4,
                label=process if first and process not in ("exact truth", "misstatements") else None,
            )
            first = False
    ax.plot([], [], "o", color="0.3", mfc="0.3", label="filled: the control passes")
    ax.plot([], [], "o", color="0.3", mfc="white", label="open: fails")
    ax.set_xlabel(plots.wrap("misstatement rate e (other processes: their rate)", 30))
    ax.set_ylabel(plots.wrap(ylabel, 32))
    top = max([0.45, *pts["dose"].tolist()]) if len(pts) else 0.45
    ax.set_xlim(-0.03, top + 0.04)
    if legend:
        plots.legend(ax, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2)
    return ax
