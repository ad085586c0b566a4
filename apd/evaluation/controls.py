"""Controls of a testbed: does a world + family show the effects the paper's argument starts from?

A claim about APD can be judged only where CD helps, curves bend and extrapolation can beat the
expert. :func:`measure_controls` measures four controls on the **dev** people of a pico world
(never the test people, so a world can be chosen by them and APD still read once on test):

1. **CD beats the expert on world QA**: KL(truth || method) and the gold token's -log(p + 0.01)
   over the ELM's top k, ELM minus CD, paired per item, standard error clustered by person
   (:func:`apd.core.stats.paired_difference`), at every 1/T of a grid down to 0.05; read at the 1/T
   with the lowest dev KL and at the paper's T = 1.
2. **CD names fewer wrong entities**: NE_ER of ELM + top-p k20 against CD + top-p k20 on the dev
   people's open-ended prompts (every opener, same seeds), grouped by person
   (:func:`apd.evaluation.factuality.power.paired_verdict`); optional (it samples text).
3. **Extrapolation can beat the expert**: the family's own noise is the on-the-fly fitter's
   held-out residual (:func:`apd.evaluation.noise.family_noise` with ``HELD_OUT``: each inner member
   left out in turn, predicted from the curve fitted to the others; root mean square over tokens);
   the known-answer families
   (:func:`apd.evaluation.known_answer.synthetic_family`) at that noise and the family's sizes say
   whether the fitter beats p_ELM there; on the world itself, where the truth is known, the fitter's
   asymptotes and p_ELM are compared with the truth per frequency bucket (total variation over the
   top k, paired per item, se by person).
4. **Head facts saturate**: the share of rising gold curves that flatten by the largest member per
   bucket (:func:`apd.family.knowledge.saturation_table`), deterministic attributes.

:meth:`Controls.passes` reads the four against :data:`CONTROL_THRESHOLDS`; :meth:`Controls.row` flattens
everything into one record for the testbed table (``scripts/testbed_study.py``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from apd.core import stats
from apd.evaluation import known_answer as ka
from apd.evaluation.distributions import method_distributions
from apd.evaluation.factuality.methods import Decoders, Method
from apd.evaluation.factuality.power import paired_verdict, summary
from apd.evaluation.factuality.sweeps import generate_continuations
from apd.evaluation.noise import HELD_OUT, family_noise
from apd.family.knowledge import saturation_table, score_world_qa
from apd.family.settings import CONTROL_INV_T_GRID
from apd.world import truth as wt
from apd.world.world import BUCKETS, DISTRIBUTIONAL, OPENERS, BioPrompt

#: The paper's T for CD and APD (1/T = 1).
CD_PAPER_INV_T = 1.0
#: What each control must reach: the KL gain in standard errors, the NE_ER difference in standard
#: errors (two-sided 5%), the fitter's error as a share of p_ELM's in the head bucket (at most 0.9:
#: 10% better).
CONTROL_THRESHOLDS = {"kl_gain_se": 3.0, "ne_er_z": stats.Z_TEST, "head_error_ratio": 0.9}


@dataclass
class Controls:
    """The controls of one world + family on its dev people (see the module docstring).

    cd_gain: one row per 1/T (index ``inv_T``): kl_elm, kl_cd (means over items), kl_gain (ELM minus
    CD averaged per person, then over people; positive: CD is closer to the truth), kl_gain_se,
    nll_gain, nll_gain_se (nats; se over people).
    dev_inv_T: the 1/T of lowest mean dev KL. residual_noise: the fitter's held-out RMS residual
    (probability). known_answer: one row per regime (``saturating``, ``still_rising``) of the
    synthetic families at that noise and the family's x: p_elm_error, fitter_error (median
    absolute errors), ratio. asymptote: one row per bucket (and ``all``) of the world's dev
    questions: tv_elm, tv_fitter (mean total variation to the truth over the top k), ratio, gain
    (p_ELM's minus the fitter's), gain_se, n. flattening: share of rising gold curves that flatten,
    per bucket. ne_er: the NE_ER comparison (:func:`apd.evaluation.factuality.power.summary` plus
    the settings), or None with ``ne_er_note`` saying why. seconds: wall time per control.
    """

    n_people: int
    n_items: int
    cd_gain: pd.DataFrame
    dev_inv_T: float
    residual_noise: float
    known_answer: pd.DataFrame
    asymptote: pd.DataFrame
    flattening: pd.Series
    ne_er: dict | None = None
    ne_er_note: str = ""
    seconds: dict = field(default_factory=dict)

    def gain_at(self, inv_T: float) -> pd.Series:
        """The ``cd_gain`` row of the 1/T nearest ``inv_T``."""
        grid = self.cd_gain.index.to_numpy(dtype=float)
        return self.cd_gain.iloc[int(np.argmin(np.abs(grid - inv_T)))]

    def passes(self) -> dict:
        """Each control against :data:`CONTROL_THRESHOLDS`: True, False, or None (not measured).

        ``cd_kl``: CD's KL gain at the dev-chosen 1/T is at least 3 standard errors (the gain is read
        on the people that chose 1/T, so it is optimistic; the test people read it without that
        bias). ``cd_ne_er``: CD's NE_ER is below the expert's by more than 1.96 se.
        ``head_extrapolation``: the fitter's head-bucket error is at most 90% of p_ELM's.
        ``head_flattens``: head curves flatten at least as often as tail curves.
        """
        g = self.gain_at(self.dev_inv_T)
        out = {"cd_kl": kl_control_passes(g["kl_gain"], g["kl_gain_se"])}
        if self.ne_er is None:
            out["cd_ne_er"] = None
        else:
            d, se = self.ne_er["diff"], self.ne_er["diff_se"]
            out["cd_ne_er"] = bool(_finite(se) and d > CONTROL_THRESHOLDS["ne_er_z"] * se)
        head = self.asymptote.loc["head"] if "head" in self.asymptote.index else None
        out["head_extrapolation"] = (
            None
            if head is None or not _finite(head["ratio"])
            else bool(head["ratio"] <= CONTROL_THRESHOLDS["head_error_ratio"])
        )
        h, t = self.flattening.get("head", np.nan), self.flattening.get("tail", np.nan)
        out["head_flattens"] = None if not (_finite(h) and _finite(t)) else bool(h >= t)
        return out

    def row(self) -> dict:
        """One flat record (plain floats, ints, bools and None) for the testbed table."""
        dev, paper = self.gain_at(self.dev_inv_T), self.gain_at(CD_PAPER_INV_T)
        r = {
            "dev_people": self.n_people,
            "dev_items": self.n_items,
            "dev_inv_T": self.dev_inv_T,
            "kl_gain_dev_T": dev["kl_gain"],
            "kl_gain_dev_T_se": dev["kl_gain_se"],
            "nll_gain_dev_T": dev["nll_gain"],
            "nll_gain_dev_T_se": dev["nll_gain_se"],
            "kl_gain_paper_T": paper["kl_gain"],
            "kl_gain_paper_T_se": paper["kl_gain_se"],
            "nll_gain_paper_T": paper["nll_gain"],
            "nll_gain_paper_T_se": paper["nll_gain_se"],
            "kl_elm": dev["kl_elm"],
        }
        for v, g in self.cd_gain.iterrows():
            r[f"kl_gain_{v:g}"] = g["kl_gain"]
            r[f"kl_gain_{v:g}_se"] = g["kl_gain_se"]
        ne = self.ne_er or {}
        r.update(
            {
                "ne_er_elm": ne.get("ne_er_b"),
                "ne_er_cd": ne.get("ne_er_a"),
                "ne_er_gain": ne.get("diff"),
                "ne_er_gain_se": ne.get("diff_se"),
                "ne_er_people": ne.get("n_people"),
                "residual_noise": self.residual_noise,
            }
        )
        for regime, k in self.known_answer.iterrows():
            r[f"ka_ratio_{regime}"] = k["ratio"]
        for b, a in self.asymptote.iterrows():
            r[f"fit_ratio_{b}"] = a["ratio"]
        for b in BUCKETS:
            r[f"flat_{b}"] = self.flattening.get(b, np.nan)
        r.update({f"pass_{k}": v for k, v in self.passes().items()})
        return {k: (None if isinstance(v, float) and math.isnan(v) else _plain(v)) for k, v in r.items()}


def kl_control_passes(gain: float, se: float) -> bool:
    """CD's KL control: the gain over the expert (nats) is at least ``CONTROL_THRESHOLDS["kl_gain_se"]``
    standard errors, with a finite, positive standard error.

    Example:
        >>> kl_control_passes(0.03, 0.01), kl_control_passes(0.02, 0.01), kl_control_passes(0.03, float("nan"))
        (True, False, False)
    """
    return _finite(se) and bool(gain >= CONTROL_THRESHOLDS["kl_gain_se"] * se > 0)


def _finite(x) -> bool:
    return x is not None and bool(np.isfinite(x))


def _plain(v):
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


# ----------------------------------------------------------------------------- 1. CD on world QA


def cd_gain_table(member_logprobs, truth, gold, people, inv_T=CONTROL_INV_T_GRID, k: int = 20) -> pd.DataFrame:
    """ELM minus CD (ALM = the smallest member) in KL to the truth and gold -log(p + 0.01), per 1/T.

    member_logprobs ``(N, B, V)`` (ALM first, ELM last); truth ``(B, V)``; gold ``(B,)`` token ids;
    people ``(B,)`` the person each item asks about (the cluster of the standard error). Returns
    one row per 1/T (see :class:`Controls`).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> lp = np.log(rng.dirichlet(np.ones(30), size=(2, 8)))
        >>> t = cd_gain_table(lp, np.eye(30)[np.argmax(lp[1], -1)], np.argmax(lp[1], -1), list("aabbccdd"), inv_T=(0.5,))
        >>> list(t.columns)[:3], t.index.tolist()
        (['kl_elm', 'kl_cd', 'kl_gain'], [0.5])
    """
    md = method_distributions(member_logprobs, inv_T=tuple(float(v) for v in inv_T), fly_weights=(), k=k)
    frame = md.frame(truth=truth, gold=gold)
    people = np.asarray(people)
    elm = frame[frame["method"] == "ELM"].set_index("item")
    rows = []
    for v in inv_T:
        cd = frame[(frame["method"] == "CD") & np.isclose(frame["knob"], float(v))].set_index("item")
        kl = stats.paired_difference(elm["kl"].to_numpy(), cd["kl"].to_numpy(), groups=people)
        nll = stats.paired_difference(elm["nll"].to_numpy(), cd["nll"].to_numpy(), groups=people)
        rows.append(
            {
                "inv_T": float(v),
                "kl_elm": float(np.nanmean(elm["kl"])),
                "kl_cd": float(np.nanmean(cd["kl"])),
                "kl_gain": kl.mean,
                "kl_gain_se": kl.se,
                "nll_gain": nll.mean,
                "nll_gain_se": nll.se,
                "n": kl.n,
                "n_people": kl.n_groups,
            }
        )
    return pd.DataFrame(rows).set_index("inv_T")


# ----------------------------------------------------------------------------- 3. extrapolation


def known_answer_at_noise(
    noise: float, log_sizes, n_positions: int = 25, seed: int = 0, iterations: int = 400, device=None
) -> pd.DataFrame:
    """The fitter against p_ELM on the known-answer families at ``noise`` and the family's x, per
    regime: p_elm_error, fitter_error (median |c_hat - c_true|), ratio (fitter / p_ELM); the fits
    on ``device`` (default: the CPU)."""
    rows = {}
    x = tuple(float(v) for v in log_sizes)
    for i, regime in enumerate(ka.REGIMES):
        probs, c_true = ka.synthetic_family(x, n_positions, regime=regime, noise=float(noise), seed=seed + 10 * i)
        e_elm = ka.median_abs_error(ka.estimate_p_elm(probs).c_hat, c_true)
        fit = ka.estimate_fitter(probs, x, "tuned", iterations=iterations, device=device)
        e_fit = ka.median_abs_error(fit.c_hat, c_true)
        rows[regime] = {"p_elm_error": e_elm, "fitter_error": e_fit, "ratio": e_fit / e_elm if e_elm > 0 else np.nan}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "regime"
    return out


def asymptote_errors(
    member_logprobs, log_sizes, truth, ids, people, buckets, iterations: int = 400, device=None
) -> pd.DataFrame:
    """The fitter's asymptotes (APD on the fly at w = 1, fitted on ``device``, default the CPU) and
    p_ELM against the world's truth, per bucket and ``all``: mean total variation over the
    candidates ``ids`` (truth renormalised there; items whose truth has no mass on them are left
    out), their ratio, and p_ELM's minus the fitter's, paired per item with the se clustered by
    person."""
    p_elm, p_ap, _ = wt.on_the_fly_topk(member_logprobs, log_sizes, ids, iterations=iterations, device=device)
    t = wt.at(truth, ids)
    mass = t.sum(-1, keepdims=True)
    ok = mass[:, 0] > 0
    tn = np.divide(t, mass, out=np.zeros_like(t), where=mass > 0)
    tv_elm = np.where(ok, 0.5 * np.abs(p_elm - tn).sum(-1), np.nan)
    tv_fit = np.where(ok, 0.5 * np.abs(p_ap - tn).sum(-1), np.nan)
    people, buckets = np.asarray(people), np.asarray(buckets)
    rows = {}
    for b in [*BUCKETS, "all"]:
        sel = np.ones(len(buckets), bool) if b == "all" else buckets == b
        if not sel.any():
            continue
        d = stats.paired_difference(tv_elm[sel], tv_fit[sel], groups=people[sel])
        e, f = float(np.nanmean(tv_elm[sel])), float(np.nanmean(tv_fit[sel]))
        rows[b] = {
            "tv_elm": e,
            "tv_fitter": f,
            "ratio": f / e if e > 0 else np.nan,
            "gain": d.mean,
            "gain_se": d.se,
            "n": d.n,
        }
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "bucket"
    return out


# ----------------------------------------------------------------------------- 2. NE_ER


def dev_bio_prompts(world, people, openers=OPENERS) -> list[BioPrompt]:
    """Every opener for every person of ``people`` (names), person-major."""
    return [
        BioPrompt(prompt=world.person(n).name + o, person=n, bucket=world.person(n).bucket)
        for n in people
        for o in openers
    ]


def ne_er_gain(
    family,
    world,
    people,
    cd_T: float = 2.0,
    p: float = 0.8,
    seeds=(0, 1),
    max_new_tokens: int = 32,
    batch_size: int = 64,
) -> dict:
    """ELM + top-p k20 against CD (T = ``cd_T``) + top-p k20 at ``p`` on :func:`dev_bio_prompts`
    of ``people``, the same seeds for both: :func:`apd.evaluation.factuality.power.summary` (``diff``
    = ELM's NE_ER minus CD's, positive: CD names fewer wrong entities) plus the settings."""
    prompts = dev_bio_prompts(world, people)
    dec = Decoders(
        family.model(family.names[-1]),
        family.tokenizer,
        alm=family.model(family.names[0]),
        vocab_size=family.vocab_size,
    )
    texts = [q.prompt for q in prompts]
    elm = generate_continuations(dec, Method("ELM", "top-p k20", float(p)), texts, seeds, max_new_tokens, batch_size)
    cd = generate_continuations(
        dec, Method("CD", "top-p k20", float(p), float(cd_T)), texts, seeds, max_new_tokens, batch_size
    )
    out = summary(paired_verdict(world, prompts, cd, elm))  # A = CD, B = ELM: diff = ELM's minus CD's
    out.update(
        {
            "cd_T": float(cd_T),
            "p": float(p),
            "seeds": len(seeds),
            "max_new_tokens": int(max_new_tokens),
            "prompts": len(prompts),
        }
    )
    return out


# ----------------------------------------------------------------------------- all four


def fit_device(family) -> str | None:
    """Where the controls fit their curves: the family's CUDA device when it has one (thousands of
    curves at once keep a GPU busy), else None (the CPU, the book's reference numbers).

    Example:
        >>> class Fam: device = "cpu"
        >>> fit_device(Fam()) is None
        True
    """
    device = str(getattr(family, "device", "cpu"))
    return device if device.startswith("cuda") else None


def measure_controls(
    family,
    built,
    *,
    seed: int = 0,
    inv_T=CONTROL_INV_T_GRID,
    k: int = 20,
    fit_iterations: int = 400,
    ne_er: bool = True,
    cd_T: float = 2.0,
    ne_er_seeds=(0, 1),
    max_new_tokens: int = 32,
    known_answer_positions: int = 25,
    progress: bool = False,
) -> Controls:
    """The four controls of a pico ``family`` and its ``built`` (:class:`apd.family.pico.PicoBuild`)
    on the dev people of the book's split (``seed``). ``ne_er=False`` skips the sampled NE_ER
    control (``Controls.ne_er`` None). See the module docstring for what each control measures.

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> c = measure_controls(fam, built, ne_er=False, fit_iterations=50, known_answer_positions=4)
        >>> sorted(c.passes())
        ['cd_kl', 'cd_ne_er', 'head_extrapolation', 'head_flattens']
    """
    if built is None:
        raise ValueError(
            "testbed controls need the pico world's truth: pass the PicoBuild that get_family returns "
            "for the pico family (a Hub family has no world)."
        )
    world = built.corpus.world
    seconds = {}
    t0 = time.time()
    dev, _ = wt.dev_test_split(built.corpus.qa_items, world, seed)
    if not dev:
        raise ValueError("the world has no dev people; raise WorldConfig.n_people.")
    scores = score_world_qa(family, world, dev, progress=progress)
    x = np.asarray(family.log_sizes, dtype=np.float64)
    people = np.array([it.person for it in dev])
    buckets = np.array([it.bucket for it in dev])
    seconds["score"] = time.time() - t0

    t0 = time.time()
    gain = cd_gain_table(scores.logprobs, scores.truth, scores.gold, people, inv_T, k)
    dev_inv_T = float(stats.best_knob(gain.index, gain["kl_cd"]))
    seconds["cd_gain"] = time.time() - t0

    t0 = time.time()
    ids = wt.topk_ids(scores.logprobs[-1], k)
    dev_ = fit_device(family)
    noise = family_noise(
        HELD_OUT, member_logprobs=scores.logprobs, log_sizes=x, ids=ids, iterations=fit_iterations, device=dev_
    )
    known = known_answer_at_noise(noise, x, known_answer_positions, seed, fit_iterations, device=dev_)
    asym = asymptote_errors(scores.logprobs, x, scores.truth, ids, people, buckets, fit_iterations, device=dev_)
    seconds["extrapolation"] = time.time() - t0

    t0 = time.time()
    det = np.array([it.attribute not in DISTRIBUTIONAL for it in dev])
    sub = type(scores)(
        scores.names,
        scores.log_sizes,
        [it for it, d in zip(dev, det) if d],
        scores.logprobs[:, det],
        scores.gold[det],
        scores.choices[det],
        scores.truth[det],
        scores.frame,
    )
    flat = saturation_table(sub)["share flattening (of rising)"]
    seconds["flattening"] = time.time() - t0

    ne, note = None, "not run (ne_er=False)"
    if ne_er:
        t0 = time.time()
        ne = ne_er_gain(
            family, world, sorted(set(people)), cd_T=cd_T, seeds=ne_er_seeds, max_new_tokens=max_new_tokens
        )
        note = ""
        seconds["ne_er"] = time.time() - t0
    return Controls(
        n_people=len(set(people)),
        n_items=len(dev),
        cd_gain=gain,
        dev_inv_T=dev_inv_T,
        residual_noise=noise,
        known_answer=known,
        asymptote=asym,
        flattening=flat,
        ne_er=ne,
        ne_er_note=note,
        seconds=seconds,
    )
