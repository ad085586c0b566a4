"""The factuality verdict on the world as a paired, grouped comparison, and what it can detect.

Two methods continue the same prompts under the same seeds (the sweep seeds every batch by
(seed, batch), so both draw the same random numbers). Each (prompt, seed) gives one NE_ER unit per
method: the share of the continuation's named entities the world does not associate with the
prompt's person (NaN when it names none). The difference is averaged per person and its standard
error taken over people, since the prompts about one person share that person's facts. The
variance components (:func:`apd.core.stats.variance_components`) say how much more seeds or more
people would buy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from apd.core import stats
from apd.evaluation.factuality.scoring import matched_gap
from apd.evaluation.factuality.sweeps import diversity
from apd.evaluation.factuality.world_scoring import world_facts, world_test_prompts
from apd.world.world import OPENERS, BioPrompt


def world_verdict_prompts(world, seed: int = 0, openers: Sequence[str] = OPENERS) -> list[BioPrompt]:
    """Every opener of ``openers`` for every person of the test half (the people of
    :func:`world_test_prompts`): ``len(openers)`` prompts per person, person-major order."""
    if not openers:
        raise ValueError("openers is empty; pass at least one sentence opening, e.g. apd.world.world.OPENERS.")
    people = [p for p in world_test_prompts(world, seed)]
    return [
        BioPrompt(prompt=world.person(p.person).name + o, person=p.person, bucket=p.bucket)
        for p in people
        for o in openers
    ]


def ne_er_units(world, prompts: Sequence[BioPrompt], continuations: Sequence[Sequence[str]]) -> np.ndarray:
    """``(n_prompts, n_seeds)`` share of each continuation's named entities that are wrong for the
    prompt's person (NaN: no entity)."""
    if len(continuations) != len(prompts):
        raise ValueError(
            f"{len(continuations)} prompts' continuations for {len(prompts)} prompts; pass them in order."
        )
    out = np.full((len(prompts), len(continuations[0]) if continuations else 0), np.nan)
    for i, (p, row) in enumerate(zip(prompts, continuations)):
        for j, c in enumerate(row):
            f = world_facts(world, p, c)
            if f.entities:
                out[i, j] = len(f.wrong_entities) / len(f.entities)
    return out


@dataclass(frozen=True)
class PairedUnits:
    """Two methods' NE_ER units on the same prompts and seeds: ``a`` and ``b``, ``(n_prompts,
    n_seeds)`` fractions (NaN: no entity); ``groups``, the person of each unit in ``a.ravel()``'s
    order; ``difference``, B's minus A's averaged per person with its standard error over people
    (:func:`apd.core.stats.paired_difference`; se NaN with fewer than two people)."""

    a: np.ndarray
    b: np.ndarray
    groups: np.ndarray
    difference: stats.PairedDifference


def paired_units(world, prompts: Sequence[BioPrompt], continuations_a, continuations_b) -> PairedUnits:
    """The NE_ER units of two methods' continuations of the same ``prompts`` under the same seeds
    (``out[i][j]`` per prompt and seed), grouped by person, and their paired difference (see
    :class:`PairedUnits`). Any number of units per person, one included.

    Example (A names each person's birth city, B another person's; one seed):
        >>> from apd.world.world import World, WorldConfig
        >>> world = World(WorldConfig.smoke())
        >>> prompts = world_verdict_prompts(world, openers=[" was born in"])[:3]
        >>> right = [[" " + world.person(p.person).birth_city + "."] for p in prompts]
        >>> wrong = [[" " + next(q.birth_city for q in world.people if q.birth_city != world.person(p.person).birth_city)
        ...           + "."] for p in prompts]
        >>> u = paired_units(world, prompts, right, wrong)
        >>> u.a.shape, u.difference.mean, u.difference.n_groups
        ((3, 1), 1.0, 3)
    """
    a = ne_er_units(world, prompts, continuations_a)
    b = ne_er_units(world, prompts, continuations_b)
    if a.shape != b.shape:
        raise ValueError(
            f"continuations of shape {a.shape} and {b.shape}: generate both with the same prompts and seeds."
        )
    groups = np.repeat([p.person for p in prompts], a.shape[1])
    return PairedUnits(a, b, groups, stats.paired_difference(b.ravel(), a.ravel(), groups=groups))


