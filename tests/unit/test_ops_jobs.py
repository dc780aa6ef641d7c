"""Lifecycle jobs and setup against scripted responses: reap, purge, pruner, orphan sweep, setup.

Time is the library's clock (``clock.now``), moved by the tests, never slept
on. Stored items come from the real write operations (``stored.Writer``),
written at a chosen time.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import DynamoDBSaver, clock, schema
from langgraph.checkpoint.dynamodb.lifecycle import PrunePolicy
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.script import Script, call, scripted_saver
from tests.unit.stored import Writer, cid_of, deleted, listing, noise, writes_item

MODES = ["sync", "async"]
T0 = 1_800_000_000.0
TTL = 3600


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    c = Clock(T0)
    monkeypatch.setattr(clock, "now", c)
    yield c


def _error(code: str, op: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, op)


def _head(w: Writer, thread: str) -> dict[str, Any]:
    """The thread head the writer's last activity on ``thread`` left (what the threads index holds)."""
    pk = w.saver.partition_key(thread)
    ups = [
        c
        for c in w.script.calls("update_item")
        if c.kwargs["Key"] == {ATTR.PK: {"S": pk}, ATTR.SK: {"S": schema.HEAD_SK}}
    ]
    return writes_item(ups[-1])


# ------------------------------------------------------------ reap_thread


@pytest.mark.parametrize("mode", MODES)
def test_reap_thread_keeps_items_stamped_after_the_cutoff(mode: str, now: Clock) -> None:
    """A thread that came back to life after expiring keeps what it wrote since."""
    w = Writer(ttl=TTL)
    c0 = w.put("t1", {"a": 0})
    w.put_writes(c0, [("a", 1)], "task0")
    c1 = w.put("t1", {"a": 1}, {"a": "2"}, parent=c0)
    now.t = T0 + 10 * TTL  # it expired, then came back
    c2 = w.put("t1", {"a": 2}, {"a": "3"}, parent=c1)
    w.put_writes(c2, [("a", 3)], "task2")
    saver, script = scripted_saver(mode, ttl=TTL)
    script.when("query", {"Items": w.items("t1")})
    res = call(saver, "reap_thread", "t1", expired_before=T0 + TTL + 1)
    script.assert_done()
    gone = deleted(script)
    assert gone == [
        schema.checkpoint_sk("", cid_of(c1)),
        schema.checkpoint_sk("", cid_of(c0)),
        schema.writes_sk("", cid_of(c0), "task0"),
    ]
    assert res.checkpoints_deleted == 2
    # The lineage lives on in c2: nothing buried, and the S3 prefix is not swept.
    assert "dynamodb.update_item" not in script.methods() and "s3.list_objects_v2" not in script.methods()


@pytest.mark.parametrize("mode", MODES)
def test_reap_thread_of_a_dead_thread_buries_it_first_and_spares_new_objects(mode: str, now: Clock) -> None:
    w = Writer(ttl=TTL, bucket_name="bkt", s3_threshold=100)
    c0 = w.put("t1", {"a": "x"})
    saver, script = scripted_saver(mode, ttl=TTL, bucket_name="bkt", s3_threshold=100)
    prefix = saver.s3_thread_prefix("t1")
    script.when("query", {"Items": w.items("t1")})
    cutoff = T0 + TTL + 1
    script.when("list_objects_v2", _two(prefix, cutoff))
    now.t = cutoff + 100
    res = call(saver, "reap_thread", "t1", expired_before=cutoff)
    methods = script.methods()
    # Tombstone and head (one Gather) before the first delete; objects last.
    assert methods[:3] == ["dynamodb.query", "dynamodb.update_item", "dynamodb.update_item"]
    assert script.gathers[0] == (1, 2)
    tomb, head = script.calls("update_item")
    assert tomb.kwargs["Key"][ATTR.SK] == {"S": schema.tombstone_sk("")}
    assert tomb.kwargs["ExpressionAttributeValues"][":dr"] == {"SS": [f"{int(now.t)}:{cid_of(c0)}"]}
    assert head.kwargs["Key"][ATTR.SK] == {"S": schema.HEAD_SK}
    assert deleted(script) == [schema.checkpoint_sk("", cid_of(c0))]
    # Items first, then the objects they pointed to, then what no item pointed to.
    assert methods[-4:] == [
        "dynamodb.batch_write_item",
        "s3.delete_objects",
        "s3.list_objects_v2",
        "s3.delete_objects",
    ]
    owned, purge = script.calls("delete_objects")
    assert {o["Key"] for o in owned.kwargs["Delete"]["Objects"]} >= set(w.objects())
    assert purge.kwargs["Delete"]["Objects"] == [{"Key": prefix + "old"}]  # not the one written after
    assert res.s3_objects_deleted == len(owned.kwargs["Delete"]["Objects"]) + 1


