"""A transaction-conflict layer for the tests' moto server: conflict where DynamoDB does.

moto applies every ``TransactWriteItems`` at once, under the server's one
lock (``tests/support/moto_serial.py``), and never cancels one because
another is running: concurrency rules of DynamoDB never fire in a test. This
layer is WSGI middleware *outside* that lock (so requests still overlap in
time, as they do on AWS) and models DynamoDB's two documented conflict rules
("Transaction conflict handling in DynamoDB", Amazon DynamoDB Developer
Guide, "Amazon DynamoDB Transactions: How it works"; the AWS Knowledge
Center's "Why is my TransactWriteItems API call failing" lists the same):

- "An item within a TransactWriteItems request is part of another ongoing
  transaction": the later transaction is cancelled,
  ``TransactionCanceledException`` whose ``CancellationReasons`` hold
  ``{"Code": "TransactionConflict", "Message": "Transaction is ongoing for
  the item"}`` at each conflicting index and ``{"Code": "None"}`` elsewhere
  (the API reference, ``CancellationReason``: "If no error occurred for the
  associated item an error with a Null code and Null message will be
  present"; the message lists the codes, as moto's own cancellations do);
- "A PutItem, UpdateItem, or DeleteItem request for an item conflicts with an
  ongoing TransactWriteItems request that includes the same item": the single
  write fails with ``TransactionConflictException`` ("Operation was rejected
  because there is an ongoing transaction for the item", its API reference).

botocore's standard retry mode retries neither (its throttling codes are
``ProvisionedThroughputExceededException``, ``ThrottlingException``,
``TransactionInProgressException``...; ``TransactionConflictException`` has
no ``retryable`` trait in the service model): the caller sees them.

A transaction is *in flight* from the moment it arrives until its response
leaves: the time moto takes (waiting for the server's lock included), plus a
configurable extra hold (``CONTENTION_HOLD_MS``, default 10 ms), so that
transactions sent together overlap the way they do against a real table,
where one takes several milliseconds.

Optionally (``CONTENTION_THROTTLE=<scale>``, or :func:`configure`), write
throughput per partition key value: DynamoDB serves at most 1,000 write units
per second on one partition ("Constraints in Amazon DynamoDB" / "Burst and
adaptive capacity": a single partition key value can never exceed 3,000 RCU or
1,000 WCU), so one item collection (one thread here) cannot go past it. Each
partition key value of each table has a token bucket of ``1000 * scale``
write units per second holding at most one second of them (a choice: AWS
documents no per-partition burst beyond the limit); a request is served while
its buckets are above zero and may take them below it (a request larger than
the scaled-down bucket must still pass, as a large transaction does). A write costs what
DynamoDB charges ("Capacity unit consumption for write operations"): one unit
per started KB of the item (for an update or delete, the key and values sent
stand for the item: the stored item is moto's, behind its lock), two for each
action of a transaction (ConditionCheck included). A write over the bucket is
answered with ``ProvisionedThroughputExceededException`` and
``ThrottlingReasons: [{"reason": "TableWriteKeyRangeThroughputExceeded",
"resource": <table ARN>}]`` (API reference, ``ThrottlingReason``); a
transaction with ``TransactionCanceledException``, reason ``ThrottlingError``
at each throttled index. It runs on the wall clock, so what it throttles on a
loaded machine varies: tests assert what must hold whatever is throttled.

Not modelled (said plainly): ``TransactGetItems`` conflicts, ``BatchWriteItem``
items that meet a transaction or a bucket, a transaction meeting a single write
in flight, idempotency tokens, reads, indexes, table-level limits, split for
heat (tests/support/throughput.py, inside the server's lock, counts and limits
reads, index writes, tables and S3 exactly; this layer's ``throttle`` stays the
approximate, write-only one). Only DynamoDB's JSON protocol is looked at.

By ``CONTENTION`` (``on``; ``off``, the default) and at run time through the
control endpoints under ``/__contention__/`` (``status``, ``mode``, ``hold``,
``throttle``, ``reset``), with the client helpers below (:func:`status`, :func:`set_mode`,
:func:`configure`, :func:`reset`, :func:`enabled`).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import threading
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

CONTROL_PREFIX = "/__contention__/"
DYNAMODB_TARGET_PREFIX = "DynamoDB_20120810."
MODES = ("on", "off")
DEFAULT_HOLD_MS = 10.0
#: One partition's write units per second ("Constraints in Amazon DynamoDB": 1,000 WCU).
PARTITION_WCU = 1000.0
#: Conflicts remembered for ``status`` (the counters count them all).
MAX_RECORDS = 2000

SINGLE_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
_ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
_ONGOING = "Transaction is ongoing for the item"
_REJECTED = "Operation was rejected because there is an ongoing transaction for the item."
_THROTTLED = (
    "The level of configured provisioned throughput for the table was exceeded. Consider increasing your "
    "provisioning level with the UpdateTable API."
)
_REGION = re.compile(r"Credential=[^/]+/[^/]+/([^/]+)/")

#: One item: (table, ((attribute, type, value), ...) of its key).
Ident = tuple[str, tuple[tuple[str, str, str], ...]]


def _key_attrs(account: str, region: str, table: str) -> tuple[str, ...] | None:
    """The table's key attribute names, read from moto's backend (``None``: no such table)."""
    from moto.dynamodb.models import dynamodb_backends

    found = dynamodb_backends[account][region].tables.get(table)
    if found is None:
        return None
    attrs = [found.hash_key_attr]
    if found.range_key_attr:
        attrs.append(found.range_key_attr)
    return tuple(attrs)


def _ident(table: str, attrs: tuple[str, ...], key: Mapping[str, Any]) -> Ident | None:
    out = []
    for name in attrs:
        av = key.get(name)
        if not isinstance(av, Mapping) or len(av) != 1:
            return None  # moto refuses a malformed key itself
        kind, value = next(iter(av.items()))
        out.append((name, str(kind), json.dumps(value, sort_keys=True)))
    return (table, tuple(out))


class ContentionMiddleware:
    """WSGI middleware: hold each transaction's items while it runs, refuse what conflicts with them."""

    def __init__(
        self,
        app: Callable[..., Iterable[bytes]],
        mode: str | None = None,
        hold_ms: float | None = None,
        key_attrs: Callable[[str, str, str], tuple[str, ...] | None] = _key_attrs,
    ) -> None:
        self.app = app
        mode = (mode or os.environ.get("CONTENTION") or "off").strip().lower()
        if mode not in MODES:
            raise ValueError(f"CONTENTION must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        env_hold = os.environ.get("CONTENTION_HOLD_MS")
        self.hold_s = (hold_ms if hold_ms is not None else float(env_hold or DEFAULT_HOLD_MS)) / 1000
        #: Scale of the per-partition write limit (0: no throttling).
        self.throttle = float(os.environ.get("CONTENTION_THROTTLE") or 0)
        #: (table, partition key value) -> (tokens, monotonic time they were counted).
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}
        self._key_attrs = key_attrs
        self._schemas: dict[tuple[str, str, str], tuple[str, ...]] = {}
        self._lock = threading.Lock()
        #: Items of the transactions in flight -> how many hold them (at most one, unless a bug).
        self._inflight: Counter[Ident] = Counter()
        self._reset_counters()

    def _reset_counters(self) -> None:
        self.counts: Counter[str] = Counter()
        #: Actions per transaction that ran, by count (how much a caller coalesces).
        self.sizes: Counter[int] = Counter()
        self.records: list[dict[str, Any]] = []
        self.peak_inflight = 0

    # -- WSGI ------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if (environ.get("PATH_INFO") or "").startswith(CONTROL_PREFIX + "capacity"):
            return self.app(environ, start_response)  # the throughput layer's (tests/support/throughput.py)
        if (environ.get("PATH_INFO") or "").startswith(CONTROL_PREFIX):
            return self._control(environ, start_response)
        target = environ.get("HTTP_X_AMZ_TARGET") or ""
        operation = target[len(DYNAMODB_TARGET_PREFIX) :] if target.startswith(DYNAMODB_TARGET_PREFIX) else ""
        if self.mode != "on" or (operation != "TransactWriteItems" and operation not in SINGLE_WRITES):
            return self.app(environ, start_response)
        body = _read_body(environ)
        try:
            params = json.loads(body or b"{}")
        except ValueError:
            return self.app(environ, start_response)
        items = self._items(environ, operation, params) if isinstance(params, Mapping) else []
        units = _write_units(operation, params) if isinstance(params, Mapping) else []
        if operation == "TransactWriteItems":
            return self._transaction(environ, start_response, items, units)
        return self._single(environ, start_response, operation, items, units)

    # -- throughput ----------------------------------------------------------

    def _spend(self, items: list[Ident | None], units: list[int], *, transactional: bool) -> list[int]:
        """Under the lock: take the write units from each partition's bucket; the throttled indexes.

        A request is served while its partitions' buckets hold any units, and may take them below
        zero (a debt the rate pays back): one larger than a scaled-down bucket must still go
        through, as a 4 MB transaction does through a real partition's 1,000 WCU/s. Refused
        requests take nothing (they are refused whole).
        """
        if self.throttle <= 0:
            return []
        rate = PARTITION_WCU * self.throttle
        now = time.monotonic()
        need: Counter[tuple[str, str]] = Counter()
        where: dict[tuple[str, str], list[int]] = {}
        for n, (ident, cost) in enumerate(zip(items, units, strict=False)):
            if ident is None:
                continue
            part = (ident[0], ident[1][0][2])
            need[part] += cost * (2 if transactional else 1)
            where.setdefault(part, []).append(n)
        levels = {}
        short: list[int] = []
        for part in need:
            tokens, then = self._buckets.get(part, (rate, now))
            tokens = min(rate, tokens + (now - then) * rate)
            levels[part] = tokens
            if tokens <= 0:
                short.extend(where[part])
        if short:
            for part in need:
                self._buckets[part] = (levels[part], now)
            return sorted(short)
        for part, cost in need.items():
            self._buckets[part] = (levels[part] - cost, now)
        return []

    @staticmethod
    def _arn(environ: dict[str, Any], table: str) -> str:
        match = _REGION.search(environ.get("HTTP_AUTHORIZATION") or "")
        region = match.group(1) if match else "us-east-1"
        return (
            f"arn:aws:dynamodb:{region}:{os.environ.get('MOTO_ACCOUNT_ID') or '123456789012'}:table/{table}"
        )

    def _transaction(
        self,
        environ: dict[str, Any],
        start_response: Callable[..., Any],
        items: list[Ident | None],
        units: list[int],
    ) -> Iterable[bytes]:
        held = [i for i in items if i is not None]
        with self._lock:
            self.counts["transactions"] += 1
            busy = [n for n, ident in enumerate(items) if ident is not None and self._inflight[ident]]
            throttled = [] if busy else self._spend(items, units, transactional=True)
            if throttled:
                self.counts["throttled_transactions"] += 1
                reasons: list[dict[str, str]] = [{"Code": "None"} for _ in items]
                for n in throttled:
                    reasons[n] = {"Code": "ThrottlingError", "Message": _THROTTLED}
                return _answer(start_response, _cancellation(reasons))
            if busy:
                self.counts["transaction_conflicts"] += 1
                for n in busy:
                    self._record("TransactWriteItems", n, items[n])
            else:
                self._inflight.update(held)
                self.peak_inflight = max(self.peak_inflight, sum(1 for v in self._inflight.values() if v))
        if busy:
            reasons = [{"Code": "None"} for _ in items]
            for n in busy:
                reasons[n] = {"Code": "TransactionConflict", "Message": _ONGOING}
            return _answer(start_response, _cancellation(reasons))
        captured: list[Any] = []
        arrived = time.monotonic()
        try:
            out = list(self.app(environ, lambda status, headers, *exc: captured.append((status, headers))))
            time.sleep(self.hold_s)  # still in flight: what a real transaction's duration looks like
        finally:
            with self._lock:
                self._inflight.subtract(held)
                self._inflight += Counter()  # drop the items no one holds
        status, headers = captured[0]
        with self._lock:
            self.counts["transactions_run"] += 1
            self.counts["transaction_ms"] += round((time.monotonic() - arrived) * 1000)
            self.sizes[len(items)] += 1
        start_response(status, headers)
        return out

    def _single(
        self,
        environ: dict[str, Any],
        start_response: Callable[..., Any],
        operation: str,
        items: list[Ident | None],
        units: list[int],
    ) -> Iterable[bytes]:
        ident = items[0] if items else None
        with self._lock:
            self.counts["single_writes"] += 1
            conflict = ident is not None and self._inflight[ident] > 0
            if conflict:
                self.counts["write_conflicts"] += 1
                self._record(operation, None, ident)
            throttled = not conflict and bool(self._spend(items, units, transactional=False))
            if throttled:
                self.counts["throttled_writes"] += 1
        if throttled and ident is not None:
            return _answer(
                start_response,
                {
                    "__type": _ERROR_PREFIX + "ProvisionedThroughputExceededException",
                    "message": _THROTTLED,
                    "ThrottlingReasons": [
                        {
                            "reason": "TableWriteKeyRangeThroughputExceeded",
                            "resource": self._arn(environ, ident[0]),
                        }
                    ],
                },
            )
        if conflict:
            return _answer(
                start_response,
                {"__type": _ERROR_PREFIX + "TransactionConflictException", "message": _REJECTED},
            )
        return self.app(environ, start_response)

    def _record(self, operation: str, index: int | None, ident: Ident | None) -> None:
        """Count one conflicting item (under the lock), by partition key value."""
        key = dict((name, value) for name, _, value in ident[1]) if ident is not None else {}
        pk = next(iter(key.values()), "")
        self.counts[f"pk:{pk}"] += 1
        if len(self.records) < MAX_RECORDS:
            self.records.append(
                {
                    "time": time.time(),
                    "operation": operation,
                    "index": index,
                    "table": ident[0] if ident else None,
                    "key": key,
                }
            )

    # -- items ---------------------------------------------------------------

    def _attrs(self, environ: dict[str, Any], table: str) -> tuple[str, ...] | None:
        match = _REGION.search(environ.get("HTTP_AUTHORIZATION") or "")
        region = match.group(1) if match else "us-east-1"
        account = os.environ.get("MOTO_ACCOUNT_ID") or "123456789012"
        where = (account, region, table)
        attrs = self._schemas.get(where)
        if attrs is None:
            try:
                attrs = self._key_attrs(*where)
            except Exception:  # the backend is moto's business: an unknown table conflicts with nothing
                attrs = None
            if attrs is None:
                return None
            self._schemas[where] = attrs
        return attrs

    def _items(
        self, environ: dict[str, Any], operation: str, params: Mapping[str, Any]
    ) -> list[Ident | None]:
        """The items the request writes or checks, in order (``None`` where one cannot be named)."""
        if operation in SINGLE_WRITES:
            bodies: list[Any] = [params]
        else:
            actions = params.get("TransactItems")
            bodies = [
                next(iter(a.values()), None) if isinstance(a, Mapping) and a else None for a in actions or []
            ]
        out: list[Ident | None] = []
        for body in bodies:
            ident = None
            if isinstance(body, Mapping) and isinstance(body.get("TableName"), str):
                attrs = self._attrs(environ, body["TableName"])
                key = body.get("Key") if isinstance(body.get("Key"), Mapping) else body.get("Item")
                if attrs is not None and isinstance(key, Mapping):
                    ident = _ident(body["TableName"], attrs, key)
            out.append(ident)
        return out

    # -- control endpoints -----------------------------------------------------

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {
                "mode": self.mode,
                "hold_ms": self.hold_s * 1000,
                "throttle": self.throttle,
                "counts": dict(self.counts),
                "transaction_sizes": {str(k): v for k, v in sorted(self.sizes.items())},
                "peak_inflight_items": self.peak_inflight,
                "records": list(self.records),
            }

    def _control(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        what = (environ.get("PATH_INFO") or "")[len(CONTROL_PREFIX) :].strip("/")
        method = (environ.get("REQUEST_METHOD") or "GET").upper()
        status, result = "200 OK", None
        if what == "status" and method == "GET":
            result = self.status()
        elif what == "mode" and method in ("POST", "PUT"):
            wanted = _read_body(environ).decode().strip().strip('"').lower()
            if wanted in MODES:
                previous, self.mode = self.mode, wanted
                result = {"mode": wanted, "previous": previous}
            else:
                status, result = "400 Bad Request", {"error": f"mode must be one of {', '.join(MODES)}"}
        elif what == "hold" and method in ("POST", "PUT"):
            try:
                self.hold_s = max(0.0, float(_read_body(environ).decode().strip())) / 1000
                result = {"hold_ms": self.hold_s * 1000}
            except ValueError:
                status, result = "400 Bad Request", {"error": "hold takes milliseconds, a number"}
        elif what == "throttle" and method in ("POST", "PUT"):
            try:
                self.throttle = max(0.0, float(_read_body(environ).decode().strip()))
                with self._lock:
                    self._buckets.clear()
                result = {"throttle": self.throttle}
            except ValueError:
                status, result = (
                    "400 Bad Request",
                    {"error": "throttle takes a scale of 1,000 WCU/s, a number"},
                )
        elif what == "reset" and method in ("POST", "PUT"):
            with self._lock:
                self._reset_counters()
                self._buckets.clear()
            result = {"reset": True}
        else:
            status, result = (
                "404 Not Found",
                {"error": f"no control endpoint {method} {CONTROL_PREFIX}{what}"},
            )
        data = json.dumps(result).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]


