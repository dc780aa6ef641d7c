"""The driver loops: run a sans-I/O operation (see ``_ops``) with real clients.

Rule: this module is the only place that turns requests into I/O. It has
one loop for blocking clients (boto3, :class:`SyncDriver`) and one for
asyncio clients (aiobotocore, :class:`AsyncDriver`); the savers and the
lock both run their operations here. It holds no logic of the operations:
a driver only sends each request, hands the response (or the exception)
back to the operation, streams what the operation emits, bounds
``get_object`` bodies by the call's ``max_bytes``, and runs the CPU work an
operation yields (``Compute``): in place, or, in the async driver, off the
event loop when it is large.

The async saver can also drive each whole operation on an event loop of
its own, in a dedicated thread (:class:`IOThread`): the caller's loop then
only awaits the result, while requests, responses and packing run there.

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
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, Generic, Protocol, TypeVar, cast

from langgraph.checkpoint.dynamodb import _ops
from langgraph.checkpoint.dynamodb._ops import (
    Call,
    Compute,
    Emit,
    Gather,
    Op,
    Sleep,
    body_budget,
    checked_body,
)
from langgraph.checkpoint.dynamodb.errors import PayloadLimitError

__all__ = [
    "AsyncClientHolder",
    "AsyncDriver",
    "ClientHolder",
    "Clients",
    "ErrorTranslator",
    "IOThread",
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
#: (``_aws.translate_errors``); called with the operation and the holder.
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


class _Driver(Generic[H]):
    """What both loops share: the holder, the concurrency bound, error translation."""

    def __init__(
        self, holder: H, *, max_concurrency: int = 16, translate: ErrorTranslator | None = None
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        #: Where the clients are looked up, at every call.
        self.holder = holder
        #: Most requests of one ``Gather`` in flight at once.
        self.max_concurrency = max_concurrency
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
        >>> from langgraph.checkpoint.dynamodb._ops import ddb
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
    ) -> None:
        super().__init__(holder, max_concurrency=max_concurrency, translate=translate)
        self._thread_name_prefix = thread_name_prefix
        self._keep_pool = keep_pool
        self._pool: Executor | None = None
        self._pool_lock = threading.Lock()

    def call(self, call: Call) -> Any:
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
                return self._collect(req, [own.submit(self.call, c) for c in req.calls])
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self.max_concurrency, thread_name_prefix=self._thread_name_prefix
                )
            pool = self._pool
        return self._collect(req, [pool.submit(self.call, c) for c in req.calls])

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


#: The async saver's default ``max_in_flight``: requests per service on the
#: wire at once. Chosen by measurement (the `async` benchmark: 100 threads on
#: one loop): with a request's CPU phases run as separate callbacks admitted
#: one per loop iteration (:class:`_Turnstile`), 8 kept the p99 loop lag of 5
#: and gave about 7% more throughput; without a bound the lag grew by a fifth.
#: 8 requests of 5 ms each allow 1,600 requests a second, more than one
#: process drives through aiobotocore.
DEFAULT_MAX_IN_FLIGHT = 8


def _wake_first(waiting: deque[asyncio.Future[None]]) -> bool:
    """Settle the longest waiter still waiting (cancelled ones are dropped); whether there was one."""
    while waiting:
        fut = waiting.popleft()
        if not fut.done():
            fut.set_result(None)
            return True
    return False


class _Turnstile:
    """Admits the tasks waiting on it one per event-loop iteration, first come first served.

    Why: a task that passes the turn with a bare yield (``asyncio.sleep(0)``)
    runs again in the loop's next iteration, together with every other task
    that did the same: when many requests answer at once, all their next
    phases (parsing, decoding, the graph's next step) run back to back in
    one iteration, and a timer due meanwhile (another task's ``sleep``, a
    heartbeat) waits for all of them. Through the turnstile each iteration
    runs at most one of those phases, and the loop checks its timers and
    sockets between them. Measured in the `async` benchmark: p99 loop lag
    about a fifth lower at the same throughput, and the in-flight bound
    matters much less (without one, 5.3 ms instead of 10).
    """

    # No reference to its loop: the registry below holds turnstiles weakly
    # keyed by loop, and a value that referred to its key would keep every
    # loop alive. Waiting futures do refer to it, but asyncio.run's shutdown
    # cancels their tasks and the pending _admit drains them.
    __slots__ = ("_pending", "_waiting")

    def __init__(self) -> None:
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._pending = False

    def wait(self) -> asyncio.Future[None]:
        """A future set when this waiter's turn comes (at least one iteration from now)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._waiting.append(fut)
        if not self._pending:
            self._pending = True
            loop.call_soon(self._admit)
        return fut

    def _admit(self) -> None:
        _wake_first(self._waiting)  # one waiter per call
        if self._waiting:
            asyncio.get_running_loop().call_soon(self._admit)
        else:
            self._pending = False


class _Slots:
    """A semaphore for :meth:`AsyncDriver._slot` that, unlike ``asyncio.Semaphore``, never refers to its loop.

    ``asyncio.Semaphore`` binds the loop it first waits on, and the driver
    keeps its semaphores weakly keyed by loop: a value that referred to its
    key would keep every loop the driver was contended on alive. A freed
    slot goes straight to the longest waiter (first come, first served); a
    waiter cancelled after it was handed one passes it on.
    """

    __slots__ = ("_free", "_waiting")

    def __init__(self, size: int) -> None:
        self._free = size
        self._waiting: deque[asyncio.Future[None]] = deque()

    async def __aenter__(self) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self._release()  # handed a slot, then cancelled before using it
            raise

    async def __aexit__(self, *_: object) -> None:
        self._release()

    def _release(self) -> None:
        if not _wake_first(self._waiting):
            self._free += 1


#: One turnstile per event loop, shared by every saver and driver on it.
_turnstiles: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Turnstile] = weakref.WeakKeyDictionary()


