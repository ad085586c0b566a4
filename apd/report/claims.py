"""The paper's eight claims as evidence specifications (:class:`apd.report.evidence.PaperClaim`)."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from apd.report import paper
from apd.report.evidence import (
    HUB_PROFILES,
    PICO_PROFILES,
    Cell,
    Clusters,
    Gate,
    PaperClaim,
    EvidenceSpec,
    at_least,
    at_most,
    detects,
    difference_larger,
    flag,
    greater_than,
    is_largest,
    less_than,
    shown,
    significant,
    within_relative,
)
from apd.report.tables import listed

_CLAIM_TEXT = {c["id"]: c for c in paper.claim_texts()}


_HLM_TABLE = "curves_hlm_vs_real"


#: tables of other chapters that the checks read (names as the chapters save them)
ABLATIONS_TABLE = "ablations"  # one row per run: APD, each variant, CD, ELM


QA_WORLD_GAIN_TABLE = "qa_world_gain_by_bucket"  # APD's gain over CD per frequency bucket (pico)


QA_DATASETS_TABLE = "qa_datasets_summary"  # the paper's QA datasets, long format (Hub families)


def _ablation(name: str, column: str) -> Cell:
    return Cell(ABLATIONS_TABLE, column, (("name", name),))


def _ablation_people(name: str) -> Clusters:
    """The people an ablation's paired KL difference is over (``ablations.csv``'s ``kl_diff_groups``)."""
    return Clusters("people", _ablation(name, "kl_diff_groups"))


def _bucket(bucket: str, column: str = "ppl: CD - APD") -> Cell:
    return Cell(QA_WORLD_GAIN_TABLE, column, (("bucket", bucket),))


def _qa(method: str, dataset: str | None = None, metric: str = "ppl", protocol: str = "held-out") -> Cell:
    """A method's mean on one dataset (or, dataset None, the mean over every dataset run)."""
    where = (("protocol", protocol), ("metric", metric), ("method", method), ("group", "all"))
    if dataset is None:
        return Cell(QA_DATASETS_TABLE, "value", where, agg="mean")
    return Cell(QA_DATASETS_TABLE, "value", (("dataset", dataset), *where))


def _engaged(
    stem: str = "apd",
    key: str = "gate_engaged",
    reason_key: str = "gate_reason",
    what: str = "the tested ALM' (the one every chapter uses, apd.variant_used: the APD chapter's engaged "
    "variant, or the release configuration when none engages)",
    who: str | None = None,
) -> EvidenceSpec:
    """The mechanism gate of an ALM' (:mod:`apd.amateur.gates`) as a precondition: a claim about APD
    cannot be tested when the curve model is inert, ALM' sits at a trivial solution or ALM' never moved.
    By default the ALM' every chapter uses: the APD chapter's engaged variant, or the release
    configuration when no variant engages (then this precondition fails). ``who``: the ALM' in a
    few words for the check's sentence (default: ``what`` without its parenthesis)."""
    who = who or what.split(" (")[0]
    return EvidenceSpec(
        stem,
        key,
        flag(),
        f"the mechanism of {what} engaged: its curve alive, its objective not at a trivial solution, and ALM' "
        "moved from the amateur (the three gates of the glossary)",
        kind="precondition",
        reason_key=reason_key,
        names=(f"{who} passes its mechanism gates",),
    )


#: The release configuration's own gates, beside every claim tested on the ALM' every chapter uses (context only).
RELEASE_CONTEXT = EvidenceSpec(
    "apd",
    "release_gate_engaged",
    flag(),
    "the release configuration's own mechanism engaged (context: claims about APD test "
    "the ALM' every chapter uses, which may be another configuration of the trainer)",
    kind="context",
    reason_key="release_gate_reason",
    names=("the release configuration passes its mechanism gates",),
)


def _with_release_context(claim: PaperClaim) -> PaperClaim:
    """``claim`` with :data:`RELEASE_CONTEXT` added when it is tested on the APD chapter's ALM'."""
    if not any(s.stem == "apd" and s.keys == ("gate_engaged",) for s in claim.evidence):
        return claim
    return replace(claim, evidence=claim.evidence + (RELEASE_CONTEXT,))


def _qa_wide(family: str = "Pythia") -> pd.DataFrame:
    df = pd.concat([paper.table(t) for t in (2, 3, 4, 5)])
    d = df[(df["family"] == family) & (df["metric"] == "ppl")]
    return d.pivot_table(index="dataset", columns="role", values="value")


def paper_qa_gain(family: str = "Pythia") -> float:
    """The paper's QA effect: CD's ppl minus APD's, mean over the datasets of Tables 2-5 (nats)."""
    wide = _qa_wide(family)
    return float((wide["cd"] - wide["apd"]).mean())


def paper_qa_share(family: str = "Pythia") -> float:
    """The paper's APD-over-CD QA gain as a share of its CD-over-expert gain (means over the datasets
    of Tables 2-5, ppl): about a third for Pythia (0.149 / 0.476 nats). Times this build's CD-over-
    expert gain, it is the paper's effect on this testbed's scale."""
    wide = _qa_wide(family)
    return float((wide["cd"] - wide["apd"]).mean() / (wide["elm"] - wide["cd"]).mean())


def _table1_ne_er(family: str = "Pythia", setting: str = "top-p k20, p=0.8") -> pd.Series:
    t = paper.table(1)
    return t[(t["family"] == family) & (t["setting"] == setting) & (t["metric"] == "NE_ER")].set_index("role")["value"]


