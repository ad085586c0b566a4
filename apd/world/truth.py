"""How close each decoding method's next-token distribution is to the world's true one.

Every method is a distribution over the same candidates, the ELM's top ``k`` (20) ids ``(B, k)`` in
descending ELM order, renormalised there: the ELM; CD at 1/T, ``softmax_k(log p_ELM - (1/T) log
p_ALM)``; APD at 1/T, the same with ALM'; APD on the fly with weight w, ``(1 - w) p_ELM + w p_AP``
(asymptotes fitted per token, :func:`apd.core.curves.on_the_fly_asymptotes`). Inputs are ``(B, V)``
log-probabilities, ``(N, B, V)`` for all members (smallest first). Measures per item, in nats, lower
is better: :func:`kl_to_truth`, KL(truth || method) with the truth
(``apd.world.world.World.next_token_distribution``) renormalised over the top k, and :func:`gold_nll`,
``-log(p + 0.01)`` of the gold token. Every method at once, per item, is
:func:`apd.evaluation.distributions.method_distributions`. :func:`dev_test_split` halves the
evaluation people per frequency bucket into "dev" (choosing 1/T and w) and "test" (what the book
reports).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from scipy.special import softmax

from apd.core import curves, stats
from apd.core.contrastive import contrastive_scores
from apd.world.world import BUCKETS

PEOPLE_SPLITS = ("dev", "test")


# ----------------------------------------------------------------------------- dev / test split


def dev_test_people(world, seed: int = 0) -> dict[str, str]:
    """Person name -> "dev" or "test" for every evaluation person of ``world``.

    Within each frequency bucket the people (sorted by name) are permuted with a generator seeded
    by (seed, bucket) and the first half (rounded down) goes to dev, the rest to test.
    """
    people = getattr(world, "eval_people", None)
    if people is None:
        raise TypeError(f"dev_test_people needs an apd.world.world.World, got {type(world).__name__}.")
    out = {}
    groups: dict[str, list[str]] = {}
    for p in people:
        groups.setdefault(p.bucket, []).append(p.name)
    for bucket in sorted(groups):
        names = sorted(groups[bucket])
        bucket_id = BUCKETS.index(bucket) if bucket in BUCKETS else len(BUCKETS) + sorted(groups).index(bucket)
        perm = np.random.default_rng([int(seed), 7, bucket_id]).permutation(len(names))
        for rank, i in enumerate(perm):
            out[names[i]] = "dev" if rank < len(names) // 2 else "test"
    return out


def dev_test_split(items, world, seed: int = 0) -> tuple[list, list]:
    """``(dev, test)``: the world QA items (``apd.world.world.QAItem``) whose person is in each half.

    The split is by person (:func:`dev_test_people`), so no person is in both halves and a subset of
    the items splits as the full list does. Items keep their order.
    """
    split = dev_test_people(world, seed)
    dev, test = [], []
    for it in items:
        side = split.get(it.person)
        if side is None:
            raise ValueError(
                f"{it.person!r} is not an evaluation person of this world (its QA text is training "
                "text); use items from world.qa_items() / corpus.qa_items."
            )
        (dev if side == "dev" else test).append(it)
    return dev, test


# ----------------------------------------------------------------------------- method distributions


def as_float64(x) -> np.ndarray:
    """Scores (a numpy array or torch tensor, any shape) as a float64 numpy array; raises on NaN.

    Example:
        >>> as_float64(torch.tensor([0.5, 1.0])).dtype
        dtype('float64')
    """
    if isinstance(x, torch.Tensor):
        x = x.detach().float().cpu().numpy()
    x = np.asarray(x, dtype=np.float64)
    if np.isnan(x).any():
        raise ValueError("NaN in the scores; check the model outputs before comparing methods.")
    return x


def topk_ids(elm_logprobs, k: int = 20) -> np.ndarray:
    """The ELM's top-k token ids ``(B, k)``, most probable first (``torch.topk`` order)."""
    e = torch.as_tensor(as_float64(elm_logprobs))
    if not 1 <= k <= e.shape[-1]:
        raise ValueError(f"k must be in [1, vocab = {e.shape[-1]}], got {k}.")
    return e.topk(k, dim=-1).indices.numpy()


def at(values, ids) -> np.ndarray:
    """``values[..., ids]`` row by row: ``(B, V)`` and ``(B, k)`` -> ``(B, k)``."""
    return np.take_along_axis(as_float64(values), np.asarray(ids), axis=-1)


