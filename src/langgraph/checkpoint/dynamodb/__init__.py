"""LangGraph checkpointers on Amazon DynamoDB, with large payloads in Amazon S3.

``DynamoDBSaver`` (boto3) and ``AsyncDynamoDBSaver`` (aiobotocore) implement
LangGraph's ``BaseCheckpointSaver``. ``AsyncDynamoDBSaver`` is imported
lazily, so code that only needs the sync saver (a Lambda handler, say)
never imports aiobotocore.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.dynamodb._engine.pacing import throttle_stats
from langgraph.checkpoint.dynamodb.errors import (
    BucketUnusableError,
    CheckpointStoreError,
    CiphertextBindingError,
    CorruptPayloadError,
    CredentialsNotFoundError,
    EndpointUnreachableError,
    KeyTooLongError,
    MissingPayloadError,
    PayloadLimitError,
    PayloadTooLargeError,
    RegionNotSetError,
    StoreNotFoundError,
    ThreadTooLargeError,
    UnsupportedFormatError,
    WriteContentionError,
)
from langgraph.checkpoint.dynamodb.saver import DynamoDBSaver

if TYPE_CHECKING:
    from langgraph.checkpoint.dynamodb.aio import AsyncDynamoDBSaver

__all__ = [
    "AsyncDynamoDBSaver",
    "BucketUnusableError",
    "CheckpointStoreError",
    "CiphertextBindingError",
    "CorruptPayloadError",
    "CredentialsNotFoundError",
    "DynamoDBSaver",
    "EndpointUnreachableError",
    "KeyTooLongError",
    "MissingPayloadError",
    "PayloadLimitError",
    "PayloadTooLargeError",
    "RegionNotSetError",
    "StoreNotFoundError",
    "ThreadTooLargeError",
    "UnsupportedFormatError",
    "WriteContentionError",
    "throttle_stats",
]


def __getattr__(name: str) -> Any:
    if name == "AsyncDynamoDBSaver":
        from langgraph.checkpoint.dynamodb.aio import AsyncDynamoDBSaver

        return AsyncDynamoDBSaver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
