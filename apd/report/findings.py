"""The verdicts in Markdown: the findings, one sentence per claim, and every check of every claim.

The paper-vs-book chapter shows :func:`findings_markdown` (and writes it to
``results/<profile>/findings.md``) and :func:`claims_markdown`. Every entry is made from the judged
claims (:func:`apd.report.claims.judge`, :func:`apd.report.claims.checks`) and the family
chapter's member table; nothing is typed.
"""

from __future__ import annotations

import html
import math
import re

import pandas as pd

from apd.core.curves import PYTHIA_LOG_SIZES
from apd.report.claims import (
    CHECKS,
    CLAIM_TEXT,
    INCONCLUSIVE,
    MISSING,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PLAIN_NAMES,
    REPRODUCED,
)
from apd.report.results import format_value, load_results, results_dir

#: How strong each verdict is, in the words of the table (not reproduced: :func:`strength`).
STRENGTH = {
    REPRODUCED: "every test's 95% interval on the claim's side",
    NOT_REPRODUCED: "a test fails",
    INCONCLUSIVE: "the interval holds 0 and the paper's effect at this scale",
    NOT_TESTABLE: "a precondition fails or a result is missing",
}


def strength(verdict: str, effect: float = math.nan, ci_high: float = math.nan) -> str:
    """How strong ``verdict`` is, in words, matching the check that decided it: a claim not
    reproduced by an interval test says where its interval lies (``ci_high``, its upper 95% bound):
    below 0, or below the paper's ``effect`` on this testbed's scale; by another test, that a test fails.

    Example:
        >>> strength("not reproduced", ci_high=-0.18), strength("not reproduced", 0.06, 0.012)
        ('the interval lies below 0', "the interval lies below the paper's effect at this scale")
        >>> strength("not reproduced"), strength("reproduced")
        ('a test fails', "every test's 95% interval on the claim's side")
    """
    if verdict == NOT_REPRODUCED and _number(ci_high) is not None:
        if _number(effect) is None or ci_high < 0:
            return "the interval lies below 0"
        return "the interval lies below the paper's effect at this scale"
    return STRENGTH.get(verdict, "")


#: The chapter (notebook stem) each check reads -> the page it links to.
CHAPTER_TITLES = {
    "theorem1": "Theorem 1",
    "family": "the family",
    "apd": "training ALM'",
    "known_answer": "known answers",
    "curves": "curves",
    "qa": "QA",
    "factuality": "factuality",
    "ablations": "ablations",
}


def size_in_words(n: float) -> str:
    """A parameter count in words.

    >>> size_in_words(12768), size_in_words(6.9e9), size_in_words(512)
    ('12.8k', '6.9B', '512')
    """
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.0f}"


def scale_note(members: pd.DataFrame | None, profile: str) -> str:
    """One sentence on this build's family against the paper's (Pythia 70M to 6.9B).

    Example:
        >>> scale_note(pd.DataFrame({"member": ["a", "b"], "n_nonembedding": [12768, 1779840]}), "default")
        "Under the profile `default` the family's 2 members span 12.8k to 1.78M non-embedding parameters (139x); the paper's Pythia members span 18.9M to 6.44B (341x), so a verdict here speaks for this scale only."
    """
    pythia = (math.exp(PYTHIA_LOG_SIZES[0]), math.exp(PYTHIA_LOG_SIZES[-1]))  # Pythia-70M and -6.9B, non-embedding
    paper = f"the paper's Pythia members span {size_in_words(pythia[0])} to {size_in_words(pythia[1])} ({pythia[1] / pythia[0]:.0f}x)"
    if members is None or members.empty or "n_nonembedding" not in members:
        return f"Under the profile `{profile}` the family chapter did not run; {paper}."
    n = members["n_nonembedding"].astype(float)
    return (
        f"Under the profile `{profile}` the family's {len(n)} members span {size_in_words(n.min())} to "
        f"{size_in_words(n.max())} non-embedding parameters ({n.max() / n.min():.0f}x); {paper}, so a verdict "
        "here speaks for this scale only."
    )


def _clip(text: str, n: int = 220) -> str:
    """One line of at most ``n`` characters, cut at a word, never inside a number."""
    text = " ".join(str(text).split())
    if len(text) <= n:
        return text
    cut = text[: n - 1].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + " …"


