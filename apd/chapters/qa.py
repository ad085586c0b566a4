"""The QA chapter's bookkeeping: which ALM' and reference it runs, the world's questions and their
summaries, the paper's datasets, and the numbers the prose quotes (``notebooks/qa.ipynb``).

Every mean and test comes from :mod:`apd.evaluation.qa_scoring`; this module only selects rows,
assembles tables and glues values. "ppl" is the paper's mean ``-log(p + 0.01)`` in nats.

On the world's questions every mean, difference, standard error, interval and p-value is of one
estimand, the person mean: each test person's questions are averaged first, then the people
(questions about one person are not independent). Intervals and p-values use Student's t with
one degree of freedom fewer than the people they average (:func:`apd.core.stats.critical`).
"""

from __future__ import annotations

import dataclasses
import os
import socket
from dataclasses import dataclass
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from apd.amateur.pipeline import apd_model
from apd.amateur.runs import load_alm_prime
from apd.core.stats import critical, min_detectable_effect
from apd.evaluation.qa_data import try_load
from apd.evaluation.qa_scoring import (
    METHOD_ROLES,
    METRICS,
    PAPER_DATASETS,
    PROTOCOLS,
    chance_accuracy,
    gap_rows,
    qa_summary,
    score_qa,
    significance,
    table_layout,
)
from apd.family.loading import load_family
from apd.report.beside import paper_rows
from apd.chapters.apd import alm_prime_words, gate_verdict, glue_near_expert
from apd.chapters.gluing import fmt
from apd.report.paper import qa_gain
from apd.report.plots import COLORS, legend, panels, wrap
from apd.report.tables import better_word, compare_flags, plus_minus
from apd.world.truth import dev_test_split
from apd.world.world import BUCKETS

RANKS = ("head", "torso", "tail")
DISTRIBUTIONAL = ("drink", "hobby")  # attributes without a single correct answer


@dataclass(frozen=True)
class QAHeadline:
    """The QA chapter's headline numbers, read by the paper's claims (``apd.report.claims``)."""

    world_ho_ppl_apd: float | None = fmt("{:.3f}", default=None)  # APD's mean ppl, world test half, 1/T from dev
    world_ho_ppl_cd: float | None = fmt("{:.3f}", default=None)  # CD's, the same way
    world_pp_ppl_apd: float | None = fmt("{:.3f}", default=None)  # APD's, 1/T picked on the test half (paper)
    world_pp_ppl_cd: float | None = fmt("{:.3f}", default=None)  # CD's, the same way
    world_ho_ppl_gain: float | None = fmt("{:.4f}", default=None)  # CD's ppl minus APD's, person mean (> 0: APD)
    world_ho_ppl_gain_se: float | None = fmt("{:.4f}", default=None)  # its standard error over people
    world_ho_ppl_cd_gain: float | None = fmt("{:.4f}", default=None)  # the ELM's ppl minus CD's, mean over people
    world_ho_ppl_cd_gain_se: float | None = fmt("{:.4f}", default=None)  # its standard error over people
    datasets_ppl_gain: float | None = fmt("{:.4f}", default=None)  # CD's ppl minus APD's, mean over datasets
    datasets_ppl_gain_se: float | None = fmt("{:.4f}", default=None)  # its standard error
    datasets_ppl_cd_gain: float | None = fmt("{:.4f}", default=None)  # the ELM's ppl minus CD's, mean over datasets
    datasets_ppl_cd_gain_se: float | None = fmt("{:.4f}", default=None)  # its standard error


def method_names(fam) -> dict[str, str]:
    """Row labels of the methods: ``{"elm": "ELM (<name>)", "cd": "CD", "apd": "APD", "ref": ...}``."""
    return {"elm": f"ELM ({fam.elm})", "cd": "CD", "apd": "APD", "ref": "LLM (bigger)"}


def alm_prime_for(fam, built, path, scale: str, seed: int):
    """``(ALM', a sentence on where it comes from)``: loaded from ``path``, else the APD chapter's
    engaged variant (``apd_model(..., variant="engaged")``, cached)."""
    if path:
        return load_alm_prime(path, fam.device), f"loaded from {path}"
    res = apd_model(fam, built, scale=scale, progress=False, seed=seed, variant="engaged")
    return load_alm_prime(res, fam.device), alm_prime_words(res)


def reference_for(fam, family: str, use_reference: bool, local_dir=None, load_kwargs=None):
    """``(the family's bigger reference model or None, what the prose reads)``: ``reference_model``, the
    reference's name (None when the family has no model bigger than its ELM), and ``reference_used``,
    whether it runs (it filters the answers too and gives the gap rows; ``use_reference=False`` skips it).
    """
    ref_spec = fam.spec.reference
    ref = None
    if ref_spec is not None and use_reference:
        ref = load_family(
            family, members=[ref_spec.name], local_dir=local_dir, device=fam.device, **(load_kwargs or {})
        )
    return ref, {"reference_model": None if ref_spec is None else ref_spec.name, "reference_used": ref is not None}


def glue_setup(run, *, top_k: int, inv_T_grid, profile: str, alm_prime_source: str, reference: dict) -> None:
    """Glue the chapter's settings: top-k, the 1/T grid, which ALM', the reference (``reference``:
    :func:`reference_for`'s values; its name "n/a" when the family has none), the gates' verdict."""
    run.glue("top_k", top_k)
    run.glue("alm_prime_source", alm_prime_source)
    run.glue_text("reference_model", reference["reference_model"], "{}")
    run.glue("reference_used", bool(reference["reference_used"]))
    run.glue("n_inv_T", len(inv_T_grid))
    run.glue_text("inv_T_min", min(inv_T_grid), "{:g}")
    run.glue_text("inv_T_max", max(inv_T_grid), "{:g}")
    run.glue("gate_verdict", gate_verdict(profile))
    run.glue_text("paper_qa_gain", qa_gain(), "{:.3f}")


