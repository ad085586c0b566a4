"""apd.chapters.qa on the smoke family: the world's questions, their summaries and glue."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from chapter_keys import keys_read, result_keys

from apd.evaluation.qa_scoring import score_qa, world_examples
from apd.chapters import qa
from apd.chapters.gluing import record_headline
from apd.report.results import Run


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))
    return Run(stem="qa", profile="p", parameters={})


def test_every_key_the_claims_read_from_qa_is_a_headline_field():
    assert keys_read("qa") and keys_read("qa") <= result_keys(qa.QAHeadline)


def test_world_questions_summaries_and_glue(smoke_family, run):
    fam, built, res = smoke_family
    dev, test = qa.world_questions(built, 4, seed=0, split_seed=0)
    assert dev and test and not {it.attribute for it in dev + test} & set(qa.DISTRIBUTIONAL)
    alm_prime, source = qa.alm_prime_for(fam, built, res.alm_prime_path, "smoke", 0)
    assert source.startswith("loaded from")
    scores = score_qa(fam, world_examples(dev + test), alm_prime=alm_prime, inv_T=[0.0, 0.5, 1.0], k=20)
    world = qa.WorldQA.from_scores(scores, n_dev=len(dev))
    assert world.is_test.sum() == len(test)
    means, chosen = qa.world_tables(world, qa.method_names(fam))
    assert set(chosen.index) <= {"CD", "APD"} and len(means)
    assert qa.held_out(means).shape[1] <= 6
    gain = qa.gain_by_bucket(world)
    assert list(gain.index) == list(qa.RANKS) and gain.columns[0] == "ppl: CD - APD"
    qa.glue_world(run, world, gain)
    qa.glue_world_counts(run, world)
    assert run.values["world_easy_not"] == (
        not (run.values["world_easy_significant"] or run.values["world_easy_direction_only"])
    )
    h = qa.headline(world, qa.DatasetsQA(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {}))
    assert h.world_ho_ppl_gain == pytest.approx(h.world_ho_ppl_cd - h.world_ho_ppl_apd, abs=1e-9) or np.isnan(
        h.world_ho_ppl_cd
    )
    record_headline(run, h)
    assert run.values["datasets_ppl_gain"] == "n/a" and "world_ho_ppl_gain_pm" in run.values
    fig = qa.plot_improvements(world)
    assert len(fig.axes) >= 3


def test_without_a_world_every_value_reads_missing(run):
    qa.glue_world(run, None, None)
    qa.glue_world_counts(run, None)
    ds = qa.DatasetsQA(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {})
    qa.glue_dataset_counts(run, ds)
    record_headline(run, qa.headline(None, ds))
    assert run.values["world_best_bucket"] == "n/a" and run.values["world_easy_not"] is False
    assert [run.values[f"world_gain_{b}"] for b in qa.RANKS] == ["n/a"] * 3
    assert run.values["world_ho_ppl_apd"] == "n/a" and run.values["qa_pp_ppl_better"] == "n/a"


def test_glue_datasets_counts_the_examples_of_each_dataset_and_the_largest(run):
    rows = [
        {"dataset": d, "protocol": "paper", "metric": "ppl", "method": "elm", "group": "all", "n": n, "examples": e}
        for d, n, e in (("LAMBADA", 0, 40), ("MultiRC", 3, 25))
    ]
    ds = qa.DatasetsQA(pd.DataFrame(rows), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {})
    qa.glue_datasets(
        run, ds, [("lambada", None, "LAMBADA"), ("multirc", None, "MultiRC")], pd.DataFrame({"dataset": []})
    )
    assert run.values["qa_max_examples"] == 40 and run.values["qa_kept_text"] == "LAMBADA 0 of 40; MultiRC 3 of 25"
    assert run.values["qa_datasets_scored"] == "MultiRC"
    empty = qa.DatasetsQA(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {})
    qa.glue_datasets(run, empty, [], pd.DataFrame({"dataset": ["SQuAD"]}))
    assert run.values["qa_max_examples"] == "n/a" and run.values["qa_not_run_names"] == "SQuAD"


def test_easy_claim_reads_significance():
    gain = pd.DataFrame(
        {
            "ppl: CD - APD": [0.02, 0.01, -0.01],
            "ELM acc": [0.9, 0.6, 0.3],
            "p (ppl, paired)": [0.01, 0.5, 0.5],
            "questions (ppl)": [30, 30, 30],
        },
        index=list(qa.RANKS),
    )
    out = qa.easy_claim(gain)
    assert out["world_best_bucket"] == "head" and out["world_easy_significant"] and not out["world_easy_not"]
    gain.loc["head", "p (ppl, paired)"] = 0.2
    assert qa.easy_claim(gain)["world_easy_direction_only"]
    gain["ppl: CD - APD"] = [-0.02, -0.01, -0.01]  # APD gains nowhere: no bucket is named, the claim fails
    none = qa.easy_claim(gain)
    assert none["world_best_bucket"] is None and none["world_easy_not"] and none["world_gain_buckets"] == "none"


def test_pooled_gain_over_datasets():
    sig = pd.DataFrame(
        {
            "protocol": ["held-out"] * 2,
            "metric": ["ppl"] * 2,
            "group": ["all"] * 2,
            "diff": [-0.2, -0.4],
            "se_paired": [0.3, 0.4],
        }
    )
    g, se = qa.pooled(sig)
    assert g == pytest.approx(0.3) and se == pytest.approx(0.25)
    assert qa.pooled(pd.DataFrame()) == (None, None)


def test_dataset_jobs_report_what_cannot_be_had(tmp_path):
    jobs, not_run = qa.dataset_jobs(["qasc"], {}, data_dir=tmp_path, limit=2)
    assert jobs == [] and list(not_run.columns) == ["dataset", "reason"] and len(not_run) == 1


def test_without_the_datasets_the_section_says_so_in_one_line(tmp_path, monkeypatch, run):
    """No data directory and no Hub: no dataset is tried (each would spend its retries), the chapter
    records the page's one line and the skipped section; with a dataset run it records nothing."""
    import json

    from apd.report import pages
    from apd.build import notebook_path

    monkeypatch.delenv("APD_DATA_DIR", raising=False)
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)

    def refuse(*args, **kwargs):
        raise OSError("no network")

    monkeypatch.setattr(qa.socket, "create_connection", refuse)
    why = qa.hub_unreachable(None, timeout=0.1)
    assert "cannot be reached" in why and "APD_DATA_DIR" in why
    assert qa.hub_unreachable(tmp_path) is None  # a data directory: the loaders read it
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert qa.hub_unreachable(None) is None  # offline mode: the datasets library reads its cache at once
    monkeypatch.setattr(qa, "try_load", lambda *a, **k: pytest.fail("a dataset was tried"))
    jobs, not_run = qa.dataset_jobs(["lambada", "qasc_q"], {"qasc_q": "openbookqa"}, unreachable=why)
    assert jobs == [] and list(not_run["reason"]) == [why, why]
    qa.record_missing(run, jobs, not_run)
    assert run.values == {"qa_data_missing": qa.DATA_MISSING}
    assert "\n" not in qa.DATA_MISSING and "APD_DATA_DIR" in qa.DATA_MISSING and "apd data fetch" in qa.DATA_MISSING
    with_data = Run(stem="qa", profile="p", parameters={})
    qa.record_missing(with_data, [("lambada", [], "LAMBADA")], not_run[:1])
    assert with_data.values == {}

    nb = json.loads(notebook_path("qa").read_text())
    text = "\n".join(pages.page_markdown(nb, run.values))
    assert "QA datasets are not on this machine" in text and "apd data fetch FOLDER" in text
    assert "Run: " not in text and "Counting datasets" not in text and "no gold answer passes" not in text
    assert "not on this machine" not in "\n".join(pages.page_markdown(nb, {"qa_datasets_scored": "LAMBADA"}))