def _av_bytes(av: Any) -> int:
    """About an attribute value's size as DynamoDB counts it (the wire JSON's length is an upper bound)."""
    return len(json.dumps(av, separators=(",", ":")))


def _write_units(operation: str, params: Mapping[str, Any]) -> list[int]:
    """Write units of each item the request writes or checks (before doubling for a transaction)."""
    bodies: list[Any]
    if operation == "TransactWriteItems":
        bodies = [
            next(iter(a.values()), {}) for a in params.get("TransactItems") or [] if isinstance(a, Mapping)
        ]
    else:
        bodies = [params]
    out = []
    for body in bodies:
        data = body.get("Item") or {
            **(body.get("Key") or {}),
            **(body.get("ExpressionAttributeValues") or {}),
        }
        size = sum(len(k) + _av_bytes(v) for k, v in data.items()) if isinstance(data, Mapping) else 0
        out.append(max(1, math.ceil(size / 1024)))
    return out


def _cancellation(reasons: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "__type": _ERROR_PREFIX + "TransactionCanceledException",
        "Message": "Transaction cancelled, please refer cancellation reasons for specific "
        f"reasons [{', '.join(r['Code'] for r in reasons)}]",
        "CancellationReasons": reasons,
    }


def _read_body(environ: dict[str, Any]) -> bytes:
    """The request body, read once and put back for the next layer."""
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    body = (
        stream.read(length)
        if length > 0
        else (stream.read() if environ.get("wsgi.input_terminated") else b"")
    )
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    return body


