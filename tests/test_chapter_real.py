"""The REAL chapter's module (apd.chapters.real): held-out fit, truth comparison, thresholds."""

import dataclasses
import doctest

import numpy as np
import pandas as pd

from apd.evaluation.entropy_truth import entropy_truth_table
from apd.report import claims
from apd.chapters import real as chapter


def _frame(seed=0, n=30):
    rng = np.random.default_rng(seed)
    truth = np.where(np.arange(n) % 3 == 0, rng.uniform(0.5, 2.0, n), 0.0)
    return pd.DataFrame(
        {
            "bucket": np.array(["head", "torso", "tail"])[np.arange(n) % 3],
            "attribute": "a",
            "person": "p",
            "truth": truth,
            "H s": truth + rng.uniform(2, 3, n),
            "H l": truth + rng.uniform(1, 2, n),
            "THF c": truth + rng.uniform(0, 0.5, n),
            "THF H_last": truth + rng.uniform(1, 2, n),
            "THF direct last": truth + 1.0,
        }
    )


def test_examples():
    assert doctest.testmod(chapter, optionflags=doctest.ELLIPSIS).failed == 0


def test_truth_summary_reads_the_error_table_and_pairs_c_with_the_expert():
    frame = _frame()
    err = entropy_truth_table(frame, "abs_error")
    s = chapter.truth_summary(frame, err, "l")
    assert s["real_n_items"] == 30 and s["real_n_buckets"] == 3 and s["real_n_buckets_closer"] == 3
    assert s["real_c_closer"] and not s["real_c_farther"] and not s["real_c_tie"]
    assert s["real_err_c"][0] == err.loc["THF c", "all"] and s["real_err_elm"][0] == err.loc["H l", "all"]
    assert s["real_err_c"][0] < s["real_err_elm"][0] and set(s["real_buckets_closer"][0].split(", ")) == {
        "head",
        "torso",
        "tail",
    }
    assert s["real_c_minus_elm"][0].startswith("-")
    records = chapter.bucket_records(err, "l")
    assert set(records) >= {"real_err_c_all", "real_err_elm_head", "real_truth_tail"}
    shown = chapter.with_counts(err, "mean |estimate - truth| (nats)")
    assert shown.columns[-1] == "all (n=30)" and shown.index.name.startswith("mean")


def test_top_p_by_fact_kind():
    frame = chapter.top_p_frame(_frame(), 4.0)
    assert set(frame["fact"]) == set(chapter.FACTS) and frame["top-p"].between(0, 1).all()
    tp = chapter.top_p_table(frame, 4.0)
    assert list(tp.columns) == ["head", "torso", "tail"] and tp.index.name == "mean top-p at T_r = 4"
    s = chapter.top_p_summary(frame)
    assert s["real_top_p_narrower_one"] != s["real_top_p_not_narrower_one"]
    one_only = chapter.top_p_summary(frame[frame.fact == "one-valued"])
    assert one_only["real_top_p_dist"] == (None, "{:.2f}") and not one_only["real_top_p_narrower_one"]
    assert not one_only["real_top_p_not_narrower_one"]


def test_heldout_fit_and_no_world():
    h = np.abs(np.random.default_rng(0).normal(size=(3, 2, 4)))  # (chunks, members, S)
    table, spread = chapter.heldout_fit_table({"mae_curve": {"s": 0.3, "l": 0.2}, "mae_last": 0.25}, h, ["s", "l"])
    assert spread.shape == (2,) and table.loc["direct last prediction", "constant (member's mean)"] == spread[-1]
    values = chapter.no_world_values()
    assert values["real_n_buckets_closer"] == 0 and values["real_c_closer"] is False


def test_headline_has_every_key_the_claims_read():
    keys = claims.keys_read("real")
    assert keys <= {f.name for f in dataclasses.fields(chapter.RealHeadline)}
