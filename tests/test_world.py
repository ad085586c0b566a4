"""The synthetic knowledge world: invariants, the checker, QA items, truth at answer positions."""

import random
from collections import Counter, defaultdict

import numpy as np
import pytest

from apd.world.world import DISTRIBUTIONAL, OPENERS, QUESTIONS, SPLITS, World, WorldConfig, qa_prompt


@pytest.fixture(scope="module")
def world():
    return World(WorldConfig.smoke())


def _claims(world, text, subject=None):
    return [(c.person, c.attribute, c.value, c.verdict) for c in world.check(text, subject)]


def _first(world, attribute, exclude):
    return next(v for v in world.values(attribute) if v not in exclude)


# ---------------------------------------------------------------- determinism and tables
def test_same_seed_same_world_other_seed_other_world(world):
    again = World(WorldConfig.smoke())
    assert again.people == world.people
    assert again.country_of == world.country_of
    for split in SPLITS:
        assert again.documents(split) == world.documents(split)
    assert again.qa_items() == world.qa_items()
    assert again.bio_prompts() == world.bio_prompts()
    other = World(WorldConfig.smoke(seed=1))
    assert [p.name for p in other.people] != [p.name for p in world.people]
    assert other.documents("pretrain") != world.documents("pretrain")


def test_random_module_state_does_not_matter():
    random.seed(1)
    np.random.seed(1)
    a = World(WorldConfig.smoke()).documents("finetune")
    random.seed(2)
    np.random.seed(2)
    assert World(WorldConfig.smoke()).documents("finetune") == a


def test_a_city_lies_in_one_country_everywhere(world):
    assert set(world.country_of) == set(world.cities)
    assert set(world.country_of.values()) == set(world.countries)  # every country has a city
    for p in world.people:
        assert p.birth_country == world.country_of[p.birth_city]
    # every "city, country" stated in any document agrees with the map
    pairs = set()
    for split in SPLITS:
        for _person, _text, facts in world.documents_with_facts(split):
            facts = dict(facts)
            if "birth_country" in facts:
                pairs.add((facts["birth_city"], facts["birth_country"]))
    assert pairs and all(world.country_of[city] == country for city, country in pairs)


def test_names_are_unique_and_values_start_with_distinct_syllables(world):
    names = [p.name for p in world.people]
    assert len(set(names)) == len(names)
    everything = names + world.cities + world.countries + world.employers + world.universities
    assert len(set(everything)) == len(everything)
    for table in (world.cities, world.countries, world.employers, world.universities):
        firsts = [world.syllabify(v).split("-")[0] for v in table]
        assert len(set(firsts)) == len(firsts)
    assert world.syllabify(world.cities[0]).replace("-", "") == world.cities[0]
    assert world.syllabify("The Pythia models") == "The Pythia models"


def test_generated_names_avoid_given_words():
    base = World(WorldConfig.smoke())
    banned = [base.cities[0].lower(), base.people[0].name.split()[1].lower()]
    changed = World(WorldConfig.smoke(), avoid=banned)
    assert base.cities[0] not in changed.cities
    assert all(banned[1] != p.name.split()[1].lower() for p in changed.people)


def test_bad_configs_say_what_to_fix():
    with pytest.raises(ValueError, match="bucket_quantiles"):
        World(WorldConfig(n_people=60, bucket_quantiles=(0.9, 0.5)))
    with pytest.raises(ValueError, match="at most"):
        World(WorldConfig(n_cities=100))
    with pytest.raises(ValueError, match="qa_train_fraction"):
        World(WorldConfig(qa_train_fraction=1.0))
    with pytest.raises(TypeError, match="WorldConfig"):
        World({"n_people": 10})
    with pytest.raises(KeyError, match="not a person"):
        World(WorldConfig.smoke()).person("Nobody Atall")


