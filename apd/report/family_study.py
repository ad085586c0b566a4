"""Which family lets extrapolation beat the expert? The family study and the rule that reads it.

``scripts/family_study.py`` trains one world + family per design of :data:`DESIGNS` and training
seed and appends its controls (dev people only) to ``docs/testbed/family_study.csv`` in the testbed
table's format (:mod:`apd.report.testbed`). Today's family is the dose-response study's exact-truth
rows. :func:`reading` applies the rule (``docs/design-notes.md``, "A family whose curves carry
something to extrapolate"); :func:`plot` draws each design's head ratio per seed. The measure is
``fit_ratio_head``: the on-the-fly fitter's asymptote over the expert, total variation to the
world's truth, on the dev people's head questions (below 1: extrapolation is closer).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from apd.base.paths import project_root
from apd.report import testbed
from apd.report.plots import COLORS

#: the default family's six shapes (n_layer, d_model, n_head), 13k to 1.8M
SIX = "1,32,2;1,48,2;2,64,4;3,96,4;4,128,4;4,192,4"
#: the same span with three members interleaved in the widest gaps of log size (55k, 230k, 600k; two heads
#: each, so that a head's rotary dimensions are even)
NINE = "1,32,2;1,48,2;2,48,2;2,64,4;3,80,2;3,96,4;4,112,2;4,128,4;4,192,4"

#: (name, WorldConfig fields, PicoConfig fields, whether it changes the world), in the rule's order
DESIGNS = (
    ("longer training", {}, {"members": SIX, "max_tokens": 1_750_000, "epochs": 5.6}, False),
    ("denser sizes", {}, {"members": NINE}, False),
    ("more exposures per head fact", {"zipf_exponent": 1.25}, {"members": SIX}, True),
)
SEEDS = (0, 1)
TODAY = "today's family"
#: the rule's numbers: the standard error of a difference of two-seed means (a family design keeps the
#: dev people; a world design changes them), the z it needs, and the budget in member seconds
SE_FAMILY, SE_WORLD, Z, BUDGET_S = 0.018, 0.027, 1.96, 1440.0

TABLE = Path("docs") / "testbed" / "family_study.csv"
DEFAULT_DESIGN = "exact truth"  # today's family: these rows of the dose-response table


def point_name(design: str, seed: int) -> str:
    """The table's configuration name of one point.

    Example:
        >>> point_name("denser sizes", 1)
        'denser sizes, training seed 1'
    """
    return f"{design}, training seed {seed}"


def points(study: pd.DataFrame, dose: pd.DataFrame) -> pd.DataFrame:
    """One row per measured point, today's family first: design, seed, head ratio, member seconds.

    Example:
        >>> dose = pd.DataFrame({"configuration": ["exact truth, training seed 0"], "fit_ratio_head": [0.93],
        ...                      "train_seconds": [987.0]})
        >>> study = pd.DataFrame({"configuration": ["denser sizes, training seed 1"], "fit_ratio_head": [0.85],
        ...                       "train_seconds": [1300.0]})
        >>> points(study, dose)[["design", "seed", "head ratio"]].values.tolist()
        [["today's family", 0, 0.93], ['denser sizes', 1, 0.85]]
    """
    rows = []
    for frame, names in ((dose, {DEFAULT_DESIGN: TODAY}), (study, {d[0]: d[0] for d in DESIGNS})):
        for r in frame.to_dict("records"):
            design, _, seed = str(r["configuration"]).rpartition(", training seed ")
            if design in names:
                rows.append(
                    {"design": names[design], "seed": int(seed), "head ratio": float(r["fit_ratio_head"]),
                     "member s": float(r["train_seconds"])}
                )  # fmt: skip
    return pd.DataFrame(rows, columns=["design", "seed", "head ratio", "member s"])


def reading(pts: pd.DataFrame) -> pd.DataFrame:
    """The rule's reading of :func:`points`: one row per design measured, today's first, with its
    seeds, its mean head ratio, the drop from today's, the drop it needs and its verdict."""
    today = pts[pts["design"] == TODAY]
    base = float(today["head ratio"].mean())
    rows = [{"design": TODAY, "seeds": len(today), "head ratio": base, "drop": 0.0, "needs": None,
             "member s": float(today["member s"].max()), "verdict": "the reference"}]  # fmt: skip
    for name, _, _, world in DESIGNS:
        sub = pts[pts["design"] == name]
        if not len(sub):
            continue
        mean, need, slowest = (
            float(sub["head ratio"].mean()),
            Z * (SE_WORLD if world else SE_FAMILY),
            float(sub["member s"].max()),
        )
        if len(sub) < len(SEEDS):
            verdict = "waits for its second seed"
        elif base - mean <= need:
            verdict = "does not pass"
        else:
            verdict = "passes" if slowest <= BUDGET_S else "passes, over budget"
        rows.append({"design": name, "seeds": len(sub), "head ratio": mean, "drop": base - mean, "needs": need,
                     "member s": slowest, "verdict": verdict})  # fmt: skip
    return pd.DataFrame(rows)


def read(table=None, dose_table=None) -> pd.DataFrame:
    """:func:`points` of the study's table and the dose-response table (each may be absent)."""
    root = project_root()
    study = Path(table) if table else root / TABLE
    dose = Path(dose_table) if dose_table else root / "docs" / "testbed" / "dose_response.csv"
    load = lambda p: testbed.read_configurations(p) if p.is_file() else pd.DataFrame(columns=["configuration"])  # noqa: E731
    return points(load(study), load(dose))


def plot(ax, pts: pd.DataFrame) -> None:
    """Each design's head ratio per training seed (dots) and its mean (a bar), today's family first,
    with a line at 1 (the expert) and at today's mean."""
    order = [TODAY] + [d[0] for d in DESIGNS if d[0] in set(pts["design"])]
    base = float(pts.loc[pts["design"] == TODAY, "head ratio"].mean())
    for i, name in enumerate(order):
        sub = pts[pts["design"] == name]
        ax.plot(
            [i] * len(sub),
            sub["head ratio"],
            "o",
            color=COLORS["apd_fly"],
            ms=7,
            label="a training seed" if i == 0 else None,
        )
        ax.plot([i - 0.25, i + 0.25], [sub["head ratio"].mean()] * 2, color=COLORS["elm"], lw=2,
                label="the mean over seeds" if i == 0 else None)  # fmt: skip
    ax.axhline(1.0, color=COLORS["elm"], ls="--", lw=1, label="the expert (1)")
    ax.axhline(base, color=COLORS["members"], ls=":", lw=1, label="today's mean")
    ax.set_xticks(range(len(order)), [n.replace(" per ", "\nper ") for n in order])
    ax.set_ylabel("fitter's distance to the truth\nover the expert's (head questions)")
