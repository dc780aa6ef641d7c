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

import itertools
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


ERROR_CHANNEL = "<raised CheckpointStoreError>"
#: get_tuple returned None: the checkpoint's lineage was deleted (a delete_thread
#: records its tombstones before it deletes items, so an interrupted one has
#: already made the whole thread read as deleted).
_DELETED = "<reads as deleted>"


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

    Each checkpoint is read on its own; one that raises a library error maps to ``ERROR_CHANNEL``.
    """
    graph = _graph(saver)
    out: dict[tuple[str, str], Any] = {}
    for ns, cid in _checkpoint_keys(saver, thread):
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}}
        try:
            t = saver.get_tuple(config)
            if t is None:
                out[(ns, cid)] = _DELETED
            elif ns:
                out[(ns, cid)] = (t.checkpoint["channel_values"], t.pending_writes)
            else:
                out[(ns, cid)] = (graph.get_state(config).values, t.pending_writes)
        except CheckpointStoreError:
            out[(ns, cid)] = ERROR_CHANNEL
    return out


def _readable_subset(
    saver: DynamoDBSaver,
    thread: str,
    before: dict[tuple[str, str], Any],
    what: str,
    *,
    deleted_ok: bool = False,
) -> int:
    """Every checkpoint still stored reads back exactly as before, or raises our error
    (or, with ``deleted_ok``, reads as deleted). Returns how many did not raise."""
    now = _snapshot(saver, thread)
    for key, value in now.items():
        assert key in before, f"{what}: checkpoint {key} appeared"
        if value is ERROR_CHANNEL:
            continue  # refused loudly: acceptable
        if value is _DELETED:
            assert deleted_ok, f"{what}: checkpoint {key} reads as deleted"
            continue
        assert value == before[key], (
            f"{what}: checkpoint {key} reads back DIFFERENTLY after the interrupted operation"
        )
    return sum(1 for v in now.values() if v is not ERROR_CHANNEL)


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


def _random_cases() -> list[tuple[str, int]]:
    if SOAK:
        return [(op, seed) for op in OPS for seed in range(12)]
    return [(op, 0) for op in OPS]  # CI: every operation once; the exhaustive matrix below under soak


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
    inj = FaultInjector(
        seed, fail_at=frozenset({k}), kinds=("server", "reset", "lost"), ops=frozenset(FAULT_OPS[op])
    )
    inj.attach_saver(flaky)
    what = f"{op} seed={seed} fault at eligible request {k}/{n}"
    try:
        _do(flaky, op, thread, target)
        interrupted = False
    except Exception:
        interrupted = True
    assert inj.log, f"{what}: no fault injected"
    with inj.paused():
        if op == "copy_thread":
            # The source is untouched; the target, if readable at all, must be a faithful prefix of it.
            assert _snapshot(setup, thread) == before
            _readable_subset(setup, target, {k: v for k, v in before.items()}, what + " (target)")
        else:
            _readable_subset(setup, thread, before, what, deleted_ok=op == "delete_thread")
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
#
# Every failure point, deterministically: the k-th BatchWriteItem call of the
# operation fails, for each k. "torn": before failing, the second half of
# that call's requests is applied (DynamoDB applies a batch item by item, so
# a call can fail with part of it done); with newest-first deletes that half
# holds the *older* checkpoints, so a torn chunk leaves gaps in delta chains.


def _kth_batch_write(k: int, torn: bool, client: Any, table: str) -> Any:
    # Chunks of one phase are sent from several threads at once: count with
    # itertools.count, whose next() is atomic, so exactly one call is the k-th.
    seen = itertools.count()

    def pred(name: str, params: dict[str, Any]) -> bool:
        if name != "BatchWriteItem":
            return False
        if next(seen) != k:
            return False
        if torn:
            reqs = params["RequestItems"][table]
            if reqs[len(reqs) // 2 :]:
                client.batch_write_item(RequestItems={table: reqs[len(reqs) // 2 :]})
        return True

    return pred


def _raw(saver: DynamoDBSaver, thread: str) -> list[dict[str, Any]]:
    pk = schema.partition_key(thread)
    return sorted(
        (it for it in scan_table(saver.table_name) if it["PK"]["S"] == pk), key=lambda it: it["SK"]["S"]
    )


def _batch_write_calls(names: dict[str, str], op: str) -> int:
    """BatchWriteItem calls ``op`` makes on a fresh thread (fault-free)."""
    setup = DynamoDBSaver(**names, **KW, **session_kw())
    thread, target = new_thread(), new_thread()
    _build(setup, thread)
    probe = FaultInjector(0, kinds=()).attach_saver(setup)
    _do(setup, op, thread, target)
    setup.close()
    return probe.calls["BatchWriteItem"]


def _interruption_points(n: int) -> list[int]:
    """Every BatchWriteItem of the operation under ``make soak``; in CI the first, the middle
    and the last one (nothing applied yet, half, all but the end)."""
    if SOAK:
        return list(range(n))
    return sorted({0, n // 2, n - 1})


#: ``make soak``: every operation, failed and torn (about 7 minutes). CI: one of each kind,
#: on the cheaper operations; the random cases above cover every operation.
EXHAUSTIVE = (
    [(op, torn) for op in OPS for torn in (False, True)]
    if SOAK
    else [("delete_for_runs", False), ("prune-keep-2", True)]
)


@pytest.mark.parametrize(
    ("op", "torn"), EXHAUSTIVE, ids=[f"{op}-chunk-{'torn' if t else 'failed'}" for op, t in EXHAUSTIVE]
)
def test_every_interruption_point_leaves_readable_checkpoints_unchanged(
    moto_endpoint: str, names: dict[str, str], op: str, torn: bool
) -> None:
    setup = DynamoDBSaver(**names, **KW, **session_kw())
    setup.setup()
    n = _batch_write_calls(names, op)
    assert n >= 2, f"{op}: only {n} BatchWriteItem calls, nothing to interrupt"
    refused = 0
    for k in _interruption_points(n):
        thread, target = new_thread(), new_thread()
        _build(setup, thread)
        before = _snapshot(setup, thread)
        source_items = _raw(setup, thread)
        flaky = DynamoDBSaver(**names, **KW, **session_kw(), max_attempts=0)
        pred = _kth_batch_write(k, torn, setup.clients["dynamodb"], names["table_name"])
        inj = FaultInjector(0, kinds=(), fail_when=pred).attach_saver(flaky)
        what = f"{op}, BatchWriteItem {k + 1}/{n} {'torn' if torn else 'failed'}"
        with pytest.raises(Exception, match="InternalServerError"):
            _do(flaky, op, thread, target)
        assert inj.log, what
        if op == "copy_thread":
            assert _raw(setup, thread) == source_items, f"{what}: the source changed"
            readable = _readable_subset(setup, target, before, what + " (target)")
            refused += len(_checkpoint_keys(setup, target)) - readable
            setup.delete_thread(target)
        else:
            readable = _readable_subset(setup, thread, before, what, deleted_ok=op == "delete_thread")
            refused += len(_checkpoint_keys(setup, thread)) - readable
        # The retry completes the operation as if nothing had happened.
        _do(setup, op, thread, target)
        if op == "copy_thread":
            assert _raw(setup, thread) == source_items, what
            assert _snapshot(setup, target) == before, what
        else:
            after = _snapshot(setup, thread)
            assert all(before[key] == value for key, value in after.items()), (
                f"{what}: retry changed a checkpoint"
            )
            if op == "delete_thread":
                assert after == {}, what
        flaky.close()
    if not torn:
        # A failed chunk is never applied in part: what remains is a
        # consistent prefix, so no checkpoint even refuses to read.
        assert refused == 0, f"{op}: {refused} checkpoints unreadable after a clean chunk failure"
    setup.close()