def world_questions(built, per_bucket: int | None, seed: int, split_seed: int):
    """``(dev items, test items)``: the world's questions about single-valued attributes, at most
    ``per_bucket`` per frequency bucket (drawn with ``seed``), split by person
    (:func:`apd.world.truth.dev_test_split`)."""
    rng = np.random.default_rng(seed)
    items = []
    for bucket in BUCKETS:
        pool = [it for it in built.corpus.qa_items if it.bucket == bucket and it.attribute not in DISTRIBUTIONAL]
        if per_bucket is not None and len(pool) > per_bucket:
            pool = [pool[i] for i in sorted(rng.choice(len(pool), per_bucket, replace=False))]
        items += pool
    return dev_test_split(items, built.corpus.world, split_seed)


def value(table: pd.DataFrame, protocol: str, metric: str, method: str, group: str = "all") -> float:
    """One mean of a :func:`apd.evaluation.qa_scoring.qa_summary` table (NaN when absent).

    Example:
        >>> t = pd.DataFrame({"protocol": ["paper"], "metric": ["ppl"], "method": ["cd"], "group": ["all"],
        ...                   "value": [1.25]})
        >>> value(t, "paper", "ppl", "cd"), value(t, "paper", "ppl", "apd")
        (1.25, nan)
    """
    r = table[
        (table.protocol == protocol) & (table.metric == metric) & (table.method == method) & (table.group == group)
    ]
    return float(r["value"].iloc[0]) if len(r) else float("nan")


def direction(apd_value: float, cd_value: float, metric: str, digits: int = 9) -> str:
    """APD against CD in words ("better than", "worse than", "the same as" to ``digits`` decimals, ...).

    Example:
        >>> direction(1.2, 1.3, "ppl"), direction(0.5, 0.6, "acc")
        ('better than', 'worse than')
    """
    return better_word(apd_value, cd_value, lower_is_better=not METRICS[metric], digits=digits)


def direction_flags(apd_value: float, cd_value: float, metric: str, key: str) -> dict[str, bool]:
    """:func:`direction` to the 3 decimals the prose prints the means with, as the booleans the
    prose's ``needs:`` tags read (:func:`apd.report.tables.compare_flags`): ``<key>_apd_better``,
    ``<key>_apd_worse`` and ``<key>_apd_same`` (all False when either value is missing).

    Example:
        >>> direction_flags(1.2, 1.3, "ppl", "world_ho_ppl")
        {'world_ho_ppl_apd_better': True, 'world_ho_ppl_apd_worse': False, 'world_ho_ppl_apd_same': False}
    """
    flags = compare_flags(apd_value, cd_value, digits=3, lower_is_better=not METRICS[metric])
    return {f"{key}_apd_{outcome}": flag for outcome, flag in flags.items()}


@dataclass
class WorldQA:
    """The world's questions scored (dev half first): per-question scores and their summaries.

    summary: :func:`qa_summary` by bucket, reported on the test half with 1/T picked on the dev half,
    every mean a mean over people of each person's mean; sig / sig_acc: APD against CD on ppl and
    on accuracy, the person-mean difference with its standard error, t interval and p over people.
    """

    scores: object
    n_dev: int
    is_test: np.ndarray
    bucket: np.ndarray
    person: np.ndarray
    summary: pd.DataFrame
    sig: pd.DataFrame
    sig_acc: pd.DataFrame

    @classmethod
    def from_scores(cls, scores, n_dev: int) -> WorldQA:
        """Summarise ``scores`` of ``n_dev`` dev questions followed by the test questions."""
        is_test = np.arange(len(scores)) >= n_dev
        bucket, person = scores.meta_column("bucket"), scores.meta_column("person")
        kw = {"report": is_test, "select": ~is_test, "by": bucket, "cluster": person}
        return cls(
            scores,
            n_dev,
            is_test,
            bucket,
            person,
            qa_summary(scores, **kw),
            significance(scores, **kw),
            significance(scores, metric="acc", **kw),
        )

    def ttests(self) -> pd.DataFrame:
        """The ppl and accuracy t-tests in one frame (ppl first)."""
        return pd.concat([self.sig, self.sig_acc])

    def contrast(self, a: str, b: str, metric: str = "ppl", by_bucket: bool = False) -> pd.DataFrame:
        """Held-out ``a`` minus ``b``, the mean over test people of each person's mean difference
        (``significance`` rows with ``cluster``, indexed by group: "all", and each bucket when
        ``by_bucket``)."""
        kw = {"by": self.bucket} if by_bucket else {}
        s = significance(
            self.scores, a, b, metric, report=self.is_test, select=~self.is_test, cluster=self.person, **kw
        )
        return s[s.protocol == "held-out"].set_index("group")


def world_tables(world: WorldQA, names: dict[str, str]):
    """``(means, chosen 1/T)``: every method's test-half mean by bucket (rows: bucket, method;
    columns: protocol, metric), and the 1/T each protocol chose for CD and APD."""
    wt = world.summary
    means = wt.assign(method=wt["method"].map(names)).pivot_table(
        index=["group", "method"], columns=["protocol", "metric"], values="value", sort=False
    )
    chosen = (
        wt[(wt.group == "all") & (wt.method.isin(["cd", "apd"]))]
        .pivot_table(index="method", columns=["protocol", "metric"], values="inv_T", aggfunc="first", sort=False)
        .rename(index=names)
    )
    return means, chosen


