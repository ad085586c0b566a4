"""Open-ended factuality (the paper's FactualityPrompts experiment) on the world and on real prompts.

from apd.evaluation import factuality as fx
methods = fx.methods.paper_methods(p_grid=(0.4, 0.6, 0.8, 0.95))
dec = fx.methods.Decoders(elm, tokenizer, alm=alm, alm_prime=alm_prime, vocab_size=fam.vocab_size)
gens = fx.sweeps.sweep(dec, methods, prompts, seeds=(0, 1), max_new_tokens=32, cache=fx.sweeps.sweep_cache(...))
table = fx.sweeps.score_sweep(methods, gens, fx.world_scoring.WorldScorer(world, prompts))
"""

from apd.base.names import submodules

__getattr__ = submodules(__name__, __path__)
