"""Finding 2: tenant scopes are prefix-free, and disjoint from untenanted threads.

Tenant ``a``'s name is a prefix of tenant ``ab``'s. On the old layout
(``PK = escape(P + thread)``) tenant ``a``'s thread ``"b" + T`` *was* tenant
``ab``'s thread ``T`` (and the untenanted thread ``"ab" + T``), and the
grant ``LeadingKeys a*`` covered ``ab``'s partitions. Here the attacker is
tenant ``a``: its raw clients go through its grant as the construct writes
it (:class:`~tests.security.grant.TenantGrant`), and its saver runs the
library under that grant.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb.lifecycle import TTL_PRINCIPAL, PrunePolicy
from tests.security.grant import AccessDenied, TenantGrant
from tests.support.harness import Harness, cfg, checkpoint_of, new_thread

ATTR = schema.ATTR


@dataclass
class Tenants:
    h: Harness
    a: Any  # the attacker's saver, under tenant a's grant
    ab: Any
    plain: Any  # untenanted (the operator's)
    grant: TenantGrant
    thread: str  # tenant ab's thread T
    marker: str  # in every payload of ab's thread

    def put(self, saver: Any, thread: str, value: str, parent: str | None = None) -> str:
        cp = checkpoint_of({"v": value})
        self.h.call(
            "put", cfg(thread, "", parent), cp, {"v": value}, dict(cp["channel_versions"]), saver=saver
        )
        return str(cp["id"])

    def list(self, saver: Any, config: Any) -> list[Any]:
        if not self.h.is_async:
            return list(saver.list(config))

        async def collect() -> list[Any]:
            return [t async for t in saver.alist(config)]

        return self.h.loop.run(collect())  # type: ignore[no-any-return]

    def get(self, saver: Any, thread: str) -> Any:
        return self.h.call("get_tuple", cfg(thread), saver=saver)

    def objects(self, prefix: str) -> dict[str, bytes]:
        s3 = boto3.client("s3")
        out = {}
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=self.h.bucket_name, Prefix=prefix):
            for o in page.get("Contents", []):
                out[o["Key"]] = s3.get_object(Bucket=self.h.bucket_name, Key=o["Key"])["Body"].read()
        return out


@pytest.fixture(params=["sync-s3", "async-s3-encrypted"])
def tenants(
    request: pytest.FixtureRequest, moto_endpoint: str, names: dict[str, str], loop_thread: Any
) -> Iterator[Tenants]:
    h = Harness(request.param, names["table_name"], names["bucket_name"], loop_thread)
    grant = TenantGrant("a", h.table_name, names["bucket_name"])
    a = grant.attach_saver(h.make_saver(tenant_prefix="a", s3_threshold=0))
    ab = h.make_saver(tenant_prefix="ab", s3_threshold=0)
    t = Tenants(h, a, ab, h.saver, grant, new_thread(), f"AB-SECRET-{uuid.uuid4().hex}")
    t.put(ab, t.thread, t.marker)
    try:
        yield t
    finally:
        for saver in (a, ab):
            if h.is_async:
                h.loop.run(saver.aclose())
            else:
                saver.close()
        h.close()


def test_tenant_a_sees_nothing_of_tenant_ab(tenants: Tenants) -> None:
    t = tenants
    alias = "b" + t.thread  # ab's thread T, as tenant a could name it on the old layout
    assert t.get(t.a, alias) is None
    assert t.list(t.a, cfg(alias)) == []
    # ...and what a writes there stays a's.
    t.put(t.a, alias, "a's own")
    assert t.get(t.ab, t.thread).checkpoint["channel_values"] == {"v": t.marker}
    assert [x.checkpoint["channel_values"] for x in t.list(t.ab, cfg(t.thread))] == [{"v": t.marker}]
    for saver in (t.a, t.plain):
        assert saver.thread_id_of(t.ab.partition_key(t.thread)) is None
    assert t.ab.thread_id_of(t.a.partition_key(alias)) is None
    assert t.ab.thread_id_of(t.plain.partition_key("ab" + t.thread)) is None


def test_untenanted_threads_are_disjoint_from_tenants(tenants: Tenants) -> None:
    t = tenants
    alias = "ab" + t.thread  # the untenanted thread that was ab's T on the old layout
    t.put(t.plain, alias, "operator's own")
    assert [x.checkpoint["channel_values"] for x in t.list(t.plain, cfg(alias))] == [{"v": "operator's own"}]
    assert t.marker not in repr(t.list(t.plain, None))
    assert t.get(t.ab, t.thread).checkpoint["channel_values"] == {"v": t.marker}
    assert t.plain.thread_id_of(t.plain.partition_key(alias)) == alias


@pytest.mark.parametrize("who", ["a", "plain"])
def test_delete_thread_stays_in_its_scope(tenants: Tenants, who: str) -> None:
    t = tenants
    before = t.objects(t.ab.s3_thread_prefix(t.thread))
    assert before
    saver, alias = (t.a, "b" + t.thread) if who == "a" else (t.plain, "ab" + t.thread)
    t.put(saver, alias, "doomed")
    t.h.call("delete_thread", alias, saver=saver)
    t.h.call("prune", [alias], strategy="delete", saver=saver)
    assert t.get(t.ab, t.thread).checkpoint["channel_values"] == {"v": t.marker}
    assert t.objects(t.ab.s3_thread_prefix(t.thread)) == before


def test_tenant_a_grant_does_not_reach_tenant_ab(tenants: Tenants) -> None:
    t = tenants
    ddb = t.grant.attach(boto3.client("dynamodb"))
    s3 = t.grant.attach(boto3.client("s3"))
    pk = t.ab.partition_key(t.thread)
    with pytest.raises(AccessDenied):
        ddb.query(
            TableName=t.h.table_name,
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": {"S": pk}},
        )
    prefix = t.ab.s3_thread_prefix(t.thread)
    with pytest.raises(AccessDenied):
        s3.list_objects_v2(Bucket=t.h.bucket_name, Prefix=prefix)
    key = next(iter(t.objects(prefix)))
    with pytest.raises(AccessDenied):
        s3.get_object(Bucket=t.h.bucket_name, Key=key)
    with pytest.raises(AccessDenied):
        s3.delete_object(Bucket=t.h.bucket_name, Key=key)
    # The attacker's own keys are within its grant (the hook is not just denying).
    own = t.a.partition_key(t.thread)
    ddb.query(
        TableName=t.h.table_name,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": own}},
    )
    s3.list_objects_v2(Bucket=t.h.bucket_name, Prefix=t.a.s3_thread_prefix(t.thread))


@pytest.mark.parametrize("tenants", ["sync-s3"], indirect=True)  # run_once with the sync saver
def test_lease_bound_writes_stay_in_the_tenants_scope(tenants: Tenants) -> None:
    """A fenced write checks the lock item in the thread's own partition: inside the tenant's grant."""
    from langgraph.checkpoint.dynamodb.lock import run_once

    t = tenants
    thread = new_thread()
    outcome = run_once(t.a, thread, "r-1", None, lambda ctx: t.put(ctx.saver, thread, "fenced"))
    assert t.get(t.a, thread).checkpoint["id"] == outcome.value
    # A transaction's ConditionCheck is authorized like any item action: not on ab's lock.
    ddb = t.grant.attach(boto3.client("dynamodb"))
    check = {
        "ConditionCheck": {
            "TableName": t.h.table_name,
            "Key": {ATTR.PK: {"S": t.ab.partition_key(t.thread)}, ATTR.SK: {"S": schema.LOCK_SK}},
            "ConditionExpression": "attribute_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": ATTR.PK},
        }
    }
    own = {
        "Put": {
            "TableName": t.h.table_name,
            "Item": {ATTR.PK: {"S": t.a.partition_key(thread)}, ATTR.SK: {"S": "x"}},
        }
    }
    with pytest.raises(AccessDenied, match="touch partition"):
        ddb.transact_write_items(TransactItems=[check, own])


@pytest.mark.parametrize("tenants", ["sync-s3"], indirect=True)  # the CLI runs the sync saver
def test_cli_thread_listing_is_scoped(tenants: Tenants) -> None:
    from tests.cli.test_cli import run_json

    t = tenants
    t.put(t.a, "a-own", "a")
    t.put(t.plain, "ab" + t.thread, "plain")
    conn = ["--table", t.h.table_name, "--bucket", t.h.bucket_name]

    def threads(*extra: str) -> list[str]:
        return sorted(x["thread_id"] for x in run_json(*conn, *extra, "threads")["threads"])

    assert threads("--tenant-prefix", "a") == ["a-own"]
    assert threads("--tenant-prefix", "ab") == [t.thread]
    assert threads() == ["ab" + t.thread]


def test_maintenance_keeps_tenants_apart(tenants: Tenants) -> None:
    """The operator's untenanted pruner, reaper and sweeper reach every tenant, each on its own.

    All three scopes have a thread of the same name, with two checkpoints.
    A guard for the new layout (maintenance maps partitions to tenants now):
    on the old layout these threads had distinct keys too, so it passed there.
    """
    t = tenants
    name = new_thread()
    scopes = {"a": t.a, "ab": t.ab, "": t.plain}
    for tag, saver in scopes.items():
        parent = t.put(saver, name, f"{tag}:1")
        t.put(saver, name, f"{tag}:2", parent)
    # An orphan in ab's thread prefix (a put that failed after its upload).
    orphan = t.ab.s3_thread_prefix(name) + "_/c/orphan/body"
    boto3.client("s3").put_object(Bucket=t.h.bucket_name, Key=orphan, Body=b"x")

    report = t.h.call("run_pruner", PrunePolicy(keep_last=1), saver=t.plain)
    assert report.checkpoints_deleted == 3
    for tag, saver in scopes.items():
        assert [x.checkpoint["channel_values"] for x in t.list(saver, cfg(name))] == [{"v": f"{tag}:2"}]

    # The reaper trusts the table, not the record: a's thread must have expired by its own
    # activity stamps (these savers have no TTL; stamp a's checkpoints as expired ones are).
    ddb = boto3.client("dynamodb")
    expired = {"N": str(int(time.time()) - 60)}
    for it in ddb.query(
        TableName=t.h.table_name,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": t.a.partition_key(name)}},
    )["Items"]:
        if it.get(ATTR.KIND, {}).get("S") == schema.CHECKPOINT_ITEM:
            ddb.update_item(
                TableName=t.h.table_name,
                Key={ATTR.PK: it[ATTR.PK], ATTR.SK: it[ATTR.SK]},
                UpdateExpression="SET #e = :e",
                ExpressionAttributeNames={"#e": ATTR.EXPIRES},
                ExpressionAttributeValues={":e": expired},
            )
    event = {
        "Records": [
            {
                "eventName": "REMOVE",
                "userIdentity": {"type": "Service", "principalId": TTL_PRINCIPAL},
                "dynamodb": {
                    "Keys": {ATTR.PK: {"S": t.a.partition_key(name)}, ATTR.SK: {"S": schema.HEAD_SK}},
                    "ApproximateCreationDateTime": 4_000_000_000,
                },
            }
        ]
    }
    t.h.call("reap_expired_stream", event, saver=t.plain)
    assert t.get(t.a, name) is None
    assert t.get(t.ab, name).checkpoint["channel_values"] == {"v": "ab:2"}
    assert t.get(t.plain, name).checkpoint["channel_values"] == {"v": ":2"}

    t.h.call("sweep_orphans", grace_seconds=-60, saver=t.plain)
    assert orphan not in t.objects(t.ab.s3_thread_prefix(name))
    assert t.get(t.ab, name).checkpoint["channel_values"] == {"v": "ab:2"}
    assert t.get(t.ab, t.thread).checkpoint["channel_values"] == {"v": t.marker}
    assert t.get(t.plain, name).checkpoint["channel_values"] == {"v": ":2"}


def test_migrate_tenant_thread_moves_an_old_layout_thread(tenants: Tenants) -> None:
    """The old layout kept tenant P's thread T where an untenanted saver keeps ``P + T``."""
    t = tenants
    operator = t.h.make_saver(s3_threshold=0)  # untenanted, every payload in S3
    try:
        _migrate(t, operator)
    finally:
        if t.h.is_async:
            t.h.loop.run(operator.aclose())
        else:
            operator.close()


