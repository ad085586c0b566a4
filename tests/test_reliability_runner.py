"""Issue 16, the book runner: results written atomically per chapter, the cache re-checking them,
hand-run notebooks kept apart, and validation before any kernel starts. Fake projects in tmp
folders; the tests that start a kernel (papermill) take a few seconds each."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from apd.base.notebooks import KEY_ENV, RUNNER_ENV, STAGING_ENV, BookError, parameter_defaults
from apd.book import preflight, runner, staging
from apd.book.cache import results_intact
from apd.book.execution import execute
from apd.book.preflight import input_path_problems
from apd.book.profiles import load_profile, parse_overrides, resolve
from apd.book.project import notebook_path, toc_notebooks
from apd.book.runner import build_book, main
from apd.book.staging import commit_results, recover
from apd.report import results
from apd.report.results import Run, UnknownParameterError
from tiny_models import tiny_pico
from fake_notebooks import two_cell_notebook

ROOT = Path(__file__).resolve().parent.parent

# A chapter that writes its headline number, one table per name in `tables`, and fails at the end
# (after Run.finish has written everything) when `fail` is true.
PARAMS = "profile = 'default'\nx = 1\nrate = 0.5\ntables = 'a'\nfail = False\nflag = True\nopt = None"
BODY = (
    "from apd.report.results import Run\n"
    "import pandas as pd\n"
    "run = Run.start('nb', globals())\n"
    "run.record(x=x)\n"
    "for t in tables.split(','):\n"
    "    run.save_table(pd.DataFrame({'a': [x]}), t)\n"
    "run.finish(show=False)\n"
    "if fail:\n"
    "    raise RuntimeError('boom')\n"
)


def make_project(tmp_path: Path, profile: dict | None = None, params: str = PARAMS, body: str = BODY) -> Path:
    root = tmp_path / "proj"
    for d in ("apd", "notebooks", "profiles"):
        (root / d).mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: notebooks/nb\n")
    nb = two_cell_notebook(params, body)
    (root / "notebooks" / "nb.ipynb").write_text(json.dumps(nb))
    (root / "profiles" / "p.yml").write_text(yaml.safe_dump({"notebooks": profile or {"nb": {}}}))
    shutil.copy2(ROOT / "requirements.lock", root / "requirements.lock")
    return root


@pytest.fixture
def kernel_env(monkeypatch):
    """Kernels import this checkout's apd; results go to <project>/results (no APD_RESULTS_DIR)."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.delenv("APD_RESULTS_DIR", raising=False)
    for name in (RUNNER_ENV, STAGING_ENV, KEY_ENV):
        monkeypatch.delenv(name, raising=False)


def run_nb(root, **params):
    out = root / "_build" / "p" / "book" / "notebooks" / "nb.ipynb"
    return execute("nb", {"profile": "p", **params}, out, root)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- 1. results written atomically per chapter ------------------------------------------------


def test_failed_run_leaves_previous_results_intact_and_says_so(tmp_path, kernel_env):
    root = make_project(tmp_path)
    assert run_nb(root, x=1, tables="a,b") == "executed"
    dest = root / "results" / "p"
    before = snapshot(dest)
    assert json.loads((dest / "nb.json").read_text())["x"] == 1 and "tables/b.csv" in before
    with pytest.raises(BookError) as err:
        run_nb(root, x=2, tables="a,c", fail=True)  # writes everything, then fails
    assert "keeps the last successful run" in str(err.value)
    assert snapshot(dest) == before  # not one byte changed, no tables/c.csv
    assert not any((root / "results" / ".staging" / "p").iterdir())


def test_success_replaces_the_chapters_files_and_removes_ones_it_no_longer_writes(tmp_path, kernel_env):
    root = make_project(tmp_path)
    run_nb(root, x=1, tables="a,b")
    dest = root / "results" / "p"
    (dest / "tables" / "other_chapter.csv").write_text("kept\n")  # not nb's: never touched
    run_nb(root, x=3, tables="a")
    assert not (dest / "tables" / "b.csv").exists() and (dest / "tables" / "other_chapter.csv").is_file()
    assert (dest / "tables" / "a.csv").read_text().strip().endswith("3")
    record = json.loads((dest / "runs" / "nb.json").read_text())
    assert record["parameters"]["x"] == 3 and record["cache_key"]
    # runs/nb.log holds the warnings the chapter raised (the runner routes them off the page)
    assert set(record["results_sha256"]) - {"runs/nb.log"} == {"nb.json", "tables/a.csv"}


