"""Tests for apd.evaluation.factuality: exact world factuality, methods, the generation sweep, FactualityPrompts."""

import json
import math
import urllib.error
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import tiny_models
import torch

from apd.core.stats import detected
from apd.evaluation import text_metrics
from apd.evaluation.factuality import methods as methods_mod
from apd.evaluation.factuality import ner, power, scoring, sweeps, world_scoring
from apd.evaluation.factuality import prompts as prompts_mod
from apd.world.corpus import train_tokenizer
from apd.world.world import OPENERS, BioPrompt, World, WorldConfig

# ----------------------------------------------------------------------------------------------
# the world: exact NE_ER and true-claim rate on hand-written continuations


@pytest.fixture(scope="module")
def world():
    return World(WorldConfig.smoke())


def _setup(world):
    p = world.people[0]
    other = next(
        q
        for q in world.people
        if q.birth_city != p.birth_city and q.birth_country != p.birth_country and q.university != p.university
    )
    pron = "She" if p.gender == "f" else "He"
    prompt = BioPrompt(prompt=f"{p.name} was born in", person=p.name, bucket=p.bucket)
    conts = [
        f" {p.birth_city}, {p.birth_country}.",  # 2 entities, both his/hers; 2 true claims
        f" {other.birth_city}. {pron} studied at {p.university}.",  # 1 of 2 entities wrong; 1 false, 1 true claim
        " the morning.",  # no entity, no claim
    ]
    return p, other, prompt, conts


def test_world_facts_hand_written(world):
    p, other, prompt, conts = _setup(world)
    f0 = world_scoring.world_facts(world, prompt, conts[0])
    assert f0.entities == (p.birth_city, p.birth_country) and f0.wrong_entities == ()
    assert sorted(f0.verdicts) == [True, True]
    f1 = world_scoring.world_facts(world, prompt, conts[1])
    assert f1.entities == (other.birth_city, p.university)
    assert f1.wrong_entities == (other.birth_city,)
    assert sorted(f1.verdicts) == [False, True]
    f2 = world_scoring.world_facts(world, prompt, conts[2])
    assert f2 == world_scoring.WorldFacts((), (), ())


def test_world_facts_ignores_the_prompt_and_other_people(world):
    p, other, _, _ = _setup(world)
    prompt = BioPrompt(prompt=f"{p.name} studied at", person=p.name, bucket=p.bucket)
    # the prompt's name is not an entity of the continuation; a claim about another person is not
    # a claim about the prompt's person (but that person's name is a wrong entity)
    f = world_scoring.world_facts(world, prompt, f" {p.university}. {other.name} was born in {other.birth_city}.")
    assert p.name not in f.entities
    assert f.wrong_entities == (other.name, other.birth_city)
    assert f.verdicts == (True,)


def test_world_scorer_hand_computed(world):
    p, other, prompt, conts = _setup(world)
    scorer = world_scoring.WorldScorer(world, [prompt])
    row = scorer([conts])
    # NE_ER: continuation 1 -> 0/2, continuation 2 -> 1/2, continuation 3 has no entity: (0 + 0.5) / 2
    assert row["NE_ER"] == pytest.approx(0.25)
    assert row["ne_units"] == 2
    # same as apd.evaluation.text_metrics.ne_error_rate with the person's entities as the allowed set
    ents = [list(world_scoring.world_facts(world, prompt, c).entities) for c in conts]
    assert text_metrics.ne_error_rate(ents, world.entities_of(p)) == pytest.approx(0.25)
    # true claims: 2 + 1 true of 4
    assert row["true_rate"] == pytest.approx(0.75)
    assert row["claims"] == 4 and row["claims_per_continuation"] == pytest.approx(4 / 3)
    assert row["true_rate_se"] == pytest.approx(math.sqrt(0.75 * 0.25 / 4))
    assert row["Dist-2"] == pytest.approx(text_metrics.distinct_n(conts))
    assert row["Rep"] == 0.0
    with pytest.raises(ValueError, match="prompts"):
        scorer([conts, conts])


def test_world_scorer_no_claims_is_nan(world):
    _, _, prompt, _ = _setup(world)
    row = world_scoring.WorldScorer(world, [prompt])([[" the morning.", " a sunny day."]])
    assert math.isnan(row["NE_ER"]) and math.isnan(row["true_rate"]) and row["claims"] == 0


@pytest.mark.parametrize("seed", [0, 3])
def test_world_test_prompts_are_the_books_test_half(world, seed):
    from apd.world.truth import dev_test_people

    prompts = world_scoring.world_test_prompts(world, seed=seed)
    side = dev_test_people(world, seed)
    assert 0 < len(prompts) < len(world.bio_prompts()) and world_scoring.world_test_prompts(world, seed) == prompts
    assert {p.person for p in prompts} == {n for n, s in side.items() if s == "test"}
    assert {p.person for p in prompts} == {q.person for q in world.bio_prompts() if side[q.person] == "test"}


