"""The paper's published numbers as tidy pandas DataFrames, transcribed by hand from paper.tex.

``table1_factuality_prompts`` ... ``table7_story_writing`` (or :func:`table` with 1-7) return one
row per number, with the columns :data:`COLUMNS`: where it is printed (``table``, its LaTeX
``label``, ``family``, ``method`` as printed, ``role`` normalised across families: ``elm``, ``cd``,
``apd``, ``big``, ...), what it measures (``setting``, ``dataset``, ``metric``, ``group``),
``value`` (float; the paper's "NA" is NaN) in ``unit`` (``%``; ``nats``, where QA "ppl" is mean
-log(p + 0.01), never exponentiated; ``fraction``, ``likert_1_5``, ``count``), and ``significant``
(Table 2's daggers, else <NA>). :func:`claim_texts` gives the paper's main claims.
``tests/test_paper.py`` checks every number against paper.tex.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

COLUMNS = [
    "table",
    "label",
    "family",
    "method",
    "role",
    "setting",
    "dataset",
    "metric",
    "group",
    "value",
    "unit",
    "significant",
]

NA = math.nan  # the paper's "NA"

QA_PPL_COLUMNS = [  # (dataset, metric) of Tables 2 and 3, left to right
    ("LAMBADA", "ppl"),
    ("CommonsenseQA", "ppl"),
    ("CommonsenseQA", "acc"),
    ("QASC (Q+Fact)", "ppl"),
    ("QASC (Q+Fact)", "acc"),
    ("QASC (Q only)", "ppl"),
    ("QASC (Q only)", "acc"),
    ("ARC", "ppl"),
    ("ARC", "acc"),
    ("SocialIQA", "ppl"),
    ("SocialIQA", "acc"),
]
MRC_COLUMNS = [("MultiRC", "ppl"), ("SQuAD (Q+P)", "ppl"), ("SQuAD (Q only)", "ppl")]
MRR_DATASETS = [
    "LAMBADA",
    "CommonsenseQA",
    "QASC (Q+Fact)",
    "QASC (Q only)",
    "ARC",
    "SocialIQA",
    "MultiRC",
    "SQuAD (Q+P)",
    "SQuAD (Q only)",
]

_QA_ROLES = {
    "CD": "cd",
    "APD": "apd",
    "APD on the fly": "apd_on_the_fly",
    "APD vs CD": "gap_apd_vs_cd",
    "|D|": "dataset_size",
}
_ELM = {"Pythia": "LLM 6.9B", "OPT": "LLM 6.7B", "Qwen1.5": "LLM 4B"}
_BIG = {"Pythia": "LLM 12B", "OPT": "LLM 13B", "Qwen1.5": "LLM 7B"}


def _qa_role(family: str, method: str) -> str:
    if method == _ELM[family]:
        return "elm"
    if method == _BIG[family]:
        return "big"
    if method == f"APD vs {_ELM[family]}":
        return "gap_apd_vs_elm"
    return _QA_ROLES[method]


def _frame(records: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame.from_records(records)
    for c in COLUMNS:
        if c not in df:
            df[c] = None
    df = df[COLUMNS]
    df["table"] = df["table"].astype(int)
    df["value"] = df["value"].astype(float)
    df["significant"] = df["significant"].astype("boolean")
    return df.reset_index(drop=True)


def _qa_records(table, label, rows, columns, *, unit_for, daggers=frozenset()):
    """rows: {family: [(method, [values...]), ...]} -> records (one per number)."""
    out = []
    for family, fam_rows in rows.items():
        for method, values in fam_rows:
            if len(values) != len(columns):
                raise AssertionError(
                    f"table {table} {family} {method}: {len(values)} values for {len(columns)} columns"
                )
            role = _qa_role(family, method)
            for (dataset, metric), v in zip(columns, values):
                out.append(
                    dict(
                        table=table,
                        label=label,
                        family=family,
                        method=method,
                        role=role,
                        dataset=dataset,
                        metric=metric,
                        value=v,
                        unit="%" if role.startswith("gap_") else unit_for(metric, role),
                        significant=((method, dataset, metric) in daggers) if table == 2 else None,
                    )
                )
    return out


def _qa_unit(metric: str, role: str) -> str:
    return {"ppl": "nats", "acc": "fraction", "MRR": "fraction", "|D|": "count"}[metric]


# ----------------------------------------------------------------------------------------------
# Table 1


def table1_factuality_prompts() -> pd.DataFrame:
    """Table 1 (``tb:gen_both``): FactualityPrompts with top-p k20 sampling; percentages.

    The first row of each family has no method name in the paper: it is the ELM alone (role
    ``elm``, method ``LLM``) at p=0.8 (Pythia 6.9B) or p=1 (OPT 6.7B). CD's T is not printed here
    (the text picks CD's best T from {1, 1.33, 2, 4, 10}); APD uses T=1.
    """
    metrics = [("NE_ER", "Factuality"), ("Entail_R", "Factuality"), ("Dist-2", "Diversity"), ("Rep", "Diversity")]
    rows = {
        "Pythia": [
            ("LLM", "p=0.8", [43.28, 5.40, 29.73, 1.26]),
            ("CD", "p=0.8", [42.21, 3.54, 48.57, 0.44]),
            ("CD", "p=0.6", [40.93, 6.02, 39.58, 1.48]),
            ("APD", "p=0.8", [41.13, 4.47, 47.44, 1.46]),
            ("APD", "p=0.6", [40.00, 6.58, 38.81, 2.72]),
        ],
        "OPT": [
            ("LLM", "p=1", [34.33, 10.70, 31.29, 2.93]),
            ("CD", "p=0.8", [38.20, 7.56, 44.13, 0.78]),
            ("CD", "p=0.6", [35.96, 11.66, 36.12, 2.49]),
            ("APD", "p=0.8", [34.06, 8.88, 45.72, 3.39]),
            ("APD", "p=0.6", [32.29, 13.38, 36.99, 5.15]),
        ],
    }
    records = []
    for family, fam_rows in rows.items():
        for method, p, values in fam_rows:
            for (metric, group), v in zip(metrics, values):
                records.append(
                    dict(
                        table=1,
                        label="tb:gen_both",
                        family=family,
                        method=method,
                        role={"LLM": "elm", "CD": "cd", "APD": "apd"}[method],
                        setting=f"top-p k20, {p}",
                        dataset="FactualityPrompts",
                        metric=metric,
                        group=group,
                        value=v,
                        unit="%",
                    )
                )
    return _frame(records)


# ----------------------------------------------------------------------------------------------
# Tables 2 and 3


def table2_qa_pythia() -> pd.DataFrame:
    """Table 2 (``tb:QA_ppl_pythia``): one-shot QA, Pythia 6.9B as ELM, ppl (nats, lower is
    better) and accuracy; gap rows ``APD vs CD`` and ``APD vs LLM 6.9B`` in percent (NaN = "NA",
    LLM 12B worse than LLM 6.9B). ``significant`` marks the paper's daggers (APD vs CD, p<0.05)."""
    rows = {
        "Pythia": [
            ("LLM 6.9B", [2.264, 8.380, 0.658, 5.702, 0.856, 8.127, 0.621, 4.433, 0.692, 8.441, 0.662]),
            ("CD", [2.237, 6.176, 0.671, 5.693, 0.862, 7.741, 0.633, 4.375, 0.699, 7.595, 0.688]),
            ("APD", [2.132, 5.882, 0.685, 5.020, 0.874, 7.766, 0.632, 4.310, 0.698, 7.378, 0.691]),
            ("APD on the fly", [2.281, 8.245, 0.660, 5.725, 0.866, 8.106, 0.620, 4.464, 0.694, 8.299, 0.665]),
            ("LLM 12B", [2.188, 8.140, 0.660, 4.783, 0.845, 7.612, 0.630, 4.058, 0.719, 7.898, 0.691]),
            ("APD vs CD", [138.52, 122.34, 650.00, 73.30, NA, -4.86, -12.50, 17.34, -4.17, 39.92, 11.54]),
            ("APD vs LLM 6.9B", [173.68, 1039.11, 1250.00, 74.26, NA, 70.06, 125.00, 32.87, 20.83, 195.88, 100.00]),
        ]
    }
    daggers = frozenset({("APD", "LAMBADA", "ppl"), ("APD", "CommonsenseQA", "ppl"), ("APD", "QASC (Q+Fact)", "ppl")})
    return _frame(_qa_records(2, "tb:QA_ppl_pythia", rows, QA_PPL_COLUMNS, unit_for=_qa_unit, daggers=daggers))


def table3_qa_opt_qwen() -> pd.DataFrame:
    """Table 3 (``tb:QA_ppl_opt``): as Table 2 for OPT (ELM 6.7B, big 13B) and Qwen1.5 (ELM 4B,
    big 7B); no gap rows and no significance marks."""
    rows = {
        "OPT": [
            ("LLM 6.7B", [2.388, 9.117, 0.664, 4.994, 0.851, 8.094, 0.604, 4.739, 0.660, 7.259, 0.665]),
            ("CD", [2.412, 7.227, 0.707, 5.039, 0.856, 7.925, 0.622, 4.736, 0.679, 6.673, 0.712]),
            ("APD", [2.396, 7.335, 0.695, 4.985, 0.860, 7.911, 0.622, 4.701, 0.676, 6.691, 0.690]),
            ("APD on the fly", [2.414, 8.846, 0.664, 5.040, 0.860, 8.090, 0.630, 4.765, 0.678, 7.248, 0.705]),
            ("LLM 13B", [2.295, 9.308, 0.660, 6.458, 0.822, 8.319, 0.634, 4.757, 0.678, 9.139, 0.636]),
        ],
        "Qwen1.5": [
            ("LLM 4B", [2.430, 5.797, 0.671, 3.618, 0.888, 6.613, 0.672, 4.210, 0.716, 7.078, 0.590]),
            ("CD", [2.474, 5.890, 0.675, 3.648, 0.888, 6.721, 0.674, 4.279, 0.726, 7.150, 0.636]),
            ("APD", [2.445, 5.535, 0.674, 3.596, 0.886, 6.571, 0.686, 4.237, 0.720, 7.059, 0.643]),
            ("APD on the fly", [2.459, 5.840, 0.676, 3.657, 0.889, 6.670, 0.671, 4.258, 0.725, 7.131, 0.613]),
            ("LLM 7B", [2.186, 5.899, 0.696, 4.083, 0.911, 7.306, 0.698, 3.977, 0.778, 6.776, 0.645]),
        ],
    }
    return _frame(_qa_records(3, "tb:QA_ppl_opt", rows, QA_PPL_COLUMNS, unit_for=_qa_unit))


# ----------------------------------------------------------------------------------------------
# Tables 4 and 5


def table4_mrc() -> pd.DataFrame:
    """Table 4 (``tb:MRC_both``): ppl (nats) on MultiRC and SQuAD (with passage Q+P, question
    only Q) for Pythia, OPT and Qwen1.5."""
    rows = {
        "Pythia": [
            ("LLM 6.9B", [3.620, 2.360, 5.426]),
            ("CD", [3.377, 2.246, 5.029]),
            ("APD", [3.349, 2.231, 5.018]),
            ("APD on the fly", [3.623, 2.381, 5.432]),
            ("LLM 12B", [3.336, 2.289, 4.978]),
        ],
        "OPT": [
            ("LLM 6.7B", [3.900, 2.450, 5.654]),
            ("CD", [3.775, 2.381, 5.403]),
            ("APD", [3.840, 2.391, 5.437]),
            ("APD on the fly", [3.908, 2.469, 5.657]),
            ("LLM 13B", [3.741, 2.310, 5.268]),
        ],
        "Qwen1.5": [
            ("LLM 4B", [4.023, 1.853, 5.038]),
            ("CD", [3.985, 1.841, 5.152]),
            ("APD", [4.057, 1.847, 5.098]),
            ("APD on the fly", [4.033, 1.872, 5.106]),
            ("LLM 7B", [3.171, 1.557, 3.242]),
        ],
    }
    return _frame(_qa_records(4, "tb:MRC_both", rows, MRC_COLUMNS, unit_for=_qa_unit))


def table5_mrr() -> pd.DataFrame:
    """Table 5 (``tb:QA_mrr_both``): MRR on nine QA settings for Pythia, OPT and Qwen1.5, plus
    the ``|D|`` rows (metric ``|D|``, role ``dataset_size``): questions left after keeping only
    answers whose tokens are all in the ELM's top 20."""
    rows = {
        "Pythia": [
            ("LLM 6.9B", [0.841, 0.483, 0.564, 0.491, 0.660, 0.475, 0.696, 0.820, 0.591]),
            ("CD", [0.861, 0.572, 0.564, 0.502, 0.671, 0.512, 0.715, 0.836, 0.611]),
            ("APD", [0.867, 0.582, 0.612, 0.501, 0.673, 0.518, 0.715, 0.835, 0.611]),
            ("APD on the fly", [0.845, 0.496, 0.564, 0.494, 0.660, 0.484, 0.700, 0.822, 0.594]),
            ("LLM 12B", [0.853, 0.494, 0.629, 0.514, 0.684, 0.493, 0.708, 0.825, 0.618]),
            ("|D|", [5000, 3343, 6040, 2181, 1611, 4783, 3798, 28890, 10491]),
        ],
        "OPT": [
            ("LLM 6.7B", [0.831, 0.451, 0.601, 0.490, 0.644, 0.517, 0.682, 0.816, 0.575]),
            ("CD", [0.833, 0.534, 0.599, 0.499, 0.648, 0.559, 0.688, 0.831, 0.594]),
            ("APD", [0.831, 0.521, 0.605, 0.498, 0.651, 0.549, 0.685, 0.824, 0.588]),
            ("APD on the fly", [0.832, 0.470, 0.601, 0.494, 0.648, 0.527, 0.685, 0.819, 0.582]),
            ("LLM 13B", [0.841, 0.443, 0.525, 0.476, 0.636, 0.432, 0.692, 0.826, 0.601]),
            ("|D|", [4985, 2380, 5827, 1942, 1477, 3843, 3401, 28330, 8763]),
        ],
        "Qwen1.5": [
            ("LLM 4B", [0.825, 0.591, 0.705, 0.549, 0.655, 0.533, 0.685, 0.860, 0.611]),
            ("CD", [0.825, 0.590, 0.703, 0.546, 0.652, 0.530, 0.685, 0.866, 0.606]),
            ("APD", [0.832, 0.614, 0.709, 0.553, 0.657, 0.534, 0.682, 0.862, 0.608]),
            ("APD on the fly", [0.826, 0.591, 0.705, 0.549, 0.656, 0.532, 0.684, 0.860, 0.610]),
            ("LLM 7B", [0.851, 0.586, 0.681, 0.520, 0.678, 0.546, 0.742, 0.909, 0.726]),
            ("|D|", [4925, 5079, 6718, 2676, 1856, 8290, 5071, 31247, 11690]),
        ],
    }
    records = []
    for family, fam_rows in rows.items():
        for method, values in fam_rows:
            metric = "|D|" if method == "|D|" else "MRR"
            records += _qa_records(
                5,
                "tb:QA_mrr_both",
                {family: [(method, values)]},
                [(d, metric) for d in MRR_DATASETS],
                unit_for=_qa_unit,
            )
    return _frame(records)


# ----------------------------------------------------------------------------------------------
# Tables 6 and 7


def table6_human_eval() -> pd.DataFrame:
    """Table 6 (``tb:human_abs_scores``), the human evaluation on FactualityPrompts: MTurk Likert
    means (1-5; 150 continuations, 2 workers each) and automatic metrics in % (28k
    continuations). The table does not name the family; we record Pythia (CD's T=2 is Pythia's
    best, and the text compares with Pythia's top-p)."""
    metrics = [
        ("Factuality", "Human", "likert_1_5"),
        ("Informativeness", "Human", "likert_1_5"),
        ("Fluency", "Human", "likert_1_5"),
        ("Overall", "Human", "likert_1_5"),
        ("Dist-2", "Automatic", "%"),
        ("Rep", "Automatic", "%"),
        ("NE_ER", "Automatic", "%"),
        ("Entail_R", "Automatic", "%"),
    ]
    rows = [
        ("LLM", "top-p, p=1.0", [1.82, 3.67, 3.88, 2.41, 40.0, 0.2, 47.9, 3.2]),
        ("CD", "T=2, top-p k20, p=0.8", [2.00, 4.05, 4.12, 2.58, 48.3, 0.5, 40.3, 4.2]),
        ("APD", "top-p k20, p=0.8", [2.07, 3.97, 4.11, 2.58, 47.1, 1.6, 39.2, 5.3]),
        ("CD", "T=2, REAL, T_r=4.0", [2.16, 4.04, 4.18, 2.62, 43.3, 0.5, 39.3, 5.9]),
        ("APD", "REAL, T_r=4.0", [2.31, 4.02, 4.14, 2.73, 42.0, 1.6, 37.5, 7.0]),
    ]
    records = []
    for method, setting, values in rows:
        for (metric, group, unit), v in zip(metrics, values):
            records.append(
                dict(
                    table=6,
                    label="tb:human_abs_scores",
                    family="Pythia",
                    method=method,
                    role={"LLM": "elm", "CD": "cd", "APD": "apd"}[method],
                    setting=setting,
                    dataset="FactualityPrompts",
                    metric=metric,
                    group=group,
                    value=v,
                    unit=unit,
                )
            )
    return _frame(records)


def table7_story_writing() -> pd.DataFrame:
    """Table 7 (``tb:creative_writing``): ROC story completion with top-p k20 (p=0.8). GPT-3.5
    Turbo win rates against top-p (p=0.95) sampling (fractions; 500 continuations) and automatic
    metrics (8k continuations): Dist-2, MAUVE and Sim as fractions; ROUGE-2 (F1) as printed,
    apparently in % (the paper gives no unit)."""
    metrics = [
        ("Fluency", "GPT3.5 Turbo", "fraction"),
        ("Coherency", "GPT3.5 Turbo", "fraction"),
        ("Likability", "GPT3.5 Turbo", "fraction"),
        ("Overall", "GPT3.5 Turbo", "fraction"),
        ("Dist-2", "Automatic", "fraction"),
        ("MAUVE", "Automatic", "fraction"),
        ("ROUGE-2", "Automatic", "%"),
        ("Sim", "Automatic", "fraction"),
    ]
    rows = {
        "Pythia": [
            ("CD", "T=2, top-p k20, p=0.8", [0.563, 0.575, 0.575, 0.573, 0.364, 0.048, 2.595, 0.513]),
            ("APD", "top-p k20, p=0.8", [0.526, 0.546, 0.548, 0.546, 0.384, 0.044, 2.634, 0.510]),
        ],
        "OPT": [
            ("CD", "T=4, top-p k20, p=0.8", [0.520, 0.522, 0.524, 0.526, 0.301, 0.485, 3.115, 0.526]),
            ("APD", "top-p k20, p=0.8", [0.546, 0.538, 0.540, 0.546, 0.337, 0.442, 2.919, 0.526]),
        ],
    }
    records = []
    for family, fam_rows in rows.items():
        for method, setting, values in fam_rows:
            for (metric, group, unit), v in zip(metrics, values):
                records.append(
                    dict(
                        table=7,
                        label="tb:creative_writing",
                        family=family,
                        method=method,
                        role={"CD": "cd", "APD": "apd"}[method],
                        setting=setting,
                        dataset="ROCStories",
                        metric=metric,
                        group=group,
                        value=v,
                        unit=unit,
                    )
                )
    return _frame(records)


TABLES = {
    1: table1_factuality_prompts,
    2: table2_qa_pythia,
    3: table3_qa_opt_qwen,
    4: table4_mrc,
    5: table5_mrr,
    6: table6_human_eval,
    7: table7_story_writing,
}


def table(number: int) -> pd.DataFrame:
    """Table ``number`` (1-7) of the paper as a tidy DataFrame."""
    if number not in TABLES:
        raise ValueError(f"the paper has tables 1-7, got {number!r}.")
    return TABLES[number]()


def _qa_wide(family: str = "Pythia") -> pd.DataFrame:
    df = pd.concat([table(t) for t in (2, 3, 4, 5)])
    d = df[(df["family"] == family) & (df["metric"] == "ppl")]
    return d.pivot_table(index="dataset", columns="role", values="value")


def qa_gain(family: str = "Pythia") -> float:
    """The paper's QA effect: CD's ppl minus APD's, mean over the datasets of Tables 2-5 (nats)."""
    wide = _qa_wide(family)
    return float((wide["cd"] - wide["apd"]).mean())


def qa_share(family: str = "Pythia") -> float:
    """The paper's APD-over-CD QA gain as a share of its CD-over-expert gain (means over the datasets
    of Tables 2-5, ppl): about a third for Pythia (0.149 / 0.476 nats). Times this build's CD-over-
    expert gain, it is the paper's effect on this testbed's scale."""
    wide = _qa_wide(family)
    return float((wide["cd"] - wide["apd"]).mean() / (wide["elm"] - wide["cd"]).mean())


def _table1_ne_er(family: str = "Pythia", setting: str = "top-p k20, p=0.8") -> pd.Series:
    t = table(1)
    return t[(t["family"] == family) & (t["setting"] == setting) & (t["metric"] == "NE_ER")].set_index("role")["value"]


def ne_er_gain(family: str = "Pythia", setting: str = "top-p k20, p=0.8") -> float:
    """The paper's factuality effect: CD's NE_ER minus APD's in Table 1 (a fraction, not points)."""
    t = _table1_ne_er(family, setting)
    return float(t["cd"] - t["apd"]) / 100.0


def ne_er_share(family: str = "Pythia", setting: str = "top-p k20, p=0.8") -> float:
    """The paper's APD-over-CD NE_ER gain as a share of its CD-over-expert gain (Table 1, Pythia,
    top-p k20, p = 0.8: 1.08 / 1.07 points)."""
    t = _table1_ne_er(family, setting)
    return float((t["cd"] - t["apd"]) / (t["elm"] - t["cd"]))


def real_gain(setting: str = "top-p k20, p=0.8", real: str = "REAL, T_r=4.0") -> float:
    """The paper's complementarity effect: APD + top-p k20's NE_ER minus APD + REAL's in Table 6 (a
    fraction, not points; 39.2 - 37.5 = 1.7 points)."""
    t = table(6)
    t = t[(t["role"] == "apd") & (t["metric"] == "NE_ER")].set_index("setting")["value"]
    return float(t[setting] - t[real]) / 100.0


def real_share(family: str = "Pythia", setting: str = "top-p k20, p=0.8") -> float:
    """The paper's complementarity effect as a share of its CD-over-expert NE_ER gain at the same
    truncation: Table 6's APD + top-p k20 minus APD + REAL (39.2 - 37.5 = 1.7 points) over Table 1's
    expert minus CD at top-p k20, p = 0.8 (43.28 - 42.21 = 1.07 points). Table 6's own expert row
    samples with top-p 1.0, so its 47.9 - 40.3 would mix in the effect of truncation."""
    t = _table1_ne_er(family, setting)
    return real_gain() * 100.0 / float(t["elm"] - t["cd"])


def claim_texts() -> list[dict]:
    """The paper's main claims, each a dict with ``id``, ``claim`` (one sentence) and ``evidence``
    (where the paper supports it). The book checks each against our own results."""
    return [
        dict(
            id="C1a_cd_identity",
            claim="CD's logits are an extrapolation of the amateur's and the expert's to a huge "
            "hypothetical LM: L_CD = (1 - 1/T) L_HLM with s_HLM = (s_ELM^T / s_ALM)^(1/(T-1)) when "
            "logits are linear in log size (the identity of Theorem 1).",
            evidence="Theorem 1 (Section 2.1), Figure 2",
        ),
        dict(
            id="C1b_cd_hlm_closer",
            claim="So CD works because it extrapolates: where a family's logits are close to linear in "
            "log size, CD's implied hypothetical LM is closer to a real larger member than the expert is "
            "(the theorem's consequence for a real family).",
            evidence="Theorem 1 and its discussion (Section 2.1), Figure 2",
        ),
        dict(
            id="C2_obvious_blindness",
            claim="CD suffers from obvious blindness: when the amateur already gives the obvious "
            "answer a high probability, CD can rank it below a rarer, less factual answer; "
            "APD keeps the obvious answer first.",
            evidence="Figure 1, Section 2.2 ('When could CD fail?'), Appendix visualisation",
        ),
        dict(
            id="C3_apd_more_factual",
            claim="APD is more factual than CD (lower NE_ER, higher Entail_R, better human "
            "factuality) at similar diversity (Dist-2).",
            evidence="Table 1, Figure 3 (a, b, g, h), Table 6",
        ),
        dict(
            id="C4_apd_better_qa_easy",
            claim="APD gives better QA perplexity than CD, with the largest gains on easier "
            "questions (LAMBADA, CommonsenseQA, QASC with facts), sometimes beating the "
            "2x larger LLM.",
            evidence="Table 2 (APD vs CD row), Tables 3-5",
        ),
        dict(
            id="C5_on_the_fly_worse",
            claim="APD on the fly (fitting the curves at inference, no ALM' fine-tuning) is worse "
            "than APD: fine-tuning ALM' is more efficient and more effective.",
            evidence="Tables 2-5 (APD on the fly rows)",
        ),
        dict(
            id="C6_more_midsize_members_help",
            claim="APD improves as the family provides more mid-size members between the amateur "
            "and the expert; small members matter most, yet APD with only 70M and 6.9B "
            "still beats CD.",
            evidence="Figure 3e (mid-size LLM ablation)",
        ),
        dict(
            id="C7_probability_space_and_flip",
            claim="Modelling the exponential decay in probability space beats modelling it in "
            "logit space (APD logit) and beats dropping the flip (APD no rev).",
            evidence="Figure 3f (other ablation)",
        ),
        dict(
            id="C8_real_apd_complementary",
            claim="REAL sampling and APD are complementary: APD + REAL is more factual than APD "
            "alone (top-p k20) and than REAL sampling alone.",
            evidence="Section 6 ('our experiment shows that they are complementary'), Appendix "
            "('APD + REAL achieves the best results'), Table 6, Figure 4 (b)",
        ),
    ]


@dataclass(frozen=True)
class PaperItem:
    """A table or figure of the paper: where this book makes its counterpart (``stem``, and the
    ``artefacts``: figure or table names under results/<profile>/, any of which counts), or
    ``never`` = why it cannot. ``needs``: what producing it takes; ``caveat``: how ours differs;
    ``never_part``: the part of it no build can regenerate, when the rest can be (Table 6's human
    columns beside its automatic ones); ``plots``: ``(artefact, what it plots)`` pairs, said only of
    the artefacts a build drew; ``lacks``: what the paper's figure has that ours do not (a split of
    its prompts, a panel), which makes a drawn figure a counterpart, not a regeneration
    (:func:`apd.report.coverage.figure_status`)."""

    label: str
    name: str
    shows: str
    stem: str | None = None
    artefacts: tuple[str, ...] = ()
    needs: str = ""
    never: str = ""
    caveat: str = ""
    never_part: str = ""
    plots: tuple[tuple[str, str], ...] = ()
    lacks: str = ""


PAPER_TABLES = [
    PaperItem(
        "tb:gen_both",
        "Table 1",
        "FactualityPrompts, top-p k20: NE_ER, Entail_R, Dist-2, Rep",
        "factuality",
        needs="the paper's rows need FactualityPrompts, its Wikipedia evidence and "
        "Pythia-6.9B on a GPU (profile pythia); the pico profiles score generations on the "
        "synthetic world instead",
    ),
    PaperItem(
        "tb:QA_ppl_pythia",
        "Table 2",
        "one-shot QA ppl and accuracy, Pythia",
        "qa",
        needs="the paper's rows need Pythia 70M-12B weights and a GPU (profile pythia); the "
        "pico profiles ask the world's questions instead",
    ),
    PaperItem(
        "tb:QA_ppl_opt",
        "Table 3",
        "one-shot QA ppl and accuracy, OPT and Qwen1.5",
        "qa",
        needs="the paper's rows need OPT 125M-13B and Qwen1.5 0.5B-7B weights and a GPU "
        "(the pythia profile runs Pythia only)",
    ),
    PaperItem(
        "tb:MRC_both",
        "Table 4",
        "reading comprehension ppl (MultiRC, SQuAD)",
        "qa",
        needs="the paper's rows need Pythia, OPT and Qwen1.5 weights and a GPU (profile pythia for Pythia's)",
    ),
    PaperItem(
        "tb:QA_mrr_both",
        "Table 5",
        "MRR on nine QA settings",
        "qa",
        needs="the paper's rows need Pythia, OPT and Qwen1.5 weights and a GPU (profile pythia for Pythia's)",
    ),
    PaperItem(
        "tb:human_abs_scores",
        "Table 6",
        "human evaluation (MTurk) of FactualityPrompts, with "
        "automatic metrics, for top-p, CD and APD with top-p k20 and with REAL sampling",
        "factuality",
        needs="its automatic columns need the factuality chapter's REAL settings (REAL's THF model, "
        "real_T_r_grid not empty); the paper's rows need FactualityPrompts and Pythia-6.9B on a GPU "
        "(profile pythia)",
        never_part="its human columns (Likert scores from MTurk workers, 150 prompts, 2 workers each) "
        "cannot be regenerated by any build",
    ),
    PaperItem(
        "tb:creative_writing",
        "Table 7",
        "ROC story writing, GPT-3.5 Turbo win rates",
        never="its win rates are judged by GPT-3.5 Turbo (a network service) and its automatic "
        "metrics need ROCStories, MAUVE and sBERT, none of which this offline build has",
    ),
]


PAPER_FIGURES = [
    PaperItem(
        "fig:first_fig",
        "Figure 1",
        "obvious blindness: CD ranks a rare answer above the obvious one",
        "curves",
        ("curves_obvious_blindness_example",),
        needs="an obviously blind question: the chapter draws one when it finds one",
    ),
    PaperItem("fig:theory", "Figure 2", "the proof picture of Theorem 1", "theorem1", ("theorem1_proof_picture",)),
    PaperItem(
        "fig:APD", "Figure 3", "diagram of fine-tuning ALM'", never="a schematic drawing with no data behind it"
    ),
    PaperItem(
        "fig:comp_div_NE_gen",
        "Figure 4 (a, c)",
        "FactualityPrompts: NE_ER against Dist-2, APD vs CD vs top-p, CD's temperature",
        "factuality",
        ("factuality_world_tradeoffs", "factuality_fp_tradeoffs"),
        needs="the paper's own prompts need Pythia-6.9B on a GPU (profile pythia)",
        plots=(
            ("factuality_world_tradeoffs", "NE_ER against Dist-2 on the world's prompts"),
            ("factuality_fp_tradeoffs", "NE_ER against Dist-2 on FactualityPrompts"),
        ),
    ),
    PaperItem(
        "fig:div_ne_cd",
        "Figure 4 (b, h)",
        "with REAL sampling: NE_ER against Dist-2 for the ELM, CD and APD thresholded by REAL",
        "factuality",
        ("factuality_world_real", "factuality_fp_real"),
        needs="REAL's THF model (the REAL chapter's apd.thf_model) and REAL settings in the factuality "
        "sweep (real_T_r_grid); the paper's own prompts need Pythia-6.9B on a GPU (profile pythia)",
        plots=(
            ("factuality_world_real", "NE_ER and the share of true claims against Dist-2 on the world's prompts"),
            ("factuality_fp_real", "NE_ER and Entail_R against Dist-2 on FactualityPrompts"),
        ),
        lacks="ours has no panel (h), which is OPT's and needs OPT weights",
    ),
    PaperItem(
        "fig:div_ne_term_ablation",
        "Figure 4 (d, e, f)",
        "loss-term, mid-size-member and other ablations (APD logit, APD no rev, half data)",
        "ablations",
        ("ablations_loss", "ablations_members", "ablations_other"),
        needs="the ablations it runs (this book measures them by KL to the world's truth, not by FactualityPrompts)",
    ),
    PaperItem(
        "fig:div_ne_opt",
        "Figure 4 (g, i)",
        "the same with OPT",
        never="needs OPT 125M-6.7B weights on a GPU; the book's profiles run pico and Pythia only",
    ),
    PaperItem(
        "fig:vis",
        "Figure 5 (CD)",
        "probability curves across sizes with CD's predictions",
        "curves",
        ("curves_prompt",),
    ),
    PaperItem(
        "fig:vis",
        "Figure 5 (APD)",
        "probability curves across sizes with APD's predicted curve and asymptote",
        "apd",
        ("apd_fitted_curves",),
        needs="a question (or position) whose gold token is in the expert's top 20",
    ),
    PaperItem(
        "fig:func_ablation",
        "Figure 6 (e)",
        "decay functions: exponential, logistic, fractional polynomials",
        "ablations",
        ("ablations_decay",),
        needs="the decay ablations (logistic, poly1, poly3)",
    ),
    PaperItem(
        "fig:comp_agg_gen",
        "Figure 6 (other panels)",
        "REAL's aggregate factuality against aggregate diversity for every method, DoLa, OPT and Qwen1.5",
        never="this book plots NE_ER and the true-claim rate, not REAL's aggregate metrics; the "
        "OPT and Qwen1.5 panels need their weights on a GPU",
    ),
    PaperItem(
        "fig:comp_ne_dist_factual",
        "Figures 7-8",
        "NE_ER against Dist-2 on factual and on nonfactual prompts",
        "factuality",
        ("factuality_world_tradeoffs", "factuality_fp_tradeoffs"),
        needs="the paper's own prompts need Pythia-6.9B on a GPU (profile pythia)",
        plots=(
            (
                "factuality_world_tradeoffs",
                "NE_ER against Dist-2 on the world's prompts, which have no nonfactual kind",
            ),
            ("factuality_fp_tradeoffs", "NE_ER against Dist-2 on FactualityPrompts, both kinds pooled"),
        ),
        lacks="ours does not split factual from nonfactual prompts, and is the figure drawn for Figure 4 (a, c)",
    ),
    PaperItem(
        "fig:comp_ent_rep_factual",
        "Figures 9-10",
        "Entail_R against Rep on factual and on nonfactual prompts",
        "factuality",
        ("factuality_world_tradeoffs_true", "factuality_fp_tradeoffs_true"),
        needs="the paper's own prompts need Pythia-6.9B on a GPU (profile pythia)",
        plots=(
            (
                "factuality_world_tradeoffs_true",
                "the share of true claims against Rep on the world's prompts, which have no nonfactual kind",
            ),
            ("factuality_fp_tradeoffs_true", "Entail_R against Rep on FactualityPrompts, both kinds pooled"),
        ),
        lacks="ours does not split factual from nonfactual prompts",
    ),
]
