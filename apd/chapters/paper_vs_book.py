"""The paper-vs-book chapter's bookkeeping: counts of the paper's tables, figures and verdicts, the
per-claim record, and the values and figure that fill the book's first page
(``notebooks/paper_vs_book.ipynb``). It reads the other chapters' results (their typed headlines,
:class:`BookResults`); it computes nothing new."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from apd.core.curves import PYTHIA_LOG_SIZES
from apd.core.stats import Z_TEST, side
from apd.evaluation.factuality.selection import PAPER_CD_T
from apd.base.notebooks import toc_notebooks
from apd.base.paths import project_root
from apd.chapters.apd import ApdHeadline
from apd.chapters.theorem1 import Theorem1Headline
from apd.report.claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PLAIN_NAMES,
    REPRODUCED,
    SCALED_EFFECTS,
    claims_needing,
    precondition_words,
    verdict_counts,
)
from apd.report.findings import findings_markdown, scale_note, size_in_words
from apd.report.plots import COLORS, figure
from apd.report.numbers import format_number, interval_text
from apd.report.results import chapter_ran, describe_device, load_results, recorded_wall_time, results_dir
from apd.report.tables import listed, plus_minus

VERDICTS = {
    "reproduced": REPRODUCED,
    "not_reproduced": NOT_REPRODUCED,
    "not_testable": NOT_TESTABLE,
    "inconclusive": INCONCLUSIVE,
}
TABLE_STATUS = {  # every status of apd.report.coverage.table_status
    "same": "same rows",
    "few": "too few items",
    "counterpart": "counterpart rows",
    "missing": "not produced here",
    "never": "cannot be regenerated",
}
FIGURE_STATUS = {  # every status of apd.report.coverage.figure_status
    "done": "regenerated",
    "counterpart": "counterpart figure",
    "missing": "not produced here",
    "never": "cannot be regenerated",
}
GLANCE = {
    "verdict": "verdict",
    "claim_id": "claim",
    "n_tests": "tests",
    "n_hold": "hold",
    "n_fail": "fail",
    "n_undecided": "too little data",
    "n_missing": "not run",
}


def chapters_read(profile: str) -> list[str]:
    """The chapters whose results this profile holds (but this one and the tutorial)."""
    return sorted(p.stem for p in results_dir(profile).glob("*.json") if p.stem not in ("paper_vs_book", "tutorial"))


def glue_status(run, frame: pd.DataFrame, prefix: str, statuses: dict) -> None:
    """Glue ``n_<prefix>`` (rows of ``frame``) and ``n_<prefix>_<key>`` per status of ``statuses``, so
    that the counts add up to the rows; a status ``statuses`` lacks is an error."""
    unknown = sorted(set(frame["status"]) - set(statuses.values()))
    if unknown:
        raise ValueError(
            f"status {', '.join(map(repr, unknown))} of the {prefix} has no count to glue; add it to the "
            f"statuses ({', '.join(map(repr, statuses.values()))}) and to the sentence that reads them"
        )
    n = frame["status"].value_counts()
    run.glue(f"n_{prefix}", len(frame))
    for key, status in statuses.items():
        run.glue(f"n_{prefix}_{key}", int(n.get(status, 0)))


def table_caption(note: str, number: int, tables: pd.DataFrame) -> str:
    """The caption of the paper's Table ``number`` beside ours (``note``: that of
    :func:`apd.report.beside.paper_beside_ours`), marked when its status in ``tables``
    (:func:`apd.report.coverage.table_status`) is too few items: then ours rest on too few
    questions to compare, and the caption says how few.

    Example:
        >>> t = pd.DataFrame({"paper": ["Table 4"], "status": ["too few items"],
        ...                   "ours": ["3 numbers; only 1 qualifying item(s) in the smallest"]})
        >>> table_caption("Table 4: ours beside the paper's", 4, t)
        "Table 4: ours beside the paper's. Too few items to compare: 3 numbers; only 1 qualifying item(s) in the smallest"
        >>> table_caption("Table 1: ...", 1, t)
        'Table 1: ...'
    """
    row = tables[tables["paper"] == f"Table {number}"]
    if row.empty or row["status"].iloc[0] != TABLE_STATUS["few"]:
        return note
    return f"{note}. Too few items to compare: {row['ours'].iloc[0]}"


def status_first(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its ``status`` column first (the verdict of each row).

    Example:
        >>> status_first(pd.DataFrame({"paper": ["Table 1"], "status": ["same rows"]})).columns.tolist()
        ['status', 'paper']
    """
    return frame[["status", *[c for c in frame.columns if c != "status"]]]