def _two(prefix: str, cutoff: float) -> dict[str, Any]:
    """A listing of one object written before ``cutoff`` and one after."""
    old = listing([prefix + "old"], cutoff - 50)["Contents"]
    new = listing([prefix + "new"], cutoff + 50)["Contents"]
    return {"Contents": old + new}


# ---------------------------------------------------------- purge_expired


@pytest.mark.parametrize("mode", MODES)
def test_purge_expired_scans_the_threads_index_and_reaps_each_head(mode: str, now: Clock) -> None:
    w = Writer(ttl=TTL)
    w.put("t1", {"a": 1})
    w.put("t2", {"a": 1})
    h1, h2 = _head(w, "t1"), _head(w, "t2")
    now.t = T0 + 100 * TTL
    saver, script = scripted_saver(mode, ttl=TTL)
    more = {ATTR.PK: h1[ATTR.PK], ATTR.SK: h1[ATTR.SK]}
    script.when("scan", {"Items": [h1], "LastEvaluatedKey": more}, {"Items": [h2]})
    script.when("query", {"Items": w.items("t1")}, {"Items": w.items("t2")})
    report = call(saver, "purge_expired")
    script.assert_done()
    s1, s2 = script.calls("scan")
    assert (
        s1.kwargs["IndexName"] == schema.THREADS_INDEX_NAME and s1.kwargs["FilterExpression"] == "#ttl < :now"
    )
    assert s1.kwargs["ExpressionAttributeValues"] == {":now": {"N": str(int(now.t))}}
    assert "ExclusiveStartKey" not in s1.kwargs and s2.kwargs["ExclusiveStartKey"] == more
    # Page one's thread is reaped before page two is read.
    methods = script.methods()
    assert methods.index("dynamodb.query") < len(methods) - methods[::-1].index("dynamodb.scan") - 1
    assert [q.kwargs["ExpressionAttributeValues"][":pk"]["S"] for q in script.calls("query")] == ["t1", "t2"]
    assert report.complete and report.pages == 2 and report.threads_scanned == 2
    assert report.checkpoints_deleted == 2


@pytest.mark.parametrize("mode", MODES)
def test_purge_expired_stops_at_its_deadline(mode: str, now: Clock) -> None:
    saver, script = scripted_saver(mode, ttl=TTL)

    def page(c: Any) -> dict[str, Any]:
        now.t += 10  # reading a page takes time
        return {"Items": [], "LastEvaluatedKey": {ATTR.PK: {"S": "x"}, ATTR.SK: {"S": "y"}}}

    script.when("scan", *[page] * 10)
    report = call(saver, "purge_expired", deadline=T0 + 25)
    assert len(script.calls("scan")) == 3 and not report.complete and report.pages == 3


# -------------------------------------------------------------- run_pruner


def _pruner_table(now: Clock) -> tuple[Writer, dict[str, Any], dict[str, Any]]:
    w = Writer(ttl=TTL)
    for t in ("t1", "t2"):
        c = w.put(t, {"a": 0})
        w.put(t, {"a": 1}, {"a": "2"}, parent=c)
    return w, _head(w, "t1"), _head(w, "t2")


