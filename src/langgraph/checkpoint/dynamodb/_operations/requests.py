"""Request helpers: the request patterns several operations share.

Rule: this module holds sans-I/O building blocks (see ``ops``) that issue
requests but know nothing of checkpoints: paged queries, batch reads and
batch writes that retry unprocessed keys and items with backoff, deletes in an order that keeps every
readable checkpoint unchanged under interruption, S3 deletes. They take the
table or bucket name, never a saver.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._engine.ops import Call, Gather, Op, Sleep, ddb, s3
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import Item
from langgraph.checkpoint.dynamodb.schema import ATTR

#: Items per BatchWriteItem / keys per BatchGetItem (DynamoDB limits).
BATCH_WRITE_MAX = 25
BATCH_GET_MAX = 100


def backoff(attempt: int) -> float:
    """Full-jitter exponential backoff, capped at 5 s."""
    return random.uniform(0, min(5.0, 0.05 * (2**attempt)))


def query_all(**kwargs: Any) -> Op[list[Item]]:
    """Every item a Query (``kwargs``, ``TableName`` included) matches, page after page."""
    items: list[Item] = []
    while True:
        resp = yield ddb("query", **kwargs)
        items.extend(resp.get("Items", []))
        if "LastEvaluatedKey" not in resp:
            return items
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def newest_first_query(table_name: str, condition: str, values: dict[str, Any]) -> dict[str, Any]:
    """The strongly consistent Query of a key range (``#pk``, ``#sk`` in ``condition``), highest sort key first."""
    return dict(
        TableName=table_name,
        KeyConditionExpression=condition,
        ExpressionAttributeNames={"#pk": ATTR.PK, "#sk": ATTR.SK},
        ExpressionAttributeValues=values,
        ScanIndexForward=False,
        ConsistentRead=True,
    )


def checkpoint_query(table_name: str, pk: str, ns: str, checkpoint_id: str) -> dict[str, Any]:
    """The Query (strongly consistent) of one checkpoint's key range: its item and its writes items."""
    return dict(
        TableName=table_name,
        KeyConditionExpression="#pk = :pk AND #sk BETWEEN :lo AND :hi",
        ExpressionAttributeNames={"#pk": ATTR.PK, "#sk": ATTR.SK},
        ExpressionAttributeValues={
            ":pk": {"S": pk},
            ":lo": {"S": schema.checkpoint_sk(ns, checkpoint_id)},
            ":hi": {"S": schema.checkpoint_range_end(ns, checkpoint_id)},
        },
        ConsistentRead=True,
    )


def batch_get_calls(table_name: str, keys: Sequence[Item]) -> list[Call]:
    """Strongly consistent BatchGetItem calls for ``keys``, 100 keys each (DynamoDB's limit).

    The keys must be distinct: BatchGetItem refuses a request naming one twice.
    """
    return [
        ddb(
            "batch_get_item",
            RequestItems={table_name: {"Keys": list(keys[i : i + BATCH_GET_MAX]), "ConsistentRead": True}},
        )
        for i in range(0, len(keys), BATCH_GET_MAX)
    ]


def batch_get_rest(table_name: str, responses: Iterable[dict[str, Any]]) -> Op[list[Item]]:
    """The items of BatchGetItem ``responses``, asking again for their unprocessed keys with backoff.

    Split from :func:`batch_get` so that a caller can send the first calls
    together with others in one ``Gather`` (one round trip), then finish here.

    Raises:
        RuntimeError: keys stayed unprocessed after 12 attempts (a throttled table).
    """
    items: list[Item] = []
    unprocessed: list[Item] = []
    for resp in responses:
        items.extend(resp.get("Responses", {}).get(table_name, []))
        unprocessed.extend(resp.get("UnprocessedKeys", {}).get(table_name, {}).get("Keys", []))
    attempt = 0
    while unprocessed:
        attempt += 1
        if attempt > 12:
            raise RuntimeError("BatchGetItem keys stayed unprocessed (table throttled?)")
        yield Sleep(backoff(attempt))
        batch, unprocessed = unprocessed[:BATCH_GET_MAX], unprocessed[BATCH_GET_MAX:]
        resp = yield batch_get_calls(table_name, batch)[0]
        items.extend(resp.get("Responses", {}).get(table_name, []))
        unprocessed.extend(resp.get("UnprocessedKeys", {}).get(table_name, {}).get("Keys", []))
    return items


def batch_get(table_name: str, keys: Sequence[Item]) -> Op[list[Item]]:
    """Every item of ``keys`` that exists (strongly consistent): chunks at once, unprocessed keys again."""
    if not keys:
        return []
    responses = yield Gather(batch_get_calls(table_name, keys))
    return (yield from batch_get_rest(table_name, responses))


def batch_write(table_name: str, requests: list[dict[str, Any]], *, in_order: bool = False) -> Op[None]:
    """BatchWriteItem in chunks of 25, resubmitting unprocessed items with backoff.

    Chunks go concurrently, unless ``in_order``: then each chunk is done
    (unprocessed items included) before the next starts, so a failure
    leaves a prefix of ``requests`` applied, never a scattered subset
    (the maintenance operations rely on this; see :func:`ordered_deletes`).
    """
    if in_order:
        for i in range(0, len(requests), BATCH_WRITE_MAX):
            yield from batch_write(table_name, requests[i : i + BATCH_WRITE_MAX])
        return
    pending = [requests[i : i + BATCH_WRITE_MAX] for i in range(0, len(requests), BATCH_WRITE_MAX)]
    attempt = 0
    while pending:
        responses = yield Gather(
            [ddb("batch_write_item", RequestItems={table_name: chunk}) for chunk in pending]
        )
        leftover: list[dict[str, Any]] = []
        for resp in responses:
            leftover.extend(resp.get("UnprocessedItems", {}).get(table_name, []))
        if not leftover:
            return
        attempt += 1
        if attempt > 12:
            raise RuntimeError(
                f"{len(leftover)} items stayed unprocessed after {attempt} BatchWriteItem "
                "attempts (table throttled?)"
            )
        yield Sleep(backoff(attempt))
        pending = [leftover[i : i + BATCH_WRITE_MAX] for i in range(0, len(leftover), BATCH_WRITE_MAX)]


def ordered_deletes(table_name: str, items: Iterable[Item]) -> Op[None]:
    """Delete items so that an interruption never changes what a reader sees.

    A failure part way (a fault that outlasts the retries, a Lambda
    timeout) must leave every checkpoint that can still be read exactly
    as it was, or unreadable with an error: never readable with a
    different state. Hence three phases:

    1. checkpoint items, newest first, one chunk after the other: what
       remains of a thread is an older, consistent prefix of it, and a
       delta chain loses its descendants before its ancestors;
    2. only then writes items and blobs, which only deleted checkpoints
       (or, for ``delete_for_runs``, deliberately dropped writes) used;
    3. last the thread's meta items (its head carries the TTL that still
       expires whatever a failed delete left behind).
    """
    checkpoints: list[tuple[str, Item]] = []
    rest: list[Item] = []
    meta: list[Item] = []
    for it in items:
        _, kind, cid, _ = shapes.parse_sk(it)
        if kind == schema.CHECKPOINT_ITEM:
            checkpoints.append((cid, it))
        else:
            (meta if kind == schema.META_ITEM else rest).append(it)
    newest_first = [it for _, it in sorted(checkpoints, key=lambda c: c[0], reverse=True)]
    for group, in_order in ((newest_first, True), (rest, False), (meta, False)):
        if group:
            yield from batch_write(
                table_name,
                [{"DeleteRequest": {"Key": {ATTR.PK: it[ATTR.PK], ATTR.SK: it[ATTR.SK]}}} for it in group],
                in_order=in_order,
            )


def delete_s3_prefix(bucket: str | None, prefix: str) -> Op[None]:
    """Delete every S3 object under ``prefix``, a listing page at a time."""
    kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
    while True:
        resp = yield s3("list_objects_v2", **kwargs)
        keys = [{"Key": o["Key"]} for o in resp.get("Contents", [])]
        if keys:
            yield from delete_s3_keys(bucket, [k["Key"] for k in keys])
        if not resp.get("IsTruncated"):
            return
        kwargs["ContinuationToken"] = resp["NextContinuationToken"]


def delete_s3_keys(bucket: str | None, keys: Sequence[str]) -> Op[None]:
    """Delete S3 objects by key, 1,000 a request, the requests at once."""
    chunks = [keys[i : i + 1000] for i in range(0, len(keys), 1000)]
    responses = yield Gather(
        [
            s3(
                "delete_objects",
                Bucket=bucket,
                Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True},
            )
            for chunk in chunks
        ]
    )
    errors = [e for resp in responses for e in resp.get("Errors", [])]
    if errors:
        raise RuntimeError(f"could not delete {len(errors)} S3 objects, first: {errors[0]}")