# ----------------------------------------------------------------------------------------------
# methods


def test_method_labels_curves_and_errors():
    m = methods_mod.Method("CD", "top-p k20", 0.8, 2.0)
    assert m.label == "CD T=2 + top-p k20 (p=0.8)" and m.curve == "CD T=2 + top-p k20" and m.role == "cd"
    assert methods_mod.Method("APD", "top-p", 0.6, 1.0).curve == "APD + top-p"
    assert methods_mod.Method("CD", "alpha", 0.1, 4.0).curve == "CD + alpha"
    assert methods_mod.Method("Temperature", "NA", None, 0.7).label == "Temperature T=0.7 + NA"
    with pytest.raises(ValueError, match="temperature T"):
        methods_mod.Method("CD", "top-p", 0.8)
    with pytest.raises(ValueError, match="value"):
        methods_mod.Method("ELM", "top-p")
    with pytest.raises(ValueError, match="DoLa"):
        methods_mod.Method("DoLa", "top-p", 0.8, dola_layers="low")
    with pytest.raises(ValueError, match="unknown distribution"):
        methods_mod.Method("REAL", "NA")


def test_paper_methods_cover_table1_and_filter():
    ms = methods_mod.paper_methods(p_grid=(0.4, 0.95), table_ps=(0.8, 0.6))
    labels = [m.label for m in ms]
    assert len(labels) == len(set(labels))
    for m in methods_mod.table1_methods((0.8, 0.6), cd_T=2.0):
        assert m in ms
    assert methods_mod.Method("CD", "top-p k20", 0.8, 4.0) in ms  # CD's temperature tuning at p = 0.8
    only = methods_mod.paper_methods(include={"APD + top-p k20"})
    assert {m.curve for m in only} == {"APD + top-p k20"}
    with pytest.raises(ValueError, match="unknown curve"):
        methods_mod.paper_methods(include={"APD + magic"})


# ----------------------------------------------------------------------------------------------
# the sweep on tiny random models


@pytest.fixture(scope="module")
def tiny():
    texts = ["Mira was born in Kelmor. She works as a chemist.", "Tom studied at Orveth College in 1950."] * 20
    tok = train_tokenizer(texts, vocab_size=300)

    def neox(seed, layers):
        kw = dict(heads=4, bos_token_id=0, eos_token_id=0, pad_token_id=1, initializer_range=0.3)
        return tiny_models.tiny_neox(seed, len(tok), 32, layers, attn_implementation="eager", **kw)

    return tok, neox(0, 4), neox(1, 2)


PROMPTS = ["Mira was born in", "Tom studied", "She works as a"]
SWEEP = dict(seeds=(0, 1), batch_size=2, progress=False)


def test_sweep_shapes_determinism_and_cache(tiny, tmp_path, monkeypatch):
    tok, elm, alm = tiny
    dec = methods_mod.Decoders(elm, tok, alm=alm, alm_prime=alm, vocab_size=len(tok))
    methods = [
        methods_mod.Method("ELM", "top-p", 0.8),
        methods_mod.Method("Temperature", "NA", None, 0.7),
        methods_mod.Method("CD", "alpha", 0.1, 2.0),
        methods_mod.Method("CD", "top-p k20", 0.8, 1.0),
        methods_mod.Method("APD", "top-p k20", 0.8, 1.0),
        methods_mod.Method("DoLa", "alpha", 0.1, dola_layers="low"),
    ]
    seconds = {}
    gens = sweeps.sweep(dec, methods, PROMPTS, max_new_tokens=3, cache=tmp_path, seconds=seconds, **SWEEP)
    assert list(gens) == [m.label for m in methods] and set(seconds) == set(gens)
    for out in gens.values():
        assert len(out) == len(PROMPTS) and all(len(per) == 2 and all(isinstance(c, str) for c in per) for per in out)
    # APD with ALM' = ALM at T = 1 is CD at T = 1: same scores, same seeds, same text
    assert gens["APD T=1 + top-p k20 (p=0.8)"] == gens["CD T=1 + top-p k20 (p=0.8)"]
    # the same config gives the same text
    again = sweeps.generate_continuations(dec, methods[0], PROMPTS, (0, 1), max_new_tokens=3, batch_size=2)
    assert again == gens[methods[0].label]
    # a second sweep reads every method from the cache, generating nothing
    monkeypatch.setattr(sweeps, "generate_continuations", lambda *a, **k: pytest.fail("generated again"))
    assert sweeps.sweep(dec, methods, PROMPTS, max_new_tokens=3, cache=tmp_path, **SWEEP) == gens
    assert len(list(tmp_path.glob("*.json"))) == len(methods)