def glance(judged: pd.DataFrame) -> pd.DataFrame:
    """One row per claim: its verdict first, then the tests that hold, fail or could not be run."""
    return judged[list(GLANCE)].rename(columns=GLANCE)


def glue_verdicts(run, judged: pd.DataFrame) -> dict:
    """Glue the number of claims per verdict and their ids; return :func:`verdict_counts`."""
    counts = verdict_counts(judged)
    run.glue("n_claims", len(judged))
    run.glue("n_reproduced", counts[REPRODUCED])
    run.glue("n_not_reproduced", counts[NOT_REPRODUCED])
    run.glue("n_not_testable", counts[NOT_TESTABLE])
    run.glue("n_inconclusive", counts[INCONCLUSIVE])
    for key, v in VERDICTS.items():
        run.glue(f"ids_{key}", ", ".join(judged.loc[judged["verdict"] == v, "claim_id"]) or "none")
    return counts


def _num(v):
    return round(float(v), 6) if pd.notna(v) else "n/a"


def record_claims(run, judged: pd.DataFrame) -> None:
    """Record per claim its verdict, reason, preconditions, the paper's effect on this testbed's
    scale, and the estimate, se and 95% interval of the deciding difference (6 decimals, or "n/a")."""
    for row in judged.itertuples():
        c = row.claim_id
        run.record(
            **{
                f"verdict_{c}": row.verdict,
                f"reason_{c}": row.reason,
                f"preconditions_{c}": row.preconditions,
                f"n_preconditions_failed_{c}": int(row.n_preconditions_failed),
                f"effect_scaled_{c}": _num(row.effect),
                f"effect_basis_{c}": SCALED_EFFECTS.get(c) or "none",
                f"estimate_{c}": _num(row.estimate),
                f"se_{c}": _num(row.se),
                f"ci_low_{c}": _num(row.ci_low),
                f"ci_high_{c}": _num(row.ci_high),
            }
        )


def _interval_text(row) -> str:
    """The deciding estimate and its 95% interval, ``+0.0033 [+0.0003, +0.0063]`` (the book writes ±
    for one standard error only).

    Example:
        >>> from types import SimpleNamespace
        >>> _interval_text(SimpleNamespace(estimate=-0.2153, ci_low=-0.252, ci_high=-0.178))
        '-0.22 [-0.25, -0.18]'
    """
    if not all(pd.notna(getattr(row, k)) for k in ("estimate", "ci_low", "ci_high")):
        return "—"
    return f"{_signed(row.estimate)} [{_signed(row.ci_low)}, {_signed(row.ci_high)}]"


def _signed(v: float) -> str:
    """``v`` to 2 significant figures (:func:`apd.report.numbers.format_number`), signed unless 0."""
    return format_number(v, sig=2, signed=v != 0)


def why_in_words(claim_id: str, judged_row, detail: pd.DataFrame) -> str:
    """Why a claim got its verdict, in a few plain words: the failed preconditions
    (:func:`apd.report.claims.precondition_words`) for "not testable here", else where the
    deciding interval lies."""
    mine = detail[(detail["claim_id"] == claim_id) & (detail["kind"] == "precondition")]
    failed = mine[mine["status"] != "holds"]
    if judged_row.verdict == NOT_TESTABLE:
        words = [
            f"{r.chapter} not measured" if r.status == "missing" else precondition_words(claim_id, str(r.description))
            for r in failed.itertuples()
        ]
        return "; ".join(dict.fromkeys(words)) or "a chapter did not run"
    if judged_row.verdict == REPRODUCED:
        return "interval above 0" if pd.notna(judged_row.ci_low) else "holds"
    if judged_row.verdict == NOT_REPRODUCED:
        context = detail[(detail["claim_id"] == claim_id) & (detail["kind"] == "context")]
        caveat = " (a context check fails)" if (context["status"] == "does not hold").any() else ""
        if pd.notna(judged_row.ci_high) and judged_row.ci_high < 0:
            return "the opposite holds" + caveat
        return ("excludes the paper's effect" if pd.notna(judged_row.ci_high) else "fails") + caveat
    return "holds 0 and the paper's effect"


