"""The capacity model (tools/capacity.py) against what the throughput layer counts.

Scaled-down workloads run through real savers (sync and async) on the moto
server's throughput layer (tests/support/throughput.py); the units the model
predicts for the same replay (``capacity.replay_units``) must be within 10% of
the units the layer counted, for the table and for each index.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb.tools import capacity
from tests.support import throughput
from tests.support.harness import Harness, LoopThread, cfg, checkpoint_of

THREADS = 3
STEPS = 4
WORKLOADS = {
    "flat-6k-fanout-2": capacity.Workload(state_bytes=6000, fan_out=2, write_bytes=1500, ttl_seconds=86400),
    "growing-1k": capacity.Workload(
        state_bytes=1000, state_growth_bytes=1200, write_bytes=300, ttl_seconds=86400
    ),
    "large-20k-fanout-3": capacity.Workload(state_bytes=20000, fan_out=3, write_bytes=3000),
    "lease-bound-6k-fanout-2": capacity.Workload(
        state_bytes=6000, fan_out=2, write_bytes=1500, ttl_seconds=86400, lease_bound=True
    ),
}


@pytest.fixture(params=["sync", "async"])
def saver_harness(
    request: pytest.FixtureRequest, moto_endpoint: str, names: dict[str, str], loop_thread: LoopThread
) -> Iterator[Harness]:
    h = Harness(request.param, names["table_name"], names["bucket_name"], loop_thread)
    yield h
    h.close()


REFRESHES = 1
LISTS = 1
PRUNE_KEEP = 2


def _lease_call(h: Harness, lease: Any, name: str) -> Any:
    """``lease.name()``, awaited on the harness's loop for an async lease."""
    result = getattr(lease, name)()
    return h.loop.run(result) if h.is_async else result


def _replay(h: Harness, saver: Any, w: capacity.Workload, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``THREADS`` threads of ``STEPS`` steps (put, ``fan_out`` put_writes, ``reads_per_step``
    get_tuple), then ``REFRESHES`` more steps each a day later (the head's refresh window past)."""
    from langgraph.checkpoint.dynamodb import clock
    from langgraph.checkpoint.dynamodb.lock import AsyncThreadLease, ThreadLease

    threads, confs = [f"cap-{uuid.uuid4().hex[:10]}" for _ in range(THREADS)], {}
    kind = AsyncThreadLease if h.is_async else ThreadLease
    leases = {t: kind(saver, t, lease_seconds=600, heartbeat=False) for t in threads} if w.lease_bound else {}
    writers = {}
    for t in threads:
        if t in leases:
            _lease_call(h, leases[t], "acquire")
        writers[t] = leases[t].bind() if t in leases else saver
    for step in range(STEPS + REFRESHES):
        if step >= STEPS:
            later = clock.now() + 86_400 * (step - STEPS + 1)
            monkeypatch.setattr(clock, "now", lambda later=later: later)
        for thread in threads:
            conf = confs.get(thread) or cfg(thread)
            size = w.state_bytes + step * w.state_growth_bytes
            versions = {"state": str(step + 1)}
            cp = checkpoint_of({"state": os.urandom(size)}, versions)  # incompressible: its size is its size
            meta = {"step": step, "source": "loop", "run_id": f"run-{thread}"}
            conf = confs[thread] = h.call("put", conf, cp, meta, versions, saver=writers[thread])
            for task in range(w.fan_out):
                h.call(
                    "put_writes",
                    conf,
                    [("state", os.urandom(w.write_bytes))],
                    f"task-{step}-{task}",
                    saver=writers[thread],
                )
            for _ in range(int(w.reads_per_step)):
                assert h.call("get_tuple", cfg(thread), saver=saver) is not None
    for lease in leases.values():
        _lease_call(h, lease, "release")
    return threads


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_the_model_predicts_the_units_the_layer_counts_within_10_percent(
    saver_harness: Harness, moto_endpoint: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = WORKLOADS[name]
    h = saver_harness
    with h.other_saver(ttl=w.ttl_seconds) as saver, throughput.counting(moto_endpoint):
        threads = _replay(h, saver, w, monkeypatch)
        for thread in threads:
            for _ in range(LISTS):
                assert len(h.list(cfg(thread), saver=saver)) == STEPS + REFRESHES
        h.call("prune", threads, keep_last=PRUNE_KEEP, saver=saver)
        state = throughput.capacity(moto_endpoint)
    table = h.table_name
    measured = {
        "table_write": throughput.total(state, table, "write"),
        "table_read": throughput.total(state, table, "read"),
        "run_index_write": throughput.total(state, table, "write", "run_id-index"),
        "threads_index_write": throughput.total(state, table, "write", "threads-index"),
    }
    predicted = capacity.replay_units(
        w, THREADS, STEPS, lists=LISTS, prune_keep=PRUNE_KEEP, refreshes=REFRESHES
    )
    print(name, h.variant, "measured", measured, "predicted", predicted)
    for what, units in measured.items():
        assert predicted[what] == pytest.approx(units, rel=0.10), (what, measured, predicted)
    assert measured["table_write"] > 0 and measured["table_read"] > 0