def held_out(means: pd.DataFrame) -> pd.DataFrame:
    """The held-out protocol's columns of :func:`world_tables`' means (one per metric), the protocol
    the verdicts read: five columns with the row labels, so the table fits the text. When no
    held-out mean exists (too few dev questions to pick 1/T), ``means`` as it is.

    Example:
        >>> cols = pd.MultiIndex.from_product([["paper", "held-out"], ["ppl", "acc"]])
        >>> held_out(pd.DataFrame([[1.0, 0.5, 1.1, 0.4]], columns=cols)).columns.tolist()
        ['ppl', 'acc']
    """
    return means["held-out"] if "held-out" in means.columns.get_level_values(0) else means


def glue_world_counts(run, world: WorldQA | None) -> None:
    """Glue the dev and test sizes (questions and people), how many test questions per bucket pass
    the filter, and how many test people per bucket have one that does."""
    if world is None:
        for name in ("world_n_dev", "world_n_test", "world_counts", "world_n_test_people", "world_people_counts"):
            run.glue(name, "n/a")
        return
    run.glue("world_n_dev", world.n_dev)
    run.glue("world_n_test", int(world.is_test.sum()))
    run.glue("world_n_test_people", len(set(world.person[world.is_test])))
    counts = {b: int((world.is_test & (world.bucket == b)).sum()) for b in BUCKETS}
    kept = {b: int((world.is_test & (world.bucket == b) & world.scores.kept).sum()) for b in BUCKETS}
    run.glue("world_counts", ", ".join(f"{b} {kept[b]} of {counts[b]}" for b in BUCKETS))
    people = {b: len(set(world.person[world.is_test & (world.bucket == b) & world.scores.kept])) for b in BUCKETS}
    run.glue("world_people_counts", ", ".join(f"{b} {people[b]}" for b in BUCKETS))


#: the columns of :func:`gain_by_bucket` that hold APD's gains (signed: positive is APD better)
GAIN_COLUMNS = ("ppl: CD - APD", "acc: APD - CD", "MRR: APD - CD")


def gain_by_bucket(world: WorldQA | None) -> pd.DataFrame | None:
    """APD's gain over CD per bucket (held-out 1/T; positive: APD better), each the mean over the
    bucket's test people of their mean paired difference: on ppl with its standard error, 95% t
    interval (people - 1 degrees of freedom) and t-test p over those people; on accuracy and MRR;
    the ELM's accuracy (mean over people); the people and questions the ppl gain counts. Rows head,
    torso, tail; None without a world."""
    if world is None:
        return None
    ppl = world.contrast("apd", "cd", "ppl", by_bucket=True)
    acc = world.contrast("apd", "cd", "acc", by_bucket=True)
    mrr = world.contrast("apd", "cd", "MRR", by_bucket=True)

    def col(frame, name, sign=1.0):
        return [sign * float(frame.loc[b, name]) if b in frame.index else float("nan") for b in RANKS]

    return pd.DataFrame(
        {
            "ppl: CD - APD": col(ppl, "diff", -1.0),
            "se (ppl)": col(ppl, "se_clustered"),
            "95% CI low (ppl, t)": col(ppl, "ci_high", -1.0),
            "95% CI high (ppl, t)": col(ppl, "ci_low", -1.0),
            "acc: APD - CD": col(acc, "diff"),
            "MRR: APD - CD": col(mrr, "diff"),
            "ELM acc": [value(world.summary, "held-out", "acc", "elm", b) for b in RANKS],
            "p (ppl, paired)": col(ppl, "p_clustered"),
            "people (ppl)": [int(ppl.loc[b, "n_clusters"]) if b in ppl.index else 0 for b in RANKS],
            "questions (ppl)": [int(ppl.loc[b, "n"]) if b in ppl.index else 0 for b in RANKS],
        },
        index=list(RANKS),
    )


def gain_shown(gain: pd.DataFrame) -> pd.DataFrame:
    """:func:`gain_by_bucket` as the page shows it: the ppl gain's t interval as one "[low, high]"
    column after its standard error, then the tests' counts, then the other metrics.

    Example:
        >>> g = pd.DataFrame({"ppl: CD - APD": [0.01], "se (ppl)": [0.004], "95% CI low (ppl, t)": [0.001],
        ...                   "95% CI high (ppl, t)": [0.019], "p (ppl, paired)": [0.04]}, index=["head"])
        >>> gain_shown(g).loc["head", "95% t interval (ppl)"]
        '[+0.001, +0.019]'
    """
    lo, hi = gain["95% CI low (ppl, t)"], gain["95% CI high (ppl, t)"]
    ci = ["n/a" if np.isnan(a) or np.isnan(b) else f"[{a:+.3f}, {b:+.3f}]" for a, b in zip(lo, hi)]
    out = gain.drop(columns=[lo.name, hi.name])
    out.insert(list(out.columns).index("se (ppl)") + 1, "95% t interval (ppl)", ci)
    return out


def easy_claim(gain: pd.DataFrame) -> dict:
    """Whether APD gains most on the bucket the ELM finds easiest, and how surely: the values the
    prose's conditions read (``world_best_bucket`` ... ``world_easy_not``). ``world_best_bucket`` is
    None (missing) where APD gains in no bucket.

    Example:
        >>> g = pd.DataFrame({"ppl: CD - APD": [0.02, -0.01], "ELM acc": [0.9, 0.2], "p (ppl, paired)": [0.01, 0.5],
        ...                   "questions (ppl)": [30, 40]}, index=["head", "tail"])
        >>> out = easy_claim(g)
        >>> none = easy_claim(g.assign(**{"ppl: CD - APD": [-0.02, -0.01]}))
        >>> out["world_best_bucket"], out["world_easy_significant"], none["world_best_bucket"], none["world_easy_not"]
        ('head', True, None, True)
    """
    valid, easiest = gain["ppl: CD - APD"].dropna(), gain["ELM acc"].dropna()
    holds = bool(len(valid) and len(easiest) and valid.idxmax() == easiest.idxmax() and valid.max() > 1e-9)
    best = valid.idxmax() if len(valid) else None
    best_p = None if best is None else float(gain.loc[best, "p (ppl, paired)"])
    significant = best_p is not None and best_p < 0.05
    return {
        "world_gain_buckets": ", ".join(b for b, v in valid.items() if v > 1e-9) or "none",
        "world_best_bucket": best if len(valid) and valid.max() > 1e-9 else None,
        "world_easiest_bucket": easiest.idxmax() if len(easiest) else "n/a",
        "world_best_bucket_p": best_p,
        "world_best_bucket_n": int(gain.loc[best, "questions (ppl)"]) if best is not None else 0,
        "world_best_bucket_people": (
            int(gain.loc[best, "people (ppl)"]) if best is not None and "people (ppl)" in gain else 0
        ),
        "world_easy_significant": bool(holds and significant),
        "world_easy_direction_only": bool(holds and not significant),
        "world_easy_not": not holds,
    }


