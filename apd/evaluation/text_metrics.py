"""Open-ended generation metrics (FactualityPrompts): Dist-2, Rep, NE_ER, Entail_R.

Pure functions of text. Dist-2: distinct word bigrams / all bigrams pooled over continuations
(first 3 sentences each). Rep: share of continuations ending in a repeated span (characters).
NE_ER: mean share of named entities missing from the evidence. Entail_R: share of claims entailed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence

import numpy as np

_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr inc ltd co corp vs etc e.g i.e no vol fig gen gov sen rep lt col "
    "capt sgt ft mt jan feb mar apr jun jul aug sep sept oct nov dec".split()
)


_SENTENCE_END = re.compile(r"""[.!?]+["')\]]*\s+(?=["'(\[]?[A-Z0-9])""")


_WORD = re.compile(
    r"""
      (?:[A-Za-z]\.){2,}              # abbreviations with inner dots: U.S., e.g.
    | \.\.\.                          # ellipsis
    | \w+(?=n't\b)                    # do|n't, is|n't
    | n't\b
    | \w+(?='(?:s|re|ve|ll|d|m)\b)    # it|'s, they|'re
    | '(?:s|re|ve|ll|d|m)\b
    | \d+(?:[.,:]\d+)+                # 3.5, 1,000, 10:30
    | \w+(?:[-']\w+)*                 # words, well-known, o'clock
    | \S                              # any other single mark
    """,
    re.VERBOSE | re.IGNORECASE,
)


def word_tokenize(text: str) -> list[str]:
    """Words and punctuation marks as separate tokens, approximating NLTK's ``word_tokenize``
    (Treebank conventions: ``"isn't." -> ["is", "n't", "."]``, ``"U.S." -> ["U.S."]``)."""
    if not isinstance(text, str):
        raise TypeError(f"word_tokenize expects a str, got {type(text).__name__}.")
    return _WORD.findall(text)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences at ``.``/``!``/``?`` followed by space and an upper-case letter,
    digit or opening quote/bracket; common abbreviations and single initials do not end a
    sentence. A light approximation of NLTK's Punkt ``sent_tokenize``."""
    if not isinstance(text, str):
        raise TypeError(f"split_sentences expects a str, got {type(text).__name__}.")
    sentences, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        before = text[start : m.start() + 1].split()
        last = before[-1].rstrip(".!?\"')]").lower() if before else ""
        if text[m.start()] == "." and (last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())):
            continue
        sentences.append(text[start : m.end()].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def first_sentences(text: str, k: int | None) -> str:
    """The first ``k`` sentences of ``text`` joined by one space (``k=None``: the whole text)."""
    if k is None:
        return text
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"max_sentences must be a positive int or None, got {k!r}.")
    return " ".join(split_sentences(text)[:k])


def _tokens(item, tokenize: Callable[[str], Sequence] | None, max_sentences: int | None, default):
    if isinstance(item, str):
        text = first_sentences(item, max_sentences)
        return list((tokenize or default)(text))
    if isinstance(item, (bytes, dict)) or not isinstance(item, Iterable):
        raise TypeError(f"a continuation must be a str or a sequence of tokens, got {type(item).__name__}.")
    return list(item)