def claims_at_a_glance(judged: pd.DataFrame, detail: pd.DataFrame) -> pd.DataFrame:
    """The book's first table: per claim its plain name, the paper's effect on this testbed's scale,
    this build's deciding estimate with its 95% interval, the verdict and why (plain words).

    Example:
        >>> j = pd.DataFrame(dict(claim_id=["C1a_cd_identity"], verdict=["reproduced"], estimate=[np.nan],
        ...                       ci_low=[np.nan], ci_high=[np.nan], effect=[np.nan]))
        >>> d = pd.DataFrame(columns=["claim_id", "kind", "status", "chapter", "values", "description"])
        >>> claims_at_a_glance(j, d).iloc[0].tolist()   # no column of dashes
        ['C1a', 'CD is a larger hypothetical LM (identity)', 'reproduced', 'holds']
    """
    rows = []
    for r in judged.itertuples():
        rows.append(
            {
                "": r.claim_id.split("_")[0],
                "claim": PLAIN_NAMES.get(r.claim_id, r.claim_id),
                "paper's effect here": _signed(r.effect) if pd.notna(r.effect) else "—",
                "this build [95% interval]": _interval_text(r),
                "verdict": r.verdict,
                "why": why_in_words(r.claim_id, r, detail),
            }
        )
    out = pd.DataFrame(rows)
    empty = [c for c in ("paper's effect here", "this build [95% interval]") if (out[c] == "—").all()]
    return out.drop(columns=empty)  # a column with no value is left out, not shown as a wall of dashes


#: The default build's verdicts before its instruments were checked both ways (commit 8d01a28): per
#: claim, the verdict and why, as that build's first page gave them.
BEFORE_COMMIT = "8d01a28"
BEFORE = {
    "C1a": ("reproduced", "holds"),
    "C1b": ("not reproduced", "the opposite holds"),
    **{c: ("not testable here", "ALM' inert (flat curves, APD on the expert)") for c in ("C2", "C3", "C8")},
    **{
        c: ("not testable here", "ALM' inert (flat curves, APD on the expert); no CD gain")
        for c in ("C4", "C5", "C6", "C7")
    },
}


def verdicts_beside(
    at_a_glance: pd.DataFrame, profile: str, gate_reason: Optional[str] = None
) -> Optional[pd.DataFrame]:
    """This build's verdicts beside :data:`BEFORE`'s (the default profile only; None elsewhere): per
    claim its plain name, the verdict then and why, and the verdict now and why, "ALM' inert" followed
    by the gates that fail now (``gate_reason``, the APD chapter's, e.g. "the release configuration:
    flat curves, ALM' barely moved"; None: read from the APD chapter's results).

    Example:
        >>> now = pd.DataFrame({"": ["C1a", "C3"], "claim": ["CD is a larger hypothetical LM (identity)", "x"],
        ...                     "verdict": ["reproduced", "not testable here"], "why": ["holds", "ALM' inert"]})
        >>> t = verdicts_beside(now, "default", "the release configuration: flat curves")
        >>> t.iloc[0].tolist(), t.iloc[1]["why now"]
        (['C1a', 'CD is a larger hypothetical LM (identity)', 'reproduced', 'holds', 'reproduced', 'holds'], "ALM' inert (flat curves)")
        >>> verdicts_beside(now, "smoke") is None
        True
    """
    if profile != "default":
        return None
    why_now = at_a_glance["why"]
    gate_reason = gate_reason or _read(profile, "apd").get("gate_reason")
    if gate_reason:
        why_now = why_now.str.replace("ALM' inert", f"ALM' inert ({str(gate_reason).split(': ', 1)[-1]})", regex=False)
    then = at_a_glance[""].map(lambda c: BEFORE.get(c, ("—", "—")))
    return pd.DataFrame(
        {
            "": at_a_glance[""],
            "claim": at_a_glance["claim"],
            f"verdict at {BEFORE_COMMIT}": then.str[0],
            "why then": then.str[1],
            "verdict now": at_a_glance["verdict"],
            "why now": why_now,
        }
    )


