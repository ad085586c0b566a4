"""Ablations of APD (the paper's Figure 3 d-f, appendix "Decay Parameterization Comparison").

Each ablation (:data:`ABLATIONS`, in the groups ``loss``, ``members``, ``decay``, ``other``) is an
:class:`apd.amateur.config.APDTrainConfig` derived from the main one (:func:`ablation_config`),
trained by :func:`apd.amateur.runs.train_apd` on the same collected data, and scored exactly as the
main results (:mod:`apd.world.truth`) on the world QA test half: per item, KL(truth || method) over
the ELM's top 20 and the gold first token's -ln(q + 0.01), both in nats, lower is better, with 1/T
picked on the dev half by KL. :func:`summarise` and :func:`verdicts` compare each run with the main
APD through per-item paired differences and their standard errors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from apd.amateur import collect, data, objective, runs, train
from apd.amateur.config import LATER_DEFAULTS, APDTrainConfig
from apd.amateur.tuning import scoring_threads
from apd.base.device import resolve_device
from apd.core import stats
from apd.family import logprobs
from apd.family.settings import INV_T_GRID
from apd.world import truth

GROUPS = ("loss", "members", "decay", "other", "variant")
GROUP_TITLES = {
    "loss": "Loss terms",
    "members": "Members (mid-size LMs)",
    "decay": "Decay function",
    "other": "Other",
    "variant": "APD variant",
}
LAMBDA3_FACTORS = {"lambda3=0": 0.0, "lambda3x2": 2.0, "lambda3x6": 6.25}  # paper: 0, 1.6, 5 around 0.8
MEMBER_SUBSETS = ("alm+elm", "alm+mid+elm", "no-small")


@dataclass(frozen=True)
class Ablation:
    """One ablation: ``name`` (id used in tables and parameters), ``group`` (one of :data:`GROUPS`)
    and what it changes, in words (``what``)."""

    name: str
    group: str
    what: str


ABLATIONS = (
    Ablation("lambda2=0", "loss", "no L2 hinge (lambda2 = 0)"),
    Ablation("lambda3=0", "loss", "no L3 regulariser (lambda3 = 0)"),
    Ablation("lambda3x2", "loss", "lambda3 doubled (paper: 1.6 for 0.8)"),
    Ablation("lambda3x6", "loss", "lambda3 x 6.25 (paper: 5 for 0.8)"),
    Ablation("alm+elm", "members", "only the ALM and the ELM (paper: 70M-7B)"),
    Ablation("alm+mid+elm", "members", "ALM, the middle member, ELM"),
    Ablation("no-small", "members", "without the small mid-size members (paper: 1B-7B)"),
    Ablation("logistic", "decay", "logistic decay"),
    Ablation("poly1", "decay", "fractional polynomial, K = 1"),
    Ablation("poly3", "decay", "fractional polynomial, K = 3"),
    Ablation("no-flip", "other", "no flip R(.) (paper: no rev)"),
    Ablation("logit", "other", "curves on log-probabilities (paper: APD logit)"),
    Ablation("half-data", "other", "half of the fine-tuning chunks (paper: 0.5|D|)"),
    Ablation("distilled", "variant", "distilled on-the-fly APD: ALM' matches the fitter's asymptotes, no curve MLP"),
    Ablation(
        "distilled-alm+mid+elm", "variant", "distilled, its targets fitted on the ALM, the middle member and the ELM"
    ),
    Ablation("distilled-no-small", "variant", "distilled, its targets fitted without the small mid-size members"),
)
ABLATION_NAMES = tuple(a.name for a in ABLATIONS)
MAIN = "APD"
DISTILLED = "distilled"


def distilled_subset(name: str) -> Optional[str]:
    """The member subset (one of :data:`MEMBER_SUBSETS`) of a distilled member-subset ablation
    (``'distilled-<subset>'``), None for any other name.

    Example:
        >>> distilled_subset("distilled-no-small"), distilled_subset("no-small"), distilled_subset("distilled")
        ('no-small', None, None)
    """
    prefix = DISTILLED + "-"
    return name[len(prefix) :] if name.startswith(prefix) else None


def reference_of(name: str) -> str:
    """The run an ablation is compared with: the distilled variant for its member subsets
    (``'distilled-alm+mid+elm'``, ``'distilled-no-small'``), the reference APD otherwise. The distilled
    variant has no ALM + ELM subset: its targets come from the on-the-fly fitter, which needs at
    least three members for a curve of four parameters.

    Example:
        >>> reference_of("distilled-no-small"), reference_of("alm+elm"), reference_of("distilled")
        ('distilled', 'APD', 'APD')
    """
    return DISTILLED if distilled_subset(name) else MAIN


def get_ablation(name: str) -> Ablation:
    for a in ABLATIONS:
        if a.name == name:
            return a
    raise ValueError(f"unknown ablation {name!r}; known: {', '.join(ABLATION_NAMES)}.")


# ============================================================================ configurations


def member_subset(kind: str, member_names: Sequence[str], log_sizes: Sequence[float]) -> tuple:
    """Names of the members an ablation keeps (ALM first, ELM last), from their log sizes (N,).

    'alm+elm': the two ends. 'alm+mid+elm': plus the mid-size member nearest the midpoint of
    [ln s_ALM, ln s_ELM]. 'no-small': the ALM plus every member at or above that midpoint.
    """
    names, x = list(member_names), np.asarray(log_sizes, dtype=float)
    if len(names) != len(x):
        raise ValueError(f"{len(names)} member names but {len(x)} log sizes; give one size per member.")
    if len(names) < 2 or not np.all(np.diff(x) > 0):
        raise ValueError(f"need >= 2 members in increasing size (ALM first), got {dict(zip(names, x.tolist()))}.")
    if kind == "alm+elm":
        return (names[0], names[-1])
    if len(names) < 3:
        raise ValueError(f"member subset {kind!r} needs a mid-size member; this family has only {names}.")
    mid = 0.5 * (x[0] + x[-1])
    if kind == "alm+mid+elm":
        i = 1 + int(np.argmin(np.abs(x[1:-1] - mid)))
        return (names[0], names[i], names[-1])
    if kind == "no-small":
        return (names[0],) + tuple(n for n, v in zip(names[1:], x[1:]) if v >= mid)
    raise ValueError(f"unknown member subset {kind!r}; use one of {MEMBER_SUBSETS}.")


def with_members(config: APDTrainConfig, members: Sequence, member_names: Sequence[str]) -> APDTrainConfig:
    """``config`` restricted to a member subset (names or indices), checked now: the subset must
    keep the ALM and the ELM (a clear ValueError otherwise, not later inside training)."""
    if members is None or not len(members):
        raise ValueError(
            f"an empty member subset; name at least the ALM ({member_names[0]!r}) and the ELM "
            f"({member_names[-1]!r}), or use members=None for all of them."
        )
    idx = data.resolve_members(tuple(members), list(member_names))
    return runs.variant(config, members=tuple(member_names[i] for i in idx))


def ablation_config(
    base: APDTrainConfig, name: str, member_names: Sequence[str], log_sizes: Sequence[float]
) -> APDTrainConfig:
    """The configuration of ablation ``name`` derived from ``base`` (the main config, after any
    common overrides). ``member_names``/``log_sizes``: the collected data's members, ALM first."""
    get_ablation(name)
    if base.members is not None:
        raise ValueError(
            f"the main config already selects members {base.members}; ablations start from all "
            "collected members (members=None)."
        )
    if name == "lambda2=0":
        return runs.variant(base, lambda2=0.0)
    if name in LAMBDA3_FACTORS:
        return runs.variant(base, lambda3=LAMBDA3_FACTORS[name] * base.lambda3_value)
    if name in MEMBER_SUBSETS:
        return with_members(base, member_subset(name, member_names, log_sizes), member_names)
    if name in ("logistic", "poly1", "poly3"):
        return runs.variant(base, decay=name)
    if name == "no-flip":
        return runs.variant(base, flip=False)
    if name == "logit":
        return runs.variant(base, space="logit")
    if name == "half-data":
        return runs.variant(base, data_fraction=0.5 * base.data_fraction)
    if name == DISTILLED:
        return runs.variant(base, objective="distill")
    if distilled_subset(name):
        subset = member_subset(distilled_subset(name), member_names, log_sizes)
        return with_members(runs.variant(base, objective="distill"), subset, member_names)
    raise AssertionError(name)  # pragma: no cover


