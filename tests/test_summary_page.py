"""The book's first page (book/intro.md): a summary written by hand whose sentences are chosen by
the paper-vs-book chapter's results (apd.report.pages.fill_page, apd.build.summary_page)."""

import html
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from apd.report import pages
from apd.build import BUILD_KEYS, banner, summary_page

ROOT = Path(__file__).resolve().parents[1]
INTRO = (ROOT / "book" / "intro.md").read_text()

ENGAGED_CLOSER = {
    "summary_ready": True,
    "profile_name": "default",
    "book_profile": "default",  # the build's own values (apd.build.build_values)
    "summary_t1_err": 1.4e-14,
    "summary_t1_n": 20000,
    "summary_n_members": 6,
    "summary_smallest": "12.8k",
    "summary_largest": "1.78M",
    "summary_scale_ratio": 3620,
    "summary_engaged": True,
    "summary_not_engaged": False,
    "summary_variant": "distilled",
    "summary_gate_reason": "the distilled variant: all gates pass",
    "summary_kl_gain": "+0.0031 ± 0.0013",
    "summary_kl_n": 1200,
    "summary_kl_mde": 0.0036,
    "summary_apd_closer": True,
    "summary_cd_closer": False,
    "summary_kl_tie": False,
    "summary_hours": 0.3333,
    "summary_device": "cpu (2 threads)",
    "n_claims": 8,
    "n_reproduced": 2,
    "n_not_reproduced": 1,
    "n_inconclusive": 3,
    "n_not_testable": 2,
}


