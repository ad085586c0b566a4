"""Each chapter's parameters declared once (apd.chapters.params): the notebooks' parameters cells,
the profile checks and book/parameters.md are derived from the classes, and stay so."""

import ast
import dataclasses
import doctest
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from apd.base.notebooks import BookError, parameter_defaults
from apd.book import params as book_params
from apd.book import schema
from apd.book.profiles import known_profiles, load_profile, parse_overrides, resolve
from apd.book.project import notebook_path, toc_notebooks
from apd.book.runner import main
from apd.chapters import params, ranges

ROOT = Path(__file__).resolve().parents[1]
STEMS = toc_notebooks()


def test_every_toc_notebook_has_a_parameters_class_in_toc_order():
    assert list(params.CHAPTERS) == STEMS
    for stem, cls in params.CHAPTERS.items():
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, stem
        assert isinstance(cls.COLUMN, int) and "COLUMN" not in {f.name for f in dataclasses.fields(cls)}
        assert params.fields(stem)[0].name == "profile", stem
    with pytest.raises(KeyError, match="no parameters class for notebook 'nosuch'; known: theorem1"):
        params.chapter("nosuch")


@pytest.mark.parametrize("stem", STEMS)
def test_the_notebooks_parameters_cell_is_the_generated_one_byte_for_byte(stem):
    nb = json.loads(notebook_path(stem).read_text())
    (tagged,) = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert "".join(tagged["source"]) == params.parameters_cell(stem), (
        f"notebooks/{stem}.ipynb's parameters cell differs from apd.chapters.params; declare parameters "
        "there and run `python -m apd.book.params --write`"
    )
    cell = {name: value for name, (value, _) in parameter_defaults(notebook_path(stem)).items()}
    assert list(cell.items()) == list(params.defaults(stem).items())


def test_no_derived_file_is_stale():
    assert book_params.stale() == [], "run `python -m apd.book.params --write`"
    assert book_params.drift("theorem1") is None


@pytest.mark.parametrize("stem", STEMS)
def test_every_parameter_has_a_doc_a_rule_and_a_default_in_its_range(stem):
    for field, default in zip(params.fields(stem), params.defaults(stem).values()):
        assert isinstance(field.metadata["doc"], str), (stem, field.name)
        assert isinstance(field.metadata["rule"], ranges.Rule), (stem, field.name)
        assert default is None or field.metadata["rule"].ok(default), (stem, field.name, default)
        assert ast.literal_eval(params.literal(default)) == default, (stem, field.name)
        assert schema.rule_for(stem, field.name) is field.metadata["rule"]
    instance = params.chapter(stem)()
    with pytest.raises(dataclasses.FrozenInstanceError):
        instance.profile = "x"


def test_list_defaults_are_fresh_copies():
    a, b = params.defaults("theorem1"), params.defaults("theorem1")
    a["T_grid"].append(99.0)
    assert 99.0 not in b["T_grid"] and 99.0 not in params.Theorem1Params().T_grid


def test_schema_ranges_are_derived_from_the_classes():
    assert schema.RANGES == params.ranges()
    assert set(schema.RANGES) == {f"{s}.{f.name}" for s in STEMS for f in params.fields(s)}
    assert schema.rule_for("theorem1", "nosuch") is None


def test_the_cell_layout_rules(monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class Demo:
        COLUMN: ClassVar[int] = 12

        profile: str = params.param("default", ranges.NAME)
        n: int = params.param(3, ranges.COUNT, "a count")
        long_name_here: str = params.param("x", ranges.TEXT, "past the column")
        tight: dict = params.param({}, ranges.ANY, "one space", gap=1)
        grid: list = params.param([1, 2, 3, 4, 5], ranges.list_of(ranges.COUNT), "wrapped", wrap=2)

    monkeypatch.setitem(params.CHAPTERS, "demo", Demo)
    assert params.parameters_cell("demo") == (
        'profile = "default"\n'
        "n = 3       # a count\n"
        'long_name_here = "x"  # past the column\n'
        "tight = {} # one space\n"
        "grid = [1, 2,\n"
        "        3, 4,\n"
        "        5]  # wrapped"
    )
    assert params.defaults("demo") == {
        "profile": "default",
        "n": 3,
        "long_name_here": "x",
        "tight": {},
        "grid": [1, 2, 3, 4, 5],
    }
    assert ast.parse(params.parameters_cell("demo"))  # plain Python


def test_the_runner_checks_against_the_classes_and_loads_no_torch():
    code = (
        "import sys; import apd.chapters.params, apd.book.schema, apd.book.profiles, apd.book.params\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy', 'pandas', 'transformers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout


def test_injected_names_are_the_declared_fields():
    for profile in ("smoke", "default", "pythia", "hub-smoke"):
        injected, stems = resolve(profile)
        for stem in stems:
            names = {f.name for f in params.fields(stem)}
            assert set(injected[stem]) <= names, (profile, stem, set(injected[stem]) - names)
            assert injected[stem]["profile"] == profile


def test_an_unknown_name_fails_with_a_did_you_mean():
    with pytest.raises(BookError) as err:
        parse_overrides(["theorem1.n_drawz=5"], load_profile("smoke"))
    assert str(err.value).startswith(
        "--set theorem1.n_drawz=5: 'n_drawz' is not a parameter of theorem1 (did you mean 'n_draws'?) "
        "(its parameters: profile, seed, n_draws,"
    )
    with pytest.raises(BookError, match="'zzz' is not a parameter of theorem1 \\(its parameters"):
        parse_overrides(["theorem1.zzz=5"], load_profile("smoke"))


def _copy_project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for name in ("notebooks", "profiles"):
        shutil.copytree(ROOT / name, root / name)
    shutil.copy2(ROOT / "_toc.yml", root / "_toc.yml")
    return root


def test_a_profile_typo_names_the_close_parameter(tmp_path):
    root = _copy_project(tmp_path)
    path = root / "profiles" / "smoke.yml"
    path.write_text(path.read_text().replace("  theorem1:\n", "  theorem1:\n    vocab_sise: 10\n", 1))
    with pytest.raises(BookError) as err:
        load_profile("smoke", root)
    assert (
        "theorem1.vocab_sise is not a parameter of notebooks/theorem1.ipynb (did you mean 'vocab_size'?) "
        "(its parameters: profile, seed, n_draws" in str(err.value)
    )


def test_a_hand_edited_parameters_cell_is_named_before_any_notebook_runs(tmp_path):
    root = _copy_project(tmp_path)
    path = root / "notebooks" / "theorem1.ipynb"
    nb = json.loads(path.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    cell["source"] = cell["source"].replace("n_draws = 20000", "n_draws = 500") + "\nextra = 1"
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    with pytest.raises(BookError) as err:
        load_profile("smoke", root)
    assert (
        "notebooks/theorem1.ipynb: its parameters cell differs from apd.chapters.params.Theorem1Params "
        "(n_draws, extra); declare parameters there and run `python -m apd.book.params --write`"
    ) in str(err.value)
    assert [p.relative_to(root).as_posix() for p in book_params.stale(root)] == [
        "notebooks/theorem1.ipynb",
        "book/parameters.md",
    ]
    (root / "book").mkdir()
    book_params.write(root)
    assert book_params.stale(root) == [] and load_profile("smoke", root)
    assert path.read_bytes() == (ROOT / "notebooks" / "theorem1.ipynb").read_bytes()


def test_every_parameter_the_docs_name_exists():
    """``--set stem.name=...`` and ``stem.name=value`` in the README, the book's pages and the docs."""
    stems = "|".join(STEMS)
    found = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "book").glob("*.md")), *sorted((ROOT / "docs").glob("*.md"))]:
        for m in re.finditer(rf"(?<![\w.])({stems})\.([A-Za-z_]\w*)=", path.read_text()):
            found.add((path.name, m.group(1), m.group(2)))
    assert len(found) > 10
    missing = [f"{where}: {stem}.{name}" for where, stem, name in sorted(found) if name not in params.defaults(stem)]
    assert not missing, f"documented parameters that no chapter declares: {missing}"


