"""``CheckpointStore``: the table, bucket, maintenance Lambdas, alarms and grants."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aws_cdk import (
    Annotations,
    ArnFormat,
    AssetHashType,
    BundlingOptions,
    DockerImage,
    Duration,
    RemovalPolicy,
    Stack,
    Token,
)
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from langgraph.checkpoint.dynamodb import config, schema
from langgraph.checkpoint.dynamodb.cdk._bundling import (
    PipLocalBundling,
    asset_fingerprint,
    library_package_dir,
    library_requirements,
    pip_platform,
)
from langgraph.checkpoint.dynamodb.cdk._dashboard import BUCKET_METRICS_ID, create_dashboard, job_metric
from langgraph.checkpoint.dynamodb.cdk._nag import acknowledge
from langgraph.checkpoint.dynamodb.cdk._table import cfn_table_properties
from langgraph.checkpoint.dynamodb.lambdas.metrics import (
    DEFAULT_NAMESPACE,
    ENV_METRICS_NAMESPACE,
    ERRORS,
    JOB_METRICS,
    metrics_namespace,
)
from langgraph.checkpoint.dynamodb.lambdas.tokens import ENV_MAINTENANCE_TOKEN_SECRET

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
    "MAINTENANCE_HANDLERS",
    "PITR_WINDOW",
    "S3_READ_ACTIONS",
    "S3_READ_WRITE_ACTIONS",
    "STREAM_READ_ACTIONS",
    "CheckpointStore",
    "bundled_lambda_code",
    "default_lambda_code_dir",
    "reaper_filter_pattern",
    "runtime_acknowledgement_reason",
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


def _saver_operations() -> list[str]:
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
#: down to the saver (``lambdas/<name>.py`` of this package -> ``_jobs`` ->
#: ``_deleting``/``_maintain``/``_read``), as IAM actions on the table. Cursor actions
#: (``GetItem``/``PutItem`` on the lifecycle state item, ``_read_cursor`` and
#: ``_claim_cursor``) are granted apart, confined to that item's partition.
#:
#: * pruner: ``Scan`` (its page walk), ``Query`` (``_load_thread``),
#:   ``BatchWriteItem`` (``_ordered_deletes``, and the blob items of values
#:   ``_rehome_held_values`` moves out of a deleted checkpoint), ``UpdateItem``
#:   (a delete's tombstones and the retired thread head, which keep a run still
#:   in flight from bringing a deleted thread back);
#: * reaper: ``Query``, ``BatchWriteItem`` and ``UpdateItem``, as the pruner
#:   (``_deleting.reap_thread`` deletes, re-homes and leaves tombstones too), and no
#:   ``Scan``: it is handed its threads;
#: * orphan sweeper: ``Query`` only (it reads which objects a thread
#:   references); it never writes or deletes an item;
#: * maintenance (on request, ``lambdas/maintenance.py`` -> ``_resumable``):
#:   ``Query`` (``_load_thread``; ``delete_for_runs`` also queries the run
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
#: Default retention of noncurrent object versions: DynamoDB point-in-time
#: recovery reaches back at most 35 days, so an object deleted at any moment
#: a table restore can go back to is still there as a noncurrent version.
PITR_WINDOW = Duration.days(35)

#: What the Lambda service needs to poll a DynamoDB stream for the reaper.
STREAM_READ_ACTIONS: tuple[str, ...] = (
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
)

#: Maintenance function -> Lambda handler string. The handlers ship inside
#: this package (``langgraph.checkpoint.dynamodb.lambdas``), so any asset that
#: bundles the library (every ``bundled_lambda_code`` asset) can run them, and
#: the construct works from an installed wheel.
MAINTENANCE_HANDLERS: Mapping[str, str] = {
    "pruner": "langgraph.checkpoint.dynamodb.lambdas.pruner.handler",
    "reaper": "langgraph.checkpoint.dynamodb.lambdas.reaper.handler",
    "orphan_sweeper": "langgraph.checkpoint.dynamodb.lambdas.orphan_sweeper.handler",
    "maintenance": "langgraph.checkpoint.dynamodb.lambdas.maintenance.handler",
}


def default_lambda_code_dir() -> Path:
    """``lambdas/`` of the repository checkout this package is imported from.

    Deprecated and no longer used by ``CheckpointStore``: the maintenance
    handlers are in the package now, and the construct's default asset is the
    library alone. Exists for an editable install (``src/`` layout) only.
    """
    path = Path(__file__).resolve().parents[5] / "lambdas"
    if not path.is_dir():
        raise FileNotFoundError(
            f"no lambdas/ folder next to this package ({path}); pass lambda_code_dir= (a copy of the "
            "repository's lambdas/) or lambda_code= to CheckpointStore"
        )
    return path


def bundled_lambda_code(
    source_dir: str | Path | None = None,
    *,
    include: Sequence[str] | None = None,
    extra_requirements: Sequence[str] = (),
    runtime: lambda_.Runtime = lambda_.Runtime.PYTHON_3_12,
    architecture: lambda_.Architecture = lambda_.Architecture.X86_64,
) -> lambda_.Code:
    """A Lambda ``Code`` asset: handlers + this library + wheels, no Docker.

    The asset hash is computed from the inputs (handler sources, library
    sources, requirements, Python version, platform), so pip runs once per
    distinct input in a ``cdk.out`` and tests that skip bundling
    (``aws:cdk:bundling-stacks=[]``) still get a stable hash.

    Args:
        source_dir: Your handlers' root folder (``None``: the library and its
            wheels only, enough for the maintenance handlers, which ship in the
            package as ``langgraph.checkpoint.dynamodb.lambdas.*``).
        include: Top-level folders of ``source_dir`` to ship (``None``: all).
        extra_requirements: pip requirements beyond the library's own
            (e.g. ``["langgraph==1.2.24"]`` for an agent).
        runtime: A ``python3.x`` runtime; decides pip's ``--python-version``.
        architecture: Decides pip's ``--platform`` (manylinux2014 x86_64/aarch64).

    Returns:
        The ``lambda_.Code`` to pass to ``Function(code=...)`` or to
        ``CheckpointStore(lambda_code=...)``.

    Example:
        >>> code = bundled_lambda_code("lambdas", include=["agent"],  # doctest: +SKIP
        ...                            extra_requirements=["langgraph==1.2.24"])
    """
    if not runtime.name.startswith("python3."):
        raise ValueError(f"a Python runtime is required, got {runtime.name}")
    python_version = runtime.name.removeprefix("python")
    platform = pip_platform(architecture.name)
    source: Path | None = None
    if source_dir is not None:
        source = Path(source_dir).resolve()
        if not source.is_dir():
            raise FileNotFoundError(f"Lambda source folder not found: {source}")
        missing = [name for name in include or () if not (source / name).is_dir()]
        if missing:
            # Fail at synth, not with an ImportModuleError in production.
            raise FileNotFoundError(f"Lambda handler folders missing under {source}: {missing}")
    fingerprint = asset_fingerprint(
        source,
        include=include,
        requirements=[*library_requirements(), *extra_requirements],
        python_version=python_version,
        platform=platform,
    )
    return lambda_.Code.from_asset(
        # Local bundling never reads this folder (PipLocalBundling does the
        # work); without user sources the installed library stands in for it.
        str(source or library_package_dir()),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=fingerprint,
        bundling=BundlingOptions(
            # Never pulled: PipLocalBundling always succeeds or raises, and
            # CDK only falls back to Docker when the local bundler returns False.
            image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.12"),
            local=PipLocalBundling(
                source,
                include=include,
                requirements=extra_requirements,
                python_version=python_version,
                platform=platform,
            ),
        ),
    )


class CheckpointStore(Construct):
    """DynamoDB table + S3 bucket for ``DynamoDBSaver``, with maintenance and alarms.

    Owns:

    * the checkpoint table, built from ``schema.table_definition()`` (keys,
      GSIs ``run_id-index`` and ``threads-index``, stream view type), on-demand,
      TTL on ``schema.TTL_ATTRIBUTE``, point-in-time recovery, KMS encryption
      (AWS managed key, or ``kms_key``), the stream;
    * the payload bucket (private, TLS only, encrypted, access-logged to a
      separate log bucket, versioned with noncurrent versions kept as long as
      the table's point-in-time recovery reaches back, aborting incomplete
      multipart uploads) unless ``bucket=False``;
    * the maintenance Lambdas: ``pruner`` (EventBridge schedule), ``reaper``
      (stream consumer of TTL deletions of thread heads), ``orphan_sweeper``
      (daily) and ``maintenance`` (on request: copy, prune, delete named
      threads or runs, in resumable steps), each with its own role (only what its code path calls), log
      group (encrypted with ``kms_key`` when given), reserved concurrency and
      encrypted, TLS-only SQS dead-letter queue (kept under ``RETAIN``);
    * CloudWatch alarms (Lambda errors and throttles, DLQ depth, threads a
      job recorded and skipped, table throttles and system errors, reaper
      iterator age), wired to an SNS topic
      when one is given (otherwise they exist with no action);
    * a CloudWatch dashboard (``dashboard=True``): table, bucket, functions
      and the jobs' own counts, which the handlers print as embedded metrics;
      the bucket's request metrics configuration, filtered to the key prefix;
    * least-privilege grants: :meth:`grant_read_write`, :meth:`grant_read`,
      :meth:`grant_tenant_read_write`.

    Args:
        scope: Parent construct.
        id: Construct id. Also the prefix of the table's and buckets' logical
            ids, which are pinned (see ``logical_ids``) so that moving the
            construct in the tree never replaces stateful resources.
        table_name: Physical table name (default: generated by CloudFormation).
        bucket: Create the payload bucket (``False``: DynamoDB only; payloads
            then must fit in items, see the saver's ``s3_threshold``).
        bucket_name: Physical bucket name (default: generated).
        s3_key_prefix: Key prefix the savers write under (must end with ``/``);
            grants and the maintenance Lambdas use it.
        removal_policy: For the table, buckets, log groups and dead-letter
            queues. ``RETAIN`` by default: checkpoints are user data, and dead
            letters are the record of what maintenance failed to do.
        deletion_protection: Table deletion protection (default: on when the
            removal policy is ``RETAIN``).
        kms_key: Customer managed key for the table (and its stream) and the
            bucket, and for the functions' log groups (a key created in the
            same app gets a key-policy statement for the CloudWatch Logs
            service of the stack's region; an imported key must already have
            one). Grants then include the key. Default: AWS managed key for
            the table, SSE-S3 for the bucket. Dead-letter queues always use
            SSE-SQS (see ``_dead_letter_queue``).
        versioned: Enable bucket versioning (default on), so that a table
            restored to a point in time can find the objects its items
            referenced then (see docs/infrastructure.md). Deletes then leave
            noncurrent versions, expired after ``noncurrent_version_expiration``
            together with the delete markers left behind. ``False`` suspends
            nothing on an already versioned bucket: S3 cannot unversion one.
        noncurrent_version_expiration: Lifetime of noncurrent versions
            (default 35 days: DynamoDB's point-in-time recovery window).
        access_log_retention: How long server access logs are kept.
        enable_pruner: Create the scheduled pruner.
        prune_schedule: Its schedule (default: every hour).
        prune_keep_last: ``PRUNE_KEEP_LAST``: checkpoints kept per namespace
            (delta-safe; ``None`` keeps all).
        prune_idle_days: ``PRUNE_IDLE_DAYS``: threads idle this long are
            deleted (``None``: never).
        prune_page_size: ``PRUNE_PAGE_SIZE``: threads per claimed page
            (default: the library's, 25).
        thread_ttl: ``LANGGRAPH_DYNAMODB_TTL_SECONDS`` for the maintenance functions and
            in :attr:`saver_environment`: thread heads expire this long after
            the last activity (DynamoDB TTL, then the reaper). Implies
            tracking. Must match the agents' savers (``ttl=``).
        track_threads: ``LANGGRAPH_DYNAMODB_TRACK_THREADS=1``: the agents keep thread heads
            (``track_threads=True``), so the pruner walks the sparse threads
            index instead of scanning the table. Must match the agents'
            savers: a pruner walking the index while agents keep no heads
            would find nothing to prune.
        enable_reaper: Create the stream consumer that deletes expired threads.
        reaper_batch_size: Records per reaper invocation.
        reaper_retry_attempts: Retries of a failing stream batch before it
            goes to the reaper's DLQ (the batch is bisected first).
        enable_orphan_sweeper: Create the daily S3 orphan sweeper (needs the bucket).
        orphan_sweep_schedule: Its schedule (default: every day).
        orphan_grace_hours: ``ORPHAN_GRACE_HOURS``: objects younger than this
            are never swept (a ``put`` may still be about to reference them).
        enable_maintenance: Create the on-demand maintenance function
            (:attr:`maintenance_function`): ``copy_thread``, ``prune``,
            ``delete_thread`` and ``delete_for_runs`` on request, in resumable
            steps (docs/infrastructure.md shows how to invoke it).
        maintenance_time_budget: ``TIME_BUDGET_SECONDS`` of the maintenance
            function: each invocation starts no new unit of work after this
            long and returns a continuation token (default 45 s, so that a
            step answers within the AWS CLI's and SDKs' default 60 s read
            timeout; its Lambda timeout is 5 minutes, for one large unit).
        lambda_code_dir: A folder of your own code to ship next to the library in
            the maintenance functions' asset (default: none; the maintenance
            handlers are part of this package, ``langgraph.checkpoint.dynamodb.lambdas``).
        lambda_code: A prebuilt ``Code`` for the maintenance functions (overrides
            ``lambda_code_dir``; lets an app share one asset with its agent).
            It must contain this library, as every ``bundled_lambda_code`` asset does.
        runtime: Python runtime of the maintenance functions.
        architecture: Lambda architecture (wheels are fetched to match).
        log_retention: Retention of the functions' log groups.
        reserved_concurrency: Reserved concurrent executions of each
            maintenance function (default 1: a second concurrent run would only
            contend for the same cursor; a throttled scheduled run is retried by
            Lambda and raises the ``ThrottlesAlarm``). ``None`` reserves
            nothing (accounts whose concurrency limit is too low to reserve
            any); the caps then are the schedules and, for the reaper, one
            invocation per stream shard.
        alarm_topic: SNS topic for alarm and OK notifications. Without one the
            alarms exist with no action: they show in the CloudWatch console,
            and ``store.alarms`` lets an app add actions later.
        dashboard: Create the store's CloudWatch dashboard (:attr:`dashboard`).
            On by default. It costs $3 a month: it graphs 102 metrics, more
            than the 50 of CloudWatch's free dashboards (docs/infrastructure.md
            lists every cost, and the dashboard's widgets).
        dashboard_name: Its physical name (default: generated).
        bucket_request_metrics: Add a request metrics configuration to the
            bucket, filtered to ``s3_key_prefix`` (id ``BUCKET_METRICS_ID``),
            for the dashboard's bucket requests and bytes. ``None``: follow
            ``dashboard``. S3 request metrics are billed as CloudWatch custom
            metrics (up to 16, $0.30 each a month, prorated by the hours they
            report: at most about $4.80 a month, less when the bucket idles).
        metrics_namespace: ``LANGGRAPH_DYNAMODB_METRICS_NAMESPACE`` of the
            maintenance functions: the namespace of the counts their handlers
            print as embedded metrics (``lambdas.metrics.JOB_METRICS``), and
            of the dashboard's jobs row. ``None`` or ``""``: no job metrics.

    Example:
        >>> from aws_cdk import App, Stack, aws_lambda as lambda_
        >>> from langgraph.checkpoint.dynamodb.cdk import CheckpointStore
        >>> app = App()
        >>> stack = Stack(app, "Agents")
        >>> store = CheckpointStore(stack, "Checkpoints")  # doctest: +SKIP
        >>> agent = lambda_.Function(stack, "Agent", ...)  # doctest: +SKIP
        >>> store.grant_read_write(agent)  # doctest: +SKIP
        >>> for name, value in store.saver_environment.items():  # doctest: +SKIP
        ...     agent.add_environment(name, value)  # then DynamoDBSaver.from_env() in the agent
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        table_name: str | None = None,
        bucket: bool = True,
        bucket_name: str | None = None,
        s3_key_prefix: str = "checkpoints/",
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        deletion_protection: bool | None = None,
        kms_key: kms.IKey | None = None,
        versioned: bool = True,
        noncurrent_version_expiration: Duration | None = None,
        access_log_retention: Duration | None = None,
        enable_pruner: bool = True,
        prune_schedule: events.Schedule | None = None,
        prune_keep_last: int | None = 20,
        prune_idle_days: float | None = 30,
        prune_page_size: int | None = None,
        thread_ttl: Duration | None = None,
        track_threads: bool = False,
        enable_reaper: bool = True,
        reaper_batch_size: int = 100,
        reaper_retry_attempts: int = 5,
        enable_orphan_sweeper: bool = True,
        orphan_sweep_schedule: events.Schedule | None = None,
        orphan_grace_hours: int = 24,
        enable_maintenance: bool = True,
        maintenance_time_budget: Duration | None = None,
        lambda_code_dir: str | Path | None = None,
        lambda_code: lambda_.Code | None = None,
        runtime: lambda_.Runtime = lambda_.Runtime.PYTHON_3_12,
        architecture: lambda_.Architecture = lambda_.Architecture.X86_64,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        reserved_concurrency: int | None = 1,
        alarm_topic: sns.ITopic | None = None,
        dashboard: bool = True,
        dashboard_name: str | None = None,
        bucket_request_metrics: bool | None = None,
        metrics_namespace: str | None = DEFAULT_NAMESPACE,
    ) -> None:
        super().__init__(scope, id)
        # Deliver server access logs via a bucket policy for the logging
        # service, not the legacy LogDeliveryWrite ACL, so both buckets can keep
        # ACLs disabled (BucketOwnerEnforced). Context set here, before any
        # child exists, applies to this construct's subtree only.
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        schema.validate_s3_key_prefix(s3_key_prefix)
        if prune_keep_last is not None and prune_keep_last < 1:
            raise ValueError("prune_keep_last must be >= 1: the latest checkpoint always survives")
        if prune_idle_days is not None and prune_idle_days <= 0:
            raise ValueError("prune_idle_days must be > 0 (None disables idle deletion)")
        if reserved_concurrency is not None and reserved_concurrency < 1:
            raise ValueError("reserved_concurrency must be >= 1 (None reserves nothing)")
        #: Namespace of the jobs' embedded metrics (``None``: the jobs emit none).
        #: Validated as the handlers read it, so a bad one fails the synth.
        self.metrics_namespace: str | None = _validated_namespace(metrics_namespace)
        if bucket_request_metrics is None:
            bucket_request_metrics = dashboard
        self.s3_key_prefix = s3_key_prefix
        self.kms_key = kms_key
        self.removal_policy = removal_policy
        self.alarm_topic = alarm_topic
        #: The pruner walks the threads index instead of the table.
        self.track_threads = track_threads or thread_ttl is not None
        self.reserved_concurrency = reserved_concurrency
        self.functions: dict[str, lambda_.Function] = {}
        #: The key the maintenance function signs its continuation tokens with
        #: (``None`` with ``enable_maintenance=False``); only that function reads it.
        self.maintenance_token_key: secretsmanager.Secret | None = None
        self.dlqs: dict[str, sqs.Queue] = {}
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        self._logs_key_allowed = False
        #: Pinned logical ids of the stateful resources (see ``_pin``).
        self.logical_ids: dict[str, str] = {}

        self.cfn_table = self._create_table(table_name, deletion_protection)
        #: An ``ITable`` view of the L1 table, for code that expects the L2 API.
        self.table: dynamodb.ITable = dynamodb.Table.from_table_attributes(
            self,
            "TableRef",
            table_arn=self.cfn_table.attr_arn,
            table_stream_arn=self.cfn_table.attr_stream_arn,
            encryption_key=kms_key,
        )
        self.table_name: str = self.cfn_table.ref
        self.table_arn: str = self.cfn_table.attr_arn
        self.table_stream_arn: str = self.cfn_table.attr_stream_arn

        self.access_log_bucket: s3.Bucket | None = None
        self.bucket: s3.Bucket | None = None
        if bucket:
            self.access_log_bucket, self.bucket = self._create_buckets(
                bucket_name,
                versioned,
                noncurrent_version_expiration,
                access_log_retention,
                request_metrics=bucket_request_metrics,
            )
        self.bucket_request_metrics = self.bucket is not None and bucket_request_metrics

        #: Environment a saver needs to reach this store, in the package's one
        #: set of names (``langgraph.checkpoint.dynamodb.config``), read by
        #: ``DynamoDBSaver.from_env()`` and ``handlers.StoreConfig.from_env``:
        #: give it to your agent functions so that they and the maintenance
        #: jobs agree on table, bucket, prefix, TTL and thread tracking.
        self.saver_environment: dict[str, str] = {
            config.ENV_TABLE: self.table_name,
            config.ENV_S3_KEY_PREFIX: s3_key_prefix,
        }
        if self.bucket is not None:
            self.saver_environment[config.ENV_BUCKET] = self.bucket.bucket_name
        if thread_ttl is not None:
            self.saver_environment[config.ENV_TTL_SECONDS] = str(int(thread_ttl.to_seconds()))
        if self.track_threads:
            self.saver_environment[config.ENV_TRACK_THREADS] = "1"

        wanted = {
            "pruner": enable_pruner,
            "reaper": enable_reaper,
            # Without a bucket there is nothing to sweep.
            "orphan_sweeper": enable_orphan_sweeper and bucket,
            "maintenance": enable_maintenance,
        }
        if any(wanted.values()):
            # The default asset is the installed library and its wheels: the
            # handlers are in it, so this works from a wheel, not only a checkout.
            code = lambda_code or bundled_lambda_code(
                lambda_code_dir, runtime=runtime, architecture=architecture
            )
            common: dict[str, Any] = {
                "code": code,
                # Explicit even for the default, so that the dashboard and the
                # handlers read one value ("" turns the metrics off).
                "metrics_environment": {ENV_METRICS_NAMESPACE: self.metrics_namespace or ""},
                "runtime": runtime,
                "architecture": architecture,
                "log_retention": log_retention,
            }
            if wanted["pruner"]:
                timeout = Duration.minutes(5)
                fn = self._maintenance_function(
                    "pruner",
                    "Pruner",
                    description="Prunes old checkpoints of idle threads (delta-safe, via the library).",
                    timeout=timeout,
                    memory_size=512,
                    environment={
                        **_optional_env(
                            PRUNE_KEEP_LAST=prune_keep_last,
                            PRUNE_IDLE_DAYS=prune_idle_days,
                            PRUNE_PAGE_SIZE=prune_page_size,
                        ),
                        # Stop claiming new pages well before Lambda kills the run,
                        # so a page is never cut in half mid-delete.
                        "TIME_BUDGET_SECONDS": str(int(timeout.to_seconds()) - 30),
                    },
                    **common,
                )
                self._schedule(
                    "pruner", "PrunerSchedule", fn, prune_schedule or events.Schedule.rate(Duration.hours(1))
                )
            if wanted["reaper"]:
                self._create_reaper(reaper_batch_size, reaper_retry_attempts, common)
            if wanted["orphan_sweeper"]:
                timeout = Duration.minutes(15)
                fn = self._maintenance_function(
                    "orphan_sweeper",
                    "OrphanSweeper",
                    description="Deletes S3 payload objects no checkpoint references (after a grace period).",
                    timeout=timeout,
                    memory_size=512,
                    environment={
                        "ORPHAN_GRACE_HOURS": str(orphan_grace_hours),
                        "TIME_BUDGET_SECONDS": str(int(timeout.to_seconds()) - 60),
                    },
                    **common,
                )
                self._schedule(
                    "orphan_sweeper",
                    "OrphanSweeperSchedule",
                    fn,
                    orphan_sweep_schedule or events.Schedule.rate(Duration.days(1)),
                )
            if wanted["maintenance"]:
                budget = maintenance_time_budget or Duration.seconds(45)
                token_key = self._maintenance_token_key()
                fn = self._maintenance_function(
                    "maintenance",
                    "Maintenance",
                    description="On request: copy_thread, prune, delete_thread, delete_for_runs "
                    "(resumable steps, via the library).",
                    timeout=Duration.minutes(5),
                    memory_size=1024,
                    environment={
                        "TIME_BUDGET_SECONDS": str(int(budget.to_seconds())),
                        ENV_MAINTENANCE_TOKEN_SECRET: self._secret_id(token_key),
                    },
                    **common,
                )
                self._grant_token_key(token_key, fn)
        self._table_alarms()
        #: The store's CloudWatch dashboard (``None`` with ``dashboard=False``);
        #: add widgets of your own with ``store.dashboard.add_widgets(...)``.
        self.dashboard: cloudwatch.Dashboard | None = None
        if dashboard:
            self.dashboard = create_dashboard(
                self,
                "Dashboard",
                table_name=self.table_name,
                bucket_name=self.bucket.bucket_name if self.bucket is not None else None,
                bucket_request_metrics=self.bucket_request_metrics,
                functions=self.functions,
                dlqs=self.dlqs,
                namespace=self.metrics_namespace,
                dashboard_name=dashboard_name,
            )
            # Not stateful (so not in ``logical_ids``), but pinned like the
            # rest: a refactor of the tree must not replace it and drop widgets
            # someone added in the console.
            cfn_dashboard = self.dashboard.node.default_child
            assert isinstance(cfn_dashboard, cloudwatch.CfnDashboard)
            cfn_dashboard.override_logical_id(f"{self.node.id}Dashboard")

    # ------------------------------------------------- maintenance token key

    def _maintenance_token_key(self) -> secretsmanager.Secret:
        """The key the maintenance function signs its continuation tokens with (HMAC-SHA256).

        A generated 64-character secret in Secrets Manager (AWS managed key).
        Only the maintenance function's role may read it: its own policy
        grants ``GetSecretValue`` on this secret alone, and the secret's
        resource policy denies ``GetSecretValue`` to every other principal,
        however wide its IAM grants. Its name is fixed (stack name and this
        construct's address), so the function's environment names it as a
        plain string; CloudFormation deletes a secret without a recovery
        window, so a stack deleted and deployed again can reuse it. It is
        never retained: it only signs tokens of copies under way.
        """
        stack_name = Stack.of(self).stack_name
        name = (
            None
            if Token.is_unresolved(stack_name)
            else f"{stack_name}-{self.node.addr[:16]}-maintenance-token-key"
        )
        self._token_key_name = name
        secret = secretsmanager.Secret(
            self,
            "MaintenanceTokenKey",
            secret_name=name,
            description="Signs the continuation tokens of the checkpoint maintenance function (HMAC-SHA256).",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True, include_space=False
            ),
            removal_policy=RemovalPolicy.DESTROY,
        )
        acknowledge(
            secret,
            "AwsSolutions-SMG4",
            "The key signs continuation tokens of copies under way only; rotating it (put a new value) "
            "makes in-flight copies start again, so it is rotated on demand, not on a schedule.",
        )
        self.maintenance_token_key = secret
        return secret

    def _secret_id(self, secret: secretsmanager.Secret) -> str:
        """The name the construct gave the secret (a plain string); the ARN when the stack's name is a token."""
        name = self._token_key_name
        return secret.secret_arn if name is None else name

    def _grant_token_key(self, secret: secretsmanager.Secret, fn: lambda_.Function) -> None:
        role = fn.role
        assert role is not None
        # By name when it is fixed: the ARN Secrets Manager gives it ends in "-" and six
        # random characters (the documented IAM pattern). It does not depend on the secret
        # resource resolving, which moto's CloudFormation skips (`make deploy-local`).
        name = self._token_key_name
        arn = (
            secret.secret_arn
            if name is None
            else Stack.of(self).format_arn(
                service="secretsmanager",
                resource="secret",
                resource_name=f"{name}-??????",
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[arn])
        )
        # Nobody else, whatever their IAM grants (an account admin changes the policy first, in CloudTrail).
        secret.add_to_resource_policy(
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                actions=["secretsmanager:GetSecretValue"],
                principals=[iam.AnyPrincipal()],
                resources=["*"],
                conditions={"ArnNotEquals": {"aws:PrincipalArn": role.role_arn}},
            )
        )

    @property
    def maintenance_function(self) -> lambda_.Function | None:
        """The on-demand maintenance function (``None`` with ``enable_maintenance=False``).

        Example:
            >>> store.maintenance_function.grant_invoke(operator_role)  # doctest: +SKIP
        """
        return self.functions.get("maintenance")

    # ------------------------------------------------------------------ table

    def _pin(self, resource: Any, suffix: str) -> None:
        """Give a stateful resource a logical id derived from this construct's id only.

        CDK's default logical id hashes the whole construct path: wrapping the
        store in another construct later would rename the table, and
        CloudFormation would create a new, empty one. ``<id><suffix>`` is
        stable under such refactors and readable in the console.
        """
        logical_id = f"{self.node.id}{suffix}"
        resource.override_logical_id(logical_id)
        self.logical_ids[suffix] = logical_id

    def _create_table(self, table_name: str | None, deletion_protection: bool | None) -> dynamodb.CfnTable:
        definition = schema.table_definition(table_name or "unused")
        ttl = schema.ttl_specification()
        sse: dict[str, Any] = {"sse_enabled": True, "sse_type": "KMS"}
        if self.kms_key is not None:
            sse["kms_master_key_id"] = self.kms_key.key_arn
        if deletion_protection is None:
            deletion_protection = self.removal_policy == RemovalPolicy.RETAIN
        table = dynamodb.CfnTable(
            self,
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
        table.apply_removal_policy(self.removal_policy)
        self._pin(table, "Table")
        return table

    # ----------------------------------------------------------------- bucket

    def _create_buckets(
        self,
        bucket_name: str | None,
        versioned: bool,
        noncurrent_version_expiration: Duration | None,
        access_log_retention: Duration | None,
        *,
        request_metrics: bool,
    ) -> tuple[s3.Bucket, s3.Bucket]:
        log_bucket = s3.Bucket(
            self,
            "AccessLogBucket",
            # Server access logs can only be delivered to SSE-S3 buckets.
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            removal_policy=self.removal_policy,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="ExpireAccessLogs",
                    expiration=access_log_retention or Duration.days(90),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
        )
        self._pin(log_bucket.node.default_child, "AccessLogBucket")
        lifecycle = [
            s3.LifecycleRule(
                id="AbortIncompleteMultipartUploads",
                abort_incomplete_multipart_upload_after=Duration.days(1),
            )
        ]
        if versioned:
            lifecycle.append(
                s3.LifecycleRule(
                    id="ExpireNoncurrentVersions",
                    # Every delete (pruner, reaper, sweeper, delete_thread)
                    # leaves the object as a noncurrent version; nothing reads
                    # those except a restore, so they go once no restore can
                    # need them.
                    noncurrent_version_expiration=noncurrent_version_expiration or PITR_WINDOW,
                    # Then the delete marker is the key's only version: remove
                    # it too, or the listing cost grows with every thread ever
                    # deleted.
                    expired_object_delete_marker=True,
                )
            )
        bucket = s3.Bucket(
            self,
            "Bucket",
            bucket_name=bucket_name,
            encryption=s3.BucketEncryption.KMS
            if self.kms_key is not None
            else s3.BucketEncryption.S3_MANAGED,
            encryption_key=self.kms_key,
            # One KMS call per bucket key instead of per object: payload writes
            # are frequent and small.
            bucket_key_enabled=True if self.kms_key is not None else None,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=versioned,
            removal_policy=self.removal_policy,
            server_access_logs_bucket=log_bucket,
            server_access_logs_prefix="checkpoint-bucket/",
            lifecycle_rules=lifecycle,
            # Request metrics (1-minute, billed as custom metrics) only for the
            # checkpoint prefix: the savers' traffic, not other users of the bucket.
            metrics=[s3.BucketMetrics(id=BUCKET_METRICS_ID, prefix=self.s3_key_prefix)]
            if request_metrics
            else None,
        )
        self._pin(bucket.node.default_child, "Bucket")
        return log_bucket, bucket

    # ---------------------------------------------------------------- lambdas

    def _dead_letter_queue(self, name: str, construct_id: str) -> sqs.Queue:
        queue = sqs.Queue(
            self,
            f"{construct_id}Dlq",
            # SSE-SQS even when a customer key is given: EventBridge and Lambda
            # deliver dead letters as service principals, which with a customer
            # key would need key-policy grants outside this construct's control.
            # Dead letters hold scheduler events and stream keys, not state.
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            # The maximum: time to notice the alarm, fix, and redrive.
            retention_period=Duration.days(14),
            # A stack update or deletion must not drop dead letters nobody has
            # looked at yet: they are the only record of what was not done.
            removal_policy=self.removal_policy,
        )
        self.dlqs[name] = queue
        self._alarm(
            f"{construct_id}DlqDepthAlarm",
            queue.metric_approximate_number_of_messages_visible(
                period=Duration.minutes(5), statistic="Maximum"
            ),
            threshold=1,
            description=f"Failed {name} invocations are waiting in its dead-letter queue.",
        )
        return queue

    def _maintenance_function(
        self,
        name: str,
        construct_id: str,
        *,
        code: lambda_.Code,
        runtime: lambda_.Runtime,
        architecture: lambda_.Architecture,
        log_retention: logs.RetentionDays,
        description: str,
        timeout: Duration,
        memory_size: int,
        environment: Mapping[str, str],
        metrics_environment: Mapping[str, str],
        async_invoked: bool = True,
    ) -> lambda_.Function:
        dlq = self._dead_letter_queue(name, construct_id)
        # An explicit role without the AWSLambdaBasicExecutionRole managed
        # policy: logging rights are granted on this function's log group only.
        role = iam.Role(
            self,
            f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Execution role of the checkpoint {name} Lambda",
        )
        log_group = logs.LogGroup(
            self,
            f"{construct_id}Logs",
            retention=log_retention,
            removal_policy=self.removal_policy,
            # Logs name thread ids and S3 keys: same key as the data they describe.
            encryption_key=self.logs_key(),
        )
        env = {**self.saver_environment, **metrics_environment, **environment}
        fn = lambda_.Function(
            self,
            construct_id,
            code=code,
            handler=MAINTENANCE_HANDLERS[name],
            runtime=runtime,
            architecture=architecture,
            role=role,
            log_group=log_group,
            description=description,
            timeout=timeout,
            memory_size=memory_size,
            environment=env,
            # Async invocations (EventBridge): 2 retries, then the DLQ. For the
            # stream consumer the event source mapping owns retries instead.
            dead_letter_queue=dlq if async_invoked else None,
            retry_attempts=2 if async_invoked else None,
            # Caps what a runaway schedule or a stuck retry loop can spend, and
            # keeps maintenance from starving the agents of account concurrency.
            reserved_concurrent_executions=self.reserved_concurrency,
        )
        log_group.grant_write(role)
        self._grant(role, self.function_statements(name))
        acknowledge(fn, "AwsSolutions-L1", runtime_acknowledgement_reason(runtime))
        self.functions[name] = fn
        self.add_errors_alarm(
            fn, f"{construct_id}ErrorsAlarm", description=f"The checkpoint {name} Lambda failed."
        )
        self._alarm(
            f"{construct_id}ThrottlesAlarm",
            fn.metric_throttles(period=Duration.minutes(5), statistic="Sum"),
            threshold=1,
            description=f"The checkpoint {name} Lambda was throttled (reserved concurrency reached, or the "
            "account's limit): maintenance is falling behind.",
        )
        if self.metrics_namespace and ERRORS in JOB_METRICS.get(name, ()):
            # A thread the job could not handle (a malformed item, a parent
            # cycle) is recorded and skipped, so that one tenant's items cannot
            # stop the job for all: the invocation succeeds, and this count,
            # not the Lambda's Errors, is what says a thread needs a look.
            self._alarm(
                f"{construct_id}JobErrorsAlarm",
                job_metric(self.metrics_namespace, name, fn, ERRORS.name, labelled=False),
                threshold=1,
                description=f"The checkpoint {name} job skipped threads it could not handle; their "
                "names and errors are in its log record's errors field.",
            )
        return fn

    def logs_key(self) -> kms.IKey | None:
        """The key to encrypt a log group of this store's functions with (``None``: no customer key).

        The first call adds a statement to the key policy of ``kms_key`` that
        lets the CloudWatch Logs service of the stack's region use it for log
        groups of this account and region. An imported key's policy cannot
        be changed from here: the synth then warns, and the policy must
        already allow it.

        Example:
            >>> logs.LogGroup(stack, "AgentLogs", encryption_key=store.logs_key())  # doctest: +SKIP
        """
        if self.kms_key is None:
            return None
        if not self._logs_key_allowed:
            self._logs_key_allowed = True
            stack = Stack.of(self)
            added = self.kms_key.add_to_resource_policy(
                iam.PolicyStatement(
                    principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
                    actions=list(LOGS_KEY_ACTIONS),
                    # In a key policy "*" is the key itself.
                    resources=["*"],
                    # Only for log groups of this account and region. Not the
                    # groups' own ARNs: they depend on the key (a cycle).
                    conditions={
                        "ArnLike": {
                            "kms:EncryptionContext:aws:logs:arn": stack.format_arn(
                                service="logs",
                                resource="log-group",
                                resource_name="*",
                                arn_format=ArnFormat.COLON_RESOURCE_NAME,
                            )
                        }
                    },
                )
            )
            if not added.statement_added:
                Annotations.of(self).add_warning_v2(
                    "langgraph-checkpoint:LogsKeyPolicy",
                    "kms_key is imported: its key policy must allow the CloudWatch Logs service "
                    "(logs.<region>.amazonaws.com) to use it, or the log groups cannot be created.",
                )
        return self.kms_key

    def _schedule(
        self, name: str, construct_id: str, fn: lambda_.Function, schedule: events.Schedule
    ) -> None:
        events.Rule(
            self,
            construct_id,
            schedule=schedule,
            description=f"Runs the checkpoint {name}",
            targets=[
                targets.LambdaFunction(
                    fn,
                    # Delivery failures (throttling, missing permission) land in
                    # the same DLQ as function failures.
                    dead_letter_queue=self.dlqs[name],
                    retry_attempts=2,
                    max_event_age=Duration.hours(1),
                )
            ],
        )

    def _create_reaper(self, batch_size: int, retry_attempts: int, common: dict[str, Any]) -> None:
        fn = self._maintenance_function(
            "reaper",
            "Reaper",
            description="Deletes all items and payloads of threads whose head item expired (DynamoDB TTL).",
            timeout=Duration.minutes(5),
            memory_size=512,
            environment={},
            async_invoked=False,
            **common,
        )
        role = fn.role
        assert role is not None
        iam.Grant.add_to_principal(
            grantee=role, actions=list(STREAM_READ_ACTIONS), resource_arns=[self.table_stream_arn]
        )
        # ListStreams has no resource-level permissions: "*" is the only valid resource.
        iam.Grant.add_to_principal(grantee=role, actions=["dynamodb:ListStreams"], resource_arns=["*"])
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "dynamodb:ListStreams supports no resource-level permissions (resource must be '*'); the "
            "statement grants that one action only. Stream reads are limited to this table's stream.",
        )
        acknowledge(
            self.dlqs["reaper"],
            "AwsSolutions-SQS3",
            "This queue is itself a dead-letter destination (the on-failure destination of the reaper's "
            "stream event source mapping); a DLQ for a DLQ would only move the problem.",
        )
        self.reaper_event_source = lambda_.EventSourceMapping(
            self,
            "ReaperStreamMapping",
            target=fn,
            event_source_arn=self.table_stream_arn,
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            batch_size=batch_size,
            max_batching_window=Duration.seconds(30),
            # One invocation per shard at a time: with no reserved concurrency
            # the shard count is the reaper's cap.
            parallelization_factor=1,
            bisect_batch_on_error=True,
            retry_attempts=retry_attempts,
            # The stream keeps records for 24 h; give up a little earlier, into
            # the DLQ, rather than lose them silently at the trim horizon.
            max_record_age=Duration.hours(23),
            # No ReportBatchItemFailures: the reaper fails or succeeds a batch
            # as a whole (reaping is idempotent), and bisecting isolates a
            # poison record.
            on_failure=event_sources.SqsDlq(self.dlqs["reaper"]),
            filters=[reaper_filter_pattern()],
        )
        self._alarm(
            "ReaperIteratorAgeAlarm",
            fn.metric("IteratorAge", period=Duration.minutes(5), statistic="Maximum"),
            threshold=Duration.hours(1).to_milliseconds(),
            description="The reaper is more than an hour behind the table stream.",
        )

    # ----------------------------------------------------------------- alarms

    def add_errors_alarm(
        self, function: lambda_.IFunction, construct_id: str, *, description: str | None = None
    ) -> cloudwatch.Alarm:
        """An alarm on ``function``'s ``Errors`` (>= 1 in 5 minutes), wired to ``alarm_topic``.

        Created in this construct, next to the maintenance functions' alarms,
        so that an agent using the store is watched the same way.

        Example:
            >>> store.add_errors_alarm(agent_function, "AgentErrorsAlarm")  # doctest: +SKIP
        """
        return self._alarm(
            construct_id,
            function.metric_errors(period=Duration.minutes(5), statistic="Sum"),
            threshold=1,
            description=description or "A Lambda function using the checkpoint store failed.",
        )

    def _alarm(
        self, construct_id: str, metric: cloudwatch.IMetric, *, threshold: float, description: str
    ) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            # No data means no errors, no messages, no throttles.
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        if self.alarm_topic is not None:
            action = cw_actions.SnsAction(self.alarm_topic)
            alarm.add_alarm_action(action)
            alarm.add_ok_action(action)
        self.alarms[construct_id] = alarm
        return alarm

    def _table_metric(self, metric_name: str, index_name: str | None = None) -> cloudwatch.Metric:
        dims = {"TableName": self.table_name}
        if index_name is not None:
            dims["GlobalSecondaryIndexName"] = index_name
        return cloudwatch.Metric(
            namespace="AWS/DynamoDB",
            metric_name=metric_name,
            dimensions_map=dims,
            statistic="Sum",
            period=Duration.minutes(5),
        )

    def _table_alarms(self) -> None:
        # Index names come from the schema: a GSI added there is watched too.
        indexes = [
            g["IndexName"] for g in schema.table_definition("unused").get("GlobalSecondaryIndexes", [])
        ]
        for kind in ("Read", "Write"):
            metrics = {"t": self._table_metric(f"{kind}ThrottleEvents")}
            for i, index in enumerate(indexes):
                metrics[f"g{i}"] = self._table_metric(f"{kind}ThrottleEvents", index)
            self._alarm(
                f"Table{kind}ThrottleAlarm",
                cloudwatch.MathExpression(
                    expression="+".join(f"FILL({k},0)" for k in metrics),
                    using_metrics=metrics,
                    label=f"{kind}ThrottleEvents (table + GSIs)",
                    period=Duration.minutes(5),
                ),
                threshold=1,
                description=f"The checkpoint table or one of its indexes throttled {kind.lower()}s.",
            )
        operations = _saver_operations()
        system_errors = {
            f"e{i}": cloudwatch.Metric(
                namespace="AWS/DynamoDB",
                metric_name="SystemErrors",
                dimensions_map={"TableName": self.table_name, "Operation": op},
                statistic="Sum",
                period=Duration.minutes(5),
            )
            for i, op in enumerate(operations)
        }
        self._alarm(
            "TableSystemErrorsAlarm",
            cloudwatch.MathExpression(
                expression="+".join(f"FILL({k},0)" for k in system_errors),
                using_metrics=system_errors,
                label="SystemErrors (saver operations)",
                period=Duration.minutes(5),
            ),
            threshold=1,
            description="DynamoDB returned HTTP 500s for the checkpoint table.",
        )

    # ----------------------------------------------------------------- grants

    def _kms_statement(self, actions: Sequence[str], *, s3: bool = True) -> iam.PolicyStatement | None:
        if self.kms_key is None:
            return None
        region = Stack.of(self).region
        services = [f"dynamodb.{region}.amazonaws.com"]
        if self.bucket is not None and s3:
            services.append(f"s3.{region}.amazonaws.com")
        return iam.PolicyStatement(
            actions=list(actions),
            resources=[self.kms_key.key_arn],
            # Only usable through DynamoDB/S3 on behalf of the grantee: no raw
            # Encrypt/Decrypt calls against the key.
            conditions={"StringEquals": {"kms:ViaService": services}},
        )

    def read_write_statements(self) -> list[iam.PolicyStatement]:
        """The statements :meth:`grant_read_write` attaches (exposed for tests and docs)."""
        stmts = [
            iam.PolicyStatement(actions=list(DYNAMODB_READ_WRITE_ACTIONS), resources=[self.table_arn]),
            # run_id-index (delete_for_runs) and threads-index (prune, thread listing).
            iam.PolicyStatement(actions=["dynamodb:Query"], resources=[f"{self.table_arn}/index/*"]),
        ]
        stmts += self._s3_statements(S3_READ_WRITE_ACTIONS, self.s3_key_prefix)
        kms_stmt = self._kms_statement(KMS_READ_WRITE_ACTIONS)
        return [*stmts, *([kms_stmt] if kms_stmt else [])]

    def maintenance_statements(self) -> list[iam.PolicyStatement]:
        """The statements :meth:`grant_maintenance` attaches: read/write plus ``Scan``."""
        scan = iam.PolicyStatement(
            actions=list(DYNAMODB_MAINTENANCE_ACTIONS),
            resources=[self.table_arn, f"{self.table_arn}/index/*"],
        )
        stmts = self.read_write_statements()
        # Keep the KMS statement last, as in the other grants.
        if self.kms_key is not None:
            return [*stmts[:-1], scan, stmts[-1]]
        return [*stmts, scan]

    def function_statements(self, name: str) -> list[iam.PolicyStatement]:
        """The table, bucket and key statements of one maintenance function's role.

        Only what the function's code path calls (see
        ``FUNCTION_DYNAMODB_ACTIONS``): no agent-style read/write, no index
        ``Query``. The pruner's and sweeper's cursor reads and writes are
        confined to the lifecycle state item's partition
        (``dynamodb:LeadingKeys`` = ``schema.LIFECYCLE_PK``, a key no thread can
        have). The pruner's ``Scan`` is on the threads index when threads are
        tracked, on the table otherwise. The reaper's stream permissions are
        added with its event source (see ``_create_reaper``).

        Args:
            name: ``"pruner"``, ``"reaper"``, ``"orphan_sweeper"`` or ``"maintenance"``.

        Returns:
            The statements, in the order the role's policy lists them.

        Example:
            >>> [s.actions for s in store.function_statements("orphan_sweeper")]  # doctest: +SKIP
            [['dynamodb:Query'], ['dynamodb:GetItem', 'dynamodb:PutItem'], ['s3:DeleteObject'], ['s3:ListBucket']]
        """
        if name not in FUNCTION_DYNAMODB_ACTIONS:
            raise ValueError(
                f"unknown maintenance function {name!r}; one of {sorted(FUNCTION_DYNAMODB_ACTIONS)}"
            )
        table_actions = [a for a in FUNCTION_DYNAMODB_ACTIONS[name] if a != "dynamodb:Scan"]
        stmts = [iam.PolicyStatement(actions=table_actions, resources=[self.table_arn])]
        if "dynamodb:Scan" in FUNCTION_DYNAMODB_ACTIONS[name]:
            # The pruner's page walk: one or the other, never both.
            scanned = (
                f"{self.table_arn}/index/{schema.THREADS_INDEX_NAME}"
                if self.track_threads
                else self.table_arn
            )
            stmts.append(iam.PolicyStatement(actions=["dynamodb:Scan"], resources=[scanned]))
        if name == "maintenance":
            # delete_for_runs finds a run's threads through the run index: that index only.
            stmts.append(
                iam.PolicyStatement(
                    actions=["dynamodb:Query"], resources=[f"{self.table_arn}/index/{schema.RUN_INDEX_NAME}"]
                )
            )
        if name in ("pruner", "orphan_sweeper"):
            stmts.append(
                iam.PolicyStatement(
                    actions=list(CURSOR_ACTIONS),
                    resources=[self.table_arn],
                    conditions={"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [schema.LIFECYCLE_PK]}},
                )
            )
        stmts += self._s3_statements(FUNCTION_S3_ACTIONS[name], self.s3_key_prefix)
        # The sweeper writes only its cursor item: the key is used through
        # DynamoDB alone (listing and deleting objects needs no key).
        kms_stmt = self._kms_statement(KMS_READ_WRITE_ACTIONS, s3=name != "orphan_sweeper")
        return [*stmts, *([kms_stmt] if kms_stmt else [])]

    def read_statements(self) -> list[iam.PolicyStatement]:
        """The statements :meth:`grant_read` attaches."""
        stmts = [
            iam.PolicyStatement(actions=list(DYNAMODB_READ_ACTIONS), resources=[self.table_arn]),
            iam.PolicyStatement(actions=["dynamodb:Query"], resources=[f"{self.table_arn}/index/*"]),
        ]
        stmts += self._s3_statements(S3_READ_ACTIONS, self.s3_key_prefix)
        kms_stmt = self._kms_statement(KMS_READ_ACTIONS)
        return [*stmts, *([kms_stmt] if kms_stmt else [])]

    def tenant_read_write_statements(self, tenant_prefix: str) -> list[iam.PolicyStatement]:
        """The statements :meth:`grant_tenant_read_write` attaches."""
        leading = schema.tenant_partition_prefix(tenant_prefix) + "*"
        stmts = [
            iam.PolicyStatement(
                actions=list(DYNAMODB_READ_WRITE_ACTIONS),
                # The table only: on a GSI, LeadingKeys would be the index's
                # partition key (run id, shard), and both indexes span tenants.
                resources=[self.table_arn],
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [leading]}},
            )
        ]
        stmts += self._s3_statements(
            S3_READ_WRITE_ACTIONS, schema.tenant_s3_prefix(self.s3_key_prefix, tenant_prefix)
        )
        kms_stmt = self._kms_statement(KMS_READ_WRITE_ACTIONS)
        return [*stmts, *([kms_stmt] if kms_stmt else [])]

    def _s3_statements(self, object_actions: Sequence[str], prefix: str) -> list[iam.PolicyStatement]:
        if self.bucket is None:
            return []
        return [
            iam.PolicyStatement(
                actions=list(object_actions), resources=[self.bucket.arn_for_objects(f"{prefix}*")]
            ),
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
            ),
        ]

    def _grant(self, grantee: iam.IGrantable, statements: Sequence[iam.PolicyStatement]) -> iam.Grant:
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
        self._acknowledge_grant_wildcards(grantee, statements)
        return grant

    def _acknowledge_grant_wildcards(
        self, grantee: iam.IGrantable, statements: Sequence[iam.PolicyStatement]
    ) -> None:
        principal = grantee.grant_principal
        if not isinstance(principal, Construct):
            return
        reasons = {
            "index/*": "Query (and for the maintenance grant Scan) on this table's own GSIs "
            "(run_id-index, threads-index, named by the key schema); no other table is covered.",
            "objects": "Object actions are confined to the checkpoint key prefix the saver writes under "
            "(per-thread keys are created at run time, so a prefix wildcard is the narrowest ARN).",
        }
        stack = Stack.of(self)
        for stmt in statements:
            for res in stmt.resources:
                resolved = stack.resolve(res)
                finding = _nag_resource_string(resolved)
                if finding is None or "*" not in finding:
                    continue
                reason = reasons["index/*"] if finding.endswith("/index/*") else reasons["objects"]
                acknowledge(principal, f"AwsSolutions-IAM5[Resource::{finding}]", reason)

    def grant_read_write(self, grantee: iam.IGrantable) -> iam.Grant:
        """Everything ``DynamoDBSaver``/``AsyncDynamoDBSaver`` need, nothing more.

        * DynamoDB ``BatchGetItem``, ``BatchWriteItem``, ``ConditionCheckItem``,
          ``GetItem``, ``PutItem``, ``Query``, ``UpdateItem`` on
          the table; ``Query`` on ``table/index/*``. ``ConditionCheckItem`` is
          the lease check in the ``TransactWriteItems`` of a lease-bound saver
          (``lock.run_once``, ``ThreadLease.bind``). No ``DescribeTable``: only
          ``setup()`` needs it, and a deployed table needs no setup.
        * S3 ``GetObject``, ``PutObject``, ``DeleteObject`` on
          ``bucket/<s3_key_prefix>*``; ``ListBucket`` on the bucket with
          ``s3:prefix`` like ``<s3_key_prefix>*`` (``delete_thread``).
        * With a customer key: ``kms:Decrypt``, ``kms:Encrypt``,
          ``kms:GenerateDataKey`` on it, via DynamoDB/S3 only.

        Example:
            >>> store.grant_read_write(agent_function)  # doctest: +SKIP
        """
        return self._grant(grantee, self.read_write_statements())

    def grant_maintenance(self, grantee: iam.IGrantable) -> iam.Grant:
        """:meth:`grant_read_write` plus ``dynamodb:Scan`` on the table and its indexes.

        What an operator role running the CLI (``threads``, ``prune``,
        listing every thread) needs. The maintenance functions get less: each
        only what its code path calls (:meth:`function_statements`). Agents
        should get :meth:`grant_read_write` instead.

        Example:
            >>> store.grant_maintenance(operator_role)  # doctest: +SKIP
        """
        return self._grant(grantee, self.maintenance_statements())

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read-only access (dashboards, the CLI's read commands).

        DynamoDB ``BatchGetItem``, ``GetItem``, ``Query`` (table, and ``Query``
        on its indexes); S3 ``GetObject`` under the prefix and ``ListBucket``
        with the prefix condition; ``kms:Decrypt`` with a customer key.

        Example:
            >>> store.grant_read(dashboard_role)  # doctest: +SKIP
        """
        return self._grant(grantee, self.read_statements())

    def grant_tenant_read_write(self, grantee: iam.IGrantable, tenant_prefix: str) -> iam.Grant:
        """Read/write confined to one tenant's threads.

        The saver created with ``tenant_prefix=P`` keys every thread under
        ``schema.tenant_partition_prefix(P)``; this grant carries the
        read/write DynamoDB actions on the table only, with
        ``ForAllValues:StringLike`` ``dynamodb:LeadingKeys`` =
        ``[tenant_partition_prefix(P) + "*"]``, and the S3 object actions on
        ``bucket/<tenant_s3_prefix(prefix, P)>*`` (``ListBucket`` with the same
        ``s3:prefix`` condition). Index queries are not granted: both indexes
        span tenants, so ``delete_for_runs`` and thread listing are operator
        tasks.

        Example:
            >>> store.grant_tenant_read_write(acme_role, "acme-")  # doctest: +SKIP
        """
        return self._grant(grantee, self.tenant_read_write_statements(tenant_prefix))


def _validated_namespace(namespace: str | None) -> str | None:
    """``metrics_namespace`` as the handlers will read it: ``None`` when empty, ``ValueError`` when invalid."""
    return metrics_namespace({ENV_METRICS_NAMESPACE: namespace or ""})


def _optional_env(**values: float | None) -> dict[str, str]:
    """Environment entries for the values that are set (``None``: let the handler default)."""
    return {k: f"{v:g}" if isinstance(v, float) else str(v) for k, v in values.items() if v is not None}


def runtime_acknowledgement_reason(runtime: lambda_.Runtime) -> str:
    """Why a function is not on the newest Python runtime (cdk-nag AwsSolutions-L1)."""
    return (
        f"The runtime is pinned ({runtime.name}) so that a runtime upgrade is a reviewed change: the "
        "asset's binary wheels (pydantic-core, ormsgpack, orjson, xxhash) are resolved for exactly this "
        "Python minor version by the local bundler. Pass runtime= to move to a newer one."
    )


def reaper_filter_pattern() -> Mapping[str, Any]:
    """Event filter of the reaper: TTL deletions of thread heads, nothing else.

    TTL deletions are ``REMOVE`` records whose ``userIdentity`` is the
    DynamoDB service; a user's ``DeleteItem`` has no ``userIdentity``. The
    head's sort key comes from the schema, so locks and request records that
    also expire never wake the reaper.
    """
    return lambda_.FilterCriteria.filter(
        {
            "eventName": lambda_.FilterRule.is_equal("REMOVE"),
            "userIdentity": {
                "type": lambda_.FilterRule.is_equal("Service"),
                "principalId": lambda_.FilterRule.is_equal("dynamodb.amazonaws.com"),
            },
            "dynamodb": {"Keys": {schema.ATTR.SK: {"S": lambda_.FilterRule.is_equal(schema.HEAD_SK)}}},
        }
    )


def _nag_resource_string(resolved: Any) -> str | None:
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
            rendered = [_nag_resource_string(p) for p in parts]
            if any(r is None for r in rendered):
                return None
            return sep.join(r for r in rendered if r is not None)
    return None
