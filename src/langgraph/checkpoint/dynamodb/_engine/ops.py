"""Sans-I/O request descriptions.

The savers' logic is written once, as generators that *yield* what they need
(a DynamoDB or S3 call, several calls at once, a pause) and receive the
result. ``DynamoDBSaver`` runs those generators with boto3, and
``AsyncDynamoDBSaver`` with aiobotocore; neither contains logic of its own.
This is how the sync and async savers stay identical in behaviour.

CPU-heavy work (packing or unpacking large payloads) is yielded too, as a
:class:`Compute`: the sync driver runs it in place, the async driver off the
event loop when it is large enough to pay for the thread hop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from langgraph.checkpoint.dynamodb.errors import PayloadLimitError

R = TypeVar("R")

Service = Literal["dynamodb", "s3"]


@dataclass(frozen=True, slots=True)
class Call:
    """One API call. The driver returns the response dict.

    For ``s3.get_object`` the driver reads the body, so the response's
    ``Body`` is ``bytes`` in both drivers. With ``max_bytes`` it reads at
    most ``max_bytes + 1`` bytes of it and raises ``PayloadLimitError`` for
    a larger object (see :func:`body_budget` and :func:`checked_body`).
    """

    service: Service
    method: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: Largest ``get_object`` body the driver may read; ``None``: no limit.
    max_bytes: int | None = None
    #: Whether the driver sends it again while it is throttled (``pacing``);
    #: ``False`` for an operation that answers a throttle itself (a head write
    #: the threads index throttles widens the index instead).
    paced: bool = True


@dataclass(frozen=True, slots=True)
class Gather:
    """Several calls issued concurrently. Returns their responses in order.

    With ``return_exceptions`` a failed call yields its exception in place of
    a response; otherwise the first failure is raised into the generator.
    """

    calls: Sequence[Call]
    return_exceptions: bool = False


@dataclass(frozen=True, slots=True)
class Sleep:
    """Back off before retrying (``time.sleep`` or ``asyncio.sleep``)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Emit:
    """A result for the caller of a streaming operation (``list``)."""

    value: Any


#: Serialized bytes from which the async driver runs a :class:`Compute` in a
#: thread. Measured (``python -m benchmarks.offload``, docs/benchmarks.md,
#: "The event loop"): a hop to the loop's executor and back costs 50-150 us
#: here; packing 16 KiB of messages (serialization plus zlib) costs
#: 0.15-0.6 ms and unpacking 0.07-0.35 ms, growing with size (~8 ms and 2-4 ms
#: at 96 KiB of chat text). Below it the hop would cost about what it frees.
OFFLOAD_MIN_BYTES = 16 * 1024
#: Serialized bytes one packed (stored) byte stands for when sizing a decode:
#: unpacking costs by what comes out, and chat text compresses 4-6x (measured
#: as above), poorly compressible data ~1.3x, where offloading early costs a
#: hop only.
PACKED_EXPANSION = 4


@dataclass(frozen=True, slots=True)
class Compute:
    """CPU work the operation hands to its driver: the driver returns ``fn(*args)``.

    ``size`` is how many payload bytes the work handles (exact for bytes to
    decode, a :func:`size_hint` for values to encode). The sync driver calls
    ``fn`` in place; the async driver calls it in the event loop's default
    executor when ``size`` reaches :data:`OFFLOAD_MIN_BYTES`, so that the
    loop keeps serving other tasks meanwhile, and in place below that. An
    exception ``fn`` raises is thrown back into the operation either way.

    ``fn`` may run on another thread while the loop runs other operations of
    the same saver: it must only read its arguments and touch the saver's
    thread-safe caches (what a sync saver shared by threads already does).
    """

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    size: int = 0


class Ticket:
    """A one-shot signal from one operation to another that waits for it (:class:`Wait`).

    Operations that share work (the lock's group commit: one sends the
    transaction that lands the others' writes) run on different threads
    (sync callers) or tasks (async ones), so a ticket is thread-safe and
    knows nothing of either: a driver asks to be called back once it is
    settled, and blocks or awaits in its own way.

    Example:
        >>> t = Ticket()
        >>> woken = []
        >>> t.when_settled(lambda: woken.append(1))
        True
        >>> t.settle(); woken
        [1]
        >>> t.when_settled(lambda: woken.append(2))  # already settled: not called, go on at once
        False
    """

    __slots__ = ("_callbacks", "_lock", "_settled")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._settled = False
        self._callbacks: list[Callable[[], Any]] = []

    def settle(self) -> None:
        """Wake every waiter (once; later calls do nothing)."""
        with self._lock:
            if self._settled:
                return
            self._settled = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def when_settled(self, callback: Callable[[], Any]) -> bool:
        """Call ``callback`` (on the settling thread) once settled; ``False`` if it already is (no call)."""
        with self._lock:
            if self._settled:
                return False
            self._callbacks.append(callback)
            return True


