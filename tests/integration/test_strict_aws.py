"""The moto server's strict AWS-rules layer (tests/support/strict_aws.py), through real clients.

Requests real AWS refuses are answered the way AWS answers them (DynamoDB's
ValidationException or TransactionCanceledException, S3's XML errors) and never
reach moto; legal requests at the limits go through. Each test that breaks a
limit on purpose says so with ``@pytest.mark.aws_violation``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.support import strict_aws


@pytest.fixture
def enforce(moto_endpoint: str) -> Iterator[None]:
    """The layer in ``enforce`` mode for this test, whatever STRICT_AWS the server started with."""
    previous = strict_aws.set_mode(moto_endpoint, "enforce")
    try:
        yield
    finally:
        strict_aws.set_mode(moto_endpoint, previous)


@pytest.fixture
def table(moto_endpoint: str, names: dict[str, str]) -> Iterator[str]:
    ddb = boto3.client("dynamodb")
    name = names["table_name"]
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("PK", "SK", "G")],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-g",
                "KeySchema": [{"AttributeName": "G", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    yield name
    ddb.delete_table(TableName=name)


@pytest.fixture
def bucket(moto_endpoint: str, names: dict[str, str]) -> Iterator[str]:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=names["bucket_name"])
    yield names["bucket_name"]
    for obj in s3.list_objects_v2(Bucket=names["bucket_name"]).get("Contents", []):
        s3.delete_object(Bucket=names["bucket_name"], Key=obj["Key"])
    s3.delete_bucket(Bucket=names["bucket_name"])


KEY = {"PK": {"S": "thread"}, "SK": {"S": "checkpoint"}}


def _error(info: pytest.ExceptionInfo[ClientError]) -> tuple[str, str, int]:
    err = info.value.response["Error"]
    return (
        err.get("Code", ""),
        err.get("Message", ""),
        info.value.response["ResponseMetadata"]["HTTPStatusCode"],
    )


def _update_of_bytes(total: int) -> tuple[str, dict[str, Any]]:
    """``SET attr000xx... = :v, ...`` of exactly ``total`` bytes (no operators: SET's "=" is not one)."""
    clause = "attr{:03d}" + "x" * 41 + " = :v"  # 53 bytes, 55 with the ", "
    n = (total - len("SET ") + 2) // 55
    clauses = [clause.format(i) for i in range(n)]
    short = total - len("SET " + ", ".join(clauses))
    clauses[-1] = clauses[-1].replace(" = :v", "y" * short + " = :v")
    expr = "SET " + ", ".join(clauses)
    assert len(expr.encode()) == total
    return expr, {":v": {"S": "x"}}


@pytest.mark.aws_violation("expression-size")
def test_an_update_expression_over_4_kb_is_refused_and_never_applied(enforce: None, table: str) -> None:
    ddb = boto3.client("dynamodb")
    ddb.put_item(TableName=table, Item={**KEY, "n": {"N": "1"}})
    expr, values = _update_of_bytes(4213)
    with pytest.raises(ClientError) as info:
        ddb.update_item(TableName=table, Key=KEY, UpdateExpression=expr, ExpressionAttributeValues=values)
    code, message, status = _error(info)
    assert (code, status) == ("ValidationException", 400)
    assert (
        message
        == "[strict-aws] UpdateItem: UpdateExpression is 4,213 bytes; DynamoDB's limit is 4 KB (4,096 bytes)"
    )
    assert ddb.get_item(TableName=table, Key=KEY, ConsistentRead=True)["Item"] == {**KEY, "n": {"N": "1"}}


def test_legal_requests_at_the_limits_go_through(enforce: None, table: str, bucket: str) -> None:
    ddb = boto3.client("dynamodb")
    expr, values = _update_of_bytes(4096)
    ddb.update_item(TableName=table, Key=KEY, UpdateExpression=expr, ExpressionAttributeValues=values)
    assert ddb.get_item(TableName=table, Key=KEY, ConsistentRead=True)["Item"]["attr000" + "x" * 41] == {
        "S": "x"
    }
    ddb.put_item(TableName=table, Item={"PK": {"S": "p" * 2048}, "SK": {"S": "é" * 512}, "G": {"S": "g"}})
    s3 = boto3.client("s3")
    key = "k/" + "é" * 511  # 1,024 bytes
    s3.put_object(Bucket=bucket, Key=key, Body=b"x", Metadata={"m": "v" * 2047})  # 2,048 bytes
    assert s3.head_object(Bucket=bucket, Key=key)["Metadata"] == {"m": "v" * 2047}


@pytest.mark.aws_violation("item-size")
def test_an_update_growing_the_item_over_400_kb_is_refused_and_the_item_kept(
    enforce: None, table: str
) -> None:
    ddb = boto3.client("dynamodb")
    ddb.put_item(TableName=table, Item={**KEY, "a": {"B": b"a" * 300_000}})
    grow = {"UpdateExpression": "SET b = :b", "ExpressionAttributeValues": {":b": {"B": b"b" * 110_000}}}
    with pytest.raises(ClientError) as info:
        ddb.update_item(TableName=table, Key=KEY, **grow)  # type: ignore[arg-type]
    code, message, _ = _error(info)
    assert code == "ValidationException"
    size = 2 + 6 + 2 + 10 + 1 + 300_000 + 1 + 110_000  # names and values of PK, SK, a, b
    assert f"UpdateItem: the item after the update is {size:,} bytes" in message and "409,600" in message
    with pytest.raises(ClientError) as cancelled:
        ddb.transact_write_items(TransactItems=[{"Update": {"TableName": table, "Key": KEY, **grow}}])
    assert _error(cancelled)[0] == "TransactionCanceledException"
    reasons = cancelled.value.response["CancellationReasons"]
    assert [r["Code"] for r in reasons] == ["ValidationError"] and "item after the update" in reasons[0][
        "Message"
    ]
    assert set(ddb.get_item(TableName=table, Key=KEY, ConsistentRead=True)["Item"]) == {"PK", "SK", "a"}
    # 9,000 bytes fewer fits: moto applies it.
    ddb.update_item(
        TableName=table,
        Key=KEY,
        UpdateExpression="SET b = :b",
        ExpressionAttributeValues={":b": {"B": b"b" * 100_000}},
    )


@pytest.mark.aws_violation("gsi-consistent-read", "s3-key-length")
def test_aiobotocore_clients_get_the_same_answers(enforce: None, table: str, bucket: str) -> None:
    from aiobotocore.session import get_session

    async def run() -> tuple[tuple[str, str], tuple[str, str]]:
        session = get_session()
        async with session.create_client("dynamodb") as ddb, session.create_client("s3") as s3:
            try:
                await ddb.query(
                    TableName=table,
                    IndexName="by-g",
                    KeyConditionExpression="G = :g",
                    ExpressionAttributeValues={":g": {"S": "g"}},
                    ConsistentRead=True,
                )
            except ClientError as e:
                dynamodb = (e.response["Error"]["Code"], e.response["Error"]["Message"])
            try:
                await s3.put_object(Bucket=bucket, Key="k" * 1025, Body=b"x")
            except ClientError as e:
                s3_error = (e.response["Error"]["Code"], e.response["Error"]["Message"])
        return dynamodb, s3_error

    dynamodb, s3_error = asyncio.run(run())
    assert dynamodb[0] == "ValidationException" and "global secondary index 'by-g'" in dynamodb[1]
    assert s3_error == (
        "KeyTooLongError",
        "[strict-aws] PutObject: the object key is 1,025 bytes (UTF-8); S3's limit is 1,024 bytes",
    )


@pytest.mark.aws_violation(
    "s3-key-length", "s3-metadata-size", "s3-location-constraint", "s3-delete-objects-count"
)
def test_s3_answers_with_its_own_error_codes(enforce: None, bucket: str) -> None:
    s3 = boto3.client("s3")
    long = "k/" + "é" * 512  # 1,026 bytes
    with pytest.raises(ClientError) as info:
        s3.put_object(Bucket=bucket, Key=long, Body=b"x")
    assert _error(info)[0::2] == ("KeyTooLongError", 400)
    assert "1,026 bytes" in _error(info)[1]
    with pytest.raises(ClientError) as info:
        s3.head_object(Bucket=bucket, Key=long)
    assert _error(info)[2] == 400  # a HEAD answer has no body
    with pytest.raises(ClientError) as info:
        s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": long})
    assert _error(info)[0] == "KeyTooLongError"
    with pytest.raises(ClientError) as info:
        s3.put_object(Bucket=bucket, Key="m", Body=b"x", Metadata={"m": "v" * 2048})
    assert _error(info)[0] == "MetadataTooLarge"
    with pytest.raises(ClientError) as info:
        s3.create_multipart_upload(Bucket=bucket, Key="k" * 1100)
    assert _error(info)[0] == "KeyTooLongError"
    with pytest.raises(ClientError) as info:
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": f"k{i}"} for i in range(1001)]})
    assert _error(info)[0] == "MalformedXML"
    other = f"strict-{uuid.uuid4().hex[:12]}"
    with pytest.raises(ClientError) as info:
        boto3.client("s3", region_name="eu-west-1").create_bucket(Bucket=other)
    assert _error(info)[0] == "IllegalLocationConstraintException"
    with pytest.raises(ClientError) as info:
        s3.create_bucket(Bucket=other, CreateBucketConfiguration={"LocationConstraint": "us-east-1"})  # type: ignore[typeddict-item]
    assert _error(info)[0] == "InvalidLocationConstraint"
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket)  # nothing reached moto