def _answer(start_response: Callable[..., Any], payload: Mapping[str, Any]) -> list[bytes]:
    """An error as DynamoDB sends one: HTTP 400, JSON with ``__type``."""
    data = json.dumps(payload).encode()
    start_response(
        "400 Bad Request",
        [
            ("Content-Type", "application/x-amz-json-1.0"),
            ("x-amzn-RequestId", uuid.uuid4().hex.upper()),
            ("Content-Length", str(len(data))),
        ],
    )
    return [data]


# --------------------------------------------------------------------------
# Client helpers (tests and fixtures)
# --------------------------------------------------------------------------


def _call(endpoint: str, method: str, what: str, body: bytes | None = None) -> Any:
    req = urllib.request.Request(endpoint.rstrip("/") + CONTROL_PREFIX + what, data=body, method=method)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def status(endpoint: str) -> dict[str, Any]:
    """mode, hold_ms, throttle, counts (``transactions``, ``throttled_transactions``, ``throttled_writes``, ``transactions_run``, ``transaction_ms`` (their
    time in flight, summed), ``transaction_conflicts``,
    ``single_writes``, ``write_conflicts``, ``pk:<value>`` per conflicting item's partition key),
    transaction_sizes (actions per transaction run -> how many), peak_inflight_items, records."""
    result: dict[str, Any] = _call(endpoint, "GET", "status")
    return result


