"""The probability-curves chapter's context pools, summaries and figures (``notebooks/curves.ipynb``).

Log-probabilities are natural-log next-token probabilities ``(..., V)``; ``x`` is ln non-embedding
size per member. Obvious blindness is :mod:`apd.evaluation.blindness`, the curves and their fits
:mod:`apd.evaluation.probcurves` and :mod:`apd.evaluation.linearity`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from apd.core.stats import Z_TEST, paired_difference
from apd.evaluation.blindness import cd_scores, clearest_example, find_obvious_blindness
from apd.evaluation.linearity import curvature_bias
from apd.evaluation.probcurves import cd_probs_over_topk, score_answers
from apd.evaluation.qa_data import load_dataset
from apd.family.knowledge import score_world_qa
from apd.report.plots import COLORS, PALETTE, figure, legend, outer_labels, panels, probability_curve, wrap
from apd.report.tables import plus_minus
from apd.world.truth import dev_test_split, sample_per_bucket

#: A median R^2 of a line through the members' log-probabilities at least this reads as "close to
#: linear" (context: a flat curve is linear with R^2 near 0, so R^2 is not the premise's test).
R2_LINEAR = 0.9
#: Theorem 1's premise, as a curvature test: at every T whose HLM lies inside the family, the error
#: the median curvature puts into CD's HLM (:func:`apd.evaluation.linearity.curvature_bias`) is
#: smaller than this share of the distance from the expert to the real member of the HLM's size
#: (the distance CD's extrapolation is meant to cross). The premise of claim C1b.
PREMISE_SHARE = 1.0
#: The Hub family's example prompt (pico families use a biography of a torso person of the world).
HUB_PROMPT = "President of the United States Joe Biden"


@dataclass(frozen=True)
class CurvesHeadline:
    """The chapter's headline numbers, as ``results/<profile>/curves.json`` holds them."""

    r2_median: float  # median R^2 of a line through a token's log-probabilities across members
    hlm_n_T: int  # temperatures whose HLM falls inside the family
    all_blind_both_right: int  # contexts (questions and held-out text) both expert and amateur get right
    all_blind_count: int  # of those, contexts where CD (first T of the grid) ranks another token first
    all_blind_apd_rate: Any  # APD's (T = 1) blindness rate on them ("n/a" when none)
    all_blind_cd1_rate: Any  # CD's at T = 1 on them ("n/a" when none or T = 1 not in the grid)
    blind_both_right: int  # of which questions, the paper's setting
    all_blind_cd_minus_apd: Any  # CD's blindness rate minus APD's, paired per context (claim C2; None when none)
    all_blind_cd_minus_apd_se: Any  # its standard error
    premise_holds: Any  # Theorem 1's premise as a curvature test, 1 or 0 (None without an HLM in the family)
    hlm_gain: Any  # KL(real || expert) minus KL(real || CD's HLM), paired per position (claim C1b; None without)
    hlm_gain_se: Any  # its standard error over text windows

    @classmethod
    def from_values(cls, values: dict) -> "CurvesHeadline":
        """The headline read from the chapter's recorded ``values`` (``Run.values``); a KeyError
        names a headline number the chapter did not record."""
        return cls(**{f.name: values[f.name] for f in fields(cls)})