def _reason(in_words: str) -> str:
    """A verdict's reason for a reader: :func:`apd.report.claims.in_words` without the bracketed
    result keys and numbers (the chapter's table of checks shows those)."""
    text, previous = str(in_words), None
    while text != previous:  # innermost brackets first: result keys nest ("t.csv['kl' where ...]")
        previous, text = text, re.sub(r"\s*\[[^\[\]]*\]", "", text)
    return text.strip()


def findings_markdown(judged: pd.DataFrame, profile: str, scale: str) -> str:
    """The findings (markdown): one item per claim, one sentence each: the claim, its verdict, the
    reason in words (what decided it) and links to the chapters its checks read; then the scale note.

    Example:
        >>> judged = pd.DataFrame({"claim_id": ["C1"], "verdict": ["reproduced"],
        ...                        "in_words": ["holds: CD extrapolates [t.csv['kl' where x] = 1 < t.csv['kl' where y] = 2]"]})
        >>> print(findings_markdown(judged, "smoke", "A note.").splitlines()[2])
        - **C1**, *C1*: **reproduced** (every test's 95% interval on the claim's side): holds: CD extrapolates.
    """
    rows = []
    for r in judged.itertuples():
        stems = list(dict.fromkeys(c.chapter for c in CHECKS if c.claim == r.claim_id))
        links = ", ".join(f"{{doc}}`{CHAPTER_TITLES.get(s, s)} <../notebooks/{s}>`" for s in stems)
        text = _clip(CLAIM_TEXT.get(r.claim_id, r.claim_id), 200).rstrip(".")
        short = str(r.claim_id).split("_")[0]
        reason = _clip(_reason(getattr(r, "in_words", None) or r.reason), 320).rstrip(".")
        how = strength(r.verdict, getattr(r, "effect", math.nan), getattr(r, "ci_high", math.nan))
        rows.append(
            f"- **{short}**, *{text}*: **{r.verdict}**"
            + (f" ({how})" if how else "")
            + f": {reason}."
            + (f" Read in {links}." if links else "")
        )
    counts = judged["verdict"].value_counts()
    summary = ", ".join(
        f"{int(counts.get(v, 0))} {v}" for v in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTABLE)
    )
    return "\n".join(
        [f"Of the paper's {len(judged)} main claims: {summary}.", "", *rows, "", variant_note(profile), "", scale, ""]
    )


_KIND_ORDER = {"precondition": 0, "test": 1, "context": 2}


def _md_text(text: str) -> str:
    """Plain text safe inside Markdown (no emphasis, links or math from *, _, [, $, |, <)."""
    for ch in "\\`*_[]$|<>#":
        text = text.replace(ch, "\\" + ch)
    return text


def source_html(source: str, results_href: str = "../results") -> str:
    """The ``source`` of a check (:func:`apd.report.claims.checks`) as a small note: each results file
    linked under ``results_href`` (the book copies ``results/<profile>/`` beside its pages), with the
    keys read there; '' for no source.

    Example:
        >>> source_html("qa.json: gain, se; tables/ablations.csv: kl where name=logit")
        '<small>(from <a href="../results/qa.json">qa.json</a>: gain, se; <a href="../results/tables/ablations.csv">ablations.csv</a>: kl where name=logit)</small>'
    """
    parts = []
    for entry in (source if isinstance(source, str) else "").split("; "):
        path, _, keys = entry.partition(": ")
        if path:
            link = f'<a href="{html.escape(f"{results_href}/{path}")}">{html.escape(path.rsplit("/", 1)[-1])}</a>'
            parts.append(link + (f": {_md_text(keys)}" if keys else ""))
    return f"<small>(from {'; '.join(parts)})</small>" if parts else ""


