"""The test server's fast DynamoDB JSON (tests/support/moto_serial.py) writes what moto's serializer writes.

A server in ``MOTO_SERIALIZER=check`` mode builds each DynamoDB response both
ways and answers 500 where they differ; these requests cover every attribute
type and every response shape the savers read (items, pages, batches,
transactions, old and new images, table descriptions, consumed capacity).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from tests.support import moto_serial

EVERY_TYPE: dict[str, Any] = {
    "PK": {"S": "p"},
    "SK": {"S": "s"},
    "b": {"B": b"\x00\xffbytes"},
    "n": {"N": "-12.5e3"},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"\x01", b"\x02"]},
    "l": {"L": [{"S": "x"}, {"N": "1"}, {"NULL": True}, {"BOOL": False}]},
    "m": {"M": {"deep": {"M": {"b": {"B": b"zz"}, "s": {"S": "é✓"}}}}},
    "t": {"BOOL": True},
}


@pytest.fixture(scope="module")
def checking_endpoint() -> Iterator[str]:
    proc, endpoint = moto_serial.start({"MOTO_SERIALIZER": "check", "STRICT_AWS": "enforce"})
    try:
        yield endpoint
    finally:
        moto_serial.stop(proc)


@pytest.fixture
def ddb(checking_endpoint: str, names: dict[str, str]) -> Iterator[Any]:
    client = boto3.client("dynamodb", endpoint_url=checking_endpoint)
    client.create_table(
        TableName=names["table_name"],
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("PK", "SK")],
    )
    yield client
    client.delete_table(TableName=names["table_name"])


def test_every_attribute_type_and_response_shape(ddb: Any, names: dict[str, str]) -> None:
    table = names["table_name"]
    capacity = {"ReturnConsumedCapacity": "TOTAL"}
    assert ddb.describe_table(TableName=table)["Table"]["KeySchema"][0]["AttributeName"] == "PK"
    put = ddb.put_item(TableName=table, Item=EVERY_TYPE, **capacity)
    assert put["ResponseMetadata"]["HTTPHeaders"]["x-moto-serializer"] == "check"  # both were built
    old = ddb.put_item(TableName=table, Item=EVERY_TYPE, ReturnValues="ALL_OLD")["Attributes"]
    assert old == EVERY_TYPE
    key = {"PK": EVERY_TYPE["PK"], "SK": EVERY_TYPE["SK"]}
    assert ddb.get_item(TableName=table, Key=key, ConsistentRead=True, **capacity)["Item"] == EVERY_TYPE
    new = ddb.update_item(
        TableName=table,
        Key=key,
        UpdateExpression="SET #c = :c ADD #n :one",
        ExpressionAttributeNames={"#c": "c", "#n": "n"},
        ExpressionAttributeValues={":c": {"B": b"\x07"}, ":one": {"N": "1"}},
        ReturnValues="ALL_NEW",
    )["Attributes"]
    assert new["c"] == {"B": b"\x07"} and new["n"] == {"N": "-12499"}
    for i in range(5):
        ddb.put_item(TableName=table, Item={"PK": {"S": "p"}, "SK": {"S": f"k{i}"}, "v": {"B": bytes([i])}})
    page = ddb.query(
        TableName=table,
        KeyConditionExpression="PK = :p",
        ExpressionAttributeValues={":p": {"S": "p"}},
        Limit=3,
        ScanIndexForward=False,
        **capacity,
    )
    assert page["Count"] == 3 and "LastEvaluatedKey" in page and page["ConsumedCapacity"]["CapacityUnits"] > 0
    assert ddb.scan(TableName=table, Limit=2)["Count"] == 2
    got = ddb.batch_get_item(RequestItems={table: {"Keys": [key, {"PK": {"S": "p"}, "SK": {"S": "k1"}}]}})
    assert len(got["Responses"][table]) == 2
    ddb.batch_write_item(
        RequestItems={table: [{"DeleteRequest": {"Key": {"PK": {"S": "p"}, "SK": {"S": "k0"}}}}]}
    )
    ddb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": table, "Item": {"PK": {"S": "q"}, "SK": {"S": "1"}}}},
            {"Delete": {"TableName": table, "Key": {"PK": {"S": "p"}, "SK": {"S": "k1"}}}},
        ]
    )
    both = ddb.transact_get_items(TransactItems=[{"Get": {"TableName": table, "Key": key}}])
    assert both["Responses"][0]["Item"]["bs"] == EVERY_TYPE["bs"]
    assert (
        ddb.delete_item(TableName=table, Key=key, ReturnValues="ALL_OLD")["Attributes"]["ns"]
        == EVERY_TYPE["ns"]
    )


def test_a_saver_through_the_checking_server(checking_endpoint: str, names: dict[str, str]) -> None:
    saver = DynamoDBSaver(**names, endpoint_url=checking_endpoint, inline_threshold=64, s3_threshold=512)
    saver.setup()
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    for step in range(4):
        cp = {**empty_checkpoint(), "id": str(uuid6())}
        cp["channel_values"] = {"x": "v" * (step * 300)}
        cp["channel_versions"] = {"x": str(step + 1)}
        config = saver.put(config, cp, {"step": step}, {"x": str(step + 1)})
        saver.put_writes(config, [("x", f"w{step}"), ("y", b"\x00" * 100)], f"task-{step}")
    assert len(list(saver.list({"configurable": {"thread_id": "t"}}))) == 4
    assert saver.get_tuple(config).pending_writes[0][2] == "w3"
    saver.copy_thread("t", "u")
    assert saver.get_tuple({"configurable": {"thread_id": "u"}}).checkpoint["channel_values"] == {
        "x": "v" * 900
    }
    saver.delete_thread("t")
    assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is None
    saver.close()