def test_cache_reexecutes_when_results_are_missing_or_edited(tmp_path, kernel_env):
    root = make_project(tmp_path)
    assert run_nb(root) == "executed"
    assert run_nb(root) == "cached"
    table = root / "results" / "p" / "tables" / "a.csv"
    table.write_text("a\n999\n")  # edited by hand
    assert run_nb(root) == "executed" and table.read_text().strip().endswith("1")
    shutil.rmtree(root / "results" / "p")  # deleted
    assert run_nb(root) == "executed" and table.is_file()
    assert run_nb(root) == "cached"


def test_an_interrupted_commit_is_finished_by_the_next_build(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    monkeypatch.delenv("APD_RESULTS_DIR", raising=False)
    dest = root / "results" / "p"
    (dest / "tables").mkdir(parents=True)
    (dest / "tables" / "old.csv").write_text("old\n")
    (dest / "runs").mkdir()
    (dest / "runs" / "nb.json").write_text(json.dumps({"tables": ["old"], "figures": []}))
    staged = root / "results" / ".staging" / "p" / "nb"
    (staged / "tables").mkdir(parents=True)
    (staged / "tables" / "new.csv").write_text("new\n")
    (staged / "nb.json").write_text("{}")
    (staged / "runs").mkdir()
    (staged / "runs" / "nb.json").write_text(json.dumps({"tables": ["new"], "figures": []}))
    real = staging._apply_journal
    monkeypatch.setattr(staging, "_apply_journal", lambda journal: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):  # killed between writing the journal and moving files
        commit_results("p", "nb", "k", root)
    monkeypatch.setattr(staging, "_apply_journal", real)
    assert recover("p", root) == ["nb"]
    assert sorted(snapshot(dest)) == ["nb.json", "runs/nb.json", "tables/new.csv"]
    assert json.loads((dest / "runs" / "nb.json").read_text())["cache_key"] == "k"
    assert not (root / "results" / ".staging" / "p" / "nb").exists()


def test_recover_drops_staging_of_runs_that_never_finished(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    monkeypatch.delenv("APD_RESULTS_DIR", raising=False)
    half = root / "results" / ".staging" / "p" / "nb"
    half.mkdir(parents=True)
    (half / "nb.json").write_text("{}")
    assert recover("p", root) == [] and not half.exists()
    assert not (root / "results" / "p").exists()


# -- hand-run notebooks -------------------------------------------------------------------------


def test_run_outside_the_runner_writes_to_the_by_hand_folder(tmp_path, monkeypatch, capsys):
    root = make_project(tmp_path)
    monkeypatch.chdir(root)
    for name in ("APD_RESULTS_DIR", RUNNER_ENV, STAGING_ENV):
        monkeypatch.delenv(name, raising=False)
    run = Run.start("my_chapter", {"profile": "smoke", "n": 3})
    assert "not run through the book runner" in capsys.readouterr().out
    run.finish(show=False)
    assert (root / "results" / "smoke-by-hand" / "my_chapter.json").is_file()
    assert not (root / "results" / "smoke").exists()
    monkeypatch.setenv(RUNNER_ENV, "1")
    monkeypatch.setenv(STAGING_ENV, str(tmp_path / "stage"))
    assert Run.start("my_chapter", {"profile": "smoke"}).dir == tmp_path / "stage"
    monkeypatch.delenv(RUNNER_ENV)
    monkeypatch.delenv(STAGING_ENV)
    monkeypatch.setenv("APD_RESULTS_DIR", str(tmp_path / "chosen"))
    assert Run.start("my_chapter", {"profile": "smoke"}).dir == tmp_path / "chosen" / "smoke"


def test_unknown_injected_parameter_stops_run_start():
    history = ["", "profile = 'default'\nn_draws = 20000", '# Parameters\nprofile = "smoke"\nn_drawz = 5\n']
    with pytest.raises(UnknownParameterError, match="n_drawz"):
        Run.start("theorem1", {"In": history, "profile": "smoke", "n_drawz": 5})
    assert results.injected_parameters({"In": history}) == ["n_drawz", "profile"]
    results.check_injected("theorem1", ["profile", "n_draws"])  # known names pass
    results.check_injected("no_such_notebook", ["anything"])  # not a chapter: nothing to compare


def test_hand_run_with_papermill_typo_fails_in_the_first_cell(tmp_path, kernel_env):
    import papermill as pm

    root = make_project(tmp_path)
    nb, out = str(root / "notebooks" / "nb.ipynb"), str(tmp_path / "out.ipynb")
    kw = dict(cwd=str(root), kernel_name="python3", progress_bar=False)
    with pytest.raises(pm.PapermillExecutionError) as err:
        pm.execute_notebook(nb, out, parameters={"profile": "p", "xx": 5}, **kw)
    assert err.value.ename == "UnknownParameterError" and "xx" in err.value.evalue
    assert not (root / "results").exists()
    pm.execute_notebook(nb, out, parameters={"profile": "p", "x": 5}, **kw)
    record = json.loads((root / "results" / "p-by-hand" / "runs" / "nb.json").read_text())
    assert record["injected_parameters"] == ["profile", "x"] and record["parameters"]["x"] == 5
    assert not (root / "results" / "p").exists()


# -- 4. validation before work ----------------------------------------------------------------


@pytest.mark.parametrize(
    "item, value",
    [
        ("nb.rate=5e-2", 0.05),
        ("nb.rate=3", 3),
        ("nb.x=7", 7),
        ("nb.tables=2024", "2024"),
        ("nb.tables=a b", "a b"),
        ("nb.flag=false", False),
        ("nb.opt=[1, 2]", [1, 2]),
        ("nb.opt=abc", "abc"),
    ],
)
def test_set_values_are_parsed_as_numbers_and_typed(tmp_path, item, value):
    root = make_project(tmp_path)
    params = load_profile("p", root)
    got = parse_overrides([item], params, root)["nb"]
    assert list(got.values()) == [value] and type(list(got.values())[0]) is type(value)


@pytest.mark.parametrize(
    "item, key",
    [
        ("nb.x=abc", "integer"),
        ("nb.x=1.5", "integer"),
        ("nb.rate=abc", "number"),
        ("nb.flag=2", "true or false"),
        ("nb.x=[1, 2", "not a valid value"),
        ("nb.nosuch=1", "not a parameter"),
    ],
)
def test_bad_set_values_give_one_line_errors(tmp_path, item, key):
    root = make_project(tmp_path)
    params = load_profile("p", root)
    with pytest.raises(BookError) as err:
        parse_overrides([item], params, root)
    assert str(err.value).startswith(f"--set {item}: ") and key in str(err.value) and "\n" not in str(err.value)


def test_profile_values_are_type_checked(tmp_path):
    root = make_project(tmp_path, {"nb": {"x": "many", "rate": 1}})
    with pytest.raises(BookError, match=r"nb\.x: expected an integer .*'many'"):
        load_profile("p", root)


def test_profile_accepts_only_names(tmp_path):
    root = make_project(tmp_path)
    for bad in ("../profiles/p", "profiles/p", "p.yml", ".."):
        with pytest.raises(BookError, match="takes a profile name, not a path"):
            load_profile(bad, root)


def cli(*args):
    done = subprocess.run(
        [sys.executable, "-m", "apd", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return done.returncode, done.stdout, done.stderr


def test_check_applies_set_and_errors_are_one_line():
    """The command line: valid values pass; a bad one is one line on stderr (the cases: above and below)."""
    assert cli("--profile", "smoke", "--check", "--set", "theorem1.n_draws=50")[0] == 0
    code, out, err = cli("--profile", "smoke", "--check", "--set", "theorem1.nosuch=1")
    assert code == 1 and err.startswith("apd: --set theorem1.nosuch=1: ") and len(err.strip().splitlines()) == 1
    code, out, err = cli("--profile", "../profiles/smoke", "--check")
    assert code == 1 and "profile name" in err and "Traceback" not in err


def test_cuda_and_hub_needs_fail_before_any_kernel_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(preflight, "_cuda_available", lambda: False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    started = []
    monkeypatch.setattr(runner, "execute", lambda *a, **k: started.append(a) or "executed")
    with pytest.raises(BookError) as err:
        build_book("pythia", html=False)
    assert not started  # it stops before any kernel starts
    msg = str(err.value)
    assert "--set family.device=cpu" in msg and "--set family.local_dir=FOLDER" in msg and "HF_HUB_OFFLINE" in msg
    params = {"a": {"device": "cpu", "family": "pythia", "local_dir": "/models"}, "b": {"family": "pico"}}
    params["c"] = {"device": "auto"}
    preflight.preflight(None, params, ["a", "b", "c"], checks=("machine",))  # local copies, pico, auto: nothing needed
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(preflight, "_hub_reachable", lambda timeout=2.0: False)
    with pytest.raises(BookError, match="Hub cannot be reached"):
        preflight.preflight(None, {"a": {"family": "opt"}}, ["a"], checks=("machine",))


def test_every_real_profile_passes_type_and_range_checks():
    profiles = sorted(p.stem for p in (ROOT / "profiles").glob("*.yml"))
    assert {"smoke", "default", "gpu", "pythia", "hub-smoke"} <= set(profiles)
    for profile in profiles:
        resolve(profile)


def test_check_exits_nonzero_when_a_build_would_stop(monkeypatch, capsys):
    """--check says the file is valid, then exits 1 when this machine lacks what a build needs."""
    monkeypatch.setattr(preflight, "_cuda_available", lambda: False)
    monkeypatch.setattr(preflight, "_hub_reachable", lambda timeout=2.0: False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for profile in ("pythia", "gpu"):
        assert main(["--profile", profile, "--check"]) == 1
        out, err = capsys.readouterr()
        assert "is valid" in out and "a build would stop here" in err and "--set qa.device=cpu" in err
    assert "Hub cannot be reached" in main(["--profile", "pythia", "--check"]) * "" + capsys.readouterr().err
    assert main(["--profile", "pythia", "--check", "--set", "qa.batch_size=many"]) == 1
    assert main(["--profile", "smoke", "--check"]) == 0
    assert "this machine has what a build needs" in capsys.readouterr().out


# -- one build per checkout and profile: two real concurrent builds ---------------------------

SLOW_PARAMS = "profile = 'default'\nx = 1\nsleep = 0.0"
SLOW_BODY = (
    "import time\n"
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "import pandas as pd\n"
    "from apd.report.results import Run\n"
    "run = Run.start('nb', globals())\n"
    "run.record(x=x)\n"
    "run.save_table(pd.DataFrame({'a': [x]}), 'a')\n"
    "time.sleep(sleep)\n"
    "fig, ax = plt.subplots()\n"
    "run.savefig(fig, 'picture')\n"
    "run.finish(show=False)\n"
)
BUILD = (
    "import sys\nfrom pathlib import Path\n"
    "from apd.base.notebooks import BookError\nfrom apd.book.runner import build_book\n"
    "try:\n"
    "    build_book('p', overrides=sys.argv[3:], root=Path(sys.argv[1]), html=False, wait=sys.argv[2] == 'wait')\n"
    "except BookError as err:\n"
    "    print(f'apd: {err}', file=sys.stderr)\n"
    "    sys.exit(1)\n"
)


def start_build(root: Path, wait: bool, *sets: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("APD_RESULTS_DIR", RUNNER_ENV, STAGING_ENV)}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.Popen(
        [sys.executable, "-c", BUILD, str(root), "wait" if wait else "no-wait", *sets],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_concurrent_builds_in_one_checkout_never_damage_each_other(tmp_path):
    """A slow build runs; a second one started meanwhile with --no-wait stops at once naming the
    first; a third waits, says so, and then finds the first's results (cached). results/p stays
    whole: the chapter's figure and table are there, and the run record's digests match the files."""
    pytest.importorskip("matplotlib")
    root = make_project(tmp_path, params=SLOW_PARAMS, body=SLOW_BODY)
    first = start_build(root, True, "nb.sleep=6", "nb.x=7")
    staging = root / "results" / ".staging" / "p"
    deadline = time.time() + 60
    while not any(staging.glob("run-*/nb")):  # the first build's kernel has started
        assert first.poll() is None and time.time() < deadline, first.communicate()
        time.sleep(0.2)
    stopper = start_build(root, False, "nb.sleep=6", "nb.x=7")
    waiter = start_build(root, True, "nb.sleep=6", "nb.x=7")
    out, err = stopper.communicate(timeout=60)
    assert stopper.returncode == 1 and "another build of profile 'p' is running here" in err
    assert f"pid {first.pid}" in err and "Traceback" not in err
    assert first.poll() is None  # the first is still running, untouched
    out1, err1 = first.communicate(timeout=120)
    assert first.returncode == 0, err1
    assert "nb: executed" in out1
    out3, err3 = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, err3
    assert "waiting for it to finish" in err3 and "nb: cached" in out3
    dest = root / "results" / "p"
    files = snapshot(dest)
    for rel in ("nb.json", "runs/nb.json", "tables/a.csv", "figures/picture.png", "figures/picture.pdf"):
        assert rel in files, rel
    record = json.loads(files["runs/nb.json"])
    assert results_intact(dest, record["results_sha256"]) and record["parameters"]["x"] == 7
    assert not [p for p in staging.iterdir() if p.is_dir()]  # every run cleaned up after itself


def test_runs_stage_in_folders_of_their_own(tmp_path, kernel_env):
    """Each execution stages into a fresh folder; another run's staging folder is left alone."""
    root = make_project(tmp_path)
    other = root / "results" / ".staging" / "p" / "run-1-other" / "nb"
    other.mkdir(parents=True)
    (other / "nb.json").write_text("{}")
    assert run_nb(root, x=4) == "executed"
    assert (other / "nb.json").read_text() == "{}"
    assert json.loads((root / "results" / "p" / "nb.json").read_text())["x"] == 4


# -- profiles validated as a schema -----------------------------------------------------------


def write_profile(root: Path, text: str) -> None:
    (root / "profiles" / "p.yml").write_text(text)


@pytest.mark.parametrize(
    "text, message",
    [
        ("notebooks:\n  nb: {}\nseeds: [1, 2]\n", "unknown top-level key 'seeds'"),
        ("notebook:\n  nb: {}\n", "did you mean 'notebooks'?"),
        ("notebooks:\n  nb: {x: 1}\n  nb: {x: 2}\n", "key 'nb' is given twice in one mapping (lines 2 and 3)"),
        ("notebooks:\n  nb:\n    x: 1\n    x: 2\n", "key 'x' is given twice in one mapping (lines 3 and 4)"),
        ("description: a\ndescription: b\nnotebooks: {nb: {}}\n", "key 'description' is given twice"),
        ("notebooks:\n  - nb\n", "notebooks: expected a mapping"),
        ("notebooks:\n  nb: 5\n", "notebooks.nb: expected a mapping of parameters"),
        ("notebooks:\n  nb: [x, 1]\n", "notebooks.nb: expected a mapping of parameters"),
        ("- nb\n", "a profile is a mapping"),
        ("description: only words\n", "no `notebooks:` key"),
        ("", "the file is empty"),
    ],
)
def test_profile_keys_and_shape_are_checked_naming_the_key_and_the_fix(tmp_path, text, message):
    root = make_project(tmp_path)
    write_profile(root, text)
    with pytest.raises(BookError) as err:
        load_profile("p", root)
    assert message in str(err.value) and "p.yml" in str(err.value)


def test_yaml_anchors_and_merge_keys_are_not_duplicates(tmp_path):
    root = make_project(tmp_path)
    write_profile(root, "base: &b {x: 3}\nnotebooks:\n  nb:\n    <<: *b\n    rate: 0.25\n")
    with pytest.raises(BookError, match="unknown top-level key 'base'"):
        load_profile("p", root)
    write_profile(root, "notebooks:\n  nb: &b {x: 3}\n")
    assert load_profile("p", root)["nb"] == {"x": 3}


@pytest.mark.parametrize(
    "item, message",
    [
        ("theorem1.n_draws=-5", "expected an integer in [1, 1000000]"),
        ("theorem1.n_draws=0", "expected an integer in [1, 1000000]"),
        ("theorem1.T_grid=[0.5, 2.0]", "each a number in (1, 1000]"),
        ("family.pico_scale=huge", "expected one of smoke, default, gpu"),
        ("family.device=tpu", "expected auto, cpu, mps, cuda or cuda:N"),
        ("family.family=gpt5", "expected one of pico, pythia, opt"),
        ("factuality.p_grid=[0.5, 1.5]", "each a number in (0, 1]"),
        ("factuality.table_ps=[0]", "each a number in (0, 1]"),
        ("tutorial.top_p=0", "expected a number in (0, 1]"),
        ("ablations.data_fraction=1.5", "expected a number in (0, 1]"),
        ("factuality.batch_size=0", "expected an integer in [1, 4096]"),
        ("factuality.seeds=[]", "expected a non-empty list"),
        ("factuality.fp_split=train", "expected one of test, validation, all"),
        ("known_answer.size=huge", "expected one of smoke, default, full"),
        ("known_answer.noise=-0.1", "expected a number in [0, 1]"),
    ],
)
def test_out_of_range_values_fail_before_any_notebook(item, message):
    with pytest.raises(BookError) as err:
        parse_overrides([item], load_profile("smoke"))
    assert str(err.value).startswith(f"--set {item}: ") and message in str(err.value)


@pytest.mark.parametrize(
    "item",
    [
        "family.device=cuda:1",
        "factuality.world_n_prompts=0",
        "factuality.p_grid=[1.0]",
        "factuality.real_T_r_grid=[]",
        "family.family=Pythia",
        "curves.hlm_elm=-1",
    ],
)
def test_in_range_edge_values_pass(item):
    params = load_profile("smoke")
    assert parse_overrides([item], params)


def test_out_of_range_values_in_a_profile_file_name_every_key(tmp_path):
    from apd.book import schema
    from apd.chapters.ranges import COUNT, PROBABILITY

    root = make_project(tmp_path, {"nb": {"x": -5, "rate": 2.0}})
    schema.RANGES["nb.x"] = COUNT  # a project of its own: its notebook's ranges
    schema.RANGES["nb.rate"] = PROBABILITY
    try:
        with pytest.raises(BookError) as err:
            load_profile("p", root)
    finally:
        del schema.RANGES["nb.x"], schema.RANGES["nb.rate"]
    assert "nb.x = -5: expected an integer >= 1" in str(err.value) and "nb.rate = 2.0" in str(err.value)


def test_every_notebook_parameter_has_a_declared_range():
    from apd.book import schema

    missing = [
        f"{stem}.{name}"
        for stem in toc_notebooks()
        for name in parameter_defaults(notebook_path(stem))
        if schema.rule_for(stem, name) is None
    ]
    assert not missing, f"declare these in apd.chapters.params: {missing}"
    for stem in toc_notebooks():  # every default is in its own range
        for name, (default, literal) in parameter_defaults(notebook_path(stem)).items():
            if literal:
                assert schema.check_value(stem, name, default) is None, (stem, name, default)


def test_known_values_of_the_ranges_match_their_sources():
    """Copied into apd.chapters.ranges because their sources import torch (the runner does not)."""
    from apd.chapters import ranges
    from apd.evaluation.known_answer import SIZES
    from apd.family.registry import FAMILIES, SCALES

    assert tuple(SCALES) == ranges.PICO_SCALES
    assert set(FAMILIES) <= set(ranges.FAMILIES) and set(ranges.FAMILIES) - set(FAMILIES) <= {"qwen"}
    assert tuple(SIZES) == ranges.KNOWN_ANSWER_SIZES


# -- every input a build writes to, checked before the first notebook ------------------------


def test_cache_dir_that_is_a_file_stops_the_build_before_any_notebook(tmp_path, monkeypatch, kernel_env):
    root = make_project(tmp_path)
    afile = tmp_path / "not-a-folder"
    afile.write_text("")
    monkeypatch.setenv("APD_CACHE_DIR", str(afile))
    t0 = time.time()
    with pytest.raises(BookError) as err:
        build_book("p", root=root, html=False)
    assert time.time() - t0 < 2.0
    assert f"APD_CACHE_DIR={afile} is a file" in str(err.value)
    assert not (root / "_build" / "p" / "book" / "notebooks").exists()  # no notebook started


@pytest.mark.parametrize("how", ["chmod", "read-only filesystem"])
def test_read_only_results_folder_stops_the_build_in_one_line(tmp_path, monkeypatch, kernel_env, how):
    root = make_project(tmp_path)
    if how == "chmod":
        results = root / "results"
        results.mkdir()
        results.chmod(0o555)
        try:
            (results / "probe").write_text("")
            (results / "probe").unlink()
            pytest.skip("running as a user that writes into read-only folders (root)")
        except OSError:
            pass
    else:
        if not Path("/sys").is_dir():
            pytest.skip("no /sys here")
        results = Path("/sys") / "apd-results"
        monkeypatch.setenv("APD_RESULTS_DIR", str(results))
        try:
            results.mkdir()
            pytest.skip("/sys is writable here")
        except OSError:
            pass
    with pytest.raises(BookError) as err:
        build_book("p", root=root, html=False)
    msg = str(err.value)
    assert f"{results / 'p'} cannot be written" in msg
    assert ("chmod -R u+w" in msg) if how == "chmod" else ("APD_RESULTS_DIR" in msg)
    if how == "chmod":
        results.chmod(0o755)


# -- a full disk, a lock, a failure: the messages name the real folders ---------------------

FULL_BODY = BODY.replace("raise RuntimeError('boom')", "raise OSError(28, 'No space left on device')")


def test_a_full_disk_in_a_chapter_names_the_folders_the_environment_gives(tmp_path, monkeypatch, kernel_env):
    """Issue: a full disk named no path and said "results/smoke/ keeps the last successful run's
    results" whatever APD_RESULTS_DIR was."""
    root = make_project(tmp_path, body=FULL_BODY)
    results, cache = tmp_path / "elsewhere", tmp_path / "artifacts"
    monkeypatch.setenv("APD_RESULTS_DIR", str(results))
    monkeypatch.setenv("APD_CACHE_DIR", str(cache))
    assert run_nb(root, x=1) == "executed"
    before = snapshot(results / "p")
    with pytest.raises(BookError) as err:
        run_nb(root, x=2, fail=True)
    msg = str(err.value)
    assert "Errno 28" in msg and f"{results} set by APD_RESULTS_DIR" in msg and f"{cache} set by APD_CACHE_DIR" in msg
    assert f"{results / 'p'}/ keeps the last successful run" in msg
    assert "results/p/" not in msg and snapshot(results / "p") == before


def test_a_failed_commit_and_a_held_lock_name_the_real_results_folder(tmp_path, monkeypatch, kernel_env):
    root = make_project(tmp_path)
    results = tmp_path / "elsewhere"
    monkeypatch.setenv("APD_RESULTS_DIR", str(results))
    assert run_nb(root, x=1) == "executed"
    before = snapshot(results / "p")

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("apd.book.execution.commit_results", full)
    with pytest.raises(BookError) as err:
        run_nb(root, x=2)
    msg = str(err.value)
    assert "Errno 28" in msg and f"into {results / 'p'}" in msg and f"{results} set by APD_RESULTS_DIR" in msg
    assert f"{results / 'p'}/ keeps the last successful run" in msg
    assert snapshot(results / "p") == before and not any((results / ".staging" / "p").iterdir())

    with staging.build_lock("p", root), pytest.raises(BookError) as err:
        with staging.build_lock("p", root, wait=False):
            pass
    assert f"{results / 'p'}/" in str(err.value)


# -- "damaged ... moved aside" reaches the terminal ------------------------------------------

DAMAGE_BODY = (
    "from pathlib import Path\n"
    "from apd.base.io import set_aside\n"
    "from apd.report.results import Run\n"
    "run = Run.start('nb', globals())\n"
    "Path('cache-thing.bin').write_text('garbage')\n"
    "set_aside(Path('cache-thing.bin'), 'member weights', 'digest mismatch', 'retraining it')\n"
    "run.record(x=x)\n"
    "run.finish(show=False)\n"
)


def test_damage_notices_reach_the_terminal_not_only_the_run_log(tmp_path, kernel_env, capsys):
    root = make_project(tmp_path, body=DAMAGE_BODY)
    assert run_nb(root) == "executed"
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if "moved aside" in ln)
    assert line.startswith("[apd] nb: ") and "cache-thing.bin" in line
    log = (root / "results" / "p" / "runs" / "nb.log").read_text()
    assert "moved aside" in log  # still in the chapter's run log too


# -- contention: pretraining's thread count is fixed, and keyed ------------------------------


def test_pretraining_uses_a_fixed_thread_count_whatever_torch_is_set_to(tmp_path):
    """The weights depend on the torch thread count (float sums split differently), so training on
    the CPU does not pick it for the machine: it uses pretrain.CPU_THREADS whatever torch is set to
    (the same weights on a 2-core and a 16-core machine), keys the family by it, and an explicit
    other count is a different family."""
    torch = pytest.importorskip("torch")
    from apd.family import pretrain
    from apd.family.pretrain import Member
    from apd.world import corpus

    words = ["Alma", "Boris", "Chen", "Dara", "Emil", "Fumi", "Goran", "Hana"]
    docs = [
        " ".join(words[(i * 7 + j) % 8] for j in range(10)) + " was born in " + words[i % 8] + "." for i in range(120)
    ]
    tok = corpus.train_tokenizer(docs, vocab_size=300, cache_dir=tmp_path / "tok")
    cfg = tiny_pico(Member(1, 32, 2, name="pico-a"))
    before = torch.get_num_threads()
    digests, folders = [], []
    try:
        for i, set_to in enumerate((2, 1)):  # what torch happens to be set to on this machine
            torch.set_num_threads(set_to)
            folder = pretrain.train_family(cfg, tok, docs, tmp_path / f"c{i}", device="cpu", progress=False)
            assert torch.get_num_threads() == set_to  # restored afterwards
            digests.append((folder / "pico-a" / "model.safetensors").read_bytes())
            folders.append(folder.name)
            assert json.loads((folder / "family.json").read_text())["cpu_threads"] == pretrain.CPU_THREADS
        two = pretrain.train_family(cfg, tok, docs, tmp_path / "c2", device="cpu", progress=False, num_threads=2)
    finally:
        torch.set_num_threads(before)
    assert digests[0] == digests[1] and folders[0] == folders[1]
    assert two.name != folders[0]  # another thread count: another key, never mixed with the default
    assert json.loads((two / "family.json").read_text())["cpu_threads"] == 2
    assert pretrain.family_dir(cfg, tok, docs, tmp_path / "c0", device="cpu").name == folders[0]


def test_files_and_folders_a_profile_names_are_checked_before_any_notebook(tmp_path):
    """local_dir, alm_prime_path, thf_path and kilt_path name inputs: a missing one, or a file where
    a folder belongs, stops the build before the first notebook, naming the parameter."""
    there = tmp_path / "models"
    there.mkdir()
    afile = tmp_path / "kilt.json"
    afile.write_text("{}")
    params = {
        "a": {"local_dir": str(there), "kilt_path": str(afile), "thf_path": None},
        "b": {"kilt_path": "hub", "alm_prime_path": ""},
    }
    assert input_path_problems(params, ["a", "b"]) == []
    params = {"a": {"local_dir": str(tmp_path / "nope")}, "b": {"alm_prime_path": str(afile)}}
    params["c"] = {"kilt_path": str(there)}
    problems = input_path_problems(params, ["a", "b", "c"])
    assert len(problems) == 3
    assert problems[0].startswith(f"a.local_dir = '{tmp_path / 'nope'}'") and "no such folder" in problems[0]
    assert "b.alm_prime_path" in problems[1] and "not a folder" in problems[1]
    assert "c.kilt_path" in problems[2] and "not a file" in problems[2] and "'hub'" in problems[2]
    assert input_path_problems(params, ["b"]) == [problems[1]]  # only the chapters that run
    code, out, err = cli("--profile", "smoke", "--check", "--set", f"family.local_dir={tmp_path / 'nope'}")
    assert code == 1 and "family.local_dir" in err and "no such folder" in err and "Traceback" not in err
