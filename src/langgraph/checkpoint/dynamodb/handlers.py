"""Helpers for the maintenance Lambdas: configuration, a cached saver, logs.

The handlers under ``lambdas/`` stay thin: they read their configuration
with these helpers and call one saver method.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.dynamodb import clock
from langgraph.checkpoint.dynamodb.saver import DynamoDBSaver

__all__ = ["StoreConfig", "deadline_from_context", "get_saver", "log_event", "reset_saver"]

logger = logging.getLogger("langgraph.checkpoint.dynamodb")

#: Seconds kept in reserve before the Lambda timeout to finish a page cleanly.
SAFETY_SECONDS = 10.0


@dataclass(frozen=True)
class StoreConfig:
    """Where the checkpoint store is, from the Lambda's environment.

    Example:
        >>> StoreConfig.from_env({"TABLE_NAME": "ckpt", "BUCKET_NAME": "b"}).bucket_name
        'b'
    """

    table_name: str
    bucket_name: str | None = None
    s3_key_prefix: str = "checkpoints/"
    ttl: int | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StoreConfig:
        env = os.environ if env is None else env
        table = env.get("TABLE_NAME", "").strip()
        if not table:
            raise ValueError("TABLE_NAME is not set")
        ttl = env.get("THREAD_TTL_SECONDS", "").strip()
        return cls(
            table_name=table,
            bucket_name=env.get("BUCKET_NAME", "").strip() or None,
            s3_key_prefix=env.get("S3_KEY_PREFIX", "checkpoints/"),
            ttl=int(ttl) if ttl else None,
        )


_saver: DynamoDBSaver | None = None


def get_saver(config: StoreConfig | None = None) -> DynamoDBSaver:
    """A saver built once per Lambda instance (clients are reused across invocations)."""
    global _saver
    if _saver is None:
        cfg = config or StoreConfig.from_env()
        _saver = DynamoDBSaver(
            table_name=cfg.table_name,
            bucket_name=cfg.bucket_name,
            s3_key_prefix=cfg.s3_key_prefix,
            ttl=cfg.ttl,
            # The maintenance jobs walk heads when the agents keep them.
            track_threads=bool(cfg.ttl) or os.environ.get("TRACK_THREADS") == "1",
        )
    return _saver


def reset_saver() -> None:
    """Forget the cached saver (tests; a changed environment)."""
    global _saver
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


def log_event(job: str, **fields: Any) -> dict[str, Any]:
    """One structured JSON log line (CloudWatch Logs Insights can query it)."""
    record = {"job": job, **fields}
    logger.info(json.dumps(record, default=str, sort_keys=True))
    print(json.dumps(record, default=str, sort_keys=True))
    return record