def paper_ne_er_gain(family: str = "Pythia", setting: str = "top-p k20, p=0.8") -> float:
    """The paper's factuality effect: CD's NE_ER minus APD's in Table 1 (a fraction, not points)."""
    t = _table1_ne_er(family, setting)
    return float(t["cd"] - t["apd"]) / 100.0


def paper_ne_er_share(family: str = "Pythia", setting: str = "top-p k20, p=0.8") -> float:
    """The paper's APD-over-CD NE_ER gain as a share of its CD-over-expert gain (Table 1, Pythia,
    top-p k20, p = 0.8: 1.08 / 1.07 points)."""
    t = _table1_ne_er(family, setting)
    return float((t["cd"] - t["apd"]) / (t["elm"] - t["cd"]))


def paper_real_gain(setting: str = "top-p k20, p=0.8", real: str = "REAL, T_r=4.0") -> float:
    """The paper's complementarity effect: APD + top-p k20's NE_ER minus APD + REAL's in Table 6 (a
    fraction, not points; 39.2 - 37.5 = 1.7 points)."""
    t = paper.table(6)
    t = t[(t["role"] == "apd") & (t["metric"] == "NE_ER")].set_index("setting")["value"]
    return float(t[setting] - t[real]) / 100.0


def paper_real_share(family: str = "Pythia", setting: str = "top-p k20, p=0.8") -> float:
    """The paper's complementarity effect as a share of its CD-over-expert NE_ER gain at the same
    truncation: Table 6's APD + top-p k20 minus APD + REAL (39.2 - 37.5 = 1.7 points) over Table 1's
    expert minus CD at top-p k20, p = 0.8 (43.28 - 42.21 = 1.07 points). Table 6's own expert row
    samples with top-p 1.0, so its 47.9 - 40.3 would mix in the effect of truncation."""
    t = _table1_ne_er(family, setting)
    return paper_real_gain() * 100.0 / float(t["elm"] - t["cd"])


#: What each claim's scaled effect is made of: the measure, the paper's contrast, and the base (the
#: CD-over-expert gain in the same measure) it is a share of, here and in the paper. None: the
#: claim's test has no scaled effect, and why.
SCALED_EFFECTS = {
    "C1a_cd_identity": None,
    "C1b_cd_hlm_closer": "none: the theorem states no size for its consequence",
    "C2_obvious_blindness": "none: the paper shows one example, no rate",
    "C3_apd_more_factual": "NE_ER; APD over CD as a share of CD over the expert, both Table 1 (top-p k20, p = 0.8); "
    "times the lower 95% bound of this build's CD-over-expert NE_ER gain",
    "C4_apd_better_qa_easy": "QA ppl; APD over CD as a share of CD over the expert, means over Tables 2-5 (Pythia); "
    "times the lower 95% bound of this build's CD-over-expert QA ppl gain",
    "C5_on_the_fly_worse": "none: the paper measures it in QA ppl, the test in KL",
    "C6_more_midsize_members_help": "none: the paper shows it in a figure only",
    "C7_probability_space_and_flip": "none: the paper shows it in a figure only",
    "C8_real_apd_complementary": "NE_ER; APD + top-p k20 over APD + REAL (Table 6) as a share of CD over the expert "
    "at the same truncation (Table 1, top-p k20, p = 0.8); times the lower 95% bound of this build's CD-over-expert "
    "NE_ER gain",
}


#: Each claim in a few plain words, for the book's first page.
PLAIN_NAMES = {
    "C1a_cd_identity": "CD is a larger hypothetical LM (identity)",
    "C1b_cd_hlm_closer": "CD's HLM is closer to a larger LM",
    "C2_obvious_blindness": "APD keeps the obvious answer",
    "C3_apd_more_factual": "APD names fewer wrong entities",
    "C4_apd_better_qa_easy": "APD answers questions better",
    "C5_on_the_fly_worse": "APD beats fitting on the fly",
    "C6_more_midsize_members_help": "More mid-size members help",
    "C7_probability_space_and_flip": "Probability space and flip help",
    "C8_real_apd_complementary": "APD and REAL are complementary",
}


#: The kinds of precondition (:func:`precondition_kind`), each with its words when it fails.
PRECONDITION_WORDS = {
    "gates": "ALM' inert",
    "control": "no CD gain",  # the claim's row names its measure
    "known_answer": "extrapolation no better",
    "premise": "curves too curved",
    "hlm_inside": "no HLM inside the family",
    "both_right": "no context both models get right",
    "other": "a precondition failed",
}


def precondition_kind(chapter: str, keys: str, description: str) -> str:
    """Which kind of precondition a check is (a key of :data:`PRECONDITION_WORDS`), from its
    chapter, the keys it reads (as text) and its description.

    Example:
        >>> precondition_kind("apd", "gate_engaged", "the mechanism of the tested ALM' engaged: ...")
        'gates'
        >>> precondition_kind("qa", "world_ho_ppl_cd_gain", "positive control: CD's QA ppl ...")
        'control'
    """
    if "gate_engaged" in keys or description.startswith("the mechanism of"):
        return "gates"
    if description.startswith("positive control"):
        return "control"
    if chapter == "known_answer":
        return "known_answer"
    if "premise" in keys:
        return "premise"
    if "hlm_n_T" in keys:
        return "hlm_inside"
    if "both_right" in keys:
        return "both_right"
    return "other"


