"""Every statement of every grant, exactly; and no wildcard beyond index/* and object prefixes."""

from __future__ import annotations

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

from cdk_helpers import flatten

from langgraph.checkpoint.dynamodb import schema

REF = "LangGraphCheckpointStack"
#: ``ConditionCheckItem``: the lease check of a lease-bound saver's writes
#: (one ``TransactWriteItems``: IAM authorizes each of its elements).
RW_DDB = [
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
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
            # The threads index's layout item: read only, so no tenant widens every listing.
            "Action": ["dynamodb:GetItem"],
            "Condition": {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [schema.LAYOUT_PK]}},
            "Effect": "Allow",
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
        (listing,) = stmts[3]["Condition"]["StringLike"]["s3:prefix"]
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
    """Read/write plus Scan (the CLI's listings, prune and purge), for operators."""
    assert custom.role_statements("Custom", "OperatorRole") == [
        *_expected("StoreTable", "StoreBucket", "ckpt/"),
        _scan("StoreTable"),
    ]


#: The lifecycle state item's partition key (``schema.LIFECYCLE_PK``), spelled
#: out: the cursor grant must name exactly the item no thread can be.
STATE_PK = "|lifecycle"


def _kms(key_id: str, *services: str) -> dict:
    region = {"Ref": "AWS::Region"}
    return {
        "Action": ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"],
        "Condition": {
            "StringEquals": {"kms:ViaService": [_join(f"{s}.", region, ".amazonaws.com") for s in services]}
        },
        "Effect": "Allow",
        "Resource": _arn(key_id),
    }


def _function_statements(
    name: str, table: str, bucket: str, prefix: str, *, tracked: bool = False, key: str | None = None
) -> list[dict]:
    """Each function's table/bucket/key statements: what its code path calls, nothing else."""
    objects = _join(_arn(bucket), f"/{prefix}*")
    listing = {
        "Action": ["s3:ListBucket"],
        "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}},
        "Effect": "Allow",
        "Resource": _arn(bucket),
    }
    cursor = {
        "Action": ["dynamodb:GetItem", "dynamodb:PutItem"],
        "Condition": {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [STATE_PK]}},
        "Effect": "Allow",
        "Resource": _arn(table),
    }
    if name == "pruner":
        scanned = _join(_arn(table), "/index/threads-index") if tracked else _arn(table)
        out = [
            {
                "Action": ["dynamodb:BatchWriteItem", "dynamodb:Query", "dynamodb:UpdateItem"],
                "Effect": "Allow",
                "Resource": _arn(table),
            },
            {"Action": ["dynamodb:Scan"], "Effect": "Allow", "Resource": scanned},
            cursor,
            {"Action": ["s3:DeleteObject", "s3:PutObject"], "Effect": "Allow", "Resource": objects},
            listing,
        ]
        kms = ("dynamodb", "s3")
    elif name == "reaper":
        out = [
            {
                "Action": ["dynamodb:BatchWriteItem", "dynamodb:Query", "dynamodb:UpdateItem"],
                "Effect": "Allow",
                "Resource": _arn(table),
            },
            {"Action": ["s3:DeleteObject", "s3:PutObject"], "Effect": "Allow", "Resource": objects},
            listing,
        ]
        kms = ("dynamodb", "s3")
    elif name == "maintenance":
        # On request: copy (server-side object copies: GetObject + PutObject),
        # prune, delete, delete_for_runs (the run index, and no other index).
        out = [
            {
                "Action": ["dynamodb:BatchWriteItem", "dynamodb:Query", "dynamodb:UpdateItem"],
                "Effect": "Allow",
                "Resource": _arn(table),
            },
            {
                "Action": ["dynamodb:Query"],
                "Effect": "Allow",
                "Resource": _join(_arn(table), "/index/run_id-index"),
            },
            # A tracked store's copy writes the copy's head: its index shard
            # count comes from the layout item (read only).
            *(
                [
                    {
                        "Action": ["dynamodb:GetItem"],
                        "Condition": {
                            "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [schema.LAYOUT_PK]}
                        },
                        "Effect": "Allow",
                        "Resource": _arn(table),
                    }
                ]
                if tracked
                else []
            ),
            {
                "Action": ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
                "Effect": "Allow",
                "Resource": objects,
            },
            listing,
        ]
        kms = ("dynamodb", "s3")
    else:
        out = [
            {"Action": ["dynamodb:Query"], "Effect": "Allow", "Resource": _arn(table)},
            cursor,
            {"Action": ["s3:DeleteObject"], "Effect": "Allow", "Resource": objects},
            listing,
        ]
        kms = ("dynamodb",)  # it writes its cursor item; listing and deleting objects need no key
    return [*out, *([_kms(key, *kms)] if key else [])]


