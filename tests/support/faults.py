"""Seeded fault injection for the savers' botocore clients (boto3 and aiobotocore).

The injector hooks into botocore's event system, so faults enter *below* the
saver, exactly where real network and service errors do, and go through the
same retry machinery:

``before-send.<service>.<Operation>`` (every HTTP attempt, retries included)
    returns a fake HTTP error response (throttling, 500, 503 ``SlowDown``), or
    raises a connection error (``ConnectionClosedError``, ``ConnectTimeoutError``:
    the request never reached the server), or sends the request for real and
    then raises ``ReadTimeoutError`` (``lost``: the server applied the request
    but the client never saw the answer). botocore's ``standard`` retry mode
    retries all of these; with ``max_attempts=1`` they surface as exceptions.

``before-parameter-build`` / ``before-call`` / ``after-call`` of
``BatchWriteItem`` and ``BatchGetItem`` (once per API call)
    ``partial``: some of the items (keys) are removed from the request before
    it is sent and handed back as ``UnprocessedItems`` (``UnprocessedKeys``)
    of a successful response, as DynamoDB does under load. botocore does not
    retry these: the saver's core must resubmit them.

aiobotocore's emitter awaits handlers (``AioHierarchicalEmitter._emit`` runs
``resolve_awaitable`` on each result) and its endpoint emits ``before-send``
exactly like botocore's, so the same hooks serve the async saver; only the
fake response type (``AioAWSResponse`` with an awaitable body) and the real
send of a ``lost`` request (awaited) differ.

Decisions come from one ``random.Random(seed)`` under a lock. With a thread
pool (the sync saver gathers S3 requests concurrently) the order in which
requests reach the injector can vary between runs, so a seed reproduces the
fault *density and kinds* exactly and the *placement* in single-threaded
stretches; every injected fault is logged (``injector.log``) for the report.

Retry backoff is compressed (``compress_backoff``) so that hundreds of
retried requests fit in a CI run; the retry path itself is botocore's.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse, HeadersDict
from botocore.exceptions import ConnectionClosedError, ConnectTimeoutError, ReadTimeoutError

__all__ = [
    "ALL_KINDS",
    "BATCH_OPS",
    "FaultInjector",
    "FaultRecord",
    "compress_backoff",
]

#: Faults injected per HTTP attempt (``before-send``).
SEND_KINDS = ("throttle", "server", "unavailable", "reset", "connect_timeout", "lost")
#: Faults injected per batch API call.
BATCH_KINDS = ("partial",)
ALL_KINDS = SEND_KINDS + BATCH_KINDS
BATCH_OPS = ("BatchWriteItem", "BatchGetItem")

_DDB_THROTTLE_CODES = (
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
)


@dataclass(frozen=True)
class FaultRecord:
    service: str
    op: str
    kind: str
    detail: str = ""


class _SyncRaw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


class _AsyncRaw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    async def read(self, *_: Any) -> bytes:
        return self._body


def _error_response(service: str, kind: str, url: str, rng: random.Random, is_async: bool) -> tuple[Any, str]:
    """A fake HTTP error response for ``kind``; returns ``(response, error code)``."""
    if service == "dynamodb":
        status, code = {
            "throttle": (400, rng.choice(_DDB_THROTTLE_CODES)),
            "server": (500, "InternalServerError"),
            "unavailable": (503, "ServiceUnavailable"),
        }[kind]
        body = json.dumps(
            {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": f"injected {kind}"}
        ).encode()
        headers = {"x-amzn-ErrorType": code, "Content-Type": "application/x-amz-json-1.0"}
    else:
        status, code = {
            "throttle": (503, "SlowDown"),
            "server": (500, "InternalError"),
            "unavailable": (503, "ServiceUnavailable"),
        }[kind]
        body = (
            f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>injected {kind}</Message><RequestId>fault</RequestId></Error>"
        ).encode()
        headers = {"Content-Type": "application/xml"}
    hdrs = HeadersDict(headers)
    if is_async:
        from aiobotocore.awsrequest import AioAWSResponse

        return AioAWSResponse(url, status, hdrs, _AsyncRaw(body)), code
    return AWSResponse(url, status, hdrs, _SyncRaw(body)), code


def compress_backoff(client: Any, max_backoff: float = 0.02) -> bool:
    """Cap botocore's retry backoff of ``client`` (seconds). Returns whether it was found."""
    emitter = getattr(client.meta.events, "_emitter", client.meta.events)
    service = client.meta.service_model.service_id.hyphenize()
    entry = getattr(emitter, "_unique_id_handlers", {}).get(f"retry-config-{service}")
    if entry is None:
        return False
    handler = getattr(entry["handler"], "__self__", None)
    backoff = getattr(getattr(handler, "_retry_policy", None), "_retry_backoff", None)
    if backoff is None or not hasattr(backoff, "_max_backoff"):
        return False
    backoff._max_backoff = max_backoff
    return True


