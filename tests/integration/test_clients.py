"""Client and session injection, and setup() idempotence."""

from __future__ import annotations

import asyncio

import boto3

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver
from tests.support.harness import cfg, new_thread


def test_sync_saver_with_injected_clients_and_session(moto_endpoint: str, names: dict[str, str]) -> None:
    ddb = boto3.client("dynamodb")
    s3 = boto3.client("s3")
    saver = DynamoDBSaver(**names, dynamodb_client=ddb, s3_client=s3)
    saver.setup()
    saver.setup()  # idempotent
    assert saver.clients["dynamodb"] is ddb and saver.clients["s3"] is s3
    stored = saver.put(cfg(new_thread()), {"v": 1, "id": "1", "ts": "", "channel_values": {"a": 1}, "channel_versions": {"a": "1"}, "versions_seen": {}, "updated_channels": None}, {}, {"a": "1"})  # type: ignore[typeddict-item]
    saver.close()  # injected clients stay usable
    assert ddb.describe_table(TableName=names["table_name"])["Table"]["TableStatus"] == "ACTIVE"
    other = DynamoDBSaver(**names, boto3_session=boto3.session.Session(region_name="us-east-1"))
    assert other.get_tuple(stored).checkpoint["channel_values"] == {"a": 1}


def test_async_saver_with_injected_clients_and_session(moto_endpoint: str, names: dict[str, str]) -> None:
    from aiobotocore.session import get_session

    async def run() -> None:
        session = get_session()
        async with session.create_client("dynamodb", region_name="us-east-1") as ddb:
            saver = AsyncDynamoDBSaver(table_name=names["table_name"], dynamodb_client=ddb)
            await saver.setup()
            stored = await saver.aput(cfg(new_thread()), {"v": 1, "id": "1", "ts": "", "channel_values": {"a": 2}, "channel_versions": {"a": "1"}, "versions_seen": {}, "updated_channels": None}, {}, {"a": "1"})  # type: ignore[typeddict-item]
            await saver.aclose()  # must not close the injected client
            assert (await ddb.describe_table(TableName=names["table_name"]))["Table"]["TableStatus"] == "ACTIVE"
        async with AsyncDynamoDBSaver(table_name=names["table_name"], session=session) as other:
            assert (await other.aget_tuple(stored)).checkpoint["channel_values"] == {"a": 2}
            assert other.clients["dynamodb"] is not None
        assert other.clients["dynamodb"] is None  # closed on exit

    asyncio.run(run())
