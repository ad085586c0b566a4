"""apd.chapters.family on the smoke family: tables, losses, knowledge, saturation, headline."""

import numpy as np
import pandas as pd
import pytest
from chapter_keys import keys_read, result_keys

from apd.chapters import family as ch
from apd.chapters.gluing import record_headline
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
    assert 0 <= v["tail_acc_largest"] <= 1 and isinstance(v["tail_gain_significant"], bool)
    ch.glue_knowledge(run, k, v, 0.01)
    per_bucket = [run.values[f"qa_items_{b}"] for b in ch.BUCKETS]
    assert run.values["qa_per_bucket"] == 6 and max(per_bucket) <= 6 and sum(per_bucket) == len(k.items)
    sat = ch.glue_saturation(run, k)
    assert set(ch.SHARES) <= set(sat.columns)
    assert run.values["sat_regime_as_pythia"] != run.values["sat_regime_not_as_pythia"]
    h = ch.headline(fam, losses, v)
    record_headline(run, h)
    assert run.values["n_members"] == len(fam.names)
    assert run.values["loss_falls_each_step"] is ch.loss_falls(losses)
    assert run.values["tail_gain_significant"] is v["tail_gain_significant"]
    assert ch.plot_losses(fam, losses) is not None and ch.plot_knowledge(fam, k) is not None


def test_without_a_world(run):
    ch.glue_knowledge(run, None, {}, 0.01)
    assert ch.glue_saturation(run, None) is None
    assert run.values["tail_gain"] == "n/a" and run.values["sat_regime_as_pythia"] is False
    assert run.values["qa_items_head"] == "n/a" and run.values["qa_per_bucket"] == "n/a"
    assert ch.loss_falls([3.0, 2.0, 2.5]) is False and ch.loss_falls([3.0, 2.0, 1.5]) is True
    assert ch.loss_falls([3.0, 3.0]) is False  # a tie is no fall
    assert ch.headline(_Fam(), [3.0, 2.0], {}).tail_gain_significant is False  # no world: nothing to be significant


class _Fam:
    names = ["small", "large"]
    n_nonembedding = np.array([1e4, 1e6])


def _knowledge(gain: float, p: float) -> ch.Knowledge:
    acc = pd.DataFrame({b: [0.3, 0.3 + gain] for b in ch.BUCKETS})
    gains = pd.DataFrame(
        {"gain": gain, "p_value": p, "only_larger": 5, "only_smaller": 2}, index=pd.Index(ch.BUCKETS, name="bucket")
    )
    return ch.Knowledge(items=[None] * 12, scores=None, acc=acc, top1=acc, gains=gains, chance=0.25)


@pytest.mark.parametrize(
    "gain, p, significant",
    [(0.1, 0.001, True), (0.1, 0.2, False), (-0.1, 0.001, False), (0.0, 0.5, False)],
)
def test_tail_gain_significant_needs_a_positive_gain_below_alpha(gain, p, significant):
    v = ch.knowledge_values(_knowledge(gain, p), alpha=0.01)
    assert v["tail_gain_significant"] is significant
    assert ch.headline(_Fam(), [3.0, 2.0], v).tail_gain_significant is significant