_WORLD_NUMBERS = (
    "world_ho_ppl_p",
    "world_ho_ppl_gain_mde",
    "world_ho_ppl_n_people",
    "world_ho_ppl_cd_gain_p",
)


def glue_world(run, world: WorldQA | None, gain: pd.DataFrame | None) -> None:
    """Glue every world number the prose quotes but the headline's: means (over people) and
    directions per protocol and metric (:func:`direction_flags`), the person-mean ppl gain's t interval and t-test,
    CD's ppl minus APD's per bucket (``world_gain_<bucket>``, "n/a" where the bucket has no scored
    question) and the easy-question claim ("n/a" without a world)."""
    headline = {f.name for f in dataclasses.fields(QAHeadline)}
    means = [(p, t, m) for p, t in (("held-out", "ho"), ("paper", "pp")) for m in ("ppl", "acc", "MRR")]
    if world is None:
        for name in _WORLD_NUMBERS + tuple(f"world_{t}_{m}_{x}" for _, t, m in means for x in ("elm", "cd", "apd")):
            if name not in headline:
                run.glue_text(name, None)
        for _, t, m in means:
            for name in direction_flags(float("nan"), float("nan"), m, f"world_{t}_{m}"):
                run.glue(name, False)
        for b in RANKS:
            run.glue_text(f"world_gain_{b}", None)
        for name in [
            "world_gain_buckets",
            "world_best_bucket",
            "world_easiest_bucket",
            "world_best_bucket_n",
            "world_best_bucket_people",
        ]:
            run.glue(name, "n/a")
        run.glue_text("world_best_bucket_p", None)
        run.glue_text("world_ho_ppl_gain_pm", None)
        run.glue_text("world_ho_ppl_gain_ci", None)
        for name in ("world_easy_significant", "world_easy_direction_only", "world_easy_not"):
            run.glue(name, False)
        return
    wt = world.summary
    for proto, tag, metric in means:
        for m in ("elm", "cd", "apd"):
            if f"world_{tag}_{metric}_{m}" not in headline:
                run.glue_text(f"world_{tag}_{metric}_{m}", value(wt, proto, metric, m), "{:.3f}")
        flags = direction_flags(
            value(wt, proto, metric, "apd"), value(wt, proto, metric, "cd"), metric, f"world_{tag}_{metric}"
        )
        for name, flag in flags.items():
            run.glue(name, flag)
    s = world.sig[(world.sig.protocol == "held-out") & (world.sig.group == "all")].iloc[0]
    n_people = int(s["n_clusters"])
    run.glue_text("world_ho_ppl_p", s["p_clustered"], "{:.3g}")
    run.glue_text("world_ho_ppl_n_people", n_people, "{:.0f}")
    mde = min_detectable_effect(s["se_clustered"], z=critical(n_people)) if n_people >= 2 else None
    run.glue_text("world_ho_ppl_gain_mde", mde, "{:.4f}")
    run.glue_text("world_ho_ppl_gain_pm", plus_minus(-s["diff"], s["se_clustered"]), "{}")
    ci = None if np.isnan(s["ci_low"]) else f"[{-s['ci_high']:+.4f}, {-s['ci_low']:+.4f}]"
    run.glue_text("world_ho_ppl_gain_ci", ci, "{}")
    run.glue("world_ho_ppl_n", int(s["n"]))
    run.glue_text("world_ho_ppl_cd_gain_p", world.contrast("cd", "elm").loc["all", "p_clustered"], "{:.3g}")
    for b in RANKS:
        run.glue_text(f"world_gain_{b}", gain.loc[b, "ppl: CD - APD"], "{:+.3f}")
    for name, v in easy_claim(gain).items():
        if name in ("world_best_bucket_p", "world_best_bucket"):
            run.glue_text(name, v, "{:.3g}" if name == "world_best_bucket_p" else "{}")
        else:
            run.glue(name, v)


def glue_apd_context(run, profile: str, built, world: WorldQA | None, split_seed: int = 0) -> None:
    """Glue what the APD chapter's results say about this chapter's comparison: whether ALM'
    collapsed onto the expert (:func:`apd.chapters.apd.glue_near_expert`), and the counts that say
    why its number of test questions differs from this chapter's (:func:`count_values`; "n/a" each
    without a world or without the APD chapter's count)."""
    apd = glue_near_expert(run, profile)
    for name, v in count_values(apd, built, world, split_seed).items():
        run.glue_text(name, v, "{}" if isinstance(v, str) else "{:,}")


#: :func:`count_values`' keys
COUNT_KEYS = (
    "apd_n_test_items",
    "apd_qa_per_bucket",
    "world_n_test_kept",
    "world_n_split_test",
    "world_n_split_distributional",
    "world_n_split_single",
    "world_split_per_bucket",
)


