"""Read-only, paged access to what a saver stores, item by item and object by object.

What lives here: the raw reads the CLI, ``doctor`` and ``export`` share (paged
queries and scans of the saver's table, a thread's items, S3 listings under
the saver's scope), over the saver's public surface only (``clients``,
``table_name``, ``bucket_name``, ``partition_key``, ``s3_key_prefix``,
``tenant_prefix``). Synchronous (boto3 clients): these are tools' reads, not
the savers' hot path, which runs sans-I/O operations instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb.schema import ATTR

__all__ = [
    "ddb_client",
    "paginate",
    "query",
    "s3_client",
    "s3_in_scope",
    "s3_objects",
    "s3_root",
    "scan",
    "thread_items",
]


def ddb_client(saver: Any) -> Any:
    """The saver's DynamoDB client."""
    return saver.clients["dynamodb"]


def s3_client(saver: Any) -> Any:
    """The saver's S3 client, or ``None`` without a bucket."""
    return saver.clients.get("s3")


def s3_in_scope(saver: Any, key: str) -> bool:
    """Whether an S3 key belongs to a thread of the saver's tenant (or to an untenanted one)."""
    segment = key[len(saver.s3_key_prefix) :].split("/", 1)[0]
    if schema.is_digested(segment):  # a long thread id's: the tenant is still whole in front
        tenant, sep, _ = segment.partition(schema.SEP)
        return (unquote(tenant) if sep else "") == (saver.tenant_prefix or "")
    parsed = schema.parse_s3_thread_segment(segment)
    return parsed is not None and parsed[0] == (saver.tenant_prefix or "")


def s3_root(saver: Any) -> str:
    """The S3 prefix under which every object of the saver's scope (its tenant's) lives."""
    tenant = saver.tenant_prefix or ""
    return schema.tenant_s3_prefix(saver.s3_key_prefix, tenant) if tenant else saver.s3_key_prefix


def paginate(
    call: Callable[..., Mapping[str, Any]], key: str, token_in: str, token_out: str, **kwargs: Any
) -> Iterable[Any]:
    """Every ``resp[key]`` element of a paged AWS call, following ``token_out`` -> ``token_in``."""
    while True:
        resp = call(**kwargs)
        yield from resp.get(key, [])
        token = resp.get(token_out)
        if not token:
            return
        kwargs[token_in] = token


def query(saver: Any, **kwargs: Any) -> Iterable[dict[str, Any]]:
    """Every item of a Query on the saver's table, page after page."""
    return paginate(
        ddb_client(saver).query,
        "Items",
        "ExclusiveStartKey",
        "LastEvaluatedKey",
        TableName=saver.table_name,
        **kwargs,
    )


def scan(saver: Any, **kwargs: Any) -> Iterable[dict[str, Any]]:
    """Every item of a Scan of the saver's table, page after page."""
    return paginate(
        ddb_client(saver).scan,
        "Items",
        "ExclusiveStartKey",
        "LastEvaluatedKey",
        TableName=saver.table_name,
        **kwargs,
    )


def s3_objects(saver: Any, prefix: str) -> Iterable[dict[str, Any]]:
    """Every object under ``prefix`` in the saver's bucket (none without a bucket)."""
    if saver.bucket_name is None or s3_client(saver) is None:
        return []
    return paginate(
        s3_client(saver).list_objects_v2,
        "Contents",
        "ContinuationToken",
        "NextContinuationToken",
        Bucket=saver.bucket_name,
        Prefix=prefix,
    )


def thread_items(
    saver: Any, thread_id: str, sk_prefix: str | None = None, projection: bool = False
) -> Iterable[dict[str, Any]]:
    """Every item of a thread (strongly consistent), optionally under a sort-key prefix or keys only."""
    kwargs: dict[str, Any] = {
        "KeyConditionExpression": "#pk = :pk" + (" AND begins_with(#sk, :pre)" if sk_prefix else ""),
        "ExpressionAttributeNames": {
            "#pk": ATTR.PK,
            **({"#sk": ATTR.SK} if sk_prefix or projection else {}),
            **({"#k": ATTR.KEY} if projection else {}),
        },
        "ExpressionAttributeValues": {
            ":pk": {"S": saver.partition_key(thread_id)},
            **({":pre": {"S": sk_prefix}} if sk_prefix else {}),
        },
        "ConsistentRead": True,
    }
    if projection:
        kwargs["ProjectionExpression"] = "#pk, #sk, #k"  # the ids too, where a key digests one
    return query(saver, **kwargs)
