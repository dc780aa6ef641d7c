"""``CheckpointAwsSource`` on hand-made items of ``langgraph-checkpoint-aws``'s layout: the edge cases.

The real saver writing its tables, and graphs resumed after the move, are
in ``tests/dist/test_migrate_checkpoint_aws.py`` (it needs a venv of its
own). Here, through moto and boto3, the cases that saver does not produce on
demand: a pickled payload (refused, never loaded), an orphan (a payload that
never landed), a task with more than ten writes (string order puts 10 before
2), a missing S3 object (a key prefix not passed), and the renumbering of
integer versions across a fork.
"""

from __future__ import annotations

import gzip
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from langgraph.checkpoint.dynamodb.tools._migrate_aws import renumber_versions
from langgraph.checkpoint.dynamodb.tools.migrate import (
    CheckpointAwsSource,
    CheckpointAwsSourceError,
    migrate_thread,
    migrate_threads,
)

pytestmark = pytest.mark.usefixtures("moto_endpoint")

SERDE = JsonPlusSerializer()


class Ref:
    """A table (and bucket) laid out as langgraph-checkpoint-aws 1.x writes them."""

    def __init__(self, table: str, bucket: str) -> None:
        self.table, self.bucket = table, bucket
        self.ddb, self.s3 = boto3.client("dynamodb"), boto3.client("s3")

    def _payload(self, ref_pk: str, s3_key: str, value: Any, how: str) -> dict[str, Any]:
        # A pickle's bytes (of the int 1), never made here from a value: the reader must refuse it unread.
        type_, data = ("pickle", b"\x80\x04K\x01.") if how == "pickle" else SERDE.dumps_typed(value)
        attrs: dict[str, Any] = {"type": {"S": type_}}
        if how == "gzip":
            data, attrs["compression"] = gzip.compress(data), {"S": "gzip"}
        if how.startswith("s3"):
            self.s3.put_object(Bucket=self.bucket, Key=f"pre/{s3_key}", Body=data)
            attrs.update(ref_loc={"S": "S3"}, ref_key={"S": s3_key})
        else:
            if how != "orphan":
                self.ddb.put_item(
                    TableName=self.table,
                    Item={"PK": {"S": ref_pk}, "SK": {"S": "CHUNK"}, "payload": {"B": data}},
                )
            attrs.update(ref_loc={"S": "DYNAMODB"}, ref_key={"S": ref_pk})
        return attrs

    def checkpoint(
        self, thread: str, cid: str, parent: str | None, versions: dict[str, int], values: dict[str, Any],
        seen: dict[str, dict[str, int]] | None = None, how: str = "plain", ns: str = "",
    ) -> None:  # fmt: skip
        cp = {**empty_checkpoint(), "id": cid, "channel_versions": versions, "channel_values": values}
        cp["versions_seen"] = seen or {}
        attrs = self._payload(
            f"CHUNK_{thread}#{ns}#{cid}",
            f"{thread}/checkpoints/{ns}/{cid}",
            {"checkpoint": cp, "metadata": {"step": 0, "source": "loop"}},
            how,
        )
        item = {
            "PK": {"S": f"CHECKPOINT_{thread}"},
            "SK": {"S": f"{ns}#{cid}"},
            "id": {"S": cid},
            "ns": {"S": ns},
        }
        if parent:
            item["parent_checkpoint_id"] = {"S": parent}
        self.ddb.put_item(TableName=self.table, Item={**item, **attrs})

    def write(
        self, thread: str, cid: str, task: str, idx: int, channel: str, value: Any, path: str = ""
    ) -> None:
        # The keys langgraph-checkpoint-aws derives (its unified_repository's _writes_ref_pk, _writes_s3_key).
        attrs = self._payload(
            f"CHUNK_{thread}##{cid}#{task}#{idx}",
            f"{thread}/checkpoints//{cid}/writes/{task}/{idx}",
            value,
            "plain",
        )
        item = {
            "PK": {"S": f"WRITES_{thread}##{cid}"},
            "SK": {"S": f"{task}#{idx}"},
            "task_id": {"S": task},
            "channel": {"S": channel},
            "idx": {"N": str(idx)},
            "checkpoint_id": {"S": cid},
        }
        if path:
            item["task_path"] = {"S": path}
        self.ddb.put_item(TableName=self.table, Item={**item, **attrs})

    def source(self, **kw: Any) -> CheckpointAwsSource:
        return CheckpointAwsSource(self.table, bucket_name=self.bucket, key_prefix="pre", **kw)


def make_ref() -> Ref:
    """A new table and bucket (on the session's moto server) for hand-made reference items."""
    name = f"ref-{uuid.uuid4().hex[:10]}"
    boto3.client("dynamodb").create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    boto3.client("s3").create_bucket(Bucket=name)
    return Ref(name, name)


@pytest.fixture
def ref(moto_endpoint: str) -> Ref:
    return make_ref()


@pytest.fixture
def target(moto_endpoint: str, names: dict[str, str]) -> Iterator[DynamoDBSaver]:
    saver = DynamoDBSaver(**names)
    saver.setup()
    yield saver
    saver.close()


def cid(n: int) -> str:
    return f"1f000000-0000-6000-8000-{n:012d}"


