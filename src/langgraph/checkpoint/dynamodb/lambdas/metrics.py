"""The maintenance jobs' own CloudWatch metrics, as embedded metric format (EMF).

One module for both sides, so that the names cannot drift apart: the handlers
print them (``handlers.log_event`` adds an EMF directive to the JSON line each
job already logs) and the CDK construct's dashboard graphs them.

An EMF document is a JSON log line with an ``aws`` member; CloudWatch Logs
turns the numbers it names into metrics, with no ``PutMetricData`` call and no
permission beyond writing the function's own log group. The line this module
builds, for a pruner run:

.. code-block:: json

    {"_aws": {"Timestamp": 1767225600000,
              "CloudWatchMetrics": [{"Namespace": "LangGraph/Checkpoints",
                                     "Dimensions": [["Job", "FunctionName"]],
                                     "Metrics": [{"Name": "ThreadsPruned", "Unit": "Count"}, ...]}]},
     "Job": "pruner", "FunctionName": "Stack-CheckpointStorePruner-ab12",
     "ThreadsPruned": 3, ..., "job": "pruner", "threads_pruned": 3, ...}

Dimensions are the job and the Lambda function name only (never a thread
id): each distinct combination is a billed custom metric. Outside Lambda
(``AWS_LAMBDA_FUNCTION_NAME`` unset) the dimension set is ``[["Job"]]``.

Environment: ``LANGGRAPH_DYNAMODB_METRICS_NAMESPACE`` (default
``LangGraph/Checkpoints``); set it empty to print no metrics.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_NAMESPACE",
    "ENV_METRICS_NAMESPACE",
    "FUNCTION_DIMENSION",
    "JOB_DIMENSION",
    "JOB_METRICS",
    "JobMetric",
    "embedded_metrics",
    "metrics_namespace",
]

#: Environment variable naming the CloudWatch namespace of the jobs' metrics.
ENV_METRICS_NAMESPACE = "LANGGRAPH_DYNAMODB_METRICS_NAMESPACE"
#: The namespace when the variable is unset.
DEFAULT_NAMESPACE = "LangGraph/Checkpoints"
#: Dimension holding the job (``pruner``, ``reaper``, ``orphan_sweeper``, ``maintenance``).
JOB_DIMENSION = "Job"
#: Dimension holding the Lambda function's name: two stores in one account
#: (and one namespace) stay apart.
FUNCTION_DIMENSION = "FunctionName"
#: CloudWatch's limit on namespace and metric name length.
_MAX_NAME = 255


@dataclass(frozen=True)
class JobMetric:
    """One metric a job emits: its CloudWatch name, the report field it counts, its unit.

    Example:
        >>> JOB_METRICS["pruner"][0].value({"threads_scanned": 4})
        4
    """

    name: str
    #: Key of ``SweepReport.to_dict()``; a list there (``errors``) counts its entries.
    field: str
    unit: str = "Count"

    def value(self, record: Mapping[str, Any]) -> int | float | None:
        """The metric's value in a job's log record (``None``: the field is missing)."""
        raw = record.get(self.field)
        if isinstance(raw, (list, tuple, set, frozenset, dict)):
            return len(raw)
        if isinstance(raw, bool):  # JSON true/false is no EMF number
            return int(raw)
        if isinstance(raw, (int, float)):
            return raw
        return None


THREADS_SCANNED = JobMetric("ThreadsScanned", "threads_scanned")
THREADS_PRUNED = JobMetric("ThreadsPruned", "threads_pruned")
THREADS_DELETED = JobMetric("ThreadsDeleted", "threads_deleted")
CHECKPOINTS_DELETED = JobMetric("CheckpointsDeleted", "checkpoints_deleted")
WRITES_DELETED = JobMetric("WritesDeleted", "writes_deleted")
OBJECTS_SCANNED = JobMetric("ObjectsScanned", "s3_objects_scanned")
OBJECTS_DELETED = JobMetric("ObjectsDeleted", "s3_objects_deleted")
VALUES_REHOMED = JobMetric("ValuesRehomed", "values_rehomed")
BYTES_FREED = JobMetric("BytesFreed", "bytes_freed", "Bytes")
ERRORS = JobMetric("Errors", "errors")
OBJECTS_COPIED = JobMetric("ObjectsCopied", "objects_copied")
ITEMS_COPIED = JobMetric("ItemsCopied", "items_copied")
CHECKPOINTS_COPIED = JobMetric("CheckpointsCopied", "checkpoints_copied")
#: Maintenance requests refused (a malformed event, a foreign token, a non-empty copy target).
REQUESTS_REJECTED = JobMetric("RequestsRejected", "rejected")

#: Job -> the metrics its handler emits (and the dashboard graphs). Only
#: counts that job can move: each metric is billed as a custom metric.
JOB_METRICS: Mapping[str, tuple[JobMetric, ...]] = {
    "pruner": (
        THREADS_SCANNED,
        THREADS_PRUNED,
        THREADS_DELETED,
        CHECKPOINTS_DELETED,
        WRITES_DELETED,
        OBJECTS_DELETED,
        VALUES_REHOMED,
        BYTES_FREED,
        ERRORS,
    ),
    "reaper": (
        THREADS_SCANNED,
        THREADS_DELETED,
        CHECKPOINTS_DELETED,
        WRITES_DELETED,
        OBJECTS_DELETED,
        VALUES_REHOMED,
        BYTES_FREED,
        ERRORS,
    ),
    "orphan_sweeper": (THREADS_SCANNED, OBJECTS_SCANNED, OBJECTS_DELETED, BYTES_FREED, ERRORS),
    # On-demand steps: each invocation reports what its step did.
    "maintenance": (
        OBJECTS_COPIED,
        ITEMS_COPIED,
        CHECKPOINTS_COPIED,
        CHECKPOINTS_DELETED,
        WRITES_DELETED,
        OBJECTS_DELETED,
        VALUES_REHOMED,
        BYTES_FREED,
        REQUESTS_REJECTED,
        # Threads or runs a prune or delete step recorded and skipped.
        ERRORS,
    ),
}


def metrics_namespace(env: Mapping[str, str] | None = None) -> str | None:
    """The namespace to emit under, from ``LANGGRAPH_DYNAMODB_METRICS_NAMESPACE``.

    Unset: ``DEFAULT_NAMESPACE``. Empty: ``None`` (emit no metrics).

    Raises:
        ValueError: longer than CloudWatch allows, or starting with ``AWS/``
            (reserved for AWS services: CloudWatch would drop the metrics).

    Example:
        >>> metrics_namespace({}), metrics_namespace({ENV_METRICS_NAMESPACE: ""})
        ('LangGraph/Checkpoints', None)
    """
    env = os.environ if env is None else env
    raw = env.get(ENV_METRICS_NAMESPACE)
    if raw is None:
        return DEFAULT_NAMESPACE
    namespace = raw.strip()
    if not namespace:
        return None
    if len(namespace) > _MAX_NAME or namespace.startswith("AWS/"):
        raise ValueError(
            f"{ENV_METRICS_NAMESPACE} must be 1-{_MAX_NAME} characters and not start with 'AWS/', "
            f"got {namespace!r}"
        )
    return namespace


def embedded_metrics(
    job: str,
    record: Mapping[str, Any],
    *,
    namespace: str,
    timestamp_ms: int,
    function_name: str | None = None,
) -> dict[str, Any]:
    """The EMF members to add at the top level of ``job``'s log record.

    Returns ``{}`` for a job with no metrics (e.g. an agent's own events). A
    metric whose report field is missing is left out rather than sent as 0.

    Example:
        >>> doc = embedded_metrics("orphan_sweeper", {"s3_objects_deleted": 2, "errors": []},
        ...                        namespace="NS", timestamp_ms=0)
        >>> doc["ObjectsDeleted"], doc["Errors"], doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
        (2, 0, [['Job']])
    """
    values = {m: m.value(record) for m in JOB_METRICS.get(job, ())}
    present = {m: v for m, v in values.items() if v is not None}
    if not present:
        return {}
    dims: dict[str, str] = {JOB_DIMENSION: job}
    if function_name:
        dims[FUNCTION_DIMENSION] = function_name
    return {
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": namespace,
                    "Dimensions": [list(dims)],
                    "Metrics": [{"Name": m.name, "Unit": m.unit} for m in present],
                }
            ],
        },
        **dims,
        **{m.name: v for m, v in present.items()},
    }
