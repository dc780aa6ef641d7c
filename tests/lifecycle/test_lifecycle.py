"""Thread lifecycle under moto: TTL expiry (simulated as DynamoDB would do it),
the reaper, pruner and orphan-sweeper Lambdas called directly with realistic events.
"""

from __future__ import annotations

import importlib
import threading
import time
from typing import Any

import boto3
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.dynamodb import DynamoDBSaver, clock, schema
from langgraph.checkpoint.dynamodb.lambdas.handlers import reset_saver
from langgraph.checkpoint.dynamodb.lifecycle import PrunePolicy
from tests.support.graphs import chat_graph
from tests.support.harness import cfg, new_thread, s3_objects, scan_table

TTL = 600


class FakeClock:
    """Moves the library's clock; botocore keeps real time for signing."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.offset = 0.0
        monkeypatch.setattr(clock, "now", lambda: time.time() + self.offset)

    def advance(self, seconds: float) -> None:
        self.offset += seconds


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    return FakeClock(monkeypatch)


@pytest.fixture
def store(moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    saver = DynamoDBSaver(**names, ttl=TTL, s3_threshold=2048)
    saver.setup()
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TABLE", names["table_name"])
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_BUCKET", names["bucket_name"])
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TTL_SECONDS", str(TTL))
    reset_saver()
    yield {"saver": saver, **names}
    reset_saver()


def handler(name: str) -> Any:
    """The handler the construct deploys (``cdk.MAINTENANCE_HANDLERS``), from the package."""
    return importlib.import_module(f"langgraph.checkpoint.dynamodb.lambdas.{name}").handler


def simulate_ttl(table: str) -> dict[str, Any]:
    """Delete what DynamoDB's TTL would (TTL attribute in the past) and return
    the matching stream event, as the reaper Lambda receives it."""
    now = clock.now()
    ddb = boto3.client("dynamodb")
    records = []
    for it in scan_table(table):
        if schema.TTL_ATTRIBUTE in it and float(it[schema.TTL_ATTRIBUTE]["N"]) < now:
            key = {"PK": it["PK"], "SK": it["SK"]}
            ddb.delete_item(TableName=table, Key=key)
            records.append(
                {
                    "eventID": f"ttl-{len(records)}",
                    "eventName": "REMOVE",
                    "eventSource": "aws:dynamodb",
                    "awsRegion": "us-east-1",
                    "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
                    "dynamodb": {
                        "ApproximateCreationDateTime": now,
                        "Keys": key,
                        "StreamViewType": "KEYS_ONLY",
                    },
                }
            )
    # A user's own delete in the same batch must not trigger a reap.
    records.append(
        {
            "eventName": "REMOVE",
            "userIdentity": None,
            "dynamodb": {"Keys": {"PK": {"S": "x"}, "SK": {"S": schema.HEAD_SK}}},
        }
    )
    return {"Records": records}


def chat(saver: Any, thread: str, turns: range) -> Any:
    graph = chat_graph(delta=True, snapshot_frequency=2).compile(checkpointer=saver)
    for i in turns:
        graph.invoke({"messages": [f"user {i}"]}, cfg(thread))
    return graph


def thread_items(table: str, thread: str) -> list[dict[str, Any]]:
    """A thread's items, except what a delete keeps on purpose so that it is final:
    tombstones and the retired head (dead lineages only: no TTL, not in the index)."""
    return [
        it
        for it in scan_table(table)
        if it["PK"]["S"] == schema.partition_key(thread) and not _deletion_record(it)
    ]


def _deletion_record(it: dict[str, Any]) -> bool:
    if it["SK"]["S"].endswith(schema.TOMBSTONE_MARK):
        return True
    retired = {"PK", "SK", "t", "f", "thr", schema.ATTR.DEAD}
    return it["SK"]["S"] == schema.HEAD_SK and set(it) <= retired


def test_idle_thread_expires_whole_and_active_thread_survives(
    store: dict[str, Any], fake_clock: FakeClock
) -> None:
    saver, table, bucket = store["saver"], store["table_name"], store["bucket_name"]
    idle, active = new_thread(), new_thread()
    big = "incompressible? no: " + "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(3000))
    chat(saver, idle, range(3))
    saver.put_writes(saver.get_tuple(cfg(idle)).config, [("messages", big)], "t-big")  # an S3-spilled write
    chat(saver, active, range(3))
    # The active thread keeps working for longer than the TTL; the idle one doesn't.
    for k in range(4):
        fake_clock.advance(TTL / 2)
        chat(saver, active, range(3 + k, 4 + k))
    graph = chat_graph(delta=True, snapshot_frequency=2).compile(checkpointer=saver)
    before = {
        t.config["configurable"]["checkpoint_id"]: graph.get_state(t.config).values
        for t in saver.list(cfg(active))
    }
    first = min(before)
    assert saver.get_tuple(cfg(active, checkpoint_id=first)).checkpoint["id"] == first
    fake_clock.advance(TTL / 2)
    assert any(k.startswith(schema.s3_thread_prefix("checkpoints/", idle)) for k in s3_objects(bucket))

    event = simulate_ttl(table)
    # DynamoDB deleted only the idle thread's head: reads already see it gone.
    assert [r["dynamodb"]["Keys"]["PK"]["S"] for r in event["Records"][:-1]] == [schema.partition_key(idle)]
    assert saver.get_tuple(cfg(idle)) is None and list(saver.list(cfg(idle))) == []
    assert thread_items(table, idle), "items are still there until the reaper runs"

    out = handler("reaper")(event, None)
    assert out["threads_scanned"] == 1 and out["checkpoints_deleted"] > 0
    assert thread_items(table, idle) == []
    assert not any(k.startswith(schema.s3_thread_prefix("checkpoints/", idle)) for k in s3_objects(bucket))
    # The active thread, whose first checkpoint is older than the TTL, is whole.
    after = {
        t.config["configurable"]["checkpoint_id"]: graph.get_state(t.config).values
        for t in saver.list(cfg(active))
    }
    assert after == before
    # Reaping the same event again is a no-op.
    again = handler("reaper")(event, None)
    assert again["checkpoints_deleted"] == 0


def test_expired_thread_coming_back_starts_clean(store: dict[str, Any], fake_clock: FakeClock) -> None:
    saver, table = store["saver"], store["table_name"]
    thread = new_thread()
    chat(saver, thread, range(2))
    fake_clock.advance(TTL * 3)  # expired; TTL has not run yet
    fresh = DynamoDBSaver(table_name=table, bucket_name=store["bucket_name"], ttl=TTL)
    graph = chat(fresh, thread, range(5, 6))
    values = graph.get_state(cfg(thread)).values
    assert values["messages"][0] == "user 5", "the expired history must not leak into the new one"
    assert len(list(fresh.list(cfg(thread)))) == 3
    assert all(
        int(it.get("exp", {"N": "0"})["N"]) > clock.now()
        for it in thread_items(table, thread)
        if it["t"]["S"] in ("c", "w")
    )


def test_a_copy_starts_its_own_lease(store: dict[str, Any], fake_clock: FakeClock) -> None:
    """``copy_thread`` gives the copy a thread head of its own: the copy lives
    a full TTL from the copy, although its items carry the source's stamps."""
    saver, table = store["saver"], store["table_name"]
    source, target = new_thread(), new_thread()
    graph = chat(saver, source, range(3))
    want = graph.get_state(cfg(source)).values
    fake_clock.advance(TTL * 0.9)
    saver.copy_thread(source, target)
    fake_clock.advance(TTL * 0.5)  # the source has expired; the copy has not
    fresh = DynamoDBSaver(table_name=table, bucket_name=store["bucket_name"], ttl=TTL)
    assert fresh.get_tuple(cfg(source)) is None
    assert (
        chat_graph(delta=True, snapshot_frequency=2).compile(checkpointer=fresh).get_state(cfg(target)).values
        == want
    )
    # When the copy's own head expires, the reaper takes the whole copy.
    fake_clock.advance(TTL * 2)
    handler("reaper")(simulate_ttl(table), None)
    assert thread_items(table, target) == [] and fresh.get_tuple(cfg(target)) is None


