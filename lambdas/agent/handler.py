"""Example agent Lambda: start a thread (it asks a question), resume it with the answer.

Event (direct invoke), or the same object as the JSON body of a Lambda
Function URL / API Gateway request::

    {"action": "start",  "thread_id": "t-1", "request_id": "r-1", "input": "Add an export feature"}
    {"action": "resume", "thread_id": "t-1", "request_id": "r-2", "answer": "CSV, admins only",
     "checkpoint_id": "<the checkpoint id returned by start>"}
    {"action": "status", "thread_id": "t-1"}

Responses carry an HTTP-style ``statusCode`` (Function URL responses put the
payload in ``body``):

* 200 ``{"status": "waiting", "question", "checkpoint_id"}`` after a start;
  ``{"status": "done", "result", "checkpoint_id"}`` after a resume;
  ``{"status": "running", "checkpoint_id"}`` when the run drained before the
  invocation's deadline (see below). ``replayed: true`` when the request id
  was seen before and nothing ran. ``status`` answers the same shapes from the
  stored state, running nothing.
* 400 malformed event (also: ids over 256 bytes, invalid Unicode, JSON too deep);
  413 a body over 128 KB; 401 an HTTP request without an authenticated caller;
  404 unknown thread (also: another caller's thread, see below);
* 409 ``stale_checkpoint`` (the thread moved past the ``checkpoint_id`` the
  caller saw), ``thread_exists`` (start on an existing thread), ``busy``
  (another request holds the thread; retry), ``not_waiting``.
* 500 anything else (the request may be retried with the same request id); the
  body and the log name the error's type only, never its message (which may
  quote state), unless ``AGENT_DEBUG=1``.

Why the lock: a double click or a client retry sends two resumes of one
thread at once, possibly to two Lambda instances. LangGraph would run the
graph twice from the same checkpoint. The handler runs each request through
``lock.run_once``: a per-thread lease lock in DynamoDB, a request-id record
that replays the first result, and a check that the thread is still at the
checkpoint the caller saw.

Callers own their threads: a thread id names a thread *of the caller*. The
caller is the authenticated principal of the request: with IAM auth through a
Cognito identity pool, the identity id (``authorizer.iam.cognitoIdentity.identityId``;
REST APIs: ``identity.cognitoIdentityId``), since all of a pool's users share its
role; with other IAM auth (Function URL ``AWS_IAM``, API Gateway)
``requestContext.authorizer.iam.userArn``, whose session name tells an assumed
role's sessions apart (or ``userId``; REST APIs: ``requestContext.identity.userArn``); with a JWT or
Cognito authorizer the claim named by ``CALLER_CLAIM`` (default ``sub``; set
it to a tenant claim to let a tenant's users share threads). The store key of
a thread is ``u-<sha256(caller)[:32]>/<thread_id>``, so caller B's
``thread_id`` "t-1" is another thread than caller A's "t-1": B can neither
start, resume nor read A's thread, and learns nothing about whether it exists
(its resume gets the same 404 as for a thread that never existed). An HTTP
request without an identity gets 401 (a Function URL with ``AuthType NONE``
is refused). A direct invoke is authenticated by IAM (``lambda:InvokeFunction``):
the invoker is a trusted backend, which may act for a user by adding
``"caller": "<user id>"`` to the event (scoped like an HTTP caller), or, without
it, acts on unscoped thread ids (like an operator; direct invokes of earlier
versions keep their threads).

Deadlines: the graph runs under ``runs.run_with_deadline``, which asks
LangGraph to stop at the next superstep boundary once the invocation's
remaining time falls below its margin (``AGENT_DRAIN_MARGIN``, at least 5 s,
else twice the longest superstep so far), so an invocation answers before Lambda ends it. A drained
run answers ``running``; once the thread's lease is released the handler
sends itself ``runs.continuation_event`` (an asynchronous ``Invoke``, which
needs ``lambda:InvokeFunction`` on the function itself), and that invocation
resumes the run through ``runs.run_continuation``: under the lease, at most
once per checkpoint (a duplicate delivery replays), draining and continuing
again as often as needed. ``AGENT_CONTINUE=0`` turns self-continuation off:
the client polls ``status`` and sends ``resume`` again (with a new request id
and the checkpoint id ``status`` gave) to go on.

Crashes: every checkpoint a request writes carries its request id in its
metadata, and the graph runs on a saver bound to the request's lease (a worker
that lost the lease cannot land a checkpoint). A retry of a request whose first
attempt crashed after the graph finished but before the result was recorded
rebuilds the answer from the stored state (200, ``recovered: true``) instead of
running the graph again.

Configuration (environment): the store's ``LANGGRAPH_DYNAMODB_*`` variables
(``_TABLE`` required, ``_BUCKET``, ``_S3_KEY_PREFIX``, ``_TTL_SECONDS``,
``_TRACK_THREADS``...: the CDK construct's ``saver_environment``, see
``langgraph.checkpoint.dynamodb.config``), ``LEASE_SECONDS`` (default 60: longer than a run, renewed while running),
``LEASE_WAIT_SECONDS`` (default 5: how long a concurrent request waits for
the thread before answering 409 busy), ``CALLER_CLAIM`` (default ``sub``),
``AGENT_CONTINUE`` (default ``1``: continue drained runs by itself),
``AGENT_DRAIN_MARGIN`` (default 5: seconds before the deadline at which a run
drains at the latest; the handler's own bookkeeping after the run fits in it).

A lock left by a crashed instance is taken over only after this container has
watched it unchanged for the holder's whole lease (no clocks are compared);
until then the answer is 409 ``busy`` with ``retry_after``. The container
remembers what it watched, so a retry sent to the same warm container after
``retry_after`` proceeds.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import os
import threading
from typing import Any

from langgraph.types import Command

from langgraph.checkpoint.dynamodb import DynamoDBSaver, KeyTooLongError
from langgraph.checkpoint.dynamodb.lambdas import callers, handlers, runs
from langgraph.checkpoint.dynamodb.lock import (
    LeaseUnavailableError,
    ResultNotStoredError,
    RunContext,
    StaleCheckpointError,
    run_once,
)

from .graph import build_graph

__all__ = ["caller_of", "get_graph", "get_saver", "handler", "reset", "thread_key"]

log = logging.getLogger(__name__)
#: ``AGENT_DEBUG=1``: log server errors with their traceback (which may quote state).
_DEBUG = os.environ.get("AGENT_DEBUG") == "1"

# Created on first use and kept for the life of the container: the clients'
# connection pools then survive across warm invocations.
_graph: Any = None
_init_lock = threading.Lock()


def get_saver() -> DynamoDBSaver:
    """The container's saver: the same one the maintenance Lambdas build.

    ``handlers.get_saver`` reads the store environment the CDK construct
    gives every function (the ``LANGGRAPH_DYNAMODB_*`` variables), so this agent and the
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


