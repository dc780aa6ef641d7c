"""One thread that cannot be read is one unreadable row, never a 500 for the whole threads page.

A tenant (or anyone who can write items) plants a checkpoint whose value does not
decode; before, the inspector's threads page raised for it and showed no thread at all.
"""

from __future__ import annotations

import boto3
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb.cli._ui import page_threads
from tests.support.harness import cfg, new_thread


@pytest.fixture
def saver(moto_endpoint: str, names: dict[str, str]) -> DynamoDBSaver:
    s = DynamoDBSaver(table_name=names["table_name"], track_threads=True)
    s.setup()
    return s


def _put(saver: DynamoDBSaver, thread: str, secret: str) -> dict:  # type: ignore[type-arg]
    cp = empty_checkpoint()
    cp["id"] = str(uuid6())
    cp["channel_values"] = {"v": secret}
    cp["channel_versions"] = {"v": "1"}
    return dict(saver.put(cfg(thread), cp, {}, {"v": "1"}))


def test_an_undecodable_thread_is_one_row_of_the_page(saver: DynamoDBSaver) -> None:
    good, bad = new_thread(), new_thread()
    _put(saver, good, "fine")
    stored = _put(saver, bad, "TOP-SECRET-PLAINTEXT")
    c = stored["configurable"]
    boto3.client("dynamodb").update_item(
        TableName=saver.table_name,
        Key={
            "PK": {"S": saver.partition_key(bad)},
            "SK": {"S": schema.checkpoint_sk(c["checkpoint_ns"], c["checkpoint_id"])},
        },
        UpdateExpression="SET vals.v = :v",
        ExpressionAttributeValues={":v": {"B": b"\x01n\x07msgpack\xc1\xc1TOP-SECRET"}},
    )
    html = page_threads(saver, {})
    assert good in html and bad in html
    assert "unreadable" in html
    assert "TOP-SECRET" not in html  # names and sizes only
