"""A sentence that the numbers can make false is chosen by a condition (a needs:/unless: tag on its
markdown cell, apd.report.pages), never written unconditionally: the known cases of a chapter
asserting what its own table contradicted stay behind conditions."""

import json
import re
from pathlib import Path

import pytest

from apd.report import pages

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

#: Claims about this build's results that have been false on some build.
FALSIFIABLE = {
    "head facts saturate": re.compile(r"\bfacts? (?:that )?saturate\b"),
    "a claim holds here": re.compile(r"\bholds here\b"),
    "a variant engages": re.compile(r"\bwhich (?:engages|passes its gates)\b"),
    "far better than": re.compile(r"\bfar better than\b"),
    "saturates": re.compile(r"\bsaturates\b"),
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_falsifiable_sentences_are_chosen_by_conditions(path):
    nb = json.loads(path.read_text())
    loose = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown" or pages.conditions(cell["metadata"].get("tags", [])):
            continue
        for what, pattern in FALSIFIABLE.items():
            if pattern.search(cell["source"]):
                loose.append(f"cell {i}: {what}")
    assert not loose, f"{path.name}: sentences the numbers can make false, written unconditionally: {loose}"


def test_the_qa_overview_reads_the_easy_question_claim_by_its_significance():
    nb = json.loads((ROOT / "notebooks" / "qa.ipynb").read_text())
    base = {
        "world_ho_ppl_apd": 1.2,
        "world_best_bucket": "head",
        "world_best_bucket_p": 0.1,
        "world_best_bucket_n": 29,
        "world_easiest_bucket": "head",
    }
    weak = "\n".join(pages.page_markdown(nb, {**base, "world_easy_direction_only": True}))
    assert "not significant" in weak and "as the\npaper claims, and that bucket's gain is significant" not in weak
    strong = "\n".join(pages.page_markdown(nb, {**base, "world_best_bucket_p": 0.01, "world_easy_significant": True}))
    assert "that bucket's gain is significant" in strong and "is not significant" not in strong