def contrastive_topk(elm_logprobs, amateur_logprobs, inv_T: float, ids) -> np.ndarray:
    """CD (or APD, with ALM' as the amateur) probabilities over the candidates ``ids``: ``(B, k)``.

    ``softmax_k(log p_ELM - inv_T * log p_amateur)``, as :func:`apd.evaluation.qa_metrics.cd_scores_over_topk`
    computes it when ``ids`` is the ELM's top k; ``inv_T = 0`` gives the ELM renormalised.
    """
    return contrastive_scores(
        as_float64(elm_logprobs),
        as_float64(amateur_logprobs),
        inv_T=inv_T,
        ids=ids,
        normalize=False,
        renormalize="prob",
    )


def on_the_fly_topk(member_logprobs, log_sizes, ids, **fit_kwargs):
    """APD on the fly over the candidates ``ids``: ``(p_elm, p_ap, fit)``, probabilities ``(B, k)``
    and the :class:`apd.core.curves.CurveFit` (rows in the order of ``ids.reshape(-1)``).

    ``member_logprobs`` ``(N, B, V)``: every member, ALM first, ELM last. A curve is fitted per
    (item, candidate) to the members' probabilities renormalised over ``ids``
    (``apd.core.curves.fit_curves``, its default :data:`apd.core.curves.TUNED_FIT` unless ``fit_kwargs`` say
    otherwise, e.g. ``device="cuda"`` to fit there); ``p_ap`` are the asymptotes renormalised over
    ``ids``, as NumPy arrays wherever the fit ran. Mix them with :func:`apd.core.curves.mix_on_the_fly`.
    """
    lp = as_float64(member_logprobs)
    if lp.ndim != 3:
        raise ValueError(f"member_logprobs must be (N members, B, V), got shape {lp.shape}.")
    ids = np.asarray(ids)
    p = softmax(np.take_along_axis(lp, np.broadcast_to(ids, lp.shape[:1] + ids.shape), axis=-1), axis=-1)  # (N, B, k)
    fit = curves.fit_curves(
        torch.as_tensor(np.moveaxis(p, 0, -1).reshape(-1, lp.shape[0]), dtype=torch.float32), log_sizes, **fit_kwargs
    )
    ap = fit.asymptote.detach().double().cpu().numpy().reshape(ids.shape)
    total = ap.sum(-1, keepdims=True)
    p_elm = p[-1]
    p_ap = np.where(total > 0, ap / np.clip(total, 1e-30, None), p_elm)
    return p_elm, p_ap, fit


# ----------------------------------------------------------------------------- distances