def ablation_configs(
    main: APDTrainConfig,
    member_names: Sequence[str],
    log_sizes: Sequence[float],
    names: Optional[Sequence[str]] = None,
    overrides: Optional[dict] = None,
) -> dict[str, APDTrainConfig]:
    """``{"APD": base, <ablation>: config, ...}``. ``base`` is ``main`` with ``overrides`` (e.g. fewer
    epochs for every run, the main one included, so the comparison stays fair); ``names``: which
    ablations (default all of :data:`ABLATION_NAMES`, in that order)."""
    base = runs.variant(main, **(overrides or {}))
    base.lambda3_value  # noqa: B018  (raises now if the family has no lambda3)
    chosen = ABLATION_NAMES if names is None else tuple(names)
    for n in chosen:
        get_ablation(n)
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"ablation names repeat: {list(chosen)}.")
    for n in chosen:
        if reference_of(n) != MAIN and reference_of(n) not in chosen:
            raise ValueError(
                f"ablation {n!r} is compared with {reference_of(n)!r}; add {reference_of(n)!r} to the ablation names."
            )
    out = {MAIN: base}
    for n in chosen:
        out[n] = ablation_config(base, n, member_names, log_sizes)
    return out


def config_changes(config: APDTrainConfig, base: APDTrainConfig) -> str:
    """The fields where ``config`` differs from ``base``, e.g. ``"lambda3=2.4, decay=poly1"``."""
    a, b = config.to_dict(), base.to_dict()
    parts = []
    for k, v in a.items():
        if v != b.get(k, LATER_DEFAULTS.get(k)):
            v = "+".join(map(str, v)) if isinstance(v, (list, tuple)) else (f"{v:g}" if isinstance(v, float) else v)
            parts.append(f"{k}={v}")
    return ", ".join(parts) or "(main)"


