"""Lease: the objects that hold a thread's lock, and savers bound to it.

Rule: what lives as long as a lease does: :class:`ThreadLease` (boto3,
heartbeat on a thread) and :class:`AsyncThreadLease` (aiobotocore,
heartbeat on a task) over the same operations (``_operations``), run by the
shared drivers; and :func:`bound_copy`, the saver whose writes the lease
fences. The requests themselves are built in ``_operations``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
import uuid
from collections.abc import Callable
from types import TracebackType
from typing import Any

from langgraph.checkpoint.dynamodb._engine.drivers import AsyncDriver, Clients, SyncDriver
from langgraph.checkpoint.dynamodb._engine.ops import Op
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.lock import _operations as ops
from langgraph.checkpoint.dynamodb.lock._commit import committer_for
from langgraph.checkpoint.dynamodb.lock._errors import LeaseLostError
from langgraph.checkpoint.dynamodb.lock._records import (
    Fence,
    LeaseInfo,
    Taken,
    Where,
    partition_key_of,
    validate_ids,
    wall_now,
)

__all__ = [
    "AsyncThreadLease",
    "ThreadLease",
    "async_client",
    "async_driver",
    "bound_copy",
    "sync_client",
    "sync_driver",
]


def sync_driver(client: Any) -> SyncDriver:
    """The shared sync driver (``drivers``) on one boto3 DynamoDB client.

    Short-lived, so it keeps no thread pool between ``Gather`` requests.
    """
    return SyncDriver(Clients(dynamodb=client), keep_pool=False)


def async_driver(client: Any) -> AsyncDriver:
    """The shared async driver (``drivers``) on one aiobotocore DynamoDB client."""
    return AsyncDriver(Clients(dynamodb=client))


def sync_client(saver: Any, client: Any) -> Any:
    """``client`` if given, else the saver's DynamoDB client."""
    if client is not None:
        return client
    return saver.clients["dynamodb"]


async def async_client(saver: Any, client: Any) -> Any:
    """``client`` if given, else the async saver's DynamoDB client (opened if need be)."""
    if client is not None:
        return client
    await saver.ensure_clients()
    return saver.clients["dynamodb"]


def _resolve_target(target: Any, table_name: str | None) -> tuple[Any, str, Any]:
    """``(saver or None, table name, client or None)`` of a saver or a client."""
    if isinstance(target, BaseDynamoDBSaver):
        return target, table_name or target.table_name, None
    if table_name is None:
        raise ValueError("table_name is required when passing a DynamoDB client")
    return None, table_name, target


# ------------------------------------------------------------ bound savers


def bound_copy(saver: Any, fence: Fence) -> Any:
    """A copy of ``saver`` whose checkpoint and pending-writes writes are fenced (see ``ThreadLease.bind``).

    Its other writers (``delete_thread``, ``prune``, ``copy_thread``,
    ``delete_for_runs``, the lifecycle jobs: ``base.unguarded_writers``)
    raise ``NotImplementedError``. Fencing them was the alternative, and it
    cannot be done right: they delete in ``BatchWriteItem`` batches (no
    conditions) and delete S3 objects (no condition can name a DynamoDB
    item), and ``delete_thread`` removes the whole S3 prefix after the
    items, so a lease lost between the last fenced batch and the S3
    deletes would still destroy payloads the new holder just uploaded.
    A check before each batch leaves the same window. Most of them also
    reach beyond the lease's thread (``prune`` takes many threads,
    ``delete_for_runs`` follows a run index, the jobs scan the table,
    ``copy_thread`` writes another thread). A bound saver promises that
    its writes land only while the lease is held; refusing is the only
    way to keep that promise for them. Maintenance belongs on the unbound
    saver (under the lease, if it must not overlap a run).
    """
    if not isinstance(saver, BaseDynamoDBSaver):
        raise TypeError(f"only this package's savers can be bound to a lease, not {type(saver).__name__}")
    if saver.partition_key(fence.thread_id) != fence.where.pk or saver.table_name != fence.where.table:
        raise ValueError(f"the saver does not store thread {fence.thread_id!r} where the lease lives")
    if saver.clients.get("dynamodb") is None:
        # An async saver opens its clients lazily: a copy would open its own
        # and never close them.
        raise RuntimeError("open the saver before binding it (async with saver: ..., or await saver.setup())")
    # The copy shares the saver's driver, hence its thread pool: a copy per
    # request leaves no threads behind (nothing closes a copy).
    return saver.with_write_guard(
        functools.partial(ops.fenced_write, fence), label="LeaseBound", refuse_unguarded=True
    )


