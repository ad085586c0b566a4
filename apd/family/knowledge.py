"""What each member of a family knows about the synthetic world: next-token scores at the answer
position of world QA items (``apd.world.world.QAItem``).

Every attribute value of the world starts with its own first token, so a question is scored at one
position: the token right after ``"Answer:"``. For each item and member we record the probability
of the gold answer's first token, its rank over the whole vocabulary, and whether it beats the
distractors' first tokens (multiple-choice accuracy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats

from apd.family.logprobs import prompt_log_probs
from apd.world.world import BUCKETS


@dataclass
class WorldQAScores:
    """Scores of N members on B items.

    logprobs: ``(N, B, V)`` float32 next-token log-probabilities at the answer position;
    gold: ``(B,)`` first-token id of each gold answer; choices: ``(B, C)`` first-token ids of the
    gold (column 0) and the distractors; truth: ``(B, V)`` float32 true next-token distribution
    from the world (the asymptotic probability); frame: one row per (member, item).
    """

    names: list[str]
    log_sizes: np.ndarray
    items: list
    logprobs: np.ndarray
    gold: np.ndarray
    choices: np.ndarray
    truth: np.ndarray
    frame: pd.DataFrame


def first_token_id(tokenizer, prompt: str, answer: str) -> int:
    """Id of the first token of ``" " + answer`` as it continues ``prompt``."""
    base = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    full = tokenizer(prompt + " " + answer, add_special_tokens=False)["input_ids"]
    if full[: len(base)] != base or len(full) == len(base):
        raise ValueError(
            f"the tokenizer merges the end of {prompt!r} with the answer {answer!r}; "
            "the answer position is not well defined"
        )
    return int(full[len(base)])


def score_world_qa(family, world, items, batch_size: int = 64, progress: bool = False) -> WorldQAScores:
    """Next-token log-probabilities of every member at every item's answer position."""
    if not items:
        raise ValueError("no QA items to score: pass world.qa_items() (or a non-empty subset)")
    tok = family.tokenizer
    V = family.vocab_size
    gold = np.array([first_token_id(tok, it.prompt, it.gold) for it in items])
    choices = np.array([[first_token_id(tok, it.prompt, c) for c in it.choices] for it in items])
    truth = np.zeros((len(items), V), dtype=np.float32)
    for i, it in enumerate(items):
        for token, p in world.next_token_distribution(it, tok).items():
            truth[i, token] += p
    out = prompt_log_probs(family, [it.prompt for it in items], batch_size, progress=progress)
    frame = qa_frame(family.names, np.asarray(family.log_sizes), items, out, gold, choices)
    return WorldQAScores(
        list(family.names), np.asarray(family.log_sizes), list(items), out, gold, choices, truth, frame
    )


