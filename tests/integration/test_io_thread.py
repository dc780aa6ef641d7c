"""The async saver's I/O thread mode against the moto server, with real aiobotocore clients.

In that mode every operation runs on the saver's own event loop in a
dedicated thread: requests are sent, responses parsed and payloads packed
there, and the caller's loop only awaits the result. Requests are seen
through aiobotocore's ``before-send`` event hook (which runs where the
request is sent), packing through a recording serializer.
"""

from __future__ import annotations

import asyncio
import base64
import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver
from langgraph.checkpoint.dynamodb._engine.ops import OFFLOAD_MIN_BYTES
from langgraph.checkpoint.dynamodb.errors import StoreNotFoundError
from langgraph.checkpoint.dynamodb.serde import default_serde
from tests.support.harness import cfg, checkpoint_of, new_thread

LARGE = 8 * OFFLOAD_MIN_BYTES


def text(size: int) -> str:
    """``size`` characters that compress poorly: a large one goes to S3."""
    return base64.b64encode(random.Random(size).randbytes(size)).decode()[:size]


class Threads(SerializerProtocol):
    """The default serializer, recording the thread of every pack and unpack."""

    def __init__(self) -> None:
        self.inner = default_serde()
        self.seen: list[int] = []

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        self.seen.append(threading.get_ident())
        return self.inner.dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        self.seen.append(threading.get_ident())
        return self.inner.loads_typed(data)


def record_senders(saver: AsyncDynamoDBSaver, into: list[tuple[str, int]]) -> None:
    """Record ``(operation, thread)`` of every request the saver's clients send."""
    for client in saver.clients.values():
        if client is not None:
            client.meta.events.register(
                "before-send.*.*",
                lambda request, event_name, **_: into.append((event_name, threading.get_ident())),
            )


def io_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ddb-saver-io"]


@pytest.fixture
def store(moto_endpoint: str, names: dict[str, str]) -> Iterator[dict[str, str]]:
    with DynamoDBSaver(**names) as saver:
        saver.setup()
    yield names


@pytest.mark.parametrize("io_thread", [True, False], ids=["io-thread", "on-loop"])
def test_requests_and_packing_run_on_the_io_thread_not_the_callers_loop(
    store: dict[str, str], io_thread: bool
) -> None:
    serde = Threads()
    sent: list[tuple[str, int]] = []

    async def main() -> tuple[int, int | None]:
        async with AsyncDynamoDBSaver(**store, serde=serde, s3_threshold=1024, io_thread=io_thread) as saver:
            record_senders(saver, sent)
            for size in (200, LARGE):
                thread = new_thread()
                stored = await saver.aput(
                    cfg(thread), checkpoint_of({"v": text(size)}), {"step": 1}, {"v": "1"}
                )
                await saver.aput_writes(stored, [("w", text(size))], "task-1")
                got = await saver.aget_tuple(cfg(thread))
                assert got is not None and got.checkpoint["channel_values"]["v"] == text(size)
                assert [t.checkpoint["id"] async for t in saver.alist(cfg(thread))] == [got.checkpoint["id"]]
            io = saver.io_runner
            return threading.get_ident(), (io.thread.ident if io is not None else None)

    caller, io_ident = asyncio.run(main())
    services = {name.split(".")[1] for name, _ in sent}
    assert services == {"dynamodb", "s3"}, sent  # both clients were watched
    senders = {ident for _, ident in sent}
    if io_thread:
        assert io_ident is not None and senders == {io_ident}
        assert caller not in serde.seen  # small values on the I/O loop, large ones on its executor
        assert io_ident in serde.seen
    else:
        assert io_ident is None and senders == {caller}
        assert caller in serde.seen


def test_cancelling_the_caller_cancels_the_request_in_flight(store: dict[str, str]) -> None:
    started, cancelled = threading.Event(), threading.Event()
    hold = False

    async def stall(**_: Any) -> None:
        if not hold:
            return
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def main() -> None:
        nonlocal hold
        async with AsyncDynamoDBSaver(**store, io_thread=True) as saver:
            saver.clients["dynamodb"].meta.events.register("before-send.dynamodb.*", stall)
            hold = True
            task = asyncio.create_task(saver.aget_tuple(cfg(new_thread())))
            assert await asyncio.to_thread(started.wait, 10)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await asyncio.to_thread(cancelled.wait, 5), "the request went on after the caller left"
            hold = False
            thread = new_thread()  # the saver still works after a cancelled call
            await saver.aput(cfg(thread), checkpoint_of({"v": "1"}), {"step": 1}, {"v": "1"})
            assert await saver.aget_tuple(cfg(thread)) is not None

    asyncio.run(main())


