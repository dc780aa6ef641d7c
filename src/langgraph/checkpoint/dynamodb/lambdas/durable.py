"""Human-in-the-loop graph runs on AWS Lambda durable functions.

A durable function (``@durable_execution``, from the
``aws-durable-execution-sdk-python`` package: the ``durable`` extra) keeps a log
of its operations and replays it in every invocation: an operation already in
the log returns its recorded result instead of running again. :func:`run_durable`
drives a compiled graph from such a handler:

* the graph runs in durable **steps**, each one :func:`~langgraph.checkpoint.dynamodb.lambdas.runs.run_with_deadline`
  segment on the checkpointer. A step records only a small JSON summary
  (thread, checkpoint id, status, interrupt ids and, if small, their values:
  see :data:`MAX_STEP_RESULT_BYTES`), never the graph's state, which stays in
  DynamoDB + S3;
* an ``interrupt()`` becomes ``context.wait_for_callback``: your ``submit``
  receives the callback id and the interrupts (to notify a person), and the
  callback's result resumes the graph with ``Command(resume=...)``;
* a segment that drains before the invocation's deadline is followed by a
  durable ``wait`` of a second, so the next segment runs in a fresh
  invocation: one execution can last far beyond Lambda's 15 minutes;
* a node that fails fails its step, which the step's ``retry_strategy``
  retries; the retry resumes from the thread's last checkpoint, so nodes that
  already finished are not run again.

Outcomes (:class:`DurableRun`): ``done``; ``timed_out`` when nobody answered
an interrupt within ``callback_timeout`` (returned, not raised: the thread
waits at its interrupt and can still be resumed with ``Command(resume=...)``);
``drained`` after ``max_segments`` segments. Raised, failing the execution: a
callback failure (``CallbackExternalError``, from
``SendDurableExecutionCallbackFailure``), a submitter that kept failing
(``CallbackSubmitterError``), a node that failed past its retries
(``StepError``), and an answer that names no pending interrupt
(:class:`AnswerError`).

Example:
    ```python
    from aws_durable_execution_sdk_python import durable_execution
    from langgraph.checkpoint.dynamodb.lambdas.durable import run_durable

    @durable_execution
    def handler(event, context):
        config = {"configurable": {"thread_id": event["thread_id"]}}
        return run_durable(context, graph, event.get("input"), config, submit=notify).to_dict()
    ```
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from langgraph.checkpoint.dynamodb.errors import missing_extra
from langgraph.checkpoint.dynamodb.lambdas.runs import RunResult, arun_with_deadline, run_with_deadline

if TYPE_CHECKING:
    from aws_durable_execution_sdk_python import DurableContext
    from aws_durable_execution_sdk_python.config import Duration
    from aws_durable_execution_sdk_python.retries import RetryDecision

__all__ = [
    "MAX_INTERRUPT_BYTES",
    "MAX_STEP_RESULT_BYTES",
    "AnswerError",
    "DurableRun",
    "RetryStrategy",
    "Submit",
    "durable_handler",
    "run_durable",
]

#: Largest step summary recorded in the durable log (bytes of JSON). Durable
#: checkpoints are capped at 256 KiB (``CHECKPOINT_SIZE_LIMIT_BYTES``); this
#: leaves room for the SDK's own fields.
MAX_STEP_RESULT_BYTES: Final = 64 * 1024
#: Interrupt values are recorded in a step summary only while all of them
#: together stay under this many bytes of JSON (else ids only; ``submit`` still
#: gets the full values, read from the checkpointer).
MAX_INTERRUPT_BYTES: Final = 16 * 1024

#: ``submit(callback_id, interrupts)``: hand the callback id to whoever answers.
Submit = Callable[[str, Sequence[Any]], None]
#: The SDK's retry strategy: ``(error, attempts_made) -> RetryDecision``.
RetryStrategy = Callable[[Exception, int], "RetryDecision"]
Outcome = Literal["done", "timed_out", "drained"]


class AnswerError(ValueError):
    """A callback answer that cannot resume the thread's pending interrupts.

    With several pending interrupts the answer must be a JSON object keyed by
    interrupt ids (a subset is fine: the rest interrupt again).

    Example:
        >>> raise AnswerError("answer names no pending interrupt")  # doctest: +SKIP
    """


@dataclass(frozen=True)
class DurableRun:
    """How a durable graph run ended. Never holds the graph's state (read it from the checkpointer).

    Attributes:
        status: ``"done"``; ``"timed_out"`` (no answer within the callback
            timeout: ``interrupts`` are still pending on the thread);
            ``"drained"`` (``max_segments`` reached: resume with ``input=None``).
        thread_id / checkpoint_ns / checkpoint_id: where the thread stands.
        interrupts: pending interrupts (``{"id", "value"}``; the value is
            ``None`` with ``"omitted": True`` when too large to record).
        segments: graph segments (durable steps) run.
        drains: segments that stopped at the invocation's deadline.
        callbacks: callbacks answered.
        reason: why it drained (``"max_segments"``).

    Example:
        >>> DurableRun("done", "t-1", "", "1ef", segments=3).to_dict()["status"]
        'done'
    """

    status: Outcome
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str | None
    interrupts: tuple[dict[str, Any], ...] = ()
    segments: int = 0
    drains: int = 0
    callbacks: int = 0
    reason: str | None = None

    @property
    def config(self) -> dict[str, Any]:
        """The config that reads (``graph.get_state``) or resumes the thread."""
        return {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.checkpoint_ns}}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able summary (what a handler returns as the execution's result)."""
        return {
            "status": self.status,
            "thread_id": self.thread_id,
            "checkpoint_ns": self.checkpoint_ns,
            "checkpoint_id": self.checkpoint_id,
            "interrupts": [dict(i) for i in self.interrupts],
            "segments": self.segments,
            "drains": self.drains,
            "callbacks": self.callbacks,
            "reason": self.reason,
        }