def count_values(apd: dict, built, world: WorldQA | None, split_seed: int = 0) -> dict:
    """The counts behind the APD chapter's number of world test questions (``apd["n_test_items"]``, at
    most ``apd["qa_per_bucket"]`` per bucket, drawn from every attribute) beside this chapter's:
    ``apd_n_test_items``, ``apd_qa_per_bucket``; this chapter's test questions that pass the filter
    (``world_n_test_kept``); the split's test questions (``world_n_split_test``), of them those about the
    attributes without a single correct answer (:data:`DISTRIBUTIONAL`, ``world_n_split_distributional``)
    and the others (``world_n_split_single``), and per bucket (``world_split_per_bucket``, "head 120,
    torso 200, tail 440"). Every value None without a world or without the APD chapter's count."""
    n_apd = apd.get("n_test_items")
    if world is None or built is None or not isinstance(n_apd, int) or n_apd <= 0:
        return dict.fromkeys(COUNT_KEYS)
    _, test_all = dev_test_split(built.corpus.qa_items, built.corpus.world, split_seed)
    n_dist = sum(it.attribute in DISTRIBUTIONAL for it in test_all)
    per_bucket = {b: sum(it.bucket == b for it in test_all) for b in BUCKETS}
    cap = apd.get("qa_per_bucket")
    return {
        "apd_n_test_items": n_apd,
        "apd_qa_per_bucket": cap if isinstance(cap, int) else None,
        "world_n_test_kept": int((world.is_test & world.scores.kept).sum()),
        "world_n_split_test": len(test_all),
        "world_n_split_distributional": n_dist,
        "world_n_split_single": len(test_all) - n_dist,
        "world_split_per_bucket": ", ".join(f"{b} {n:,}" for b, n in per_bucket.items()),
    }


def improvements(world: WorldQA) -> dict:
    """``{(metric, a, b): (mean, se)}`` per bucket and "all": APD over CD and CD over the ELM,
    signed so that positive is better (held-out 1/T), each the mean over people of their mean
    paired difference with its standard error over people."""
    out = {}
    for metric in ("ppl", "acc", "MRR"):
        sign = 1.0 if METRICS[metric] else -1.0
        for a, b in (("apd", "cd"), ("cd", "elm")):
            sg = world.contrast(a, b, metric, by_bucket=True)
            out[(metric, a, b)] = (sign * sg["diff"], sg["se_clustered"])
    return out


def plot_improvements(world: WorldQA):
    """Three bar panels (ppl, accuracy, MRR) of :func:`improvements` by bucket, ±1 standard error."""
    imp = improvements(world)
    fig, axes = panels(3, ncols=2)
    width, groups = 0.38, list(RANKS) + ["all"]
    for ax, metric, label in zip(
        axes, ("ppl", "acc", "MRR"), ("ppl decrease (nats)", "accuracy increase", "MRR increase")
    ):
        for j, (a, b, name) in enumerate((("apd", "cd", "APD over CD"), ("cd", "elm", "CD over the ELM"))):
            mean, se = imp[(metric, a, b)]
            ax.bar(
                np.arange(len(groups)) + (j - 0.5) * width,
                mean.reindex(groups),
                width,
                yerr=se.reindex(groups).fillna(0),
                capsize=3,
                color=COLORS[a],
                label=name,
            )
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(np.arange(len(groups)), groups)
        ax.set_xlabel("frequency bucket of the person")
        ax.set_ylabel(wrap(f"{label} (> 0: better)", 24))
    handles, labels = axes[0].get_legend_handles_labels()
    legend(fig, handles=handles, labels=labels, loc="outside lower center", ncol=2)
    fig.suptitle(
        wrap(
            "World QA, test half: improvements, mean over people (1/T picked on the dev half; bars: ±1 standard "
            "error over people)",
            80,
        )
    )
    return fig


#: What the page says, in one line, when none of the paper's QA datasets could be had here.
DATA_MISSING = (
    "The paper's QA datasets are not on this machine: set APD_DATA_DIR to a folder made by "
    "`apd data fetch FOLDER` on a connected machine (see Data); this section is skipped."
)


_ON = ("1", "true", "yes", "on")  # how HF_HUB_OFFLINE says "offline"


def hub_unreachable(data_dir=None, timeout: float = 2.0) -> str | None:
    """Why the QA datasets cannot come from the Hub here, or None: only when they would (no
    ``data_dir``, no ``$APD_DATA_DIR``, Hugging Face not told to stay offline) and no connection to
    the Hub (``$HF_ENDPOINT`` or huggingface.co) opens within ``timeout`` seconds. The loaders then
    need not each spend their retries (about 20 s a dataset) to find that out."""
    offline = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    if data_dir or os.environ.get("APD_DATA_DIR") or any(os.environ.get(v, "").lower() in _ON for v in offline):
        return None
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    try:
        socket.create_connection((url.hostname, url.port or 443), timeout=timeout).close()
        return None
    except OSError:
        return f"no data directory (data_dir or APD_DATA_DIR) and the Hub ({url.hostname}) cannot be reached"


def data_missing(jobs, not_run: pd.DataFrame) -> str | None:
    """:data:`DATA_MISSING` when datasets were asked for and none could be had (every one is in
    ``not_run``), else None: the page then shows that line instead of the datasets' section."""
    return DATA_MISSING if not jobs and len(not_run) else None


