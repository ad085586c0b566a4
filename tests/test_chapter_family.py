"""apd.chapters.family on the smoke family: tables, losses, knowledge, saturation, headline."""

import numpy as np
import pytest
from chapter_keys import keys_read

from apd.chapters import family as ch
from apd.chapters.gluing import record_headline, result_keys
from apd.report.results import Run


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    return Run(stem="family", profile="p", parameters={})


def test_the_claims_read_no_family_key_outside_the_headline():
    assert keys_read("family") <= result_keys(ch.FamilyHeadline)


def test_family_chapter_on_the_smoke_family(smoke_family, run):
    fam, built, _ = smoke_family
    _, per_bucket, values = ch.corpus_tables(built)
    assert list(per_bucket.index) == list(ch.BUCKETS) and set(values) == set(ch.CORPUS_KEYS)
    sizes, _ = ch.member_table(fam, built)
    assert len(sizes) == len(fam.names) and "train time (s)" in sizes
    loss = ch.heldout_losses(fam, built, 600)
    losses = loss["held-out loss (nats/token)"].tolist()
    assert len(losses) == len(fam.names) and all(np.isfinite(losses))
    k = ch.knowledge(fam, built, 6, np.random.default_rng(0))
    v = ch.knowledge_values(k, 0.01)
    assert 0 <= v["tail_acc_largest"] <= 1 and v["tail_verdict"].split(":")[0] in ("significant", "not significant")
    ch.glue_knowledge(run, k, v, 0.01)
    sat = ch.glue_saturation(run, k)
    assert set(ch.SHARES) <= set(sat.columns)
    assert run.values["sat_regime_as_pythia"] != run.values["sat_regime_not_as_pythia"]
    h = ch.headline(fam, losses, v)
    record_headline(run, h)
    assert run.values["n_members"] == len(fam.names) and run.values["loss_monotone"] == ch.loss_falls(losses)
    assert ch.plot_losses(fam, losses) is not None and ch.plot_knowledge(fam, k) is not None


def test_without_a_world(run):
    ch.glue_knowledge(run, None, {}, 0.01)
    assert ch.glue_saturation(run, None) is None
    assert run.values["tail_gain"] == "n/a" and run.values["sat_regime_as_pythia"] is False
    assert ch.loss_falls([3.0, 2.0, 2.5]).startswith("does NOT")
