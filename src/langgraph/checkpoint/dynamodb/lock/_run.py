"""Idempotency: run a function at most once per request, and checkpoint staleness checks.

Rule: the flow of :func:`run_once` is written once, as one operation
(:func:`run_request`); :func:`run_once` and :func:`arun_once` only run it,
with the sync or the async driver. The flow's steps that are not DynamoDB
requests (take the lease, compare the latest checkpoint, call the caller's
function) are sent through the same driver as calls to a local "client"
(:class:`SyncSteps` / :class:`AsyncSteps`, the only code that differs
between the two), so the operation never knows which one runs it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar, cast

from langgraph.checkpoint.dynamodb._engine.drivers import AsyncDriver, Clients, SyncDriver
from langgraph.checkpoint.dynamodb._engine.ops import Call, Op, Service
from langgraph.checkpoint.dynamodb.lock import _operations as ops
from langgraph.checkpoint.dynamodb.lock._errors import StaleCheckpointError
from langgraph.checkpoint.dynamodb.lock._lease import (
    AsyncThreadLease,
    ThreadLease,
    async_client,
    sync_client,
    sync_driver,
)
from langgraph.checkpoint.dynamodb.lock._records import (
    DEFAULT_MAX_RESULT_BYTES,
    STATUS_DONE,
    STATUS_FAILED,
    AnyCheckpoint,
    ExpectedCheckpoint,
    RequestRecord,
    RunContext,
    RunOutcome,
    Where,
    check_limits,
    expected_marker,
    is_done,
    is_recovery,
    partition_key_of,
    request_record,
    serialize_result,
    stored_result,
    validate_ids,
    wall_now,
    wants_context,
)

__all__ = [
    "STEPS",
    "AsyncSteps",
    "Attempt",
    "Run",
    "SyncSteps",
    "acheck_checkpoint",
    "arun_once",
    "check_checkpoint",
    "get_request",
    "run_once",
    "run_request",
]

T = TypeVar("T")

#: The name under which a driver finds a run's local steps, next to ``"dynamodb"``.
STEPS: Final = "run"


# -------------------------------------------------------------- staleness


def _latest_config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def _check(thread_id: str, expected: ExpectedCheckpoint, actual: str | None) -> None:
    if isinstance(expected, AnyCheckpoint):
        return
    if expected != actual:
        raise StaleCheckpointError(thread_id, expected, actual)


def check_checkpoint(saver: Any, thread_id: str, expected_checkpoint_id: ExpectedCheckpoint) -> str | None:
    """Raise :class:`StaleCheckpointError` unless the thread's latest root checkpoint is the expected one.

    Args:
        saver: a ``DynamoDBSaver`` (any sync ``BaseCheckpointSaver`` works).
        thread_id: the thread.
        expected_checkpoint_id: the id the caller saw; ``None`` if the caller
            expects a new thread; :data:`ANY_CHECKPOINT` to accept anything.

    Returns:
        The latest checkpoint id (``None`` if the thread has none).

    Example:
        >>> check_checkpoint(saver, "t-1", snapshot.config["configurable"]["checkpoint_id"])  # doctest: +SKIP
    """
    if isinstance(expected_checkpoint_id, AnyCheckpoint):
        return None
    latest = saver.get_tuple(_latest_config(thread_id))
    actual = latest.config["configurable"]["checkpoint_id"] if latest else None
    _check(thread_id, expected_checkpoint_id, actual)
    return actual


async def acheck_checkpoint(
    saver: Any, thread_id: str, expected_checkpoint_id: ExpectedCheckpoint
) -> str | None:
    """Async :func:`check_checkpoint` (uses ``saver.aget_tuple``).

    Example:
        >>> await acheck_checkpoint(saver, "t-1", seen_checkpoint_id)  # doctest: +SKIP
    """
    if isinstance(expected_checkpoint_id, AnyCheckpoint):
        return None
    latest = await saver.aget_tuple(_latest_config(thread_id))
    actual = latest.config["configurable"]["checkpoint_id"] if latest else None
    _check(thread_id, expected_checkpoint_id, actual)
    return actual


def get_request(
    saver: Any, thread_id: str, request_id: str, *, dynamodb_client: Any = None
) -> RequestRecord | None:
    """The idempotency record of a request, or ``None`` if it never started.

    Example:
        >>> rec = get_request(saver, "t-1", "req-42")  # doctest: +SKIP
        >>> rec.status  # doctest: +SKIP
        'done'
    """
    where = Where(saver.table_name, partition_key_of(saver, thread_id))
    validate_ids(thread_id, request_id, where.pk)
    item = sync_driver(sync_client(saver, dynamodb_client)).run(ops.get_request(where, request_id))
    return request_record(item) if item else None


# ---------------------------------------------------------- the operation


@dataclass(frozen=True, slots=True)
class Run:
    """Everything :func:`run_request` needs, fixed before it starts (validated)."""

    saver: Any
    thread_id: str
    request_id: str
    expected: ExpectedCheckpoint
    fn: Callable[..., Any]
    recover: Callable[[RunContext], Any] | None
    where: Where
    lease_seconds: float
    wait_seconds: float
    ttl_s: int
    max_bytes: int
    clock: Callable[[], float]

    @classmethod
    def plan(
        cls,
        saver: Any,
        thread_id: str,
        request_id: str,
        expected: ExpectedCheckpoint,
        fn: Callable[..., Any],
        recover: Callable[[RunContext], Any] | None,
        **settings: Any,
    ) -> Run:
        """A run of ``fn`` on the saver's thread; ``settings`` are the remaining fields."""
        where = Where(saver.table_name, partition_key_of(saver, thread_id))
        validate_ids(thread_id, request_id, where.pk)
        return cls(saver, thread_id, request_id, expected, fn, recover, where, **settings)

    def lease(self, kind: type[ThreadLease] | type[AsyncThreadLease], client: Any) -> Any:
        """A lease of ``kind`` on the thread through ``client``, in the saver's tenant partition."""
        return kind(
            client,
            self.thread_id,
            table_name=self.where.table,
            lease_seconds=self.lease_seconds,
            wait_seconds=self.wait_seconds,
            clock=self.clock,
            tenant_prefix=getattr(self.saver, "tenant_prefix", "") or "",
        )