# -------------------------------------------------------------------- lease


class _LeaseBase:
    def __init__(
        self,
        target: Any,
        thread_id: str,
        *,
        table_name: str | None = None,
        lease_seconds: float = 30.0,
        wait_seconds: float = 0.0,
        poll_seconds: float = 0.2,
        owner: str | None = None,
        heartbeat: bool = True,
        clock: Callable[[], float] = wall_now,
        tenant_prefix: str = "",
    ) -> None:
        validate_ids(thread_id)
        if lease_seconds <= 0:
            raise ValueError("lease_seconds must be > 0")
        if wait_seconds < 0 or poll_seconds <= 0:
            raise ValueError("wait_seconds must be >= 0 and poll_seconds > 0")
        self._saver, self.table_name, self._client = _resolve_target(target, table_name)
        self.thread_id = thread_id
        # The lock lives in the thread's own partition: under the saver's
        # tenant prefix, where IAM's LeadingKeys condition lets the tenant write.
        self._where = Where(self.table_name, partition_key_of(self._saver, thread_id, tenant_prefix))
        validate_ids(thread_id, pk=self._where.pk)
        self.lease_seconds = lease_seconds
        self.wait_seconds = wait_seconds
        self.poll_seconds = poll_seconds
        # A fresh random token per lease object: two objects in one process
        # are two owners (as two Lambda invocations in one container are).
        self.owner = owner or uuid.uuid4().hex
        self.heartbeat = heartbeat
        self.clock = clock
        self.info: LeaseInfo | None = None
        #: Set when a heartbeat found the lease taken over.
        self.lost = False
        self._rvn = ""
        # Monotonic time our lease runs out: judged from when we *sent* the
        # last acquisition or heartbeat (a waiter starts counting later).
        self._valid_until = 0.0

    @property
    def held(self) -> bool:
        """Whether this object believes it holds the lease (and it has not expired).

        Judged on this process's monotonic clock, from when the last
        acquisition or heartbeat was sent: no wall clock is involved.
        """
        return self.info is not None and not self.lost and time.monotonic() < self._valid_until

    def _took(self, taken: Taken) -> LeaseInfo:
        self.info, self._rvn = taken.info, taken.rvn
        self._valid_until = taken.sent + self.lease_seconds
        return taken.info

    def fence(self) -> Fence:
        """What a write fenced by this lease requires of the lock item: our owner token and fencing token.

        Raises:
            LeaseLostError: the lease is not held.

        Example:
            ```python
            with ThreadLease(saver, "t-1") as lease:
                token = lease.fence().token  # hand it to a downstream system
            ```
        """
        if self.info is None:
            raise LeaseLostError(f"the lease on thread {self.thread_id!r} is not held")
        return Fence(self._where, self.thread_id, self.owner, self.info.token)

    def bind(self, saver: Any = None) -> Any:
        """A copy of ``saver`` whose writes land only while this lease is held.

        ``put`` and ``put_writes`` of the copy each land in a
        ``TransactWriteItems``: a ``ConditionCheck`` that the thread's lock
        still carries this owner and fencing token, plus the usual write;
        writes issued while one is in flight share the next transaction
        (one per lease in flight: ``_commit``), so parallel tasks never
        conflict with each other on the lock item. A
        holder paused past its lease and taken over gets
        :class:`LeaseLostError` and nothing lands (payloads it uploaded
        before are unreferenced orphans, which the orphan sweeper removes).
        The copy shares the saver's clients and caches; do not close it, and
        use it only for this lease's thread (other threads raise
        ``ValueError``). Reads are unchanged.

        Methods whose writes no single request can fence (``delete_thread``,
        ``prune``, ``copy_thread``, ``delete_for_runs``, the lifecycle jobs,
        sync and async: ``base.unguarded_writers``) raise
        ``NotImplementedError`` on the copy, whether or not the lease is
        still held: they delete in batches and S3 objects that no lease
        condition can cover, so a holder that lost its lease could delete
        the new holder's work. Call them on the unbound saver.

        Args:
            saver: the saver to bind (default: the lease's own saver, when the
                lease was created from a saver).

        Returns:
            A shallow copy of ``saver`` of a subclass of its type.

        Raises:
            LeaseLostError: the lease is not held (acquire it first).

        Example:
            ```python
            with ThreadLease(saver, "t-1", lease_seconds=60) as lease:
                graph.copy({"checkpointer": lease.bind()}).invoke(None, config)
            ```
        """
        target = saver if saver is not None else self._saver
        if target is None:
            raise ValueError("bind() needs a saver when the lease was created from a client")
        return bound_copy(target, self.fence())

    def _acquire_op(self) -> Op[Taken]:
        return ops.acquire(
            self._where,
            self.thread_id,
            self.owner,
            int(self.lease_seconds * 1000),
            int(self.wait_seconds * 1000),
            int(self.poll_seconds * 1000),
            self.clock,
        )

    def _renew_op(self) -> Op[Taken]:
        # Between our own fenced transactions, never during one: an UpdateItem of the lock item
        # while one of them holds it would be refused (TransactionConflictException).
        return committer_for(self.fence()).exclusive(
            ops.renew(
                self._where, self.thread_id, self.owner, self._rvn, int(self.lease_seconds * 1000), self.clock
            )
        )

    def _release_op(self) -> Op[bool]:
        return committer_for(self.fence()).exclusive(
            ops.release(self._where, self.thread_id, self.owner, self._rvn)
        )