def test_sweep_side_by_side_equals_one_after_another(tiny, tmp_path, monkeypatch):
    """The methods generated in two workers give the texts, and REAL's thresholds, of one process."""
    tok, elm, alm = tiny
    dec = methods_mod.Decoders(elm, tok, alm=alm, alm_prime=alm, vocab_size=len(tok))
    methods = [methods_mod.Method("ELM", "top-p", 0.8), methods_mod.Method("CD", "alpha", 0.1, 2.0)]
    out = {}
    for jobs in ("1", "2"):
        monkeypatch.setenv("APD_JOBS", jobs)
        assert sweeps.side_by_side(dec) == (jobs == "2")
        out[jobs] = sweeps.sweep(dec, methods, PROMPTS, max_new_tokens=4, cache=tmp_path / jobs, **SWEEP)
    assert out["1"] == out["2"]


def test_score_sweep_rows(tiny):
    tok, elm, alm = tiny
    dec = methods_mod.Decoders(elm, tok, alm=alm, vocab_size=len(tok))
    methods = [methods_mod.Method("ELM", "top-p k20", 0.8), methods_mod.Method("CD", "top-p k20", 0.8, 2.0)]
    gens = sweeps.sweep(dec, methods, PROMPTS, seeds=(0,), max_new_tokens=4, batch_size=3, progress=False)
    df = sweeps.score_sweep(methods, gens, lambda conts: sweeps.diversity([c for per in conts for c in per]))
    assert list(df["label"]) == [m.label for m in methods]
    assert {"Dist-2", "Rep", "curve", "role", "value", "T"} <= set(df.columns)
    with pytest.raises(KeyError, match="no generations"):
        sweeps.score_sweep([methods_mod.Method("ELM", "top-p", 0.5)], gens, sweeps.diversity)


def test_decoders_need_their_amateurs(tiny):
    tok, elm, _ = tiny
    dec = methods_mod.Decoders(elm, tok, vocab_size=len(tok))
    with pytest.raises(ValueError, match="amateur"):
        dec.processors_and_kwargs(methods_mod.Method("CD", "top-p", 0.8, 2.0))
    with pytest.raises(ValueError, match="ALM'"):
        dec.processors_and_kwargs(methods_mod.Method("APD", "top-p", 0.8, 1.0))
    ids, mask = dec.encode(["a", "Mira was born in"])
    assert ids.shape == mask.shape and mask[0, 0] == 0 and mask[:, -1].all()  # left padding


def test_temperature_processor_matches_softmax_power():
    scores = torch.tensor([[1.0, 2.0, 0.5, 9.0]])
    out = methods_mod.TemperatureLogitsProcessor(0.5, vocab_size=3)(None, scores)
    assert out[0, 3] == float("-inf")
    p = torch.softmax(scores[0, :3], -1) ** 2
    assert torch.allclose(torch.softmax(out[0], -1)[:3], p / p.sum(), atol=1e-6)


# ----------------------------------------------------------------------------------------------
# FactualityPrompts


def test_load_factuality_prompts_from_shared_data(shared_dir):
    data = shared_dir / "data"
    if not (data / "factuality_prompts").is_dir():
        pytest.skip("no ../shared/data/factuality_prompts")
    items = prompts_mod.load_factuality_prompts("factual", "test", data_dir=data, limit=5, seed=1)
    assert len(items) == 5 and all(isinstance(i, prompts_mod.FactualityPrompt) for i in items)
    assert all(i.kind == "factual" and i.titles and i.prompt for i in items)
    assert items == prompts_mod.load_factuality_prompts("factual", "test", data_dir=data, limit=5, seed=1)
    full = prompts_mod.load_factuality_prompts("nonfactual", "validation", data_dir=data)
    assert len(full) == 1000 and full[0].kind == "nonfactual"
    first = json.loads((data / "factuality_prompts" / "fever_nonfactual_1000_final.jsonl").read_text().splitlines()[0])
    assert full[0].id == str(first["id"]) and full[0].titles == tuple(t[0] for t in first["evidence_info"])


def test_load_factuality_prompts_errors(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="kind"):
        prompts_mod.load_factuality_prompts("fake", data_dir=tmp_path)
    with pytest.raises(ValueError, match="split"):
        prompts_mod.load_factuality_prompts("factual", "train", data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="factuality_prompts"):
        prompts_mod.load_factuality_prompts("factual", data_dir=tmp_path)
    monkeypatch.delenv("APD_DATA_DIR", raising=False)

    def offline(*a, **k):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(prompts_mod.urllib.request, "urlopen", offline)
    with pytest.raises(ner.MeasureUnavailable, match="data_dir"):
        prompts_mod.load_factuality_prompts("factual", cache=tmp_path)
    bad = tmp_path / "factuality_prompts" / "fever_factual_test7k_final.jsonl"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text('{"id": 1, "prompt": "x"}\n')
    with pytest.raises(ValueError, match="evidence_info"):
        prompts_mod.load_factuality_prompts("factual", data_dir=tmp_path)


