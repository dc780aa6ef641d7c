"""Maintenance operations interrupted by a surfaced fault, then retried.

``prune``, ``delete_for_runs``, ``copy_thread`` and ``delete_thread`` write
or delete many items in several ``BatchWriteItem`` chunks (sent concurrently)
and several S3 requests. A fault that surfaces half way (``max_attempts=0``: no botocore retry)
leaves some of that done. The invariant checked here: at every moment, a
checkpoint that can still be read reads back *exactly* as before the
operation (or raises one of the library's errors); no checkpoint shows a
different state. Then retrying the operation without faults finishes it.

The thread is a delta chat (``DeltaChannel`` messages, snapshot every 3
updates, a subgraph namespace): a checkpoint's messages are rebuilt from its
ancestors' writes, so losing an ancestor before its descendants is visible
as a *different* state, not as an error.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb import CheckpointStoreError, DynamoDBSaver, schema
from tests.reliability.workloads import SOAK, _text, session_kw
from tests.support.faults import FaultInjector
from tests.support.graphs import chat_graph
from tests.support.harness import cfg, new_thread, scan_table

KW: dict[str, Any] = {"inline_threshold": 128, "s3_threshold": 1024}
TURNS = 6


def _graph(saver: Any) -> Any:
    return chat_graph(delta=True, subgraph=True, snapshot_frequency=3).compile(checkpointer=saver)


def _build(saver: DynamoDBSaver, thread: str) -> None:
    graph = _graph(saver)
    for i in range(TURNS):
        config = {**cfg(thread), "metadata": {"run_id": f"{thread}-run-{i}"}}
        graph.invoke({"messages": [f"user {i} " + _text(f"{thread}{i}", 300)]}, config)


_ERROR = "<raised CheckpointStoreError>"


def _checkpoint_keys(saver: DynamoDBSaver, thread: str) -> list[tuple[str, str]]:
    """(namespace, checkpoint id) of every checkpoint item of the thread, from the raw table."""
    pk = schema.partition_key(thread)
    keys = []
    for it in scan_table(saver.table_name):
        if it["PK"]["S"] == pk and it.get("t", {}).get("S") == schema.CHECKPOINT_ITEM:
            ns, _, cid, _ = schema.parse_sk(it["SK"]["S"])
            keys.append((ns, cid))
    return sorted(keys)


def _snapshot(saver: DynamoDBSaver, thread: str) -> dict[tuple[str, str], Any]:
    """Values and pending writes of every checkpoint of every namespace, as LangGraph rebuilds them.

    Each checkpoint is read on its own; one that raises a library error maps to ``_ERROR``.
    """
    graph = _graph(saver)
    out: dict[tuple[str, str], Any] = {}
    for ns, cid in _checkpoint_keys(saver, thread):
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}}
        try:
            t = saver.get_tuple(config)
            if ns:
                out[(ns, cid)] = (t.checkpoint["channel_values"], t.pending_writes)
            else:
                out[(ns, cid)] = (graph.get_state(config).values, t.pending_writes)
        except CheckpointStoreError:
            out[(ns, cid)] = _ERROR
    return out


def _readable_subset(saver: DynamoDBSaver, thread: str, before: dict[tuple[str, str], Any], what: str) -> int:
    """Every checkpoint still stored reads back exactly as before, or raises our error. Returns how many read."""
    now = _snapshot(saver, thread)
    for key, value in now.items():
        assert key in before, f"{what}: checkpoint {key} appeared"
        if value is _ERROR:
            continue  # refused loudly: acceptable
        assert value == before[key], f"{what}: checkpoint {key} reads back DIFFERENTLY after the interrupted operation"
    return sum(1 for v in now.values() if v is not _ERROR)


OPS = ["prune", "prune-keep-2", "delete_for_runs", "copy_thread", "delete_thread"]
FAULT_OPS = {
    "prune": {"BatchWriteItem", "DeleteObjects"},
    "prune-keep-2": {"BatchWriteItem", "DeleteObjects"},
    "delete_for_runs": {"BatchWriteItem", "DeleteObjects"},
    "copy_thread": {"BatchWriteItem", "CopyObject"},
    "delete_thread": {"BatchWriteItem", "DeleteObjects"},
}


def _do(saver: DynamoDBSaver, op: str, thread: str, target: str) -> None:
    if op == "prune":
        saver.prune([thread])
    elif op == "prune-keep-2":
        saver.prune([thread], keep_last=2)
    elif op == "delete_for_runs":
        saver.delete_for_runs([f"{thread}-run-1", f"{thread}-run-2"])
    elif op == "copy_thread":
        saver.copy_thread(thread, target)
    else:
        saver.delete_thread(thread)


#: Operations whose interrupted state can read back differently (bugs, see the
#: aimed tests below): the random test checks only that their retry completes.
#: Remove an operation from this set when its aimed test passes.
KNOWN_UNSAFE = {"prune", "prune-keep-2", "copy_thread", "delete_thread"}


def _random_cases() -> list[tuple[str, int]]:
    if SOAK:
        return [(op, seed) for op in OPS for seed in range(12)]
    return [("delete_for_runs", 0), ("prune", 0)]  # CI; the aimed tests below cover every operation


@pytest.mark.parametrize("op,seed", _random_cases())
def test_interrupted_maintenance_never_changes_a_readable_checkpoint(
    moto_endpoint: str, names: dict[str, str], op: str, seed: int
) -> None:
    rng = random.Random(f"{op}/{seed}")
    setup = DynamoDBSaver(**names, **KW, **session_kw())
    setup.setup()
    thread, target = new_thread(), new_thread()
    _build(setup, thread)
    before = _snapshot(setup, thread)

    # Calibrate, then fail one eligible request at a random point.
    flaky = DynamoDBSaver(**names, **KW, **session_kw(), max_attempts=0)
    probe_thread, probe_target = new_thread(), new_thread()
    _build(setup, probe_thread)
    probe = FaultInjector(seed, ops=frozenset(FAULT_OPS[op])).attach_saver(flaky)
    _do(flaky, op, probe_thread, probe_target)
    n = probe.sends
    probe.enabled = False
    assert n >= 2, f"{op} made only {n} eligible requests"
    k = rng.randrange(n)
    inj = FaultInjector(seed, fail_at=frozenset({k}), kinds=("server", "reset", "lost"), ops=frozenset(FAULT_OPS[op]))
    inj.attach_saver(flaky)
    what = f"{op} seed={seed} fault at eligible request {k}/{n}"
    try:
        _do(flaky, op, thread, target)
        interrupted = False
    except Exception:
        interrupted = True
    assert inj.log, f"{what}: no fault injected"
    with inj.paused():
        if op in KNOWN_UNSAFE:
            pass  # see test_aimed_interruption_*
        elif op == "copy_thread":
            # The source is untouched; the target, if readable at all, must be a faithful prefix of it.
            assert _snapshot(setup, thread) == before
            _readable_subset(setup, target, {k: v for k, v in before.items()}, what + " (target)")
        else:
            _readable_subset(setup, thread, before, what)
    # Retry without faults: it completes, and the result is the fault-free one.
    if interrupted:
        inj.enabled = False
        if op == "copy_thread":
            setup.delete_thread(target)  # copy never merges: clear the partial target first
        _do(setup, op, thread, target)
    after = _snapshot(setup, thread)
    for key, value in after.items():
        assert before[key] == value, f"{what}: {key} changed"
    if op == "delete_thread":
        assert after == {}
    elif op == "copy_thread":
        assert _snapshot(setup, target) == before
    else:
        latest = max(cid for ns, cid in before if ns == "")
        assert ("", latest) in after
    setup.close()
    flaky.close()


# ------------------------------------------------------------ aimed faults


def _root_sk(saver: DynamoDBSaver, thread: str, which: int) -> str:
    ids = sorted(t.checkpoint["id"] for t in saver.list(cfg(thread)))
    return schema.checkpoint_sk("", ids[which])


def _batch_keys(params: dict[str, Any]) -> list[dict[str, Any]]:
    reqs = [r for table_reqs in params.get("RequestItems", {}).values() for r in table_reqs]
    return [r.get("DeleteRequest", {}).get("Key") or r.get("PutRequest", {}).get("Item") for r in reqs]


def _aimed(op: str, saver: DynamoDBSaver, thread: str) -> Any:
    if op == "copy_thread":
        # The chunks that copy writes items fail; the others land.
        def pred(name: str, params: dict[str, Any]) -> bool:
            return name == "BatchWriteItem" and any(k.get("t", {}).get("S") == "w" for k in _batch_keys(params))

        return pred
    if op == "delete_thread":
        newest = _root_sk(saver, thread, -1)

        # The chunk deleting the newest checkpoint fails; older chunks go through.
        def pred(name: str, params: dict[str, Any]) -> bool:
            return name == "BatchWriteItem" and any(k["SK"]["S"] == newest for k in _batch_keys(params))

        return pred
    oldest = _root_sk(saver, thread, 0)

    # Every chunk fails except the one deleting the oldest checkpoint (and its neighbours).
    def pred(name: str, params: dict[str, Any]) -> bool:
        return name == "BatchWriteItem" and all(k["SK"]["S"] != oldest for k in _batch_keys(params))

    return pred


def _aimed_case(moto_endpoint: str, names: dict[str, str], op: str) -> None:
    setup = DynamoDBSaver(**names, **KW, **session_kw())
    setup.setup()
    thread, target = new_thread(), new_thread()
    _build(setup, thread)
    before = _snapshot(setup, thread)
    flaky = DynamoDBSaver(**names, **KW, **session_kw(), max_attempts=0)
    inj = FaultInjector(0, kinds=(), fail_when=_aimed(op, setup, thread)).attach_saver(flaky)
    with pytest.raises(Exception, match="InternalServerError"):
        _do(flaky, op, thread, target)
    assert inj.log
    if op == "copy_thread":
        _readable_subset(setup, target, before, f"{op} (target)")
    else:
        _readable_subset(setup, thread, before, op)
    setup.close()
    flaky.close()


_ORDER_BUG = (
    "BUG: an interrupted {op} leaves checkpoints that read back with a DIFFERENT state: "
    "{detail}; get_delta_channel_history (_extended._op_delta_history, find() -> None -> break) then "
    "silently returns a truncated history instead of raising MissingPayloadError"
)


@pytest.mark.xfail(strict=True, reason=_ORDER_BUG.format(op="prune", detail=(
    "_extended._delete_unkept sends its BatchWriteItem chunks concurrently, oldest items first, so a "
    "failed chunk leaves doomed descendants whose delta ancestors (and their writes) are already gone")))
@pytest.mark.parametrize("op", ["prune", "prune-keep-2"])
def test_aimed_interruption_of_prune(moto_endpoint: str, names: dict[str, str], op: str) -> None:
    _aimed_case(moto_endpoint, names, op)


@pytest.mark.xfail(strict=True, reason=_ORDER_BUG.format(op="delete_thread", detail=(
    "_core._op_delete_thread deletes all items in concurrent chunks in key order; if a chunk fails, the "
    "surviving (newer) checkpoints have lost ancestors and writes (resuming such a thread continues "
    "from a wrong state); deleting newest first, sequentially, would leave an older consistent thread")))
def test_aimed_interruption_of_delete_thread(moto_endpoint: str, names: dict[str, str]) -> None:
    _aimed_case(moto_endpoint, names, "delete_thread")


@pytest.mark.xfail(strict=True, reason=_ORDER_BUG.format(op="copy_thread", detail=(
    "_extended._op_copy_thread writes checkpoint items, then writes items, then blobs, in concurrent "
    "chunks: a failed chunk leaves target checkpoints readable without their pending writes / ancestor "
    "writes (copy blobs, then writes, then checkpoints oldest first)")))
def test_aimed_interruption_of_copy_thread(moto_endpoint: str, names: dict[str, str]) -> None:
    _aimed_case(moto_endpoint, names, "copy_thread")


def test_aimed_interruption_of_delete_for_runs(moto_endpoint: str, names: dict[str, str]) -> None:
    _aimed_case(moto_endpoint, names, "delete_for_runs")
