"""``langgraph-dynamodb doctor`` against a moto server: a healthy store, and each way one can be wrong.

Stores are built the way users get them wrong: a table created by hand
without TTL, an index or the stream, with another key schema, a bucket
never created, the wrong region or endpoint. Denied IAM actions are
answered at the client boundary (a botocore ``before-call`` hook returning
AWS's ``AccessDeniedException``), since moto does not enforce IAM.
"""

from __future__ import annotations

import io
import json
import socket
import time
import types
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from langgraph.checkpoint.dynamodb import DynamoDBSaver, cli, schema
from langgraph.checkpoint.dynamodb.tools.doctor import diagnose

pytestmark = pytest.mark.usefixtures("moto_endpoint")

ALL = [
    "table",
    "key schema",
    "indexes",
    "billing",
    "stream",
    "ttl",
    "dynamodb read",
    "dynamodb write",
    "bucket",
    "s3 read/write",
]


def doctor(*argv: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main([*argv, "doctor", "--json"], stdout=out, stderr=err)
    return code, json.loads(out.getvalue()), err.getvalue()


def statuses(report: dict[str, Any]) -> dict[str, str]:
    """name -> status; a name reported twice (several index problems) keeps the worst."""
    rank = {"OK": 0, "SKIP": 1, "WARN": 2, "FAIL": 3}
    out: dict[str, str] = {}
    for c in report["checks"]:
        if rank[c["status"]] >= rank.get(out.get(c["name"], "OK"), 0):
            out[c["name"]] = c["status"]
    return out


def check(report: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for c in report["checks"] if c["name"] == name]
    assert found, (name, report)
    return max(found, key=lambda c: ["OK", "SKIP", "WARN", "FAIL"].index(c["status"]))


def everything(table: str, bucket: str | None = None) -> list[dict[str, Any]]:
    items = boto3.client("dynamodb").scan(TableName=table)["Items"]
    objects = boto3.client("s3").list_objects_v2(Bucket=bucket).get("Contents", []) if bucket else []
    return items + objects


def create(table: str, *, ttl: str | None = "ttl", drop: tuple[str, ...] = (), **changes: Any) -> None:
    """The table ``setup()`` creates, minus what ``drop`` names / with ``changes``, and TTL on ``ttl``."""
    definition = {**schema.table_definition(table), **changes}
    for key in drop:
        definition.pop(key)
    if "GlobalSecondaryIndexes" in drop:  # DynamoDB refuses definitions of attributes no key uses
        definition["AttributeDefinitions"] = [
            a for a in definition["AttributeDefinitions"] if a["AttributeName"] in ("PK", "SK")
        ]
    client = boto3.client("dynamodb")
    client.create_table(**definition)
    if ttl:
        client.update_time_to_live(
            TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl}
        )


@pytest.fixture
def healthy(names: dict[str, str]) -> Iterator[dict[str, str]]:
    with DynamoDBSaver(**names) as saver:
        saver.setup()
    yield names


def conn(names: dict[str, str]) -> list[str]:
    return ["--table", names["table_name"], "--bucket", names["bucket_name"]]


def test_healthy_store_is_all_ok_and_the_dry_run_writes_nothing(healthy: dict[str, str]) -> None:
    code, report, err = doctor(*conn(healthy))
    assert code == 0, err
    assert report["ok"] is True
    assert statuses(report) == dict.fromkeys(ALL, "OK"), report
    # The dry run left nothing: no item, no object.
    assert everything(healthy["table_name"], healthy["bucket_name"]) == []
    # The human output: one line per check, a summary.
    out = io.StringIO()
    assert cli.main([*conn(healthy), "doctor"], stdout=out, stderr=io.StringIO()) == 0
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines[1:-1]] == ["OK"] * len(ALL)
    assert lines[-1] == f"{len(ALL)} OK - healthy"


