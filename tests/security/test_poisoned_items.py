"""Poisoned items: one tenant's forged items must not stop maintenance or listings for everyone.

The attacker is tenant ``a``. It writes only its own partition, through a
raw client held to its grant (:class:`~tests.security.grant.TenantGrant`):
a thread head whose activity time or TTL is a Number the library never
writes (``1.5``), a writes item whose value is retyped, an item with a
foreign sort key. The victims are tenant ``victim``'s threads and the
operator. Before the fix, each of these stopped a table-wide job (the
pruner, the expired purge, the orphan sweeper) at the attacker's thread on
every run, or broke the thread listing of every tenant (``ValueError``,
``KeyError``); readers of the attacker's own thread raised non-library
errors. Each test here failed on that code, but one:
``test_service_errors_still_stop_a_job`` pins the edge of the isolation
(the service's own errors still stop a run, so that it is retried).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import (
    CheckpointStoreError,
    CorruptPayloadError,
    DynamoDBSaver,
    clock,
    schema,
)
from langgraph.checkpoint.dynamodb.cli import main as cli_main
from langgraph.checkpoint.dynamodb.cli._thread_listing import list_threads
from langgraph.checkpoint.dynamodb.cli._ui import page_threads
from langgraph.checkpoint.dynamodb.lifecycle import PrunePolicy
from tests.security.grant import TenantGrant
from tests.support.harness import Harness, cfg, new_thread

ATTR = schema.ATTR


def _chain(saver: Any, thread: str, n: int) -> list[str]:
    """``n`` checkpoints in a row, each with one task's write; their ids."""
    parent: str | None = None
    ids = []
    for i in range(n):
        cp = empty_checkpoint()
        cp["id"] = str(uuid6(clock_seq=-1))
        cp["channel_values"] = {"x": f"step {i}"}
        cp["channel_versions"] = {"x": str(i + 1)}
        stored = saver.put(cfg(thread, "", parent), cp, {}, {"x": str(i + 1)})
        parent = stored["configurable"]["checkpoint_id"]
        saver.put_writes(stored, [("x", f"w{i}")], "task-1")
        ids.append(str(parent))
    return ids


def _count(saver: Any, thread: str) -> int:
    return len(list(saver.list(cfg(thread))))


@dataclass
class Store:
    names: dict[str, str]
    operator: DynamoDBSaver  # untenanted, with thread heads: as the construct's functions run
    victim: DynamoDBSaver
    attacker: DynamoDBSaver  # tenant a's saver, under its grant
    raw: Any  # tenant a's raw DynamoDB client, under its grant

    @property
    def table(self) -> str:
        return self.names["table_name"]

    def forge_head(self, thread: str, **attrs: dict[str, str]) -> None:
        """A thread head of the attacker's, written raw: shard 0, so it sits in every tenant's index page."""
        item = {
            ATTR.PK: {"S": self.attacker.partition_key(thread)},
            ATTR.SK: {"S": schema.HEAD_SK},
            ATTR.KIND: {"S": "m"},
            ATTR.FORMAT: {"N": "1"},
            ATTR.THREAD_ID: {"S": thread},
            ATTR.THREAD_SHARD: {"S": "0"},
            ATTR.UPDATED_AT: {"N": str(int(time.time() * 1000))},
            **attrs,
        }
        self.raw.put_item(TableName=self.table, Item=item)


@pytest.fixture
def store(moto_endpoint: str, names: dict[str, str]) -> Iterator[Store]:
    operator = DynamoDBSaver(**names, ttl=3600, s3_threshold=0)
    operator.setup()
    victim = DynamoDBSaver(**names, ttl=3600, tenant_prefix="victim", s3_threshold=0)
    grant = TenantGrant("a", names["table_name"], names["bucket_name"])
    attacker = grant.attach_saver(DynamoDBSaver(**names, ttl=3600, tenant_prefix="a", s3_threshold=0))
    raw = grant.attach(boto3.client("dynamodb"))
    yield Store(names, operator, victim, attacker, raw)
    for saver in (operator, victim, attacker):
        saver.close()


