"""The unit tier runs without a server or a network: every socket connection fails here.

Operations are driven by scripted responses (tests/support/script.py); a test
that opened a connection (a real client called by mistake, a moto server
started by a fixture) would make the tier slow and flaky, and would no
longer test the sans-I/O core alone. So, for every test in this folder:

- ``socket.socket.connect``/``connect_ex`` (what every client library, sync
  or asyncio, ends up calling) raise :class:`NetworkUsed`;
- the ``moto_endpoint`` fixture of tests/conftest.py is replaced by one that
  fails: a unit test may not ask for a server.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest


class NetworkUsed(AssertionError):
    """A unit test tried to open a network connection."""


def _refuse(sock: socket.socket, address: Any) -> None:
    raise NetworkUsed(f"the unit tier opened a connection to {address!r}: use a scripted saver")


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", _refuse)
    yield


@pytest.fixture(scope="session")
def moto_endpoint() -> str:
    raise NetworkUsed("the unit tier needs no server: move this test to tests/integration")
