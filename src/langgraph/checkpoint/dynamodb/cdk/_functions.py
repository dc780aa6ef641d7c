"""The maintenance Lambda functions: their code asset, role, logs, dead-letter queue, triggers, alarms.

``CheckpointStore`` creates up to four, each with its own role (only what its
code path calls, :func:`~langgraph.checkpoint.dynamodb.cdk._grants.function_statements`),
encrypted log group, reserved concurrency and encrypted, TLS-only dead-letter queue:

* ``pruner`` (EventBridge schedule), :func:`create_pruner`;
* ``reaper`` (stream consumer of TTL deletions of thread heads), :func:`create_reaper`;
* ``orphan_sweeper`` (daily), :func:`create_orphan_sweeper`;
* ``maintenance`` (on request, resumable steps), :func:`create_maintenance`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aws_cdk import AssetHashType, BundlingOptions, DockerImage, Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb.cdk._alarms import PERIOD, add_alarm, add_errors_alarm
from langgraph.checkpoint.dynamodb.cdk._bundling import (
    PipLocalBundling,
    asset_fingerprint,
    library_package_dir,
    library_requirements,
    pip_platform,
)
from langgraph.checkpoint.dynamodb.cdk._dashboard import job_metric
from langgraph.checkpoint.dynamodb.cdk._grants import (
    STREAM_READ_ACTIONS,
    function_statements,
    grant_statements,
)
from langgraph.checkpoint.dynamodb.cdk._nag import acknowledge
from langgraph.checkpoint.dynamodb.cdk._token_key import TokenKey, create_token_key, grant_token_key
from langgraph.checkpoint.dynamodb.lambdas.metrics import ENV_METRICS_NAMESPACE, ERRORS, JOB_METRICS
from langgraph.checkpoint.dynamodb.lambdas.tokens import ENV_MAINTENANCE_TOKEN_SECRET

if TYPE_CHECKING:
    from langgraph.checkpoint.dynamodb.cdk._options import (
        FunctionOptions,
        MaintenanceOptions,
        OrphanSweepOptions,
        PruneOptions,
        ReaperOptions,
    )
    from langgraph.checkpoint.dynamodb.cdk._store import CheckpointStore

__all__ = [
    "MAINTENANCE_HANDLERS",
    "SharedFunctionSettings",
    "bundled_lambda_code",
    "create_maintenance",
    "create_orphan_sweeper",
    "create_pruner",
    "create_reaper",
    "maintenance_function",
    "optional_env",
    "reaper_filter_pattern",
    "runtime_acknowledgement_reason",
    "shared_function_settings",
]

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
        ``CheckpointStore(function_options=FunctionOptions(code=...))``.

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


def optional_env(**values: float | None) -> dict[str, str]:
    """Environment entries for the values that are set (``None``: let the handler default)."""
    return {k: f"{v:g}" if isinstance(v, float) else str(v) for k, v in values.items() if v is not None}


@dataclass(frozen=True)
class SharedFunctionSettings:
    """What every maintenance function of one store shares (:func:`shared_function_settings`)."""

    code: lambda_.Code
    runtime: lambda_.Runtime
    architecture: lambda_.Architecture
    log_retention: logs.RetentionDays
    #: ``LANGGRAPH_DYNAMODB_METRICS_NAMESPACE``, explicit even for the default,
    #: so that the dashboard and the handlers read one value ("" turns the metrics off).
    metrics_environment: Mapping[str, str]
    #: The capacity budget of each run (``FunctionOptions.capacity_share``).
    capacity_environment: Mapping[str, str]


def shared_function_settings(options: FunctionOptions, namespace: str | None) -> SharedFunctionSettings:
    """The functions' shared settings; builds the default asset (the installed library and its wheels).

    The handlers are in that asset, so this works from a wheel, not only a checkout.
    """
    code = options.code or bundled_lambda_code(
        options.code_dir, runtime=options.runtime, architecture=options.architecture
    )
    return SharedFunctionSettings(
        code=code,
        runtime=options.runtime,
        architecture=options.architecture,
        log_retention=options.log_retention,
        metrics_environment={ENV_METRICS_NAMESPACE: namespace or ""},
        capacity_environment=options.capacity_environment(),
    )


def dead_letter_queue(store: CheckpointStore, name: str, construct_id: str) -> sqs.Queue:
    """The dead-letter queue of function ``name`` (in ``store.dlqs``) and its depth alarm."""
    queue = sqs.Queue(
        store,
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
        removal_policy=store.removal_policy,
    )
    store.dlqs[name] = queue
    add_alarm(
        store,
        f"{construct_id}DlqDepthAlarm",
        queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
        threshold=1,
        description=f"Failed {name} invocations are waiting in its dead-letter queue.",
    )
    return queue


def maintenance_function(
    store: CheckpointStore,
    name: str,
    construct_id: str,
    shared: SharedFunctionSettings,
    *,
    description: str,
    timeout: Duration,
    memory_size: int,
    environment: Mapping[str, str],
    async_invoked: bool = True,
) -> lambda_.Function:
    """One maintenance function of ``store`` (in ``store.functions``), its role, logs, DLQ and alarms."""
    dlq = dead_letter_queue(store, name, construct_id)
    # An explicit role without the AWSLambdaBasicExecutionRole managed
    # policy: logging rights are granted on this function's log group only.
    role = iam.Role(
        store,
        f"{construct_id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"Execution role of the checkpoint {name} Lambda",
    )
    log_group = logs.LogGroup(
        store,
        f"{construct_id}Logs",
        retention=shared.log_retention,
        removal_policy=store.removal_policy,
        # Logs name thread ids and S3 keys: same key as the data they describe.
        encryption_key=store.logs_key(),
    )
    env = {
        **store.saver_environment,
        **shared.metrics_environment,
        **shared.capacity_environment,
        **environment,
    }
    fn = lambda_.Function(
        store,
        construct_id,
        code=shared.code,
        handler=MAINTENANCE_HANDLERS[name],
        runtime=shared.runtime,
        architecture=shared.architecture,
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
        reserved_concurrent_executions=store.reserved_concurrency,
    )
    log_group.grant_write(role)
    grant_statements(store, role, function_statements(store, name))
    acknowledge(fn, "AwsSolutions-L1", runtime_acknowledgement_reason(shared.runtime))
    store.functions[name] = fn
    _function_alarms(store, name, construct_id, fn)
    return fn


def _function_alarms(store: CheckpointStore, name: str, construct_id: str, fn: lambda_.Function) -> None:
    add_errors_alarm(
        store, fn, f"{construct_id}ErrorsAlarm", description=f"The checkpoint {name} Lambda failed."
    )
    add_alarm(
        store,
        f"{construct_id}ThrottlesAlarm",
        fn.metric_throttles(period=PERIOD, statistic="Sum"),
        threshold=1,
        description=f"The checkpoint {name} Lambda was throttled (reserved concurrency reached, or the "
        "account's limit): maintenance is falling behind.",
    )
    if store.metrics_namespace and ERRORS in JOB_METRICS.get(name, ()):
        # A thread the job could not handle (a malformed item, a parent
        # cycle) is recorded and skipped, so that one tenant's items cannot
        # stop the job for all: the invocation succeeds, and this count,
        # not the Lambda's Errors, is what says a thread needs a look.
        add_alarm(
            store,
            f"{construct_id}JobErrorsAlarm",
            job_metric(store.metrics_namespace, name, fn, ERRORS.name, labelled=False),
            threshold=1,
            description=f"The checkpoint {name} job skipped threads it could not handle; their "
            "names and errors are in its log record's errors field.",
        )


def _schedule(
    store: CheckpointStore, name: str, construct_id: str, fn: lambda_.Function, schedule: events.Schedule
) -> None:
    events.Rule(
        store,
        construct_id,
        schedule=schedule,
        description=f"Runs the checkpoint {name}",
        targets=[
            targets.LambdaFunction(
                fn,
                # Delivery failures (throttling, missing permission) land in
                # the same DLQ as function failures.
                dead_letter_queue=store.dlqs[name],
                retry_attempts=2,
                max_event_age=Duration.hours(1),
            )
        ],
    )


def create_pruner(
    store: CheckpointStore, options: PruneOptions, shared: SharedFunctionSettings
) -> lambda_.Function:
    """The scheduled pruner (``PRUNE_KEEP_LAST``, ``PRUNE_IDLE_DAYS``, ``PRUNE_PAGE_SIZE``)."""
    timeout = Duration.minutes(5)
    fn = maintenance_function(
        store,
        "pruner",
        "Pruner",
        shared,
        description="Prunes old checkpoints of idle threads (delta-safe, via the library).",
        timeout=timeout,
        memory_size=512,
        environment={
            **optional_env(
                PRUNE_KEEP_LAST=options.keep_last,
                PRUNE_IDLE_DAYS=options.idle_days,
                PRUNE_PAGE_SIZE=options.page_size,
            ),
            # Stop claiming new pages well before Lambda kills the run,
            # so a page is never cut in half mid-delete.
            "TIME_BUDGET_SECONDS": str(int(timeout.to_seconds()) - 30),
        },
    )
    _schedule(
        store, "pruner", "PrunerSchedule", fn, options.schedule or events.Schedule.rate(Duration.hours(1))
    )
    return fn


def create_orphan_sweeper(
    store: CheckpointStore, options: OrphanSweepOptions, shared: SharedFunctionSettings
) -> lambda_.Function:
    """The scheduled S3 orphan sweeper (``ORPHAN_GRACE_HOURS``)."""
    timeout = Duration.minutes(15)
    fn = maintenance_function(
        store,
        "orphan_sweeper",
        "OrphanSweeper",
        shared,
        description="Deletes S3 payload objects no checkpoint references (after a grace period).",
        timeout=timeout,
        memory_size=512,
        environment={
            "ORPHAN_GRACE_HOURS": str(options.grace_hours),
            "TIME_BUDGET_SECONDS": str(int(timeout.to_seconds()) - 60),
        },
    )
    _schedule(
        store,
        "orphan_sweeper",
        "OrphanSweeperSchedule",
        fn,
        options.schedule or events.Schedule.rate(Duration.days(1)),
    )
    return fn


def create_maintenance(
    store: CheckpointStore, options: MaintenanceOptions, shared: SharedFunctionSettings
) -> tuple[lambda_.Function, TokenKey]:
    """The on-demand maintenance function and the key it signs continuation tokens with."""
    budget = options.time_budget or Duration.seconds(45)
    token_key = create_token_key(store)
    fn = maintenance_function(
        store,
        "maintenance",
        "Maintenance",
        shared,
        description="On request: copy_thread, prune, delete_thread, delete_for_runs "
        "(resumable steps, via the library).",
        timeout=Duration.minutes(5),
        memory_size=1024,
        environment={
            "TIME_BUDGET_SECONDS": str(int(budget.to_seconds())),
            ENV_MAINTENANCE_TOKEN_SECRET: token_key.secret_id,
        },
    )
    grant_token_key(store, token_key, fn)
    return fn, token_key


def create_reaper(
    store: CheckpointStore, options: ReaperOptions, shared: SharedFunctionSettings
) -> lambda_.EventSourceMapping:
    """The reaper and its stream event source (returned): TTL deletions of thread heads only."""
    fn = maintenance_function(
        store,
        "reaper",
        "Reaper",
        shared,
        description="Deletes all items and payloads of threads whose head item expired (DynamoDB TTL).",
        timeout=Duration.minutes(5),
        memory_size=512,
        environment={},
        async_invoked=False,
    )
    _grant_stream_read(store, fn)
    dlq = store.dlqs["reaper"]
    acknowledge(
        dlq,
        "AwsSolutions-SQS3",
        "This queue is itself a dead-letter destination (the on-failure destination of the reaper's "
        "stream event source mapping); a DLQ for a DLQ would only move the problem.",
    )
    mapping = lambda_.EventSourceMapping(
        store,
        "ReaperStreamMapping",
        target=fn,
        event_source_arn=store.table_stream_arn,
        starting_position=lambda_.StartingPosition.TRIM_HORIZON,
        batch_size=options.batch_size,
        max_batching_window=Duration.seconds(30),
        # One invocation per shard at a time: with no reserved concurrency
        # the shard count is the reaper's cap.
        parallelization_factor=1,
        bisect_batch_on_error=True,
        retry_attempts=options.retry_attempts,
        # The stream keeps records for 24 h; give up a little earlier, into
        # the DLQ, rather than lose them silently at the trim horizon.
        max_record_age=Duration.hours(23),
        # No ReportBatchItemFailures: the reaper fails or succeeds a batch
        # as a whole (reaping is idempotent), and bisecting isolates a
        # poison record.
        on_failure=event_sources.SqsDlq(dlq),
        filters=[reaper_filter_pattern()],
    )
    add_alarm(
        store,
        "ReaperIteratorAgeAlarm",
        fn.metric("IteratorAge", period=PERIOD, statistic="Maximum"),
        threshold=Duration.hours(1).to_milliseconds(),
        description="The reaper is more than an hour behind the table stream.",
    )
    return mapping


def _grant_stream_read(store: CheckpointStore, fn: lambda_.Function) -> None:
    role = fn.role
    assert role is not None
    iam.Grant.add_to_principal(
        grantee=role, actions=list(STREAM_READ_ACTIONS), resource_arns=[store.table_stream_arn]
    )
    # ListStreams has no resource-level permissions: "*" is the only valid resource.
    iam.Grant.add_to_principal(grantee=role, actions=["dynamodb:ListStreams"], resource_arns=["*"])
    acknowledge(
        role,
        "AwsSolutions-IAM5[Resource::*]",
        "dynamodb:ListStreams supports no resource-level permissions (resource must be '*'); the "
        "statement grants that one action only. Stream reads are limited to this table's stream.",
    )