@pytest.mark.parametrize("value", ["1.5", "1e3", "-0.25"])
def test_a_forged_head_time_does_not_stop_the_pruner(store: Store, value: str) -> None:
    victims = [new_thread() for _ in range(3)]
    for t in victims:
        _chain(store.victim, t, 4)
    store.forge_head("evil", **{ATTR.UPDATED_AT: {"N": value}})
    report = store.operator.run_pruner(PrunePolicy(keep_last=1))
    assert report.complete
    assert {t: _count(store.victim, t) for t in victims} == dict.fromkeys(victims, 1)


def test_a_malformed_item_is_recorded_and_the_page_goes_on(store: Store) -> None:
    """The attacker's own thread is skipped and named; every other thread on the page is pruned."""
    victims = [new_thread() for _ in range(6)]
    for t in victims:
        _chain(store.victim, t, 4)
    ids = _chain(store.attacker, "evil", 3)
    store.raw.update_item(
        TableName=store.table,
        Key={
            ATTR.PK: {"S": store.attacker.partition_key("evil")},
            ATTR.SK: {"S": schema.writes_sk("", ids[0], "task-1")},
        },
        UpdateExpression="SET w0 = :v",
        ExpressionAttributeValues={":v": {"S": "garbage"}},
    )
    for _ in range(2):  # and again: the next run is not stopped either
        report = store.operator.run_pruner(PrunePolicy(keep_last=1, page_size=100))
        assert report.complete
        assert len(report.errors) == 1 and "'evil'" in report.errors[0]
        assert "CorruptPayloadError" in report.errors[0]
    assert {t: _count(store.victim, t) for t in victims} == dict.fromkeys(victims, 1)
    # The tenant's own prune names the item, as a library error.
    with pytest.raises(CorruptPayloadError, match="malformed item"):
        store.attacker.prune(["evil"], keep_last=1)


