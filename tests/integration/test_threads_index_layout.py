"""The threads index spreads heads over the shard count the table records, and every listing sees them.

On the moto server (no index throttling here: ``tests/unit/test_threads_index_layout.py``
scripts that): a layout item recording 16 shards sends real savers' heads to
all 16, and the CLI's listing, reading the layout, finds each thread once,
newest first, including heads an older writer left in the first 4.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.dynamodb import DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb.cli._thread_listing import list_threads
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.harness import Harness, cfg, new_thread, scan_table

VARIANTS = pytest.mark.parametrize("harness", ["sync", "async"], indirect=True)
LAYOUT = {ATTR.PK: {"S": schema.LAYOUT_PK}, ATTR.SK: {"S": schema.THREADS_LAYOUT_SK}}


def _put(h: Harness, saver: Any, thread_id: str) -> None:
    h.call("put", cfg(thread_id), empty_checkpoint(), {}, {}, saver=saver)


def _heads(table_name: str) -> dict[str, str]:
    return {
        it[ATTR.THREAD_ID]["S"]: it[ATTR.THREAD_SHARD]["S"]
        for it in scan_table(table_name)
        if it[ATTR.SK]["S"] == schema.HEAD_SK
    }


def _listed(h: Harness) -> list[str]:
    """Every thread the CLI's listing shows, page by page (a new sync saver: another process)."""
    reader = DynamoDBSaver(**h.saver_kwargs())
    seen: list[str] = []
    token = None
    try:
        while True:
            page = list_threads(reader, limit=7, page_token=token, source="index")
            seen += [t["thread_id"] for t in page["threads"]]
            token = page["next_page_token"]
            if token is None:
                return seen
    finally:
        reader.close()


@VARIANTS
def test_heads_follow_the_recorded_shard_count_and_all_are_listed(harness: Harness) -> None:
    h = harness
    older = [new_thread() for _ in range(8)]
    with h.other_saver(track_threads=True) as before:
        for t in older:  # a writer from before the index grew: 4 shards
            _put(h, before, t)
    boto3.client("dynamodb").put_item(TableName=h.table_name, Item={**LAYOUT, "n": {"N": "16"}})
    newer = [new_thread() for _ in range(24)]
    with h.other_saver(track_threads=True) as after:
        for t in newer:
            _put(h, after, t)
    heads = _heads(h.table_name)
    assert {heads[t] for t in older} <= {str(i) for i in range(4)}
    assert all(heads[t] == schema.thread_shard(t, 16) for t in newer)
    assert {int(heads[t]) for t in newer} & set(range(4, 16))  # really past the first 4
    listed = _listed(h)
    assert sorted(listed) == sorted(older + newer) and len(listed) == len(set(listed))
    assert set(listed[: len(newer)]) == set(newer)  # newest activity first