def markdown_table(frame: pd.DataFrame) -> str:
    """``frame`` as a pipe table (cells escaped for ``|``), for a hand-written page's glue.

    Example:
        >>> print(markdown_table(pd.DataFrame({"a": ["x|y"], "b": [1]})))
        | a | b |
        |---|---|
        | x\\|y | 1 |
    """
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def preconditions(detail: pd.DataFrame) -> pd.DataFrame:
    """The precondition checks with their values and intervals."""
    return detail[detail["kind"] == "precondition"][
        ["claim_id", "description", "status", "values", "estimate", "ci_low", "ci_high"]
    ]


def members(profile: str) -> pd.DataFrame | None:
    """The family chapter's member table under ``profile``, or None when it has not run."""
    path = results_dir(profile) / "tables" / "family_members.csv"
    return pd.read_csv(path) if path.is_file() else None


def write_findings(run, judged, profile: str) -> str:
    """The findings, one sentence per claim (:func:`findings_markdown`), written to ``findings.md``
    beside the results."""
    text = findings_markdown(judged, profile, scale_note(members(profile), profile))
    (run.dir / "findings.md").write_text(text)
    return text


@dataclass(frozen=True)
class BookResults:
    """What this chapter reads from the others under one profile: Theorem 1's and the APD chapter's
    headlines (None when that chapter has not run) and the wall time of every chapter that ran."""

    theorem1: Theorem1Headline | None
    apd: ApdHeadline | None
    seconds: float  # the chapters' wall times summed (table-of-contents order), seconds


def book_results(profile: str) -> BookResults:
    """:class:`BookResults` of every chapter in the table of contents that ran (but this one);
    raises :class:`apd.chapters.gluing.MissingResultError` when a headline lacks a field."""
    ran = [
        stem
        for stem in toc_notebooks(project_root() or Path(__file__).resolve().parents[3])
        if stem != "paper_vs_book" and chapter_ran(profile, stem)
    ]
    return BookResults(
        theorem1=Theorem1Headline.load(profile, missing_ok=True),
        apd=ApdHeadline.load(profile, missing_ok=True),
        seconds=sum(recorded_wall_time(profile, stem) for stem in ran),
    )


def kl_gain(apd_headline: ApdHeadline | None):
    """``(CD's KL to the truth minus APD's, its se)`` in nats from the APD chapter's headline, or
    ``(None, None)`` when either is missing (a Hub family's "n/a") or that chapter has not run.

    Example:
        >>> kl_gain(None)
        (None, None)
    """
    gain, se = (None, None) if apd_headline is None else (apd_headline.kl_apd_gain, apd_headline.kl_apd_gain_se)
    known = isinstance(gain, (int, float)) and isinstance(se, (int, float)) and np.isfinite([gain, se]).all()
    return (gain, se) if known else (None, None)


