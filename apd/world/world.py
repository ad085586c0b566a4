"""A synthetic knowledge world whose truth is known exactly: the data of the embedded "pico" family.

``World(WorldConfig(seed=...), avoid=words)`` holds fictional people with deterministic attributes
(birth city, country and year, occupation, employer, university) and distributional ones (``drink``,
``hobby``), each with a Zipf popularity rank and bucket (``head``/``torso``/``tail``), and writes their
biographies and QA documents (``"Question: ...\\nAnswer: <value>"``, answer = ``" " + value``); all of
it follows from the seed. Truth, as probabilities: ``answer_distribution(item)`` over answer strings
(1 for a deterministic attribute) and its first-token marginal ``next_token_distribution(item,
tokenizer)`` ``{token id: p}``, what an infinitely large LM trained on this world assigns at the
answer position. ``check(text)`` finds (person, attribute, value) claims in any text and judges each
True, False, or None (subject not a person of this world).
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import Iterable

import numpy as np

from apd.base.checks import bounded, count, sequence

ATTRIBUTES = ("birth_city", "birth_country", "birth_year", "occupation", "employer", "university", "drink", "hobby")
DISTRIBUTIONAL = ("drink", "hobby")
BUCKETS = ("head", "torso", "tail")
SPLITS = ("pretrain", "finetune", "validation")
ENTITY_KINDS = ("person", "city", "country", "employer", "university", "year", "unknown")

OCCUPATIONS = (
    "chemist",
    "architect",
    "pilot",
    "baker",
    "teacher",
    "nurse",
    "engineer",
    "lawyer",
    "painter",
    "farmer",
    "journalist",
    "librarian",
    "dentist",
    "carpenter",
    "economist",
    "photographer",
    "translator",
    "geologist",
    "musician",
    "accountant",
)
DRINKS = ("tea", "coffee", "cocoa", "lemonade", "cider", "milk", "kefir", "juice")
HOBBIES = (
    "painting",
    "hiking",
    "sailing",
    "gardening",
    "fishing",
    "knitting",
    "cycling",
    "baking",
    "chess",
    "swimming",
)
_EMPLOYER_SUFFIXES = (
    "Labs",
    "Systems",
    "Foods",
    "Motors",
    "Works",
    "Bank",
    "Media",
    "Group",
    "Energy",
    "Textiles",
    "Press",
    "Logistics",
)
_UNIVERSITY_SUFFIXES = ("University", "College", "Institute")

# QA: one question per attribute; prompt = f"Question: {question}\nAnswer:", answer = " " + value.
QUESTIONS = {
    "birth_city": "Where was {name} born?",
    "birth_country": "In which country was {name} born?",
    "birth_year": "In which year was {name} born?",
    "occupation": "What is {name}'s occupation?",
    "employer": "Which company does {name} work for?",
    "university": "Which university did {name} attend?",
    "drink": "What does {name} like to drink?",
    "hobby": "What does {name} do for fun?",
}
ANSWER_PREFIX = " "  # the answer continues the prompt as ANSWER_PREFIX + answer

# Biography sentence templates, by the attribute group(s) they state. Slots: {S}/{s} subject
# (name, or He/She resp. he/she), {P} possessive subject (name's, or His/Her), {city}, {country},
# {year}, {a_occupation} ("a chemist"/"an engineer"), {employer}, {university}, {drink}, {hobby}.
TEMPLATES = {
    "birth_place": (
        "{S} was born in {city}, {country}.",
        "{S} was born in {city}.",
        "{S} comes from {city}, a city in {country}.",
        "{P} birthplace is {city}, {country}.",
        "{S} is a native of {city}, {country}.",
        "{P} hometown is {city}.",
    ),
    "birth_year": (
        "{S} was born in {year}.",
        "{S} was born in the year {year}.",
        "{P} year of birth is {year}.",
        "{S} came into the world in {year}.",
    ),
    "birth_place+birth_year": (
        "{S} was born in {city}, {country}, in {year}.",
        "{S} was born in {year} in {city}, {country}.",
        "In {year}, {s} was born in {city}.",
    ),
    "occupation": (
        "{S} works as {a_occupation}.",
        "{S} is {a_occupation} by profession.",
        "{S} earns a living as {a_occupation}.",
        "By profession, {s} is {a_occupation}.",
    ),
    "employer": (
        "{S} works for {employer}.",
        "{S} is employed by {employer}.",
        "{S} has a job at {employer}.",
        "{P} employer is {employer}.",
    ),
    "occupation+employer": (
        "{S} works as {a_occupation} for {employer}.",
        "{S} is {a_occupation} at {employer}.",
    ),
    "university": (
        "{S} studied at {university}.",
        "{S} graduated from {university}.",
        "{S} attended {university}.",
        "{P} alma mater is {university}.",
    ),
    "drink": (
        "{S} likes to drink {drink}.",
        "{P} favourite drink is {drink}.",
        "{S} usually orders {drink}.",
    ),
    "hobby": (
        "{S} enjoys {hobby}.",
        "{P} favourite pastime is {hobby}.",
        "{S} spends weekends {hobby}.",
        "{S} is fond of {hobby}.",
    ),
}
_GROUPS = ("birth_place", "birth_year", "occupation", "employer", "university", "drink", "hobby")
_JOINT = {
    frozenset(("birth_place", "birth_year")): "birth_place+birth_year",
    frozenset(("occupation", "employer")): "occupation+employer",
}
_SLOT_ATTRIBUTE = {
    "city": "birth_city",
    "country": "birth_country",
    "year": "birth_year",
    "a_occupation": "occupation",
    "employer": "employer",
    "university": "university",
    "drink": "drink",
    "hobby": "hobby",
}
#: The error processes of the default profile's world (:meth:`WorldConfig.book`): the fields of the
#: design that the dose-response study's rule adopted (``apd.report.dose_response.adopted`` on
#: ``docs/testbed/dose_response.csv``; empty while no design passes).
BOOK_ERRORS: dict[str, float] = {}
#: Attributes a biography can misstate (``WorldConfig.misstatement_rate``); the country follows the
#: true city, drinks and hobbies are already distributions.
MISSTATED = ("birth_city", "birth_year", "occupation", "employer", "university")
#: The misstatement share of any one person is capped here, so the truth stays what most text says.
MAX_MISSTATEMENT = 0.9
#: Sentences that name a decoy value in an attribute's context but state nothing about a person of
#: the world (the checker reads no claim from them). ``{value}``: the decoy (occupation: "a chemist").
DECOY_TEMPLATES = {
    "birth_city": ("Many people were born in {value}.", "A lot of people come from {value}."),
    "occupation": ("Many people work as {value}.", "A lot of people are {value} by profession."),
    "employer": ("Many people work for {value}.", "A lot of people have a job at {value}."),
    "university": ("Many people studied at {value}.", "A lot of people graduated from {value}."),
}
_N_SYLLABLES = 40  # open and as many closed syllables in a world's inventory
# Openings of biography sentences used as open-ended generation prompts ("Mira Tolvane was born in").
OPENERS = (" was born in", " works as", " works for", " studied at", " is")

_PRONOUNS = {"f": ("she", "her"), "m": ("he", "his")}
_PRONOUN_GENDER = {"she": "f", "her": "f", "he": "m", "his": "m"}
_CAP = r"[A-Z][a-z]+"
_NAME = rf"{_CAP}(?: {_CAP})+"
_SPAN = rf"{_CAP}(?: {_CAP})*"
_SPAN_RE = re.compile(rf"(?<![A-Za-z]){_SPAN}")
_YEAR_RE = re.compile(r"(?<![\d.,])(1\d{3}|20\d{2})(?![\d])")
_SENTENCE_RE = re.compile(r"[^.!?\n]+[.!?]?")
_QA_RE = re.compile(r"^Question: (?P<q>[^\n]*)\nAnswer:(?P<a>[^\n]*)$", re.M)
_QA_LINE_RE = re.compile(r"^(?:Question|Answer):[^\n]*$", re.M)


@dataclass(frozen=True)
class WorldConfig:
    """Every size of the world. The default has 400 people, 200 of them evaluation people (100 test
    people), and attribute values without a popularity prior (``value_zipf = 0``: every value of a
    table is equally likely), as has ``gpu()``; ``default200()`` is the 200-person world of the
    ``default-200`` scale and ``smoke()`` a tiny world for tests, both with the popularity prior
    ``value_zipf = 0.7``. Measured token counts: the family chapter's corpus table."""

    seed: int = 0
    n_people: int = 400
    n_countries: int = 10
    n_cities: int = 40
    n_employers: int = 40
    n_universities: int = 20
    year_range: tuple[int, int] = (1900, 2000)  # birth years, half-open
    value_zipf: float = 0.0  # popularity of attribute values: weight of value rank r ~ r^-value_zipf
    zipf_exponent: float = 1.0  # mentions of person rank r ~ (r + zipf_offset)^-zipf_exponent
    zipf_offset: float = 5.0
    bio_mentions: int = 6000  # biographies in the pretraining split (about; rounding, minimum)
    min_mentions: int = 2  # every person is mentioned at least this often in pretraining
    finetune_mentions: int = 2400  # fresh biographies in the fine-tuning split (Zipf-sampled)
    validation_mentions: int = 600  # fresh biographies in the validation split
    qa_train_fraction: float = 0.5  # people whose QA documents are training text
    qa_docs_per_mention: float = 0.25  # QA documents per biography for qa_train people (>= 1 in pretraining)
    p_pronoun: float = 0.4  # a sentence after the first names its subject by pronoun
    p_combine: float = 0.5  # two adjacent groups with a joint template share a sentence
    bucket_quantiles: tuple[float, float] = (0.5, 0.9)
    n_distractors: int = 3
    # Error processes: what the text gets wrong. 0 is a world whose text states only the truth; the
    # truth, the QA documents and the QA items never change (every KL and accuracy is against the truth).
    misstatement_rate: float = 0.0  # e: chance that a biography states an attribute of MISSTATED wrongly
    misstatement_decay: float = 0.0  # a person with m mentions: e * (m / median m)^-decay (capped)
    misstatement_zipf: float = 1.0  # the wrong ("generic") value: rank r ~ r^-zipf, one order per attribute
    decoy_rate: float = 0.0  # chance that a biography ends with a sentence naming a decoy value
    n_decoys: int = 2  # decoys per attribute of DECOY_TEMPLATES: table values that are no one's truth
    confusable_share: float = 0.0  # share of people whose surname is a more mentioned person's

    #: Fields added with a neutral default: left out of cache keys while at that default, so worlds
    #: without error processes keep their keys (``apd.world.corpus.config_hash``).
    KEY_OMITS_DEFAULT = (
        "misstatement_rate",
        "misstatement_decay",
        "misstatement_zipf",
        "decoy_rate",
        "n_decoys",
        "confusable_share",
    )

    def __post_init__(self):
        """Each field's type and range, then how the sizes fit together: a ValueError or TypeError naming
        the field (the fields are checked, not converted: they enter the corpus's cache key)."""
        for name in ("seed", "bio_mentions", "min_mentions", "finetune_mentions", "validation_mentions", "n_decoys"):
            count(name, getattr(self, name), 0, strict=True)
        count("n_people", self.n_people, 4, strict=True)
        room = f"at most {_N_SYLLABLES} first syllables keep the values' first tokens distinct"
        count("n_countries", self.n_countries, 2, maximum=_N_SYLLABLES, strict=True, hint=room)
        for name in ("n_cities", "n_employers", "n_universities"):
            count(name, getattr(self, name), 1, maximum=_N_SYLLABLES, strict=True, hint=room)
        false_drinks = f"a person drinks 3 of the {len(DRINKS)} drinks, the others are the distractors"
        count("n_distractors", self.n_distractors, 0, maximum=len(DRINKS) - 3, strict=True, hint=false_drinks)
        first, last = sequence("year_range", self.year_range, 2, hint="birth years, half-open, e.g. (1900, 2000)")
        count("year_range[0]", first, 0, strict=True)
        count("year_range[1]", last, first + 1, strict=True, hint="the range is half-open: after year_range[0]")
        for name in ("value_zipf", "zipf_exponent", "zipf_offset", "qa_docs_per_mention"):
            bounded(name, getattr(self, name), 0)
        for name in ("misstatement_decay", "misstatement_zipf"):  # the shapes of the error processes
            bounded(name, getattr(self, name), 0)
        bounded("qa_train_fraction", self.qa_train_fraction, above=0, below=1, hint="so both QA halves exist")
        for name in ("p_pronoun", "p_combine"):
            bounded(name, getattr(self, name), 0, maximum=1, hint="a probability")
        for name in ("misstatement_rate", "decoy_rate"):
            bounded(name, getattr(self, name), 0, maximum=1, hint="a probability (0: no such errors)")
        bounded("confusable_share", self.confusable_share, 0, below=1, hint="0: every surname is unique")
        lo, hi = (bounded("bucket_quantiles", q) for q in sequence("bucket_quantiles", self.bucket_quantiles, 2))
        if not 0 < lo < hi < 1:
            raise ValueError(
                f"bucket_quantiles={self.bucket_quantiles} must satisfy 0 < tail < head < 1, e.g. (0.5, 0.9)"
            )
        if self.n_cities < self.n_countries:
            raise ValueError(f"need n_cities >= n_countries, got {self.n_cities}, {self.n_countries}")
        smallest = min(self.n_countries, self.n_employers, self.n_universities, last - first)
        if smallest < self.n_distractors + 1:
            raise ValueError(
                f"every value table needs more than n_distractors={self.n_distractors} values, "
                f"the smallest has {smallest}; enlarge it or lower n_distractors"
            )
        if self.decoy_rate > 0:
            # a decoy is no one's truth and no one's distractor shortage: keep enough true values
            room = min(self.n_cities, self.n_employers, self.n_universities, len(OCCUPATIONS)) - self.n_distractors - 1
            if not 1 <= self.n_decoys <= room:
                raise ValueError(
                    f"n_decoys={self.n_decoys} must be between 1 and {room} (every table keeps more than "
                    f"n_distractors={self.n_distractors} values that can be someone's truth)"
                )

    @property
    def has_errors(self) -> bool:
        """Whether the text states anything but the truth (or names people confusably)."""
        return self.misstatement_rate > 0 or self.decoy_rate > 0 or self.confusable_share > 0

    @classmethod
    def book(cls, seed: int = 0) -> "WorldConfig":
        """The default profile's world: the 400-person world with the error processes of
        :data:`BOOK_ERRORS`, the design the dose-response study's rule adopted (``docs/design-notes.md``,
        "A world whose text is not the truth"); without them it is ``WorldConfig(seed=seed)``, the
        ``exact-truth`` scale's world."""
        return cls(seed=seed, **BOOK_ERRORS)

    @classmethod
    def default200(cls, seed: int = 0) -> "WorldConfig":
        """The 200-person world of the ``default-200`` scale: half the default's people and text
        (100 evaluation people, 51 of them test people)."""
        return cls(
            seed=seed,
            n_people=200,
            value_zipf=0.7,
            bio_mentions=3000,
            finetune_mentions=1200,
            validation_mentions=300,
        )

    @classmethod
    def gpu(cls, seed: int = 0) -> "WorldConfig":
        """A world of 1,000 people (2.5 times the default's text; 500 evaluation people) for the GPU
        scale; value tables stay within the distinct-first-token limit."""
        return cls(
            seed=seed,
            n_people=1000,
            n_countries=20,
            n_cities=40,
            n_employers=40,
            n_universities=40,
            bio_mentions=15000,
            finetune_mentions=6000,
            validation_mentions=1500,
        )

    @classmethod
    def smoke(cls, seed: int = 0) -> "WorldConfig":
        """A world of 60 people that generates in well under a second."""
        return cls(
            seed=seed,
            n_people=60,
            n_countries=4,
            n_cities=12,
            n_employers=10,
            n_universities=6,
            value_zipf=0.7,
            bio_mentions=400,
            finetune_mentions=80,
            validation_mentions=30,
        )


