"""QA loaders and the paper's one-shot templates (apd.evaluation.qa_data).

Offline tests read ../shared/data (or $APD_DATA_DIR); the Hub branch is tested with a fake
`datasets` module, so nothing here touches the network.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from offline_data import DATA
from apd.evaluation import qa_data

REPO = Path(__file__).resolve().parents[1]


needs_data = pytest.mark.skipif(DATA is None, reason="offline QA data not found: set APD_DATA_DIR")

_cache: dict = {}


def local(name, **kw):
    key = (name, tuple(sorted(kw.items())))
    if key not in _cache:
        _cache[key] = qa_data.load_dataset(name, data_dir=DATA, **kw)
    return _cache[key]


# ------------------------------------------------------------------ templates, by hand from the appendix


def test_qasc_facts_template_matches_appendix():
    got = qa_data.render_prompt(
        "qasc_facts",
        question="What type of water formation is formed by clouds?",
        fact1="beads of water are formed by water vapor condensing",
        fact2="Clouds are made of water vapor.",
    )
    assert got == (
        " Question: Which kind of animals can fly?\n"
        " Fact 1: a bird is an animal.\n"
        " Fact 2: birds can fly.\n"
        " Answer: bird.\n"
        "\n"
        " Question: What type of water formation is formed by clouds?\n"
        " Fact 1: beads of water are formed by water vapor condensing\n"
        " Fact 2: Clouds are made of water vapor.\n"
        " Answer:"
    )


def test_multirc_template_matches_appendix():
    passage = qa_data.multirc_passage("Tom has a red car. He drives it to work.  It is fast. ")
    assert passage == "Sent 1: Tom has a red car.\n Sent 2: He drives it to work.\n Sent 3: It is fast."
    got = qa_data.render_prompt("multirc", passage=passage, question="What colour is Tom's car?")
    assert got == (
        " Passage: Sent 1: John likes to go hiking, and his wife likes to cook.\n"
        " Sent 2: His wife likes to cook.\n"
        " Here is a question: Who likes to cook?\n"
        " The answer is his wife\n"
        "\n"
        " Passage: Sent 1: Tom has a red car.\n"
        " Sent 2: He drives it to work.\n"
        " Sent 3: It is fast.\n"
        " Here is a question: What colour is Tom's car?\n"
        " The answer is"
    )


def test_multirc_sentence_split_keeps_abbreviations_and_tokenised_text():
    assert qa_data._sentences("Mr. Smith went to the U.S. Army base. He left .  She stayed . ") == [
        "Mr. Smith went to the U.S. Army base.",
        "He left .",
        "She stayed .",
    ]


def test_render_prompt_rejects_wrong_fields():
    with pytest.raises(ValueError, match="fact1"):
        qa_data.render_prompt("qasc_facts", question="q")
    with pytest.raises(ValueError, match="unknown template"):
        qa_data.render_prompt("qasc", question="q")
    with pytest.raises(TypeError):
        qa_data.render_prompt("question_answer", question=3)
    # braces in the data are text, not format fields
    assert qa_data.render_prompt("squad_q", question="What is {x}?").endswith(
        " Here is a question: What is {x}?\n The answer is"
    )


@needs_data
def test_question_answer_template_on_arc_easy():
    ex = local("arc_easy")[0]
    assert ex.prompt == (
        " Question: Which kind of animals can fly?\n"
        " Answer: bird.\n"
        "\n"
        " Question: Which statement best explains why photosynthesis is the foundation of most food webs?\n"
        " Answer:"
    )
    assert ex.answer == " Sunlight is the source of energy for nearly all ecosystems."
    assert ex.options == [
        " Sunlight is the source of energy for nearly all ecosystems.",
        " Most ecosystems are found on land instead of in water.",
        " Carbon dioxide is more available than other gases.",
        " The producers in all ecosystems are plants.",
    ]
    assert ex.gold_index == 0 and ex.id == "arc_easy/test/0"


@needs_data
def test_social_iqa_template():
    ex = local("social_iqa")[0]
    assert ex.prompt == (
        " Passage: John likes to go hiking, and his wife likes to cook.\n"
        " Question: Who likes to cook?\n"
        " Answer: his wife\n"
        "\n"
        " Passage: Tracy didn't go home that evening and resisted Riley's attacks.\n"
        " Question: What does Tracy need to do before this?\n"
        " Answer:"
    )
    assert ex.options == [" make a new plan", " Go home and see Riley", " Find somewhere to go"]
    assert ex.gold_index == 2 and ex.answer == " Find somewhere to go"


@needs_data
def test_squad_templates():
    qp = local("squad")
    one_shot = " Passage: John likes to go hiking, and his wife likes to cook.\n Question: Who likes to cook?\n"
    assert qp[0].prompt.startswith(one_shot + " The answer is his wife\n\n Passage: The 1973 oil crisis began in")
    assert qp[0].prompt.endswith('"second oil shock."\n Question: When did the 1973 oil crisis begin?\n The answer is')
    # five annotated answers, duplicates kept, one example each
    assert [e.answer for e in qp[:5]] == [" October 1973"] * 3 + [" October", " 1973"]
    assert [e.id for e in qp[:2]] == ["squad/validation/0/0", "squad/validation/0/1"]
    assert all(e.options is None and e.gold_index is None for e in qp[:5])
    q = local("squad_q")[0]
    assert q.prompt == (
        " Here is a question: What is the birthplace of Barack Obama?\n"
        " The answer is Honolulu, Hawaii.\n"
        "\n"
        " Here is a question: When did the 1973 oil crisis begin?\n"
        " The answer is"
    )


@needs_data
def test_lambada_is_zero_shot_passage_and_last_word():
    ex = local("lambada")[0]
    assert ex.prompt.startswith("In my palm is a clear stone, and inside it is a small ivory statuette.")
    assert ex.prompt.endswith("his mouth curved in a confident grin, I don't care about")
    assert ex.answer == " signs" and ex.options is None


@needs_data
def test_multirc_local_structure():
    exs = local("multirc")
    assert len(exs) == 2075  # correct answers of the 953 questions on 83 passages
    assert len({e.id for e in exs}) == len(exs)
    assert len({e.id.rsplit("/", 1)[0] for e in exs}) <= 953
    first = exs[0]
    assert first.prompt.startswith(" Passage: Sent 1: John likes to go hiking")
    assert (
        "\n\n Passage: Sent 1: What causes a change in motion?\n Sent 2: The application of a force.\n" in first.prompt
    )
    assert first.prompt.endswith(
        "\n Here is a question: Would the mass of a baseball affect how much force "
        "you have to use to pick it up?\n The answer is"
    )
    assert [e.answer for e in exs[:2]] == [" Yes", " Less the mass, less the force applied"]
    assert first.meta["wrong_answers"] == ["No", "It depends on the shape of the baseball"]


# ------------------------------------------------------------------ every offline dataset

EXPECTED_SIZES = dict(lambada=5153, commonsense_qa=9741, openbookqa=500, arc_easy=2376, social_iqa=1954)
EXPECTED_SIZES.update(multirc=2075, squad=34726, squad_q=34726)


@needs_data
@pytest.mark.parametrize("name", sorted(EXPECTED_SIZES))
def test_each_local_dataset_loads(name):
    exs = local(name)
    assert len(exs) == EXPECTED_SIZES[name]
    spec = qa_data.DATASETS[name]
    assert len({e.id for e in exs}) == len(exs)
    for e in exs:
        assert e.dataset == name
        assert e.answer.startswith(" ") and e.answer.strip()
        assert e.prompt == e.prompt.rstrip() and e.prompt
        if spec.kind == "mc":
            assert e.options[e.gold_index] == e.answer  # gold is among the options
            assert len(e.options) >= 3 and all(o.startswith(" ") for o in e.options)
        else:
            assert e.options is None and e.gold_index is None
        if spec.template != "lambada":
            assert e.prompt.startswith(qa_data.TEMPLATES[spec.template].split("{")[0])


@needs_data
def test_commonsense_qa_splits_and_first_item():
    ex = local("commonsense_qa")[0]
    assert ex.id == "commonsense_qa/train/075e483d21c29a511267ef62bedc0461"
    assert ex.prompt.endswith(
        " Question: The sanctions against the school were a punishing blow, and they "
        "seemed to what the efforts the school had made to change?\n Answer:"
    )
    assert ex.options == [" ignore", " enforce", " authoritarian", " yell at", " avoid"] and ex.gold_index == 0
    dev = local("commonsense_qa", split="validation")
    assert len(dev) == 1221 and dev[0].answer == " bank"


@needs_data
def test_qasc_and_arc_challenge_are_reported_unavailable_offline():
    for name in ("qasc", "qasc_q"):
        with pytest.raises(qa_data.DatasetUnavailable, match="openbookqa"):
            qa_data.load_dataset(name, data_dir=DATA)
        examples, reason = qa_data.try_load(name, data_dir=DATA)
        assert examples is None and "no offline copy" in reason and "allenai/qasc" in reason
    for name in ("arc", "arc_challenge"):
        examples, reason = qa_data.try_load(name, data_dir=DATA)
        assert examples is None and "arc_easy" in reason
    ok, reason = qa_data.try_load("openbookqa", data_dir=DATA, limit=3)
    assert reason is None and len(ok) == 3


@needs_data
def test_offline_split_errors_and_data_dir_forms(monkeypatch):
    with pytest.raises(qa_data.DatasetUnavailable, match="validation"):
        qa_data.load_dataset("social_iqa", data_dir=DATA, split="train")
    # the qa/ folder itself works too, and so does $APD_DATA_DIR
    assert len(qa_data.load_dataset("openbookqa", data_dir=DATA / "qa")) == 500
    monkeypatch.setenv("APD_DATA_DIR", str(DATA))
    assert qa_data.load_dataset("openbookqa", limit=2)[0].meta["source"].endswith("openbook_qa.jsonl")


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown QA dataset"):
        qa_data.load_dataset("lambda")
    with pytest.raises(NotADirectoryError, match="/nonexistent/apd-data"):
        qa_data.load_dataset("lambada", data_dir="/nonexistent/apd-data")
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="limit"):
            qa_data.subsample([1, 2, 3], bad)


def test_subsample_is_deterministic_and_order_preserving():
    items = list(range(100))
    a, b, c = (qa_data.subsample(items, 10, seed=s) for s in (0, 0, 1))
    assert a == b and a != c and a == sorted(a) and len(set(a)) == 10
    assert qa_data.subsample(items, 1000) == items and qa_data.subsample(items, None) == items


@needs_data
def test_limit_on_real_data():
    full = local("arc_easy")
    sub = qa_data.load_dataset("arc_easy", data_dir=DATA, limit=50, seed=3)
    assert len(sub) == 50 and [e.id for e in sub] == [e.id for e in qa_data.subsample(full, 50, seed=3)]


# ------------------------------------------------------------------ Hub branch (no network)


def test_hub_without_datasets_package_raises_clear_importerror(monkeypatch):
    monkeypatch.delenv("APD_DATA_DIR", raising=False)
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    with pytest.raises(ImportError, match="pip install datasets") as err:
        qa_data.load_dataset("commonsense_qa")
    assert "data_dir=" in str(err.value)
    examples, reason = qa_data.try_load("qasc")
    assert examples is None and "pip install datasets" in reason


QASC = dict(question="What type of water formation is formed by clouds?", fact2="Clouds are made of water vapor.")
QASC["fact1"] = "beads of water are formed by water vapor condensing"
MULTIRC = dict(paragraph="Ann ran. Bob sat. ", question="Who ran?")
HUB_ROWS = {
    ("EleutherAI/lambada_openai", "en"): [{"text": "She opened the door and saw her old friend Tom"}],
    ("allenai/qasc", None): [
        {"id": "3E7T", "answerKey": "F", **QASC, "choices": {"label": list("ABCDEFGH"), "text": list("pqrsvbcl")}}
    ],
    ("allenai/ai2_arc", "ARC-Easy"): [
        {"id": "E1", "question": "Easy?", "answerKey": "B", "choices": {"text": ["no", "yes"], "label": ["A", "B"]}}
    ],
    ("allenai/ai2_arc", "ARC-Challenge"): [
        {"id": "C1", "question": "Hard?", "answerKey": "1", "choices": {"text": list("abc"), "label": list("123")}}
    ],
    ("allenai/social_i_qa", None): [
        {"context": "Kai cooked.", "question": "Why?", "answerA": "hungry", "answerB": "bored", "answerC": "tired"}
        | {"label": "2"}
    ],
    ("rajpurkar/squad", None): [
        {"id": "56be", "title": "T", "context": "Denver won.", "question": "Who won?"}
        | {"answers": {"text": ["Denver", "Denver"], "answer_start": [0, 0]}}
    ],
    ("aps/super_glue", "multirc"): [
        {**MULTIRC, "answer": "Ann", "label": 1, "idx": {"paragraph": 0, "question": 0, "answer": 0}},
        {**MULTIRC, "answer": "Bob", "label": 0, "idx": {"paragraph": 0, "question": 0, "answer": 1}},
    ],
    ("tau/commonsense_qa", None): [
        {
            "id": "x",
            "question": "Q?",
            "question_concept": "c",
            "answerKey": "",
            "choices": {"label": ["A", "B"], "text": ["a", "b"]},
        }
    ],
}


@pytest.fixture
def fake_hub(monkeypatch):
    calls = []

    def load_dataset(path, config=None, split=None, revision=None):  # social_iqa: the Parquet revision
        calls.append((path, config, split))
        if (path, config) not in HUB_ROWS:
            raise ConnectionError("Couldn't reach the Hub")
        return HUB_ROWS[(path, config)]

    monkeypatch.delenv("APD_DATA_DIR", raising=False)
    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    return calls


def test_hub_branch_parses_each_schema(fake_hub):
    lam = qa_data.load_dataset("lambada")[0]
    assert lam.prompt == "She opened the door and saw her old friend" and lam.answer == " Tom"
    q = qa_data.load_dataset("qasc")[0]
    assert q.prompt == qa_data.render_prompt("qasc_facts", **QASC)
    assert q.answer == " b" and q.gold_index == 5 and len(q.options) == 8
    assert qa_data.load_dataset("qasc_q")[0].prompt.endswith(
        "\n Question: What type of water formation is formed by clouds?\n Answer:"
    )
    arc = qa_data.load_dataset("arc")
    assert [(e.id, e.answer) for e in arc] == [("arc/train/E1", " yes"), ("arc/train/C1", " a")]
    s = qa_data.load_dataset("social_iqa")[0]
    assert s.answer == " bored" and s.gold_index == 1
    assert s.prompt.endswith(" Passage: Kai cooked.\n Question: Why?\n Answer:")
    sq = qa_data.load_dataset("squad")
    assert [e.answer for e in sq] == [" Denver", " Denver"] and sq[0].id == "squad/validation/56be/0"
    m = qa_data.load_dataset("multirc")
    assert len(m) == 1 and m[0].answer == " Ann"
    assert (
        " Passage: Sent 1: Ann ran.\n Sent 2: Bob sat.\n Here is a question: Who ran?\n The answer is" in m[0].prompt
    )
    assert ("allenai/qasc", None, "train") in fake_hub and ("rajpurkar/squad", None, "validation") in fake_hub


def test_hub_failures_become_dataset_unavailable(fake_hub):
    ex, reason = qa_data.try_load("openbookqa")  # not in the fake Hub: "network" error
    assert ex is None and "allenai/openbookqa" in reason and "ConnectionError" in reason
    with pytest.raises(qa_data.DatasetUnavailable, match="no public gold answers"):
        qa_data.load_dataset("commonsense_qa", split="test")


def test_registry_is_consistent():
    for name, spec in qa_data.DATASETS.items():
        assert spec.template in qa_data.TEMPLATES and spec.kind in ("mc", "free")
        assert spec.local_files or spec.offline_note, name
    assert not qa_data.DATASETS["qasc"].local_files and qa_data.DATASETS["qasc"].template == "qasc_facts"
    assert qa_data.DATASETS["qasc_q"].template == qa_data.DATASETS["openbookqa"].template == "question_answer"
