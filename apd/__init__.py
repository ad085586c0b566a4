"""apd: contrastive decoding (CD) as extrapolation, and asymptotic probability decoding (APD).

The front door: what a notebook of your own needs, imported lazily on first use.

    import apd
    fam, built = apd.get_family("pico", "smoke")             # or "pythia" (Hub), with local_dir=...
    result = apd.apd_model(fam, built, scale="smoke")         # collect, tune lambda3, train ALM' (cached)
    used = apd.apd_model(fam, built, scale="smoke", variant="engaged")   # the variant whose gates pass
    alm_prime = apd.load_alm_prime(result)
    proc = apd.APDLogitsProcessor(alm_prime, T=1.0, filters=apd.make_filters("top-p", 0.8),
                                  vocab_size=fam.vocab_size)
    enc = fam.tokenizer(["Ada was born in"], return_tensors="pt")
    out = apd.generate(fam.model(fam.elm), enc.input_ids, enc.attention_mask, proc, max_new_tokens=32)

The package is laid out as the data flows, one subpackage per stage:
``base`` -> ``core`` -> ``world`` -> ``family`` -> ``amateur`` -> ``decoding`` -> ``evaluation`` -> ``report``
-> ``chapters`` (one module per notebook), and the build (:mod:`apd.build`, which make runs) on top. A module imports only from
its own stage or earlier ones, and from the module that defines a name: a subpackage's ``__init__`` lists no
names, so ``apd.evaluation.blindness.find_obvious_blindness`` is both the import path and the attribute path.
"""

import importlib

__version__ = "0.1.0"

# name -> the module that defines it (a name equal to the module's last part is the module itself)
_EXPORTS = {
    # a family of LMs (Hub or the embedded pico family)
    "get_family": "apd.family.select",
    "load_family": "apd.family.loading",
    "Family": "apd.family.loading",
    # ALM', the fine-tuned amateur
    "apd_model": "apd.amateur.pipeline",
    "APDResult": "apd.amateur.pipeline",
    "engaged_variant": "apd.amateur.pipeline",
    "VariantSelection": "apd.amateur.pipeline",
    "load_alm_prime": "apd.amateur.runs",
    "APDTrainConfig": "apd.amateur.config",
    "train_alm_prime": "apd.amateur.train",
    # REAL sampling's THF model (entropy across sizes)
    "thf_model": "apd.amateur.thf",
    "load_thf": "apd.amateur.thf",
    # the contrastive score, thresholds, logits processors and generate
    "contrastive_scores": "apd.core.contrastive",
    "TopP": "apd.core.filters",
    "TopK": "apd.core.filters",
    "AlphaMask": "apd.core.filters",
    "REAL": "apd.core.filters",
    "make_filters": "apd.core.filters",
    "ContrastiveLogitsProcessor": "apd.decoding.processors",
    "APDLogitsProcessor": "apd.decoding.processors",
    "OnTheFlyLogitsProcessor": "apd.decoding.processors",
    "FilteredLogitsProcessor": "apd.decoding.processors",
    "REALLogitsProcessor": "apd.decoding.processors",
    "generate": "apd.decoding.generation",
    # curves across sizes
    "fit_curves": "apd.core.curves",
    # Theorem 1
    "cd_logits": "apd.core.theory",
    "hlm_log_size": "apd.core.theory",
    "hlm_size": "apd.core.theory",
    "hlm_logits": "apd.core.theory",
    # the run record of a notebook, its tables and the house style of its figures
    "Run": "apd.report.results",
    "show": "apd.report.tables",
    "plots": "apd.report.plots",
    # the stages, for everything else: apd.evaluation.distributions.method_distributions, apd.world.truth.at, ...
    "core": "apd.core",
    "world": "apd.world",
    "family": "apd.family",
    "amateur": "apd.amateur",
    "decoding": "apd.decoding",
    "evaluation": "apd.evaluation",
    "report": "apd.report",
    "chapters": "apd.chapters",
    "build": "apd.build",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = importlib.import_module(module)
    return loaded if module.rsplit(".", 1)[-1] == name else getattr(loaded, name)


def __dir__():
    return __all__