@dataclass(frozen=True)
class Person:
    """One fictional person; ``rank`` 1 is the most mentioned, ``mentions`` counts pretraining biographies."""

    name: str
    gender: str  # "f" or "m" (pronouns)
    birth_city: str
    birth_country: str
    birth_year: int
    occupation: str
    employer: str
    university: str
    hobby: tuple[tuple[str, float], ...]  # the per-person hobby distribution, (value, probability)
    rank: int
    mentions: int
    bucket: str
    qa_train: bool


@dataclass(frozen=True)
class QAItem:
    """A world question. The model continues ``prompt`` with ``ANSWER_PREFIX + answer``.

    ``gold`` is the true value (for a distributional attribute, its most probable value);
    ``distractors`` are other values of the same attribute that are false for this person."""

    prompt: str
    gold: str
    distractors: tuple[str, ...]
    person: str
    attribute: str
    bucket: str

    @property
    def choices(self) -> tuple[str, ...]:
        """Gold first, then the distractors."""
        return (self.gold,) + self.distractors


@dataclass(frozen=True)
class BioPrompt:
    """An open-ended generation prompt about one person, e.g. ``"Mira Tolvane was born in"``."""

    prompt: str
    person: str
    bucket: str


@dataclass(frozen=True)
class Entity:
    text: str
    kind: str  # one of ENTITY_KINDS
    start: int
    end: int