# ============================================================================ the evaluation set


@dataclass
class QASet:
    """World QA items scored once by the family's ALM and ELM, with the truth.

    prompts: the B prompt strings; elm_logprobs, alm_logprobs: (B, V) float32
    next-token log-probabilities at the answer position; truth: (B, V) float32, the world's true
    first-token distribution (rows sum to 1); gold: (B,) int first-token ids; buckets: (B,) str;
    people: (B,) str, the person each question is about (standard errors cluster by person), or None.
    """

    prompts: list
    elm_logprobs: np.ndarray
    alm_logprobs: np.ndarray
    truth: np.ndarray
    gold: np.ndarray
    buckets: np.ndarray
    people: Optional[np.ndarray] = None

    def __post_init__(self):
        if np.ndim(self.elm_logprobs) != 2:
            raise ValueError(f"QASet.elm_logprobs must be (B, V), got shape {np.shape(self.elm_logprobs)}.")
        B, V = np.shape(self.elm_logprobs)
        for name, shape in (
            ("alm_logprobs", (B, V)),
            ("truth", (B, V)),
            ("gold", (B,)),
            ("buckets", (B,)),
            *((("people", (B,)),) if self.people is not None else ()),
        ):
            if np.shape(getattr(self, name)) != shape:
                raise ValueError(
                    f"QASet.{name} has shape {np.shape(getattr(self, name))}, expected {shape} "
                    f"(B = {B} items, V = {V} tokens)."
                )
        if len(self.prompts) != B or any(not isinstance(p, str) for p in self.prompts):
            raise ValueError(f"QASet needs one prompt string per item: {len(self.prompts)} prompts for {B} items.")
        if B == 0:
            raise ValueError("QASet has no items; pass a non-empty list of world QA items.")

    def __len__(self) -> int:
        return len(self.gold)

    @property
    def vocab_size(self) -> int:
        return int(np.shape(self.elm_logprobs)[1])

    @classmethod
    def from_scores(cls, scores) -> "QASet":
        """From :func:`apd.family.knowledge.score_world_qa` output (first member = ALM, last = ELM)."""
        return cls(
            [it.prompt for it in scores.items],
            scores.logprobs[-1],
            scores.logprobs[0],
            scores.truth,
            np.asarray(scores.gold),
            np.array([it.bucket for it in scores.items]),
            np.array([it.person for it in scores.items]),
        )

    def subset(self, index) -> "QASet":
        index = np.asarray(index, dtype=np.int64)
        return QASet(
            [self.prompts[i] for i in index],
            self.elm_logprobs[index],
            self.alm_logprobs[index],
            self.truth[index],
            self.gold[index],
            self.buckets[index],
            None if self.people is None else np.asarray(self.people)[index],
        )


# ============================================================================ the metric (apd.world.truth's)