def test_renumbering_keeps_branches_apart_and_order() -> None:
    root, a, b = ("", cid(1)), ("", cid(2)), ("", cid(3))
    cps = {
        root: ({"channel_versions": {"x": 1, "y": 1}, "versions_seen": {}}, None),
        # Two children of root: each moved x to 2, with different values; y stays shared.
        a: ({"channel_versions": {"x": 2, "y": 1}, "versions_seen": {"n": {"x": 1, "y": 1}}}, cid(1)),
        b: ({"channel_versions": {"x": 2, "y": 1}, "versions_seen": {"n": {"x": 2}}}, cid(1)),
    }
    out = renumber_versions(cps)
    assert out[a]["channel_versions"]["x"] != out[b]["channel_versions"]["x"]  # other values
    assert (
        out[a]["channel_versions"]["y"]
        == out[b]["channel_versions"]["y"]
        == out[root]["channel_versions"]["y"]
    )
    assert (
        out[a]["versions_seen"]["n"]["x"]
        == out[root]["channel_versions"]["x"]
        < out[a]["channel_versions"]["x"]
    )
    assert out[b]["versions_seen"]["n"]["x"] == out[b]["channel_versions"]["x"]  # seen what it holds
    v = out[a]["channel_versions"]["x"]
    assert len(v) == 51 and int(v.split(".")[0]) == 2  # our saver's next version parses it
    assert renumber_versions(cps) == out  # the same on every read: a migration can resume
    strings = {("", cid(9)): ({"channel_versions": {"x": "00000000000000000000000000000001.0.5"}}, None)}
    assert renumber_versions(strings)[("", cid(9))]["channel_versions"]["x"].endswith(".0.5")  # kept


def test_writes_in_writes_sort_key_order_with_their_task_paths(ref: Ref, target: DynamoDBSaver) -> None:
    ref.checkpoint("t", cid(1), None, {"a": 1}, {"a": "x"})
    for idx in range(12):  # string order would be 0, 1, 10, 11, 2, ...
        ref.write("t", cid(1), "task-z", idx, f"c{idx}", idx, path="~__pregel_pull, n")
    ref.write("t", cid(1), "task-a", 0, "c0", "late", path="~__pregel_push, 9")  # a later path, an earlier id
    source = ref.source()
    (t,) = source.list({"configurable": {"thread_id": "t"}})
    assert [w[1:] for w in t.pending_writes][:12] == [(f"c{i}", i) for i in range(12)]
    assert t.pending_writes[-1] == ("task-a", "c0", "late")
    keys = source.stored_write_keys("t", "", cid(1))
    assert keys[0] == ("task-z", "c0", "~__pregel_pull, n", 0) and keys[-1][2] == "~__pregel_push, 9"
    assert migrate_thread(source, target, "t")["verified"]
    got = target.get_tuple({"configurable": {"thread_id": "t"}})
    assert list(got.pending_writes) == list(t.pending_writes)


def test_gzip_s3_orphans_and_a_fork(ref: Ref, target: DynamoDBSaver) -> None:
    ref.checkpoint("t", cid(1), None, {"x": 1}, {"x": "root"}, how="gzip")
    ref.checkpoint("t", cid(2), cid(1), {"x": 2}, {"x": "branch a"}, how="s3")
    ref.checkpoint("t", cid(3), cid(1), {"x": 2}, {"x": "branch b"}, how="gzip")
    ref.checkpoint("t", cid(4), cid(3), {"x": 3}, {"x": "never landed"}, how="orphan")
    # A later step of branch a that leaves x alone: it holds branch a's version 2, written before b's.
    ref.checkpoint("t", cid(5), cid(2), {"x": 2, "y": 3}, {"x": "branch a", "y": "on a"})
    source = ref.source()
    summary = migrate_threads(source, target)
    assert (summary["threads"], summary["verified"], summary["orphans"]) == (1, 1, 1)
    values = {
        t.config["configurable"]["checkpoint_id"]: t.checkpoint["channel_values"]["x"]
        for t in target.list({"configurable": {"thread_id": "t"}})
    }
    # Neither branch's version 2 overwrote the other's.
    assert values == {cid(1): "root", cid(2): "branch a", cid(3): "branch b", cid(5): "branch a"}
    latest = target.get_tuple({"configurable": {"thread_id": "t"}})
    assert latest.config["configurable"]["checkpoint_id"] == cid(5)
    assert latest.checkpoint["channel_values"] == {"x": "branch a", "y": "on a"}


def test_a_missing_s3_object_names_the_prefix(ref: Ref) -> None:
    ref.checkpoint("t", cid(1), None, {"x": 1}, {"x": "v"}, how="s3")
    no_prefix = CheckpointAwsSource(ref.table, bucket_name=ref.bucket)
    with pytest.raises(CheckpointAwsSourceError, match=r"not found.*under the prefix 'pre'.*key_prefix"):
        list(no_prefix.list({"configurable": {"thread_id": "t"}}))
    with pytest.raises(CheckpointAwsSourceError, match="bucket"):
        list(CheckpointAwsSource(ref.table).list({"configurable": {"thread_id": "t"}}))
    skipping = CheckpointAwsSource(ref.table, bucket_name=ref.bucket, skip_missing_objects=True)
    assert list(skipping.list({"configurable": {"thread_id": "t"}})) == [] and skipping.orphans["t"] == 1


def test_pickle_is_refused_never_loaded(ref: Ref, target: DynamoDBSaver) -> None:
    ref.checkpoint("t", cid(1), None, {"x": 1}, {"x": "v"}, how="pickle")
    with pytest.raises(CheckpointAwsSourceError, match=r"pickle.*never read"):
        migrate_threads(ref.source(), target)
    assert list(target.list({"configurable": {"thread_id": "t"}})) == []
    with pytest.raises(NotImplementedError, match="read-only"):
        ref.source().put({}, empty_checkpoint(), {}, {})
