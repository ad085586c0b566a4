"""Settings of a (family, scale), resolved once: lambda3, the 1/T grids, and what ALM', its variants,
THF and the mechanism gates train and measure with.

:func:`settings_for` is the one place a scale is validated and translated (``default-200`` trains
with ``default``'s settings, :data:`SETTINGS_OF`). The entry points build it (``get_family``,
``apd_model``, ``engaged_variant``, ``thf_model``, ``run_gates``); the code below them receives the
:class:`Settings` and reads its fields. The tables here are the only per-scale training settings.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, Optional

from apd.base.checks import bounded, count, sequence
from apd.family.registry import SCALES, get_family_spec

#: Scales that train ALM', THF and the gates with another scale's settings: only their world and
#: members are their own.
SETTINGS_OF = {"default-200": "default", "exact-truth": "default"}

#: lambda3, the weight of the logit-anchoring loss L3: the paper's values, tuned on FactualityPrompts
#: validation. pico has none: it is tuned on the world's dev people (:data:`LAMBDA3_GRIDS`).
LAMBDA3 = {"pythia": 0.8, "opt": 0.4, "qwen": 1.0}

#: The paper's lambda3 tuning grid.
LAMBDA3_GRID = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2)

#: 1/T values of CD and APD compared in the book (the APD chapter's grid, down to the paper's 0.05), and so
#: the dev-best 1/T of the variants' lambda3 tuning, of their choice and of the ablations: lambda3 is
#: tuned on the 1/T grid where APD is used.
INV_T_GRID = (0.05, 0.1, 0.15, 0.25, 0.5, 0.75, 1.0)

#: The paper's 1/T grid for CD and APD in the QA tables (appendix, "QA Experiment Details"):
#: :mod:`apd.evaluation.qa_scoring`.
PAPER_INV_T = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)

#: 1/T values of CD on world QA in the controls (:mod:`apd.evaluation.controls`; down to 0.05, where the
#: probe of worlds found CD's small gain).
CONTROL_INV_T_GRID = (0.05, 0.1, 0.15, 0.2, 0.25, 0.35, 0.5, 0.75, 1.0)

#: ALM' training of the pico family, per scale (:func:`apd.amateur.runs.train_config` gives the reasons).
PICO_TRAIN = {
    "smoke": dict(lr=1e-3, epochs=1, batch_size=8, micro_batch_size=8, warmup_steps=0.1, data_fraction=0.5),
    "default": dict(lr=1e-3, epochs=1, batch_size=8, micro_batch_size=8, warmup_steps=0.1),
    # ~7,100 fine-tuning documents (about 2,300 chunks of 256 tokens), 8 epochs of batches of 8: ~2,300 steps
    "gpu": dict(lr=1e-3, epochs=8, batch_size=8, micro_batch_size=8, warmup_steps=0.05),
}

#: Hub families: the paper's optimiser settings; smaller batches because our corpus is small.
HUB_TRAIN = {
    "smoke": dict(lr=1e-4, epochs=1, batch_size=8, micro_batch_size=8, warmup_steps=0.1),
    "default": dict(lr=1e-4, epochs=5, batch_size=16, micro_batch_size=8, warmup_steps=0.1),
    "gpu": dict(lr=1e-4, epochs=5, batch_size=16, micro_batch_size=8, warmup_steps=0.1),
}

#: Per APD variant (:data:`apd.amateur.variants.VARIANTS`), the lambda3 values tuned on the dev people
#: (pico), per scale, each widened past an end where the choice falls there
#: (:func:`apd.amateur.tuning.choose_lambda3`). The release's doubles from 0.05 to 1.6 (design notes,
#: "lambda3 on the claims' criterion"; smoke: two of its values, to stay fast); the conditioned start's
#: reaches from 0 to twice the paper's largest value.
LAMBDA3_GRIDS = {
    "release": {
        "smoke": (0.2, 0.8),
        "default": (0.05, 0.1, 0.2, 0.4, 0.8, 1.6),
        "gpu": (0.05, 0.1, 0.2, 0.4, 0.8, 1.6),
    },
    "conditioned": {"smoke": (0.0, 2.4), "default": (0.0, 0.6, 2.4), "gpu": (0.0, 0.6, 2.4)},
    "distilled": {"smoke": (0.2,), "default": (0.2, 0.6, 1.2), "gpu": (0.2, 0.6, 1.2)},
}

#: Per APD variant, the :class:`apd.amateur.config.APDTrainConfig` fields changed from the family's
#: release configuration, per scale (``"*"``: every scale; Hub families use ``"hub"`` when there is
#: one, ``"hub-smoke"`` at smoke scale). The conditioned start, default: one chunk per step, 2 epochs
#: over the 2,104 chunks of the default collection = 4,208 steps, the first 250 MLP-only, so 3,958
#: joint steps (default-200: 1,277 chunks, 2,304 joint steps).
VARIANT_FIELDS = {
    "release": {},
    "conditioned": {
        "smoke": dict(start="conditioned", mlp_warmup_steps=4, batch_size=2, micro_batch_size=2),
        "default": dict(
            start="conditioned", mlp_warmup_steps=250, batch_size=1, micro_batch_size=1, epochs=2, warmup_steps=0.05
        ),
        "gpu": dict(start="conditioned", mlp_warmup_steps=200, warmup_steps=0.05),
        "hub": dict(
            start="conditioned", mlp_warmup_steps=200, batch_size=1, micro_batch_size=1, epochs=6, warmup_steps=0.05
        ),
        "hub-smoke": dict(start="conditioned", mlp_warmup_steps=2),
    },
    "distilled": {"*": dict(objective="distill")},
}

#: Per APD variant, the fields changed for the short runs its lambda3 grid is tuned with (none: the
#: grid is trained at the full budget). Conditioned, default: a quarter of the chunks, one epoch (526
#: steps, the first 50 MLP-only); smoke runs are short already.
VARIANT_TUNE = {
    "release": {},
    "conditioned": {
        "default": dict(epochs=1, data_fraction=0.25, mlp_warmup_steps=50),
        "gpu": dict(epochs=1, mlp_warmup_steps=50),
    },
    "distilled": {},
}

#: THF training (REAL sampling, :class:`apd.amateur.thf.THFConfig` fields) of the pico family and of
#: Hub families, per scale.
THF_TRAIN = {
    ("pico", "smoke"): dict(lr=1e-2, epochs=2, batch_size=8, warmup_steps=0.1),
    ("pico", "default"): dict(lr=1e-2, epochs=8, batch_size=16, warmup_steps=0.1, label_chunks=384),
    ("hub", "smoke"): dict(lr=1e-4, epochs=1, batch_size=8, warmup_steps=0.1),
    ("hub", "default"): dict(lr=1e-4, epochs=3, batch_size=16, warmup_steps=0.1),
    ("pico", "gpu"): dict(lr=1e-2, epochs=8, batch_size=16, warmup_steps=0.1),  # labels on every chunk
    ("hub", "gpu"): dict(lr=1e-4, epochs=3, batch_size=16, warmup_steps=0.1),
}

#: Held-out chunks the mechanism gates are measured on, per scale (fixed here, not per chapter, so
#: that every chapter's choice of the engaged variant is the same).
GATE_CHUNKS = {"smoke": 4, "default": 16, "gpu": 16}


@dataclass(frozen=True)
class Settings:
    """Everything a (family, scale) trains and measures with; build it with :func:`settings_for`.

    family: ``'pico'``, ``'pythia'``, ``'opt'`` or ``'qwen'`` (the name ALM' runs record);
    scale: as asked; train_scale: the scale whose training settings these are (:data:`SETTINGS_OF`).
    lambda3: the paper's value (Hub families) or None (pico: tuned over ``lambda3_grids``).
    lambda3_grids: {variant: lambda3 values tuned on the dev people}, pico only ({} for Hub families).
    alm_train: the release configuration's ``APDTrainConfig`` fields; variant_fields / variant_tune:
    {variant: fields changed from it for its runs / its short tuning runs}. thf_train: ``THFConfig``
    fields. gate_chunks: held-out chunks the gates read. inv_T_grid (the book's CD and APD, and the
    dev-best 1/T), paper_inv_T (the paper's QA grid), control_inv_T_grid (the controls' CD): 1/T values.

    Example:
        >>> s = settings_for("pico", "default-200")
        >>> s.train_scale, s.lambda3, s.lambda3_grids["release"], s.gate_chunks
        ('default', None, (0.05, 0.1, 0.2, 0.4, 0.8, 1.6), 16)
        >>> settings_for("qwen1.5", "smoke").lambda3, settings_for("qwen1.5", "smoke") is settings_for("qwen", "smoke")
        (1.0, True)
    """

    family: str
    scale: str
    train_scale: str
    lambda3: Optional[float]
    lambda3_grids: Mapping[str, tuple]
    alm_train: Mapping[str, Any]
    variant_fields: Mapping[str, Mapping[str, Any]]
    variant_tune: Mapping[str, Mapping[str, Any]]
    thf_train: Mapping[str, Any]
    gate_chunks: int
    inv_T_grid: tuple = INV_T_GRID
    paper_inv_T: tuple = PAPER_INV_T
    control_inv_T_grid: tuple = CONTROL_INV_T_GRID

    def __post_init__(self):
        if self.lambda3 is not None:
            bounded("Settings.lambda3", self.lambda3, 0, hint="a loss weight, or None (tuned)")
        count("Settings.gate_chunks", self.gate_chunks, 1, strict=True)
        for name in ("lambda3_grids", "alm_train", "variant_fields", "variant_tune", "thf_train"):
            if not isinstance(getattr(self, name), Mapping):
                raise TypeError(f"Settings.{name} must be a mapping, got {getattr(self, name)!r}.")
        for variant, grid in self.lambda3_grids.items():
            for value in sequence(f"Settings.lambda3_grids[{variant!r}]", grid):
                bounded(f"Settings.lambda3_grids[{variant!r}]", value, 0)
        for name in ("inv_T_grid", "paper_inv_T", "control_inv_T_grid"):
            for value in sequence(f"Settings.{name}", getattr(self, name)):
                bounded(f"Settings.{name}", value, above=0, hint="1/T values")

    def __hash__(self) -> int:  # one object per (family, scale); the tables inside are read-only mappings
        return hash((self.family, self.scale))

    def check_built(self, built) -> None:
        """Raise unless ``built`` is None (a Hub family) or a pico build of this scale."""
        have = getattr(built, "scale", None)
        if have is not None and have != self.scale:
            raise ValueError(
                f"built is the {have!r} pico family but scale={self.scale!r} was asked: the {self.scale} settings "
                f"do not fit its members. Pass scale={have!r} (built.scale, the chapter's pico_scale), "
                f"or build the {self.scale} family: apd.get_family('pico', {self.scale!r})."
            )


def train_family(family) -> str:
    """The name ALM' runs record for a family: a registered name (any case, ``"qwen"`` for
    ``"qwen1.5"``) or a ``FamilySpec``; 'pico', 'pythia', 'opt' or 'qwen' for the registered ones.

    Example:
        >>> train_family("Qwen1.5"), train_family("pythia")
        ('qwen', 'pythia')
    """
    name = get_family_spec(family).name if isinstance(family, str) else family.name  # unknown names raise
    return "qwen" if name.startswith("qwen") else name


def settings_for(family, scale: str) -> Settings:
    """The :class:`Settings` of ``family`` (a name such as ``'pico'``, ``'pythia'``, ``'qwen1.5'``, or a
    ``FamilySpec``) at ``scale``; one frozen object per (family, scale). ValueError names a bad scale
    or a family with no training settings.

    Example:
        >>> settings_for("pythia", "default").alm_train["lr"]
        0.0001
        >>> settings_for("pico", "huge")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: unknown scale 'huge'; use one of ('smoke', 'default', ...) (pass the chapter's pico_scale).
    """
    name = train_family(family)
    if name != "pico" and name not in LAMBDA3:
        raise ValueError(f"no training settings for family {name!r}; use 'pico' or one of {sorted(LAMBDA3)}.")
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; use one of {SCALES} (pass the chapter's pico_scale).")
    return _settings(name, scale)


def _entry(table: dict, family: str, scale: str) -> Mapping[str, Any]:
    """A variant table's fields for ``family`` at (settings) ``scale``."""
    if family != "pico" and scale == "smoke" and "hub-smoke" in table:
        return MappingProxyType(dict(table["hub-smoke"]))
    if family != "pico" and "hub" in table:
        return MappingProxyType(dict(table["hub"]))
    return MappingProxyType(dict(table.get(scale, table.get("*", {}))))


@functools.lru_cache(maxsize=None)
def _settings(family: str, scale: str) -> Settings:
    train_scale = SETTINGS_OF.get(scale, scale)
    pico = family == "pico"
    return Settings(
        family=family,
        scale=scale,
        train_scale=train_scale,
        lambda3=None if pico else LAMBDA3[family],
        lambda3_grids=MappingProxyType(
            {v: tuple(grids[train_scale]) for v, grids in LAMBDA3_GRIDS.items()} if pico else {}
        ),
        alm_train=MappingProxyType(dict((PICO_TRAIN if pico else HUB_TRAIN)[train_scale])),
        variant_fields=MappingProxyType({v: _entry(t, family, train_scale) for v, t in VARIANT_FIELDS.items()}),
        variant_tune=MappingProxyType({v: _entry(t, family, train_scale) for v, t in VARIANT_TUNE.items()}),
        thf_train=MappingProxyType(dict(THF_TRAIN[("pico" if pico else "hub", train_scale)])),
        gate_chunks=GATE_CHUNKS[train_scale],
    )
