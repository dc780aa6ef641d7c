"""Findings 5 and 6: idempotency that survives a crash, and replays under the payload policy.

5. A worker dies between its work and its ``done`` record (kill -9, or the
   finish call fails). The retry of the same request must return the stored
   outcome without running the work again; the example agent must answer
   200 with the same result, not 409 ``not_waiting``.
6. Whoever can write the thread's partition can forge a ``done`` record. A
   saver that encrypts must refuse a plaintext one, as it refuses a
   plaintext checkpoint: ``CorruptPayloadError`` naming the record.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver, lock, schema
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError
from langgraph.checkpoint.dynamodb.lock import ANY_CHECKPOINT, _operations, arun_once, run_once
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.security._workers import FENCED, cfg, checkpoint

ROOT = Path(__file__).resolve().parents[2]
KEY = b"0123456789abcdef0123456789abcdef"


@pytest.fixture
def saver(moto_endpoint: str, names: dict[str, str]) -> Iterator[DynamoDBSaver]:
    with DynamoDBSaver(table_name=names["table_name"]) as s:
        s.setup()
        yield s


def _thread() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def _pythonpath() -> str:
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join([*paths, str(ROOT / "src"), str(ROOT)])


# ----------------------------------------------------- crash before "done"


class _Work:
    """A request's work: commits a checkpoint holding its result (tagged), then a counted side effect."""

    def __init__(self, saver: Any, thread_id: str, request_id: str, parent: str) -> None:
        self.saver, self.thread_id, self.request_id, self.parent = saver, thread_id, request_id, parent
        self.runs = 0

    def _cp(self) -> Any:
        cp = checkpoint()
        cp["channel_values"] = {"result": f"answer to {self.request_id}"}
        cp["channel_versions"] = {"result": "1"}
        return cp

    def sync(self, ctx: Any = None) -> str:
        target = ctx.saver if ctx is not None else self.saver
        target.put(
            cfg(self.thread_id, self.request_id, self.parent), self._cp(), {"step": 1}, {"result": "1"}
        )
        self.runs += 1
        return f"answer to {self.request_id}"

    async def asynchronous(self, ctx: Any = None) -> str:
        target = ctx.saver if ctx is not None else self.saver
        await target.aput(
            cfg(self.thread_id, self.request_id, self.parent), self._cp(), {"step": 1}, {"result": "1"}
        )
        self.runs += 1
        return f"answer to {self.request_id}"


def _from_state(latest: Any, ctx: Any) -> str | None:
    """The outcome an earlier attempt stored, if the latest checkpoint is that request's."""
    if latest is None or not ctx.wrote(latest.metadata):
        return None
    return latest.checkpoint["channel_values"]["result"]  # type: ignore[no-any-return]


def _recover_kwargs(is_async: bool) -> dict[str, Any]:
    if "recover" not in inspect.signature(run_once).parameters:
        return {}  # the code before the fix: no way to say what the work stored

    def recover(ctx: Any) -> str | None:
        return _from_state(ctx.saver.get_tuple(ctx.config()), ctx)

    async def arecover(ctx: Any) -> str | None:
        return _from_state(await ctx.saver.aget_tuple(ctx.config()), ctx)

    return {"recover": arecover if is_async else recover}