@pytest.mark.parametrize(
    "apd, cd, metric, outcome",
    [
        (1.2, 1.3, "ppl", "better"),
        (1.3, 1.2, "ppl", "worse"),
        (0.6, 0.5, "acc", "better"),
        (0.5, 0.6, "MRR", "worse"),
        (0.5, 0.5, "acc", "same"),
        (1.4801, 1.4799, "ppl", "same"),  # equal as the prose prints them, to 3 decimals
        (1.4806, 1.4794, "ppl", "worse"),
        (float("nan"), 0.5, "acc", None),
    ],
)
def test_direction_flags_mark_exactly_the_outcome(apd, cd, metric, outcome):
    flags = qa.direction_flags(apd, cd, metric, "world_ho_x")
    assert set(flags) == {f"world_ho_x_apd_{o}" for o in ("better", "worse", "same")}
    assert [k for k, v in flags.items() if v] == ([f"world_ho_x_apd_{outcome}"] if outcome else [])
    assert all(isinstance(v, bool) for v in flags.values())


def test_without_a_world_no_direction_is_shown(run):
    qa.glue_world(run, None, None)
    for t in ("ho", "pp"):
        for m in ("ppl", "acc", "MRR"):
            assert not any(run.values[f"world_{t}_{m}_apd_{o}"] for o in ("better", "worse", "same"))


