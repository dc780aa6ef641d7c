"""Scheduled sweep of S3 objects that no item references, past a grace period.

Environment: the store's (see ``langgraph.checkpoint.dynamodb.config``) and the
job's: ORPHAN_GRACE_HOURS, TIME_BUDGET_SECONDS. Resumable and idempotent like the pruner.
"""

from __future__ import annotations

import os
from typing import Any

from langgraph.checkpoint.dynamodb.lambdas.handlers import (
    budget_fields,
    deadline_from_context,
    get_saver,
    job_budget,
    log_event,
)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (``langgraph.checkpoint.dynamodb.lambdas.orphan_sweeper.handler``).

    Example:
        >>> handler({}, None)  # doctest: +SKIP
        {'job': 'orphan_sweeper', ...}
    """
    grace_hours = float(os.environ.get("ORPHAN_GRACE_HOURS", "24"))
    budget = os.environ.get("TIME_BUDGET_SECONDS")
    deadline = deadline_from_context(context, budget=float(budget) if budget else None)
    with job_budget() as capacity:
        report = get_saver().sweep_orphans(grace_seconds=grace_hours * 3600, deadline=deadline)
    return log_event("orphan_sweeper", grace_hours=grace_hours, **report.to_dict(), **budget_fields(capacity))
