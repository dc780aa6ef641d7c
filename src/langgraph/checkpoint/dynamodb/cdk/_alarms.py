"""The store's CloudWatch alarms: one helper that creates and wires them, and the table's.

Every alarm fires at ``>= threshold`` in one 5-minute period, treats missing
data as not breaching (no data means no errors, no messages, no throttles),
and, when the store has an ``alarm_topic``, notifies it of ALARM and OK. The
functions' alarms (errors, throttles, dead letters, skipped threads, the
reaper's iterator age) are created next to the functions (``_functions``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_lambda as lambda_

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb.cdk._grants import saver_operations

if TYPE_CHECKING:
    from langgraph.checkpoint.dynamodb.cdk._store import CheckpointStore

__all__ = ["PERIOD", "add_alarm", "add_errors_alarm", "add_table_alarms"]

#: The period of every alarm.
PERIOD = Duration.minutes(5)


def add_alarm(
    store: CheckpointStore,
    construct_id: str,
    metric: cloudwatch.IMetric,
    *,
    threshold: float,
    description: str,
) -> cloudwatch.Alarm:
    """An alarm in ``store`` (``>= threshold`` once), wired to its topic and recorded in ``store.alarms``."""
    alarm = cloudwatch.Alarm(
        store,
        construct_id,
        metric=metric,
        threshold=threshold,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        # No data means no errors, no messages, no throttles.
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=description,
    )
    if store.alarm_topic is not None:
        action = cw_actions.SnsAction(store.alarm_topic)
        alarm.add_alarm_action(action)
        alarm.add_ok_action(action)
    store.alarms[construct_id] = alarm
    return alarm


def add_errors_alarm(
    store: CheckpointStore, function: lambda_.IFunction, construct_id: str, *, description: str | None = None
) -> cloudwatch.Alarm:
    """An alarm on ``function``'s ``Errors`` (>= 1 in 5 minutes); see ``CheckpointStore.add_errors_alarm``."""
    return add_alarm(
        store,
        construct_id,
        function.metric_errors(period=PERIOD, statistic="Sum"),
        threshold=1,
        description=description or "A Lambda function using the checkpoint store failed.",
    )


def _table_metric(
    store: CheckpointStore, metric_name: str, index_name: str | None = None
) -> cloudwatch.Metric:
    dims = {"TableName": store.table_name}
    if index_name is not None:
        dims["GlobalSecondaryIndexName"] = index_name
    return cloudwatch.Metric(
        namespace="AWS/DynamoDB",
        metric_name=metric_name,
        dimensions_map=dims,
        statistic="Sum",
        period=PERIOD,
    )


def add_table_alarms(store: CheckpointStore) -> None:
    """Read and write throttles (table and every GSI), and system errors of the savers' operations."""
    # Index names come from the schema: a GSI added there is watched too.
    indexes = [g["IndexName"] for g in schema.table_definition("unused").get("GlobalSecondaryIndexes", [])]
    for kind in ("Read", "Write"):
        metrics = {"t": _table_metric(store, f"{kind}ThrottleEvents")}
        for i, index in enumerate(indexes):
            metrics[f"g{i}"] = _table_metric(store, f"{kind}ThrottleEvents", index)
        add_alarm(
            store,
            f"Table{kind}ThrottleAlarm",
            cloudwatch.MathExpression(
                expression="+".join(f"FILL({k},0)" for k in metrics),
                using_metrics=metrics,
                label=f"{kind}ThrottleEvents (table + GSIs)",
                period=PERIOD,
            ),
            threshold=1,
            description=f"The checkpoint table or one of its indexes throttled {kind.lower()}s.",
        )
    system_errors = {
        f"e{i}": cloudwatch.Metric(
            namespace="AWS/DynamoDB",
            metric_name="SystemErrors",
            dimensions_map={"TableName": store.table_name, "Operation": op},
            statistic="Sum",
            period=PERIOD,
        )
        for i, op in enumerate(saver_operations())
    }
    add_alarm(
        store,
        "TableSystemErrorsAlarm",
        cloudwatch.MathExpression(
            expression="+".join(f"FILL({k},0)" for k in system_errors),
            using_metrics=system_errors,
            label="SystemErrors (saver operations)",
            period=PERIOD,
        ),
        threshold=1,
        description="DynamoDB returned HTTP 500s for the checkpoint table.",
    )
