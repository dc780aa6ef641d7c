"""Helpers for Lambda handlers: configuration, a cached saver, logs.

The handlers (the maintenance jobs in ``langgraph.checkpoint.dynamodb.lambdas``
and the example agent under the repository's ``lambdas/``)
stay thin: they read their configuration with these helpers and call the
saver. All of them build the saver here, from the environment the CDK
construct gives every function, so they agree on key prefix, TTL and thread
heads (an agent that skipped the heads would let the reaper take its
threads for expired).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

from langgraph.checkpoint.dynamodb import clock
from langgraph.checkpoint.dynamodb._engine.budget import CapacityBudget, capacity_budget
from langgraph.checkpoint.dynamodb.config import saver_kwargs_from_env
from langgraph.checkpoint.dynamodb.encryption import ENV_KEYS, AesKeyRing
from langgraph.checkpoint.dynamodb.lambdas import metrics
from langgraph.checkpoint.dynamodb.saver import DynamoDBSaver

__all__ = [
    "StoreConfig",
    "budget_fields",
    "cached_saver",
    "deadline_from_context",
    "get_saver",
    "job_budget",
    "log_event",
    "reset_saver",
    "use_saver",
]

logger = logging.getLogger("langgraph.checkpoint.dynamodb")

#: Seconds kept in reserve before the Lambda timeout to finish a page cleanly.
SAFETY_SECONDS = 10.0
#: A maintenance job's read and write units per second (per concurrent run;
#: unset or empty: not limited). The construct sets them from
#: ``FunctionOptions.capacity_share``.
ENV_READ_UNITS = "MAINTENANCE_READ_UNITS"
ENV_WRITE_UNITS = "MAINTENANCE_WRITE_UNITS"


@dataclass(frozen=True)
class StoreConfig:
    """Where the checkpoint store is, from the Lambda's environment.

    The variables are the package's one documented set
    (``langgraph.checkpoint.dynamodb.config``), which the CDK construct's
    ``saver_environment`` sets; no other name is read.

    Example:
        >>> env = {"LANGGRAPH_DYNAMODB_TABLE": "ckpt", "LANGGRAPH_DYNAMODB_BUCKET": "b"}
        >>> StoreConfig.from_env(env).bucket_name
        'b'
    """

    table_name: str
    bucket_name: str | None = None
    s3_key_prefix: str = "checkpoints/"
    ttl: int | None = None
    #: Keep thread heads (always with a TTL; ``LANGGRAPH_DYNAMODB_TRACK_THREADS=1`` without one).
    track_threads: bool = False
    tenant_prefix: str | None = None
    #: ``AWS_REGION``, else ``AWS_DEFAULT_REGION``, else botocore's default.
    region_name: str | None = None
    #: The other settings the environment sets (``config.SETTINGS`` rows with a
    #: variable, e.g. ``max_payload_size``), as ``(name, value)`` pairs; unset: the savers' defaults.
    settings: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StoreConfig:
        """Read the store's variables; ``ValueError`` names a missing or malformed one."""
        kwargs = saver_kwargs_from_env(os.environ if env is None else env)
        own = {f.name for f in fields(cls)}
        rest = tuple(sorted((name, value) for name, value in kwargs.items() if name not in own))
        return cls(**{name: value for name, value in kwargs.items() if name in own}, settings=rest)

    def saver(self, **options: Any) -> DynamoDBSaver:
        """A new saver on this store; ``options`` are passed on (thresholds, serde...).

        With ``LANGGRAPH_AES_KEYS`` set (``encryption.AesKeyRing.from_env``) and
        no ``serde`` given, the saver encrypts with that key ring: what a
        maintenance function needs to copy encrypted threads, whose payloads
        a copy re-seals for the target.
        """
        for name, value in self.settings:
            options.setdefault(name, value)
        if options.get("serde") is None and os.environ.get(ENV_KEYS, "").strip():
            options["serde"] = AesKeyRing.from_env().serializer()
        return DynamoDBSaver(
            table_name=self.table_name,
            bucket_name=self.bucket_name,
            s3_key_prefix=self.s3_key_prefix,
            ttl=self.ttl,
            track_threads=self.track_threads,
            tenant_prefix=self.tenant_prefix,
            region_name=self.region_name,
            **options,
        )


_saver: DynamoDBSaver | None = None
_lock = threading.Lock()


def get_saver(config: StoreConfig | None = None) -> DynamoDBSaver:
    """The Lambda instance's saver, built once (clients are reused across invocations).

    Thread-safe: a handler that runs work in threads gets one saver.
    """
    global _saver
    with _lock:
        if _saver is None:
            _saver = (config or StoreConfig.from_env()).saver()
        return _saver


def cached_saver() -> DynamoDBSaver | None:
    """The saver :func:`get_saver` built (or :func:`use_saver` set), or None before the first call."""
    return _saver


def use_saver(saver: DynamoDBSaver | None) -> DynamoDBSaver | None:
    """Make :func:`get_saver` return ``saver``; returns the saver it replaces (not closed).

    For a saver built another way than from the environment: with
    instrumented clients in tests, or shared with other code of the process.

    Example:
        ```python
        previous = handlers.use_saver(DynamoDBSaver(table_name="checkpoints", dynamodb_client=client))
        try:
            handler(event, context)
        finally:
            handlers.use_saver(previous)
        ```
    """
    global _saver
    with _lock:
        previous, _saver = _saver, saver
    return previous


