"""Capacity budgets: a maintenance job takes at most its share of the table's read and write units.

A pruner, reaper, sweeper, copy or migration walks many threads as fast as
it can; left alone it would take whatever the table serves, and the
application's writes would meet the throttles. Within
:func:`capacity_budget`, every DynamoDB request the drivers send asks for
its ``ConsumedCapacity`` (``ReturnConsumedCapacity=TOTAL``, which changes no
result) and is charged to the budget; the next request waits until the
units spent so far fit the rate. It is the generic cell rate algorithm (a
token bucket holding one second of units): units are known only once a
request is answered, so the call that spent them waits them off before the
job goes on (and concurrent calls wait before they are sent).

The budget adapts: each throttle the job meets (the table, or a partition
it shares with the application, is hot; a response botocore had to retry
counts too) halves its rate, down to 1/32 of
the configured one; each second without one gives back 1/20 of it. So a job
gives way at once and returns slowly, the way AWS's SDKs back off adaptive
clients. Throttles are still paced (``pacing``): the job waits, it does not
fail.

The budget is a context variable: it covers the operations started within
the ``with`` block, in this thread or task, and the concurrent calls of
their ``Gather`` s (the sync driver runs them in the caller's context).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any, Final

from langgraph.checkpoint.dynamodb._engine.ops import Call

__all__ = ["BUDGETED_METHODS", "CapacityBudget", "budgeted", "capacity_budget", "current_budget"]

#: DynamoDB calls that consume capacity and accept ``ReturnConsumedCapacity``.
BUDGETED_METHODS: Final = frozenset(
    {
        "get_item",
        "batch_get_item",
        "query",
        "scan",
        "transact_get_items",
        "put_item",
        "update_item",
        "delete_item",
        "batch_write_item",
        "transact_write_items",
    }
)
_READS: Final = frozenset({"get_item", "batch_get_item", "query", "scan", "transact_get_items"})
#: Slowest a throttled budget runs, as a share of its configured rate.
MIN_SHARE: Final = 1 / 32
#: Share of the configured rate given back per second without a throttle.
RECOVERY_PER_SECOND: Final = 1 / 20

_current: contextvars.ContextVar[CapacityBudget | None] = contextvars.ContextVar(
    "langgraph_dynamodb_capacity_budget", default=None
)


class _Rate:
    """One kind of units (read or write): a rate that adapts, and the time its spending is paid up to."""

    __slots__ = ("calm_since", "configured", "paid_until", "rate", "spent")

    def __init__(self, configured: float, now: float) -> None:
        self.configured = configured
        self.rate = configured
        # One second of units may be spent at once (a full bucket).
        self.paid_until = now - 1.0
        self.calm_since = now
        self.spent = 0.0

    def recover(self, now: float) -> None:
        if self.rate < self.configured:
            gained = (now - self.calm_since) * RECOVERY_PER_SECOND * self.configured
            self.rate = min(self.configured, self.rate + gained)
        self.calm_since = now

    def delay(self, now: float) -> float:
        return max(0.0, self.paid_until - now)

    def charge(self, units: float, now: float) -> None:
        self.spent += units
        self.paid_until = max(self.paid_until, now - 1.0) + units / self.rate

    def throttled(self, now: float) -> None:
        self.rate = max(self.configured * MIN_SHARE, self.rate / 2)
        self.calm_since = now


class CapacityBudget:
    """Read and write units per second a job may consume (``None``: that kind is not limited).

    Example:
        >>> budget = CapacityBudget(read_units=100, write_units=10)
        >>> budget.delay("put_item")  # a second of units is available at once
        0.0
        >>> wait = budget.charge("put_item", {"ConsumedCapacity": {"CapacityUnits": 30.0}})
        >>> 1.9 < wait <= 2.0  # 30 units at 10/s: 2 s past the first second
        True
        >>> budget.delay("get_item")  # reads have their own rate
        0.0
    """

    def __init__(
        self,
        *,
        read_units: float | None = None,
        write_units: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, value in (("read_units", read_units), ("write_units", write_units)):
            if value is not None and not value > 0:
                raise ValueError(
                    f"{name} must be a positive number of units per second (or None), not {value!r}"
                )
        self._clock = clock
        now = clock()
        self._rates = {
            "read": _Rate(float(read_units), now) if read_units is not None else None,
            "write": _Rate(float(write_units), now) if write_units is not None else None,
        }
        self._lock = threading.Lock()
        #: Seconds requests were held back, and throttles met, since the budget was made.
        self.waited = 0.0
        self.throttles = 0

    def _rate(self, method: str) -> _Rate | None:
        return self._rates["read" if method in _READS else "write"]

    def applies(self, method: str) -> bool:
        """Whether calls of ``method`` are charged (a DynamoDB data call of a limited kind)."""
        return method in BUDGETED_METHODS and self._rate(method) is not None

    def delay(self, method: str) -> float:
        """Seconds to wait before sending a call of ``method``."""
        rate = self._rate(method)
        if rate is None:
            return 0.0
        with self._lock:
            now = self._clock()
            rate.recover(now)
            wait = rate.delay(now)
            self.waited += wait
            return wait

    def charge(self, method: str, response: Mapping[str, Any]) -> float:
        """Spend what the response says the call consumed (``ConsumedCapacity``); seconds to wait it off.

        The caller waits before it goes on, so a job's last request is paid
        for too: a run takes at least its units at the rate (less the one
        second held at once).
        """
        rate = self._rate(method)
        if rate is None:
            return 0.0
        with self._lock:
            now = self._clock()
            if (response.get("ResponseMetadata") or {}).get("RetryAttempts"):
                # botocore retried it (throttles, mostly) before it landed: the
                # table pushed back, so give way as for a throttle we saw.
                rate.throttled(now)
                self.throttles += 1
            rate.charge(consumed_units(response), now)
            wait = rate.delay(now)
            self.waited += wait
            return wait

    def throttled(self, method: str) -> None:
        """A call of ``method`` was throttled: halve that kind's rate (see the module docs)."""
        rate = self._rate(method)
        if rate is None:
            return
        with self._lock:
            rate.throttled(self._clock())
            self.throttles += 1

    def stats(self) -> dict[str, float]:
        """Units spent and the current rates, by kind; seconds waited; throttles met."""
        with self._lock:
            out: dict[str, float] = {"waited_seconds": self.waited, "throttles": float(self.throttles)}
            for kind, rate in self._rates.items():
                if rate is not None:
                    out[f"{kind}_units_spent"] = rate.spent
                    out[f"{kind}_units_per_second"] = rate.rate
            return out