async def _pass_turn() -> None:
    """Let the event loop run its other callbacks and timers before this task goes on (see :class:`_Turnstile`)."""
    loop = asyncio.get_running_loop()
    gate = _turnstiles.get(loop)
    if gate is None:
        gate = _turnstiles[loop] = _Turnstile()
    await gate.wait()


async def _pass_turn_hook(**_: Any) -> None:
    """A botocore event handler that hands the loop back (see :func:`split_request_phases`)."""
    await _pass_turn()


#: The aiobotocore events after which a request's next CPU phase runs as a
#: callback of its own: ``before-call`` comes after the parameters are
#: serialized and the endpoint resolved, ``before-send`` after the request is
#: signed (and its user agent built), just before it goes on the wire.
_PHASE_EVENTS = ("before-call", "before-send")


def split_request_phases(client: Any) -> None:
    """Make an aiobotocore client hand the loop back between a request's CPU phases.

    aiobotocore builds, serializes, signs and sends a request in one
    coroutine that does not suspend until the socket does: about a
    millisecond of CPU in one callback, which every other task on the loop
    waits behind. A handler that passes the turn at ``before-call`` and at
    ``before-send`` cuts it into three (botocore awaits coroutine handlers
    and ignores their ``None``). Registered with a fixed ``unique_id``, so a
    second call adds nothing. The savers do it only on clients they open: a
    client the caller passed keeps its own handlers.

    Example:
        >>> class Events:
        ...     def __init__(self): self.seen = {}
        ...     def register(self, event, handler, unique_id=None): self.seen[unique_id] = event
        >>> class Client:
        ...     class meta: events = Events()
        >>> split_request_phases(Client()); split_request_phases(Client())
        >>> sorted(Client.meta.events.seen.values())
        ['before-call', 'before-send']
    """
    events = client.meta.events
    for event in _PHASE_EVENTS:
        events.register(event, _pass_turn_hook, unique_id=f"langgraph-dynamodb-pass-turn-{event}")


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
        >>> from langgraph.checkpoint.dynamodb._ops import ddb
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
    ) -> None:
        super().__init__(holder, max_concurrency=max_concurrency, translate=translate)
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError("max_in_flight must be >= 1 (or None: no bound)")
        #: Most requests per service on the wire at once (``None``: no bound).
        self.max_in_flight = max_in_flight
        # One set of slots per loop and service: a saver may serve several
        # loops in turn, and a waiter's future may only be settled from its
        # own loop. Weakly keyed, and _Slots never refers to its loop, so a
        # finished loop is not kept.
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Slots]] = (
            weakref.WeakKeyDictionary()
        )

    def _slot(self, service: str) -> contextlib.AbstractAsyncContextManager[Any]:
        """The bound a request of ``service`` waits on before it is built (none without ``max_in_flight``)."""
        if self.max_in_flight is None:
            return contextlib.nullcontext()
        by_service = self._slots.setdefault(asyncio.get_running_loop(), {})
        slot = by_service.get(service)
        if slot is None:
            slot = by_service[service] = _Slots(self.max_in_flight)
        return slot

    async def call(self, call: Call) -> Any:
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
        await _pass_turn()
        async with self._slot(call.service):
            resp = await getattr(client, call.method)(**call.kwargs)
            if call.method == "get_object":
                async with resp["Body"] as stream:
                    # Leaving the block releases the connection, read or not.
                    body = await _aread_up_to(stream, body_budget(call, resp))
                resp = {**resp, "Body": checked_body(call, body)}
        await _pass_turn()
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
        raise _unexpected(req)

    async def iter(self, op: Op[Any]) -> AsyncIterator[Any]:
        """Drive an operation, yielding what it emits (a streaming operation such as ``alist``)."""
        op, resp, exc = self._wrap(op), None, None
        # The operation's first step (packing a checkpoint, building a
        # request) runs apart from the caller's: awaited inline, it would
        # lengthen the caller's callback (LangGraph's step) by its own work.
        await _pass_turn()
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
        if req.size < _ops.OFFLOAD_MIN_BYTES:
            return req.fn(*req.args)
        return await asyncio.get_running_loop().run_in_executor(None, req.fn, *req.args)

    async def run(self, op: Op[R]) -> R:
        """Drive an operation that emits nothing and return its result."""
        out: list[R] = []
        async for value in self.iter(_capture(op, out)):
            raise _emitted(value)
        await _pass_turn()  # the caller's continuation runs apart from the operation's last step
        return out[0]


