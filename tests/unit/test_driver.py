"""The driver loops (``_drivers``) with fake clients: no server, no network.

Each test runs the same operation through the sync and the async loop, so
the two stay alike: what an operation sees (responses, exceptions thrown back
into it, ``Gather`` results, ``Emit`` streaming, ``Sleep``) must not depend
on which saver runs it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb._engine.aws import translate_errors
from langgraph.checkpoint.dynamodb._engine.drivers import AsyncDriver, Clients, SyncDriver
from langgraph.checkpoint.dynamodb._engine.ops import (
    OFFLOAD_MIN_BYTES,
    Call,
    Emit,
    Gather,
    Op,
    Sleep,
    compute,
    ddb,
    s3,
    size_hint,
)
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError, StoreNotFoundError

MODES = ["sync", "async"]


def _error(code: str, op: str = "GetItem") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, op)


class Fake:
    """A client whose methods answer from ``handlers`` (method -> fn(**kwargs)), recording each call."""

    def __init__(self, handlers: dict[str, Callable[..., Any]], *, is_async: bool = False) -> None:
        self.handlers = handlers
        self.is_async = is_async
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, method: str) -> Any:
        if method not in self.handlers:
            raise AttributeError(method)
        handler = self.handlers[method]

        def sync(**kwargs: Any) -> Any:
            self.calls.append((method, kwargs))
            return handler(**kwargs)

        async def coro(**kwargs: Any) -> Any:
            self.calls.append((method, kwargs))
            await asyncio.sleep(0)  # let other tasks of a Gather run
            return handler(**kwargs)

        return coro if self.is_async else sync


class Holder(Clients):
    """A client holder that counts ``ensure_clients`` and can open a client lazily."""

    def __init__(self, lazy: dict[str, Any] | None = None, **clients: Any) -> None:
        super().__init__(**clients)
        self.lazy = lazy or {}
        self.ensured = 0
        self.table_name = "tbl"
        self.bucket_name = "bkt"

    async def ensure_clients(self) -> None:
        self.ensured += 1
        self._clients.update(self.lazy)  # type: ignore[attr-defined]


def run(mode: str, holder: Any, op: Op[Any], **kw: Any) -> Any:
    if mode == "sync":
        driver = SyncDriver(holder, **kw)
        try:
            return driver.run(op)
        finally:
            driver.close()
    return asyncio.run(AsyncDriver(holder, **kw).run(op))


def collect(mode: str, holder: Any, op: Op[Any]) -> list[Any]:
    if mode == "sync":
        return list(SyncDriver(holder).iter(op))

    async def main() -> list[Any]:
        return [v async for v in AsyncDriver(holder).iter(op)]

    return asyncio.run(main())


def fake(mode: str, **handlers: Callable[..., Any]) -> Fake:
    return Fake(handlers, is_async=mode == "async")


@pytest.mark.parametrize("mode", MODES)
def test_responses_come_back_in_order(mode: str) -> None:
    client = fake(mode, get_item=lambda **kw: {"Item": {"k": kw["Key"]}})

    def op() -> Op[list[Any]]:
        a = yield ddb("get_item", TableName="t", Key="a")
        b = yield ddb("get_item", TableName="t", Key="b")
        return [a["Item"]["k"], b["Item"]["k"]]

    assert run(mode, Clients(dynamodb=client), op()) == ["a", "b"]
    assert [kw["Key"] for _, kw in client.calls] == ["a", "b"]


@pytest.mark.parametrize("mode", MODES)
def test_an_exception_is_thrown_back_into_the_op(mode: str) -> None:
    """The operation sees the client's error where it yielded, and may handle it and go on."""

    def put(**kw: Any) -> Any:
        raise _error("ConditionalCheckFailedException", "PutItem")

    client = fake(mode, put_item=put, get_item=lambda **kw: {"Item": {"ok": True}})

    def op() -> Op[tuple[str, Any]]:
        try:
            yield ddb("put_item", TableName="t")
        except ClientError as exc:
            code = exc.response["Error"]["Code"]
        else:  # pragma: no cover - the fake always raises
            code = "none"
        after = yield ddb("get_item", TableName="t")
        return code, after["Item"]

    assert run(mode, Clients(dynamodb=client), op()) == ("ConditionalCheckFailedException", {"ok": True})


