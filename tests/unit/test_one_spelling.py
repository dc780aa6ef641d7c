"""One spelling for every public name (issue 37, item 3): each is in the ``__all__`` of one module.

Nothing was released before 0.1.0, so no module keeps answering to a name
that moved: ``base`` does not re-export ``lifecycle.PruneResult``, ``server``
not ``config.ENV_SETUP``. The package's own ``__init__`` is the exception, by
design: it is the public face, and re-exports the savers and the errors.
Read from the modules' ``__all__`` (the ``cdk`` wing only with its extra).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections import defaultdict

import langgraph.checkpoint.dynamodb as package

PKG = package.__name__
#: Wings with public modules of their own (``cdk`` imports aws_cdk: only with its extra).
WINGS = ("tools", "lambdas", "lock", "cli", "cdk")


def _public_modules() -> list[str]:
    names = [f"{PKG}.{m.name}" for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")]
    for wing in WINGS:
        if wing == "cdk" and importlib.util.find_spec("aws_cdk") is None:
            names.remove(f"{PKG}.cdk")
            continue
        path = importlib.import_module(f"{PKG}.{wing}").__path__
        names += [f"{PKG}.{wing}.{m.name}" for m in pkgutil.iter_modules(path) if not m.name.startswith("_")]
    return sorted(n for n in names if not n.endswith("__main__"))


def test_each_public_name_has_one_module() -> None:
    owners: dict[str, list[str]] = defaultdict(list)
    for name in _public_modules():
        for exported in getattr(importlib.import_module(name), "__all__", ()):
            owners[exported].append(name)
    assert len(owners) > 100  # the walk found the package's surface, not nothing
    assert {n: m for n, m in owners.items() if len(m) > 1} == {}


def test_prune_result_is_lifecycles() -> None:
    from langgraph.checkpoint.dynamodb import base, lifecycle

    assert "PruneResult" in lifecycle.__all__
    assert not hasattr(base, "PruneResult")
