"""Finding 4: a worker whose clock runs ahead must not take a live lease.

The adversity: NTP drift, a VM resumed with a stale clock, a container with a
wrong TZ-less clock. The skewed worker acts with the library's own API; its
wall clock is moved through the library's clock module (``clock.now``), the
one every timestamp in the library reads. Leases are short (2 s) and the
skew larger (3 s), as a 61 s skew against a 60 s lease.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver, clock, schema
from langgraph.checkpoint.dynamodb.lock import (
    AsyncThreadLease,
    LeaseUnavailableError,
    ThreadLease,
)
from langgraph.checkpoint.dynamodb.schema import ATTR

ROOT = Path(__file__).resolve().parents[2]
LEASE = 2.0
SKEW = 3.0


@pytest.fixture
def saver(moto_endpoint: str, names: dict[str, str]) -> Iterator[DynamoDBSaver]:
    with DynamoDBSaver(table_name=names["table_name"]) as s:
        s.setup()
        yield s


def _thread() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def _skew(monkeypatch: pytest.MonkeyPatch, seconds: float) -> Any:
    """Move this process's wall clock (the library's clock module); also returned, for ``clock=``."""
    real = time.time

    def skewed() -> float:
        return real() + seconds

    monkeypatch.setattr(clock, "now", skewed)
    return skewed


def _holder_process(table: str, thread_id: str, heartbeat: bool) -> subprocess.Popen[str]:
    """A lease holder on another machine (its own process, its own clock), printing its lease."""
    code = (
        "import sys, json\n"
        "from langgraph.checkpoint.dynamodb import DynamoDBSaver\n"
        "from langgraph.checkpoint.dynamodb.lock import ThreadLease\n"
        f"lease = ThreadLease(DynamoDBSaver(table_name={table!r}), {thread_id!r}, "
        f"lease_seconds={LEASE}, heartbeat={heartbeat})\n"
        "info = lease.acquire()\n"
        "print(json.dumps({'owner': info.owner, 'token': info.token}), flush=True)\n"
        "sys.stdin.readline()\n"
    )
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, str(ROOT / "src"), str(ROOT)])}
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_clock_ahead_does_not_take_a_live_lease(
    saver: DynamoDBSaver, names: dict[str, str], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The holder, in its own process, heartbeats; our clock runs 3 s ahead of its 2 s lease."""
    t = _thread()
    holder = _holder_process(saver.table_name, t, heartbeat=True)
    try:
        ahead = _skew(monkeypatch, SKEW)
        # Wait longer than the whole lease: a live holder renews, so the
        # version keeps changing and the skewed worker never takes over.
        if mode == "sync":
            with pytest.raises(LeaseUnavailableError):
                ThreadLease(
                    saver, t, lease_seconds=LEASE, wait_seconds=2 * LEASE, heartbeat=False, clock=ahead
                ).acquire()
        else:

            async def attempt() -> None:
                async with AsyncDynamoDBSaver(table_name=names["table_name"]) as asaver:
                    lease = AsyncThreadLease(
                        asaver, t, lease_seconds=LEASE, wait_seconds=2 * LEASE, heartbeat=False, clock=ahead
                    )
                    await lease.acquire()

            with pytest.raises(LeaseUnavailableError):
                asyncio.run(attempt())
    finally:
        _stop(holder)


def test_clock_ahead_does_not_take_a_fresh_lease_without_waiting(
    saver: DynamoDBSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No heartbeat needed: a lease just taken is live for its whole duration, whatever our clock says."""
    t = _thread()
    holder = _holder_process(saver.table_name, t, heartbeat=False)
    try:
        ahead = _skew(monkeypatch, SKEW)
        with pytest.raises(LeaseUnavailableError) as busy:
            ThreadLease(saver, t, lease_seconds=LEASE, wait_seconds=0, heartbeat=False, clock=ahead).acquire()
        assert busy.value.retry_after is not None and LEASE - 0.5 < busy.value.retry_after <= LEASE
    finally:
        _stop(holder)


@pytest.mark.parametrize("skew", [SKEW, -SKEW])
def test_dead_holders_lease_is_taken_over_after_a_watched_lease_duration(
    saver: DynamoDBSaver, monkeypatch: pytest.MonkeyPatch, skew: float
) -> None:
    """The holder is killed (SIGKILL): the lock is taken once watched unchanged for its lease, not before."""
    t = _thread()
    holder = _holder_process(saver.table_name, t, heartbeat=True)
    os.kill(holder.pid, signal.SIGKILL)
    _stop(holder)
    skewed = _skew(monkeypatch, skew)  # either way, wall clocks do not matter
    began = time.monotonic()
    lease = ThreadLease(
        saver, t, lease_seconds=LEASE, wait_seconds=10, poll_seconds=0.1, heartbeat=False, clock=skewed
    )
    info = lease.acquire()
    waited = time.monotonic() - began
    assert LEASE <= waited < LEASE + 3, waited
    assert info.owner == lease.owner and info.token == 2
    lease.release()


def test_same_process_retry_keeps_what_it_watched(saver: DynamoDBSaver) -> None:
    """A waiting Lambda answers busy; the client's retry to the same warm container proceeds."""
    t = _thread()
    holder = _holder_process(saver.table_name, t, heartbeat=False)
    try:
        with pytest.raises(LeaseUnavailableError) as busy:
            ThreadLease(saver, t, lease_seconds=LEASE, wait_seconds=0, heartbeat=False).acquire()
        retry_after = busy.value.retry_after
        assert retry_after is not None
        holder.kill()  # the holder dies meanwhile
        time.sleep(retry_after + 0.1)
        began = time.monotonic()
        lease = ThreadLease(saver, t, lease_seconds=LEASE, wait_seconds=0, heartbeat=False)
        lease.acquire()  # another lease object, same process: no second wait
        assert time.monotonic() - began < 1
        lease.release()
    finally:
        _stop(holder)


def test_items_carry_a_record_version_that_every_heartbeat_changes(saver: DynamoDBSaver) -> None:
    t = _thread()
    lease = ThreadLease(saver, t, lease_seconds=5, heartbeat=False)
    lease.acquire()

    def rvn() -> Any:
        item = saver.clients["dynamodb"].get_item(
            TableName=saver.table_name,
            Key={ATTR.PK: {"S": saver.partition_key(t)}, ATTR.SK: {"S": schema.LOCK_SK}},
            ConsistentRead=True,
        )["Item"]
        return json.dumps([item["rvn"], item["ld"]])

    first = rvn()
    lease.renew()
    assert rvn() != first
    lease.release()