@pytest.mark.parametrize("mode", MODES)
def test_an_unhandled_error_escapes_translated(mode: str) -> None:
    """With the savers' translator, a missing table names the table and says what to do."""

    def get(**kw: Any) -> Any:
        raise _error("ResourceNotFoundException")

    holder = Holder(dynamodb=fake(mode, get_item=get))

    def op() -> Op[None]:
        yield ddb("get_item", TableName="tbl")

    with pytest.raises(StoreNotFoundError, match=r"DynamoDB table 'tbl' not found .*setup\(\)"):
        run(mode, holder, op(), translate=translate_errors)
    # Without a translator the client's own error escapes unchanged.
    with pytest.raises(ClientError) as info:
        run(mode, holder, op())
    assert not isinstance(info.value, StoreNotFoundError)


@pytest.mark.parametrize("mode", MODES)
def test_gather_with_return_exceptions_puts_errors_in_place(mode: str) -> None:
    def get(**kw: Any) -> Any:
        if kw["Key"] == "bad":
            raise _error("ValidationException")
        return {"Item": kw["Key"]}

    client = fake(mode, get_item=get)
    keys = ["a", "bad", "c"]

    def op(return_exceptions: bool) -> Op[Any]:
        calls = [ddb("get_item", Key=k) for k in keys]
        try:
            return (yield Gather(calls, return_exceptions=return_exceptions))
        except ClientError as exc:
            return ("raised", exc.response["Error"]["Code"])

    out = run(mode, Clients(dynamodb=client), op(True))
    assert out[0] == {"Item": "a"} and out[2] == {"Item": "c"}
    assert isinstance(out[1], ClientError)
    # Without return_exceptions the failure is thrown into the op (which handles it here).
    assert run(mode, Clients(dynamodb=client), op(False)) == ("raised", "ValidationException")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [0, 1])
def test_gather_of_zero_or_one_call(mode: str, n: int) -> None:
    client = fake(mode, get_item=lambda **kw: {"Item": kw["Key"]})

    def op() -> Op[Any]:
        return (yield Gather([ddb("get_item", Key=str(i)) for i in range(n)]))

    assert run(mode, Clients(dynamodb=client), op()) == [{"Item": str(i)} for i in range(n)]


@pytest.mark.parametrize("mode", MODES)
def test_gather_runs_concurrently_within_max_concurrency(mode: str) -> None:
    lock = threading.Lock()
    state = {"now": 0, "max": 0}

    def get(**kw: Any) -> Any:
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.02) if mode == "sync" else None
        with lock:
            state["now"] -= 1
        return {}

    if mode == "async":

        class Slow:
            async def get_item(self, **kw: Any) -> Any:
                state["now"] += 1
                state["max"] = max(state["max"], state["now"])
                await asyncio.sleep(0.02)
                state["now"] -= 1
                return {}

        client: Any = Slow()
    else:
        client = fake(mode, get_item=get)

    def op() -> Op[Any]:
        return (yield Gather([ddb("get_item", Key=str(i)) for i in range(8)]))

    assert len(run(mode, Clients(dynamodb=client), op(), max_concurrency=3)) == 8
    assert state["max"] == 3  # concurrent, and bounded


@pytest.mark.parametrize("mode", MODES)
def test_emit_streams_values_while_the_op_runs(mode: str) -> None:
    client = fake(mode, query=lambda **kw: {"Items": [kw["Page"] * 10, kw["Page"] * 10 + 1]})
    seen: list[str] = []

    def op() -> Op[None]:
        for page in (1, 2):
            resp = yield ddb("query", Page=page)
            seen.append(f"page {page}")
            for item in resp["Items"]:
                yield Emit(item)

    assert collect(mode, Clients(dynamodb=client), op()) == [10, 11, 20, 21]
    assert seen == ["page 1", "page 2"]


@pytest.mark.parametrize("mode", MODES)
def test_iter_is_lazy(mode: str) -> None:
    """A consumer that stops early stops the requests (LangGraph reads ``list`` lazily)."""
    client = fake(mode, query=lambda **kw: {"Items": [kw["Page"]]})

    def op() -> Op[None]:
        for page in range(100):
            resp = yield ddb("query", Page=page)
            yield Emit(resp["Items"][0])

    if mode == "sync":
        it: Iterator[Any] = SyncDriver(Clients(dynamodb=client)).iter(op())
        assert [next(it), next(it)] == [0, 1]
    else:

        async def main() -> list[Any]:
            out = []
            async for v in AsyncDriver(Clients(dynamodb=client)).iter(op()):
                out.append(v)
                if len(out) == 2:
                    break
            return out

        assert asyncio.run(main()) == [0, 1]
    assert len(client.calls) == 2