# ---------------------------------------------------------------- popularity, buckets, splits
def test_zipf_mentions_and_buckets(world):
    c = world.config
    mentions = np.array([p.mentions for p in world.people])
    assert (np.diff(mentions) <= 0).all() and mentions.min() >= c.min_mentions
    assert abs(mentions.sum() - c.bio_mentions) <= 0.1 * c.bio_mentions
    lo, hi = np.quantile(mentions, c.bucket_quantiles)
    assert world.bucket_thresholds == (lo, hi)
    by_bucket = defaultdict(list)
    for p in world.people:
        by_bucket[p.bucket].append(p.mentions)
    assert set(by_bucket) == set(("head", "torso", "tail"))
    assert min(by_bucket["head"]) > max(by_bucket["torso"]) and min(by_bucket["torso"]) > max(by_bucket["tail"])
    # the pretraining split holds exactly `mentions` biographies of each person
    bios = Counter(person for person, text, _ in world.documents_with_facts("pretrain") if "Question:" not in text)
    assert all(bios[p.name] == p.mentions for p in world.people)


def test_qa_text_only_for_qa_train_people_and_eval_prompts_never_in_training(world):
    qa_train = {p.name for p in world.people if p.qa_train}
    assert 0.4 < len(qa_train) / len(world.people) < 0.6
    for bucket in ("head", "tail"):  # stratified by rank
        people = [p for p in world.people if p.bucket == bucket]
        assert 0.25 < np.mean([p.qa_train for p in people]) < 0.75
    items = world.qa_items()
    assert {i.person for i in items} == {p.name for p in world.eval_people}
    assert not qa_train & {i.person for i in items}
    training = "\n".join(d for s in SPLITS for d in world.documents(s))
    for item in items:
        assert item.prompt not in training
    for split in SPLITS:
        for person, text, _ in world.documents_with_facts(split):
            if "Question:" in text:
                assert person in qa_train


def test_finetune_biographies_are_fresh(world):
    pretrain = set(world.documents("pretrain"))
    finetune = world.documents("finetune")
    assert finetune and sum(d in pretrain for d in finetune) / len(finetune) < 0.1


# ---------------------------------------------------------------- QA items and truth
def test_every_qa_gold_answer_is_reachable(world):
    stated = defaultdict(set)  # (person, attribute) -> values stated in pretraining text
    city_country = set()
    for _, text, _ in world.documents_with_facts("pretrain"):
        claims = world.extract(text).claims
        for c in claims:
            stated[c.person, c.attribute].add(c.value)
        by_person = defaultdict(dict)
        for c in claims:
            by_person[c.person][c.attribute] = c.value
        city_country |= {(f["birth_city"], f["birth_country"]) for f in by_person.values() if "birth_country" in f}
    for item in world.qa_items():
        truth = world.answer_distribution(item)
        assert item.gold == max(truth, key=truth.get)
        assert len(item.distractors) == world.config.n_distractors == len(set(item.distractors))
        assert item.gold not in item.distractors
        assert all(d in world.values(item.attribute) and truth.get(d, 0) == 0 for d in item.distractors)
        assert item.prompt == qa_prompt(QUESTIONS[item.attribute].format(name=item.person))
        assert item.bucket == world.person(item.person).bucket
        p = world.person(item.person)
        if item.attribute == "birth_country":  # stated, or derivable from the city
            assert item.gold in stated[p.name, "birth_country"] or (p.birth_city, item.gold) in city_country
            assert p.birth_city in stated[p.name, "birth_city"]
        elif item.attribute == "drink":  # a property of the occupation, stated for its members
            members = [q.name for q in world.people if q.occupation == p.occupation]
            assert any(item.gold in stated[m, "drink"] for m in members)
        elif item.attribute == "hobby":  # sampled per mention: some value of the person's distribution is stated
            assert stated[p.name, "hobby"] and stated[p.name, "hobby"] <= set(truth)
        else:
            assert stated[p.name, item.attribute] == {item.gold}