def precondition_in_words(chapter: str, keys: str, description: str) -> str:
    """A failed precondition in a few plain words, from its check (chapter, the keys it read, its
    description as :func:`apd.report.evidence.checks` lists them).

    Example:
        >>> precondition_in_words("apd", "gate_engaged", "the mechanism of the tested ALM' engaged: ...")
        "ALM' inert"
        >>> precondition_in_words("qa", "world_ho_ppl_cd_gain", "positive control: CD's QA ppl ...")
        'no CD gain'
    """
    return PRECONDITION_WORDS[precondition_kind(chapter, keys, description)]


def claims_needing(claims, profile: str) -> dict[str, str]:
    """Per kind of precondition (:data:`PRECONDITION_WORDS`' keys), the claims whose checks under
    ``profile`` read one, by their short ids (``"C3, C4 and C5"``), or ``"no claim"``: the rules
    as the claims define them, for a reader.

    Example:
        >>> claims_needing(paper_claims(), "default")["control"]
        'C3, C4, C5, C6, C7 and C8'
    """
    found: dict[str, list[str]] = {kind: [] for kind in PRECONDITION_WORDS}
    for claim in claims:
        for spec in claim.evidence:
            if spec.kind == "precondition" and spec.applies_to(profile):
                kind = precondition_kind(spec.stem, " ".join(map(str, spec.keys)), spec.description)
                short = claim.id.split("_")[0]
                if short not in found[kind]:
                    found[kind].append(short)
    return {kind: listed(ids) if ids else "no claim" for kind, ids in found.items()}


#: positive controls: CD beats the expert significantly on the measure a claim uses (pico world)
def _control_kl() -> EvidenceSpec:
    return EvidenceSpec(
        "apd",
        ("kl_cd_gain", "kl_cd_gain_se"),
        significant(),
        "positive control: CD is closer (KL) to the world's truth than the expert, significantly "
        "(the expert's KL minus CD's, paired over the test questions, standard error over people, its "
        "95% t interval above 0); without it there is no contrast for APD to improve on",
        kind="precondition",
        profiles=PICO_PROFILES,
        names=("the expert's KL to the truth minus CD's (nats)", "its standard error"),
        clusters=(Clusters("people", "kl_cd_gain_people"),),
    )


_QA_CD_GAIN = "the expert's QA ppl minus CD's on the test questions (nats)"


def _control_qa() -> EvidenceSpec:
    return EvidenceSpec(
        "qa",
        ("world_ho_ppl_cd_gain", "world_ho_ppl_cd_gain_se"),
        significant(),
        "positive control: CD's QA ppl on the world's test questions is lower than the expert's, "
        "significantly (paired, standard error over people, its 95% t interval above 0)",
        kind="precondition",
        profiles=PICO_PROFILES,
        names=(_QA_CD_GAIN, "its standard error"),
        clusters=(Clusters("people", "world_ho_ppl_n_people"),),
    )


_NE_ER_CD_GAIN = "the expert's NE_ER minus CD's"


def _control_ne_er() -> EvidenceSpec:
    return EvidenceSpec(
        "factuality",
        ("ne_er_cd_gain", "ne_er_cd_gain_se"),
        significant(),
        "positive control: CD names fewer wrong entities than the expert, significantly (the "
        "expert's NE_ER minus CD's at the first p of Table 1, on the prompts and seeds of the APD-CD "
        "comparison, every sentence opening of the test people, paired by prompt and seed, standard "
        "error over people, its 95% t interval above 0)",
        kind="precondition",
        profiles=PICO_PROFILES,
        names=(_NE_ER_CD_GAIN, "its standard error"),
        clusters=(Clusters("people", "ne_er_cd_gain_people"),),
    )


KNOWN_ANSWER = EvidenceSpec(
    "known_answer",
    "ka_condition_passes",
    flag(),
    "known-answer condition: on the world's dev people, whose true answers are known, the fitter's "
    "asymptote from this family's own member curves (at its dev-chosen weight) is closer to the truth "
    "than the expert's own probability, its 95% t interval over people above 0; if no extrapolation "
    "of these curves beats the expert, APD cannot be expected to",
    kind="precondition",
    reason_key="ka_condition_reason",
    names=("on the dev people the fitter's asymptote is closer to the truth than the expert's own probability",),
)


def _point(stem, keys, comparison, description, names, hub_test: bool = True) -> list[EvidenceSpec]:
    """A point comparison (no interval): a test under the Hub profiles when ``hub_test`` (where no
    paired interval exists), context under the pico profiles (an interval test decides there)."""
    out = [
        EvidenceSpec(
            stem,
            keys,
            comparison,
            description + " (point estimates, context)",
            kind="context",
            profiles=PICO_PROFILES,
            names=names,
        )
    ]
    if hub_test:
        out.append(EvidenceSpec(stem, keys, comparison, description, profiles=HUB_PROFILES, names=names))
    return out


#: where the factuality chapter's APD-CD headline (``ne_er_apd``, ``true_rate_apd``, ...) is measured
#: under the pico profiles: the paired comparison the C3 verdict reads, not the sweep (every pico
#: profile runs it; the chapter reads the sweep only where it does not, its ``headline_from_sweep``)
_VERDICT_SAMPLE = "APD-CD verdict comparison (every sentence opening of the test people)"


