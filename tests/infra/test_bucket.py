"""The payload bucket and its access-log bucket."""

from __future__ import annotations

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

REF = "LangGraphCheckpointStack"
BLOCK_ALL = {
    "BlockPublicAcls": True,
    "BlockPublicPolicy": True,
    "IgnorePublicAcls": True,
    "RestrictPublicBuckets": True,
}


def _bucket_policy(synth, stack: str, bucket_id: str) -> list[dict]:
    policies = [
        p
        for p in synth.resources(stack, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    assert len(policies) == 1
    return policies[0]["Properties"]["PolicyDocument"]["Statement"]


def _tls_deny(bucket_id: str) -> dict:
    arn = {"Fn::GetAtt": [bucket_id, "Arn"]}
    return {
        "Action": "s3:*",
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        "Effect": "Deny",
        "Principal": {"AWS": "*"},
        "Resource": [arn, {"Fn::Join": ["", [arn, "/*"]]}],
    }


def test_bucket_is_private_encrypted_and_logged(reference) -> None:
    props = reference.templates[REF]["Resources"]["CheckpointStoreBucket"]["Properties"]
    assert props["PublicAccessBlockConfiguration"] == BLOCK_ALL
    assert props["BucketEncryption"] == {
        "ServerSideEncryptionConfiguration": [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
    }
    assert props["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert props["LoggingConfiguration"] == {
        "DestinationBucketName": {"Ref": "CheckpointStoreAccessLogBucket"},
        "LogFilePrefix": "checkpoint-bucket/",
    }
    assert props["LifecycleConfiguration"] == {
        "Rules": [
            {
                "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                "Id": "AbortIncompleteMultipartUploads",
                "Status": "Enabled",
            },
            _noncurrent_rule(35),
        ]
    }


def _noncurrent_rule(days: int) -> dict:
    return {
        # Delete markers left once their noncurrent versions expired go too.
        "ExpiredObjectDeleteMarker": True,
        "Id": "ExpireNoncurrentVersions",
        "NoncurrentVersionExpiration": {"NoncurrentDays": days},
        "Status": "Enabled",
    }


def test_bucket_is_versioned_for_point_in_time_restores_by_default(reference, reference_kms) -> None:
    """The table has PITR (35 days): deleted payloads stay restorable as long as a restore can reach back."""
    for synth in (reference, reference_kms):
        resources = synth.templates[REF]["Resources"]
        assert resources["CheckpointStoreTable"]["Properties"]["PointInTimeRecoverySpecification"] == {
            "PointInTimeRecoveryEnabled": True
        }
        props = resources["CheckpointStoreBucket"]["Properties"]
        assert props["VersioningConfiguration"] == {"Status": "Enabled"}
        assert _noncurrent_rule(35) in props["LifecycleConfiguration"]["Rules"]
        # The access-log bucket is not a restore source: unversioned.
        assert "VersioningConfiguration" not in resources["CheckpointStoreAccessLogBucket"]["Properties"]


def test_unversioned_bucket_on_request(custom) -> None:
    props = custom.templates["Unversioned"]["Resources"]["StoreBucket"]["Properties"]
    assert "VersioningConfiguration" not in props
    assert [r["Id"] for r in props["LifecycleConfiguration"]["Rules"]] == ["AbortIncompleteMultipartUploads"]


def test_bucket_policy_denies_plain_http(reference) -> None:
    assert _bucket_policy(reference, REF, "CheckpointStoreBucket") == [_tls_deny("CheckpointStoreBucket")]


def test_access_log_bucket(reference) -> None:
    props = reference.templates[REF]["Resources"]["CheckpointStoreAccessLogBucket"]["Properties"]
    assert props["PublicAccessBlockConfiguration"] == BLOCK_ALL
    # Server access logs can only be delivered to SSE-S3 buckets.
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"
    ] == {"SSEAlgorithm": "AES256"}
    # ACLs stay disabled: delivery is granted by bucket policy, not LogDeliveryWrite.
    assert props["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert "AccessControl" not in props
    assert props["LifecycleConfiguration"]["Rules"] == [
        {
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
            "ExpirationInDays": 90,
            "Id": "ExpireAccessLogs",
            "Status": "Enabled",
        }
    ]
    statements = _bucket_policy(reference, REF, "CheckpointStoreAccessLogBucket")
    assert statements[0] == _tls_deny("CheckpointStoreAccessLogBucket")
    assert statements[1] == {
        "Action": "s3:PutObject",
        "Condition": {
            "ArnLike": {"aws:SourceArn": {"Fn::GetAtt": ["CheckpointStoreBucket", "Arn"]}},
            "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        },
        "Effect": "Allow",
        "Principal": {"Service": "logging.s3.amazonaws.com"},
        "Resource": {
            "Fn::Join": [
                "",
                [{"Fn::GetAtt": ["CheckpointStoreAccessLogBucket", "Arn"]}, "/checkpoint-bucket/*"],
            ]
        },
    }
    assert len(statements) == 2


def test_customer_key_encrypts_the_bucket_with_a_bucket_key(reference_kms) -> None:
    key_id, _ = reference_kms.one(REF, "AWS::KMS::Key")
    props = reference_kms.templates[REF]["Resources"]["CheckpointStoreBucket"]["Properties"]
    assert props["BucketEncryption"] == {
        "ServerSideEncryptionConfiguration": [
            {
                "BucketKeyEnabled": True,
                "ServerSideEncryptionByDefault": {
                    "KMSMasterKeyID": {"Fn::GetAtt": [key_id, "Arn"]},
                    "SSEAlgorithm": "aws:kms",
                },
            }
        ]
    }


def test_versioning_option_adds_noncurrent_expiry(custom) -> None:
    bucket = custom.templates["Custom"]["Resources"]["StoreBucket"]
    props = bucket["Properties"]
    assert props["BucketName"] == "my-checkpoint-payloads"
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert {r["Id"]: r for r in props["LifecycleConfiguration"]["Rules"]} == {
        "AbortIncompleteMultipartUploads": {
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
            "Id": "AbortIncompleteMultipartUploads",
            "Status": "Enabled",
        },
        "ExpireNoncurrentVersions": _noncurrent_rule(7),
    }
    assert bucket["DeletionPolicy"] == "Delete"
    assert _bucket_policy(custom, "Custom", "StoreBucket") == [_tls_deny("StoreBucket")]