def _migrate(t: Tenants, operator: Any) -> None:
    old_name = "ab" + (name := new_thread())
    first = t.put(operator, old_name, "old:1")
    second = t.put(operator, old_name, "old:2", first)
    t.h.call("put_writes", cfg(old_name, "", second), [("v", "pending")], "task-1", saver=operator)
    old_prefix = operator.s3_thread_prefix(old_name)
    assert t.objects(old_prefix)

    t.h.call("migrate_tenant_thread", "ab", name, saver=operator)
    got = t.get(t.ab, name)
    assert got.checkpoint["channel_values"] == {"v": "old:2"}
    assert got.pending_writes == [("task-1", "v", "pending")]
    assert [x.checkpoint["id"] for x in t.list(t.ab, cfg(name))] == [second, first]
    assert t.get(operator, old_name) is None and t.objects(old_prefix) == {}
    assert t.objects(t.ab.s3_thread_prefix(name))
    # Re-running is harmless; the tenant's other thread is untouched.
    t.h.call("migrate_tenant_thread", "ab", name, saver=operator)
    assert t.get(t.ab, name).checkpoint["channel_values"] == {"v": "old:2"}
    assert t.get(t.ab, t.thread).checkpoint["channel_values"] == {"v": t.marker}
    # A tenant saver cannot run it, and a diverged new thread is never overwritten.
    with pytest.raises(ValueError, match="untenanted"):
        t.h.call("migrate_tenant_thread", "ab", name, saver=t.ab)
    t.put(operator, old_name, "old again")
    with pytest.raises(ValueError, match="different thread"):
        t.h.call("migrate_tenant_thread", "ab", name, saver=operator)