def claims_markdown(judged: pd.DataFrame, detail: pd.DataFrame, results_href: str = "../results") -> str:
    """The verdicts as Markdown: per claim, its short id and plain name
    (:data:`apd.report.claims.PLAIN_NAMES`), verdict and text, then every check (preconditions,
    tests, context: its status, description, sentence with its numbers and, small, the results
    files and keys it read), from :func:`apd.report.claims.judge` and :func:`apd.report.claims.checks`."""
    out = []
    for _, c in judged.iterrows():
        cid = c["claim_id"]
        head = f"{cid.split('_')[0]}, {PLAIN_NAMES[cid]}" if cid in PLAIN_NAMES else cid
        out.append(f"**{_md_text(head)}: {c['verdict']}.** {_md_text(c['claim'])}\n")
        mine = detail[detail["claim_id"] == cid]
        mine = mine.iloc[sorted(range(len(mine)), key=lambda i: _KIND_ORDER[mine["kind"].iloc[i]])]
        if mine.empty:
            out.append(f"- {_md_text(c['reason'])}\n")
        for _, r in mine.iterrows():
            src = "" if r["status"] == MISSING else source_html(r.get("source", ""), results_href)
            said = str(r["evidence"])
            said = said[:1].upper() + said[1:]  # "Tested: ...; measured ...", after the description's full stop
            line = f"- *{r['kind']}, {r['status']}*: {_md_text(r['description'])}. {_md_text(said)}"
            out.append(f"{line} {src}" if src else line)
        out.append("")
    return "\n".join(out)


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def variant_note(profile: str) -> str:
    """Which ALM' the claims about APD were tested on, from the APD chapter's results under ``profile``:
    the variant used and the variants whose mechanism gates pass; with a world, the engaged APD's KL
    gain over CD (paired over the test questions, with its standard error and smallest detectable
    difference) and the gain per frequency bucket beside the family chapter's flattening shares.

    Example:
        >>> import os, tempfile
        >>> os.environ["APD_RESULTS_DIR"] = tempfile.mkdtemp()
        >>> print(variant_note("nowhere"))
        The APD chapter has not run under this profile, so no ALM' was tested.
        >>> del os.environ["APD_RESULTS_DIR"]
    """
    path = results_dir(profile) / "apd.json"
    values = load_results(profile, "apd") if path.is_file() else {}
    if "variant_used_note" not in values:
        return "The APD chapter has not run under this profile, so no ALM' was tested."
    text = (
        f"Claims about APD are tested on the ALM' every chapter uses: {values['variant_used_note']}. Variants "
        f"of ALM' whose mechanism gates pass: {values.get('engaged_list', 'none')} (of {values.get('n_variants')})."
    )
    gain, se, mde = (_number(values.get(k)) for k in ("kl_apd_gain", "kl_apd_gain_se", "kl_apd_gain_mde"))
    if gain is not None and se is not None:
        n = values.get("kl_apd_gain_n", values.get("n_test_items"))
        people = values.get("kl_apd_gain_people")
        over = f"paired by question over {n} questions" + (
            f" and averaged per person, so each of the {people} people weighs the same; standard error over people"
            if people is not None
            else ""
        )
        text += (
            f" On the world's test questions CD's KL to the true answer distribution minus APD's is "
            f"{format_value('{:+.4f}', gain)} ± {se:.4f} nats ({over}; 1/T and "
            f"lambda3 chosen on the dev half; the smallest difference this detects is {mde:.4f})"
        )
        per = []
        for b in ("head", "torso", "tail"):
            g, flat = _number(values.get(f"regime_{b}_gain")), _number(values.get(f"regime_{b}_flat"))
            if g is not None:
                per.append(
                    f"{b} {format_value('{:+.4f}', g)}"
                    + (f" ({flat:.0%} of its rising gold curves flatten)" if flat is not None else "")
                )
        text += (
            ": by frequency bucket (exploratory, see the APD chapter for Holm's correction) " + ", ".join(per) + "."
            if per
            else "."
        )
    return text


def family_saturation(profile: str) -> pd.DataFrame | None:
    """The family chapter's saturation table under ``profile`` (``tables/family_saturation.csv``: per
    frequency bucket, the share of gold-answer curves that rise with size and the share of those that
    flatten by the largest member), indexed by bucket; None when that chapter has not written it (a
    Hub family has no world, or the chapter has not run).

    Example:
        >>> import os, tempfile
        >>> os.environ["APD_RESULTS_DIR"] = tempfile.mkdtemp()
        >>> family_saturation("nowhere") is None
        True
        >>> del os.environ["APD_RESULTS_DIR"]
    """
    path = results_dir(profile) / "tables" / "family_saturation.csv"
    if not path.is_file():
        return None
    return pd.read_csv(path).set_index("bucket")
