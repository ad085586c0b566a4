"""Core: Theorem 1, the one contrastive score, thresholds on the expert, and probability-vs-size curves.

``theory`` (CD as extrapolation to a hypothetical LM), ``contrastive`` (the CD/APD score),
``filters`` (top-p, top-k, alpha and REAL on the ELM), ``curves`` (decay functions, flip, the on-the-fly
fitter), ``entropy`` (REAL's entropy curves and loss), ``stats`` (standard errors, paired differences, power).
"""
from apd.base.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    # apd.core.theory
    "check_sizes": "apd.core.theory", "MAX_LOG_SIZE": "apd.core.theory", "check_log_sizes": "apd.core.theory",
    "cd_logits": "apd.core.theory", "hlm_log_size": "apd.core.theory", "line_logit": "apd.core.theory",
    "hlm_logits": "apd.core.theory", "hlm_size": "apd.core.theory", "bent_logits": "apd.core.theory",
    "bent_extrapolation_error": "apd.core.theory", "theory": "apd.core.theory",
    # apd.core.contrastive
    "TIES": "apd.core.contrastive", "RENORMALIZE": "apd.core.contrastive",
    "check_temperature": "apd.core.contrastive", "top_k_keep": "apd.core.contrastive",
    "contrastive_scores": "apd.core.contrastive", "contrastive": "apd.core.contrastive",
    # apd.core.filters
    "TopP": "apd.core.filters", "TopK": "apd.core.filters", "AlphaMask": "apd.core.filters",
    "real_top_p": "apd.core.filters", "REAL": "apd.core.filters", "make_filters": "apd.core.filters",
    "keep_mask": "apd.core.filters", "filters": "apd.core.filters",
    # apd.core.curves
    "SPACES": "apd.core.curves", "safe_sqrt": "apd.core.curves", "flip_mask": "apd.core.curves",
    "flip_values": "apd.core.curves", "exponential_decay": "apd.core.curves",
    "logistic_decay": "apd.core.curves", "polynomial_decay": "apd.core.curves", "Decay": "apd.core.curves",
    "get_decay": "apd.core.curves", "DECAY_NAMES": "apd.core.curves", "CurveFit": "apd.core.curves",
    "curve_losses": "apd.core.curves", "grid_init": "apd.core.curves", "simple_init": "apd.core.curves",
    "TUNED_FIT": "apd.core.curves", "PLAIN_FIT": "apd.core.curves", "fit_curves": "apd.core.curves",
    "fit_curves_one_by_one": "apd.core.curves", "on_the_fly_asymptotes": "apd.core.curves",
    "mix_on_the_fly": "apd.core.curves", "ON_THE_FLY_WEIGHTS": "apd.core.curves",
    "PYTHIA_LOG_SIZES": "apd.core.curves", "synthetic_curves": "apd.core.curves",
    "benchmark_fitter": "apd.core.curves", "curves": "apd.core.curves",
    # apd.core.entropy
    "DECAYS": "apd.core.entropy", "CONDITIONS": "apd.core.entropy", "NORMALISED_SPAN": "apd.core.entropy",
    "WEIGHT_RATIO": "apd.core.entropy", "check_decay": "apd.core.entropy", "condition_x": "apd.core.entropy",
    "entropy_curve": "apd.core.entropy", "loss_weights": "apd.core.entropy", "thf_loss": "apd.core.entropy",
    "entropy_from_logits": "apd.core.entropy", "entropy": "apd.core.entropy",
    # apd.core.stats
    "mean_se": "apd.core.stats", "min_detectable_effect": "apd.core.stats", "interval": "apd.core.stats",
    "detected": "apd.core.stats", "ruled_out": "apd.core.stats", "p_two_sided": "apd.core.stats",
    "holm": "apd.core.stats", "PairedDifference": "apd.core.stats", "paired_difference": "apd.core.stats",
    "VarianceComponents": "apd.core.stats", "variance_components": "apd.core.stats",
    "projected_se": "apd.core.stats", "groups_needed": "apd.core.stats", "stats": "apd.core.stats",
})
