"""Every field of every config dataclass is checked when the config is built: NaN, an infinity, a
negative number, 0 where it is out of range, a string where a number or a bool belongs, a fraction
where an integer belongs and a string where a sequence belongs are refused with an error naming the
field; the defaults and the configurations the book builds still construct."""

import dataclasses
import math

import pytest
import torch

from apd.amateur.collect import CollectConfig
from apd.amateur.config import APDTrainConfig
from apd.amateur.gates import LOOSE_THRESHOLDS, Thresholds
from apd.amateur.thf import THFConfig, thf_config
from apd.amateur.variants import VARIANT_NAMES, variant_config
from apd.core import curves
from apd.evaluation.factuality.methods import Method
from apd.family import pico
from apd.family.pretrain import Member, PicoConfig
from apd.family.registry import FAMILIES, SCALES, MemberSpec
from apd.family.settings import settings_for
from apd.world.corpus import CorpusConfig
from apd.world.world import WorldConfig

# One valid instance of each config, and its fields for which 0 is out of range.
CONFIGS = [
    (Member(2, 32, 4, d_ff=64), "n_layer d_model n_head d_ff"),
    (PicoConfig.default(), "seq_len batch_size epochs max_tokens lr rotary_pct max_position_embeddings"),
    (
        APDTrainConfig(family="pico", lambda3=0.6, micro_batch_size=4, members=(0, "pico-1.8m")),
        "lr epochs batch_size micro_batch_size data_fraction hidden n_hidden_layers checkpoint_every "
        "keep_checkpoints log_every",
    ),
    (THFConfig(label_chunks=8), "weight_ratio lr epochs batch_size label_chunks checkpoint_every threads"),
    (CollectConfig(), "seq_len top_k mid_end chunks_per_shard"),
    (Thresholds(), "fidelity_ratio_max"),
    (FAMILIES["pythia"].members[0], "n_nonembedding"),
    (FAMILIES["qwen1.5"], ""),
    (settings_for("pico", "default"), "gate_chunks"),
    (settings_for("pythia", "default"), "gate_chunks"),
    (Method("APD", "REAL", 4.0, 1.0), "value T"),
    (WorldConfig.book(), "n_people n_countries n_cities n_employers n_universities qa_train_fraction"),
    (CorpusConfig.smoke(), "vocab_size"),
]
ALLOWED = {"log_size": (-1.0,), "fidelity_ratio_max": (math.inf,)}  # values valid for that field alone


def kind(field) -> str:
    """'bool', 'int', 'float', 'tuple' or '' (not checked here) from the field's annotation."""
    hint = str(field.type).replace("Optional[", "").replace(" | None", "")
    base = hint.split("[")[0].strip("] ")
    return base if base in ("bool", "int", "float", "tuple") else ""


def bad_values(config, field) -> list:
    """Values that must be refused for ``field`` of ``config``."""
    k, value = kind(field), getattr(config, field.name)
    if k == "bool":
        return ["False", 0, 1.0]
    if k == "tuple":
        bad = ["ab", "0.9, 0.95"]
        items = value or ()
        if items and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
            bad += [(math.nan,) + tuple(items[1:]), ("1",) + tuple(items[1:])]
        return bad
    bad = [math.nan, math.inf, -math.inf, -1, "1"] + ([2.5] if k == "int" else [])
    return [v for v in bad if v not in ALLOWED.get(field.name, ())]


CASES = [
    pytest.param(config, field.name, bad, id=f"{type(config).__name__}.{field.name}={bad!r}")
    for config, _ in CONFIGS
    for field in dataclasses.fields(config)
    if kind(field)
    for bad in bad_values(config, field)
]
ZERO_CASES = [
    pytest.param(config, name, id=f"{type(config).__name__}.{name}=0")
    for config, zero in CONFIGS
    for name in zero.split()
]


@pytest.mark.parametrize("config, name, bad", CASES)
def test_an_invalid_field_is_refused_by_name(config, name, bad):
    with pytest.raises((ValueError, TypeError)) as err:
        dataclasses.replace(config, **{name: bad})
    assert name in str(err.value)


@pytest.mark.parametrize("config, name", ZERO_CASES)
def test_zero_is_refused_where_it_is_out_of_range(config, name):
    with pytest.raises(ValueError, match=name):
        dataclasses.replace(config, **{name: 0})


def test_every_config_of_the_book_still_constructs():
    for config, _ in CONFIGS:  # each again from its own fields: what it holds passes its checks
        assert dataclasses.replace(config) == config
    for scale in SCALES:
        corpus, family = pico.configs(scale)
        assert dataclasses.replace(corpus) == corpus and PicoConfig.from_dict(family.to_dict()) == family
        for name in ("pico", "pythia", "opt", "qwen"):
            s = settings_for(name, scale)
            thf_config(s)
            for variant in VARIANT_NAMES:
                for tuning in (False, True):
                    cfg = variant_config(variant, s, 0.6, tuning=tuning)
                    assert APDTrainConfig.from_dict(cfg.to_dict()) == cfg
    defaults = [APDTrainConfig(), THFConfig(), CollectConfig(), Thresholds(), LOOSE_THRESHOLDS, WorldConfig()]
    assert all(dataclasses.replace(c) == c for c in defaults + [CorpusConfig(), WorldConfig.gpu(), CorpusConfig.gpu()])
    assert all(isinstance(m, MemberSpec) for f in FAMILIES.values() for m in f.all_members())


def test_valid_values_are_kept_as_given():
    """Checked, not converted: the fields enter cache keys as given (tests/test_cache_keys.py)."""
    cfg = APDTrainConfig(family="pico", lambda3=1, seed=3, members=[0, "pico-1.8m"])
    assert cfg.lambda3 == 1 and type(cfg.lambda3) is int and cfg.members == (0, "pico-1.8m")
    assert type(PicoConfig.default().replace(epochs=2).epochs) is int
    with pytest.raises(TypeError, match="seed must be an integer >= 0, got the float 3.0"):
        APDTrainConfig(seed=3.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        *[{name: bad} for name in ("lambda2", "lr", "final_lr_fraction") for bad in (math.nan, math.inf, -1, "1")],
        *[{name: bad} for name in ("iterations", "max_halvings") for bad in (math.nan, math.inf, -1, 2.5, "1")],
        dict(betas=(math.nan, 0.9)),
        dict(betas=(0.9, math.inf)),
        dict(betas="ab"),
        dict(flip="False"),
    ],
    ids=repr,
)
def test_the_fitters_settings_are_refused_by_name(kwargs):
    (name,) = kwargs
    with pytest.raises((ValueError, TypeError), match=name):
        curves.fit_curves(torch.tensor([[0.2, 0.3, 0.4]]), [1.0, 2.0, 3.0], **kwargs)
