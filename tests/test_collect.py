"""Tests for apd.amateur.collect: token sets, member log-probs, storage, resume, reader."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
import tiny_models
import torch
import torch.nn.functional as F
from transformers import PreTrainedTokenizerFast

from apd.amateur import collect
from apd.amateur.collect import CollectConfig, ModelFamily

V = 160  # shared vocabulary; the members pad their embedding matrices beyond it
CFG = CollectConfig(seq_len=16, chunks_per_shard=2, seed=3)  # default token set: 20 + 5 + 5


def tiny_neox(seed, hidden, layers, vocab):
    return tiny_models.tiny_neox(seed, vocab, hidden, layers, max_position_embeddings=32, initializer_range=0.2)


@pytest.fixture(scope="module")
def models():
    return [tiny_neox(0, 8, 1, 168), tiny_neox(1, 16, 1, 176), tiny_neox(2, 16, 2, 192)]


@pytest.fixture(scope="module")
def family(models):
    return ModelFamily(models, vocab_size=V, names=["small", "mid", "big"], device="cpu")


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(0)
    return rng.integers(0, V, size=5 * 16 + 7)  # 5 chunks of 16 and 7 dropped tokens


@pytest.fixture(scope="module")
def collected(family, corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("collect") / "clean"
    manifest = collect.collect_probabilities(family, corpus, out, CFG, batch_size=2, progress=False)
    return out, manifest


def direct_logits(model, ids):
    with torch.no_grad():
        return model(input_ids=torch.as_tensor(ids)[None]).logits[0, :, :V].double()


def fp16_ok(stored, exact, extra=0.0):
    """|stored - exact| within float16 rounding of the value (and of ``extra``)."""
    stored = np.asarray(stored, dtype=np.float64)
    exact = np.asarray(exact, dtype=np.float64)
    bound = (np.abs(exact) + np.abs(extra)) * 2.0**-11 + 1e-6
    return np.all(np.abs(stored - exact) <= bound)


def test_manifest_and_shards(collected, corpus):
    out, manifest = collected
    assert manifest["complete"] and manifest["members"] == ["small", "mid", "big"]
    assert (manifest["alm"], manifest["elm"], manifest["vocab_size"]) == ("small", "big", V)
    assert manifest["corpus"] == {
        "n_chunks": 5,
        "n_positions": 80,
        "dropped_tail_tokens": 7,
        "sha256_16": manifest["corpus"]["sha256_16"],
    }
    assert [s["n_chunks"] for s in manifest["shards"]] == [2, 2, 1]
    assert [s["first_chunk"] for s in manifest["shards"]] == [0, 2, 4]
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert not (out / "parts").exists()  # parts are merged and removed
    raw = collect.load_file(str(out / "shard-00000.safetensors"))
    assert raw["token_ids"].dtype == np.uint16 and raw["input_ids"].dtype == np.uint16
    assert raw["member_logprobs"].dtype == np.float16 and raw["member_logprobs"].shape == (2, 3, 16, 30)
    assert raw["alm_lse"].dtype == np.float32


def test_token_sets_and_member_logprobs_equal_direct_computation(collected, models, corpus):
    out, _ = collected
    records = list(collect.iter_records(out))
    assert len(records) == 5
    for c, rec in enumerate(records):
        assert set(rec) == {"input_ids", "token_ids", "member_logprobs", "alm_logits", "elm_logits"}
        np.testing.assert_array_equal(rec["input_ids"], corpus[c * 16 : (c + 1) * 16])
        assert rec["token_ids"].shape == (16, 30) and rec["token_ids"].dtype == np.int64
        logits = [direct_logits(m, rec["input_ids"]) for m in models]
        elm = logits[-1]
        rank = torch.empty_like(elm, dtype=torch.long)
        rank.scatter_(-1, elm.argsort(-1, descending=True), torch.arange(V).expand(16, V))
        ids = torch.from_numpy(rec["token_ids"])
        r = rank.gather(-1, ids)
        for t in range(16):
            assert len(set(ids[t].tolist())) == 30, "duplicate token in a token set"
        assert torch.equal(r[:, :20], torch.arange(20).expand(16, 20)), "top-20 first, in rank order"
        assert ((r[:, 20:25] >= 20) & (r[:, 20:25] < 100)).all()
        assert ((r[:, 25:] >= 100) & (r[:, 25:] < V)).all()
        assert (r[:, 20:25].diff(dim=-1) > 0).all() and (r[:, 25:].diff(dim=-1) > 0).all()
        for n, lg in enumerate(logits):
            exact = F.log_softmax(lg, -1).gather(-1, ids).numpy()
            assert fp16_ok(rec["member_logprobs"][n], exact), f"member {n} chunk {c}"
        for key, lg in (("alm_logits", logits[0]), ("elm_logits", logits[-1])):
            exact = lg.gather(-1, ids).numpy()
            lp = F.log_softmax(lg, -1).gather(-1, ids).numpy()
            assert rec[key].dtype == np.float16
            assert fp16_ok(rec[key], exact, extra=lp), key


def test_random_ranks_are_uniform_and_seeded():
    cfg = CollectConfig()
    mid, tail = collect.draw_ranks(cfg, 50277, 40000, shard_index=7)
    assert mid.min() == 20 and mid.max() == 99
    counts = np.bincount(mid.ravel() - 20, minlength=80)
    assert np.abs(counts / counts.mean() - 1).max() < 0.1  # ~2,500 draws per rank
    assert (np.diff(mid, axis=1) > 0).all()  # distinct and ascending
    assert tail.min() >= 0 and tail.max() < 50277 - 100
    assert np.all(np.sort(tail, 1)[:, 1:] != np.sort(tail, 1)[:, :-1])
    assert abs(tail.mean() / ((50277 - 100 - 1) / 2) - 1) < 0.01
    again = collect.draw_ranks(cfg, 50277, 40000, shard_index=7)
    other = collect.draw_ranks(cfg, 50277, 40000, shard_index=8)
    assert np.array_equal(mid, again[0]) and np.array_equal(tail, again[1])
    assert not np.array_equal(mid, other[0])
    # a tiny tail range forces redraws of repeated indices
    _, small = collect.draw_ranks(CollectConfig(mid_end=100, n_tail=5), 106, 500, 0)
    assert all(len(set(row)) == 5 for row in small.tolist())


def test_token_set_by_hand():
    # ELM logits over 10 tokens; ranks: 4, 7, 1, 9, 0, 2, 3, 5, 6, 8 (token 4 best)
    logits = torch.tensor([[5.0, 8.0, 4.0, 3.0, 10.0, 2.0, 1.0, 9.0, 0.0, 7.0]])
    # top_k=2 -> {4, 7}; mid_end=4 -> ranks 2, 3 are tokens 1, 9; outside top 4: 0 2 3 5 6 8
    got = collect.token_set(logits, torch.tensor([[3]]), torch.tensor([[0, 5, 2]]), top_k=2, mid_end=4)
    # tail indices 0, 5, 2 -> tokens 0, 8, 3 -> ordered by ELM logit: 0 (5.), 3 (3.), 8 (0.)
    assert got.tolist() == [[4, 7, 9, 0, 3, 8]]


def test_bytes_per_position(collected):
    out, manifest = collected
    pythia = collect.bytes_per_position(7, 30, 50277)
    assert (pythia["ours"], pythia["release"]) == (490, 1328)
    assert round(pythia["ratio"], 2) == 2.71
    assert collect.bytes_per_position(3, 30, 151936)["ours"] == 4 * 31 + 2 * 90 + 8  # int32 ids (Qwen)
    ours = collect.bytes_per_position(3, 30, V)["ours"]
    assert ours == 2 * 31 + 2 * 3 * 30 + 8 == 250
    arrays = sum(v.nbytes for s in manifest["shards"] for v in collect.load_file(str(out / s["file"])).values())
    assert arrays == ours * 80  # exactly what the formula says
    measured = manifest["bytes_per_position"]["measured"]
    files = sum(os.path.getsize(out / s["file"]) for s in manifest["shards"])
    assert measured == files / 80 and ours < measured < ours + 1000 / 16  # + headers only


class Interrupt(RuntimeError):
    pass


class CountingModel(torch.nn.Module):
    def __init__(self, model, log, name, fail_at):
        super().__init__()
        self.model, self.log, self.name, self.fail_at = model, log, name, fail_at

    def forward(self, **kw):
        self.log.append(self.name)
        if self.fail_at is not None and self.log.count(self.name) == self.fail_at:
            raise Interrupt(f"interrupted in {self.name}")
        return self.model(**kw)


class InterruptingFamily(ModelFamily):
    """The same family, whose member ``fail_name`` raises on its ``fail_at``-th forward pass."""

    def __init__(self, family, fail_name=None, fail_at=None):
        super().__init__(family._models, family.vocab_size, family.names, family.log_sizes, device="cpu")
        self.calls = []
        self.fail_name, self.fail_at = fail_name, fail_at

    def model(self, name):
        return CountingModel(super().model(name), self.calls, name, self.fail_at if name == self.fail_name else None)


def test_resume_after_interruptions_gives_identical_shards(collected, family, corpus, tmp_path):
    clean, clean_manifest = collected
    out = tmp_path / "resumed"
    # batch_size=2 -> shards of 2 chunks take one forward each: 3 forwards per member
    with pytest.raises(Interrupt):
        collect.collect_probabilities(
            InterruptingFamily(family, "big", 3), corpus, out, CFG, batch_size=2, progress=False
        )
    manifest = collect.read_manifest(out)
    assert not manifest["complete"] and manifest["shards"] == []
    assert len(list((out / "parts").glob("*.m02.safetensors"))) == 2  # two ELM parts were finished
    with pytest.raises(ValueError, match="unfinished"):
        next(collect.iter_records(out))
    second = InterruptingFamily(family, "mid", 2)  # fails in the last pass
    with pytest.raises(Interrupt):
        collect.collect_probabilities(second, corpus, out, CFG, batch_size=2, progress=False)
    assert second.calls.count("big") == 1  # only the missing ELM shard
    assert len(collect.read_manifest(out)["shards"]) == 1  # shard 0 finished before the failure
    assert len(list(collect.iter_records(out, allow_incomplete=True))) == 2
    third = InterruptingFamily(family)
    manifest = collect.collect_probabilities(third, corpus, out, CFG, batch_size=2, progress=False)
    assert third.calls == ["mid", "mid"]  # shards 1 and 2 of the last pass
    assert manifest["complete"] and manifest["shards"] == clean_manifest["shards"]
    for s in manifest["shards"]:
        assert (out / s["file"]).read_bytes() == (clean / s["file"]).read_bytes()


def test_rerun_is_a_no_op_and_other_settings_are_refused(collected, family, corpus):
    out, manifest = collected
    fam = InterruptingFamily(family)
    assert collect.collect_probabilities(fam, corpus, out, CFG, batch_size=2, progress=False) == manifest
    assert fam.calls == []
    with pytest.raises(ValueError, match="config"):
        collect.collect_probabilities(
            family, corpus, out, CollectConfig(seq_len=16, chunks_per_shard=2, seed=4), progress=False
        )
    with pytest.raises(ValueError, match="corpus"):
        collect.collect_probabilities(family, corpus[::-1].copy(), out, CFG, progress=False)


def test_bad_inputs(family, tmp_path):
    with pytest.raises(ValueError, match="mid_end"):
        collect.collect_probabilities(
            family, np.zeros(64, dtype=np.int64), tmp_path, CollectConfig(seq_len=16, mid_end=158)
        )
    with pytest.raises(ValueError, match=r"\[0, 160\)"):
        collect.collect_probabilities(family, np.full(64, V), tmp_path, CollectConfig(seq_len=16))
    with pytest.raises(ValueError, match="fewer than seq_len"):
        collect.collect_probabilities(family, np.zeros(10, dtype=np.int64), tmp_path, CollectConfig(seq_len=16))
    with pytest.raises(TypeError, match="integer"):
        collect.collect_probabilities(family, np.zeros(64), tmp_path, CollectConfig(seq_len=16))
    with pytest.raises(FileNotFoundError, match="run apd.amateur.collect.collect_probabilities"):
        collect.read_manifest(tmp_path / "nothing")


def test_list_of_models_and_torch_records(models, tmp_path):
    tokens = torch.randint(0, V, (2, 16), generator=torch.Generator().manual_seed(1))
    with pytest.raises(ValueError, match="ModelFamily"):
        collect.collect_probabilities(models[:2], tokens, tmp_path, CFG, progress=False)  # 168 vs 176 output ids
    same = [tiny_neox(4, 8, 1, 168), tiny_neox(5, 16, 1, 168)]
    manifest = collect.collect_probabilities(same, tokens, tmp_path, CFG, progress=False)
    assert manifest["vocab_size"] == 168 and manifest["members"] == ["member0", "member1"]
    rec = next(collect.iter_records(tmp_path, as_torch=True))
    assert rec["member_logprobs"].shape == (2, 16, 30) and rec["member_logprobs"].dtype == torch.float16
    assert torch.equal(rec["input_ids"], tokens[0])


TOKENIZER_JSON = (
    Path(os.environ.get("APD_DATA_DIR", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
    / "tokenizers"
    / "gpt-neox-20b"
    / "tokenizer.json"
)


def test_with_a_loaded_family_over_the_pythia_tokenizer(tmp_path):
    """apd.family.loading.Family (pico folder layout) with the real 50,277-token vocabulary."""
    if not TOKENIZER_JSON.exists():
        pytest.skip(f"{TOKENIZER_JSON} not found: set APD_DATA_DIR to the shared data folder")
    from apd.family.loading import load_family

    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(TOKENIZER_JSON), eos_token="<|endoftext|>", pad_token="<|padding|>"
    )
    for name, (seed, hidden, vocab) in {"a": (0, 8, 50304), "b": (1, 16, 50432)}.items():
        tiny_neox(seed, hidden, 1, vocab).save_pretrained(tmp_path / "fam" / name)
        tok.save_pretrained(tmp_path / "fam" / name)
    fam = load_family("pico", local_dir=tmp_path / "fam", device="cpu")
    assert fam.vocab_size == 50277
    text = tok("The capital of Kenya is Nairobi, a city in East Africa.")["input_ids"][:8]
    cfg = CollectConfig(seq_len=8, chunks_per_shard=1)
    collect.collect_probabilities(fam, np.array(text), tmp_path / "out", cfg, progress=False)
    rec = next(collect.iter_records(tmp_path / "out"))
    assert rec["token_ids"].max() < 50277
    exact = (
        F.log_softmax(direct_logits_v(fam.model("b"), text, 50277), -1)
        .gather(-1, torch.from_numpy(rec["token_ids"]))
        .numpy()
    )
    assert fp16_ok(rec["member_logprobs"][1], exact)
    assert collect.read_manifest(tmp_path / "out")["bytes_per_position"]["ours"] == 2 * 31 + 2 * 2 * 30 + 8


def direct_logits_v(model, ids, vocab):
    with torch.no_grad():
        return model(input_ids=torch.as_tensor(ids)[None]).logits[0, :, :vocab].double()