@pytest.mark.parametrize("mode", MODES)
def test_run_refuses_an_op_that_emits(mode: str) -> None:
    def op() -> Op[None]:
        yield Emit(1)

    with pytest.raises(TypeError, match="emitted 1"):
        run(mode, Clients(), op())


@pytest.mark.parametrize("mode", MODES)
def test_sleep_pauses_without_a_client(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    if mode == "sync":
        monkeypatch.setattr(time, "sleep", slept.append)
    else:
        real = asyncio.sleep

        async def fake_sleep(seconds: float) -> None:
            slept.append(seconds)
            await real(0)

        monkeypatch.setattr(asyncio, "sleep", fake_sleep)

    def op() -> Op[str]:
        got = yield Sleep(0.25)
        yield Sleep(1.5)
        return f"slept, got {got}"

    assert run(mode, Clients(), op()) == "slept, got None"
    assert slept == [0.25, 1.5]


@pytest.mark.parametrize("mode", MODES)
def test_unknown_request_and_missing_client_are_thrown_into_the_op(mode: str) -> None:
    def op() -> Op[list[str]]:
        errors = []
        for req in (object(), s3("get_object", Bucket="b", Key="k")):
            try:
                yield req  # type: ignore[misc]
            except (TypeError, RuntimeError) as exc:
                errors.append(str(exc))
        return errors

    errors = run(mode, Clients(dynamodb=fake(mode), s3=None), op())
    assert errors[0].startswith("unexpected request <object")
    assert errors[1] == "no s3 client configured"


def test_async_opens_missing_clients_through_the_holder() -> None:
    client = fake("async", get_item=lambda **kw: {"Item": 1})
    holder = Holder(lazy={"dynamodb": client}, dynamodb=None)

    def op() -> Op[Any]:
        a = yield ddb("get_item")
        b = yield ddb("get_item")
        return [a, b]

    assert run("async", holder, op()) == [{"Item": 1}, {"Item": 1}]
    assert holder.ensured == 1  # once: the second call finds the client open


class _Body:
    def __init__(self, data: bytes, step: int = 7) -> None:
        self.data, self.step, self.pos, self.closed = data, step, 0, False

    def read(self, n: int = -1) -> bytes:
        n = len(self.data) if n < 0 else min(n, self.step)
        out = self.data[self.pos : self.pos + n]
        self.pos += len(out)
        return out

    def close(self) -> None:
        self.closed = True


class _AsyncBody(_Body):
    async def read(self, n: int = -1) -> bytes:  # type: ignore[override]
        return super().read(n)

    async def __aenter__(self) -> _AsyncBody:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.closed = True


@pytest.mark.parametrize("mode", MODES)
def test_get_object_bodies_are_read_into_bytes_within_max_bytes(mode: str) -> None:
    bodies: list[_Body] = []

    def get(**kw: Any) -> Any:
        body = (_AsyncBody if mode == "async" else _Body)(b"x" * kw["Size"])
        bodies.append(body)
        return {"Body": body, "ContentLength": kw["Size"]} if kw.get("Length") else {"Body": body}

    holder = Clients(s3=fake(mode, get_object=get))

    def op(size: int, *, length: bool) -> Op[Any]:
        resp = yield Call("s3", "get_object", {"Bucket": "b", "Key": "k", "Size": size, "Length": length}, 20)
        return resp["Body"]

    assert run(mode, holder, op(20, length=False)) == b"x" * 20  # read in pieces, whole
    with pytest.raises(CorruptPayloadError, match="max_payload_size"):
        run(mode, holder, op(1000, length=False))
    assert bodies[-1].pos == 21  # limit + 1, never the rest
    with pytest.raises(CorruptPayloadError, match="1000 bytes"):
        run(mode, holder, op(1000, length=True))
    assert bodies[-1].pos == 0 and bodies[-1].closed  # refused on its length, nothing read


def test_short_lived_sync_driver_leaves_no_thread_behind() -> None:
    """``keep_pool=False`` (the lock's drivers, never closed) joins its pool in every Gather."""
    client = fake("sync", get_item=lambda **kw: {})
    before = threading.active_count()
    driver = SyncDriver(Clients(dynamodb=client), keep_pool=False)

    def op() -> Op[Any]:
        return (yield Gather([ddb("get_item")] * 4))

    assert len(driver.run(op())) == 4
    assert threading.active_count() == before
    kept = SyncDriver(Clients(dynamodb=client))
    kept.run(op())
    assert threading.active_count() > before  # a saver's driver keeps its pool...
    kept.close()  # ...until closed


def test_savers_expose_their_clients_read_only_and_live() -> None:
    """``saver.clients`` (what the lock and tools use) follows the saver and cannot be changed."""
    from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver

    ddb_client = fake("sync")
    saver = DynamoDBSaver(table_name="t", dynamodb_client=ddb_client)
    assert saver.clients["dynamodb"] is ddb_client and saver.clients["s3"] is None
    with pytest.raises(TypeError):
        saver.clients["dynamodb"] = None  # type: ignore[index]
    s3_client = fake("async")
    asaver = AsyncDynamoDBSaver(
        table_name="t",
        bucket_name="b",
        s3_client=s3_client,
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
    )
    view = asaver.clients
    assert view["dynamodb"] is None  # opened on first use

    async def live() -> tuple[Any, Any]:
        async with asaver:  # opens the missing client; no request is sent
            inside = view["dynamodb"]
        return inside, view["dynamodb"]

    inside, after = asyncio.run(live())
    assert inside is not None and inside is not s3_client  # the view showed the opened client
    assert after is None and view["s3"] is s3_client  # and its closing; a passed-in client stays


# ------------------------------------------------------------------ Compute


def _where(tag: str) -> tuple[str, int]:
    return tag, threading.get_ident()


@pytest.mark.parametrize("mode", MODES)
def test_compute_runs_in_place_when_small_and_returns_its_result(mode: str) -> None:
    """Below OFFLOAD_MIN_BYTES both drivers call the function on the thread driving the op."""

    def op() -> Op[tuple[tuple[str, int], int]]:
        done = yield from compute(_where, "small", size=OFFLOAD_MIN_BYTES - 1)
        return done, threading.get_ident()

    (tag, ran_on), driving = run(mode, Clients(), op())
    assert tag == "small"
    assert ran_on == driving


@pytest.mark.parametrize("mode", MODES)
def test_large_compute_leaves_the_event_loop_in_async_only(mode: str) -> None:
    """From OFFLOAD_MIN_BYTES the async driver runs the work on an executor thread; sync stays in place."""

    def op() -> Op[tuple[tuple[str, int], int]]:
        done = yield from compute(_where, "large", size=OFFLOAD_MIN_BYTES)
        return done, threading.get_ident()

    (tag, ran_on), driving = run(mode, Clients(), op())
    assert tag == "large"
    if mode == "async":
        assert ran_on != driving
    else:
        assert ran_on == driving


def test_the_loop_serves_other_tasks_while_a_large_compute_runs() -> None:
    """The work waits for a signal that only another task on the loop can give.

    Run on the loop, it would block the one thread that could set the event
    and time out; off the loop, the other task runs and releases it.
    """
    released = threading.Event()

    def work() -> bool:
        return released.wait(timeout=10)

    def op() -> Op[bool]:
        return (yield from compute(work, size=10 * OFFLOAD_MIN_BYTES))

    async def main() -> bool:
        async def release() -> None:
            await asyncio.sleep(0.01)
            released.set()

        helper = asyncio.create_task(release())
        ok = await AsyncDriver(Clients()).run(op())
        await helper
        return ok

    t0 = time.perf_counter()
    assert asyncio.run(main()) is True
    assert time.perf_counter() - t0 < 5


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", [0, 10 * OFFLOAD_MIN_BYTES])
def test_a_compute_error_is_thrown_back_into_the_op(mode: str, size: int) -> None:
    """In place or on a thread, the op sees the function's own exception where it yielded."""

    def boom() -> None:
        raise CorruptPayloadError("bad payload")

    def op() -> Op[str]:
        try:
            yield from compute(boom, size=size)
        except CorruptPayloadError as exc:
            return f"handled: {exc}"
        return "not raised"

    assert run(mode, Clients(), op()) == "handled: bad payload"


def test_size_hint_counts_text_and_parts_and_stops_at_its_limit() -> None:
    from langchain_core.messages import AIMessage

    assert size_hint([]) == 0
    assert size_hint(["abc", b"de"]) == 5
    # Message content is reached through the model's fields.
    assert size_hint([[AIMessage(content="x" * 50_000)]]) >= OFFLOAD_MIN_BYTES
    # Many small parts count as large: each costs the serializer a call.
    assert size_hint([list(range(5_000))]) >= OFFLOAD_MIN_BYTES
    assert size_hint([{"k": [1, 2, 3]}]) < 200
    # A huge value is walked only until it is known to be large.
    huge = [["y" * 1000] * 1000] * 1000
    t0 = time.perf_counter()
    assert size_hint([huge]) >= OFFLOAD_MIN_BYTES
    assert time.perf_counter() - t0 < 0.05
    # Cycles end the walk too (the count only grows).
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    assert size_hint([cyclic]) >= OFFLOAD_MIN_BYTES


class _InFlight:
    """An async client whose calls stay on the wire a few milliseconds, counting how many overlap."""

    def __init__(self, tally: dict[str, int], service: str) -> None:
        self.tally, self.service = tally, service

    async def get_item(self, **kwargs: Any) -> dict[str, Any]:
        self.tally[self.service] += 1
        self.tally["now"] += 1
        self.tally["peak"] = max(self.tally["peak"], self.tally["now"])
        self.tally[f"peak_{self.service}"] = max(self.tally[f"peak_{self.service}"], self.tally[self.service])
        await asyncio.sleep(0.002)  # the driver admits one phase per loop turn: wire time, not turns
        self.tally[self.service] -= 1
        self.tally["now"] -= 1
        return {"Item": kwargs}


def _in_flight_peaks(max_in_flight: int | None, per_op: int = 6, ops: int = 4) -> dict[str, int]:
    """``ops`` concurrent operations, each a Gather of ``per_op`` DynamoDB and ``per_op`` S3 calls."""
    tally: dict[str, int] = {"dynamodb": 0, "s3": 0, "now": 0, "peak": 0, "peak_dynamodb": 0, "peak_s3": 0}
    clients = Clients(dynamodb=_InFlight(tally, "dynamodb"), s3=_InFlight(tally, "s3"))

    def op(i: int) -> Op[list[Any]]:
        calls = [
            Call(svc, "get_item", {"Key": f"{i}-{j}"}) for svc in ("dynamodb", "s3") for j in range(per_op)
        ]
        return (yield Gather(calls))

    async def main() -> None:
        driver = AsyncDriver(clients, max_concurrency=16, max_in_flight=max_in_flight)
        results = await asyncio.gather(*(driver.run(op(i)) for i in range(ops)))
        assert [len(r) for r in results] == [2 * per_op] * ops

    asyncio.run(main())
    return tally


def test_max_in_flight_bounds_requests_per_service_across_operations() -> None:
    bounded = _in_flight_peaks(3)
    assert (bounded["peak_dynamodb"], bounded["peak_s3"]) == (3, 3)
    unbounded = _in_flight_peaks(None)
    assert unbounded["peak_dynamodb"] > 3 and unbounded["peak_s3"] > 3


def test_max_in_flight_serves_successive_event_loops() -> None:
    """One driver, contended in two ``asyncio.run`` calls: each loop gets its own slots."""
    tally: dict[str, int] = {"dynamodb": 0, "now": 0, "peak": 0, "peak_dynamodb": 0}
    driver = AsyncDriver(Clients(dynamodb=_InFlight(tally, "dynamodb")), max_in_flight=2)

    def op(i: int) -> Op[Any]:
        return (yield Call("dynamodb", "get_item", {"Key": i}))

    async def burst() -> list[Any]:
        return list(await asyncio.gather(*(driver.run(op(i)) for i in range(6))))

    assert [r["Item"]["Key"] for r in asyncio.run(burst())] == list(range(6))
    assert [r["Item"]["Key"] for r in asyncio.run(burst())] == list(range(6))
    assert tally["peak_dynamodb"] == 2


@pytest.mark.parametrize("bad", [0, -1])
def test_max_in_flight_must_be_positive(bad: int) -> None:
    with pytest.raises(ValueError, match="max_in_flight"):
        AsyncDriver(Clients(), max_in_flight=bad)


# --------------------------------------------------------------- the turnstile


def _runs_between_ticks(tasks: int, passes: int) -> list[list[int]]:
    """``tasks`` tasks each pass the driver's turn ``passes`` times; the phases that ran in each loop iteration.

    A ticker task (a plain ``sleep(0)``) marks every iteration; each phase
    marks its task's number. The lists are what ran between two ticks.
    """
    from langgraph.checkpoint.dynamodb._engine.fairness import pass_turn

    marks: list[Any] = []

    async def task(i: int) -> None:
        for _ in range(passes):
            await pass_turn()
            marks.append(i)

    async def main() -> None:
        stop = False

        async def tick() -> None:
            while not stop:
                marks.append("tick")
                await asyncio.sleep(0)

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0)
        await asyncio.gather(*(task(i) for i in range(tasks)))
        stop = True
        await ticker

    asyncio.run(main())
    groups: list[list[int]] = [[]]
    for m in marks:
        if m == "tick":
            groups.append([])
        else:
            groups[-1].append(m)
    return [g for g in groups if g]


