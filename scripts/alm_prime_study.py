"""Why the release configuration's ALM' ends far from its objective's optimum: experiments that
separate the candidate causes of a flat curve MLP, on a pico family's collected token sets.

    APD_CACHE_DIR=/work/apd-cache python scripts/alm_prime_study.py --scale default --out /tmp/alm-study
    APD_CACHE_DIR=/tmp/study-cache python scripts/alm_prime_study.py --scale smoke --collect --lambda3 0.2 \\
        --out /tmp/alm-study-smoke --csv /tmp/alm-study-smoke/study.csv

Every run is made by the trainer's own functions (:mod:`apd.amateur.train`: the plan, the objective
and AdamW, the optimizer step with its lr schedule, batch order and dropout seeds), so a run with the
release configuration is the book's run. What the trainer has no option for is done here:

- *MLP alone* (group A): ALM' frozen for every step (the trainer's MLP-only warm-up stretched over the
  whole run; c is then CD's asymptote at T = 1, softmax(L_ELM - L_ALM)), so only the curve MLP learns;
- *release hidden init*: the curve MLP's hidden Linear layers drawn from N(0, 0.02) with zero biases
  (the release's), instead of PyTorch's default; the head stays zero-initialised either way.

Group A (the release schedule, lr 1e-3, batches of 8, over ``--a-fraction`` of the chunks) crosses
x_origin (zero: raw ln sizes; alm: measured from the ALM) x hidden init (torch, release) x dropout on
the middle members (0.5, 0), and adds the conditioned start (``start="conditioned"``) with the
trainer's amplitude a0 (the median ALM-ELM spread over all tokens of the sets) and with a0 read over
the top 20 tokens of each set only. Group A2 trains the curve MLP alone with c fixed at p_ELM instead
(ALM' logits constant over each set; held-out L3 that of the ALM' nearest the ALM with that c, as the
gates' expert solution), the setting of an earlier measurement: the release's MLP, then x_origin="alm",
the release hidden init, dropout 0, those three together, and the two conditioned starts. Group B
trains ALM' jointly with the paper's objective: the release recipe as the book trains it, the same for
2 epochs, the paper's optimiser (lr 1e-4, 5 epochs, 100 warm-up steps, batches of 64 where the
collection allows), x_origin="alm", the release hidden init, and the best combination of group A
(lowest held-out L).

Measured on the held-out chunks the mechanism gates read (``Settings.gate_chunks`` chunks of the
validation text, :func:`apd.amateur.pipeline.gate_collection`), as :mod:`apd.amateur.gates` measures
them: over the ELM's top 20 tokens of each set (renormalised), pooled over positions, the paper's
L1, L2, L3 and L = L1 + lambda2 L2 + lambda3 L3, the curve-alive ratio, the L1 of a flat curve at c,
the share of tokens within 0.005 of p_ELM and KL(ALM || ALM'); beside them the trainer's own held-out
objective (``loss_set``: :func:`apd.amateur.train.evaluate_losses`, all 30 tokens of each set, the mean
over batches of 4 chunks) and the training wall seconds (held-out evaluations left out). Rows for the
attainable solution, the expert and CD come from :func:`apd.amateur.gates.measure_gates` (its L at
the first trained run is printed beside this script's, as a check). One row per experiment goes to
``--csv``; the held-out readings at step 0 and about ``--points`` times per run to ``--curve-csv``.

The family must be trained and its two collections made already (the book's build makes them); the
script finds them by their cache keys and stops when they are missing, unless ``--collect`` (for a
scratch cache only) lets it make them. lambda3 is the book's tuned value for the release
configuration, read from its cached tuning table; ``--lambda3`` gives it when there is none.
Runs go under ``--out`` (never into the cache). One torch thread.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RELEASE_LABEL = "release recipe, as the book trains it"
CURVE_FIELDS = ["experiment", "step", "epoch", "l1", "l2", "l3", "loss", "curve_alive", "at_expert", "kl", "loss_set"]
ROW_FIELDS = [
    "group",
    "experiment",
    "changes",
    "steps",
    "batch",
    "epochs",
    "lr",
    "warmup_steps",
    "lambda3",
    "l1",
    "l2",
    "l3",
    "loss",
    "curve_alive",
    "l1_flat",
    "at_expert",
    "kl_alm_alm_prime",
    "loss_set",
    "wall_s",
]


@dataclass(frozen=True)
class Experiment:
    """One training run: ``fields`` change the release configuration's APDTrainConfig; ``init`` is the
    curve MLP's hidden init ("torch" or "release"); ``mlp_only``: ALM' frozen for the whole run."""

    group: str
    name: str
    changes: str
    fields: dict = field(default_factory=dict)
    init: str = "torch"
    mlp_only: bool = False
    c_expert: bool = False  # MLP alone with c fixed at p_ELM (ALM' logits constant over each set)
    a0: str = ""  # conditioned start: "" the trainer's a0 (median spread over all tokens), "top20" over the top 20
    data_fraction: Optional[float] = None  # None: the release configuration's


def say(text: str) -> None:
    print(f"[alm-study {time.strftime('%H:%M:%S')}] {text}", flush=True)


# -- finding what the book's build made (never making it, unless --collect) ------------------------


def find_collection(fam, texts, config, cache: Path, make: bool) -> Optional[Path]:
    """The folder :func:`apd.amateur.runs.collect_family` would return for ``texts``, if it is complete
    (made by it when ``make``), else None."""
    from apd.amateur import runs
    from apd.family.text import token_stream

    if make:
        return Path(runs.collect_family(fam, texts, config, cache=cache, progress=True))
    ids = token_stream(fam.tokenizer, texts)
    key = runs.collection_key(
        [(n, runs.member_identity(fam.locations[n])) for n in fam.names],
        np.asarray(fam.log_sizes).tolist(),
        ids.tobytes(),
        asdict(config),
    )
    out = cache / "collected" / key
    return out if runs._collection_ready(out) else None


def book_lambda3(built, settings, collect_dir: Path, cache: Path) -> Optional[float]:
    """The lambda3 the book's lambda3 tuning chose for the release configuration (its cached tuning
    table, found by the key :func:`apd.amateur.tuning.tune_lambda3` gives it), or None."""
    from apd.amateur import tuning
    from apd.amateur.variants import RELEASE, get_variant, lambda3_grid, variant_config
    from apd.world import truth

    base = variant_config(RELEASE, settings, tuning=True)
    dev, _ = truth.dev_test_split(built.corpus.qa_items, built.corpus.world, 0)
    grid, score = lambda3_grid(RELEASE, settings), get_variant(RELEASE).score
    key = tuning.tuning_key(collect_dir, base, grid, dev, score, settings.inv_T_grid)
    path = cache / "apd" / f"tuning-{key}.json"
    if not path.is_file():
        return None
    return float(json.loads(path.read_text())["best"])


# -- the measurements ----------------------------------------------------------------------------


@torch.no_grad()
def top_k_arrays(alm_prime: nn.Module, mlp, held, n_chunks: int, top_k: int = 20, c_expert: bool = False) -> dict:
    """What the gates read (:func:`apd.amateur.gates.measure_gates`), for an in-memory ALM' and curve
    MLP on the first ``n_chunks`` held-out chunks, over the ELM's top ``top_k`` tokens of each set:
    member log-probabilities ``lp`` (N, P, k), raw logits ``elm``, ``alm``, ``prime`` (P, k) and the
    MLP's curve at the members ``curve`` (P, k, N; probabilities, unflipped; the MLP reads the top-k
    probabilities renormalised, as the gates draw it). ``c_expert``: ALM' is the ALM' nearest the ALM
    whose c is p_ELM (its logits the mean of the ALM's over the k tokens: the gates' expert solution)."""
    from apd.amateur.objective import predict_curves

    was = (alm_prime.training, mlp.training)
    alm_prime.eval()
    mlp.eval()
    k = slice(0, top_k)
    lp, elm, alm, prime, drawn = [], [], [], [], []
    for i in range(min(n_chunks, len(held))):
        rec = held[i]
        alm.append(rec["alm_logits"][:, k])
        if c_expert:
            prime.append(alm[-1].mean(-1, keepdim=True).expand_as(alm[-1]))
        else:
            ids, tok = rec["input_ids"][None], rec["token_ids"][:, k]
            prime.append(alm_prime(input_ids=ids).logits[0].float().gather(-1, tok))
        elm.append(rec["elm_logits"][:, k])
        lp.append(rec["member_logprobs"][..., k])
        lp[-1][-1] = elm[-1]  # the ELM's row from the logits c is computed from, as the gates read it (gates-v4)
        drawn.append(predict_curves(mlp, lp[-1], elm[-1], prime[-1], x=mlp.log_sizes).curve)
    alm_prime.train(was[0])
    mlp.train(was[1])
    return {
        "lp": torch.cat(lp, 1).double(),
        "elm": torch.cat(elm).double(),
        "alm": torch.cat(alm).double(),
        "prime": torch.cat(prime).double(),
        "curve": torch.cat(drawn).double(),
    }


def readings(arrays: dict, lambda2: float, lambda3: float, tol: float = 0.005) -> dict:
    """The paper's objective over the arrays' tokens (:func:`apd.amateur.gates.objective_terms`: L1, L2,
    L3, L) and the gates' readings of the same solution (:func:`apd.amateur.gates.gate_readings`):
    curve_alive, l1_flat (a flat curve at c), at_expert (share of tokens with |c - p_ELM| <= tol) and
    kl (KL(ALM || ALM'))."""
    from apd.amateur import gates
    from apd.amateur.objective import asymptote

    lp, elm, alm, prime, curve = (arrays[k] for k in ("lp", "elm", "alm", "prime", "curve"))
    sol = gates.Solution(prime, curve, asymptote(elm, prime))
    g = gates.gate_readings(lp, elm, alm, sol, collapse_tol=tol)
    return {
        **gates.objective_terms(lp, alm, sol, lambda2=lambda2, lambda3=lambda3),
        "curve_alive": g["curve_alive"],
        "l1_flat": g["l1_flat"],
        "at_expert": g["collapsed"],
        "kl": g["moved_kl"],
    }


def held_out(objective, held, n_chunks: int, lambda2: float, lambda3: float, c_expert: bool = False) -> dict:
    """:func:`readings` on the held-out chunks, and the trainer's own held-out objective
    (:func:`apd.amateur.train.evaluate_losses`: all tokens of each set, the mean of batches of 4
    chunks) as ``loss_set``; the objective's modules are left in training mode, as the trainer keeps them.
    ``c_expert``: c fixed at p_ELM (:func:`top_k_arrays`); no ``loss_set`` and no KL then."""
    from apd.amateur.train import evaluate_losses

    arrays = top_k_arrays(objective.alm, objective.mlp, held, n_chunks, c_expert=c_expert)
    out = readings(arrays, lambda2, lambda3)
    if c_expert:
        return out | {"loss_set": math.nan, "kl": math.nan}
    whole = evaluate_losses(
        objective.alm, objective.mlp, held, lambda2=lambda2, lambda3=lambda3, max_chunks=n_chunks, device="cpu"
    )
    objective.train()
    return out | {"loss_set": whole["loss"]}


def top20_amplitude(data) -> float:
    """a0 of a conditioned start read over the ELM's top 20 tokens of each set only: the median |p_ALM -
    p_ELM| (probabilities renormalised over the whole set, as the MLP reads them in training) over the
    first :data:`apd.amateur.train.START_CHUNKS` chunks, at least 1e-3 (the trainer's floor)."""
    from apd.amateur.objective import member_values
    from apd.amateur.train import START_CHUNKS

    lp = torch.stack([data[i]["member_logprobs"] for i in range(min(len(data), START_CHUNKS))])  # (C, N, S, K)
    v = member_values(lp)[..., :20]
    return max(float((v[:, 0] - v[:, -1]).abs().median()), 1e-3)


def storage_floor(held, n_chunks: int, top_k: int = 20) -> dict:
    """How far c = p_ELM realised through the stored ELM logits, softmax(L_ELM) over the top ``top_k``,
    lies from the stored p_ELM renormalised (both stored in float16): the largest and the mean absolute
    difference, and the L2 of a flat curve at that c (members flipped as in training): L2's floor for
    any ALM' whose c is the expert's through those logits."""
    from apd.amateur.objective import loss_l2, member_values
    from apd.core import curves

    lp = torch.cat([held[i]["member_logprobs"][..., :top_k] for i in range(n_chunks)], 1).double()  # (N, P, k)
    elm = torch.cat([held[i]["elm_logits"][:, :top_k] for i in range(n_chunks)]).double()
    p = member_values(lp).movedim(0, -1)  # (P, k, N)
    c = torch.softmax(elm, -1)
    flipped = curves.flip_mask(p[..., :1], p[..., -1:])
    flat = curves.flip_values(c[..., None].expand_as(p), flipped)
    diff = (c - p[..., -1]).abs()
    return {
        "max_abs": float(diff.max()),
        "mean_abs": float(diff.mean()),
        "l2_floor": float(loss_l2(flat, curves.flip_values(p, flipped))),
    }


def release_init(mlp) -> None:
    """The release's init of the curve MLP's hidden layers: weights N(0, 0.02), biases 0 (the head
    stays zero)."""
    with torch.no_grad():
        for layer in mlp.body:
            if isinstance(layer, nn.Linear):
                nn.init.normal_(layer.weight, 0.0, 0.02)
                nn.init.zeros_(layer.bias)


# -- one run -------------------------------------------------------------------------------------


def train_one(exp: Experiment, base, fam, data, held, n_held: int, out_root: Path, points: int):
    """Train ``exp`` with the trainer's functions; (row, curve rows, alm_prime folder)."""
    from apd.amateur import train as T

    cfg = replace(base, **exp.fields)
    if exp.data_fraction is not None:
        cfg = replace(cfg, data_fraction=exp.data_fraction)
    out_dir = out_root / exp.name.replace(" ", "_").replace(",", "").replace("=", "-")
    shutil.rmtree(out_dir, ignore_errors=True)  # always a fresh run: its held-out curve is recorded
    plan, alm = T._plan(cfg, fam.locations[fam.alm], data, out_dir, None, None)
    if exp.mlp_only:  # the MLP-only warm-up over every step: ALM' frozen, c = CD's asymptote at T = 1
        mlp_warmup = plan.total
        cfg = replace(cfg, mlp_warmup_steps=plan.total)
    else:
        mlp_warmup = T._check_mlp_warmup(cfg, plan)
    objective, mlp, optimizer = T._objective_and_optimizer(cfg, alm, plan, mlp_warmup)
    if exp.init == "release":
        release_init(objective.mlp)
    if exp.c_expert:  # constant ALM' logits over each set: c = softmax(L_ELM) over the set = p_ELM
        if not exp.mlp_only:
            raise ValueError("c fixed at p_ELM needs ALM' frozen (mlp_only)")
        objective.alm_prime_logits = lambda input_ids, token_ids: torch.zeros(token_ids.shape)
    if exp.a0 == "top20":
        a0 = top20_amplitude(plan.data)
        with torch.no_grad():
            objective.mlp.head.bias[0] = math.log(a0)
        objective.mlp.settings["a0"] = a0
        say(f"  conditioned start with a0 = {a0:.4g} (median ALM-ELM spread over the top 20 of each set)")
    T._start_record(plan, 0)
    say(
        f"training {exp.group} {exp.name!r} ({exp.changes}): {plan.total} steps of {cfg.batch_size} chunks, lr "
        f"{cfg.lr:g}, warm-up {plan.warmup}, lambda3 {plan.lambda3:g}{', ALM frozen' if exp.mlp_only else ''}"
        f"{', c = p_ELM' if exp.c_expert else ''} "
        f"-> {out_dir}"
    )
    every = max(1, plan.total // points)
    curve, evals = [], 0.0

    def record(step: int):
        nonlocal evals
        t = time.time()
        m = held_out(objective, held, n_held, cfg.lambda2, plan.lambda3, exp.c_expert)
        curve.append({"experiment": exp.name, "step": step, "epoch": step / plan.steps_per_epoch, **m})
        evals += time.time() - t
        return m

    record(0)
    t0 = time.time()
    step = 0
    while step < plan.total:
        T._optimizer_step(cfg, plan, objective, objective, optimizer, step, mlp_warmup, t0)
        step += 1
        if step % every == 0 or step == plan.total:
            m = record(step)
            say(
                f"  step {step}/{plan.total}: held-out L {m['loss']:.4f} (L1 {m['l1']:.4f}, L2 {m['l2']:.4f}, "
                f"L3 {m['l3']:.4f}), curve alive {m['curve_alive']:.3f}"
            )
    wall = time.time() - t0 - evals
    T._save_final(plan, objective, mlp, fam.tokenizer)
    final = curve[-1]
    row = {
        "group": exp.group,
        "experiment": exp.name,
        "changes": exp.changes,
        "steps": plan.total,
        "batch": cfg.batch_size,
        "epochs": cfg.epochs,
        "lr": cfg.lr,
        "warmup_steps": plan.warmup,
        "lambda3": plan.lambda3,
        **{k: final[k] for k in ("l1", "l2", "l3", "loss", "curve_alive", "l1_flat", "at_expert", "loss_set")},
        "kl_alm_alm_prime": final["kl"],
        "wall_s": round(wall, 1),
    }
    say(
        f"  done in {wall:.0f} s: L {row['loss']:.4f}, alive {row['curve_alive']:.3f}, at expert "
        f"{row['at_expert']:.3f}, KL {row['kl_alm_alm_prime']:.4f}"
    )
    return row, curve, plan.final


# -- the experiments -----------------------------------------------------------------------------


def group_a(fraction: float) -> list[Experiment]:
    """The curve MLP alone (ALM' frozen), release schedule over ``fraction`` of the chunks: x_origin x
    hidden init x dropout, then the conditioned start with the trainer's a0 and with a0 over the top 20."""
    out = []
    for x_origin in ("zero", "alm"):
        for init in ("torch", "release"):
            for dropout in (0.5, 0.0):
                changes = f"x_origin={x_origin}, {init} hidden init, dropout {dropout:g}"
                out.append(
                    Experiment(
                        "A",
                        f"A mlp-only {x_origin} {init} d{dropout:g}",
                        "MLP alone (ALM frozen), " + changes,
                        {"x_origin": x_origin, "mid_dropout": dropout},
                        init=init,
                        mlp_only=True,
                        data_fraction=fraction,
                    )
                )
    for a0, what in (("", "a0 over all 30 tokens of a set (the trainer's)"), ("top20", "a0 over the top 20 tokens")):
        out.append(
            Experiment(
                "A",
                f"A mlp-only conditioned{' ' + a0 if a0 else ''}",
                f"MLP alone (ALM frozen), conditioned start, {what}",
                {"start": "conditioned"},
                mlp_only=True,
                a0=a0,
                data_fraction=fraction,
            )
        )
    return out


def group_a2(fraction: float) -> list[Experiment]:
    """The curve MLP alone with c fixed at p_ELM (the expert's asymptote, the objective's trivial
    solution): the release's MLP, then one change at a time, one combination, and the conditioned starts."""
    rows = [
        ("zero torch d0.5", "x_origin=zero, torch hidden init, dropout 0.5 (the release's MLP)", {}, "torch", ""),
        ("alm torch d0.5", "x_origin=alm", {"x_origin": "alm"}, "torch", ""),
        ("zero release d0.5", "release hidden init", {}, "release", ""),
        ("zero torch d0", "dropout 0", {"mid_dropout": 0.0}, "torch", ""),
        (
            "alm release d0",
            "x_origin=alm, release hidden init, dropout 0",
            {"x_origin": "alm", "mid_dropout": 0.0},
            "release",
            "",
        ),
        (
            "conditioned",
            "conditioned start, a0 over all 30 tokens (the trainer's)",
            {"start": "conditioned"},
            "torch",
            "",
        ),
        (
            "conditioned top20",
            "conditioned start, a0 over the top 20 tokens",
            {"start": "conditioned"},
            "torch",
            "top20",
        ),
    ]
    return [
        Experiment(
            "A2",
            f"A2 mlp-only c=p_ELM {name}",
            "MLP alone, c fixed at p_ELM, " + what,
            fields,
            init=init,
            mlp_only=True,
            c_expert=True,
            a0=a0,
            data_fraction=fraction,
        )
        for name, what, fields, init, a0 in rows
    ]


def paper_batch(n_chunks: int) -> int:
    """The paper's 64 chunks per step, halved until an epoch has at least 4 steps."""
    batch = 64
    while batch > 8 and n_chunks // batch < 4:
        batch //= 2
    return batch


def group_b(base, n_chunks: int, best_a: Optional[Experiment]) -> list[Experiment]:
    batch = paper_batch(n_chunks)
    out = [
        Experiment("B", RELEASE_LABEL, "joint, the book's release configuration", {}),
        Experiment(
            "B",
            "paper optimiser",
            f"joint, lr 1e-4, 5 epochs, 100 warm-up steps, batch {batch} (micro 8)",
            {"lr": 1e-4, "epochs": 5, "warmup_steps": 100, "batch_size": batch, "micro_batch_size": 8},
        ),
        Experiment(
            "B",
            "release recipe, 2 epochs",
            "joint, the release configuration trained for 2 epochs (its schedule stretched over them)",
            {"epochs": 2},
        ),
        Experiment("B", "x_origin=alm", "joint, release recipe with x measured from the ALM", {"x_origin": "alm"}),
        Experiment(
            "B",
            "release hidden init",
            "joint, release recipe with the release's N(0, 0.02) hidden init",
            {},
            init="release",
        ),
    ]
    if best_a is not None:
        key = lambda e: (replace(base, **e.fields), e.init, e.a0)  # noqa: E731
        same = [e for e in out if key(e) == key(best_a)]
        if same:
            say(f"the best group-A combination ({best_a.changes}) is row {same[0].name!r} of group B already")
        else:
            out.append(
                Experiment(
                    "B",
                    "best of A",
                    "joint, release recipe with the best group-A combination: " + best_a.changes.split("), ", 1)[-1],
                    dict(best_a.fields),
                    init=best_a.init,
                    a0=best_a.a0,
                )
            )
    return out


def write_csv(path: Path, rows: list[dict], names: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=names, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) and math.isfinite(v) else v) for k, v in r.items()})


