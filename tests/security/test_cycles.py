"""Parent-chain cycles: a crafted parent id must not hang a reader or a maintenance job.

The attacker writes, with its own tenant's grant, checkpoint items whose
parent id (``p``) points back into the chain: a self-loop, a 2-cycle, a
ring of a thousand items. Every walk over parent ids (delta history, the
keep-set of ``prune`` and ``delete_for_runs``) must then refuse with a
``CorruptPayloadError`` naming the thread and the cycle, in bounded time;
and the scheduled pruner must record the poisoned thread and still prune
the other threads of its page.

Before the fix these walks spun forever (memory growing). Each call runs in
a worker thread with a join timeout (:func:`bounded`), so a hang fails the
test instead of blocking the run; the runaway walk is then stopped.
"""

from __future__ import annotations

import asyncio
import ctypes
import threading
import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from benchmarks.bounded import chain, ring, set_parent

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, CorruptPayloadError, DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb.lifecycle import PrunePolicy
from tests.support.harness import cfg, new_thread, shared_store

ATTR = schema.ATTR

#: Seconds a walk may take before it counts as hung. Refusing even the
#: 1000-item ring takes well under a second; the old code never returned.
WALK_TIMEOUT = 20

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def store(moto_endpoint: str) -> dict[str, str]:
    """One table and bucket for the module (every test uses fresh thread ids)."""
    return shared_store("cycles")


def bounded(mode: str, store: dict[str, str], method: str, *args: Any, **kwargs: Any) -> Any:
    """``saver.method(...)`` (sync) or ``await saver.amethod(...)`` (async) on a
    fresh saver in a worker thread; fails the test if it has not returned
    within ``WALK_TIMEOUT`` seconds.

    The async saver gets its own event loop in that thread, so a hung walk
    cannot block the loop other tests use.
    """
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            if mode == "sync":
                with DynamoDBSaver(**store) as saver:
                    out["value"] = getattr(saver, method)(*args, **kwargs)
            else:

                async def main() -> Any:
                    async with AsyncDynamoDBSaver(**store) as saver:
                        return await getattr(saver, "a" + method)(*args, **kwargs)

                out["value"] = asyncio.run(main())
        except BaseException as exc:  # handed to the test thread
            out["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    start = time.perf_counter()
    worker.start()
    worker.join(WALK_TIMEOUT)
    out["seconds"] = time.perf_counter() - start
    if worker.is_alive():
        # Stop the runaway walk (a pure-Python loop) so it does not eat the
        # machine's memory for the rest of the session.
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(worker.ident or 0), ctypes.py_object(SystemExit)
        )
        worker.join(10)
        pytest.fail(
            f"{method} did not return within {WALK_TIMEOUT}s: the parent-chain walk does not terminate"
        )
    if "error" in out:
        raise out["error"]
    return out["value"]


SHAPES: dict[str, Callable[[dict[str, str], str], tuple[str, set[str]]]] = {}


def _shape(name: str) -> Callable[[Any], Any]:
    def register(fn: Any) -> Any:
        SHAPES[name] = fn
        return fn

    return register


@_shape("self-loop")
def _self_loop(store: dict[str, str], thread: str) -> tuple[str, set[str]]:
    ids = chain(store, thread, 4)
    set_parent(store, thread, ids[-1], ids[-1])
    return ids[-1], {ids[-1]}


@_shape("2-cycle")
def _two_cycle(store: dict[str, str], thread: str) -> tuple[str, set[str]]:
    ids = chain(store, thread, 4)  # ids[3] -> ids[2] -> ids[1]: make ids[2] -> ids[3]
    set_parent(store, thread, ids[2], ids[3])
    return ids[3], {ids[2], ids[3]}