def test_an_abandoned_alist_leaves_nothing_running_on_the_io_loop(store: dict[str, str]) -> None:
    async def main() -> None:
        async with AsyncDynamoDBSaver(**store, io_thread=True) as saver:
            thread = new_thread()
            parent = cfg(thread)
            for step in range(5):
                parent = await saver.aput(
                    parent, checkpoint_of({"v": str(step)}), {"step": step}, {"v": str(step)}
                )
            async for _ in saver.alist(cfg(thread)):
                break
            io = saver.io_runner
            assert io is not None

            async def others() -> int:
                return len(asyncio.all_tasks() - {asyncio.current_task()})

            for _ in range(50):  # the cancellation takes a hop or two
                if await io.run(others()) == 0:
                    break
                await asyncio.sleep(0.02)
            assert await io.run(others()) == 0

    asyncio.run(main())


def test_errors_surface_unchanged_in_io_thread_mode(moto_endpoint: str, names: dict[str, str]) -> None:
    async def main() -> None:
        async with AsyncDynamoDBSaver(**names, io_thread=True) as saver:  # no table was created
            with pytest.raises(StoreNotFoundError):
                await saver.aget_tuple(cfg(new_thread()))
            with pytest.raises(StoreNotFoundError):
                [t async for t in saver.alist(cfg(new_thread()))]

    asyncio.run(main())


def test_aclose_closes_the_clients_and_joins_the_thread(store: dict[str, str]) -> None:
    before = len(io_threads())

    async def main() -> AsyncDynamoDBSaver:
        async with AsyncDynamoDBSaver(**store, io_thread=True) as saver:
            assert saver.clients["dynamodb"] is not None
            assert len(io_threads()) == before + 1
            await saver.aget_tuple(cfg(new_thread()))
        assert saver.clients["dynamodb"] is None
        return saver

    saver = asyncio.run(main())
    assert len(io_threads()) == before
    assert saver.io_runner is not None and not saver.io_runner.thread.is_alive()


def test_one_saver_serves_successive_asyncio_runs(store: dict[str, str]) -> None:
    """One ``asyncio.run`` per Lambda invocation, one saver made at module level."""
    saver = AsyncDynamoDBSaver(**store, io_thread=True)  # made once, at module level
    thread = new_thread()

    async def invocation(step: int) -> int:
        latest = await saver.aget_tuple(cfg(thread))
        parent = latest.config if latest is not None else cfg(thread)
        await saver.aput(parent, checkpoint_of({"v": str(step)}), {"step": step}, {"v": str(step)})
        return len([t async for t in saver.alist(cfg(thread))])

    try:
        assert [asyncio.run(invocation(step)) for step in range(3)] == [1, 2, 3]
    finally:
        asyncio.run(saver.aclose())
    assert saver.io_runner is not None and not saver.io_runner.thread.is_alive()


def test_injected_clients_refuse_the_io_thread_and_drive_on_the_callers_loop(store: dict[str, str]) -> None:
    from aiobotocore.session import get_session

    async def main() -> None:
        async with get_session().create_client("dynamodb") as ddb:
            with pytest.raises(ValueError, match="io_thread=True needs clients the saver opens"):
                AsyncDynamoDBSaver(table_name=store["table_name"], dynamodb_client=ddb, io_thread=True)
            saver = AsyncDynamoDBSaver(table_name=store["table_name"], dynamodb_client=ddb)
            assert not saver.io_thread
            sent: list[tuple[str, int]] = []
            record_senders(saver, sent)
            thread = new_thread()
            await saver.aput(cfg(thread), checkpoint_of({"v": "1"}), {"step": 1}, {"v": "1"})
            assert await saver.aget_tuple(cfg(thread)) is not None
            assert {ident for _, ident in sent} == {threading.get_ident()}
            assert saver.io_runner is None  # no thread was started

    asyncio.run(main())


def test_a_session_works_with_the_io_thread(store: dict[str, str]) -> None:
    from aiobotocore.session import get_session

    async def main() -> None:
        async with AsyncDynamoDBSaver(**store, session=get_session(), io_thread=True) as saver:
            thread = new_thread()
            await saver.aput(cfg(thread), checkpoint_of({"v": "1"}), {"step": 1}, {"v": "1"})
            assert await saver.aget_tuple(cfg(thread)) is not None

    asyncio.run(main())


