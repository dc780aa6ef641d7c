"""OpenTelemetry spans for saver operations, when ``opentelemetry-api`` is installed.

Rule: tracing is a sans-I/O wrapper around an operation (:func:`traced`):
it sees every request the operation yields and every response it gets
back, so it counts requests and bytes without touching the drivers or the
operations. Nothing here imports OpenTelemetry until a saver runs its first
operation, and then only if the package is installed: without the ``otel``
extra an operation runs unwrapped, at no cost.

One span per saver operation, named ``langgraph.checkpoint.<operation>``
(``langgraph.checkpoint.put``, ``langgraph.checkpoint.get_tuple``...), a
client span with:

* ``db.system`` ``aws.dynamodb``, ``langgraph.checkpoint.saver`` (the saver's class);
* ``langgraph.thread_id``, ``langgraph.checkpoint_ns``, ``langgraph.checkpoint_id``
  when the operation was given them (from its ``config`` or ``thread_id``);
* ``langgraph.checkpoint.requests`` and, per service, ``.dynamodb.requests``
  and ``.s3.requests``;
* ``langgraph.checkpoint.s3.objects_written`` (values that went to S3) and
  ``langgraph.checkpoint.s3.bytes_written`` / ``.s3.bytes_read``;
* ``langgraph.checkpoint.dynamodb.conflicts`` and ``.throttles``: the
  errors handed back to the operation that DynamoDB answers when it is
  contended (a transaction conflict; throttling that outlasted botocore's
  retries), each also an event ``langgraph.checkpoint.contended`` with its
  ``aws.error_code`` (the lock's committer retries them, see docs/lock.md);
* the exception, with status ERROR, when the operation fails.

Thread ids are attributes of spans, which your tracing backend stores:
with ``EncryptedSerializer``, treat them as the store does (plaintext keys).
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Generator, Mapping
from typing import Any

from langgraph.checkpoint.dynamodb._engine.ops import Call, Gather, Op

__all__ = ["SPAN_PREFIX", "traced"]

SPAN_PREFIX = "langgraph.checkpoint."

#: The tracer's instrumentation scope: this package's name, ``langgraph.checkpoint.dynamodb``
#: (from this module's own name: importing the package from here would close a loop,
#: the package's ``__init__`` -> ``saver`` -> ``tracing``).
_SCOPE = __name__.rpartition(".")[0]

#: Operations whose function name is not the saver method's (the span says the method).
_METHOD_OF = {"list_checkpoints": "list", "delta_history": "get_delta_channel_history", "_op_setup": "setup"}

_tracer: Any = None
#: None: not looked up yet; False: OpenTelemetry is not installed.
_available: bool | None = None


def _get_tracer() -> Any:
    global _tracer, _available
    if _available is None:
        try:
            _available = importlib.util.find_spec("opentelemetry.trace") is not None
        except (ImportError, ValueError):  # a broken or shadowed install counts as none
            _available = False
    if not _available:
        return None
    if _tracer is None:
        from opentelemetry import trace

        try:
            from importlib.metadata import version

            ver = version("langgraph-checkpoint-dynamodb-s3")
        except Exception:  # not installed as a distribution (a source tree)
            ver = None
        _tracer = trace.get_tracer(_SCOPE, ver)
    return _tracer


def traced(saver: Any, op: Op[Any]) -> Op[Any]:
    """``op``, wrapped in a span if OpenTelemetry is installed; ``op`` itself otherwise.

    Example:
        >>> result = saver.driver.run(traced(saver, _write.put(saver, config, cp, md, versions)))  # doctest: +SKIP
    """
    tracer = _get_tracer()
    is_generator = inspect.isgenerator(op)  # (a flag, not a narrowing: op keeps its type)
    if tracer is None or not is_generator:
        return op
    from opentelemetry import trace

    # No tracer provider configured (the API's default proxy, or the no-op
    # one): spans would record nothing, so the operation runs unwrapped.
    if isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return op
    return _run_in_span(tracer, saver, op)


def _identity(op: Generator[Any, Any, Any]) -> dict[str, str]:
    """Thread, namespace and checkpoint ids the operation was called with, for the span."""
    args = inspect.getgeneratorlocals(op)
    out: dict[str, str] = {}
    config = args.get("config")
    if isinstance(config, Mapping) and isinstance(config.get("configurable"), Mapping):
        conf = config["configurable"]
        for key in ("thread_id", "checkpoint_ns", "checkpoint_id"):
            if isinstance(conf.get(key), str):
                out[f"langgraph.{key}"] = conf[key]
    for key, attr in (("thread_id", "langgraph.thread_id"), ("source_thread_id", "langgraph.thread_id")):
        if attr not in out and isinstance(args.get(key), str):
            out[attr] = args[key]
    if isinstance(args.get("target_thread_id"), str):
        out["langgraph.target_thread_id"] = args["target_thread_id"]
    return out


def _run_in_span(tracer: Any, saver: Any, op: Generator[Any, Any, Any]) -> Op[Any]:
    from opentelemetry.trace import SpanKind

    op_name = getattr(op, "__name__", "operation")
    name = SPAN_PREFIX + _METHOD_OF.get(op_name, op_name)
    counts = {
        "dynamodb": 0,
        "s3": 0,
        "s3_put": 0,
        "s3_written": 0,
        "s3_read": 0,
        "conflicts": 0,
        "throttles": 0,
    }
    attributes: dict[str, Any] = {
        "db.system": "aws.dynamodb",
        "langgraph.checkpoint.saver": type(saver).__name__,
        **_identity(op),
    }
    with tracer.start_as_current_span(
        name,
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            req = next(op)
            while True:
                _count_requests(counts, req)
                try:
                    resp = yield req
                except GeneratorExit:  # the caller stopped early (a list not read to the end)
                    raise
                except BaseException as exc:  # an AWS error, handed back to the operation
                    _count_contention(counts, span, exc)
                    req = op.throw(exc)
                else:
                    _count_reads(counts, req, resp)
                    req = op.send(resp)
        except StopIteration as stop:
            return stop.value
        except GeneratorExit:
            raise
        except BaseException as exc:
            _record_error(span, exc)
            raise
        finally:
            span.set_attributes(_count_attributes(counts))
            op.close()


def _count_requests(counts: dict[str, int], req: Any) -> None:
    """Count the calls of one request the operation yields, and the bytes it puts to S3."""
    calls = req.calls if isinstance(req, Gather) else [req] if isinstance(req, Call) else []
    for c in calls:
        counts[c.service] = counts.get(c.service, 0) + 1
        if c.service == "s3" and c.method == "put_object":
            counts["s3_put"] += 1
            body = c.kwargs.get("Body")
            if isinstance(body, (bytes, bytearray)):
                counts["s3_written"] += len(body)


def _count_reads(counts: dict[str, int], req: Any, resp: Any) -> None:
    """Count the bytes read from S3 in the response to ``req``."""
    pairs = zip(req.calls, resp, strict=False) if isinstance(req, Gather) else [(req, resp)]
    for c, r in pairs:
        if isinstance(c, Call) and c.method == "get_object" and isinstance(r, Mapping):
            body = r.get("Body")
            if isinstance(body, (bytes, bytearray)):
                counts["s3_read"] += len(body)


#: Error codes of a contended request (what ``langgraph.checkpoint.dynamodb.conflicts`` / ``.throttles`` count).
_CONTENDED = {
    "TransactionConflictException": "conflicts",
    "TransactionInProgressException": "conflicts",
    "ProvisionedThroughputExceededException": "throttles",
    "ThrottlingException": "throttles",
    "RequestLimitExceeded": "throttles",
}
#: The same, as reasons of a cancelled transaction.
_CONTENDED_REASONS = {
    "TransactionConflict": "conflicts",
    "ThrottlingError": "throttles",
    "ProvisionedThroughputExceeded": "throttles",
}


def _count_contention(counts: dict[str, int], span: Any, exc: BaseException) -> None:
    """Count an error handed back to the operation if DynamoDB answered it for contention."""
    response = getattr(exc, "response", None)
    if not isinstance(response, Mapping):
        return
    code = str((response.get("Error") or {}).get("Code") or "")
    kind = _CONTENDED.get(code)
    if kind is None and code == "TransactionCanceledException":
        reasons = [str(r.get("Code")) for r in response.get("CancellationReasons") or []]
        kind = next((_CONTENDED_REASONS[r] for r in reasons if r in _CONTENDED_REASONS), None)
    if kind is None:
        return
    counts[kind] += 1
    span.add_event("langgraph.checkpoint.contended", {"aws.error_code": code, "kind": kind})


def _record_error(span: Any, exc: BaseException) -> None:
    """Mark the span failed with ``exc``."""
    from opentelemetry.trace import Status, StatusCode

    # The type only: a message may quote state (a decode error of a decrypted
    # payload, a model's validation error with its input).
    span.add_event("exception", {"exception.type": type(exc).__name__})
    span.set_status(Status(StatusCode.ERROR, type(exc).__name__))


def _count_attributes(counts: Mapping[str, int]) -> dict[str, int]:
    """The span's request and byte counts, set however the operation ended."""
    return {
        "langgraph.checkpoint.requests": counts["dynamodb"] + counts["s3"],
        "langgraph.checkpoint.dynamodb.requests": counts["dynamodb"],
        "langgraph.checkpoint.s3.requests": counts["s3"],
        "langgraph.checkpoint.s3.objects_written": counts["s3_put"],
        "langgraph.checkpoint.s3.bytes_written": counts["s3_written"],
        "langgraph.checkpoint.s3.bytes_read": counts["s3_read"],
        "langgraph.checkpoint.dynamodb.conflicts": counts["conflicts"],
        "langgraph.checkpoint.dynamodb.throttles": counts["throttles"],
    }
