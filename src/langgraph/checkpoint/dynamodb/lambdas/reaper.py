"""DynamoDB Streams consumer: finishes the expiry of threads whose head TTL deleted.

Only REMOVE records made by the TTL service for thread heads count (the
event source mapping filters for them too). Deleting an already reaped
thread again is a no-op, so retries and duplicates are safe.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.dynamodb.lambdas.handlers import get_saver, log_event


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (``langgraph.checkpoint.dynamodb.lambdas.reaper.handler``).

    Example:
        >>> handler({"Records": []}, None)  # doctest: +SKIP
        {'job': 'reaper', 'records': 0, ...}
    """
    report = get_saver().reap_expired_stream(event)
    return log_event("reaper", records=len(event.get("Records", [])), **report.to_dict())