class _Fam:
    elm = "big-1"
    n_nonembedding = np.array([1.0e4, 1.25e6])


def test_reading_says_pipeline_check_for_pico_and_reproduction_for_a_hub_family(run):
    pico = qa.reading(_Fam(), object(), "pico")
    hub = qa.reading(_Fam(), None, "pythia")
    assert pico["qa_pipeline_check"] and not pico["qa_reproduction"]
    assert hub["qa_reproduction"] and not hub["qa_pipeline_check"] and hub["qa_family"] == "pythia"
    qa.glue_reading(run, _Fam(), object(), "pico")
    assert run.values["qa_elm_params"] == 1_250_000 and run.values["qa_elm"] == "big-1"


def _section(stem: str, values: dict, heading: str) -> list[str]:
    """The paragraphs a page shows for ``values`` from ``heading`` to the next heading."""
    from apd.report import pages
    from apd.build import notebook_path

    nb = json.loads(notebook_path(stem).read_text())
    text = [p for md in pages.page_markdown(nb, values) for p in pages.paragraphs(md)]
    start = text.index(heading)
    rest = [i for i, p in enumerate(text[start + 1 :], start + 1) if p.startswith("#")]
    return text[start : rest[0] if rest else None]


def test_on_pico_the_datasets_section_is_one_sentence_and_under_a_hub_family_in_full(run):
    rows = [
        {"dataset": d, "protocol": "paper", "metric": "ppl", "method": "elm", "group": "all", "n": n, "examples": 100}
        for d, n in (("LAMBADA", 0), ("MultiRC", 1))
    ]
    ds = qa.DatasetsQA(pd.DataFrame(rows), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {})
    assert qa.brief_values(ds, built=object()) == {
        "qa_real_brief": (True, None),
        "qa_n_kept": (1, None),
        "qa_n_examples": (200, "{:,}"),
    }
    assert qa.brief_values(ds, built=None)["qa_real_brief"] == (False, None)  # a Hub family: in full
    empty = qa.DatasetsQA(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {})
    assert qa.brief_values(empty, built=object())["qa_real_brief"] == (False, None)  # nothing ran: no sentence

    heading = "## The paper's QA datasets"
    pico = {
        "qa_real_brief": True,
        "qa_n_kept": 1,
        "qa_n_examples": 800,
        "qa_n_run": 8,
        "top_k": 20,
        "qa_datasets_scored": "MultiRC",
        "qa_unscored": "LAMBADA",
        "qa_pipeline_check": True,
    }
    section = _section("qa", pico, heading)
    assert len(section) == 2 and section[1].startswith("On pico, 1 of the 800 questions of the 8 dataset settings run")
    assert "not glued>>" not in section[1]
    hub = json.loads((Path(__file__).parent / "data" / "pythia_results" / "qa.json").read_text())
    full = _section("qa", {**hub, "qa_real_brief": False}, heading)
    assert full == _section("qa", hub, heading) and len(full) > 2
    assert not any(p.startswith("On pico") for p in full)