def default_prompt(built, seed: int) -> str:
    """The example prompt: a biography of the middle torso person of ``built``'s world (pico,
    ``random.Random(seed)``), or :data:`HUB_PROMPT` when ``built`` is None (a Hub family)."""
    if built is None:
        return HUB_PROMPT
    world = built.corpus.world
    torso = [p for p in world.eval_people if p.bucket == "torso"]
    return world.biography(torso[len(torso) // 2], random.Random(seed))[0]


def apd_probs_at(curves: pd.DataFrame, elm_lp, apd_lp, top_k: int) -> list[float]:
    """APD's probability (T = 1, over the expert's top ``top_k``) of each row's ``token_id`` at its
    ``position``; ``elm_lp``/``apd_lp``: ``(S, V)`` log-probabilities of the expert and ALM'.

    Example:
        >>> lp = np.log(np.full((2, 4), 0.25))
        >>> apd_probs_at(pd.DataFrame({"position": [0, 1], "token_id": [2, 3]}), lp, lp, 4)
        [0.25, 0.25]
    """
    return [
        float(cd_probs_over_topk(elm_lp[t], apd_lp[t], 1.0, top_k)[w])
        for t, w in zip(curves["position"], curves["token_id"])
    ]


def plot_prompt(curves: pd.DataFrame, x, names, T_values, max_panels: int):
    """One panel per shown position (those whose top token is the actual next one, evenly spaced):
    the members' probability with CD's at each T and APD's as horizontal lines; returns the figure."""
    show = curves[curves["next_token"] == curves["actual_next"]]
    show = (
        show.iloc[np.linspace(0, len(show) - 1, min(max_panels, len(show))).astype(int)]
        if len(show)
        else curves.head(max_panels)
    )
    fig, axes = panels(max(1, len(show)), ncols=2, panel_height=2.6, sharex=True)
    colors = {1.0: COLORS["cd_t1"], 2.0: COLORS["cd_t2"]}
    for ax, (_, row) in zip(axes, show.iterrows()):
        hl = {f"CD, T = {T:g}": (row[f"cd:T={T:g}"], colors.get(float(T), PALETTE[3])) for T in T_values}
        hl["APD, T = 1"] = (row["apd:T=1"], COLORS["apd"])
        ctx = row["context"][-24:].replace("\n", " ")
        probability_curve(ax, x, [row[f"p:{n}"] for n in names], hlines=hl, title=f"…{ctx} →{row['next_token']!r}")
        ax.title.set_fontweight("normal")
    outer_labels(axes, axes[0].get_xlabel(), axes[0].get_ylabel())
    handles, labels = axes[0].get_legend_handles_labels()
    legend(fig, handles=handles, labels=labels, loc="outside lower center", ncol=min(4, len(labels)))
    return fig


@dataclass
class Questions:
    """The questions of the blindness search: member log-probabilities ``logprobs`` ``(N, Q, V)``,
    ``gold`` ``(Q,)``, frequency ``groups`` ``(Q,)`` ("all" for a Hub dataset), short ``labels``,
    the ``prompts`` and the ``source`` ("world QA" or the dataset's name)."""

    logprobs: np.ndarray
    gold: np.ndarray
    groups: np.ndarray
    labels: list
    prompts: list
    source: str


def questions(fam, built, rng, seed: int, per_bucket: int, dataset: str, limit: int, data_dir=None) -> Questions:
    """The world's questions about the test people, ``per_bucket`` per frequency bucket (pico), or
    ``limit`` examples of a QA ``dataset`` with a one-word answer (a Hub family)."""
    if built is not None:
        _, test_items = dev_test_split(built.corpus.qa_items, built.corpus.world, seed)
        items = sample_per_bucket(test_items, per_bucket, rng, exclude=("drink", "hobby"))
        scored = score_world_qa(fam, built.corpus.world, items)
        return Questions(
            scored.logprobs,
            scored.gold,
            np.array([it.bucket for it in items]),
            [it.prompt.splitlines()[0] for it in items],
            [it.prompt for it in items],
            "world QA",
        )
    examples = load_dataset(dataset, data_dir=data_dir, limit=limit, seed=seed)
    prompts = [e.prompt for e in examples]
    scored = score_answers(fam, prompts, [e.answer for e in examples])
    return Questions(
        scored["logprobs"],
        scored["gold"],
        np.array(["all"] * len(examples)),
        [e.prompt[-80:] for e in examples],
        prompts,
        dataset,
    )


@dataclass
class Pool:
    """One pool of contexts, the questions then the held-out positions: the expert's, the amateur's
    and ALM' log-probabilities ``(B, V)``, ``gold`` ``(B,)``, ``labels``, ``is_q`` ``(B,)`` and the
    ``groups`` ``{name: (B,) bool}`` of the blindness table."""

    elm: np.ndarray
    alm: np.ndarray
    apd: np.ndarray
    gold: np.ndarray
    labels: list
    is_q: np.ndarray
    groups: dict


def pool(q: Questions, q_apd, held: dict) -> Pool:
    """Pool the questions (``q``, the log-probabilities of ALM' ``q_apd`` ``(Q, V)``) and the held-out
    positions (:func:`apd.family.heldout.heldout_positions` with ALM' as its amateur).

    Example:
        >>> lp = np.zeros((2, 1, 3)); q = Questions(lp, np.array([0]), np.array(["head"]), ["q"], ["q"], "world QA")
        >>> held = {"member_logprobs": np.zeros((2, 2, 3)), "amateur_logprobs": np.zeros((2, 3)),
        ...         "next_ids": np.array([1, 2]), "contexts": ["a", "b"]}
        >>> list(pool(q, np.zeros((1, 3)), held).groups)
        ['world QA, head', 'world QA, all', 'held-out text', 'all contexts']
    """
    lp = held["member_logprobs"]
    nq = len(q.gold)
    is_q = np.arange(nq + lp.shape[1]) < nq
    qg = np.concatenate([q.groups, [""] * lp.shape[1]])
    groups = {f"{q.source}, {g}": is_q & (qg == g) for g in dict.fromkeys(q.groups) if g != "all"}
    groups |= {f"{q.source}, all": is_q, "held-out text": ~is_q, "all contexts": np.ones(len(is_q), bool)}
    return Pool(
        np.concatenate([q.logprobs[-1], lp[-1]]),
        np.concatenate([q.logprobs[0], lp[0]]),
        np.concatenate([q_apd, held["amateur_logprobs"]]),
        np.concatenate([q.gold, held["next_ids"]]),
        q.labels + ["…" + c[-70:].replace("\n", " ") for c in held["contexts"]],
        is_q,
        groups,
    )


def _cell(blind: pd.DataFrame, group: str, method: str, T: float) -> pd.Series:
    return blind[(blind["group"] == group) & (blind["method"] == method) & (blind["T"] == T)].iloc[0]


def apd_minus_cd(p: Pool, top_k: int):
    """APD's (T = 1) obvious blindness minus CD's at T = 1, paired over the contexts of ``p`` that the
    expert and the amateur both get right (:class:`apd.core.stats.PairedDifference`, shares).

    Example:
        >>> elm = np.log([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1]]); alm = np.log([[0.5, 0.1, 0.4], [0.5, 0.4, 0.1]])
        >>> p = Pool(elm, alm, alm, np.array([0, 0]), ["a", "b"], np.array([False, False]), {})
        >>> apd_minus_cd(p, 3).mean
        0.0
    """
    cd = find_obvious_blindness(p.elm, p.alm, p.gold, 1.0, top_k)
    apd_top = cd_scores(p.elm, p.apd, 1.0, top_k).argmax(-1)
    right = cd.both_right
    return paired_difference((apd_top[right] != p.gold[right]).astype(float), cd.blind[right].astype(float))


def blindness_summary(blind: pd.DataFrame, p: Pool, source: str, T_grid, top_k: int) -> dict[str, Any]:
    """The blindness table's glued values (``value`` or ``(value, fmt)``, see
    :func:`apd.chapters.gluing.glue_values`) for the questions (``blind_``), held-out text
    (``text_blind_``) and all contexts (``all_blind_``) at the first T of ``T_grid``, how CD's rate
    moves with T, and APD's minus CD's rate at T = 1 (``all_blind_apd_minus_cd``) with the conditions
    ``blind_apd_fewer``, ``blind_apd_more`` and ``blind_apd_tie`` (95%)."""
    T0 = float(T_grid[0])
    out: dict[str, Any] = {
        "blind_T": T0,
        "blind_source": source,
        "blind_n_questions": int(p.is_q.sum()),
        "blind_n_text": int((~p.is_q).sum()),
    }
    for key, group in [("blind", f"{source}, all"), ("text_blind", "held-out text"), ("all_blind", "all contexts")]:
        cd, ap = _cell(blind, group, "CD", T0), _cell(blind, group, "APD", 1.0)
        out |= {
            f"{key}_both_right": int(cd["ELM and ALM right"]),
            f"{key}_count": int(cd["wrong among those"]),
            f"{key}_rate": (float(cd["blindness rate"]), "{:.3f}"),
            f"{key}_apd_count": int(ap["wrong among those"]),
            f"{key}_apd_rate": (float(ap["blindness rate"]), "{:.3f}"),
            f"{key}_cd1_rate": (
                float(_cell(blind, group, "CD", 1.0)["blindness rate"]) if 1.0 in map(float, T_grid) else None,
                "{:.3f}",
            ),
        }
    rates = [(float(T), float(_cell(blind, "all contexts", "CD", float(T))["blindness rate"])) for T in T_grid]
    rates = [(T, r) for T, r in rates if np.isfinite(r)]
    falls = len(rates) > 1 and all(b <= a for (_, a), (_, b) in zip(rates, rates[1:])) and rates[-1][1] < rates[0][1]
    out["blind_trend"] = "falls" if falls else ("does not fall steadily" if len(rates) > 1 else "cannot be traced")
    out["blind_trend_values"] = ", ".join(f"{r:.3f} at T = {T:g}" for T, r in rates) or "no context is right for both"
    d = apd_minus_cd(p, top_k)
    known = d.n > 1 and np.isfinite([d.mean, d.se]).all()
    out["all_blind_apd_minus_cd"] = (plus_minus(d.mean, d.se) if known else None, "{}")
    out["all_blind_cd_minus_apd"] = (-float(d.mean) if known else None, "{}")  # claim C2's paired estimate
    out["all_blind_cd_minus_apd_se"] = (float(d.se) if known else None, "{}")
    out["all_blind_n_groups"] = (int(d.n_groups) if known else None, "{}")
    out["blind_apd_fewer"] = bool(known and d.mean < -Z_TEST * d.se)
    out["blind_apd_more"] = bool(known and d.mean > Z_TEST * d.se)
    out["blind_apd_tie"] = bool(known and abs(d.mean) <= Z_TEST * d.se)
    return out


def rate_table(blind: pd.DataFrame, groups) -> pd.DataFrame:
    """The blindness rate with one row per group (in the order of ``groups``) and one column per
    "method, T = ..." (in the table's order)."""
    columns = [f"{m}, T = {T:g}" for m, T in zip(blind["method"], blind["T"])]
    table = blind.assign(column=columns).pivot(index="group", columns="column", values="blindness rate")
    return table.loc[list(groups), list(dict.fromkeys(columns))]


def clearest(p: Pool, T: float, top_k: int):
    """``(i, b)``: the clearest blind context of ``p`` at ``T`` (a question when one is blind, else a
    held-out position; None when none is) and the pool's :class:`apd.evaluation.blindness.Blindness`."""
    nq = int(p.is_q.sum())
    b = find_obvious_blindness(p.elm, p.alm, p.gold, T, top_k=top_k)
    q_only = find_obvious_blindness(p.elm[:nq], p.alm[:nq], p.gold[:nq], T, top_k=top_k)
    i = clearest_example(q_only, p.elm[:nq], p.gold[:nq])
    return (clearest_example(b, p.elm, p.gold) if i is None else i), b


def plot_example(p: Pool, i: int, b, curve_lp, x, names, T: float, top_k: int, decode):
    """Two panels for context ``i``: the right token's and CD's choice's probability in every member
    (``curve_lp``: ``(members, V)``), with CD's and APD's as horizontal lines. Returns
    ``(fig, apd_ranks_right)``."""
    cd = cd_probs_over_topk(p.elm[i], p.alm[i], T, top_k)
    apd_v = cd_probs_over_topk(p.elm[i], p.apd[i], 1.0, top_k)
    fig, axes = panels(2, ncols=1, panel_height=2.9)
    for ax, tok, what in [(axes[0], p.gold[i], "right token"), (axes[1], b.cd_top[i], "CD's choice")]:
        probability_curve(
            ax,
            x,
            np.exp(curve_lp[:, tok]),
            names=names,
            hlines={f"CD, T = {T:g}": (cd[tok], COLORS["cd_t1"]), "APD, T = 1": (apd_v[tok], COLORS["apd"])},
            title=f"{what}: {decode([int(tok)])!r}",
        )
        ax.set_ylim(-0.02, 1.15)  # room for the members' names above a probability of 1
    legend(axes[0], loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(wrap(p.labels[i], 80))
    return fig, int(np.argmax(apd_v)) == int(p.gold[i])


def linearity_frame(fits, top_k: int, n_positions: int) -> pd.DataFrame:
    """One row per fitted curve (:func:`apd.evaluation.linearity.fit_lines` of ``(positions, top_k)``
    curves): ``R2``, ``curvature``, ``slope`` and the token's ``rank in ELM``.

    Example:
        >>> from types import SimpleNamespace
        >>> f = SimpleNamespace(r2=np.ones((2, 3)), curvature=np.zeros((2, 3)), slope=np.zeros((2, 3)))
        >>> linearity_frame(f, 3, 2)["rank in ELM"].tolist()
        [1, 2, 3, 1, 2, 3]
    """
    return pd.DataFrame(
        {
            "R2": fits.r2.ravel(),
            "curvature": fits.curvature.ravel(),
            "slope": fits.slope.ravel(),
            "rank in ELM": np.tile(np.arange(1, top_k + 1), n_positions),
        }
    )


def linearity_summary(lin: pd.DataFrame) -> dict[str, Any]:
    """Median R^2, the share above 0.9, the median |curvature|, the share bending down, and
    ``curves_linear`` (median R^2 at least :data:`R2_LINEAR`).

    Example:
        >>> linearity_summary(pd.DataFrame({"R2": [0.95, 0.5, 0.99], "curvature": [0.1, -0.2, 0.3]}))["curves_linear"]
        True
    """
    r2, curv = lin["R2"].to_numpy(), lin["curvature"].to_numpy()
    return {
        "r2_median": float(np.median(r2)),
        "r2_share_above_09": float((r2 > 0.9).mean()),
        "curv_median_abs": float(np.median(np.abs(curv))),
        "curv_share_concave": float((curv < 0).mean()),
        "curves_linear": bool(np.median(r2) >= R2_LINEAR),
    }


def plot_linearity(lin: pd.DataFrame):
    """Histograms of the curves' R^2 (left) and curvature (right, clipped at its 98th percentile)."""
    r2, curv = lin["R2"].to_numpy(), lin["curvature"].to_numpy()
    fig, axes = figure(ncols=2)
    axes[0].hist(r2, bins=40, color=COLORS["members"])
    axes[0].set_xlabel(wrap("R² of a line through the members' log-probabilities (unitless)", 34))
    lim = np.quantile(np.abs(curv), 0.98)
    axes[1].hist(np.clip(curv, -lim, lim), bins=40, color=COLORS["scaled"])
    axes[1].set_xlabel(wrap("curvature (log-prob per (ln size)², clipped at the 98th percentile)", 34))
    axes[0].set_ylabel("token curves (count)")
    fig.suptitle("Are log-probabilities linear in log size?")
    return fig


def hlm_columns(top_k: int) -> tuple[str, str]:
    """The KL columns of :func:`apd.evaluation.linearity.hlm_vs_real_table` for CD's HLM and the expert."""
    return f"KL(real || CD-HLM), ELM top-{top_k}", f"KL(real || ELM), ELM top-{top_k}"


def hlm_summary(hlm: pd.DataFrame, top_k: int) -> dict[str, Any]:
    """How many T put CD's HLM closer (KL over the expert's top ``top_k``) to the real member than
    the expert, and which; missing ("n/a") when no HLM falls inside the family.

    Example:
        >>> kcol, ecol = hlm_columns(5)
        >>> t = pd.DataFrame({"T": [2.0, 4.0], kcol: [0.1, 0.3], ecol: [0.2, 0.2]})
        >>> hlm_summary(t, 5)["hlm_T_better"]
        ('2', '{}')
    """
    if not len(hlm):
        return {k: (None, "{}") for k in ("hlm_n_better", "hlm_T_better", "hlm_T_worse")}
    kcol, ecol = hlm_columns(top_k)
    better = hlm[hlm[kcol] < hlm[ecol]]["T"].tolist()
    return {
        "hlm_n_better": (len(better), "{:d}"),
        "hlm_T_better": (", ".join(f"{t:g}" for t in better) or None, "{}"),
        "hlm_T_worse": (", ".join(f"{t:g}" for t in hlm["T"] if t not in better) or None, "{}"),
    }


def hlm_gain_summary(d) -> dict[str, Any]:
    """Claim C1b's paired estimate (:func:`apd.evaluation.linearity.hlm_gain`, None when no HLM
    falls inside the family): KL(real || ELM) minus KL(real || CD's HLM), nats, positive when CD's
    HLM is the closer, with its se over text windows and the number of windows.

    Example:
        >>> from apd.core.stats import PairedDifference
        >>> hlm_gain_summary(PairedDifference(-0.2, 0.01, 600, 300))["hlm_gain_pm"]
        ('-0.200 ± 0.010', '{}')
    """
    if d is None:
        return {k: (None, "{}") for k in ("hlm_gain", "hlm_gain_se", "hlm_gain_n_groups", "hlm_gain_pm")}
    return {
        "hlm_gain": float(d.mean),
        "hlm_gain_se": float(d.se),
        "hlm_gain_n_groups": int(d.n_groups),
        "hlm_gain_pm": (plus_minus(d.mean, d.se), "{}"),
    }


def premise_summary(hlm: pd.DataFrame, lin: pd.DataFrame, x, alm: int, elm: int, top_k: int) -> dict[str, Any]:
    """Theorem 1's premise as a curvature test (:data:`PREMISE_SHARE`): per T of ``hlm`` (the rows of
    :func:`apd.evaluation.linearity.hlm_vs_real_table`), the bias the median |curvature| of ``lin``
    puts into CD's HLM over the expert's centred log-prob distance to the real member; the largest
    ratio, its T, and whether the premise holds (1) at every T (0 otherwise; None without a T).

    Example:
        >>> hlm = pd.DataFrame({"T": [2.0], "mean |log-prob gap|, ELM, top-5": [2.0]})
        >>> lin = pd.DataFrame({"curvature": [0.1, -0.1]})
        >>> premise_summary(hlm, lin, np.log([1e4, 1e5, 1e6]), 0, 1, 5)["premise_holds"]
        1
    """
    if not len(hlm):
        return {k: (None, "{}") for k in ("premise_ratio_max", "premise_T_worst", "premise_holds")}
    kappa = float(np.median(np.abs(lin["curvature"].to_numpy())))
    gap = hlm[f"mean |log-prob gap|, ELM, top-{top_k}"].to_numpy()
    ratios = np.array([curvature_bias(kappa, x[elm], x[alm], T) for T in hlm["T"]]) / gap
    worst = int(np.argmax(ratios))
    return {
        "premise_ratio_max": (float(ratios[worst]), "{:.2f}"),
        "premise_T_worst": (float(hlm["T"].iloc[worst]), "{:g}"),
        "premise_share": PREMISE_SHARE,
        "premise_holds": int(bool((ratios < PREMISE_SHARE).all())),
    }


def plot_hlm(hlm: pd.DataFrame, top_k: int, alm: str, elm: str):
    """CD's HLM against the expert, against the HLM's log size: KL to the real member (left) and
    top-1 agreement with it (right)."""
    kcol, ecol = hlm_columns(top_k)
    fig, axes = panels(2, ncols=1, panel_height=2.7, sharex=True)
    for ax, (cd_col, elm_col) in zip(axes, [(kcol, ecol), ("top-1 agrees, CD-HLM", "top-1 agrees, ELM")]):
        ax.plot(hlm["ln s_HLM"], hlm[cd_col], marker="o", color=COLORS["cd"], label="CD's HLM")
        ax.plot(hlm["ln s_HLM"], hlm[elm_col], marker="s", color=COLORS["elm"], label=f"expert ({elm})")
    axes[1].set_xlabel("ln s_HLM (ln non-embedding parameters)")
    axes[0].set_ylabel(wrap(f"KL(real HLM || prediction) over the ELM's top {top_k} (nats)", 28))
    axes[1].set_ylabel(wrap("top-1 agrees with the real HLM (share)", 24))
    legend(axes[0], loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(f"CD's hypothetical LM against the real family (ALM {alm}, ELM {elm})")
    return fig
