"""Finding 3: a worker paused past its lease must not land writes, nor be told it succeeded.

The attacker here is adversity: a worker frozen (SIGSTOP: a GC pause, CPU
starvation, a frozen Lambda sandbox) while it holds a thread's lease. Another
worker takes the thread over and writes; then the frozen one is thawed and
carries on as if nothing happened. Its checkpoint and pending writes must be
refused (``LeaseLostError``) and must not be in the table, and ``run_once``
must not report success to it; with the same request id the work runs once.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver, lock, schema
from langgraph.checkpoint.dynamodb._engine.ops import ddb
from langgraph.checkpoint.dynamodb._parts.shapes import item_size
from langgraph.checkpoint.dynamodb.base import write_item
from langgraph.checkpoint.dynamodb.lock import (
    ANY_CHECKPOINT,
    AsyncThreadLease,
    LeaseLostError,
    ThreadLease,
    run_once,
)
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.security import _workers
from tests.security._workers import FENCED, cfg, checkpoint

ROOT = Path(__file__).resolve().parents[2]
LEASE = 2.0  # seconds: short, so a takeover takes ~2 s of watching


@pytest.fixture
def saver(moto_endpoint: str, names: dict[str, str]) -> Iterator[DynamoDBSaver]:
    with DynamoDBSaver(table_name=names["table_name"]) as s:
        s.setup()
        yield s


def _spawn(scenario: str, args: dict[str, Any]) -> subprocess.Popen[str]:
    # The caller's PYTHONPATH first: the worker runs the same library code as the test.
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, str(ROOT / "src"), str(ROOT)])}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.security._workers", scenario, json.dumps(args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def _line(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        raise AssertionError(f"worker said nothing; stderr: {proc.stderr.read() if proc.stderr else ''}")
    return json.loads(line)  # type: ignore[no-any-return]


def _wait_stopped(proc: subprocess.Popen[str]) -> None:
    _, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), status


def _takeover(saver: DynamoDBSaver, thread_id: str) -> ThreadLease:
    lease = ThreadLease(
        saver, thread_id, lease_seconds=30, wait_seconds=15, poll_seconds=0.1, heartbeat=False
    )
    lease.acquire()
    return lease


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_paused_holder_cannot_land_a_checkpoint_or_writes(saver: DynamoDBSaver, mode: str) -> None:
    t = f"t-{uuid.uuid4().hex[:8]}"
    cp1, cp3, task = str(uuid6()), str(uuid6()), "task-stale"
    args = {
        "mode": mode,
        "table": saver.table_name,
        "thread": t,
        "lease": LEASE,
        "cp1": cp1,
        "cp3": cp3,
        "task": task,
    }
    proc = _spawn("paused_holder", args)
    try:
        assert _line(proc)["result"] == "ready"
        os.kill(proc.pid, signal.SIGSTOP)  # frozen while holding the lease (heartbeat too)

        new = _takeover(saver, t)
        writer = new.bind() if FENCED else saver
        cp2 = str(uuid6())
        writer.put(cfg(t, parent=cp1), checkpoint(cp2), {"source": "loop", "step": 0}, {})

        os.kill(proc.pid, signal.SIGCONT)
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        got = _line(proc)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.wait()

    assert got == {"result": "done", "put": "lost", "put_writes": "lost", "renew": "lost"}, got
    # Read the table: nothing of the paused worker's landed after the takeover.
    assert saver.get_tuple(cfg(t, parent=cp3)) is None
    latest = saver.get_tuple(cfg(t))
    assert latest is not None and latest.checkpoint["id"] == cp2
    at_cp1 = saver.get_tuple(cfg(t, parent=cp1))
    assert at_cp1 is not None and all(w[0] != task for w in at_cp1.pending_writes)
    new.release()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_paused_run_once_worker_gets_no_success_and_the_work_runs_once(
    saver: DynamoDBSaver, tmp_path: Path, mode: str
) -> None:
    t = f"t-{uuid.uuid4().hex[:8]}"
    parent = str(uuid6())
    saver.put(cfg(t), checkpoint(parent), {"source": "input", "step": -1}, {})
    counter = tmp_path / "side-effects"
    base = {
        "table": saver.table_name,
        "thread": t,
        "request": "req-1",
        "parent": parent,
        "counter": str(counter),
    }
    proc = _spawn(
        "run_once", {**base, "mode": mode, "lease": LEASE, "who": "paused", "pause_before_commit": True}
    )
    try:
        assert _line(proc)["result"] == "pausing"
        _wait_stopped(proc)  # frozen inside its work, before committing anything

        # The client retries the same request; it lands on another worker.
        def work(ctx: Any = None) -> str:
            return _workers._work_body(ctx.saver if ctx is not None else saver, base, "retry")

        kwargs: dict[str, Any] = {"wait_seconds": 15}
        if FENCED:
            kwargs["recover"] = _recover_from_state
        out = run_once(
            saver, t, "req-1", ANY_CHECKPOINT, (lambda ctx: work(ctx)) if FENCED else work, **kwargs
        )
        assert out.value == "result of retry"

        os.kill(proc.pid, signal.SIGCONT)
        paused = _line(proc)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.wait()

    assert paused == {"result": "lost"}, paused  # never "success"
    assert counter.read_text().splitlines() == ["retry"]  # the work ran once
    latest = saver.get_tuple(cfg(t))
    assert latest is not None and latest.metadata.get("request_id") == "req-1"
    assert len(list(saver.list(cfg(t)))) == 2  # the paused worker's checkpoint never landed
    again = run_once(saver, t, "req-1", ANY_CHECKPOINT, lambda: "must not run")
    assert (again.value, again.replayed) == ("result of retry", True)


def _recover_from_state(ctx: Any) -> str | None:
    latest = ctx.saver.get_tuple(ctx.config())
    return "result of retry" if latest is not None and ctx.wrote(latest.metadata) else None


def test_done_record_of_a_lost_lease_is_refused(saver: DynamoDBSaver) -> None:
    """In-process: the lease is taken over while the work runs; run_once raises instead of succeeding."""
    t = f"t-{uuid.uuid4().hex[:8]}"

    def work() -> str:
        # Another owner takes the thread over (as after our lease ran out):
        # rewrite the lock item as the new holder's.
        saver.clients["dynamodb"].update_item(
            TableName=saver.table_name,
            Key={ATTR.PK: {"S": saver.partition_key(t)}, ATTR.SK: {"S": schema.LOCK_SK}},
            UpdateExpression="SET #o = :o ADD #fen :one",
            ExpressionAttributeNames={"#o": "own", "#fen": "fen"},
            ExpressionAttributeValues={":o": {"S": "new-holder"}, ":one": {"N": "1"}},
        )
        return "stale success"

    with pytest.raises(LeaseLostError):
        run_once(saver, t, "req", ANY_CHECKPOINT, work)
    rec = lock.get_request(saver, t, "req")
    assert rec is not None and rec.status != "done"


def test_bound_saver_refuses_other_threads_and_keeps_the_writes_own_conditions(saver: DynamoDBSaver) -> None:
    t = f"t-{uuid.uuid4().hex[:8]}"
    with ThreadLease(saver, t, heartbeat=False) as lease:
        bound = lease.bind()
        with pytest.raises(ValueError, match="cannot write elsewhere"):
            bound.put(cfg("another-thread"), checkpoint(), {"source": "input", "step": -1}, {})
        # A condition of the write itself still surfaces as the plain call's error.
        call = ddb(
            "put_item",
            TableName=saver.table_name,
            Item={ATTR.PK: {"S": saver.partition_key(t)}, ATTR.SK: {"S": "x"}},
            ConditionExpression="attribute_exists(#pk)",
            ExpressionAttributeNames={"#pk": ATTR.PK},
        )
        with pytest.raises(ClientError) as err:
            bound.driver.run(write_item(bound, call))
        assert err.value.response["Error"]["Code"] == "ConditionalCheckFailedException"


# ------------------------------------------------------------ cost, measured


def _wcu(item: dict[str, Any] | None) -> int:
    """Write units of one plain write of ``item`` (1 per started KB; DynamoDB's rule)."""
    return max(1, math.ceil(item_size(item or {}) / 1024))


def _get(saver: DynamoDBSaver, pk: str, sk: str) -> dict[str, Any] | None:
    resp = saver.clients["dynamodb"].get_item(
        TableName=saver.table_name, Key={ATTR.PK: {"S": pk}, ATTR.SK: {"S": sk}}, ConsistentRead=True
    )
    return resp.get("Item")  # type: ignore[no-any-return]


def _measure(saver: DynamoDBSaver, thread_id: str, writer: Any) -> dict[str, Any]:
    """Requests sent by one put and one put_writes through ``writer``, and the items they wrote."""
    client = saver.clients["dynamodb"]
    seen: list[str] = []

    def after(model: Any, **_: Any) -> None:
        seen.append(model.name)

    client.meta.events.register("after-call.dynamodb", after)
    try:
        cp = checkpoint()
        cp["channel_values"] = {"messages": "x" * 900}
        cp["channel_versions"] = {"messages": "1"}
        put_cfg = writer.put(cfg(thread_id), cp, {"source": "input", "step": -1}, {"messages": "1"})
        put = list(seen)
        writer.put_writes(put_cfg, [("messages", "y" * 900)], "task-1")
        writes = seen[len(put) :]
    finally:
        client.meta.events.unregister("after-call.dynamodb", after)
    pk = saver.partition_key(thread_id)
    return {
        "put": put,
        "put_writes": writes,
        "put_item": _get(saver, pk, schema.checkpoint_sk("", cp["id"])),
        "writes_item": _get(saver, pk, schema.writes_sk("", cp["id"], "task-1")),
    }


def test_fenced_put_and_put_writes_stay_one_request(saver: DynamoDBSaver) -> None:
    """Plain vs lease-bound, same item sizes: one request each. The capacity (printed with -s)
    follows DynamoDB's rules from the item sizes: a transactional write bills 2x the item's
    write units, plus the ConditionCheck of the lock item."""
    plain = _measure(saver, f"t-{uuid.uuid4().hex[:8]}", saver)
    t = f"t-{uuid.uuid4().hex[:8]}"
    with ThreadLease(saver, t, heartbeat=False) as lease:
        fenced = _measure(saver, t, lease.bind())
        lock_item = _get(saver, saver.partition_key(t), schema.LOCK_SK)
    assert plain["put"] == ["PutItem"] and plain["put_writes"] == ["PutItem"]
    assert fenced["put"] == ["TransactWriteItems"] and fenced["put_writes"] == ["TransactWriteItems"]
    for kind in ("put_item", "writes_item"):
        assert abs(item_size(plain[kind]) - item_size(fenced[kind])) < 64  # same sizes compared
    check = 2 * _wcu(lock_item)
    print(
        f"\nlock item {item_size(lock_item or {})} B; "
        f"put: checkpoint item {item_size(plain['put_item'] or {})} B, "
        f"plain 1 request {_wcu(plain['put_item'])} WCU, "
        f"fenced 1 request {2 * _wcu(fenced['put_item']) + check} WCU; "
        f"put_writes: writes item {item_size(plain['writes_item'] or {})} B, "
        f"plain 1 request {_wcu(plain['writes_item'])} WCU, "
        f"fenced 1 request {2 * _wcu(fenced['writes_item']) + check} WCU"
    )


# ------------------------------------------------ the fencing token only grows


def _lock_item(saver: DynamoDBSaver, thread_id: str) -> dict[str, Any] | None:
    return _get(saver, saver.partition_key(thread_id), schema.LOCK_SK)


def _token_scenario_sync(saver: DynamoDBSaver, t: str) -> dict[str, Any]:
    """Acquire, release, re-acquire, take over and acquire again; what each holder got."""
    a = ThreadLease(saver, t, lease_seconds=30, heartbeat=False)
    first = a.acquire().token
    bound_then = a.bind()  # bound to a's first acquisition
    assert a.release() is True
    released = _lock_item(saver, t)
    second = a.acquire().token  # the same owner token, after a release
    stale: str
    try:
        bound_then.put(cfg(t), checkpoint(), {"source": "input", "step": -1}, {})
        stale = "landed"
    except LeaseLostError:
        stale = "lost"
    assert a.release() is True
    paused = ThreadLease(saver, t, lease_seconds=0.4, heartbeat=False)
    third = paused.acquire().token  # then "paused": never renewed, never released
    taker = ThreadLease(saver, t, lease_seconds=30, wait_seconds=10, poll_seconds=0.05, heartbeat=False)
    fourth = taker.acquire().token  # takes the paused holder's lease over
    assert taker.release() is True
    fresh = ThreadLease(saver, t, lease_seconds=30, heartbeat=False)
    fifth = fresh.acquire().token  # the released lock is free at once
    assert fresh.release() is True
    return {
        "tokens": [first, second, third, fourth, fifth],
        "stale bound put": stale,
        "released": released,
        "paused": paused.info.token if paused.info else None,
    }


async def _token_scenario_async(table: str, t: str) -> dict[str, Any]:
    async with AsyncDynamoDBSaver(table_name=table) as saver:
        sync_view = DynamoDBSaver(table_name=table)
        a = AsyncThreadLease(saver, t, lease_seconds=30, heartbeat=False)
        first = (await a.acquire()).token
        bound_then = a.bind()
        assert await a.release() is True
        released = _lock_item(sync_view, t)
        second = (await a.acquire()).token
        stale: str
        try:
            await bound_then.aput(cfg(t), checkpoint(), {"source": "input", "step": -1}, {})
            stale = "landed"
        except LeaseLostError:
            stale = "lost"
        assert await a.release() is True
        paused = AsyncThreadLease(saver, t, lease_seconds=0.4, heartbeat=False)
        third = (await paused.acquire()).token
        taker = AsyncThreadLease(
            saver, t, lease_seconds=30, wait_seconds=10, poll_seconds=0.05, heartbeat=False
        )
        fourth = (await taker.acquire()).token
        assert await taker.release() is True
        fresh = AsyncThreadLease(saver, t, lease_seconds=30, heartbeat=False)
        fifth = (await fresh.acquire()).token
        assert await fresh.release() is True
        sync_view.close()
        return {
            "tokens": [first, second, third, fourth, fifth],
            "stale bound put": stale,
            "released": released,
            "paused": paused.info.token if paused.info else None,
        }


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_fencing_token_grows_with_every_acquisition_releases_included(
    saver: DynamoDBSaver, mode: str
) -> None:
    """Finding F6: a release must not reset the token (it deleted the lock item, and the next
    acquisition counted from 1 again), or a downstream system that rejects older tokens
    accepts a paused holder's and rejects the current holder's."""
    t = f"t-{uuid.uuid4().hex[:8]}"
    if mode == "sync":
        got = _token_scenario_sync(saver, t)
    else:
        got = asyncio.run(_token_scenario_async(saver.table_name, t))
    tokens = got["tokens"]
    assert tokens == sorted(set(tokens)) and tokens[0] >= 1, tokens  # strictly increasing
    assert tokens == [1, 2, 3, 4, 5], tokens
    # The paused holder's token is older than every later holder's.
    assert got["paused"] == 3 and all(tok > got["paused"] for tok in tokens[3:])
    # A saver bound before the release does not pass for the re-acquisition of the same owner.
    assert got["stale bound put"] == "lost"
    # Released: the item stays (it holds the count), without an owner, and no TTL removes it.
    released = got["released"]
    assert released is not None and released[ATTR.FENCE] == {"N": "1"}
    assert ATTR.OWNER not in released and schema.TTL_ATTRIBUTE not in released
    final = _lock_item(saver, t)
    assert final is not None and final[ATTR.FENCE] == {"N": "5"} and ATTR.OWNER not in final


def test_run_once_leaves_the_lock_released_with_its_count(saver: DynamoDBSaver) -> None:
    t = f"t-{uuid.uuid4().hex[:8]}"
    assert run_once(saver, t, "r1", ANY_CHECKPOINT, lambda: "one").value == "one"
    assert run_once(saver, t, "r2", ANY_CHECKPOINT, lambda: "two").value == "two"
    again = run_once(saver, t, "r1", ANY_CHECKPOINT, lambda: "must not run")
    assert (again.value, again.replayed) == ("one", True)  # a replay takes no lease
    item = _lock_item(saver, t)
    assert item is not None and item[ATTR.FENCE] == {"N": "2"} and ATTR.OWNER not in item
    with ThreadLease(saver, t, heartbeat=False) as lease:
        assert lease.info is not None and lease.info.token == 3


def test_fencing_tokens_only_grow_across_expiry_and_delete(moto_endpoint: str, names: dict[str, str]) -> None:
    """The lock item has no TTL and neither the reaper nor ``delete_thread`` removes it.

    Before, a delete during a held lease deleted it: a second holder got token 1 at once,
    and a downstream that forgot tokens on delete took the stale holder's 3 after the new
    holder's 1. Now a delete under a held lease is refused unless forced; a forced one
    fences the holder out and the next holder's token is above every earlier one.
    """
    from langgraph.checkpoint.dynamodb import clock
    from langgraph.checkpoint.dynamodb.lock import LeaseUnavailableError

    t = f"t-{uuid.uuid4().hex[:8]}"
    with DynamoDBSaver(table_name=names["table_name"], ttl=60) as s:
        s.setup()
        with ThreadLease(s, t, heartbeat=False) as lease:
            lease.bind().put(cfg(t), checkpoint(), {"source": "input", "step": -1}, {})
        s.reap_thread(t, expired_before=clock.now() + 3600)  # as after the thread expired
        assert s.get_tuple(cfg(t)) is None
        with ThreadLease(s, t, heartbeat=False) as lease:
            assert lease.info is not None and lease.info.token == 2
            bound = lease.bind()
            bound.put(cfg(t), checkpoint(), {"source": "input", "step": -1}, {})
            with pytest.raises(LeaseUnavailableError):
                s.delete_thread(t)  # held: refused, nothing deleted
            assert s.get_tuple(cfg(t)) is not None
            s.delete_thread(t, force=True)  # forced: the holder is fenced out
            assert s.get_tuple(cfg(t)) is None
            lock = _lock_item(s, t)
            assert lock is not None and "own" not in lock and lock["fen"] == {"N": "3"}
            with pytest.raises(LeaseLostError):
                bound.put(cfg(t), checkpoint(), {"source": "input", "step": -1}, {})
        with ThreadLease(s, t, heartbeat=False) as lease:
            assert lease.info is not None and lease.info.token == 4  # above every earlier token
        s.delete_thread(t)  # released: no force needed; the count stays
        with ThreadLease(s, t, heartbeat=False) as lease:
            assert lease.info is not None and lease.info.token == 5


# ------------------------------ a bound saver refuses what its lease cannot fence

#: Public saver methods that delete, copy or rewrite items outside ``put`` and
#: ``put_writes`` (batches, S3 objects, other threads): no single request can
#: carry the lease's condition, so a lease-bound saver refuses them.
REFUSED = (
    "prune",
    "delete_thread",
    "copy_thread",
    "delete_for_runs",
    "migrate_tenant_thread",
    "reap_thread",
    "reap_expired_stream",
    "purge_expired",
    "run_pruner",
    "sweep_orphans",
    "copy_thread_step",
    "prune_step",
    "delete_for_runs_step",
)


def _destructive_calls(bound: Any, t: str, prefix: str = "") -> dict[str, Any]:
    """One call per refused method of ``bound`` (``prefix`` "a": the coroutine methods)."""
    from langgraph.checkpoint.dynamodb import clock
    from langgraph.checkpoint.dynamodb.lifecycle import PrunePolicy

    args: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
        "prune": (([t],), {"keep_last": 1}),
        "delete_thread": ((t,), {}),
        "copy_thread": ((t, t + "-copy"), {}),
        "delete_for_runs": ((["run-1"],), {}),
        "migrate_tenant_thread": (("acme", t), {}),
        "reap_thread": ((t,), {"expired_before": clock.now() + 3600}),
        "reap_expired_stream": (({"Records": []},), {}),
        "purge_expired": ((), {}),
        "run_pruner": ((PrunePolicy(keep_last=1),), {}),
        "sweep_orphans": ((), {}),
        "copy_thread_step": ((t, t + "-copy"), {}),
        "prune_step": (([t],), {"keep_last": 1}),
        "delete_for_runs_step": ((["run-1"],), {}),
    }
    assert set(args) == set(REFUSED)
    return {name: (getattr(bound, prefix + name), *args[name]) for name in REFUSED}