def glue_summary(run, done: BookResults, counts: dict, profile: str) -> None:
    """Glue the values the book's first page reads (``summary_*``, see ``book/intro.md``): Theorem
    1's error, the family's sizes, whether ALM' engages, APD's KL gain over CD with the sentence it
    chooses, which verdicts occur, and the build's hours and device."""
    t1, apd_headline = done.theorem1, done.apd
    run.glue_text("summary_t1_err", None if t1 is None else t1.max_abs_error)  # the book's number format
    run.glue_text("summary_t1_n", None if t1 is None else t1.n_logits_checked, "{:,}")
    m = members(profile)
    sizes = m["n_nonembedding"].astype(float) if m is not None and "n_nonembedding" in m else None
    run.glue_text("summary_n_members", None if sizes is None else len(sizes), "{:d}")
    run.glue_text("summary_smallest", None if sizes is None else size_in_words(sizes.min()), "{}")
    run.glue_text("summary_largest", None if sizes is None else size_in_words(sizes.max()), "{}")
    ratio = None if sizes is None else float(np.exp(PYTHIA_LOG_SIZES[-1])) / sizes.max()
    run.glue_text("summary_scale_ratio", ratio)  # three significant figures: an order of scale
    engaged = None if apd_headline is None else apd_headline.gate_engaged
    run.glue("summary_engaged", engaged == 1)
    run.glue("summary_not_engaged", engaged == 0)
    run.glue("summary_variant", "n/a" if apd_headline is None else str(apd_headline.variant_used))
    run.glue("summary_gate_reason", "n/a" if apd_headline is None else str(apd_headline.gate_reason))
    gain, se = kl_gain(apd_headline)
    known = gain is not None  # and so apd_headline is not None
    run.glue_text("summary_kl_gain", plus_minus(gain, se) if known else None, "{}")
    run.glue_text("summary_kl_mde", apd_headline.kl_apd_gain_mde if known else None, "{:.2g}")
    run.glue_text("summary_kl_n", apd_headline.kl_apd_gain_n if known else None, "{:,}")
    run.glue("summary_apd_closer", bool(known and gain > Z_TEST * se))
    run.glue("summary_cd_closer", bool(known and gain < -Z_TEST * se))
    run.glue("summary_kl_tie", bool(known and abs(gain) <= Z_TEST * se))
    run.glue("summary_some_not_reproduced", counts[NOT_REPRODUCED] > 0)
    run.glue("summary_some_inconclusive", counts[INCONCLUSIVE] > 0)
    run.glue("summary_some_not_testable", counts[NOT_TESTABLE] > 0)
    run.glue_text("summary_hours", done.seconds / 3600 if done.seconds else None, "{:.1f}")
    run.glue("summary_device", describe_device())
    run.glue("summary_ready", True)


def _read(profile: str, stem: str) -> dict:
    return load_results(profile, stem) if chapter_ran(profile, stem) else {}


def _pm(values: dict, key: str, se_key: str | None = None):
    d, se = values.get(key), values.get(se_key or f"{key}_se")
    ok = all(isinstance(v, (int, float)) and np.isfinite(v) for v in (d, se))
    return plus_minus(d, se) if ok else None


def _number(values: dict, key: str):
    v = values.get(key)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) else None


def _count(values: dict, key: str | None) -> int | None:
    """``values[key]`` as a number of clusters for a t interval (a whole number >= 2), else None."""
    n = _number(values, key) if key else None
    return int(n) if n is not None and n == int(n) and n >= 2 else None


def _ci(values: dict, key: str, n_key: str | None = None) -> str | None:
    """The 95% interval of ``values[key]`` ± ``values[key_se]`` as text, ``[-0.0057, 0.0175]``
    (:func:`apd.report.numbers.interval_text`: Student's t over the ``values[n_key]`` people the
    error was taken over, as the claims' checks read it; the normal one without them); None when
    either is missing.

    Example:
        >>> _ci({"g": 0.0059, "g_se": 0.0058, "n": 100}, "g", "n"), _ci({}, "g")
        ('[-0.0056, 0.0174]', None)
    """
    d, se = _number(values, key), _number(values, f"{key}_se")
    return None if d is None or se is None else interval_text(d, se, _count(values, n_key))


#: CD against the expert on each measure the first page reads: (chapter, difference key, the key
#: of the number of people its standard error is over)
CD_CONTROLS = {
    "KL to the truth": ("apd", "kl_cd_gain", "kl_cd_gain_people"),
    "QA ppl": ("qa", "world_ho_ppl_cd_gain", "world_ho_ppl_n_people"),
    "NE_ER": ("factuality", "ne_er_cd_gain", "ne_er_cd_gain_people"),
}


def glue_rules(run, profile: str) -> None:
    """Glue, per kind of precondition, the claims that read one under ``profile``
    (:func:`apd.report.claims.claims_needing`), for the rules the page states: ``rules_gates``,
    ``rules_control``, ``rules_known_answer``, ``rules_premise``."""
    needs = claims_needing(profile)
    run.glue("rules_gates", needs["gates"])
    run.glue("rules_control", needs["control"])
    run.glue("rules_known_answer", needs["known_answer"])
    run.glue("rules_premise", needs["premise"])