@dataclass(frozen=True, slots=True)
class Wait:
    """Pause until another operation settles ``ticket`` (the driver returns ``None``)."""

    ticket: Ticket


Request = Call | Gather | Sleep | Emit | Compute | Wait
Op = Generator[Request, Any, R]


def compute(fn: Callable[..., R], *args: Any, size: int) -> Op[R]:
    """``fn(*args)`` as a :class:`Compute` request: ``result = yield from compute(f, x, size=n)``.

    Example:
        >>> op = compute(len, b"abc", size=3)
        >>> req = next(op)
        >>> try:
        ...     op.send(req.fn(*req.args))
        ... except StopIteration as done:
        ...     done.value
        3
    """
    return (yield Compute(fn, args, size))  # type: ignore[no-any-return]


#: Weights of :func:`size_hint` for what is not text: each container or
#: object costs the serializer a call (objects go through Python hooks),
#: whatever its own bytes, so a value of many small parts counts as larger.
_CONTAINER = 16
_OBJECT = 64
_SCALAR = 8


def size_hint(values: Iterable[Any], limit: int = OFFLOAD_MIN_BYTES) -> int:
    """About how many bytes serializing ``values`` handles, counted up to ``limit``.

    A walk over strings, bytes, containers and objects' ``__dict__`` (the
    fields of LangChain messages and other pydantic models), which stops as
    soon as the count reaches ``limit``: it decides whether packing is worth
    a thread hop, so it must cost much less than packing itself. A small
    value is walked whole (tens of microseconds); a large one only until it
    is known to be large. Shared or cyclic parts are counted each time they
    are met, which only makes the count reach ``limit`` sooner.

    Example:
        >>> size_hint(["x" * 100, {"k": b"1234"}])
        122
        >>> size_hint(["x" * 10**6], limit=1024) >= 1024
        True
    """
    total = 0
    stack = list(values)
    while stack and total < limit:
        v = stack.pop()
        if isinstance(v, (str, bytes, bytearray)):
            total += len(v)
        elif isinstance(v, dict):
            total += _CONTAINER + len(v)
            if total < limit:  # never copy a huge container only to stop at once
                stack.extend(v.keys())
                stack.extend(v.values())
        elif isinstance(v, (list, tuple, set, frozenset)):
            total += _CONTAINER + len(v)
            if total < limit:
                stack.extend(v)
        elif isinstance(v, (int, float, bool)) or v is None:
            total += _SCALAR
        else:
            fields = getattr(v, "__dict__", None)
            total += _OBJECT
            if isinstance(fields, dict):
                stack.extend(fields.values())
    return total


def body_budget(call: Call, resp: Mapping[str, Any]) -> int:
    """How many bytes of a ``get_object`` body a driver may read (``-1``: all).

    Raises ``PayloadLimitError`` without reading anything when the object's
    ``ContentLength`` is already over the call's ``max_bytes``. A body with a
    length within the limit is read whole (the HTTP layer reads no more than
    the length). A body without one may be read to one byte past the limit,
    so that :func:`checked_body` tells "at the limit" from "over it".
    """
    if call.max_bytes is None:
        return -1
    length = resp.get("ContentLength")
    if isinstance(length, int):
        if length > call.max_bytes:
            raise _body_too_large(call, f"{length} bytes")
        return -1
    return call.max_bytes + 1


def checked_body(call: Call, body: bytes) -> bytes:
    """The body a driver read within :func:`body_budget`, refused if over the limit."""
    if call.max_bytes is not None and len(body) > call.max_bytes:
        raise _body_too_large(call, "more than that")
    return body


def _body_too_large(call: Call, size: str) -> PayloadLimitError:
    where = f"s3://{call.kwargs.get('Bucket')}/{call.kwargs.get('Key')}"
    return PayloadLimitError(
        f"stored payload {where} is larger than max_payload_size ({call.max_bytes} bytes): {size}; "
        "refused before reading it. If it is legitimate, raise the saver's max_payload_size"
    )


def ddb(method: str, **kwargs: Any) -> Call:
    return Call("dynamodb", method, kwargs)


def s3(method: str, **kwargs: Any) -> Call:
    return Call("s3", method, kwargs)