def _fail_finish_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``done`` write fails once (throttled, network cut, the sandbox frozen for good)."""
    real = _operations.finish_request
    state = {"failed": False}

    def flaky(*args: Any, **kw: Any) -> Any:
        if kw.get("status") == lock.STATUS_DONE and not state["failed"]:
            state["failed"] = True
            raise ConnectionError("connection reset while recording the result")
        return real(*args, **kw)

    monkeypatch.setattr(_operations, "finish_request", flaky)


def _fn(work: Any) -> Any:
    return (lambda ctx: work(ctx)) if FENCED else (lambda: work())


def test_retry_after_a_failed_done_write_returns_the_stored_outcome(
    saver: DynamoDBSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    t, parent = _thread(), str(uuid6())
    saver.put(cfg(t), checkpoint(parent), {"source": "input", "step": -1}, {})
    work = _Work(saver, t, "req-1", parent)
    _fail_finish_once(monkeypatch)
    with pytest.raises(ConnectionError):
        run_once(saver, t, "req-1", parent, _fn(work.sync))
    out = run_once(saver, t, "req-1", parent, _fn(work.sync), **_recover_kwargs(False))
    assert out.value == "answer to req-1"
    assert work.runs == 1  # not run again
    assert out.recovered and out.replayed
    again = run_once(saver, t, "req-1", parent, _fn(work.sync))
    assert (again.value, again.replayed, work.runs) == ("answer to req-1", True, 1)


def test_async_retry_after_a_failed_done_write_returns_the_stored_outcome(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        async with AsyncDynamoDBSaver(table_name=names["table_name"]) as asaver:
            await asaver.setup()
            t, parent = _thread(), str(uuid6())
            await asaver.aput(cfg(t), checkpoint(parent), {"source": "input", "step": -1}, {})
            work = _Work(asaver, t, "req-1", parent)
            _fail_finish_once(monkeypatch)
            with pytest.raises(ConnectionError):
                await arun_once(asaver, t, "req-1", parent, _fn(work.asynchronous))
            out = await arun_once(asaver, t, "req-1", parent, _fn(work.asynchronous), **_recover_kwargs(True))
            assert out.value == "answer to req-1"
            assert work.runs == 1

    asyncio.run(scenario())


def test_retry_after_the_worker_is_killed_before_done_does_not_rerun(
    saver: DynamoDBSaver, tmp_path: Path
) -> None:
    """kill -9 between the work and its record: the retry (after the lease) returns the stored outcome."""
    t, parent = _thread(), str(uuid6())
    saver.put(cfg(t), checkpoint(parent), {"source": "input", "step": -1}, {})
    counter = tmp_path / "side-effects"
    args = {
        "mode": "sync",
        "table": saver.table_name,
        "thread": t,
        "request": "req-1",
        "parent": parent,
        "counter": str(counter),
        "lease": 2.0,
        "who": "first",
        "crash_before_done": True,
    }
    proc = subprocess.run(
        [sys.executable, "-m", "tests.security._workers", "run_once", json.dumps(args)],
        env={**os.environ, "PYTHONPATH": _pythonpath()},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 137, proc.stderr
    assert counter.read_text().splitlines() == ["first"]

    def work(ctx: Any = None) -> str:
        with counter.open("a") as f:
            f.write("retry\n")
        return "rerun"

    def recover(ctx: Any) -> str | None:
        latest = ctx.saver.get_tuple(ctx.config())
        return "result of first" if latest is not None and ctx.wrote(latest.metadata) else None

    kwargs: dict[str, Any] = {"wait_seconds": 10}
    if FENCED:
        kwargs["recover"] = recover
    out = run_once(saver, t, "req-1", ANY_CHECKPOINT, _fn(work), **kwargs)
    assert out.value == "result of first"
    assert counter.read_text().splitlines() == ["first"]


# ------------------------------------------------------------ the agent


AGENT_CRASHER = textwrap.dedent(
    """
    import os, sys, json
    from langgraph.checkpoint.dynamodb import lock
    from langgraph.checkpoint.dynamodb.lock import _operations
    from lambdas.agent import handler

    real = _operations.finish_request

    def die(*args, **kw):
        if kw.get("status") == lock.STATUS_DONE:
            sys.stdout.write("CRASHING\\n"); sys.stdout.flush()
            os._exit(137)  # the graph ran and checkpointed; the result was never recorded
        return real(*args, **kw)

    _operations.finish_request = die
    handler.handler(json.loads(sys.argv[1]))
    """
)


@pytest.fixture
def agent_env(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    from lambdas.agent import graph as agent_graph
    from lambdas.agent import handler as agent

    with DynamoDBSaver(table_name=names["table_name"]) as s:
        s.setup()
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TABLE", names["table_name"])
    monkeypatch.delenv("LANGGRAPH_DYNAMODB_BUCKET", raising=False)
    monkeypatch.setenv("LEASE_SECONDS", "2")
    monkeypatch.setenv("LEASE_WAIT_SECONDS", "10")
    agent.reset()
    agent_graph.reset_counts()
    yield names
    agent.reset()


def test_agent_retry_after_crash_between_graph_and_done_returns_the_result(agent_env: dict[str, str]) -> None:
    from lambdas.agent import graph as agent_graph
    from lambdas.agent import handler as agent

    t = _thread()
    started = agent.handler({"action": "start", "thread_id": t, "request_id": "r1", "input": "Add an export"})
    assert started["statusCode"] == 200 and started["status"] == "waiting"
    event = {
        "action": "resume",
        "thread_id": t,
        "request_id": "r2",
        "answer": "CSV",
        "checkpoint_id": started["checkpoint_id"],
    }
    proc = subprocess.run(
        [sys.executable, "-c", AGENT_CRASHER, json.dumps(event)],
        env={**os.environ, "PYTHONPATH": _pythonpath()},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 137 and "CRASHING" in proc.stdout, proc.stderr

    agent_graph.reset_counts()
    retried = agent.handler(event)
    assert retried["statusCode"] == 200, retried  # not 409 not_waiting
    assert retried["status"] == "done" and retried["result"] == "Implemented 'Add an export' as agreed: CSV"
    assert retried["recovered"] is True
    assert agent_graph.EXECUTIONS["implement"] == 0  # the side-effecting node did not run again
    again = agent.handler(event)
    assert (again["statusCode"], again["replayed"], again["result"]) == (200, True, retried["result"])


def test_agent_retry_of_a_crashed_start_returns_the_question(agent_env: dict[str, str]) -> None:
    from lambdas.agent import graph as agent_graph
    from lambdas.agent import handler as agent

    t = _thread()
    event = {"action": "start", "thread_id": t, "request_id": "r1", "input": "Add an export"}
    proc = subprocess.run(
        [sys.executable, "-c", AGENT_CRASHER, json.dumps(event)],
        env={**os.environ, "PYTHONPATH": _pythonpath()},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 137, proc.stderr
    agent_graph.reset_counts()
    retried = agent.handler(event)
    assert retried["statusCode"] == 200, retried  # not 409 thread_exists
    assert retried["status"] == "waiting" and retried["question"] == agent_graph.QUESTION
    assert agent_graph.EXECUTIONS["clarify"] == 0
    done = agent.handler(
        {
            **event,
            "action": "resume",
            "request_id": "r2",
            "answer": "CSV",
            "checkpoint_id": retried["checkpoint_id"],
        }
    )
    assert done["statusCode"] == 200 and done["status"] == "done", done


# ------------------------------------------------ forged "done" records


def _forge_done_record(saver: Any, thread_id: str, request_id: str, value: Any) -> None:
    """The attacker's raw write, in the thread's own partition: a plaintext result."""
    type_name, data = JsonPlusSerializer().dumps_typed(value)
    boto3.client("dynamodb").put_item(
        TableName=saver.table_name,
        Item={
            ATTR.PK: {"S": saver.partition_key(thread_id)},
            ATTR.SK: {"S": schema.request_sk(request_id)},
            ATTR.KIND: {"S": schema.META_ITEM},
            ATTR.FORMAT: {"N": str(schema.BASE_FORMAT_VERSION)},
            "st": {"S": "done"},
            "own": {"S": "attacker"},
            "rt": {"S": type_name},
            "rv": {"B": data},
            "rs": {"N": str(len(data))},
        },
    )


def test_forged_plaintext_done_record_is_refused_by_an_encrypting_saver(
    moto_endpoint: str, names: dict[str, str]
) -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(key=KEY)
    with DynamoDBSaver(table_name=names["table_name"], serde=serde) as saver:
        saver.setup()
        t = _thread()
        # An honest result replays (it is stored encrypted).
        assert run_once(saver, t, "honest", ANY_CHECKPOINT, lambda: {"approved": False}).value == {
            "approved": False
        }
        assert run_once(saver, t, "honest", ANY_CHECKPOINT, lambda: "x").value == {"approved": False}
        _forge_done_record(saver, t, "r-forged", {"approved": True, "refund": 10_000})
        ran: list[int] = []
        with pytest.raises(CorruptPayloadError, match="r-forged"):
            run_once(saver, t, "r-forged", ANY_CHECKPOINT, lambda: ran.append(1))
        assert ran == []


def test_async_forged_plaintext_done_record_is_refused(moto_endpoint: str, names: dict[str, str]) -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(key=KEY)

    async def scenario() -> None:
        async with AsyncDynamoDBSaver(table_name=names["table_name"], serde=serde) as saver:
            await saver.setup()
            t = _thread()
            _forge_done_record(saver, t, "r-forged", {"approved": True})

            async def work() -> str:
                return "never"

            with pytest.raises(CorruptPayloadError, match="r-forged"):
                await arun_once(saver, t, "r-forged", ANY_CHECKPOINT, work)

    asyncio.run(scenario())