def glue_established(run, profile: str) -> None:
    """Glue the values of the first page's "what this book established" list (``summary_est_*``,
    None where the chapter has not run): CD's HLM against the real member and the premise's
    ratio (curves), obvious blindness at T = 1 (curves: its contexts, of which questions and
    held-out text positions) and CD's rate at the paper's T = 2 (:func:`blind_rate`), CD against the expert on KL, QA ppl and NE_ER (apd, qa, factuality:
    each difference ± its standard error, its 95% interval as the claims' checks read it, and the
    measures where that interval clears 0 and where it does not), where APD's KL sits beside the
    expert's and CD's (apd), the known-answer condition on the world (known_answer: the mix of the
    fitter's asymptote and the expert at the weight w chosen by dev total variation, its distance to the truth as a
    ratio to the expert's to four decimals, its gain with its 95% interval) and the testbed's search (testbed)."""
    cur, apd_v, qa, fac, ka, tb = (
        _read(profile, s) for s in ("curves", "apd", "qa", "factuality", "known_answer", "testbed")
    )
    run.glue_text("summary_est_hlm_gain", _pm(cur, "hlm_gain"), "{}")
    run.glue_text("summary_est_hlm_windows", _number(cur, "hlm_gain_n_groups"), "{:,}")
    run.glue_text("summary_est_premise_ratio", _number(cur, "premise_ratio_max"), "{:.2f}")
    run.glue_text("summary_est_blind_count", _number(cur, "all_blind_count"), "{:,}")
    run.glue_text("summary_est_blind_of", _number(cur, "all_blind_both_right"), "{:,}")
    run.glue_text("summary_est_blind_questions", _number(cur, "blind_both_right"), "{:,}")
    run.glue_text("summary_est_blind_text", _number(cur, "text_blind_both_right"), "{:,}")
    run.glue_text("summary_est_blind_apd_count", _number(cur, "all_blind_apd_count"), "{:,}")
    run.glue_text("summary_est_blind_rate_paper_T", blind_rate(profile, PAPER_CD_T), "{:.3f}")
    run.glue_text("summary_est_kl_cd_gain", _pm(apd_v, "kl_cd_gain"), "{}")
    run.glue_text("summary_est_qa_cd_gain", _pm(qa, "world_ho_ppl_cd_gain"), "{}")
    run.glue_text("summary_est_ne_er_cd_gain", _pm(fac, "ne_er_cd_gain"), "{}")
    run.glue_text("summary_est_kl_cd_ci", _ci(apd_v, "kl_cd_gain", "kl_cd_gain_people"), "{}")
    run.glue_text("summary_est_qa_cd_ci", _ci(qa, "world_ho_ppl_cd_gain", "world_ho_ppl_n_people"), "{}")
    run.glue_text("summary_est_ne_er_cd_ci", _ci(fac, "ne_er_cd_gain", "ne_er_cd_gain_people"), "{}")
    kl = {k: _number(apd_v, k) for k in ("kl_elm", "kl_cd", "kl_apdbest")}
    run.glue_text("summary_est_kl_elm", kl["kl_elm"], "{:.4f}")
    run.glue_text("summary_est_kl_cd", kl["kl_cd"], "{:.4f}")
    run.glue_text("summary_est_kl_apd", kl["kl_apdbest"], "{:.4f}")
    run.glue_text("summary_est_collapsed", _number(apd_v, "gate_collapsed"), "{:.0%}")
    run.glue_text("summary_est_collapse_tol", _number(apd_v, "gate_collapse_tol"), "{:g}")
    run.glue("summary_est_near_expert", apd_v.get("gate_on_expert") == 1)  # not trivial fails, APD nearer the expert
    moved, moved_min = _number(apd_v, "gate_moved_kl"), _number(apd_v, "gate_moved_min")
    at_cd = apd_v.get("gate_engaged") == 0 and None not in (moved, moved_min) and moved < moved_min
    run.glue("summary_est_near_cd", at_cd)  # gates fail and ALM' did not move from the ALM: APD is CD
    run.glue_text("summary_est_moved_kl", moved, "{:.2g}")
    run.glue_text("summary_est_lambda3", _number(apd_v, "lambda3"), "{:g}")
    run.glue_text("summary_est_gate_positive_lambda3", _number(apd_v, "gate_positive_lambda3"), "{:g}")
    run.glue("summary_est_gate_no_gain", apd_v.get("gate_chosen_no_gain") is True)
    run.glue_text("summary_est_collapsed_cd", _number(apd_v, "gate_collapsed_cd"), "{:.0%}")
    run.glue_text("summary_est_ka_ratio", _number(ka, "ka_world_ratio"), "{:.4f}")  # a ratio near 1
    run.glue_text("summary_est_ka_w", _number(ka, "ka_world_w"), "{:g}")
    run.glue_text("summary_est_ka_gain", _pm(ka, "ka_world_gain"), "{}")
    run.glue_text("summary_est_ka_ci", _ci(ka, "ka_world_gain", "ka_world_n_people"), "{}")
    run.glue_text("summary_est_ka_people", _number(ka, "ka_world_n_people"), "{:,}")
    run.glue("summary_est_ka_holds", ka.get("ka_condition_passes") == 1)
    run.glue("summary_est_ka_fails", ka.get("ka_condition_passes") == 0)
    abl = _read(profile, "ablations")
    engaged = [k.removeprefix("gate_engaged_") for k, v in abl.items() if k.startswith("gate_engaged_") and v == 1]
    run.glue_text("summary_est_abl_gated", _number(abl, "n_gated"), "{:d}")
    run.glue_text("summary_est_abl_engaged", len(engaged) if abl else None, "{:d}")
    run.glue_text("summary_est_abl_engaged_names", ", ".join(engaged) or None, "{}")
    run.glue_text("summary_est_n_configs", _number(tb, "n_configs"), "{:d}")
    run.glue_text("summary_est_dr_points", _number(tb, "dr_points"), "{:d}")
    run.glue("summary_est_none_adopted", tb.get("dr_adopted") == "none")
    side = _side(cur, "hlm_gain", "hlm_gain_n_groups")
    run.glue("summary_est_hlm_farther", side == -1)
    run.glue("summary_est_hlm_closer", side == 1)
    read = {"apd": apd_v, "qa": qa, "factuality": fac}
    flags = cd_control_flags({m: _side(read[stem], k, n) for m, (stem, k, n) in CD_CONTROLS.items()})
    run.glue_text("summary_est_cd_worse_on", flags["worse_on"], "{}")
    run.glue_text("summary_est_cd_better_on", flags["better_on"], "{}")
    run.glue_text("summary_est_cd_not_better_on", flags["not_better_on"], "{}")
    run.glue("summary_est_cd_better_nowhere", flags["better_nowhere"])
    run.glue("summary_est_cd_better_some", flags["better_some"])
    run.glue("summary_est_cd_better_all", flags["better_all"])