def test_purge_expired_without_streams(store: dict[str, Any], fake_clock: FakeClock) -> None:
    saver, table = store["saver"], store["table_name"]
    a, b = new_thread(), new_thread()
    chat(saver, a, range(2))
    fake_clock.advance(TTL * 2)
    chat(saver, b, range(2))
    report = saver.purge_expired()
    assert report.threads_deleted == 1 and report.complete
    assert thread_items(table, a) == [] and thread_items(table, b)


def test_pruner_resumes_across_invocations_without_missing_or_repeating(
    store: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    saver = store["saver"]
    threads = [new_thread() for _ in range(7)]
    for t in threads:
        chat(saver, t, range(4))
    monkeypatch.setenv("PRUNE_KEEP_LAST", "2")
    monkeypatch.setenv("PRUNE_PAGE_SIZE", "2")
    monkeypatch.setenv("TIME_BUDGET_SECONDS", "0")
    stopped = handler("pruner")({"source": "aws.events", "detail-type": "Scheduled Event"}, None)
    assert stopped["pages"] == 0 and stopped["complete"] is False  # no time: stops cleanly
    scanned = 0
    runs = 0
    while True:
        report = saver.run_pruner(PrunePolicy(keep_last=2, page_size=2), max_pages=1)
        runs += 1
        scanned += report.threads_scanned
        if report.complete:
            break
    assert runs == 4 and scanned == len(threads)
    graph = chat_graph(delta=True, snapshot_frequency=2).compile(checkpointer=InMemorySaver())
    for i in range(4):
        graph.invoke({"messages": [f"user {i}"]}, cfg("oracle"))
    expected = graph.get_state(cfg("oracle")).values
    g = chat_graph(delta=True, snapshot_frequency=2).compile(checkpointer=saver)
    for t in threads:
        kept = list(saver.list(cfg(t)))
        assert 2 <= len(kept) < 12
        assert g.get_state(cfg(t)).values == expected


def test_every_pruner_cycle_visits_every_thread(store: dict[str, Any]) -> None:
    """The thread that ended one cycle's last page is on the next cycle's first page: pruned again, not skipped."""
    saver = store["saver"]
    thread = new_thread()  # alone in the table: the last thread of every cycle
    for cycle in range(3):
        chat(saver, thread, range(3 * cycle, 3 * cycle + 3))
        report = saver.run_pruner(PrunePolicy(keep_last=1))
        assert report.complete and report.threads_scanned == 1, f"cycle {cycle}: {report}"
        assert len(list(saver.list(cfg(thread)))) == 1


def test_pruner_deletes_idle_threads(store: dict[str, Any], fake_clock: FakeClock) -> None:
    saver, table = store["saver"], store["table_name"]
    old, recent = new_thread(), new_thread()
    chat(saver, old, range(2))
    fake_clock.advance(3 * 86_400)
    chat(saver, recent, range(2))
    report = saver.run_pruner(PrunePolicy(idle_days=2))
    assert report.threads_deleted == 1 and report.complete
    assert thread_items(table, old) == [] and thread_items(table, recent)


def test_orphan_sweep_respects_grace_and_references(
    store: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    saver, bucket = store["saver"], store["bucket_name"]
    thread = new_thread()
    chat(saver, thread, range(1))
    big = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(3000))
    saver.put_writes(saver.get_tuple(cfg(thread)).config, [("messages", big)], "t-big")
    referenced = set(s3_objects(bucket))
    assert referenced
    s3 = boto3.client("s3")
    prefix = schema.s3_thread_prefix("checkpoints/", thread)
    # S3 stamps objects with real time (to the second, at worst), so the
    # sweeper's "now" is pinned around those stamps rather than read while
    # the machine may be slow: the test decides nothing by how fast it runs.
    began = time.time()
    now = [began]
    monkeypatch.setattr(clock, "now", lambda: now[0])
    s3.put_object(Bucket=bucket, Key=prefix + "_/c/x/w/t/0.orphan-old", Body=b"lost")
    gone = new_thread()  # a thread whose items are gone but whose object remains
    s3.put_object(Bucket=bucket, Key=schema.s3_thread_prefix("checkpoints/", gone) + "_/v/x/1", Body=b"lost")
    old_stamped_by = time.time()
    monkeypatch.setenv("ORPHAN_GRACE_HOURS", str(2 / 3600))
    young = handler("orphan_sweeper")({"source": "aws.events"}, None)  # now = began: nothing is 2 s old
    assert young["s3_objects_deleted"] == 0 and young["complete"]  # all younger than the grace
    time.sleep(3)
    s3.put_object(Bucket=bucket, Key=prefix + "_/c/x/w/t/1.orphan-young", Body=b"new")  # stamped >= old + 2 s
    now[0] = (
        old_stamped_by + 3
    )  # cutoff (now - grace) = old + 1 s: past the old orphans, before the young one
    out = handler("orphan_sweeper")({"source": "aws.events"}, None)
    left = set(s3_objects(bucket))
    assert out["s3_objects_deleted"] == 2
    assert referenced <= left and prefix + "_/c/x/w/t/1.orphan-young" not in referenced
    assert prefix + "_/c/x/w/t/1.orphan-young" in left
    assert saver.get_tuple(cfg(thread)).pending_writes[-1][2] == big


def test_pruner_in_parallel_with_a_running_graph(store: dict[str, Any]) -> None:
    saver = store["saver"]
    thread = new_thread()
    graph = chat_graph(delta=True, snapshot_frequency=2).compile(checkpointer=saver)
    errors: list[BaseException] = []
    stop = threading.Event()

    def prune_loop() -> None:
        while not stop.is_set():
            try:
                saver.prune([thread], keep_last=2)
            except BaseException as exc:
                errors.append(exc)
                return

    pruner = threading.Thread(target=prune_loop)
    pruner.start()
    try:
        for i in range(12):
            graph.invoke({"messages": [f"user {i}"]}, cfg(thread))
    finally:
        stop.set()
        pruner.join()
    assert not errors
    oracle = chat_graph(delta=True, snapshot_frequency=2).compile(checkpointer=InMemorySaver())
    for i in range(12):
        oracle.invoke({"messages": [f"user {i}"]}, cfg("o"))
    assert graph.get_state(cfg(thread)).values == oracle.get_state(cfg("o")).values
    expected = {s.metadata["step"]: s.values for s in oracle.get_state_history(cfg("o"))}
    for snap in graph.get_state_history(cfg(thread)):
        assert snap.values == expected[snap.metadata["step"]]


def test_concurrent_pruners_claim_disjoint_pages(store: dict[str, Any]) -> None:
    saver = store["saver"]
    threads = [new_thread() for _ in range(6)]
    for t in threads:
        chat(saver, t, range(3))
    reports: list[Any] = []

    def run() -> None:
        other = DynamoDBSaver(table_name=store["table_name"], bucket_name=store["bucket_name"], ttl=TTL)
        reports.append(other.run_pruner(PrunePolicy(keep_last=1, page_size=1)))

    workers = [threading.Thread(target=run) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    # Each page was claimed by one run: every thread examined exactly once.
    assert sum(r.threads_scanned for r in reports) == len(threads)
    assert all(r.complete for r in reports)  # the cycle is done; neither started another
    for t in threads:
        assert len(list(saver.list(cfg(t)))) < 9
