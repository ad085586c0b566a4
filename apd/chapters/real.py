"""The REAL chapter's tables, summaries and figure (``notebooks/real.ipynb``).

Entropies are next-token entropies in nats; ``x`` is ln non-embedding size per member. The THF
model is :mod:`apd.amateur.thf`, its comparison with the world's truth
:mod:`apd.evaluation.entropy_truth`, REAL's threshold :func:`apd.core.filters.real_top_p`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from apd.core.filters import real_top_p
from apd.core.stats import Z_TEST, mean_se, paired_difference
from apd.evaluation.entropy_truth import thf_at_prompts
from apd.report.plots import COLORS, XLABEL_LOG_SIZE, legend, outer_labels, panels
from apd.report.tables import plus_minus
from apd.world.corpus import CorpusConfig, build_corpus
from apd.world.world import BUCKETS

#: A REAL threshold's fact kinds: a one-valued fact (true entropy 0) and a distributional one.
FACTS = ("one-valued", "distributional")


@dataclass(frozen=True)
class RealHeadline:
    """The chapter's headline numbers, as ``results/<profile>/real.json`` holds them."""

    real_heldout_mae_elm: float  # THF curve's mean |error| at the expert on held-out text (nats)
    real_heldout_spread_elm: Any  # the same for a constant at the expert's mean entropy (nats)
    real_n_items: int  # world questions compared with the truth (0 for a Hub family)
    real_err_c: Any  # mean |c - true entropy| (nats; "n/a" without a world)
    real_err_elm: Any  # mean |expert's entropy - true entropy| (nats; "n/a" without a world)
    real_n_buckets_closer: int  # frequency buckets where c is closer to the truth than the expert


def heldout_texts(built, docs: int) -> tuple[list, int]:
    """Held-out documents for the THF fit and their sequence length: the pico corpus's validation
    split, or (a Hub family, ``built`` None) its Wikipedia validation documents at 128 tokens."""
    if built is not None:
        return list(built.corpus.validation)[:docs], int(built.pico_config.seq_len)
    corp = build_corpus(CorpusConfig())
    return [d for d, s in zip(corp.validation, corp.sources["validation"]) if s == "wiki"][:docs], 128


def heldout_fit_table(fit: dict, entropies: np.ndarray, names) -> tuple[pd.DataFrame, np.ndarray]:
    """The THF curve's mean |error| per member (and the direct last prediction's) beside a constant
    at each member's mean entropy, one row per member; and those constants' errors ``(members,)``.

    ``fit``: :func:`apd.amateur.thf.evaluate_thf`'s dict; ``entropies``: ``(chunks, members, S)`` nats.

    Example:
        >>> h = np.array([[[1.0, 3.0], [2.0, 2.0]]])
        >>> t, spread = heldout_fit_table({"mae_curve": {"a": 0.5, "b": 0.1}, "mae_last": 0.2}, h, ["a", "b"])
        >>> spread.tolist(), t.index.tolist()
        ([1.0, 0.0], ['a', 'b', 'direct last prediction'])
    """
    spread = np.abs(entropies - entropies.mean(axis=(0, 2), keepdims=True)).mean(axis=(0, 2))
    table = pd.DataFrame({"THF curve": pd.Series(fit["mae_curve"]), "constant (member's mean)": spread}, index=names)
    table.loc["direct last prediction"] = [fit["mae_last"], spread[-1]]
    table.index.name = "mean |error| (nats)"
    return table, spread