# ------------------------------------------------------------ one segment


def _interrupt_entries(interrupts: Sequence[Any], limit: int) -> list[dict[str, Any]]:
    """``{"id", "value"}`` per interrupt; values dropped (``omitted``) unless all fit in ``limit`` as JSON."""
    entries = [{"id": getattr(i, "id", None), "value": getattr(i, "value", i)} for i in interrupts]
    try:
        fits = len(json.dumps([e["value"] for e in entries]).encode()) <= limit
    except (TypeError, ValueError):  # not JSON-able: ids only
        fits = False
    if fits:
        return entries
    return [{"id": e["id"], "value": None, "omitted": True} for e in entries]


def segment_summary(
    status: str,
    thread_id: str,
    ns: str,
    checkpoint_id: str | None,
    interrupts: Sequence[Any] = (),
    *,
    reason: str | None = None,
    supersteps: int = 0,
    max_interrupt_bytes: int = MAX_INTERRUPT_BYTES,
) -> dict[str, Any]:
    """The step's recorded result: small, JSON, checked against :data:`MAX_STEP_RESULT_BYTES`."""
    entries = _interrupt_entries(interrupts, max_interrupt_bytes)
    out: dict[str, Any] = {
        "status": status,
        "thread_id": thread_id,
        "checkpoint_ns": ns,
        "checkpoint_id": checkpoint_id,
        "reason": reason,
        "supersteps": supersteps,
        "interrupts": entries,
    }
    size = len(json.dumps(out).encode())
    if size > MAX_STEP_RESULT_BYTES:
        raise ValueError(
            f"a step summary of {size:,} bytes exceeds MAX_STEP_RESULT_BYTES ({MAX_STEP_RESULT_BYTES:,}): "
            f"{len(entries)} interrupts"
        )
    return out


def _checkpoint_id(state: Any) -> str | None:
    conf = (getattr(state, "config", None) or {}).get("configurable", {})
    cid = conf.get("checkpoint_id")
    return cid if isinstance(cid, str) else None


