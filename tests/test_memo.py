"""Cached results of pure computations (apd.base.memo)."""

import doctest
import warnings

import pytest

from apd.base import memo
from apd.chapters import known_answer as chapter
from apd.evaluation import known_answer as ka


def test_the_module_examples_run():
    assert doctest.testmod(memo).failed == 0


def test_a_value_is_computed_once_per_arguments_and_code(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"n": len(calls)}

    first = memo.memoized("t", {"a": 1}, ["apd.base.memo"], compute, tmp_path)
    assert memo.memoized("t", {"a": 1}, ["apd.base.memo"], compute, tmp_path) == first == {"n": 1}
    assert memo.memoized("t", {"a": 2}, ["apd.base.memo"], compute, tmp_path) == {"n": 2}  # other arguments
    assert memo.memoized("t", {"a": 1}, ["apd.base.memo", "apd.base.io"], compute, tmp_path) == {"n": 3}  # other code
    assert len(list((tmp_path / "memo" / "t").glob("*.pkl"))) == 3


def test_a_damaged_value_is_set_aside_and_computed_again(tmp_path):
    memo.memoized("t", {}, ["apd.base.memo"], lambda: [1, 2], tmp_path)
    (path,) = (tmp_path / "memo" / "t").glob("*.pkl")
    path.write_bytes(b"not a pickle")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert memo.memoized("t", {}, ["apd.base.memo"], lambda: [3], tmp_path) == [3]
    assert any("damaged" in str(w.message) for w in caught)
    assert list((tmp_path / "memo" / "t").glob("*.pkl.damaged-*"))


def test_bad_names_are_refused(tmp_path):
    with pytest.raises(ValueError, match="plain folder name"):
        memo.memoized("a/b", {}, ["apd.base.memo"], lambda: 1, tmp_path)
    with pytest.raises(ValueError, match="no modules named"):
        memo.code_digest([])


def test_the_cached_recovery_table_is_the_computed_one(tmp_path, monkeypatch):
    monkeypatch.setenv("APD_CACHE_DIR", str(tmp_path))
    args = dict(grids=["pico"], regimes=["saturating"], estimators=["p_elm", "fit_plain"], pico_scale="smoke")
    cached = chapter.recovery("smoke", **args)
    again = chapter.recovery("smoke", **args)  # read back
    fresh = ka.recovery_table("smoke", **args)
    cols = ["estimator", "grid", "regime", "median_abs_error", "p90_abs_error", "share_collapsed"]
    assert again[cols].equals(cached[cols]) and fresh[cols].equals(cached[cols])
    assert set(again.attrs["traces"]) == set(fresh.attrs["traces"])


def _slow_value(root, log):
    import time

    def compute():
        with open(log, "a") as fh:
            fh.write("computed\n")
        time.sleep(0.5)
        return list(range(100_000))

    return memo.memoized("race", {"n": 1}, ["apd.base.memo"], compute, root)


def test_two_processes_asking_at_once_compute_the_value_once(tmp_path):
    import multiprocessing as mp

    log = tmp_path / "log.txt"
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        values = pool.starmap(_slow_value, [(tmp_path, log), (tmp_path, log)])
    assert values[0] == values[1] == list(range(100_000))
    assert log.read_text() == "computed\n"
    assert not list((tmp_path / "memo" / "race").glob("*.damaged-*"))


def test_a_kind_kept_under_its_size_cap_loses_its_least_recently_used_values(tmp_path):
    import os
    import time

    def value(n):
        return memo.memoized("capped", {"n": n}, ["apd.base.memo"], lambda: bytes(1000) + bytes([n]), tmp_path, 2500)

    folder = tmp_path / "memo" / "capped"
    value(1)
    value(2)
    for i, p in enumerate(sorted(folder.glob("*.pkl"), key=lambda p: p.stat().st_mtime)):
        os.utime(p, (time.time() - 100 + i, time.time() - 100 + i))  # 1 older than 2
    value(1)  # read back: now the most recently used
    value(3)  # over the cap: 2, the least recently used, goes
    calls = []
    memo.memoized("capped", {"n": 1}, ["apd.base.memo"], lambda: calls.append(1), tmp_path, 2500)
    memo.memoized("capped", {"n": 2}, ["apd.base.memo"], lambda: calls.append(2), tmp_path, 2500)
    assert calls == [2]  # 1 was kept, 2 computed again
