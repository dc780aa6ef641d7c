"""Loop fairness: how the async driver shares an event loop with the caller's other tasks.

Rule: this module holds what keeps a saver's share of a busy event loop in
small pieces, and nothing that sends a request: the per-loop turnstile
(:class:`Turnstile`, passed with :func:`pass_turn`) that admits one waiting
task per loop iteration, the in-flight slots (:class:`Slots`) that bound
the requests per service on the wire, and the botocore event handlers that
cut a request's CPU phases apart (:func:`split_request_phases`). The async
driver (``drivers.AsyncDriver``) and the async saver use them; nothing
here imports either.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from typing import Any

__all__ = [
    "DEFAULT_MAX_IN_FLIGHT",
    "Slots",
    "Turnstile",
    "pass_turn",
    "split_request_phases",
    "turnstiles",
]


#: The async saver's default ``max_in_flight``: requests per service on the
#: wire at once. Chosen by measurement (the `async` benchmark: 100 threads on
#: one loop): with a request's CPU phases run as separate callbacks admitted
#: one per loop iteration (:class:`Turnstile`), 8 kept the p99 loop lag of 5
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


class Turnstile:
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


class Slots:
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
turnstiles: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Turnstile] = weakref.WeakKeyDictionary()


async def pass_turn() -> None:
    """Let the event loop run its other callbacks and timers before this task goes on (see :class:`Turnstile`)."""
    loop = asyncio.get_running_loop()
    gate = turnstiles.get(loop)
    if gate is None:
        gate = turnstiles[loop] = Turnstile()
    await gate.wait()


async def _pass_turn_hook(**_: Any) -> None:
    """A botocore event handler that hands the loop back (see :func:`split_request_phases`)."""
    await pass_turn()


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