class SegmentRunner:
    """The graph, its config and deadline, sync or through ``run_coroutine`` (an async saver)."""

    def __init__(
        self,
        graph: Any,
        config: dict[str, Any],
        remaining: Callable[[], float],
        run_coroutine: Callable[[Coroutine[Any, Any, Any]], Any] | None,
        max_interrupt_bytes: int,
        run_kwargs: dict[str, Any],
    ) -> None:
        self.graph = graph
        self.config = config
        conf = config["configurable"]
        self.thread_id: str = conf["thread_id"]
        self.ns: str = conf.get("checkpoint_ns") or ""
        self.remaining = remaining
        self.run_coroutine = run_coroutine
        self.max_interrupt_bytes = max_interrupt_bytes
        self.run_kwargs = run_kwargs

    def state(self) -> Any:
        if self.run_coroutine is not None:
            return self.run_coroutine(self.graph.aget_state(self.config))
        return self.graph.get_state(self.config)

    def run(self, input: Any) -> RunResult:
        kw = {"remaining": self.remaining, **self.run_kwargs}
        if self.run_coroutine is not None:
            result: RunResult = self.run_coroutine(arun_with_deadline(self.graph, input, self.config, **kw))
            return result
        return run_with_deadline(self.graph, input, self.config, **kw)

    def summary(
        self, status: str, checkpoint_id: str | None, interrupts: Sequence[Any] = (), **kw: Any
    ) -> Any:
        return segment_summary(
            status,
            self.thread_id,
            self.ns,
            checkpoint_id,
            interrupts,
            max_interrupt_bytes=self.max_interrupt_bytes,
            **kw,
        )

    def start(self) -> dict[str, Any]:
        """The thread's checkpoint before the run (what the first segment starts from)."""
        return {"checkpoint_id": _checkpoint_id(self.state())}

    def segment(self, input: Any, start: str | None) -> dict[str, Any]:
        """Run one segment from checkpoint ``start`` with ``input``; its summary.

        A step runs again after a failed attempt (a retry) or one whose
        invocation ended before its result was recorded. The thread then
        stands past ``start``: what that attempt did is kept (the graph
        resumes with ``None`` from the last checkpoint), and a thread already
        at an interrupt or at the end is reported as it is, without running
        anything.
        """
        state = self.state()
        latest = _checkpoint_id(state)
        if latest != start:
            interrupts = tuple(getattr(state, "interrupts", ()) or ())
            if interrupts:
                return self.summary("interrupted", latest, interrupts)
            if not getattr(state, "next", ()):
                return self.summary("done", latest)
            input = None
        result = self.run(input)
        return self.summary(
            result.status,
            result.checkpoint_id,
            result.interrupts,
            reason=result.reason,
            supersteps=result.supersteps,
        )


# ------------------------------------------------------------ answers


def resume_map(raw: Any, ids: Sequence[str]) -> dict[str, Any]:
    """A callback's result (JSON text, else the text itself) as ``{interrupt_id: value}``."""
    answer: Any = raw
    if isinstance(raw, bytes | bytearray):
        answer = raw.decode()
    if isinstance(answer, str):
        with contextlib.suppress(ValueError):  # else a plain text answer
            answer = json.loads(answer) if answer.strip() else None
    if isinstance(answer, Mapping) and answer and set(answer) <= set(ids):
        return dict(answer)
    if len(ids) == 1:
        return {ids[0]: answer}
    raise AnswerError(
        f"{len(ids)} interrupts are pending: answer with a JSON object keyed by their ids {list(ids)}"
    )


# ------------------------------------------------------------ the loop


def _require_sdk() -> None:
    """The durable-execution SDK, or an error that names the extra it comes in."""
    try:
        import aws_durable_execution_sdk_python  # noqa: F401
    except ImportError as exc:
        raise missing_extra(
            exc, extra="durable", feature="lambdas.durable (Lambda durable functions)"
        ) from exc


def _seconds(value: float | Duration) -> Duration:
    from aws_durable_execution_sdk_python.config import Duration

    if isinstance(value, Duration):
        return value
    return Duration.from_seconds(value)


def _remaining(context: Any, remaining: Callable[[], float] | None) -> Callable[[], float]:
    if remaining is not None:
        return remaining
    get = getattr(getattr(context, "lambda_context", None), "get_remaining_time_in_millis", None)
    if not callable(get):
        raise TypeError("the durable context has no Lambda context: pass remaining= (seconds left)")
    return lambda: float(get()) / 1000.0


