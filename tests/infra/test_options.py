"""The construct's option groups: flat keywords and groups build the same store (issue #28).

``CheckpointStore`` takes the bucket's, each function's and the monitoring
options as frozen dataclasses (``prune_options=PruneOptions(...)``) or as the
flat keywords of earlier releases (``prune_keep_last=...``). Both spellings
must synthesize the same template; a group together with one of its own flat
keywords, and an unknown keyword, are ``TypeError``s.
"""

from __future__ import annotations

import inspect
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

from cdk_helpers import FAST_CONTEXT, Synth, synthesize

from langgraph.checkpoint.dynamodb.cdk import (
    BucketOptions,
    CheckpointStore,
    FunctionOptions,
    MaintenanceOptions,
    MonitoringOptions,
    OrphanSweepOptions,
    PruneOptions,
    ReaperOptions,
    resolve_options,
)
from langgraph.checkpoint.dynamodb.cdk._options import FLAT_KEYWORDS, GROUPS, CheckpointStoreKeywords

#: Every keyword ``CheckpointStore`` took before the groups existed (users' stacks pass them).
FLAT = {
    "table_name", "bucket", "bucket_name", "s3_key_prefix", "removal_policy", "deletion_protection",
    "kms_key", "versioned", "noncurrent_version_expiration", "access_log_retention", "enable_pruner",
    "prune_schedule", "prune_keep_last", "prune_idle_days", "prune_page_size", "thread_ttl",
    "track_threads", "enable_reaper", "reaper_batch_size", "reaper_retry_attempts",
    "enable_orphan_sweeper", "orphan_sweep_schedule", "orphan_grace_hours", "enable_maintenance",
    "maintenance_time_budget", "lambda_code_dir", "lambda_code", "runtime", "architecture",
    "log_retention", "reserved_concurrency", "alarm_topic", "dashboard", "dashboard_name",
    "bucket_request_metrics", "metrics_namespace",
}  # fmt: skip


def test_every_earlier_keyword_is_still_accepted() -> None:
    params = inspect.signature(CheckpointStore.__init__).parameters
    explicit = {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY} - set(GROUPS)
    assert len(FLAT) == 36
    assert explicit | set(FLAT_KEYWORDS) == FLAT
    assert not explicit & set(FLAT_KEYWORDS)
    assert set(CheckpointStoreKeywords.__annotations__) == set(FLAT_KEYWORDS)
    for flat, (group, field) in FLAT_KEYWORDS.items():
        cls: Any = GROUPS[group][1]
        assert field in {f.name for f in fields(cls)}, (flat, group, field)


def test_defaults_are_the_flat_keywords_defaults() -> None:
    """The groups' defaults are the defaults the flat keywords had."""
    options = resolve_options({})
    assert (options.prune.enabled, options.prune.keep_last, options.prune.idle_days) == (True, 20, 30)
    assert isinstance(options.prune.idle_days, int)  # PRUNE_IDLE_DAYS="30", not "30.0"
    assert (options.prune.schedule, options.prune.page_size) == (None, None)
    assert (options.reaper.enabled, options.reaper.batch_size, options.reaper.retry_attempts) == (
        True,
        100,
        5,
    )
    assert (options.orphan_sweep.enabled, options.orphan_sweep.grace_hours) == (True, 24)
    assert (options.maintenance.enabled, options.maintenance.time_budget) == (True, None)
    assert options.functions.reserved_concurrency == 1
    assert (options.functions.runtime.name, options.functions.architecture.name) == ("python3.12", "x86_64")
    assert options.bucket == BucketOptions(versioned=True)
    monitoring = options.monitoring
    assert (monitoring.dashboard, monitoring.request_metrics, monitoring.namespace) == (
        True,
        True,
        "LangGraph/Checkpoints",
    )
    assert MonitoringOptions(dashboard=False).request_metrics is False
    assert MonitoringOptions(dashboard=False, bucket_request_metrics=True).request_metrics is True
    assert MonitoringOptions(metrics_namespace="").namespace is None


def test_flat_keywords_fill_their_groups() -> None:
    options = resolve_options(
        {"prune_keep_last": 3, "reaper_batch_size": 50, "lambda_code_dir": "x", "dashboard": False},
        maintenance_options=MaintenanceOptions(enabled=False),
    )
    assert options.prune == PruneOptions(keep_last=3)
    assert options.reaper == ReaperOptions(batch_size=50)
    assert options.functions == FunctionOptions(code_dir="x")
    assert options.monitoring == MonitoringOptions(dashboard=False)
    assert options.maintenance == MaintenanceOptions(enabled=False)
    assert options.orphan_sweep == OrphanSweepOptions()


def test_a_group_and_its_own_flat_keyword_conflict() -> None:
    with pytest.raises(TypeError, match=r"prune_keep_last= and prune_options=.*PruneOptions\(keep_last="):
        resolve_options({"prune_keep_last": 3}, prune_options=PruneOptions(keep_last=3))
    with pytest.raises(TypeError, match="unexpected keyword argument 'prune_keep'"):
        resolve_options({"prune_keep": 3})
    with pytest.raises(TypeError, match="prune_options must be a PruneOptions, not ReaperOptions"):
        resolve_options({}, prune_options=ReaperOptions())


