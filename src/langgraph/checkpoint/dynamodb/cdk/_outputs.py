"""The store's stack outputs: what a deploy prints and ``aws cloudformation describe-stacks`` reads.

One ``CfnOutput`` per name a user needs after ``cdk deploy``: the table, the
bucket, each maintenance function and the alarm topic. Their logical ids are
pinned to the construct's id (``<id>TableName``, ``<id>PrunerFunctionName``...),
as the stateful resources' are, so a refactor of the construct tree does not
rename an output a script reads.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput

__all__ = ["add_outputs", "output_id"]


def output_id(store_id: str, what: str) -> str:
    """The pinned logical id of one output: the store's id, then ``what`` in CamelCase.

    Example:
        >>> output_id("Checkpoints", "orphan_sweeper_function_name")
        'CheckpointsOrphanSweeperFunctionName'
    """
    return store_id + "".join(part[:1].upper() + part[1:] for part in what.split("_"))


def _output(store: Any, what: str, value: str, description: str) -> CfnOutput:
    out = CfnOutput(store, output_id("Output", what), value=value, description=description)
    out.override_logical_id(output_id(store.node.id, what))
    return out


def add_outputs(store: Any) -> dict[str, CfnOutput]:
    """Add the outputs to ``store`` (a ``CheckpointStore``); returns them by name (``store.outputs``)."""
    outputs = {
        "table_name": _output(store, "table_name", store.table_name, "Checkpoint table"),
        "table_arn": _output(store, "table_arn", store.table_arn, "Checkpoint table ARN"),
    }
    if store.bucket is not None:
        outputs["bucket_name"] = _output(store, "bucket_name", store.bucket.bucket_name, "Payload bucket")
    for name, fn in sorted(store.functions.items()):
        key = f"{name}_function_name"
        outputs[key] = _output(store, key, fn.function_name, f"Maintenance function: {name}")
    if store.alarm_topic is not None:
        outputs["alarm_topic_arn"] = _output(
            store, "alarm_topic_arn", store.alarm_topic.topic_arn, "Alarm notifications (SNS)"
        )
    return outputs