def test_tasks_that_pass_the_turn_go_on_one_per_loop_iteration_in_order() -> None:
    """Many answers at once must not run their next phases back to back: timers wait for each batch."""
    groups = _runs_between_ticks(tasks=20, passes=3)
    assert all(len(g) == 1 for g in groups), groups
    order = [g[0] for g in groups]
    assert sorted(order) == sorted(list(range(20)) * 3)
    assert order[:20] == list(range(20))  # first come, first served


def test_a_cancelled_task_waiting_for_its_turn_does_not_hold_up_the_others() -> None:
    from langgraph.checkpoint.dynamodb._engine.fairness import pass_turn

    async def main() -> list[str]:
        done: list[str] = []

        async def task(name: str) -> None:
            await pass_turn()
            done.append(name)

        first, second, third = (asyncio.create_task(task(n)) for n in ("first", "second", "third"))
        await asyncio.sleep(0)  # all three wait at the turnstile
        second.cancel()
        await asyncio.gather(first, third)
        assert second.cancelled()
        return done

    assert asyncio.run(main()) == ["first", "third"]


def test_the_turnstile_of_a_finished_loop_is_not_kept() -> None:
    """One turnstile per loop, held weakly: an ``asyncio.run`` per call (a Lambda invocation) must not pile up loops."""
    import gc
    import weakref

    from langgraph.checkpoint.dynamodb._engine.fairness import pass_turn, turnstiles

    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def main() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        waiting = [asyncio.create_task(pass_turn()) for _ in range(5)]
        await asyncio.gather(*waiting[:2])
        # three still wait when asyncio.run cancels them at shutdown

    for _ in range(3):
        asyncio.run(main())
    gc.collect()
    assert [r() for r in loops] == [None, None, None]
    assert not any(r() in turnstiles for r in loops)