@dataclass(frozen=True)
class Claim:
    """A claim read from text: ``person`` (None if the subject is not a person of the world) has
    ``attribute`` = ``value``; ``start:end`` is the value's character span in the text."""

    person: str | None
    subject: str
    attribute: str
    value: str
    start: int
    end: int


@dataclass(frozen=True)
class CheckedClaim(Claim):
    """A claim with its verdict: True, False, or None (subject not a person of the world)."""

    verdict: bool | None = None


@dataclass(frozen=True)
class Extraction:
    entities: list[Entity]
    claims: list[Claim]


def qa_prompt(question: str) -> str:
    return f"Question: {question}\nAnswer:"


def _stream(seed: int, stream: int) -> int:
    """An integer seed for one independent purpose (tables, documents of a split, ...)."""
    return int(np.random.SeedSequence([seed, stream]).generate_state(1)[0])


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _grid_probabilities(rng: np.random.Generator, size: int, grid: int = 20) -> list[float]:
    """A random distribution over ``size`` outcomes with probabilities k/grid, every k >= 1, sorted
    descending (so the first outcome is the mode)."""
    weights = rng.dirichlet(np.ones(size)) * (grid - size)
    counts = np.floor(weights).astype(int)
    remainder = grid - size - counts.sum()
    counts[np.argsort(-(weights - counts), kind="stable")[:remainder]] += 1
    counts = sorted((int(c) + 1 for c in counts), reverse=True)
    return [c / grid for c in counts]


