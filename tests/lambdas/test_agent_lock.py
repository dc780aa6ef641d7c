"""``lock``: lease locks, request idempotency and staleness, sync and async, on a moto server."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb.lock import (
    ANY_CHECKPOINT,
    AsyncThreadLease,
    LeaseLostError,
    LeaseUnavailableError,
    ResultNotStoredError,
    StaleCheckpointError,
    ThreadLease,
    arun_once,
    check_checkpoint,
    get_request,
    run_once,
)
from langgraph.checkpoint.dynamodb.schema import ATTR


@pytest.fixture
def saver(moto_endpoint: str, names: dict[str, str]) -> Iterator[DynamoDBSaver]:
    with DynamoDBSaver(**names) as s:
        s.setup()
        yield s


def _thread() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def _item(saver: DynamoDBSaver, thread_id: str, sk: str) -> dict[str, Any] | None:
    resp = saver.clients["dynamodb"].get_item(
        TableName=saver.table_name,
        Key={ATTR.PK: {"S": schema.partition_key(thread_id)}, ATTR.SK: {"S": sk}},
        ConsistentRead=True,
    )
    return resp.get("Item")  # type: ignore[no-any-return]


def _checkpoint(saver: DynamoDBSaver, thread_id: str, cid: str, parent: str | None = None) -> str:
    from langgraph.checkpoint.base import empty_checkpoint

    cp = empty_checkpoint()
    cp["id"] = cid
    conf: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if parent:
        conf["checkpoint_id"] = parent
    saver.put({"configurable": conf}, cp, {"source": "input", "step": -1}, {})
    return cid


# ------------------------------------------------------------------ leases


def test_lease_excludes_other_owners_until_released(saver: DynamoDBSaver) -> None:
    t = _thread()
    a = ThreadLease(saver, t, lease_seconds=30, heartbeat=False)
    b = ThreadLease(saver, t, lease_seconds=30, heartbeat=False)
    info = a.acquire()
    assert info.owner == a.owner and info.expires_at > time.time() + 25 and info.token == 1
    with pytest.raises(LeaseUnavailableError) as err:
        b.acquire()
    assert err.value.holder == a.owner
    assert err.value.expires_at == pytest.approx(info.expires_at, abs=0.01)
    assert b.release() is False  # never held
    assert a.release() is True
    released = _item(saver, t, schema.LOCK_SK)
    # Released, not deleted: no owner, and the fencing count stays.
    assert released is not None and ATTR.OWNER not in released and released[ATTR.FENCE] == {"N": "1"}
    with b:
        assert b.held
        assert b.info is not None and b.info.token == 2  # the count goes on
    assert not b.held


def test_lock_item_carries_format_and_thread_and_no_ttl(saver: DynamoDBSaver) -> None:
    t = _thread()
    with ThreadLease(saver, t, lease_seconds=20, heartbeat=False) as lease:
        item = _item(saver, t, schema.LOCK_SK)
        assert item is not None
        assert item[ATTR.FORMAT] == {"N": str(schema.BASE_FORMAT_VERSION)}
        assert item[ATTR.KIND] == {"S": schema.META_ITEM}
        assert item[ATTR.THREAD_ID] == {"S": t}
        assert lease.info is not None
        # No TTL: DynamoDB removing the item would restart the fencing count.
        assert schema.TTL_ATTRIBUTE not in item
        # Not a thread head: it must stay out of the threads index.
        assert ATTR.THREAD_SHARD not in item and ATTR.UPDATED_AT not in item


def test_expired_lease_is_taken_over_and_old_owner_loses_it(saver: DynamoDBSaver) -> None:
    t = _thread()
    old = ThreadLease(saver, t, lease_seconds=0.3, heartbeat=False)
    old.acquire()
    new = ThreadLease(saver, t, lease_seconds=30, wait_seconds=5, poll_seconds=0.05, heartbeat=False)
    began = time.monotonic()
    info = new.acquire()
    assert time.monotonic() - began < 3
    assert info.owner == new.owner and info.token == 2  # fencing token moved on
    with pytest.raises(LeaseLostError):
        old.renew()
    assert old.lost
    assert old.release() is False
    assert new.release() is True


def test_same_owner_reacquires_and_renews(saver: DynamoDBSaver) -> None:
    t = _thread()
    lease = ThreadLease(saver, t, lease_seconds=5, heartbeat=False, owner="worker-1")
    first = lease.acquire()
    again = lease.acquire()  # re-entrant for the same owner token
    assert again.owner == "worker-1" and again.token == first.token + 1
    time.sleep(0.05)
    renewed = lease.renew()
    assert renewed.expires_at > first.expires_at
    lease.release()


def test_heartbeat_keeps_a_long_holder_alive(saver: DynamoDBSaver) -> None:
    t = _thread()
    with ThreadLease(saver, t, lease_seconds=0.6) as lease:
        time.sleep(1.5)  # more than twice the lease
        with pytest.raises(LeaseUnavailableError):
            ThreadLease(saver, t, heartbeat=False).acquire()
        assert lease.held
    without = ThreadLease(saver, t, lease_seconds=0.3, heartbeat=False)
    without.acquire()
    time.sleep(0.5)
    ThreadLease(saver, t, heartbeat=False).acquire()  # expired: taken over


def test_lease_with_a_plain_client(saver: DynamoDBSaver) -> None:
    client = boto3.client("dynamodb")
    with pytest.raises(ValueError, match="table_name"):
        ThreadLease(client, "t")
    with ThreadLease(client, _thread(), table_name=saver.table_name, heartbeat=False) as lease:
        assert lease.held


def test_meta_items_do_not_break_the_saver(saver: DynamoDBSaver) -> None:
    """The core reads every item of a thread; lock and request items must pass its checks."""
    t = _thread()
    cid = _checkpoint(saver, t, "1f0c0000-0000-6000-8000-000000000001")
    out = run_once(saver, t, "r1", cid, lambda: {"ok": True})
    assert out.value == {"ok": True}
    with ThreadLease(saver, t, heartbeat=False):
        listed = list(saver.list({"configurable": {"thread_id": t}}))  # all namespaces: whole partition
        assert [c.config["configurable"]["checkpoint_id"] for c in listed] == [cid]
        assert list(saver.list(None))
    saver.delete_thread(t)
    assert _item(saver, t, schema.request_sk("r1")) is None


# ---------------------------------------------------------------- run_once


def test_run_once_replays_the_first_result(saver: DynamoDBSaver) -> None:
    t = _thread()
    cid = _checkpoint(saver, t, "1f0c0000-0000-6000-8000-000000000001")
    calls: list[int] = []

    def work() -> dict[str, Any]:
        calls.append(1)
        return {"answer": 42, "items": [1, 2, 3]}

    first = run_once(saver, t, "req", cid, work)
    second = run_once(saver, t, "req", "some-other-id", work)  # staleness is not re-checked
    assert (first.replayed, second.replayed) == (False, True)
    assert first.value == second.value == {"answer": 42, "items": [1, 2, 3]}
    assert len(calls) == 1
    rec = get_request(saver, t, "req")
    assert rec is not None
    assert (rec.status, rec.attempts, rec.start_checkpoint_id, rec.result_stored) == ("done", 1, cid, True)
    item = _item(saver, t, schema.request_sk("req"))
    assert item is not None and item[ATTR.FORMAT] == {"N": str(schema.BASE_FORMAT_VERSION)}
    assert schema.TTL_ATTRIBUTE in item
    lock_item = _item(saver, t, schema.LOCK_SK)
    assert lock_item is not None and ATTR.OWNER not in lock_item  # released


def test_run_once_rejects_stale_and_new_thread_expectations(saver: DynamoDBSaver) -> None:
    t = _thread()
    first = _checkpoint(saver, t, "1f0c0000-0000-6000-8000-000000000001")
    second = _checkpoint(saver, t, "1f0c0000-0000-6000-8000-000000000002", parent=first)
    ran: list[str] = []
    with pytest.raises(StaleCheckpointError) as err:
        run_once(saver, t, "r-stale", first, lambda: ran.append("x"))
    assert (err.value.expected, err.value.actual) == (first, second)
    with pytest.raises(StaleCheckpointError):
        run_once(saver, t, "r-new", None, lambda: ran.append("x"))
    assert ran == []
    assert get_request(saver, t, "r-stale") is None  # nothing recorded for a refused request
    assert run_once(saver, t, "r-any", ANY_CHECKPOINT, lambda: "ok").value == "ok"
    assert run_once(saver, _thread(), "r-fresh", None, lambda: "new").value == "new"
    assert check_checkpoint(saver, t, second) == second


def test_failed_attempt_is_retried_and_recovered(saver: DynamoDBSaver) -> None:
    t = _thread()
    cid = _checkpoint(saver, t, "1f0c0000-0000-6000-8000-000000000001")

    def boom() -> None:
        # The failed attempt moved the thread before failing.
        _checkpoint(saver, t, "1f0c0000-0000-6000-8000-000000000002", parent=cid)
        raise RuntimeError("half-way")

    with pytest.raises(RuntimeError, match="half-way"):
        run_once(saver, t, "r", cid, boom)
    rec = get_request(saver, t, "r")
    assert rec is not None and rec.status == "failed" and "half-way" in (rec.error or "")
    out = run_once(saver, t, "r", cid, lambda: "second try")
    assert (out.value, out.recovered, out.replayed) == ("second try", True, False)
    # Another request id against the old checkpoint is stale, though.
    with pytest.raises(StaleCheckpointError):
        run_once(saver, t, "r-other", cid, lambda: "no")


def test_large_results_are_not_stored(saver: DynamoDBSaver) -> None:
    t = _thread()
    big = "x" * 5000
    out = run_once(saver, t, "r", ANY_CHECKPOINT, lambda: big, max_result_bytes=1000)
    assert out.value == big
    rec = get_request(saver, t, "r")
    assert (
        rec is not None and rec.status == "done" and not rec.result_stored and (rec.result_size or 0) > 5000
    )
    with pytest.raises(ResultNotStoredError, match="not stored"):
        run_once(saver, t, "r", ANY_CHECKPOINT, lambda: big)
    with pytest.raises(ValueError):
        run_once(saver, t, "r2", ANY_CHECKPOINT, lambda: 1, max_result_bytes=10**7)


def test_busy_thread_and_clock_injection(saver: DynamoDBSaver) -> None:
    t = _thread()
    now = [time.time()]
    holder = ThreadLease(saver, t, lease_seconds=60, heartbeat=False, clock=lambda: now[0])
    holder.acquire()
    with pytest.raises(LeaseUnavailableError) as busy:
        run_once(saver, t, "r", ANY_CHECKPOINT, lambda: 1, wait_seconds=0)
    assert busy.value.retry_after is not None and 0 < busy.value.retry_after <= 60
    # A caller whose wall clock is past the holder's expiry does NOT take the
    # lock over: expiry is judged by watching the lock's version, not clocks.
    later = now[0] + 120
    with pytest.raises(LeaseUnavailableError):
        run_once(saver, t, "r", ANY_CHECKPOINT, lambda: 2, wait_seconds=0, clock=lambda: later)
    assert holder.release() is True
    assert run_once(saver, t, "r", ANY_CHECKPOINT, lambda: 2, wait_seconds=0, clock=lambda: later).value == 2


def test_invalid_arguments(saver: DynamoDBSaver) -> None:
    with pytest.raises(ValueError):
        ThreadLease(saver, "")
    with pytest.raises(ValueError):
        ThreadLease(saver, "t", lease_seconds=0)
    with pytest.raises(ValueError):
        run_once(saver, "t", "", ANY_CHECKPOINT, lambda: 1)
    with pytest.raises(ValueError):
        run_once(saver, "t", "r" * 2000, ANY_CHECKPOINT, lambda: 1)


# ------------------------------------------------------------------- async


async def test_async_lease_and_run_once(moto_endpoint: str, names: dict[str, str]) -> None:
    async with AsyncDynamoDBSaver(**names) as saver:
        await saver.setup()
        t = _thread()
        a = AsyncThreadLease(saver, t, lease_seconds=0.6)
        async with a:
            await asyncio.sleep(1.4)  # the heartbeat keeps it
            with pytest.raises(LeaseUnavailableError):
                await AsyncThreadLease(saver, t, heartbeat=False).acquire()
        assert not a.held

        calls: list[int] = []

        async def work() -> str:
            calls.append(1)
            await asyncio.sleep(0.3)
            return "done once"

        # Two concurrent requests with one id on one event loop: one runs.
        results = await asyncio.gather(
            arun_once(saver, t, "req", ANY_CHECKPOINT, work, wait_seconds=5),
            arun_once(saver, t, "req", ANY_CHECKPOINT, work, wait_seconds=5),
        )
        assert [r.value for r in results] == ["done once", "done once"]
        assert sorted(r.replayed for r in results) == [False, True]
        assert calls == [1]

        with pytest.raises(StaleCheckpointError):
            await arun_once(saver, t, "req-2", "1f0c0000-0000-6000-8000-00000000dead", work)
        old = AsyncThreadLease(saver, t, lease_seconds=0.2, heartbeat=False)
        await old.acquire()
        await asyncio.sleep(0.3)
        taken = AsyncThreadLease(saver, t, heartbeat=False)
        await taken.acquire()
        with pytest.raises(LeaseLostError):
            await old.renew()
        assert await old.release() is False
        assert await taken.release() is True


def test_tenant_prefixed_saver_keeps_meta_items_in_the_tenant_partition(
    moto_endpoint: str, names: dict[str, str]
) -> None:
    with DynamoDBSaver(**names, tenant_prefix="acme-") as saver:
        saver.setup()
        t = _thread()
        cid = _checkpoint(saver, t, "1f0c0000-0000-6000-8000-000000000001")
        assert run_once(saver, t, "r1", cid, lambda: "ok").value == "ok"
        with ThreadLease(saver, t, heartbeat=False):
            lock = _item_at(saver, schema.partition_key(t, "acme-"), schema.LOCK_SK)
            assert lock is not None and lock[ATTR.THREAD_ID] == {"S": t}
        assert _item_at(saver, schema.partition_key(t, "acme-"), schema.request_sk("r1")) is not None
        assert _item_at(saver, schema.partition_key(t), schema.request_sk("r1")) is None
        # a plain client reaches the same lock when told the tenant prefix
        client = boto3.client("dynamodb")
        with ThreadLease(saver, t, heartbeat=False), pytest.raises(LeaseUnavailableError):
            ThreadLease(
                client, t, table_name=saver.table_name, tenant_prefix="acme-", heartbeat=False
            ).acquire()
        assert get_request(saver, t, "r1") is not None


def _item_at(saver: DynamoDBSaver, pk: str, sk: str) -> dict[str, Any] | None:
    resp = saver.clients["dynamodb"].get_item(
        TableName=saver.table_name, Key={ATTR.PK: {"S": pk}, ATTR.SK: {"S": sk}}, ConsistentRead=True
    )
    return resp.get("Item")  # type: ignore[no-any-return]


def test_lock_items_of_earlier_versions_are_watched_by_owner_and_expiry(saver: DynamoDBSaver) -> None:
    """No ``rvn``/``ld`` (written before record versions): watched for ``lx - la``, then taken over."""
    t = _thread()
    now_ms = int(time.time() * 1000)
    saver.clients["dynamodb"].put_item(
        TableName=saver.table_name,
        Item={
            ATTR.PK: {"S": schema.partition_key(t)},
            ATTR.SK: {"S": schema.LOCK_SK},
            ATTR.KIND: {"S": schema.META_ITEM},
            ATTR.FORMAT: {"N": str(schema.BASE_FORMAT_VERSION)},
            "own": {"S": "old-version-worker"},
            "la": {"N": str(now_ms - 60_000)},
            "lx": {"N": str(now_ms - 59_000)},  # a 1 s lease, long expired by the wall clock
            "fen": {"N": "4"},
        },
    )
    lease = ThreadLease(saver, t, lease_seconds=0.5, wait_seconds=5, poll_seconds=0.05, heartbeat=False)
    began = time.monotonic()
    info = lease.acquire()
    assert 1.0 <= time.monotonic() - began < 4  # watched for lx - la = 1 s, not trusted at once
    assert info.token == 5 and info.owner == lease.owner
    assert lease.release() is True


def test_bound_copies_share_the_savers_clients_and_pool(saver: DynamoDBSaver) -> None:
    """A bound copy per request must not leave a thread pool (or clients) behind."""
    from langgraph.checkpoint.dynamodb._engine.ops import Gather, ddb

    t = _thread()
    with ThreadLease(saver, t, heartbeat=False) as lease:
        bound = lease.bind()
        assert type(bound).__name__ == "LeaseBoundDynamoDBSaver" and isinstance(bound, DynamoDBSaver)
        assert all(bound.clients[name] is saver.clients[name] for name in ("dynamodb", "s3"))
        # One driver, so one pool: the copy's concurrent calls run on the saver's.
        assert bound.driver is saver.driver
        calls = [ddb("describe_table", TableName=saver.table_name)] * 2
        assert len(bound.driver.gather(Gather(calls))) == 2
        pool = saver.driver.pool
        assert pool is not None
        rebound = lease.bind(bound)
        assert type(rebound) is type(bound)
        bound.close()  # closing a copy leaves the saver's clients (and pool) open
        assert saver.driver.pool is pool
        saver.clients["dynamodb"].describe_table(TableName=saver.table_name)
    with pytest.raises(LeaseLostError):
        lease.bind()  # released: nothing to bind to


def test_holder_learns_at_its_next_heartbeat_that_it_lost(saver: DynamoDBSaver) -> None:
    t = _thread()
    old = ThreadLease(saver, t, lease_seconds=0.5, heartbeat=False)
    old.acquire()
    new = ThreadLease(saver, t, lease_seconds=30, wait_seconds=5, poll_seconds=0.05, heartbeat=False)
    new.acquire()  # watched old's version for 0.5 s
    with pytest.raises(LeaseLostError):
        old.renew()
    assert old.lost and not old.held
    assert old.release() is False  # a stale holder cannot release the new holder's lock
    assert new.held and new.release() is True


def test_lease_is_held_only_while_observed_time_allows(saver: DynamoDBSaver) -> None:
    lease = ThreadLease(saver, _thread(), lease_seconds=0.3, heartbeat=False)
    lease.acquire()
    assert lease.held
    time.sleep(0.35)
    assert not lease.held  # judged on our monotonic clock from when we sent the acquisition
    lease.release()
