"""The APD variants the book trains: their names, what each is and how its lambda3 is scored. Their
configuration fields and lambda3 grids per scale are in :mod:`apd.family.settings`
(``VARIANT_FIELDS``, ``VARIANT_TUNE``, ``LAMBDA3_GRIDS``), read through a family's
:class:`apd.family.settings.Settings`.

Each variant is a configuration of the one trainer (:func:`apd.amateur.train.train_alm_prime`):

- ``release``: the release configuration (:func:`apd.amateur.runs.train_config`), lambda3 tuned on
  the dev people (pico) or the paper's value (Hub families). Its cache keys are the ones pinned in
  ``tests/test_cache_keys.py``.
- ``conditioned``: the paper's objective with a conditioned start (``start="conditioned"``: x from the
  ALM in units of the members' span, the curve starting through the members with its bend at the
  ALM), an MLP-only warm-up with ALM' frozen (``mlp_warmup_steps``), one chunk per step so that the
  run has at least 2,000 joint steps (default scale), and a lambda3 grid from 0 to twice the paper's
  largest value. The grid is tuned on short runs (``Settings.variant_tune``), the chosen value trained long.
- ``distilled``: distilled on-the-fly APD (``objective="distill"``, :mod:`apd.amateur.distill`).

Every variant, the release configuration included, chooses lambda3 by the dev people's KL to the
truth at APD's dev-best 1/T (:data:`apd.amateur.tuning.SCORE_BEST_INV_T`), the knob the chapters
report APD at, its grid widened past an end where the choice falls there
(:func:`apd.amateur.tuning.choose_lambda3`). Hub families have no world: every variant uses the
paper's lambda3 there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from apd.amateur.config import APDTrainConfig
from apd.amateur.runs import train_config
from apd.amateur.tuning import SCORE_BEST_INV_T
from apd.family.settings import Settings

RELEASE = "release"


@dataclass(frozen=True)
class Variant:
    """One APD variant: ``name``; ``what`` (one line for tables); ``score``: the tuning score. Its
    fields, short tuning runs and lambda3 grid are ``Settings.variant_fields[name]``,
    ``Settings.variant_tune[name]`` and ``Settings.lambda3_grids[name]``."""

    name: str
    what: str
    score: str = SCORE_BEST_INV_T


VARIANTS = (
    Variant(
        RELEASE,
        "the release configuration: the paper's objective and start",
    ),
    Variant(
        "conditioned",
        "the paper's objective, conditioned start (bend at the ALM), MLP-only warm-up, >= 2,000 joint steps",
    ),
    Variant(
        "distilled",
        "distilled on-the-fly APD: ALM' matches the fitter's asymptotes, no curve MLP",
    ),
)
VARIANT_NAMES = tuple(v.name for v in VARIANTS)

#: What ``apd_model(..., variant=ENGAGED)`` asks for: the variant chosen by :func:`apd.amateur.pipeline.engaged_variant`.
ENGAGED = "engaged"


def get_variant(name: str) -> Variant:
    """The registered variant called ``name``.

    Example:
        >>> get_variant("distilled").score
        'best_inv_T'
    """
    for v in VARIANTS:
        if v.name == name:
            return v
    raise ValueError(
        f"unknown APD variant {name!r}; use one of {', '.join(VARIANT_NAMES)} or {ENGAGED!r} "
        "(the variant that passes the mechanism gates with the best dev KL)."
    )


def variant_config(
    name: str, settings: Settings, lambda3: Optional[float] = None, *, tuning: bool = False
) -> APDTrainConfig:
    """The training configuration of variant ``name`` under a family's ``settings``; ``tuning``: the
    short configuration its lambda3 grid is tuned with (the full one when the variant has no short one).

    Example:
        >>> from apd.family.settings import settings_for
        >>> s = settings_for("pico", "default")
        >>> cfg = variant_config("conditioned", s, lambda3=0.6)
        >>> cfg.start, cfg.mlp_warmup_steps, cfg.batch_size, cfg.epochs
        ('conditioned', 250, 1, 2)
        >>> variant_config("release", s, 0.2) == train_config(s, 0.2)
        True
    """
    get_variant(name)  # raises on an unknown name
    cfg = replace(train_config(settings, lambda3), **settings.variant_fields[name])
    if tuning and settings.variant_tune[name]:
        cfg = replace(cfg, **settings.variant_tune[name])
    return cfg


def lambda3_grid(name: str, settings: Settings) -> Optional[tuple]:
    """The lambda3 values variant ``name`` is tuned over (pico; widened by
    :func:`apd.amateur.tuning.choose_lambda3` where the choice falls at an end), or None (Hub families:
    the paper's value).

    Example:
        >>> from apd.family.settings import settings_for
        >>> pico, opt = settings_for("pico", "smoke"), settings_for("opt", "smoke")
        >>> lambda3_grid("release", pico), lambda3_grid("release", opt)
        ((0.2, 0.8), None)
    """
    get_variant(name)  # raises on an unknown name
    return settings.lambda3_grids.get(name)