def dataset_jobs(names, stand_ins: dict, *, data_dir=None, limit=None, seed: int = 0, unreachable=None):
    """``(jobs, not_run)``: ``(name, examples, shown name)`` per dataset that loads (an offline
    stand-in under its own name where the paper's cannot be had), and a frame of the others with why.
    A dataset file that is there but invalid raises :class:`apd.evaluation.qa_data.DatasetInvalid`
    (naming the file and line): the chapter fails rather than run fewer datasets. ``unreachable``
    (:func:`hub_unreachable`): none is tried, each is not run for that reason."""
    if unreachable:
        rows = [{"dataset": PAPER_DATASETS.get(n, n), "reason": unreachable} for n in names]
        return [], pd.DataFrame(rows, columns=["dataset", "reason"])
    jobs, not_run = [], []
    for name in names:
        paper_name = PAPER_DATASETS.get(name, name)
        examples, why = try_load(name, data_dir=data_dir, limit=limit, seed=seed)
        if examples is not None:
            jobs.append((name, examples, paper_name))
            continue
        not_run.append({"dataset": paper_name, "reason": why})
        if name in stand_ins:
            sub, why2 = try_load(stand_ins[name], data_dir=data_dir, limit=limit, seed=seed)
            if sub is None:
                not_run.append({"dataset": f"{stand_ins[name]} (stand-in)", "reason": why2})
            else:
                jobs.append((stand_ins[name], sub, f"{stand_ins[name]} (stand-in for {paper_name})"))
    return jobs, pd.DataFrame(not_run, columns=["dataset", "reason"])


@dataclass
class DatasetsQA:
    """The paper's QA datasets scored: the :func:`qa_summary` rows (with ``examples``), APD-vs-CD
    and CD-vs-ELM t-tests, the gap rows, and the chance accuracy per dataset shown."""

    table: pd.DataFrame
    sig: pd.DataFrame
    sig_cd_elm: pd.DataFrame
    gaps: pd.DataFrame
    chance: dict


def score_datasets(fam, jobs, *, seed: int = 0, **score_kwargs) -> DatasetsQA:
    """Score every job of :func:`dataset_jobs` (``score_kwargs`` go to
    :func:`apd.evaluation.qa_scoring.score_qa`) and gather the summaries."""
    tables, sigs, sigs_ce, gaps, chance = [], [], [], [], {}
    for _, examples, shown in jobs:
        sc = score_qa(fam, examples, **score_kwargs)
        sc.dataset = shown
        t = qa_summary(sc, seed=seed)
        t["examples"] = len(sc)
        tables.append(t)
        sigs.append(significance(sc, seed=seed))
        sigs_ce.append(significance(sc, "cd", "elm", "ppl", seed=seed))
        gaps.append(gap_rows(t))
        chance[shown] = chance_accuracy(sc)

    def cat(frames):
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    return DatasetsQA(cat(tables), cat(sigs), cat(sigs_ce), cat(gaps), chance)


def pooled(sig: pd.DataFrame):
    """``(mean over datasets of b's ppl minus a's, its standard error)`` at held-out 1/T, or
    ``(None, None)``; the datasets are independent, so the se is sqrt(sum se^2) / n.

    Example:
        >>> sig = pd.DataFrame({"protocol": ["held-out"] * 2, "metric": ["ppl"] * 2, "group": ["all"] * 2,
        ...                     "diff": [-0.2, -0.4], "se_paired": [0.3, 0.4]})
        >>> [round(x, 3) for x in pooled(sig)]
        [0.3, 0.25]
    """
    if not len(sig):
        return None, None
    s = sig[(sig.protocol == "held-out") & (sig.metric == "ppl") & (sig.group == "all")].dropna(
        subset=["diff", "se_paired"]
    )
    return (
        (None, None) if s.empty else (float(-s["diff"].mean()), float(np.sqrt((s["se_paired"] ** 2).sum()) / len(s)))
    )


def record_missing(run, jobs, not_run: pd.DataFrame) -> None:
    """When no dataset could be had (:func:`data_missing`), record ``qa_data_missing``: the page's
    condition, and a section the build report lists as skipped (every ``*_data_missing`` result,
    :func:`apd.build.read_skipped`); with the data, record nothing."""
    line = data_missing(jobs, not_run)
    if line:
        run.record(qa_data_missing=line)


def save_datasets(run, ds: DatasetsQA, not_run: pd.DataFrame) -> None:
    """Save the datasets' summary, t-tests, the not-run list and the gap rows as tables."""
    run.save_table(ds.table, "qa_datasets_summary")
    run.save_table(ds.sig, "qa_datasets_ttests")
    run.save_table(not_run, "qa_datasets_not_run")
    if len(ds.gaps):
        run.save_table(ds.gaps, "qa_datasets_gaps")


def glue_datasets(run, ds: DatasetsQA, jobs, not_run: pd.DataFrame) -> None:
    """Glue which datasets ran, which did not, the most examples any of them scores
    (``qa_max_examples``) and how many gold answers pass the filter."""
    run.glue("qa_n_run", len(jobs))
    run.glue("qa_run_names", ", ".join(shown for _, _, shown in jobs) or "none")
    run.glue("qa_n_not_run", len(not_run))
    kept_text, scored, examples = [], [], []
    for _, t in ds.table.groupby("dataset", sort=False) if len(ds.table) else []:
        r = t[(t.protocol == "paper") & (t.metric == "ppl") & (t.method == "elm") & (t.group == "all")].iloc[0]
        kept_text.append(f"{r['dataset']} {r['n']} of {r['examples']}")
        examples.append(int(r["examples"]))
        if r["n"] > 0:
            scored.append(r["dataset"])
    run.glue("qa_kept_text", "; ".join(kept_text) or "none")
    run.glue_text("qa_max_examples", max(examples) if examples else None, "{:,}")
    run.glue_text("qa_datasets_scored", ", ".join(scored) if scored else None, "{}")
    run.glue("qa_not_run_names", ", ".join(not_run["dataset"]) or "none")


