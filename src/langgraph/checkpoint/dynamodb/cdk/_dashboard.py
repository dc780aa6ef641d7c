"""The store's CloudWatch dashboard: table, bucket, maintenance functions, jobs.

Built by ``CheckpointStore`` (``MonitoringOptions.dashboard``, on by default); the widgets
come in four rows, each under a text header:

* **Table**: requests per operation (``SuccessfulRequestLatency`` sample
  count), throttles and system errors, throttles by reason (hot key range,
  provisioned, on-demand maximum, account quota; table and each GSI),
  consumed capacity (table and each GSI), latency per operation;
* **Bucket** (with a bucket): requests, bytes up and down, errors and
  latency, from the bucket's request metrics configuration filtered to the
  checkpoint prefix; size and object count (S3's free daily storage metrics);
* **Functions**: each maintenance function's invocations, errors, duration
  and throttles, the reaper's iterator age and the dead-letter queues' depth;
* **Jobs**: the pruner's, reaper's and orphan sweeper's own counts, which
  their handlers print as embedded metrics (``lambdas.metrics``: the same
  names are imported here, never spelled twice).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb.lambdas.metrics import (
    FUNCTION_DIMENSION,
    JOB_DIMENSION,
    JOB_METRICS,
)

__all__ = ["BUCKET_METRICS_ID", "TABLE_OPERATIONS", "create_dashboard"]

#: Id of the bucket's request metrics configuration (the ``FilterId``
#: dimension of its ``AWS/S3`` request metrics).
BUCKET_METRICS_ID = "CheckpointPrefix"
#: DynamoDB operations the savers and maintenance functions issue (the grants'
#: read/write actions, and the pruner's ``Scan``): one line each. A lease-bound
#: saver's writes (``ConditionCheckItem`` in the grants) are ``TransactWriteItems``.
TABLE_OPERATIONS: tuple[str, ...] = (
    "GetItem",
    "BatchGetItem",
    "Query",
    "Scan",
    "PutItem",
    "UpdateItem",
    "BatchWriteItem",
    "TransactWriteItems",
)
_PERIOD = Duration.minutes(5)
#: The jobs run hourly (pruner) or daily (sweeper): an hour per point.
_JOB_PERIOD = Duration.hours(1)
_W, _H = 6, 6


def _header(markdown: str) -> cloudwatch.TextWidget:
    return cloudwatch.TextWidget(markdown=markdown, width=24, height=1)


def _graph(
    title: str,
    left: Sequence[cloudwatch.IMetric],
    *,
    right: Sequence[cloudwatch.IMetric] = (),
    width: int = _W,
    left_label: str | None = None,
    right_label: str | None = None,
) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(
        title=title,
        left=list(left),
        right=list(right) or None,
        width=width,
        height=_H,
        left_y_axis=cloudwatch.YAxisProps(label=left_label, show_units=False, min=0),
        right_y_axis=cloudwatch.YAxisProps(label=right_label, show_units=False, min=0) if right else None,
    )


def _ddb(
    table_name: str,
    metric_name: str,
    *,
    statistic: str = "Sum",
    label: str,
    operation: str | None = None,
    index: str | None = None,
) -> cloudwatch.Metric:
    dims = {"TableName": table_name}
    if operation is not None:
        dims["Operation"] = operation
    if index is not None:
        dims["GlobalSecondaryIndexName"] = index
    return cloudwatch.Metric(
        namespace="AWS/DynamoDB",
        metric_name=metric_name,
        dimensions_map=dims,
        statistic=statistic,
        period=_PERIOD,
        label=label,
    )


#: The cause part of DynamoDB's per-reason throttle metrics ("CloudWatch
#: throttling metrics", DynamoDB Developer Guide), one per ``ThrottlingReason``
#: limit type.
THROTTLE_CAUSES = ("KeyRangeThroughput", "ProvisionedThroughput", "MaxOnDemandThroughput", "AccountLimit")


def _table_row(table_name: str) -> list[cloudwatch.IWidget]:
    # Index names come from the schema, as for the throttle alarms.
    indexes = [g["IndexName"] for g in schema.table_definition("unused").get("GlobalSecondaryIndexes", [])]
    requests = [
        _ddb(table_name, "SuccessfulRequestLatency", statistic="SampleCount", operation=op, label=op)
        for op in TABLE_OPERATIONS
    ]
    throttles: list[cloudwatch.IMetric] = [
        _ddb(table_name, f"{kind}ThrottleEvents", label=f"{kind}ThrottleEvents") for kind in ("Read", "Write")
    ]
    throttles += [
        _ddb(table_name, f"{kind}ThrottleEvents", index=ix, label=f"{kind}ThrottleEvents {ix}")
        for ix in indexes
        for kind in ("Read", "Write")
    ]
    # By cause, as DynamoDB reports it in ThrottlingReasons: a hot key (key
    # range), provisioned capacity, the on-demand maximum, the account quota.
    by_reason = [
        _ddb(table_name, f"{kind}{cause}ThrottleEvents", index=ix, label=f"{kind}{cause} {ix or 'table'}")
        for ix in (None, *indexes)
        for kind in ("Read", "Write")
        for cause in THROTTLE_CAUSES
    ]
    errors = [
        _ddb(table_name, "SystemErrors", operation=op, label=f"SystemErrors {op}") for op in TABLE_OPERATIONS
    ]
    capacity = [
        _ddb(table_name, f"Consumed{kind}CapacityUnits", label=f"{kind} units") for kind in ("Read", "Write")
    ] + [
        _ddb(table_name, f"Consumed{kind}CapacityUnits", index=ix, label=f"{kind} units {ix}")
        for ix in indexes
        for kind in ("Read", "Write")
    ]
    latency = [
        _ddb(table_name, "SuccessfulRequestLatency", statistic="Average", operation=op, label=op)
        for op in TABLE_OPERATIONS
    ]
    return [
        _graph("Table requests per operation", requests, left_label="requests / 5 min"),
        _graph("Table throttles and system errors", throttles, right=errors, left_label="events"),
        _graph("Table throttles by reason (table and each index)", by_reason, left_label="events"),
        _graph("Table consumed capacity", capacity, left_label="capacity units / 5 min"),
        _graph("Table latency per operation (average)", latency, left_label="ms"),
    ]


def _bucket_row(bucket_name: str, request_metrics: bool) -> list[cloudwatch.IWidget]:
    def s3m(metric_name: str, statistic: str = "Sum", label: str | None = None) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace="AWS/S3",
            metric_name=metric_name,
            dimensions_map={"BucketName": bucket_name, "FilterId": BUCKET_METRICS_ID},
            statistic=statistic,
            period=_PERIOD,
            label=label or metric_name,
        )

    def storage(metric_name: str, storage_type: str, label: str) -> cloudwatch.Metric:
        # Free daily metrics (all versions, noncurrent ones included).
        return cloudwatch.Metric(
            namespace="AWS/S3",
            metric_name=metric_name,
            dimensions_map={"BucketName": bucket_name, "StorageType": storage_type},
            statistic="Average",
            period=Duration.days(1),
            label=label,
        )

    widgets: list[cloudwatch.IWidget] = []
    if request_metrics:
        widgets += [
            _graph(
                "Bucket requests (checkpoint prefix)",
                [
                    s3m(m)
                    for m in ("AllRequests", "GetRequests", "PutRequests", "DeleteRequests", "ListRequests")
                ],
                left_label="requests / 5 min",
            ),
            _graph(
                "Bucket bytes (checkpoint prefix)",
                [s3m("BytesUploaded"), s3m("BytesDownloaded")],
                left_label="bytes / 5 min",
            ),
            _graph(
                "Bucket errors and latency",
                [s3m("4xxErrors"), s3m("5xxErrors")],
                right=[
                    s3m("FirstByteLatency", "Average", "FirstByteLatency (avg)"),
                    s3m("TotalRequestLatency", "Average", "TotalRequestLatency (avg)"),
                ],
                left_label="errors",
                right_label="ms",
            ),
        ]
    widgets.append(
        _graph(
            "Bucket size (daily)",
            [storage("BucketSizeBytes", "StandardStorage", "Bytes (Standard)")],
            right=[storage("NumberOfObjects", "AllStorageTypes", "Objects")],
            left_label="bytes",
            right_label="objects",
        )
    )
    return widgets


def _function_rows(
    functions: Mapping[str, lambda_.Function], dlqs: Mapping[str, sqs.Queue]
) -> list[list[cloudwatch.IWidget]]:
    def each(metric_name: str, statistic: str = "Sum") -> list[cloudwatch.IMetric]:
        return [
            fn.metric(metric_name, statistic=statistic, period=_PERIOD, label=name)
            for name, fn in functions.items()
        ]

    first: list[cloudwatch.IWidget] = [
        _graph("Invocations", each("Invocations"), left_label="invocations / 5 min"),
        _graph("Errors", each("Errors"), left_label="errors / 5 min"),
        _graph("Duration (maximum)", each("Duration", "Maximum"), left_label="ms"),
        _graph("Throttles", each("Throttles"), left_label="throttles / 5 min"),
    ]
    second: list[cloudwatch.IWidget] = []
    if dlqs:
        second.append(
            _graph(
                "Dead-letter queues (messages visible)",
                [
                    q.metric_approximate_number_of_messages_visible(
                        period=_PERIOD, statistic="Maximum", label=name
                    )
                    for name, q in dlqs.items()
                ],
                left_label="messages",
            )
        )
    if "reaper" in functions:
        second.append(
            _graph(
                "Reaper iterator age (maximum)",
                [
                    functions["reaper"].metric(
                        "IteratorAge", statistic="Maximum", period=_PERIOD, label="reaper"
                    )
                ],
                left_label="ms",
            )
        )
    return [first, second] if second else [first]


def job_metric(
    namespace: str, job: str, function: lambda_.IFunction, metric_name: str, *, labelled: bool = True
) -> cloudwatch.Metric:
    """A job's count (``lambdas.metrics.JOB_METRICS``), as its handler emits it: hourly sums.

    ``labelled=False`` for an alarm: a label would make CDK write it as a
    metric-math ``Metrics`` list rather than a plain metric.

    Example:
        >>> job_metric("LangGraph/Checkpoints", "pruner", store.functions["pruner"], "Errors")  # doctest: +SKIP
    """
    return cloudwatch.Metric(
        namespace=namespace,
        metric_name=metric_name,
        # The dimensions the handler emits in Lambda: job and function name.
        dimensions_map={JOB_DIMENSION: job, FUNCTION_DIMENSION: function.function_name},
        statistic="Sum",
        period=_JOB_PERIOD,
        label=(f"{job} {metric_name}" if metric_name in ("Errors", "BytesFreed") else metric_name)
        if labelled
        else None,
    )


def _job_row(functions: Mapping[str, lambda_.Function], namespace: str) -> list[cloudwatch.IWidget]:
    def job_metric_of(job: str, metric_name: str) -> cloudwatch.Metric:
        return job_metric(namespace, job, functions[job], metric_name)

    jobs = [job for job in JOB_METRICS if job in functions]
    widgets: list[cloudwatch.IWidget] = [
        _graph(
            f"Job: {job}",
            [job_metric_of(job, m.name) for m in JOB_METRICS[job] if m.name not in ("Errors", "BytesFreed")],
            left_label="per hour",
        )
        for job in jobs
    ]
    shared = [(job, m.name) for job in jobs for m in JOB_METRICS[job] if m.name in ("Errors", "BytesFreed")]
    if shared:
        widgets.append(
            _graph(
                "Jobs: errors and bytes freed",
                [job_metric_of(job, name) for job, name in shared if name == "Errors"],
                right=[job_metric_of(job, name) for job, name in shared if name == "BytesFreed"],
                left_label="errors per hour",
                right_label="bytes per hour",
            )
        )
    return widgets


def create_dashboard(
    scope: Construct,
    construct_id: str,
    *,
    table_name: str,
    bucket_name: str | None,
    bucket_request_metrics: bool,
    functions: Mapping[str, lambda_.Function],
    dlqs: Mapping[str, sqs.Queue],
    namespace: str | None,
    dashboard_name: str | None = None,
) -> cloudwatch.Dashboard:
    """The store's dashboard (see the module docstring for its widgets).

    Args:
        scope: Parent construct (the ``CheckpointStore``).
        construct_id: Id of the dashboard construct.
        table_name: The checkpoint table's name (a token is fine).
        bucket_name: The payload bucket's name, or ``None`` (no bucket row).
        bucket_request_metrics: Whether the bucket has the request metrics
            configuration ``BUCKET_METRICS_ID`` (otherwise only its daily size).
        functions: Maintenance functions by job name.
        dlqs: Their dead-letter queues by job name.
        namespace: The jobs' embedded metrics namespace (``None``: no jobs row).
        dashboard_name: Physical name (default: generated by CloudFormation).

    Returns:
        The dashboard.

    Example:
        >>> store.dashboard.add_widgets(my_agent_widget)  # doctest: +SKIP
    """
    dashboard = cloudwatch.Dashboard(
        scope,
        construct_id,
        dashboard_name=dashboard_name,
        # The sweeper runs daily: a week shows its trend.
        default_interval=Duration.days(7),
    )
    dashboard.add_widgets(_header("## Checkpoint table"))
    dashboard.add_widgets(*_table_row(table_name))
    if bucket_name is not None:
        dashboard.add_widgets(_header("## Payload bucket"))
        dashboard.add_widgets(*_bucket_row(bucket_name, bucket_request_metrics))
    if functions:
        dashboard.add_widgets(_header("## Maintenance functions"))
        for row in _function_rows(functions, dlqs):
            dashboard.add_widgets(*row)
        if namespace is not None:
            dashboard.add_widgets(_header(f"## Maintenance jobs (embedded metrics, namespace `{namespace}`)"))
            dashboard.add_widgets(*_job_row(functions, namespace))
    return dashboard