def _items(text):
    answer = text.split("## What this build established", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^- \*\*([^*]+)\*\*", answer, re.M)


ESTABLISHED = {
    "summary_claims_md": "| | claim | verdict |\n|---|---|---|\n| C1a | CD's logits | reproduced |",
    "summary_est_hlm_gain": "-0.21 ± 0.01",
    "summary_est_hlm_windows": 300,
    "summary_est_premise_ratio": 0.58,
    "summary_est_hlm_farther": True,
    "summary_est_hlm_closer": False,
    "summary_est_blind_count": 762,
    "summary_est_blind_of": 830,
    "summary_est_kl_cd_gain": "+0.006 ± 0.006",
    "summary_est_qa_cd_gain": "-0.004 ± 0.001",
    "summary_est_ne_er_cd_gain": "+0.045 ± 0.024",
    "summary_est_cd_better_nowhere": True,
    "summary_est_cd_worse_on": "QA ppl",
    "summary_est_blind_text": 827,
    "summary_est_blind_questions": 3,
    "summary_est_blind_rate_paper_T": 0.0699,
    "summary_est_kl_cd_ci": "[-0.0057, 0.0175]",
    "summary_est_qa_cd_ci": "[-0.0060, -0.0020]",
    "summary_est_ne_er_cd_ci": "[-0.002, 0.092]",
    "summary_est_ka_ratio": 0.999217991320161,
    "summary_est_ka_w": 0.05,
    "summary_est_ka_gain": "+0.00065 ± 0.00018",
    "summary_est_ka_ci": "[0.00029, 0.00100]",
    "summary_est_ka_people": 100,
    "summary_est_ka_holds": True,
    "summary_est_ka_fails": False,
    "rules_gates": "C2, C3 and C4",
    "rules_control": "C3 and C4",
    "rules_known_answer": "C3 and C4",
    "glue_formats": {
        "summary_est_ka_ratio": "{:.4f}",
        "summary_est_ka_w": "{:g}",
        "summary_est_blind_rate_paper_T": "{:.3f}",
    },
}


def test_without_results_the_summary_says_how_to_get_it():
    text = pages.fill_page(INTRO, {"book_profile": "default"})  # the build's own values, always there
    assert "{glue" not in text and "<!--" not in text
    assert "appear here once every chapter" in text and _items(text) == []
    assert "headline.png" not in text


def test_the_first_screen_is_the_claims_table_then_figure_1():
    text = pages.fill_page(INTRO, {**ENGAGED_CLOSER, **ESTABLISHED, "headline_figure": True})
    table, figure = text.index("| C1a | CD's logits | reproduced |"), text.index("```{figure} headline.png")
    assert table < figure < text.index("## What this build established")
    assert text.index("\n## ") > figure  # no section between the title and Figure 1


@pytest.mark.parametrize(
    "change, expect, absent",
    [
        ({}, ["Theorem 1 is exact algebra.", "Its consequence fails on this family."], ["Its consequence holds"]),
        (
            {"summary_est_hlm_farther": False, "summary_est_hlm_closer": True},
            ["Its consequence holds on this family."],
            ["Its consequence fails"],
        ),
        ({"summary_est_cd_worse_on": None}, ["CD does not beat the expert on this testbed"], ["significantly worse"]),
        (
            {
                "summary_est_cd_better_nowhere": False,
                "summary_est_cd_worse_on": None,
                "summary_est_cd_better_all": True,
                "summary_est_cd_better_on": "KL to the truth, QA ppl and NE_ER",
            },
            ["CD beats the expert on every measure here"],
            ["CD does not beat", "CD is significantly worse", "CD beats the expert on KL"],
        ),
        (
            {"summary_engaged": False, "summary_not_engaged": True},
            ["None of the three ways of training ALM'"],
            ["APD's mechanism engaged"],
        ),
    ],
)
def test_the_established_list_is_chosen_by_the_numbers(change, expect, absent):
    text = pages.fill_page(INTRO, {**ENGAGED_CLOSER, **ESTABLISHED, **change})
    items = _items(text)
    assert all(any(i.startswith(e) for i in items) for e in expect), items
    assert not any(any(i.startswith(a) for i in items) for a in absent), items
    assert "{glue" not in text and "<!--" not in text
    assert "differ by at most 1.4 × 10⁻¹⁴" in text and "20,000 random logits" in text


def test_every_value_the_summary_quotes_is_glued_by_the_paper_vs_book_chapter():
    nb = json.loads((ROOT / "notebooks" / "paper_vs_book.ipynb").read_text())
    code = "\n".join(c["source"] for c in nb["cells"] if c["cell_type"] == "code")
    code += (ROOT / "apd" / "chapters" / "paper_vs_book.py").read_text()  # the chapter's own module
    glued = set(re.findall(r"run\.glue(?:_text)?\(\"(\w+)\"", code))
    quoted = {m.group(1) for m in pages.GLUE_ROLE.finditer(INTRO)}
    conditions = {key for m in pages.BLOCK.finditer(INTRO) for _, key in pages.conditions(m.group(1).split())}
    own = {"headline_figure", *BUILD_KEYS}  # what the build says of itself (apd.build.build_values)
    assert quoted and quoted - own <= glued, sorted(quoted - own - glued)
    assert conditions - own <= glued, sorted(conditions - glued - own)


def _paragraphs(text):
    """The prose of the two lists of findings, one bullet or paragraph each."""
    body = text.split("## What this build established", 1)[1].split("## How this build differs", 1)[0]
    return [" ".join(p.split()) for p in re.split(r"\n(?=- )|\n\n", body) if p.strip()]


def test_every_plus_minus_in_the_prose_says_what_it_is():
    """A ± in the prose is a standard error and says so, in the same bullet (the table gives 95%
    intervals in brackets)."""
    text = pages.fill_page(INTRO, {**ENGAGED_CLOSER, **ESTABLISHED})
    with_pm = [p for p in _paragraphs(text) if "±" in p]
    assert len(with_pm) >= 3, with_pm  # HLM, CD against the expert, the known-answer condition
    for p in with_pm:
        assert "standard error" in p or "± se" in p, p


def test_the_known_answer_condition_names_the_mix_and_keeps_the_digits_of_its_ratio():
    text = " ".join(pages.fill_page(INTRO, {**ENGAGED_CLOSER, **ESTABLISHED}).split())
    assert "mixed with the expert's probability at the dev-chosen weight $w$ = 0.05" in text
    assert "has 0.9992 times the expert's distance to the truth" in text and "1.00 times" not in text
    assert "95% interval [0.00029, 0.00100]" in text and "known-answer condition holds" in text
    assert "the fitter's distance" not in text  # the mix is not the fitter alone
    fails = " ".join(
        pages.fill_page(
            INTRO, {**ENGAGED_CLOSER, **ESTABLISHED, "summary_est_ka_holds": False, "summary_est_ka_fails": True}
        ).split()
    )
    assert "does not beat the expert's own probability" in fails and "condition holds" not in fails


def test_obvious_blindness_counts_text_positions_and_questions():
    text = " ".join(pages.fill_page(INTRO, {**ENGAGED_CLOSER, **ESTABLISHED}).split())
    assert "827 positions of held-out text and 3 questions" in text
    assert "drops the answer" not in text
    assert "At the paper's $T = 2$, CD's blindness rate on them is 0.070." in text
    missing = {**ENGAGED_CLOSER, **ESTABLISHED, "summary_est_blind_rate_paper_T": None}
    assert "the paper's $T = 2$" not in pages.fill_page(INTRO, missing)


def test_the_preconditions_say_which_claims_read_them():
    text = " ".join(pages.fill_page(INTRO, {**ENGAGED_CLOSER, **ESTABLISHED}).split())
    assert "an ALM' that passes its gates for C2, C3 and C4, a contrast for C3 and C4" in text
    assert "every APD claim" not in text
    assert "95% interval of the expert's loss minus CD's is [-0.0057, 0.0175] nats of KL" in text


def test_summary_page_copies_the_headline_figure(tmp_path, monkeypatch):
    results = tmp_path / "results"
    (results / "p" / "figures").mkdir(parents=True)
    (results / "p" / "paper_vs_book.json").write_text(json.dumps(ENGAGED_CLOSER))
    (results / "p" / "figures" / "headline.png").write_bytes(b"\x89PNG")
    monkeypatch.setenv("APD_RESULTS_DIR", str(results))
    out = tmp_path / "book"
    out.mkdir()
    text = summary_page(INTRO, "p", out, tmp_path)
    assert (out / "headline.png").is_file() and "```{figure} headline.png" in text
    assert "Closer to the truth than CD?" in text


def test_the_summary_prints_each_value_with_its_chapters_format(tmp_path, monkeypatch):
    results = tmp_path / "results"
    (results / "p" / "runs").mkdir(parents=True)
    (results / "p" / "paper_vs_book.json").write_text(json.dumps({"share": 0.8123, "kl": 2.41432}))
    record = {"glue_formats": {"share": "{:.0%}", "kl": "{:.4f}"}}
    (results / "p" / "runs" / "paper_vs_book.json").write_text(json.dumps(record))
    monkeypatch.setenv("APD_RESULTS_DIR", str(results))
    out = tmp_path / "book"
    out.mkdir()
    page = "# A\n\nKL {glue:text}`kl` nats for {glue:text}`share` of tokens.\n"
    assert "KL 2.4143 nats for 81% of tokens." in summary_page(page, "p", out, tmp_path)


def test_a_quoted_value_that_is_missing_is_an_error():
    with pytest.raises(ValueError, match="summary_t1_err"):
        pages.fill_page("A {glue:text}`summary_t1_err` here.", {})


@pytest.mark.parametrize(
    "sides",
    [
        {"KL": 0, "QA ppl": 0, "NE_ER": 0},
        {"KL": 0, "QA ppl": -1, "NE_ER": 0},
        {"KL": 0, "QA ppl": 0, "NE_ER": 1},
        {"KL": 0, "QA ppl": -1, "NE_ER": 1},
        {"KL": 1, "QA ppl": 1, "NE_ER": 1},
    ],
)
def test_the_paper_vs_book_chapter_says_the_positive_control_once_whatever_it_reads(sides):
    """For each outcome of the positive control across the three measures (its keys from
    cd_control_flags), exactly one sentence says where CD beats the expert, and one more says where
    it is worse when it is worse anywhere."""
    from apd.chapters.paper_vs_book import cd_control_flags

    values = {f"summary_est_cd_{k}": v for k, v in cd_control_flags(sides).items()}
    values = {k: ("n/a" if v is None else v) for k, v in values.items()}
    nb = json.loads((ROOT / "notebooks" / "paper_vs_book.ipynb").read_text())
    shown = {
        c["id"]
        for c in nb["cells"]
        if c["id"].startswith("pvb-cd-") and pages.cell_shown(c["metadata"].get("tags", []), values)
    }
    assert len(shown & {"pvb-cd-none", "pvb-cd-some", "pvb-cd-all"}) == 1, (sides, shown)
    assert ("pvb-cd-worse" in shown) == (-1 in sides.values()), (sides, shown)


def _project(tmp_path, monkeypatch):
    """A project root in ``tmp_path`` with this checkout's book config, table of contents and
    profiles, and its results folder (``$APD_RESULTS_DIR``)."""
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "profiles", tmp_path / "profiles")
    results = tmp_path / "results"
    (results / "smoke").mkdir(parents=True)
    monkeypatch.setenv("APD_RESULTS_DIR", str(results))
    (tmp_path / "book").mkdir()
    return results / "smoke"


