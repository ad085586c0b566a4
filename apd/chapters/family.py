"""The family chapter's bookkeeping: corpus and member tables, held-out loss, world knowledge by
frequency bucket and the saturation of its curves (``notebooks/family.ipynb``).

Losses are in nats per token; accuracies are shares of questions; sizes are non-embedding parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from apd.family.knowledge import accuracy_table, paired_gain, saturation_table, score_world_qa
from apd.family.pretrain import evaluate_loss
from apd.family.text import token_stream
from apd.chapters.gluing import fmt
from apd.report.plots import COLORS, PALETTE, SMALL_PT, XLABEL_LOG_SIZE, figure, legend
from apd.world.corpus import load_wiki
from apd.world.truth import sample_per_bucket

BUCKETS = ("head", "torso", "tail")
CORPUS_KEYS = ("n_people", "pretrain_tokens", "tail_max_mentions", "head_min_mentions")
SHARES = ["share rising", "share flattening (of rising)", "share past the steepest step (of rising overall)"]


@dataclass(frozen=True)
class FamilyHeadline:
    """The family chapter's headline numbers (its opening); ``apd.report.findings`` reads the
    chapter's member and saturation tables, not these keys."""

    n_members: int  # members of the family
    size_span: float  # largest member's non-embedding parameters over the smallest's
    loss_smallest: float  # held-out loss of the smallest member, nats/token
    loss_largest: float  # held-out loss of the largest member, nats/token
    loss_falls_each_step: bool  # whether held-out loss falls at every step up in size
    tail_acc_smallest: float | None = fmt("{:.3f}", default=None)  # smallest member's tail accuracy (pico only)
    tail_acc_largest: float | None = fmt("{:.3f}", default=None)  # largest member's tail accuracy (pico only)
    tail_gain_significant: bool = False  # the largest member knows clearly more tail facts (False: no world)


def corpus_tables(built):
    """``(token counts per split and source, people per bucket, the counts the prose quotes)``."""
    world = built.corpus.world
    stats = built.corpus.stats(built.tokenizer)
    people = world.people_frame()
    per_bucket = people.groupby("bucket")["mentions"].agg(["count", "min", "max", "sum"]).loc[list(BUCKETS)]
    values = {
        "n_people": len(people),
        "pretrain_tokens": int(stats.loc[stats["split"] == "pretrain", "tokens"].sum()),
        "tail_max_mentions": int(per_bucket.loc["tail", "max"]),
        "head_min_mentions": int(per_bucket.loc["head", "min"]),
    }
    per_bucket = per_bucket.rename(
        columns={"count": "people", "min": "min mentions", "max": "max mentions", "sum": "biographies"}
    )
    return stats, per_bucket, values


def member_table(fam, built):
    """``(one row per member with its size, location and, for pico, training time in s; total
    training seconds or NaN)``."""
    sizes = fam.table()
    if built is None:
        return sizes, float("nan")
    info = built.manifest()
    times = info.get("train_seconds", {})
    sizes["train time (s)"] = [float(times.get(n, float("nan"))) for n in sizes["member"]]
    return sizes, float(info.get("total_train_seconds", float("nan")))


def heldout_losses(fam, built, n_tokens: int) -> pd.DataFrame:
    """Each member's mean next-token loss (nats/token) on ``n_tokens`` of held-out text: the world's
    and Wikipedia's validation split for pico, the last 200 Wikipedia leads for a Hub family."""
    texts = built.corpus.validation if built is not None else [a.text for a in load_wiki()[-200:]]
    ids = token_stream(fam.tokenizer, texts)[:n_tokens]
    losses = []
    for name in fam.names:
        with fam.on_device(name) as model:
            losses.append(evaluate_loss(model, ids, seq_len=128, batch_size=16))
    return pd.DataFrame(
        {"member": fam.names, "ln non-embedding size": fam.log_sizes, "held-out loss (nats/token)": losses}
    )


def loss_falls(losses) -> bool:
    """Whether the losses (nats/token, smallest member first) fall at every step up in size.

    Example:
        >>> loss_falls([3.1, 2.8, 2.5]), loss_falls([3.1, 3.2]), loss_falls([3.1, 2.8, 2.9])
        (True, False, False)
    """
    return bool(np.all(np.diff(np.asarray(losses, dtype=float)) < 0))