def test_answer_distributions(world):
    p = world.people[0]
    assert world.truth(p, "birth_city") == {p.birth_city: 1.0}
    assert world.truth(p, "birth_year") == {str(p.birth_year): 1.0}
    for attribute in DISTRIBUTIONAL:
        truth = world.truth(p, attribute)
        assert len(truth) >= 2 and sum(truth.values()) == pytest.approx(1.0)
        assert all(round(20 * v) == pytest.approx(20 * v) for v in truth.values())  # multiples of 1/20
    assert world.truth(p, "drink") == world.drink_distribution[p.occupation]
    # the drink of a biography is drawn from the distribution: frequencies match
    head = world.people[0]
    rng = random.Random(0)
    draws = Counter(dict(world.biography(head, rng)[1])["drink"] for _ in range(4000))
    for drink, prob in world.truth(head, "drink").items():
        assert draws[drink] / 4000 == pytest.approx(prob, abs=0.03)
    assert set(draws) <= set(world.truth(head, "drink"))
    with pytest.raises(ValueError, match="unknown attribute"):
        world.truth(p, "shoe_size")


class _CharTokenizer:
    """Characters as tokens; with merge=True, ': ' and ' X' pairs become one token (a bad tokenizer)."""

    def __init__(self, merge=False):
        self.merge = merge

    def encode(self, text, add_special_tokens=False):
        ids, i = [], 0
        while i < len(text):
            if self.merge and text[i : i + 2] == ": ":
                ids.append(1000)
                i += 2
                continue
            ids.append(ord(text[i]))
            i += 1
        return ids


def test_next_token_distribution_aggregates_answers_by_first_token(world):
    items = world.qa_items(world.eval_people[:3])
    tok = _CharTokenizer()
    for item in items:
        dist = world.next_token_distribution(item, tok)
        assert sum(dist.values()) == pytest.approx(1.0)
        expected = defaultdict(float)  # the first token of " answer" is ord(" ") for every answer
        expected[ord(" ")] = 1.0
        assert dist == pytest.approx(dict(expected))

    # a tokenizer without the leading space: first token is the first letter, answers aggregated by it
    class NoSpace(_CharTokenizer):
        def encode(self, text, add_special_tokens=False):
            return [ord(c) for c in text.replace(": ", ":")]

    hobby = next(i for i in items if i.attribute == "hobby")
    expected = defaultdict(float)
    for value, prob in world.answer_distribution(hobby).items():
        expected[ord(value[0])] += prob
    assert world.next_token_distribution(hobby, NoSpace()) == pytest.approx(dict(expected))
    with pytest.raises(ValueError, match="first answer token is undefined"):
        world.next_token_distribution(items[0], _CharTokenizer(merge=True))


def test_bio_prompts_are_about_eval_people(world):
    prompts = world.bio_prompts()
    assert [b.person for b in prompts] == [p.name for p in world.eval_people]
    for b in prompts:
        assert b.prompt[len(b.person) :] in OPENERS and b.prompt.startswith(b.person)


# ---------------------------------------------------------------- the checker
def test_extraction_is_exact_on_generated_text(world):
    for split in SPLITS:
        for person, text, facts in world.documents_with_facts(split):
            ex = world.extract(text)
            assert sorted((c.person, c.attribute, c.value) for c in ex.claims) == sorted(
                (person, a, v) for a, v in facts
            )
            assert all(c.verdict is True for c in world.check(text))
            named = {e.text for e in ex.entities}
            assert all(e.kind != "unknown" for e in ex.entities)
            assert named <= world.entities_of(person)  # no named-entity error in true text
            for c in ex.claims:  # spans point at the values
                assert text[c.start : c.end].lower().endswith(c.value.lower()) or text[c.start : c.end] == c.value


def test_extraction_of_concatenated_documents(world):
    docs = world.documents_with_facts("validation")[:12]
    text = "\n".join(t for _, t, _ in docs)
    expected = sorted((p, a, v) for p, _, facts in docs for a, v in facts)
    assert sorted((c.person, c.attribute, c.value) for c in world.extract(text).claims) == expected


