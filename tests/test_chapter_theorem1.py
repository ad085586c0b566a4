"""The Theorem 1 chapter's module (apd.chapters.theorem1): draws, tables, figures, headline."""

import dataclasses
import doctest
import json

import matplotlib
import numpy as np
import pytest

from apd.report import claims
from apd.chapters import theorem1 as chapter
from apd.chapters.gluing import MissingResultError

matplotlib.use("Agg")


def _read_keys(stem):
    """The keys of ``stem``'s results that the paper's claims read."""
    return claims.keys_read(stem)


def test_examples():
    assert doctest.testmod(chapter, optionflags=doctest.ELLIPSIS).failed == 0


def test_identity_holds_to_round_off_on_linear_families():
    rng = np.random.default_rng(0)
    families = chapter.draw_linear_families(rng, 50, 20)
    diff, rel = chapter.identity_errors(*families)
    assert diff.shape == (50, 20) and rel.shape == (50, 20)
    h = chapter.headline(diff.size, diff.max(), rel.max())
    assert h.exact and h.n_logits_checked == 1000
    assert h.max_rel_error_in_eps == pytest.approx(h.max_rel_error / np.finfo(np.float64).eps)
    assert not chapter.headline(1, 1e-3, 1e-3).exact


def test_draws_consume_the_generator_as_the_notebook_did():
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    _, _, T, _, l_elm = chapter.draw_linear_families(a, 4, 6)
    ref_x_alm = b.uniform(14.0, 20.0, size=(4, 1))
    ref_x_elm = ref_x_alm + b.uniform(0.5, 8.0, size=(4, 1))
    ref_T = b.uniform(1.05, 8.0, size=(4, 1))
    intercept, slope = b.normal(0.0, 5.0, size=(4, 6)), b.normal(0.0, 1.0, size=(4, 6))
    np.testing.assert_array_equal(l_elm, intercept + slope * ref_x_elm)
    np.testing.assert_array_equal(T, ref_T)


def test_tables_and_figures():
    hlm = chapter.hlm_size_table(22.5864, 16.7555, [1.5, 2.0, 4.0])
    assert (hlm["s_HLM / s_ELM"] > 1).all() and hlm["ln s_HLM"].is_monotonic_decreasing
    bend = chapter.bend_table(np.random.default_rng(0), 20, 8, [1.5, 2.0], [0.0, 0.05, 0.1])
    assert len(bend) == 6 and bend["max |numeric - closed form|"].max() < chapter.EXACT_TOL
    flat = bend[bend.curvature == 0.0]["mean |error|"]
    assert (flat < 1e-9).all() and (bend[bend.curvature == 0.1]["mean |error|"] > 1e-3).all()
    low = chapter.low_temperature_table(chapter.draw_linear_families(np.random.default_rng(1), 10, 5), [0.25, 0.9])
    assert low["HLM below ALM (all draws)"].all() and (low["scale 1 - 1/T"] < 0).all()
    for fig in (
        chapter.proof_picture(16.7555, 22.5864, 2.0)[0],
        chapter.plot_hlm_size(22.5864, 16.7555, 9.6),
        chapter.plot_bend(bend),
        chapter.plot_low_temperature(22.5864, 16.7555),
    ):
        assert fig.axes


def test_headline_has_every_key_the_claims_and_the_summary_read():
    fields = {f.name for f in dataclasses.fields(chapter.Theorem1Headline)}
    # the claims, and the paper-vs-book chapter's summary of the book's first page
    assert _read_keys("theorem1") | {"max_abs_error", "n_logits_checked"} <= fields


def test_the_headline_is_read_back_from_the_results_or_names_the_chapter_to_run(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    (tmp_path / "p").mkdir()
    assert chapter.Theorem1Headline.load("p", missing_ok=True) is None
    h = chapter.headline(10, 1e-14, 2.2e-16)
    (tmp_path / "p" / "theorem1.json").write_text(json.dumps({**dataclasses.asdict(h), "wall_time_s": 1.0}))
    assert chapter.Theorem1Headline.load("p") == h
    (tmp_path / "p" / "theorem1.json").write_text(json.dumps({"max_abs_error": 1e-14}))
    with pytest.raises(MissingResultError, match="theorem1 chapter's results lack n_logits_checked, max_rel_error"):
        chapter.Theorem1Headline.load("p")