def test_a_forged_head_ttl_does_not_stop_the_expired_purge(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    victims = [new_thread() for _ in range(2)]
    for t in victims:
        _chain(store.victim, t, 3)
    # Below now, so the purge's filter matches it; DynamoDB's own TTL
    # skips timestamps that old, so it would stay forever.
    store.forge_head("evil", **{ATTR.TTL: {"N": "0.5"}})
    monkeypatch.setattr(clock, "now", lambda: time.time() + 10 * 86_400)  # the victims' heads expired
    report = store.operator.purge_expired()
    monkeypatch.setattr(clock, "now", time.time)
    assert report.complete
    assert report.threads_deleted == 2
    assert [e for e in report.errors if "'evil'" in e and "TTL" in e] == report.errors != []
    assert [_count(store.victim, t) for t in victims] == [0, 0]


def test_a_foreign_item_does_not_stop_the_orphan_sweeper(store: Store) -> None:
    thread = new_thread()
    _chain(store.victim, thread, 1)
    s3 = boto3.client("s3")
    orphan = store.victim.s3_thread_prefix(thread) + "_/v/x/orphan-version"  # a lost write's object
    s3.put_object(Bucket=store.names["bucket_name"], Key=orphan, Body=b"orphan")
    _chain(store.attacker, "evil", 1)  # objects under the attacker's prefix, so the sweeper visits it
    store.raw.put_item(
        TableName=store.table,
        Item={
            ATTR.PK: {"S": store.attacker.partition_key("evil")},
            ATTR.SK: {"S": "junk"},
            ATTR.FORMAT: {"N": "1"},
        },
    )
    report = store.operator.sweep_orphans(grace_seconds=0)
    assert report.complete
    assert len(report.errors) == 1 and "'evil'" in report.errors[0]
    assert "Contents" not in s3.list_objects_v2(Bucket=store.names["bucket_name"], Prefix=orphan)
    # What the victim's checkpoint references is still there.
    assert store.victim.get_tuple(cfg(thread)).checkpoint["channel_values"] == {"x": "step 0"}


def test_a_poisoned_thread_does_not_keep_delete_for_runs_from_the_others(store: Store) -> None:
    """The run index lists every tenant's items of a run: the attacker's, poisoned, comes first (by key)."""
    run = f"run-{uuid.uuid4()}"
    victim_thread = new_thread()
    for saver, thread in ((store.victim, victim_thread), (store.attacker, "evil")):
        cp = empty_checkpoint()
        cp["id"] = str(uuid6(clock_seq=-1))
        saver.put(cfg(thread), cp, {"run_id": run}, {})
    store.raw.put_item(
        TableName=store.table,
        Item={
            ATTR.PK: {"S": store.attacker.partition_key("evil")},
            ATTR.SK: {"S": "junk"},
            ATTR.FORMAT: {"N": "1"},
        },
    )
    assert store.attacker.partition_key("evil") < store.victim.partition_key(victim_thread)
    with pytest.raises(CorruptPayloadError, match=r"1 thread\(s\).*'evil'"):
        store.operator.delete_for_runs([run])
    assert store.victim.get_tuple(cfg(victim_thread)) is None  # deleted, as asked


def test_service_errors_still_stop_a_job(store: Store) -> None:
    """Isolation is for what a thread's items cause: a denied or failing service stops the run (and it retries)."""
    from botocore.exceptions import ClientError

    _chain(store.victim, new_thread(), 2)

    def deny(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "denied"}}, "Query")

    store.operator.clients["dynamodb"].meta.events.register("before-call.dynamodb.Query", deny)
    with pytest.raises(ClientError, match="AccessDenied"):
        store.operator.run_pruner(PrunePolicy(keep_last=1))


@pytest.mark.parametrize("value", ["1.5", "9" * 30])
def test_a_forged_head_does_not_break_anyone_s_thread_listing(store: Store, value: str, capsys: Any) -> None:
    thread = new_thread()
    _chain(store.victim, thread, 2)
    store.forge_head("evil", **{ATTR.UPDATED_AT: {"N": value}, ATTR.TTL: {"N": value}})
    assert [t["thread_id"] for t in list_threads(store.victim)["threads"]] == [thread]
    operator_rows = list_threads(store.operator)["threads"]
    assert isinstance(operator_rows, list)
    assert thread in page_threads(store.victim, {})
    code = cli_main(["--table", store.table, "--tenant-prefix", "victim", "threads"])
    assert code == 0 and thread in capsys.readouterr().out
    # The operator looking at tenant a's threads sees the forged head, and no crash.
    inspector = DynamoDBSaver(**store.names, tenant_prefix="a")
    assert [t["thread_id"] for t in list_threads(inspector)["threads"]] == ["evil"]
    code = cli_main(["--table", store.table, "--tenant-prefix", "a", "threads"])
    assert code == 0 and "evil" in capsys.readouterr().out
    inspector.close()


def test_the_scan_listing_skips_what_is_not_a_thread_s(moto_endpoint: str, names: dict[str, str]) -> None:
    """Without thread heads the listing scans: a foreign sort key, and the jobs' own cursor items, are skipped."""
    saver = DynamoDBSaver(**names, s3_threshold=0)
    saver.setup()
    thread = new_thread()
    _chain(saver, thread, 2)
    saver.sweep_orphans(grace_seconds=86_400)  # writes the sweeper's cursor item (partition "|lifecycle")
    grant = TenantGrant("a", names["table_name"], names["bucket_name"])
    grant.attach(boto3.client("dynamodb")).put_item(
        TableName=names["table_name"],
        Item={ATTR.PK: {"S": schema.tenant_partition_prefix("a") + "evil"}, ATTR.SK: {"S": "junk"}},
    )
    victim = DynamoDBSaver(**names, tenant_prefix="victim", s3_threshold=0)
    vthread = new_thread()
    _chain(victim, vthread, 1)
    listed = list_threads(saver)
    assert listed["source"] == "scan"
    assert [t["thread_id"] for t in listed["threads"]] == [thread]
    assert [t["thread_id"] for t in list_threads(victim)["threads"]] == [vthread]
    saver.close()
    victim.close()