def consumed_units(response: Mapping[str, Any]) -> float:
    """Capacity units a response reports (one entry, or a list of them for batches and transactions)."""
    consumed = response.get("ConsumedCapacity")
    entries = consumed if isinstance(consumed, list) else [consumed] if consumed else []
    return float(sum(e.get("CapacityUnits") or 0 for e in entries if isinstance(e, Mapping)))


def current_budget() -> CapacityBudget | None:
    """The budget of the running context, if any."""
    return _current.get()


def budgeted(call: Call) -> tuple[Call, CapacityBudget | None]:
    """``call`` as the drivers send it, and the budget it is charged to (``None``: not charged).

    A charged call asks for its ``ConsumedCapacity`` (unless it already does).
    """
    budget = _current.get()
    if budget is None or call.service != "dynamodb" or not budget.applies(call.method):
        return call, None
    if "ReturnConsumedCapacity" in call.kwargs:
        return call, budget
    return replace(call, kwargs={**call.kwargs, "ReturnConsumedCapacity": "TOTAL"}), budget


@contextlib.contextmanager
def capacity_budget(
    *, read_units: float | None = None, write_units: float | None = None
) -> Iterator[CapacityBudget]:
    """Hold the saver's DynamoDB requests within the block to these units per second.

    Each limit is per process: a job running in N Lambda instances at once
    takes up to N times it (the construct's maintenance functions are
    limited to one concurrent run each).

    Example:
        ```python
        from langgraph.checkpoint.dynamodb.lifecycle import PrunePolicy, capacity_budget

        with capacity_budget(read_units=400, write_units=100) as budget:
            saver.run_pruner(PrunePolicy(keep_last=20))
        print(budget.stats())
        ```
    """
    budget = CapacityBudget(read_units=read_units, write_units=write_units)
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)
