"""Every name of the front door (``apd.__all__``) has a docstring with an example, and the examples run."""

import doctest
import inspect
import types

import pytest

import apd
from apd.base import device, io, lock, names
from apd.core import contrastive, entropy, filters, stats, theory
from apd.report import findings

FRONT = [name for name in apd.__all__ if not isinstance(getattr(apd, name), types.ModuleType)]
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def run_examples(obj, name):
    finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner(optionflags=OPTIONS)
    globs = dict(vars(inspect.getmodule(obj))) if inspect.getmodule(obj) else {}
    tests = finder.find(obj, name, globs=globs)
    for test in tests:
        runner.run(test)
    return runner.summarize(verbose=False), sum(len(t.examples) for t in tests)


@pytest.mark.parametrize("name", FRONT)
def test_front_door_name_has_a_docstring_with_an_example(name):
    doc = inspect.getdoc(getattr(apd, name)) or ""
    assert "Example" in doc and ">>>" in doc, f"apd.{name} needs a short runnable example in its docstring"


@pytest.mark.parametrize("name", FRONT)
def test_front_door_examples_run(name, smoke_family):
    result, n = run_examples(getattr(apd, name), name)
    assert n and result.failed == 0, f"{result.failed} of {result.attempted} examples of apd.{name} failed"


@pytest.mark.parametrize(
    "module",
    [contrastive, entropy, filters, theory, stats, io, lock, device, names, findings],
    ids=lambda m: m.__name__,
)
def test_module_examples_run(module):
    result = doctest.testmod(module, optionflags=OPTIONS, verbose=False)
    assert result.failed == 0