def plot_losses(fam, losses):
    """Held-out loss against log size, one labelled point per member."""
    fig, ax = figure()
    ax.plot(fam.log_sizes, losses, marker="o", color=COLORS["members"])
    for x, loss, name in zip(fam.log_sizes, losses, fam.names):
        ax.annotate(name, (x, loss), textcoords="offset points", xytext=(4, 4), fontsize=SMALL_PT)
    ax.set_xlabel(XLABEL_LOG_SIZE)
    ax.set_ylabel("held-out loss (nats/token)")
    ax.set_title("Held-out loss against size")
    return fig


@dataclass
class Knowledge:
    """World QA of every member: scores, accuracy and top-1 share by member (rows) and bucket, the
    paired gain of the largest member over the smallest per bucket (exact McNemar), chance accuracy,
    and ``per_bucket``, the most items drawn from one bucket (a bucket with fewer gives all it has)."""

    items: list
    scores: object
    acc: pd.DataFrame
    top1: pd.DataFrame
    gains: pd.DataFrame
    chance: float
    per_bucket: int = 0


def knowledge(fam, built, per_bucket: int, rng) -> Knowledge:
    """Ask every member at most ``per_bucket`` questions per bucket about single-valued attributes (a
    bucket with fewer questions gives all of them)."""
    items = sample_per_bucket(built.corpus.qa_items, per_bucket, rng, exclude=("drink", "hobby"))
    scores = score_world_qa(fam, built.corpus.world, items, batch_size=64)
    gains = pd.DataFrame(
        [{"bucket": b, **paired_gain(scores.frame, fam.names[0], fam.names[-1], bucket=b)} for b in BUCKETS]
    ).set_index("bucket")
    return Knowledge(
        items,
        scores,
        accuracy_table(scores.frame, "mc_correct"),
        accuracy_table(scores.frame, "top1"),
        gains,
        1 / len(items[0].choices),
        per_bucket,
    )


def knowledge_values(k: Knowledge | None, alpha: float) -> dict:
    """The numbers the prose quotes about world knowledge (empty without a world)."""
    if k is None:
        return {}
    tail = k.gains.loc["tail"]
    clearly = tail["gain"] > 0 and tail["p_value"] < alpha
    return {
        "qa_items": len(k.items),
        "chance": k.chance,
        "tail_acc_smallest": float(k.acc["tail"].iloc[0]),
        "tail_acc_largest": float(k.acc["tail"].iloc[-1]),
        "head_acc_smallest": float(k.acc["head"].iloc[0]),
        "head_acc_largest": float(k.acc["head"].iloc[-1]),
        "tail_gain_significant": bool(clearly),
        "tail_gain": float(tail["gain"]),
        "tail_p": float(tail["p_value"]),
        "tail_only_largest": int(tail["only_larger"]),
        "tail_only_smallest": int(tail["only_smaller"]),
    }


def glue_knowledge(run, k: Knowledge | None, values: dict, alpha: float) -> None:
    """Glue the buckets whose accuracy rises, the most items drawn per bucket (``qa_per_bucket``) and
    the items of each bucket (``qa_items_<bucket>``), and every value of :func:`knowledge_values` but
    the headline's ("n/a" without a world)."""
    if k is None:
        run.glue("rising_buckets", "n/a (the world exists only for pico)")
    else:
        rising = {b: bool(k.acc[b].iloc[-1] > k.acc[b].iloc[0]) for b in BUCKETS}
        run.glue("rising_buckets", ", ".join(b for b, r in rising.items() if r) or "none")
    run.glue_text("qa_per_bucket", k.per_bucket if k is not None else None, "{:d}")
    for b in BUCKETS:
        n = sum(it.bucket == b for it in k.items) if k is not None else None
        run.glue_text(f"qa_items_{b}", n, "{:d}")
    run.glue_text("alpha", alpha, "{:g}")
    formats = {
        "qa_items": "{:d}",
        "tail_gain": "{:+.3f}",
        "head_acc_smallest": "{:.3f}",
        "head_acc_largest": "{:.3f}",
        "tail_p": "{:.2g}",
        "tail_only_largest": "{:d}",
        "tail_only_smallest": "{:d}",
    }
    for name in (
        "qa_items",
        "chance",
        "head_acc_smallest",
        "head_acc_largest",
        "tail_gain",
        "tail_p",
        "tail_only_largest",
        "tail_only_smallest",
    ):
        run.glue_text(name, values.get(name), formats.get(name, "{:.2f}"))


