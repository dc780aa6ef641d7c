"""The construct's option groups, the one spelling of its options (issues #28, #37).

``CheckpointStore`` takes the bucket's, each function's and the monitoring
options as frozen dataclasses (``prune_options=PruneOptions(...)``). The flat
keywords that came before them (``prune_keep_last=...``) were never released
and are refused, as any unknown keyword is, with Python's ``TypeError``.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

from cdk_helpers import FAST_CONTEXT

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
from langgraph.checkpoint.dynamodb.cdk._options import GROUPS

#: The keywords that are not options of a group: what the store is and where.
OWN = {
    "table_name", "bucket", "s3_key_prefix", "removal_policy", "deletion_protection", "kms_key",
    "thread_ttl", "track_threads",
}  # fmt: skip

#: The flat keywords the groups replaced before 0.1.0 (``prune_keep_last=`` for ``PruneOptions(keep_last=)``).
FLAT = (
    "bucket_name", "versioned", "noncurrent_version_expiration", "access_log_retention", "enable_pruner",
    "prune_schedule", "prune_keep_last", "prune_idle_days", "prune_page_size", "enable_reaper",
    "reaper_batch_size", "reaper_retry_attempts", "enable_orphan_sweeper", "orphan_sweep_schedule",
    "orphan_grace_hours", "enable_maintenance", "maintenance_time_budget", "lambda_code_dir", "lambda_code",
    "runtime", "architecture", "log_retention", "reserved_concurrency", "alarm_topic", "dashboard",
    "dashboard_name", "bucket_request_metrics", "metrics_namespace",
)  # fmt: skip


def test_the_groups_are_the_only_spelling() -> None:
    params = inspect.signature(CheckpointStore.__init__).parameters
    assert {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY} == OWN | set(GROUPS)
    assert not [p for p in params.values() if p.kind is p.VAR_KEYWORD]


@pytest.mark.parametrize("flat", FLAT)
def test_a_flat_keyword_is_refused(flat: str) -> None:
    """Python's own error, before the construct does anything: the group is the one spelling."""
    from aws_cdk import App, Stack

    with pytest.raises(TypeError, match=f"unexpected keyword argument '{flat}'"):
        CheckpointStore(Stack(App(context=FAST_CONTEXT), "S"), "Store", **{flat: None})


def test_defaults() -> None:
    """A group not given is its class's defaults."""
    options = resolve_options()
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


def test_a_group_given_is_kept_the_others_are_defaults() -> None:
    options = resolve_options(
        prune_options=PruneOptions(keep_last=3), maintenance_options=MaintenanceOptions(enabled=False)
    )
    assert options.prune == PruneOptions(keep_last=3)
    assert options.maintenance == MaintenanceOptions(enabled=False)
    assert (options.reaper, options.orphan_sweep, options.functions) == (
        ReaperOptions(),
        OrphanSweepOptions(),
        FunctionOptions(),
    )
    assert (options.bucket, options.monitoring) == (BucketOptions(), MonitoringOptions())


def test_an_unknown_keyword_or_a_wrong_group_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'prune_keep'"):
        resolve_options(prune_keep=3)
    with pytest.raises(TypeError, match="prune_options must be a PruneOptions, not ReaperOptions"):
        resolve_options(prune_options=ReaperOptions())


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: PruneOptions(keep_last=0), r"PruneOptions\.keep_last"),
        (lambda: PruneOptions(idle_days=0), r"PruneOptions\.idle_days"),
        (lambda: FunctionOptions(reserved_concurrency=0), r"FunctionOptions\.reserved_concurrency"),
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


def test_the_docs_example_builds_the_store_it_says(cdk_env: None) -> None:
    """docs/infrastructure.md's option-groups block, run as written: the groups it names."""
    import re

    from aws_cdk import App, Stack
    from aws_cdk import aws_sns as sns

    text = (Path(__file__).resolve().parents[2] / "docs" / "infrastructure.md").read_text()
    section = text[
        text.index("## Using the construct in your own app") : text.index("### Stable logical ids")
    ]
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", section, flags=re.S) if "dashboard_name=" in b]
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