def _ngrams(continuations, n, tokenize, max_sentences) -> tuple[set, int]:
    """(set of distinct n-grams, number of n-grams) over continuations, never across two."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int (2 for Dist-2), got {n!r}.")
    if isinstance(continuations, str):
        raise TypeError("expected a list of continuations, got one str; wrap it: [text].")
    seen, total = set(), 0
    for item in continuations:
        toks = _tokens(item, tokenize, max_sentences, word_tokenize)
        grams = list(zip(*(toks[i:] for i in range(n))))
        seen.update(grams)
        total += len(grams)
    return seen, total


def distinct_n(
    continuations: Sequence[str | Sequence],
    n: int = 2,
    *,
    tokenize: Callable[[str], Sequence] | None = None,
    max_sentences: int | None = 3,
) -> float:
    """Dist-n: (number of distinct n-grams) / (number of n-grams), pooled over all continuations.

    continuations: strings (tokenised with ``tokenize``, default :func:`word_tokenize`, after
        keeping the first ``max_sentences`` sentences) or already-tokenised sequences (used as
        they are). n-grams are counted inside each continuation, never across two.
    Returns a fraction in (0, 1] (the paper prints it as a percentage).
    """
    seen, total = _ngrams(continuations, n, tokenize, max_sentences)
    if total == 0:
        raise ValueError(
            f"no continuation has {n} or more tokens, so Dist-{n} is undefined; check that the "
            "generations are not empty."
        )
    return len(seen) / total


def distinct_n_per_prompt(
    groups: Sequence[Sequence[str | Sequence]],
    n: int = 2,
    *,
    tokenize: Callable[[str], Sequence] | None = None,
    max_sentences: int | None = 3,
) -> float:
    """The "local" variant: Dist-n within each prompt's continuations, averaged over prompts
    (prompts whose continuations have no n-gram are skipped). groups: one list per prompt."""
    scores = []
    for group in groups:
        seen, total = _ngrams(group, n, tokenize, max_sentences)
        if total:
            scores.append(len(seen) / total)
    if not scores:
        raise ValueError(f"no prompt has a continuation with {n} or more tokens; Dist-{n} is undefined.")
    return float(np.mean(scores))


def repeated_suffix(seq: Sequence, max_n: int = 90) -> tuple[int, int]:
    """The most repeated n-gram at the end of ``seq``: returns ``(n, times)``.

    For every n in 1..max_n, ``times(n)`` counts how often the last n items repeat back to back
    at the end (1 = no repetition). Returns the n with the largest count (the smallest such n
    on ties) and that count. A str is a sequence of characters.
    """
    if not isinstance(max_n, int) or max_n < 1:
        raise ValueError(f"max_n must be a positive int (90 in FactualityPrompts), got {max_n!r}.")
    items = list(seq)
    if not items:
        return 1, 0
    rev = items[::-1]
    best_n, best_times = 1, 0
    for n in range(1, max_n + 1):
        tail, times = rev[:n], 1
        while rev[n * times : n * (times + 1)] == tail and len(tail) == n:
            times += 1
        if times > best_times:
            best_n, best_times = n, times
    return best_n, best_times


def ends_in_repetition(seq: Sequence, max_n: int = 90) -> bool:
    """Holtzman et al.'s rule, as FactualityPrompts applies it: with ``(n, times) =
    repeated_suffix(seq)``, the text is repetitive iff ``times >= 2`` and (``n >= 3`` or
    ``times > 50``). So ``"abcabc"`` is repetitive, ``"xyzaa"`` is not (n=1), and a 2-gram must
    repeat more than 50 times; only the *most* repeated suffix is judged."""
    n, times = repeated_suffix(seq, max_n)
    return times > 1 and (n >= 3 or times > 50)


def repetition_ratio(
    continuations: Sequence[str | Sequence],
    *,
    tokenize: Callable[[str], Sequence] | None = None,
    max_n: int = 90,
) -> float:
    """Rep: the share of continuations that end in a repeated span (:func:`ends_in_repetition`).

    Strings are judged as sequences of *characters* unless ``tokenize`` is given: the authors'
    release (and FactualityPrompts) run Holtzman et al.'s token-id rule on decoded strings, so
    its Rep, and the paper's numbers, are character-level. Pass ``tokenize=tokenizer.encode``
    for the original token-level rule. Already-tokenised sequences are used as they are.
    The whole continuation is judged (no sentence cut). Empty continuations count as not
    repetitive but stay in the denominator, as in the release. Returns a fraction.
    """
    if isinstance(continuations, str):
        raise TypeError("repetition_ratio expects a list of continuations, got one str; wrap it: [text].")
    flags = [ends_in_repetition(_tokens(c, tokenize, None, list), max_n) for c in continuations]
    if not flags:
        raise ValueError("repetition_ratio got no continuations.")
    return float(np.mean(flags))


def _normalise_entity(e: str) -> str:
    e = " ".join(e.casefold().split())
    return e[4:] if e.startswith("the ") else e


def ne_error_rate(
    entities: Sequence[Sequence[str]],
    allowed: str | Iterable[str] | None = None,
    *,
    allowed_per_unit: Sequence[str | Iterable[str]] | None = None,
) -> float:
    """NE_ER: mean over units of the share of their named entities that are not allowed.

    entities: one list of entity strings per unit (FactualityPrompts' unit is a check-worthy
        sentence; a continuation works too). Units without entities are skipped.
    allowed: one allowed set shared by all units; or ``allowed_per_unit``: one per unit (e.g.
        each prompt's evidence), as long as ``entities``. Give exactly one of the two.
        A set/list of strings matches exactly after case-folding, collapsing spaces and dropping
        a leading "the "; a str is evidence text and an entity is allowed when it occurs in it
        (case-folded substring, FactualityPrompts-style).
    Returns a fraction in [0, 1], or NaN when no unit mentions an entity (undefined).
    """
    if isinstance(entities, str):
        raise TypeError("entities must be a list of entity lists (one per unit), got a str.")
    entities = list(entities)
    if (allowed is None) == (allowed_per_unit is None):
        raise TypeError("give exactly one of allowed= (shared by all units) or allowed_per_unit= (one per unit).")
    if allowed_per_unit is not None:
        allowed_list = list(allowed_per_unit)
        if len(allowed_list) != len(entities):
            raise ValueError(
                f"allowed_per_unit has {len(allowed_list)} entries but entities has {len(entities)} "
                "units; give one allowed set (or evidence text) per unit."
            )
    else:
        allowed_list = [allowed] * len(entities)

    def matcher(a):
        if isinstance(a, str):
            text = " ".join(a.casefold().split())
            return lambda e: _normalise_entity(e) in text
        norm = {_normalise_entity(x) for x in a}
        return lambda e: _normalise_entity(e) in norm

    ratios = []
    for ents, a in zip(entities, allowed_list):
        if isinstance(ents, str):
            raise TypeError(f"each unit's entities must be a list of str, got the str {ents!r}; wrap it: [{ents!r}].")
        ents = list(ents)
        if not ents:
            continue
        ok = matcher(a)
        ratios.append(sum(not ok(e) for e in ents) / len(ents))
    return float(np.mean(ratios)) if ratios else math.nan


def entailment_ratio(entailed: Sequence[bool | None]) -> float:
    """Entail_R: share of check-worthy claims entailed by the evidence.

    entailed: one flag per claim (True = the NLI model's label is entailment); ``None`` marks a
    claim that is not check-worthy (no fact/off topic) and is skipped. Returns a fraction.
    """
    flags = [bool(x) for x in entailed if x is not None]
    if not flags:
        raise ValueError("entailment_ratio got no check-worthy claim (all None or empty); it is undefined.")
    return float(np.mean(flags))
