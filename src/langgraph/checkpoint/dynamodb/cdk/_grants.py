"""Least-privilege IAM for a ``CheckpointStore``: the actions, the statements, the grants.

Every action list here is read from what the code paths issue (the savers,
each maintenance handler down to the saver): nothing is granted that a path
does not call, and the only wildcards are the ones cdk-nag is told about, with
the reason (:func:`acknowledge_grant_wildcards`).

The statement builders take the store and read its public attributes
(``table_arn``, ``bucket``, ``s3_key_prefix``, ``kms_key``, ``track_threads``);
``CheckpointStore``'s ``grant_*`` and ``*_statements`` methods call them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb.cdk._nag import acknowledge

if TYPE_CHECKING:
    from langgraph.checkpoint.dynamodb.cdk._store import CheckpointStore

__all__ = [
    "CURSOR_ACTIONS",
    "DYNAMODB_MAINTENANCE_ACTIONS",
    "DYNAMODB_READ_ACTIONS",
    "DYNAMODB_READ_WRITE_ACTIONS",
    "FUNCTION_DYNAMODB_ACTIONS",
    "FUNCTION_S3_ACTIONS",
    "KMS_READ_ACTIONS",
    "KMS_READ_WRITE_ACTIONS",
    "LOGS_KEY_ACTIONS",
    "S3_READ_ACTIONS",
    "S3_READ_WRITE_ACTIONS",
    "STREAM_READ_ACTIONS",
    "acknowledge_grant_wildcards",
    "function_statements",
    "grant_statements",
    "kms_statement",
    "layout_read_statement",
    "maintenance_statements",
    "nag_resource_string",
    "read_statements",
    "read_write_statements",
    "s3_statements",
    "saver_operations",
    "tenant_read_write_statements",
]

#: Every DynamoDB action the savers issue against the table (``list(None)``
#: scans the table: a tool's operation, deliberately not granted here).
#: ``DescribeTable``/``CreateTable``/``UpdateTimeToLive`` are used only by
#: ``setup()``, which is for development: a deployed table exists already.
#: ``ConditionCheckItem``: IAM authorizes each element of a
#: ``TransactWriteItems`` as its own action (``Put`` as ``PutItem``, ``Update``
#: as ``UpdateItem``, ``ConditionCheck`` as ``ConditionCheckItem``), and a
#: saver bound to a lease (``lock.ThreadLease.bind``, ``lock.run_once``)
#: writes through ``lock._operations.fenced_write``: a ``ConditionCheck`` of
#: the thread's lock item (in the thread's own partition) plus the write.
#: No ``DeleteItem``: the savers delete in ``BatchWriteItem`` batches, and a
#: released lease keeps its lock item (so that its fencing token only grows).
DYNAMODB_READ_WRITE_ACTIONS: tuple[str, ...] = (
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
)
DYNAMODB_READ_ACTIONS: tuple[str, ...] = ("dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query")
#: IAM action -> the DynamoDB API operation (CloudWatch's ``Operation``
#: dimension) that issues it, where the two differ: a ``ConditionCheck`` only
#: exists inside a ``TransactWriteItems``.
_OPERATION_OF_ACTION: Mapping[str, str] = {"ConditionCheckItem": "TransactWriteItems"}


def saver_operations() -> list[str]:
    """The DynamoDB API operations behind ``DYNAMODB_READ_WRITE_ACTIONS``, sorted (the alarms' metrics)."""
    actions = (a.split(":", 1)[1] for a in DYNAMODB_READ_WRITE_ACTIONS)
    return sorted({_OPERATION_OF_ACTION.get(a, a) for a in actions})


#: ``DeleteObjects`` (batch delete) is authorized as ``s3:DeleteObject``.
S3_READ_WRITE_ACTIONS: tuple[str, ...] = ("s3:DeleteObject", "s3:GetObject", "s3:PutObject")
S3_READ_ACTIONS: tuple[str, ...] = ("s3:GetObject",)
#: The operator's extra (``grant_maintenance``): the CLI lists threads and runs
#: ``prune``/``purge_expired``, which walk the table or the threads index with
#: ``Scan``. Agents never scan; of the functions only the pruner does.
DYNAMODB_MAINTENANCE_ACTIONS: tuple[str, ...] = ("dynamodb:Scan",)
KMS_READ_WRITE_ACTIONS: tuple[str, ...] = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey")
KMS_READ_ACTIONS: tuple[str, ...] = ("kms:Decrypt",)
#: What each maintenance function's code path issues, read from its handler
#: down to the saver (``lambdas/<name>.py`` of this package -> ``_maintenance.sweeps`` ->
#: ``_maintenance.deleting``/``pruning``/``keep``/``read``), as IAM actions on the table. Cursor actions
#: (``GetItem``/``PutItem`` on the lifecycle state item, ``_read_cursor`` and
#: ``_claim_cursor``) are granted apart, confined to that item's partition.
#:
#: * pruner: ``Scan`` (its page walk), ``Query`` (``load_thread``),
#:   ``BatchWriteItem`` (``_ordered_deletes``, and the blob items of values
#:   ``rehome_held_values`` moves out of a deleted checkpoint), ``UpdateItem``
#:   (a delete's tombstones and the retired thread head, which keep a run still
#:   in flight from bringing a deleted thread back);
#: * reaper: ``Query``, ``BatchWriteItem`` and ``UpdateItem``, as the pruner
#:   (``_maintenance.deleting.reap_thread`` deletes, re-homes and leaves tombstones too), and no
#:   ``Scan``: it is handed its threads;
#: * orphan sweeper: ``Query`` only (it reads which objects a thread
#:   references); it never writes or deletes an item;
#: * maintenance (on request, ``lambdas/maintenance.py`` -> ``_maintenance.steps``):
#:   ``Query`` (``load_thread``; ``delete_for_runs`` also queries the run
#:   index, granted apart on that index only), ``BatchWriteItem`` (a copy's
#:   puts, the deletes of prune and delete), ``UpdateItem`` (a delete's
#:   tombstones and retired head, a copy's thread head); no ``Scan``, no cursor.
FUNCTION_DYNAMODB_ACTIONS: Mapping[str, tuple[str, ...]] = {
    "pruner": ("dynamodb:BatchWriteItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:UpdateItem"),
    "reaper": ("dynamodb:BatchWriteItem", "dynamodb:Query", "dynamodb:UpdateItem"),
    "orphan_sweeper": ("dynamodb:Query",),
    "maintenance": ("dynamodb:BatchWriteItem", "dynamodb:Query", "dynamodb:UpdateItem"),
}
#: Object actions under the key prefix (plus ``s3:ListBucket`` on the prefix
#: for all of them). No scheduled function reads an object: pointers and
#: version keys are in the items. ``PutObject`` is the re-homing of a held
#: value too large for a blob item; ``DeleteObject`` authorizes
#: ``DeleteObjects``. The maintenance function's ``copy_thread`` copies objects
#: server-side (``CopyObject`` is authorized as ``GetObject`` on the source and
#: ``PutObject`` on the target).
FUNCTION_S3_ACTIONS: Mapping[str, tuple[str, ...]] = {
    "pruner": ("s3:DeleteObject", "s3:PutObject"),
    "reaper": ("s3:DeleteObject", "s3:PutObject"),
    "orphan_sweeper": ("s3:DeleteObject",),
    "maintenance": ("s3:DeleteObject", "s3:GetObject", "s3:PutObject"),
}
#: The cursor items' actions (``_read_cursor``: ``GetItem``; ``_claim_cursor``:
#: a conditional ``PutItem``), for the two functions that walk pages.
CURSOR_ACTIONS: tuple[str, ...] = ("dynamodb:GetItem", "dynamodb:PutItem")
#: Actions the CloudWatch Logs service needs on a customer key that encrypts
#: log groups (the AWS-documented set, spelled out without wildcards).
LOGS_KEY_ACTIONS: tuple[str, ...] = (
    "kms:Decrypt",
    "kms:DescribeKey",
    "kms:Encrypt",
    "kms:GenerateDataKey",
    "kms:GenerateDataKeyWithoutPlaintext",
    "kms:ReEncryptFrom",
    "kms:ReEncryptTo",
)

#: What the Lambda service needs to poll a DynamoDB stream for the reaper.
STREAM_READ_ACTIONS: tuple[str, ...] = (
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
)


def kms_statement(
    store: CheckpointStore, actions: Sequence[str], *, s3: bool = True
) -> iam.PolicyStatement | None:
    """The customer key's statement (``None`` without one): usable through DynamoDB/S3 only."""
    if store.kms_key is None:
        return None
    region = Stack.of(store).region
    services = [f"dynamodb.{region}.amazonaws.com"]
    if store.bucket is not None and s3:
        services.append(f"s3.{region}.amazonaws.com")
    return iam.PolicyStatement(
        actions=list(actions),
        resources=[store.kms_key.key_arn],
        # Only usable through DynamoDB/S3 on behalf of the grantee: no raw
        # Encrypt/Decrypt calls against the key.
        conditions={"StringEquals": {"kms:ViaService": services}},
    )


def _with_kms(
    store: CheckpointStore, stmts: list[iam.PolicyStatement], actions: Sequence[str], *, s3: bool = True
) -> list[iam.PolicyStatement]:
    kms_stmt = kms_statement(store, actions, s3=s3)
    return [*stmts, *([kms_stmt] if kms_stmt else [])]


def s3_statements(
    store: CheckpointStore, object_actions: Sequence[str], prefix: str
) -> list[iam.PolicyStatement]:
    """Object actions under ``prefix`` and ``ListBucket`` with that prefix (none without a bucket)."""
    if store.bucket is None:
        return []
    return [
        iam.PolicyStatement(
            actions=list(object_actions), resources=[store.bucket.arn_for_objects(f"{prefix}*")]
        ),
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[store.bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
        ),
    ]


def read_write_statements(store: CheckpointStore) -> list[iam.PolicyStatement]:
    """What ``CheckpointStore.grant_read_write`` attaches."""
    stmts = [
        iam.PolicyStatement(actions=list(DYNAMODB_READ_WRITE_ACTIONS), resources=[store.table_arn]),
        # run_id-index (delete_for_runs) and threads-index (prune, thread listing).
        iam.PolicyStatement(actions=["dynamodb:Query"], resources=[f"{store.table_arn}/index/*"]),
    ]
    stmts += s3_statements(store, S3_READ_WRITE_ACTIONS, store.s3_key_prefix)
    return _with_kms(store, stmts, KMS_READ_WRITE_ACTIONS)


def maintenance_statements(store: CheckpointStore) -> list[iam.PolicyStatement]:
    """What ``CheckpointStore.grant_maintenance`` attaches: read/write plus ``Scan``."""
    scan = iam.PolicyStatement(
        actions=list(DYNAMODB_MAINTENANCE_ACTIONS),
        resources=[store.table_arn, f"{store.table_arn}/index/*"],
    )
    stmts = read_write_statements(store)
    # Keep the KMS statement last, as in the other grants.
    if store.kms_key is not None:
        return [*stmts[:-1], scan, stmts[-1]]
    return [*stmts, scan]


def read_statements(store: CheckpointStore) -> list[iam.PolicyStatement]:
    """What ``CheckpointStore.grant_read`` attaches."""
    stmts = [
        iam.PolicyStatement(actions=list(DYNAMODB_READ_ACTIONS), resources=[store.table_arn]),
        iam.PolicyStatement(actions=["dynamodb:Query"], resources=[f"{store.table_arn}/index/*"]),
    ]
    stmts += s3_statements(store, S3_READ_ACTIONS, store.s3_key_prefix)
    return _with_kms(store, stmts, KMS_READ_ACTIONS)


def layout_read_statement(table_arn: str) -> iam.PolicyStatement:
    """``GetItem`` of the table's layout items only (``schema.LAYOUT_PK``): a head writer's shard count."""
    return iam.PolicyStatement(
        actions=["dynamodb:GetItem"],
        resources=[table_arn],
        conditions={"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [schema.LAYOUT_PK]}},
    )


def tenant_read_write_statements(store: CheckpointStore, tenant_prefix: str) -> list[iam.PolicyStatement]:
    """What ``CheckpointStore.grant_tenant_read_write`` attaches."""
    leading = schema.tenant_partition_prefix(tenant_prefix) + "*"
    stmts = [
        iam.PolicyStatement(
            actions=list(DYNAMODB_READ_WRITE_ACTIONS),
            # The table only: on a GSI, LeadingKeys would be the index's
            # partition key (run id, shard), and both indexes span tenants.
            resources=[store.table_arn],
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [leading]}},
        ),
        # The threads index's layout (its shard count, nothing of any
        # tenant's): read, never written, so no tenant can widen every
        # listing. Writers without it fall back to the minimum count.
        layout_read_statement(store.table_arn),
    ]
    stmts += s3_statements(
        store, S3_READ_WRITE_ACTIONS, schema.tenant_s3_prefix(store.s3_key_prefix, tenant_prefix)
    )
    return _with_kms(store, stmts, KMS_READ_WRITE_ACTIONS)


