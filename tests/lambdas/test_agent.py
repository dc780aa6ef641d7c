"""The example agent Lambda against a moto server: concurrency, idempotency, staleness, takeover.

The handler is called directly (moto cannot invoke Lambdas), with real boto3
clients on the loopback endpoint. Node executions are counted by the graph
module, so "ran exactly once" is measured, not inferred.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lambdas.agent import graph as agent_graph
from lambdas.agent import handler as agent

from langgraph.checkpoint.dynamodb import DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb.schema import ATTR

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """A fresh table and bucket, the handler's environment, clean module state."""
    with DynamoDBSaver(**names) as saver:
        saver.setup()
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TABLE", names["table_name"])
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_BUCKET", names["bucket_name"])
    monkeypatch.setenv("LEASE_SECONDS", "10")
    monkeypatch.setenv("LEASE_WAIT_SECONDS", "10")
    agent.reset()
    agent_graph.reset_counts()
    monkeypatch.setattr(agent_graph, "WORK_SECONDS", 0.0)
    monkeypatch.setattr(agent_graph, "ON_IMPLEMENT", None)
    yield names
    agent.reset()


def _thread() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def start(thread_id: str, request_id: str = "start-1") -> dict[str, Any]:
    return agent.handler(
        {
            "action": "start",
            "thread_id": thread_id,
            "request_id": request_id,
            "input": "Add an export feature",
        }
    )


def resume(
    thread_id: str, checkpoint_id: str | None, request_id: str, answer: str = "CSV, admins only"
) -> dict[str, Any]:
    return agent.handler(
        {
            "action": "resume",
            "thread_id": thread_id,
            "request_id": request_id,
            "answer": answer,
            "checkpoint_id": checkpoint_id,
        }
    )


def counts() -> dict[str, int]:
    return dict(agent_graph.EXECUTIONS)


def test_start_asks_then_resume_finishes(env: dict[str, str]) -> None:
    t = _thread()
    first = start(t)
    assert first["statusCode"] == 200, first
    assert first["status"] == "waiting"
    assert first["question"] == agent_graph.QUESTION
    assert first["checkpoint_id"]
    assert counts() == {"clarify": 1}

    done = resume(t, first["checkpoint_id"], "answer-1")
    assert done["statusCode"] == 200, done
    assert done["status"] == "done"
    assert "CSV, admins only" in done["result"]
    assert done["replayed"] is False
    assert done["checkpoint_id"] != first["checkpoint_id"]
    # clarify re-runs from its top on resume (LangGraph semantics); implement once.
    assert counts() == {"clarify": 2, "implement": 1}


CALLER_A = "arn:aws:iam::123456789012:user/alice"


def test_function_url_event(env: dict[str, str]) -> None:
    t = _thread()
    event = {
        "version": "2.0",
        "requestContext": {"http": {"method": "POST"}, "authorizer": {"iam": {"userArn": CALLER_A}}},
        "headers": {"content-type": "application/json"},
        "body": json.dumps({"action": "start", "thread_id": t, "request_id": "r1", "input": "export"}),
        "isBase64Encoded": False,
    }
    resp = agent.handler(event)
    assert resp["statusCode"] == 200
    assert resp["headers"]["Content-Type"] == "application/json"
    body = json.loads(resp["body"])
    assert body["status"] == "waiting" and body["question"] == agent_graph.QUESTION

    import base64

    raw = json.dumps(
        {
            "action": "resume",
            "thread_id": t,
            "request_id": "r2",
            "answer": "xlsx",
            "checkpoint_id": body["checkpoint_id"],
        }
    )
    resp = agent.handler(
        {
            "headers": {},
            "body": base64.b64encode(raw.encode()).decode(),
            "isBase64Encoded": True,
            "requestContext": {"authorizer": {"iam": {"userArn": CALLER_A}}},
        }
    )
    assert resp["statusCode"] == 200, resp
    assert "xlsx" in json.loads(resp["body"])["result"]


def _race(n: int, call: Any) -> list[dict[str, Any]]:
    """Run ``call(i)`` in ``n`` threads released at the same instant."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        results[i] = call(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    return results


def test_concurrent_retries_of_one_request_run_the_graph_once(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client retry racing the original: same request id, both get the same answer."""
    t = _thread()
    cp = start(t)["checkpoint_id"]
    agent_graph.reset_counts()
    monkeypatch.setattr(agent_graph, "WORK_SECONDS", 0.5)  # make the two requests overlap

    results = _race(2, lambda i: resume(t, cp, "same-request"))

    assert [r["statusCode"] for r in results] == [200, 200], results
    assert results[0]["result"] == results[1]["result"]
    assert sorted(r["replayed"] for r in results) == [False, True]
    assert counts() == {"clarify": 1, "implement": 1}


