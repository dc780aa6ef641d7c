"""Option groups of ``CheckpointStore``: one small frozen dataclass per concern.

``CheckpointStore`` takes each group as one keyword (``prune_options=PruneOptions(...)``),
the one spelling of its options; a group of the wrong class, or an unknown
keyword, is a ``TypeError``.

Example:
    >>> from langgraph.checkpoint.dynamodb.cdk import PruneOptions, ReaperOptions, resolve_options
    >>> options = resolve_options(prune_options=PruneOptions(keep_last=5), reaper_options=ReaperOptions(batch_size=50))
    >>> options.prune.keep_last, options.reaper.batch_size, options.prune.idle_days
    (5, 50, 30)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns

from langgraph.checkpoint.dynamodb.lambdas.handlers import ENV_READ_UNITS, ENV_WRITE_UNITS
from langgraph.checkpoint.dynamodb.lambdas.metrics import (
    DEFAULT_NAMESPACE,
    ENV_METRICS_NAMESPACE,
    metrics_namespace,
)

__all__ = [
    "BucketOptions",
    "FunctionOptions",
    "MaintenanceOptions",
    "MonitoringOptions",
    "OrphanSweepOptions",
    "PruneOptions",
    "ReaperOptions",
    "StoreOptions",
    "resolve_options",
    "validated_namespace",
]


def validated_namespace(namespace: str | None) -> str | None:
    """``metrics_namespace`` as the handlers will read it: ``None`` when empty, ``ValueError`` when invalid."""
    return metrics_namespace({ENV_METRICS_NAMESPACE: namespace or ""})


@dataclass(frozen=True, kw_only=True)
class BucketOptions:
    """The payload bucket (created unless ``CheckpointStore(bucket=False)``).

    Attributes:
        name: Physical bucket name (default: generated).
        versioned: Bucket versioning (default on), so that a table restored to a point in time finds the objects its items
            referenced then (see docs/infrastructure.md). Deletes then leave
            noncurrent versions, expired after ``noncurrent_version_expiration``
            together with the delete markers left behind. ``False`` suspends
            nothing on an already versioned bucket: S3 cannot unversion one.
        noncurrent_version_expiration: Lifetime of noncurrent versions and,
            after them, of the delete markers (default 35 days, ``PITR_WINDOW``).
        access_log_retention: How long server access logs are kept (default 90 days).

    Example:
        >>> from aws_cdk import Duration
        >>> BucketOptions(name="my-checkpoint-payloads", noncurrent_version_expiration=Duration.days(7)).name
        'my-checkpoint-payloads'
    """

    name: str | None = None
    versioned: bool = True
    noncurrent_version_expiration: Duration | None = None
    access_log_retention: Duration | None = None


@dataclass(frozen=True, kw_only=True)
class PruneOptions:
    """The scheduled pruner.

    Attributes:
        enabled: Create it.
        schedule: Its schedule (default every hour).
        keep_last: ``PRUNE_KEEP_LAST``, checkpoints kept per namespace,
            delta-safe (default 20, ``None`` keeps all).
        idle_days: ``PRUNE_IDLE_DAYS``: threads idle this long are deleted
            (default 30, ``None``: never).
        page_size: ``PRUNE_PAGE_SIZE``, threads per claimed page
            (default: the library's, 25).

    Raises:
        ValueError: ``keep_last`` below 1, or ``idle_days`` not positive.

    Example:
        >>> PruneOptions(keep_last=5, idle_days=None).keep_last
        5
    """

    enabled: bool = True
    schedule: events.Schedule | None = None
    keep_last: int | None = 20
    idle_days: float | None = 30
    page_size: int | None = None

    def __post_init__(self) -> None:
        if self.keep_last is not None and self.keep_last < 1:
            raise ValueError("PruneOptions.keep_last must be >= 1: the latest checkpoint always survives")
        if self.idle_days is not None and self.idle_days <= 0:
            raise ValueError("PruneOptions.idle_days must be > 0 (None disables idle deletion)")


@dataclass(frozen=True, kw_only=True)
class ReaperOptions:
    """The stream consumer that deletes threads whose head expired (DynamoDB TTL).

    Attributes:
        enabled: Create it.
        batch_size: Stream records per invocation (default 100).
        retry_attempts: Retries of a failing batch, bisected first, before it
            goes to the reaper's dead-letter queue (default 5).

    Example:
        >>> ReaperOptions(batch_size=50).retry_attempts
        5
    """

    enabled: bool = True
    batch_size: int = 100
    retry_attempts: int = 5


@dataclass(frozen=True, kw_only=True)
class OrphanSweepOptions:
    """The S3 orphan sweeper (only with a bucket).

    Attributes:
        enabled: Create it.
        schedule: Its schedule (default every day).
        grace_hours: ``ORPHAN_GRACE_HOURS``: objects younger than this are
            never swept, a ``put`` may still be about to reference them
            (default 24).

    Example:
        >>> OrphanSweepOptions(grace_hours=48).grace_hours
        48
    """

    enabled: bool = True
    schedule: events.Schedule | None = None
    grace_hours: int = 24


@dataclass(frozen=True, kw_only=True)
class MaintenanceOptions:
    """The on-demand maintenance function (copy, prune, delete threads or runs, resumable).

    Attributes:
        enabled: Create it, the store's ``maintenance_function``: ``copy_thread``, ``prune``,
            ``delete_thread`` and ``delete_for_runs`` on request, in resumable
            steps (docs/infrastructure.md shows how to invoke it).
        time_budget: ``TIME_BUDGET_SECONDS``: each invocation starts no new
            unit of work after this long and returns a continuation token
            (default 45 s, so that a step answers within the AWS CLI's and SDKs' default 60 s read timeout; its
            Lambda timeout is 5 minutes, for one large unit).

    Example:
        >>> from aws_cdk import Duration
        >>> MaintenanceOptions(time_budget=Duration.seconds(20)).enabled
        True
    """

    enabled: bool = True
    time_budget: Duration | None = None


@dataclass(frozen=True, kw_only=True)
class FunctionOptions:
    """What the maintenance functions share: code, runtime, logs, concurrency.

    Attributes:
        code_dir: A folder of your own code to ship next to the library in
            their asset (default none: the maintenance handlers are part of
            this package).
        code: A prebuilt ``Code`` (overrides ``code_dir``; lets an app share
            one asset with its agent). It must contain this
            library, as every ``bundled_lambda_code`` asset does.
        runtime: Python runtime (default ``python3.12``).
        architecture: Lambda architecture, wheels are fetched to match
            (default ``x86_64``).
        log_retention: Retention of their log groups (default one month).
        reserved_concurrency: Reserved concurrent executions of each
            (default 1: a second concurrent run would only contend for the same cursor; a throttled scheduled run is
            retried by Lambda and raises the ``ThrottlesAlarm``). ``None``
            reserves nothing (accounts whose concurrency limit is too low to
            reserve any); the caps then are the schedules and, for the reaper,
            one invocation per stream shard.
        capacity_share: Share of the table's per-table throughput quota
            (40,000 read and 40,000 write units a second on demand, AWS's
            default; ``table_quota_units`` for a raised one) that each
            maintenance function may take, split over its concurrent runs
            (``MAINTENANCE_READ_UNITS``/``..._WRITE_UNITS``; default 0.1:
            4,000 units a second; ``None``: unlimited). It takes less while
            it meets throttles (``lifecycle.capacity_budget``).
        table_quota_units: The table's per-table quota that
            ``capacity_share`` is a share of (default 40,000).

    Raises:
        ValueError: ``reserved_concurrency`` below 1, ``capacity_share``
            outside (0, 1], ``table_quota_units`` below 1.

    Example:
        >>> from aws_cdk import aws_lambda as lambda_
        >>> FunctionOptions(architecture=lambda_.Architecture.ARM_64).reserved_concurrency
        1
    """

    code_dir: str | Path | None = None
    code: lambda_.Code | None = None
    runtime: lambda_.Runtime = lambda_.Runtime.PYTHON_3_12
    architecture: lambda_.Architecture = lambda_.Architecture.X86_64
    log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH
    reserved_concurrency: int | None = 1
    capacity_share: float | None = 0.1
    table_quota_units: int = 40_000

    def __post_init__(self) -> None:
        if self.reserved_concurrency is not None and self.reserved_concurrency < 1:
            raise ValueError("FunctionOptions.reserved_concurrency must be >= 1 (None reserves nothing)")
        if self.capacity_share is not None and not 0 < self.capacity_share <= 1:
            raise ValueError("FunctionOptions.capacity_share must be in (0, 1] (None: unlimited)")
        if self.table_quota_units < 1:
            raise ValueError("FunctionOptions.table_quota_units must be >= 1")

    def capacity_environment(self) -> dict[str, str]:
        """``MAINTENANCE_READ_UNITS``/``..._WRITE_UNITS`` of each run (empty: unlimited).

        Example:
            >>> FunctionOptions().capacity_environment()
            {'MAINTENANCE_READ_UNITS': '4000', 'MAINTENANCE_WRITE_UNITS': '4000'}
        """
        if self.capacity_share is None:
            return {}
        units = max(1, int(self.capacity_share * self.table_quota_units / (self.reserved_concurrency or 1)))
        return {ENV_READ_UNITS: str(units), ENV_WRITE_UNITS: str(units)}


@dataclass(frozen=True, kw_only=True)
class MonitoringOptions:
    """Alarms' notifications, the dashboard and the metrics behind it.

    Attributes:
        alarm_topic: SNS topic for alarm and OK notifications. Without one
            the alarms exist with no action: they show in the CloudWatch
            console, and ``store.alarms`` lets an app add actions later.
        dashboard: Create the store's CloudWatch dashboard (the store's
            ``dashboard``). On by default. It costs $3 a month: it
            graphs 102 metrics, more than the 50 of CloudWatch's free
            dashboards (docs/infrastructure.md lists every cost, and the
            dashboard's widgets).
        dashboard_name: Its physical name (default generated).
        bucket_request_metrics: Add a request metrics configuration to the
            bucket, filtered to the key prefix (id ``BUCKET_METRICS_ID``), for
            the dashboard's bucket requests and bytes (``None``, the default:
            follow ``dashboard``). S3 request metrics are billed as CloudWatch custom metrics (up to 16, $0.30 each a
            month, prorated by the hours they report: at most about $4.80 a
            month, less when the bucket idles).
        metrics_namespace: ``LANGGRAPH_DYNAMODB_METRICS_NAMESPACE`` of the
            maintenance functions (default ``LangGraph/Checkpoints``): the namespace of the counts their
            handlers print as embedded metrics (``lambdas.metrics.JOB_METRICS``),
            and of the dashboard's jobs row. ``None`` or ``""``: no job metrics.

    Raises:
        ValueError: ``metrics_namespace`` is not a valid CloudWatch namespace.

    Example:
        >>> MonitoringOptions(dashboard=False).request_metrics
        False
    """

    alarm_topic: sns.ITopic | None = None
    dashboard: bool = True
    dashboard_name: str | None = None
    bucket_request_metrics: bool | None = None
    metrics_namespace: str | None = DEFAULT_NAMESPACE

    def __post_init__(self) -> None:
        validated_namespace(self.metrics_namespace)

    @property
    def request_metrics(self) -> bool:
        """Whether the bucket gets its request metrics configuration (``bucket_request_metrics`` resolved)."""
        return self.dashboard if self.bucket_request_metrics is None else self.bucket_request_metrics

    @property
    def namespace(self) -> str | None:
        """The validated namespace, ``None`` for no job metrics."""
        return validated_namespace(self.metrics_namespace)


@dataclass(frozen=True)
class StoreOptions:
    """Every option group of one ``CheckpointStore``, resolved (``store.options``).

    Example:
        >>> resolve_options(prune_options=PruneOptions(keep_last=3)).prune.keep_last
        3
    """

    bucket: BucketOptions
    prune: PruneOptions
    reaper: ReaperOptions
    orphan_sweep: OrphanSweepOptions
    maintenance: MaintenanceOptions
    functions: FunctionOptions
    monitoring: MonitoringOptions


#: Group keyword of ``CheckpointStore`` -> (its ``StoreOptions`` field, its class).
GROUPS: Mapping[str, tuple[str, type]] = {
    "bucket_options": ("bucket", BucketOptions),
    "prune_options": ("prune", PruneOptions),
    "reaper_options": ("reaper", ReaperOptions),
    "orphan_sweep_options": ("orphan_sweep", OrphanSweepOptions),
    "maintenance_options": ("maintenance", MaintenanceOptions),
    "function_options": ("functions", FunctionOptions),
    "monitoring_options": ("monitoring", MonitoringOptions),
}


def _group(group_keyword: str, given: Any) -> Any:
    cls = GROUPS[group_keyword][1]
    if given is None:
        return cls()
    if not isinstance(given, cls):
        raise TypeError(f"{group_keyword} must be a {cls.__name__}, not {type(given).__name__}")
    return given


def resolve_options(**groups: Any) -> StoreOptions:
    """The option groups of a ``CheckpointStore`` call.

    Args:
        **groups: Group keywords (``prune_options=PruneOptions(...)``, a key of
            ``GROUPS``), ``None`` when not given.

    Returns:
        Every group: the one given, or the group's class defaults.

    Raises:
        TypeError: An unknown keyword, or a group of the wrong class.
        ValueError: An invalid value (see each group's ``Raises``).

    Example:
        >>> resolve_options(monitoring_options=MonitoringOptions(dashboard=False)).monitoring.dashboard
        False
    """
    unknown = sorted(set(groups) - set(GROUPS))
    if unknown:
        raise TypeError(f"CheckpointStore() got an unexpected keyword argument {unknown[0]!r}")
    return StoreOptions(**{GROUPS[name][0]: _group(name, groups.get(name)) for name in GROUPS})
