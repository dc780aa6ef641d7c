"""Every statement of every grant, exactly; and no wildcard beyond index/* and object prefixes."""

from __future__ import annotations

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

from cdk_helpers import flatten

from langgraph.checkpoint.dynamodb import schema

REF = "LangGraphCheckpointStack"
RW_DDB = [
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
]


def _arn(logical_id: str) -> dict:
    return {"Fn::GetAtt": [logical_id, "Arn"]}


def _join(*parts: object) -> dict:
    return {"Fn::Join": ["", list(parts)]}


def _expected(table: str, bucket: str | None, prefix: str, *, read_only: bool = False) -> list[dict]:
    ddb = ["dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query"] if read_only else RW_DDB
    out = [
        {"Action": ddb, "Effect": "Allow", "Resource": _arn(table)},
        {"Action": ["dynamodb:Query"], "Effect": "Allow", "Resource": _join(_arn(table), "/index/*")},
    ]
    if bucket is not None:
        objects = ["s3:GetObject"] if read_only else ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
        out += [
            {"Action": objects, "Effect": "Allow", "Resource": _join(_arn(bucket), f"/{prefix}*")},
            {
                "Action": ["s3:ListBucket"],
                "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}},
                "Effect": "Allow",
                "Resource": _arn(bucket),
            },
        ]
    return out


def test_grant_read_write_statements(custom) -> None:
    assert custom.role_statements("Custom", "ReadWriteRole") == _expected(
        "StoreTable", "StoreBucket", "ckpt/"
    )


def test_grant_read_statements(custom) -> None:
    assert custom.role_statements("Custom", "ReadRole") == _expected(
        "StoreTable", "StoreBucket", "ckpt/", read_only=True
    )


def test_grant_tenant_read_write_statements(custom) -> None:
    leading = schema.tenant_partition_prefix("acme-") + "*"
    s3_prefix = schema.tenant_s3_prefix("ckpt/", "acme-")
    assert (leading, s3_prefix) == ("acme-|*", "ckpt/acme-|")
    assert custom.role_statements("Custom", "TenantRole") == [
        {
            "Action": RW_DDB,
            "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [leading]}},
            "Effect": "Allow",
            # The table only: GSIs span tenants, so no index/* here.
            "Resource": _arn("StoreTable"),
        },
        {
            "Action": ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
            "Effect": "Allow",
            "Resource": _join(_arn("StoreBucket"), f"/{s3_prefix}*"),
        },
        {
            "Action": ["s3:ListBucket"],
            "Condition": {"StringLike": {"s3:prefix": [f"{s3_prefix}*"]}},
            "Effect": "Allow",
            "Resource": _arn("StoreBucket"),
        },
    ]


def _string_like(pattern: str, value: str) -> bool:
    """IAM's StringLike: ``*`` any run of characters, ``?`` one, the rest literal."""
    import re

    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, value, flags=re.DOTALL) is not None


