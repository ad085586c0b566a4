"""The ablations chapter's bookkeeping: the training budget, the table of runs with their gates and
verdicts, the comparisons the prose quotes, and one figure per group (``notebooks/ablations.ipynb``).

Every run, score and paired difference comes from :mod:`apd.evaluation.ablations`; KL and NLL are
in nats, lower is better.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from apd.amateur.gates import gates_or_none
from apd.amateur.runs import collect_config, collect_family
from apd.evaluation.ablations import (
    GROUP_TITLES,
    MAIN,
    label,
    measure_difference,
    reference_of,
    verdict,
    verdicts,
)
from apd.family.settings import settings_for
from apd.family.text import texts_for_tokens
from apd.chapters.apd import ApdHeadline
from apd.chapters.gluing import fmt, glue_values, per_name
from apd.report.plots import COLORS, legend, panels, plain_ticks, wrap
from apd.report.tables import plus_minus, yes_no

UNTESTABLE = "untestable (gates)"
DISTILLED = "distilled"
# the table in the text: each run's verdict first, its paired KL difference with the standard error
SHOWN = ["label", "verdict_kl", "kl_diff", "kl_diff_se", "engaged"]
# the same columns as the page names them (display only: the saved table keeps its own names)
SHOWN_NAMES = {
    "label": "run",
    "verdict_kl": "KL verdict",
    "kl_diff": "KL difference (nats)",
    "kl_diff_se": "standard error",
    "engaged": "gates pass",
}
COLUMNS = [
    "label",
    "changes",
    "reference",
    "inv_T",
    "kl",
    "kl_diff",
    "kl_diff_se",
    "verdict_kl",
    "nll",
    "nll_diff",
    "verdict_nll",
    "kl_head",
    "kl_torso",
    "kl_tail",
    "steps",
    "train_seconds",
]


def shown(table: pd.DataFrame) -> pd.DataFrame:
    """The main table as the page shows it: the :data:`SHOWN` columns under reader-facing names
    (:data:`SHOWN_NAMES`), the gate flag as yes/no (missing for CD and the expert alone). Display
    only: the saved table keeps its own names.

    Example:
        >>> t = pd.DataFrame({"label": ["reference APD", "CD"], "verdict_kl": ["reference", "tie"],
        ...                   "kl_diff": [np.nan, -0.01], "kl_diff_se": [np.nan, 0.004], "engaged": [1.0, np.nan]})
        >>> out = shown(t)
        >>> list(out.columns), list(out["gates pass"].fillna("-"))
        (['run', 'KL verdict', 'KL difference (nats)', 'standard error', 'gates pass'], ['yes', '-'])
    """
    out = table[SHOWN].rename(columns=SHOWN_NAMES)
    out["gates pass"] = table["engaged"].map(lambda f: yes_no(f, missing=np.nan))  # CD, the expert: no gates
    return out


# the paper's headline orderings: (run, against, the verdict the paper's ordering needs)
ORDERINGS = {
    "probability space beats logit space": ("logit", MAIN, "worse"),
    "the flip helps": ("no-flip", MAIN, "worse"),
    "every member beats ALM + ELM": ("alm+elm", MAIN, "worse"),
    "ALM + ELM still beats CD": ("alm+elm", "CD", "better"),
    "distilled: every member beats ALM + middle + ELM": ("distilled-alm+mid+elm", DISTILLED, "worse"),
    "distilled: the small members matter": ("distilled-no-small", DISTILLED, "worse"),
}
#: The comparisons the paper draws between the runs, each read as a paired KL difference (the run's
#: KL minus the other's): (what is compared, run, against). The table of runs gives each run against
#: its reference; these add the cross comparisons (ALM + ELM against CD, the middle member, ...).
COMPARED = (
    ("curves on log-probabilities", "logit", MAIN),
    ("no flip", "no-flip", MAIN),
    ("the ALM and the ELM only", "alm+elm", MAIN),
    ("the ALM and the ELM only", "alm+elm", "CD"),
    ("adding the middle member to ALM + ELM", "alm+mid+elm", "alm+elm"),
    ("every member", MAIN, "alm+mid+elm"),
    ("without the small mid-size members", "no-small", MAIN),
    ("poly3 decay", "poly3", MAIN),
    ("λ2 = 0", "lambda2=0", MAIN),
    ("λ3 = 0", "lambda3=0", MAIN),
    ("λ3 × 2", "lambda3x2", MAIN),
    ("λ3 × 6.25", "lambda3x6", MAIN),
    ("half of the fine-tuning chunks", "half-data", MAIN),
)


@dataclass(frozen=True)
class AblationsHeadline:
    """The ablations chapter's headline numbers (KL to the truth in nats on the test half; lower is
    better), read by the paper's claims C5 to C7 (``apd.report.claims``)."""

    kl_main: float  # the reference APD's KL
    kl_cd: float  # CD's KL
    kl_elm: float  # the expert's KL
    kl_cd_minus_main: str | None = fmt("{}", default=None)  # CD's KL minus the reference APD's, "d ± se" (paired)
    n_engaged: int = 0  # trained runs whose mechanism gates pass
    n_gated: int = 0  # trained runs whose gates were measured
    variant_apd: float | None = None  # the reference APD's KL (claim C7's reference)
    variant_logit: float | None = fmt("{:.4f}", default=None)  # curves on log-probabilities
    variant_no_flip: float | None = fmt("{:.4f}", default=None)  # no flip R(.)
    midsize_all: float | None = None  # every member (the reference APD)
    midsize_ends_only: float | None = fmt("{:.4f}", default=None)  # ALM + ELM only, when it and the main engage
    midsize_cd: float | None = None  # CD (claim C6's context)
    gate_engaged: dict = per_name(default_factory=dict)  # run name -> 1 when its gates pass, else 0
    gate_reason: dict = per_name(default_factory=dict)  # run name -> which gate failed, or "all gates pass"