def test_kilt_evidence_from_a_local_file(tmp_path):
    rows = [
        {"_id": "1", "wikipedia_title": "Boris Karloff", "text": ["Boris Karloff\n", "He was an actor."]},
        {"_id": "2", "wikipedia_title": 'Say "Hi"', "text": ["A song."]},
        {"_id": "3", "wikipedia_title": "Other", "text": ["Not wanted."]},
    ]
    src = tmp_path / "kilt_knowledgesource.json"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    ev = prompts_mod.kilt_evidence(["Boris Karloff", 'Say "Hi"', "Missing"], src, cache=tmp_path / "c")
    assert ev == {"Boris Karloff": "Boris Karloff\n He was an actor.", 'Say "Hi"': "A song."}
    src.unlink()  # the second call reads the cache
    assert prompts_mod.kilt_evidence(["Missing", "Boris Karloff", 'Say "Hi"'], src, cache=tmp_path / "c") == ev
    covered, share = prompts_mod.evidence_coverage(
        [
            prompts_mod.FactualityPrompt("a", "x", ("Boris Karloff",), "factual"),
            prompts_mod.FactualityPrompt("b", "y", ("Boris Karloff", "Missing"), "factual"),
        ],
        ev,
    )
    assert covered == [True, False] and share == 0.5
    with pytest.raises(FileNotFoundError, match="KILT"):
        prompts_mod.kilt_evidence(["x"], tmp_path / "nope.json", cache=tmp_path / "c")


def test_checkworthy_rules():
    titles = "Boris Karloff"
    u = ner.checkworthy("He was born in London in 1887.", [("London", "GPE"), ("1887", "DATE")], ["He"], titles)
    assert u is not None and u.entities == (("London", "GPE"), ("1887", "DATE"))
    # ordinal/cardinal and vague dates are dropped; nothing left -> not check-worthy
    # not check-worthy: only numbers and vague dates; first person; a question; no subject; off topic (a
    # person not named in the evidence titles)
    london = [("London", "GPE")]
    for sentence, ents, subjects in (
        ("He had two sons that year.", [("two", "CARDINAL"), ("that year", "DATE")], ["He"]),
        ("I was born in London.", london, ["I"]),
        ("Was he born in London?", london, ["he"]),
        ("Born in London.", london, []),
        ("Smith was born in London.", [("Smith", "PERSON"), *london], ["Smith"]),
    ):
        assert ner.checkworthy(sentence, ents, subjects, titles) is None, sentence
    # the prompt's own entity as subject is on topic
    assert (
        ner.checkworthy("Karloff was born in London.", [("Karloff", "PERSON"), ("London", "GPE")], ["Karloff"], titles)
        is not None
    )
    # no spaCy entity: capitalised words after the first count
    u = ner.checkworthy("He moved to Paris.", [], ["He"], titles)
    assert u.entities == (("Paris", "CAPITALIZED"),)


def test_entity_supported():
    ev = "Boris Karloff (born William Henry Pratt; 23 November 1887) was an English actor in The Mummy."
    assert ner.entity_supported("the Mummy", "WORK_OF_ART", ev)
    assert ner.entity_supported("Henry Pratt", "PERSON", ev)
    assert ner.entity_supported("William Smith", "PERSON", ev)  # any word, as FactualityPrompts does
    assert not ner.entity_supported("Smith Jones", "PERSON", ev)
    assert ner.entity_supported("November 23rd, 1887", "DATE", ev)
    assert not ner.entity_supported("November 1888", "DATE", ev)
    assert not ner.entity_supported("London", "GPE", ev)


class FakeNLP:
    """spaCy stand-in: entities are the given words (labelled GPE), the first word is the subject."""

    def __init__(self, entity_words):
        self.words = entity_words

    def pipe(self, sentences):
        for s in sentences:
            toks = [
                SimpleNamespace(text=w.strip(".,"), dep_="nsubj" if i == 0 else "") for i, w in enumerate(s.split())
            ]
            ents = [SimpleNamespace(text=t.text, label_="GPE") for t in toks if t.text in self.words]
            yield _Doc(toks, ents)


class _Doc(list):
    def __init__(self, toks, ents):
        super().__init__(toks)
        self.ents = ents


