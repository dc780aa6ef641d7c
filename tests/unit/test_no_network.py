"""The unit tier's network guard (tests/unit/conftest.py) holds, for real clients too."""

from __future__ import annotations

import asyncio
import socket

import pytest
from botocore.config import Config

from tests.unit.conftest import NetworkUsed


def test_a_socket_connection_is_refused() -> None:
    with socket.socket() as sock, pytest.raises(NetworkUsed, match=r"127\.0\.0\.1"):
        sock.connect(("127.0.0.1", 9))


def test_an_asyncio_connection_is_refused() -> None:
    async def main() -> None:
        await asyncio.open_connection("127.0.0.1", 9)

    with pytest.raises(NetworkUsed):
        asyncio.run(main())


def test_a_real_boto3_client_cannot_reach_an_endpoint() -> None:
    """A saver given real clients (not a script) fails at once instead of talking to a server."""
    import boto3

    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    client = boto3.client(
        "dynamodb",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 1}),
    )
    saver = DynamoDBSaver(table_name="tbl", dynamodb_client=client)
    # botocore wraps what its HTTP layer raised (HTTPClientError), keeping the message.
    with pytest.raises(
        Exception, match=r"the unit tier opened a connection to \('127\.0\.0\.1', 9\)"
    ) as info:
        saver.get_tuple({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}})
    assert isinstance(info.value, NetworkUsed) or isinstance(info.value.__context__, NetworkUsed)


def test_asking_for_the_moto_server_fails(request: pytest.FixtureRequest) -> None:
    with pytest.raises(NetworkUsed, match="needs no server"):
        request.getfixturevalue("moto_endpoint")
