"""Tests for apd.family: registry, non-embedding counts, loading through from_pretrained, errors.

Tiny random GPT-NeoX models (hidden 16-32, 1-2 layers) over the real GPT-NeoX-20B tokenizer
(50,277 tokens) with Pythia-style padded embedding matrices (50,304 and 50,432 rows).
"""

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import tiny_models
import torch
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    GPTNeoXConfig,
    GPTNeoXForCausalLM,
    OPTConfig,
    OPTForCausalLM,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from apd.family import loading, registry
from apd.family.loading import load_family
from apd.family.registry import count_nonembedding

DATA = Path(os.environ.get("APD_DATA_DIR", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
TOKENIZER_JSON = DATA / "tokenizers" / "gpt-neox-20b" / "tokenizer.json"
V = 50277  # tokens in the GPT-NeoX-20B tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    if not TOKENIZER_JSON.exists():
        pytest.skip(f"{TOKENIZER_JSON} not found: set APD_DATA_DIR to the shared data folder")
    special = dict(eos_token="<|endoftext|>", bos_token="<|endoftext|>", pad_token="<|padding|>")
    return PreTrainedTokenizerFast(tokenizer_file=str(TOKENIZER_JSON), **special)


def tiny_neox(hidden, layers, vocab, seed):
    return tiny_models.tiny_neox(
        seed, vocab, hidden, layers, mlp_ratio=4, rotary_pct=0.25, bos_token_id=0, eos_token_id=0, pad_token_id=1
    )


# Hand-computed non-embedding counts of the tiny models (h = hidden, L = layers):
# per layer: attention 4*(h*h + h) + MLP (h*4h + 4h + 4h*h + h) + two layer norms 4h; final LN 2h.
SMALL_N = 4 * (16 * 16 + 16) + (16 * 64 + 64 + 64 * 16 + 16) + 4 * 16 + 2 * 16  # 3312
BIG_N = 2 * (4 * (32 * 32 + 32) + (32 * 128 + 128 + 128 * 32 + 32) + 4 * 32) + 2 * 32  # 25472


@pytest.fixture(scope="module")
def folders(tokenizer, tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    out = {}
    for name, (hidden, layers, vocab) in {"small": (16, 1, 50304), "big": (32, 2, 50432)}.items():
        tiny_neox(hidden, layers, vocab, seed=len(name)).save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
        out[name] = root / name
    return out


@pytest.fixture(scope="module")
def tiny_gpt2(tokenizer, tmp_path_factory):
    """Absolute learned positions (unlike rotary GPT-NeoX, which is blind to a uniform shift of
    positions), so left padding gives wrong answers unless position_ids start at the first token."""
    root = tmp_path_factory.mktemp("gpt2")
    members = {}
    for name, (hidden, layers) in {"g-small": (16, 1), "g-big": (32, 1)}.items():
        torch.manual_seed(hidden)
        cfg = GPT2Config(n_embd=hidden, n_layer=layers, n_head=2, n_positions=64, vocab_size=50304)
        GPT2LMHeadModel(cfg).save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
        members[name] = str(root / name)
    return load_family("pico", members=members, device="cpu")


@pytest.fixture(scope="module")
def tiny(folders):
    members = {"pythia-70m-deduped": str(folders["small"]), "pythia-160m-deduped": str(folders["big"])}
    return load_family("pythia", members=members, device="cpu", check_sizes=False)


# ---------------------------------------------------------------------------- registry and counts


def test_registry_log_sizes_are_ln_of_counts():
    release = {
        "pythia": [16.7555, 18.2588, 19.5270, 20.5073, 20.9127, 21.6466, 22.5864],
        "opt": [18.277, 19.537, 20.916, 21.649, 22.588],
        "qwen1.5": [19.547, 21.146, 21.993],
    }
    for name, values in release.items():
        spec = registry.get_family_spec(name)
        assert [m.log_size for m in spec.members] == values
        for m in spec.members:  # the release rounds to 3-4 decimals
            assert abs(math.log(m.n_nonembedding) - m.log_size) < 5e-4, m.name
        assert spec.reference.x == pytest.approx(math.log(spec.reference.n_nonembedding))
        xs = [m.x for m in spec.all_members()]
        assert all(b > a for a, b in zip(xs, xs[1:]))
    assert registry.get_family_spec("pythia").reference.name == "pythia-12b-deduped"
    assert registry.get_family_spec("qwen") is registry.get_family_spec("Qwen1.5")


def _meta_count(model_cls, config, **kw):
    with torch.device("meta"):
        return count_nonembedding(model_cls(config), **kw)


def test_count_reproduces_registry_from_published_architectures():
    """The registry counts follow from each family's published config.json hyperparameters."""
    pythia = {"70m": (512, 6, 8, 50304), "12b": (5120, 36, 40, 50688)}
    for size, (h, layers, heads, vocab) in pythia.items():
        shape = dict(hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads, vocab_size=vocab)
        cfg = GPTNeoXConfig(**shape, intermediate_size=4 * h, rotary_pct=0.25)
        want = registry.FAMILIES["pythia"].member(f"pythia-{size}-deduped").n_nonembedding
        assert _meta_count(GPTNeoXForCausalLM, cfg) == want
    opt = {"125m": (768, 12, 12, 768), "350m": (1024, 24, 16, 512), "13b": (5120, 40, 40, 5120)}
    for size, (h, layers, heads, proj) in opt.items():
        shape = dict(hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads, ffn_dim=4 * h)
        cfg = OPTConfig(**shape, word_embed_proj_dim=proj, vocab_size=50272, do_layer_norm_before=size != "350m")
        assert _meta_count(OPTForCausalLM, cfg) == registry.FAMILIES["opt"].member(f"opt-{size}").n_nonembedding
    qwen = {
        "0.5B": (1024, 24, 16, 2816, True),
        "1.8B": (2048, 24, 16, 5504, False),
        "7B": (4096, 32, 32, 11008, False),
    }
    for size, (h, layers, heads, ffn, tie) in qwen.items():
        shape = dict(hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads)
        cfg = Qwen2Config(**shape, intermediate_size=ffn, vocab_size=151936, tie_word_embeddings=tie)
        n = _meta_count(Qwen2ForCausalLM, cfg, count_untied_unembedding=True)
        assert n == registry.FAMILIES["qwen1.5"].member(f"Qwen1.5-{size}").n_nonembedding


def test_count_nonembedding_by_hand():
    assert count_nonembedding(tiny_neox(16, 1, 50304, 0)) == SMALL_N == 3312
    assert count_nonembedding(tiny_neox(32, 2, 50432, 0)) == BIG_N == 25472
    # OPT ties its embeddings (subtracted once) and its 32 + 2 learned positions count.
    shape = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, vocab_size=100)
    opt = OPTForCausalLM(OPTConfig(**shape, ffn_dim=64, word_embed_proj_dim=16, max_position_embeddings=32))
    assert count_nonembedding(opt) == 3312 + 34 * 16
    # Qwen2, untied: the lm_head is subtracted unless the family counts it.
    qwen = Qwen2ForCausalLM(
        Qwen2Config(**shape, num_key_value_heads=2, intermediate_size=32, tie_word_embeddings=False)
    )
    body = 3 * (16 * 16 + 16) + 16 * 16 + 3 * 16 * 32 + 2 * 16 + 16  # qkv with bias, o, MLP, norms
    assert count_nonembedding(qwen) == body
    assert count_nonembedding(qwen, count_untied_unembedding=True) == body + 100 * 16


def test_defaults():
    assert loading.default_dtype("cpu") == torch.float32
    assert loading.needs_offload([10, 10], free_bytes=30) is False
    assert loading.needs_offload([10, 20], free_bytes=30) is True


# ---------------------------------------------------------------------------- loading


def test_load_tiny_family(tiny, folders):
    assert tiny.names == ("pythia-70m-deduped", "pythia-160m-deduped")
    assert (tiny.alm, tiny.elm) == tiny.names
    assert tiny.vocab_size == V == len(tiny.tokenizer)
    assert tiny.log_sizes.dtype == np.float64
    np.testing.assert_allclose(tiny.log_sizes, np.log([SMALL_N, BIG_N]))
    assert list(tiny.n_nonembedding) == [SMALL_N, BIG_N]
    assert tiny.device == torch.device("cpu") and tiny.dtype == torch.float32 and not tiny.offload
    assert tiny.locations["pythia-70m-deduped"] == str(folders["small"])
    assert not tiny.model(tiny.alm).training
    assert tiny.model(tiny.elm).get_output_embeddings().weight.shape[0] == 50432
    assert list(tiny.table()["n_nonembedding"]) == [SMALL_N, BIG_N]


def test_logits_restricted_to_tokenizer_vocab(tiny):
    texts = ["The capital of France is", "Hello world, hello there"]
    ids = torch.tensor([tiny.tokenizer(t)["input_ids"][:4] for t in texts])  # no padding
    logits = tiny.logits(ids)
    assert logits.shape == (2, 2, ids.shape[1], V) and logits.dtype == torch.float32
    for i, name in enumerate(tiny.names):
        full = tiny.model(name)(ids).logits
        assert full.shape[-1] in (50304, 50432)
        torch.testing.assert_close(logits[i], full[..., :V])
    lp = tiny.log_probs(ids)
    torch.testing.assert_close(lp.exp().sum(-1), torch.ones(2, 2, ids.shape[1]))
    streamed = dict(tiny.iter_member_logits(ids))
    assert list(streamed) == list(tiny.names)
    torch.testing.assert_close(torch.stack(list(streamed.values())), logits)
    only_elm = tiny.logits(ids, members=[tiny.elm])
    torch.testing.assert_close(only_elm[0], logits[1])


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("arch", ["neox", "gpt2"])
def test_next_token_with_padding(request, arch, side):
    tiny = request.getfixturevalue("tiny" if arch == "neox" else "tiny_gpt2")
    texts = ["The capital of France is Paris, and", "Hi", "One two three"]
    singles = [torch.tensor(tiny.tokenizer(t)["input_ids"]) for t in texts]
    seq = max(len(s) for s in singles)
    ids = torch.full((len(texts), seq), 1)
    mask = torch.zeros((len(texts), seq), dtype=torch.long)
    for row, s in enumerate(singles):
        span = slice(seq - len(s), seq) if side == "left" else slice(0, len(s))
        ids[row, span], mask[row, span] = s, 1
    got = tiny.next_token_logits(ids, mask)
    assert got.shape == (2, len(texts), V)
    for row, s in enumerate(singles):
        want = tiny.logits(s)[:, 0, -1]  # unpadded single sequence
        torch.testing.assert_close(got[:, row], want, rtol=1e-4, atol=1e-4)
    # The full-sequence logits agree at every real position too.
    full = tiny.logits(ids, mask)
    for row, s in enumerate(singles):
        real = mask[row].bool()
        torch.testing.assert_close(full[:, row, real], tiny.logits(s)[:, 0], rtol=1e-4, atol=1e-4)
    probs = tiny.next_token_probs(ids, mask)
    torch.testing.assert_close(probs.sum(-1), torch.ones(2, len(texts)))
    torch.testing.assert_close(tiny.next_token_log_probs(ids, mask).exp(), probs)


def test_bad_inputs(tiny):
    with pytest.raises(ValueError, match=r"\[0, 50277\)"):
        tiny.logits(torch.tensor([[5, 50300]]))  # a padding row of the embedding, not a token
    with pytest.raises(ValueError, match="all 0"):
        tiny.next_token_logits(torch.tensor([[5, 6]]), torch.tensor([[0, 0]]))
    with pytest.raises(ValueError, match="token ids"):
        tiny.iter_member_logits(torch.tensor([[-1]]))  # checked before iterating
    with pytest.raises(ValueError, match="not a member"):
        tiny.logits(torch.tensor([[5]]), members=["pythia-1b-deduped"])


def test_registry_size_check(folders):
    members = {"pythia-70m-deduped": str(folders["small"]), "pythia-160m-deduped": str(folders["big"])}
    with pytest.raises(ValueError, match="check_sizes=False") as err:
        load_family("pythia", members=members, device="cpu")
    assert "18,915,328" in str(err.value) and "3,312" in str(err.value)
    custom = load_family("pythia", members=members, device="cpu", log_sizes=[1.0, 2.5])
    np.testing.assert_array_equal(custom.log_sizes, [1.0, 2.5])
    with pytest.raises(ValueError, match="one finite float per member"):
        load_family("pythia", members=members, device="cpu", log_sizes=[1.0])


def test_local_dir_for_registered_family(tiny, folders, tmp_path):
    (tmp_path / "pythia-70m-deduped").symlink_to(folders["small"], target_is_directory=True)
    (tmp_path / "pythia-160m-deduped").symlink_to(folders["big"], target_is_directory=True)
    kw = dict(local_dir=tmp_path, device="cpu", check_sizes=False)
    f = load_family("pythia", members=["pythia-70m-deduped", "pythia-160m-deduped"], dtype="bf16", **kw)
    assert f.locations["pythia-160m-deduped"] == str(tmp_path / "pythia-160m-deduped")
    # bf16 weights, float32 outputs close to the fp32 family's.
    assert f.model(f.elm).dtype == torch.bfloat16
    ids = torch.tensor([[5, 6, 7, 8]])
    got = f.next_token_logits(ids)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, tiny.next_token_logits(ids), rtol=0.05, atol=0.05)
    with pytest.raises(FileNotFoundError, match="pythia-410m-deduped"):
        load_family("pythia", members=["pythia-70m-deduped", "pythia-410m-deduped"], **kw)


def test_pico_local_dir(folders, tmp_path):
    with pytest.raises(ValueError, match="local_dir="):
        load_family("pico")
    # No manifest: members are found and sorted by counted size.
    (tmp_path / "b-small").symlink_to(folders["small"], target_is_directory=True)
    (tmp_path / "a-big").symlink_to(folders["big"], target_is_directory=True)
    f = load_family("pico", local_dir=tmp_path, device="cpu")
    assert f.names == ("b-small", "a-big")
    np.testing.assert_allclose(f.log_sizes, np.log([SMALL_N, BIG_N]))
    # A manifest fixes the order, and a wrong order is refused.
    (tmp_path / "family.json").write_text(json.dumps({"members": ["a-big", "b-small"]}))
    with pytest.raises(ValueError, match=r"strictly increasing.*\['b-small', 'a-big'\]"):
        load_family("pico", local_dir=tmp_path, device="cpu")
    (tmp_path / "family.json").write_text(json.dumps(["b-small", "a-big"]))
    assert load_family("pico", local_dir=tmp_path, device="cpu").names == ("b-small", "a-big")
    with pytest.raises(ValueError, match="unknown member 'c'.*b-small, a-big"):
        load_family("pico", members=["c"], local_dir=tmp_path, device="cpu")


# ---------------------------------------------------------------------------- errors


def test_unknown_family_and_member(folders):
    with pytest.raises(ValueError, match="unknown family 'gpt2'.*pythia, opt, qwen1.5, pico"):
        load_family("gpt2")
    with pytest.raises(ValueError, match="unknown member 'pythia-3b'.*pythia-70m-deduped"):
        load_family("pythia", members=["pythia-3b"])
    with pytest.raises(ValueError, match="unknown member 'tiny'"):
        load_family("opt", members={"tiny": str(folders["small"])})


def test_sizes_not_strictly_increasing(folders):
    reversed_order = {"pythia-70m-deduped": str(folders["big"]), "pythia-160m-deduped": str(folders["small"])}
    with pytest.raises(ValueError, match="strictly increasing"):
        load_family("pythia", members=reversed_order, device="cpu", check_sizes=False)
    same_size = {"a": str(folders["small"]), "b": str(folders["small"])}
    with pytest.raises(ValueError, match="strictly increasing"):
        load_family("pico", members=same_size, device="cpu")


def test_tokenizers_differ(folders, tokenizer, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(folders["big"], other)
    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(TOKENIZER_JSON), eos_token="<|endoftext|>", pad_token="<|padding|>"
    )
    tok.add_tokens(["<|extra|>"])
    tok.save_pretrained(other)
    with pytest.raises(ValueError, match=r"'small' and 'other' have different tokenizers.*<\|extra\|>"):
        load_family("pico", members={"small": str(folders["small"]), "other": str(other)}, device="cpu")


def test_no_network_and_no_local_copy(monkeypatch, tmp_path):
    import huggingface_hub.constants
    import transformers.utils.hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(transformers.utils.hub, "_is_offline_mode", True)
    with pytest.raises(FileNotFoundError) as err:
        load_family("pythia", members=["pythia-70m-deduped"], device="cpu", hub_kwargs={"cache_dir": str(tmp_path)})
    for part in ("EleutherAI/pythia-70m-deduped", "local_dir=", "members={", "HF_HUB_OFFLINE"):  # the fixes
        assert part in str(err.value), part
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_family("pythia", members={"pythia-70m-deduped": str(tmp_path / "missing")}, device="cpu")


def test_prompt_log_probs_left_pads_text_prompts(tiny):
    texts = ["The capital of France is Paris, and", "Hi", "One two three"]
    side = tiny.tokenizer.padding_side
    got = tiny.prompt_log_probs(texts, batch_size=2)  # two batches, the first one padded
    assert got.shape == (2, len(texts), V) and got.dtype == np.float32
    assert tiny.tokenizer.padding_side == side
    for row, t in enumerate(texts):
        ids = torch.tensor(tiny.tokenizer(t, add_special_tokens=False)["input_ids"])
        np.testing.assert_allclose(got[:, row], tiny.log_probs(ids)[:, 0, -1].numpy(), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="non-empty list"):
        tiny.prompt_log_probs("one prompt")
    with pytest.raises(ValueError, match="batch_size"):
        tiny.prompt_log_probs(texts, batch_size=0)