def test_factuality_prompts_scorer_with_fake_models():
    prompts = [
        prompts_mod.FactualityPrompt("1", "Boris Karloff was an actor.", ("Boris Karloff",), "factual"),
        prompts_mod.FactualityPrompt("2", "Nobody was here.", ("Missing Page",), "factual"),
    ]
    evidence = {"Boris Karloff": "Karloff acted in Hollywood. Karloff was born in London."}
    conts = [[" He lived in London and Paris. He died in Rome."], [" He lived in London."]]
    nlp = FakeNLP({"London", "Paris", "Rome"})
    calls = []

    def nli(premises, hypotheses):
        calls.append((list(premises), list(hypotheses)))
        return np.array(["London" in h and "Paris" not in h for h in hypotheses])

    s = scoring.FactualityPromptsScorer(prompts, evidence, ner=nlp, nli=nli)
    assert s.coverage == 0.5 and s.covered == [True, False]
    row = s(conts)
    # prompt 2 has no evidence: only prompt 1's two units count. Unit 1: London ok, Paris missing -> 1/2;
    # unit 2: Rome missing -> 1/1.
    assert row["ne_units"] == 2 and row["NE_ER"] == pytest.approx(0.75)
    assert row["true_rate"] == 0.0 and len(calls) == 2
    assert calls[0][0][0] == "Karloff was born in London."  # the best-matching evidence sentence first
    none = scoring.FactualityPromptsScorer(prompts, evidence)
    r = none(conts)
    assert math.isnan(r["NE_ER"]) and "spaCy" in none.reasons["NE_ER"] and not math.isnan(r["Dist-2"])


def test_load_ner_reports_missing_spacy():
    try:
        ner.load_ner()
    except ner.MeasureUnavailable as e:
        assert "pip install spacy" in str(e)


def test_table1_rows_convention():
    rows = []
    for role, dist, T in (("elm", "ELM", None), ("cd", "CD", 2.0), ("cd", "CD", 4.0), ("apd", "APD", 1.0)):
        for p in (0.8, 0.6):
            m = methods_mod.Method(dist, "top-p k20", p, T)
            rows.append(
                {"label": m.label, "curve": m.curve, "role": role, "threshold": "top-p k20", "value": p, "T": T}
            )
    rows = [{**r, "NE_ER": 0.4, "true_rate": 0.1, "Dist-2": 0.3, "Rep": 0.01} for r in rows]
    df = pd.DataFrame(rows)
    with pytest.raises(ValueError, match="cd_T"):
        scoring.table1_rows(df, "pico world", "pico")
    t = scoring.table1_rows(df, "pico world", "pico", cd_T=2.0)
    assert len(t) == 3 * 2 * 4 and set(t["metric"]) == {"NE_ER", "Entail_R", "Dist-2", "Rep"}
    assert {"paper_table", "role", "dataset", "metric", "value", "family", "setting"} <= set(t.columns)
    assert t.loc[t["metric"] == "NE_ER", "value"].eq(40.0).all()
    assert set(t["setting"]) == {"top-p k20, p=0.8", "top-p k20, p=0.6"}


# -- the paired verdict comparison (apd.evaluation.factuality.power) ------------------------------


def _wrong_city(world, person):
    own = world.person(person).birth_city
    return next(q.birth_city for q in world.people if q.birth_city != own)


def _right_wrong(world, n=4):
    """``n`` verdict prompts, each person's own birth city and another's as continuations."""
    prompts = power.world_verdict_prompts(world, 0, openers=[" was born in"])[:n]
    right = [" " + world.person(p.person).birth_city + "." for p in prompts]
    return prompts, right, [" " + _wrong_city(world, p.person) + "." for p in prompts]


def test_verdict_prompts_are_every_opener_for_every_test_person(world):
    people = [p.person for p in world_scoring.world_test_prompts(world, 0)]
    prompts = power.world_verdict_prompts(world, 0)
    assert len(prompts) == len(OPENERS) * len(people)
    assert [p.person for p in prompts[: len(OPENERS)]] == [people[0]] * len(OPENERS)
    assert {p.prompt[len(p.person) :] for p in prompts} == set(OPENERS)
    with pytest.raises(ValueError, match="openers is empty"):
        power.world_verdict_prompts(world, 0, openers=[])


