"""The driver loops: run a sans-I/O operation (see ``ops``) with real clients.

Rule: this module is the only place that turns requests into I/O. It has
one loop for blocking clients (boto3, :class:`SyncDriver`) and one for
asyncio clients (aiobotocore, :class:`AsyncDriver`); the savers and the
lock both run their operations here. It holds no logic of the operations:
a driver only sends each request, hands the response (or the exception)
back to the operation, streams what the operation emits, bounds
``get_object`` bodies by the call's ``max_bytes``, and runs the CPU work an
operation yields (``Compute``): in place, or, in the async driver, off the
event loop when it is large.

How the async driver shares the event loop (passing the turn between a
request's CPU phases, the in-flight bound) is in ``fairness``; the
dedicated thread and loop the async saver can drive on is ``io_thread``.

A driver reaches its clients through a small holder (:class:`ClientHolder`:
a mapping of service name to client, read at every call so that clients
opened or closed later are seen; an async holder can also open missing
clients, :class:`AsyncClientHolder`). A saver is such a holder.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, Generic, Protocol, TypeVar, cast

from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb._engine import ops
from langgraph.checkpoint.dynamodb._engine.budget import budgeted
from langgraph.checkpoint.dynamodb._engine.fairness import Slots, pass_turn
from langgraph.checkpoint.dynamodb._engine.ops import (
    Call,
    Compute,
    Emit,
    Gather,
    Op,
    Sleep,
    Wait,
    body_budget,
    checked_body,
)
from langgraph.checkpoint.dynamodb._engine.pacing import ThrottlePacer
from langgraph.checkpoint.dynamodb.errors import PayloadLimitError

__all__ = [
    "AsyncClientHolder",
    "AsyncDriver",
    "ClientHolder",
    "Clients",
    "ErrorTranslator",
    "SyncDriver",
]

R = TypeVar("R")
H = TypeVar("H", bound="ClientHolder")


class ClientHolder(Protocol):
    """Where a driver finds its clients: service name (``"dynamodb"``, ``"s3"``) -> client or ``None``."""

    @property
    def clients(self) -> Mapping[str, Any]: ...


class AsyncClientHolder(ClientHolder, Protocol):
    """A holder that can open the clients it lacks (the async saver opens them on first use)."""

    async def ensure_clients(self) -> None: ...


class Clients:
    """A holder of ready-made clients, for running operations without a saver.

    Example:
        >>> import boto3
        >>> ddb_client = boto3.client("dynamodb", region_name="us-east-1")
        >>> driver = SyncDriver(Clients(dynamodb=ddb_client))
    """

    def __init__(self, **clients: Any) -> None:
        self._clients = clients

    @property
    def clients(self) -> Mapping[str, Any]:
        return self._clients

    async def ensure_clients(self) -> None:
        """Nothing to open: the clients were given."""


#: Wraps an operation so that the errors escaping it are reported better
#: (``aws.translate_errors``); called with the operation and the holder.
ErrorTranslator = Callable[[Op[Any], Any], Op[Any]]


def _capture(op: Op[R], out: list[R]) -> Op[None]:
    """``op``, storing its return value in ``out`` (a driver's ``run`` on top of its ``iter``)."""
    out.append((yield from op))


#: What :func:`_advance` returns when the operation has finished.
_DONE: Any = object()


def _advance(op: Op[Any], resp: Any, exc: BaseException | None) -> Any:
    """The operation's next request, given the last response or error (``_DONE`` at its end)."""
    try:
        return op.throw(exc) if exc is not None else op.send(resp)
    except StopIteration:
        return _DONE


def _emitted(value: Any) -> TypeError:
    return TypeError(f"operation emitted {value!r}; drive it with iter(), not run()")


def _in_context(fn: Callable[..., R]) -> Callable[..., R]:
    """``fn`` run in a copy of the caller's context: a pool thread has its own, and the budget must follow."""
    return functools.partial(contextvars.copy_context().run, fn)


def _no_client(service: str) -> RuntimeError:
    return RuntimeError(f"no {service} client configured")


def _unexpected(req: Any) -> TypeError:
    return TypeError(f"unexpected request {req!r}")


def _read_up_to(stream: Any, budget: int) -> bytes:
    """A body, whole (``budget < 0``) or its first ``budget`` bytes (reads may return less)."""
    if budget < 0:
        return cast(bytes, stream.read())
    parts: list[bytes] = []
    got = 0
    while got < budget:
        chunk = stream.read(budget - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


async def _aread_up_to(stream: Any, budget: int) -> bytes:
    """As :func:`_read_up_to`, awaiting each read.

    aiohttp's ``read(n)`` returns what has arrived, up to ``n`` bytes: a
    bounded read loops until it has ``budget`` bytes or the body ends.
    """
    if budget < 0:
        return cast(bytes, await stream.read())
    parts: list[bytes] = []
    got = 0
    while got < budget:
        chunk = await stream.read(budget - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def _settled(req: Wait) -> None:
    """Await ``req.ticket``, which another thread may settle (the loop is woken thread-safely)."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody is waiting
            loop.call_soon_threadsafe(_resolve, fut)

    if req.ticket.when_settled(wake):
        await fut


class _Driver(Generic[H]):
    """What both loops share: the holder, the concurrency bound, throttle patience, error translation."""

    def __init__(
        self,
        holder: H,
        *,
        max_concurrency: int = 16,
        translate: ErrorTranslator | None = None,
        patience: float | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        #: Where the clients are looked up, at every call.
        self.holder = holder
        #: Most requests of one ``Gather`` in flight at once.
        self.max_concurrency = max_concurrency
        #: Most seconds one request waits out throttles (``None``: ``pacing.PATIENCE_SECONDS``).
        self.patience = patience
        self._translate = translate

    def _wrap(self, op: Op[Any]) -> Op[Any]:
        return op if self._translate is None else self._translate(op, self.holder)


class SyncDriver(_Driver[ClientHolder]):
    """Runs operations with blocking (boto3) clients; a ``Gather`` runs on a thread pool.

    With ``keep_pool`` (a saver's driver) the pool is created on the first
    ``Gather`` of more than one call and kept until :meth:`close` (a later
    ``Gather`` makes a new one). Without it (a driver made for a few calls,
    which nobody closes) each such ``Gather`` runs on a pool of its own,
    joined before it returns, so no thread outlives the request.

    Example:
        >>> from langgraph.checkpoint.dynamodb._engine.ops import ddb
        >>> class Fake:
        ...     def describe_table(self, **kw): return {"Table": kw}
        >>> def op():
        ...     resp = yield ddb("describe_table", TableName="t")
        ...     return resp["Table"]["TableName"]
        >>> SyncDriver(Clients(dynamodb=Fake())).run(op())
        't'
    """

    def __init__(
        self,
        holder: ClientHolder,
        *,
        max_concurrency: int = 16,
        translate: ErrorTranslator | None = None,
        thread_name_prefix: str = "ddb-saver",
        keep_pool: bool = True,
        patience: float | None = None,
    ) -> None:
        super().__init__(holder, max_concurrency=max_concurrency, translate=translate, patience=patience)
        self._thread_name_prefix = thread_name_prefix
        self._keep_pool = keep_pool
        self._pool: Executor | None = None
        self._pool_lock = threading.Lock()

    @property
    def pool(self) -> Executor | None:
        """The thread pool concurrent calls run on; None until the first ``Gather`` of several."""
        return self._pool

    def call(self, call: Call) -> Any:
        """Send one call, again while it is throttled (``pacing``), within the capacity budget (``budget``).

        A ``get_object`` body is read into ``bytes``.
        """
        call, budget = budgeted(call)
        pacer = ThrottlePacer(self.patience)
        while True:
            if budget is not None and (wait := budget.delay(call.method)) > 0:
                time.sleep(wait)
            try:
                resp = self._call_once(call)
            except ClientError as exc:
                delay = pacer.next_delay(exc) if call.paced else None
                if delay is None:
                    raise
                if budget is not None:
                    budget.throttled(call.method)
                time.sleep(delay)
                continue
            if budget is not None and (wait := budget.charge(call.method, resp)) > 0:
                time.sleep(wait)
            return resp

    def _call_once(self, call: Call) -> Any:
        """Send one call; a ``get_object`` body is read (within ``max_bytes``) into ``bytes``."""
        client = self.holder.clients.get(call.service)
        if client is None:
            raise _no_client(call.service)
        resp = getattr(client, call.method)(**call.kwargs)
        if call.method == "get_object":
            stream = resp["Body"]
            try:
                budget = body_budget(call, resp)
            except PayloadLimitError:
                stream.close()  # drop the connection rather than drain an oversized body
                raise
            resp = {**resp, "Body": checked_body(call, _read_up_to(stream, budget))}
        return resp

    def gather(self, req: Gather) -> list[Any]:
        """Send several calls at once; responses (or, with ``return_exceptions``, errors) in order."""
        if not req.calls:
            return []
        if len(req.calls) == 1:  # no thread hop for the common single call
            try:
                return [self.call(req.calls[0])]
            except Exception as exc:
                if req.return_exceptions:
                    return [exc]
                raise
        if not self._keep_pool:
            workers = min(self.max_concurrency, len(req.calls))
            with ThreadPoolExecutor(workers, thread_name_prefix=self._thread_name_prefix) as own:
                return self._collect(req, [own.submit(_in_context(self.call), c) for c in req.calls])
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self.max_concurrency, thread_name_prefix=self._thread_name_prefix
                )
            pool = self._pool
        return self._collect(req, [pool.submit(_in_context(self.call), c) for c in req.calls])

    @staticmethod
    def _collect(req: Gather, futures: list[Future[Any]]) -> list[Any]:
        out: list[Any] = []
        for f in futures:
            error = f.exception()
            if error is not None and not req.return_exceptions:
                raise error
            out.append(error if error is not None else f.result())
        return out

    def step(self, req: Any) -> Any:
        """Perform one request other than ``Emit``."""
        if isinstance(req, Call):
            return self.call(req)
        if isinstance(req, Gather):
            return self.gather(req)
        if isinstance(req, Sleep):
            time.sleep(req.seconds)
            return None
        if isinstance(req, Wait):
            woken = threading.Event()
            if req.ticket.when_settled(woken.set):
                woken.wait()
            return None
        raise _unexpected(req)

    def iter(self, op: Op[Any]) -> Iterator[Any]:
        """Drive an operation, yielding what it emits (a streaming operation such as ``list``)."""
        op, resp, exc = self._wrap(op), None, None
        while (req := _advance(op, resp, exc)) is not _DONE:
            resp, exc = None, None
            if isinstance(req, Emit):
                yield req.value
                continue
            try:
                resp = self.compute(req) if isinstance(req, Compute) else self.step(req)
            except Exception as e:  # handed to the operation, which may handle it
                exc = e

    def compute(self, req: Compute) -> Any:
        """Run CPU work in place: a blocking saver's caller is waiting for it anyway."""
        return req.fn(*req.args)

    def run(self, op: Op[R]) -> R:
        """Drive an operation that emits nothing and return its result."""
        out: list[R] = []
        for value in self.iter(_capture(op, out)):
            raise _emitted(value)
        return out[0]

    def close(self) -> None:
        """Shut the thread pool down (requests in flight finish)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)


class AsyncDriver(_Driver[AsyncClientHolder]):
    """Runs operations with asyncio (aiobotocore) clients on the running event loop.

    A missing client is opened through the holder's ``ensure_clients`` at
    its first use. A ``Gather`` runs its calls as tasks, at most
    ``max_concurrency`` at once. With ``max_in_flight``, at most that many
    requests per service are on the wire at once across all the operations
    the driver runs; the others wait before they are built and signed (see
    :meth:`call`). A large ``Compute`` runs in the loop's default executor
    (see :meth:`compute`).

    Example:
        >>> import asyncio
        >>> from langgraph.checkpoint.dynamodb._engine.ops import ddb
        >>> class Fake:
        ...     async def describe_table(self, **kw): return {"Table": kw}
        >>> def op():
        ...     resp = yield ddb("describe_table", TableName="t")
        ...     return resp["Table"]["TableName"]
        >>> asyncio.run(AsyncDriver(Clients(dynamodb=Fake())).run(op()))
        't'
    """

    def __init__(
        self,
        holder: AsyncClientHolder,
        *,
        max_concurrency: int = 16,
        max_in_flight: int | None = None,
        translate: ErrorTranslator | None = None,
        patience: float | None = None,
    ) -> None:
        super().__init__(holder, max_concurrency=max_concurrency, translate=translate, patience=patience)
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError("max_in_flight must be >= 1 (or None: no bound)")
        #: Most requests per service on the wire at once (``None``: no bound).
        self.max_in_flight = max_in_flight
        # One set of slots per loop and service: a saver may serve several
        # loops in turn, and a waiter's future may only be settled from its
        # own loop. Weakly keyed, and Slots never refers to its loop, so a
        # finished loop is not kept.
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Slots]] = (
            weakref.WeakKeyDictionary()
        )

    def _slot(self, service: str) -> contextlib.AbstractAsyncContextManager[Any]:
        """The bound a request of ``service`` waits on before it is built (none without ``max_in_flight``)."""
        if self.max_in_flight is None:
            return contextlib.nullcontext()
        by_service = self._slots.setdefault(asyncio.get_running_loop(), {})
        slot = by_service.get(service)
        if slot is None:
            slot = by_service[service] = Slots(self.max_in_flight)
        return slot

    async def call(self, call: Call) -> Any:
        """Send one call, again while it is throttled (``pacing``), within the capacity budget (``budget``).

        See :meth:`_call_once`.
        """
        call, budget = budgeted(call)
        pacer = ThrottlePacer(self.patience)
        while True:
            if budget is not None and (wait := budget.delay(call.method)) > 0:
                await asyncio.sleep(wait)
            try:
                resp = await self._call_once(call)
            except ClientError as exc:
                delay = pacer.next_delay(exc) if call.paced else None
                if delay is None:
                    raise
                if budget is not None:
                    budget.throttled(call.method)
                await asyncio.sleep(delay)
                continue
            if budget is not None and (wait := budget.charge(call.method, resp)) > 0:
                await asyncio.sleep(wait)
            return resp

    async def _call_once(self, call: Call) -> Any:
        """Send one call; a ``get_object`` body is read (within ``max_bytes``) into ``bytes``.

        With ``max_in_flight`` the call first waits for a free slot of its
        service. It waits *before* botocore builds and signs the request:
        requests in flight are what can answer at the same moment, and each
        answer costs the loop a millisecond or more of parsing, decoding and
        the caller's next step; bounding them bounds those bursts (the p99
        loop lag in the `async` benchmark). It is a trade: a tighter bound
        lowers the lag and the throughput with it; the default (8) is the
        one that kept the lag of 5 at more throughput (docs/async.md, "How it
        shares the loop").
        """
        client = self.holder.clients.get(call.service)
        if client is None:
            await self.holder.ensure_clients()
            client = self.holder.clients.get(call.service)
            if client is None:
                raise _no_client(call.service)
        # Hand the loop back between the CPU phases of a request: the
        # operation's own work before it (packing), botocore's (building,
        # signing; after the response, parsing), and the operation's after
        # it (decoding). Each is about a millisecond; run back to back for
        # many concurrent threads they queue ahead of every other callback
        # on the loop (p99 loop lag about 20% lower in the `async` benchmark).
        await pass_turn()
        async with self._slot(call.service):
            resp = await getattr(client, call.method)(**call.kwargs)
            if call.method == "get_object":
                async with resp["Body"] as stream:
                    # Leaving the block releases the connection, read or not.
                    body = await _aread_up_to(stream, body_budget(call, resp))
                resp = {**resp, "Body": checked_body(call, body)}
        await pass_turn()
        return resp

    async def gather(self, req: Gather) -> list[Any]:
        """Send several calls at once; responses (or, with ``return_exceptions``, errors) in order."""
        sem = asyncio.Semaphore(self.max_concurrency)

        async def one(call: Call) -> Any:
            async with sem:
                return await self.call(call)

        return list(
            await asyncio.gather(*(one(c) for c in req.calls), return_exceptions=req.return_exceptions)
        )

    async def step(self, req: Any) -> Any:
        """Perform one request other than ``Emit``."""
        if isinstance(req, Call):
            return await self.call(req)
        if isinstance(req, Gather):
            return await self.gather(req)
        if isinstance(req, Sleep):
            await asyncio.sleep(req.seconds)
            return None
        if isinstance(req, Wait):
            await _settled(req)
            return None
        raise _unexpected(req)

    async def iter(self, op: Op[Any]) -> AsyncIterator[Any]:
        """Drive an operation, yielding what it emits (a streaming operation such as ``alist``)."""
        op, resp, exc = self._wrap(op), None, None
        # The operation's first step (packing a checkpoint, building a
        # request) runs apart from the caller's: awaited inline, it would
        # lengthen the caller's callback (LangGraph's step) by its own work.
        await pass_turn()
        while (req := _advance(op, resp, exc)) is not _DONE:
            resp, exc = None, None
            if isinstance(req, Emit):
                yield req.value
                continue
            try:
                resp = await (self.compute(req) if isinstance(req, Compute) else self.step(req))
            except Exception as e:  # handed to the operation, which may handle it
                exc = e

    async def compute(self, req: Compute) -> Any:
        """Run CPU work: in the loop's default executor from ``OFFLOAD_MIN_BYTES``, else in place.

        While a large payload is packed or unpacked in a thread, the loop
        serves other tasks (zlib and zstd release the GIL while they work;
        Python code such as serialization hooks yields it at least every
        switch interval, 5 ms). A small one runs in place: the hop would
        cost the loop more than the work. The default executor is bounded
        (``min(32, CPUs + 4)`` threads) and shut down by ``asyncio.run``.
        """
        if req.size < ops.OFFLOAD_MIN_BYTES:
            return req.fn(*req.args)
        return await asyncio.get_running_loop().run_in_executor(None, req.fn, *req.args)

    async def run(self, op: Op[R]) -> R:
        """Drive an operation that emits nothing and return its result."""
        out: list[R] = []
        async for value in self.iter(_capture(op, out)):
            raise _emitted(value)
        await pass_turn()  # the caller's continuation runs apart from the operation's last step
        return out[0]
