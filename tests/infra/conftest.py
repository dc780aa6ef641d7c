"""Synthesized CDK apps shared by the infra tests (each app is synthesized once).

Speed matters here: ``import aws_cdk`` and a synth each cost seconds, so the
apps are session-scoped and synthesized once, with CloudFormation's built-in
template validation off (``make synth`` runs it) and bundling skipped
(``aws:cdk:bundling-stacks = []``; the packaging test and ``deploy-local``
exercise the real bundler). cdk-nag runs in every app; a finding does not
abort the synth (``failSynthOnValidationErrors = false``) but lands in
``validation-report.json``, which ``test_nag.py`` asserts is empty, so one
nag finding fails one test instead of every test.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cdk_helpers import FAST_CONTEXT, Synth, synthesize

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # `import infra` (the reference app)

#: Handler folders the reference stack expects (the maintenance handlers are in the package).
HANDLER_DIRS = ("agent",)


@pytest.fixture(scope="session")
def cdk_env() -> Iterator[None]:
    """No CDK_DEFAULT_* from the host: templates stay environment-agnostic."""
    pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")
    with pytest.MonkeyPatch.context() as mp:
        for var in ("CDK_DEFAULT_ACCOUNT", "CDK_DEFAULT_REGION", "CDK_CONTEXT_JSON", "CDK_OUTDIR"):
            mp.delenv(var, raising=False)
        yield


@pytest.fixture(scope="session")
def fake_lambdas(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Placeholder handler folders: template tests must not depend on lambdas/ contents."""
    root = tmp_path_factory.mktemp("lambdas")
    for name in HANDLER_DIRS:
        (root / name).mkdir()
        (root / name / "handler.py").write_text("def handler(event, context):\n    return {}\n")
    return root


def _reference(tmp: Path, fake_lambdas: Path, **context: Any) -> Synth:
    from aws_cdk import App
    from infra.app import build_app

    app = App(
        context={**FAST_CONTEXT, "lambda_code_dir": str(fake_lambdas), **context},
        outdir=str(tmp),
        builtin_cloud_formation_validation=False,
        stack_traces=False,
    )
    return synthesize(build_app(app), tmp)


@pytest.fixture(scope="session")
def reference(cdk_env: None, tmp_path_factory: pytest.TempPathFactory, fake_lambdas: Path) -> Synth:
    """``infra/app.py`` as ``cdk synth`` runs it (nag on, AWS managed keys)."""
    return _reference(tmp_path_factory.mktemp("ref"), fake_lambdas)


@pytest.fixture(scope="session")
def reference_kms(cdk_env: None, tmp_path_factory: pytest.TempPathFactory, fake_lambdas: Path) -> Synth:
    """The reference app with ``-c kms=true`` (customer managed key)."""
    return _reference(tmp_path_factory.mktemp("refkms"), fake_lambdas, kms=True)


@pytest.fixture(scope="session")
def custom(cdk_env: None, tmp_path_factory: pytest.TempPathFactory, fake_lambdas: Path) -> Synth:
    """The construct with non-default settings, grantee roles, and a bucket-less variant.

    Stack ``Custom``: ``CheckpointStore`` ``Store`` (named table and bucket,
    prefix ``ckpt/``, DESTROY, versioned, custom schedules and pruner
    settings, a thread TTL, an SNS alarm topic) and four roles:
    ``ReadWriteRole`` (grant_read_write), ``ReadRole`` (grant_read),
    ``TenantRole`` (grant_tenant_read_write with ``acme-``), ``OperatorRole``
    (grant_maintenance). Stack ``NoBucket``: a DynamoDB-only store with
    thread tracking, no idle deletion, and a ``ReadWriteRole``. Stack
    ``Unversioned``: an unversioned bucket, an imported customer key, no
    reserved concurrency, no reaper, no maintenance function. ``Custom``'s
    maintenance function has a 20 s time budget.
    """
    from aws_cdk import App, Duration, RemovalPolicy, Stack, Validations
    from aws_cdk import aws_events as events
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_sns as sns
    from cdk_nag import AwsSolutionsChecks

    from langgraph.checkpoint.dynamodb.cdk import (
        BucketOptions,
        CheckpointStore,
        FunctionOptions,
        MaintenanceOptions,
        MonitoringOptions,
        OrphanSweepOptions,
        PruneOptions,
        ReaperOptions,
    )

    outdir = tmp_path_factory.mktemp("custom")
    app = App(
        context=FAST_CONTEXT, outdir=str(outdir), builtin_cloud_formation_validation=False, stack_traces=False
    )
    stack = Stack(app, "Custom")
    topic_key = kms.Key(stack, "TopicKey", enable_key_rotation=True)
    topic = sns.Topic(stack, "Alarms", master_key=topic_key, enforce_ssl=True)
    store = CheckpointStore(
        stack,
        "Store",
        table_name="my-checkpoints",
        bucket_options=BucketOptions(
            name="my-checkpoint-payloads", versioned=True, noncurrent_version_expiration=Duration.days(7)
        ),
        s3_key_prefix="ckpt/",
        removal_policy=RemovalPolicy.DESTROY,
        prune_options=PruneOptions(
            schedule=events.Schedule.rate(Duration.minutes(15)), keep_last=3, idle_days=7, page_size=50
        ),
        thread_ttl=Duration.days(7),
        orphan_sweep_options=OrphanSweepOptions(
            schedule=events.Schedule.cron(minute="30", hour="3"), grace_hours=48
        ),
        reaper_options=ReaperOptions(batch_size=50, retry_attempts=3),
        # A raised table quota, a quarter of it for each maintenance function.
        function_options=FunctionOptions(
            code_dir=fake_lambdas, capacity_share=0.25, table_quota_units=80_000
        ),
        monitoring_options=MonitoringOptions(alarm_topic=topic),
        maintenance_options=MaintenanceOptions(time_budget=Duration.seconds(20)),
    )
    principal = iam.AccountRootPrincipal()
    store.grant_read_write(iam.Role(stack, "ReadWriteRole", assumed_by=principal))
    store.grant_read(iam.Role(stack, "ReadRole", assumed_by=principal))
    store.grant_tenant_read_write(iam.Role(stack, "TenantRole", assumed_by=principal), "acme-")
    store.grant_maintenance(iam.Role(stack, "OperatorRole", assumed_by=principal))

    nobucket = Stack(app, "NoBucket")
    plain = CheckpointStore(
        nobucket,
        "Store",
        bucket=False,
        prune_options=PruneOptions(idle_days=None),
        track_threads=True,
        function_options=FunctionOptions(code_dir=fake_lambdas),
    )
    plain.grant_read_write(iam.Role(nobucket, "ReadWriteRole", assumed_by=principal))

    unversioned = Stack(app, "Unversioned")
    imported_key = kms.Key.from_key_arn(
        unversioned,
        "ImportedKey",
        "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555",
    )
    CheckpointStore(
        unversioned,
        "Store",
        bucket_options=BucketOptions(versioned=False),
        kms_key=imported_key,
        function_options=FunctionOptions(reserved_concurrency=None, code_dir=fake_lambdas),
        reaper_options=ReaperOptions(enabled=False),
        maintenance_options=MaintenanceOptions(enabled=False),
    )

    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    synth = synthesize(app, outdir)
    synth.stores.update(Custom=store, NoBucket=plain)
    return synth
