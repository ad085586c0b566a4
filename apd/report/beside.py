"""The paper's table rows beside the rows this book regenerated.

A chapter that regenerates rows of the paper's Table N saves a tidy CSV with ``paper_table``,
``role`` (elm, cd, apd, apd_on_the_fly, big), ``dataset``, ``metric`` and ``value``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from apd.report import paper as published
from apd.report.paper import PAPER_TABLES, PaperItem
from apd.report.results import chapter_ran, last_run_outputs, results_dir

REGENERATED_COLUMNS = ("paper_table", "role", "dataset", "metric", "value")


def _run_parameters(profile: str, stem: str) -> dict:
    try:
        return json.loads((results_dir(profile) / "runs" / f"{stem}.json").read_text()).get("parameters") or {}
    except (OSError, ValueError):
        return {}


_QA_ROLES = {"elm": "elm", "cd": "cd", "apd": "apd", "ref": "big"}  # apd.evaluation.qa_scoring's method names


_MRC = {"MultiRC", "SQuAD (Q+P)", "SQuAD (Q only)"}


def _qa_table_number(dataset: str, metric: str, family: str) -> int:
    if metric == "MRR":
        return 5
    if dataset in _MRC:
        return 4
    return 3 if str(family).lower() in ("opt", "qwen1.5", "qwen") else 2


def qa_summary_rows(df: pd.DataFrame, family: str, world: bool = False) -> pd.DataFrame:
    """The QA chapter's long summary (``apd.evaluation.qa_scoring.qa_summary``: dataset, protocol, metric,
    method, group, value, n) as regenerated rows of Tables 2-5: the paper's protocol, roles of
    :mod:`apd.report.paper`, ``|D|`` from the ELM's MRR counts. ``world``: the pico world's
    questions, one dataset per frequency bucket ("world QA (head)", ...), as counterpart rows."""
    need = {"dataset", "protocol", "metric", "method", "group", "value"}
    cols = [*REGENERATED_COLUMNS, "family", "setting"]
    if not need <= set(df.columns):
        return pd.DataFrame(columns=cols)
    d = df[(df["protocol"] == "paper") & df["method"].isin(list(_QA_ROLES))]
    if not world:
        d = d[d["group"] == "all"]
    dataset = ("world QA (" + d["group"].astype(str) + ")") if world else d["dataset"].astype(str)
    out = pd.DataFrame(
        {"role": d["method"].map(_QA_ROLES), "dataset": dataset, "metric": d["metric"], "value": d["value"]}
    )
    if "n" in d:
        size = d[
            (d["method"] == "elm") & (d["metric"] == "MRR") & (d["n"] > 0)
        ]  # a dataset with no scored question has no size row
        out = pd.concat(
            [
                out,
                pd.DataFrame(
                    {"role": "dataset_size", "dataset": dataset[size.index], "metric": "|D|", "value": size["n"]}
                ),
            ]
        )
    out["paper_table"] = [
        _qa_table_number(ds, m if m != "|D|" else "MRR", family) for ds, m in zip(out["dataset"], out["metric"])
    ]
    out["family"], out["setting"] = family, None
    return out[cols].reset_index(drop=True)


def qa_gap_rows(df: pd.DataFrame, family: str) -> pd.DataFrame:
    """The QA chapter's gap rows (``apd.evaluation.qa_scoring.gap_rows``, fractions) as Table 2's
    ``APD vs CD`` / ``APD vs LLM`` rows in percent (the paper's unit); Table 2 only (Pythia)."""
    cols = [*REGENERATED_COLUMNS, "family", "setting"]
    need = {"dataset", "protocol", "metric", "group", "row", "value"}
    if not need <= set(df.columns) or str(family).lower() != "pythia":
        return pd.DataFrame(columns=cols)
    d = df[(df["protocol"] == "paper") & (df["group"] == "all") & df["metric"].isin(["ppl", "acc"])]
    d = d[d["row"].isin(["APD vs CD", "APD vs LLM"])]
    out = pd.DataFrame(
        {
            "paper_table": 2,
            "role": d["row"].map({"APD vs CD": "gap_apd_vs_cd", "APD vs LLM": "gap_apd_vs_elm"}),
            "dataset": d["dataset"],
            "metric": d["metric"],
            "value": 100.0 * d["value"],
            "family": family,
            "setting": None,
        }
    )
    return out[cols].reset_index(drop=True)


#: tables of other chapters that do not follow the convention, and how to read them as rows of
#: the paper's tables: table name -> f(frame, family) -> regenerated rows
ADAPTERS = {
    "qa_datasets_summary": lambda df, fam: qa_summary_rows(df, fam),
    "qa_world_summary": lambda df, fam: qa_summary_rows(df, fam, world=True),
    "qa_datasets_gaps": qa_gap_rows,
}


def regenerated_rows(profile: str) -> pd.DataFrame:
    """Every row of every CSV that a chapter's last run under ``profile`` wrote (its run record
    lists it) and that follows the regenerated-table convention (columns ``paper_table, role,
    dataset, metric, value``; see the module docstring), plus the rows :data:`ADAPTERS` read
    from known tables of other layouts; a ``source`` column names the CSV."""
    frames = []
    d = results_dir(profile)
    runs = sorted((d / "runs").glob("*.json")) if (d / "runs").is_dir() else []
    for record in runs:
        family = _run_parameters(profile, record.stem).get("family", "")
        for name in sorted(last_run_outputs(profile, record.stem)["tables"]):
            path = d / "tables" / f"{name}.csv"
            try:
                df = pd.read_csv(path)
            except (OSError, pd.errors.EmptyDataError, pd.errors.ParserError):
                continue
            if set(REGENERATED_COLUMNS) <= set(df.columns):
                frames.append(df.assign(source=name))
            elif name in ADAPTERS:
                rows = ADAPTERS[name](df, family)
                if len(rows):
                    frames.append(rows.assign(source=name))
    cols = [*REGENERATED_COLUMNS, "family", "setting", "source"]
    if not frames:
        return pd.DataFrame(columns=cols)
    out = pd.concat(frames, ignore_index=True)
    for c in ("family", "setting"):
        if c not in out:
            out[c] = None
    out["paper_table"] = pd.to_numeric(out["paper_table"], errors="coerce")
    out["value"] = pd.to_numeric(out["value"], errors="coerce")
    return out[cols]


ROLE_NAMES = {  # row labels of the side-by-side tables, in display order
    "elm": "ELM alone (LLM 6.9B / 6.7B / 4B)",
    "cd": "CD",
    "apd": "APD",
    "apd_on_the_fly": "APD on the fly",
    "big": "larger LLM (12B / 13B / 7B)",
    "gap_apd_vs_cd": "APD vs CD (% of the size gap)",
    "gap_apd_vs_elm": "APD vs ELM (% of the size gap)",
    "dataset_size": "|D| (questions kept)",
}


def _row_label(role: str, setting) -> str:
    name = ROLE_NAMES.get(role, str(role))
    blank = setting is None or (isinstance(setting, float) and math.isnan(setting)) or setting == ""
    return name if blank else f"{name}, {setting}"


@dataclass
class Beside:
    """The paper's Table N, with ours beside it where this profile has rows: ``frame`` (rows:
    methods; columns: (dataset, metric, source), source ``paper: <family>`` or ``ours``) and
    ``note`` (what ours are, or why there are none)."""

    number: int
    frame: pd.DataFrame
    note: str
    has_ours: bool = False
    same_datasets: tuple[str, ...] = ()


def paper_beside_ours(
    number: int, profile: str, family: str | None = None, items: Sequence[PaperItem] = tuple(PAPER_TABLES)
) -> Beside:
    """The paper's Table ``number`` (one ``family``, or all when None or when the table does not
    have that family) with the rows this profile regenerated for it (see
    :func:`regenerated_rows`) beside it; rows are aligned on role (and setting)."""
    if not 1 <= number <= len(items):
        raise ValueError(f"the paper has tables 1-{len(items)}, got {number!r}")
    item = items[number - 1]
    paper = published.table(number)
    if family is not None and family in set(paper["family"]):
        paper = paper[paper["family"] == family]
    ours = regenerated_rows(profile)
    ours = ours[ours["paper_table"] == number]
    unscored = sorted(
        set(ours.loc[ours["value"].isna(), "dataset"].astype(str))
        - set(ours.loc[ours["value"].notna(), "dataset"].astype(str))
    )
    ours = ours[ours["value"].notna()]  # a row without a value (nothing scored) is no row of ours
    same = tuple(sorted(set(paper["dataset"]) & set(ours["dataset"].astype(str))))
    parts = [paper.assign(source="paper: " + paper["family"])]
    if not ours.empty:
        parts.append(ours.assign(source="ours"))
    long = pd.concat(
        [p[["role", "setting", "source", "dataset", "metric", "value"]] for p in parts], ignore_index=True
    )
    long["row"] = [_row_label(r, s) for r, s in zip(long["role"], long["setting"])]
    size_rows = long["role"] == "dataset_size"
    others = set(long.loc[~size_rows, "metric"])
    if size_rows.any() and len(others) == 1:  # Table 5: print |D| under each dataset's MRR column
        long.loc[size_rows, "metric"] = others.pop()
    wide = long.pivot_table(
        index="row", columns=["dataset", "metric", "source"], values="value", aggfunc="first", sort=False
    )
    rank = {r: i for i, r in enumerate(ROLE_NAMES)}
    role_of = dict(zip(long["row"], long["role"]))
    order = sorted(wide.index, key=lambda r: (rank.get(role_of[r], len(rank)), list(long["row"]).index(r)))
    first = {
        level: {v: i for i, v in enumerate(dict.fromkeys(long[level]))} for level in ("dataset", "metric", "source")
    }
    columns = sorted(
        wide.columns, key=lambda c: (first["dataset"][c[0]], first["metric"][c[1]], first["source"][c[2]])
    )
    wide = wide.loc[order, columns]  # the paper's number and ours side by side, dataset by dataset
    wide.index.name = None
    counts = [r for r in wide.index if role_of[r] == "dataset_size"]
    if counts:  # |D| is a count: it prints as an integer beside the scores of its column
        wide = wide.astype(object)
        wide.loc[counts] = wide.loc[counts].map(lambda v: v if pd.isna(v) else int(round(float(v))))
    if item.never:
        note = f"{item.name} cannot be regenerated: {item.never}"
    elif ours.empty:
        ran = chapter_ran(profile, item.stem)
        why = (
            f"chapter {item.stem} wrote no rows for {item.name} under profile {profile}"
            if ran
            else f"chapter {item.stem} has not run under profile {profile}"
        )
        if unscored:
            why = (
                f"chapter {item.stem} scored nothing for {item.name} under profile {profile} "
                f"({', '.join(unscored)}: no question qualified)"
            )
        note = f"{item.name}, the paper's numbers only: {why}; {item.needs}"
    elif same:
        fams = ", ".join(sorted(set(ours["family"].dropna().astype(str)))) or "unnamed"
        note = f"{item.name}: the paper's rows beside ours (family {fams}) on the same datasets ({', '.join(same)})"
    else:
        note = (
            f"{item.name}: no dataset in common; our rows "
            f"({', '.join(sorted(set(ours['dataset'].astype(str))))}) are this profile's "
            "counterpart: compare the order of the methods, not the values"
        )
    if unscored and not ours.empty:
        note += f"; nothing scored on {', '.join(unscored)} (no question qualified)"
    if item.never_part and not item.never:
        note += f"; {item.never_part}"
    return Beside(number, wide, note, not ours.empty, same)


def paper_rows(family: str) -> pd.DataFrame:
    """The paper's QA numbers (Tables 2-5) for a family ("pythia", "opt", "qwen1.5"): columns
    dataset (canonical), metric (ppl, acc, MRR, |D|), role (elm, big, cd, apd, gap_apd_vs_cd,
    gap_apd_vs_elm, dataset_size), value (gap rows as fractions, like :func:`apd.evaluation.qa_scoring.gap_rows`).
    Empty for other families."""
    name = {"pythia": "Pythia", "opt": "OPT", "qwen1.5": "Qwen1.5", "qwen": "Qwen1.5"}.get(str(family).lower())
    cols = ["dataset", "metric", "role", "value"]
    if name is None:
        return pd.DataFrame(columns=cols)
    df = pd.concat([published.table(t) for t in (2, 3, 4, 5)], ignore_index=True)
    df = df[(df["family"] == name) & (df["role"] != "apd_on_the_fly")].copy()
    gap = df["role"].str.startswith("gap_")
    df.loc[gap, "value"] = df.loc[gap, "value"] / 100.0
    return df[cols].reset_index(drop=True)