@pytest.mark.parametrize("mode", MODES)
def test_run_pruner_claims_each_page_with_a_conditional_write_before_working_on_it(
    mode: str, now: Clock
) -> None:
    w, h1, h2 = _pruner_table(now)
    saver, script = scripted_saver(mode, ttl=TTL)
    lek = {ATTR.PK: h2[ATTR.PK], ATTR.SK: h2[ATTR.SK]}
    cursor = json.dumps(lek)
    script.when("get_item", {}, {"Item": {"cur": {"S": cursor}, "last": {"S": "t2"}, "cyc": {"N": "0"}}})
    script.when("scan", {"Items": [h1, h2], "LastEvaluatedKey": lek}, {"Items": []})
    # Each thread is read once: the policy's look is what prune works on.
    t1, t2 = w.items("t1"), w.items("t2")
    script.when("query", {"Items": t1}, {"Items": t2})
    report = call(saver, "run_pruner", PrunePolicy(keep_last=1, page_size=2))
    script.assert_done()
    methods = script.methods()
    # cursor, page, claim, then the page's threads; again for the (empty) last page.
    assert methods[:3] == ["dynamodb.get_item", "dynamodb.scan", "dynamodb.put_item"]
    claim1, claim2 = script.calls("put_item")
    assert claim1.kwargs["ConditionExpression"] == "attribute_not_exists(cur) AND :old = :empty OR cur = :old"
    assert claim1.kwargs["ExpressionAttributeValues"][":old"] == {"S": ""}
    assert claim1.kwargs["Item"]["cur"] == {"S": cursor} and claim1.kwargs["Item"][ATTR.PK] == {
        "S": schema.LIFECYCLE_PK
    }
    assert claim2.kwargs["ExpressionAttributeValues"][":old"] == {"S": cursor}
    assert claim2.kwargs["Item"]["cur"] == {"S": ""} and claim2.kwargs["Item"]["cyc"] == {
        "N": "1"
    }  # the cycle ends
    s1, s2 = script.calls("scan")
    assert s1.kwargs["IndexName"] == schema.THREADS_INDEX_NAME and s1.kwargs["Limit"] == 2
    assert s2.kwargs["ExclusiveStartKey"] == lek
    first_query = methods.index("dynamodb.query")
    assert methods.index("dynamodb.put_item") < first_query  # claimed before working
    assert report.complete and report.pages == 2 and report.threads_scanned == 2
    assert report.checkpoints_deleted == 2 and len(deleted(script)) == 2


@pytest.mark.parametrize("mode", MODES)
def test_run_pruner_resumes_from_the_stored_cursor(mode: str, now: Clock) -> None:
    saver, script = scripted_saver(mode, ttl=TTL)
    lek = {ATTR.PK: {"S": "t9"}, ATTR.SK: {"S": schema.HEAD_SK}}
    script.when("get_item", {"Item": {"cur": {"S": json.dumps(lek)}, "last": {"S": "t9"}, "cyc": {"N": "4"}}})
    report = call(saver, "run_pruner", PrunePolicy(keep_last=1), max_pages=1)
    (scan,) = script.calls("scan")
    assert scan.kwargs["ExclusiveStartKey"] == lek
    (claim,) = script.calls("put_item")
    assert claim.kwargs["Item"]["cyc"] == {"N": "5"} and report.complete


@pytest.mark.parametrize("mode", MODES)
def test_run_pruner_skips_a_page_another_run_claimed(mode: str, now: Clock) -> None:
    w, h1, h2 = _pruner_table(now)
    saver, script = scripted_saver(mode, ttl=TTL)
    lek = {ATTR.PK: h1[ATTR.PK], ATTR.SK: h1[ATTR.SK]}
    script.when(
        "get_item", {}, {"Item": {"cur": {"S": json.dumps(lek)}, "last": {"S": "t1"}, "cyc": {"N": "0"}}}
    )
    script.when("scan", {"Items": [h1], "LastEvaluatedKey": lek}, {"Items": [h2]})
    script.when("put_item", _error("ConditionalCheckFailedException", "PutItem"), {})
    script.when("query", {"Items": w.items("t2")})
    report = call(saver, "run_pruner", PrunePolicy(keep_last=1, page_size=1))
    script.assert_done()
    # t1's page was lost to the other run: never loaded here.
    assert {q.kwargs["ExpressionAttributeValues"][":pk"]["S"] for q in script.calls("query")} == {"t2"}
    assert report.pages == 1 and report.threads_scanned == 1


