"""Per-thread lease locks, request-id idempotency and checkpoint staleness checks.

LangGraph serialises nothing across processes: two Lambda instances that
resume the same thread at once (a double click, a client retry after a
timeout) would both run the graph from the same checkpoint and both perform
its side effects. This package gives the caller three small tools against
that, all stored in the checkpoint table next to the thread's own items:

* :class:`ThreadLease` / :class:`AsyncThreadLease`: a lease lock on one
  thread (item ``PK = thread``, ``SK = schema.LOCK_SK``). Taken with one
  conditional ``UpdateItem`` that succeeds only if the lock is absent or the
  caller already owns it, or (takeover) if its record version is still the
  one the caller watched for a whole lease; renewed while held (a heartbeat
  that writes a new record version); released with an ``UpdateItem``
  conditional on the owner and version that clears the owner but keeps
  the item, so that the fencing token (``LeaseInfo.token``, one more on
  every acquisition) never goes back while the thread exists.
  :meth:`ThreadLease.bind` gives a saver whose writes land only while the
  lease is held (fencing), and which refuses the maintenance methods no
  lease condition can cover (``delete_thread``, ``prune``...).
* :func:`run_once` / :func:`arun_once`: run a function at most once per
  ``(thread_id, request_id)`` under the lease, recording its result (small
  results only, see :data:`DEFAULT_MAX_RESULT_BYTES`) so that a repeated
  request returns the first result without running anything, and a retry
  after a crash can rebuild the outcome from what the first attempt stored.
* :func:`check_checkpoint` / :func:`acheck_checkpoint`: refuse to act on a
  thread whose latest checkpoint is no longer the one the caller saw
  (:class:`StaleCheckpointError`), e.g. an answer submitted from a stale page.

The package is cut by concern, as Powertools cuts its idempotency utility:

* ``_errors``: the exceptions above;
* ``_records``: what lock items and request records hold (attribute names
  in ``schema.ATTR``) and the values callers get back;
* ``_operations``: every DynamoDB request, as sans-I/O operations (the
  savers' style, see ``ops``) run by the shared drivers (``drivers``);
* ``_commit``: the group commit of one lease's fenced writes (one
  transaction in flight, the writes that wait share the next), the retries
  of contended requests and their counts (:func:`write_stats`);
* ``_lease``: the lease objects (heartbeat) and lease-bound savers;
* ``_run``: ``run_once``, one operation that both ``run_once`` and
  ``arun_once`` run, and the staleness checks.

This module only re-exports: import from it, not from the private modules.

Clocks: DynamoDB has no server-side "now", and another machine's wall clock
may run ahead or behind ours, so no wall clock decides expiry. As the AWS
DynamoDB Lock Client does, a waiter takes a lock over only after it has seen
the lock's record version (``rvn``, changed by every heartbeat) unchanged for
the holder's whole lease duration on its *own* monotonic clock. What a
process has watched is remembered process-wide, so a retry in the same
(warm Lambda) process does not start watching again. ``lx`` (expiry by the
holder's clock) is kept for people and the CLI only.

Every item written here carries ``schema.ATTR.FORMAT`` (the savers' readers
check it on every item of a thread). Request records carry the
``schema.TTL_ATTRIBUTE``, so DynamoDB eventually removes old ones; the lock
item carries none: it holds the thread's fencing count, and lives as long as
the thread (``delete_thread`` deletes it, and a thread created again under
the same id counts from 1).

Example:
    ```python
    from langgraph.checkpoint.dynamodb.lock import ANY_CHECKPOINT, ThreadLease, run_once

    with ThreadLease(saver, "thread-1", lease_seconds=60) as lease:
        graph.copy({"checkpointer": lease.bind()}).invoke(None, config)

    outcome = run_once(saver, "thread-1", "request-7", ANY_CHECKPOINT, lambda: "work")
    ```
"""

from __future__ import annotations

from langgraph.checkpoint.dynamodb.lock._commit import write_stats
from langgraph.checkpoint.dynamodb.lock._errors import (
    LeaseLostError,
    LeaseUnavailableError,
    ResultNotStoredError,
    StaleCheckpointError,
)
from langgraph.checkpoint.dynamodb.lock._lease import AsyncThreadLease, ThreadLease
from langgraph.checkpoint.dynamodb.lock._records import (
    ANY_CHECKPOINT,
    DEFAULT_MAX_RESULT_BYTES,
    HARD_MAX_RESULT_BYTES,
    REQUEST_ID_METADATA_KEY,
    STATUS_DONE,
    STATUS_FAILED,
    STATUS_RUNNING,
    ExpectedCheckpoint,
    LeaseInfo,
    RequestRecord,
    RunContext,
    RunOutcome,
)
from langgraph.checkpoint.dynamodb.lock._run import (
    acheck_checkpoint,
    arun_once,
    check_checkpoint,
    get_request,
    run_once,
)

# The public names of the single-module ``lock`` this package replaced (the
# HARD_MAX, STATUS_* and ExpectedCheckpoint names were public but unlisted).
__all__ = [
    "ANY_CHECKPOINT",
    "DEFAULT_MAX_RESULT_BYTES",
    "HARD_MAX_RESULT_BYTES",
    "REQUEST_ID_METADATA_KEY",
    "STATUS_DONE",
    "STATUS_FAILED",
    "STATUS_RUNNING",
    "AsyncThreadLease",
    "ExpectedCheckpoint",
    "LeaseInfo",
    "LeaseLostError",
    "LeaseUnavailableError",
    "RequestRecord",
    "ResultNotStoredError",
    "RunContext",
    "RunOutcome",
    "StaleCheckpointError",
    "ThreadLease",
    "acheck_checkpoint",
    "arun_once",
    "check_checkpoint",
    "get_request",
    "run_once",
    "write_stats",
]