def test_double_click_two_request_ids_runs_once_and_rejects_the_second(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two different requests against the same checkpoint: the second waits, then is stale."""
    t = _thread()
    cp = start(t)["checkpoint_id"]
    agent_graph.reset_counts()
    monkeypatch.setattr(agent_graph, "WORK_SECONDS", 0.5)

    results = _race(2, lambda i: resume(t, cp, f"click-{i}", answer=f"answer {i}"))

    by_status = sorted(results, key=lambda r: r["statusCode"])
    assert [r["statusCode"] for r in by_status] == [200, 409], results
    assert by_status[1]["error"] == "stale_checkpoint"
    assert by_status[1]["expected"] == cp
    assert by_status[1]["actual"] == by_status[0]["checkpoint_id"]
    assert counts() == {"clarify": 1, "implement": 1}


def test_concurrent_request_without_waiting_gets_busy(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _thread()
    cp = start(t)["checkpoint_id"]
    agent_graph.reset_counts()
    monkeypatch.setattr(agent_graph, "WORK_SECONDS", 1.0)
    monkeypatch.setenv("LEASE_WAIT_SECONDS", "0")

    results = _race(2, lambda i: resume(t, cp, f"click-{i}"))

    codes = sorted(r["statusCode"] for r in results)
    assert codes == [200, 409], results
    busy = next(r for r in results if r["statusCode"] == 409)
    assert busy["error"] == "busy" and busy["retry_after"] >= 1
    assert counts() == {"clarify": 1, "implement": 1}


def test_repeated_request_id_returns_first_result_without_running(env: dict[str, str]) -> None:
    t = _thread()
    first = start(t)
    done = resume(t, first["checkpoint_id"], "req-42")
    before = counts()

    # The retry carries the checkpoint id the client saw back then, which is
    # stale by now: the stored result still wins, nothing runs.
    again = resume(t, first["checkpoint_id"], "req-42", answer="a different answer")
    assert again["statusCode"] == 200, again
    assert again["replayed"] is True
    assert again["result"] == done["result"]
    assert again["checkpoint_id"] == done["checkpoint_id"]
    assert counts() == before

    # The same holds for a repeated start.
    assert start(t)["replayed"] is True
    assert counts() == before


def test_stale_checkpoint_is_rejected(env: dict[str, str]) -> None:
    t = _thread()
    first = start(t)
    with DynamoDBSaver(table_name=env["table_name"], bucket_name=env["bucket_name"]) as saver:
        older = [
            c.config["configurable"]["checkpoint_id"] for c in saver.list({"configurable": {"thread_id": t}})
        ]
    assert len(older) >= 2 and older[0] == first["checkpoint_id"]

    stale = resume(t, older[1], "r-old-page")
    assert stale["statusCode"] == 409
    assert stale["error"] == "stale_checkpoint"
    assert stale["expected"] == older[1] and stale["actual"] == first["checkpoint_id"]
    assert counts() == {"clarify": 1}

    ok = resume(t, first["checkpoint_id"], "r-fresh-page")
    assert ok["statusCode"] == 200 and ok["status"] == "done"
    late = resume(t, first["checkpoint_id"], "r-late-tab")
    assert late["statusCode"] == 409 and late["error"] == "stale_checkpoint"


def test_start_on_existing_thread_and_unknown_thread(env: dict[str, str]) -> None:
    t = _thread()
    start(t, "s1")
    again = start(t, "s2")
    assert again["statusCode"] == 409 and again["error"] == "thread_exists"
    missing = resume(_thread(), "1f0c0000-0000-6000-8000-000000000000", "r")
    assert missing["statusCode"] == 404 and missing["error"] == "thread_not_found"


@pytest.mark.parametrize(
    "event",
    [
        "not a dict",
        {"action": "explode", "thread_id": "t", "request_id": "r"},
        {"action": "start", "thread_id": "t", "request_id": "r"},
        {"action": "resume", "thread_id": "t", "request_id": "r", "answer": "x"},
        {"action": "resume", "thread_id": "", "request_id": "r", "answer": "x", "checkpoint_id": "c"},
        {"headers": {}, "body": "{not json", "requestContext": {}},
    ],
)
def test_bad_requests(env: dict[str, str], event: Any) -> None:
    resp = agent.handler(event)
    assert resp["statusCode"] == 400, resp
    assert counts() == {}


def _put_lock(table: str, thread_id: str, *, owner: str, lease_ms: int) -> None:
    """A lock item as a crashed holder leaves it behind (its wall-clock expiry long past)."""
    import boto3

    expires_ms = int((time.time() - 30) * 1000)
    boto3.client("dynamodb").put_item(
        TableName=table,
        Item={
            ATTR.PK: {"S": schema.partition_key(thread_id)},
            ATTR.SK: {"S": schema.LOCK_SK},
            ATTR.KIND: {"S": schema.META_ITEM},
            ATTR.FORMAT: {"N": str(schema.FORMAT_VERSION)},
            "own": {"S": owner},
            "rvn": {"S": uuid.uuid4().hex},
            "ld": {"N": str(lease_ms)},
            "lx": {"N": str(expires_ms)},
            "fen": {"N": "7"},
            schema.TTL_ATTRIBUTE: {"N": str(expires_ms // 1000 + 3600)},
        },
    )


def test_crashed_holders_lock_is_taken_over_by_a_retry_in_the_same_container(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No waiting inside the request: 409 busy with a retry hint, and the retry proceeds."""
    t = _thread()
    cp = start(t)["checkpoint_id"]
    _put_lock(env["table_name"], t, owner="crashed-container", lease_ms=1500)
    monkeypatch.setenv("LEASE_WAIT_SECONDS", "0")

    busy = resume(t, cp, "after-crash")
    assert busy["statusCode"] == 409 and busy["error"] == "busy", busy
    assert busy["retry_after"] in (1, 2)  # the holder's 1.5 s lease, watched from now
    time.sleep(1.6)
    # The container remembers it watched the lock unchanged: no second wait.
    done = resume(t, cp, "after-crash")
    assert done["statusCode"] == 200 and done["status"] == "done", done
    assert counts()["implement"] == 1


def test_short_lease_of_crashed_holder_is_taken_over_after_expiry(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _thread()
    cp = start(t)["checkpoint_id"]
    _put_lock(env["table_name"], t, owner="crashed-container", lease_ms=1500)

    monkeypatch.setenv("LEASE_WAIT_SECONDS", "10")
    began = time.monotonic()
    done = resume(t, cp, "patient")
    waited = time.monotonic() - began
    assert done["statusCode"] == 200 and done["status"] == "done", done
    assert 1.4 < waited < 9, waited  # it watched the lock for the holder's lease, not the whole budget
    assert counts()["implement"] == 1


def test_failed_run_is_retried_with_the_same_request_id(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _thread()
    cp = start(t)["checkpoint_id"]
    calls = {"n": 0}

    def flaky(state: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("downstream timeout")

    monkeypatch.setattr(agent_graph, "ON_IMPLEMENT", flaky)
    failed = resume(t, cp, "req-flaky")
    # The error's type, never its message (which may quote state).
    assert failed["statusCode"] == 500 and failed["message"] == "RuntimeError"

    # The thread moved (clarify's answer is saved), but this is a retry of the
    # same request from the same checkpoint: not stale, it continues.
    retried = resume(t, cp, "req-flaky")
    assert retried["statusCode"] == 200 and retried["status"] == "done", retried
    assert retried["recovered"] is True
    assert counts() == {"clarify": 2, "implement": 2}  # clarify did not run again


CRASHER = textwrap.dedent(
    """
    import os, sys, json
    from lambdas.agent import graph, handler

    def die(state):
        sys.stdout.write("CRASHING\\n"); sys.stdout.flush()
        os._exit(137)  # no cleanup at all: the lease and the request record stay behind

    graph.ON_IMPLEMENT = die
    handler.handler(json.loads(sys.argv[1]))
    """
)


def test_crashed_process_request_is_recovered_after_lease_expiry(
    env: dict[str, str], moto_endpoint: str
) -> None:
    """A Lambda instance dies mid-run (the process is killed), a retry takes over."""
    t = _thread()
    cp = start(t)["checkpoint_id"]
    event = {
        "action": "resume",
        "thread_id": t,
        "request_id": "req-crash",
        "answer": "CSV",
        "checkpoint_id": cp,
    }
    child_env = {
        **os.environ,
        "AWS_ENDPOINT_URL": moto_endpoint,
        "LEASE_SECONDS": "2",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", CRASHER, json.dumps(event)],
        env=child_env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 137, proc.stderr
    assert "CRASHING" in proc.stdout

    agent_graph.reset_counts()
    began = time.monotonic()
    resp = agent.handler(event)
    assert resp["statusCode"] == 200 and resp["status"] == "done", resp
    assert resp["recovered"] is True
    assert time.monotonic() - began < 9
    # Only the node that crashed runs again; clarify's result came from the store.
    assert counts() == {"implement": 1}


def test_agent_uses_the_store_environment(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """TTL and key prefix from the construct's environment: heads are kept, S3 keys prefixed."""
    import boto3

    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TTL_SECONDS", "3600")
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_S3_KEY_PREFIX", "agent-ckpt/")
    agent.reset()
    t = _thread()
    assert start(t)["statusCode"] == 200
    saver = agent.get_saver()
    assert (saver.ttl, saver.track_threads, saver.s3_key_prefix) == (3600, True, "agent-ckpt/")
    head = boto3.client("dynamodb").get_item(  # a direct invoke without "caller": unscoped thread id
        TableName=env["table_name"],
        Key={ATTR.PK: {"S": schema.partition_key(t)}, ATTR.SK: {"S": schema.HEAD_SK}},
        ConsistentRead=True,
    )
    assert "Item" in head and int(head["Item"][schema.TTL_ATTRIBUTE]["N"]) > time.time() + 3000
