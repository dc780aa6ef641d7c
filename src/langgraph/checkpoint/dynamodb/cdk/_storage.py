"""The store's stateful resources: the checkpoint table and the payload and access-log buckets.

Their logical ids are pinned to the store's construct id (:func:`pin_logical_id`),
so that moving the store in the construct tree never replaces them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb.cdk._dashboard import BUCKET_METRICS_ID
from langgraph.checkpoint.dynamodb.cdk._table import cfn_table_properties

if TYPE_CHECKING:
    from langgraph.checkpoint.dynamodb.cdk._options import BucketOptions
    from langgraph.checkpoint.dynamodb.cdk._store import CheckpointStore

__all__ = ["PITR_WINDOW", "create_buckets", "create_table", "pin_logical_id"]

#: Default retention of noncurrent object versions: DynamoDB point-in-time
#: recovery reaches back at most 35 days, so an object deleted at any moment
#: a table restore can go back to is still there as a noncurrent version.
PITR_WINDOW = Duration.days(35)


def pin_logical_id(store: CheckpointStore, resource: Any, suffix: str) -> None:
    """Give a resource of ``store`` a logical id derived from the store's id only (``<id><suffix>``).

    CDK's default logical id hashes the whole construct path: wrapping the
    store in another construct later would rename the table, and
    CloudFormation would create a new, empty one. ``<id><suffix>`` is
    stable under such refactors and readable in the console. Stateful
    resources are recorded in ``store.logical_ids``.
    """
    logical_id = f"{store.node.id}{suffix}"
    resource.override_logical_id(logical_id)
    store.logical_ids[suffix] = logical_id


def create_table(
    store: CheckpointStore, table_name: str | None, deletion_protection: bool | None
) -> dynamodb.CfnTable:
    """The checkpoint table, from ``schema.table_definition()`` (see ``CheckpointStore``)."""
    definition = schema.table_definition(table_name or "unused")
    ttl = schema.ttl_specification()
    sse: dict[str, Any] = {"sse_enabled": True, "sse_type": "KMS"}
    if store.kms_key is not None:
        sse["kms_master_key_id"] = store.kms_key.key_arn
    if deletion_protection is None:
        deletion_protection = store.removal_policy == RemovalPolicy.RETAIN
    table = dynamodb.CfnTable(
        store,
        "Table",
        table_name=table_name,
        **cfn_table_properties({k: v for k, v in definition.items() if k != "TableName"}),
        time_to_live_specification=dynamodb.CfnTable.TimeToLiveSpecificationProperty(
            attribute_name=ttl["AttributeName"], enabled=ttl["Enabled"]
        ),
        point_in_time_recovery_specification=dynamodb.CfnTable.PointInTimeRecoverySpecificationProperty(
            point_in_time_recovery_enabled=True
        ),
        # Without a key id this is the AWS managed key (aws/dynamodb), which
        # shows up in CloudTrail, unlike the default AWS owned key.
        sse_specification=dynamodb.CfnTable.SSESpecificationProperty(**sse),
        deletion_protection_enabled=deletion_protection,
    )
    table.apply_removal_policy(store.removal_policy)
    pin_logical_id(store, table, "Table")
    return table


def create_buckets(
    store: CheckpointStore, options: BucketOptions, *, request_metrics: bool
) -> tuple[s3.Bucket, s3.Bucket]:
    """The access-log bucket and the payload bucket (in that order), pinned."""
    log_bucket = _access_log_bucket(store, options.access_log_retention)
    pin_logical_id(store, log_bucket.node.default_child, "AccessLogBucket")
    bucket = _payload_bucket(store, options, log_bucket, request_metrics=request_metrics)
    pin_logical_id(store, bucket.node.default_child, "Bucket")
    return log_bucket, bucket


def _access_log_bucket(store: CheckpointStore, retention: Duration | None) -> s3.Bucket:
    return s3.Bucket(
        store,
        "AccessLogBucket",
        # Server access logs can only be delivered to SSE-S3 buckets.
        encryption=s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        removal_policy=store.removal_policy,
        lifecycle_rules=[
            s3.LifecycleRule(
                id="ExpireAccessLogs",
                expiration=retention or Duration.days(90),
                abort_incomplete_multipart_upload_after=Duration.days(1),
            )
        ],
    )


def _lifecycle_rules(options: BucketOptions) -> list[s3.LifecycleRule]:
    lifecycle = [
        s3.LifecycleRule(
            id="AbortIncompleteMultipartUploads",
            abort_incomplete_multipart_upload_after=Duration.days(1),
        )
    ]
    if options.versioned:
        lifecycle.append(
            s3.LifecycleRule(
                id="ExpireNoncurrentVersions",
                # Every delete (pruner, reaper, sweeper, delete_thread)
                # leaves the object as a noncurrent version; nothing reads
                # those except a restore, so they go once no restore can
                # need them.
                noncurrent_version_expiration=options.noncurrent_version_expiration or PITR_WINDOW,
                # Then the delete marker is the key's only version: remove
                # it too, or the listing cost grows with every thread ever
                # deleted.
                expired_object_delete_marker=True,
            )
        )
    return lifecycle


def _payload_bucket(
    store: CheckpointStore, options: BucketOptions, log_bucket: s3.Bucket, *, request_metrics: bool
) -> s3.Bucket:
    kms_key = store.kms_key
    return s3.Bucket(
        store,
        "Bucket",
        bucket_name=options.name,
        encryption=s3.BucketEncryption.KMS if kms_key is not None else s3.BucketEncryption.S3_MANAGED,
        encryption_key=kms_key,
        # One KMS call per bucket key instead of per object: payload writes
        # are frequent and small.
        bucket_key_enabled=True if kms_key is not None else None,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        versioned=options.versioned,
        removal_policy=store.removal_policy,
        server_access_logs_bucket=log_bucket,
        server_access_logs_prefix="checkpoint-bucket/",
        lifecycle_rules=_lifecycle_rules(options),
        # Request metrics (1-minute, billed as custom metrics) only for the
        # checkpoint prefix: the savers' traffic, not other users of the bucket.
        metrics=[s3.BucketMetrics(id=BUCKET_METRICS_ID, prefix=store.s3_key_prefix)]
        if request_metrics
        else None,
    )