def score_amateur(qa: QASet, amateur_logprobs, inv_T: float, top_k: int = 20) -> pd.DataFrame:
    """Per item, the main results' measures of CD/APD with this amateur at 1/T = ``inv_T`` over the
    ELM's top k (``apd.world.truth``): ``kl`` = KL(truth || method) and ``nll`` = -ln(q(gold) + 0.01),
    nats, NaN where undefined (no true mass on the top k / gold outside it)."""
    ids = truth.topk_ids(qa.elm_logprobs, top_k)
    q = truth.contrastive_topk(qa.elm_logprobs, amateur_logprobs, float(inv_T), ids)
    return pd.DataFrame({"kl": truth.kl_to_truth(truth.at(qa.truth, ids), q), "nll": truth.gold_nll(q, ids, qa.gold)})


def pick_inv_T(
    qa: QASet, amateur_logprobs, inv_T_grid: Sequence[float], top_k: int = 20, measure: str = "kl"
) -> float:
    """The 1/T of ``inv_T_grid`` with the lowest mean ``measure`` on ``qa`` (the dev half), as the
    main results pick it (``apd.world.truth.best_knobs``: the mean over people of each person's mean
    where ``qa.people`` is known; ties: the first value)."""
    grid = [float(v) for v in inv_T_grid]
    if not grid:
        raise ValueError("inv_T_grid is empty; give e.g. apd.family.settings.INV_T_GRID.")
    values = [score_amateur(qa, amateur_logprobs, v, top_k)[measure].to_numpy() for v in grid]

    groups = np.arange(len(values[0])) if qa.people is None else qa.people  # no people: each item its own
    means = np.array([stats.cluster_mean(v, groups)[0] for v in values])
    if np.all(np.isnan(means)):
        raise ValueError(f"no dev item has a defined {measure}; the dev half cannot pick 1/T.")
    return stats.best_knob(grid, means)


def summarise(per_item: pd.DataFrame, buckets, reference: Optional[pd.DataFrame] = None, groups=None) -> dict:
    """Means of ``kl`` and ``nll`` over the items where each is defined, all and by bucket
    (``kl_head`` ...) with the counts; with ``reference`` (the per-item frame of the run it is
    compared with, :func:`reference_of`), the paired differences ``kl_diff`` / ``nll_diff``
    (this - reference), their standard errors and the number of groups they are over
    (``kl_diff_groups``: ``groups`` holds one label per item, e.g. the person asked about; without
    it every item is its own group)."""
    b = np.asarray(buckets)
    out = {}
    for m in ("kl", "nll"):
        v = per_item[m].to_numpy(dtype=float)
        ok = ~np.isnan(v)
        out[f"n_{m}"] = int(ok.sum())
        out[m] = float(v[ok].mean()) if ok.any() else float("nan")
        for bucket in truth.BUCKETS:
            sel = ok & (b == bucket)
            out[f"{m}_{bucket}"] = float(v[sel].mean()) if sel.any() else float("nan")
        if reference is not None:
            r = reference[m].to_numpy(dtype=float)
            pd_ = stats.paired_difference(v, r, groups=groups)
            out[f"{m}_diff"], out[f"{m}_diff_se"] = pd_.mean, pd_.se
            out[f"{m}_diff_groups"] = pd_.n_groups
    return out


# ============================================================================ training + evaluation


@dataclass
class AblationResults:
    """``table``: one row per run (the reference APD first, then each ablation); ``per_item``: name ->
    the test per-item frame of :func:`score_amateur`; ``configs``: name -> config; ``paths``:
    name -> the ``alm_prime`` folder."""

    table: pd.DataFrame
    per_item: dict = field(default_factory=dict)
    configs: dict = field(default_factory=dict)
    paths: dict = field(default_factory=dict)


def training_record(alm_prime) -> dict:
    """Optimizer steps and training seconds of a finished run, read from its folder (so also
    known when the run came from the cache)."""
    record = runs.run_record(alm_prime)  # the run record read through the checked reader
    return {"steps": record["steps"], "train_seconds": record["train_seconds"]}


