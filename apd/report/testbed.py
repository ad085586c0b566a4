"""The testbed table: every world + family configuration tried, with its controls on dev people.

``scripts/testbed_study.py`` appends one row per configuration (:func:`append_configuration`) to
``docs/testbed/configurations.csv`` (committed); the book's testbed page reads it
(:func:`read_configurations`) and shows :func:`summary_table`. Columns: ``configuration`` (a
name), ``overrides`` (JSON of the fields changed from the default scale), the
:meth:`apd.evaluation.controls.Controls.row` values, ``family_key``, ``train_seconds``,
``control_seconds``, ``device``, ``machine`` and ``date`` (UTC).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

from apd.base.io import atomic_write
from apd.base.lock import file_lock
from apd.base.paths import cache_dir, project_root
from apd.report.tables import plus_minus

#: Where the table lives, relative to the project root.
TESTBED_TABLE = Path("docs") / "testbed" / "configurations.csv"
#: The columns that identify a row; a new row with the same values replaces the old one.
TESTBED_KEY = ("configuration", "overrides", "device")


def table_path(path=None) -> Path:
    """``path``, else ``<project root>/docs/testbed/configurations.csv``."""
    if path is not None:
        return Path(path)
    root = project_root()
    if root is None:
        raise FileNotFoundError(f"no project root found to locate {TESTBED_TABLE}; pass the table's path.")
    return root / TESTBED_TABLE


def read_configurations(path=None) -> pd.DataFrame:
    """The testbed table, one row per configuration tried (empty with the key columns when none is).

    Example:
        >>> import tempfile, os
        >>> read_configurations(os.path.join(tempfile.mkdtemp(), "none.csv")).columns.tolist()
        ['configuration', 'overrides', 'device']
    """
    p = table_path(path)
    if not p.is_file():
        return pd.DataFrame(columns=list(TESTBED_KEY))
    return pd.read_csv(p, keep_default_na=True)


def append_configuration(row: dict, path=None) -> pd.DataFrame:
    """Add ``row`` (needs the :data:`TESTBED_KEY` columns) to the table, replacing a row with the same key,
    and write it atomically; returns the new table. Columns are the union of old and new."""
    missing = [k for k in TESTBED_KEY if k not in row]
    if missing:
        raise ValueError(f"a testbed row needs {list(TESTBED_KEY)}; {missing} missing.")
    p = table_path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(table_lock(p)):  # processes measuring side by side each add their row
        table = read_configurations(p)
        if len(table):
            same = (
                (table["configuration"].astype(str) == str(row["configuration"]))
                & (table["overrides"].astype(str) == str(row["overrides"]))
                & (table["device"].astype(str) == str(row["device"]))
            )
            table = table[~same]
        table = pd.concat([table, pd.DataFrame([row])], ignore_index=True) if len(table) else pd.DataFrame([row])
        atomic_write(p, lambda tmp: table.to_csv(tmp, index=False))
    return table


def table_lock(path) -> Path:
    """The lock file of a testbed table (in the cache, so the table's folder stays clean): one per
    resolved path, held while a row is read, changed and written.

    Example:
        >>> table_lock("a.csv") == table_lock(Path("a.csv").resolve()), table_lock("a.csv").suffix
        (True, '.lock')
    """
    digest = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:16]
    return cache_dir() / "locks" / f"testbed-table-{digest}.lock"


#: The summary's columns: (table column, heading).
TESTBED_SUMMARY = (
    ("configuration", "configuration"),
    ("dev_people", "dev people"),
    ("dev_inv_T", "dev 1/T"),
    ("kl_gain_dev_T", "CD KL gain (dev 1/T)"),
    ("kl_gain_dev_T_se", "its se"),
    ("kl_gain_paper_T", "CD KL gain (1/T = 1)"),
    ("kl_gain_paper_T_se", "its se (1/T = 1)"),
    ("nll_gain_dev_T", "CD NLL gain (dev 1/T)"),
    ("ne_er_gain", "NE_ER, ELM minus CD"),
    ("ne_er_gain_se", "NE_ER se"),
    ("residual_noise", "fit residual"),
    ("ka_ratio_saturating", "known-answer fit/p_ELM"),
    ("fit_ratio_head", "world head fit/p_ELM"),
    ("flat_head", "head flatten"),
    ("flat_tail", "tail flatten"),
    ("train_seconds", "train s"),
    ("eval_people", "evaluation people"),
    ("device", "device"),
)

#: Each control's threshold in the units of :func:`control_readings`: CD's KL gain in standard errors,
#: the NE_ER gain in standard errors, the head fit's error below p_ELM's (share), head over tail flattening.
CONTROL_TARGETS = {"cd_kl": 3.0, "cd_ne_er": 1.96, "head_extrapolation": 0.10, "head_flattens": 1.0}


def control_readings(table: pd.DataFrame) -> pd.DataFrame:
    """Each configuration's reading of the four controls, in the units of :data:`CONTROL_TARGETS`
    (NaN where it was not measured): ``cd_kl``, CD's KL gain over its standard error; ``cd_ne_er``,
    the NE_ER gain (expert minus CD) over its standard error; ``head_extrapolation``, 1 minus the world
    head fit's error over p_ELM's; ``head_flattens``, the head flattening share over the tail's.
    Indexed like ``table``; a control passes where its reading reaches its target.

    Example:
        >>> t = pd.DataFrame({"kl_gain_dev_T": [0.03], "kl_gain_dev_T_se": [0.01], "fit_ratio_head": [0.95],
        ...                   "flat_head": [0.3], "flat_tail": [0.6]})
        >>> control_readings(t).round(3).iloc[0].tolist()
        [3.0, nan, 0.05, 0.5]
    """

    def col(name):
        return pd.to_numeric(table[name], errors="coerce") if name in table else pd.Series(float("nan"), table.index)

    return pd.DataFrame(
        {
            "cd_kl": col("kl_gain_dev_T") / col("kl_gain_dev_T_se"),
            "cd_ne_er": col("ne_er_gain") / col("ne_er_gain_se"),
            "head_extrapolation": 1.0 - col("fit_ratio_head"),
            "head_flattens": col("flat_head") / col("flat_tail"),
        }
    )


#: The override that changes only a configuration's training seed: a replicate, not another design.
SEED_OVERRIDE = "pico.seed"


def design_of(table: pd.DataFrame) -> pd.Series:
    """Each row's design: its ``overrides`` without :data:`SEED_OVERRIDE`, as sorted JSON (the text
    itself where it is not JSON), so rows that differ only in the training seed share one design.

    Example:
        >>> t = pd.DataFrame({"overrides": ['{"scale": "default"}', '{"pico.seed": 1, "scale": "default"}']})
        >>> design_of(t).nunique()
        1
    """

    def key(overrides):
        try:
            d = json.loads(str(overrides))
        except ValueError:
            return str(overrides)
        return json.dumps({k: v for k, v in d.items() if k != SEED_OVERRIDE}, sort_keys=True)

    if "overrides" not in table:
        return pd.Series([str(i) for i in range(len(table))], index=table.index)
    return table["overrides"].map(key)


#: The controls as the best-reached table names them: key of CONTROL_TARGETS -> (control, threshold in words).
CONTROL_NAMES = {
    "cd_kl": ("CD beats the expert (KL to the truth)", "gain >= 3 se"),
    "cd_ne_er": ("CD names fewer wrong entities (NE_ER)", "gain > 1.96 se"),
    "head_extrapolation": ("the fitter beats p_ELM on head facts", "error <= 90% of p_ELM's"),
    "head_flattens": ("head curves flatten at least as often as tail curves", "head / tail >= 1"),
}


def best_per_control(table: pd.DataFrame) -> pd.DataFrame:
    """For each control, the best reading any configuration of ``table`` reached
    (:func:`control_readings`), in words, the configuration that reached it and whether that passes;
    indexed by control. A control no configuration measured reads "not measured".

    Example:
        >>> t = pd.DataFrame({"configuration": ["a", "b"], "kl_gain_dev_T": [0.03, 0.01],
        ...                   "kl_gain_dev_T_se": [0.02, 0.002], "fit_ratio_head": [0.95, 0.99],
        ...                   "flat_head": [0.3, 0.5], "flat_tail": [0.6, 0.4]})
        >>> best = best_per_control(t)
        >>> best.loc["CD beats the expert (KL to the truth)", ["best reached", "configuration", "passes"]].tolist()
        ['+0.0100 ± 0.0020 (5.0 se)', 'b', 'yes']
    """
    readings = control_readings(table)
    rows = []
    for key, (name, threshold) in CONTROL_NAMES.items():
        r = readings[key]
        if r.notna().any():
            i = int(np.nanargmax(r.to_numpy()))
            row = table.iloc[i]
            rows.append(
                {
                    "control": name,
                    "threshold": threshold,
                    "best reached": _reading_text(key, row, float(r.iloc[i])),
                    "configuration": str(row["configuration"]),
                    "passes": "yes" if r.iloc[i] >= CONTROL_TARGETS[key] else "no",
                }
            )
        else:
            rows.append({"control": name, "threshold": threshold, "best reached": "not measured"})
    return pd.DataFrame(rows).set_index("control").fillna("")


def _reading_text(key: str, row, reading: float) -> str:
    if key == "cd_kl":
        return f"{plus_minus(row['kl_gain_dev_T'], row['kl_gain_dev_T_se'])} ({reading:.1f} se)"
    if key == "cd_ne_er":
        return f"{plus_minus(row['ne_er_gain'], row['ne_er_gain_se'])} ({reading:.1f} se)"
    if key == "head_extrapolation":
        return f"{float(row['fit_ratio_head']):.0%} of p_ELM's error"
    return f"{float(row['flat_head']):.0%} / {float(row['flat_tail']):.0%}"


def summary_table(table: pd.DataFrame) -> pd.DataFrame:
    """The columns of :data:`TESTBED_SUMMARY` that the table has, renamed, plus ``seeds`` (how many
    rows its design has, :func:`design_of`: the same configuration trained with other seeds) and
    ``passes`` (how many of the four controls pass, of those measured); indexed by configuration.

    Example:
        >>> t = pd.DataFrame({"configuration": ["d", "d, seed 1", "e"],
        ...                   "overrides": ['{"scale": "d"}', '{"pico.seed": 1, "scale": "d"}', '{"scale": "e"}']})
        >>> summary_table(t)["seeds"].tolist()
        [2, 2, 1]
    """
    cols = [(c, h) for c, h in TESTBED_SUMMARY if c in table.columns]
    out = table[[c for c, _ in cols]].rename(columns=dict(cols))
    out["seeds"] = design_of(table).groupby(design_of(table)).transform("count").astype(int).to_numpy()
    checks = [
        c
        for c in ("pass_cd_kl", "pass_cd_ne_er", "pass_head_extrapolation", "pass_head_flattens")
        if c in table.columns
    ]
    if checks:
        flags = table[checks].apply(lambda col: col.map(_flag))
        out["passes"] = [
            f"{int(sum(v is True for v in r))} of {int(sum(v is not None for v in r))}"
            for r in flags.itertuples(index=False)
        ]
    return out.set_index("configuration")


def _flag(v):
    if isinstance(v, str):
        return {"True": True, "False": False}.get(v)
    if v is None or (isinstance(v, float) and v != v):
        return None
    return bool(v)