def test_tenant_patterns_are_prefix_free(custom) -> None:
    """Tenant ``a``'s grant matches none of tenant ``ab``'s keys, nor an untenanted thread's."""
    store = custom.stores["Custom"]
    prefix = store.s3_key_prefix

    def patterns(tenant: str) -> tuple[str, str]:
        stmts = [s.to_statement_json() for s in store.tenant_read_write_statements(tenant)]
        (leading,) = stmts[0]["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
        (listing,) = stmts[2]["Condition"]["StringLike"]["s3:prefix"]
        return leading, listing

    a_pk, a_s3 = patterns("a")
    assert (a_pk, a_s3) == ("a|*", f"{prefix}a|*")
    for thread in ("t", "b|t", "|", "%7C", "bt"):
        assert _string_like(a_pk, schema.partition_key(thread, "a"))
        assert _string_like(a_s3, schema.s3_thread_prefix(prefix, thread, "a") + "x")
        for other in ("ab", "a-", "b"):
            assert not _string_like(a_pk, schema.partition_key(thread, other))
            assert not _string_like(a_s3, schema.s3_thread_prefix(prefix, thread, other) + "x")
        # an untenanted thread whose id starts with the tenant's name
        assert not _string_like(a_pk, schema.partition_key("a" + thread))
        assert not _string_like(a_s3, schema.s3_thread_prefix(prefix, "a" + thread) + "x")
    # and the longer tenant's grant does not reach the shorter one's keys
    ab_pk, ab_s3 = patterns("ab")
    assert not _string_like(ab_pk, schema.partition_key("b|t", "a"))
    assert not _string_like(ab_s3, schema.s3_thread_prefix(prefix, "b|t", "a") + "x")


def test_tenant_prefix_is_validated(custom) -> None:
    from aws_cdk import aws_iam as iam

    store = custom.stores["Custom"]
    for bad in ("", "a/b", "a|b", "a*", "50%"):
        with pytest.raises(ValueError, match="tenant_prefix"):
            store.tenant_read_write_statements(bad)
    assert isinstance(store.tenant_read_write_statements("ok-")[0], iam.PolicyStatement)


def test_bucketless_grant_has_no_s3(custom) -> None:
    assert custom.role_statements("NoBucket", "ReadWriteRole") == _expected("StoreTable", None, "")


def _scan(table: str) -> dict:
    return {
        "Action": ["dynamodb:Scan"],
        "Effect": "Allow",
        "Resource": [_arn(table), _join(_arn(table), "/index/*")],
    }


def test_grant_maintenance_statements(custom) -> None:
    """Read/write plus Scan (the pruner's and purge's page walks), for jobs and operators."""
    assert custom.role_statements("Custom", "OperatorRole") == [
        *_expected("StoreTable", "StoreBucket", "ckpt/"),
        _scan("StoreTable"),
    ]


def test_agent_and_maintenance_roles(reference) -> None:
    rw = _expected("CheckpointStoreTable", "CheckpointStoreBucket", "checkpoints/")
    for role in (
        "CheckpointStorePrunerRole",
        "CheckpointStoreOrphanSweeperRole",
        "CheckpointStoreReaperRole",
    ):
        statements = reference.role_statements(REF, role)
        # grant_maintenance: the read/write statements followed by Scan, contiguous.
        start = statements.index(rw[0])
        assert statements[start : start + len(rw) + 1] == [*rw, _scan("CheckpointStoreTable")], role
        assert not [s for s in statements if s["Action"][0].startswith("kms:")]
    agent = reference.role_statements(REF, "AgentRole")
    (logs,) = [s for s in agent if s["Action"][0].startswith("logs:")]
    log_group, _ = reference.one(REF, "AWS::Logs::LogGroup", "AgentLogs")
    assert logs == {
        "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
        "Effect": "Allow",
        "Resource": _arn(log_group),
    }
    # Agents get exactly read/write (never Scan).
    assert agent == [logs, *rw]


def test_customer_key_statement(reference_kms) -> None:
    key_id, _ = reference_kms.one(REF, "AWS::KMS::Key")
    region = {"Ref": "AWS::Region"}
    kms_rw = {
        "Action": ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"],
        "Condition": {
            "StringEquals": {
                "kms:ViaService": [
                    _join("dynamodb.", region, ".amazonaws.com"),
                    _join("s3.", region, ".amazonaws.com"),
                ]
            }
        },
        "Effect": "Allow",
        "Resource": _arn(key_id),
    }
    agent = reference_kms.role_statements(REF, "AgentRole")
    assert agent[1:] == [*_expected("CheckpointStoreTable", "CheckpointStoreBucket", "checkpoints/"), kms_rw]
    store = reference_kms.stores[REF]
    (read_kms,) = [s for s in store.read_statements() if s.actions[0].startswith("kms:")]
    assert read_kms.actions == ["kms:Decrypt"]


def test_no_wildcards_beyond_indexes_and_object_prefixes(reference, reference_kms, custom) -> None:
    """Across every IAM policy of every stack: no wildcard actions, and "*" resources only where justified."""
    checked = 0
    for synth in (reference, reference_kms, custom):
        for stack in synth.templates:
            for pid, policy in synth.resources(stack, "AWS::IAM::Policy").items():
                for stmt in policy["Properties"]["PolicyDocument"]["Statement"]:
                    actions = [stmt["Action"]] if isinstance(stmt["Action"], str) else stmt["Action"]
                    assert not [a for a in actions if "*" in a], (pid, actions)
                    resources = stmt["Resource"] if isinstance(stmt["Resource"], list) else [stmt["Resource"]]
                    for res in map(flatten, resources):
                        checked += 1
                        if "*" not in res:
                            continue
                        if res == "*":
                            assert actions == ["dynamodb:ListStreams"], (pid, actions)
                        elif res.endswith("/index/*"):
                            assert res.startswith("<") and "Table.Arn>" in res, res
                            assert actions in (["dynamodb:Query"], ["dynamodb:Scan"]), actions
                        else:
                            assert res.count("*") == 1 and res.endswith("*"), res
                            assert "Bucket.Arn>/" in res, res
                            assert set(actions) <= {"s3:DeleteObject", "s3:GetObject", "s3:PutObject"}, (
                                actions
                            )
    assert checked > 50