def plot_knowledge(fam, k: Knowledge):
    """Accuracy (left, chance dotted) and top-1 share (right) against log size, one line per bucket."""
    fig, axes = figure(ncols=2)
    for i, b in enumerate(BUCKETS):
        axes[0].plot(fam.log_sizes, k.acc[b], marker="o", color=PALETTE[i], label=b)
        axes[1].plot(fam.log_sizes, k.top1[b], marker="o", color=PALETTE[i], label=b)
    axes[0].axhline(k.chance, color="k", lw=0.8, ls=":", label="chance")
    axes[0].set_ylabel("multiple-choice accuracy\n(share of items)")
    axes[1].set_ylabel("gold first token ranked 1st\n(share of items)")
    for ax in axes:
        ax.set_xlabel(XLABEL_LOG_SIZE)
        ax.set_ylim(0, 1.02)
    legend(axes[0], title="bucket")  # one legend: the buckets are drawn alike in both panels
    fig.suptitle("World QA by frequency bucket against size")
    return fig


def glue_saturation(run, k: Knowledge | None) -> pd.DataFrame | None:
    """Glue per bucket the shares of rising, flattening and past-their-steepest gold curves, the
    mean gold probability of the smallest and largest member, the head and tail slopes, and whether
    the family is in Pythia's regime (head curves bend, tail curves rise); return the saturation
    table (None without a world)."""
    if k is None:
        run.glue_text("sat_ratio", 0.5, "{:.0%}")
        for b in BUCKETS:
            for key in ("rising", "flat", "past", "p_first", "p_last", "first_slope", "last_slope"):
                run.glue_text(f"sat_{b}_{key}", None)
        run.glue("sat_regime_as_pythia", False)
        run.glue("sat_regime_not_as_pythia", False)
        return None
    sat = saturation_table(k.scores)
    run.glue_text("sat_ratio", sat.attrs["ratio"], "{:.0%}")
    for b in BUCKETS:
        row = sat.loc[b] if b in sat.index else None
        for key, col in zip(("rising", "flat", "past"), SHARES):
            run.glue_text(f"sat_{b}_{key}", None if row is None else row[col], "{:.0%}")
        p_b = k.scores.frame[k.scores.frame["bucket"] == b].groupby("member", sort=False)["p_gold"].mean()
        run.glue_text(f"sat_{b}_p_first", float(p_b.iloc[0]) if len(p_b) else None, "{:.3f}")
        run.glue_text(f"sat_{b}_p_last", float(p_b.iloc[-1]) if len(p_b) else None, "{:.3f}")
    slope = {
        (b, s): (float(sat.loc[b, f"mean {s} slope"]) if b in sat.index else None)
        for b in ("head", "tail")
        for s in ("first", "last")
    }
    for (b, s), v in slope.items():
        run.glue_text(f"sat_{b}_{s}_slope", v, "{:.3f}")
    regime = (
        None not in slope.values() and slope["head", "last"] < slope["head", "first"] and slope["tail", "last"] > 0
    )
    run.glue("sat_regime_as_pythia", bool(regime))
    run.glue("sat_regime_not_as_pythia", not regime)
    return sat


def headline(fam, losses, values: dict) -> FamilyHeadline:
    """The chapter's :class:`FamilyHeadline` from its losses and :func:`knowledge_values`."""
    return FamilyHeadline(
        n_members=len(fam.names),
        size_span=float(fam.n_nonembedding[-1] / fam.n_nonembedding[0]),
        loss_smallest=losses[0],
        loss_largest=losses[-1],
        loss_falls_each_step=loss_falls(losses),
        tail_acc_smallest=values.get("tail_acc_smallest"),
        tail_acc_largest=values.get("tail_acc_largest"),
        tail_gain_significant=bool(values.get("tail_gain_significant", False)),
    )