def test_paired_verdict_groups_by_person_and_counts_no_entity_as_missing(world):
    prompts, right, wrong = _right_wrong(world)
    # A: always right; B: wrong under seed 0, right under seed 1, and no entity at all for the first prompt
    a = [[r, r] for r in right]
    b = [[w, r] for w, r in zip(wrong, right)]
    b[0] = [" a quiet place.", " a quiet place."]
    units = power.ne_er_units(world, prompts, b)
    assert np.isnan(units[0]).all() and (units[1:, 0] == 1).all() and (units[1:, 1] == 0).all()
    v = power.paired_verdict(world, prompts, a, b)
    assert v.difference.n == 6 and v.difference.n_groups == 3  # the first person has no pair
    assert v.difference.mean == pytest.approx(0.5) and v.difference.se == 0.0
    assert v.ne_er_a == 0.0 and v.ne_er_b == pytest.approx(0.5)
    assert v.components.within == pytest.approx(0.5) and v.components.between == 0.0
    proj = v.projection(0.01, seeds=[4], people=[12])
    assert list(proj["design"]) == ["this build", "more seeds", "more people"]
    assert proj["se"].iloc[1] < proj["se"].iloc[0] and proj["se"].iloc[2] < proj["se"].iloc[0]


def test_paired_units_are_the_verdicts_difference_and_allow_one_unit_per_person(world):
    prompts, right, wrong = _right_wrong(world)
    a, b = [[r, r] for r in right], [[w, r] for w, r in zip(wrong, right)]
    u, v = power.paired_units(world, prompts, a, b), power.paired_verdict(world, prompts, a, b)
    assert u.difference == v.difference and (u.a.shape, u.b.shape) == ((4, 2), (4, 2))
    assert list(u.groups) == [p.person for p in prompts for _ in range(2)]
    # one seed: one unit per person, B wrong for the odd people only; the difference is defined ...
    one = power.paired_units(world, prompts, [[r] for r in right], [[w] for w in wrong[:2]] + [[r] for r in right[2:]])
    assert (one.difference.mean, one.difference.n, one.difference.n_groups) == (0.5, 4, 4)
    assert one.difference.se == pytest.approx(np.std([1.0, 1.0, 0.0, 0.0], ddof=1) / math.sqrt(4))
    # ... but not the variance components of the verdict, which need a person with two units
    with pytest.raises(ValueError, match="at least two units"):
        power.paired_verdict(world, prompts, [[r] for r in right], [[w] for w in wrong])


def test_paired_verdict_refuses_mismatched_generations(world):
    prompts = power.world_verdict_prompts(world, 0, openers=[" was born in"])[:3]
    for f in (power.paired_verdict, power.paired_units):
        with pytest.raises(ValueError, match="same prompts and seeds"):
            f(world, prompts, [["x"]] * 3, [["x", "y"]] * 3)
    with pytest.raises(ValueError, match="pass them in order"):
        power.ne_er_units(world, prompts, [["x"]] * 2)


# -- REAL sampling in the sweep ---------------------------------------------------------------------


def test_real_methods_labels_curves_and_order():
    ms = methods_mod.real_methods((1.0, 2.0, 4.0), cd_T=2.0)
    assert [m.label for m in ms[:3]] == ["ELM + REAL (T_r=1)", "ELM + REAL (T_r=2)", "ELM + REAL (T_r=4)"]
    assert {m.curve for m in ms} == {"ELM + REAL", "CD T=2 + REAL", "APD + REAL"} and len(ms) == 9
    assert all(m.threshold == "REAL" for m in ms) and [m.role for m in ms[::3]] == ["elm", "cd", "apd"]
    assert methods_mod.real_methods((4.0, 4.0), dists=("APD",)) == [methods_mod.Method("APD", "REAL", 4.0, 1.0)]
    assert methods_mod.real_methods(()) == []  # REAL left out
    with pytest.raises(ValueError, match="REAL thresholds"):
        methods_mod.real_methods((4.0,), dists=("DoLa",))
    with pytest.raises(TypeError, match="wrap it"):
        methods_mod.real_methods(4.0)
    for bad in (lambda: methods_mod.Method("APD", "REAL", 0.0, 1.0), lambda: methods_mod.real_methods((-1.0,))):
        with pytest.raises(ValueError, match="T_r"):
            bad()
    with pytest.raises(ValueError, match="give value"):
        methods_mod.Method("ELM", "REAL")


def _table6_frame(methods, **measures):
    base = {"NE_ER": 0.4, "true_rate": 0.05, "Dist-2": 0.45, "Rep": 0.01, **measures}
    return pd.DataFrame(
        [
            {"label": m.label, "curve": m.curve, "threshold": m.threshold, "value": m.value, "T": m.T, **base}
            for m in methods
        ]
    )