REFERENCES = (
    (
        "attainable",
        "attainable solution",
        "the on-the-fly fitter's curves, c their renormalised asymptotes, the least L3",
    ),
    ("expert", "expert, c = p_ELM", "a flat curve at c = p_ELM, the ALM' nearest the ALM that realises it"),
    ("cd", "CD (ALM' = ALM)", "a flat curve at CD's c, L3 = 0"),
)


def references(row: dict, folder: Path, held_dir: Path, n_held: int) -> list[dict]:
    """The objective at the attainable solution, the expert and CD (:func:`apd.amateur.gates.measure_gates`
    on the run in ``folder``, whose ``row`` it also checks: the gates' L at the trained ALM' against this
    script's); [] when the gates module does not measure them."""
    from apd.amateur import gates

    t = time.time()
    try:
        g = gates.measure_gates(folder, held_dir, max_chunks=n_held, device="cpu").to_dict()
    except Exception as err:  # noqa: BLE001 (a gates module without the reference solutions)
        say(f"no reference rows: measure_gates failed ({type(err).__name__}: {err})")
        return []
    if "loss_attainable" not in g:
        say("no reference rows: this apd.amateur.gates does not evaluate the objective at the four solutions")
        return []
    if row["group"] != "A2":  # (with c fixed at p_ELM the saved ALM' is not the one measured)
        say(
            f"the gates' own L of {row['experiment']!r}: {g['loss_trained']:.6f} (this script: {row['loss']:.6f}); "
            f"curve alive {g['curve_alive']:.4f} ({row['curve_alive']:.4f}); measured in {time.time() - t:.0f} s"
        )
    out = []
    for key, name, what in REFERENCES:
        out.append(
            {
                "group": "ref",
                "experiment": name,
                "changes": what + " (not trained)",
                "lambda3": g["lambda3"],
                **{term: g[f"{term}_{key}"] for term in ("l1", "l2", "l3", "loss")},
                "at_expert": g["collapsed_cd"] if key == "cd" else g[f"collapsed_{key}"],
                "kl_alm_alm_prime": 0.0 if key == "cd" else "",
            }
        )
    return out