def test_checker_on_hand_written_sentences(world):
    she = next(p for p in world.people if p.gender == "f")
    he = next(
        p for p in world.people if p.gender == "m" and p.birth_city != she.birth_city and p.employer != she.employer
    )
    other_city = _first(world, "birth_city", {she.birth_city})
    other_country = _first(world, "birth_country", {she.birth_country})
    wrong_job = _first(world, "occupation", {she.occupation})
    true_drink = next(iter(world.truth(she, "drink")))
    false_drink = _first(world, "drink", world.truth(she, "drink"))
    false_hobby = _first(world, "hobby", world.truth(she, "hobby"))
    a = "an" if she.occupation[0] in "aeiou" else "a"
    s = she.name
    cases = [
        (
            f"{s} was born in {she.birth_city}, {she.birth_country}.",
            [(s, "birth_city", she.birth_city, True), (s, "birth_country", she.birth_country, True)],
        ),
        (f"{s} was born in {other_city}.", [(s, "birth_city", other_city, False)]),
        (
            f"{s} was born in {she.birth_city}, {other_country}.",
            [(s, "birth_city", she.birth_city, True), (s, "birth_country", other_country, False)],
        ),
        (f"{s} was born in {she.birth_country}.", [(s, "birth_country", she.birth_country, True)]),
        (f"{s}'s year of birth is {she.birth_year + 1}.", [(s, "birth_year", str(she.birth_year + 1), False)]),
        (
            f"{s} is {a} {she.occupation} at {he.employer}.",
            [(s, "occupation", she.occupation, True), (s, "employer", he.employer, False)],
        ),
        (
            f"By profession, {s} is {'an' if wrong_job[0] in 'aeiou' else 'a'} {wrong_job}.",
            [(s, "occupation", wrong_job, False)],
        ),
        (
            f"{s} likes to drink {true_drink}. Her favourite drink is {false_drink}.",
            [(s, "drink", true_drink, True), (s, "drink", false_drink, False)],
        ),
        (f"{s} is fond of {false_hobby}.", [(s, "hobby", false_hobby, False)]),
        # pronouns go to the last person of that gender named before
        (
            f"{s} attended {she.university}. {he.name} works for {he.employer}. She was born in {she.birth_city}. "
            f"He was born in {she.birth_city}.",
            [
                (s, "university", she.university, True),
                (he.name, "employer", he.employer, True),
                (s, "birth_city", she.birth_city, True),
                (he.name, "birth_city", she.birth_city, False),
            ],
        ),
        (f"She was born in {she.birth_city}.", []),  # nobody to refer to: no claim
        # a person the world does not know: a claim without verdict
        (f"Zed Quorbin was born in {she.birth_city}.", [(None, "birth_city", she.birth_city, None)]),
        # a value the world does not know is false
        (f"{s} works for Zorblat Industries.", [(s, "employer", "Zorblat Industries", False)]),
        # no template phrase, no claim (conservative)
        (f"{s} was not born in {other_city}.", []),
        (f"It rained in {other_city} when {s} visited.", []),
        # QA format
        (f"Question: Where was {s} born?\nAnswer: {she.birth_city}", [(s, "birth_city", she.birth_city, True)]),
        (f"Question: Which company does {s} work for?\nAnswer: {he.employer}", [(s, "employer", he.employer, False)]),
        (f"Question: What is {s}'s occupation?\nAnswer: {she.occupation}.", [(s, "occupation", she.occupation, True)]),
    ]
    for text, expected in cases:
        assert _claims(world, text) == expected, text
    # a continuation whose subject is the prompt's person
    assert _claims(world, f" she was born in {she.birth_city}, {other_country}.", subject=s) == [
        (s, "birth_city", she.birth_city, True),
        (s, "birth_country", other_country, False),
    ]
    assert _claims(world, " she studied at Nowhere College.", subject=he.name) == []  # gender mismatch


def test_entities(world):
    p = world.people[0]
    assert world.entities_of(p) == {p.name, p.birth_city, p.birth_country, p.employer, p.university, str(p.birth_year)}
    text = (
        f"Then {p.name} met Zed Quorbin in {p.birth_city} in {p.birth_year}. The trip to {world.countries[0]} ended."
    )
    got = [(e.text, e.kind) for e in world.extract(text).entities]
    assert got == [
        (p.name, "person"),
        ("Zed Quorbin", "unknown"),
        (p.birth_city, "city"),
        (str(p.birth_year), "year"),
        (world.countries[0], "country"),
    ]
    for e in world.extract(text).entities:
        assert text[e.start : e.end] == e.text


def test_people_frame(world):
    frame = world.people_frame()
    assert len(frame) == len(world.people) and {"name", "mentions", "bucket", "qa_train", "hobby"} <= set(
        frame.columns
    )