def test_table6_rows_line_up_with_the_papers_rows():
    from apd.report import paper

    df = _table6_frame(methods_mod.table6_methods(4.0, cd_T=2.0))
    rows = scoring.table6_rows(df, "pico world", "pico", T_r=4.0, cd_T=2.0)
    assert len(rows) == 5 * 4 and set(rows["metric"]) == {"Dist-2", "Rep", "NE_ER", "Entail_R"}
    assert (rows["paper_table"] == 6).all() and rows.loc[rows["metric"] == "NE_ER", "value"].eq(40.0).all()
    theirs = paper.table(6)
    assert set(zip(rows["role"], rows["setting"])) == set(zip(theirs["role"], theirs["setting"]))
    assert set(rows["metric"]) == set(theirs.loc[theirs["group"] == "Automatic", "metric"])
    with pytest.raises(ValueError, match="table6_methods"):
        scoring.table6_rows(df.iloc[1:], "pico world", "pico")  # no ELM + top-p (p=1)
    # the world's share of true claims is not the paper's Entail_R: it gets a column of its own
    world = scoring.table6_rows(df, "pico world", "pico", T_r=4.0, cd_T=2.0, true_metric="true claims")
    assert "Entail_R" not in set(world["metric"]) and "true claims" in set(world["metric"])
    assert (
        scoring.table6_rows(_table6_frame(methods_mod.table6_methods(2.5)), "w", "pico", T_r=2.5)["setting"]
        .str.contains("T_r=2.5")
        .any()
    )


def test_plot_tradeoff_marks_real_points_by_T_r_and_styles_curves():
    import matplotlib.pyplot as plt

    ms = methods_mod.real_methods((1.0, 4.0), dists=("APD",)) + [methods_mod.Method("APD", "top-p k20", 0.8, 1.0)]
    df = _table6_frame(ms).assign(**{"NE_ER_se": 0.01})
    fig, ax = plt.subplots()
    scoring.plot_tradeoff(ax, df, ["APD + REAL", "APD + top-p k20"], linestyles={"APD + top-p k20": "--"})
    assert {t.get_text() for t in ax.texts} == {"T_r=1", "T_r=4", "p=0.8"}
    styles = {ln.get_label(): ln.get_linestyle() for ln in ax.get_lines() if not ln.get_label().startswith("_")}
    assert styles == {"APD + REAL": "-", "APD + top-p k20": "--"}
    plt.close(fig)


def _tiny_thf(vocab):
    from apd.amateur.thf import THFModel

    model = THFModel(tiny_models.tiny_neox(5, vocab), [1.0, 2.0, 3.0], decay="exponential")
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        model.head.weight.copy_(torch.randn(model.head.weight.shape, generator=g) * 0.8)
        model.head.bias.zero_()
        model.head.bias[0] = -1.0  # c well below the curve at the largest member: thresholds below 1
    return model.eval()


def test_sweep_with_real_settings_generates_records_thresholds_and_caches(tiny, tmp_path, monkeypatch):
    tok, elm, alm = tiny
    dec = methods_mod.Decoders(elm, tok, alm=alm, alm_prime=alm, vocab_size=len(tok), thf=_tiny_thf(len(tok)))
    methods = methods_mod.real_methods((1.0, 4.0)) + [methods_mod.Method("APD", "top-p k20", 0.8, 1.0)]
    seconds, top_p = {}, {}
    gens = sweeps.sweep(dec, methods, PROMPTS, max_new_tokens=4, cache=tmp_path, seconds=seconds, top_p=top_p, **SWEEP)
    assert list(gens) == [m.label for m in methods]
    assert all(len(out) == len(PROMPTS) and all(len(per) == 2 for per in out) for out in gens.values())
    # every REAL setting records its mean threshold; a smaller T_r truncates more; top-p k20 records none
    assert set(top_p) == {m.label for m in methods if m.threshold == "REAL"}
    assert all(0.0 < v <= 1.0 for v in top_p.values())
    assert top_p["APD T=1 + REAL (T_r=1)"] < top_p["APD T=1 + REAL (T_r=4)"] < 1.0
    # APD with ALM' = ALM at T = 1 is CD at T = 1 under REAL as well: same thresholds, same text
    same = methods_mod.Method("CD", "REAL", 4.0, 1.0)
    assert sweeps.generate_continuations(dec, same, PROMPTS, (0, 1), 4, 2) == gens["APD T=1 + REAL (T_r=4)"]
    df = sweeps.score_sweep(methods, gens, lambda c: sweeps.diversity([x for per in c for x in per]), seconds, top_p)
    assert df["mean_top_p"].notna().sum() == 6 and np.isnan(df["mean_top_p"].iloc[-1])
    # a second sweep reads texts and thresholds from the cache
    monkeypatch.setattr(sweeps, "generate_continuations", lambda *a, **k: pytest.fail("generated again"))
    again = {}
    assert sweeps.sweep(dec, methods, PROMPTS, max_new_tokens=4, cache=tmp_path, top_p=again, **SWEEP) == gens
    assert again == top_p


