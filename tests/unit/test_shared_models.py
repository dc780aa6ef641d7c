"""Savers made one after another parse botocore's API models once per process (``_aws.share_models``).

A new botocore session parses DynamoDB's and S3's models again, ~80 ms of CPU
per client: a saver made per request (a Lambda handler's) paid it every time.
The count of model files read is what these tests check, not time.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.loaders import JSONFileLoader

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver
from langgraph.checkpoint.dynamodb._engine.aws import share_models

OPTIONS: dict[str, Any] = {
    "table_name": "t",
    "bucket_name": "b",
    "region_name": "eu-west-1",
    "endpoint_url": "http://127.0.0.1:9",
}


@pytest.fixture
def files_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every model file botocore parses, by name."""
    read: Counter[str] = Counter()
    original = JSONFileLoader.load_file

    def counted(self: JSONFileLoader, file_path: str) -> Any:
        read[file_path.rsplit("/", 2)[-2] + "/" + file_path.rsplit("/", 1)[-1]] += 1
        return original(self, file_path)

    monkeypatch.setattr(JSONFileLoader, "load_file", counted)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "first")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    yield read


def test_a_second_sync_saver_parses_no_model(files_read: Counter[str]) -> None:
    DynamoDBSaver(**OPTIONS).close()
    files_read.clear()
    saver = DynamoDBSaver(**OPTIONS)
    assert saver.clients["dynamodb"].meta.service_model.service_name == "dynamodb"
    assert saver.clients["s3"].meta.region_name == "eu-west-1"
    saver.close()
    assert not files_read, f"models parsed again: {dict(files_read)}"


def test_a_second_async_saver_parses_no_model(files_read: Counter[str]) -> None:
    async def open_one() -> None:
        async with AsyncDynamoDBSaver(**OPTIONS) as saver:
            await saver.ensure_clients()
            assert saver.clients["dynamodb"] is not None and saver.clients["s3"] is not None

    asyncio.run(open_one())
    files_read.clear()
    asyncio.run(open_one())
    assert not files_read, f"models parsed again: {dict(files_read)}"


def test_credentials_stay_per_saver(monkeypatch: pytest.MonkeyPatch, files_read: Counter[str]) -> None:
    first = DynamoDBSaver(**OPTIONS)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "second")
    second = DynamoDBSaver(**OPTIONS)
    keys = [s.clients["dynamodb"]._request_signer._credentials.access_key for s in (first, second)]
    assert keys == ["first", "second"]
    first.close()
    second.close()


def test_a_callers_session_keeps_its_own_loader(files_read: Counter[str]) -> None:
    core = botocore.session.get_session()
    session = boto3.session.Session(region_name="eu-west-1", botocore_session=core)
    own = core.get_component("data_loader")
    DynamoDBSaver(**OPTIONS, boto3_session=session).close()
    assert core.get_component("data_loader") is own


def test_one_loader_per_data_path(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import botocore.session

    plain = share_models(botocore.session.Session()).get_component("data_loader")
    assert share_models(botocore.session.Session()).get_component("data_loader") is plain
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    other = share_models(botocore.session.Session()).get_component("data_loader")
    assert other is not plain and str(tmp_path) in other.search_paths