def _outcome(err: BaseException | None, name: str) -> str:
    """``"refused"`` for the refusal a lease-bound saver must raise, else what happened."""
    if err is None:
        return "ran"
    if isinstance(err, NotImplementedError) and "unbound saver" in str(err) and name in str(err):
        return "refused"
    return f"raised {err!r}"


def _chain(writer: Any, t: str, n: int) -> list[str]:
    ids: list[str] = []
    parent = None
    for step in range(n):
        cp = checkpoint()
        writer.put(cfg(t, parent=parent), cp, {"source": "loop", "step": step, "run_id": "run-1"}, {})
        writer.put_writes(cfg(t, parent=cp["id"]), [("x", step)], "task-1")
        parent = cp["id"]
        ids.append(cp["id"])
    return ids


def test_a_stale_bound_saver_cannot_prune_or_delete_the_new_holders_work(saver: DynamoDBSaver) -> None:
    """Finding R10: fencing only put and put_writes let a holder that lost its lease delete
    the thread (or prune it) under the new holder through its bound saver."""
    t = f"t-{uuid.uuid4().hex[:8]}"
    old = ThreadLease(saver, t, lease_seconds=0.4, heartbeat=False)
    old.acquire()
    stale = old.bind()  # what run_once hands the work as ctx.saver
    new = ThreadLease(saver, t, lease_seconds=30, wait_seconds=10, poll_seconds=0.05, heartbeat=False)
    new.acquire()
    current = new.bind()
    _chain(current, t, 3)
    outcomes = {}
    for name, (method, args, kwargs) in _destructive_calls(stale, t).items():
        err: BaseException | None = None
        try:
            method(*args, **kwargs)
        except Exception as exc:
            err = exc
        outcomes[name] = _outcome(err, name)
    assert outcomes == dict.fromkeys(REFUSED, "refused")
    assert len(list(saver.list(cfg(t)))) == 3  # the new holder's work is whole
    assert saver.get_tuple(cfg(t + "-copy")) is None
    # A property of the bound saver, not of a lost lease: the holder's own refuses too.
    with pytest.raises(NotImplementedError, match="unbound saver"):
        current.delete_thread(t)
    assert len(list(saver.list(cfg(t)))) == 3
    # Reads and fenced writes still work; maintenance goes through the unbound saver.
    assert current.get_tuple(cfg(t)) is not None
    assert saver.prune([t], keep_last=1).checkpoints_deleted == 2
    new.release()