def validation_losses(alm_prime, config: APDTrainConfig, val_dir, max_chunks: int, device=None) -> dict:
    """Mean L1, L2, L3 and the weighted loss of a trained run on held-out collected chunks (dropout
    off; the run's own lambdas, members and space, so L1/L2 of 'logit' runs are in log-prob units).
    A distilled run has no curve MLP, hence no L1/L2: ``{}``."""
    if config.objective == "distill":
        return {}
    manifest = collect.read_manifest(val_dir)
    records = list(collect.iter_records(val_dir))
    model = runs.load_alm_prime(alm_prime, device=device)
    mlp = objective.CurveMLP.load(alm_prime)
    res = train.evaluate_losses(
        model,
        mlp,
        records,
        lambda2=config.lambda2,
        lambda3=config.lambda3_value,
        max_chunks=max_chunks,
        device=device,
        log_sizes=manifest["log_sizes"],
        member_names=manifest["members"],
        members=config.members,
    )
    return {f"val_{k}": v for k, v in res.items() if k in ("loss", "l1", "l2", "l3")}


def run_ablations(
    family,
    collect_dir,
    main_config: APDTrainConfig,
    test: QASet,
    dev: Optional[QASet] = None,
    *,
    names=None,
    overrides: Optional[dict] = None,
    inv_T_grid: Sequence[float] = INV_T_GRID,
    top_k: int = 20,
    val_dir=None,
    val_chunks: int = 16,
    cache=None,
    device=None,
    progress: bool = True,
) -> AblationResults:
    """Train (or find cached) the reference APD and each ablation on ``collect_dir``; score each on
    ``test`` at the 1/T of ``inv_T_grid`` that is best on ``dev`` (as the main results do; with
    ``dev=None`` the grid must hold one value).

    family: what :func:`apd.amateur.runs.train_apd` takes (``locations``, ``alm``, ``tokenizer``; the
    tokenizer also reads the prompts for :func:`apd.family.logprobs.next_token_log_probs`).
    main_config: the main results' config (``pipeline.apd_model(...).config``); ``overrides`` apply
    to it AND to every ablation (:func:`ablation_configs`). val_dir: a collection of held-out text
    for the training losses (None or ``val_chunks=0``: skipped). Rows: main first, then ablations.
    """
    if dev is None and len(inv_T_grid) != 1:
        raise ValueError(f"without a dev set 1/T cannot be picked from {list(inv_T_grid)}; pass dev= or one value.")
    manifest = collect.read_manifest(collect_dir)
    configs = ablation_configs(main_config, manifest["members"], manifest["log_sizes"], names, overrides)
    base = configs[MAIN]
    dev_device = resolve_device(device)
    res = AblationResults(table=pd.DataFrame(), configs=configs)
    rows = []
    beside = runs.train_side_by_side(
        family, collect_dir, configs.values(), cache, names=[f"ablation {n}" for n in configs]
    )
    for (name, cfg), wall_beside in zip(configs.items(), beside):
        t0 = time.time()
        path = runs.train_apd(family, collect_dir, cfg, cache=cache, progress=progress)
        wall = time.time() - t0 if wall_beside is None else wall_beside  # trained in a worker: its time there
        model = runs.load_alm_prime(path, device=dev_device)
        with scoring_threads(family):  # one torch thread on the CPU (small models)
            amateur_test = logprobs.next_token_log_probs(model, family.tokenizer, test.prompts, test.vocab_size)
            inv_T = (
                float(inv_T_grid[0])
                if dev is None
                else pick_inv_T(
                    dev,
                    logprobs.next_token_log_probs(model, family.tokenizer, dev.prompts, dev.vocab_size),
                    inv_T_grid,
                    top_k,
                )
            )
        del model
        per_item = score_amateur(test, amateur_test, inv_T, top_k)
        res.per_item[name], res.paths[name] = per_item, Path(path)
        ab = None if name == MAIN else get_ablation(name)
        ref = None if ab is None else reference_of(name)
        row = {
            "name": name,
            "group": "main" if ab is None else ab.group,
            "what": "main configuration" if ab is None else ab.what,
            "changes": config_changes(cfg, base),
            "reference": ref or "",
            "inv_T": inv_T,
            **summarise(per_item, test.buckets, None if ab is None else res.per_item[ref], test.people),
            **training_record(path),
            "wall_seconds": round(wall, 2),
        }
        if val_dir is not None and val_chunks > 0:
            row.update(validation_losses(path, cfg, val_dir, val_chunks, device=dev_device))
        rows.append(row)
    res.table = pd.DataFrame(rows)
    return res


