"""One name per thing: a renamed public name still works, with a DeprecationWarning naming the new one."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RENAMED = [
    ("apd.evaluation.ablations", "paired_difference", "measure_difference"),
    ("apd.evaluation.ablations", "variant_config", "ablation_config"),
    ("apd.evaluation.ablations", "variant_configs", "ablation_configs"),
    ("apd.evaluation", "paired_difference", "measure_difference"),
    ("apd.evaluation", "variant_config", "ablation_config"),
    ("apd.evaluation", "variant_configs", "ablation_configs"),
    ("apd.evaluation.factuality.methods", "THRESHOLDS", "THRESHOLD_NAMES"),
    ("apd.evaluation.factuality", "THRESHOLDS", "THRESHOLD_NAMES"),
    ("apd.report.evidence", "Claim", "PaperClaim"),
    ("apd.report", "Claim", "PaperClaim"),
]


@pytest.mark.parametrize("module, old, new", RENAMED, ids=lambda x: x if isinstance(x, str) else None)
def test_an_old_name_warns_and_gives_the_new_one(module, old, new):
    namespace = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{module}.{old} is deprecated; use {module}.{new}"):
        value = getattr(namespace, old)
    assert value is getattr(namespace, new)


def test_the_package_itself_uses_no_old_name():
    modules = sorted({m for m, _, _ in RENAMED}) + ["apd.amateur", "apd.decoding", "apd.family.pico"]
    code = "; ".join(f"import {m}" for m in modules)
    subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], check=True, cwd=ROOT)


def test_the_pairs_that_meant_two_things_are_now_distinct():
    import apd.amateur
    import apd.core.stats
    import apd.evaluation
    import apd.world
    from apd.evaluation import factuality
    from apd.family import pico, registry
    from apd.report import evidence

    assert apd.world.Claim is not evidence.PaperClaim
    assert apd.amateur.THRESHOLDS is not factuality.THRESHOLD_NAMES
    assert apd.core.stats.paired_difference is not apd.evaluation.measure_difference
    assert apd.amateur.variant_config is not apd.evaluation.ablation_config
    assert pico.SCALES is registry.SCALES is apd.amateur.runs.SCALES  # one tuple, one definition


def test_on_the_fly_mixing_weight_is_one_over_T():
    import torch

    from apd.core.curves import mix_on_the_fly

    p, q = torch.tensor([0.6, 0.4]), torch.tensor([0.2, 0.8])
    assert torch.equal(mix_on_the_fly(p, q, 0.25), 0.75 * p + 0.25 * q)
    with pytest.warns(DeprecationWarning, match="pass inv_T"):
        assert torch.equal(mix_on_the_fly(p, q, w=0.25), mix_on_the_fly(p, q, 0.25))