def check_family(family: str) -> None:
    """Raise ValueError unless ``family`` is ``"pico"`` (the chapter scores against the world's truth).

    Example:
        >>> check_family("pico")
    """
    if family != "pico":
        raise ValueError(
            f"the ablations chapter scores against the pico world's truth; family={family!r} has none. "
            "Run it with family='pico'."
        )


def budget_overrides(main_config, epochs=None, batch_size=None, data_fraction: float = 1.0) -> dict:
    """The configuration fields every run (the main one too) changes to fit the chapter's budget.

    Example:
        >>> from types import SimpleNamespace
        >>> budget_overrides(SimpleNamespace(data_fraction=0.5), epochs=1, data_fraction=0.5)
        {'epochs': 1, 'data_fraction': 0.25}
    """
    out = {k: v for k, v in (("epochs", epochs), ("batch_size", batch_size)) if v is not None}
    if data_fraction != 1.0:
        out["data_fraction"] = data_fraction * main_config.data_fraction
    return out


def validation_dir(fam, built, val_chunks: int, scale: str):
    """Held-out text collected like the training data (``val_chunks`` chunks and one more), or None."""
    if val_chunks <= 0:
        return None
    texts = texts_for_tokens(fam.tokenizer, built.corpus.validation, (val_chunks + 1) * built.pico_config.seq_len)
    return collect_family(fam, texts, collect_config(settings_for("pico", scale), built), progress=False)


def ablation_table(res, ref: pd.DataFrame, gates: dict, z: float, min_effect: float) -> pd.DataFrame:
    """One row per run and reference (CD, ELM): its scores, label, KL and NLL verdicts against its
    reference, and its gates; a comparison with a run whose gates fail (CD's and the ELM's with the main
    APD included) is ``untestable (gates)``."""
    table = pd.concat([res.table, ref], ignore_index=True)
    table.insert(1, "label", [label(n, res.configs.get(n)) for n in table["name"]])
    table["verdict_kl"] = verdicts(table, "kl", z, min_effect).to_numpy()
    table["verdict_nll"] = verdicts(table, "nll", z, min_effect).to_numpy()
    table.loc[table["name"] == MAIN, ["verdict_kl", "verdict_nll"]] = "reference"
    g = [gates.get(n) for n in table["name"]]
    table["engaged"] = [(int(x.engaged) if x is not None else None) for x in g]
    table["curve_alive"] = [(x.curve_alive if x is not None else None) for x in g]
    table["share_at_expert"] = [(x.collapsed if x is not None else None) for x in g]
    table["gates"] = [((x.reason or "all gates pass") if x is not None else "") for x in g]
    failed = {n for n, x in gates.items() if x is not None and not x.engaged}
    # CD and the ELM have no gates of their own, but their reference (the reference APD) may fail its
    untestable = table["name"].map(lambda n: n != MAIN and bool({n, reference_of(n)} & failed)).astype(bool)
    table.loc[untestable, ["verdict_kl", "verdict_nll"]] = UNTESTABLE
    return table


