"""apd.family.pretrain: a tiny pico family trains, lowers its loss, saves, reloads, caches and resumes."""

import json
import math

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from apd.family import pretrain, text
from apd.family.pretrain import Member, PicoConfig
from apd.family.registry import count_nonembedding
from tiny_models import tiny_pico

NAMES = ["Alma", "Boris", "Chen", "Dara", "Emil", "Fumi", "Goran", "Hana"]
CITIES = ["Kelmor", "Vashti", "Orlen", "Pru", "Tamsk", "Quill"]
JOBS = ["baker", "pilot", "poet", "judge"]


def _documents(n=240, seed=0):
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n):
        p = i % len(NAMES)  # every person has one fixed city and job: learnable facts
        name, city, job = NAMES[p], CITIES[p % len(CITIES)], JOBS[p % len(JOBS)]
        parts = [f"{name} was born in {city}.", f"{name} works as a {job}.", f"{name} likes the sea."]
        rng.shuffle(parts)
        docs.append(" ".join(parts))
    return docs


@pytest.fixture(scope="module")
def tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        show_progress=False,
        special_tokens=["<|endoftext|>", "<|padding|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_documents(), trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>", pad_token="<|padding|>"
    )


def _tiny(**changes) -> PicoConfig:
    cfg = tiny_pico(Member(1, 32, 2), Member(1, 16, 2))
    return cfg.replace(**changes)


@pytest.fixture(scope="module")
def trained(tokenizer, tmp_path_factory):
    cache = tmp_path_factory.mktemp("pico")
    return pretrain.train_family(_tiny(), tokenizer, _documents(), cache, device="cpu", progress=False, num_threads=1)


def test_training_lowers_loss_and_members_reload(trained, tokenizer):
    from transformers import AutoTokenizer, GPTNeoXForCausalLM

    manifest = json.loads((trained / "family.json").read_text())
    assert trained.name == f"pico-{manifest['key']}"
    assert manifest["members"] == ["pico-3.3k", "pico-13k"]  # smallest first (config lists 13k first)
    ids = text.token_stream(tokenizer, _documents())[:2000]
    for name in manifest["members"]:
        folder = trained / name
        record = json.loads((folder / "training.json").read_text())
        curve = record["loss_curve"]
        assert len(curve) == manifest["n_steps"] and record["tokens_seen"] == manifest["n_steps"] * 8 * 16
        assert curve[0] > math.log(len(tokenizer)) - 0.5  # starts near uniform
        assert record["final_loss"] < curve[0] - 1.5  # and learns

        model = GPTNeoXForCausalLM.from_pretrained(folder)
        tok = AutoTokenizer.from_pretrained(folder)
        assert tok.get_vocab() == tokenizer.get_vocab() and tok.eos_token == "<|endoftext|>"
        assert count_nonembedding(model) == record["n_nonembedding"] == manifest["n_nonembedding"][name]
        # the saved weights are the trained ones: far better than the same architecture untrained
        torch.manual_seed(0)
        fresh = GPTNeoXForCausalLM(model.config)
        trained_loss = pretrain.evaluate_loss(model, ids, seq_len=16)
        assert trained_loss < pretrain.evaluate_loss(fresh, ids, seq_len=16) - 1.5
        assert abs(trained_loss - record["final_loss"]) < 0.5
    assert not (trained / "_checkpoints").exists()


def test_family_folder_loads_with_apd_family(trained):
    from apd.family.loading import load_family

    fam = load_family("pico", local_dir=trained, device="cpu")
    assert list(fam.names) == ["pico-3.3k", "pico-13k"]


def test_cache_hit_does_not_retrain(trained, tokenizer, monkeypatch):
    cache = trained.parent
    weights = {p: p.stat().st_mtime_ns for p in trained.glob("*/model.safetensors")}

    def boom(*args, **kwargs):
        raise AssertionError("a finished member was retrained")

    monkeypatch.setattr(pretrain, "_train_member", boom)
    assert pretrain.train_family(_tiny(), tokenizer, _documents(), cache, device="cpu", progress=False) == trained
    # without the manifest, finished members are still reused and the manifest is rewritten
    manifest = (trained / "family.json").read_text()
    (trained / "family.json").unlink()
    assert pretrain.train_family(_tiny(), tokenizer, _documents(), cache, device="cpu", progress=False) == trained
    assert json.loads((trained / "family.json").read_text())["members"] == json.loads(manifest)["members"]
    assert {p: p.stat().st_mtime_ns for p in trained.glob("*/model.safetensors")} == weights
    # a different config or different data is a different family
    other = pretrain.family_key(_tiny(seed=4), "x", "y"), pretrain.family_key(_tiny(), "x", "y")
    assert other[0] != other[1] != pretrain.family_key(_tiny(), "z", "y")
    # so is one trained in another precision (a GPU's bf16 autocast vs the CPU's fp32)
    assert pretrain.family_key(_tiny(), "x", "y", "bf16-autocast") != other[1]
    assert json.loads((trained / "family.json").read_text())["precision"] == "fp32"
    assert pretrain.family_dir(_tiny(), tokenizer, _documents(), cache, device="cpu") == trained