def test_sync_twins_in_io_thread_mode(store: dict[str, str]) -> None:
    """From a worker thread they run on the I/O loop; from a thread running a loop they are refused."""
    thread = new_thread()

    async def main() -> None:
        async with AsyncDynamoDBSaver(**store, io_thread=True) as saver:
            await asyncio.to_thread(
                saver.put, cfg(thread), checkpoint_of({"v": "1"}), {"step": 1}, {"v": "1"}
            )
            got = await asyncio.to_thread(saver.get_tuple, cfg(thread))
            assert got is not None and got.checkpoint["channel_values"] == {"v": "1"}
            assert len(await asyncio.to_thread(lambda: list(saver.list(cfg(thread))))) == 1
            with pytest.raises(asyncio.InvalidStateError, match="different thread"):
                saver.get_tuple(cfg(thread))  # from the caller's loop thread: it would block that loop

    asyncio.run(main())
    # Without any event loop: the sync twins need no `async with` in this mode.
    saver = AsyncDynamoDBSaver(**store, io_thread=True)
    try:
        assert saver.get_tuple(cfg(thread)) is not None
    finally:
        asyncio.run(saver.aclose())


def test_the_savers_clients_work_from_the_callers_loop_through_the_io_loop(store: dict[str, str]) -> None:
    """An aiobotocore client only works on its own loop: ``saver.clients`` hops to it (the lock uses them)."""
    from langgraph.checkpoint.dynamodb.lock import AsyncThreadLease

    sent: list[tuple[str, int]] = []

    async def main() -> int:
        async with AsyncDynamoDBSaver(**store, io_thread=True) as saver:
            ddb = saver.clients["dynamodb"]
            assert ddb is saver.clients["dynamodb"]
            assert ddb.meta.region_name == "us-east-1"  # the client's own attributes, unchanged
            record_senders(saver, sent)
            table = await ddb.describe_table(TableName=store["table_name"])
            assert table["Table"]["TableName"] == store["table_name"]
            async with AsyncThreadLease(saver, new_thread(), lease_seconds=5) as lease:
                assert lease.held
            io = saver.io_runner
            assert io is not None and io.thread.ident is not None
            return io.thread.ident

    io_ident = asyncio.run(main())
    names = [name for name, _ in sent]
    assert "before-send.dynamodb.DescribeTable" in names and "before-send.dynamodb.UpdateItem" in names
    assert {ident for _, ident in sent} == {io_ident}


# ------------------------------------------- the default mode across loops


def test_a_saver_kept_across_asyncio_runs_reopens_its_clients(store: dict[str, str]) -> None:
    """Default mode, one saver at module level, never closed: each ``asyncio.run`` closes its clients.

    Issue 39: ``asyncio.run`` finalizes the loop's async generators, among them the
    saver's closer, so the clients are closed on their loop (no ``Unclosed client
    session`` at exit) and the next loop opens its own.
    """
    saver = AsyncDynamoDBSaver(**store)
    thread = new_thread()
    assert asyncio.run(saver.aget_tuple(cfg(thread))) is None
    assert asyncio.run(saver.aget_tuple(cfg(thread))) is None

    async def listing() -> list[Any]:
        return [t async for t in saver.alist(cfg(thread))]

    assert asyncio.run(listing()) == []


def test_a_saver_whose_loop_was_closed_by_hand_says_what_to_do(store: dict[str, str]) -> None:
    """A loop closed without ``shutdown_asyncgens()`` leaves the clients open: a clear error, not a deep one."""
    saver = AsyncDynamoDBSaver(**store)
    thread = new_thread()
    loop = asyncio.new_event_loop()
    assert loop.run_until_complete(saver.aget_tuple(cfg(thread))) is None
    loop.close()  # no shutdown_asyncgens: the saver's closer never ran
    with pytest.raises(RuntimeError, match="io_thread=True"):
        asyncio.run(saver.aget_tuple(cfg(thread)))


def test_a_saver_entered_in_each_loop_serves_them_all(store: dict[str, str]) -> None:
    """Default mode, ``async with saver`` inside each ``asyncio.run``: it binds to each loop in turn."""
    saver = AsyncDynamoDBSaver(**store)
    thread = new_thread()

    async def invocation(step: int) -> int:
        async with saver:
            latest = await saver.aget_tuple(cfg(thread))
            parent = latest.config if latest is not None else cfg(thread)
            await saver.aput(parent, checkpoint_of({"v": str(step)}), {"step": step}, {"v": str(step)})
            return len([t async for t in saver.alist(cfg(thread))])

    assert [asyncio.run(invocation(step)) for step in range(3)] == [1, 2, 3]
