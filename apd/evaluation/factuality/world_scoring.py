"""Exact factuality on the synthetic world.

NE_ER = mean over continuations with a named entity of the share of entities the world does not
associate with the prompt's person; true-claim rate (the Entail_R analogue) = share of claims
about that person the world says are true (``World.check``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from apd.core.stats import mean_se
from apd.evaluation.factuality.sweeps import flatten, diversity
from apd.world.truth import dev_test_people


@dataclass(frozen=True)
class WorldFacts:
    """What the world's checker reads in one continuation: its named entities, how many of them
    the world does not associate with the prompt's person, and the verdicts of the claims about
    that person (True/False)."""

    entities: tuple[str, ...]
    wrong_entities: tuple[str, ...]
    verdicts: tuple[bool, ...]


def world_facts(world, prompt, continuation: str) -> WorldFacts:
    """Check one continuation of a world prompt (``apd.world.world.BioPrompt``) exactly.

    The checker reads ``prompt.prompt + continuation`` (so "was born in" + " Kelmor" is a claim
    and pronouns resolve to the prompt's person) and keeps the entities and claim values that
    start inside the continuation.
    """
    text = prompt.prompt + continuation
    start = len(prompt.prompt)
    ext = world.extract(text, subject=prompt.person)
    allowed = {e.casefold() for e in world.entities_of(prompt.person)}
    ents = tuple(e.text for e in ext.entities if e.start >= start)
    wrong = tuple(e for e in ents if e.casefold() not in allowed)
    verdicts = tuple(bool(world.verdict(c)) for c in ext.claims if c.start >= start and c.person == prompt.person)
    return WorldFacts(ents, wrong, verdicts)


class WorldScorer:
    """Scores continuations of world prompts: Dist-2, Rep, NE_ER and the true-claim rate (see the
    module docstring). ``prompts``: the ``BioPrompt`` list the continuations answer, same order."""

    name = "pico world"

    def __init__(self, world, prompts: Sequence):
        self.world = world
        self.prompts = list(prompts)

    def facts(self, continuations: Sequence[Sequence[str]]) -> list[list[WorldFacts]]:
        if len(continuations) != len(self.prompts):
            raise ValueError(
                f"{len(continuations)} prompts' continuations for {len(self.prompts)} prompts; "
                "pass them in the prompts' order."
            )
        return [[world_facts(self.world, p, c) for c in cs] for p, cs in zip(self.prompts, continuations)]

    def __call__(self, continuations: Sequence[Sequence[str]]) -> dict:
        facts = flatten(self.facts(continuations))
        ratios = [len(f.wrong_entities) / len(f.entities) for f in facts if f.entities]
        verdicts = [v for f in facts for v in f.verdicts]
        ne, ne_se = mean_se(ratios)
        true_rate = float(np.mean(verdicts)) if verdicts else float("nan")
        true_se = float(math.sqrt(true_rate * (1 - true_rate) / len(verdicts))) if verdicts else float("nan")
        return {
            **diversity(flatten(continuations)),
            "NE_ER": ne,
            "NE_ER_se": ne_se,
            "true_rate": true_rate,
            "true_rate_se": true_se,
            "ne_units": len(ratios),
            "claims": len(verdicts),
            "claims_per_continuation": len(verdicts) / max(len(facts), 1),
            "entities_per_continuation": sum(len(f.entities) for f in facts) / max(len(facts), 1),
            "continuations": len(facts),
        }


def world_test_prompts(world, seed: int = 0, half: str = "test") -> list:
    """The open-ended prompts (``world.bio_prompts()``, one per evaluation person) of the TEST
    half (or, with ``half="dev"``, the dev half) of the book's dev/test split by person
    (``apd.world.truth.dev_test_people``, the split every chapter uses)."""
    if half not in ("dev", "test"):
        raise ValueError(f"half must be 'dev' or 'test', got {half!r}.")
    prompts = world.bio_prompts()
    side = dev_test_people(world, seed)
    return [p for p in prompts if side[p.person] == half]
