"""The known-answer chapter's module (apd.chapters.known_answer): summaries, tables, figure."""

import dataclasses
import doctest

import matplotlib
import pytest

from apd.report import claims
from apd.chapters import known_answer as chapter
from apd.chapters.apd import ApdHeadline
from apd.chapters.gluing import glue_values

matplotlib.use("Agg")


class _Run:
    def __init__(self):
        self.values, self.texts = {}, {}

    def glue(self, key, value):
        self.values[key] = value

    def glue_text(self, key, value, fmt):
        self.values[key] = "n/a" if value is None else value
        self.texts[key] = "n/a" if value is None else fmt.format(value)


def test_examples():
    assert doctest.testmod(chapter, optionflags=doctest.ELLIPSIS).failed == 0


def test_recovery_summary_counts_cells_beaten_and_ranges():
    table = chapter.tiny_recovery_table()
    s = chapter.recovery_summary(table)
    assert s["ka_n_cells"] == 2 and s["ka_n_beating"] == 1 and s["ka_any_beating"]
    assert s["ka_best_cell"] == "pico, saturating" and s["ka_best_ratio"][0] == 0.8
    assert s["ka_joint_ratio_min"][0] == s["ka_joint_ratio_max"][0] == 2.0
    assert s["ka_fit_ratio_min"][0] == 0.8 and s["ka_fit_ratio_max"][0] == 1.2
    assert s["ka_tokens"] == 6 and s["ka_minutes"][0] == table.seconds.sum() / 60
    worse = table.assign(median_abs_error=table.median_abs_error.where(table.estimator != "fit_tuned", 0.02))
    assert (
        chapter.recovery_summary(worse)["ka_n_beating"] == 0 and not chapter.recovery_summary(worse)["ka_any_beating"]
    )
    run = _Run()
    glue_values(run, s)
    assert run.texts["ka_best_ratio"] == "0.80" and run.values["ka_beat_margin"] == "5%"
    records = chapter.cell_records(table)
    assert records["err_fit_tuned_pico_saturating"] == 0.008 and len(records) == 2 * len(table)


def test_tables_and_figure():
    table = chapter.tiny_recovery_table()
    wide = chapter.by_cell(table)
    assert wide.loc["p_ELM (the expert itself)", "pico, still rising"] == 0.01
    assert chapter.diagnostics(table).shape == (3, 2)
    assert chapter.plot_traces(table).axes


def _apd_headline(**values):
    """An :class:`apd.chapters.apd.ApdHeadline` of zeros but ``values``."""
    return ApdHeadline.from_results({**{f.name: 0 for f in dataclasses.fields(ApdHeadline)}, **values})


def test_the_chapter_writes_every_key_the_claims_read():
    keys = claims.keys_read("known_answer")
    written = set(chapter.condition_values(None, why_not="no world")) | set(
        chapter.recovery_summary(chapter.tiny_recovery_table())
    )
    assert keys and keys <= written


def test_the_truthlike_noise_names_its_source_by_a_flag():
    apd = _apd_headline(distilled_l1_curve=0.02)
    held, in_sample = chapter.truthlike_noise(0.05, apd, 0.005), chapter.truthlike_noise(None, apd, 0.005)
    off = chapter.truthlike_noise(0.05, apd, 0.005, use_family=False)
    assert [held, in_sample, off] == [(0.05, "held_out"), (0.02, "in_sample"), (0.005, "parameter")]
    run = _Run()
    glue_values(run, chapter.noise_values(*in_sample, 0.05))
    flags = [run.values[f"ka_noise_{s}"] for s in chapter.NOISE_SOURCES]
    assert (
        flags == [False, True, False] and run.texts["ka_synth_w"] == "0.05" and run.texts["ka_family_noise"] == "0.020"
    )
    with pytest.raises(ValueError, match="truthlike_noise"):
        chapter.noise_values(0.01, "a guess", 1.0)