_is_http = callers.is_http_event


def _request(event: Any) -> dict[str, Any]:
    if _is_http(event):
        body = event.get("body") or ""
        if event.get("isBase64Encoded"):
            try:
                body = base64.b64decode(body, validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                raise _HTTPError(400, "bad_request", "body is not base64-encoded UTF-8") from None
        if len(body) > 2 * _MAX_TEXT:
            raise _HTTPError(413, "too_large", f"body is longer than {2 * _MAX_TEXT} bytes")
        try:
            event = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise _HTTPError(400, "bad_request", f"body is not JSON: {type(exc).__name__}") from None
    if not isinstance(event, dict):
        raise _HTTPError(400, "bad_request", "event must be a JSON object")
    action = event.get("action")
    if action not in _FIELDS:
        raise _HTTPError(400, "bad_request", "action must be 'start', 'resume' or 'status'")
    fields = _FIELDS[action]
    for name in fields:
        value = event.get(name)
        if not isinstance(value, str) or not value.strip():
            raise _HTTPError(400, "bad_request", f"{name!r} must be a non-empty string")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _HTTPError(
                400, "bad_request", f"{name!r} is not valid Unicode (a lone surrogate)"
            ) from None
        limit = _MAX_TEXT if name in ("input", "answer") else _MAX_ID
        if len(value.encode("utf-8")) > limit:
            raise _HTTPError(400, "bad_request", f"{name!r} is longer than {limit} bytes")
    return event


#: What each action carries.
_FIELDS = {
    "start": ["thread_id", "request_id", "input"],
    "resume": ["thread_id", "request_id", "answer", "checkpoint_id"],
    "status": ["thread_id"],
}

#: The longest id (thread, request, checkpoint) a request may carry: it becomes part
#: of DynamoDB keys (1-2 KB); and the longest input or answer, in UTF-8 bytes.
_MAX_ID = 256
_MAX_TEXT = 64 * 1024


def caller_of(event: Any) -> str | None:
    """The authenticated caller of an event (``callers.caller_of``, claim from ``CALLER_CLAIM``).

    Raises:
        _HTTPError: 401 for an HTTP event with no authenticated identity; 400
            for a direct invoke with a malformed ``caller``.

    Example:
        >>> caller_of({"body": "{}", "requestContext": {"authorizer": {"jwt": {"claims": {"sub": "u1"}}}}})
        'jwt:sub:u1'
    """
    try:
        return callers.caller_of(event, claim=os.environ.get("CALLER_CLAIM", "sub"))
    except callers.CallerError as err:
        raise _HTTPError(err.status, err.error, err.message) from None


def _event_thread_id(event: Any) -> str | None:
    """The ``thread_id`` the caller sent (for messages), or ``None``."""
    try:
        return _request(event).get("thread_id")
    except _HTTPError:
        return None


#: The store's thread id of a caller's thread id (see ``langgraph.checkpoint.dynamodb.lambdas.callers``).
thread_key = callers.thread_key


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


def _run(graph: Any, inp: Any, config: dict[str, Any], thread_id: str, context: Any) -> dict[str, Any]:
    """Run until the graph asks, finishes, or drains before the invocation's deadline.

    Drained (``runs.run_with_deadline``: at a superstep boundary, its
    checkpoint saved), the answer is ``running``; the handler then continues
    the run in a fresh invocation (see :func:`handler`).
    """
    clock: dict[str, Any] = (
        {"context": context}
        if callable(getattr(context, "get_remaining_time_in_millis", None))
        else {"remaining": lambda: math.inf}  # called directly (tests, scripts): no deadline
    )
    result = runs.run_with_deadline(
        graph, inp, config, durability="sync", min_margin=_drain_margin(), **clock
    )
    payload: dict[str, Any] = {"thread_id": thread_id}
    if result.status == "interrupted":
        payload.update(status="waiting", question=result.interrupts[0].value["question"])
    elif result.status == "drained":
        payload.update(status="running")
    else:
        payload.update(status="done", result=(result.output or {}).get("result"))
    payload["checkpoint_id"] = _latest_id(graph, config)
    return payload


def _drain_margin() -> float:
    """Seconds before the deadline at which a run drains, at least (``AGENT_DRAIN_MARGIN``, default 5).

    More than the graph needs alone: after the run the handler still records
    the request's result, releases the lease and reads the latest checkpoint.
    """
    return float(os.environ.get("AGENT_DRAIN_MARGIN", "5"))


def _start(graph: Any, config: dict[str, Any], text: str, thread_id: str, context: Any) -> dict[str, Any]:
    return _run(graph, {"requirement": text}, config, thread_id, context)


def _outcome_from_state(graph: Any, ctx: RunContext, thread_id: str) -> dict[str, Any] | None:
    """The answer of an earlier attempt of this request that stored its run but not its answer.

    Only when the thread's latest checkpoint was written by this very request
    and the graph stopped there (at the question, or finished); otherwise
    ``None``: the request runs (and LangGraph continues from the last checkpoint).
    """
    config = ctx.config()
    snap = graph.get_state(config)
    if not ctx.wrote(snap.metadata):
        return None
    payload: dict[str, Any] = {"thread_id": thread_id}
    questions = [i.value["question"] for t in snap.tasks for i in t.interrupts]
    if questions:
        payload.update(status="waiting", question=questions[0])
    elif not snap.next:
        payload.update(status="done", result=snap.values.get("result"))
    else:
        return None
    payload["checkpoint_id"] = snap.config["configurable"]["checkpoint_id"]
    return payload


def _resume(graph: Any, config: dict[str, Any], answer: str, thread_id: str, context: Any) -> dict[str, Any]:
    snap = graph.get_state(config)
    if any(t.interrupts for t in snap.tasks):
        return _run(graph, Command(resume=answer), config, thread_id, context)
    if snap.next:
        # An earlier attempt of this request got past the question and then
        # crashed: continue from its last checkpoint (finished nodes are not
        # run again: their writes are stored).
        return _run(graph, None, config, thread_id, context)
    raise _HTTPError(409, "not_waiting", "the thread is not waiting for an answer")


def _status(graph: Any, config: dict[str, Any], thread_id: str) -> dict[str, Any]:
    """Where a thread stands, without running anything: what a client polls after ``running``."""
    snap = graph.get_state(config)
    if snap.created_at is None:
        raise _HTTPError(404, "thread_not_found", f"thread {thread_id!r} not found")
    payload: dict[str, Any] = {"thread_id": thread_id}
    questions = [i.value["question"] for t in snap.tasks for i in t.interrupts]
    if questions:
        payload.update(status="waiting", question=questions[0])
    elif snap.next:
        payload.update(status="running")
    else:
        payload.update(status="done", result=snap.values.get("result"))
    payload["checkpoint_id"] = snap.config["configurable"]["checkpoint_id"]
    return payload


def _lambda_client() -> Any:
    """The client continuations are sent with (an asynchronous ``Invoke`` of this function)."""
    import boto3

    return boto3.client("lambda")


def _continue_later(thread: str, checkpoint_id: str, context: Any) -> bool:
    """Send a drained run on to a fresh invocation of this function; whether it was sent.

    ``AGENT_CONTINUE=0`` turns it off (the client then resumes with
    ``status``/``resume``); outside Lambda (no function name) nothing is sent.
    """
    name = getattr(context, "function_name", None)
    if os.environ.get("AGENT_CONTINUE", "1") == "0" or not isinstance(name, str) or not name:
        return False
    drained = {"status": "drained", "thread_id": thread, "checkpoint_id": checkpoint_id}
    runs.send_continuation(drained, function_name=name, lambda_client=_lambda_client())
    return True


def _continuation(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A continuation this function sent itself: resume the drained run, at most once per checkpoint."""
    clock: dict[str, Any] = (
        {"context": context}
        if callable(getattr(context, "get_remaining_time_in_millis", None))
        else {"remaining": lambda: math.inf}
    )
    try:
        out = runs.run_continuation(
            get_graph(), get_saver(), event, durability="sync", min_margin=_drain_margin(), **clock
        )
    except ValueError as exc:
        return {"statusCode": 400, "error": "bad_request", "message": str(exc)}
    if out["status"] == "drained" and not out.get("replayed"):
        _continue_later(out["thread_id"], out["checkpoint_id"], context)
    return {"statusCode": 200, **out}


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
    if not http and isinstance(event, dict) and event.get("action") == runs.CONTINUE_ACTION:
        # Sent by this function to itself (a direct invoke: trusted, see above).
        return _continuation(event, context)
    try:
        req = _request(event)
        caller = caller_of(event)
        thread_id = req["thread_id"]
        key = thread_key(caller, thread_id)
        compiled = get_graph()
        if req["action"] == "status":
            return _respond(200, _status(compiled, {"configurable": {"thread_id": key}}, thread_id), http)
        request_id = req["request_id"]

        def graph_of(ctx: RunContext) -> Any:
            # The cached compiled graph, on this request's lease-bound saver:
            # a shallow copy, nothing is compiled again.
            return compiled.copy({"checkpointer": ctx.saver})

        if req["action"] == "start":
            expected: str | None = None  # a start needs a new thread

            def work(ctx: RunContext) -> dict[str, Any]:
                return _start(graph_of(ctx), ctx.config(), req["input"], thread_id, context)
        else:
            expected = req["checkpoint_id"]

            def work(ctx: RunContext) -> dict[str, Any]:
                return _resume(graph_of(ctx), ctx.config(), req["answer"], thread_id, context)

        def recover(ctx: RunContext) -> dict[str, Any] | None:
            return _outcome_from_state(graph_of(ctx), ctx, thread_id)

        outcome = run_once(
            get_saver(),
            key,
            request_id,
            expected,
            work,
            recover=recover,
            lease_seconds=float(os.environ.get("LEASE_SECONDS", "60")),
            wait_seconds=float(os.environ.get("LEASE_WAIT_SECONDS", "5")),
        )
        if outcome.value.get("status") == "running" and not outcome.replayed:
            # Drained before the deadline; the lease is released: the next
            # invocation takes the run on from its checkpoint.
            _continue_later(key, outcome.value["checkpoint_id"], context)
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
    except Exception as exc:
        return _error_response(exc, event, http)


def _error_response(exc: Exception, event: Any, http: bool) -> dict[str, Any]:
    """The answer to a request that raised ``exc``: 4xx for what the client can fix, else 500."""
    if isinstance(exc, _HTTPError):
        return _respond(exc.status, exc.payload, http)
    if isinstance(exc, StaleCheckpointError):
        # Messages name the caller's thread id, never the store's key of it.
        name = repr(_event_thread_id(event))
        if exc.expected is None:
            msg = f"thread {name} already exists"
            return _respond(409, {"error": "thread_exists", "message": msg, "actual": exc.actual}, http)
        if exc.actual is None:
            return _respond(404, {"error": "thread_not_found", "message": f"thread {name} not found"}, http)
        payload = {
            "error": "stale_checkpoint",
            "message": f"thread {name} moved on: reload its state and retry",
            "expected": exc.expected,
            "actual": exc.actual,
        }
        return _respond(409, payload, http)
    if isinstance(exc, LeaseUnavailableError):
        # When this container may take a silent holder's lease over (it has
        # watched the lock that long): never the holder's own wall clock.
        retry = max(1, math.ceil(exc.retry_after)) if exc.retry_after is not None else 1
        busy: dict[str, Any] = {
            "error": "busy",
            "message": "another request is running this thread; retry later",
            "retry_after": retry,
        }
        return _respond(409, busy, http)
    if isinstance(exc, ResultNotStoredError):
        return _respond(409, {"error": "result_not_stored", "message": str(exc)}, http)
    if isinstance(exc, KeyTooLongError):
        # The caller's ids or input, refused by the store before anything ran: a
        # client error. Logged by type only (no traceback, no payload).
        log.warning("agent request refused: %s", type(exc).__name__)
        return _respond(400, {"error": "bad_request", "message": type(exc).__name__}, http)
    # The message may quote state (a decode error of a decrypted payload): the
    # response and the log name the error's type only.
    log.error("agent request failed: %s", type(exc).__name__, exc_info=exc if _DEBUG else False)
    return _respond(500, {"error": "internal", "message": type(exc).__name__}, http)