@pytest.mark.parametrize("mode", MODES)
def test_run_pruner_stops_at_its_deadline_with_the_cursor_saved(mode: str, now: Clock) -> None:
    saver, script = scripted_saver(mode, ttl=TTL)
    lek = {ATTR.PK: {"S": "t1"}, ATTR.SK: {"S": schema.HEAD_SK}}

    def claim(c: Any) -> dict[str, Any]:
        now.t += 60
        return {}

    script.when("scan", {"Items": [], "LastEvaluatedKey": lek})
    script.when("put_item", claim)
    report = call(saver, "run_pruner", PrunePolicy(keep_last=1), deadline=T0 + 30)
    assert script.methods() == ["dynamodb.get_item", "dynamodb.scan", "dynamodb.put_item"]
    assert script.calls("put_item")[0].kwargs["Item"]["cur"] == {"S": json.dumps(lek)}
    assert not report.complete and report.pages == 1
    # Past the deadline already: not even the cursor is read.
    script.reset()
    call(saver, "run_pruner", PrunePolicy(keep_last=1), deadline=now.t)
    assert script.log == []


# ------------------------------------------------------------ sweep_orphans


@pytest.mark.parametrize("mode", MODES)
def test_sweep_orphans_deletes_old_unreferenced_objects_only(mode: str, now: Clock) -> None:
    w = Writer(bucket_name="bkt", s3_threshold=100)
    w.put("t1", {"a": "x" * 10, "big": noise(400)})
    referenced = sorted(w.objects())  # the value, the body: what the checkpoint points to
    saver, script = scripted_saver(mode, bucket_name="bkt", s3_threshold=100)
    orphan = saver.value_s3_key("t1", "", "big", "9")  # a put that failed after its upload
    young = saver.value_s3_key("t1", "", "big", "10")  # a put that may still be in flight
    old_at = T0 - 2 * 86_400
    page = {
        "Contents": listing([*referenced, orphan], old_at)["Contents"] + listing([young], T0 - 60)["Contents"]
    }
    page.update(IsTruncated=True, NextContinuationToken="tok")
    script.when("list_objects_v2", page)
    script.when("query", {"Items": w.items("t1")})
    report = call(saver, "sweep_orphans", max_pages=1)
    script.assert_done()
    assert script.methods() == [
        "dynamodb.get_item",
        "s3.list_objects_v2",
        "dynamodb.put_item",
        "dynamodb.query",
        "s3.delete_objects",
    ]
    (listed,) = script.calls("list_objects_v2")
    assert listed.kwargs == {"Bucket": "bkt", "Prefix": saver.s3_key_prefix, "MaxKeys": 1000}
    (claim,) = script.calls("put_item")
    assert claim.kwargs["Item"][ATTR.SK] == {"S": "sweeper"} and claim.kwargs["Item"]["cur"] == {"S": "tok"}
    (purge,) = script.calls("delete_objects")
    assert purge.kwargs["Delete"]["Objects"] == [{"Key": orphan}]
    assert (
        report.s3_objects_scanned == len(referenced) + 2
        and report.s3_objects_deleted == 1
        and not report.complete
    )


@pytest.mark.parametrize("mode", MODES)
def test_sweep_orphans_resumes_from_its_cursor_and_ignores_foreign_segments(mode: str, now: Clock) -> None:
    saver, script = scripted_saver(mode, bucket_name="bkt")
    script.when("get_item", {"Item": {"cur": {"S": "tok"}, "cyc": {"N": "2"}}})
    foreign = f"{saver.s3_key_prefix}not a thread segment/x"
    script.when("list_objects_v2", listing([foreign], T0 - 10 * 86_400))
    report = call(saver, "sweep_orphans")
    assert script.calls("list_objects_v2")[0].kwargs["ContinuationToken"] == "tok"
    assert script.methods() == ["dynamodb.get_item", "s3.list_objects_v2", "dynamodb.put_item"]
    assert report.complete and report.s3_objects_deleted == 0


@pytest.mark.parametrize("mode", MODES)
def test_sweep_orphans_without_a_bucket_makes_no_request(mode: str, now: Clock) -> None:
    saver, script = scripted_saver(mode)
    assert call(saver, "sweep_orphans").complete and script.log == []


# ------------------------------------------------------------------ setup


def _setup(saver: Any) -> None:
    if isinstance(saver, DynamoDBSaver):
        saver.setup()
    else:
        asyncio.run(saver.setup())


