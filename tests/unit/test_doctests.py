"""Every docstring example in the package runs and prints what it says (doctest).

The examples are the documentation people copy; a stale one is a bug. Examples
that need a live store or a Lambda are marked ``# doctest: +SKIP`` where they
stand (and run elsewhere: the docs' snippets have tests of their own).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import langgraph.checkpoint.dynamodb as package

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}.")
    if not info.name.endswith("__main__")
)


def test_the_package_has_examples() -> None:
    found = sum(
        len(t.examples)
        for name in MODULES
        for t in doctest.DocTestFinder().find(importlib.import_module(name))
    )
    assert found >= 50, found


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # examples build savers, never call AWS
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    for test in doctest.DocTestFinder().find(module, name):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