class _Job:
    """A coroutine running as a task on an :class:`IOThread`'s loop, seen from other threads."""

    __slots__ = ("_cancelled", "_io", "_task", "future")

    def __init__(self, io: IOThread) -> None:
        #: Settled with the task's result or exception (for callers without a loop).
        self.future: Future[Any] = Future()
        self._io = io
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False

    def _start(
        self,
        coro: Coroutine[Any, Any, Any],
        context: contextvars.Context,
        done: Callable[[asyncio.Task[Any]], None] | None,
    ) -> None:
        """On the I/O loop: run ``coro`` as a task (or drop it if cancelled already)."""
        if self._cancelled or not self.future.set_running_or_notify_cancel():
            coro.close()
            self.future.cancel()
            return
        self._task = self._io.loop.create_task(coro, context=context)
        self._task.add_done_callback(done or self._settle)

    def _settle(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            self.future.set_exception(asyncio.CancelledError())
        elif (exc := task.exception()) is not None:
            self.future.set_exception(exc)
        else:
            self.future.set_result(task.result())

    def cancel(self) -> None:
        """Cancel the task, from any thread (a no-op once it has finished or its loop has stopped)."""

        def cancel_task() -> None:
            self._cancelled = True
            if self._task is not None:
                self._task.cancel()

        with contextlib.suppress(RuntimeError):  # a stopped loop: nothing runs there any more
            self._io.post(cancel_task)


class _Inbox:
    """Callbacks for one event loop from other threads, with one wake-up per batch.

    ``loop.call_soon_threadsafe`` writes to the loop's wake-up pipe at every
    call. Each such write or read is a system call, during which the thread
    gives up the GIL and then waits to get it back, up to a switch interval
    (5 ms) while another thread runs Python code: on a loop shared by 100
    threads those waits are the event-loop lag. Here a callback is queued,
    and the loop is woken only if no wake-up is pending yet, so a burst of
    operations (submitted by the caller's loop, or finished on the I/O loop)
    costs one write and one read, not one each.
    """

    __slots__ = ("_armed", "_items", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._items: deque[Callable[[], None]] = deque()
        self._armed = False

    def post(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the loop soon, from any thread; ``RuntimeError`` if the loop is closed."""
        # Queue first, then look at the flag; the drain clears the flag
        # before it empties the queue: whatever the interleaving, a callback
        # is either taken by a pending drain or schedules one itself.
        self._items.append(fn)
        if not self._armed:
            self._armed = True
            try:
                self.loop.call_soon_threadsafe(self._drain)
            except RuntimeError:
                self._armed = False
                raise

    def _drain(self) -> None:
        self._armed = False
        items = self._items
        while items:
            items.popleft()()


def _copy_outcome(task: asyncio.Task[Any], fut: asyncio.Future[Any]) -> None:
    """On the caller's loop: settle ``fut`` as ``task`` ended (unless the caller gave up on it)."""
    if fut.done():
        return
    if task.cancelled():
        fut.cancel()
    elif (exc := task.exception()) is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(task.result())


#: What an :class:`IOThread` stream hands over: ("value", v), ("error", exc) or ("end", None).
_Item = tuple[str, Any]


class IOThread:
    """An event loop running in a dedicated daemon thread, which callers on other loops await.

    The async saver's "I/O thread" mode (``AsyncDynamoDBSaver(io_thread=True)``)
    drives each whole operation here, with clients opened on this loop: the
    caller's loop only pays for the hop (submitting the coroutine and being
    woken with its result, under 0.1 ms), not for aiobotocore's
    per-request work (serializing, signing, parsing responses), which is
    most of a saver's share of a busy loop. Coroutines run in the caller's
    ``contextvars`` context (so an OpenTelemetry span started on the I/O
    loop has the caller's span as parent); cancelling the awaiting task
    cancels the coroutine here; errors come back unchanged. Wake-ups in
    both directions are batched (:class:`_Inbox`).

    Example:
        >>> import asyncio
        >>> io = IOThread()
        >>> async def where() -> str:
        ...     return threading.current_thread().name
        >>> asyncio.run(io.run(where()))
        'ddb-saver-io'
        >>> io.stop()
    """

    def __init__(self, name: str = "ddb-saver-io") -> None:
        self.loop = asyncio.new_event_loop()
        self._inbox = _Inbox(self.loop)
        #: Per caller loop, where finished operations are handed back.
        self._outboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Inbox] = (
            weakref.WeakKeyDictionary()
        )
        self._outbox_lock = threading.Lock()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        try:
            self.loop.run_forever()
        finally:
            # As asyncio.run ends a loop: what is still running is cancelled
            # and awaited, then the loop's executor (large packing) joined.
            tasks = asyncio.all_tasks(self.loop)
            for task in tasks:
                task.cancel()
            if tasks:
                self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.run_until_complete(self.loop.shutdown_default_executor())
            self.loop.close()

    def is_current(self) -> bool:
        """Whether the calling thread is this one (then run coroutines directly, never hop)."""
        return threading.get_ident() == self.thread.ident

    @property
    def alive(self) -> bool:
        return self.thread.is_alive() and not self.loop.is_closed()

    def post(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on this loop soon, from any thread (``RuntimeError`` once it has stopped)."""
        self._inbox.post(fn)

    def _outbox(self, loop: asyncio.AbstractEventLoop) -> _Inbox:
        box = self._outboxes.get(loop)
        if box is None:
            with self._outbox_lock:
                box = self._outboxes.setdefault(loop, _Inbox(loop))
        return box

    def submit(
        self,
        coro: Coroutine[Any, Any, R],
        *,
        done: Callable[[asyncio.Task[Any]], None] | None = None,
    ) -> _Job:
        """Start ``coro`` on this loop in a copy of the caller's context; ``done(task)`` runs there at its end."""
        job = _Job(self)
        ctx = contextvars.copy_context()
        try:
            self.post(functools.partial(job._start, coro, ctx, done))
        except RuntimeError:
            coro.close()
            raise RuntimeError("the saver's I/O thread has stopped") from None
        return job

    async def run(self, coro: Coroutine[Any, Any, R]) -> R:
        """Await ``coro`` run on this loop, from another event loop; cancelling the caller cancels it."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[R] = loop.create_future()
        outbox = self._outbox(loop)

        def done(task: asyncio.Task[Any]) -> None:  # on this loop: hand the outcome back
            with contextlib.suppress(RuntimeError):  # the caller's loop has closed: nobody waits
                outbox.post(functools.partial(_copy_outcome, task, fut))

        job = self.submit(coro, done=done)
        try:
            return await fut
        except BaseException:
            job.cancel()  # cancelled or interrupted: the operation must not run on unobserved
            raise

    def run_blocking(self, coro: Coroutine[Any, Any, R]) -> R:
        """``coro`` run on this loop, waited for from a thread that runs no event loop."""
        job = self.submit(coro)
        try:
            return cast(R, job.future.result())
        except BaseException:
            job.cancel()
            raise

    async def stream(self, agen: AsyncIterator[Any], buffer: int = 64) -> AsyncIterator[Any]:
        """Iterate ``agen`` on this loop, from another event loop.

        A producer task on this loop reads ``agen`` into a queue of at most
        ``buffer`` values (back-pressure: it waits while the queue is full),
        and the caller takes everything queued in one hop at a time. When
        the caller stops early (a ``break``, an error, cancellation), the
        producer is cancelled and ``agen`` closed there: nothing keeps
        running for an abandoned listing.
        """
        queue: asyncio.Queue[_Item] = asyncio.Queue(buffer)  # used on this loop only

        async def produce() -> None:
            try:
                async for value in agen:
                    await queue.put(("value", value))
            except Exception as exc:  # handed to the caller, unchanged
                await queue.put(("error", exc))
            else:
                await queue.put(("end", None))
            finally:
                aclose = getattr(agen, "aclose", None)
                if aclose is not None:
                    await aclose()

        async def take() -> list[_Item]:
            items = [await queue.get()]
            while not queue.empty():
                items.append(queue.get_nowait())
            return items

        producer = self.submit(produce())
        try:
            while True:
                for kind, value in await self.run(take()):
                    if kind == "end":
                        return
                    if kind == "error":
                        raise value
                    yield value
        finally:
            producer.cancel()

    def stop_soon(self) -> None:
        """Ask the loop to stop, from any thread (this one too), without waiting for it."""
        with contextlib.suppress(RuntimeError):  # closed already
            self.loop.call_soon_threadsafe(self.loop.stop)

    def stop(self, timeout: float | None = 10) -> None:
        """Stop the loop (cancelling what still runs there) and join the thread; idempotent.

        Never from the thread itself: it cannot join itself.
        """
        if self.is_current():
            raise RuntimeError("the I/O thread cannot stop itself")
        self.stop_soon()
        self.thread.join(timeout)