def _methods_without_sleep(script: Script) -> list[str]:
    return [m for m in script.methods() if m != "sleep"]


@pytest.mark.parametrize("mode", MODES)
def test_setup_creates_the_table_waits_for_it_then_ttl_then_bucket(mode: str) -> None:
    saver, script = scripted_saver(mode, bucket_name="bkt")
    script.when(
        "describe_table",
        _error("ResourceNotFoundException", "DescribeTable"),
        {"Table": {"TableStatus": "CREATING"}},
        {"Table": {"TableStatus": "ACTIVE"}},
    )
    script.when("describe_time_to_live", {"TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}})
    script.when("head_bucket", _error("404", "HeadBucket"))
    _setup(saver)
    script.assert_done()
    assert script.methods() == [
        "dynamodb.describe_table",
        "dynamodb.create_table",
        "dynamodb.describe_table",
        "sleep",
        "dynamodb.describe_table",
        "dynamodb.describe_time_to_live",
        "dynamodb.update_time_to_live",
        "s3.head_bucket",
        "s3.create_bucket",
    ]
    assert script.calls("create_table")[0].kwargs == schema.table_definition("tbl")
    ttl = script.calls("update_time_to_live")[0].kwargs
    assert ttl == {"TableName": "tbl", "TimeToLiveSpecification": schema.ttl_specification()}
    assert script.calls("create_bucket")[0].kwargs == {"Bucket": "bkt"}


@pytest.mark.parametrize("mode", MODES)
def test_setup_tolerates_another_process_creating_the_table_and_bucket_first(mode: str) -> None:
    saver, script = scripted_saver(mode, bucket_name="bkt")
    script.when(
        "describe_table",
        _error("ResourceNotFoundException", "DescribeTable"),
        {"Table": {"TableStatus": "ACTIVE"}},
    )
    script.when("create_table", _error("ResourceInUseException", "CreateTable"))
    script.when("describe_time_to_live", {"TimeToLiveDescription": {"TimeToLiveStatus": "ENABLING"}})
    script.when("head_bucket", _error("NoSuchBucket", "HeadBucket"))
    script.when("create_bucket", _error("BucketAlreadyOwnedByYou", "CreateBucket"))
    _setup(saver)
    script.assert_done()
    assert "dynamodb.update_time_to_live" not in script.methods()  # already on its way
    assert _methods_without_sleep(script)[-2:] == ["s3.head_bucket", "s3.create_bucket"]


@pytest.mark.parametrize("mode", MODES)
def test_setup_of_an_existing_store_only_reads(mode: str) -> None:
    saver, script = scripted_saver(mode, bucket_name="bkt")
    script.when("describe_table", {"Table": {"TableStatus": "ACTIVE"}}, {"Table": {"TableStatus": "ACTIVE"}})
    script.when("describe_time_to_live", {"TimeToLiveDescription": {"TimeToLiveStatus": "ENABLED"}})
    _setup(saver)
    assert script.methods() == [
        "dynamodb.describe_table",
        "dynamodb.describe_table",
        "dynamodb.describe_time_to_live",
        "s3.head_bucket",
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("method", "code"),
    [
        ("create_table", "AccessDeniedException"),
        ("create_bucket", "BucketAlreadyExists"),  # someone else's bucket of that name
        ("head_bucket", "403"),
    ],
)
def test_setup_lets_other_errors_through(mode: str, method: str, code: str) -> None:
    saver, script = scripted_saver(mode, bucket_name="bkt")
    script.when(
        "describe_table",
        _error("ResourceNotFoundException", "DescribeTable"),
        {"Table": {"TableStatus": "ACTIVE"}},
    )
    script.when("describe_time_to_live", {"TimeToLiveDescription": {"TimeToLiveStatus": "ENABLED"}})
    if method != "head_bucket":
        script.when("head_bucket", _error("404", "HeadBucket"))
    script.when(method, _error(code, "X"))
    with pytest.raises(ClientError) as info:
        _setup(saver)
    assert info.value.response["Error"]["Code"] == code
    assert script.methods()[-1] == f"{'dynamodb' if method == 'create_table' else 's3'}.{method}"