def set_mode(endpoint: str, mode: str) -> str:
    """Switch the layer on or off; returns the previous mode."""
    result: dict[str, Any] = _call(endpoint, "POST", "mode", mode.encode())
    return str(result["previous"])


def configure(endpoint: str, hold_ms: float, throttle: float | None = None) -> None:
    """Hold each transaction's items this much longer than moto takes; with ``throttle``, limit
    each partition key value to ``1000 * throttle`` write units per second (0: no limit)."""
    _call(endpoint, "POST", "hold", str(hold_ms).encode())
    if throttle is not None:
        _call(endpoint, "POST", "throttle", str(throttle).encode())


def reset(endpoint: str) -> None:
    """Zero the counters and forget the recorded conflicts."""
    _call(endpoint, "POST", "reset", b"")


def conflicts_on(state: Mapping[str, Any], pk: str) -> int:
    """How many conflicting items of a ``status`` had partition key value ``pk``."""
    return int(state["counts"].get(f"pk:{json.dumps(pk)}", 0))


@contextlib.contextmanager
def enabled(endpoint: str, hold_ms: float = DEFAULT_HOLD_MS, throttle: float | None = None) -> Iterator[None]:
    """The layer on (counters zeroed) for the block, then back to how it was."""
    before = status(endpoint)
    configure(endpoint, hold_ms, throttle)
    reset(endpoint)
    previous = set_mode(endpoint, "on")
    try:
        yield
    finally:
        set_mode(endpoint, previous)
        configure(endpoint, float(before["hold_ms"]), float(before["throttle"]))


__all__ = [
    "ContentionMiddleware",
    "configure",
    "conflicts_on",
    "enabled",
    "reset",
    "set_mode",
    "status",
]
