"""Regenerate the lazy namespace maps of apd's subpackage ``__init__`` files (their docstrings are kept).

    python scripts/update_namespaces.py

Every public function, class and UPPER_CASE constant of a subpackage's modules, and the modules
themselves, become names of the subpackage (``apd.world.method_distributions``); the first module
in the stage's order wins a name defined twice, and a module wins over a function of the same name.
``tests/test_architecture.py`` fails until a new public name is in its map.
"""
import ast, re
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
def public(mod):
    t = ast.parse((ROOT / (mod.replace(".", "/") + ".py")).read_text()); out = []
    for n in t.body:
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_"): out.append(n.name)
        elif isinstance(n, (ast.Assign, ast.AnnAssign)):
            for x in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                if isinstance(x, ast.Name) and not x.id.startswith("_") and x.id.isupper(): out.append(x.id)
    return out
PK = {"apd.base": ["io", "lock", "device", "paths", "lazy"],
      "apd.core": ["theory", "contrastive", "filters", "curves"],
      "apd.world": ["world", "corpus", "truth"],
      "apd.family": ["registry", "loading", "select", "text", "logprobs", "heldout", "knowledge", "pretrain", "pico"],
      "apd.amateur": ["collect", "config", "data", "distill", "objective", "train", "runs", "tuning", "pipeline", "composition", "gates"],
      "apd.decoding": ["processors", "generation"],
      "apd.evaluation": ["text_metrics", "qa_metrics", "qa_data", "qa_scoring", "probcurves", "linearity", "blindness", "ablations", "known_answer"],
      "apd.evaluation.factuality": ["methods", "sweeps", "world_scoring", "sources", "prompts", "ner", "nli", "scoring"],
      "apd.report": ["results", "plots", "paper", "evidence", "claims", "coverage", "beside", "data_check", "status", "terminal", "book", "schema"]}
EXTRA = {"apd.decoding": {**{n: "apd.core.filters" for n in public("apd.core.filters")}, "contrastive_scores": "apd.core.contrastive"},
         "apd.family": {"default_device": "apd.base.device:resolve_device"}}
for p, mods in PK.items():
    folder = ROOT / p.replace(".", "/")
    mods = list(mods) + sorted(q.stem for q in folder.glob("*.py") if q.stem != "__init__" and q.stem not in mods)
    seen = {}
    for m in mods:
        for n in public(f"{p}.{m}"):
            seen.setdefault(n, f"{p}.{m}")
    seen.update(EXTRA.get(p, {}))
    for m in mods:   # the modules themselves, for dotted access (apd.world.truth.BUCKETS); a module wins a name
        seen[m] = f"{p}.{m}"
    if p == "apd.evaluation":
        seen["factuality"] = "apd.evaluation.factuality"
    init = ROOT / (p.replace(".", "/") + "/__init__.py")
    doc = re.match(r'(""".*?""")', init.read_text(), re.S).group(1)
    lines = [doc, "from apd.base.lazy import attach", "", "__getattr__, __dir__, __all__ = attach(__name__, {"]
    by = {}
    for n, m in seen.items(): by.setdefault(m.split(":")[0], []).append((n, m))
    for m, items in by.items():
        lines.append(f"    # {m}"); row = "   "
        for n, full in items:
            item = f' "{n}": "{full}",'
            if len(row) + len(item) > 110: lines.append(row); row = "   "
            row += item
        lines.append(row)
    lines.append("})")
    init.write_text("\n".join(lines) + "\n")
    print(f"{p}: {len(seen)} names")