def _zipf_weights(n: int, exponent: float, offset: float = 0.0) -> np.ndarray:
    w = (np.arange(1, n + 1) + offset) ** -float(exponent)
    return w / w.sum()


class World:
    """The world defined by a ``WorldConfig`` (and words to ``avoid`` as names). See the module doc."""

    def __init__(self, config: WorldConfig | None = None, avoid: Iterable[str] = ()):
        self.config = config = config or WorldConfig()
        self._check_config(config)
        self._avoid = frozenset(w.lower() for w in avoid)
        self._build_tables()
        self._build_people()
        self._build_checker()

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _check_config(c: WorldConfig) -> None:
        if not isinstance(c, WorldConfig):
            raise TypeError(f"World needs a WorldConfig, got {type(c).__name__}; build one with WorldConfig(...)")

    def _build_tables(self) -> None:
        c = self.config
        rng = np.random.default_rng(_stream(c.seed, 0))
        onsets = list("bdfgklmnprstvz") + ["br", "tr", "sh"]
        syllables = sorted({o + v + coda for o in onsets for v in "aeiou" for coda in ("", "n", "r", "l", "s")})
        # a small per-world inventory: names are a few frequent syllables, which the BPE learns as tokens
        self._syllables_open = [
            str(s) for s in rng.permutation([s for s in syllables if s[-1] in "aeiou"])[:_N_SYLLABLES]
        ]
        self._syllables_closed = [
            str(s) for s in rng.permutation([s for s in syllables if s[-1] not in "aeiou"])[:_N_SYLLABLES]
        ]
        self._used: set[str] = set()
        self._syllables_of: dict[str, str] = {}  # generated word -> its syllables joined by "-"

        def word(rng, pattern: str, suffix: str = "", firsts: set | None = None) -> str:
            """A new word of syllables; pattern: 'o' open syllable, 'c' closed, '?' either. With
            ``firsts``, the first syllable must not be in it (and is added to it)."""
            for _ in range(10_000):
                parts = []
                for p in pattern:
                    kind = p if p != "?" else ("o" if rng.random() < 0.5 else "c")
                    pool = self._syllables_open if kind == "o" else self._syllables_closed
                    parts.append(pool[rng.integers(len(pool))])
                w = "".join(parts) + suffix
                if (
                    4 <= len(w) <= 12
                    and w not in self._used
                    and w not in self._avoid
                    and (firsts is None or parts[0] not in firsts)
                ):
                    self._used.add(w)
                    self._syllables_of[w.capitalize()] = "-".join(parts + ([suffix] if suffix else [])).capitalize()
                    if firsts is not None:
                        firsts.add(parts[0])
                    return w.capitalize()
            raise ValueError("ran out of unique names; lower n_people or the table sizes")

        # Values of one attribute start with distinct closed syllables (a consonant follows, so the
        # BPE cannot merge across the boundary into another value's first syllable): distinct first tokens.
        firsts: set = set()
        self.countries = [
            word(rng, "co", "ia", firsts) if rng.random() < 0.6 else word(rng, "cc", "", firsts)
            for _ in range(c.n_countries)
        ]
        firsts = set()
        self.cities = [word(rng, rng.choice(["cc", "coc", "cooc"]), "", firsts) for _ in range(c.n_cities)]
        # every country gets at least one city; the rest are spread at random
        owners = list(range(c.n_countries)) + list(rng.integers(c.n_countries, size=c.n_cities - c.n_countries))
        rng.shuffle(owners)
        self.country_of = {city: self.countries[k] for city, k in zip(self.cities, owners)}
        firsts = set()
        self.employers = [
            f"{word(rng, rng.choice(['cc', 'co', 'coc']), '', firsts)} "
            f"{_EMPLOYER_SUFFIXES[rng.integers(len(_EMPLOYER_SUFFIXES))]}"
            for _ in range(c.n_employers)
        ]
        firsts = set()
        self.universities = [
            f"{word(rng, rng.choice(['co', 'cc', 'coo']), '', firsts)} "
            f"{_UNIVERSITY_SUFFIXES[rng.integers(len(_UNIVERSITY_SUFFIXES))]}"
            for _ in range(c.n_universities)
        ]
        self.occupations = list(OCCUPATIONS)
        self.drinks = list(DRINKS)
        self.hobbies = list(HOBBIES)
        self.years = [str(y) for y in range(*c.year_range)]
        # drink: one categorical distribution per occupation, support of 3 drinks
        self.drink_distribution: dict[str, dict[str, float]] = {}
        for occupation in self.occupations:
            support = rng.choice(len(DRINKS), size=3, replace=False)
            self.drink_distribution[occupation] = {DRINKS[i]: p for i, p in zip(support, _grid_probabilities(rng, 3))}
        # popularity of values (a random order of each table, Zipf weights)
        self._popularity = {}
        for attribute, table in (
            ("birth_city", self.cities),
            ("occupation", self.occupations),
            ("employer", self.employers),
            ("university", self.universities),
        ):
            weights = np.empty(len(table))
            weights[rng.permutation(len(table))] = _zipf_weights(len(table), c.value_zipf)
            self._popularity[attribute] = weights
        self._build_error_tables()
        self._word = word

    def _build_error_tables(self) -> None:
        """The generic-value prior of misstatements and the decoys, from their own random streams
        (a world without error processes draws nothing here, so its tables and people are unchanged)."""
        c = self.config
        self.decoys: dict[str, list[str]] = {}
        self._generic: dict[str, tuple[list[str], list[float]]] = {}
        if c.misstatement_rate > 0:
            rng = np.random.default_rng(_stream(c.seed, 30))
            for attribute in MISSTATED:
                table = self.values(attribute)
                weights = np.empty(len(table))
                weights[rng.permutation(len(table))] = _zipf_weights(len(table), c.misstatement_zipf)
                self._generic[attribute] = (table, weights.tolist())
        if c.decoy_rate > 0:
            rng = np.random.default_rng(_stream(c.seed, 31))
            for attribute in DECOY_TEMPLATES:
                table = self.values(attribute)
                picked = sorted(rng.choice(len(table), size=c.n_decoys, replace=False).tolist())
                self.decoys[attribute] = [table[i] for i in picked]
                weights = self._popularity[attribute].copy()
                weights[picked] = 0.0  # no one has a decoy as their value
                self._popularity[attribute] = weights / weights.sum()

    def _build_people(self) -> None:
        c = self.config
        rng = np.random.default_rng(_stream(c.seed, 1))
        word = self._word
        n_first = max(8, int(round(c.n_people**0.5 * 2)))
        first = {
            "f": [word(rng, rng.choice(["oo", "coo", "co"])) for _ in range(n_first)],
            "m": [word(rng, rng.choice(["oc", "cc", "ooc"])) for _ in range(n_first)],
        }
        mentions = self.allocate_mentions(c.bio_mentions, minimum=c.min_mentions)
        lo, hi = np.quantile(mentions, c.bucket_quantiles)
        self.bucket_thresholds = (float(lo), float(hi))
        # QA-train people: within each block of 10 consecutive ranks, a random qa_train_fraction of them
        qa_train = np.zeros(c.n_people, dtype=bool)
        for start in range(0, c.n_people, 10):
            block = np.arange(start, min(start + 10, c.n_people))
            k = int(round(c.qa_train_fraction * len(block)))
            qa_train[rng.choice(block, size=k, replace=False)] = True
        people = []
        for i in range(c.n_people):
            gender = "f" if rng.random() < 0.5 else "m"
            name = f"{first[gender][rng.integers(n_first)]} {word(rng, rng.choice(['oc', 'ooc', 'cc', 'coc']))}"
            city = self.cities[rng.choice(len(self.cities), p=self._popularity["birth_city"])]
            hobby_support = rng.choice(len(HOBBIES), size=int(rng.integers(2, 4)), replace=False)
            hobby = tuple((HOBBIES[h], p) for h, p in zip(hobby_support, _grid_probabilities(rng, len(hobby_support))))
            m = int(mentions[i])
            bucket = "tail" if m <= lo else ("head" if m >= hi else "torso")
            people.append(
                Person(
                    name=name,
                    gender=gender,
                    birth_city=city,
                    birth_country=self.country_of[city],
                    birth_year=int(rng.integers(*c.year_range)),
                    occupation=self.occupations[rng.choice(len(self.occupations), p=self._popularity["occupation"])],
                    employer=self.employers[rng.choice(len(self.employers), p=self._popularity["employer"])],
                    university=self.universities[rng.choice(len(self.universities), p=self._popularity["university"])],
                    hobby=hobby,
                    rank=i + 1,
                    mentions=m,
                    bucket=bucket,
                    qa_train=bool(qa_train[i]),
                )
            )
        self.people: list[Person] = self._confuse(people) if c.confusable_share > 0 else people
        self._by_name = {p.name: p for p in self.people}
        if len(self._by_name) != len(people):  # surnames are unique, so this cannot happen
            raise AssertionError("duplicate full names")
        del self._word  # the tables are final

    def _confuse(self, people: list[Person]) -> list[Person]:
        """Give a ``confusable_share`` of the people (never rank 1) the surname of a more mentioned
        person, drawn in proportion to mentions; full names stay unique."""
        rng = np.random.default_rng(_stream(self.config.seed, 32))
        out = list(people)
        names = {p.name for p in people}
        for i in range(1, len(out)):
            if rng.random() >= self.config.confusable_share:
                continue
            weights = np.array([p.mentions for p in out[:i]], dtype=float)
            model = out[int(rng.choice(i, p=weights / weights.sum()))]
            name = f"{out[i].name.split(' ')[0]} {model.name.split(' ', 1)[1]}"
            if name not in names:
                names.discard(out[i].name)
                names.add(name)
                out[i] = replace(out[i], name=name)
        return out

    def misstatement_share(self, person: "Person | str") -> float:
        """The chance that one biography of ``person`` states one attribute of :data:`MISSTATED`
        wrongly: ``misstatement_rate * (mentions / median mentions) ** -misstatement_decay``, at most
        :data:`MAX_MISSTATEMENT` (0 in a world whose text states only the truth)."""
        c, p = self.config, self.person(person)
        if c.misstatement_rate == 0:
            return 0.0
        share = c.misstatement_rate * (max(p.mentions, 1) / self._median_mentions) ** -c.misstatement_decay
        return float(min(MAX_MISSTATEMENT, share))

    @cached_property
    def _median_mentions(self) -> float:
        return float(np.median([p.mentions for p in self.people]))

    def allocate_mentions(self, budget: int, minimum: int = 0) -> np.ndarray:
        """Mentions per person by rank: round(budget * Zipf-Mandelbrot weight), at least ``minimum``."""
        c = self.config
        w = _zipf_weights(c.n_people, c.zipf_exponent, c.zipf_offset)
        return np.maximum(np.round(budget * w).astype(int), minimum)

    def syllabify(self, text: str) -> str:
        """``text`` with every generated word split into its syllables by hyphens ("Kelmor" ->
        "Kel-mor"). Training the BPE on syllabified world text makes it learn the syllables, not
        whole names, so a name is a few syllable tokens and a rare person is no single rare token."""
        return re.sub(r"[A-Z][a-z]+", lambda m: self._syllables_of.get(m.group(), m.group()), text)

    def tokenizer_primer(self, repeats: int = 500) -> list[str]:
        """Documents that make a BPE learn every syllable of the world (as " Kel", "Kel" and "kel")
        and every year, occupation, drink and hobby (as " 1957", " chemist") as whole tokens, so that
        the values of an attribute have distinct first tokens. For training the tokenizer only."""
        docs = []
        for s in self._syllables_open + self._syllables_closed + ["ia"]:
            docs += [
                " ".join([s.capitalize()] * repeats),
                "-".join([s.capitalize()] * repeats),
                "-".join([s] * repeats),
            ]
        for w in self.years + self.occupations + self.drinks + self.hobbies:
            docs.append(" ".join([w] * repeats))
        return docs

    # ------------------------------------------------------------------ lookups and truth
    def person(self, person: "Person | str") -> Person:
        """The Person for a Person or a full name (KeyError names the problem)."""
        if isinstance(person, Person):
            return person
        try:
            return self._by_name[person]
        except KeyError:
            raise KeyError(f"{person!r} is not a person of this world; see world.people") from None

    @property
    def eval_people(self) -> list[Person]:
        """People whose QA text is never training text: evaluation asks about them."""
        return [p for p in self.people if not p.qa_train]

    def truth(self, person: "Person | str", attribute: str) -> dict[str, float]:
        """The true answer distribution, value -> probability (one value with 1.0 unless distributional)."""
        p = self.person(person)
        if attribute == "drink":
            return dict(self.drink_distribution[p.occupation])
        if attribute == "hobby":
            return dict(p.hobby)
        if attribute not in ATTRIBUTES:
            raise ValueError(f"unknown attribute {attribute!r}; use one of {ATTRIBUTES}")
        return {str(getattr(p, attribute)): 1.0}

    def values(self, attribute: str) -> list[str]:
        """All values an attribute can take in this world."""
        tables = {
            "birth_city": self.cities,
            "birth_country": self.countries,
            "birth_year": self.years,
            "occupation": self.occupations,
            "employer": self.employers,
            "university": self.universities,
            "drink": self.drinks,
            "hobby": self.hobbies,
        }
        if attribute not in tables:
            raise ValueError(f"unknown attribute {attribute!r}; use one of {ATTRIBUTES}")
        return list(tables[attribute])

    def entities_of(self, person: "Person | str") -> set[str]:
        """The named-entity strings the world associates with a person (for NE_ER): the name, birth
        city, birth country, employer, university and birth year."""
        p = self.person(person)
        return {p.name, p.birth_city, p.birth_country, p.employer, p.university, str(p.birth_year)}

    def answer_distribution(self, item: QAItem) -> dict[str, float]:
        """answer string -> probability the world's QA process gives it (what an infinitely large
        LM trained on this world assigns to the answer after ``item.prompt``)."""
        return self.truth(item.person, item.attribute)

    def next_token_distribution(self, item: QAItem, tokenizer) -> dict[int, float]:
        """First answer token id -> asymptotic probability: what an infinitely large LM trained on this
        world gives the first answer token after ``item.prompt`` (answers aggregated by first token).

        The token is the one right after the prompt in ``tokenizer.encode(prompt + ANSWER_PREFIX +
        answer)``; a ValueError is raised if the prompt's tokens are not a prefix of that encoding."""
        prompt_ids = tokenizer.encode(item.prompt, add_special_tokens=False)
        out: dict[int, float] = {}
        for answer, prob in self.answer_distribution(item).items():
            ids = tokenizer.encode(item.prompt + ANSWER_PREFIX + answer, add_special_tokens=False)
            if ids[: len(prompt_ids)] != prompt_ids or len(ids) == len(prompt_ids):
                raise ValueError(
                    f"the tokenizer merges the end of the prompt {item.prompt[-12:]!r} with the answer "
                    f"{answer!r}, so the first answer token is undefined; use a tokenizer that splits "
                    "':' from ' word' (byte-level BPE does)"
                )
            out[ids[len(prompt_ids)]] = out.get(ids[len(prompt_ids)], 0.0) + prob
        return out

    # ------------------------------------------------------------------ text
    def _values(self, p: Person, rng: random.Random) -> dict[str, str]:
        drink = self.drink_distribution[p.occupation]
        return {
            "city": p.birth_city,
            "country": p.birth_country,
            "year": str(p.birth_year),
            "a_occupation": _a(p.occupation),
            "employer": p.employer,
            "university": p.university,
            "drink": rng.choices(list(drink), weights=list(drink.values()))[0],
            "hobby": rng.choices([h for h, _ in p.hobby], weights=[w for _, w in p.hobby])[0],
        }

    def _misstate(self, p: Person, values: dict[str, str], rng: random.Random) -> dict[str, str]:
        """``values`` with each attribute of :data:`MISSTATED` replaced, with chance
        :meth:`misstatement_share`, by a wrong value from that attribute's generic prior."""
        share = self.misstatement_share(p)
        out = dict(values)
        for slot, attribute in _SLOT_ATTRIBUTE.items():
            if attribute not in self._generic or rng.random() >= share:
                continue
            table, weights = self._generic[attribute]
            true = str(getattr(p, attribute))
            wrong = rng.choices(table, weights=[0.0 if v == true else w for v, w in zip(table, weights)])[0]
            out[slot] = _a(wrong) if slot == "a_occupation" else wrong
        return out

    def _decoy_sentence(self, rng: random.Random) -> str:
        attribute = rng.choice(sorted(self.decoys))
        value = rng.choice(self.decoys[attribute])
        return rng.choice(DECOY_TEMPLATES[attribute]).format(value=_a(value) if attribute == "occupation" else value)

    def biography(
        self, person: "Person | str", rng: random.Random, errors: random.Random | None = None
    ) -> tuple[str, list[tuple[str, str]]]:
        """One paraphrased biography and the (attribute, value) facts it states. With ``errors`` (a
        random stream of its own) and error processes in the config, the biography may misstate
        attributes (its facts then hold the stated, wrong values) and end with a decoy sentence;
        without, the text is exactly that of a world without error processes."""
        p, c = self.person(person), self.config
        groups = list(_GROUPS)
        rng.shuffle(groups)
        units, i = [], 0
        while i < len(groups):
            joint = _JOINT.get(frozenset(groups[i : i + 2])) if i + 1 < len(groups) else None
            if joint and rng.random() < c.p_combine:
                units.append(joint)
                i += 2
            else:
                units.append(groups[i])
                i += 1
        values = self._values(p, rng)
        if errors is not None and c.misstatement_rate > 0:
            values = self._misstate(p, values, errors)
        sentences, facts = [], []
        she, her = _PRONOUNS[p.gender]
        for k, unit in enumerate(units):
            template = rng.choice(TEMPLATES[unit])
            named = k == 0 or rng.random() >= c.p_pronoun
            subject = {
                "S": p.name if named else she.capitalize(),
                "s": p.name if named else she,
                "P": f"{p.name}'s" if named else her.capitalize(),
            }
            sentences.append(template.format(**subject, **values))
            facts += [
                (_SLOT_ATTRIBUTE[f], values[f].split(" ", 1)[1] if f == "a_occupation" else values[f])
                for f in _fields(template)
                if f in _SLOT_ATTRIBUTE
            ]
        if errors is not None and c.decoy_rate > 0 and errors.random() < c.decoy_rate:
            sentences.append(self._decoy_sentence(errors))
        return " ".join(sentences), facts

    def qa_document(self, person: "Person | str", rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
        """One QA document: every attribute of the person asked once, in random order."""
        p = self.person(person)
        attributes = list(ATTRIBUTES)
        rng.shuffle(attributes)
        values = self._values(p, rng)
        answers = {
            "birth_city": p.birth_city,
            "birth_country": p.birth_country,
            "birth_year": str(p.birth_year),
            "occupation": p.occupation,
            "employer": p.employer,
            "university": p.university,
            "drink": values["drink"],
            "hobby": values["hobby"],
        }
        lines = [f"{qa_prompt(QUESTIONS[a].format(name=p.name))}{ANSWER_PREFIX}{answers[a]}" for a in attributes]
        return "\n".join(lines), [(a, answers[a]) for a in attributes]

    @cached_property
    def _split_documents(self) -> dict[str, list[tuple[str, str, list[tuple[str, str]]]]]:
        c = self.config
        out = {}
        for stream, split in enumerate(SPLITS, start=2):
            rng = random.Random(_stream(c.seed, stream))
            errors = random.Random(_stream(c.seed, 40 + stream)) if c.has_errors else None
            if split == "pretrain":
                counts = np.array([p.mentions for p in self.people])
            else:
                budget = c.finetune_mentions if split == "finetune" else c.validation_mentions
                nprng = np.random.default_rng(_stream(c.seed, stream + 10))
                counts = nprng.multinomial(budget, _zipf_weights(c.n_people, c.zipf_exponent, c.zipf_offset))
            docs = []
            for p, n in zip(self.people, counts):
                for _ in range(int(n)):
                    docs.append((p.name, *self.biography(p, rng, errors)))
                if p.qa_train:
                    n_qa = int(round(c.qa_docs_per_mention * n))
                    if split == "pretrain":
                        n_qa = max(1, n_qa)
                    for _ in range(n_qa):
                        docs.append((p.name, *self.qa_document(p, rng)))
            rng.shuffle(docs)
            out[split] = docs
        return out

    def documents(self, split: str = "pretrain") -> list[str]:
        """The world's documents of a split, shuffled: biographies (pretraining: ``mentions`` per
        person; fine-tuning and validation: fresh Zipf-sampled ones) and QA documents of qa_train people."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; use one of {SPLITS}")
        return [text for _, text, _ in self._split_documents[split]]

    def documents_with_facts(self, split: str = "pretrain") -> list[tuple[str, str, list[tuple[str, str]]]]:
        """(person, text, facts stated) for every document of ``documents(split)``, same order."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; use one of {SPLITS}")
        return list(self._split_documents[split])

    def qa_items(
        self, people: Iterable["Person | str"] | None = None, attributes: Iterable[str] = ATTRIBUTES
    ) -> list[QAItem]:
        """QA items, one per (person, attribute); by default about ``eval_people``, whose QA text is
        never training text. Distractors: ``n_distractors`` other values of the attribute that are
        false for the person (for distributional attributes: values of probability 0)."""
        c = self.config
        people = self.eval_people if people is None else [self.person(p) for p in people]
        items = []
        for p in people:
            rng = random.Random(_stream(c.seed, 100_000 + p.rank))  # items do not depend on which others are asked
            for attribute in attributes:
                truth = self.truth(p, attribute)
                gold = max(truth, key=truth.get)  # first of the most probable (dicts keep order)
                false = [v for v in self.values(attribute) if v not in truth]
                items.append(
                    QAItem(
                        prompt=qa_prompt(QUESTIONS[attribute].format(name=p.name)),
                        gold=gold,
                        distractors=tuple(rng.sample(false, c.n_distractors)),
                        person=p.name,
                        attribute=attribute,
                        bucket=p.bucket,
                    )
                )
        return items

    def bio_prompts(self, people: Iterable["Person | str"] | None = None) -> list[BioPrompt]:
        """Open-ended prompts, one per person (default ``eval_people``): the name and a sentence
        opening from ``OPENERS``. Unlike QA prompts these are openings of training sentences,
        as FactualityPrompts are openings of Wikipedia sentences."""
        people = self.eval_people if people is None else [self.person(p) for p in people]
        rng = random.Random(_stream(self.config.seed, 6))
        return [BioPrompt(prompt=p.name + rng.choice(OPENERS), person=p.name, bucket=p.bucket) for p in people]

    def people_frame(self):
        """A pandas DataFrame of the people, one row each (hobby as its distribution)."""
        import pandas as pd

        rows = [{**asdict(p), "hobby": dict(p.hobby)} for p in self.people]
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ checker
    def _build_checker(self) -> None:
        index: dict[str, str] = {}
        for kind, table in (
            ("person", self._by_name),
            ("city", self.cities),
            ("country", self.countries),
            ("employer", self.employers),
            ("university", self.universities),
        ):
            for text in table:
                if text in index:
                    raise AssertionError(f"{text!r} is both {index[text]} and {kind}")
                index[text] = kind
        self._kind_of = index

        def alternation(words) -> str:
            return "|".join(sorted(map(re.escape, words), key=len, reverse=True))

        slot = {
            "city": rf"(?P<city>{_SPAN})",
            "country": rf"(?P<country>{_SPAN})",
            "employer": rf"(?P<employer>{_SPAN})",
            "university": rf"(?P<university>{_SPAN})",
            "year": r"(?P<year>\d{3,4})(?!\d)",
            "a_occupation": rf"an? (?P<a_occupation>{alternation(self.occupations)})(?![a-z])",
            "drink": rf"(?P<drink>{alternation(self.drinks)})(?![a-z])",
            "hobby": rf"(?P<hobby>{alternation(self.hobbies)})(?![a-z])",
        }
        # pronouns in either case: a continuation may start mid-sentence ("... born in X, and she ...")
        subject = {
            "S": rf"(?P<subj>{_NAME}|[Hh]e|[Ss]he)",
            "s": rf"(?P<subj>{_NAME}|[Hh]e|[Ss]he)",
            "P": rf"(?P<subj>{_NAME}'s|[Hh]is|[Hh]er)",
        }
        self._template_res = []  # (the longest literal of the template, its regex)
        for templates in TEMPLATES.values():
            for template in templates:
                parts, literals = [r"(?<![A-Za-z'])"], []
                for literal, name, _, _ in string.Formatter().parse(template.rstrip(".")):
                    parts.append(re.escape(literal))
                    literals.append(literal)
                    if name:
                        parts.append(subject[name] if name in subject else slot[name])
                self._template_res.append((max(literals, key=len), re.compile("".join(parts))))
        self._question_res = {
            a: re.compile(re.escape(q).replace(re.escape("{name}"), rf"(?P<subj>{_NAME})"))
            for a, q in QUESTIONS.items()
        }

    def _known(self, text: str, kind: str) -> str | None:
        """The longest prefix of a capitalised span that is a known entity of ``kind``."""
        words = text.split(" ")
        for j in range(len(words), 0, -1):
            candidate = " ".join(words[:j])
            if self._kind_of.get(candidate) == kind:
                return candidate
        return None

    def _person_in(self, text: str) -> Person | None:
        """The longest suffix of a capitalised span that is a person's full name ("Then Mira Tolvane")."""
        words = text.split(" ")
        for i in range(len(words) - 1):
            candidate = " ".join(words[i:])
            if self._kind_of.get(candidate) == "person":
                return self._by_name[candidate]
        return None

    def _entities(self, text: str) -> list[Entity]:
        found = [Entity(m.group(1), "year", m.start(1), m.end(1)) for m in _YEAR_RE.finditer(text)]
        for m in _SPAN_RE.finditer(text):
            words = [(w.start() + m.start(), w.end() + m.start()) for w in re.finditer(r"\S+", m.group())]
            unknown: list[tuple[int, int]] = []

            def flush(unknown: list = unknown) -> None:  # a run of capitalised words the world does not know
                if unknown:
                    start, end = unknown[0][0], unknown[-1][1]
                    before = text[:start].rstrip(" ")
                    sentence_initial = not before or before[-1] in ".!?\n" or before.endswith("Question:")
                    if not (sentence_initial and len(unknown) == 1):  # "She", "In", "Question", ...
                        found.append(Entity(text[start:end], "unknown", start, end))
                    unknown.clear()

            i = 0
            while i < len(words):
                for j in range(len(words), i, -1):  # longest known entity starting at word i
                    phrase = text[words[i][0] : words[j - 1][1]]
                    if phrase in self._kind_of:
                        flush()
                        found.append(Entity(phrase, self._kind_of[phrase], words[i][0], words[j - 1][1]))
                        i = j
                        break
                else:
                    unknown.append(words[i])
                    i += 1
            flush()
        return sorted(found, key=lambda e: e.start)

    def _normalize(self, attribute: str, raw: str) -> tuple[str, str] | None:
        """(attribute, value) for a raw slot value; None when the value cannot be read."""
        raw = raw.strip().rstrip(".!?,;").strip()
        if not raw:
            return None
        if attribute in ("birth_city", "birth_country", "employer", "university"):
            kind = {"birth_city": "city", "birth_country": "country"}.get(attribute, attribute)
            known = self._known(raw, kind)
            if known is None and attribute == "birth_city" and self._known(raw, "country"):
                return "birth_country", self._known(raw, "country")  # "born in Vastria"
            return attribute, known or raw
        if attribute == "birth_year":
            return (attribute, str(int(raw))) if raw.isdigit() else None
        if attribute == "occupation":
            raw = re.sub(r"^an? ", "", raw.lower())
        return attribute, raw.lower()

    def extract(self, text: str, subject: "Person | str | None" = None) -> Extraction:
        """Named entities and claims in ``text``. ``subject``: the person a leading pronoun refers to
        when no person is named before it (e.g. the person of a prompt that is not part of ``text``)."""
        if not isinstance(text, str):
            raise TypeError(f"extract needs a str, got {type(text).__name__}")
        default = self.person(subject) if subject is not None else None
        entities = self._entities(text)
        mentions = [(e.start, self._by_name[e.text]) for e in entities if e.kind == "person"]
        claims: dict[tuple[str, int], Claim] = {}

        def add(subj: str, subj_start: int, attribute: str, raw: str, start: int) -> None:
            low = subj.lower()
            if low in _PRONOUN_GENDER:
                gender = _PRONOUN_GENDER[low]
                earlier = [p for s, p in mentions if s < subj_start and p.gender == gender]
                person = earlier[-1] if earlier else (default if default and default.gender == gender else None)
                if person is None:
                    return  # unresolved pronoun: no claim (conservative)
                name = person.name
            else:
                person = self._person_in(subj.removesuffix("'s"))
                name = person.name if person else None
            normalized = self._normalize(attribute, raw)
            if normalized is None:
                return
            attribute, value = normalized
            key = (attribute, start)
            if key not in claims:
                claims[key] = Claim(name, subj, attribute, value, start, start + len(raw.rstrip(".!?,;").strip()))

        for m in _QA_RE.finditer(text):
            for attribute, pattern in self._question_res.items():
                q = pattern.fullmatch(m.group("q"))
                if q:
                    answer = m.group("a")
                    start = m.start("a") + len(answer) - len(answer.lstrip())
                    add(q.group("subj"), m.start("q") + q.start("subj"), attribute, answer, start)
                    break
        masked = _QA_LINE_RE.sub(lambda m: " " * len(m.group()), text)
        for sentence in _SENTENCE_RE.finditer(masked):
            for keyword, pattern in self._template_res:
                if keyword not in sentence.group():
                    continue
                for m in pattern.finditer(masked, sentence.start(), sentence.end()):
                    for group, raw in m.groupdict().items():
                        if group != "subj" and raw is not None:
                            add(m.group("subj"), m.start("subj"), _SLOT_ATTRIBUTE[group], raw, m.start(group))
        return Extraction(entities=entities, claims=sorted(claims.values(), key=lambda c: c.start))

    def verdict(self, claim: Claim) -> bool | None:
        """True if the claimed value has positive probability for the person, False if not, None if
        the subject is not a person of this world."""
        if claim.person is None:
            return None
        return self.truth(claim.person, claim.attribute).get(claim.value, 0.0) > 0

    def check(self, text: str, subject: "Person | str | None" = None) -> list[CheckedClaim]:
        """Every claim in ``text`` with its verdict (see ``extract`` and ``verdict``)."""
        return [CheckedClaim(**asdict(c), verdict=self.verdict(c)) for c in self.extract(text, subject).claims]


def _fields(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]