def test_a_book_of_another_profile_carries_its_banner_on_every_page():
    """Under any profile but the default, the theme's announcement (a line atop every page) names the
    profile and its description; the default's book has none."""
    description = yaml.safe_load((ROOT / "profiles" / "smoke.yml").read_text())["description"]
    assert banner("default") == ""
    assert "smoke" in banner("smoke") and html.escape(description) in banner("smoke")


def test_the_first_page_says_which_profile_ran_and_what_it_skipped(tmp_path, monkeypatch):
    results = _project(tmp_path, monkeypatch)
    line = "The paper's QA datasets are not on this machine; this section is skipped."
    (results / "qa.json").write_text(json.dumps({"qa_data_missing": line, "qa_max_examples": None}))
    text = " ".join(summary_page(INTRO, "smoke", tmp_path / "book", tmp_path).split())
    assert "this book (the smoke profile)" in text
    assert f"{{doc}}`../notebooks/qa`: {line}" in text
    assert "examples each" not in text and "did not run in this build" in text
    (results / "qa.json").write_text(json.dumps({"qa_max_examples": 100}))
    text = " ".join(summary_page(INTRO, "smoke", tmp_path / "book", tmp_path).split())
    assert "at most 100 examples each" in text and "did not run" not in text and "Skipped in this build" not in text