def compare_with_book(folder: Path, base, collect_dir: Path, cache: Path) -> None:
    """Say whether the release-recipe row reproduced the book's cached run (same fingerprint, weights)."""
    from apd.amateur.runs import train_dir

    book = train_dir(collect_dir, base, cache)
    mine = json.loads((folder / "apd_train_config.json").read_text())
    record = book / "alm_prime" / "apd_train_config.json"
    if not record.is_file():
        say(f"the book's release run is not in the cache ({book}); nothing to compare the release row with")
        return
    theirs = json.loads(record.read_text())
    same_fp = mine["fingerprint"] == theirs["fingerprint"]
    from safetensors.torch import load_file

    a, b = load_file(str(folder / "model.safetensors")), load_file(str(book / "alm_prime" / "model.safetensors"))
    diff = max(float((a[k] - b[k]).abs().max()) for k in a)
    say(f"release row vs the book's run {book.name}: same fingerprint {same_fp}, max |weight difference| {diff:.3g}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", default="default", help="pico scale (default: default)")
    ap.add_argument("--out", default="/tmp/alm-study", help="folder for the study's ALM' runs")
    ap.add_argument("--csv", default=str(ROOT / "docs/amateur/alm_prime_study.csv"))
    ap.add_argument("--curve-csv", default=None, help="default: <csv stem>_curve.csv beside --csv")
    ap.add_argument("--lambda3", type=float, default=None, help="when the book's tuned value is not cached")
    ap.add_argument("--collect", action="store_true", help="make missing collections (scratch caches only)")
    ap.add_argument("--points", type=int, default=16, help="held-out evaluations per run (besides step 0)")
    ap.add_argument("--groups", default="A2B", help="which groups to run: A, 2 (A2), B, or several (A2B)")
    ap.add_argument("--a-fraction", type=float, default=0.5, help="share of the chunks group A trains on")
    ap.add_argument("--no-references", action="store_true", help="skip the attainable / expert / CD rows")
    args = ap.parse_args(argv)

    torch.set_num_threads(1)
    import apd
    from apd.amateur.data import CollectedChunks, collected_chunks
    from apd.amateur.runs import collect_config, finetune_texts, train_config
    from apd.base import paths
    from apd.family.settings import settings_for
    from apd.family.text import texts_for_tokens

    cache = paths.cache_dir()
    settings = settings_for("pico", args.scale)
    say(f"loading the pico {args.scale} family from {cache}")
    fam, built = apd.get_family("pico", args.scale, device="cpu", progress=False)
    config = collect_config(settings, built)
    train_dir = find_collection(fam, finetune_texts(fam, built), config, cache, args.collect)
    held_texts = texts_for_tokens(
        fam.tokenizer, list(built.corpus.validation), settings.gate_chunks * (config.seq_len + 1)
    )
    held_dir = find_collection(fam, held_texts, config, cache, args.collect)
    if train_dir is None or held_dir is None:
        raise SystemExit(
            f"the family's collections are not in {cache} yet (training: {train_dir}, held-out: {held_dir}); "
            "let the book's build make them (or pass --collect for a scratch cache)."
        )
    lam = book_lambda3(built, settings, train_dir, cache)
    if lam is None:
        if args.lambda3 is None:
            raise SystemExit("no cached lambda3 tuning for the release configuration; pass --lambda3.")
        lam = args.lambda3
        say(f"lambda3 {lam:g} (given: the book's tuning table is not cached)")
    else:
        say(f"lambda3 {lam:g}: the book's tuned value for the release configuration")
    base = train_config(settings, lam)
    data = collected_chunks(train_dir)
    held_all = collected_chunks(held_dir)
    n_held = min(settings.gate_chunks, len(held_all))
    held = CollectedChunks(
        [held_all.records[i] for i in range(n_held)],
        log_sizes=held_all.all_log_sizes,
        member_names=held_all.all_member_names,
    )
    say(
        f"training collection {train_dir} ({len(data)} chunks of {data.seq_len} tokens, {data.set_size} per set); "
        f"held-out {held_dir} ({n_held} chunks)"
    )
    floor = storage_floor(held, n_held)
    say(
        f"c = p_ELM through the stored float16 ELM logits vs the stored p_ELM (top 20): max |difference| "
        f"{floor['max_abs']:.2g}, mean {floor['mean_abs']:.2g}; L2 of a flat curve there {floor['l2_floor']:.5f}"
    )
    out_root = Path(args.out)
    csv_path = Path(args.csv)
    curve_path = Path(args.curve_csv) if args.curve_csv else csv_path.with_name(csv_path.stem + "_curve.csv")
    rows, curves = [], []
    want_refs = [not args.no_references]  # measured once, beside the first run
    t_all = time.time()

    def run(exp):
        row, curve, folder = train_one(exp, base, fam, data, held, n_held, out_root, args.points)
        rows.append(row)
        if want_refs[0]:
            want_refs[0] = False
            rows.extend(references(row, folder, held_dir, n_held))
        curves.extend(curve)
        write_csv(csv_path, sorted(rows, key=lambda r: r["group"] != "ref"), ROW_FIELDS)
        write_csv(curve_path, curves, CURVE_FIELDS)
        return row, folder

    best = None
    if "A" in args.groups:
        a_rows = [(exp, run(exp)[0]) for exp in group_a(args.a_fraction)]
        best = min(a_rows, key=lambda er: er[1]["loss"])[0]
        say(f"best group-A combination (lowest held-out L): {best.changes}")
    if "2" in args.groups:
        for exp in group_a2(args.a_fraction):
            run(exp)
    if "B" in args.groups:
        n_chunks = int(round(base.data_fraction * len(data)))
        for exp in group_b(base, n_chunks, best):
            _, folder = run(exp)
            if exp.name == RELEASE_LABEL:
                compare_with_book(folder, base, train_dir, cache)
    say(f"study done in {time.time() - t_all:.0f} s: {csv_path}, {curve_path}")


if __name__ == "__main__":
    main()