def dataset_tables(ds: DatasetsQA):
    """``(sizes, chosen)``: questions kept per metric with the examples and chance accuracy, and the
    1/T each protocol chose for CD and APD, per dataset."""
    t = ds.table
    sizes = t[(t.protocol == "paper") & (t.method == "elm") & (t.group == "all")].pivot_table(
        index="dataset", columns="metric", values="n", sort=False
    )
    sizes["examples"] = t.groupby("dataset", sort=False)["examples"].first()
    sizes["chance acc"] = pd.Series(ds.chance)
    chosen = t[(t.group == "all") & t.method.isin(["cd", "apd"])].pivot_table(
        index=["dataset", "metric"], columns=["protocol", "method"], values="inv_T", aggfunc="first", sort=False
    )
    return sizes, chosen


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v)) or (isinstance(v, str) and v.strip() in ("", "n/a"))


def trim(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` without the rows and the columns that hold no value (NaN, None or "n/a" only).

    Example:
        >>> t = pd.DataFrame({"a": [1.0, float("nan")], "b": ["n/a", "n/a"]}, index=["x", "y"])
        >>> trim(t)
             a
        x  1.0
    """
    have = ~table.map(_missing)
    return table.loc[have.any(axis=1), have.any(axis=0)]


#: :func:`dataset_views`' values when nothing is left out (or nothing ran)
LEFT_OUT_NONE = {
    "qa_unscored": (None, "{}"),
    "qa_n_unscored": (0, None),
    "qa_no_held_out": (None, "{}"),
    "qa_no_held_out_table": (False, None),
    "qa_no_acc": (None, "{}"),
}


def dataset_views(ds: DatasetsQA) -> tuple[dict, dict]:
    """The datasets' tables as the page shows them, and what they leave out.

    Returns ``({name: (table or None, caption)}, values)`` for ``table_paper``, ``table_held_out``
    (:func:`apd.evaluation.qa_scoring.table_layout`), ``sizes`` and ``chosen``
    (:func:`dataset_tables`): each :func:`trim`-med to the rows and columns with a value (None when
    nothing is left), the caption naming the datasets shown and their scored questions. ``values``
    (for :func:`apd.chapters.gluing.glue_values`, as :data:`LEFT_OUT_NONE`) name the datasets left
    out: with no scored question, no gold answer in the ELM's top k (``qa_unscored``, how many
    ``qa_n_unscored``); without a held-out 1/T, too few scored questions to split (``qa_no_held_out``,
    each with its scored questions, "MultiRC (1)"; ``qa_no_held_out_table`` when that leaves no
    held-out table); without accuracy (``qa_no_acc``). A list is None when it is empty."""
    t = ds.table
    values = dict(LEFT_OUT_NONE)
    if not len(t):
        return {}, values
    ppl = t[(t.protocol == "paper") & (t.metric == "ppl") & (t.method == "elm") & (t.group == "all")]
    counts = {r.dataset: (int(r.n), int(r.examples)) for r in ppl.itertuples()}
    scored = [d for d, (n, _) in counts.items() if n > 0]
    shown = ", ".join(f"{d} ({counts[d][0]:,} of {counts[d][1]:,} questions scored)" for d in scored)
    views = {}
    for protocol in PROTOCOLS:
        lay = trim(table_layout(t, ds.gaps, protocol))
        views[f"table_{protocol.replace('-', '_')}"] = (
            lay if lay.size else None,
            f"protocol: {protocol}; mean per scored question on {shown}",
        )
    sizes, chosen = dataset_tables(ds)
    sizes = trim(sizes.loc[[d for d in sizes.index if d in scored]])
    chosen = trim(chosen)
    if chosen.size:  # the methods as the page names them (display only)
        chosen = chosen.rename(columns={"cd": "CD", "apd": "APD"}, level=chosen.columns.nlevels - 1)
    views["sizes"] = (
        sizes if sizes.size else None,
        f"questions kept (n) and chance accuracy among kept options: {shown}",
    )
    views["chosen"] = (
        chosen if chosen.size else None,
        "The 1/T each method chose (held-out: picked on half 0 / on half 1)",
    )

    unscored = [d for d in counts if d not in scored]
    ho = t[(t.protocol == "held-out") & (t.group == "all") & (t.method == "cd") & (t.metric == "ppl")]
    no_ho = [d for d in scored if ho[ho.dataset == d]["inv_T"].map(_missing).all()]
    acc = t[(t.protocol == "paper") & (t.metric == "acc") & (t.method == "elm") & (t.group == "all")]
    no_acc = [d for d in scored if d in set(acc.dataset) and int(acc[acc.dataset == d]["n"].iloc[0]) == 0]
    values.update(
        qa_unscored=(", ".join(unscored) or None, "{}"),
        qa_n_unscored=(len(unscored), None),
        qa_no_held_out=(", ".join(f"{d} ({counts[d][0]:,})" for d in no_ho) or None, "{}"),
        qa_no_held_out_table=(bool(no_ho) and views["table_held_out"][0] is None, None),
        qa_no_acc=(", ".join(no_acc) or None, "{}"),
    )
    return views, values


def brief_values(ds: DatasetsQA, built) -> dict:
    """Whether the page shows the datasets' section as one sentence, and the numbers it reads (for
    :func:`apd.chapters.gluing.glue_values`): ``qa_real_brief`` is True for the pico family
    (``built`` not None) when a dataset ran, since its models put almost no gold answer inside the
    expert's top k and the tables would compare nothing; under a Hub family the section runs in
    full. ``qa_n_kept`` counts the gold answers that pass the filter, ``qa_n_examples`` the
    examples scored, both over every dataset run (0 when none ran).

    Example:
        >>> t = pd.DataFrame({"dataset": ["A", "B"], "protocol": "paper", "metric": "ppl", "method": "elm",
        ...                   "group": "all", "n": [0, 1], "examples": [100, 100]})
        >>> ds = DatasetsQA(t, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {})
        >>> brief_values(ds, built=object())
        {'qa_real_brief': (True, None), 'qa_n_kept': (1, None), 'qa_n_examples': (200, '{:,}')}
        >>> brief_values(ds, built=None)["qa_real_brief"]
        (False, None)
    """
    t = ds.table
    kept = examples = 0
    if len(t):
        ppl = t[(t.protocol == "paper") & (t.metric == "ppl") & (t.method == "elm") & (t.group == "all")]
        kept, examples = int(ppl["n"].sum()), int(ppl["examples"].sum())
    return {
        "qa_real_brief": (built is not None and bool(len(t)), None),
        "qa_n_kept": (kept, None),
        "qa_n_examples": (examples, "{:,}"),
    }


def count_better(table: pd.DataFrame, protocol: str, metric: str) -> tuple[int, int]:
    """``(datasets where APD's mean is better than CD's, datasets where both are defined)``."""
    better = total = 0
    for ds in table["dataset"].unique():
        one = table[table.dataset == ds]
        a, c = value(one, protocol, metric, "apd"), value(one, protocol, metric, "cd")
        if not (np.isnan(a) or np.isnan(c)):
            total += 1
            better += direction(a, c, metric) == "better than"
    return better, total


def glue_dataset_counts(run, ds: DatasetsQA) -> None:
    """Glue per protocol and metric the datasets where APD beats CD, the significant ones, and the
    ELM's mean accuracy above chance ("n/a" when no dataset ran)."""
    t, gap = ds.table, []
    for protocol, tag in (("paper", "pp"), ("held-out", "ho")):
        for metric in ("ppl", "acc", "MRR"):
            run.glue(
                f"qa_{tag}_{metric}_better", "{} of {}".format(*count_better(t, protocol, metric)) if len(t) else "n/a"
            )
        sig = (
            ds.sig[(ds.sig.protocol == protocol) & (ds.sig.p_two_sample < 0.05) & (ds.sig["diff"] < 0)]
            if len(t)
            else None
        )
        run.glue(f"qa_{tag}_sig", "n/a" if sig is None else ", ".join(sig["dataset"]) or "none")
    if len(t):
        mc = [d for d, c in ds.chance.items() if not np.isnan(c)]
        gap = [
            g for g in (value(t[t.dataset == d], "paper", "acc", "elm") - ds.chance[d] for d in mc) if not np.isnan(g)
        ]
    run.glue_text("qa_elm_above_chance", float(np.mean(gap)) if gap else None, "{:+.3f}")


def reading(fam, built, family: str) -> dict:
    """What the datasets' numbers are for this family, as the values the prose's ``needs:`` tags and
    glue read: ``qa_pipeline_check`` (pico: a check of the pipeline), ``qa_reproduction`` (a Hub
    family: a reproduction), the family's name and its largest member's name and non-embedding
    parameters.

    Example:
        >>> class Fam:
        ...     elm, n_nonembedding = "pico-1.8M", [1.3e4, 1.8e6]
        >>> r = reading(Fam(), built=object(), family="pico")
        >>> r["qa_pipeline_check"], r["qa_reproduction"], r["qa_elm_params"]
        (True, False, 1800000)
    """
    pico = built is not None
    return {
        "qa_pipeline_check": pico,
        "qa_reproduction": not pico,
        "qa_family": family,
        "qa_elm": fam.elm,
        "qa_elm_params": int(fam.n_nonembedding[-1]),
    }


def glue_reading(run, fam, built, family: str) -> None:
    """Glue :func:`reading`'s values (the parameter count as text with thousands separators)."""
    for name, v in reading(fam, built, family).items():
        if name == "qa_elm_params":
            run.glue_text(name, v, "{:,d}")
        else:
            run.glue(name, v)


def beside_paper(family: str, ds: DatasetsQA) -> pd.DataFrame | None:
    """The paper's QA numbers beside ours (paper protocol; gap rows as fractions), one row per
    dataset, metric and role where ours has a value; None when the paper has none for ``family``
    or nothing was scored."""
    paper = paper_rows(family)
    if not (len(paper) and len(ds.table)):
        return None
    ours = ds.table[(ds.table.group == "all") & (ds.table.protocol == "paper")].copy()
    ours["role"] = ours["method"].map(METHOD_ROLES)
    ours = ours[["dataset", "metric", "role", "value"]]
    if len(ds.gaps):
        g = ds.gaps[(ds.gaps.protocol == "paper") & (ds.gaps.group == "all")].copy()
        g["role"] = g["row"].map({"APD vs CD": "gap_apd_vs_cd", "APD vs LLM": "gap_apd_vs_elm"})
        ours = pd.concat([ours, g[["dataset", "metric", "role", "value"]]])
    both = paper.merge(
        ours.dropna(subset=["value"]), on=["dataset", "metric", "role"], how="inner", suffixes=(" (paper)", " (ours)")
    )
    return both if len(both) else None


def headline(world: WorldQA | None, ds: DatasetsQA) -> QAHeadline:
    """The chapter's :class:`QAHeadline` from its world and dataset results (None where missing)."""
    out = {}
    if world is not None:
        wt = world.summary
        for tag, proto in (("ho", "held-out"), ("pp", "paper")):
            for m in ("apd", "cd"):
                out[f"world_{tag}_ppl_{m}"] = value(wt, proto, "ppl", m)
        s = world.sig[(world.sig.protocol == "held-out") & (world.sig.group == "all")].iloc[0]
        ce = world.contrast("cd", "elm").loc["all"]  # the person mean, as s
        out.update(
            world_ho_ppl_gain=-s["diff"],
            world_ho_ppl_gain_se=s["se_clustered"],
            world_ho_ppl_cd_gain=-ce["diff"],
            world_ho_ppl_cd_gain_se=ce["se_clustered"],
        )
    for key, sig in (("datasets_ppl_gain", ds.sig), ("datasets_ppl_cd_gain", ds.sig_cd_elm)):
        out[key], out[f"{key}_se"] = pooled(sig)
    return QAHeadline(**out)