@dataclass(frozen=True)
class PairedVerdict:
    """B's NE_ER minus A's (positive: A names fewer wrong entities), averaged per person; the two
    methods' pooled NE_ER; the grouped paired difference and its variance components."""

    ne_er_a: float
    ne_er_b: float
    difference: stats.PairedDifference
    components: stats.VarianceComponents
    n_seeds: int

    def projection(
        self, effect: float | None, seeds: Sequence[float] = (), people: Sequence[float] = ()
    ) -> pd.DataFrame:
        """Smallest detectable effect (fraction) for other designs: rows of (people, seeds per
        prompt, units per person, se, mde, detects ``effect``: None without one), the measured design first."""
        vc, per_seed = self.components, self.components.per_group / self.n_seeds
        rows = [(vc.n_groups, self.n_seeds, "this build")]
        rows += [(vc.n_groups, s, "more seeds") for s in seeds]
        rows += [(g, self.n_seeds, "more people") for g in people]
        out = []
        for g, s, what in rows:
            se = stats.projected_se(vc, n_groups=g, per_group=per_seed * s)
            mde = stats.min_detectable_effect(se)
            out.append(
                {
                    "design": what,
                    "people": g,
                    "seeds per prompt": s,
                    "se": se,
                    "smallest detectable": mde,
                    "detects the paper's effect": None if effect is None else bool(mde <= effect),
                }
            )
        return pd.DataFrame(out)

    def people_needed(self, effect: float, n_seeds: float | None = None) -> float:
        """People (test half) needed to detect ``effect`` at ``n_seeds`` seeds (default: as run)."""
        s = self.n_seeds if n_seeds is None else n_seeds
        return stats.groups_needed(self.components, effect, per_group=self.components.per_group / self.n_seeds * s)


def paired_verdict(world, prompts: Sequence[BioPrompt], continuations_a, continuations_b) -> PairedVerdict:
    """Compare two methods' continuations of the same ``prompts`` under the same seeds (``out[i][j]``
    as :func:`apd.evaluation.factuality.sweeps.generate_continuations` returns them), grouped by person
    (:func:`paired_units`), with the variance components of the difference: these need at least two
    people and one person with two units or more (:func:`apd.core.stats.variance_components`), else
    a ValueError.

    Example (A names each person's birth city, B another person's; two seeds):
        >>> from apd.world.world import World, WorldConfig
        >>> world = World(WorldConfig.smoke())
        >>> prompts = world_verdict_prompts(world, openers=[" was born in"])[:3]
        >>> right = [[" " + world.person(p.person).birth_city + "."] * 2 for p in prompts]
        >>> wrong = [[" " + next(q.birth_city for q in world.people if q.birth_city != world.person(p.person).birth_city)
        ...           + "."] * 2 for p in prompts]
        >>> v = paired_verdict(world, prompts, right, wrong)
        >>> v.ne_er_a, v.ne_er_b, v.difference.mean, v.difference.n_groups
        (0.0, 1.0, 1.0, 3)
    """
    u = paired_units(world, prompts, continuations_a, continuations_b)
    if u.difference.n_groups < 2:
        raise ValueError(
            f"{u.difference.n_groups} person(s) with an entity in both methods' continuations; a grouped "
            "comparison needs at least two: use more prompts or longer continuations."
        )
    vc = stats.variance_components(u.b.ravel(), u.a.ravel(), u.groups)
    return PairedVerdict(float(np.nanmean(u.a)), float(np.nanmean(u.b)), u.difference, vc, int(u.a.shape[1]))


#: the outcomes of a paired difference's reading (:func:`reading_outcome`)
OUTCOMES = ("significant", "reversed", "ruled_out", "inconclusive")

#: :func:`reading`'s sentence for each outcome (the inconclusive one with the paper's effect given)
_SENTENCES = {
    "significant": "significant",
    "reversed": "significant in the other direction",
    "ruled_out": "not significant, and the paper's effect lies above its 95% confidence bound",
    "inconclusive": "inconclusive: the 95% interval holds both no difference and the paper's effect",
}


def reading_outcome(d: float, se: float, effect: float | None = None) -> str:
    """A paired difference ``d`` (positive: the claimed direction) with standard error ``se``
    decided by its 95% confidence interval as the paper-vs-book chapter decides it
    (:func:`apd.core.stats.detected`), as one of :data:`OUTCOMES`: ``significant`` (in the claimed
    direction), ``reversed`` (significant in the other direction), ``ruled_out`` (not significant,
    and the paper's ``effect``, same units, lies above the interval) or ``inconclusive``.

    Example:
        >>> reading_outcome(0.05, 0.01), reading_outcome(-0.05, 0.01), reading_outcome(0.001, 0.01, effect=0.1)
        ('significant', 'reversed', 'ruled_out')
        >>> reading_outcome(0.001, 0.1, effect=0.1), reading_outcome(0.001, 0.1)
        ('inconclusive', 'inconclusive')
    """
    if not (math.isfinite(d) and math.isfinite(se)):
        raise ValueError(f"a difference and its standard error must be finite numbers, got d={d!r}, se={se!r}.")
    detected = stats.detected(d, se, effect)
    if detected:
        return "significant"
    if d < -stats.Z_TEST * se:
        return "reversed"
    if detected is False:
        return "ruled_out"
    return "inconclusive"


