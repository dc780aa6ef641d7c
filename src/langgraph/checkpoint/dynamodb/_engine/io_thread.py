"""The I/O thread: an event loop of the async saver's own, in a dedicated thread.

Rule: this module only moves coroutines, their results and streamed values
between event loops (and threads); it sends no request itself. The async
saver can drive each whole operation on an event loop of its own, in a
dedicated thread (:class:`IOThread`): the caller's loop then only awaits
the result, while requests, responses and packing run there. Wake-ups in
both directions are batched (:class:`_Inbox`). In that mode
``saver.clients`` belong to the I/O loop: from other threads they are
proxies (:class:`IOLoopClient`, through :class:`ClientsView`) whose API
calls run there; :class:`IOState` is the saver's handle on its thread.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import functools
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar, cast

__all__ = ["ClientsView", "IOLoopClient", "IOState", "IOThread"]

R = TypeVar("R")


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


#: The I/O threads still running, stopped at interpreter exit (see ``_stop_at_exit``).
_LIVE: weakref.WeakSet[IOThread] = weakref.WeakSet()


@atexit.register
def _stop_at_exit() -> None:
    """Stop every I/O thread before the interpreter ends: their clients are closed on their loop.

    A daemon thread is dropped at exit mid-flight, and the clients a saver
    opened there would end with aiohttp's ``Unclosed client session``
    warnings. Stopping the loop finalizes its async generators, among them
    the saver's closer (``AsyncDynamoDBSaver._close_when_the_loop_ends``).
    atexit handlers run while daemon threads still do.
    """
    for io in list(_LIVE):
        with contextlib.suppress(Exception):
            io.stop(timeout=5)


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
        self._stopping = False
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.thread.start()
        self._ready.wait()
        _LIVE.add(self)

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
        """Ask the loop to stop, from any thread (this one too), without waiting for it; once.

        Asked once only: a second ``loop.stop`` (the saver's finalizer and the
        exit hook both ask) would land while the loop finishes its work
        (``_main``), and end that early.
        """
        with self._outbox_lock:
            if self._stopping:
                return
            self._stopping = True
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


class IOLoopClient:
    """A client of the saver's I/O loop as other loops see it: each API call runs on the I/O loop.

    An aiobotocore client only works on the loop that opened it; in the I/O
    thread mode, that is not the caller's. ``saver.clients`` hands this
    proxy to code on other loops (the lock's ``AsyncThreadLease``, your own
    calls), so that ``await saver.clients["dynamodb"].get_item(...)`` works
    there as it does in the on-loop mode. Everything else (``meta``, event
    hooks) is the client's own. A ``get_object`` body is a stream of the
    I/O loop: read it through the saver, not through this proxy.
    """

    __slots__ = ("client", "io_thread")

    def __init__(self, client: Any, io: IOThread) -> None:
        self.client = client
        self.io_thread = io

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.client, name)
        if name not in self.client.meta.method_to_api_mapping:
            return attr
        io = self.io_thread

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await io.run(attr(*args, **kwargs))

        call.__name__ = name
        return call

    def __repr__(self) -> str:
        return f"<{type(self.client).__name__} on the saver's I/O loop>"


class ClientsView(Mapping[str, Any]):
    """``saver.clients`` in the I/O thread mode: live, and proxied outside the I/O thread."""

    __slots__ = ("_clients", "_io")

    def __init__(self, clients: dict[str, Any], io: IOState) -> None:
        self._clients = clients
        self._io = io

    def __getitem__(self, name: str) -> Any:
        client = self._clients[name]
        io = self._io.thread
        if client is None or io is None or io.is_current():
            return client
        return self._io.proxy(client, io)

    def __iter__(self) -> Iterator[str]:
        return iter(self._clients)

    def __len__(self) -> int:
        return len(self._clients)


class IOState:
    """The I/O thread of a saver, shared with its copies (tenant views, guarded copies)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.thread: IOThread | None = None
        self._proxies: dict[int, IOLoopClient] = {}

    def proxy(self, client: Any, io: IOThread) -> IOLoopClient:
        """One proxy per client (so that ``clients["dynamodb"]`` is the same object twice)."""
        p = self._proxies.get(id(client))
        if p is None or p.client is not client or p.io_thread is not io:
            p = self._proxies[id(client)] = IOLoopClient(client, io)
        return p

    def get(self) -> IOThread:
        """The running I/O thread, started on first use (and again after ``aclose``)."""
        with self.lock:
            if self.thread is None or not self.thread.alive:
                self.thread = IOThread()
                # Nobody closed the saver: its thread ends with it, not with the process.
                weakref.finalize(self, self.thread.stop_soon)
            return self.thread

    def current(self) -> IOThread | None:
        """The I/O thread, if the calling thread is it."""
        io = self.thread
        return io if io is not None and io.is_current() else None