def _role_parts(synth, stack: str, role: str, prefix: str) -> tuple[list[dict], dict[str, list[dict]]]:
    """(table/bucket/key statements, the rest by service) of a maintenance role."""
    data, other = [], {}
    for stmt in synth.role_statements(stack, f"{prefix}{role}Role"):
        service = stmt["Action"][0].split(":")[0]
        streams = service == "dynamodb" and (
            stmt["Resource"] == "*" or stmt["Resource"] == {"Fn::GetAtt": [f"{prefix}Table", "StreamArn"]}
        )
        if service in ("logs", "sqs", "secretsmanager") or streams:
            other.setdefault("stream" if streams else service, []).append(stmt)
        else:
            data.append(stmt)
    return data, other


FUNCTION_ROLES = {
    "pruner": "Pruner",
    "reaper": "Reaper",
    "orphan_sweeper": "OrphanSweeper",
    "maintenance": "Maintenance",
}


@pytest.mark.parametrize("name", sorted(FUNCTION_ROLES))
def test_maintenance_roles_get_only_what_their_code_path_calls(
    reference, reference_kms, custom, name
) -> None:
    """Exact statements per role: the reaper has no Scan, the sweeper no item or object writes beyond
    its cursor item, nobody an index Query, a GetObject or an agent's read/write set."""
    role = FUNCTION_ROLES[name]
    ref = ("CheckpointStoreTable", "CheckpointStoreBucket", "checkpoints/")
    data, other = _role_parts(reference, REF, role, "CheckpointStore")
    assert data == _function_statements(name, *ref)
    key_id, _ = reference_kms.one(REF, "AWS::KMS::Key")
    data, _ = _role_parts(reference_kms, REF, role, "CheckpointStore")
    assert data == _function_statements(name, *ref, key=key_id)
    # Threads tracked (a thread TTL): the pruner scans the threads index, not the table.
    data, _ = _role_parts(custom, "Custom", role, "Store")
    assert data == _function_statements(name, "StoreTable", "StoreBucket", "ckpt/", tracked=True)
    # Besides: its own log group, its own DLQ, and (reaper) this table's stream.
    log_group, _ = reference.one(REF, "AWS::Logs::LogGroup", f"CheckpointStore{role}Logs")
    assert other["logs"] == [
        {
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Effect": "Allow",
            "Resource": _arn(log_group),
        }
    ]
    dlq, _ = reference.one(REF, "AWS::SQS::Queue", f"CheckpointStore{role}Dlq")
    assert [s["Resource"] for s in other["sqs"]] == [_arn(dlq)]
    # The maintenance function alone reads its token key, and nothing else in Secrets Manager.
    if name == "maintenance":
        from test_token_key import key_arn

        assert other["secretsmanager"] == [
            {"Action": ["secretsmanager:GetSecretValue"], "Effect": "Allow", "Resource": key_arn(reference)}
        ]
    else:
        assert "secretsmanager" not in other
    assert ("stream" in other) == (name == "reaper")
    # The construct's own account of it agrees with the template.
    store = reference.stores[REF]
    assert [sorted(s.actions) for s in store.function_statements(name)] == [
        s["Action"] for s in _function_statements(name, *ref)
    ]


def test_bucketless_maintenance_roles(custom) -> None:
    for role in ("Pruner", "Reaper", "Maintenance"):
        data, _ = _role_parts(custom, "NoBucket", role, "Store")
        assert not [s for s in data if s["Action"][0].startswith("s3:")], role
    data, _ = _role_parts(custom, "NoBucket", "Pruner", "Store")
    assert {
        "Action": ["dynamodb:Scan"],
        "Effect": "Allow",
        "Resource": _join(_arn("StoreTable"), "/index/threads-index"),
    } in data


def test_agent_role(reference) -> None:
    rw = _expected("CheckpointStoreTable", "CheckpointStoreBucket", "checkpoints/")
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


def test_unknown_function_statements_are_refused(custom) -> None:
    with pytest.raises(ValueError, match="maintenance function"):
        custom.stores["Custom"].function_statements("agent")


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


def test_no_role_reads_or_purges_old_object_versions(reference, reference_kms, custom) -> None:
    """Deleted payloads live on as noncurrent versions (for restores): no grant reaches them."""
    for synth in (reference, reference_kms, custom):
        for stack in synth.templates:
            for pid, policy in synth.resources(stack, "AWS::IAM::Policy").items():
                for stmt in policy["Properties"]["PolicyDocument"]["Statement"]:
                    actions = [stmt["Action"]] if isinstance(stmt["Action"], str) else stmt["Action"]
                    assert not [a for a in actions if "Version" in a or "Lifecycle" in a], (pid, actions)
