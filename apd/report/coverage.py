"""Which of the paper's tables and figures the book regenerated under a profile."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from apd.report import paper
from apd.report.beside import regenerated_rows
from apd.report.paper import PAPER_FIGURES, PAPER_TABLES, PaperItem
from apd.report.results import artefact_exists, chapter_ran
from apd.report.tables import listed


def figure_status(profile: str, figures: Sequence[PaperItem] = tuple(PAPER_FIGURES)) -> pd.DataFrame:
    """One row per paper figure: paper, shows, status (regenerated / counterpart figure / not
    produced here / cannot be regenerated), ours (what/where, or why not). A drawn figure is a
    counterpart when the paper's has something ours lacks (:attr:`PaperItem.lacks`), or when only its
    stand-in was drawn because the paper's own data need what the profile lacks (:attr:`PaperItem.needs`),
    and its row
    says what each figure drawn plots (:attr:`PaperItem.plots`), never one this profile did not draw."""
    rows = []
    for item in figures:
        if item.never:
            status, ours = "cannot be regenerated", item.never
        elif not chapter_ran(profile, item.stem):
            status = "not produced here"
            ours = f"chapter {item.stem} has not run under profile {profile}"
            ours += f"; {item.needs}" if item.needs else ""
        elif item.artefacts:
            found = [a for a in item.artefacts if artefact_exists(profile, item.stem, a)]
            if found:
                rest = [a for a in item.artefacts if a not in found]
                # a stand-in drawn where the paper's own data need what this profile lacks is a counterpart
                status = "counterpart figure" if item.lacks or (rest and item.needs) else "regenerated"
                ours = f"chapter {item.stem}: figure {', '.join(found)}"
                if rest:
                    ours += f" (not drawn under this profile: {', '.join(rest)})"
                ours += "".join(f"; {note}" for note in (item.lacks, _plots(item, found), item.caveat) if note)
            else:
                status = "not produced here"
                ours = f"chapter {item.stem} did not produce {', '.join(item.artefacts)} under profile {profile}" + (
                    f"; it needs {item.needs}" if item.needs else ""
                )
        else:
            status, ours = "regenerated", f"chapter {item.stem} (its figures under profile {profile})"
        rows.append({"paper": item.name, "shows": item.shows, "status": status, "ours": ours})
    return pd.DataFrame(rows)


def _plots(item: PaperItem, found: Sequence[str]) -> str:
    """What the figures drawn (``found``) plot, in words ('' when ``item`` does not say)."""
    said = dict(item.plots)
    parts = [said[a] for a in found if a in said]
    if not parts:
        return ""
    return f"{'it plots' if len(parts) == 1 else 'they plot'} {listed(parts)}"


#: A regenerated table is labelled "same rows" only when every shared dataset has at least this many
#: qualifying items (answers inside the expert's top k); fewer than that cannot carry a comparison.
MIN_SAME_ROWS_ITEMS = 30


def table_status(profile: str, items: Sequence[PaperItem] = tuple(PAPER_TABLES)) -> pd.DataFrame:
    """One row per paper table: paper, shows, status (same rows / too few items / counterpart rows /
    not produced here / cannot be regenerated), ours (rows found, or why none)."""
    ours = regenerated_rows(profile)
    rows = []
    for number, item in enumerate(items, start=1):
        mine = ours[ours["paper_table"] == number]
        unscored = not mine.empty and mine["value"].isna().all()
        mine = mine[mine["value"].notna()]  # a row without a value (nothing scored) is no row of ours
        if item.never:
            status, text = "cannot be regenerated", item.never
        elif mine.empty:
            ran = chapter_ran(profile, item.stem)
            status = "not produced here"
            text = (
                f"chapter {item.stem} scored nothing for it under profile {profile} (no question qualified)"
                if unscored
                else f"chapter {item.stem} wrote no rows for it under profile {profile}"
                if ran
                else f"chapter {item.stem} has not run under profile {profile}"
            ) + f"; {item.needs}"
            if item.never_part:
                text += f"; {item.never_part}"
        else:
            same = set(paper.table(number)["dataset"]) & set(mine["dataset"].astype(str))
            status = "same rows" if same else "counterpart rows"
            fams = ", ".join(sorted(set(mine["family"].dropna().astype(str)))) or "unnamed"
            text = f"{len(mine)} numbers (family {fams}) in {', '.join(sorted(set(mine['source'])))}"
            sizes = ours[(ours["role"] == "dataset_size") & ours["dataset"].astype(str).isin(same)]["value"]
            n_items = int(pd.to_numeric(sizes, errors="coerce").min()) if len(sizes) else None
            if same and n_items is not None and n_items < MIN_SAME_ROWS_ITEMS:
                status = "too few items"
                text += (
                    f"; the same datasets, but only {n_items} qualifying item(s) in the smallest "
                    f"(a 'same rows' label needs at least {MIN_SAME_ROWS_ITEMS})"
                )
            if item.never_part:
                text += f"; {item.never_part}"
        rows.append({"paper": item.name, "shows": item.shows, "status": status, "ours": text})
    return pd.DataFrame(rows)
