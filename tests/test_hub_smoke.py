"""The Hub-family code path of every chapter (what the pythia profile runs on a GPU), executed
offline on the CPU: profile ``hub-smoke``, with the trained smoke pico members standing in for
Pythia members under their registry names (``apd.family.pico.export_stand_in``). About a minute."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from apd.report.results import results_dir

pytestmark = pytest.mark.book

HUB_CHAPTERS = ["family", "curves", "apd", "qa", "real", "factuality", "tutorial"]


@pytest.fixture(scope="module")
def hub_smoke(root, shared_dir):
    """``scripts/hub_smoke.py``: the hub-smoke chapters on the stand-in members (make test starts it
    beside the smoke build, so here every chapter is usually found cached)."""
    env = dict(os.environ)
    env.setdefault("APD_DATA_DIR", str(shared_dir / "data"))  # the offline QA and FactualityPrompts copies
    cmd = [sys.executable, str(root / "scripts" / "hub_smoke.py")]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return results_dir("hub-smoke")


def _values(out, stem):
    return json.loads((out / f"{stem}.json").read_text())


def test_every_hub_chapter_ran_on_the_stand_in_pythia_members(root, hub_smoke):
    for stem in HUB_CHAPTERS:
        nb = json.loads((root / "_build" / "hub-smoke" / "book" / "notebooks" / f"{stem}.ipynb").read_text())
        params = nb["metadata"]["apd"]["parameters"]
        assert params["family"] == "pythia" and params["load_kwargs"] == {"check_sizes": False}, stem
        assert _values(hub_smoke, stem)["profile"] == "hub-smoke"
    family = _values(hub_smoke, "family")
    assert family["n_members"] == 3 and family["train_minutes"] == "n/a (a Hub family)"
    members = pd.read_csv(hub_smoke / "tables" / "family_members.csv")
    assert list(members.iloc[:, 0]) == ["pythia-70m-deduped", "pythia-160m-deduped", "pythia-410m-deduped"]


def test_hub_branches_use_the_real_datasets_and_the_papers_settings(hub_smoke):
    curves = _values(hub_smoke, "curves")
    assert curves["blind_source"] == "lambada" and curves["blind_n_questions"] == 30
    assert curves["hlm_alm"] == "pythia-70m-deduped" and curves["hlm_elm"] == "pythia-160m-deduped"
    apd = _values(hub_smoke, "apd")
    assert apd["lambda3"] == 0.8 and apd["tune_best"] == "n/a"  # Pythia's published lambda3, not tuned
    qa = _values(hub_smoke, "qa")
    assert qa["reference_model"] == "pythia-12b-deduped"  # the stand-in reference, from local_dir
    not_run = pd.read_csv(hub_smoke / "tables" / "qa_datasets_not_run.csv")
    assert not_run["reason"].str.contains("no offline copy").all()  # reported, not dropped
    assert qa["qa_n_run"] + len(not_run) >= 9
    fact = _values(hub_smoke, "factuality")
    assert fact["headline_from_fp"] is True and fact["fp_n_used"] == 4
    assert fact["fp_entail_status"].startswith("not run")  # no NLI model offline


def test_paper_vs_book_reads_the_hub_chapters(hub_smoke):
    values = _values(hub_smoke, "paper_vs_book")
    assert values["chapters_read"] == ", ".join(sorted(set(HUB_CHAPTERS) - {"tutorial"}))  # the tutorial runs after it
    assert values["n_claims"] == values["n_reproduced"] + values["n_not_reproduced"] + values["n_not_testable"]