class ThreadLease(_LeaseBase):
    """A lease lock on one thread, for synchronous code (boto3).

    Args:
        target: a ``DynamoDBSaver`` (its client and table are used) or a
            boto3 DynamoDB client (then ``table_name`` is required).
        thread_id: the thread to lock.
        table_name: the checkpoint table (default: the saver's).
        lease_seconds: how long the lock stays ours without renewal. A
            holder that dies keeps others out until a waiter has watched its
            lock unchanged for this long (on the waiter's monotonic clock).
        wait_seconds: how long :meth:`acquire` waits for a busy lock before
            raising :class:`LeaseUnavailableError` (``0``: try once).
        poll_seconds: retry interval while waiting.
        owner: owner token (default: a random one per object).
        heartbeat: renew in a background thread every third of the lease
            while held, so long work does not lose the lock.
        clock: wall-clock source (epoch seconds) of the ``lx`` and TTL
            attributes; never used to decide expiry.
        tenant_prefix: with a plain client, the tenant prefix of the saver
            that writes the thread (a saver target brings its own), so the
            lock lands in the thread's partition.

    Example:
        ```python
        from langgraph.checkpoint.dynamodb.lock import ThreadLease, LeaseUnavailableError

        try:
            with ThreadLease(saver, "thread-1", lease_seconds=60, wait_seconds=5) as lease:
                graph.invoke(Command(resume=answer), {"configurable": {"thread_id": "thread-1"}})
        except LeaseUnavailableError:
            ...  # another worker is running this thread: answer 409 / retry later
        ```
    """

    def __init__(self, target: Any, thread_id: str, **kwargs: Any) -> None:
        super().__init__(target, thread_id, **kwargs)
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def _driver(self) -> SyncDriver:
        return sync_driver(sync_client(self._saver, self._client))

    def acquire(self) -> LeaseInfo:
        """Take the lease, waiting up to ``wait_seconds``.

        Raises:
            LeaseUnavailableError: another owner still holds it.
        """
        info = self._took(self._driver().run(self._acquire_op()))
        self.lost = False
        if self.heartbeat:
            self._start_heartbeat()
        return info

    def renew(self) -> LeaseInfo:
        """Extend the lease by ``lease_seconds`` from now.

        Raises:
            LeaseLostError: another owner took it over (or it was released).
        """
        try:
            return self._took(self._driver().run(self._renew_op()))
        except LeaseLostError:
            self.lost = True
            raise

    def release(self) -> bool:
        """Release the lease. Returns ``False`` if it was no longer ours.

        The lock item stays, without an owner: it keeps the fencing count, so
        the next acquisition's token is one more than this one's.
        """
        self._stop_heartbeat()
        if self.info is None:
            return False
        try:
            return self._driver().run(self._release_op())
        finally:
            self.info = None

    def _start_heartbeat(self) -> None:
        self._stop_heartbeat()
        self._stop = threading.Event()
        interval = self.lease_seconds / 3

        def beat(stop: threading.Event) -> None:
            while not stop.wait(interval):
                try:
                    self.renew()
                except LeaseLostError:
                    return
                except Exception:  # transient: the next beat retries before expiry
                    continue

        self._beat = threading.Thread(target=beat, args=(self._stop,), name="lease-heartbeat", daemon=True)
        self._beat.start()

    def _stop_heartbeat(self) -> None:
        self._stop.set()
        if self._beat is not None and self._beat is not threading.current_thread():
            self._beat.join()
        self._beat = None

    def __enter__(self) -> ThreadLease:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class AsyncThreadLease(_LeaseBase):
    """A lease lock on one thread, for asyncio code (aiobotocore).

    Same arguments as :class:`ThreadLease`; ``target`` is an
    ``AsyncDynamoDBSaver`` or an aiobotocore DynamoDB client. The heartbeat
    is an asyncio task on the running loop.

    Example:
        ```python
        from langgraph.checkpoint.dynamodb.lock import AsyncThreadLease

        async with AsyncThreadLease(saver, "thread-1", lease_seconds=60) as lease:
            await graph.ainvoke(None, {"configurable": {"thread_id": "thread-1"}})
        ```
    """

    def __init__(self, target: Any, thread_id: str, **kwargs: Any) -> None:
        super().__init__(target, thread_id, **kwargs)
        self._beat: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def _driver(self) -> AsyncDriver:
        return async_driver(await async_client(self._saver, self._client))

    async def acquire(self) -> LeaseInfo:
        """Take the lease, waiting up to ``wait_seconds`` (see :meth:`ThreadLease.acquire`)."""
        info = self._took(await (await self._driver()).run(self._acquire_op()))
        self.lost = False
        if self.heartbeat:
            await self._stop_heartbeat()
            self._stop = asyncio.Event()
            self._beat = asyncio.get_running_loop().create_task(self._heartbeat(self._stop))
        return info

    async def renew(self) -> LeaseInfo:
        """Extend the lease (see :meth:`ThreadLease.renew`)."""
        try:
            return self._took(await (await self._driver()).run(self._renew_op()))
        except LeaseLostError:
            self.lost = True
            raise

    async def release(self) -> bool:
        """Release the lease (see :meth:`ThreadLease.release`). Returns ``False`` if it was no longer ours."""
        await self._stop_heartbeat()
        if self.info is None:
            return False
        try:
            return await (await self._driver()).run(self._release_op())
        finally:
            self.info = None

    async def _heartbeat(self, stop: asyncio.Event) -> None:
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.lease_seconds / 3)
            if stop.is_set():
                return
            try:
                await self.renew()
            except LeaseLostError:
                return
            except Exception:  # transient: retried on the next beat
                continue

    async def _stop_heartbeat(self) -> None:
        beat, self._beat = self._beat, None
        self._stop.set()
        if beat is not None and beat is not asyncio.current_task():
            # Let a heartbeat in flight finish rather than cancel it: a renewal
            # that lands unseen would leave us releasing with a stale RVN.
            with contextlib.suppress(asyncio.CancelledError):
                await beat

    async def __aenter__(self) -> AsyncThreadLease:
        await self.acquire()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.release()
