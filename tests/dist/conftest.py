"""Every test in tests/dist carries the ``dist`` marker: ``pytest -m "not dist"`` skips the tier.

These tests build wheels and virtualenvs of their own (minutes on a cold
cache); CI and ``make test`` run them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A conftest's hook sees the whole session's items: mark only this folder's.
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.dist)