def measure_gates(paths: dict, data_dir, val_chunks: int, device) -> dict:
    """``{run: Gates or None}``: the mechanism gates of every trained run (:mod:`apd.amateur.gates`)."""
    return {
        name: gates_or_none(path, data_dir, max_chunks=max(val_chunks, 4), device=device)
        for name, path in paths.items()
    }


def budget_values(main_config, overrides: dict) -> dict:
    """The budget every run uses (``budget_epochs``, ``budget_batch_size``, ``budget_data_fraction``:
    the main configuration's fields with :func:`budget_overrides` applied), the main configuration's
    own (``main_config_*``) and whether the chapter cut it (``budget_reduced``), as glue values.

    Example:
        >>> from types import SimpleNamespace
        >>> cfg = SimpleNamespace(epochs=3, batch_size=8, data_fraction=0.5)
        >>> v = budget_values(cfg, {"epochs": 1, "data_fraction": 0.25})
        >>> v["budget_epochs"], v["main_config_epochs"], v["budget_data_fraction"], v["budget_reduced"]
        (1, 3, (0.25, '{:g}'), True)
    """
    out: dict = {"budget_reduced": bool(overrides)}
    for key in ("epochs", "batch_size", "data_fraction"):
        spec = "{:g}" if key == "data_fraction" else None
        used, main = overrides.get(key, getattr(main_config, key)), getattr(main_config, key)
        out[f"budget_{key}"] = (used, spec) if spec else used
        out[f"main_config_{key}"] = (main, spec) if spec else main
    return out


def glue_training(
    run, main_config, overrides: dict, n_ablations: int, trained: pd.DataFrame, wall_seconds: float
) -> None:
    """Glue the main configuration, the budget (:func:`budget_values`; ``overrides``:
    :func:`budget_overrides`) and the training time of the runs."""
    run.glue("lambda3_main", float(main_config.lambda3_value))
    run.glue("main_epochs", f"{main_config.epochs} epoch" + ("s" if main_config.epochs != 1 else ""))
    run.glue("n_ablations", n_ablations)
    glue_values(run, budget_values(main_config, overrides))
    n_steps = int(trained.loc[0, "steps"])
    run.glue("steps_per_run", f"{n_steps} optimizer step" + ("s" if n_steps != 1 else ""))
    run.glue("train_minutes", float(trained["train_seconds"].sum() / 60))
    run.glue("wall_minutes", float(wall_seconds / 60))


@dataclass
class Comparisons:
    """Paired comparisons between runs on the test questions (``per``: run -> per-question scores;
    ``people``: the person of each question, for standard errors over people)."""

    table: pd.DataFrame  # :func:`ablation_table` indexed by run name
    per: dict
    gates: dict
    people: object
    z: float = 2.0
    min_effect: float = 0.0
    names: list = field(default_factory=list)  # the ablations this build ran

    def kl(self, name: str) -> float | None:
        """A run's test KL, or None when it did not run."""
        return float(self.table.loc[name, "kl"]) if name in self.table.index else None

    def failed(self, name: str) -> bool:
        g = self.gates.get(name)
        return g is not None and not g.engaged

    def vs(self, a: str, b: str, measure: str = "kl") -> str | None:
        """``'better'`` / ``'worse'`` / ``'tie'`` for run ``a`` against ``b``, ``'untestable (gates)'``
        when either fails its gates, None when either did not run."""
        if a not in self.per or b not in self.per:
            return None
        if self.failed(a) or self.failed(b):
            return UNTESTABLE
        return verdict(
            *measure_difference(self.per[a], self.per[b], measure, groups=self.people), self.z, self.min_effect
        )

    def difference(self, a: str, b: str):
        """``(mean KL of a minus b, its standard error over people)``, or ``(None, None)``."""
        if a not in self.per or b not in self.per:
            return None, None
        return measure_difference(self.per[a], self.per[b], groups=self.people)

    def with_verdict(self, v: str) -> list[str]:
        """The ablations run whose KL verdict against their reference is ``v``."""
        return [n for n in self.names if self.table.loc[n, "verdict_kl"] == v]