def test_a_stale_async_bound_saver_cannot_prune_or_delete_the_new_holders_work(saver: DynamoDBSaver) -> None:
    t = f"t-{uuid.uuid4().hex[:8]}"

    async def main() -> tuple[dict[str, str], list[str]]:
        async with AsyncDynamoDBSaver(table_name=saver.table_name) as asaver:
            old = AsyncThreadLease(asaver, t, lease_seconds=0.4, heartbeat=False)
            await old.acquire()
            stale = old.bind()
            new = AsyncThreadLease(
                asaver, t, lease_seconds=30, wait_seconds=10, poll_seconds=0.05, heartbeat=False
            )
            await new.acquire()
            current = new.bind()
            await asyncio.to_thread(_chain, current, t, 3)
            outcomes: dict[str, str] = {}
            for name, (method, args, kwargs) in _destructive_calls(stale, t, "a").items():
                err: BaseException | None = None
                try:
                    await method(*args, **kwargs)
                except Exception as exc:
                    err = exc
                outcomes["a" + name] = _outcome(err, "a" + name)
            # The sync twins, from another thread as they must be called.
            for name, (method, args, kwargs) in _destructive_calls(stale, t).items():
                err = None
                try:
                    await asyncio.to_thread(method, *args, **kwargs)
                except Exception as exc:
                    err = exc
                outcomes[name] = _outcome(err, name)
            await new.release()
            return outcomes, [c.checkpoint["id"] async for c in asaver.alist(cfg(t))]

    outcomes, left = asyncio.run(main())
    assert outcomes == {n: "refused" for n in (*("a" + r for r in REFUSED), *REFUSED)}
    assert len(left) == 3