def _check_config(config: Any) -> dict[str, Any]:
    conf = config.get("configurable") if isinstance(config, Mapping) else None
    if not isinstance(conf, Mapping) or not isinstance(conf.get("thread_id"), str) or not conf["thread_id"]:
        raise ValueError("config['configurable']['thread_id'] must be a non-empty string")
    if conf.get("checkpoint_id"):
        raise ValueError("run_durable runs a thread from its latest checkpoint: config has a checkpoint_id")
    return dict(config)


def _submitter(g: SegmentRunner, submit: Submit) -> Callable[[str, Any], None]:
    def submitter(callback_id: str, _ctx: Any) -> None:
        submit(callback_id, tuple(getattr(g.state(), "interrupts", ()) or ()))

    return submitter


def run_durable(
    context: DurableContext,
    graph: Any,
    input: Any,
    config: dict[str, Any],
    *,
    submit: Submit,
    callback_timeout: float | Duration | None = None,
    retry_strategy: RetryStrategy | None = None,
    submit_retry_strategy: RetryStrategy | None = None,
    remaining: Callable[[], float] | None = None,
    continue_after: float | Duration = 1,
    max_segments: int = 1000,
    run_coroutine: Callable[[Coroutine[Any, Any, Any]], Any] | None = None,
    max_interrupt_bytes: int = MAX_INTERRUPT_BYTES,
    name: str = "graph",
    **run_kwargs: Any,
) -> DurableRun:
    """Run ``graph`` to its end inside a durable handler: segments in steps, interrupts as callbacks.

    Call it from your ``@durable_execution`` handler with the same arguments in
    every invocation (the handler is replayed: steps already recorded return
    their results, so nothing that finished runs again).

    Args:
        context: the handler's ``DurableContext``.
        graph: a compiled graph with a checkpointer (a ``DynamoDBSaver``, or an
            ``AsyncDynamoDBSaver`` with ``run_coroutine``).
        input: the run's input (``None`` resumes the thread, a ``Command`` answers it).
        config: the run's config; ``thread_id`` required, no ``checkpoint_id``.
        submit: ``submit(callback_id, interrupts)``, run in a durable step each
            time the graph interrupts: hand ``callback_id`` to whoever answers
            (``SendDurableExecutionCallbackSuccess`` with the answer as JSON;
            for several interrupts a JSON object keyed by interrupt id).
            ``interrupts`` are LangGraph's ``Interrupt`` objects, read from
            the checkpointer.
        callback_timeout: seconds (or a ``Duration``) to wait for an answer;
            ``None``: no limit. On expiry the run returns ``timed_out``.
        retry_strategy: retries of a failed segment (a node raised), the SDK's
            ``(error, attempts) -> RetryDecision``; ``None``: the SDK's default
            (6 attempts, exponential backoff from 5 s).
        submit_retry_strategy: retries of a failed ``submit`` (``None``: the SDK's default).
        remaining: seconds left in this invocation; default: the Lambda
            context's ``get_remaining_time_in_millis``.
        continue_after: the durable wait after a drained segment (at least 1 s).
        max_segments: segments after which the run returns ``drained``.
        run_coroutine: runs a coroutine to completion (``asyncio.run``, or
            ``lambda c: asyncio.run_coroutine_threadsafe(c, loop).result()``):
            segments then use ``arun_with_deadline`` and ``aget_state``.
        max_interrupt_bytes: interrupt values are recorded in the log only
            while together under this size (see :data:`MAX_INTERRUPT_BYTES`).
        name: prefix of the durable operations' names.
        run_kwargs: passed to ``run_with_deadline`` (``margin``, ``min_margin``,
            ``durability``, ...).

    Returns:
        A :class:`DurableRun` (``done``, ``timed_out`` or ``drained``).

    Raises:
        AnswerError: an answer that names none of the pending interrupts.
        CallbackExternalError / CallbackSubmitterError / StepError: from the
            SDK (a callback failure, a submitter or a segment out of retries).

    Example:
        >>> @durable_execution  # doctest: +SKIP
        ... def handler(event, context):
        ...     config = {"configurable": {"thread_id": event["thread_id"]}}
        ...     return run_durable(context, graph, event["input"], config, submit=notify).to_dict()
    """
    _require_sdk()
    from aws_durable_execution_sdk_python import CallbackTimeoutError
    from aws_durable_execution_sdk_python.config import StepConfig, WaitForCallbackConfig
    from aws_durable_execution_sdk_python.serdes import JsonSerDes
    from langgraph.types import Command

    g = SegmentRunner(
        graph,
        _check_config(config),
        _remaining(context, remaining),
        run_coroutine,
        max_interrupt_bytes,
        run_kwargs,
    )
    json_steps = StepConfig(serdes=JsonSerDes())
    segment_steps = StepConfig(retry_strategy=retry_strategy, serdes=JsonSerDes())
    callbacks = WaitForCallbackConfig(
        timeout=_seconds(callback_timeout or 0), retry_strategy=submit_retry_strategy
    )
    wait = _seconds(continue_after)
    start: str | None = context.step(_start_step(g), name=f"{name} start", config=json_steps)["checkpoint_id"]
    pending, drains, answered = input, 0, 0
    summary: dict[str, Any] = {"checkpoint_id": start, "interrupts": []}
    for i in range(1, max_segments + 1):
        summary = context.step(
            _segment_step(g, pending, start), name=f"{name} segment {i}", config=segment_steps
        )
        start = summary["checkpoint_id"]
        if summary["status"] == "done":
            return _outcome(g, "done", summary, i, drains, answered)
        if summary["status"] == "drained":
            drains += 1
            context.wait(wait, name=f"{name} continue {i}")
            pending = None
            continue
        try:
            raw = context.wait_for_callback(
                _submitter(g, submit), name=f"{name} interrupt {i}", config=callbacks
            )
        except CallbackTimeoutError:
            return _outcome(g, "timed_out", summary, i, drains, answered)
        answered += 1
        pending = Command(resume=resume_map(raw, [e["id"] for e in summary["interrupts"]]))
    return _outcome(g, "drained", summary, max_segments, drains, answered, reason="max_segments")