def headline(cmp: Comparisons) -> AblationsHeadline:
    """The chapter's :class:`AblationsHeadline` from its comparisons."""
    t = cmp.table
    gated = {n: g for n, g in cmp.gates.items() if g is not None}
    ends_engaged = all(cmp.gates.get(n) is not None and cmp.gates[n].engaged for n in (MAIN, "alm+elm"))
    return AblationsHeadline(
        kl_main=cmp.kl(MAIN),
        kl_cd=cmp.kl("CD"),
        kl_elm=cmp.kl("ELM"),
        kl_cd_minus_main=plus_minus(t.loc["CD", "kl_diff"], t.loc["CD", "kl_diff_se"]),
        n_engaged=int(sum(bool(g.engaged) for g in gated.values())),
        n_gated=len(gated),
        variant_apd=cmp.kl(MAIN),
        variant_logit=cmp.kl("logit"),
        variant_no_flip=cmp.kl("no-flip"),
        midsize_all=cmp.kl(MAIN),
        midsize_ends_only=cmp.kl("alm+elm") if ends_engaged else None,
        midsize_cd=cmp.kl("CD"),
        gate_engaged={n: int(g.engaged) for n, g in gated.items()},
        gate_reason={n: g.reason or "all gates pass" for n, g in gated.items()},
    )


def glue_overview(run, cmp: Comparisons) -> None:
    """Glue the chosen 1/T, APD against CD, the test questions the KL scores (``n_test_kl``: those whose
    truth has mass on the expert's top tokens, the same for every run), and which ablations beat, lose
    to or tie the reference APD, and which cannot be compared with it (it or the reference APD fails a
    mechanism gate)."""
    run.glue("inv_T_main", float(cmp.table.loc[MAIN, "inv_T"]))
    run.glue("n_test_kl", int(cmp.per[MAIN]["kl"].notna().sum()))  # the table's n_kl
    run.glue("inv_T_cd", float(cmp.table.loc["CD", "inv_T"]))
    better = cmp.with_verdict("better")

    def labels(names: list[str]) -> str:  # as the table names the runs ("λ3 = 0.4", not "lambda3x2")
        return "; ".join(str(cmp.table.loc[n, "label"]) for n in names) or "none"

    run.glue("beat_main", labels(better))
    run.glue("lose_main", labels(cmp.with_verdict("worse")))
    run.glue("tie_main", labels(cmp.with_verdict("tie")))
    run.glue("untestable_main", labels(cmp.with_verdict(UNTESTABLE)))
    run.glue("n_beat_main", len(better))


def group_figure(table: pd.DataFrame, group: str, *, z: float, title: str):
    """The runs of one group: test KL (left) and NLL (right) with ±z paired standard errors of their
    difference to their reference, beside lines at the reference APD and CD; None when the group has no run."""
    rows = table[table["group"] == group]
    if not len(rows):
        return None
    names = [wrap(label, 30) for label in rows["label"]]  # long member lists on two lines
    per_row = 0.32 if all("\n" not in n for n in names) else 0.45
    fig, axes = panels(2, ncols=1, panel_height=1.2 + per_row * len(rows))
    y = np.arange(len(rows))
    for ax, m, unit in ((axes[0], "kl", "KL(truth || method)"), (axes[1], "nll", "-ln(q(gold) + 0.01)")):
        ax.errorbar(rows[m], y, xerr=z * rows[f"{m}_diff_se"], fmt="o", color=COLORS["members"], capsize=3)
        for name, color, style in ((MAIN, COLORS["apd"], "-"), ("CD", COLORS["cd"], "--")):
            ax.axvline(table.loc[name, m], color=color, linestyle=style, label=table.loc[name, "label"])
        ax.set_yticks(y, names)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xlabel(f"{unit} on the test half (nats)")
        plain_ticks(ax, "x")  # no 4-decimal tick noise
    handles, labels = axes[0].get_legend_handles_labels()
    legend(fig, handles=handles, labels=labels, loc="outside lower center", ncol=2)
    fig.suptitle(f"{GROUP_TITLES[group]} {title}")
    return fig


def comparisons(cmp: Comparisons) -> pd.DataFrame:
    """The comparisons of :data:`COMPARED` whose two runs both ran: what is compared, against which
    run (its label), the paired KL difference ± its standard error over people (nats; negative: the
    first run is closer to the truth) and the verdict (:meth:`Comparisons.vs`)."""
    rows = [
        {
            "compared": what,
            "against": str(cmp.table.loc[b, "label"]),
            "KL difference (nats)": plus_minus(*cmp.difference(a, b)),
            "verdict": cmp.vs(a, b),
        }
        for what, a, b in COMPARED
        if a in cmp.per and b in cmp.per
    ]
    return pd.DataFrame(rows, columns=["compared", "against", "KL difference (nats)", "verdict"])