def function_statements(store: CheckpointStore, name: str) -> list[iam.PolicyStatement]:
    """The table, bucket and key statements of one maintenance function's role.

    See ``CheckpointStore.function_statements``, which documents them.
    """
    if name not in FUNCTION_DYNAMODB_ACTIONS:
        raise ValueError(f"unknown maintenance function {name!r}; one of {sorted(FUNCTION_DYNAMODB_ACTIONS)}")
    table_arn = store.table_arn
    table_actions = [a for a in FUNCTION_DYNAMODB_ACTIONS[name] if a != "dynamodb:Scan"]
    stmts = [iam.PolicyStatement(actions=table_actions, resources=[table_arn])]
    if "dynamodb:Scan" in FUNCTION_DYNAMODB_ACTIONS[name]:
        # The pruner's page walk: one or the other, never both.
        scanned = f"{table_arn}/index/{schema.THREADS_INDEX_NAME}" if store.track_threads else table_arn
        stmts.append(iam.PolicyStatement(actions=["dynamodb:Scan"], resources=[scanned]))
    if name == "maintenance":
        # delete_for_runs finds a run's threads through the run index: that index only.
        stmts.append(
            iam.PolicyStatement(
                actions=["dynamodb:Query"], resources=[f"{table_arn}/index/{schema.RUN_INDEX_NAME}"]
            )
        )
    if name == "maintenance" and store.track_threads:
        # copy_thread writes the copy's head: its shard comes from the
        # threads index's layout item (read only; schema.LAYOUT_PK).
        stmts.append(layout_read_statement(table_arn))
    if name in ("pruner", "orphan_sweeper"):
        stmts.append(
            iam.PolicyStatement(
                actions=list(CURSOR_ACTIONS),
                resources=[table_arn],
                conditions={"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [schema.LIFECYCLE_PK]}},
            )
        )
    stmts += s3_statements(store, FUNCTION_S3_ACTIONS[name], store.s3_key_prefix)
    # The sweeper writes only its cursor item: the key is used through
    # DynamoDB alone (listing and deleting objects needs no key).
    return _with_kms(store, stmts, KMS_READ_WRITE_ACTIONS, s3=name != "orphan_sweeper")


def grant_statements(
    scope: Construct, grantee: iam.IGrantable, statements: Sequence[iam.PolicyStatement]
) -> iam.Grant:
    """Add ``statements`` to ``grantee``'s policy, and acknowledge their wildcards (see below)."""
    grant: iam.Grant | None = None
    for stmt in statements:
        g = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=stmt.actions,
            resource_arns=stmt.resources,
            conditions=stmt.conditions or None,
        )
        grant = g if grant is None else grant.combine(g)
    assert grant is not None
    acknowledge_grant_wildcards(scope, grantee, statements)
    return grant


