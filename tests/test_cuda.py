"""CUDA paths: skipped without a GPU (CI has none); run them where one is present.

The rest of the suite also runs on a GPU machine (functions default to cuda when available);
these tests check what only a GPU exercises: bf16 members, offloading members to the CPU between
uses, CD with a bf16 expert and an fp32 amateur, and a family trained in bf16 autocast getting its
own cache key.
"""

import json

import pytest
import tiny_models
import torch
from transformers import PreTrainedTokenizerFast

from apd.core import filters
from apd.decoding import generation, processors
from apd.family import pretrain
from apd.family.loading import load_family
from apd.family.pretrain import Member
from tiny_models import tiny_pico

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

V = 300


@pytest.fixture(scope="module")
def tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=V,
        show_progress=False,
        special_tokens=["<|endoftext|>", "<|padding|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([f"member {i} of the family sees the same text." for i in range(200)], trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|padding|>")


@pytest.fixture(scope="module")
def members(tokenizer, tmp_path_factory):
    root = tmp_path_factory.mktemp("cuda-family")
    out = {}
    for name, (hidden, layers, rows) in {"a": (16, 1, V + 4), "b": (32, 2, V + 36)}.items():  # padded differently
        tiny_models.tiny_neox(len(name) + hidden, rows, hidden, layers, initializer_range=0.2).save_pretrained(
            root / name
        )
        tokenizer.save_pretrained(root / name)
        out[name] = str(root / name)
    return out


@pytest.mark.parametrize("offload", [False, True])
def test_bf16_family_on_cuda_matches_fp32_cpu(members, tokenizer, offload):
    cpu = load_family("pico", members=members, device="cpu")
    gpu = load_family("pico", members=members, device="cuda", offload=offload)
    assert gpu.dtype == (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)
    ids = torch.tensor([tokenizer("member 3 of the family sees")["input_ids"]])
    got, want = gpu.log_probs(ids), cpu.log_probs(ids)
    assert got.device.type == "cuda" and got.shape == want.shape == (2, 1, ids.shape[1], len(tokenizer))
    # bf16 keeps about 3 significant digits of the logits
    torch.testing.assert_close(got.float().cpu(), want, rtol=0.05, atol=0.05)
    home = {next(gpu.model(n).parameters()).device.type for n in gpu.names}
    assert home == ({"cpu"} if offload else {"cuda"})  # offloaded members wait on the CPU


def test_cd_with_bf16_expert_and_fp32_amateur(members, tokenizer):
    fam = load_family("pico", members=members, device="cuda")
    elm = fam.model(fam.elm)
    amateur = load_family("pico", members=members, device="cuda", dtype="float32").model(fam.alm)
    ids = torch.tensor([tokenizer("member 3 of the")["input_ids"]], device="cuda")
    proc = processors.ContrastiveLogitsProcessor(
        amateur, T=2.0, filters=filters.make_filters("top-k", 5), vocab_size=fam.vocab_size
    )
    out = generation.generate(
        elm,
        ids,
        processors=proc,
        max_new_tokens=4,
        do_sample=False,
        pad_token_id=tokenizer.pad_token_id,
        return_dict_in_generate=True,
        output_scores=True,
    )
    first = out.scores[0][0, : fam.vocab_size].float()
    with torch.no_grad():
        e = torch.log_softmax(elm(ids).logits[0, -1, : fam.vocab_size].float(), -1)
        a = torch.log_softmax(amateur(ids).logits[0, -1, : fam.vocab_size].float(), -1)
    keep = e >= e.topk(5).values[-1]
    assert torch.isinf(first[~keep]).all() and int(keep.sum()) == 5
    torch.testing.assert_close(first[keep], (e - 0.5 * a)[keep], rtol=1e-3, atol=1e-3)
    assert int(out.sequences[0, ids.shape[1]]) == int(torch.where(keep, e - 0.5 * a, -torch.inf).argmax())


def test_family_trained_in_bf16_autocast_has_its_own_key(tokenizer, tmp_path):
    cfg = tiny_pico(Member(1, 16, 2), Member(1, 32, 2))
    docs = [f"member {i % 7} of the family sees the same text." for i in range(300)]
    gpu = pretrain.train_family(cfg, tokenizer, docs, tmp_path, device="cuda", progress=False)
    manifest = json.loads((gpu / "family.json").read_text())
    assert manifest["device"] == "cuda" and manifest["precision"] == "bf16-autocast"
    assert pretrain.family_dir(cfg, tokenizer, docs, tmp_path, device="cpu") != gpu
    curve = json.loads((gpu / "pico-3.3k" / "training.json").read_text())["loss_curve"]
    assert sum(curve[-3:]) < sum(curve[:3])
    reloaded = load_family("pico", local_dir=gpu, device="cuda")
    assert reloaded.names == ("pico-3.3k", "pico-13k")


def test_the_controls_fits_on_the_gpu_agree_with_the_cpus():
    """The testbed controls fit their curves on a GPU family's device (controls.fit_device); the
    asymptotes agree with the CPU's to float32 noise."""
    import numpy as np

    from apd.evaluation import controls
    from apd.evaluation import noise as nz

    rng = np.random.default_rng(0)
    x = np.array([9.5, 10.3, 11.5, 12.7, 14.4])
    lp = np.log(rng.dirichlet(np.ones(30), size=(5, 64)))
    ids = np.argsort(-lp[-1], axis=-1)[:, :20]
    truth = rng.dirichlet(np.ones(30), size=64)
    people, buckets = np.arange(64) % 16, np.array(["head", "torso", "tail", "tail"] * 16)
    cpu = controls.asymptote_errors(lp, x, truth, ids, people, buckets, iterations=100)
    gpu = controls.asymptote_errors(lp, x, truth, ids, people, buckets, iterations=100, device="cuda")
    np.testing.assert_allclose(gpu["tv_fitter"], cpu["tv_fitter"], atol=1e-3)
    a = nz.family_noise(nz.HELD_OUT, member_logprobs=lp, log_sizes=x, ids=ids, iterations=100)
    b = nz.family_noise(nz.HELD_OUT, member_logprobs=lp, log_sizes=x, ids=ids, iterations=100, device="cuda")
    assert abs(a - b) < 1e-3