def glue_comparisons(run, cmp: Comparisons) -> None:
    """Glue the reference APD against CD (``main_vs_cd`` ± ``main_vs_cd_se``), whether more than one decay
    ran (``decays_compared``), the decay with the lowest KL, and the runs equal to the reference APD."""
    d, se = cmp.difference(MAIN, "CD")
    run.glue_text("main_vs_cd", d, "{:+.4f}")
    run.glue_text("main_vs_cd_se", se, "{:.4f}")
    decays = {
        "exponential": cmp.kl(MAIN),
        **{d: cmp.kl(d) for d in ("logistic", "poly1", "poly3") if d in cmp.table.index},
    }
    run.glue("decays_compared", len(decays) > 1)
    run.glue("best_decay", min(decays, key=decays.get))
    main = cmp.per[MAIN][["kl", "nll"]].to_numpy()
    same = [
        n
        for n in cmp.names
        if np.allclose(cmp.per[n][["kl", "nll"]].to_numpy(), main, rtol=0, atol=1e-6, equal_nan=True)
    ]
    run.glue("identical_to_main", "; ".join(str(cmp.table.loc[n, "label"]) for n in same) or "none")


def orderings(cmp: Comparisons) -> dict:
    """The paper's orderings (:data:`ORDERINGS`): True / False where both runs engage,
    ``'untestable (gates)'`` where one does not, None where one did not run."""
    return {
        k: (v if v in (None, UNTESTABLE) else v == want)
        for k, (a, b, want) in ORDERINGS.items()
        for v in [cmp.vs(a, b)]
    }


def glue_orderings(run, hold: dict) -> pd.DataFrame:
    """Glue how many of the paper's orderings were tested and hold; return them as a table."""
    tested = [k for k, v in hold.items() if isinstance(v, bool)]
    run.glue("n_paper_orderings", len(tested))
    run.glue("orderings_tested", bool(tested))
    run.glue("paper_orderings_hold", ", ".join(k for k in tested if hold[k]) or "none")
    run.glue("n_paper_orderings_hold", sum(bool(hold[k]) for k in tested))
    return pd.DataFrame(
        {
            "holds here (clearly, KL)": [("not run" if v is None else v) for v in hold.values()],
            "paper's ordering": list(hold),
        }
    )


def glue_distilled(run, cmp: Comparisons, profile: str, data_fraction: float) -> None:
    """Glue the distilled variant's gates, KL and paired differences to CD, the reference APD and its
    member subsets, its training time, and how far the APD chapter's distilled ALM' moves toward the expert."""
    g = cmp.gates.get(DISTILLED)
    run.glue_text("ablation_budget", data_fraction, "{:.0%}")
    apd_headline = ApdHeadline.load(profile, missing_ok=True)  # None when the APD chapter has not run
    apd_toward = None if apd_headline is None else apd_headline.distilled_toward_expert
    run.glue_text("apd_distilled_toward_expert", apd_toward, "{:.2f}", missing="n/a (the APD chapter has not run)")
    run.glue("distilled_engaged", bool(g is not None and g.engaged))
    run.glue("distilled_not_engaged", bool(g is not None and not g.engaged))
    run.glue_text("distilled_toward_expert", None if g is None else g.toward_expert, "{:.2f}")
    run.glue_text("distilled_kl", cmp.kl(DISTILLED), "{:.4f}")
    pairs = {
        "distilled_kl_diff_cd": (DISTILLED, "CD"),
        "distilled_kl_diff_main": (DISTILLED, MAIN),
        "distilled_mid_kl_diff": ("distilled-alm+mid+elm", DISTILLED),
        "distilled_nosmall_kl_diff": ("distilled-no-small", DISTILLED),
    }
    for key, (a, b) in pairs.items():
        d, se = cmp.difference(a, b) if a in cmp.per else (None, None)
        run.glue_text(key, d, "{:+.4f}")
        run.glue_text(f"{key}_se", se, "{:.4f}")
    t = cmp.table
    for col in ("train_seconds", "wall_seconds"):
        run.glue_text(f"distilled_{col}", float(t.loc[DISTILLED, col]) if DISTILLED in t.index else None, "{:.0f}")
