"""Train a pico world + family configuration and record its testbed controls (dev people only).

    python scripts/testbed_study.py --name default
    python scripts/testbed_study.py --name "default, training seed 1" --pico seed=1
    python scripts/testbed_study.py --name "value_zipf 0.7, 800 people" --world value_zipf=0.7 n_people=800 \\
        --pico max_tokens=800000 --no-ne-er

``--world`` sets fields of ``apd.world.world.WorldConfig``, ``--corpus`` of ``apd.world.corpus.CorpusConfig``,
``--pico`` of ``apd.family.pretrain.PicoConfig`` (``members`` as ``"1,32,2;1,48,2;..."``: n_layer,
d_model, n_head per member), each over the ``--scale`` configuration (default: ``default``).
Values are Python literals (``0.7``, ``(0.5, 0.9)``, ``None``). The family trains through the
normal cached path (``APD_CACHE_DIR``; keyed by the configuration, resumable, progress shown), so
a rerun only recomputes the controls. Appends one row to ``docs/testbed/configurations.csv``
(``--table``) and prints the controls. Choose worlds by these controls, never by APD's results.
Rows that differ only in ``--pico seed`` are one design trained again (``apd.report.testbed.design_of``).
Which world the book uses is decided by the dose-response rule (``scripts/dose_response.py``).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _pairs(items, what: str) -> dict:
    out = {}
    for item in items or ():
        if "=" not in item:
            raise SystemExit(f"--{what} takes key=value pairs, got {item!r}.")
        k, v = item.split("=", 1)
        out[k.strip()] = _literal(v.strip())
    return out


def _members(text: str):
    from apd.family.pretrain import Member

    return tuple(Member(*(int(v) for v in part.split(","))) for part in str(text).split(";") if part.strip())


def configure(scale: str, world: dict, corpus: dict, pico: dict):
    """(CorpusConfig, PicoConfig, overrides as a JSON-able dict) of ``scale`` with the changes."""
    from apd.family import pico as pico_mod

    corpus_cfg, pico_cfg = pico_mod.configs(scale)
    for name, fields, cfg in (
        ("world", world, corpus_cfg.world),
        ("corpus", corpus, corpus_cfg),
        ("pico", pico, pico_cfg),
    ):
        known = {f.name for f in dataclasses.fields(cfg)}
        bad = sorted(set(fields) - known)
        if bad:
            raise SystemExit(f"--{name}: unknown field(s) {bad}; {type(cfg).__name__} has {sorted(known)}.")
    pico = dict(pico)
    if "members" in pico:
        pico["members"] = _members(pico["members"])
    for key in ("year_range", "bucket_quantiles"):
        if key in world:
            world[key] = tuple(world[key])
    corpus_cfg = dataclasses.replace(corpus_cfg, world=dataclasses.replace(corpus_cfg.world, **world), **corpus)
    pico_cfg = pico_cfg.replace(**pico)
    overrides = {"scale": scale}
    overrides.update({f"world.{k}": v for k, v in world.items()})
    overrides.update({f"corpus.{k}": v for k, v in corpus.items()})
    overrides.update(
        {
            f"pico.{k}": (";".join(f"{m.n_layer},{m.d_model},{m.n_head}" for m in v) if k == "members" else v)
            for k, v in pico.items()
        }
    )
    return corpus_cfg, pico_cfg, overrides


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", required=True, help="the configuration's name in the table")
    ap.add_argument("--scale", default="default", help="the pico scale to start from (smoke, default, gpu)")
    ap.add_argument("--world", nargs="*", default=[], metavar="KEY=VALUE")
    ap.add_argument("--corpus", nargs="*", default=[], metavar="KEY=VALUE")
    ap.add_argument("--pico", nargs="*", default=[], metavar="KEY=VALUE")
    ap.add_argument("--device", default="cpu", help="cpu (the book's precision) or cuda")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    ap.add_argument("--no-train", action="store_true", help="only use a family already in the cache (never train)")
    ap.add_argument("--no-ne-er", action="store_true", help="skip the sampled NE_ER control")
    ap.add_argument("--cd-T", type=float, default=2.0, help="CD's temperature in the NE_ER control")
    ap.add_argument("--fit-iterations", type=int, default=400)
    ap.add_argument("--table", default=None, help="the CSV to append to (default docs/testbed/configurations.csv)")
    ap.add_argument("--json", default=None, help="also write the controls' full tables to this JSON file")
    args = ap.parse_args(argv)

    import torch

    from apd.evaluation.controls import measure_controls
    from apd.family import pico as pico_mod
    from apd.report.testbed import append_configuration

    if args.threads:
        torch.set_num_threads(args.threads)
    corpus_cfg, pico_cfg, overrides = configure(
        args.scale, _pairs(args.world, "world"), _pairs(args.corpus, "corpus"), _pairs(args.pico, "pico")
    )
    print(f"[testbed] {args.name}: {json.dumps(overrides)}", flush=True)
    t0 = time.time()
    built = pico_mod.build_configured(
        corpus_cfg, pico_cfg, args.name, device=args.device, progress=True, train=not args.no_train
    )
    fam = built.family(device=args.device)
    manifest = json.loads((built.family_dir / "family.json").read_text())
    print(
        f"[testbed] family {built.family_dir.name} ready in {time.time() - t0:.0f} s "
        f"(trained in {manifest.get('total_train_seconds')} s)",
        flush=True,
    )
    t1 = time.time()
    c = measure_controls(
        fam, built, ne_er=not args.no_ne_er, cd_T=args.cd_T, fit_iterations=args.fit_iterations, progress=True
    )
    control_seconds = time.time() - t1
    world = built.corpus.world
    row = {
        "configuration": args.name,
        "overrides": json.dumps(overrides, sort_keys=True),
        "device": str(fam.device),
        "eval_people": len(world.eval_people),
        "people": len(world.people),
        **c.row(),
        "family_key": built.family_dir.name,
        "train_seconds": manifest.get("total_train_seconds"),
        "control_seconds": round(control_seconds, 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus"
        + (f", {torch.cuda.get_device_name()}" if str(fam.device).startswith("cuda") else ""),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M"),
    }
    append_configuration(row, args.table)
    print(c.cd_gain.round(4).to_string())
    print(f"dev 1/T = {c.dev_inv_T:g}; fitter's held-out residual = {c.residual_noise:.4f}")
    print(c.known_answer.round(4).to_string())
    print(c.asymptote.round(4).to_string())
    print(c.flattening.round(3).to_string())
    print("NE_ER:", c.ne_er if c.ne_er is not None else c.ne_er_note)
    print("passes:", c.passes(), "seconds:", {k: round(v, 1) for k, v in c.seconds.items()})
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "row": row,
                    "cd_gain": c.cd_gain.reset_index().to_dict("records"),
                    "known_answer": c.known_answer.reset_index().to_dict("records"),
                    "asymptote": c.asymptote.reset_index().to_dict("records"),
                    "flattening": c.flattening.to_dict(),
                    "ne_er": c.ne_er,
                },
                default=str,
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