def blind_rate(profile: str, T: float) -> float | None:
    """CD's obvious-blindness rate over all contexts at ``T``, as the curves chapter's rate table
    gives it (``tables/curves_obvious_blindness.csv``); None where the curves chapter has not run,
    its grid lacks ``T`` or no context is right for both the expert and the amateur."""
    path = results_dir(profile) / "tables" / "curves_obvious_blindness.csv"
    if not chapter_ran(profile, "curves") or not path.is_file():
        return None
    t = pd.read_csv(path)
    row = t[(t["group"] == "all contexts") & (t["method"] == "CD") & np.isclose(t["T"], T)]
    rate = float(row["blindness rate"].iloc[0]) if len(row) else float("nan")
    return rate if np.isfinite(rate) else None


def cd_control_flags(sides: dict[str, int | None]) -> dict:
    """The positive control on each measure (``{measure: side}``, :func:`_side`: 1 CD significantly
    better than the expert, -1 significantly worse, 0 neither, None not measured) as the first page
    reads it: the measures where CD is worse, better, not better (phrases, None for none) and
    whether CD is better nowhere, on some measures only, or on every one.

    Example:
        >>> f = cd_control_flags({"KL": 0, "QA ppl": -1, "NE_ER": 1})
        >>> f["better_on"], f["not_better_on"], f["worse_on"], f["better_some"], f["better_all"]
        ('NE_ER', 'KL or QA ppl', 'QA ppl', True, False)
        >>> cd_control_flags({"KL": 1, "NE_ER": 1})["better_all"], cd_control_flags({"KL": 1, "NE_ER": None})["better_all"]
        (True, False)
    """
    better = [m for m, x in sides.items() if x == 1]
    not_better = [m for m, x in sides.items() if x in (0, -1)]
    return {
        "worse_on": _phrase([m for m, x in sides.items() if x == -1], "and"),
        "better_on": _phrase(better, "and"),
        "not_better_on": _phrase(not_better, "or"),
        "better_nowhere": all(x is not None and x != 1 for x in sides.values()),
        "better_some": bool(better) and bool(not_better),
        "better_all": bool(sides) and all(x == 1 for x in sides.values()),
    }