def truth_summary(frame: pd.DataFrame, err: pd.DataFrame, elm: str) -> dict[str, Any]:
    """The truth comparison's glued values (``value`` or ``(value, fmt)``, see
    :func:`apd.chapters.gluing.glue_values`): the mean errors of c, the expert's entropy and
    H_last, the buckets where c is closer, and c's error minus the expert's, paired over the
    questions (``real_c_minus_elm``), with the conditions ``real_c_closer``, ``real_c_farther`` and
    ``real_c_tie`` (95%).

    ``frame``: :func:`apd.evaluation.entropy_truth.entropy_vs_truth`; ``err``: its
    :func:`~apd.evaluation.entropy_truth.entropy_truth_table` of ``abs_error``; ``elm``: the expert's name.

    Example:
        >>> frame = pd.DataFrame({"truth": [0.0, 0.0, 1.0], "H e": [1.0, 2.0, 2.0], "THF c": [0.5, 1.0, 1.5]})
        >>> err = pd.DataFrame({"head": [0.5, 1.0, 0.0], "all": [0.7, 1.3, 0.3]}, index=["THF c", "H e", "truth"])
        >>> err.loc["THF H_last"] = [0.6, 0.6]
        >>> s = truth_summary(frame, err, "e"); s["real_n_buckets_closer"], s["real_c_closer"]
        (1, True)
    """
    elm_row, c_row = f"H {elm}", "THF c"
    buckets = [b for b in err.columns if b != "all"]
    closer = [b for b in buckets if err.loc[c_row, b] < err.loc[elm_row, b]]
    d = paired_difference((frame[c_row] - frame["truth"]).abs(), (frame[elm_row] - frame["truth"]).abs())
    known = d.n > 1 and bool(np.isfinite([d.mean, d.se]).all())
    return {
        "real_n_items": len(frame),
        "real_err_c": (err.loc[c_row, "all"], "{:.3f}"),
        "real_err_elm": (err.loc[elm_row, "all"], "{:.3f}"),
        "real_err_hlast": (err.loc["THF H_last", "all"], "{:.3f}"),
        "real_truth_mean": (err.loc["truth", "all"], "{:.2f}"),
        "real_n_buckets": len(buckets),
        "real_n_buckets_closer": len(closer),
        "real_buckets_closer": (", ".join(closer) if closer else "none", "{}"),
        "real_c_minus_elm": (plus_minus(d.mean, d.se) if known else None, "{}"),
        "real_c_closer": bool(known and d.mean < -Z_TEST * d.se),
        "real_c_farther": bool(known and d.mean > Z_TEST * d.se),
        "real_c_tie": bool(known and abs(d.mean) <= Z_TEST * d.se),
    }


def bucket_records(err: pd.DataFrame, elm: str) -> dict[str, float]:
    """``real_err_c_<bucket>``, ``real_err_elm_<bucket>`` and ``real_truth_<bucket>`` (4 decimals) for the
    results JSON, for every column of the ``abs_error`` table ``err``."""
    out = {}
    for b in err.columns:
        out |= {
            f"real_err_c_{b}": round(float(err.loc["THF c", b]), 4),
            f"real_err_elm_{b}": round(float(err.loc[f"H {elm}", b]), 4),
            f"real_truth_{b}": round(float(err.loc["truth", b]), 4),
        }
    return out


def with_counts(table: pd.DataFrame, name: str) -> pd.DataFrame:
    """``table`` with each column named "bucket (n=...)" from ``table.attrs['n']`` and its index named ``name``."""
    out = table.copy()
    out.columns = [f"{c} (n={table.attrs['n'][c]})" for c in table.columns]
    out.index.name = name
    return out


def plot_entropy_curves(frame: pd.DataFrame, prompts, thf, tokenizer, x, names, window: int):
    """Per frequency bucket: the members' mean entropy, the THF model's mean curve extended past the
    largest member with its mean c, and the mean true entropy; ``prompts``: the questions of ``frame``'s rows."""
    groups = [b for b in BUCKETS if (frame.bucket == b).any()]
    fig, axes = panels(len(groups), ncols=2, panel_height=2.9, sharex=True)
    xs = np.linspace(x[0], x[-1] + 1.5 * (x[-1] - x[0]), 60)
    for ax, b in zip(axes, groups):
        g = frame[frame.bucket == b]
        ax.plot(x, [g[f"H {n}"].mean() for n in names], "o", color=COLORS["members"], label="members")
        th = thf_at_prompts(thf, tokenizer, [p for p, keep in zip(prompts, frame.bucket == b) if keep], window=window)
        curve = thf.curve_at(xs, torch.as_tensor(th["c"]), torch.as_tensor(th["params"])).mean(0).numpy()
        ax.plot(xs, curve, color=COLORS["apd"], label="THF curve (mean)")
        ax.axhline(float(th["c"].mean()), color=COLORS["apd"], ls="--", label="THF c (mean)")
        ax.axhline(float(g["truth"].mean()), color=COLORS["truth"], lw=1.2, label="truth (mean)")
        ax.set_title(f"{b} people (n={len(g)})")
    outer_labels(axes, XLABEL_LOG_SIZE, "next-token entropy (nats)")
    handles, labels = axes[0].get_legend_handles_labels()
    legend(fig, handles=handles, labels=labels, loc="outside lower center", ncol=len(labels))
    return fig


