"""The tutorial's page (notebooks/tutorial.ipynb): which sentences it shows for which results."""

import json
from pathlib import Path

import pytest

from apd.report import pages

ROOT = Path(__file__).resolve().parents[1]


def _page(values: dict) -> str:
    nb = json.loads((ROOT / "notebooks" / "tutorial.ipynb").read_text())
    return "\n".join(pages.page_markdown(nb, values))


def test_the_page_says_when_the_release_configuration_stands_in():
    """apd.apd_model(..., variant="engaged") returns a variant that passes its gates, or the release
    configuration when none does: the page says which it got."""
    engaged = _page({"alm_engaged": True, "alm_variant": "distilled"})
    assert "the distilled variant of ALM', whose mechanism gates pass" in engaged
    assert "standing in" not in engaged
    stand_in = _page({"alm_engaged": False, "alm_variant": "release"})
    assert "release configuration,\nstanding in" in stand_in and "whose mechanism gates pass." not in stand_in


def test_the_rising_share_names_the_tokens_it_is_over():
    text = _page({"fly_n_tokens": 20, "fly_rising_share": 0.35})
    assert "Of all 20 top tokens fitted, not only the rows the table shows, a share of\n0.35" in text


@pytest.mark.book  # reads the smoke build: runs after it, with the book tests
def test_the_smoke_tutorial_glues_the_count_behind_its_share():
    """On a built smoke tutorial: the share is over every fitted token, the count the page quotes."""
    path = ROOT / "results" / "smoke" / "tutorial.json"
    values = json.loads(path.read_text()) if path.is_file() else {}
    if "fly_n_tokens" not in values:
        pytest.skip("no smoke build of the tutorial with its token count")
    share = values["fly_rising_share"] * values["fly_n_tokens"]
    assert abs(share - round(share)) < 1e-9  # a share of whole tokens out of fly_n_tokens