def reading(d: float, se: float, effect: float | None = None) -> str:
    """:func:`reading_outcome` in words: ``effect`` is the paper's effect on this testbed's scale
    (same units); without one an inconclusive reading says so.

    Example:
        >>> reading(0.05, 0.01), reading(-0.05, 0.01)
        ('significant', 'significant in the other direction')
        >>> reading(0.001, 0.01, effect=0.1), reading(0.001, 0.1, effect=0.1), reading(0.001, 0.1)
        ("not significant, and the paper's effect lies above its 95% confidence bound", "inconclusive: the 95% interval holds both no difference and the paper's effect", 'inconclusive: not significant, and the paper gives no effect in these units')
    """
    outcome = reading_outcome(d, se, effect)
    if outcome == "inconclusive" and effect is None:
        return "inconclusive: not significant, and the paper gives no effect in these units"
    return _SENTENCES[outcome]


def summary(v: PairedVerdict, effect: float | None = None) -> dict:
    """The numbers a page and the verdicts read from one paired comparison (fractions): ``ne_er_a``,
    ``ne_er_b`` (pooled NE_ER), ``diff`` (B's minus A's, averaged per person), ``diff_se``, ``mde``
    (smallest detectable difference), ``n_pairs``, ``n_people``, ``n_seeds``, ``reading`` (words,
    :func:`reading` against ``effect``), ``people_needed`` (to detect ``effect`` at these seeds;
    None without an effect) and ``outcome`` (the reading's code, :func:`reading_outcome`)."""
    d = v.difference
    return {
        "ne_er_a": v.ne_er_a,
        "ne_er_b": v.ne_er_b,
        "diff": d.mean,
        "diff_se": d.se,
        "mde": d.mde,
        "n_pairs": d.n,
        "n_people": d.n_groups,
        "n_seeds": v.n_seeds,
        "reading": reading(d.mean, d.se, effect),
        "people_needed": _ceil(v.people_needed(effect)) if effect is not None else None,
        "outcome": reading_outcome(d.mean, d.se, effect),
    }


def _ceil(x: float) -> float:
    return math.ceil(x) if math.isfinite(x) else x


def matched_gap_paired(
    world, prompts: Sequence[BioPrompt], curves: dict, a: str, b: str, n_boot: int = 200, seed: int = 0
) -> dict:
    """:func:`apd.evaluation.factuality.scoring.matched_gap` of curve ``b`` against curve ``a`` (NE_ER at
    matched Dist-2; positive: ``a`` names fewer wrong entities at the same diversity) with a standard
    error from resampling people: every setting's continuations are of the same ``prompts`` and seeds,
    so one draw of people (with replacement) resamples every point of both curves together (the
    paired design). A curve's Dist-2 is the mean of its people's own Dist-2, so a draw that repeats a
    person does not lower it by repeating texts. ``curves``: {curve name: [continuations of each setting of that curve,
    ``out[i][j]`` per prompt and seed]}. Returns ``gap``, ``se`` (sd over the draws where a gap is
    defined), ``n_boot`` (those draws), ``n`` and ``n_outside`` (points of ``a`` matched / outside);
    ``gap`` and ``se`` are NaN when no point of ``a`` lies inside ``b``'s Dist-2 range; ``lo``, ``hi``: the
    Dist-2 range both curves span."""
    people = np.array([p.person for p in prompts])
    labels = sorted(set(people))
    rows_of = {q: np.nonzero(people == q)[0] for q in labels}
    units = {c: [ne_er_units(world, prompts, gens) for gens in settings] for c, settings in curves.items()}
    # Dist-2 per person and setting: a draw that repeats a person repeats that person's Dist-2, it does
    # not pool duplicated texts (which would lower the draw's Dist-2 by repeating its bigrams)
    d2 = {
        c: [{q: diversity([t for i in rows_of[q] for t in gens[i]])["Dist-2"] for q in labels} for gens in settings]
        for c, settings in curves.items()
    }

    def frame(pick):
        rows = np.concatenate([rows_of[q] for q in pick])
        out = []
        for c in curves:
            for per_person, u in zip(d2[c], units[c]):
                ne = u[rows].ravel()
                out.append(
                    {
                        "curve": c,
                        "Dist-2": float(np.mean([per_person[q] for q in pick])),
                        "NE_ER": float(np.nanmean(ne)) if np.isfinite(ne).any() else float("nan"),
                    }
                )
        return pd.DataFrame(out)

    full = matched_gap(frame(labels), a, b)
    if not np.isfinite(full["gap"]):  # no point of a inside b's range: nothing to resample
        return {**full, "se": float("nan"), "n_boot": 0}
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(int(n_boot)):
        pick = rng.choice(len(labels), size=len(labels), replace=True)
        g = matched_gap(frame([labels[k] for k in pick]), a, b)["gap"]
        if np.isfinite(g):
            draws.append(g)
    se = float(np.std(draws, ddof=1)) if len(draws) > 1 else float("nan")
    return {
        "gap": full["gap"],
        "se": se,
        "n_boot": len(draws),
        "n": full["n"],
        "n_outside": full["n_outside"],
        "lo": full["lo"],
        "hi": full["hi"],
    }
