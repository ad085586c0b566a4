"""lambda3 tuned on the world's dev people: one ALM' per grid value, lowest dev score wins.

Score (:data:`SCORE_APD_T1`, the release configuration's) = mean KL(truth || APD at 1/T = 1) over the
ELM's top 20 at the answer position of the dev people's world QA items (nats). The newer variants
(:mod:`apd.amateur.variants`) use :data:`SCORE_BEST_INV_T`: the same KL at APD's best 1/T of
:data:`apd.family.settings.INV_T_GRID` on the same items, i.e. lambda3 and 1/T chosen together on the dev
half, as the chapters report APD. Chapters report on the test people only.
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
from apd.family import knowledge
from apd.family.logprobs import next_token_log_probs
from apd.family.settings import INV_T_GRID
from apd.world import truth

TUNING_SCORE = "mean KL(truth || APD 1/T=1) over the ELM top-20, dev people"

#: The tuning scores (:func:`tune_lambda3`'s ``score``): APD at 1/T = 1 (the release's), or at APD's
#: dev-best 1/T of apd.family.settings.INV_T_GRID.
SCORE_APD_T1, SCORE_BEST_INV_T = "apd_t1", "best_inv_T"
TUNING_SCORES = {
    SCORE_APD_T1: TUNING_SCORE,
    SCORE_BEST_INV_T: "mean KL(truth || APD) over the ELM top-20 at APD's dev-best 1/T, dev people",
}


_TUNING_VERSION = 1  # bump when the tuning score changes


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
    score: str = SCORE_APD_T1,
    inv_T_grid=INV_T_GRID,
) -> tuple[float, pd.DataFrame]:
    """Train one ALM' per lambda3 in ``grid`` and keep the one with the lowest :func:`validation_score`
    on the world QA items of the dev people (``score``: at 1/T = 1, :data:`SCORE_APD_T1`, or at APD's
    best 1/T of ``inv_T_grid``, a family's ``Settings.inv_T_grid``, :data:`SCORE_BEST_INV_T`). Returns (best lambda3,
    table); the table (one row per value: lambda3, score, inv_T, n_scored, n_items, alm_prime) is
    cached in ``cache/apd/tuning-<key>.json``, with the ELM's and CD's (1/T = 1) scores on the same
    items in its ``attrs["reference"]``."""
    if not len(grid):
        raise ValueError("the lambda3 grid is empty; pass values such as apd.family.settings.LAMBDA3_GRID.")
    if score not in TUNING_SCORES:
        raise ValueError(f"unknown tuning score {score!r}; use one of {sorted(TUNING_SCORES)}.")
    world = built.corpus.world
    dev, _ = truth.dev_test_split(built.corpus.qa_items, world, seed)
    base_fields = {k: v for k, v in base.to_dict().items() if k != "lambda3"}
    parts = [
        _TUNING_VERSION,
        *collect.collection_identity(collect_dir),
        base_fields,
        [float(g) for g in grid],
        [(it.prompt, it.gold) for it in dev],
    ]
    if score != SCORE_APD_T1:  # only then: the release's tuning key stays as it was
        parts.append([score, list(inv_T_grid)])
    key = hash_key(*parts)
    path = Path(cache or paths.cache_dir()) / "apd" / f"tuning-{key}.json"
    with file_lock(path.with_suffix(".lock")):
        saved = read_json_checked(path, "lambda3 tuning table", "tuning again")
        if saved is not None and _relocated(saved, path, collect_dir, base, cache):
            return float(saved["best"]), _tuning_frame(saved)
        saved = _tune(fam, world, dev, collect_dir, base, grid, cache, seed, progress, score, inv_T_grid)
        write_json(path, saved, digest=True)
    return float(saved["best"]), _tuning_frame(saved)


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
    return min(scores, key=lambda r: r["score"])


def scoring_threads(fam):
    """A context in which a family's scoring runs: one torch thread on the CPU (the models are small and
    threads contend on a shared CPU: design notes, "ALM' training cost"), the device's own setting
    elsewhere."""
    return cpu_threads(1 if getattr(getattr(fam, "device", None), "type", "cpu") == "cpu" else None)


def _tune(fam, world, dev, collect_dir, base, grid, cache, seed, progress, score, inv_T_grid) -> dict:
    with scoring_threads(fam):
        return _tune_grid(fam, world, dev, collect_dir, base, grid, cache, seed, progress, score, inv_T_grid)


def _tune_grid(fam, world, dev, collect_dir, base, grid, cache, seed, progress, score, inv_T_grid) -> dict:
    qa = dev_scores(fam, world, dev)
    elm = qa.logprobs[-1]
    reference = {
        "ELM": validation_score(elm, elm, qa.truth, inv_T=0.0)["score"],
        "CD 1/T=1": validation_score(elm, qa.logprobs[0], qa.truth)["score"],
    }
    if score == SCORE_BEST_INV_T:
        cd = best_inv_T_score(elm, qa.logprobs[0], qa.truth, grid=inv_T_grid)
        reference["CD dev-best 1/T"], reference["CD dev-best 1/T value"] = cd["score"], cd["inv_T"]
    rows = []
    for value in grid:
        config = replace(base, lambda3=float(value))
        alm_prime = train_apd(fam, collect_dir, config, cache=cache, progress=progress)
        model = load_alm_prime(alm_prime, device=fam.device)
        lp = next_token_log_probs(model, fam.tokenizer, [it.prompt for it in dev], fam.vocab_size)
        scored = (
            validation_score(elm, lp, qa.truth)
            if score == SCORE_APD_T1
            else best_inv_T_score(elm, lp, qa.truth, grid=inv_T_grid)
        )
        rows.append({"lambda3": float(value), **scored, "alm_prime": str(alm_prime)})
        del model
    best = min(rows, key=lambda r: r["score"])["lambda3"]
    return {
        "best": best,
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
    df.attrs["score"] = saved.get("score", TUNING_SCORE)
    return df