def _assert_names_cycle(exc: BaseException, thread: str, members: set[str]) -> None:
    msg = str(exc)
    assert repr(thread) in msg and "loops back" in msg, msg
    if len(members) <= 12:
        for cid in members:
            assert repr(cid) in msg, (cid, msg)
    else:
        assert f"{len(members)} checkpoint(s) in the cycle" in msg, msg


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("shape", ["self-loop", "2-cycle"])
def test_delta_history_refuses_cycle(store: dict[str, str], mode: str, shape: str) -> None:
    thread = new_thread()
    head, members = SHAPES[shape](store, thread)
    with pytest.raises(CorruptPayloadError) as err:
        bounded(
            mode,
            store,
            "get_delta_channel_history",
            config=cfg(thread, checkpoint_id=head),
            channels=["msgs"],
        )
    _assert_names_cycle(err.value, thread, members)
    # Also without a checkpoint id (the latest, as LangGraph asks for it).
    with pytest.raises(CorruptPayloadError, match="loops back"):
        bounded(mode, store, "get_delta_channel_history", config=cfg(thread), channels=["msgs"])


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("shape", ["self-loop", "2-cycle"])
def test_prune_keep_last_refuses_cycle_and_deletes_nothing(
    store: dict[str, str], mode: str, shape: str
) -> None:
    thread = new_thread()
    _, members = SHAPES[shape](store, thread)
    before = _items(store, thread)
    with pytest.raises(CorruptPayloadError) as err:
        bounded(mode, store, "prune", [thread], keep_last=1)
    _assert_names_cycle(err.value, thread, members)
    assert _items(store, thread) == before  # refused before deleting anything


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_delete_for_runs_refuses_cycle(store: dict[str, str], mode: str) -> None:
    thread = new_thread()
    _, members = SHAPES["2-cycle"](store, thread)
    before = _items(store, thread)
    # Deleting the first run leaves survivors whose delta chains are walked
    # for the keep-set: one of them runs into the 2-cycle.
    with pytest.raises(CorruptPayloadError) as err:
        bounded(mode, store, "delete_for_runs", [f"{thread}-run-0"])
    _assert_names_cycle(err.value, thread, members)
    assert _items(store, thread) == before


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_long_ring_refused_in_bounded_time(store: dict[str, str], mode: str) -> None:
    """A ring of 1000 crafted items: each is visited once, then the walk refuses
    (within ``WALK_TIMEOUT``: the time is that of reading the 1000 items)."""
    thread = new_thread()
    members = ring(store, thread, 1000)
    with pytest.raises(CorruptPayloadError) as err:
        bounded(
            mode,
            store,
            "get_delta_channel_history",
            config=cfg(thread, checkpoint_id=members[-1]),
            channels=["msgs"],
        )
    _assert_names_cycle(err.value, thread, set(members))
    assert "more) ->" in str(err.value)  # a long cycle is abbreviated, not 1000 ids
    with pytest.raises(CorruptPayloadError, match="loops back"):
        bounded(mode, store, "prune", [thread], keep_last=1)


def test_pruner_records_poisoned_thread_and_prunes_the_rest(
    moto_endpoint: str, names: dict[str, str]
) -> None:
    """One poisoned thread on the pruner's page: reported, and the page goes on."""
    DynamoDBSaver(**names).setup()
    healthy = [new_thread() for _ in range(3)]
    poisoned = new_thread()
    latest = {t: chain(names, t, 3, snapshots=True)[-1] for t in healthy}
    _, members = SHAPES["2-cycle"](names, poisoned)
    poisoned_items = _items(names, poisoned)
    report = bounded("sync", names, "run_pruner", PrunePolicy(keep_last=1, page_size=100))
    assert report.complete and report.threads_scanned == 4
    assert len(report.errors) == 1, report.errors
    assert repr(poisoned) in report.errors[0] and "CorruptPayloadError" in report.errors[0]
    for cid in members:
        assert cid in report.errors[0]
    # Every healthy thread was pruned to its latest checkpoint, wherever the
    # poisoned one came in the page; nothing of the poisoned one was deleted.
    assert report.checkpoints_deleted == 2 * len(healthy)
    with DynamoDBSaver(**names) as saver:
        for t in healthy:
            assert [c.config["configurable"]["checkpoint_id"] for c in saver.list(cfg(t))] == [latest[t]]
    assert _items(names, poisoned) == poisoned_items


def _items(store: dict[str, str], thread: str) -> list[str]:
    client = boto3.client("dynamodb")
    resp = client.query(
        TableName=store["table_name"],
        KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={"#pk": ATTR.PK},
        ExpressionAttributeValues={":pk": {"S": schema.partition_key(thread)}},
        ConsistentRead=True,
    )
    return sorted(it[ATTR.SK]["S"] + repr(sorted(it)) for it in resp["Items"])
