"""The APD variants the book trains, in one place: their configurations and lambda3 grids per scale.

Each variant is a configuration of the one trainer (:func:`apd.amateur.train.train_alm_prime`):

- ``release``: the release configuration (:func:`apd.amateur.runs.train_config`), lambda3 tuned on
  the dev people by APD's KL at 1/T = 1 (pico) or the paper's value (Hub families). Its cache keys
  are the ones pinned in ``tests/test_cache_keys.py``.
- ``conditioned``: the paper's objective with a conditioned start (``start="conditioned"``: x from the
  ALM in units of the members' span, the curve starting through the members with its bend at the
  ALM), an MLP-only warm-up with ALM' frozen (``mlp_warmup_steps``), one chunk per step so that the
  run has at least 2,000 joint steps (default scale), and a lambda3 grid from 0 to twice the paper's
  largest value. The grid is tuned on short runs (:attr:`Variant.tune`), the chosen value trained long.
- ``distilled``: distilled on-the-fly APD (``objective="distill"``, :mod:`apd.amateur.distill`).

New variants (``conditioned``, ``distilled``) choose lambda3 by the dev people's KL to the truth at
APD's dev-best 1/T (:data:`apd.amateur.tuning.SCORE_BEST_INV_T`), the knob the chapters report APD at;
the release keeps its pinned score (1/T = 1). Hub families have no world: every variant uses the
paper's lambda3 there.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from apd.amateur.config import APDTrainConfig
from apd.amateur.runs import PICO_LAMBDA3_GRID, check_scale, train_config
from apd.amateur.tuning import SCORE_APD_T1, SCORE_BEST_INV_T
from apd.family.registry import settings_scale

RELEASE = "release"


@dataclass(frozen=True)
class Variant:
    """One APD variant: ``name``; ``what`` (one line for tables); ``fields``: per scale, the
    :class:`APDTrainConfig` fields changed from the family's release configuration (``"*"``: every
    scale; Hub families use the ``"hub"`` entry when there is one); ``grid``: per scale, the lambda3
    values tuned on the dev people (pico); ``tune``: per scale, fields changed for the short tuning
    runs (none: the grid is trained at the full budget); ``score``: the tuning score."""

    name: str
    what: str
    fields: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    tune: dict = field(default_factory=dict)
    score: str = SCORE_BEST_INV_T


#: The conditioned start at each scale. default: one chunk per step, 2 epochs over the 2,104 chunks of
#: the default collection = 4,208 steps, the first 250 MLP-only, so 3,958 joint steps (default-200:
#: 1,277 chunks, 2,304 joint steps).
_CONDITIONED = {
    "smoke": dict(start="conditioned", mlp_warmup_steps=4, batch_size=2, micro_batch_size=2),
    "default": dict(
        start="conditioned", mlp_warmup_steps=250, batch_size=1, micro_batch_size=1, epochs=2, warmup_steps=0.05
    ),
    "gpu": dict(start="conditioned", mlp_warmup_steps=200, warmup_steps=0.05),
    "hub": dict(
        start="conditioned", mlp_warmup_steps=200, batch_size=1, micro_batch_size=1, epochs=6, warmup_steps=0.05
    ),
    "hub-smoke": dict(start="conditioned", mlp_warmup_steps=2),
}

#: Short runs for the conditioned variant's lambda3 grid: a quarter of the chunks, one epoch (default:
#: 526 steps, the first 50 MLP-only). Smoke runs are short already.
_CONDITIONED_TUNE = {
    "default": dict(epochs=1, data_fraction=0.25, mlp_warmup_steps=50),
    "gpu": dict(epochs=1, mlp_warmup_steps=50),
}

VARIANTS = (
    Variant(
        RELEASE,
        "the release configuration: the paper's objective and start, lambda3 tuned at 1/T = 1",
        grid=dict(PICO_LAMBDA3_GRID),
        score=SCORE_APD_T1,
    ),
    Variant(
        "conditioned",
        "the paper's objective, conditioned start (bend at the ALM), MLP-only warm-up, >= 2,000 joint steps",
        fields=_CONDITIONED,
        grid={"smoke": (0.0, 2.4), "default": (0.0, 0.6, 2.4), "gpu": (0.0, 0.6, 2.4)},
        tune=_CONDITIONED_TUNE,
    ),
    Variant(
        "distilled",
        "distilled on-the-fly APD: ALM' matches the fitter's asymptotes, no curve MLP",
        fields={"*": dict(objective="distill")},
        grid={"smoke": (0.2,), "default": (0.2, 0.6, 1.2), "gpu": (0.2, 0.6, 1.2)},
    ),
)
VARIANT_NAMES = tuple(v.name for v in VARIANTS)

#: What ``apd_model(..., variant=ENGAGED)`` asks for: the variant chosen by :func:`apd.amateur.pipeline.engaged_variant`.
ENGAGED = "engaged"


def get_variant(name: str) -> Variant:
    """The registered variant called ``name``.

    Example:
        >>> get_variant("distilled").fields["*"]
        {'objective': 'distill'}
    """
    for v in VARIANTS:
        if v.name == name:
            return v
    raise ValueError(
        f"unknown APD variant {name!r}; use one of {', '.join(VARIANT_NAMES)} or {ENGAGED!r} "
        "(the variant that passes the mechanism gates with the best dev KL)."
    )


def _fields(table: dict, family: str, scale: str) -> dict:
    scale = settings_scale(scale)
    if family != "pico" and scale == "smoke" and "hub-smoke" in table:
        return dict(table["hub-smoke"])
    if family != "pico" and "hub" in table:
        return dict(table["hub"])
    return dict(table.get(scale, table.get("*", {})))


def variant_config(
    name: str, family: str, scale: str = "default", lambda3: Optional[float] = None, *, tuning: bool = False
) -> APDTrainConfig:
    """The training configuration of variant ``name`` for a family (``'pico'``, ``'pythia'``, ...) at a
    scale; ``tuning``: the short configuration its lambda3 grid is tuned with (the full one when the
    variant has no short one).

    Example:
        >>> cfg = variant_config("conditioned", "pico", "default", lambda3=0.6)
        >>> cfg.start, cfg.mlp_warmup_steps, cfg.batch_size, cfg.epochs
        ('conditioned', 250, 1, 2)
        >>> variant_config("release", "pico", "default", 0.2) == train_config("pico", "default", 0.2)
        True
    """
    check_scale(scale)
    v = get_variant(name)
    cfg = replace(train_config(family, scale, lambda3), **_fields(v.fields, family, scale))
    if tuning:
        cfg = replace(cfg, **_fields(v.tune, family, scale)) if _fields(v.tune, family, scale) else cfg
    return cfg


def lambda3_grid(name: str, family: str, scale: str = "default") -> Optional[tuple]:
    """The lambda3 values variant ``name`` is tuned over (pico), or None (Hub families: the paper's value)."""
    check_scale(scale)
    if family != "pico":
        return None
    return tuple(get_variant(name).grid[settings_scale(scale)])