def test_the_construct_raises_the_conflict(cdk_env: None, fake_lambdas: Path) -> None:
    from aws_cdk import App, Stack

    app = App(context=FAST_CONTEXT)
    with pytest.raises(TypeError, match="dashboard= and monitoring_options="):
        CheckpointStore(
            Stack(app, "S"),
            "Store",
            lambda_code_dir=fake_lambdas,
            dashboard=False,
            monitoring_options=MonitoringOptions(),
        )
    with pytest.raises(TypeError, match="unexpected keyword argument 'enable_pruners'"):
        CheckpointStore(Stack(app, "T"), "Store", enable_pruners=False)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: PruneOptions(keep_last=0), "prune_keep_last"),
        (lambda: PruneOptions(idle_days=0), "prune_idle_days"),
        (lambda: FunctionOptions(reserved_concurrency=0), "reserved_concurrency"),
        (lambda: MonitoringOptions(metrics_namespace="AWS/Lambda"), "LANGGRAPH_DYNAMODB_METRICS_NAMESPACE"),
    ],
)
def test_groups_validate_their_values(build: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build()


def test_groups_are_frozen() -> None:
    from dataclasses import FrozenInstanceError

    with pytest.raises(FrozenInstanceError):
        PruneOptions().keep_last = 1  # type: ignore[misc]


def test_groups_synthesize_what_the_flat_keywords_do(
    custom: Synth, cdk_env: None, tmp_path: Path, fake_lambdas: Path
) -> None:
    """The ``custom`` fixture's ``Custom`` stack, its store built from groups: the same template."""
    from aws_cdk import App, Duration, RemovalPolicy, Stack, Validations
    from aws_cdk import aws_events as events
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_sns as sns
    from cdk_nag import AwsSolutionsChecks

    app = App(
        context=FAST_CONTEXT,
        outdir=str(tmp_path),
        builtin_cloud_formation_validation=False,
        stack_traces=False,
    )
    stack = Stack(app, "Custom")
    topic_key = kms.Key(stack, "TopicKey", enable_key_rotation=True)
    topic = sns.Topic(stack, "Alarms", master_key=topic_key, enforce_ssl=True)
    store = CheckpointStore(
        stack,
        "Store",
        table_name="my-checkpoints",
        s3_key_prefix="ckpt/",
        removal_policy=RemovalPolicy.DESTROY,
        thread_ttl=Duration.days(7),
        bucket_options=BucketOptions(
            name="my-checkpoint-payloads", versioned=True, noncurrent_version_expiration=Duration.days(7)
        ),
        prune_options=PruneOptions(
            schedule=events.Schedule.rate(Duration.minutes(15)), keep_last=3, idle_days=7, page_size=50
        ),
        orphan_sweep_options=OrphanSweepOptions(
            schedule=events.Schedule.cron(minute="30", hour="3"), grace_hours=48
        ),
        reaper_options=ReaperOptions(batch_size=50, retry_attempts=3),
        maintenance_options=MaintenanceOptions(time_budget=Duration.seconds(20)),
        function_options=FunctionOptions(code_dir=fake_lambdas),
        # A flat keyword of one group next to other groups.
        alarm_topic=topic,
    )
    principal = iam.AccountRootPrincipal()
    store.grant_read_write(iam.Role(stack, "ReadWriteRole", assumed_by=principal))
    store.grant_read(iam.Role(stack, "ReadRole", assumed_by=principal))
    store.grant_tenant_read_write(iam.Role(stack, "TenantRole", assumed_by=principal), "acme-")
    store.grant_maintenance(iam.Role(stack, "OperatorRole", assumed_by=principal))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    grouped = synthesize(app, tmp_path)
    assert grouped.templates["Custom"] == custom.templates["Custom"]


def test_the_docs_example_builds_the_store_it_says(cdk_env: None) -> None:
    """docs/infrastructure.md's option-groups block, run as written: the groups it names."""
    import re

    from aws_cdk import App, Stack
    from aws_cdk import aws_sns as sns

    text = (Path(__file__).resolve().parents[2] / "docs" / "infrastructure.md").read_text()
    section = text[
        text.index("## Using the construct in your own app") : text.index("### Stable logical ids")
    ]
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", section, flags=re.S) if "prune_options=" in b]
    stack = Stack(App(context=FAST_CONTEXT), "Docs")
    topic = sns.Topic(stack, "Topic")
    namespace: dict[str, Any] = {"stack": stack, "topic": topic}
    exec(compile(block, "docs/infrastructure.md", "exec"), namespace)
    options = namespace["store"].options
    assert (options.prune.keep_last, options.prune.idle_days) == (5, 14)
    assert options.functions.architecture.name == "arm64"
    assert options.monitoring.alarm_topic is topic
    assert options.monitoring.dashboard_name == "agent-checkpoints"
    assert namespace["store"].alarm_topic is topic