def qa_frame(names, log_sizes, items, logprobs, gold, choices) -> pd.DataFrame:
    """One row per (member, item): p_gold, rank (1 = top), top1 and multiple-choice correctness."""
    rows = []
    B = len(items)
    idx = np.arange(B)
    for m, name in enumerate(names):
        lp = logprobs[m]
        g = lp[idx, gold]
        rank = 1 + (lp > g[:, None]).sum(-1)
        mc = lp[idx[:, None], choices].argmax(-1) == 0
        rows.append(
            pd.DataFrame(
                {
                    "member": name,
                    "log_size": float(log_sizes[m]),
                    "item": idx,
                    "attribute": [it.attribute for it in items],
                    "bucket": [it.bucket for it in items],
                    "p_gold": np.exp(g),
                    "rank": rank,
                    "top1": rank == 1,
                    "mc_correct": mc,
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def accuracy_table(
    frame: pd.DataFrame, metric: str = "mc_correct", deterministic_only: bool = True, distributional=("drink", "hobby")
) -> pd.DataFrame:
    """Mean of ``metric`` by member (rows, in size order) and frequency bucket (columns)."""
    df = frame[~frame["attribute"].isin(distributional)] if deterministic_only else frame
    order = list(dict.fromkeys(frame["member"]))
    table = df.pivot_table(index="member", columns="bucket", values=metric, aggfunc="mean")
    cols = [c for c in ("head", "torso", "tail") if c in table.columns]
    table = table.loc[order, cols]
    table["all"] = df.groupby("member")[metric].mean().loc[order]
    return table


def paired_gain(
    frame: pd.DataFrame,
    smaller: str,
    larger: str,
    bucket: str | None = None,
    metric: str = "mc_correct",
    distributional=("drink", "hobby"),
) -> dict:
    """Does member ``larger`` answer more of the same items than ``smaller``? Exact McNemar test.

    Both members are scored on the same items, so the test looks only at the discordant items:
    ``only_larger`` (right for ``larger`` alone) and ``only_smaller``. Under "no difference" each
    discordant item is a fair coin, so the two-sided p-value is a binomial test of
    ``only_larger`` out of ``only_larger + only_smaller`` at 1/2. ``bucket=None`` pools every
    bucket. Returns n (items), acc_smaller, acc_larger, gain (share of items, larger minus
    smaller), only_larger, only_smaller and p_value (1.0 when no item is discordant).
    """
    df = frame[~frame["attribute"].isin(distributional)]
    if bucket is not None:
        df = df[df["bucket"] == bucket]
    for name in (smaller, larger):
        if name not in set(frame["member"]):
            raise ValueError(f"no member {name!r} in the scores; members are {sorted(set(frame['member']))}")
    a = df[df["member"] == smaller].set_index("item")[metric].astype(bool)
    b = df[df["member"] == larger].set_index("item")[metric].astype(bool)
    if len(a) == 0:
        raise ValueError(f"no items to compare in bucket {bucket!r} (after leaving out {list(distributional)})")
    if not a.index.equals(b.index):
        raise ValueError(
            f"{smaller!r} and {larger!r} were not scored on the same items; a paired test needs the same items"
        )
    only_larger = int((b & ~a).sum())
    only_smaller = int((a & ~b).sum())
    discordant = only_larger + only_smaller
    p = float(scipy.stats.binomtest(only_larger, discordant, 0.5).pvalue) if discordant else 1.0
    return {
        "n": len(a),
        "acc_smaller": float(a.mean()),
        "acc_larger": float(b.mean()),
        "gain": float(b.mean() - a.mean()),
        "only_larger": only_larger,
        "only_smaller": only_smaller,
        "p_value": p,
    }


def saturation_table(scores: WorldQAScores, ratio: float = 0.5) -> pd.DataFrame:
    """Which world facts' curves flatten by the largest member, per frequency bucket.

    For every item, p_i = the gold answer's first-token probability in member i (full vocabulary)
    against x_i = ln(non-embedding size); slopes between neighbouring members in probability per
    unit of x. A curve *rises* when its first slope is positive, and *flattens* when, rising, its
    last slope is under ``ratio`` times its first (the curve is bending toward an asymptote by the
    largest member, the regime the method assumes). A curve that rises overall (largest member above
    the smallest) is *past the steepest step* when its last slope is under ``ratio`` times its
    steepest one (an S-shaped curve that has begun to bend). One row per bucket (and "all"): items,
    share rising, share flattening among the rising, share past the steepest step among those rising
    overall, mean first and last slope.

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> items = built.corpus.qa_items[:12]
        >>> table = saturation_table(score_world_qa(fam, built.corpus.world, items))
        >>> list(table.columns)[:3]
        ['items', 'share rising', 'share flattening (of rising)']
    """
    if not 0 < ratio < 1:
        raise ValueError(f"ratio must be in (0, 1), got {ratio}; 0.5 means 'the last slope is under half the first'.")
    x = np.asarray(scores.log_sizes, dtype=np.float64)
    if x.size < 3:
        raise ValueError(f"saturation needs at least 3 members (a first and a last slope), got {x.size}.")
    p = np.exp(
        np.take_along_axis(
            scores.logprobs.astype(np.float64),
            np.broadcast_to(scores.gold[None, :, None], scores.logprobs.shape[:2] + (1,)),
            axis=-1,
        )[..., 0]
    )  # (N, B)
    slopes = np.diff(p, axis=0) / np.diff(x)[:, None]  # (N-1, B)
    first, last, steepest = slopes[0], slopes[-1], slopes.max(axis=0)
    rising = first > 0
    flat = rising & (last < ratio * first)
    # S-shaped curves (nothing known by the smallest members, a rise, then a bend) have a first slope
    # near 0, so "under half the first" almost never holds; "under half the steepest step" asks
    # whether the curve has passed its steepest rise by the largest member
    up = p[-1] > p[0]
    past = up & (last < ratio * steepest)
    buckets = np.array([it.bucket for it in scores.items])
    rows = {}
    for name in [*BUCKETS, "all"]:
        sel = np.ones_like(rising) if name == "all" else buckets == name
        if not sel.any():
            continue
        n_rising = int(rising[sel].sum())
        n_up = int(up[sel].sum())
        rows[name] = {
            "items": int(sel.sum()),
            "share rising": float(rising[sel].mean()),
            "share flattening (of rising)": float(flat[sel].sum() / n_rising) if n_rising else float("nan"),
            "share past the steepest step (of rising overall)": float(past[sel].sum() / n_up)
            if n_up
            else float("nan"),
            "mean first slope": float(first[sel].mean()),
            "mean last slope": float(last[sel].mean()),
        }
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "bucket"
    table.attrs["ratio"] = ratio
    return table
