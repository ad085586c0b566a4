"""The command line: ``apd list``, ``--version``, ``--help``'s profiles, the global switches
``--device`` and ``--local-dir``, the ``data`` hook, the profiles an installed wheel carries, and the
Makefile's ``ONLY`` with several chapters."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from apd.base.notebooks import BookError
from apd.book import datafiles, project, runner
from apd.book.params import declared
from apd.book.profiles import known_profiles, profile_descriptions, profile_path, resolve
from apd.book.project import ROOT, toc_notebooks
from apd.chapters.params import CHAPTERS


def _with(stems: list[str], name: str) -> list[str]:
    return [s for s in stems if name in declared(s)]


def test_chapters_follow_the_toc_in_a_checkout_and_the_declarations_installed():
    assert runner.chapters() == toc_notebooks(ROOT)
    assert list(CHAPTERS) == toc_notebooks(ROOT), "apd.chapters.params.CHAPTERS is the installed wheel's order"


def test_list_prints_the_chapters_in_order_and_every_profile_with_its_description(capsys):
    assert runner.main(["list"]) == 0
    out = capsys.readouterr().out
    assert re.findall(r"^\s+\d+\. (\w+)$", out, flags=re.M) == toc_notebooks(ROOT)
    files = sorted((ROOT / "profiles").glob("*.yml"), key=lambda p: p.stem)
    assert known_profiles() == [p.stem for p in files] and len(files) >= 6
    for path in files:
        description = yaml.safe_load(path.read_text())["description"]
        assert re.search(rf"^  {re.escape(path.stem)} +{re.escape(description)}$", out, flags=re.M), path.stem
    assert runner.main(["list", "extra"]) == 2


def test_help_lists_every_profile_read_at_run_time(capsys, monkeypatch):
    with pytest.raises(SystemExit) as stop:
        runner.main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    for name, description in profile_descriptions().items():
        assert f"  {name} " in out and description in out
    for flag in ("--device DEVICE", "--local-dir FOLDER", "list", "data fetch FOLDER", "data check [FOLDER]"):
        assert flag in out, flag


def test_version_is_the_package_version(capsys):
    with pytest.raises(SystemExit) as stop:
        runner.main(["--version"])
    assert stop.value.code == 0
    version = re.search(r'^version = "(.*)"$', (ROOT / "pyproject.toml").read_text(), flags=re.M).group(1)
    assert capsys.readouterr().out.strip() == f"apd {version}"


def test_data_goes_to_the_datafiles_command(monkeypatch):
    seen = []
    monkeypatch.setattr(datafiles, "main", lambda argv: seen.append(argv) or 7)
    assert runner.main(["data", "check", "/some/folder"]) == 7
    assert runner.main(["data"]) == 7
    assert seen == [["check", "/some/folder"], []]


def test_device_and_local_dir_reach_every_chapter_that_declares_them_and_set_wins(tmp_path):
    stems = toc_notebooks(ROOT)
    params, _ = resolve(
        "smoke",
        ["qa.device=cpu", "family.local_dir=/elsewhere"],
        root=ROOT,
        switches={"device": "cuda:1", "local_dir": str(tmp_path)},
    )
    with_device, with_local = _with(stems, "device"), _with(stems, "local_dir")
    assert len(with_device) == 9 and len(with_local) == 7 and "tutorial" in with_local
    assert {s: params[s]["device"] for s in with_device} == {s: "cpu" if s == "qa" else "cuda:1" for s in with_device}
    assert {s: params[s]["local_dir"] for s in with_local} == {
        s: "/elsewhere" if s == "family" else str(tmp_path) for s in with_local
    }
    assert not any("device" in params[s] for s in stems if s not in with_device)
    plain, _ = resolve("smoke", root=ROOT)
    same, _ = resolve("smoke", root=ROOT, switches={"device": None, "local_dir": None})
    assert plain == same


def test_a_bad_device_fails_in_one_line_naming_the_switch():
    with pytest.raises(BookError, match=r"^--device gpu0: .*auto, cpu, mps, cuda or cuda:N"):
        resolve("smoke", root=ROOT, switches={"device": "gpu0"})


def test_check_takes_the_switches(capsys, tmp_path):
    code = runner.main(["--profile", "smoke", "--check", "--device", "cpu", "--local-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert out.startswith(f"profile 'smoke' is valid with --device cpu --local-dir {tmp_path}"), out
    assert code in (0, 1)
    assert runner.main(["--profile", "smoke", "--check", "--device", "gpu0"]) == 1
    assert "apd: --device gpu0:" in capsys.readouterr().err


def test_a_checkout_reads_its_profiles_folder_and_a_wheel_its_packaged_copy(tmp_path, monkeypatch):
    assert project.profiles_dir() == ROOT / "profiles"
    assert not project.PACKAGED_PROFILES.exists(), "a checkout has no apd/book/packaged_profiles/ (the wheel's copy)"
    packaged = tmp_path / "packaged"
    packaged.mkdir()
    (packaged / "only.yml").write_text((ROOT / "profiles" / "smoke.yml").read_text())
    monkeypatch.setattr(project, "PACKAGED_PROFILES", packaged)
    assert project.profiles_dir() == packaged and known_profiles() == ["only"]
    assert profile_path("only") == packaged / "only.yml"
    other = tmp_path / "project"
    (other / "profiles").mkdir(parents=True)
    assert project.profiles_dir(other) == other / "profiles"  # a project of its own reads its own


def test_an_installed_runner_says_the_book_is_built_from_a_checkout(capsys, monkeypatch):
    monkeypatch.setattr(runner, "is_checkout", lambda root=ROOT: False)
    assert runner.main(["--profile", "smoke", "--check"]) == 1
    assert "build the book from a checkout" in capsys.readouterr().err
    assert runner.chapters(Path("/nonexistent")) == list(CHAPTERS)


def test_make_book_takes_several_chapters_a_device_and_a_local_dir():
    out = subprocess.run(
        ["make", "-n", "book", "ONLY=theorem1 family", "DEVICE=cpu", "LOCAL_DIR=/data/pythia", "SET=theorem1.seed=3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    line = " ".join(out.replace("\\\n", " ").split())
    assert "-m apd --profile default --set theorem1.seed=3 --only theorem1 --only family" in line, out
    assert "--device cpu --local-dir /data/pythia" in line, out


def test_rerun_page_tables_have_no_blank_line_inside():
    text = (ROOT / "book" / "rerun.md").read_text()
    section = text.split("## Where things go", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.strip().splitlines()]
    table = rows[: next(i for i, ln in enumerate(rows) if not ln.startswith("|"))]
    assert any("trained models" in ln for ln in table) and any("status.json" in ln for ln in table), table
    assert "local_dir=/data/pythia" not in text and "--local-dir" in text
