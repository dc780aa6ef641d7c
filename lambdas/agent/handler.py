"""Example agent Lambda: start a thread (it asks a question), resume it with the answer.

Event (direct invoke), or the same object as the JSON body of a Lambda
Function URL / API Gateway request::

    {"action": "start",  "thread_id": "t-1", "request_id": "r-1", "input": "Add an export feature"}
    {"action": "resume", "thread_id": "t-1", "request_id": "r-2", "answer": "CSV, admins only",
     "checkpoint_id": "<the checkpoint id returned by start>"}

Responses carry an HTTP-style ``statusCode`` (Function URL responses put the
payload in ``body``):

* 200 ``{"status": "waiting", "question", "checkpoint_id"}`` after a start;
  ``{"status": "done", "result", "checkpoint_id"}`` after a resume.
  ``replayed: true`` when the request id was seen before and nothing ran.
* 400 malformed event; 404 unknown thread;
* 409 ``stale_checkpoint`` (the thread moved past the ``checkpoint_id`` the
  caller saw), ``thread_exists`` (start on an existing thread), ``busy``
  (another request holds the thread; retry), ``not_waiting``.
* 500 anything else (the request may be retried with the same request id).

Why the lock: a double click or a client retry sends two resumes of one
thread at once, possibly to two Lambda instances. LangGraph would run the
graph twice from the same checkpoint. The handler runs each request through
``lock.run_once``: a per-thread lease lock in DynamoDB, a request-id record
that replays the first result, and a check that the thread is still at the
checkpoint the caller saw.

Configuration (environment): ``TABLE_NAME`` (required), ``BUCKET_NAME``,
``S3_KEY_PREFIX``, ``THREAD_TTL_SECONDS``, ``TRACK_THREADS`` (the store
environment of the CDK construct), ``LEASE_SECONDS`` (default 60: longer than a run, renewed while running),
``LEASE_WAIT_SECONDS`` (default 5: how long a concurrent request waits for
the thread before answering 409 busy).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
import time
from typing import Any

from langgraph.types import Command

from langgraph.checkpoint.dynamodb import DynamoDBSaver, handlers
from langgraph.checkpoint.dynamodb.lock import (
    LeaseUnavailableError,
    ResultNotStoredError,
    StaleCheckpointError,
    run_once,
)

from .graph import build_graph

__all__ = ["get_graph", "get_saver", "handler", "reset"]

log = logging.getLogger(__name__)

# Created on first use and kept for the life of the container: the clients'
# connection pools then survive across warm invocations.
_graph: Any = None
_init_lock = threading.Lock()


def get_saver() -> DynamoDBSaver:
    """The container's saver: the same one the maintenance Lambdas build.

    ``handlers.get_saver`` reads the store environment the CDK construct
    gives every function (``TABLE_NAME``, ``BUCKET_NAME``, ``S3_KEY_PREFIX``,
    ``THREAD_TTL_SECONDS``, ``TRACK_THREADS``), so this agent and the
    maintenance jobs agree on key prefix, TTL and thread heads.
    """
    return handlers.get_saver()


def get_graph() -> Any:
    """The compiled graph, bound to :func:`get_saver`."""
    global _graph
    saver = get_saver()
    with _init_lock:
        if _graph is None:
            _graph = build_graph(saver)
        return _graph


def reset() -> None:
    """Drop the cached saver and graph (tests: new table, new endpoint)."""
    global _graph
    with _init_lock:
        handlers.reset_saver()
        _graph = None


class _HTTPError(Exception):
    def __init__(self, status: int, error: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.payload = {"error": error, "message": message, **extra}


def _is_http(event: Any) -> bool:
    return isinstance(event, dict) and "body" in event and ("requestContext" in event or "headers" in event)


def _request(event: Any) -> dict[str, Any]:
    if _is_http(event):
        body = event.get("body") or ""
        if event.get("isBase64Encoded"):
            body = base64.b64decode(body).decode("utf-8")
        try:
            event = json.loads(body)
        except ValueError as exc:
            raise _HTTPError(400, "bad_request", f"body is not JSON: {exc}") from exc
    if not isinstance(event, dict):
        raise _HTTPError(400, "bad_request", "event must be a JSON object")
    action = event.get("action")
    if action not in ("start", "resume"):
        raise _HTTPError(400, "bad_request", "action must be 'start' or 'resume'")
    fields = ["thread_id", "request_id"] + (["input"] if action == "start" else ["answer", "checkpoint_id"])
    for name in fields:
        value = event.get(name)
        if not isinstance(value, str) or not value.strip():
            raise _HTTPError(400, "bad_request", f"{name!r} must be a non-empty string")
    return event


def _respond(status: int, payload: dict[str, Any], http: bool) -> dict[str, Any]:
    if http:
        headers = {"Content-Type": "application/json"}
        if "retry_after" in payload:
            headers["Retry-After"] = str(payload["retry_after"])
        return {"statusCode": status, "headers": headers, "body": json.dumps(payload)}
    return {"statusCode": status, **payload}


def _latest_id(graph: Any, config: dict[str, Any]) -> str | None:
    """The thread's latest checkpoint id: what the caller must send back with its answer."""
    return graph.get_state(config).config.get("configurable", {}).get("checkpoint_id")  # type: ignore[no-any-return]


