"""apd.family.settings: one frozen Settings per (family, scale), built at the entry points and read
below them; its values are the ones the per-module tables held before (tests/test_cache_keys.py
pins the keys they enter)."""

import ast
import dataclasses
import doctest
from pathlib import Path
from types import SimpleNamespace

import pytest

from apd.amateur import pipeline, runs, variants
from apd.base.notebooks import notebook_parameters
from apd.family import registry, settings
from apd.family.settings import Settings, settings_for
from apd.world import truth

ROOT = Path(__file__).resolve().parents[1]


def test_settings_are_frozen_and_one_object_per_family_and_scale():
    s = settings_for("pico", "smoke")
    assert isinstance(s, Settings) and s is settings_for("pico", "smoke")
    assert {s: 1}[settings_for("pico", "smoke")] == 1 and s != settings_for("pico", "default")
    assert settings_for("qwen1.5", "default") is settings_for("qwen", "default") is settings_for("Qwen1.5", "default")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.lambda3 = 1.0
    with pytest.raises(TypeError):
        s.alm_train["lr"] = 1.0  # the tables inside are read-only too
    with pytest.raises(TypeError):
        s.variant_fields["conditioned"]["start"] = "release"


def test_a_bad_scale_or_family_is_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"unknown scale 'huge'; use one of \('smoke', 'default'"):
        settings_for("pico", "huge")
    with pytest.raises(ValueError, match="unknown family 'gpt2'"):
        settings_for("gpt2", "smoke")
    with pytest.raises(ValueError, match=r"unknown scale 'tiny'"):
        pipeline.apd_model(SimpleNamespace(spec=SimpleNamespace(name="pythia")), None, scale="tiny")
    with pytest.raises(ValueError, match=r"'smoke' pico family but scale='default'"):
        settings_for("pico", "default").check_built(SimpleNamespace(scale="smoke"))
    settings_for("pico", "smoke").check_built(SimpleNamespace(scale="smoke"))
    settings_for("pythia", "smoke").check_built(None)


