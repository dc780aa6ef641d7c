"""On-demand maintenance: copy, prune or delete named threads, delete runs, in resumable steps.

The event is one of (``tenant_prefix`` and ``continuation`` are optional in each):

.. code-block:: json

    {"action": "copy_thread", "source_thread_id": "t1", "target_thread_id": "t1-copy"}
    {"action": "prune", "thread_ids": ["t1", "t2"], "keep_last": 5, "strategy": "keep_latest"}
    {"action": "delete_thread", "thread_id": "t1"}
    {"action": "delete_for_runs", "run_ids": ["run-1"]}

The result is ``{"status": "done" | "continue" | "rejected", "continuation":
token | null, "report": {counts of this step}, "errors": [...]}``. ``continue``: invoke again with
the same event plus ``"continuation": <token>``; each invocation works until
its time budget (the remaining time minus ``handlers.SAFETY_SECONDS``, or
``TIME_BUDGET_SECONDS`` if shorter) and replaying a step is safe (see
``langgraph.checkpoint.dynamodb._operations.steps``). ``rejected``: the event or the
token was refused, with ``"error": {"type", "message"}``; nothing was
changed. AWS failures (throttling that outlasts the retries...) raise, so
that the function's ``Errors`` alarm sees them. A thread or run a prune or
delete step could not handle (one tenant's malformed item, a parent cycle)
is listed in ``errors`` and skipped, and the step goes on with the next: the
invocation succeeds, the log record carries the list and its ``Errors``
metric (the construct's ``MaintenanceJobErrorsAlarm``) counts it.

Continuation tokens are signed: with ``MAINTENANCE_TOKEN_SECRET`` set (the
construct sets it to a Secrets Manager secret only this function can read),
every token returned carries an HMAC-SHA256 over the token and the request
(action, tenant, ids, options; a copy's token also names its job), and a
token without this function's valid signature for the request it comes with
is ``rejected``. Without the variable, tokens are the library's own, unsigned
(see ``lambdas.tokens``).

Environment: the store's (``langgraph.checkpoint.dynamodb.config``),
``TIME_BUDGET_SECONDS``, ``MAINTENANCE_BATCH_SIZE`` (items or objects a
copy writes per unit, default 25) and ``MAINTENANCE_TOKEN_SECRET``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, cast

from langgraph.checkpoint.dynamodb._operations.steps import DEFAULT_BATCH_SIZE, StepResult
from langgraph.checkpoint.dynamodb.errors import CiphertextBindingError
from langgraph.checkpoint.dynamodb.lambdas import tokens
from langgraph.checkpoint.dynamodb.lambdas.handlers import (
    deadline_from_context,
    get_saver,
    job_budget,
    log_event,
)
from langgraph.checkpoint.dynamodb.saver import DynamoDBSaver

__all__ = [
    "ACTIONS",
    "CopyThread",
    "DeleteForRuns",
    "DeleteThread",
    "EventError",
    "MaintenanceRequest",
    "Prune",
    "handler",
    "parse_event",
]

#: Largest id list one event may name (a Lambda event is at most 256 KB async).
MAX_IDS = 1000
#: Longest id an event may name (UTF-8 bytes): a partition key holds 2,048 bytes,
#: tenant prefix included. Tighter than ``schema.MAX_ID_BYTES``, which bounds ids
#: the savers accept from a graph (they may be hashed into the key).
MAX_EVENT_ID_BYTES = 2048
#: Longest continuation an event may carry: a step's token
#: (``steps.MAX_TOKEN_CHARS``) plus the signature this function adds to it.
MAX_EVENT_TOKEN_CHARS = 16 * 1024


class EventError(ValueError):
    """The event is not a valid maintenance request (the message says why)."""


def _checked(name: str, value: str, limit: int = MAX_EVENT_ID_BYTES) -> str:
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise EventError(f"{name} is not valid Unicode (a lone surrogate)") from None
    if size > limit:
        raise EventError(f"{name} is {size:,} bytes, more than {limit:,}")
    return value


def _text(event: Mapping[str, Any], name: str) -> str:
    value = event[name]
    if not isinstance(value, str) or not value:
        raise EventError(f"{name} must be a non-empty string, got {value!r:.200}")
    return _checked(name, value)


def _optional_text(event: Mapping[str, Any], name: str) -> str | None:
    value = event.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise EventError(f"{name} must be a non-empty string or null, got {value!r:.200}")
    return _checked(name, value, MAX_EVENT_TOKEN_CHARS if name == "continuation" else MAX_EVENT_ID_BYTES)


def _ids(event: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = event[name]
    if not isinstance(value, list) or not value or len(value) > MAX_IDS:
        raise EventError(f"{name} must be a list of 1 to {MAX_IDS} ids, got {value!r:.200}")
    for v in value:
        if not isinstance(v, str) or not v:
            raise EventError(f"every entry of {name} must be a non-empty string, got {v!r:.200}")
        _checked(f"an entry of {name}", v)
    return tuple(value)


# Each action is one row: a request class naming its action and fields, parsing
# and checking them (``parse``) and running one step (``step``). ``ACTIONS`` and
# ``parse_event`` are derived from the rows, so a new action is one class here.


@dataclass(frozen=True)
class _Request:
    tenant_prefix: str | None
    continuation: str | None

    #: The event's ``action``.
    action: ClassVar[str]
    #: Fields the event must carry, and may carry, besides ``action``, ``tenant_prefix``, ``continuation``.
    required: ClassVar[tuple[str, ...]]
    optional: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def parse(cls, event: Mapping[str, Any], common: dict[str, str | None]) -> _Request:
        raise NotImplementedError

    def step(self, saver: DynamoDBSaver, token: str | None, deadline: float | None) -> StepResult:
        raise NotImplementedError


@dataclass(frozen=True)
class CopyThread(_Request):
    """``{"action": "copy_thread", "source_thread_id", "target_thread_id"}``."""

    source_thread_id: str
    target_thread_id: str

    action: ClassVar[str] = "copy_thread"
    required: ClassVar[tuple[str, ...]] = ("source_thread_id", "target_thread_id")

    @classmethod
    def parse(cls, event: Mapping[str, Any], common: dict[str, str | None]) -> CopyThread:
        return cls(
            **common,
            source_thread_id=_text(event, "source_thread_id"),
            target_thread_id=_text(event, "target_thread_id"),
        )

    def step(self, saver: DynamoDBSaver, token: str | None, deadline: float | None) -> StepResult:
        return saver.copy_thread_step(
            self.source_thread_id,
            self.target_thread_id,
            continuation=token,
            deadline=deadline,
            batch_size=_batch_size(),
        )


@dataclass(frozen=True)
class Prune(_Request):
    """``{"action": "prune", "thread_ids": [...], "keep_last"?: int, "strategy"?: ...}``."""

    thread_ids: tuple[str, ...]
    keep_last: int | None
    strategy: Literal["keep_latest", "delete"]

    action: ClassVar[str] = "prune"
    required: ClassVar[tuple[str, ...]] = ("thread_ids",)
    optional: ClassVar[tuple[str, ...]] = ("keep_last", "strategy")

    @classmethod
    def parse(cls, event: Mapping[str, Any], common: dict[str, str | None]) -> Prune:
        strategy = event.get("strategy", "keep_latest")
        if strategy not in ("keep_latest", "delete"):
            raise EventError(f"strategy must be 'keep_latest' or 'delete', got {strategy!r}")
        keep_last = event.get("keep_last")
        if keep_last is not None:
            if not isinstance(keep_last, int) or isinstance(keep_last, bool) or keep_last < 1:
                raise EventError(f"keep_last must be an integer >= 1, got {keep_last!r}")
            if strategy != "keep_latest":
                raise EventError("keep_last applies to strategy 'keep_latest' only")
        return cls(**common, thread_ids=_ids(event, "thread_ids"), keep_last=keep_last, strategy=strategy)

    def step(self, saver: DynamoDBSaver, token: str | None, deadline: float | None) -> StepResult:
        return saver.prune_step(
            list(self.thread_ids),
            strategy=self.strategy,
            keep_last=self.keep_last,
            continuation=token,
            deadline=deadline,
        )


@dataclass(frozen=True)
class DeleteThread(_Request):
    """``{"action": "delete_thread", "thread_id"}``."""

    thread_id: str

    action: ClassVar[str] = "delete_thread"
    required: ClassVar[tuple[str, ...]] = ("thread_id",)

    @classmethod
    def parse(cls, event: Mapping[str, Any], common: dict[str, str | None]) -> DeleteThread:
        return cls(**common, thread_id=_text(event, "thread_id"))

    def step(self, saver: DynamoDBSaver, token: str | None, deadline: float | None) -> StepResult:
        # A counted whole-thread delete: one unit, already safe to redo.
        return saver.prune_step([self.thread_id], strategy="delete", continuation=token, deadline=deadline)


@dataclass(frozen=True)
class DeleteForRuns(_Request):
    """``{"action": "delete_for_runs", "run_ids": [...]}``."""

    run_ids: tuple[str, ...]

    action: ClassVar[str] = "delete_for_runs"
    required: ClassVar[tuple[str, ...]] = ("run_ids",)

    @classmethod
    def parse(cls, event: Mapping[str, Any], common: dict[str, str | None]) -> DeleteForRuns:
        return cls(**common, run_ids=_ids(event, "run_ids"))

    def step(self, saver: DynamoDBSaver, token: str | None, deadline: float | None) -> StepResult:
        return saver.delete_for_runs_step(list(self.run_ids), continuation=token, deadline=deadline)


MaintenanceRequest = CopyThread | Prune | DeleteThread | DeleteForRuns
_ROWS: Mapping[str, type[_Request]] = {
    cls.action: cls for cls in (CopyThread, Prune, DeleteThread, DeleteForRuns)
}
#: Action -> (required fields, optional fields) besides ``action``, ``tenant_prefix``, ``continuation``.
ACTIONS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    action: (cls.required, cls.optional) for action, cls in _ROWS.items()
}
_COMMON = ("action", "tenant_prefix", "continuation")


def parse_event(event: object) -> MaintenanceRequest:
    """The typed request an event describes.

    Raises:
        EventError: not an object, an unknown action, a missing or unknown
            field, or a field of the wrong type.

    Example:
        >>> parse_event({"action": "delete_thread", "thread_id": "t1"})
        DeleteThread(tenant_prefix=None, continuation=None, thread_id='t1')
    """
    if not isinstance(event, Mapping):
        raise EventError(f"the event must be a JSON object, got {type(event).__name__}")
    action = event.get("action")
    if not isinstance(action, str) or action not in _ROWS:
        raise EventError(f"unknown action {action!r}; one of {sorted(_ROWS)}")
    row = _ROWS[action]
    missing = [f for f in row.required if f not in event]
    if missing:
        raise EventError(f"{action} needs {', '.join(missing)}")
    unknown = sorted(str(k) for k in event if k not in (*_COMMON, *row.required, *row.optional))
    if unknown:
        # A typo ("keep-last") must not silently run with a default.
        raise EventError(f"unknown field(s) for {action}: {', '.join(unknown)}")
    common = {
        "tenant_prefix": _optional_text(event, "tenant_prefix"),
        "continuation": _optional_text(event, "continuation"),
    }
    return cast(MaintenanceRequest, row.parse(event, common))


def _saver_for(tenant_prefix: str | None) -> DynamoDBSaver:
    """The cached saver, or its view under the event's tenant.

    A function configured for one tenant (``LANGGRAPH_DYNAMODB_TENANT_PREFIX``)
    serves that tenant only; an untenanted (operator) one serves any.
    """
    saver = get_saver()
    if tenant_prefix is None or tenant_prefix == saver.tenant_prefix:
        return saver
    if saver.tenant_prefix:
        raise EventError(f"this function serves tenant {saver.tenant_prefix!r} only, not {tenant_prefix!r}")
    try:
        return saver.tenant_view(tenant_prefix)
    except ValueError as exc:
        raise EventError(f"tenant_prefix: {exc}") from None


def _batch_size() -> int:
    raw = os.environ.get("MAINTENANCE_BATCH_SIZE")
    return int(raw) if raw else DEFAULT_BATCH_SIZE


def _params(request: MaintenanceRequest) -> tuple[str, dict[str, Any]]:
    """The action and the parameters a signed token is bound to (everything but the token and tenant)."""
    fields = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(request).items()}
    fields.pop("continuation")
    fields.pop("tenant_prefix")
    return request.action, fields


def run(request: MaintenanceRequest, *, deadline: float | None) -> StepResult:
    """One step of ``request`` with the Lambda's saver (the handler without the logging).

    With a signing key configured (``tokens.ENV_MAINTENANCE_TOKEN_SECRET``),
    the incoming token must carry this function's signature for this
    request, and the token returned is signed; see ``lambdas.tokens``.
    """
    saver = _saver_for(request.tenant_prefix)
    secret = tokens.key() if request.continuation is not None else None
    action, params = _params(request)
    tenant = saver.tenant_prefix or ""
    token = request.continuation
    if secret is not None and token is not None:
        token = tokens.verify(secret, action, tenant, params, token)
    step = request.step(saver, token, deadline)
    if step.continuation is not None:
        secret = secret if secret is not None else tokens.key()
        if secret is not None:
            step = dataclasses.replace(
                step, continuation=tokens.sign(secret, action, tenant, params, step.continuation)
            )
    return step


def handler(event: Any, context: Any) -> dict[str, Any]:
    """Lambda entry point (``langgraph.checkpoint.dynamodb.lambdas.maintenance.handler``).

    Example:
        >>> handler({"action": "delete_thread", "thread_id": "t1"}, None)  # doctest: +SKIP
        {'status': 'done', 'continuation': None, 'report': {'threads': 1, ...}}
    """
    action = event.get("action") if isinstance(event, Mapping) else None
    try:
        request = parse_event(event)
        budget = os.environ.get("TIME_BUDGET_SECONDS")
        deadline = deadline_from_context(context, budget=float(budget) if budget else None)
        with job_budget():
            step = run(request, deadline=deadline)
    except (EventError, ValueError, TypeError, RecursionError, CiphertextBindingError) as exc:
        # Refused before or without changing anything (bad event, foreign or
        # malformed token, a copy target that is not empty): the caller's
        # mistake, answered with a result, not a failed invocation (which would
        # be retried and raise the errors alarm). CiphertextBindingError: an
        # encrypted thread this function holds no key for (LANGGRAPH_AES_KEYS),
        # or a moved ciphertext; a copy refuses it before writing, or removes
        # what it wrote.
        kind = "invalid_event" if isinstance(exc, EventError) else "rejected"
        error = {"type": kind, "message": str(exc)[:500] or type(exc).__name__}
        log_event("maintenance", action=str(action), status="rejected", rejected=1, error=error)
        return {"status": "rejected", "continuation": None, "report": {}, "errors": [], "error": error}
    result = step.to_dict()
    log_event(
        "maintenance",
        action=action,
        status=step.status,
        continued=step.continuation is not None,
        rejected=0,
        **result["report"],
        errors=result["errors"],
    )
    return result