def _world_or_fp(keys, comparison, description, names, fp_measure: str | None = None) -> list[EvidenceSpec]:
    """A point comparison of the factuality chapter's APD-CD headline, named by where it is measured
    (``{where}`` in ``description`` and ``names``): the world's verdict comparison under the pico
    profiles (context), FactualityPrompts under the Hub profiles (a test). ``fp_measure``: the
    measure's name on FactualityPrompts, when it has one of its own (the share of true claims there
    is Entail_R)."""
    world = f"in the world's {_VERDICT_SAMPLE}"
    fp = f"on FactualityPrompts ({fp_measure})" if fp_measure else "on FactualityPrompts"
    return [
        EvidenceSpec(
            "factuality",
            keys,
            comparison,
            description.format(where=world) + " (point estimates, context)",
            kind="context",
            profiles=PICO_PROFILES,
            names=tuple(n.format(where=world) for n in names),
        ),
        EvidenceSpec(
            "factuality",
            keys,
            comparison,
            description.format(where=fp),
            profiles=HUB_PROFILES,
            names=tuple(n.format(where=fp) for n in names),
        ),
    ]


def _claim(id: str, evidence: list[EvidenceSpec]) -> PaperClaim:
    c = _CLAIM_TEXT[id]
    return PaperClaim(id, c["claim"], tuple(evidence), c["evidence"])


