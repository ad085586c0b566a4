"""The world's error processes (misstatements, decoys, confusable names) on a tiny world: the truth
and the QA text are unchanged, the text carries the stated share of errors, and 0 is the world
whose text states only the truth."""

import dataclasses
import math
from collections import Counter

import numpy as np
import pytest

from apd.world.corpus import CorpusConfig, config_hash
from apd.world.world import DECOY_TEMPLATES, MAX_MISSTATEMENT, MISSTATED, SPLITS, World, WorldConfig

SMOKE = WorldConfig.smoke()


def _world(**fields) -> World:
    return World(dataclasses.replace(SMOKE, bio_mentions=2000, **fields))


def _biography_facts(world, split="pretrain"):
    """(person, attribute, stated value) of every MISSTATED fact in the split's biographies."""
    return [
        (person, a, v)
        for person, text, facts in world.documents_with_facts(split)
        if not text.startswith("Question:")
        for a, v in facts
        if a in MISSTATED
    ]


def _wrong(world, facts):
    return [world.truth(p, a).get(v, 0.0) == 0 for p, a, v in facts]


@pytest.fixture(scope="module")
def misstated():
    return _world(misstatement_rate=0.3)


def test_zero_is_the_world_whose_text_states_only_the_truth():
    plain, zeros = _world(), _world(misstatement_rate=0.0, decoy_rate=0.0, confusable_share=0.0, n_decoys=5)
    assert plain.documents("pretrain") == zeros.documents("pretrain")
    assert not any(_wrong(plain, _biography_facts(plain)))
    assert config_hash(CorpusConfig()) == config_hash(
        dataclasses.replace(CorpusConfig(), world=dataclasses.replace(WorldConfig(), misstatement_zipf=1.0))
    )
    assert config_hash(CorpusConfig()) != config_hash(
        dataclasses.replace(CorpusConfig(), world=dataclasses.replace(WorldConfig(), misstatement_rate=0.1))
    )


def test_misstatements_leave_the_people_the_qa_text_and_the_items_unchanged(misstated):
    plain = _world()
    assert misstated.people == plain.people
    assert misstated.qa_items() == plain.qa_items()
    for split in SPLITS:
        qa = [(t, f) for _, t, f in misstated.documents_with_facts(split) if t.startswith("Question:")]
        assert qa == [(t, f) for _, t, f in plain.documents_with_facts(split) if t.startswith("Question:")]
        for person, text, facts in misstated.documents_with_facts(split):
            if text.startswith("Question:"):
                assert all(misstated.truth(person, a).get(v, 0) > 0 for a, v in facts)


def test_biographies_misstate_the_stated_share_and_the_checker_reads_what_they_say(misstated):
    facts = _biography_facts(misstated)
    wrong = np.mean(_wrong(misstated, facts))
    se = math.sqrt(0.3 * 0.7 / len(facts))
    assert abs(wrong - 0.3) < 4 * se, (wrong, len(facts))
    for person, text, stated in misstated.documents_with_facts("validation")[:200]:
        claims = sorted((c.person, c.attribute, c.value) for c in misstated.extract(text).claims)
        assert claims == sorted((person, a, v) for a, v in stated)


def test_wrong_values_come_from_one_generic_prior_shared_by_all_people(misstated):
    facts = _biography_facts(misstated)
    wrong = Counter(v for (_, a, v), w in zip(facts, _wrong(misstated, facts)) if w and a == "birth_city")
    table, weights = misstated._generic["birth_city"]
    top = table[int(np.argmax(weights))]
    assert wrong.most_common(1)[0][0] == top
    # Zipf(1) over the table: the generic value is said wrongly far more often than a typical value
    assert wrong[top] > 3 * np.median([wrong[v] for v in table])


def test_misstatements_fall_with_exposure():
    world = _world(misstatement_rate=0.3, misstatement_decay=0.5)
    shares = {p.name: world.misstatement_share(p) for p in world.people}
    head = [p for p in world.people if p.bucket == "head"]
    tail = [p for p in world.people if p.bucket == "tail"]
    assert max(shares[p.name] for p in head) < 0.3 < min(shares[p.name] for p in tail) <= MAX_MISSTATEMENT
    facts = _biography_facts(world)
    wrong = _wrong(world, facts)
    expected = np.mean([shares[p] for p, _, _ in facts])
    assert abs(np.mean(wrong) - expected) < 4 * math.sqrt(expected * (1 - expected) / len(facts))
    by_bucket = {
        b: np.mean([w for (p, _, _), w in zip(facts, wrong) if world.person(p).bucket == b]) for b in ("head", "tail")
    }
    assert by_bucket["head"] < by_bucket["tail"]


def test_decoys_are_frequent_in_the_text_and_no_ones_truth():
    world = _world(decoy_rate=0.4, n_decoys=2)
    assert sorted(world.decoys) == sorted(DECOY_TEMPLATES)
    for attribute, decoys in world.decoys.items():
        assert len(decoys) == 2 and set(decoys) <= set(world.values(attribute))
        assert not {str(getattr(p, attribute)) for p in world.people} & set(decoys)
    bios = [(p, t, f) for p, t, f in world.documents_with_facts("pretrain") if not t.startswith("Question:")]
    with_decoy = [" Many people " in t or " A lot of people " in t for _, t, _ in bios]
    assert abs(np.mean(with_decoy) - 0.4) < 4 * math.sqrt(0.4 * 0.6 / len(bios))
    for person, text, facts in bios[:300]:  # a decoy sentence states nothing about anyone
        claims = sorted((c.person, c.attribute, c.value) for c in world.extract(text).claims)
        assert claims == sorted((person, a, v) for a, v in facts)
        assert all(c.verdict for c in world.check(text))


def test_confusable_people_share_a_more_mentioned_persons_surname():
    world = _world(confusable_share=0.3)
    plain = _world()
    assert len({p.name for p in world.people}) == len(world.people)
    surname = {p.name: p.name.split(" ", 1)[1] for p in world.people}
    renamed = [(p, q) for p, q in zip(world.people, plain.people) if p.name != q.name]
    assert abs(len(renamed) / (len(world.people) - 1) - 0.3) < 0.15
    for p, q in renamed:
        assert dataclasses.replace(p, name=q.name) == q  # only the name changed
        models = [r for r in world.people if r.rank < p.rank and surname[r.name] == surname[p.name]]
        assert models, p.name
    # the confusable name is what the text and the questions use
    assert any(renamed[0][0].name in t for t in world.documents("pretrain"))
    assert renamed[0][0].name in {it.person for it in world.qa_items(people=[renamed[0][0]])}


@pytest.mark.parametrize(
    "fields, words",
    [
        (dict(misstatement_rate=1.5), "misstatement_rate"),
        (dict(decoy_rate=-0.1), "decoy_rate"),
        (dict(confusable_share=1.0), "confusable_share"),
        (dict(misstatement_decay=-1.0), "misstatement_decay"),
        (dict(decoy_rate=0.2, n_decoys=0), "n_decoys"),
        (dict(decoy_rate=0.2, n_decoys=50), "n_decoys"),
    ],
)
def test_bad_error_settings_say_what_to_fix(fields, words):
    with pytest.raises(ValueError, match=words):
        World(dataclasses.replace(SMOKE, **fields))
