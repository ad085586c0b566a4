"""Reliability (issue 16): damaged caches are set aside and rebuilt, concurrent builders share one
lock, the collection key does not depend on where the cache lives, and plausible mistakes raise
clear errors instead of giving silent wrong answers. Everything runs on tiny models in tmp caches."""

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from apd.amateur import collect, runs, train
from apd.amateur.config import APDTrainConfig
from apd.base import io
from apd.core import contrastive, curves, theory
from apd.evaluation import qa_data
from apd.family import loading, pretrain
from apd.family.pretrain import Member, PicoConfig
from apd.world import corpus
from tiny_models import tiny_pico

ROOT = Path(__file__).resolve().parents[1]
WORDS = ["Alma", "Boris", "Chen", "Dara", "Emil", "Fumi", "Goran", "Hana", "Kelmor", "Vashti", "Orlen"]


def _documents(n=160):
    rng = np.random.default_rng(0)
    return [" ".join(rng.choice(WORDS, size=12)) + " was born in " + WORDS[i % len(WORDS)] + "." for i in range(n)]


def _config(**changes) -> PicoConfig:
    cfg = tiny_pico(Member(1, 8, 1, name="pico-a"), Member(1, 16, 2, name="pico-b"), Member(1, 32, 2, name="pico-c"))
    return cfg.replace(**changes)