def test_the_in_flight_slots_of_a_finished_loop_are_not_kept() -> None:
    """A driver contended on several loops (one saver, an ``asyncio.run`` each) must not keep them alive."""
    import gc
    import weakref

    tally: dict[str, int] = {"dynamodb": 0, "s3": 0, "now": 0, "peak": 0, "peak_dynamodb": 0, "peak_s3": 0}
    driver = AsyncDriver(Clients(dynamodb=_InFlight(tally, "dynamodb")), max_in_flight=1)
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    def op() -> Op[list[Any]]:
        return (yield Gather([Call("dynamodb", "get_item", {"Key": str(i)}) for i in range(4)]))

    async def main() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        assert len(await driver.run(op())) == 4

    for _ in range(3):
        asyncio.run(main())
    gc.collect()
    assert tally["peak_dynamodb"] == 1  # they did wait for one another
    assert [r() for r in loops] == [None, None, None]


def test_an_in_flight_slot_handed_to_a_cancelled_waiter_goes_to_the_next() -> None:
    from langgraph.checkpoint.dynamodb._engine.fairness import Slots

    async def main() -> list[str]:
        slots = Slots(1)
        order: list[str] = []
        waiters: dict[str, asyncio.Task[None]] = {}

        async def user(name: str) -> None:
            async with slots:
                order.append(name)
                await asyncio.sleep(0)
            if name == "first":
                # Leaving handed the slot to "second", which has not run yet.
                waiters["second"].cancel()

        first = asyncio.create_task(user("first"))
        await asyncio.sleep(0)  # "first" holds the slot
        waiters["second"] = asyncio.create_task(user("second"))
        waiters["third"] = asyncio.create_task(user("third"))
        await asyncio.wait_for(asyncio.gather(first, waiters["third"]), timeout=5)
        assert waiters["second"].cancelled()
        return order

    assert asyncio.run(main()) == ["first", "third"]