def paper_claims() -> list[PaperClaim]:
    """The paper's eight main claims (:func:`apd.report.paper.claim_texts`) with their checks.

    Thresholds are stated in each description. "Better" means: lower perplexity, lower NE_ER,
    higher true-claim rate, lower KL to the true next-token distribution. A claim is judged only
    where its preconditions hold: the mechanism gates of the ALM' it tests, the positive control
    (CD beats the expert significantly on the claim's measure), the known-answer condition and,
    for C1, the theorem's premise. Where the chapters give a paired difference and its standard
    error, its 95% interval decides (Student's t with n - 1 degrees of freedom where the chapter
    records the n people, text windows or contexts the error was taken over, else the normal
    1.96): above 0 reproduces the claim, below the paper's effect on this testbed's scale (the
    paper's effect as a share of its CD-over-expert gain, times this build's) does not, anything
    else is inconclusive. Point comparisons are context under the pico profiles; the Hub profiles,
    which have no paired intervals, still read them as tests. Each check names its keys in words
    (``names``), the sentence the paper-vs-book page shows."""
    E = EvidenceSpec
    claims = [
        _claim(
            "C1a_cd_identity",
            [
                E(
                    "theorem1",
                    "max_abs_error",
                    at_most(1e-9),
                    "Theorem 1's identity L_CD = (1 - 1/T) L_HLM holds to round-off on exactly linear families",
                    names=("the largest gap between CD's logits and (1 - 1/T) times its hypothetical LM's",),
                ),
            ],
        ),
        _claim(
            "C1b_cd_hlm_closer",
            [
                E(
                    "curves",
                    "premise_holds",
                    flag(),
                    "the theorem's premise, as a curvature test: at every T tried, the error the members' median "
                    "curvature would put into CD's hypothetical LM is smaller than the expert's distance to the real "
                    "member of that size",
                    kind="precondition",
                    names=("at every T tried, curvature explains less than the expert's distance to the real member",),
                ),
                E(
                    "curves",
                    "hlm_n_T",
                    at_least(1),
                    "CD's hypothetical LM falls inside the family for at least one T",
                    kind="precondition",
                    names=("the number of T whose hypothetical LM falls inside the family",),
                ),
                E(
                    "curves",
                    ("hlm_gain", "hlm_gain_se"),
                    detects(),
                    "CD's implied hypothetical LM is closer to the real member of its size than the expert is: "
                    "KL(real || expert) minus KL(real || CD's HLM) over the expert's top tokens, paired per "
                    "held-out position, averaged over the T inside the family, standard error over text "
                    "windows, with its 95% t interval above 0 (reproduced) or below 0 (not reproduced; the "
                    "theorem states no size for the effect)",
                    names=("KL(real || expert) minus KL(real || CD's hypothetical LM) (nats)", "its standard error"),
                    clusters=(Clusters("text windows", "hlm_gain_n_groups"),),
                ),
                E(
                    "curves",
                    "r2_median",
                    at_least(0.9),
                    "the median R^2 of a line through the members' log-probabilities (context: a flat curve is "
                    "linear with R^2 near 0)",
                    kind="context",
                    names=("the median R² of a line through the members' log-probabilities",),
                ),
                E(
                    "apd",
                    ("kl_cd", "kl_elm"),
                    less_than(),
                    "CD's answer distribution is closer (KL) to the world's truth than the expert's alone",
                    kind="context",
                    profiles=PICO_PROFILES,
                    names=("CD's KL to the truth (nats)", "the expert's"),
                ),
            ],
        ),
        _claim(
            "C2_obvious_blindness",
            [
                _engaged(),
                E(
                    "curves",
                    "all_blind_both_right",
                    at_least(1),
                    "some contexts (questions or held-out text) have the right token ranked first by both "
                    "the expert and the amateur",
                    kind="precondition",
                    names=("the number of contexts where the expert and the amateur both rank the right token first",),
                ),
                E(
                    "curves",
                    "all_blind_count",
                    at_least(1),
                    "CD ranks another token first on at least one of them (T = the first of blind_T_grid)",
                    names=("the number of those where CD ranks another token first",),
                ),
                E(
                    "curves",
                    ("all_blind_cd_minus_apd", "all_blind_cd_minus_apd_se"),
                    detects(),
                    "APD at T = 1 is obviously blind on a smaller share of those contexts than CD at T = 1 "
                    "(Figure 1: APD keeps the obvious answer first): CD's rate minus APD's, paired per context, "
                    "with its 95% t interval above 0 (reproduced) or below 0 (not reproduced)",
                    names=("CD's obvious-blindness rate minus APD's", "its standard error"),
                    clusters=(Clusters("contexts", "all_blind_n_groups"),),
                ),
                E(
                    "curves",
                    ("all_blind_apd_rate", "all_blind_cd1_rate"),
                    less_than(),
                    "the same rates as point estimates (context)",
                    kind="context",
                    names=("APD's obvious-blindness rate", "CD's at T = 1"),
                ),
                E(
                    "curves",
                    "blind_both_right",
                    shown(),
                    "how many of those contexts are questions, the paper's setting (the others are held-out "
                    "text positions)",
                    kind="context",
                    names=("the questions among those contexts",),
                ),
            ],
        ),
        _claim(
            "C3_apd_more_factual",
            [
                E(
                    "factuality",
                    ("ne_er_apd", "ne_er_cd"),
                    less_than(),
                    "APD's named-entity error rate on FactualityPrompts is lower than CD's (top-p k20, the first p "
                    "of Table 1)",
                    profiles=HUB_PROFILES,
                    names=("APD's NE_ER on FactualityPrompts", "CD's"),
                ),
                E(
                    "factuality",
                    ("ne_er_apd", "ne_er_cd"),
                    less_than(),
                    f"APD's named-entity error rate in the world's {_VERDICT_SAMPLE} is lower than CD's (top-p k20, "
                    "the first p of Table 1; point estimates, context)",
                    kind="context",
                    profiles=PICO_PROFILES,
                    names=(f"APD's NE_ER in the world's {_VERDICT_SAMPLE}", "CD's"),
                ),
                _engaged(),
                _control_ne_er(),
                KNOWN_ANSWER,
                E(
                    "factuality",
                    ("ne_er_diff_verdict", "ne_er_diff_se_verdict", "ne_er_cd_gain", "ne_er_cd_gain_se"),
                    detects(share=paper_ne_er_share(), base_se=True),
                    "APD names fewer wrong entities than CD, paired by prompt and seed: CD's NE_ER minus APD's, "
                    "standard error over people, with its 95% t interval above 0 (reproduced) or below the paper's "
                    "effect on this scale (not reproduced: the paper's APD-over-CD gain as a share of its "
                    "CD-over-expert gain, Table 1, times the lower 95% bound of this build's CD-over-expert gain)",
                    profiles=PICO_PROFILES,
                    names=("CD's NE_ER minus APD's", "its standard error", _NE_ER_CD_GAIN, "its standard error"),
                    clusters=(Clusters("people", "verdict_n_people"), Clusters("people", "ne_er_cd_gain_people")),
                ),
                E(
                    "factuality",
                    ("verdict_paper_diff", "verdict_paper_diff_se"),
                    significant(),
                    "at the paper's setting, CD's T = 2 where the test above uses the T chosen on the dev people: "
                    "CD's NE_ER minus APD's (the same prompts and seeds, standard error over people, its 95% t "
                    "interval above 0; context)",
                    kind="context",
                    profiles=PICO_PROFILES,
                    names=("CD's NE_ER minus APD's at CD's T = 2", "its standard error"),
                    clusters=(Clusters("people", "verdict_n_people"),),
                ),
                *_world_or_fp(
                    ("true_rate_apd", "true_rate_cd"),
                    greater_than(),
                    "APD's share of true claims {where} is higher than CD's",
                    ("APD's share of true claims {where}", "CD's"),
                    fp_measure="Entail_R",
                ),
                *_world_or_fp(
                    ("dist2_apd", "dist2_cd"),
                    within_relative(0.1),
                    "at similar diversity: APD's Dist-2 {where} is within 10% (relative) of CD's",
                    ("APD's Dist-2 {where}", "CD's"),
                ),
            ],
        ),
        _claim(
            "C4_apd_better_qa_easy",
            [
                # pico: the world's questions, test half, 1/T picked on the dev half
                E(
                    "qa",
                    ("world_ho_ppl_apd", "world_ho_ppl_cd"),
                    less_than(),
                    "APD's QA ppl (nats) on the world's test questions is lower than CD's (1/T picked on "
                    "the dev half; point estimates, context)",
                    kind="context",
                    profiles=PICO_PROFILES,
                    names=("APD's QA ppl on the test questions (nats)", "CD's"),
                ),
                _engaged(),
                _control_qa(),
                KNOWN_ANSWER,
                E(
                    "qa",
                    ("world_ho_ppl_gain", "world_ho_ppl_gain_se", "world_ho_ppl_cd_gain", "world_ho_ppl_cd_gain_se"),
                    detects(share=paper_qa_share(), base_se=True),
                    "APD's QA ppl is lower than CD's: CD's ppl minus APD's, paired over the test questions, standard "
                    "error over people, with its 95% t interval above 0 (reproduced) or below the paper's effect on "
                    "this scale (not reproduced: the paper's mean APD-over-CD gain over its Pythia QA datasets as a "
                    "share of its CD-over-expert gain, about a third, times the lower 95% bound of this build's "
                    "CD-over-expert gain)",
                    profiles=PICO_PROFILES,
                    names=(
                        "CD's QA ppl minus APD's on the test questions (nats)",
                        "its standard error",
                        _QA_CD_GAIN,
                        "its standard error",
                    ),
                    clusters=(
                        Clusters("people", "world_ho_ppl_n_people"),
                        Clusters("people", "world_ho_ppl_n_people"),
                    ),
                ),
                E(
                    "qa",
                    (_bucket("head"), _bucket("torso"), _bucket("tail")),
                    is_largest(),
                    "exploratory: the gain (CD ppl - APD ppl) is largest on the easiest questions, head people, the most "
                    "mentioned in pretraining (point estimates per bucket, no correction for three buckets)",
                    kind="context",
                    profiles=PICO_PROFILES,
                    names=("CD's QA ppl minus APD's on head questions", "on torso questions", "on tail questions"),
                ),
                E(
                    "qa",
                    (_bucket("head", "ELM acc"), _bucket("torso", "ELM acc"), _bucket("tail", "ELM acc")),
                    is_largest(),
                    "head questions are also the ones the expert alone answers best",
                    kind="context",
                    profiles=PICO_PROFILES,
                    names=("the expert's accuracy on head questions", "on torso questions", "on tail questions"),
                ),
                E(
                    "qa",
                    ("world_pp_ppl_apd", "world_pp_ppl_cd"),
                    less_than(),
                    "with the paper's protocol (1/T picked on the test questions themselves)",
                    kind="context",
                    profiles=PICO_PROFILES,
                    names=("APD's QA ppl with 1/T picked on the test questions (nats)", "CD's"),
                ),
                # Hub families: the paper's datasets
                E(
                    "qa",
                    ("datasets_ppl_cd_gain", "datasets_ppl_cd_gain_se"),
                    significant(),
                    "positive control: CD's QA ppl, averaged over the datasets run, is lower than the expert's, "
                    "significantly (paired per dataset, held-out 1/T; its 95% normal interval above 0)",
                    kind="precondition",
                    profiles=HUB_PROFILES,
                    names=("the expert's QA ppl minus CD's, mean over the datasets (nats)", "its standard error"),
                    clusters=(Clusters("each dataset's questions, pooled"),),
                ),
                E(
                    "qa",
                    ("datasets_ppl_gain", "datasets_ppl_gain_se", "datasets_ppl_cd_gain", "datasets_ppl_cd_gain_se"),
                    detects(share=paper_qa_share(), base_se=True),
                    "APD's QA ppl, averaged over the datasets run, is lower than CD's: the mean of CD's ppl minus APD's "
                    "(paired per dataset, held-out 1/T), with its 95% normal interval above 0 (reproduced) or below "
                    "the paper's effect on this scale (not reproduced: a third of the lower 95% bound of this build's "
                    "CD-over-expert gain)",
                    profiles=HUB_PROFILES,
                    names=(
                        "CD's QA ppl minus APD's, mean over the datasets (nats)",
                        "its standard error",
                        "the expert's QA ppl minus CD's, mean over the datasets",
                        "its standard error",
                    ),
                    clusters=(
                        Clusters("each dataset's questions, pooled"),
                        Clusters("each dataset's questions, pooled"),
                    ),
                ),
                E(
                    "qa",
                    (_qa("apd"), _qa("cd")),
                    less_than(),
                    "APD's ppl, averaged over the QA datasets run, is lower than CD's (held-out 1/T; point estimates, "
                    "context)",
                    kind="context",
                    profiles=HUB_PROFILES,
                    names=("APD's QA ppl, mean over the datasets (nats)", "CD's"),
                ),
                E(
                    "qa",
                    (
                        _qa("cd", "QASC (Q+Fact)"),
                        _qa("apd", "QASC (Q+Fact)"),
                        _qa("cd", "QASC (Q only)"),
                        _qa("apd", "QASC (Q only)"),
                    ),
                    difference_larger(),
                    "exploratory: the gain (CD ppl - APD ppl) is larger on QASC with the facts (easier) than with the "
                    "question only (point estimates, context)",
                    kind="context",
                    profiles=HUB_PROFILES,
                    names=(
                        "CD's QA ppl on QASC with the facts",
                        "APD's",
                        "CD's QA ppl on QASC with the question only",
                        "APD's",
                    ),
                ),
            ],
        ),
        _claim(
            "C5_on_the_fly_worse",
            [
                _engaged(),
                _control_kl(),
                KNOWN_ANSWER,
                E(
                    "apd",
                    ("kl_fly_gain", "kl_fly_gain_se"),
                    detects(),
                    "APD is closer (KL, nats) to the world's true answer distribution than APD on the fly: the "
                    "on-the-fly KL minus APD's, paired over the test questions, standard error over people, with its "
                    "95% t interval above 0 (reproduced) or below 0 (not reproduced; the paper measures this gain in "
                    "QA perplexity only, so no share of it is carried to KL; 1/T and the on-the-fly weight picked on "
                    "the dev questions)",
                    profiles=PICO_PROFILES,
                    names=("APD on the fly's KL to the truth minus APD's (nats)", "its standard error"),
                    clusters=(Clusters("people", "kl_fly_gain_people"),),
                ),
                E(
                    "apd",
                    ("text_fly_gain", "text_fly_gain_se"),
                    detects(),
                    "on held-out text, APD's -log(p + 0.01) of the next token is lower than APD on the fly's: the "
                    "difference, paired over positions, with its 95% normal interval above 0 (reproduced) or below 0 "
                    "(not reproduced; APD's 1/T and on the fly's weight each the best on these positions)",
                    profiles=HUB_PROFILES,
                    names=(
                        "APD on the fly's -log(p + 0.01) on held-out text minus APD's at its best 1/T there",
                        "its standard error",
                    ),
                    clusters=(Clusters("positions"),),
                ),
                E(
                    "apd",
                    ("text_apdbest", "text_fly"),
                    less_than(),
                    "the same direction on held-out text (-log(p + 0.01) of the next token; APD at the 1/T best on "
                    "these positions themselves, on the fly at its weight chosen on the dev questions, a choice "
                    "that favours APD)",
                    kind="context",
                    profiles=PICO_PROFILES,
                    names=(
                        "APD's -log(p + 0.01) on held-out text at the 1/T best on those positions",
                        "APD on the fly's",
                    ),
                ),
            ],
        ),
        _claim(
            "C6_more_midsize_members_help",
            [
                # tested on the distilled variant's member subsets; the release configuration's own member
                # ablations are context
                _engaged(
                    "ablations",
                    "gate_engaged_distilled",
                    "gate_reason_distilled",
                    "the ablations' distilled variant (the APD chapter's distilled recipe, trained at the "
                    "ablations' budget)",
                ),
                _engaged(
                    "ablations",
                    "gate_engaged_distilled-alm+mid+elm",
                    "gate_reason_distilled-alm+mid+elm",
                    "its ALM + middle member + ELM subset",
                    who="the distilled variant on the ALM, the middle member and the ELM",
                ),
                _engaged(
                    "ablations",
                    "gate_engaged_distilled-no-small",
                    "gate_reason_distilled-no-small",
                    "its subset without the small members",
                    who="the distilled variant without the small members",
                ),
                _control_kl(),
                KNOWN_ANSWER,
                E(
                    "ablations",
                    (_ablation("distilled-alm+mid+elm", "kl_diff"), _ablation("distilled-alm+mid+elm", "kl_diff_se")),
                    detects(),
                    "more mid-size members help: the distilled variant with its targets fitted on the ALM, "
                    "the middle member and the ELM only is farther (KL) from the truth than on every member, with "
                    "the difference's 95% t interval above 0 (paired over questions, standard error over "
                    "people; the paper reports this ablation in a figure only, so an interval holding 0 is "
                    "inconclusive)",
                    names=(
                        "the KL to the truth of the distilled variant on the ALM, the middle member and the ELM "
                        "minus on every member (nats)",
                        "its standard error",
                    ),
                    clusters=(_ablation_people("distilled-alm+mid+elm"),),
                ),
                E(
                    "ablations",
                    (_ablation("distilled-no-small", "kl_diff"), _ablation("distilled-no-small", "kl_diff_se")),
                    detects(),
                    "small members matter: without the small mid-size members the distilled variant is "
                    "farther (KL) from the truth, with the difference's 95% t interval above 0",
                    names=(
                        "the KL to the truth of the distilled variant without the small members minus with them (nats)",
                        "its standard error",
                    ),
                    clusters=(_ablation_people("distilled-no-small"),),
                ),
                E(
                    "ablations",
                    ("midsize_ends_only", "midsize_cd"),
                    less_than(),
                    kind="context",
                    description="APD on the amateur and expert only still beats CD (point estimates; lower KL to the "
                    "truth; the release configuration's ALM + ELM run, read only when it and the reference APD pass "
                    "their gates: the distilled variant's fitter needs three members)",
                    names=("the KL to the truth of APD on the amateur and the expert only (nats)", "CD's"),
                    gated_by=(
                        Gate("gate_engaged_APD", "the ablations' reference APD", "gate_reason_APD"),
                        Gate("gate_engaged_alm+elm", "APD on the amateur and the expert only", "gate_reason_alm+elm"),
                    ),
                ),
                E(
                    "ablations",
                    "gate_engaged_APD",
                    flag(),
                    "the ablations' reference APD (the release configuration) engaged, for its own member ablations",
                    kind="context",
                    reason_key="gate_reason_APD",
                    names=("the ablations' reference APD passes its mechanism gates",),
                ),
                E(
                    "ablations",
                    (_ablation("alm+elm", "kl_diff"), _ablation("alm+elm", "kl_diff_se")),
                    detects(),
                    "the release configuration on the ALM and ELM only is worse than on every member (the paper's "
                    "own ablation)",
                    kind="context",
                    names=(
                        "the KL to the truth of the release configuration on the ALM and the ELM only minus on every "
                        "member (nats)",
                        "its standard error",
                    ),
                    clusters=(_ablation_people("alm+elm"),),
                ),
            ],
        ),
        _claim(
            "C7_probability_space_and_flip",
            [
                _engaged(
                    "ablations",
                    "gate_engaged_APD",
                    "gate_reason_APD",
                    "the ablations' reference APD (the release configuration, at the ablations' budget)",
                ),
                _engaged("ablations", "gate_engaged_logit", "gate_reason_logit", "the APD logit variant"),
                _engaged("ablations", "gate_engaged_no-flip", "gate_reason_no-flip", "the no-flip variant"),
                _control_kl(),
                KNOWN_ANSWER,
                E(
                    "ablations",
                    (_ablation("logit", "kl_diff"), _ablation("logit", "kl_diff_se")),
                    detects(),
                    "APD logit (curves on log-probabilities) is worse than APD: KL to the truth higher, with the "
                    "difference's 95% t interval above 0 (standard error over people; the paper's effect is "
                    "in a figure only)",
                    names=("APD logit's KL to the truth minus APD's (nats)", "its standard error"),
                    clusters=(_ablation_people("logit"),),
                ),
                E(
                    "ablations",
                    (_ablation("no-flip", "kl_diff"), _ablation("no-flip", "kl_diff_se")),
                    detects(),
                    "APD no rev (no flip) is worse than APD: KL to the truth higher, with the difference's 95% "
                    "t interval above 0",
                    names=("APD without the flip's KL to the truth minus APD's (nats)", "its standard error"),
                    clusters=(_ablation_people("no-flip"),),
                ),
            ],
        ),
        _claim(
            "C8_real_apd_complementary",
            [
                _engaged(),
                _control_ne_er(),
                KNOWN_ANSWER,
                *_point(
                    "factuality",
                    ("ne_er_apd_real", "ne_er_apd_k20"),
                    less_than(),
                    "APD + REAL (the paper's T_r = 4) names fewer wrong entities (NE_ER) than APD alone (APD + "
                    "top-p k20 at the first p of Table 1)",
                    ("APD + REAL's NE_ER", "APD + top-p k20's"),
                ),
                *_point(
                    "factuality",
                    ("ne_er_apd_real", "ne_er_elm_real"),
                    less_than(),
                    "and fewer than REAL alone (ELM + REAL at the same T_r)",
                    ("APD + REAL's NE_ER", "the expert + REAL's"),
                ),
                E(
                    "factuality",
                    ("real_matched_gap_world", "real_matched_gap_se_world", "ne_er_cd_gain", "ne_er_cd_gain_se"),
                    detects(share=paper_real_share(), base_se=True),
                    "the trade-off: at matched diversity (APD + top-p k20's curve over p interpolated at the Dist-2 of APD + "
                    "REAL's points over T_r), APD + top-p k20's NE_ER minus APD + REAL's (standard error from resampling "
                    "people, both curves together), with its 95% normal interval above 0 (reproduced) or below the "
                    "paper's effect on this scale (not reproduced: Table 6's 39.2 - 37.5 points as a share of the "
                    "paper's CD-over-expert gain at the same truncation, Table 1's 43.28 - 42.21 at top-p k20, p = 0.8, "
                    "times the lower 95% bound of this build's CD-over-expert NE_ER gain)",
                    profiles=PICO_PROFILES,
                    names=(
                        "APD + top-p k20's NE_ER minus APD + REAL's at matched Dist-2",
                        "its standard error",
                        _NE_ER_CD_GAIN,
                        "its standard error",
                    ),
                    clusters=(Clusters("people, resampled"), Clusters("people", "ne_er_cd_gain_people")),
                ),
                E(
                    "factuality",
                    ("comp_apd_diff", "comp_apd_diff_se"),
                    significant(),
                    "at one setting, REAL's T_r chosen on the dev people: APD + top-p k20's NE_ER minus APD + REAL's "
                    "(world prompts, paired by prompt and seed, standard error over people, its 95% t interval above "
                    "0; one point of the trade-off, context)",
                    kind="context",
                    profiles=PICO_PROFILES,
                    names=("APD + top-p k20's NE_ER minus APD + REAL's at the dev-chosen T_r", "its standard error"),
                    clusters=(Clusters("people", "comp_apd_n_people"),),
                ),
                E(
                    "factuality",
                    ("comp_paper_apd_diff", "comp_paper_apd_diff_se"),
                    significant(),
                    "at the paper's single setting: APD + top-p k20's NE_ER minus APD + REAL's at T_r = 4 (the same "
                    "prompts and seeds; context)",
                    kind="context",
                    profiles=PICO_PROFILES,
                    names=("APD + top-p k20's NE_ER minus APD + REAL's at T_r = 4", "its standard error"),
                    clusters=(Clusters("people", "comp_apd_n_people"),),
                ),
                E(
                    "factuality",
                    ("comp_elm_diff", "comp_elm_diff_se"),
                    detects(),
                    "the gain over REAL alone: ELM + REAL's NE_ER minus APD + REAL's, with its 95% t interval above 0 "
                    "(the paper prints no REAL-alone NE_ER, so only an interval below 0 reads not reproduced)",
                    profiles=PICO_PROFILES,
                    names=("the expert + REAL's NE_ER minus APD + REAL's", "its standard error"),
                    clusters=(Clusters("people", "comp_elm_n_people"),),
                ),
                E(
                    "factuality",
                    ("true_rate_apd_real", "true_rate_apd_k20"),
                    greater_than(),
                    "APD + REAL's share of true claims is higher than APD alone's (on the world, or Entail_R on "
                    "FactualityPrompts under a Hub family; Table 6's Entail_R: 7.0 against 5.3)",
                    kind="context",
                    names=("APD + REAL's share of true claims", "APD + top-p k20's"),
                ),
                E(
                    "factuality",
                    ("dist2_apd_real", "dist2_apd_k20"),
                    less_than(),
                    "diversity: in the paper's Table 6 REAL lowers it, APD + REAL's Dist-2 below APD alone's "
                    "(42.0 against 47.1)",
                    kind="context",
                    names=("APD + REAL's Dist-2", "APD + top-p k20's"),
                ),
            ],
        ),
    ]
    return [_with_release_context(c) for c in claims]