def reset_saver() -> None:
    """Close and forget the cached saver (tests; a changed environment)."""
    global _saver
    with _lock:
        if _saver is not None:
            _saver.close()
        _saver = None


def deadline_from_context(context: Any, *, budget: float | None = None) -> float:
    """Epoch time by which a handler must stop starting new pages."""
    now = clock.now()
    limits = []
    if context is not None and hasattr(context, "get_remaining_time_in_millis"):
        limits.append(now + context.get_remaining_time_in_millis() / 1000 - SAFETY_SECONDS)
    if budget is not None:
        limits.append(now + budget)
    return min(limits) if limits else now + 600


def _units(env: Mapping[str, str], name: str) -> float | None:
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise ValueError(f"{name} must be a positive number of capacity units per second, not {raw!r}")
    return value


@contextlib.contextmanager
def job_budget(env: Mapping[str, str] | None = None) -> Iterator[CapacityBudget | None]:
    """The maintenance job's capacity budget (``MAINTENANCE_READ_UNITS``/``..._WRITE_UNITS``), if set.

    Within the block, the saver's DynamoDB requests take at most those units
    per second, and less while they meet throttles (``lifecycle.capacity_budget``).

    Example:
        >>> with job_budget({"MAINTENANCE_WRITE_UNITS": "400"}) as budget:
        ...     budget.stats()["write_units_per_second"]
        400.0
    """
    env = os.environ if env is None else env
    reads, writes = _units(env, ENV_READ_UNITS), _units(env, ENV_WRITE_UNITS)
    if reads is None and writes is None:
        yield None
        return
    with capacity_budget(read_units=reads, write_units=writes) as budget:
        yield budget


def budget_fields(budget: CapacityBudget | None) -> dict[str, Any]:
    """What a job's log record says of its budget: seconds held back, throttles met (empty: none)."""
    if budget is None:
        return {}
    stats = budget.stats()
    return {
        "capacity_waited_seconds": round(stats["waited_seconds"], 3),
        "capacity_throttles": int(stats["throttles"]),
    }


def log_event(job: str, **fields: Any) -> dict[str, Any]:
    """One structured JSON log line, with the job's CloudWatch metrics embedded in it.

    The line printed on stdout (which Lambda sends to the function's log
    group as is) is the record plus, for a maintenance job, an embedded
    metric format directive (``lambdas.metrics``): CloudWatch Logs extracts
    the job's counts as metrics in ``LANGGRAPH_DYNAMODB_METRICS_NAMESPACE``
    (default ``LangGraph/Checkpoints``; empty: none), dimensioned by job and
    function name. The ``logging`` record carries no directive, so a log
    handler that forwards raw messages cannot count the metrics twice.

    Args:
        job: The job's name (``pruner``, ``reaper``, ``orphan_sweeper``: the
            keys of ``lambdas.metrics.JOB_METRICS``; other names log without metrics).
        **fields: The record, typically ``report.to_dict()``.

    Returns:
        The record without the metrics (the handler's return value).

    Example:
        >>> log_event("pruner", threads_pruned=2, errors=[])  # doctest: +SKIP
        {'job': 'pruner', 'threads_pruned': 2, 'errors': []}
    """
    record = {"job": job, **fields}
    line = json.dumps(record, default=str, sort_keys=True)
    logger.info(line)
    emf: dict[str, Any] = {}
    try:
        namespace = metrics.metrics_namespace()
    except ValueError as exc:
        # The job's work is done: a bad setting must not fail (and so retry) it.
        logger.warning("no embedded metrics: %s", exc)
        namespace = None
    if namespace is not None:
        emf = metrics.embedded_metrics(
            job,
            record,
            namespace=namespace,
            timestamp_ms=int(time.time() * 1000),
            function_name=os.environ.get("AWS_LAMBDA_FUNCTION_NAME"),
        )
    if emf:
        line = _fit(record, emf)
    print(line)
    return record


#: Largest line printed with metrics. A CloudWatch Logs event holds 256 KB;
#: a longer line is split, and then neither half is JSON: the metrics of the
#: very run that had the most errors would be lost.
MAX_EMF_LINE_BYTES = 200_000
#: Error messages kept in a line that had to be shortened.
_KEPT_ERRORS = 20


def _fit(record: Mapping[str, Any], emf: Mapping[str, Any]) -> str:
    """The EMF line; if too long, with the error list cut (its count stays exact in ``Errors``)."""
    line = json.dumps({**record, **emf}, default=str, sort_keys=True)
    if len(line.encode()) <= MAX_EMF_LINE_BYTES:
        return line
    errors = record.get("errors")
    if isinstance(errors, list) and len(errors) > _KEPT_ERRORS:
        shortened = {**record, "errors": errors[:_KEPT_ERRORS], "errors_omitted": len(errors) - _KEPT_ERRORS}
        line = json.dumps({**shortened, **emf}, default=str, sort_keys=True)
        if len(line.encode()) <= MAX_EMF_LINE_BYTES:
            return line
    # Still too long (huge messages or fields): the metrics and the job alone.
    return json.dumps({"job": record.get("job"), "truncated": True, **emf}, default=str, sort_keys=True)