def _retype(
    h: Harness, thread: str, sk: str, expr: str, values: dict[str, Any], names: dict[str, str] | None = None
) -> None:
    kwargs: dict[str, Any] = {"ExpressionAttributeNames": names} if names else {}
    boto3.client("dynamodb").update_item(
        TableName=h.table_name,
        Key={ATTR.PK: {"S": h.saver.partition_key(thread)}, ATTR.SK: {"S": sk}},
        UpdateExpression=expr,
        ExpressionAttributeValues=values,
        **kwargs,
    )


DAMAGE = {
    "format is 1.5": lambda h, t, ids: _retype(
        h, t, schema.checkpoint_sk("", ids[-1]), "SET f = :v", {":v": {"N": "1.5"}}
    ),
    "format is a string": lambda h, t, ids: _retype(
        h, t, schema.checkpoint_sk("", ids[-1]), "SET f = :v", {":v": {"S": "1"}}
    ),
    "expiry stamp is 1.5": lambda h, t, ids: _retype(
        h, t, schema.checkpoint_sk("", ids[-1]), "SET #e = :v", {":v": {"N": "1.5"}}, {"#e": ATTR.EXPIRES}
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_readers_report_forged_numbers_as_library_errors(harness: Harness, damage: str) -> None:
    """``get_tuple`` and ``list`` raise ``CorruptPayloadError`` naming the item, not ``ValueError``/``KeyError``."""
    thread = new_thread()
    parent: str | None = None
    ids = []
    for i in range(2):
        cp = empty_checkpoint()
        cp["id"] = str(uuid6(clock_seq=-1))
        cp["channel_values"] = {"x": i}
        cp["channel_versions"] = {"x": str(i + 1)}
        stored = harness.call("put", cfg(thread, "", parent), cp, {}, {"x": str(i + 1)})
        parent = stored["configurable"]["checkpoint_id"]
        ids.append(str(parent))
    DAMAGE[damage](harness, thread, ids)
    with harness.other_saver() as reader:
        for call in (
            lambda: harness.call("get_tuple", cfg(thread), saver=reader),
            lambda: harness.list(cfg(thread), saver=reader),
        ):
            with pytest.raises(CheckpointStoreError) as info:
                call()
            assert isinstance(info.value, CorruptPayloadError)
            assert ids[-1] in str(info.value)


def test_a_write_attribute_that_only_looks_numeric_is_not_a_write(harness: Harness) -> None:
    """``"w²"``: ``str.isdigit`` says yes, ``int`` says no; it is not an attribute the library writes."""
    thread = new_thread()
    cp = empty_checkpoint()
    cp["id"] = str(uuid6(clock_seq=-1))
    stored = harness.call("put", cfg(thread), cp, {}, {})
    harness.call("put_writes", stored, [("x", "real")], "task-1")
    sk = schema.writes_sk("", cp["id"], "task-1")
    client = boto3.client("dynamodb")
    key = {ATTR.PK: {"S": harness.saver.partition_key(thread)}, ATTR.SK: {"S": sk}}
    item = client.get_item(TableName=harness.table_name, Key=key)["Item"]
    _retype(harness, thread, sk, "SET #w = :v", {":v": item["w0"]}, {"#w": "w\u00b2"})
    with harness.other_saver() as reader:
        got = harness.call("get_tuple", cfg(thread), saver=reader)
    assert [w[1:] for w in got.pending_writes] == [("x", "real")]