_WILDCARD_REASONS: Mapping[str, str] = {
    "index/*": "Query (and for the maintenance grant Scan) on this table's own GSIs "
    "(run_id-index, threads-index, named by the key schema); no other table is covered.",
    "objects": "Object actions are confined to the checkpoint key prefix the saver writes under "
    "(per-thread keys are created at run time, so a prefix wildcard is the narrowest ARN).",
}


def acknowledge_grant_wildcards(
    scope: Construct, grantee: iam.IGrantable, statements: Sequence[iam.PolicyStatement]
) -> None:
    """Acknowledge cdk-nag's IAM5 finding for each wildcard resource of ``statements`` on ``grantee``.

    The only wildcards are the table's own indexes (``<table>/index/*``) and
    the objects under the key prefix; ``scope`` resolves the resources (its stack).
    """
    principal = grantee.grant_principal
    if not isinstance(principal, Construct):
        return
    stack = Stack.of(scope)
    for stmt in statements:
        for res in stmt.resources:
            finding = nag_resource_string(stack.resolve(res))
            if finding is None or "*" not in finding:
                continue
            reason = _WILDCARD_REASONS["index/*" if finding.endswith("/index/*") else "objects"]
            acknowledge(principal, f"AwsSolutions-IAM5[Resource::{finding}]", reason)


def nag_resource_string(resolved: Any) -> str | None:
    """Render a resolved IAM resource the way cdk-nag names it in IAM5 findings.

    cdk-nag replaces ``Fn::GetAtt`` with ``<LogicalId.Attr>`` and ``Ref`` with
    ``<LogicalId>`` and joins ``Fn::Join`` parts.
    """
    if isinstance(resolved, str):
        return resolved
    if isinstance(resolved, dict):
        if "Fn::GetAtt" in resolved:
            logical_id, attr = resolved["Fn::GetAtt"]
            return f"<{logical_id}.{attr}>"
        if "Ref" in resolved:
            return f"<{resolved['Ref']}>"
        if "Fn::Join" in resolved:
            sep, parts = resolved["Fn::Join"]
            rendered = [nag_resource_string(p) for p in parts]
            if any(r is None for r in rendered):
                return None
            return sep.join(r for r in rendered if r is not None)
    return None
