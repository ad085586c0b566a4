"""lambda3 tuned on the world's dev people: one ALM' per grid value, lowest dev score wins.

Score (:data:`SCORE_BEST_INV_T`, every variant's, the release configuration's included) = mean
KL(truth || APD) over the ELM's top 20 at the answer position of the dev people's world QA items
(nats), at APD's best 1/T of :data:`apd.family.settings.INV_T_GRID`: lambda3 and 1/T chosen together
on the dev half, as the chapters report APD. The choice (:func:`choose_lambda3`): ties within :data:`TIE_NATS` go to the larger
lambda3, and a choice at an end of the grid widens it (design notes, "lambda3 on the claims'
criterion"). Chapters report on the test people only.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from apd.amateur import collect
from apd.amateur.config import APDTrainConfig
from apd.amateur.runs import hash_key, load_alm_prime, train_apd, train_dir
from apd.base import paths
from apd.base.device import cpu_threads
from apd.base.io import read_json_checked, set_aside, write_json
from apd.base.lock import file_lock
from apd.base.memo import code_digest
from apd.core.stats import best_knob
from apd.family import knowledge
from apd.family.logprobs import next_token_log_probs
from apd.family.settings import INV_T_GRID
from apd.world import truth

#: The tuning score (:func:`tune_lambda3`'s ``score``): APD at APD's dev-best 1/T of
#: apd.family.settings.INV_T_GRID (every variant's; the release's was once APD at 1/T = 1).
SCORE_BEST_INV_T = "best_inv_T"
TUNING_SCORES = {
    SCORE_BEST_INV_T: "mean KL(truth || APD) over the ELM top-20 at APD's dev-best 1/T, dev people",
}


_TUNING_VERSION = 3  # bump when the tuning score or the choice changes (2: the widening and the tie rule; 3: a plateau is not followed)

#: How :func:`choose_lambda3` chooses: dev KLs within ``TIE_NATS`` of the best are ties, won by the larger
#: lambda3 (ALM' nearer the ALM); a choice at an end of the grid extends the grid past that end by
#: ``WIDEN_FACTOR`` (halve the smallest, double the largest), at most ``WIDEN_MAX`` values in all.
TIE_NATS, WIDEN_FACTOR, WIDEN_MAX = 0.0005, 2.0, 3


def choose_lambda3(grid, score_of, *, tie=TIE_NATS, factor=WIDEN_FACTOR, max_added=WIDEN_MAX):
    """The lambda3 with the lowest ``score_of(value)["score"]`` (a dev KL; ties within ``tie`` go to
    the larger lambda3), the grid widened while the choice is at one of its ends: the value past that
    end (the smallest / ``factor``, the largest * ``factor``) is scored too, until the choice is
    interior, an added value does no better than the choice by more than ``tie`` (the choice stays,
    now inside the values scored: a plateau is not followed), or ``max_added`` values have been added. A grid of one value is a given value, not
    widened; nothing lies below lambda3 = 0. Returns ``(best, rows, interior)``: one row per value
    scored, by lambda3 (``lambda3``, ``score_of``'s fields, ``widened``: added past the grid), and
    whether ``best`` lies strictly inside the values scored.

    Example:
        >>> kl = {0.05: 2.30, 0.1: 2.20, 0.2: 2.25, 0.4: 2.2003}
        >>> dev_kl = lambda v: {"score": kl.get(v, 9.0)}   # a fake score: no training
        >>> best, rows, interior = choose_lambda3((0.1, 0.2), dev_kl)   # 0.1 is the smallest: 0.05 is added
        >>> best, [r["lambda3"] for r in rows], [r["widened"] for r in rows], interior
        (0.1, [0.05, 0.1, 0.2], [True, False, False], True)
        >>> best, rows, interior = choose_lambda3((0.1, 0.2, 0.4), dev_kl)   # 0.4 ties 0.1: the larger wins
        >>> best, [r["lambda3"] for r in rows], interior   # 0.8, added past it, does no better: 0.4 stays
        (0.4, [0.1, 0.2, 0.4, 0.8], True)
        >>> flat = lambda v: {"score": 2.0}   # a plateau: the first value past the end ties, and widening stops
        >>> choose_lambda3((0.4, 0.8), flat)[0::2]
        (0.8, True)
    """
    start = sorted({float(v) for v in grid})
    if not start:
        raise ValueError("the lambda3 grid is empty; pass values such as apd.family.settings.LAMBDA3_GRID.")
    rows = {v: {"lambda3": v, **score_of(v), "widened": False} for v in start}

    def best_and_interior():
        low = min(r["score"] for r in rows.values())
        best = max(v for v, r in rows.items() if r["score"] <= low + tie)
        return best, min(rows) < best < max(rows)

    best, interior = best_and_interior()
    for _ in range(max_added if len(start) > 1 else 0):
        if interior:
            break
        new = best / factor if best == min(rows) else best * factor
        if new in rows:  # lambda3 = 0: nothing lies below it
            break
        rows[new] = {"lambda3": new, **score_of(new), "widened": True}
        if rows[new]["score"] > rows[best]["score"] - tie:  # no better past the end: the choice stays, now inside
            return best, [rows[v] for v in sorted(rows)], True
        best, interior = best_and_interior()
    return best, [rows[v] for v in sorted(rows)], interior


def validation_score(elm_logprobs, alm_prime_logprobs, truth_probs, k: int = 20, inv_T: float = 1.0) -> dict:
    """The tuning score of one ALM': mean KL(truth || APD at ``inv_T`` = 1/T = 1) over the ELM's top k
    (lower is better), and the number of items scored (those whose truth has mass on the top k).
    Inputs ``(B, V)``: the log-probabilities of the ELM and of ALM' and the true next-token probabilities."""
    ids = truth.topk_ids(elm_logprobs, k)
    q = truth.contrastive_topk(elm_logprobs, alm_prime_logprobs, inv_T, ids)
    kl = truth.kl_to_truth(truth.at(truth_probs, ids), q)
    ok = ~np.isnan(kl)
    if not ok.any():
        raise ValueError(
            "the truth puts no mass on the ELM's top tokens for any dev item: nothing to tune on "
            "(is the family trained?)."
        )
    return {"score": float(kl[ok].mean()), "n_scored": int(ok.sum()), "n_items": int(len(kl))}


def tune_lambda3(
    fam,
    built,
    collect_dir,
    base: APDTrainConfig,
    grid,
    *,
    cache=None,
    seed: int = 0,
    progress: bool = True,
    score: str = SCORE_BEST_INV_T,
    inv_T_grid=INV_T_GRID,
    heldout=None,
) -> tuple[float, pd.DataFrame]:
    """Train one ALM' per lambda3 in ``grid`` and keep the one with the lowest :func:`validation_score`
    on the world QA items of the dev people (``score``: at APD's best 1/T of ``inv_T_grid``, a family's
    ``Settings.inv_T_grid``, :data:`SCORE_BEST_INV_T`), the grid
    widened and ties broken by :func:`choose_lambda3`. Returns (best lambda3, table); the table (one
    row per value tried: lambda3, score, inv_T, n_scored, n_items, alm_prime, widened, chosen) is
    cached in ``cache/apd/tuning-<key>.json`` (:func:`tuning_key`), with the ELM's and CD's scores on
    the same items in its ``attrs["reference"]``, whether the choice is interior in
    ``attrs["interior"]`` and the grid asked for in ``attrs["grid"]``. ``heldout``: passed to each
    run (:func:`apd.amateur.runs.train_apd`)."""
    if not len(grid):
        raise ValueError("the lambda3 grid is empty; pass values such as apd.family.settings.LAMBDA3_GRID.")
    if score not in TUNING_SCORES:
        raise ValueError(f"unknown tuning score {score!r}; use one of {sorted(TUNING_SCORES)}.")
    world = built.corpus.world
    dev, _ = truth.dev_test_split(built.corpus.qa_items, world, seed)
    key = tuning_key(collect_dir, base, grid, dev, score, inv_T_grid)
    path = Path(cache or paths.cache_dir()) / "apd" / f"tuning-{key}.json"
    with file_lock(path.with_suffix(".lock")):
        saved = read_json_checked(path, "lambda3 tuning table", "tuning again")
        if saved is not None and _relocated(saved, path, collect_dir, base, cache):
            return float(saved["best"]), _tuning_frame(saved)
        saved = _tune(fam, world, dev, collect_dir, base, grid, cache, seed, progress, score, inv_T_grid, heldout)
        write_json(path, saved, digest=True)
    return float(saved["best"]), _tuning_frame(saved)


#: The modules whose code computes a tuning table's scores: a change in any of them tunes again.
TUNING_CODE = ("apd.amateur.tuning", "apd.world.truth", "apd.core.contrastive", "apd.core.stats")


def tuning_key(collect_dir, base: APDTrainConfig, grid, dev, score: str, inv_T_grid) -> str:
    """The cache key of a lambda3 tuning table: the collection, the training configuration less its
    lambda3, the grid, the dev items (``dev``: QA items with ``prompt`` and ``gold``), the score with
    its 1/T grid, the choice's rule (:func:`choose_lambda3`) and the code that scores
    (:data:`TUNING_CODE`). The ALM' runs it trains keep their own keys
    (:func:`apd.amateur.runs.train_dir`), so a run at a lambda3 trained before is reused."""
    return hash_key(
        code_digest(TUNING_CODE),
        _TUNING_VERSION,
        *collect.collection_identity(collect_dir),
        {k: v for k, v in base.to_dict().items() if k != "lambda3"},
        [float(g) for g in grid],
        [(it.prompt, it.gold) for it in dev],
        [score, [float(v) for v in inv_T_grid]],
        [TIE_NATS, WIDEN_FACTOR, WIDEN_MAX],
    )


def _relocated(saved: dict, path: Path, collect_dir, base: APDTrainConfig, cache) -> bool:
    """Point a cached tuning table's rows at their ALM' runs where the cache is now (the table holds
    the folders it was written with; a moved cache is used as it is). False when a run is gone (tune
    again); a table that is not one is set aside, and False."""
    try:
        rows = saved["rows"]
        for r in rows:
            r["alm_prime"] = str(
                train_dir(collect_dir, replace(base, lambda3=float(r["lambda3"])), cache) / "alm_prime"
            )
        float(saved["best"])
    except (KeyError, TypeError, ValueError):
        set_aside(path, "lambda3 tuning table", "it is not a tuning table", "tuning again")
        return False
    return all(Path(r["alm_prime"]).is_dir() for r in rows)


def best_inv_T_score(elm_logprobs, amateur_logprobs, truth_probs, k: int = 20, grid=INV_T_GRID) -> dict:
    """:func:`validation_score` at the 1/T of ``grid`` with the lowest score (ties: the first), with
    that ``inv_T``."""
    scores = [
        dict(validation_score(elm_logprobs, amateur_logprobs, truth_probs, k, float(v)), inv_T=float(v)) for v in grid
    ]
    return best_knob(scores, [r["score"] for r in scores])


def scoring_threads(fam):
    """A context in which a family's scoring runs: one torch thread on the CPU (the models are small and
    threads contend on a shared CPU: design notes, "ALM' training cost"), the device's own setting
    elsewhere."""
    return cpu_threads(1 if getattr(getattr(fam, "device", None), "type", "cpu") == "cpu" else None)


def _tune(fam, world, dev, collect_dir, base, grid, cache, seed, progress, score, inv_T_grid, heldout) -> dict:
    with scoring_threads(fam):
        return _tune_grid(fam, world, dev, collect_dir, base, grid, cache, seed, progress, score, inv_T_grid, heldout)


def _tune_grid(fam, world, dev, collect_dir, base, grid, cache, seed, progress, score, inv_T_grid, heldout) -> dict:
    qa = dev_scores(fam, world, dev)
    elm = qa.logprobs[-1]
    reference = {
        "ELM": validation_score(elm, elm, qa.truth, inv_T=0.0)["score"],
        "CD 1/T=1": validation_score(elm, qa.logprobs[0], qa.truth)["score"],
    }
    if score == SCORE_BEST_INV_T:
        cd = best_inv_T_score(elm, qa.logprobs[0], qa.truth, grid=inv_T_grid)
        reference["CD dev-best 1/T"], reference["CD dev-best 1/T value"] = cd["score"], cd["inv_T"]

    def score_of(value: float) -> dict:
        config = replace(base, lambda3=float(value))
        alm_prime = train_apd(fam, collect_dir, config, cache=cache, progress=progress, heldout=heldout)
        model = load_alm_prime(alm_prime, device=fam.device)
        lp = next_token_log_probs(model, fam.tokenizer, [it.prompt for it in dev], fam.vocab_size)
        del model
        return {**best_inv_T_score(elm, lp, qa.truth, grid=inv_T_grid), "alm_prime": str(alm_prime)}

    best, rows, interior = choose_lambda3(grid, score_of)
    return {
        "best": best,
        "interior": interior,
        "grid": [float(g) for g in grid],
        "score": TUNING_SCORES[score],
        "seed": seed,
        "n_dev_items": len(dev),
        "rows": rows,
        "reference": reference,
    }


def dev_scores(fam, world, dev):

    if not dev:
        raise ValueError("the world has no dev people to tune lambda3 on; use a larger world.")
    return knowledge.score_world_qa(fam, world, dev)


def _tuning_frame(saved: dict) -> pd.DataFrame:
    df = pd.DataFrame(saved["rows"])
    df["chosen"] = np.isclose(df["lambda3"], saved["best"])
    df.attrs["reference"] = dict(saved.get("reference", {}))
    df.attrs["score"] = saved.get("score", TUNING_SCORES[SCORE_BEST_INV_T])
    df.attrs["interior"] = saved.get("interior")
    df.attrs["grid"] = list(saved.get("grid", df["lambda3"]))
    return df
