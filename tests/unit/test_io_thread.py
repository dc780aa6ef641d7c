"""The I/O thread bridge (``_io_thread.IOThread``): results, errors, context, cancellation, streams.

No AWS here: plain coroutines and async generators, run on an ``IOThread``
from ``asyncio.run`` loops (and from plain threads, for the blocking path).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb._engine.io_thread import IOThread
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("WHO", default="nobody")


@pytest.fixture
def io() -> Iterator[IOThread]:
    thread = IOThread()
    yield thread
    thread.stop()
    assert not thread.thread.is_alive()


def test_a_coroutine_runs_on_the_io_thread_and_its_result_comes_back(io: IOThread) -> None:
    async def where() -> int:
        await asyncio.sleep(0)
        return threading.get_ident()

    async def main() -> tuple[int, int]:
        return threading.get_ident(), await io.run(where())

    caller, ran_on = asyncio.run(main())
    assert ran_on == io.thread.ident != caller
    assert io.run_blocking(where()) == io.thread.ident


def test_errors_come_back_unchanged(io: IOThread) -> None:
    err = CorruptPayloadError("no table")

    async def fail() -> None:
        raise err

    async def main() -> None:
        with pytest.raises(CorruptPayloadError) as caught:
            await io.run(fail())
        assert caught.value is err

    asyncio.run(main())
    with pytest.raises(CorruptPayloadError):
        io.run_blocking(fail())


def test_the_coroutine_sees_the_callers_context(io: IOThread) -> None:
    """What tracing needs: a span started over there has the caller's span as parent."""

    async def who() -> str:
        return WHO.get()

    async def main() -> str:
        WHO.set("caller")
        return await io.run(who())

    assert asyncio.run(main()) == "caller"
    WHO.set("sync caller")
    try:
        assert io.run_blocking(who()) == "sync caller"
    finally:
        WHO.set("nobody")


def test_cancelling_the_caller_cancels_the_coroutine_on_the_io_loop(io: IOThread) -> None:
    started, cancelled = threading.Event(), threading.Event()

    async def slow() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def main() -> None:
        task = asyncio.create_task(io.run(slow()))
        assert await asyncio.to_thread(started.wait, 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert cancelled.wait(5), "the coroutine kept running on the I/O loop"


def test_a_stream_yields_everything_in_order_then_ends(io: IOThread) -> None:
    async def numbers(n: int) -> AsyncIterator[int]:
        for i in range(n):
            if i % 7 == 0:
                await asyncio.sleep(0)
            yield i

    async def main() -> list[int]:
        return [i async for i in io.stream(numbers(200), buffer=8)]

    assert asyncio.run(main()) == list(range(200))


def test_a_stream_error_reaches_the_caller_after_the_values_before_it(io: IOThread) -> None:
    async def broken() -> AsyncIterator[int]:
        yield 1
        yield 2
        raise CorruptPayloadError("gone")

    async def main() -> list[int]:
        got: list[int] = []
        with pytest.raises(CorruptPayloadError, match="gone"):
            async for i in io.stream(broken()):
                got.append(i)
        return got

    assert asyncio.run(main()) == [1, 2]


def test_an_abandoned_stream_stops_its_producer(io: IOThread) -> None:
    """An endless source behind a bounded buffer: only cancellation can end its producer."""
    closed = threading.Event()
    produced = 0

    async def endless() -> AsyncIterator[int]:
        nonlocal produced
        try:
            while True:
                produced += 1
                yield produced
        finally:
            closed.set()

    async def main() -> list[int]:
        got = []
        async for i in io.stream(endless(), buffer=4):
            got.append(i)
            if len(got) == 3:
                break
        return got

    assert asyncio.run(main()) == [1, 2, 3]
    assert closed.wait(5), "the producer kept running after the caller stopped"
    assert produced <= 3 + 4 + 2  # bounded: what was taken, the buffer, one waiting to be queued

    async def tasks() -> int:
        return len(asyncio.all_tasks() - {asyncio.current_task()})

    # The producer's task ends a hop or two after its generator closed.
    for _ in range(100):
        if io.run_blocking(tasks()) == 0:
            break
        time.sleep(0.02)
    assert io.run_blocking(tasks()) == 0


def test_stop_joins_the_thread_and_later_submissions_fail_clearly() -> None:
    io = IOThread()
    io.stop()
    assert not io.thread.is_alive() and not io.alive

    async def nothing() -> None:
        return None

    coro = nothing()
    with pytest.raises(RuntimeError, match="stopped"):
        io.run_blocking(coro)
    io.stop()  # idempotent


def test_a_second_stop_does_not_cut_the_loops_final_work_short(monkeypatch: pytest.MonkeyPatch) -> None:
    """The saver's finalizer and the exit hook both stop the loop: the later ask must not end its cleanup."""
    errors: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    io = IOThread()
    finalizing = threading.Event()

    async def generator() -> AsyncIterator[int]:
        try:
            yield 1
        finally:  # runs in the loop's shutdown_asyncgens: slow, as closing clients is
            finalizing.set()
            await asyncio.sleep(0.3)

    async def start() -> Any:
        gen = generator()
        await gen.__anext__()
        return gen

    gen = io.run_blocking(start())
    io.stop_soon()
    assert finalizing.wait(5)
    io.stop_soon()  # lands while the generator is being finalized
    io.thread.join(5)
    del gen
    assert not io.thread.is_alive() and errors == []


def test_a_burst_of_submissions_wakes_the_io_loop_once_not_once_each(io: IOThread) -> None:
    """Each wake-up is a pipe write on the caller's thread, which gives up the GIL: they are batched."""
    wakeups = 0
    real = io.loop.call_soon_threadsafe

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal wakeups
        wakeups += 1
        return real(*args, **kwargs)

    async def nothing(i: int) -> int:
        return i

    # The I/O loop is kept busy while the burst is submitted, so the count
    # does not depend on how fast that loop drains (a loaded machine).
    gate = threading.Event()
    io.post(lambda: gate.wait(10) and None)

    async def main() -> list[int]:
        tasks = [asyncio.ensure_future(io.run(nothing(i))) for i in range(200)]
        await asyncio.sleep(0)  # every task has submitted its operation
        gate.set()
        return list(await asyncio.gather(*tasks))

    io.loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
    try:
        assert asyncio.run(main()) == list(range(200))
    finally:
        io.loop.call_soon_threadsafe = real  # type: ignore[method-assign]
    assert wakeups <= 1, wakeups
