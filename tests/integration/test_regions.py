"""``setup()`` outside us-east-1: S3 refuses a CreateBucket that does not name the region (moto too)."""

from __future__ import annotations

import asyncio
from typing import Any

import boto3
import pytest

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver


@pytest.mark.parametrize("region", ["eu-west-1", "ap-southeast-2", "us-east-1"])
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_setup_creates_the_bucket_in_the_savers_region(
    moto_endpoint: str, names: dict[str, str], region: str, kind: str
) -> None:
    settings: dict[str, Any] = {**names, "region_name": region}
    if kind == "sync":
        with DynamoDBSaver(**settings) as saver:
            saver.setup()
            saver.setup()  # idempotent
    else:

        async def main() -> None:
            async with AsyncDynamoDBSaver(**settings) as saver:
                await saver.setup()
                await saver.setup()

        asyncio.run(main())
    s3 = boto3.client("s3", region_name=region)
    location = s3.get_bucket_location(Bucket=names["bucket_name"])["LocationConstraint"]
    assert (location or "us-east-1") == region
    table = boto3.client("dynamodb", region_name=region).describe_table(TableName=names["table_name"])
    assert table["Table"]["TableStatus"] == "ACTIVE"