def test_values_are_the_ones_the_modules_held():
    assert [settings_for(f, "default").lambda3 for f in ("pythia", "opt", "qwen1.5", "pico")] == [0.8, 0.4, 1.0, None]
    assert "lambda3" not in {f.name for f in dataclasses.fields(registry.FamilySpec)}  # one place: settings.LAMBDA3
    assert settings.LAMBDA3_GRID == (0.2, 0.4, 0.6, 0.8, 1.0, 1.2)
    s = settings_for("pico", "smoke")
    assert s.inv_T_grid == settings.INV_T_GRID and not hasattr(truth, "INV_T_GRID")
    # lambda3 is tuned on the 1/T grid where the APD chapter uses APD
    assert list(settings.INV_T_GRID) == notebook_parameters(ROOT / "notebooks" / "apd.ipynb")["inv_T_grid"]
    assert (
        s.paper_inv_T
        == settings.PAPER_INV_T
        == (
            *(0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6),
            *(0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
        )
    )
    assert s.control_inv_T_grid == (0.05, 0.1, 0.15, 0.2, 0.25, 0.35, 0.5, 0.75, 1.0)
    assert dict(s.alm_train) == dict(
        lr=1e-3, epochs=1, batch_size=8, micro_batch_size=8, warmup_steps=0.1, data_fraction=0.5
    )
    assert dict(s.thf_train) == dict(lr=1e-2, epochs=2, batch_size=8, warmup_steps=0.1)
    assert s.gate_chunks == 4 and dict(s.lambda3_grids) == {
        "release": (0.2, 0.8),  # changed on purpose: design notes, "lambda3 on the claims' criterion"
        "conditioned": (0.0, 2.4),
        "distilled": (0.2,),
    }
    d200, d = settings_for("pico", "default-200"), settings_for("pico", "default")
    assert (d200.scale, d200.train_scale) == ("default-200", "default")
    for name in ("lambda3_grids", "alm_train", "variant_fields", "variant_tune", "thf_train", "gate_chunks"):
        assert getattr(d200, name) == getattr(d, name), name
    assert d.thf_train["label_chunks"] == 384 and d.gate_chunks == settings_for("pico", "gpu").gate_chunks == 16
    assert dict(d.variant_tune["conditioned"]) == dict(epochs=1, data_fraction=0.25, mlp_warmup_steps=50)
    hub = settings_for("opt", "smoke")
    assert dict(hub.alm_train) == dict(lr=1e-4, epochs=1, batch_size=8, micro_batch_size=8, warmup_steps=0.1)
    assert dict(hub.variant_fields["conditioned"]) == dict(start="conditioned", mlp_warmup_steps=2)
    assert dict(settings_for("opt", "gpu").variant_fields["conditioned"])["epochs"] == 6  # the "hub" entry
    assert dict(hub.lambda3_grids) == {} and dict(hub.variant_fields["distilled"]) == dict(objective="distill")
    assert set(d.lambda3_grids) == set(d.variant_fields) == set(d.variant_tune) == set(variants.VARIANT_NAMES)


def test_the_qa_chapters_grid_is_the_papers():
    params = notebook_parameters(ROOT / "notebooks" / "qa.ipynb")
    assert params["inv_T_grid"] == list(settings.PAPER_INV_T)


def _names_used(tree) -> set[str]:
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            used |= {a.name for a in node.names}
    return used


def test_only_the_entry_points_build_settings_and_nothing_translates_a_scale():
    tables = {"SETTINGS_OF", "PICO_TRAIN", "HUB_TRAIN", "THF_TRAIN", "GATE_CHUNKS", "LAMBDA3_GRIDS", "VARIANT_FIELDS"}
    gone = {"settings_scale", "check_scale", "PICO_LAMBDA3_GRID", "VARIANT_TUNE", *tables}  # per-scale tables
    builders = {"apd/amateur/pipeline.py", "apd/amateur/thf.py", "apd/family/select.py", "apd/chapters/ablations.py"}
    for path in sorted((ROOT / "apd").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "apd/family/settings.py":
            continue
        used = _names_used(ast.parse(path.read_text()))
        assert not used & gone, f"{rel} reads {sorted(used & gone)}: read the Settings instead"
        if "settings_for" in used:
            assert rel in builders or rel.startswith("apd/chapters/"), f"{rel} builds Settings below an entry point"


def _stub_training(monkeypatch, calls, tmp_path):
    real = pipeline.settings_for
    monkeypatch.setattr(pipeline, "settings_for", lambda *a: calls.append(a) or real(*a))
    monkeypatch.setattr(pipeline, "finetune_texts", lambda fam, built, leave_out: ["a document"])
    monkeypatch.setattr(pipeline, "collect_family", lambda *a, **k: tmp_path / "collected")
    monkeypatch.setattr(pipeline, "gate_collection", lambda *a, **k: tmp_path / "held-out")
    monkeypatch.setattr(pipeline, "train_apd", lambda fam, d, config, **k: tmp_path / config.start / "alm_prime")


def test_apd_model_builds_its_settings_once_and_passes_them_down(monkeypatch, tmp_path):
    calls, tuned = [], []
    _stub_training(monkeypatch, calls, tmp_path)

    def tune(fam, built, collect_dir, base, grid, **k):
        tuned.append((base, grid, k["inv_T_grid"]))
        return grid[0], None

    monkeypatch.setattr(pipeline, "tune_lambda3", tune)
    pico = SimpleNamespace(spec=SimpleNamespace(name="pico"))
    built = SimpleNamespace(scale="default-200", pico_config=SimpleNamespace(seq_len=128))
    r = pipeline.apd_model(pico, built, scale="default-200", variant="conditioned")
    s = settings_for("pico", "default")
    assert calls == [("pico", "default-200")]
    assert tuned == [(variants.variant_config("conditioned", s, tuning=True), (0.0, 0.6, 2.4), settings.INV_T_GRID)]
    assert r.config == variants.variant_config("conditioned", s, 0.0) and r.lambda3 == 0.0
    hub = pipeline.apd_model(SimpleNamespace(spec=SimpleNamespace(name="qwen1.5")), None, scale="smoke")
    assert hub.config == runs.train_config(settings_for("qwen", "smoke")) and hub.lambda3 == 1.0
    assert len(calls) == 2


def test_the_engaged_variant_builds_its_settings_once(monkeypatch, tmp_path):
    calls, assessed = [], []
    _stub_training(monkeypatch, calls, tmp_path)

    def assess(result, fam, built, s, **k):
        assessed.append(s)
        return {"variant": result.variant, "engaged": result.variant == "distilled", "dev_kl": None}

    monkeypatch.setattr(pipeline, "assess", assess)
    hub = SimpleNamespace(spec=SimpleNamespace(name="pythia"))
    used = pipeline.apd_model(hub, None, scale="smoke", variant="engaged", progress=False)
    assert used.variant == "distilled" and used.selection.engaged and used.config.objective == "distill"
    assert calls == [("pythia", "smoke")] and assessed == [settings_for("pythia", "smoke")] * 3


def test_settings_doctests():
    assert doctest.testmod(settings, optionflags=doctest.ELLIPSIS).failed == 0
    assert doctest.testmod(variants, optionflags=doctest.ELLIPSIS).failed == 0
