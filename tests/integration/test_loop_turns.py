"""Where the async saver hands the event loop back while it works, against the moto server.

A competing task appends ``"tick"`` each time the loop runs it; spies on the
clients' own events and on the serializer mark the phases of an operation.
A tick between two marks means the loop served other tasks between them:
the phases ran as separate callbacks rather than one long one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiobotocore.session import get_session
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver
from langgraph.checkpoint.dynamodb.serde import default_serde
from tests.support.harness import cfg, checkpoint_of, new_thread


@pytest.fixture
def store(moto_endpoint: str, names: dict[str, str]) -> dict[str, str]:
    with DynamoDBSaver(**names) as saver:
        saver.setup()
    return names


@asynccontextmanager
async def ticking(marks: list[str]) -> AsyncIterator[None]:
    """A task that marks every turn the loop gives it, for the duration of the block."""
    stop = asyncio.Event()

    async def tick() -> None:
        while not stop.is_set():
            marks.append("tick")
            await asyncio.sleep(0)

    task = asyncio.create_task(tick())
    await asyncio.sleep(0)
    try:
        yield
    finally:
        stop.set()
        await task


def spy_phases(client: Any, marks: list[str]) -> None:
    """Mark a request's start (parameters), its signing and its sending.

    Registered after the saver's own handlers, so ``send`` is marked after
    the saver's ``before-send`` handler has run.
    """

    def mark(name: str) -> Callable[..., None]:
        def handler(**_: Any) -> None:
            marks.append(name)

        return handler

    events = client.meta.events
    events.register("provide-client-params", mark("build"))
    events.register("before-sign", mark("sign"))
    events.register("before-send", mark("send"))


def between(marks: list[str], first: str, then: str) -> list[str]:
    """The marks strictly between the first ``first`` and the next ``then`` after it."""
    start = marks.index(first)
    return marks[start + 1 : marks.index(then, start + 1)]


OPERATIONS = {
    "aput": lambda saver, thread: saver.aput(cfg(thread), checkpoint_of({"a": "x"}), {}, {"a": "1"}),
    "aget_tuple": lambda saver, thread: saver.aget_tuple(cfg(thread)),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_a_request_is_built_signed_and_sent_in_separate_callbacks(
    store: dict[str, str], operation: str
) -> None:
    """aiobotocore would build, sign and send a request in one callback; the saver's clients pass the turn twice."""

    async def main() -> list[str]:
        marks: list[str] = []
        async with AsyncDynamoDBSaver(**store) as saver:
            await saver.ensure_clients()
            spy_phases(saver.clients["dynamodb"], marks)
            async with ticking(marks):
                await OPERATIONS[operation](saver, new_thread())
        return marks

    marks = asyncio.run(main())
    assert marks.count("build") == 1, marks
    assert "tick" in between(marks, "build", "sign"), marks
    assert "tick" in between(marks, "sign", "send"), marks


def test_a_client_the_caller_passed_keeps_its_own_handlers(store: dict[str, str]) -> None:
    """The saver adds its handlers only to the clients it opens: one built in one callback stays so."""

    async def main() -> list[str]:
        marks: list[str] = []
        async with get_session().create_client("dynamodb") as client:
            spy_phases(client, marks)
            saver = AsyncDynamoDBSaver(**{**store, "bucket_name": None}, dynamodb_client=client)
            async with saver, ticking(marks):
                await saver.aget_tuple(cfg(new_thread()))
        return marks

    marks = asyncio.run(main())
    assert between(marks, "build", "send") == ["sign"], marks


class Marking:
    """The default serializer, marking each ``dumps_typed``."""

    def __init__(self, inner: SerializerProtocol, marks: list[str]) -> None:
        self.inner = inner
        self.marks = marks

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        self.marks.append("pack")
        return self.inner.dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return self.inner.loads_typed(data)


def test_an_operation_does_its_first_work_apart_from_the_callers_callback(store: dict[str, str]) -> None:
    """Awaited inline (as LangGraph awaits ``aput``), packing would lengthen the caller's callback."""

    async def main() -> list[str]:
        marks: list[str] = []
        async with AsyncDynamoDBSaver(**store, serde=Marking(default_serde(), marks)) as saver:
            await saver.ensure_clients()
            async with ticking(marks):
                marks.append("caller")
                await saver.aput(cfg(new_thread()), checkpoint_of({"a": "x"}), {}, {"a": "1"})
        return marks

    marks = asyncio.run(main())
    assert "pack" in marks, marks
    assert "tick" in between(marks, "caller", "pack"), marks
