"""Cache keys of families, collections and ALM' runs are pinned: a refactor that changes one would
silently retrain everything a user has cached. If a change is meant to alter what an artifact holds,
bump the version that enters its key and update the value here, saying why in the commit."""

from dataclasses import asdict

import numpy as np
import pytest

from apd.amateur import entropies, runs, thf, train
from apd.evaluation.factuality import sweeps
from apd.family import pico, pretrain
from apd.family.settings import settings_for
from apd.world import corpus

PINNED = {
    "smoke": dict(
        corpus="968c95b84d2c",
        family_fp32="8418bcf1e08d",
        family_bf16="0de78a8d467b",
        family_cpu_1_thread="996b3a04e5a7",
        collect_config="417a0f5655a2e47e",
        collect="93ca00701d09",
        train="a2247dd340f0",
        fingerprint="43af55a5831052d0",
    ),
    # the 400-person world without a popularity prior on attribute values (value_zipf 0) and the
    # six members of the dose-response study (the default-200 shapes, so the same family keys for the
    # same corpus digest): changed on purpose from the five members (7b0202358d68, 1369f3f43c7d,
    # 97f313885614) when the family grew to span 139x
    "default": dict(
        corpus="493dbdc6a5f4",
        family_fp32="14ad811fb9b4",
        family_bf16="6acc04bf115c",
        family_cpu_1_thread="24af11165844",
        collect_config="417a0f5655a2e47e",
        collect="93ca00701d09",
        train="ccced5494bf2",
        fingerprint="535005842518639e",
    ),
    # the 200-person, six-member world: the keys it had as the default scale, unchanged
    "default-200": dict(
        corpus="58d9d03f7632",
        family_fp32="14ad811fb9b4",
        family_bf16="6acc04bf115c",
        family_cpu_1_thread="24af11165844",
        collect_config="417a0f5655a2e47e",
        collect="93ca00701d09",
        train="ccced5494bf2",
        fingerprint="535005842518639e",
    ),
}


@pytest.mark.parametrize("scale", ["smoke", "default-200", "default"])
def test_cache_keys_are_unchanged(scale):
    want = PINNED[scale]
    corpus_config, pico_config = pico.configs(scale)
    assert corpus.config_hash(corpus_config) == want["corpus"]
    assert pretrain.family_key(pico_config, "0" * 16, "1" * 16) == want["family_fp32"]
    assert pretrain.family_key(pico_config, "0" * 16, "1" * 16, "bf16-autocast") == want["family_bf16"]
    # Changed on purpose: training on the CPU keys by its thread count (the weights depend on it),
    # fixed at pretrain.CPU_THREADS = 1 whatever the machine, so CPU families carry "cpu_threads".
    assert pretrain.family_key(pico_config, "0" * 16, "1" * 16, "fp32", 1) == want["family_cpu_1_thread"]
    collect_config = runs.collect_config(settings_for("pico", scale))
    assert collect_config.hash() == want["collect_config"]
    ids = np.arange(10, dtype=np.uint16).tobytes()
    # Changed on purpose (issue 16, item 6): the collection key used to hold the members' absolute
    # folders ("/c/pico-13k"), so moving the cache meant collecting again. It now holds each member's
    # name and a digest of its weights (runs.member_identity), nothing that depends on where they live.
    members = [("pico-13k", "sha256:" + "a" * 16), ("pico-1.8m", "sha256:" + "b" * 16)]
    assert runs.collection_key(members, [9.4, 14.4], ids, asdict(collect_config)) == want["collect"]
    config = runs.train_config(settings_for("pico", scale), lambda3=0.6)
    assert runs.hash_key("abc", {"n": 1}, ["m1", "m2"], config.to_dict()) == want["train"]
    assert train._fingerprint(config.to_dict(), {"n_chunks": 3}, "d" * 16) == want["fingerprint"]


def test_factuality_sweep_key_is_unchanged():
    assert sweeps.config_key("a", 1, [2.0]) == "e50ae7f25eb8"


def test_entropy_label_and_thf_keys_are_unchanged():
    # REAL sampling (issue 14): entropy labels (cache/entropy/<key>) and THF runs (cache/thf/<key>)
    members = [("pico-13k", "sha256:" + "a" * 16), ("pico-1.8m", "sha256:" + "b" * 16)]
    ids = np.arange(10, dtype=np.uint16).tobytes()
    key = entropies.entropy_key(members, [9.4, 14.4], ids, 128)
    assert key == "8b6c0057885e"
    assert thf.thf_key(key, thf.thf_config(settings_for("pico", "default"))) == "2fabd00963bc"
    assert thf.thf_key(key, thf.thf_config(settings_for("pico", "smoke"))) == "b3eb36730d6d"


@pytest.mark.parametrize("scale, key", [("smoke", "a7f8b886c9f7"), ("default", "26e7c0e1bee7")])
def test_the_release_lambda3_tuning_key_is_unchanged(scale, key, tmp_path, monkeypatch):
    """Pinned when the release configuration's lambda3 came to be chosen like every variant's (design notes,
    "lambda3 on the claims' criterion": APD's dev-best 1/T, a wider grid, widening and ties, tuning version
    2; version 3: a plateau is not followed); a new tuning table is written then, but the ALM' runs it trains keep the keys pinned above.
    The key also holds the scoring code's digest (tuning.TUNING_CODE): pinned here with that digest fixed,
    and it moves when the code does."""
    import json
    from types import SimpleNamespace

    from apd.amateur import collect, tuning, variants

    folder = tmp_path / "abc123"
    folder.mkdir()
    manifest = {"format": collect.FORMAT, "config_hash": "h", "corpus": {"n": 1}, "members": ["a", "b"]}
    (folder / collect.MANIFEST).write_text(json.dumps(manifest))
    s = settings_for("pico", scale)
    base, grid = variants.variant_config("release", s, tuning=True), variants.lambda3_grid("release", s)
    dev = [SimpleNamespace(prompt="Q: who?\nA:", gold=" Ann")]
    score = variants.get_variant("release").score
    monkeypatch.setattr(tuning, "code_digest", lambda modules: "c" * 16)
    assert tuning.tuning_key(folder, base, grid, dev, score, s.inv_T_grid) == key
    monkeypatch.setattr(tuning, "code_digest", lambda modules: "d" * 16)
    assert tuning.tuning_key(folder, base, grid, dev, score, s.inv_T_grid) != key
