"""APD end to end, cached: collect, tune lambda3 (pico), train ALM'.

    fam, built = apd.get_family("pico", "default")
    result = apd.apd_model(fam, built, scale="default")
    alm_prime = apd.load_alm_prime(result)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pandas as pd

from apd.amateur.config import APDTrainConfig
from apd.amateur.runs import (
    PICO_LAMBDA3_GRID,
    _check_scale,
    collect_config,
    collect_family,
    family_name,
    finetune_texts,
    read_train_log,
    train_apd,
    train_config,
)
from apd.amateur.tuning import tune_lambda3


@dataclass
class APDResult:
    """A trained ALM' and how it was made.

    alm_prime_path: the ``save_pretrained`` folder (also holds ``curve_mlp.pt``); config: its training
    configuration (lambda3 filled in); lambda3: the value used; tuning: one row per tried lambda3
    (None when lambda3 was given or published); collect_dir: the collected training data.

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> result = apd.apd_model(fam, built, scale="smoke", progress=False)
        >>> sorted(result.train_log().columns)[:3]
        ['epoch', 'flip_frac', 'l1']
    """

    alm_prime_path: Path
    config: APDTrainConfig
    lambda3: float
    tuning: Optional[pd.DataFrame]
    collect_dir: Path

    @property
    def train_dir(self) -> Path:
        """The training folder (``train_log.jsonl``, ``train_config.json``, ``alm_prime/``)."""
        return self.alm_prime_path.parent

    def train_log(self) -> pd.DataFrame:
        """One row per logged optimizer step: step, epoch, lr, loss, l1, l2, l3, flip_frac, seconds."""
        return read_train_log(self.train_dir)


def apd_model(fam, built=None, *, scale: str = "default", lambda3: Optional[float] = None,
              progress: bool = True, cache=None, seed: int = 0) -> APDResult:
    """Collect, (tune lambda3 and) train ALM' for ``fam``; everything cached (module docstring).

    fam, built: what ``pico.get_family`` returns (built is None for Hub families).
    scale: 'smoke' or 'default' (pass the chapter's ``pico_scale``).
    lambda3: None = the paper's value (Pythia, OPT, Qwen) or tuned on the dev people (pico).
    seed: the dev/test split of the world's people (:func:`apd.world.truth.dev_test_split`).

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> result = apd.apd_model(fam, built, scale="smoke", progress=False)   # cached after the first call
        >>> alm_prime = apd.load_alm_prime(result, device="cpu")
        >>> result.lambda3 in apd.amateur.PICO_LAMBDA3_GRID["smoke"]            # tuned on the world's dev people
        True
    """
    name = family_name(fam)
    _check_scale(scale)
    if name == "pico" and built is None:
        raise ValueError("the pico family needs its build (corpus, world): pass both values of "
                         "pico.get_family('pico', scale), i.e. apd_model(fam, built, scale=...).")
    texts = finetune_texts(fam, built)
    collect_dir = collect_family(fam, texts, collect_config(name, scale, built), cache=cache, progress=progress)
    tuning = None
    if lambda3 is None and name == "pico":
        lambda3, tuning = tune_lambda3(fam, built, collect_dir, train_config(name, scale),
                                       PICO_LAMBDA3_GRID[scale], cache=cache, seed=seed, progress=progress)
    config = train_config(name, scale, lambda3)
    path = train_apd(fam, collect_dir, config, cache=cache, progress=progress)
    return APDResult(alm_prime_path=Path(path), config=config, lambda3=float(config.lambda3_value), tuning=tuning,
                     collect_dir=Path(collect_dir))
