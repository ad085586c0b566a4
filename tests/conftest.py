import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("APD_SHARED_DIR", ROOT.parent / "shared"))


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} not found: clone the project with ../shared beside it or set APD_SHARED_DIR")
    return SHARED


@pytest.fixture(scope="session")
def smoke_html() -> Path:
    """The HTML of the smoke build (`make smoke` / `make book PROFILE=smoke`)."""
    html = ROOT / "_build" / "smoke" / "book" / "_build" / "html"
    if not (html / "index.html").is_file():
        pytest.fail(f"{html}/index.html is missing: run `make smoke` (make test does) before the book tests")
    return html


#: Which built book the browser and page-text tests read (`make pages PROFILE=default`
#: or `APD_BOOK_PROFILE=default pytest -m book tests/test_browser.py`); the smoke build by default.
BOOK_PROFILE = os.environ.get("APD_BOOK_PROFILE", "smoke")


@pytest.fixture(scope="session")
def book_html() -> Path:
    """The HTML of the build the browser test reads: ``_build/$APD_BOOK_PROFILE`` (smoke unless set)."""
    html = ROOT / "_build" / BOOK_PROFILE / "book" / "_build" / "html"
    if not (html / "index.html").is_file():
        pytest.fail(
            f"{html}/index.html is missing: build it first (`make book PROFILE={BOOK_PROFILE}`; "
            "make test builds smoke)"
        )
    return html


@pytest.fixture
def fake_results(tmp_path, monkeypatch):
    """A fake results root (profile "p" unless told). ``fake_results(stem, {key: value})`` writes a
    chapter's JSON; ``fake_results(stem, table=name, df=df)`` / ``fake_results(stem, figure=name)`` write
    a table / a figure and list it in the chapter's run record, as ``Run`` does."""
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path))

    def write(stem, values=None, table=None, df=None, figure=None, profile="p", parameters=None):
        out = tmp_path / profile
        for sub in ("tables", "figures", "runs"):
            (out / sub).mkdir(parents=True, exist_ok=True)
        if values is not None:
            (out / f"{stem}.json").write_text(json.dumps({**values, "profile": profile}))
        record_path = out / "runs" / f"{stem}.json"
        record = json.loads(record_path.read_text()) if record_path.exists() else {"figures": [], "tables": []}
        if parameters is not None:
            record["parameters"] = parameters
        if table is not None:
            df.to_csv(out / "tables" / f"{table}.csv", index=False)
            record["tables"].append(table)
        if figure is not None:
            (out / "figures" / f"{figure}.png").write_bytes(b"png")
            record["figures"].append(figure)
        record_path.write_text(json.dumps(record))
        return out

    return write


@pytest.fixture(scope="session", autouse=True)
def one_thread():
    """Tiny models and tensors run far faster on one intra-op thread on a shared 2-core machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def smoke_family():
    """The smoke pico family, its build and its ALM' (trained once per cache, then read from it)."""
    import apd

    fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
    return fam, built, apd.apd_model(fam, built, scale="smoke", progress=False)


#: The slowest test files (the hub-smoke build, the wheel in a clean venv, damaged caches rebuilt),
#: started first when `make test` spreads whole files over two workers (`-n 2 --dist loadfile
#: --no-loadscope-reorder`), so that the workers finish together. A name missing here costs only balance.
SLOW_FILES = (
    "test_hub_smoke.py",  # the book tests' slowest: it builds the hub-smoke chapters
    "test_installed.py",
    "test_reliability.py",
)


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, the files of SLOW_FILES first, in that order; the rest, and the order of the
    tests within every file, as collected. A run without workers keeps the collection order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FILES)))
