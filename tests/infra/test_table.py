"""The checkpoint table: one source of truth (schema.table_definition) and its settings."""

from __future__ import annotations

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

from langgraph.checkpoint.dynamodb import schema

REF = "LangGraphCheckpointStack"


def _table(synth, stack: str, logical_id: str) -> dict:
    return synth.templates[stack]["Resources"][logical_id]


def test_table_is_built_from_schema_table_definition(reference, custom) -> None:
    """Key schema, attribute types, GSIs, billing and stream equal the schema module's definition."""
    for synth, stack, logical_id, name in (
        (reference, REF, "CheckpointStoreTable", None),
        (custom, "Custom", "StoreTable", "my-checkpoints"),
    ):
        props = _table(synth, stack, logical_id)["Properties"]
        want = schema.table_definition(name or "unused")
        assert props["KeySchema"] == want["KeySchema"]
        assert props["AttributeDefinitions"] == want["AttributeDefinitions"]
        assert props["GlobalSecondaryIndexes"] == want["GlobalSecondaryIndexes"]
        assert props["BillingMode"] == want["BillingMode"] == "PAY_PER_REQUEST"
        assert props["StreamSpecification"] == {
            "StreamViewType": want["StreamSpecification"]["StreamViewType"]
        }
        assert props.get("TableName") == name
        # Nothing that would make the deployed table differ from setup()'s.
        assert "ProvisionedThroughput" not in props and "LocalSecondaryIndexes" not in props


def test_concrete_key_schema_and_indexes(reference) -> None:
    """The schema's values, spelled out: a change to the schema must be a deliberate one."""
    props = _table(reference, REF, "CheckpointStoreTable")["Properties"]
    assert props["KeySchema"] == [
        {"AttributeName": "PK", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ]
    assert {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]} == {
        "PK": "S",
        "SK": "S",
        "rid": "S",
        "ts": "S",
        "ua": "N",
    }
    gsis = {g["IndexName"]: g for g in props["GlobalSecondaryIndexes"]}
    assert set(gsis) == {"run_id-index", "threads-index"}
    assert gsis["run_id-index"]["KeySchema"] == [
        {"AttributeName": "rid", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ]
    assert gsis["run_id-index"]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert gsis["threads-index"]["KeySchema"] == [
        {"AttributeName": "ts", "KeyType": "HASH"},
        {"AttributeName": "ua", "KeyType": "RANGE"},
    ]
    assert gsis["threads-index"]["Projection"] == {"ProjectionType": "ALL"}
    assert props["StreamSpecification"] == {"StreamViewType": "KEYS_ONLY"}


def test_ttl_pitr_and_default_encryption(reference) -> None:
    props = _table(reference, REF, "CheckpointStoreTable")["Properties"]
    assert props["TimeToLiveSpecification"] == {"AttributeName": schema.TTL_ATTRIBUTE, "Enabled": True}
    assert schema.TTL_ATTRIBUTE == "ttl"
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    # AWS managed key (aws/dynamodb): SSE on, type KMS, no key id.
    assert props["SSESpecification"] == {"SSEEnabled": True, "SSEType": "KMS"}


def test_customer_managed_key_encrypts_the_table(reference_kms) -> None:
    key_id, key = reference_kms.one(REF, "AWS::KMS::Key")
    assert key["Properties"]["EnableKeyRotation"] is True
    props = _table(reference_kms, REF, "CheckpointStoreTable")["Properties"]
    assert props["SSESpecification"] == {
        "SSEEnabled": True,
        "SSEType": "KMS",
        "KMSMasterKeyId": {"Fn::GetAtt": [key_id, "Arn"]},
    }


def test_removal_policy_and_deletion_protection(reference, custom) -> None:
    retained = _table(reference, REF, "CheckpointStoreTable")
    assert retained["DeletionPolicy"] == retained["UpdateReplacePolicy"] == "Retain"
    assert retained["Properties"]["DeletionProtectionEnabled"] is True
    destroyed = _table(custom, "Custom", "StoreTable")
    assert destroyed["DeletionPolicy"] == "Delete"
    assert destroyed["Properties"]["DeletionProtectionEnabled"] is False


def test_stateful_logical_ids_are_pinned(reference, custom) -> None:
    """<construct id><suffix>, independent of where the construct sits in the tree."""
    resources = reference.templates[REF]["Resources"]
    assert resources["CheckpointStoreTable"]["Type"] == "AWS::DynamoDB::Table"
    assert resources["CheckpointStoreBucket"]["Type"] == "AWS::S3::Bucket"
    assert resources["CheckpointStoreAccessLogBucket"]["Type"] == "AWS::S3::Bucket"
    assert reference.stores[REF].logical_ids == {
        "Table": "CheckpointStoreTable",
        "AccessLogBucket": "CheckpointStoreAccessLogBucket",
        "Bucket": "CheckpointStoreBucket",
    }
    assert set(custom.resources("Custom", "AWS::DynamoDB::Table")) == {"StoreTable"}
    assert set(custom.resources("NoBucket", "AWS::DynamoDB::Table")) == {"StoreTable"}
    assert custom.resources("NoBucket", "AWS::S3::Bucket") == {}


def test_unknown_definition_keys_are_refused() -> None:
    """A schema feature the mapper cannot translate fails the synth instead of being dropped."""
    from langgraph.checkpoint.dynamodb.cdk import cfn_table_properties

    definition = schema.table_definition("t")
    definition["LocalSecondaryIndexes"] = []
    with pytest.raises(NotImplementedError, match="LocalSecondaryIndexes"):
        cfn_table_properties(definition)