def reference_rows(
    test: QASet,
    dev: Optional[QASet] = None,
    *,
    inv_T_grid: Sequence[float] = INV_T_GRID,
    apd_per_item: Optional[pd.DataFrame] = None,
    top_k: int = 20,
) -> tuple[pd.DataFrame, dict]:
    """Rows for CD (the ALM as the amateur, 1/T picked on ``dev`` like APD's) and the ELM alone
    over its top k, scored like the ablations (paired differences to ``apd_per_item`` if given)."""
    if dev is None and len(inv_T_grid) != 1:
        raise ValueError(f"without a dev set 1/T cannot be picked from {list(inv_T_grid)}; pass dev= or one value.")
    cd_inv = float(inv_T_grid[0]) if dev is None else pick_inv_T(dev, dev.alm_logprobs, inv_T_grid, top_k)
    rows, per = [], {}
    for name, inv, what in (
        ("CD", cd_inv, "contrastive decoding, ALM as the amateur"),
        ("ELM", 0.0, f"the ELM alone, renormalised over its top {top_k}"),
    ):
        p = score_amateur(test, test.alm_logprobs, inv, top_k)
        per[name] = p
        rows.append(
            {
                "name": name,
                "group": "reference",
                "what": what,
                "changes": "",
                "inv_T": inv,
                **summarise(p, test.buckets, apd_per_item, test.people),
            }
        )
    return pd.DataFrame(rows), per


def measure_difference(a: pd.DataFrame, b: pd.DataFrame, measure: str = "kl", groups=None) -> tuple[float, float]:
    """Mean and standard error of ``a - b`` per item (two per-item frames of :func:`score_amateur`
    on the same items), over the items where both are defined; with ``groups`` (one label per item,
    e.g. :attr:`QASet.people`) the differences are averaged per group and the se taken over groups."""
    x, y = a[measure].to_numpy(dtype=float), b[measure].to_numpy(dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"per-item frames of {len(x)} and {len(y)} items: score both on the same QA set.")
    r = stats.paired_difference(x, y, groups=groups)
    return r.mean, r.se


def verdict(diff: float, se: float, z: float = 2.0, min_effect: float = 0.0) -> str:
    """'better' (``diff`` below 0 by more than ``z`` standard errors AND by at least ``min_effect``,
    e.g. nats), 'worse' (the same above 0), 'tie' otherwise, 'n/a' for NaN."""
    if not (np.isfinite(diff) and np.isfinite(se)):
        return "n/a"
    if abs(diff) < min_effect or abs(diff) <= z * se:
        return "tie"
    return "better" if diff < 0 else "worse"


def verdicts(table: pd.DataFrame, measure: str = "kl", z: float = 2.0, min_effect: float = 0.0) -> pd.Series:
    """Per row of a results table: :func:`verdict` of its paired difference to its reference run
    (``<measure>_diff``, ``<measure>_diff_se``; :func:`reference_of`); 'n/a' for the main row.
    Indexed by name."""
    d = table[f"{measure}_diff"] if f"{measure}_diff" in table else pd.Series(np.nan, index=table.index)
    se = table[f"{measure}_diff_se"] if f"{measure}_diff_se" in table else d
    return pd.Series(
        [verdict(float(a), float(b), z, min_effect) for a, b in zip(d, se)], index=table["name"].to_numpy()
    )


def label(name: str, config: Optional[APDTrainConfig] = None) -> str:
    """A short figure label, with the values a run used, e.g. ``"lambda3 = 2.4"``, ``"members m0, m5"``."""
    if name in (MAIN, "CD", "ELM"):
        return {MAIN: "reference APD", "CD": "CD", "ELM": "ELM alone"}[name]
    if config is None:
        return name
    if name == "lambda2=0":
        return "λ2 = 0"
    if name in LAMBDA3_FACTORS:
        return f"λ3 = {config.lambda3_value:.3g}"
    if name in MEMBER_SUBSETS:
        return f"{name}: {', '.join(map(str, config.members))}"
    if distilled_subset(name):
        return f"distilled, {distilled_subset(name)}: {', '.join(map(str, config.members))}"
    return {
        "logistic": "logistic decay",
        "poly1": "poly1 decay",
        "poly3": "poly3 decay",
        "no-flip": "no flip",
        "logit": "logit space",
        "half-data": f"half data ({config.data_fraction:g} of the chunks)",
        "distilled": "distilled on the fly",
    }[name]
