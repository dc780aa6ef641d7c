"""DynamoDB Streams consumer: finishes the expiry of threads whose head TTL deleted.

Only REMOVE records made by the TTL service for thread heads count (the
event source mapping filters for them too). Deleting an already reaped
thread again is a no-op, so retries and duplicates are safe.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.dynamodb.lambdas.handlers import budget_fields, get_saver, job_budget, log_event


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (``langgraph.checkpoint.dynamodb.lambdas.reaper.handler``).

    Example:
        >>> handler({"Records": []}, None)  # doctest: +SKIP
        {'job': 'reaper', 'records': 0, ...}
    """
    with job_budget() as capacity:
        report = get_saver().reap_expired_stream(event)
    records = len(event.get("Records", []))
    return log_event("reaper", records=records, **report.to_dict(), **budget_fields(capacity))
