"""Core: Theorem 1, the one contrastive score, thresholds on the expert, and probability-vs-size curves.

``theory`` (CD as extrapolation to a hypothetical LM), ``contrastive`` (the CD/APD score),
``filters`` (top-p, top-k, alpha and REAL on the ELM), ``curves`` (decay functions, flip, the on-the-fly
fitter), ``entropy`` (REAL's entropy curves and loss), ``stats`` (standard errors, paired differences, power).
"""
from apd.core import theory, contrastive, filters, curves, entropy, stats
from apd.core.theory import (
    check_sizes, MAX_LOG_SIZE, check_log_sizes, cd_logits, hlm_log_size, line_logit, hlm_logits, hlm_size, bent_logits,
    bent_extrapolation_error,
)
from apd.core.contrastive import TIES, RENORMALIZE, check_temperature, top_k_keep, contrastive_scores
from apd.core.filters import TopP, TopK, AlphaMask, real_top_p, REAL, make_filters, keep_mask
from apd.core.curves import (
    SPACES, safe_sqrt, flip_mask, flip_values, exponential_decay, logistic_decay, polynomial_decay, Decay, get_decay,
    DECAY_NAMES, CurveFit, curve_losses, grid_init, simple_init, TUNED_FIT, PLAIN_FIT, fit_curves,
    fit_curves_one_by_one, on_the_fly_asymptotes, mix_on_the_fly, ON_THE_FLY_WEIGHTS, PYTHIA_LOG_SIZES,
    synthetic_curves, benchmark_fitter,
)
from apd.core.entropy import (
    DECAYS, CONDITIONS, NORMALISED_SPAN, WEIGHT_RATIO, check_decay, condition_x, entropy_curve, loss_weights, thf_loss,
    entropy_from_logits,
)
from apd.core.stats import (
    mean_se, min_detectable_effect, interval, detected, ruled_out, p_two_sided, holm, PairedDifference,
    paired_difference, VarianceComponents, variance_components, projected_se, groups_needed,
)


__all__ = [
    "AlphaMask", "CONDITIONS", "CurveFit", "DECAYS", "DECAY_NAMES", "Decay", "MAX_LOG_SIZE", "NORMALISED_SPAN",
    "ON_THE_FLY_WEIGHTS", "PLAIN_FIT", "PYTHIA_LOG_SIZES", "PairedDifference", "REAL", "RENORMALIZE", "SPACES", "TIES",
    "TUNED_FIT", "TopK", "TopP", "VarianceComponents", "WEIGHT_RATIO", "benchmark_fitter", "bent_extrapolation_error",
    "bent_logits", "cd_logits", "check_decay", "check_log_sizes", "check_sizes", "check_temperature", "condition_x",
    "contrastive", "contrastive_scores", "curve_losses", "curves", "detected", "entropy", "entropy_curve",
    "entropy_from_logits", "exponential_decay", "filters", "fit_curves", "fit_curves_one_by_one", "flip_mask",
    "flip_values", "get_decay", "grid_init", "groups_needed", "hlm_log_size", "hlm_logits", "hlm_size", "holm",
    "interval", "keep_mask", "line_logit", "logistic_decay", "loss_weights", "make_filters", "mean_se",
    "min_detectable_effect", "mix_on_the_fly", "on_the_fly_asymptotes", "p_two_sided", "paired_difference",
    "polynomial_decay", "projected_se", "real_top_p", "ruled_out", "safe_sqrt", "simple_init", "stats",
    "synthetic_curves", "theory", "thf_loss", "top_k_keep", "variance_components",
]