@pytest.mark.aws_violation("batch-write-duplicate-key", "transact-same-item", "batch-get-duplicate-key")
def test_batches_and_transactions_on_one_item_twice_are_refused(enforce: None, table: str) -> None:
    ddb = boto3.client("dynamodb")
    with pytest.raises(ClientError) as info:
        ddb.batch_write_item(
            RequestItems={table: [{"PutRequest": {"Item": KEY}}, {"DeleteRequest": {"Key": KEY}}]}
        )
    assert _error(info)[0] == "ValidationException"
    with pytest.raises(ClientError) as info:
        ddb.transact_write_items(
            TransactItems=[
                {
                    "ConditionCheck": {
                        "TableName": table,
                        "Key": KEY,
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                },
                {"Put": {"TableName": table, "Item": KEY}},
            ]
        )
    assert _error(info)[0] == "ValidationException"
    with pytest.raises(ClientError) as info:
        ddb.batch_get_item(RequestItems={table: {"Keys": [KEY, KEY]}})
    assert _error(info)[0] == "ValidationException"
    assert "Item" not in ddb.get_item(TableName=table, Key=KEY)


@pytest.mark.aws_violation("expression-size")
def test_record_mode_lets_the_request_through_and_records_it(
    moto_endpoint: str,
    table: str,
    aws_violations: Callable[[], list[dict[str, Any]]],
    request: pytest.FixtureRequest,
) -> None:
    ddb = boto3.client("dynamodb")
    expr, values = _update_of_bytes(4097)
    previous = strict_aws.set_mode(moto_endpoint, "record")
    try:
        ddb.update_item(TableName=table, Key=KEY, UpdateExpression=expr, ExpressionAttributeValues=values)
    finally:
        strict_aws.set_mode(moto_endpoint, previous)
    assert "attr000" + "x" * 41 in ddb.get_item(TableName=table, Key=KEY)["Item"]  # moto applied it
    (record,) = aws_violations()
    assert (
        record["enforced"] is False
        and record["service"] == "dynamodb"
        and record["operation"] == "UpdateItem"
    )
    assert (
        record["target"] == table
        and record["test"] == request.node.nodeid
        and record["limit"] == "expression-size"
    )
    assert (
        record["message"]
        == "UpdateItem: UpdateExpression is 4,097 bytes; DynamoDB's limit is 4 KB (4,096 bytes)"
    )


def test_control_endpoints(moto_endpoint: str) -> None:
    state = strict_aws.status(moto_endpoint)
    assert state["mode"] in strict_aws.MODES and isinstance(state["last_seq"], int)
    assert strict_aws.violations(moto_endpoint, since=state["last_seq"]) == []
    # The control paths never reach moto.
    with pytest.raises(Exception, match="404"):
        strict_aws._call(moto_endpoint, "GET", "nothing-here")
