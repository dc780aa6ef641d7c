"""Scheduled pruner: applies the prune policy to the table, a page at a time.

Environment: the store's (``LANGGRAPH_DYNAMODB_TABLE``, ``..._BUCKET``,
``..._S3_KEY_PREFIX``...; see ``langgraph.checkpoint.dynamodb.config``) and the
job's: PRUNE_KEEP_LAST, PRUNE_IDLE_DAYS, PRUNE_PAGE_SIZE, TIME_BUDGET_SECONDS. Resumes where the
previous invocation stopped; safe to run twice or concurrently.
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
from langgraph.checkpoint.dynamodb.lifecycle import PrunePolicy


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point (``langgraph.checkpoint.dynamodb.lambdas.pruner.handler``).

    Example:
        >>> handler({}, None)  # doctest: +SKIP
        {'job': 'pruner', ...}
    """
    policy = PrunePolicy.from_env()
    budget = os.environ.get("TIME_BUDGET_SECONDS")
    deadline = deadline_from_context(context, budget=float(budget) if budget else None)
    with job_budget() as capacity:
        report = get_saver().run_pruner(policy, deadline=deadline)
    return log_event("pruner", policy=policy, **report.to_dict(), **budget_fields(capacity))