def test_missing_table_fails_naming_it_and_the_fix(names: dict[str, str]) -> None:
    code, report, _ = doctor("--table", names["table_name"])
    assert code == cli.EXIT_ERROR and report["ok"] is False
    table = check(report, "table")
    assert table["status"] == "FAIL"
    assert names["table_name"] in table["message"] and "us-east-1" in table["message"]
    assert "setup()" in table["fix"] and "CheckpointStore" in table["fix"] and "--region" in table["fix"]
    got = statuses(report)
    assert {got[n] for n in ALL[1:8]} == {"SKIP"}
    assert check(report, "ttl")["message"] == "not checked: no usable table"
    assert got["bucket"] == "WARN"  # none configured: advisory
    assert "s3 read/write" not in got


def test_wrong_key_schema_fails(names: dict[str, str]) -> None:
    boto3.client("dynamodb").create_table(
        TableName=names["table_name"],
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    code, report, _ = doctor("--table", names["table_name"])
    assert code == cli.EXIT_ERROR
    keys = check(report, "key schema")
    assert keys["status"] == "FAIL"
    assert "HASH pk (S)" in keys["message"] and "expected HASH PK (S), RANGE SK (S)" in keys["message"]
    assert "cannot be changed" in keys["fix"]
    assert check(report, "indexes")["status"] == "FAIL"  # no run-id index either
    # No dry run against keys the table does not have (AWS would refuse each request).
    assert check(report, "dynamodb write")["status"] == "SKIP"


def test_wrong_key_type_fails(names: dict[str, str]) -> None:
    definition = schema.table_definition(names["table_name"])
    attrs = [
        {**a, "AttributeType": "B"} if a["AttributeName"] == "SK" else a
        for a in definition["AttributeDefinitions"]
    ]
    create(names["table_name"], AttributeDefinitions=attrs)
    code, report, _ = doctor("--table", names["table_name"])
    assert code == cli.EXIT_ERROR
    assert check(report, "key schema")["status"] == "FAIL"
    assert "RANGE SK (B)" in check(report, "key schema")["message"]


def test_ttl_disabled_is_advisory_without_a_saver_ttl_and_required_with_one(names: dict[str, str]) -> None:
    create(names["table_name"], ttl=None)
    code, report, _ = doctor("--table", names["table_name"])
    ttl = check(report, "ttl")
    assert ttl["status"] == "WARN" and "DISABLED" in ttl["message"]
    assert "AttributeName=ttl" in ttl["fix"] and "setup()" in ttl["fix"]
    assert code == 0  # advisory only
    # A saver that expires threads needs it: the library call says FAIL.
    with DynamoDBSaver(table_name=names["table_name"], ttl=3600) as saver:
        result = diagnose(saver)
    assert not result.ok
    assert [c.status for c in result.checks if c.name == "ttl"] == ["FAIL"]


def test_ttl_on_another_attribute_fails(names: dict[str, str]) -> None:
    create(names["table_name"], ttl="expires_at")
    code, report, _ = doctor("--table", names["table_name"])
    assert code == cli.EXIT_ERROR
    ttl = check(report, "ttl")
    assert (
        ttl["status"] == "FAIL" and "'expires_at'" in ttl["message"] and ttl["fix"].startswith("disable TTL")
    )


def test_missing_indexes_and_stream(names: dict[str, str]) -> None:
    create(names["table_name"], drop=("GlobalSecondaryIndexes", "StreamSpecification"))
    code, report, _ = doctor("--table", names["table_name"])
    assert code == cli.EXIT_ERROR
    index_lines = [c for c in report["checks"] if c["name"] == "indexes"]
    by_status = {c["status"]: c["message"] for c in index_lines}
    assert schema.RUN_INDEX_NAME in by_status["FAIL"] and "delete_for_runs" in by_status["FAIL"]
    assert schema.THREADS_INDEX_NAME in by_status["WARN"]  # advisory: the CLI falls back to a scan
    stream = check(report, "stream")
    assert stream["status"] == "WARN" and "reaper" in stream["message"] and "KEYS_ONLY" in stream["fix"]
    # Only the run-id index is required: with it alone (and no stream), the store passes.
    other = f"{names['table_name']}-2"
    definition = schema.table_definition(other)
    create(
        other,
        drop=("StreamSpecification",),
        GlobalSecondaryIndexes=[
            g for g in definition["GlobalSecondaryIndexes"] if g["IndexName"] == schema.RUN_INDEX_NAME
        ],
        AttributeDefinitions=[
            a for a in definition["AttributeDefinitions"] if a["AttributeName"] in ("PK", "SK", "rid")
        ],
    )
    code, report, _ = doctor("--table", other)
    assert code == 0 and statuses(report)["indexes"] == "WARN" and statuses(report)["stream"] == "WARN"


def test_missing_bucket_fails(names: dict[str, str]) -> None:
    create(names["table_name"])
    code, report, _ = doctor(*conn(names))
    assert code == cli.EXIT_ERROR
    bucket = check(report, "bucket")
    assert bucket["status"] == "FAIL" and names["bucket_name"] in bucket["message"]
    assert "setup()" in bucket["fix"]
    assert check(report, "s3 read/write")["status"] == "SKIP"
    assert statuses(report)["dynamodb write"] == "OK"  # the table side is still checked


def test_wrong_region_reports_the_table_missing_there(healthy: dict[str, str]) -> None:
    code, report, _ = doctor(*conn(healthy), "--region", "eu-west-3")
    assert code == cli.EXIT_ERROR
    table = check(report, "table")
    assert table["status"] == "FAIL" and "region eu-west-3" in table["message"] and "--region" in table["fix"]
    assert report["region"] == "eu-west-3"


def test_unreachable_endpoint_fails_fast_and_cleanly(names: dict[str, str]) -> None:
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(
        ["--table", names["table_name"], "--endpoint-url", f"http://127.0.0.1:{port}", "doctor"],
        stdout=out,
        stderr=err,
    )
    assert time.monotonic() - started < 15
    assert code == cli.EXIT_ERROR
    text = out.getvalue()
    assert "Traceback" not in text + err.getvalue()
    first = text.splitlines()[1]
    assert first.startswith("FAIL  table: cannot reach the endpoint") and f"127.0.0.1:{port}" in first
    assert "--endpoint-url" in text and "langgraph-dynamodb local" in text
    assert all(line.startswith("SKIP") for line in text.splitlines()[3:-1] if not line.startswith(" "))


def test_tenant_dry_run_stays_in_the_tenant_key_space(healthy: dict[str, str]) -> None:
    """moto does not enforce IAM: check every key the doctor sends instead."""
    sent: list[tuple[str, str, Any]] = []
    with DynamoDBSaver(**healthy, tenant_prefix="acme") as saver:
        for client in saver.clients.values():
            service = client.meta.service_model.service_name

            def record(params: dict[str, Any], model: Any, service: str = service, **_: Any) -> None:
                sent.append((service, model.name, params))

            client.meta.events.register(f"provide-client-params.{service}.*", record)
        report = diagnose(saver)
    assert report.ok, report.render()
    ddb_keys, s3_keys = [], []
    for service, _op, params in sent:
        if service == "s3":
            if "Key" in params:
                s3_keys.append(params["Key"])
            for obj in params.get("Delete", {}).get("Objects", []):
                s3_keys.append(obj["Key"])
            if "Prefix" in params:
                s3_keys.append(params["Prefix"])
            continue
        for key in _ddb_keys(params):
            ddb_keys.append(key)
    assert ddb_keys and s3_keys
    tenant_pk = schema.tenant_partition_prefix("acme")
    assert all(k.startswith(tenant_pk) for k in ddb_keys), ddb_keys
    assert all(k.startswith(schema.tenant_s3_prefix("checkpoints/", "acme")) for k in s3_keys), s3_keys
    # ...in a partition no thread has: no tool reads it as one.
    assert {schema.parse_partition_key(k) for k in ddb_keys} == {None}
    assert everything(healthy["table_name"], healthy["bucket_name"]) == []


def _ddb_keys(params: dict[str, Any]) -> Iterator[str]:
    """Every partition key value in a DynamoDB request's parameters."""
    if "Key" in params:
        yield params["Key"]["PK"]["S"]
    if "Item" in params:
        yield params["Item"]["PK"]["S"]
    if ":pk" in params.get("ExpressionAttributeValues", {}):
        yield params["ExpressionAttributeValues"][":pk"]["S"]
    for req in params.get("RequestItems", {}).values():
        for k in (
            req["Keys"]
            if isinstance(req, dict)
            else [r.get("DeleteRequest", r.get("PutRequest")) for r in req]
        ):
            yield (k.get("Key") or k.get("Item") or k)["PK"]["S"]
    for item in params.get("TransactItems", []):
        for op in item.values():
            yield op["Key"]["PK"]["S"]


#: The IAM action a denial of these operations names (IAM authorizes a
#: transaction's elements one by one; the doctor's has a ConditionCheck).
_DENIED_AS = {"TransactWriteItems": "ConditionCheckItem", "DeleteObjects": "DeleteObject"}


def _deny(client: Any, *operations: str, message: str | None = None) -> None:
    """Answer these operations with IAM's AccessDeniedException, before they leave the client."""
    service = client.meta.service_model.service_name
    code = "AccessDenied" if service == "s3" else "AccessDeniedException"

    def deny(model: Any, **_: Any) -> Any:
        if model.name in operations:
            action = _DENIED_AS.get(model.name, model.name)
            text = message or f"User: u is not authorized to perform: {service}:{action} on resource: x"
            return types.SimpleNamespace(status_code=403, headers={}), {
                "Error": {"Code": code, "Message": text},
                "ResponseMetadata": {"HTTPStatusCode": 403},
            }
        return None

    client.meta.events.register(f"before-call.{service}.*", deny)


def test_denied_actions_are_named_with_the_fix(healthy: dict[str, str]) -> None:
    with DynamoDBSaver(**healthy) as saver:
        _deny(saver.clients["dynamodb"], "PutItem", "TransactWriteItems")
        _deny(saver.clients["s3"], "DeleteObjects")
        report = diagnose(saver)
    assert not report.ok
    by_name = {c.name: c for c in report.checks}
    write = by_name["dynamodb write"]
    assert write.status == "FAIL"
    assert write.message == "denied: dynamodb:PutItem, dynamodb:ConditionCheckItem"
    assert "grant dynamodb:PutItem, dynamodb:ConditionCheckItem on table" in write.fix
    assert by_name["dynamodb read"].status == "OK"
    s3 = by_name["s3 read/write"]
    assert s3.status == "FAIL" and s3.message == "denied: s3:DeleteObject"
    # The object it could not delete is the only thing left, under the reserved name.
    left = [o["Key"] for o in everything(healthy["table_name"], healthy["bucket_name"])]
    assert len(left) == 1 and left[0].startswith("checkpoints/|doctor/")


def test_a_grant_without_condition_check_is_named(healthy: dict[str, str]) -> None:
    """A lease-bound saver's writes are transactions with a ConditionCheck: the doctor probes one.

    Without an action in the denial's message, the probe's own name stands in;
    a transaction denied for its Update names UpdateItem once, with the UpdateItem probe.
    """
    with DynamoDBSaver(**healthy) as saver:
        _deny(saver.clients["dynamodb"], "TransactWriteItems", message="Access denied")
        write = {c.name: c for c in diagnose(saver).checks}["dynamodb write"]
    assert write.status == "FAIL" and write.message == "denied: dynamodb:ConditionCheckItem"
    with DynamoDBSaver(**healthy) as saver:
        _deny(
            saver.clients["dynamodb"],
            "UpdateItem",
            "TransactWriteItems",
            message="User: u is not authorized to perform: dynamodb:UpdateItem on resource: t",
        )
        write = {c.name: c for c in diagnose(saver).checks}["dynamodb write"]
    assert write.message == "denied: dynamodb:UpdateItem"


def test_denied_describe_is_a_warning_and_the_dry_run_still_runs(healthy: dict[str, str]) -> None:
    with DynamoDBSaver(**healthy) as saver:
        _deny(saver.clients["dynamodb"], "DescribeTable", "DescribeTimeToLive")
        report = diagnose(saver)
    got = {c.name: c.status for c in report.checks}
    assert got["table"] == "WARN" and got["key schema"] == "SKIP" and got["ttl"] == "WARN"
    assert got["dynamodb write"] == "OK" and report.ok


def test_rejected_credentials_stop_with_one_clear_failure(healthy: dict[str, str]) -> None:
    with DynamoDBSaver(**healthy) as saver:
        client = saver.clients["dynamodb"]

        def reject(**_: Any) -> Any:
            return types.SimpleNamespace(status_code=400, headers={}), {
                "Error": {"Code": "UnrecognizedClientException", "Message": "The security token is invalid"},
                "ResponseMetadata": {"HTTPStatusCode": 400},
            }

        client.meta.events.register("before-call.dynamodb.*", reject)
        report = diagnose(saver)
    fails = [c for c in report.checks if c.status == "FAIL"]
    assert [c.name for c in fails] == ["table"] and "rejected the credentials" in fails[0].message
    assert {c.status for c in report.checks[1:]} == {"SKIP"}


def test_report_names_are_stable_and_the_cost_is_fixed(healthy: dict[str, str]) -> None:
    """Scripts key on check names: every check once on a healthy store, in order; one request per action."""
    sent: list[str] = []
    with DynamoDBSaver(**healthy) as saver:
        for client in saver.clients.values():
            service = client.meta.service_model.service_name
            client.meta.events.register(
                f"before-call.{service}.*",
                lambda model, service=service, **_: sent.append(f"{service}:{model.name}"),
            )
        names = [c.name for c in diagnose(saver).checks]
    assert names == ALL
    assert sorted(sent) == sorted(
        [
            *(
                f"dynamodb:{op}"
                for op in ("DescribeTable", "DescribeTimeToLive", "GetItem", "Query", "BatchGetItem")
            ),
            *(f"dynamodb:{op}" for op in ("PutItem", "UpdateItem", "TransactWriteItems", "BatchWriteItem")),
            *(
                f"s3:{op}"
                for op in ("HeadBucket", "PutObject", "GetObject", "ListObjectsV2", "DeleteObjects")
            ),
        ]
    )


def test_invalid_names_and_unexpected_errors_are_lines_not_tracebacks(healthy: dict[str, str]) -> None:
    code, report, err = doctor("--table", healthy["table_name"], "--bucket", "Not_A_Bucket!")
    assert code == cli.EXIT_ERROR and err == ""
    bucket = check(report, "bucket")
    assert bucket["status"] == "FAIL" and "Not_A_Bucket!" in bucket["message"] and "--bucket" in bucket["fix"]
    assert "\n" not in bucket["message"]
    with DynamoDBSaver(**healthy) as saver:
        client = saver.clients["dynamodb"]

        def invalid(model: Any, **_: Any) -> Any:
            if model.name != "DescribeTable":
                return None
            return types.SimpleNamespace(status_code=400, headers={}), {
                "Error": {"Code": "ValidationException", "Message": "1 validation error detected"},
                "ResponseMetadata": {"HTTPStatusCode": 400},
            }

        client.meta.events.register("before-call.dynamodb.*", invalid)
        result = diagnose(saver)
    table = next(c for c in result.checks if c.name == "table")
    assert table.status == "FAIL" and "ValidationException" in table.message and "--table" in table.fix
    assert not result.ok
