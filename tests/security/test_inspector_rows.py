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


def _bomb(n: int) -> bytes:
    """A packed msgpack payload of ``n`` empty lists: ~5 bytes, then ~n x 64 bytes of Python objects."""
    import zlib

    raw = b"\xdd" + n.to_bytes(4, "big") + b"\x90" * n
    return bytes((1, ord("z"), 7)) + b"msgpack" + zlib.compress(raw, 9)


def test_a_page_of_amplifying_rows_decodes_one_row_at_a_time(saver: DynamoDBSaver) -> None:
    """Finding 9: a page summarised 8 rows at once, so 8 forged rows cost 8 decoded states at once.

    Each of 8 threads holds a payload of a few hundred bytes that decodes to
    ~13 MB of Python objects. The page's peak (tracemalloc, all threads) must
    stay near one row's: the rows' decoding and summaries run one after another
    (it was twice one row's before, measured; up to 8 times, by timing).
    """
    import tracemalloc

    import ormsgpack

    n = 200_000
    threads = [new_thread() for _ in range(8)]
    for t in threads:
        stored = _put(saver, t, "x")
        c = stored["configurable"]
        boto3.client("dynamodb").update_item(
            TableName=saver.table_name,
            Key={
                "PK": {"S": saver.partition_key(t)},
                "SK": {"S": schema.checkpoint_sk("", c["checkpoint_id"])},
            },
            UpdateExpression="SET vals.v = :v",
            ExpressionAttributeValues={":v": {"B": _bomb(n)}},
        )
    tracemalloc.start()
    try:
        ormsgpack.unpackb(b"\xdd" + n.to_bytes(4, "big") + b"\x90" * n)
        one = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        html = page_threads(saver, {})
        page = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(t in html for t in threads)
    assert one > 10_000_000  # the bomb really amplifies
    assert page < 1.5 * one, f"page peak {page:,} bytes vs one row's decode {one:,}"