@dataclass
class FaultInjector:
    """Injects seeded faults into botocore clients.

    Args:
        seed: seeds the decisions.
        rate: probability that a matching HTTP attempt (or batch call, for
            ``partial``) gets a fault.
        kinds: fault kinds to draw from (``ALL_KINDS`` by default).
        ops: operation names (``"PutItem"``, ``"PutObject"``...) eligible for
            faults; ``None``: all.
        fail_at: also inject at exactly these indexes of the eligible HTTP
            attempts / batch calls (0-based, counted separately).
        max_faults: stop injecting after this many faults.
        fail_when: see the attribute.
    """

    seed: int
    rate: float = 0.0
    kinds: tuple[str, ...] = ALL_KINDS
    ops: frozenset[str] | None = None
    fail_at: frozenset[int] = frozenset()
    max_faults: int | None = None
    #: ``fail_when(operation, api_params) -> bool``: calls it matches fail with
    #: a 500 answered before sending (``before-call``), which botocore never
    #: retries: a deterministic, surfaced fault aimed at request *content*
    #: (e.g. "the BatchWriteItem chunk that deletes this item").
    fail_when: Any = None
    log: list[FaultRecord] = field(default_factory=list)
    sends: int = 0  # eligible HTTP attempts seen
    batch_calls: int = 0  # eligible batch calls seen
    calls: Counter[str] = field(default_factory=Counter)  # API calls by operation

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._lock = threading.Lock()
        self.enabled = True
        unknown = set(self.kinds) - set(ALL_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}")

    # ------------------------------------------------------------ control

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No faults (and no counting) inside the block."""
        with self._lock:
            prev, self.enabled = self.enabled, False
        try:
            yield
        finally:
            with self._lock:
                self.enabled = prev

    def kinds_injected(self) -> Counter[str]:
        return Counter(r.kind for r in self.log)

    def ops_injected(self) -> Counter[str]:
        return Counter(f"{r.service}.{r.op}" for r in self.log)

    # ------------------------------------------------------------ attach

    def attach_saver(self, saver: Any, *, backoff: float | None = 0.02) -> FaultInjector:
        """Attach to every client of a ``DynamoDBSaver`` / ``AsyncDynamoDBSaver``.

        The async saver opens its clients lazily: enter it (``__aenter__``)
        before attaching.
        """
        is_async = type(saver).__name__.startswith("Async")
        clients = [c for c in saver.clients.values() if c is not None]
        if not clients:
            raise RuntimeError("saver has no clients yet (enter the async saver first)")
        for client in clients:
            self.attach(client, is_async=is_async, backoff=backoff)
        return self

    def attach(self, client: Any, *, is_async: bool, backoff: float | None = 0.02) -> None:
        service = client.meta.service_model.service_name  # "dynamodb" / "s3"
        service_id = client.meta.service_model.service_id.hyphenize()
        events = client.meta.events
        if backoff is not None:
            compress_backoff(client, backoff)

        def count(model: Any, **_: Any) -> None:
            with self._lock:
                if self.enabled:
                    self.calls[model.name] += 1

        events.register(f"before-parameter-build.{service_id}", count)

        if is_async:

            async def on_send(request: Any, **kwargs: Any) -> Any:
                op = _op_from_event(kwargs.get("event_name", ""))
                kind = self._decide_send(service, op)
                if kind is None:
                    return None
                if kind == "lost":
                    resp = await client._endpoint.http_session.send(request)
                    await resp.content  # drain, release the connection
                    raise ReadTimeoutError(endpoint_url=request.url)
                return self._materialize(kind, service, op, request, is_async=True)

        else:

            def on_send(request: Any, **kwargs: Any) -> Any:
                op = _op_from_event(kwargs.get("event_name", ""))
                kind = self._decide_send(service, op)
                if kind is None:
                    return None
                if kind == "lost":
                    resp = client._endpoint.http_session.send(request)
                    _ = resp.content
                    raise ReadTimeoutError(endpoint_url=request.url)
                return self._materialize(kind, service, op, request, is_async=False)

        events.register(f"before-send.{service_id}", on_send)

        if self.fail_when is not None:
            events.register(f"before-parameter-build.{service_id}", self._match)
            events.register(f"before-call.{service_id}", self._make_forced_failure(service, is_async))

        if service == "dynamodb" and "partial" in self.kinds:
            for op in BATCH_OPS:
                events.register(f"before-parameter-build.{service_id}.{op}", self._partial_split)
                events.register(f"before-call.{service_id}.{op}", self._make_all_unprocessed(is_async))
                events.register(f"after-call.{service_id}.{op}", self._partial_merge)

    # --------------------------------------------------------- decisions

    def _eligible(self, op: str) -> bool:
        return self.enabled and (self.ops is None or op in self.ops)

    def _budget_left(self) -> bool:
        return self.max_faults is None or len(self.log) < self.max_faults

    def _hit(self, index: int) -> bool:
        return index in self.fail_at or (self.rate > 0 and self.rng.random() < self.rate)

    def _decide_send(self, service: str, op: str) -> str | None:
        kinds = [k for k in self.kinds if k in SEND_KINDS]
        if not kinds:
            return None
        with self._lock:
            if not self._eligible(op):
                return None
            index = self.sends
            self.sends += 1
            if not self._budget_left() or not self._hit(index):
                return None
            kind = self.rng.choice(kinds)
            self.log.append(FaultRecord(service, op, kind))
            return kind

    def _materialize(self, kind: str, service: str, op: str, request: Any, *, is_async: bool) -> Any:
        if kind == "reset":
            raise ConnectionClosedError(endpoint_url=request.url)
        if kind == "connect_timeout":
            raise ConnectTimeoutError(endpoint_url=request.url)
        with self._lock:
            resp, _code = _error_response(service, kind, request.url, self.rng, is_async)
        return resp

    # ----------------------------------------------------- content-aimed

    def _match(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        with self._lock:
            if not self._eligible(model.name) or not self._budget_left():
                return
        if self.fail_when(model.name, params):
            with self._lock:
                self.log.append(FaultRecord("", model.name, "aimed"))
            context["fault_forced"] = True

    def _make_forced_failure(self, service: str, is_async: bool) -> Any:
        def before_call(model: Any, context: dict[str, Any], **_: Any) -> Any:
            if not context.get("fault_forced"):
                return None
            code = "InternalServerError" if service == "dynamodb" else "InternalError"
            raw = _AsyncRaw(b"") if is_async else _SyncRaw(b"")
            url = f"https://{service}.fault.invalid/"
            if is_async:
                from aiobotocore.awsrequest import AioAWSResponse

                http: Any = AioAWSResponse(url, 500, HeadersDict({}), raw)
            else:
                http = AWSResponse(url, 500, HeadersDict({}), raw)
            return http, {
                "Error": {"Code": code, "Message": "injected (aimed)"},
                "ResponseMetadata": {"HTTPStatusCode": 500, "RetryAttempts": 0},
            }

        return before_call

    # ----------------------------------------------------- partial batches

    def _partial_split(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        op = model.name
        with self._lock:
            if not self._eligible(op):
                return
            index = self.batch_calls
            self.batch_calls += 1
            if not self._budget_left() or not self._hit(index):
                return
            rng = self.rng
            request_items = params.get("RequestItems") or {}
            if not request_items:
                return
            table = rng.choice(sorted(request_items))
            if op == "BatchWriteItem":
                entries = list(request_items[table])
            else:
                entries = list(request_items[table]["Keys"])
            if not entries:
                return
            n_drop = rng.randint(1, len(entries))
            drop_idx = set(rng.sample(range(len(entries)), n_drop))
            dropped = [e for i, e in enumerate(entries) if i in drop_idx]
            kept = [e for i, e in enumerate(entries) if i not in drop_idx]
            self.log.append(FaultRecord("dynamodb", op, "partial", f"{n_drop}/{len(entries)} unprocessed"))
        if op == "BatchWriteItem":
            unprocessed: Any = dropped
        else:
            unprocessed = {k: v for k, v in request_items[table].items() if k != "Keys"}
            unprocessed["Keys"] = dropped
        context["fault_unprocessed"] = (table, unprocessed)
        if kept:
            if op == "BatchWriteItem":
                request_items[table] = kept
            else:
                request_items[table] = {**request_items[table], "Keys": kept}
        elif len(request_items) == 1:
            # Nothing left to send: the whole call comes back unprocessed
            # (before-call answers without sending, see below).
            context["fault_all_unprocessed"] = True
        else:
            del request_items[table]

    def _make_all_unprocessed(self, is_async: bool) -> Any:
        def before_call(model: Any, context: dict[str, Any], **_: Any) -> Any:
            if not context.get("fault_all_unprocessed"):
                return None
            url = "https://dynamodb.fault.invalid/"
            raw = _AsyncRaw(b"{}") if is_async else _SyncRaw(b"{}")
            if is_async:
                from aiobotocore.awsrequest import AioAWSResponse

                http: Any = AioAWSResponse(url, 200, HeadersDict({}), raw)
            else:
                http = AWSResponse(url, 200, HeadersDict({}), raw)
            return http, {"ResponseMetadata": {"HTTPStatusCode": 200, "RetryAttempts": 0}}

        return before_call

    def _partial_merge(
        self, http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        info = context.get("fault_unprocessed")
        if info is None or http_response is None or http_response.status_code >= 300:
            return
        table, unprocessed = info
        if model.name == "BatchWriteItem":
            parsed.setdefault("UnprocessedItems", {}).setdefault(table, []).extend(unprocessed)
        else:
            entry = parsed.setdefault("UnprocessedKeys", {}).setdefault(table, {"Keys": []})
            entry.setdefault("Keys", []).extend(unprocessed["Keys"])
            for k, v in unprocessed.items():
                if k != "Keys":
                    entry.setdefault(k, v)


def _op_from_event(event_name: str) -> str:
    # "before-send.dynamodb.PutItem" -> "PutItem"
    return event_name.rsplit(".", 1)[-1] if event_name else ""


def summarize(injectors: Iterable[FaultInjector]) -> Counter[str]:
    total: Counter[str] = Counter()
    for inj in injectors:
        total.update(inj.kinds_injected())
    return total