def test_real_settings_without_a_thf_model_fail_clearly(tiny):
    tok, elm, alm = tiny
    dec = methods_mod.Decoders(elm, tok, alm=alm, alm_prime=alm, vocab_size=len(tok))
    for m in methods_mod.real_methods((4.0,)):
        with pytest.raises(ValueError, match="THF model"):
            dec.processors_and_kwargs(m)


# -- the complementarity comparison's words --------------------------------------------------------


def test_reading_words_follow_the_verdicts_decision():
    cases = [(0.05, 0.01, 0.02), (-0.05, 0.01, 0.02), (0.001, 0.005, 0.02), (0.001, 0.05, 0.02), (0.001, 0.05, None)]
    words = [power.reading(d, se, e) for d, se, e in cases]
    assert words[0] == "significant" and "other direction" in words[1] and "above" in words[2]
    assert words[3].startswith("inconclusive") and words[4].startswith("inconclusive") and words[3] != words[4]
    outcomes = [power.reading_outcome(d, se, e) for d, se, e in cases]
    assert outcomes == ["significant", "reversed", "ruled_out", "inconclusive", "inconclusive"]
    assert set(outcomes) == set(power.OUTCOMES)
    for (d, se, e), w in zip(cases, words):  # the same decision as the claims' detects rule
        out = detected(d, se, e)
        assert (out is None) == w.startswith("inconclusive") and (out is True) == (w == "significant")
    # an effect of 0 is an effect given: the interval holding 0 is inconclusive, worded with the effect
    assert power.reading_outcome(0.001, 0.05, 0.0) == "inconclusive"
    assert power.reading(0.001, 0.05, 0.0) == words[3]
    for f in (power.reading, power.reading_outcome):
        with pytest.raises(ValueError, match="finite"):
            f(float("nan"), 0.01)


def test_summary_of_a_paired_comparison(world):
    prompts, r, w = _right_wrong(world)
    right, wrong = [[c, c] for c in r], [[b, c] for b, c in zip(w, r)]
    s = power.summary(power.paired_verdict(world, prompts, right, wrong), effect=0.017)
    assert (s["ne_er_a"], s["ne_er_b"], s["diff"], s["diff_se"]) == (0.0, 0.5, 0.5, 0.0)
    assert (s["n_pairs"], s["n_people"], s["n_seeds"], s["mde"]) == (8, 4, 2, 0.0)
    assert s["reading"] == s["outcome"] == "significant" and s["people_needed"] >= 0
    assert power.summary(power.paired_verdict(world, prompts, right, wrong))["people_needed"] is None


@pytest.mark.parametrize("module", [methods_mod, scoring, power], ids=lambda m: m.__name__)
def test_factuality_docstring_examples_run(module):
    import doctest

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted and result.failed == 0


def test_matched_gap_paired_resamples_people_for_both_curves(world):
    """Curve A names each person's own birth city, curve B another person's; both curves span the
    same diversity (one setting repeats its words). At matched Dist-2 B's NE_ER minus A's is 1 for every
    draw of people, so the gap is 1 with se 0; identical curves give a gap of 0."""
    prompts = power.world_verdict_prompts(world, 0, openers=[" was born in"])[:6]
    own = [world.person(p.person).birth_city for p in prompts]
    other = [next(q.birth_city for q in world.people if q.birth_city != c) for c in own]

    def setting(cities, filler):
        return [[f" {c}. {filler}", f" {c}. {filler} again"] for c in cities]

    a = [setting(own, "It was a quiet town with a long river"), setting(own, "town town town town town town town")]
    b = [setting(other, "It was a quiet town with a long river"), setting(other, "town town town town town town town")]
    out = power.matched_gap_paired(world, prompts, {"A": a, "B": b}, "A", "B", n_boot=20)
    assert out["n"] >= 1 and out["n"] + out["n_outside"] == 2  # city names shift Dist-2 a little
    assert out["gap"] == pytest.approx(1.0) and out["se"] == pytest.approx(0.0, abs=1e-12)
    same = power.matched_gap_paired(world, prompts, {"A": a, "B": a}, "A", "B", n_boot=20)
    assert same["gap"] == pytest.approx(0.0) and same["n_boot"] == 20


def test_matched_gap_paired_is_undefined_without_overlap(world):
    prompts = power.world_verdict_prompts(world, 0, openers=[" was born in"])[:4]
    own = [[" " + world.person(p.person).birth_city + "."] * 2 for p in prompts]
    flat = [[" town town town town town town."] * 2 for _ in prompts]
    out = power.matched_gap_paired(world, prompts, {"A": [own], "B": [flat, flat]}, "A", "B", n_boot=5)
    assert math.isnan(out["gap"]) and math.isnan(out["se"]) and out["n_boot"] == 0 and out["n_outside"] == 1
