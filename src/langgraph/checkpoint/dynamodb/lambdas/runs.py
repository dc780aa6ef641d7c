"""Graph runs that fit a Lambda invocation: drain before the deadline, continue in the next one.

A Lambda invocation ends at its timeout whatever the graph is doing: a run
killed mid-superstep loses that superstep's work (and repeats its side effects
when resumed). LangGraph can stop a run cooperatively at a superstep boundary,
with a resumable checkpoint saved (``RunControl.request_drain``, raising
``GraphDrained``). :func:`run_with_deadline` uses it: a watchdog thread reads
the invocation's remaining time and asks for a drain once it falls below a
margin, so the superstep running then is the last one; the run returns a
:class:`RunResult` (``done``, ``interrupted`` with the interrupts, or
``drained`` with the checkpoint to resume from). A drained run resumes with
``graph.invoke(None, config)``, in this invocation or the next one.

The margin is, unless given, twice the longest superstep seen so far in this
run, and at least ``min_margin`` seconds: the superstep running when the drain
is asked for must still finish, and its checkpoint be written, before the
deadline. A superstep longer than the whole margin cannot be saved by any
drain; give that run a fixed ``margin``, or more time. Every invocation runs at least one superstep, however little time it
starts with: otherwise a continuation that starts within the margin would
drain at once and hand the same checkpoint on forever.

Continuing by itself: :func:`continuation_event` is what the next invocation
needs (thread, namespace, checkpoint id); :func:`send_continuation` sends it
to the function itself (an asynchronous ``Invoke``) or to an SQS queue, and
:func:`run_continuation` runs it at most once per checkpoint (through
``lock.run_once``, under the thread's lease): a duplicate delivery returns the
first run's result without running anything, and an event for a checkpoint
that is no longer the thread's latest is skipped.

``RunControl`` and ``GraphDrained`` are documented by LangGraph as alpha;
``tests/e2e/test_runs.py`` pins the behaviour this module relies on.

Example:
    ```python
    from langgraph.checkpoint.dynamodb.lambdas.runs import run_with_deadline, send_continuation

    def handler(event, context):
        config = {"configurable": {"thread_id": event["thread_id"]}}
        result = run_with_deadline(graph, event.get("input"), config, context=context)
        if result.status == "drained":
            send_continuation(result, function_name=context.function_name)
        return result.to_dict()
    ```
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from langgraph.checkpoint.dynamodb._engine.pacing import chained_throttle, paced_until
from langgraph.checkpoint.dynamodb.lock import StaleCheckpointError, run_once

__all__ = [
    "CONTINUE_ACTION",
    "DeadlineWatch",
    "RunResult",
    "arun_with_deadline",
    "continuation_event",
    "parse_continuation",
    "run_continuation",
    "run_with_deadline",
    "send_continuation",
]

#: The ``action`` of a continuation event.
CONTINUE_ACTION: Final = "continue"
#: Margin floor (seconds): time for the last superstep's checkpoint write and the answer.
DEFAULT_MIN_MARGIN: Final = 2.0
#: Margin = this many times the longest superstep seen (the one running when the drain is asked must finish).
DEFAULT_MARGIN_FACTOR: Final = 2.0

Status = Literal["done", "interrupted", "drained"]


@dataclass(frozen=True)
class RunResult:
    """How a run ended, and where its thread stands.

    Attributes:
        status: ``"done"`` (the graph finished), ``"interrupted"`` (waiting
            for ``Command(resume=...)``; ``interrupts`` says on what) or
            ``"drained"`` (stopped at a superstep boundary before the
            deadline; resume with ``invoke(None, config)``).
        thread_id / checkpoint_ns / checkpoint_id: the checkpoint the thread
            is at (for ``drained``, the one to resume from).
        output: the graph's last state values (``None`` when drained).
        interrupts: the pending interrupts (``interrupted``).
        reason: why it drained (``"deadline"``; ``"throttled"``: DynamoDB throttled a write until
            too close to the deadline; or the reason a caller gave).
        supersteps: supersteps this run completed.
        longest_superstep_s: the longest of them, in seconds (what the margin follows).

    Example:
        >>> RunResult("drained", "t-1", "", "1ef...", reason="deadline").to_dict()["status"]
        'drained'
    """

    status: Status
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str | None
    output: Any = None
    interrupts: tuple[Any, ...] = ()
    reason: str | None = None
    supersteps: int = 0
    longest_superstep_s: float = 0.0

    @property
    def config(self) -> dict[str, Any]:
        """The config that resumes the thread from this checkpoint."""
        conf: dict[str, Any] = {"thread_id": self.thread_id, "checkpoint_ns": self.checkpoint_ns}
        return {"configurable": conf}

    def to_dict(self) -> dict[str, Any]:
        """A summary (ids, status, interrupt ids and values; never the state), JSON-able if the interrupt values are."""
        return {
            "status": self.status,
            "thread_id": self.thread_id,
            "checkpoint_ns": self.checkpoint_ns,
            "checkpoint_id": self.checkpoint_id,
            "reason": self.reason,
            "interrupts": [
                {"id": getattr(i, "id", None), "value": getattr(i, "value", i)} for i in self.interrupts
            ],
            "supersteps": self.supersteps,
            "longest_superstep_s": round(self.longest_superstep_s, 3),
        }


class DeadlineWatch:
    """Asks a ``RunControl`` to drain once the remaining time falls below the margin.

    A thread polls ``remaining()`` (seconds) every ``poll_interval``; the
    main loop reports each superstep boundary (:meth:`boundary`), from which
    the margin follows: ``margin`` if given, else ``max(min_margin, factor x
    longest superstep)``.

    Example:
        >>> watch = DeadlineWatch(lambda: 100.0, control=RunControl())  # doctest: +SKIP
    """

    def __init__(
        self,
        remaining: Callable[[], float],
        *,
        control: Any,
        margin: float | None = None,
        min_margin: float = DEFAULT_MIN_MARGIN,
        factor: float = DEFAULT_MARGIN_FACTOR,
        poll_interval: float = 0.05,
    ) -> None:
        for name, value in (("min_margin", min_margin), ("factor", factor), ("poll_interval", poll_interval)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a number of seconds >= 0, got {value!r}")
        if margin is not None and (
            not isinstance(margin, (int, float)) or isinstance(margin, bool) or margin < 0
        ):
            raise ValueError(f"margin must be a number of seconds >= 0 or None, got {margin!r}")
        self._remaining = remaining
        self.control = control
        self._fixed = margin
        self._min = float(min_margin)
        self._factor = float(factor)
        self._poll = max(0.005, float(poll_interval))
        self._last = time.monotonic()
        self.supersteps = 0
        self.longest = 0.0
        self._stop = threading.Event()

    @property
    def margin(self) -> float:
        """The seconds before the deadline at which a drain is asked for."""
        if self._fixed is not None:
            return self._fixed
        return max(self._min, self._factor * self.longest)

    def pacing_deadline(self) -> float:
        """Epoch seconds past which no request waits for a throttle: twice the margin before the deadline.

        Throttles past it reach the run, which ends as drained (``"throttled"``)
        while there is still time to hand the thread on. Twice: LangGraph
        writes checkpoints and pending writes in the background and raises
        their error at a later step, so the run goes on for a while after the
        write gave up.
        """
        return time.time() + self._remaining() - 2 * self.margin

    def boundary(self) -> None:
        """A superstep ended: its duration feeds the margin; drain now if already within it."""
        now = time.monotonic()
        self.longest = max(self.longest, now - self._last)
        self.supersteps += 1
        self._last = now
        self.check()

    def check(self) -> bool:
        """Ask for a drain if the remaining time is within the margin; whether it was asked.

        Never before the run's first chunk (the state it starts from): a
        drain asked for then would stop the run before its first superstep,
        and an invocation that starts within the margin would hand the same
        checkpoint on forever. Asked for after it, the superstep already
        under way still runs, so every invocation makes progress.
        """
        if self.supersteps and not self.control.drain_requested and self._remaining() <= self.margin:
            self.control.request_drain("deadline")
        return bool(self.control.drain_requested)

    def _run(self) -> None:
        while not self._stop.wait(self._poll):
            if self.check():
                return

    @contextmanager
    def watching(self) -> Iterator[DeadlineWatch]:
        """Poll in a daemon thread for the duration of the block."""
        self._last = time.monotonic()
        self.check()
        thread = threading.Thread(target=self._run, name="deadline-watch", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(timeout=5)


def _remaining_of(
    context: Any, remaining: Callable[[], float] | None, deadline: float | None
) -> Callable[[], float]:
    given = sum(x is not None for x in (context, remaining, deadline))
    if given != 1:
        raise TypeError("give exactly one of context= (a Lambda context), remaining= or deadline=")
    if remaining is not None:
        return remaining
    if deadline is not None:
        return lambda: deadline - time.time()
    get = getattr(context, "get_remaining_time_in_millis", None)
    if not callable(get):
        raise TypeError("context must be a Lambda context (get_remaining_time_in_millis())")
    return lambda: float(get()) / 1000.0


def _config_ids(config: Mapping[str, Any]) -> tuple[str, str]:
    conf = config.get("configurable") if isinstance(config, Mapping) else None
    thread_id = conf.get("thread_id") if isinstance(conf, Mapping) else None
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError("config['configurable']['thread_id'] must be a non-empty string")
    ns = conf.get("checkpoint_ns", "") if isinstance(conf, Mapping) else ""
    return thread_id, ns if isinstance(ns, str) else ""


def _throttled(exc: Exception) -> str:
    """``"throttled"`` for a run a throttle stopped near its deadline; any other error is raised again.

    The throttled write applied nothing, and LangGraph saved every
    superstep before it (and the pending writes of the tasks that finished):
    the thread resumes from its latest checkpoint like a drained run.
    """
    if chained_throttle(exc) is None:
        raise exc
    return "throttled"


def _result(
    state: Any,
    thread_id: str,
    ns: str,
    watch: DeadlineWatch,
    output: Any,
    drained: str | None,
    throttle: Exception | None = None,
) -> RunResult:
    conf = (getattr(state, "config", None) or {}).get("configurable", {})
    if throttle is not None and not conf.get("checkpoint_id"):
        raise throttle  # nothing was saved to resume from: the invocation must fail (and be retried)
    interrupts = tuple(getattr(state, "interrupts", ()) or ())
    status: Status = "drained" if drained is not None else "interrupted" if interrupts else "done"
    return RunResult(
        status=status,
        thread_id=thread_id,
        checkpoint_ns=ns,
        checkpoint_id=conf.get("checkpoint_id"),
        output=None if drained is not None else output,
        interrupts=interrupts,
        reason=drained,
        supersteps=max(0, watch.supersteps - 1),  # the first "values" chunk is the state it started from
        longest_superstep_s=watch.longest,
    )


def _watch(
    context: Any,
    remaining: Callable[[], float] | None,
    deadline: float | None,
    margin: float | None,
    min_margin: float,
    margin_factor: float,
    poll_interval: float,
) -> DeadlineWatch:
    from langgraph.runtime import RunControl

    return DeadlineWatch(
        _remaining_of(context, remaining, deadline),
        control=RunControl(),
        margin=margin,
        min_margin=min_margin,
        factor=margin_factor,
        poll_interval=poll_interval,
    )


def run_with_deadline(
    graph: Any,
    input: Any,
    config: dict[str, Any],
    *,
    context: Any = None,
    remaining: Callable[[], float] | None = None,
    deadline: float | None = None,
    margin: float | None = None,
    min_margin: float = DEFAULT_MIN_MARGIN,
    margin_factor: float = DEFAULT_MARGIN_FACTOR,
    poll_interval: float = 0.05,
    **stream_kwargs: Any,
) -> RunResult:
    """Run ``graph`` until it finishes, interrupts, or drains before the deadline.

    Args:
        graph: a compiled graph with a checkpointer.
        input: its input (``None`` resumes, a ``Command`` answers an interrupt).
        config: the run's config (``thread_id`` required).
        context: the Lambda context (its ``get_remaining_time_in_millis``);
            or ``remaining`` (a callable giving seconds left) or ``deadline``
            (epoch seconds). Exactly one.
        margin: seconds before the deadline at which to drain; default
            ``max(min_margin, margin_factor x longest superstep)``.
        poll_interval: how often the watchdog reads the remaining time.
        stream_kwargs: passed to ``graph.stream`` (``durability``, ``subgraphs``...).

    Returns:
        A :class:`RunResult`; a drained one names the checkpoint to resume from.

    Example:
        >>> result = run_with_deadline(graph, {"messages": [...]}, config, context=context)  # doctest: +SKIP
        >>> result.status  # doctest: +SKIP
        'drained'
    """
    from langgraph.errors import GraphDrained

    thread_id, ns = _config_ids(config)
    watch = _watch(context, remaining, deadline, margin, min_margin, margin_factor, poll_interval)
    output: Any = None
    drained: str | None = None
    throttle: Exception | None = None
    with watch.watching(), paced_until(watch.pacing_deadline()):
        try:
            for chunk in graph.stream(
                input, config, stream_mode="values", control=watch.control, **stream_kwargs
            ):
                output = chunk
                watch.boundary()
        except GraphDrained as exc:
            drained = exc.reason
        except Exception as exc:
            drained, throttle = _throttled(exc), exc
    return _result(graph.get_state(config), thread_id, ns, watch, output, drained, throttle)


async def arun_with_deadline(
    graph: Any,
    input: Any,
    config: dict[str, Any],
    *,
    context: Any = None,
    remaining: Callable[[], float] | None = None,
    deadline: float | None = None,
    margin: float | None = None,
    min_margin: float = DEFAULT_MIN_MARGIN,
    margin_factor: float = DEFAULT_MARGIN_FACTOR,
    poll_interval: float = 0.05,
    **stream_kwargs: Any,
) -> RunResult:
    """Async :func:`run_with_deadline` (``graph.astream``; the watchdog is still a thread).

    Example:
        >>> result = await arun_with_deadline(graph, None, config, context=context)  # doctest: +SKIP
    """
    from langgraph.errors import GraphDrained

    thread_id, ns = _config_ids(config)
    watch = _watch(context, remaining, deadline, margin, min_margin, margin_factor, poll_interval)
    output: Any = None
    drained: str | None = None
    throttle: Exception | None = None
    with watch.watching(), paced_until(watch.pacing_deadline()):
        try:
            async for chunk in graph.astream(
                input, config, stream_mode="values", control=watch.control, **stream_kwargs
            ):
                output = chunk
                watch.boundary()
        except GraphDrained as exc:
            drained = exc.reason
        except Exception as exc:
            drained, throttle = _throttled(exc), exc
    return _result(await graph.aget_state(config), thread_id, ns, watch, output, drained, throttle)


# ------------------------------------------------------------ continuation


def continuation_event(result: RunResult | Mapping[str, Any]) -> dict[str, Any]:
    """What the next invocation needs to resume a drained run: ``{"action": "continue", ...}``.

    ``result``: a :class:`RunResult`, or its ``to_dict()`` (what
    :func:`run_continuation` returns).

    Example:
        >>> continuation_event(RunResult("drained", "t-1", "", "1ef"))["checkpoint_id"]
        '1ef'
    """
    d = result.to_dict() if isinstance(result, RunResult) else dict(result)
    if d.get("status") != "drained" or not d.get("checkpoint_id"):
        raise ValueError(f"only a drained run continues (this one is {d.get('status')!r})")
    return {
        "action": CONTINUE_ACTION,
        "thread_id": d["thread_id"],
        "checkpoint_ns": d.get("checkpoint_ns") or "",
        "checkpoint_id": d["checkpoint_id"],
    }


def _dedup_id(event: Mapping[str, Any]) -> str:
    # SQS ids: at most 128 characters of a restricted set; thread ids may be any string.
    return hashlib.sha256(f"{event['thread_id']}\x00{event['checkpoint_id']}".encode()).hexdigest()


def send_continuation(
    result: RunResult | Mapping[str, Any],
    *,
    function_name: str | None = None,
    lambda_client: Any = None,
    queue_url: str | None = None,
    sqs_client: Any = None,
) -> dict[str, Any]:
    """Send a drained run's :func:`continuation_event` to a function (async ``Invoke``) or an SQS queue.

    To a FIFO queue (``.fifo``), the message's group is the thread and its
    deduplication id the (thread, checkpoint) pair, so SQS drops a duplicate
    sent within its 5-minute window; :func:`run_continuation` makes any later
    duplicate a no-op too. Returns the event sent.

    Example:
        >>> send_continuation(result, function_name=context.function_name)  # doctest: +SKIP
    """
    import boto3

    if (function_name is None) == (queue_url is None):
        raise TypeError("give exactly one of function_name= or queue_url=")
    event = continuation_event(result)
    body = json.dumps(event)
    if function_name is not None:
        client = lambda_client or boto3.client("lambda")
        client.invoke(FunctionName=function_name, InvocationType="Event", Payload=body.encode())
        return event
    client = sqs_client or boto3.client("sqs")
    extra: dict[str, Any] = {}
    if str(queue_url).endswith(".fifo"):
        extra = {
            "MessageGroupId": hashlib.sha256(event["thread_id"].encode()).hexdigest(),
            "MessageDeduplicationId": _dedup_id(event),
        }
    client.send_message(QueueUrl=queue_url, MessageBody=body, **extra)
    return event


@dataclass(frozen=True)
class _Event:
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    raw: Mapping[str, Any] = field(repr=False)


def parse_continuation(event: Any) -> _Event:
    """A continuation event, checked (``ValueError`` names what is wrong); an SQS body as JSON text too."""
    if isinstance(event, str):
        try:
            event = json.loads(event)
        except ValueError:
            raise ValueError("continuation event is not JSON") from None
    if not isinstance(event, Mapping) or event.get("action") != CONTINUE_ACTION:
        raise ValueError(f"not a continuation event (action must be {CONTINUE_ACTION!r})")
    values = []
    for name in ("thread_id", "checkpoint_id", "checkpoint_ns"):
        value = event.get(name, "" if name == "checkpoint_ns" else None)
        if (
            not isinstance(value, str)
            or (name != "checkpoint_ns" and not value)
            or len(value.encode()) > 4096
        ):
            raise ValueError(f"continuation event: {name} must be a string of at most 4,096 bytes")
        values.append(value)
    return _Event(values[0], values[2], values[1], event)


def run_continuation(
    graph: Any,
    saver: Any,
    event: Any,
    *,
    context: Any = None,
    remaining: Callable[[], float] | None = None,
    deadline: float | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Resume a drained run from its continuation event, at most once per checkpoint.

    Runs :func:`run_with_deadline` (``input=None``) under ``lock.run_once``
    with request id ``continue:<checkpoint id>``: the thread's lease is held
    while it runs (and released when it returns, drained or not), its writes
    are fenced, a duplicate event gets the stored result without running
    anything, and an event whose checkpoint is no longer the thread's latest
    (the run already moved on) is skipped: ``{"status": "skipped", ...}``.

    Returns:
        The run's :meth:`RunResult.to_dict` (``"replayed": True`` for a duplicate).

    Example:
        >>> def handler(event, context):  # doctest: +SKIP
        ...     out = run_continuation(graph, saver, event, context=context)
        ...     if out["status"] == "drained" and not out["replayed"]:  # a duplicate: sent already
        ...         send_continuation(out, function_name=context.function_name)
        ...     return out
    """
    ev = parse_continuation(event)

    def work(ctx: Any) -> dict[str, Any]:
        bound = graph.copy({"checkpointer": ctx.saver})  # writes fenced by the lease
        config = ctx.config(checkpoint_ns=ev.checkpoint_ns)
        result = run_with_deadline(
            bound, None, config, context=context, remaining=remaining, deadline=deadline, **kwargs
        )
        return result.to_dict()

    try:
        outcome = run_once(saver, ev.thread_id, f"continue:{ev.checkpoint_id}", ev.checkpoint_id, work)
    except StaleCheckpointError:
        return {
            "status": "skipped",
            "thread_id": ev.thread_id,
            "checkpoint_id": ev.checkpoint_id,
            "replayed": False,
        }
    return {**outcome.value, "replayed": outcome.replayed}