def test_the_parameters_page_lists_every_parameter_and_is_in_the_toc():
    page = (ROOT / book_params.PAGE).read_text()
    assert page == book_params.parameters_page()
    for stem in STEMS:
        assert f"\n## {stem}\n" in page
        for field in params.fields(stem)[1:]:
            assert f"| `{field.name}` | " in page
    assert "book/parameters" in (ROOT / "_toc.yml").read_text()
    assert "{doc}`parameters`" in (ROOT / "book" / "rerun.md").read_text()


def test_main_reports_and_exits(capsys):
    assert book_params.main([]) == 0
    assert "match apd.chapters.params" in capsys.readouterr().out


def test_every_numeric_parameter_has_a_finite_ceiling():
    for key, rule in params.ranges().items():
        scalar = rule.ok(1) or rule.ok(1.5)
        if rule is ranges.ANY or not (scalar or rule.ok([1]) or rule.ok([1.5])):
            continue  # takes no number
        assert rule.high is not None and math.isfinite(rule.high), key
        wrap = (lambda v: v) if scalar else (lambda v: [v])
        assert rule.ok(wrap(rule.high)) and not rule.ok(wrap(rule.high + 1)), key
        assert str(rule.high) in rule.words, key  # the message says it
        assert scalar or not rule.ok([rule.high] * 10**4), key  # a list has a most items too


@pytest.mark.parametrize("profile", known_profiles())
def test_every_profile_lies_within_its_ranges(profile):
    for stem, values in load_profile(profile).items():
        for name, value in values.items():
            assert schema.check_value(stem, name, value) is None, (profile, stem, name, value)


def test_a_value_past_its_ceiling_is_refused_before_anything_runs(tmp_path, capsys):
    assert main(["--profile", "smoke", "--check", "--set", f"theorem1.n_draws={10**12}"]) == 1
    assert capsys.readouterr().err == (
        "apd: --set theorem1.n_draws=1000000000000: expected an integer in [1, 1000000]\n"
    )
    root = _copy_project(tmp_path)
    path = root / "profiles" / "smoke.yml"
    path.write_text(path.read_text().replace("n_draws: 200", f"n_draws: {10**12}", 1))
    with pytest.raises(BookError, match=re.escape("theorem1.n_draws = 1000000000000: expected an integer in [1, ")):
        load_profile("smoke", root)


def test_the_runner_owned_profile_is_refused_with_the_option_named(tmp_path, capsys):
    for item in ("profile=smoke", "theorem1.profile=smoke"):
        assert main(["--profile", "smoke", "--check", "--set", item]) == 1
        assert (
            capsys.readouterr().err
            == f"apd: --set {item}: the runner sets `profile` itself; use --profile NAME instead\n"
        )
    root = _copy_project(tmp_path)
    path = root / "profiles" / "smoke.yml"
    path.write_text(path.read_text().replace("  theorem1:\n", "  theorem1:\n    profile: default\n", 1))
    with pytest.raises(BookError, match="theorem1.profile: .*--profile NAME"):
        load_profile("smoke", root)
    with pytest.raises(BookError, match="theorem1.seed=3; for every chapter, use --device DEVICE"):
        parse_overrides(["device=cpu"], load_profile("smoke"))


@pytest.mark.parametrize("module", [params, ranges, book_params, schema])
def test_examples_run(module):
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0