def _start(graph: Any, config: dict[str, Any], text: str) -> dict[str, Any]:
    out = graph.invoke({"requirement": text}, config, durability="sync")
    interrupts = out.get("__interrupt__") or []
    payload: dict[str, Any] = {"thread_id": config["configurable"]["thread_id"]}
    if interrupts:
        payload.update(status="waiting", question=interrupts[0].value["question"])
    else:
        payload.update(status="done", result=out.get("result"))
    payload["checkpoint_id"] = _latest_id(graph, config)
    return payload


def _resume(graph: Any, config: dict[str, Any], answer: str) -> dict[str, Any]:
    snap = graph.get_state(config)
    if any(t.interrupts for t in snap.tasks):
        out = graph.invoke(Command(resume=answer), config, durability="sync")
    elif snap.next:
        # An earlier attempt of this request got past the question and then
        # crashed: continue from its last checkpoint (finished nodes are not
        # run again: their writes are stored).
        out = graph.invoke(None, config, durability="sync")
    else:
        raise _HTTPError(409, "not_waiting", "the thread is not waiting for an answer")
    if out.get("__interrupt__"):
        return {
            "thread_id": config["configurable"]["thread_id"],
            "status": "waiting",
            "question": out["__interrupt__"][0].value["question"],
            "checkpoint_id": _latest_id(graph, config),
        }
    return {
        "thread_id": config["configurable"]["thread_id"],
        "status": "done",
        "result": out.get("result"),
        "checkpoint_id": _latest_id(graph, config),
    }


def handler(event: Any, context: Any = None) -> dict[str, Any]:
    """Lambda entry point (direct invoke or Function URL).

    Example:
        ```python
        first = handler({"action": "start", "thread_id": "t", "request_id": "r1", "input": "export"})
        done = handler({"action": "resume", "thread_id": "t", "request_id": "r2",
                        "answer": "CSV", "checkpoint_id": first["checkpoint_id"]})
        ```
    """
    http = _is_http(event)
    try:
        req = _request(event)
        thread_id, request_id = req["thread_id"], req["request_id"]
        config = {"configurable": {"thread_id": thread_id}}
        graph = get_graph()
        if req["action"] == "start":
            expected: str | None = None  # a start needs a new thread

            def work() -> dict[str, Any]:
                return _start(graph, config, req["input"])
        else:
            expected = req["checkpoint_id"]

            def work() -> dict[str, Any]:
                return _resume(graph, config, req["answer"])

        outcome = run_once(
            get_saver(),
            thread_id,
            request_id,
            expected,
            work,
            lease_seconds=float(os.environ.get("LEASE_SECONDS", "60")),
            wait_seconds=float(os.environ.get("LEASE_WAIT_SECONDS", "5")),
        )
        return _respond(
            200,
            {
                **outcome.value,
                "request_id": request_id,
                "replayed": outcome.replayed,
                "recovered": outcome.recovered,
            },
            http,
        )
    except _HTTPError as err:
        return _respond(err.status, err.payload, http)
    except StaleCheckpointError as err:
        if err.expected is None:
            return _respond(409, {"error": "thread_exists", "message": str(err), "actual": err.actual}, http)
        if err.actual is None:
            return _respond(404, {"error": "thread_not_found", "message": str(err)}, http)
        payload = {
            "error": "stale_checkpoint",
            "message": str(err),
            "expected": err.expected,
            "actual": err.actual,
        }
        return _respond(409, payload, http)
    except LeaseUnavailableError as err:
        retry = max(1, round(err.expires_at - time.time())) if err.expires_at else 1
        busy: dict[str, Any] = {
            "error": "busy",
            "message": "another request is running this thread; retry later",
            "retry_after": retry,
        }
        return _respond(409, busy, http)
    except ResultNotStoredError as err:
        return _respond(409, {"error": "result_not_stored", "message": str(err)}, http)
    except Exception as exc:
        log.exception("agent request failed")
        return _respond(500, {"error": "internal", "message": f"{type(exc).__name__}: {exc}"}, http)