@dataclass(frozen=True, slots=True)
class Attempt:
    """What calling the caller's function gave: its value, or what it raised.

    Any ``BaseException`` (a cancelled task, Ctrl-C) comes back as a value,
    so that the operation records the failure before raising it: a driver
    hands only ``Exception`` back to an operation.
    """

    value: Any = None
    error: BaseException | None = None


def _step(method: str, **kwargs: Any) -> Call:
    # Not an AWS call: the driver looks ``STEPS`` up in its holder as it looks
    # up "dynamodb", and calls (or awaits) the steps object's method.
    return Call(cast(Service, STEPS), method, kwargs)


def run_request(run: Run) -> Op[RunOutcome[Any]]:
    """The whole of :func:`run_once`, for either driver (see the module's rule).

    Reads the record (a done request replays without the lease), takes the
    lease, reads it again, checks the latest checkpoint unless this is a
    retry of an unfinished attempt, marks the request running, asks
    ``recover`` then ``fn``, and records the outcome; every write is fenced
    by the lease.
    """
    item = yield from ops.get_request(run.where, run.request_id)
    if is_done(item):
        return RunOutcome(stored_result(run.saver, run.thread_id, run.request_id, item), True, False)
    lease = yield _step("acquire")  # released by the caller of the driver, whatever happens
    item = yield from ops.get_request(run.where, run.request_id)
    if is_done(item):
        return RunOutcome(stored_result(run.saver, run.thread_id, run.request_id, item), True, False)
    recovered = is_recovery(item, run.expected)
    if not recovered and not isinstance(run.expected, AnyCheckpoint):
        yield _step("check_checkpoint", expected=run.expected)
    yield from ops.begin_request(
        run.where,
        run.thread_id,
        run.request_id,
        lease.owner,
        expected_marker(run.expected),
        run.ttl_s,
        lease.clock,
        fence=lease.fence(),
    )
    ctx = RunContext(lease.bind(run.saver), run.thread_id, run.request_id, earlier_attempt=item is not None)
    attempt = Attempt()
    if run.recover is not None and ctx.earlier_attempt:
        attempt = yield _step("invoke", fn=run.recover, args=(ctx,))
    rebuilt = attempt.value is not None
    if not rebuilt and attempt.error is None:
        attempt = yield _step("invoke", fn=run.fn, args=(ctx,) if wants_context(run.fn) else ())
    if attempt.error is not None:
        # Best effort: the original error matters more than the bookkeeping
        # (an unrecorded failure still reads as "running", also retryable).
        with contextlib.suppress(Exception):
            yield from ops.finish_request(
                run.where,
                run.thread_id,
                run.request_id,
                lease.owner,
                status=STATUS_FAILED,
                result=None,
                result_size=None,
                error=repr(attempt.error),
                ttl_s=run.ttl_s,
                clock=lease.clock,
                fence=lease.fence(),
            )
        raise attempt.error
    stored, size = serialize_result(run.saver, run.thread_id, run.request_id, attempt.value, run.max_bytes)
    # Conditional on our owner token *and* fence in one transaction: a holder
    # that lost the lease while working learns it here, before reporting success.
    yield from ops.finish_request(
        run.where,
        run.thread_id,
        run.request_id,
        lease.owner,
        status=STATUS_DONE,
        result=stored,
        result_size=size,
        error=None,
        ttl_s=run.ttl_s,
        clock=lease.clock,
        fence=lease.fence(),
    )
    return RunOutcome(attempt.value, replayed=rebuilt, recovered=recovered or rebuilt)