def _train(tok, cache, **kw):
    return pretrain.train_family(
        _config(), tok, _documents(), cache, device="cpu", progress=False, num_threads=1, **kw
    )


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "zero":  # zero 8 KB (or half the file) inside it: same size, wrong bytes
        n = min(8192, len(data) // 2)
        start = len(data) // 2 - n // 2
        data[start : start + n] = bytes(n)
    else:  # truncate
        data = data[: len(data) // 2]
    path.write_bytes(bytes(data))


def _aside(path: Path) -> list[Path]:
    return sorted(p for p in path.parent.glob(path.name + ".damaged-*") if p.suffix != ".sha256")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def tok(cache):
    return corpus.train_tokenizer(_documents(), vocab_size=300, cache_dir=cache / "tokenizers")


@pytest.fixture(scope="module")
def family_dir(tok, cache):
    return _train(tok, cache / "families")


# ------------------------------------------------------------------------------ the digest helper


def test_digest_helper_records_checks_and_sets_aside(tmp_path):
    p = io.write_json(tmp_path / "x.json", {"a": 1}, digest=True)
    assert io.recorded_digest(p) == io.file_sha256(p) and io.check_file(p, "thing", "redoing it")
    p.write_text('{"a": 2}')
    with pytest.warns(
        UserWarning, match=r"thing .*x\.json is damaged \(digest mismatch\); moved aside to .*x\.json\.damaged-"
    ):
        assert not io.check_file(p, "thing", "redoing it")
    assert not p.exists() and len(_aside(p)) == 1
    (tmp_path / "t.json").write_text('{"a": ')  # truncated, no digest recorded
    with pytest.warns(UserWarning, match="not valid JSON"):
        assert io.read_json_checked(tmp_path / "t.json", "record", "rebuilding it") is None


# ------------------------------------------------------------------------------ pretraining


@pytest.mark.parametrize("how", ["zero", "truncate"])
def test_damaged_member_is_set_aside_and_retrained(tok, cache, family_dir, how):
    weights = family_dir / "pico-b" / "model.safetensors"
    before = io.file_sha256(weights)
    untouched = (family_dir / "pico-a" / "model.safetensors").stat().st_mtime_ns
    _damage(weights, how)
    with pytest.warns(UserWarning, match=r"pico member .*pico-b is damaged .*moved aside"):
        assert _train(tok, cache / "families") == family_dir
    assert io.file_sha256(weights) == before  # retrained to the same weights
    assert (family_dir / "pico-a" / "model.safetensors").stat().st_mtime_ns == untouched
    assert _aside(family_dir / "pico-b")  # the damaged folder is kept, renamed
    shutil.rmtree(_aside(family_dir / "pico-b")[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # intact now: found without any message
        assert _train(tok, cache / "families") == family_dir


def test_damaged_family_manifest_is_rewritten_without_retraining(tok, cache, family_dir):
    manifest = family_dir / "family.json"
    want = json.loads(manifest.read_text())
    mtimes = {p: p.stat().st_mtime_ns for p in family_dir.glob("*/model.safetensors")}
    _damage(manifest, "truncate")
    with pytest.warns(UserWarning, match=r"family manifest .*family\.json is damaged"):
        _train(tok, cache / "families")
    assert json.loads(manifest.read_text())["members"] == want["members"]
    assert {p: p.stat().st_mtime_ns for p in family_dir.glob("*/model.safetensors")} == mtimes


def test_load_family_refuses_a_damaged_member_and_names_it(tok, cache, family_dir):
    weights = family_dir / "pico-c" / "model.safetensors"
    _damage(weights, "zero")
    with pytest.warns(UserWarning, match="pico-c"), pytest.raises(ValueError, match=r"'pico-c'.*damaged.*get_family"):
        loading.load_family("pico", local_dir=family_dir, device="cpu")
    _train(tok, cache / "families")  # the next build retrains it
    assert loading.load_family("pico", local_dir=family_dir, device="cpu").names == ("pico-a", "pico-b", "pico-c")


def test_damaged_pretraining_checkpoint_restarts_the_member(tok, tmp_path, monkeypatch):
    monkeypatch.setenv("APD_JOBS", "1")  # the members in this process, so that its warning is caught here
    cfg = _config(members=(Member(1, 8, 1, name="pico-a"), Member(1, 16, 2, name="pico-b")))
    kw = dict(device="cpu", progress=False, num_threads=1)
    with pytest.raises(pretrain.TrainingInterrupted):
        pretrain.train_family(cfg, tok, _documents(), tmp_path, max_steps_this_run=2, **kw)
    ckpt = next(tmp_path.glob("pico-*/_checkpoints/pico-a.pt"))
    _damage(ckpt, "truncate")
    with pytest.warns(UserWarning, match=r"pretraining checkpoint .*pico-a\.pt is damaged"):
        folder = pretrain.train_family(cfg, tok, _documents(), tmp_path, **kw)
    assert (folder / "family.json").is_file() and _aside(ckpt)
    fresh = pretrain.train_family(cfg, tok, _documents(), tmp_path / "fresh", **kw)
    assert io.file_sha256(folder / "pico-a" / "model.safetensors") == io.file_sha256(
        fresh / "pico-a" / "model.safetensors"
    )


def test_damaged_tokenizer_is_set_aside_and_trained_again(tok, cache):
    folder = next((cache / "tokenizers").glob("tokenizer-*"))
    _damage(folder / "tokenizer.json", "truncate")
    with pytest.warns(UserWarning, match=r"cached tokenizer .*tokenizer-.* is damaged"):
        again = corpus.train_tokenizer(_documents(), vocab_size=300, cache_dir=cache / "tokenizers")
    assert again.get_vocab() == tok.get_vocab() and (folder / "tokenizer.json").is_file()


# ------------------------------------------------------------------------------ collection and ALM'


@pytest.fixture(scope="module")
def fam(family_dir):
    return loading.load_family("pico", local_dir=family_dir, device="cpu")


CCFG = collect.CollectConfig(seq_len=16, chunks_per_shard=8)


def _collect(fam, cache):
    return runs.collect_family(fam, _documents(), CCFG, cache=cache, progress=False, batch_size=8)


def test_damaged_collection_shard_and_manifest_are_rebuilt(fam, tmp_path):
    out = _collect(fam, tmp_path)
    shard = out / "shard-00001.safetensors"
    before = io.file_sha256(shard)
    _damage(shard, "zero")
    with pytest.warns(UserWarning, match=r"collection shard .*shard-00001\.safetensors is damaged"):
        assert _collect(fam, tmp_path) == out
    assert io.file_sha256(shard) == before and _aside(shard)
    _damage(out / "manifest.json", "truncate")
    with pytest.warns(UserWarning, match=r"collection manifest .*manifest\.json is damaged"):
        _collect(fam, tmp_path)
    assert collect.read_manifest(out)["complete"] and io.file_sha256(shard) == before
    _damage(shard, "truncate")  # a reader outside collect_family names the file
    with pytest.warns(UserWarning), pytest.raises(ValueError, match=r"shard-00001\.safetensors.*collect_family"):
        collect.load_shard(shard)


def test_damaged_collection_part_is_computed_again(fam, tmp_path):
    out = tmp_path / "c"
    ids = np.asarray(fam.tokenizer("".join(_documents()))["input_ids"])
    collect.collect_probabilities(fam, ids, out, CCFG, progress=False)
    want = {p.name: io.file_sha256(p) for p in out.glob("shard-*.safetensors")}
    # an interrupted run: shard 0 unmerged, its ELM part damaged, a dead writer's .tmp left behind
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["shards"], manifest["complete"] = manifest["shards"][1:], False
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / "shard-00000.safetensors").unlink()
    part = out / "parts" / "shard-00000.m02.safetensors"
    io.atomic_write(part, lambda tmp: tmp.write_bytes(b"x" * 100), digest=True)
    part.write_bytes(b"y" * 50)
    (out / "shard-00000.safetensors.tmp").write_bytes(b"half")
    with pytest.warns(UserWarning, match=r"collection part .*shard-00000\.m02\.safetensors is damaged"):
        collect.collect_probabilities(fam, ids, out, CCFG, progress=False)
    assert {p.name: io.file_sha256(p) for p in out.glob("shard-*.safetensors")} == want
    assert not list(out.glob("*.tmp"))


def test_collection_key_does_not_depend_on_where_the_cache_lives(fam, family_dir, tmp_path):
    out = _collect(fam, tmp_path / "here")
    shutil.copytree(family_dir, tmp_path / "moved" / family_dir.name)
    shutil.copytree(tmp_path / "here", tmp_path / "elsewhere")
    moved = loading.load_family("pico", local_dir=tmp_path / "moved" / family_dir.name, device="cpu")
    assert runs.member_identity(moved.locations["pico-a"]) == runs.member_identity(fam.locations["pico-a"])
    found = _collect(moved, tmp_path / "elsewhere")
    assert found.name == out.name and found.parent.parent == tmp_path / "elsewhere"
    assert not (found / "parts").exists()  # found, not collected again


def _train_cfg(**kw):
    base = dict(family="pico", lambda3=0.1, lr=3e-3, warmup_steps=0.1, epochs=1, batch_size=4, micro_batch_size=4)
    return APDTrainConfig(**{**base, "checkpoint_every": 2, "device": "cpu", **kw})


def test_damaged_alm_prime_checkpoint_and_log_are_healed(fam, tmp_path):
    col = _collect(fam, tmp_path)
    final = runs.train_apd(fam, col, _train_cfg(), cache=tmp_path, progress=False)
    before = io.file_sha256(final / "model.safetensors")
    _damage(final / "model.safetensors", "zero")
    with pytest.warns(UserWarning, match=r"ALM' model .*alm_prime is damaged"):
        again = runs.train_apd(fam, col, _train_cfg(), cache=tmp_path, progress=False)
    assert again == final and io.file_sha256(final / "model.safetensors") == before and _aside(final)
    _damage(final / "curve_mlp.pt", "truncate")  # a reader outside train_apd names the folder
    with pytest.warns(UserWarning), pytest.raises(ValueError, match=r"ALM' in .*alm_prime was damaged.*apd_model"):
        runs.load_alm_prime(final, device="cpu")
    assert runs.train_apd(fam, col, _train_cfg(), cache=tmp_path, progress=False) == final  # retrained

    # a run stopped mid-way: its latest checkpoint truncated, the log's last line cut short
    from apd.amateur.data import collected_chunks

    data = collected_chunks(col)
    run = tmp_path / "stopped"
    cfg = _train_cfg(log_every=1, keep_checkpoints=2)
    train.train_alm_prime(cfg, fam.locations[fam.alm], data, run, progress=False, stop_after=4)
    ckpts = sorted((run / "checkpoints").glob("step_*.pt"))
    assert len(ckpts) >= 2
    _damage(ckpts[-1], "truncate")
    log = run / "train_log.jsonl"
    log.write_text(log.read_text() + '{"step": 5, "lo')
    with pytest.warns(UserWarning, match=r"the last line of .*train_log\.jsonl is truncated"):
        assert list(runs.read_train_log(run)["step"]) == [1, 2, 3, 4]
    with pytest.warns(UserWarning, match=r"ALM' checkpoint .*step_00000004\.pt is damaged .*earlier one"):
        out = train.train_alm_prime(cfg, fam.locations[fam.alm], data, run, progress=False)
    ref = train.train_alm_prime(cfg, fam.locations[fam.alm], data, tmp_path / "ref", progress=False)
    assert io.file_sha256(out / "model.safetensors") == io.file_sha256(ref / "model.safetensors")
    assert list(runs.read_train_log(run)["step"]) == list(runs.read_train_log(tmp_path / "ref")["step"])


def test_a_finished_runs_damaged_log_is_set_aside_and_the_run_trained_again(fam, tmp_path):
    """Issue: a truncated last line of a finished run's train_log.jsonl silently changed apd.json.
    The log's digest is recorded when the run finishes; a log that does not match it is set aside
    (one message naming it) and the run trained again, to the same weights and losses."""
    col = _collect(fam, tmp_path)
    cfg = _train_cfg(log_every=1)
    final = runs.train_apd(fam, col, cfg, cache=tmp_path, progress=False)
    run, log = final.parent, final.parent / "train_log.jsonl"
    assert io.recorded_digest(log) == io.file_sha256(log)  # recorded beside the run record's
    weights = io.file_sha256(final / "model.safetensors")
    want = runs.read_train_log(run).drop(columns="seconds")
    text = log.read_text()
    log.write_text(text[:-12])  # the last line cut short
    with pytest.warns(UserWarning, match=r"ALM' training log .*train_log\.jsonl is damaged \(digest mismatch\)"):
        assert runs.train_apd(fam, col, cfg, cache=tmp_path, progress=False) == final
    assert _aside(log) and io.file_sha256(final / "model.safetensors") == weights
    pd.testing.assert_frame_equal(runs.read_train_log(run).drop(columns="seconds"), want)
    assert io.recorded_digest(log) == io.file_sha256(log)

    # a reader that finds it damaged names it and never reads a cut log
    log.write_text(log.read_text()[:-12])
    with (
        pytest.warns(UserWarning, match=r"train_log\.jsonl is damaged"),
        pytest.raises(ValueError, match=r"train_log\.jsonl of a finished run is damaged .*apd\.apd_model"),
    ):
        runs.read_train_log(run)
    assert not log.exists()
    assert runs.train_apd(fam, col, cfg, cache=tmp_path, progress=False) == final  # trained again

    # a run finished before logs were digested: read line by line, then its digest is recorded
    sidecar = log.with_name(log.name + ".sha256")
    sidecar.unlink()
    assert runs.train_apd(fam, col, cfg, cache=tmp_path, progress=False) == final and sidecar.is_file()
    sidecar.unlink()
    log.write_text(log.read_text()[:-12])
    with pytest.warns(UserWarning, match=r"train_log\.jsonl is damaged \(line \d+ is not JSON\)"):
        runs.train_apd(fam, col, cfg, cache=tmp_path, progress=False)
    pd.testing.assert_frame_equal(runs.read_train_log(run).drop(columns="seconds"), want)


def test_alm_prime_without_digests_and_a_truncated_curve_mlp_is_named_set_aside_and_rebuilt(fam, tmp_path):
    """Issue: an ALM' folder without digests.json and a truncated curve_mlp.pt failed with torch's
    message, named no path, and failed again on every rerun."""
    from apd.amateur.objective import CurveMLP

    col = _collect(fam, tmp_path)
    final = runs.train_apd(fam, col, _train_cfg(), cache=tmp_path, progress=False)
    mlp = final / "curve_mlp.pt"
    before = io.file_sha256(mlp)
    (final / "digests.json").unlink()
    _damage(mlp, "truncate")
    with pytest.warns(UserWarning, match=r"ALM' model .*alm_prime is damaged \(unreadable curve_mlp\.pt"):
        assert runs.train_apd(fam, col, _train_cfg(), cache=tmp_path, progress=False) == final
    assert io.file_sha256(mlp) == before and (final / "digests.json").is_file() and _aside(final)

    # digests that already cover the damaged file (recorded by older code): its loader catches it,
    # names it, sets the folder aside, and the next run trains it again
    _damage(mlp, "truncate")
    io.write_folder_digests(final)
    with (
        pytest.warns(UserWarning, match=r"alm_prime is damaged"),
        pytest.raises(ValueError, match=r"alm_prime/curve_mlp\.pt cannot be read .*apd_model"),
    ):
        CurveMLP.load(final)
    assert not final.exists()
    assert runs.train_apd(fam, col, _train_cfg(), cache=tmp_path, progress=False) == final
    assert io.file_sha256(mlp) == before

    # a curve MLP outside an ALM' folder: named, with what to delete
    lone = tmp_path / "lone" / "curve_mlp.pt"
    lone.parent.mkdir()
    lone.write_bytes(mlp.read_bytes()[:100])
    with pytest.raises(ValueError, match=r"lone/curve_mlp\.pt cannot be read .*delete it"):
        CurveMLP.load(lone)
    assert lone.is_file()


def test_a_full_disk_names_the_file_and_its_folder(tmp_path):
    def full(tmp):
        tmp.write_bytes(b"half")
        raise RuntimeError("PytorchStreamWriter failed writing file data/0: [Errno 28] No space left on device")

    target = tmp_path / "art" / "x.pt"
    with pytest.raises(OSError, match=r"no space left .*art/x\.pt \(.* free in .*art") as err:
        io.atomic_write(target, full)
    assert err.value.errno == 28 and not list(target.parent.iterdir())  # the partial file is gone
    with pytest.raises(RuntimeError, match="other"):  # any other error is left as it is
        io.atomic_write(target, lambda tmp: (_ for _ in ()).throw(RuntimeError("other")))


# ------------------------------------------------------------------------------ two builders at once

BUILDER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from test_reliability import _documents, _train
    from apd.world import corpus
    tok = corpus.train_tokenizer(_documents(), vocab_size=300, cache_dir={cache!r} + "/tokenizers")
    print(_train(tok, {cache!r} + "/families"))
""")


def test_two_concurrent_pretraining_builders_share_one_cache(tmp_path):
    cache = str(tmp_path / "shared")
    # a dead writer's leftovers in the family folder the builders will use
    tok = corpus.train_tokenizer(_documents(), vocab_size=300)
    folder = pretrain.family_dir(_config(), tok, _documents(), cache + "/families", device="cpu")
    (folder / "pico-a.tmp").mkdir(parents=True)
    (folder / "pico-a.tmp" / "model.safetensors").write_bytes(b"half a model")
    script = BUILDER.format(tests=str(ROOT / "tests"), cache=cache)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    pipes = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs = [subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env, **pipes) for _ in range(2)]
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (_out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
    assert {out.strip().splitlines()[-1] for out, _ in outs} == {str(folder)}
    assert (folder / "family.json").is_file()
    assert not list(folder.glob("*.tmp")) and not list(Path(cache, "tokenizers").glob(".tokenizer-*-*"))
    assert len(list(Path(cache, "tokenizers").glob("tokenizer-*"))) == 1


# ------------------------------------------------------------------------------ no silent wrong answers


def test_raw_counts_instead_of_log_sizes_raise():
    with pytest.raises(ValueError, match="look like raw counts"):
        theory.hlm_log_size(6.9e9, 7e7, 2)
    x = [1e4, 3e4, 1e5]
    with pytest.raises(ValueError, match="look like raw counts"):
        curves.fit_curves(torch.tensor([[0.2, 0.3, 0.4]]), x)
    assert curves.fit_curves(torch.tensor([[0.2, 0.3, 0.4]]), np.log(x), iterations=5).ok.all()


def test_temperature_near_one_gives_a_clear_error_not_overflow():
    assert math.isfinite(theory.hlm_log_size(22.5864, 16.7555, 1.0000001))
    with pytest.raises(ValueError, match="too close to 1|so close to 1"):
        theory.hlm_size(22.5864, 16.7555, 1.0000001)
    assert math.isfinite(theory.hlm_size(22.5864, 16.7555, 1.01))


def test_duplicate_members_raise(family_dir):
    with pytest.raises(ValueError, match="'pico-a' more than once"):
        loading.load_family("pico", members=["pico-a", "pico-a"], local_dir=family_dir, device="cpu")


def _qa_file(tmp_path, lines):
    qa = tmp_path / "qa"
    qa.mkdir(exist_ok=True)
    (qa / "openbook_qa.jsonl").write_text("".join(line + "\n" for line in lines))
    return tmp_path


ROW = {"query": "Question: What flies?\nAnswer:", "choices": ["a bird", "a stone"], "gold": 0}


@pytest.mark.parametrize(
    "lines, match",
    [
        ([json.dumps(ROW), json.dumps({**ROW, "gold": -1})], r"openbook_qa\.jsonl, line 2 has gold answer index -1"),
        ([json.dumps(ROW), json.dumps({**ROW, "gold": 2})], r"line 2 has gold answer index 2"),
        ([json.dumps({k: v for k, v in ROW.items() if k != "gold"})], r"openbook_qa\.jsonl:1: gold: missing"),
        ([], r"openbook_qa\.jsonl is empty"),
        ([json.dumps(ROW), json.dumps(ROW)[:20]], r"openbook_qa\.jsonl, line 2 is not valid JSON"),
    ],
)
def test_bad_qa_files_name_file_and_line(tmp_path, lines, match):
    root = _qa_file(tmp_path, lines)
    with pytest.raises(qa_data.DatasetInvalid, match=match):
        qa_data.load_dataset("openbookqa", data_dir=root)
    with pytest.raises(qa_data.DatasetInvalid, match=match):  # invalid data is an error, never "not run"
        qa_data.try_load("openbookqa", data_dir=root)
    with pytest.raises(qa_data.DatasetInvalid, match=match):  # --check reads it line by line, the same way
        qa_data.check_offline_file("openbookqa", root)
    assert len(qa_data.load_dataset("openbookqa", data_dir=_qa_file(tmp_path, [json.dumps(ROW)]))) == 1


def test_minus_inf_in_both_models_and_masked_rows_never_give_nan():
    elm = torch.tensor([[0.0, 1.0, -math.inf], [-math.inf] * 3])
    alm = torch.tensor([[0.5, 0.0, -math.inf], [-math.inf] * 3])
    s = contrastive.contrastive_scores(elm, alm, 0.5)
    assert not torch.isnan(s).any()
    assert s[0, 2] == -math.inf and (s[1] == -math.inf).all() and torch.isfinite(s[0, :2]).all()
    with pytest.raises(ValueError, match="every token of some row scores -inf"):
        contrastive.contrastive_scores(elm, alm, 0.5, renormalize="prob")
    s = contrastive.contrastive_scores(elm.numpy(), alm.numpy(), contrastive.Reciprocal(2.0))
    assert not np.isnan(s).any()
    with pytest.raises(ValueError, match="amateur has no finite"):
        contrastive.contrastive_scores(elm[:1], torch.full((1, 3), -math.inf), 0.5)


def test_beam_search_with_a_contrastive_processor_says_it_is_unsupported():
    from tiny_models import tiny_neox

    from apd.decoding import generation, processors

    expert, amateur = tiny_neox(0, 50), tiny_neox(1, 50)
    proc = processors.ContrastiveLogitsProcessor(amateur, T=2.0, vocab_size=50)
    ids, mask = torch.tensor([[3, 4, 5]]), torch.ones(1, 3, dtype=torch.long)
    with pytest.raises(ValueError, match=r"does not support beam search.*num_beams=1"):
        generation.generate(expert, ids, mask, proc, num_beams=2, max_new_tokens=3, pad_token_id=0)
    proc.prepare(mask)  # Hugging Face's own generate: the processor sees 2 rows for 1 prompt
    with pytest.raises(ValueError, match=r"does not support beam search.*prepare\(\) again does not help"):
        expert.generate(
            input_ids=ids, attention_mask=mask, num_beams=2, max_new_tokens=3, pad_token_id=0, logits_processor=[proc]
        )


def test_a_cache_from_before_digests_is_accepted_then_covered(tok, tmp_path):
    folder = pretrain.train_family(_config(), tok, _documents(), tmp_path, device="cpu", progress=False, num_threads=1)
    for p in [*folder.glob("*/digests.json"), *folder.glob("*.sha256")]:  # as written before this change
        p.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # intact: found, not retrained, digests recorded now
        assert _train(tok, tmp_path) == folder
    assert len(list(folder.glob("*/digests.json"))) == 3
    for p in folder.glob("*/digests.json"):
        p.unlink()
    _damage(folder / "pico-a" / "model.safetensors", "truncate")  # truncated before digests existed
    with pytest.warns(UserWarning, match=r"pico-a is damaged \(unreadable model\.safetensors"):
        _train(tok, tmp_path)
    assert _aside(folder / "pico-a") and (folder / "pico-a" / "digests.json").is_file()


# ------------------------------------------------------------------------------ checked caches (factuality)


def _decoders(fam):
    from apd.evaluation import factuality as fx

    return fx.methods.Decoders(fam.model("pico-c"), fam.tokenizer, alm=fam.model("pico-a"), vocab_size=fam.vocab_size)


SWEEP_PROMPTS = ["Alma Boris was born in", "Chen"]


def _sweep(fam, folder, methods=None):
    from apd.evaluation import factuality as fx

    methods = methods or [fx.methods.Method("ELM", "top-p", 0.8), fx.methods.Method("CD", "top-p", 0.8, 2.0)]
    kw = dict(seeds=(0, 1), max_new_tokens=3, batch_size=2, cache=folder, progress=False)
    return fx.sweeps.sweep(_decoders(fam), methods, SWEEP_PROMPTS, **kw)


def test_factuality_generations_are_checked_and_a_moved_cache_is_used_as_it_is(fam, family_dir, tmp_path):
    from apd.evaluation import factuality as fx

    folder = fx.sweeps.sweep_cache("world", fx.sweeps.decoder_identity(fam), root=tmp_path / "cache")
    want = _sweep(fam, folder)
    files = sorted(folder.glob("*.json"))
    assert len(files) == 2 and all(io.recorded_digest(f) for f in files)
    # a changed but valid file: named, set aside, generated again (the same text), never read as numbers
    data = json.loads(files[0].read_text())
    data["continuations"][0][0] = "a different continuation"
    files[0].write_text(json.dumps(data))
    with pytest.warns(UserWarning, match=r"factuality generations .*\.json is damaged \(digest mismatch\)"):
        assert _sweep(fam, folder) == want
    assert _aside(files[0])
    # a truncated file: named and rebuilt, not a bare JSONDecodeError, and later builds read it again
    _damage(files[1], "truncate")
    with pytest.warns(UserWarning, match=r"factuality generations .*\.json is damaged"):
        assert _sweep(fam, folder) == want
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _sweep(fam, folder) == want
    # a file of the right name but another shape (e.g. written before digests): set aside too
    io.write_json(files[0], {"continuations": [["x"]]}, digest=True)
    with pytest.warns(UserWarning, match=r"does not hold 2 prompts x 2 seeds"):
        assert _sweep(fam, folder) == want
    # the key holds the models' weight digests, not their paths: a moved family and cache are found again
    shutil.copytree(family_dir, tmp_path / "moved" / family_dir.name)
    moved = loading.load_family("pico", local_dir=tmp_path / "moved" / family_dir.name, device="cpu")
    assert fx.sweeps.decoder_identity(moved) == fx.sweeps.decoder_identity(fam)
    assert not any(
        str(tmp_path) in str(part) or str(family_dir) in str(part) for part in fx.sweeps.decoder_identity(fam)
    )
    shutil.copytree(tmp_path / "cache", tmp_path / "elsewhere")
    found = fx.sweeps.sweep_cache("world", fx.sweeps.decoder_identity(moved), root=tmp_path / "elsewhere")
    assert found.name == folder.name
    import apd.evaluation.factuality.sweeps as sweeps_mod

    calls = []
    real = sweeps_mod.generate_continuations
    sweeps_mod.generate_continuations = lambda *a, **k: calls.append(a) or real(*a, **k)
    try:
        assert _sweep(moved, found) == want and not calls  # read, not generated again
    finally:
        sweeps_mod.generate_continuations = real


def test_kilt_evidence_cache_is_checked(tmp_path):
    from apd.evaluation.factuality import prompts

    source = tmp_path / "kilt.jsonl"
    pages = [{"wikipedia_title": t, "text": [f"{t} was born.", " Then more."]} for t in ("Alma", "Boris", "Chen")]
    source.write_text("".join(json.dumps(page) + "\n" for page in pages))
    want = prompts.kilt_evidence(["Alma", "Chen"], source, cache=tmp_path / "c")
    assert want == {"Alma": "Alma was born.  Then more.", "Chen": "Chen was born.  Then more."}
    (cached,) = (tmp_path / "c" / "factuality").glob("kilt-*.json")
    assert io.recorded_digest(cached)
    _damage(cached, "truncate")
    with pytest.warns(UserWarning, match=r"KILT evidence .*kilt-.*\.json is damaged"):
        assert prompts.kilt_evidence(["Alma", "Chen"], source, cache=tmp_path / "c") == want
    moved = tmp_path / "elsewhere" / "kilt.jsonl"  # the source moved: its pages are found in the cache
    moved.parent.mkdir()
    shutil.move(source, moved)
    assert prompts.kilt_evidence(["Alma", "Chen"], moved, cache=tmp_path / "c") == want
    assert list((tmp_path / "c" / "factuality").glob("kilt-*.json")) == [cached]


def test_non_utf8_factuality_prompts_file_is_named(tmp_path):
    from apd.evaluation.factuality import prompts

    (tmp_path / "factuality_prompts").mkdir()
    (tmp_path / "factuality_prompts" / "fever_factual_test7k_final.jsonl").write_bytes(
        b'{"id": 1, "prompt": "Caf\xe9"}\n'
    )
    with pytest.raises(ValueError, match=r"fever_factual_test7k_final\.jsonl is not UTF-8"):
        prompts.load_factuality_prompts("factual", "test", data_dir=tmp_path)


# ------------------------------------------------------------------------------ API values


def test_processors_refuse_a_vocab_size_below_one_or_not_an_int():
    from tiny_models import tiny_neox

    from apd.decoding import processors

    amateur = tiny_neox(1, 50)
    for bad in (0, -1):
        with pytest.raises(ValueError, match=f"vocab_size must be an integer >= 1, got {bad}"):
            processors.ContrastiveLogitsProcessor(amateur, T=2.0, vocab_size=bad)
        with pytest.raises(ValueError, match="vocab_size"):
            processors.FilteredLogitsProcessor([], vocab_size=bad)
    with pytest.raises(ValueError, match="vocab_size must be an integer"):
        processors.APDLogitsProcessor(amateur, vocab_size=2.5)
    with pytest.raises(TypeError, match=r"vocab_size must be a number, got the str"):
        processors.FilteredLogitsProcessor([], vocab_size="50")
    assert processors.FilteredLogitsProcessor([], vocab_size=np.int64(50)).vocab_size == 50


def test_a_nan_or_inf_in_the_experts_logits_raises_in_cd_and_apd():
    from tiny_models import tiny_neox

    from apd.decoding import processors

    amateur, ids = tiny_neox(1, 50), torch.tensor([[3, 4, 5]])
    for cls in (processors.ContrastiveLogitsProcessor, processors.APDLogitsProcessor):
        for bad in (math.nan, math.inf):
            scores = torch.randn(1, 50)
            scores[0, 7] = bad
            proc = cls(amateur, T=2.0, vocab_size=50)
            with pytest.raises(ValueError, match=r"expert's logits hold NaN or \+inf"):
                proc(ids, scores)
    scores = torch.randn(1, 50)
    scores[0, 7] = -math.inf  # a banned token is fine
    out = processors.ContrastiveLogitsProcessor(amateur, T=2.0, vocab_size=50)(ids, scores)
    assert out[0, 7] == -math.inf and torch.isfinite(out[0, :7]).all()


def test_apd_model_refuses_negative_lambdas_and_a_build_of_another_scale(fam):
    from types import SimpleNamespace

    from apd.amateur import pipeline

    smoke = SimpleNamespace(scale="smoke")
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="lambda3 must be a finite number >= 0"):
            pipeline.apd_model(fam, smoke, scale="smoke", lambda3=bad)
    with pytest.raises(TypeError, match="lambda3 must be a number"):
        pipeline.apd_model(fam, smoke, scale="smoke", lambda3="0.8")
    with pytest.raises(ValueError, match=r"lambda2 must be a finite number >= 0"):
        APDTrainConfig(family="pico", lambda3=0.8, lambda2=-10.0)
    with pytest.raises(ValueError, match=r"'smoke' pico family but scale='default'"):
        pipeline.apd_model(fam, smoke, scale="default")
    from apd.amateur import thf

    with pytest.raises(ValueError, match=r"built is the 'smoke' pico family"):
        thf.thf_model(fam, smoke, scale="default")


def test_apd_train_config_names_a_bad_lr():
    with pytest.raises(TypeError, match=r"lr must be a number.*without quotes"):
        APDTrainConfig(family="pico", lambda3=0.8, lr="1e-3")
    for bad in (0.0, -1e-4, math.nan, math.inf):
        with pytest.raises(ValueError, match=r"lr must be a finite number > 0, got"):
            APDTrainConfig(family="pico", lambda3=0.8, lr=bad)
    assert APDTrainConfig(family="pico", lambda3=0.8, lr=3e-4).lr == 3e-4


def test_load_alm_prime_refuses_a_plain_member(fam, family_dir, tmp_path):
    with pytest.raises(ValueError, match=r"pico-a is a family member's folder"):
        runs.load_alm_prime(family_dir / "pico-a", device="cpu")
    other = tmp_path / "model"
    shutil.copytree(family_dir / "pico-a", other)
    for name in ("training.json", "digests.json"):  # a save_pretrained folder from elsewhere
        (other / name).unlink()
    with pytest.raises(ValueError, match=r"trained_elsewhere=True"):
        runs.load_alm_prime(other, device="cpu")
    assert runs.load_alm_prime(other, device="cpu", trained_elsewhere=True) is not None


@pytest.mark.parametrize(
    "row, match",
    [
        ({**ROW, "choices": "a bird"}, r"openbook_qa\.jsonl:1: choices: expected a list"),
        ({**ROW, "choices": ["a bird"]}, r"openbook_qa\.jsonl, line 1 .*at least two"),
        ({**ROW, "choices": ["a bird", 3]}, r"openbook_qa\.jsonl:1: choices\[1\]: expected str"),
    ],
)
def test_qa_choices_must_be_a_list_of_at_least_two_strings(tmp_path, row, match):
    with pytest.raises(qa_data.DatasetInvalid, match=match):
        qa_data.load_dataset("openbookqa", data_dir=_qa_file(tmp_path, [json.dumps(row)]))


def test_non_utf8_qa_file_names_the_file(tmp_path):
    root = _qa_file(tmp_path, [json.dumps(ROW)])
    (root / "qa" / "openbook_qa.jsonl").write_bytes(json.dumps(ROW).encode() + b"\n" + b'{"query": "Caf\xe9"}\n')
    with pytest.raises(qa_data.DatasetInvalid, match=r"openbook_qa\.jsonl is not UTF-8 text \(line 2"):
        qa_data.load_dataset("openbookqa", data_dir=root)


def test_numbers_given_as_strings_are_refused_and_top_k_is_not_truncated():
    from tiny_models import tiny_neox

    from apd.core import filters
    from apd.decoding import processors

    for make, arg in ((filters.TopP, "0.8"), (filters.TopK, "20"), (filters.AlphaMask, "0.1"), (filters.REAL, "4")):
        with pytest.raises(TypeError, match=f"must be a number, got the str '{arg}'"):
            make(arg)
    with pytest.raises(TypeError, match="p must be a number"):
        filters.make_filters("top-p", "0.8")
    with pytest.raises(TypeError, match="T must be a number"):
        processors.ContrastiveLogitsProcessor(tiny_neox(1, 50), T="2")
    with pytest.raises(ValueError, match=r"TopK's k must be an integer >= 1, got 2\.7"):
        filters.make_filters("top-k", 2.7)
    with pytest.raises(ValueError, match=r"got 2\.5"):
        filters.TopK(2.5)
    assert filters.make_filters("top-k", 20.0)[0].k == 20


def test_an_input_id_beyond_the_vocabulary_is_named():
    from tiny_models import tiny_neox

    from apd.decoding import generation, processors

    expert, amateur = tiny_neox(0, 50), tiny_neox(1, 40)
    ids = torch.tensor([[3, 4, 60]])
    with pytest.raises(ValueError, match=r"ids in \[3, 60\] but the expert has 50 embedding rows"):
        generation.generate(expert, ids, torch.ones_like(ids), [], max_new_tokens=2, pad_token_id=0)
    ids = torch.tensor([[3, 4, 45]])  # within the expert, beyond the amateur
    proc = processors.ContrastiveLogitsProcessor(amateur, T=2.0, vocab_size=40)
    with pytest.raises(ValueError, match=r"but the amateur has 40 embedding rows"):
        generation.generate(expert, ids, torch.ones_like(ids), proc, max_new_tokens=2, pad_token_id=0)


# ------------------------------------------------------------------------------ batched generation


def _alone_and_batched(fam, make_proc, prompts, steps=6):
    from apd.decoding import generation

    tok, pad = fam.tokenizer, fam.tokenizer.pad_token_id
    expert = fam.model("pico-c")
    enc = tok(prompts, return_tensors="pt", padding=True)
    batched = generation.generate(
        expert, enc.input_ids, enc.attention_mask, make_proc(), do_sample=False, max_new_tokens=steps, pad_token_id=pad
    )[:, enc.input_ids.shape[1] :]
    for i, prompt in enumerate(prompts):
        one = tok([prompt], return_tensors="pt")
        kw = dict(do_sample=False, max_new_tokens=steps, pad_token_id=pad)
        alone = generation.generate(expert, one.input_ids, one.attention_mask, make_proc(), **kw)[
            0, one.input_ids.shape[1] :
        ]
        row = batched[i].tolist()
        assert row[: len(alone)] == alone.tolist(), (prompt, row, alone.tolist())
        assert all(t == pad for t in row[len(alone) :])
    return batched


@pytest.mark.parametrize("method", ["CD", "APD", "REAL"])
def test_batched_generation_equals_each_prompt_alone(fam, method):
    from transformers import AutoModelForCausalLM

    from apd.amateur.thf import THFModel
    from apd.core.filters import make_filters
    from apd.decoding import processors

    assert fam.tokenizer.padding_side == "left"
    prompts = ["Alma", "Boris Chen Dara Emil was born in", "Goran Hana was"]
    V = fam.vocab_size
    if method == "CD":
        make = lambda: processors.ContrastiveLogitsProcessor(  # noqa: E731
            fam.model("pico-a"), T=2.0, filters=make_filters("top-p k20", 0.9), vocab_size=V
        )
    elif method == "APD":  # the mechanics of APD with a stand-in for ALM' (another member)
        make = lambda: processors.APDLogitsProcessor(  # noqa: E731
            fam.model("pico-b"), filters=make_filters("alpha", 0.1), vocab_size=V
        )
    else:
        torch.manual_seed(0)
        thf = THFModel(AutoModelForCausalLM.from_pretrained(fam.locations["pico-a"]), list(fam.log_sizes)).eval()
        make = lambda: processors.REALLogitsProcessor(  # noqa: E731
            thf,
            processor=processors.ContrastiveLogitsProcessor(
                fam.model("pico-a"), T=2.0, vocab_size=V, filters=make_filters("REAL", 4.0)
            ),
            tokenizer=fam.tokenizer,
            pad_token_id=fam.tokenizer.pad_token_id,
        )
    _alone_and_batched(fam, make, prompts)


def test_right_padded_batches_are_refused(fam):
    from apd.decoding import generation, processors

    tok = fam.tokenizer
    side, tok.padding_side = tok.padding_side, "right"
    try:
        enc = tok(["Alma", "Boris Chen was born in"], return_tensors="pt", padding=True)
    finally:
        tok.padding_side = side
    proc = processors.ContrastiveLogitsProcessor(fam.model("pico-a"), T=2.0, vocab_size=fam.vocab_size)
    with pytest.raises(ValueError, match=r"padded on the right .*padding_side = 'left'"):
        generation.generate(
            fam.model("pico-c"),
            enc.input_ids,
            enc.attention_mask,
            proc,
            max_new_tokens=2,
            pad_token_id=tok.pad_token_id,
        )


def test_run_records_are_checked_and_a_tuning_table_follows_a_moved_cache(fam, tmp_path):
    from dataclasses import replace

    from apd.amateur import tuning

    col = _collect(fam, tmp_path)
    final = runs.train_apd(fam, col, _train_cfg(), cache=tmp_path, progress=False)
    record = final.parent / "train_config.json"
    assert io.recorded_digest(record) and runs.run_record(final)["steps"] > 0
    meta = json.loads(record.read_text())
    meta["total_steps"] = 10**6  # a changed but valid record never reaches a table
    record.write_text(json.dumps(meta))
    with (
        pytest.warns(UserWarning, match=r"ALM' run record .*train_config\.json is damaged"),
        pytest.raises(FileNotFoundError, match="no run record"),
    ):
        runs.run_record(final)
    # a lambda3 tuning table written where the cache used to be points at the runs where it is now
    base = _train_cfg()
    saved = {"best": 0.1, "rows": [{"lambda3": 0.1, "alm_prime": "/somewhere/else/apd/abc/alm_prime"}]}
    assert tuning._relocated(saved, tmp_path / "tuning.json", col, replace(base, lambda3=None), tmp_path)
    assert saved["rows"][0]["alm_prime"] == str(final)
    saved["rows"].append({"lambda3": 0.7, "alm_prime": str(final)})  # a run that is not there: tune again
    assert not tuning._relocated(saved, tmp_path / "tuning.json", col, replace(base, lambda3=None), tmp_path)


def test_members_collected_side_by_side_give_the_shards_of_one_after_another(fam, tmp_path, monkeypatch):
    """Two jobs: the ELM here, the other members in two worker processes; the same bytes as one job."""
    monkeypatch.setenv("APD_JOBS", "1")
    alone = _collect(fam, tmp_path / "alone")
    monkeypatch.setenv("APD_JOBS", "2")
    calls = []
    real = runs.run_jobs
    monkeypatch.setattr(runs, "run_jobs", lambda fn, items, **kw: calls.append(len(items)) or real(fn, items, **kw))
    side = _collect(fam, tmp_path / "side")
    assert calls == [len(fam) - 1]  # every member below the ELM, in workers
    files = sorted(p.name for p in alone.glob("*.safetensors"))
    assert files and files == sorted(p.name for p in side.glob("*.safetensors"))
    for name in files:
        assert io.file_sha256(alone / name) == io.file_sha256(side / name), name
    assert json.loads((alone / "manifest.json").read_text()) == json.loads((side / "manifest.json").read_text())
    assert not list(side.glob("parts/*"))  # every part merged


def test_a_collection_inside_a_worker_job_starts_no_workers_of_its_own(fam, tmp_path, monkeypatch):
    """A job's own pool would keep the worker's exit waiting on its idle workers: it collects here."""
    from apd.base import jobs

    monkeypatch.setenv("APD_JOBS", "2")
    ids, out = np.arange(64), tmp_path
    assert runs._side_by_side(fam, ids, out, CCFG, 8) is not None
    monkeypatch.setitem(jobs._busy, "job", True)  # as in a worker, running a job
    assert jobs.in_worker_job() and runs._side_by_side(fam, ids, out, CCFG, 8) is None
