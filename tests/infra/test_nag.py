"""cdk-nag (AwsSolutions) at synth: no unacknowledged finding, and exactly the documented acknowledgements."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

#: Every acknowledged finding and where it applies (docs/infrastructure.md explains each).
REFERENCE_ACKS = {
    # Python 3.12 pinned (all five functions).
    ("AwsSolutions-L1", "LangGraphCheckpointStack/AgentFunction/Resource"),
    ("AwsSolutions-L1", "LangGraphCheckpointStack/CheckpointStore/Maintenance/Resource"),
    ("AwsSolutions-L1", "LangGraphCheckpointStack/CheckpointStore/OrphanSweeper/Resource"),
    ("AwsSolutions-L1", "LangGraphCheckpointStack/CheckpointStore/Pruner/Resource"),
    ("AwsSolutions-L1", "LangGraphCheckpointStack/CheckpointStore/Reaper/Resource"),
    # The continuation-token key is rotated on demand, not on a schedule.
    ("AwsSolutions-SMG4", "LangGraphCheckpointStack/CheckpointStore/MaintenanceTokenKey/Resource"),
    # The reaper's DLQ is itself an on-failure destination.
    ("AwsSolutions-SQS3", "LangGraphCheckpointStack/CheckpointStore/ReaperDlq/Resource"),
    # dynamodb:ListStreams has no resource-level permissions.
    (
        "AwsSolutions-IAM5[Resource::*]",
        "LangGraphCheckpointStack/CheckpointStore/ReaperRole/DefaultPolicy/Resource",
    ),
    # Only the agent queries the table's indexes (index/*); maintenance roles have no index wildcard.
    (
        "AwsSolutions-IAM5[Resource::<CheckpointStoreTable.Arn>/index/*]",
        "LangGraphCheckpointStack/AgentRole/DefaultPolicy/Resource",
    ),
} | {
    (
        "AwsSolutions-IAM5[Resource::<CheckpointStoreBucket.Arn>/checkpoints/*]",
        f"LangGraphCheckpointStack/{role}/DefaultPolicy/Resource",
    )
    for role in (
        "AgentRole",
        "CheckpointStore/PrunerRole",
        "CheckpointStore/ReaperRole",
        "CheckpointStore/OrphanSweeperRole",
        "CheckpointStore/MaintenanceRole",
    )
}


def _nag(report: dict) -> dict:
    (nag,) = [r for r in report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    return nag


def _suppressed(nag: dict) -> set[tuple[str, str]]:
    return {
        (v["ruleName"], c["constructPath"])
        for v in nag["suppressedViolations"]
        for c in v["violatingConstructs"]
    }


@pytest.mark.parametrize("synth_name", ["reference", "reference_kms", "custom"])
def test_no_unacknowledged_findings(synth_name: str, request: pytest.FixtureRequest) -> None:
    nag = _nag(request.getfixturevalue(synth_name).report())
    assert nag["violations"] == []
    assert nag["conclusion"] == "success"


def test_reference_acknowledgements_are_exactly_the_documented_ones(reference, reference_kms) -> None:
    assert _suppressed(_nag(reference.report())) == REFERENCE_ACKS
    # The customer key adds no finding: the key rotates, DLQs stay SSE-SQS.
    assert _suppressed(_nag(reference_kms.report())) == REFERENCE_ACKS


def test_grants_acknowledge_their_own_wildcards_on_any_grantee(custom) -> None:
    suppressed = _suppressed(_nag(custom.report()))
    for role, prefix in (("ReadWriteRole", "ckpt/"), ("ReadRole", "ckpt/"), ("TenantRole", "ckpt/acme-|")):
        assert (
            f"AwsSolutions-IAM5[Resource::<StoreBucket.Arn>/{prefix}*]",
            f"Custom/{role}/DefaultPolicy/Resource",
        ) in suppressed
    assert (
        "AwsSolutions-IAM5[Resource::<StoreTable.Arn>/index/*]",
        "Custom/ReadWriteRole/DefaultPolicy/Resource",
    ) in suppressed
    # The tenant grant has no index wildcard to acknowledge.
    assert not [s for s in suppressed if s[1].startswith("Custom/TenantRole") and "index" in s[0]]


def test_acknowledgements_are_written_into_the_template(reference) -> None:
    """An audit trail next to each resource (cdk-nag's write_suppressions_to_cloud_formation)."""
    resources = reference.templates["LangGraphCheckpointStack"]["Resources"]
    (dlq,) = [
        v
        for k, v in resources.items()
        if k.startswith("CheckpointStoreReaperDlq") and v["Type"] == "AWS::SQS::Queue"
    ]
    (rule,) = dlq["Metadata"]["cdk_nag"]["rules_to_suppress"]
    assert rule["id"] == "AwsSolutions::AwsSolutions-SQS3"
    assert "dead-letter" in rule["reason"]


def test_an_unacknowledged_finding_is_reported(cdk_env: None, tmp_path: Path) -> None:
    """Negative control: this test setup does surface findings (so an empty report means something)."""
    from aws_cdk import App, Stack, Validations
    from aws_cdk import aws_s3 as s3
    from cdk_helpers import FAST_CONTEXT, synthesize
    from cdk_nag import AwsSolutionsChecks

    app = App(context=FAST_CONTEXT, outdir=str(tmp_path), builtin_cloud_formation_validation=False)
    s3.Bucket(Stack(app, "Bare"), "Bucket")
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    nag = _nag(synthesize(app, tmp_path).report())
    assert {v["ruleName"] for v in nag["violations"]} >= {"AwsSolutions-S1", "AwsSolutions-S10"}
    assert nag["conclusion"] == "failure"
