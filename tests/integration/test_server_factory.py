"""``langgraph.checkpoint.dynamodb.server.checkpointer``: the factory ``langgraph.json`` names.

The LangGraph server enters it once per event-loop thread and leaves it on
shutdown; ``tests/dist/test_langgraph_server.py`` runs it under the real
server. Here: what it reads, that it never creates a table unless asked,
and how it refuses a bad setting.
"""

from __future__ import annotations

import asyncio
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver
from langgraph.checkpoint.dynamodb.config import ENV_SETUP
from langgraph.checkpoint.dynamodb.errors import StoreNotFoundError
from langgraph.checkpoint.dynamodb.server import checkpointer
from tests.support.harness import cfg, new_thread


def _env(names: dict[str, str], **extra: str) -> dict[str, str]:
    return {
        "LANGGRAPH_DYNAMODB_TABLE": names["table_name"],
        "LANGGRAPH_DYNAMODB_BUCKET": names["bucket_name"],
        "AWS_REGION": "us-east-1",
        **extra,
    }


def _exists(names: dict[str, str]) -> tuple[bool, bool]:
    # describe_table, not list_tables: a page of the session's tables may not hold this one.
    try:
        boto3.client("dynamodb").describe_table(TableName=names["table_name"])
        table = True
    except ClientError:
        table = False
    try:
        boto3.client("s3").head_bucket(Bucket=names["bucket_name"])
        bucket = True
    except ClientError:
        bucket = False
    return table, bucket


def _checkpoint(value: Any) -> Any:
    return {
        "v": 1,
        "id": "1",
        "ts": "",
        "channel_values": {"a": value},
        "channel_versions": {"a": "1"},
        "versions_seen": {},
        "updated_channels": None,
    }


def test_a_missing_table_stops_start_up_and_is_not_created(moto_endpoint: str, names: dict[str, str]) -> None:
    """Against AWS a misspelt table must stop the server with its name, not be created."""

    async def run() -> None:
        async with checkpointer(_env(names)):
            pytest.fail("entered the factory on a table that does not exist")

    with pytest.raises(StoreNotFoundError, match=names["table_name"]) as info:
        asyncio.run(run())
    assert f"{ENV_SETUP}=1" in str(info.value)  # the advice a server user can act on
    assert _exists(names) == (False, False)


def test_reads_the_environment_and_closes_its_clients(moto_endpoint: str, names: dict[str, str]) -> None:
    async def run() -> AsyncDynamoDBSaver:
        async with AsyncDynamoDBSaver(**names) as admin:
            await admin.setup()  # as the CDK construct would have
        async with checkpointer(_env(names), s3_key_prefix="server/") as saver:
            assert isinstance(saver, AsyncDynamoDBSaver)
            assert (saver.table_name, saver.bucket_name) == (names["table_name"], names["bucket_name"])
            assert saver.s3_key_prefix == "server/"  # keyword options override the environment
            assert saver.clients["dynamodb"] is not None  # opened on entry
            stored = await saver.aput(cfg(new_thread()), _checkpoint(1), {}, {"a": "1"})
            assert (await saver.aget_tuple(stored)) is not None
        return saver

    saver = asyncio.run(run())
    assert saver.clients["dynamodb"] is None  # closed when the server leaves the context


@pytest.mark.parametrize("flag", ["1", "true", " YES "])
def test_sets_up_when_asked(moto_endpoint: str, names: dict[str, str], flag: str) -> None:
    async def run() -> None:
        thread = cfg(new_thread())
        async with checkpointer(_env(names, **{ENV_SETUP: flag})) as saver:
            stored = await saver.aput(thread, _checkpoint(1), {}, {"a": "1"})
        # The server enters the factory again on another thread's loop: setup is idempotent.
        async with checkpointer(_env(names, **{ENV_SETUP: flag})) as again:
            got = await again.aget_tuple(stored)
            assert got is not None and got.checkpoint["channel_values"] == {"a": 1}

    asyncio.run(run())
    assert _exists(names) == (True, True)


@pytest.mark.parametrize("flag", ["ture", "2", "y e s"])
def test_refuses_a_malformed_setup_flag(moto_endpoint: str, names: dict[str, str], flag: str) -> None:
    async def run() -> None:
        async with checkpointer(_env(names, **{ENV_SETUP: flag})):
            pass

    with pytest.raises(ValueError, match=ENV_SETUP):
        asyncio.run(run())
    assert _exists(names) == (False, False)


@pytest.mark.parametrize("flag", ["", "0", "false", "No"])
def test_a_false_setup_flag_creates_nothing(moto_endpoint: str, names: dict[str, str], flag: str) -> None:
    async def run() -> None:
        async with checkpointer(_env(names, **{ENV_SETUP: flag})):
            pytest.fail("entered the factory on a table that does not exist")

    with pytest.raises(StoreNotFoundError, match=names["table_name"]) as info:
        asyncio.run(run())
    assert f"{ENV_SETUP}=1" in str(info.value)  # the advice a server user can act on
    assert _exists(names) == (False, False)


def test_without_a_table_names_the_variable() -> None:
    async def run() -> None:
        async with checkpointer({"AWS_REGION": "us-east-1", ENV_SETUP: "1"}):
            pass

    with pytest.raises(ValueError, match="LANGGRAPH_DYNAMODB_TABLE"):
        asyncio.run(run())