class SyncSteps:
    """The local steps of :func:`run_request` for :func:`run_once` (plain calls, a ``ThreadLease``)."""

    def __init__(self, run: Run, client: Any, stack: contextlib.ExitStack) -> None:
        self._run, self._client, self._stack = run, client, stack

    def acquire(self) -> ThreadLease:
        """Take the lease; the stack releases it when ``run_once`` leaves."""
        return self._stack.enter_context(self._run.lease(ThreadLease, self._client))

    def check_checkpoint(self, expected: ExpectedCheckpoint) -> None:
        check_checkpoint(self._run.saver, self._run.thread_id, expected)

    def invoke(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Attempt:
        try:
            return Attempt(fn(*args))
        except BaseException as exc:  # recorded by the operation, then raised again
            return Attempt(error=exc)


class AsyncSteps:
    """The local steps of :func:`run_request` for :func:`arun_once` (awaited, an ``AsyncThreadLease``)."""

    def __init__(self, run: Run, client: Any, stack: contextlib.AsyncExitStack) -> None:
        self._run, self._client, self._stack = run, client, stack

    async def acquire(self) -> AsyncThreadLease:
        """Take the lease; the stack releases it when ``arun_once`` leaves."""
        return await self._stack.enter_async_context(self._run.lease(AsyncThreadLease, self._client))

    async def check_checkpoint(self, expected: ExpectedCheckpoint) -> None:
        await acheck_checkpoint(self._run.saver, self._run.thread_id, expected)

    async def invoke(self, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> Attempt:
        try:
            return Attempt(await fn(*args))
        except BaseException as exc:  # recorded by the operation, then raised again
            return Attempt(error=exc)


def _validate(thread_id: str, request_id: str, max_result_bytes: int) -> None:
    validate_ids(thread_id, request_id)
    check_limits(max_result_bytes)


# ----------------------------------------------------------------- public


def run_once(
    saver: Any,
    thread_id: str,
    request_id: str,
    expected_checkpoint_id: ExpectedCheckpoint,
    fn: Callable[[], T] | Callable[[RunContext], T],
    *,
    recover: Callable[[RunContext], T | None] | None = None,
    lease_seconds: float = 60.0,
    wait_seconds: float = 10.0,
    result_ttl_seconds: int = 7 * 24 * 3600,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    dynamodb_client: Any = None,
    clock: Callable[[], float] = wall_now,
) -> RunOutcome[T]:
    """Run ``fn`` at most once for ``(thread_id, request_id)``, under the thread's lease.

    1. A request already done returns its stored result (``replayed=True``)
       without taking the lease or running anything. The stored result goes
       through the saver's payload policy (strict msgpack; refused unless
       encrypted when the saver encrypts): a forged record raises
       ``CorruptPayloadError``.
    2. Otherwise the lease is taken (waiting up to ``wait_seconds``), the
       record is read again (a concurrent twin may just have finished), the
       thread's latest checkpoint is compared with ``expected_checkpoint_id``
       and the request is marked running.
    3. If an earlier attempt of this request started and recorded no outcome
       (it crashed between its work and its ``done`` record, or failed) and
       ``recover`` is given, ``recover(ctx)`` is asked first: a value other
       than ``None`` is the outcome rebuilt from what that attempt stored
       (e.g. the thread's state, when its latest checkpoint carries this
       request id: :meth:`RunContext.wrote`); it is recorded and returned
       (``replayed=True, recovered=True``) and ``fn`` does not run.
    4. Otherwise ``fn`` runs (given a :class:`RunContext` if it takes an
       argument: write through ``ctx.saver``, the lease-bound saver, with
       ``ctx.config()``) with the lease renewed in the background; its
       result is stored (up to ``max_result_bytes``) and the request marked
       done in one transaction that checks we still hold the lease.

    If ``fn`` raises, the request is marked failed and the exception
    propagates; a retry with the same ``request_id`` and the same expected
    checkpoint runs again (``recovered=True``), as does a retry after a
    crash once the crashed attempt's lease was seen unchanged for a lease
    duration. LangGraph resumes from the last saved checkpoint and pending
    writes, so finished nodes of the crashed attempt do not run again.

    A worker paused past its lease (and taken over) gets
    :class:`LeaseLostError`, never success: its fenced writes and its
    ``done`` record fail. Side effects ``fn`` performed outside the store
    before the pause cannot be undone by the store.

    Args:
        saver: a ``DynamoDBSaver`` (table, client and serde are taken from it).
        thread_id: the thread.
        request_id: the caller's id for this request (scoped to the thread).
        expected_checkpoint_id: latest checkpoint id the caller saw, ``None``
            for a new thread, or :data:`ANY_CHECKPOINT`.
        fn: the work: ``fn()`` or ``fn(ctx)``, e.g.
            ``lambda ctx: graph.copy({"checkpointer": ctx.saver}).invoke(x, ctx.config())``.
        recover: rebuilds the outcome of an earlier attempt that stored its
            work but not its result; ``None`` when it cannot (then ``fn`` runs).
        lease_seconds: lease length (renewed every third of it while running).
        wait_seconds: how long to wait for a busy thread.
        result_ttl_seconds: how long DynamoDB keeps the record (TTL).
        max_result_bytes: largest serialized result stored for replay.
        dynamodb_client: a boto3 client to use instead of the saver's.
        clock: wall-clock time source (record timestamps, TTLs), for tests.

    Returns:
        A :class:`RunOutcome` with the value and what happened.

    Raises:
        LeaseUnavailableError: the thread stayed locked for ``wait_seconds``.
        StaleCheckpointError: the thread is not at ``expected_checkpoint_id``.
        ResultNotStoredError: the request was done before, result not stored.
        LeaseLostError: the lease was taken over while ``fn`` ran.
        CorruptPayloadError: the stored result breaks the saver's payload policy.

    Example:
        ```python
        from langgraph.checkpoint.dynamodb.lock import run_once

        outcome = run_once(
            saver, thread_id, request_id, seen_checkpoint_id,
            lambda ctx: graph.copy({"checkpointer": ctx.saver}).invoke(
                Command(resume=answer), ctx.config(), durability="sync"
            ),
        )
        return outcome.value  # the same value for every retry of request_id
        ```
    """
    _validate(thread_id, request_id, max_result_bytes)
    client = sync_client(saver, dynamodb_client)
    run = Run.plan(
        saver,
        thread_id,
        request_id,
        expected_checkpoint_id,
        fn,
        recover,
        lease_seconds=lease_seconds,
        wait_seconds=wait_seconds,
        ttl_s=result_ttl_seconds,
        max_bytes=max_result_bytes,
        clock=clock,
    )
    with contextlib.ExitStack() as stack:
        steps = SyncSteps(run, client, stack)
        driver = SyncDriver(Clients(dynamodb=client, **{STEPS: steps}), keep_pool=False)
        return cast(RunOutcome[T], driver.run(run_request(run)))


async def arun_once(
    saver: Any,
    thread_id: str,
    request_id: str,
    expected_checkpoint_id: ExpectedCheckpoint,
    fn: Callable[[], Awaitable[T]] | Callable[[RunContext], Awaitable[T]],
    *,
    recover: Callable[[RunContext], Awaitable[T | None]] | None = None,
    lease_seconds: float = 60.0,
    wait_seconds: float = 10.0,
    result_ttl_seconds: int = 7 * 24 * 3600,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    dynamodb_client: Any = None,
    clock: Callable[[], float] = wall_now,
) -> RunOutcome[T]:
    """Async :func:`run_once`: ``saver`` is an ``AsyncDynamoDBSaver``; ``fn`` and ``recover`` are coroutine functions.

    Example:
        ```python
        outcome = await arun_once(
            saver, thread_id, request_id, seen_checkpoint_id,
            lambda ctx: graph.copy({"checkpointer": ctx.saver}).ainvoke(Command(resume=answer), ctx.config()),
        )
        ```
    """
    _validate(thread_id, request_id, max_result_bytes)
    client = await async_client(saver, dynamodb_client)
    run = Run.plan(
        saver,
        thread_id,
        request_id,
        expected_checkpoint_id,
        fn,
        recover,
        lease_seconds=lease_seconds,
        wait_seconds=wait_seconds,
        ttl_s=result_ttl_seconds,
        max_bytes=max_result_bytes,
        clock=clock,
    )
    async with contextlib.AsyncExitStack() as stack:
        steps = AsyncSteps(run, client, stack)
        driver = AsyncDriver(Clients(dynamodb=client, **{STEPS: steps}))
        return cast(RunOutcome[T], await driver.run(run_request(run)))