def kl_to_truth(truth_k, q) -> np.ndarray:
    """KL(truth || q) in nats per row, ``(B, k)`` inputs -> ``(B,)``.

    ``truth_k``: the true probabilities of the candidates (any mass outside them is dropped and the
    rest renormalised); ``q``: the method's probabilities over the same candidates (rows sum to 1).
    NaN where the truth has no mass on the candidates.
    """
    t, q = np.asarray(truth_k, dtype=np.float64), np.asarray(q, dtype=np.float64)
    if t.shape != q.shape:
        raise ValueError(f"truth_k {t.shape} and q {q.shape} must have the same (B, k) shape.")
    if (t < 0).any() or (q < 0).any():
        raise ValueError("probabilities must be >= 0.")
    mass = t.sum(-1, keepdims=True)
    tn = np.divide(t, mass, out=np.zeros_like(t), where=mass > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(tn > 0, tn * (np.log(np.where(tn > 0, tn, 1.0)) - np.log(q)), 0.0)
    kl = terms.sum(-1)
    return np.where(mass[:, 0] > 0, np.maximum(kl, 0.0), np.nan)


def gold_nll(q, ids, gold, eps: float = 0.01) -> np.ndarray:
    """``-log(q[gold] + eps)`` in nats per row (the paper's QA "ppl" of one token), ``(B,)``.

    ``q`` ``(B, k)`` over the candidates ``ids`` ``(B, k)``; ``gold`` ``(B,)`` token ids. NaN where
    the gold token is not a candidate.
    """
    q, ids, gold = np.asarray(q, dtype=np.float64), np.asarray(ids), np.asarray(gold)
    if gold.shape != q.shape[:1] or ids.shape != q.shape:
        raise ValueError(
            f"need q and ids of one (B, k) shape and gold (B,), got {q.shape}, {ids.shape}, {gold.shape}."
        )
    hit = ids == gold[:, None]
    p = (q * hit).sum(-1)
    return np.where(hit.any(-1), -np.log(p + eps), np.nan)


def sample_per_bucket(items, n: int, rng: np.random.Generator, exclude=()) -> list:
    """At most ``n`` items of each frequency bucket (``BUCKETS`` order), drawn without replacement
    with ``rng`` and kept in their original order; items whose attribute is in ``exclude`` (e.g.
    the distributional ``("drink", "hobby")``) are left out. One ``rng.choice`` per non-empty bucket."""
    out = []
    for bucket in BUCKETS:
        pool = [it for it in items if it.bucket == bucket and it.attribute not in exclude]
        if pool:
            out += [pool[i] for i in np.sort(rng.choice(len(pool), size=min(n, len(pool)), replace=False))]
    return out


def best_knobs(frame: pd.DataFrame, measure: str = "kl", cluster: str | None = None) -> dict:
    """{method: the knob with the lowest mean ``measure``} (ties: the first knob in the frame). With
    ``cluster`` (a column, e.g. ``"person"``), the mean over clusters of each cluster's mean: the
    estimand the chapters report, every person weighing the same.

    Example (person "a" has three questions, "b" one):
        >>> f = pd.DataFrame({"method": ["CD"] * 8, "knob": [0.5] * 4 + [1.0] * 4,
        ...                   "kl": [1, 1, 1, 4, 2, 2, 2, 2], "person": list("aaab") * 2})
        >>> best_knobs(f), best_knobs(f, cluster="person")
        ({'CD': 0.5}, {'CD': 1.0})
    """
    if cluster is not None:
        if cluster not in frame.columns:
            raise ValueError(f"no column {cluster!r} to cluster by; the frame has {list(frame.columns)}.")
        rows = [
            (m, kb, stats.cluster_mean(g[measure], g[cluster])[0])
            for (m, kb), g in frame.groupby(["method", "knob"], sort=False)
        ]
        means = pd.DataFrame(rows, columns=["method", "knob", measure])
    else:
        means = frame.groupby(["method", "knob"], sort=False)[measure].mean().reset_index()
    groups = means.groupby("method", sort=False)
    return {m: float(stats.best_knob(g["knob"], g[measure])) for m, g in groups if g[measure].notna().any()}


def bucket_summary(
    frame: pd.DataFrame, measure: str, by: str | None = "bucket", knobs: dict | None = None
) -> pd.DataFrame:
    """Mean ``measure`` per (method, knob) row and ``by`` column (plus "all"), with the item count.

    ``knobs``: {method: knob} keeps one knob per listed method (others keep all their knobs).
    Rows are labelled e.g. "CD 1/T=0.5", "APD on the fly w=0.3", "ELM".
    """
    df = frame
    if knobs:
        keep = np.ones(len(df), dtype=bool)
        for m, kb in knobs.items():
            keep &= ~((df["method"] == m) & ~np.isclose(df["knob"], kb))
        df = df[keep]
    df = df.assign(row=[method_label(m, kb) for m, kb in zip(df["method"], df["knob"])])
    order = list(dict.fromkeys(df["row"]))
    cols = {}
    if by is not None:
        groups = [b for b in BUCKETS if b in set(df[by])] + sorted(set(df[by]) - set(BUCKETS))
        for b in groups:
            cols[b] = df[df[by] == b].groupby("row")[measure].mean()
    cols["all"] = df.groupby("row")[measure].mean()
    out = pd.DataFrame(cols).loc[order]
    n = df[df["row"] == order[0]]
    counts = {b: int(n.loc[n[by] == b, measure].notna().sum()) for b in cols if b != "all"} if by is not None else {}
    counts["all"] = int(n[measure].notna().sum())
    out.attrs["n"] = counts
    return out


def paired_methods(
    frame: pd.DataFrame, a: tuple[str, float], b: tuple[str, float], measure: str = "kl", cluster: str | None = None
) -> stats.PairedDifference:
    """``measure`` of row ``a`` minus row ``b`` (each a ``(method, knob)`` of a
    :meth:`apd.evaluation.distributions.MethodDistributions.frame`; the ELM's knob is ignored),
    paired over the items both define; ``mean`` > 0: ``b`` is lower.
    ``cluster``: a column of ``frame`` (e.g. ``"person"``) whose units are not independent: the
    differences are averaged per cluster and the standard error taken over clusters
    (:func:`apd.core.stats.paired_difference` with ``groups``).

    Example:
        >>> f = pd.DataFrame({"method": ["ELM"] * 3 + ["CD"] * 3, "knob": [0.0] * 3 + [1.0] * 3,
        ...                   "item": [0, 1, 2] * 2, "kl": [1.0, 2.0, 3.0, 0.5, 1.0, 3.5]})
        >>> r = paired_methods(f, ("ELM", 0.0), ("CD", 1.0))
        >>> r.mean, r.n
        (0.3333333333333333, 3)
    """

    def rows(method, knob):
        sel = frame["method"] == method
        if method != "ELM":
            sel &= np.isclose(frame["knob"], knob)
        part = frame[sel]
        if part.empty:
            raise ValueError(
                f"no rows for {method_label(method, knob)!r} in the frame; "
                f"rows are {sorted(set(map(method_label, frame['method'], frame['knob'])))}"
            )
        return part.set_index("item")

    xa, ya = rows(*a), rows(*b)
    x, y = xa[measure], ya[measure]
    if not x.index.equals(y.index):
        raise ValueError(
            f"{method_label(*a)!r} and {method_label(*b)!r} cover different items; pair them on the same items."
        )
    if cluster is not None and cluster not in frame.columns:
        raise ValueError(
            f"no column {cluster!r} to cluster by; the frame has {', '.join(map(str, frame.columns))}. "
            f"Pass it to apd.evaluation.distributions.MethodDistributions.frame (e.g. {cluster}=[...] per item)."
        )
    groups = None if cluster is None else xa[cluster].to_numpy()
    return stats.paired_difference(x.to_numpy(dtype=float), y.to_numpy(dtype=float), groups=groups)


def paired_table(
    frame: pd.DataFrame,
    rows: dict,
    reference: tuple,
    measure: str = "kl",
    by: str | None = "bucket",
    cluster: str | None = None,
) -> pd.DataFrame:
    """Each row of ``rows`` ({label: (method, knob)}) against ``reference`` (a (method, knob)), paired
    over the items both define (:func:`paired_methods`): ``mean`` (the row's), ``gain`` = reference
    minus row (positive: the row is lower, i.e. better, for KL and -log(p + 0.01)), ``gain_se``,
    ``gain_mde`` (:func:`apd.core.stats.min_detectable_effect`) and ``n``; with ``by``, the same per
    group of that column (``gain_<group>``, ``gain_<group>_se``, ``mean_<group>``, ``n_<group>``).
    ``cluster``: standard errors over clusters of that column (:func:`paired_methods`), with
    ``n_clusters``. Indexed by label.

    Example:
        >>> f = pd.DataFrame({"method": ["CD"] * 4 + ["APD"] * 4, "knob": [0.5] * 8, "item": [0, 1, 2, 3] * 2,
        ...                   "bucket": ["head", "head", "tail", "tail"] * 2,
        ...                   "kl": [1.0, 2.0, 3.0, 4.0, 0.5, 1.5, 3.0, 4.5]})
        >>> t = paired_table(f, {"APD": ("APD", 0.5)}, ("CD", 0.5))
        >>> float(t.loc["APD", "gain"]), float(t.loc["APD", "gain_head"]), float(t.loc["APD", "gain_tail"])
        (0.125, 0.5, -0.25)
    """
    groups = [] if by is None else [b for b in BUCKETS if b in set(frame[by])] + sorted(set(frame[by]) - set(BUCKETS))
    out = []
    for label, (method, knob) in rows.items():
        r = paired_methods(frame, reference, (method, knob), measure, cluster)
        row = {
            "label": label,
            "method": method,
            "knob": float(knob),
            "mean": float(np.nanmean(_rows_of(frame, method, knob)[measure].to_numpy(dtype=float))),
            "gain": r.mean,
            "gain_se": r.se,
            "gain_mde": r.mde,
            "n": r.n,
            "n_clusters": r.n_groups,
        }
        for g in groups:
            sub = frame[frame[by] == g]
            rg = paired_methods(sub, reference, (method, knob), measure, cluster)
            row.update(
                {
                    f"mean_{g}": float(np.nanmean(_rows_of(sub, method, knob)[measure].to_numpy(dtype=float))),
                    f"gain_{g}": rg.mean,
                    f"gain_{g}_se": rg.se,
                    f"n_{g}": rg.n,
                }
            )
        out.append(row)
    return pd.DataFrame(out).set_index("label")


def _rows_of(frame: pd.DataFrame, method: str, knob: float) -> pd.DataFrame:
    sel = frame["method"] == method
    if method != "ELM":
        sel &= np.isclose(frame["knob"], knob)
    return frame[sel]


def method_label(method: str, knob: float) -> str:
    """ "ELM", "CD 1/T=0.5", "APD 1/T=1", "APD on the fly w=0.3"."""
    if method == "ELM":
        return "ELM"
    if method == "APD on the fly":
        return f"APD on the fly w={knob:g}"
    return f"{method} 1/T={knob:g}"
