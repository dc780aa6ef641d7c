"""Errors of the lease lock and of ``run_once``.

Rule: exception types only, each with what a caller needs to react (who
holds the lease, when to retry, which checkpoint is current). No I/O, no
item parsing; raised by the operations, the leases and ``run_once``.
"""

from __future__ import annotations

from langgraph.checkpoint.dynamodb.errors import CheckpointStoreError

__all__ = [
    "LeaseLostError",
    "LeaseUnavailableError",
    "ResultNotStoredError",
    "StaleCheckpointError",
]


class LeaseUnavailableError(CheckpointStoreError):
    """Another owner holds the thread's lease (and did not release it in time).

    Attributes:
        thread_id: the thread.
        holder: owner token of the current holder, if known.
        expires_at: when the holder says its lease runs out (epoch seconds, the
            *holder's* clock: for display only), if known.
        retry_after: seconds after which this process may take a silent
            holder's lease over (it has watched the lock for that long minus
            what it already waited), if known. A live holder renews before then.

    Example:
        ```python
        try:
            ThreadLease(saver, "t-1").acquire()
        except LeaseUnavailableError as busy:
            retry_in = busy.retry_after or 1.0
        ```
    """

    def __init__(
        self,
        thread_id: str,
        holder: str | None,
        expires_at: float | None,
        retry_after: float | None = None,
    ) -> None:
        self.thread_id = thread_id
        self.holder = holder
        self.expires_at = expires_at
        self.retry_after = retry_after
        when = f" until {expires_at:.3f}" if expires_at is not None else ""
        super().__init__(f"thread {thread_id!r} is locked by another owner{when}")


class LeaseLostError(CheckpointStoreError):
    """The lease expired and was taken over (or released) while we thought we held it.

    Raised by :meth:`ThreadLease.renew`, by every write of a lease-bound saver
    (:meth:`ThreadLease.bind`) after another owner took the thread over (the
    write did not land), and by :func:`run_once` instead of reporting success.

    Example:
        ```python
        try:
            lease.renew()
        except LeaseLostError:
            ...  # stop: another worker owns the thread now
        ```
    """


class StaleCheckpointError(CheckpointStoreError):
    """The thread's latest checkpoint is not the one the caller saw.

    Attributes:
        thread_id: the thread.
        expected: the checkpoint id the caller passed (``None``: no checkpoint).
        actual: the latest checkpoint id (``None``: the thread has none).

    Example:
        ```python
        try:
            check_checkpoint(saver, "t-1", seen_id)
        except StaleCheckpointError as err:
            return {"statusCode": 409, "latest": err.actual}
        ```
    """

    def __init__(self, thread_id: str, expected: str | None, actual: str | None) -> None:
        self.thread_id = thread_id
        self.expected = expected
        self.actual = actual
        if expected is None:
            msg = f"thread {thread_id!r} already has checkpoint {actual!r}; expected a new thread"
        elif actual is None:
            msg = f"thread {thread_id!r} has no checkpoint; expected {expected!r}"
        else:
            msg = (
                f"thread {thread_id!r} moved on: the latest checkpoint is {actual!r}, "
                f"not {expected!r}; reload the thread's state and retry"
            )
        super().__init__(msg)


class ResultNotStoredError(CheckpointStoreError):
    """The request already completed, but its result was too large to store for replay.

    Example:
        ```python
        try:
            run_once(saver, "t-1", "r-1", ANY_CHECKPOINT, work)
        except ResultNotStoredError:
            state = graph.get_state({"configurable": {"thread_id": "t-1"}})  # read it instead
        ```
    """