def _phrase(items: list[str], last: str) -> str | None:
    """:func:`apd.report.tables.listed`, None for no items (the page then hides the sentence)."""
    return listed(items, last) if items else None


def _side(values: dict, key: str, n_key: str | None = None) -> int | None:
    """Where the 95% interval of ``values[key]`` ± ``values[key_se]`` lies, Student's t over the
    ``values[n_key]`` clusters the error was taken over (the normal one without them), as the
    claims' checks read it: 1 above 0, -1 below, 0 across, None when either is missing.

    Example:
        >>> _side({"g": 0.02, "g_se": 0.005}, "g"), _side({"g": 0.0, "g_se": 0.005}, "g"), _side({}, "g")
        (1, 0, None)
        >>> _side({"g": 0.0099, "g_se": 0.005}, "g"), _side({"g": 0.0099, "g_se": 0.005, "n": 10}, "g", "n")
        (1, 0)
    """
    d, se = _number(values, key), _number(values, f"{key}_se")
    return None if d is None or se is None else side(d, se, _count(values, n_key))


def headline_rows(profile: str, apd_headline: ApdHeadline | None) -> list | None:
    """``[(label, CD's KL minus APD's, se)]`` per frequency bucket and over all test questions, for
    the APD chapter's variant (``tables/apd_regime.csv``); None when the APD chapter did not report it."""
    gain, se = kl_gain(apd_headline)
    path = results_dir(profile) / "tables" / "apd_regime.csv"
    variant = None if apd_headline is None else apd_headline.variant_used
    if gain is None or not path.is_file() or not variant:
        return None
    regime = pd.read_csv(path).set_index("bucket")
    rows = [(b, regime.loc[b, f"{variant}: gain"], regime.loc[b, f"{variant}: se"]) for b in regime.index]
    return rows + [("all questions", gain, se)]


def plot_headline(rows: list, expert: tuple | None = None):
    """The book's headline figure: CD's KL to the truth minus APD's with 95% intervals, one row per
    frequency bucket and one over all test questions; with ``expert`` = ``(CD's KL minus the
    expert's, se)`` the expert alone as a last row, so that a reader sees how close APD sits to it.
    The paper reports no KL, so no paper effect is marked (its scaled effects are in the claims
    table). The figure has no title: the first page's caption names the ALM' variant (``summary_variant``)."""
    rows = list(rows) + ([("expert alone, all", expert[0], expert[1])] if expert is not None else [])
    fig, ax = figure(height=2.0)  # untitled: the caption says what it shows
    y = np.arange(len(rows))
    colors = [COLORS["elm"] if r[0].startswith("expert") else COLORS["apd"] for r in rows]
    for yi, r, c in zip(y, rows, colors):
        ax.errorbar(r[1], yi, xerr=Z_TEST * r[2], fmt="o", color=c, capsize=4)
    ax.axvline(0, color="0.35", lw=1, ls="--")
    ax.set_yticks(y, [r[0] if r[0].startswith("expert") else f"APD, {r[0]}" for r in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.locator_params(axis="x", nbins=5)  # tick labels like -0.025 run together at 6 or more
    ax.set_xlabel("CD's KL to the truth minus the method's (nats; > 0: closer than CD)")
    return fig
