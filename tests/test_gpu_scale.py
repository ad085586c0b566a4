"""The `gpu` scale of the pico family (issue: a GPU scale), built at smoke size on the CPU."""

import math

import pytest

import apd
from apd.amateur import runs
from apd.build import resolve
from apd.family import pico, pretrain
from apd.family.settings import settings_for
from apd.world.world import World, WorldConfig


def test_gpu_scale_spans_pythias_range_with_more_members():
    corpus_cfg, cfg = pico.configs("gpu")
    counts = sorted(pretrain.nonembedding_count(m) for m in cfg.members)
    default_members = pretrain.PicoConfig.default().members
    assert len(cfg.members) > len(default_members)
    assert counts[-1] / counts[0] >= 300  # Pythia 70M..6.9B: about 340x
    assert len(set(counts)) == len(counts)
    # tokens per parameter of the largest member (Chinchilla-style budget stated in the docstring)
    assert cfg.max_tokens / counts[-1] >= 5


def test_gpu_world_has_five_times_the_evaluation_people_of_the_200_person_world():
    gpu = len(World(WorldConfig.gpu()).eval_people)
    assert gpu == 5 * len(World(WorldConfig.default200()).eval_people)
    assert 2 * gpu == 5 * len(World(WorldConfig()).eval_people)  # and 2.5 times the default's


def test_gpu_scale_is_known_to_every_stage():
    gpu = settings_for("pico", "gpu")
    assert "gpu" in pico.SCALES and gpu.scale == gpu.train_scale == "gpu"
    assert runs.train_config(gpu).epochs >= 8
    assert gpu.lambda3_grids["release"]
    assert apd.amateur.thf.thf_config(gpu).label_chunks is None  # THF labels on every chunk
    assert "gpu" in apd.report.claims.PICO_PROFILES


def test_gpu_members_train_save_and_load_on_the_cpu(smoke_family, tmp_path):
    # the gpu shapes, one tiny step each, on the smoke corpus and tokenizer: the same code path
    _, built, _ = smoke_family
    cfg = pretrain.PicoConfig.gpu().replace(batch_size=1, max_tokens=256, epochs=1.0)
    folder = pretrain.train_family(
        cfg, built.tokenizer, built.corpus.pretrain[:50], tmp_path, device="cpu", progress=False, num_threads=1
    )
    fam = apd.load_family("pico", local_dir=folder, device="cpu")
    assert len(fam.names) == len(cfg.members)
    span = math.exp(fam.log_sizes[-1] - fam.log_sizes[0])
    assert span == pytest.approx(
        pretrain.nonembedding_count(cfg.members[-1]) / pretrain.nonembedding_count(cfg.members[0])
    )


def test_gpu_profile_validates_and_runs_pico_at_gpu_scale_on_cuda():
    params = resolve("gpu")  # raises BookError on any invalid parameter
    pico_chapters = {stem for stem, p in params.items() if "pico_scale" in p}
    assert pico_chapters and all(params[s]["pico_scale"] == "gpu" for s in pico_chapters)
    # every chapter that loads the family runs it on the GPU (known_answer loads it on "auto", which
    # picks the GPU where there is one)
    assert all(params[s].get("device") == "cuda" for s in pico_chapters - {"known_answer"})