def test_interrupted_run_resumes_to_identical_weights(tokenizer, tmp_path):
    cfg = _tiny(max_tokens=12 * 8 * 16)  # 12 steps per member
    straight_dir = pretrain.train_family(cfg, tokenizer, _documents(), tmp_path / "a", progress=False, num_threads=1)
    args = (cfg, tokenizer, _documents(), tmp_path / "b")
    with pytest.raises(pretrain.TrainingInterrupted):
        pretrain.train_family(*args, progress=False, max_steps_this_run=5, num_threads=1)
    folder = tmp_path / "b" / straight_dir.name
    assert (folder / "_checkpoints" / "pico-3.3k.pt").exists() and not (folder / "family.json").exists()
    with pytest.raises(pretrain.TrainingInterrupted):  # finishes member 1, stops inside member 2
        pretrain.train_family(*args, progress=False, max_steps_this_run=12, num_threads=1)
    assert (folder / "pico-3.3k" / "training.json").exists()
    assert (folder / "_checkpoints" / "pico-13k.pt").exists()
    assert pretrain.train_family(*args, progress=True, num_threads=1) == folder
    assert not (folder / "_checkpoints").exists()
    _assert_same_members(folder, straight_dir, 12)


def test_ctrl_c_checkpoints_and_resumes(tokenizer, tmp_path, monkeypatch):
    cfg = _tiny(members=(Member(1, 16, 2),), max_tokens=10 * 8 * 16)
    straight_dir = pretrain.train_family(cfg, tokenizer, _documents(), tmp_path / "a", progress=False, num_threads=1)
    real, calls = pretrain.learning_rate, []

    def ctrl_c_in_step_4(step, n_steps, config):  # called once per parameter group, before the update
        calls.append(step)
        if step == 4:
            raise KeyboardInterrupt
        return real(step, n_steps, config)

    monkeypatch.setattr(pretrain, "learning_rate", ctrl_c_in_step_4)
    with pytest.raises(KeyboardInterrupt):
        pretrain.train_family(cfg, tokenizer, _documents(), tmp_path / "b", progress=False, num_threads=1)
    monkeypatch.setattr(pretrain, "learning_rate", real)
    folder = tmp_path / "b" / straight_dir.name
    state = torch.load(folder / "_checkpoints" / "pico-3.3k.pt", weights_only=True)
    assert state["step"] == 4 and len(state["losses"]) == 4
    pretrain.train_family(cfg, tokenizer, _documents(), tmp_path / "b", progress=False, num_threads=1)
    _assert_same_members(folder, straight_dir, 10)


def _assert_same_members(folder, straight_dir, n_steps):
    for name in json.loads((straight_dir / "family.json").read_text())["members"]:
        resumed = load_file(folder / name / "model.safetensors")
        straight = load_file(straight_dir / name / "model.safetensors")
        assert resumed.keys() == straight.keys()
        for k in straight:
            assert torch.equal(resumed[k], straight[k]), k
        curves = [json.loads((f / name / "training.json").read_text())["loss_curve"] for f in (folder, straight_dir)]
        assert len(curves[0]) == n_steps and curves[0] == curves[1]


def test_the_default_families_sizes_and_names():
    """The default's six members (default-200's too) span two orders of magnitude; the counts match
    the models the shapes build."""
    from transformers import GPTNeoXForCausalLM

    six, cfg = PicoConfig.default200(), PicoConfig.default()
    assert cfg == six
    counts = []
    for _name, member, mcfg in zip(six.names, six.members, pretrain.member_configs(six, 4096)):
        with torch.device("meta"):
            model = GPTNeoXForCausalLM(mcfg)
        n = count_nonembedding(model)
        assert n == pretrain.nonembedding_count(member)
        counts.append(n)
    assert counts == sorted(counts) and max(counts) / min(counts) >= 100 and counts[4] / counts[0] >= 50
    assert six.names == ["pico-13k", "pico-28k", "pico-100k", "pico-336k", "pico-793k", "pico-1.8m"]
    assert len(PicoConfig.smoke().members) >= 3
    assert PicoConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg


def test_data_order_is_a_seeded_permutation_per_epoch():
    order = pretrain.chunk_order(n_chunks=10, n_steps=7, batch_size=4, seed=1)  # 2.8 epochs
    flat = order.ravel()
    assert sorted(flat[:10]) == list(range(10)) and sorted(flat[10:20]) == list(range(10))
    assert not np.array_equal(flat[:10], flat[10:20])
    np.testing.assert_array_equal(order, pretrain.chunk_order(10, 7, 4, seed=1))
    assert not np.array_equal(order, pretrain.chunk_order(10, 7, 4, seed=2))


def test_learning_rate_schedule():
    cfg = _tiny(lr=1.0, warmup_frac=0.1, min_lr_ratio=0.1)
    lrs = [pretrain.learning_rate(s, 100, cfg) for s in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)  # 10 warmup updates
    assert lrs[-1] == pytest.approx(0.1) and all(a >= b for a, b in zip(lrs[9:], lrs[10:]))
    assert lrs[9 + 45] == pytest.approx(0.55, abs=0.01)  # cosine midpoint


def test_evaluate_loss_hand_computed(tokenizer):
    from transformers import GPTNeoXForCausalLM

    cfg = pretrain.member_configs(_tiny(), 37)[1]
    torch.manual_seed(0)
    model = GPTNeoXForCausalLM(cfg)
    with torch.no_grad():
        model.embed_out.weight.zero_()  # logits all zero: uniform, ln(37) nats on every token
    ids = np.arange(50) % 37
    assert pretrain.evaluate_loss(model, ids, seq_len=16, batch_size=2) == pytest.approx(math.log(37), abs=1e-6)
    # a real model: windows of 17 tokens overlapping by one (16 + 16 + 16 + 1 predictions)
    torch.manual_seed(1)
    model = GPTNeoXForCausalLM(cfg).eval()
    x = torch.as_tensor(ids)
    nll = []
    for s in range(0, 49, 16):
        w = x[s : s + 17]
        logp = torch.log_softmax(model(input_ids=w[None, :-1]).logits[0].double(), -1)
        nll += (-logp[torch.arange(len(w) - 1), w[1:]]).tolist()
    assert len(nll) == 49
    assert pretrain.evaluate_loss(model, ids, seq_len=16, batch_size=3) == pytest.approx(np.mean(nll), abs=1e-5)


def test_bad_input_is_explained(tokenizer, tmp_path):
    with pytest.raises(TypeError, match="list of documents"):
        text.token_stream(tokenizer, "one long string")
    with pytest.raises(ValueError, match="another tokenizer"):
        text.token_stream(tokenizer, np.array([0, 5, 10_000]))
    with pytest.raises(ValueError, match="fewer than batch_size"):
        pretrain.train_family(_tiny(), tokenizer, _documents(3), tmp_path, progress=False)
    with pytest.raises(ValueError, match="not divisible"):
        PicoConfig(members=(Member(1, 30, 4),))
    with pytest.raises(ValueError, match="unique"):
        PicoConfig(members=(Member(1, 32, 2), Member(1, 32, 2)))


def test_members_trained_side_by_side_equal_one_after_another(trained, tokenizer, tmp_path, monkeypatch):
    """Two workers (apd.base.jobs) train the members to the same bits as one process training them in turn."""
    monkeypatch.setenv("APD_JOBS", "1")
    alone = pretrain.train_family(_tiny(), tokenizer, _documents(), tmp_path / "a", progress=False, num_threads=1)
    monkeypatch.setenv("APD_JOBS", "2")
    beside = pretrain.train_family(_tiny(), tokenizer, _documents(), tmp_path / "b", progress=False, num_threads=1)
    assert alone.name == beside.name == trained.name
    _assert_same_members(beside, alone, json.loads((alone / "family.json").read_text())["n_steps"])
    _assert_same_members(beside, trained, json.loads((alone / "family.json").read_text())["n_steps"])
