"""Pacing under throttling: a request DynamoDB or S3 throttled is sent again, later, until it lands.

botocore's standard retry mode retries a throttled request a few times
(``max_attempts``, 8 for the savers' own clients) and then raises. A
throttle is not a failure of the request: DynamoDB applies nothing of a
request it throttles (a transaction cancelled for ``ThrottlingError``
included) and S3 nothing of one it answers ``SlowDown``, so sending it again
is safe for every request, conditional writes included. A step of
thousands of ``Send`` s on one thread meets a partition's 1,000 write units
a second by design; it must be paced, not fail. So each driver sends a
throttled request again with full-jitter exponential backoff, for up to
:data:`PATIENCE_SECONDS` of waiting per request, and only then lets the
throttle reach the operation (which counts it: ``tracing``).

Within :func:`paced_until` no request waits past a deadline: a run that
must end before its Lambda invocation does sees the throttle in time
(``lambdas.runs`` then ends the run as drained, resumable).

Every wait is counted by its cause (:func:`throttle_stats`: the
``ThrottlingReasons`` DynamoDB names, the error code otherwise) and, with
OpenTelemetry tracing on, recorded as an event on the current span.
Conflicts (``TransactionConflict``) are not throttles: the operations that
meet them decide (``lock._commit``). A call marked ``paced=False`` reaches its
operation at once: a head write the threads index throttles, since waiting
would not help while the index has too few shards (``heads.on_activity``
widens it, and paces with a :class:`ThrottlePacer` of its own once the index
is at its widest).
"""

from __future__ import annotations

import contextlib
import contextvars
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any, Final

from botocore.exceptions import ClientError

__all__ = [
    "PATIENCE_SECONDS",
    "ThrottlePacer",
    "chained_throttle",
    "paced_until",
    "throttle_reasons",
    "throttle_stats",
]

#: Most seconds one request waits for throttles to pass, after botocore's own retries.
PATIENCE_SECONDS: Final = 60.0
#: First backoff ceiling and the largest one (seconds): full jitter below them.
BASE_SECONDS: Final = 0.05
CAP_SECONDS: Final = 2.0

#: Error codes of a throttled request (DynamoDB's JSON protocol, S3's XML one).
_THROTTLE_CODES: Final = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "SlowDown"}
)

_stats: Counter[str] = Counter()
_stats_lock = threading.Lock()
#: Epoch seconds past which no request waits for a throttle (``paced_until``).
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "langgraph_dynamodb_pacing_deadline", default=None
)


@contextlib.contextmanager
def paced_until(deadline: float) -> Iterator[None]:
    """No request started in the block waits for a throttle past ``deadline`` (epoch seconds).

    A run that must end before a Lambda deadline (``lambdas.runs``) would
    rather see the throttle in time to hand the thread on than be killed
    while it waits.
    """
    current = _deadline.get()
    token = _deadline.set(deadline if current is None else min(current, deadline))
    try:
        yield
    finally:
        _deadline.reset(token)


def chained_throttle(exc: BaseException) -> list[str] | None:
    """The throttle behind ``exc`` (itself, or what it was raised from), or ``None``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        reasons = throttle_reasons(current)
        if reasons is not None:
            return reasons
        current = current.__cause__ or current.__context__
    return None


def throttle_reasons(exc: BaseException) -> list[str] | None:
    """The causes of a throttle (``ThrottlingReasons`` or the code), or ``None`` if ``exc`` is not one.

    A cancelled transaction is a throttle when every reason it gives is
    ``ThrottlingError`` or ``None`` (an action that was fine), at least one
    ``ThrottlingError``: nothing of it was applied.
    """
    if not isinstance(exc, ClientError):
        return None
    response: dict[str, Any] = exc.response or {}
    code = str((response.get("Error") or {}).get("Code") or "")
    if code in _THROTTLE_CODES:
        named = [str(r.get("reason")) for r in response.get("ThrottlingReasons") or [] if isinstance(r, dict)]
        return named or [code]
    if code == "TransactionCanceledException":
        reasons = [
            str(r.get("Code")) for r in response.get("CancellationReasons") or [] if isinstance(r, dict)
        ]
        if "ThrottlingError" in reasons and set(reasons) <= {"ThrottlingError", "None"}:
            return ["ThrottlingError"]
    return None


def throttle_stats(*, reset: bool = False) -> dict[str, int]:
    """Throttled requests this process sent again, by cause, since it started (or the last reset).

    Example:
        >>> isinstance(throttle_stats(), dict)
        True
    """
    with _stats_lock:
        out = dict(_stats)
        if reset:
            _stats.clear()
    return out


class ThrottlePacer:
    """The waits of one request: ``next_delay`` after each throttle, ``None`` once patience is spent.

    Example:
        >>> pacer = ThrottlePacer(patience=1.0)
        >>> err = ClientError({"Error": {"Code": "ThrottlingException"}}, "Query")
        >>> 0 <= pacer.next_delay(err) <= BASE_SECONDS
        True
        >>> pacer.next_delay(ClientError({"Error": {"Code": "ValidationException"}}, "Query")) is None
        True
    """

    __slots__ = ("_attempt", "_deadline", "_patience", "_waited")

    def __init__(self, patience: float | None = None) -> None:
        self._patience = PATIENCE_SECONDS if patience is None else patience
        self._deadline = _deadline.get()
        self._attempt = 0
        self._waited = 0.0

    def next_delay(self, exc: BaseException) -> float | None:
        """Seconds to wait before sending the request again, or ``None``: let ``exc`` through."""
        reasons = throttle_reasons(exc)
        if reasons is None:
            return None
        delay = random.uniform(0, min(CAP_SECONDS, BASE_SECONDS * 2**self._attempt))
        if self._waited + delay > self._patience:
            return None
        if self._deadline is not None and time.time() + delay > self._deadline:
            return None
        self._attempt += 1
        self._waited += delay
        with _stats_lock:
            _stats.update(reasons)
        _span_event(reasons, delay)
        return delay


def _span_event(reasons: list[str], delay: float) -> None:
    """An event on the current span, if OpenTelemetry is in use (never imported for this)."""
    otel = sys.modules.get("opentelemetry.trace")
    if otel is None:
        return
    span = otel.get_current_span()
    if span.is_recording():
        span.add_event(
            "langgraph.checkpoint.throttled",
            {"reasons": ",".join(reasons), "retry_in_ms": round(delay * 1000, 1)},
        )