def top_p_frame(frame: pd.DataFrame, T_r: float) -> pd.DataFrame:
    """``frame`` with REAL's ``top-p`` at ``T_r`` from each row's THF c and H_last, and its ``fact``
    kind (one-valued where the true entropy is 0, else distributional).

    Example:
        >>> f = top_p_frame(pd.DataFrame({"THF c": [1.0, 2.0], "THF H_last": [2.0, 2.0], "truth": [0.0, 0.7]}), 1.0)
        >>> [round(float(p), 3) for p in f["top-p"]], f["fact"].tolist()
        ([0.368, 1.0], ['one-valued', 'distributional'])
    """
    top_p = real_top_p(frame["THF c"].to_numpy(), frame["THF H_last"].to_numpy(), T_r).numpy()
    return frame.assign(**{"top-p": top_p, "fact": np.where(frame["truth"] > 1e-6, FACTS[1], FACTS[0])})


def top_p_table(frame: pd.DataFrame, T_r: float) -> pd.DataFrame:
    """Mean top-p per fact kind (rows) and frequency bucket (columns) of :func:`top_p_frame`'s frame."""
    tp = frame.pivot_table(index="fact", columns="bucket", values="top-p", aggfunc="mean")
    tp = tp[[b for b in BUCKETS if b in tp.columns]]
    tp.index.name = f"mean top-p at T_r = {T_r:g}"
    return tp


def top_p_summary(frame: pd.DataFrame) -> dict[str, Any]:
    """Mean top-p over all answer positions and per fact kind, and the distributional facts' mean minus
    the one-valued facts' with its standard error (independent groups; ``real_top_p_dist_minus_one``),
    with the condition ``real_top_p_narrower_one`` (the one-valued facts' nucleus smaller, 95%).

    Example:
        >>> f = pd.DataFrame({"top-p": [0.2, 0.3, 0.9, 0.8], "fact": ["one-valued"] * 2 + ["distributional"] * 2})
        >>> s = top_p_summary(f); s["real_top_p_dist_minus_one"][0], s["real_top_p_narrower_one"]
        ('+0.600 ± 0.071', True)
    """
    out: dict[str, Any] = {"real_mean_top_p": (float(frame["top-p"].mean()), "{:.2f}")}
    stats = {}
    for fact, key in zip(FACTS, ("real_top_p_one", "real_top_p_dist")):
        sel = frame.loc[frame["fact"] == fact, "top-p"]
        out[key] = (float(sel.mean()) if len(sel) else None, "{:.2f}")
        stats[fact] = mean_se(sel.to_numpy())
    (m1, se1), (m2, se2) = stats[FACTS[0]], stats[FACTS[1]]
    d, se = m2 - m1, float(np.hypot(se1, se2))
    known = bool(np.isfinite([d, se]).all())
    out["real_top_p_dist_minus_one"] = (plus_minus(d, se) if known else None, "{}")
    out["real_top_p_narrower_one"] = bool(known and d > Z_TEST * se)
    out["real_top_p_not_narrower_one"] = bool(known and d <= Z_TEST * se)
    return out


def no_world_values() -> dict[str, Any]:
    """What the truth comparison and the thresholds glue for a Hub family, which has no world: every
    measure missing ("n/a"), every count 0, every condition False.

    Example:
        >>> no_world_values()["real_n_items"], no_world_values()["real_err_c"]
        (0, (None, '{:.3g}'))
    """
    missing = (
        "real_err_c",
        "real_err_elm",
        "real_err_hlast",
        "real_buckets_closer",
        "real_truth_mean",
        "real_c_minus_elm",
        "real_mean_top_p",
        "real_top_p_one",
        "real_top_p_dist",
        "real_top_p_dist_minus_one",
    )
    flags = ("real_c_closer", "real_c_farther", "real_c_tie", "real_top_p_narrower_one", "real_top_p_not_narrower_one")
    return (
        {k: (None, "{:.3g}") for k in missing}
        | {k: 0 for k in ("real_n_items", "real_n_buckets", "real_n_buckets_closer")}
        | {k: False for k in flags}
    )