def _start_step(g: SegmentRunner) -> Callable[[Any], dict[str, Any]]:
    return lambda _step_context: g.start()


def _segment_step(g: SegmentRunner, input: Any, start: str | None) -> Callable[[Any], dict[str, Any]]:
    return lambda _step_context: g.segment(input, start)


def _outcome(
    g: SegmentRunner,
    status: Outcome,
    summary: Mapping[str, Any],
    segments: int,
    drains: int,
    callbacks: int,
    reason: str | None = None,
) -> DurableRun:
    return DurableRun(
        status=status,
        thread_id=g.thread_id,
        checkpoint_ns=g.ns,
        checkpoint_id=summary.get("checkpoint_id"),
        interrupts=tuple(summary.get("interrupts") or ()) if status == "timed_out" else (),
        segments=segments,
        drains=drains,
        callbacks=callbacks,
        reason=reason,
    )


def durable_handler(
    graph: Any,
    *,
    submit: Submit,
    thread_id_key: str = "thread_id",
    input_key: str = "input",
    **options: Any,
) -> Callable[[Any, Any], Any]:
    """A ``@durable_execution`` Lambda handler that runs ``graph`` with :func:`run_durable`.

    The execution's input is ``{"thread_id": ..., "input": ...}`` (keys
    configurable); its result is :meth:`DurableRun.to_dict`.

    Args:
        graph: a compiled graph with a checkpointer.
        submit: see :func:`run_durable`.
        thread_id_key / input_key: where the event holds the thread id and the input.
        options: passed to :func:`run_durable` (``callback_timeout``, ``retry_strategy``...).

    Example:
        >>> handler = durable_handler(graph, submit=notify, callback_timeout=86400)  # doctest: +SKIP
    """
    _require_sdk()
    from aws_durable_execution_sdk_python import durable_execution

    def handler(event: Any, context: DurableContext) -> dict[str, Any]:
        if not isinstance(event, Mapping) or not isinstance(event.get(thread_id_key), str):
            raise ValueError(f"the execution's input needs a string {thread_id_key!r}")
        config = {"configurable": {"thread_id": event[thread_id_key]}}
        run = run_durable(context, graph, event.get(input_key), config, submit=submit, **options)
        return run.to_dict()

    return durable_execution(handler)
