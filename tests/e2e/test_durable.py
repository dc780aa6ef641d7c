"""Graphs on Lambda durable functions: interrupts as callbacks, segments as steps, replays.

Each test runs a durable handler in-process with the SDK's
``DurableFunctionTestRunner`` (its in-memory execution log, waits and retry
delays skipped) against the moto server's table and bucket through the
``Harness``, sync and async (S3 and encryption on). Nodes count their runs:
a replayed invocation must not run a node that already finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import operator
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict, cast

import pytest

pytest.importorskip("aws_durable_execution_sdk_python_testing", reason="the durable SDK is not installed")

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.lambda_service import OperationStatus
from aws_durable_execution_sdk_python.retries import RetryDecision
from aws_durable_execution_sdk_python_testing.runner import (
    DurableFunctionTestResult,
    DurableFunctionTestRunner,
    StepOperation,
)
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from langgraph.checkpoint.dynamodb.lambdas import durable
from langgraph.checkpoint.dynamodb.lambdas.durable import (
    MAX_INTERRUPT_BYTES,
    MAX_STEP_RESULT_BYTES,
    durable_handler,
    run_durable,
)
from tests.support.harness import Harness, cfg, new_thread

STEP = 0.05  # seconds per node
RUNS: Counter[str] = Counter()
_LOCK = threading.Lock()


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _count(name: str) -> None:
    with _LOCK:
        RUNS[name] += 1


def _node(name: str, seconds: float = STEP) -> Any:
    def run(state: State) -> dict[str, Any]:
        _count(name)
        time.sleep(seconds)
        return {"log": [name]}

    return run


def _ask(state: State) -> dict[str, Any]:
    _count("ask")  # LangGraph runs an interrupted node again when it is resumed
    answer = interrupt({"question": "approve?"})
    return {"log": [f"approved={answer['approved']}"]}


def _linear(builder: StateGraph, names: list[str]) -> StateGraph:
    builder.add_edge(START, names[0])
    for a, c in itertools.pairwise(names):
        builder.add_edge(a, c)
    builder.add_edge(names[-1], END)
    return builder


def chain(n: int) -> StateGraph:
    b = StateGraph(State)
    names = [f"n{i}" for i in range(n)]
    for name in names:
        b.add_node(name, _node(name))
    return _linear(b, names)


def approval(before: int = 2, after: int = 1) -> StateGraph:
    """``before`` nodes, an ``ask`` node that interrupts, ``after`` nodes."""
    b = StateGraph(State)
    names = [*(f"n{i}" for i in range(before)), "ask", *(f"m{i}" for i in range(after))]
    for name in names:
        b.add_node(name, _ask if name == "ask" else _node(name))
    return _linear(b, names)


class Deadline:
    """One invocation's clock (``remaining=``): ``seconds`` from when the handler is called."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def __call__(self) -> float:
        return self.at - time.monotonic()


@pytest.fixture(params=["sync", "async-s3-encrypted"])
def h(request: pytest.FixtureRequest, moto_endpoint: str, names: dict[str, str], loop_thread: Any) -> Any:
    harness = Harness(request.param, names["table_name"], names["bucket_name"], loop_thread)
    RUNS.clear()
    yield harness
    harness.close()


def _async_options(h: Harness) -> dict[str, Any]:
    if h.variant == "async-io-thread":  # the saver keeps its clients on its own loop: any loop will do
        return {"run_coroutine": asyncio.run}
    return {"run_coroutine": h.loop.run} if h.is_async else {}


@contextmanager
def _execution(handler: Callable[..., Any], event: dict[str, Any]) -> Iterator[tuple[Any, str]]:
    with DurableFunctionTestRunner(handler=handler, poll_interval=0.02) as runner:
        yield runner, runner.run_async(input=json.dumps(event), execution_timeout=120)


def _run_to_end(handler: Callable[..., Any], event: dict[str, Any]) -> DurableFunctionTestResult:
    with _execution(handler, event) as (runner, arn):
        return runner.wait_for_result(arn, timeout=60)


def _output(result: DurableFunctionTestResult) -> dict[str, Any]:
    assert result.status.value == "SUCCEEDED", result.error
    assert result.result is not None
    return json.loads(result.result)  # type: ignore[no-any-return]


def _steps(result: DurableFunctionTestResult, prefix: str = "graph segment") -> list[StepOperation]:
    ops = [
        cast(StepOperation, op) for op in result.get_all_operations() if (op.name or "").startswith(prefix)
    ]
    return sorted(ops, key=lambda op: int((op.name or "").rsplit(" ", 1)[1]))


def _recorded(step: StepOperation) -> dict[str, Any]:
    assert step.result is not None
    payload = step.result
    assert len(payload.encode()) <= MAX_STEP_RESULT_BYTES
    return json.loads(payload)  # type: ignore[no-any-return]


# ------------------------------------------------------------ an approval across a callback


@pytest.mark.parametrize("h", ["sync", "async-s3-encrypted", "async-io-thread"], indirect=True)
def test_an_approval_across_a_callback_resumes_the_graph(h: Harness) -> None:
    graph = approval(before=2, after=2).compile(checkpointer=h.saver)
    thread = new_thread()
    submitted: list[tuple[str, list[Any]]] = []
    handler = durable_handler(
        graph,
        submit=lambda cid, interrupts: submitted.append((cid, [i.value for i in interrupts])),
        **_async_options(h),
    )
    with _execution(handler, {"thread_id": thread, "input": {"log": []}}) as (runner, arn):
        callback_id = runner.wait_for_callback(arn, timeout=30)
        assert submitted == [(callback_id, [{"question": "approve?"}])]
        waiting = h.get_state(graph, cfg(thread))
        assert waiting.next == ("ask",) and RUNS["m0"] == 0  # nothing past the interrupt ran
        runner.send_callback_success(callback_id, result=json.dumps({"approved": True}).encode())
        result = runner.wait_for_result(arn, timeout=60)
    out = _output(result)
    assert out["status"] == "done" and out["callbacks"] == 1 and out["segments"] == 2
    state = h.get_state(graph, cfg(thread))
    assert state.values["log"] == ["n0", "n1", "approved=True", "m0", "m1"] and state.next == ()
    assert out["checkpoint_id"] == state.config["configurable"]["checkpoint_id"]
    assert {k: v for k, v in RUNS.items() if k != "ask"} == {"n0": 1, "n1": 1, "m0": 1, "m1": 1}
    assert RUNS["ask"] == 2  # run, interrupted; run again with the answer
    # The durable log holds small summaries, never the state.
    first, second = (_recorded(s) for s in _steps(result))
    assert first["status"] == "interrupted" and first["interrupts"][0]["value"] == {"question": "approve?"}
    assert second["status"] == "done" and "log" not in json.dumps([first, second])


def test_several_interrupts_are_answered_by_id(h: Harness) -> None:
    """Two parallel nodes interrupt: one callback, answered with a JSON object keyed by interrupt id."""

    def asker(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            _count(name)
            return {"log": [f"{name}={interrupt(name + '?')}"]}

        return run

    b = StateGraph(State)
    for name in ("left", "right"):
        b.add_node(name, asker(name))
        b.add_edge(START, name)
        b.add_edge(name, END)
    graph = b.compile(checkpointer=h.saver)
    thread = new_thread()
    questions: list[dict[str, Any]] = []
    handler = durable_handler(
        graph,
        submit=lambda cid, interrupts: questions.extend({"id": i.id, "value": i.value} for i in interrupts),
        **_async_options(h),
    )
    with _execution(handler, {"thread_id": thread, "input": {"log": []}}) as (runner, arn):
        first = runner.wait_for_callback(arn, timeout=30)
        assert sorted(q["value"] for q in questions) == ["left?", "right?"]
        ids = {q["value"]: q["id"] for q in questions}
        # Answer one of them: the other interrupts again, under a new callback.
        runner.send_callback_success(first, result=json.dumps({ids["left?"]: "LEFT"}).encode())
        second = _next_callback(runner, arn, first)
        assert [q["value"] for q in questions[2:]] == ["right?"] and questions[2]["id"] == ids["right?"]
        runner.send_callback_success(second, result=json.dumps({ids["right?"]: "RIGHT"}).encode())
        out = _output(runner.wait_for_result(arn, timeout=60))
    assert out["status"] == "done" and out["callbacks"] == 2
    assert sorted(h.get_state(graph, cfg(thread)).values["log"]) == ["left=LEFT", "right=RIGHT"]
    assert dict(RUNS) == {"left": 2, "right": 3}  # each re-run when answered (LangGraph's rule)


def _next_callback(runner: Any, arn: str, previous: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(TimeoutError):
            cid: str = runner.wait_for_callback(arn, timeout=1)
            if cid != previous:
                return cid
        time.sleep(0.02)
    raise AssertionError("no second callback")


def test_an_answer_naming_no_pending_interrupt_fails_the_execution(
    moto_endpoint: str, names: dict[str, str], loop_thread: Any
) -> None:
    h = Harness("sync", names["table_name"], names["bucket_name"], loop_thread)
    try:
        b = StateGraph(State)
        for name in ("left", "right"):
            b.add_node(name, lambda s, name=name: {"log": [str(interrupt(name))]})
            b.add_edge(START, name)
            b.add_edge(name, END)
        graph = b.compile(checkpointer=h.saver)
        handler = durable_handler(graph, submit=lambda cid, interrupts: None)
        with _execution(handler, {"thread_id": new_thread(), "input": {"log": []}}) as (runner, arn):
            runner.send_callback_success(runner.wait_for_callback(arn, timeout=30), result=b'"yes"')
            result = runner.wait_for_result(arn, timeout=60)
        assert result.status.value == "FAILED" and result.error is not None
        assert (result.error.type or "").endswith(".durable.AnswerError") and "keyed by their ids" in (
            result.error.message or ""
        )
    finally:
        h.close()


@pytest.mark.parametrize("failure", ["callback", "submitter"])
def test_a_failed_callback_or_submitter_fails_the_execution(
    moto_endpoint: str, names: dict[str, str], loop_thread: Any, failure: str
) -> None:
    from aws_durable_execution_sdk_python.lambda_service import ErrorObject

    h = Harness("sync", names["table_name"], names["bucket_name"], loop_thread)
    RUNS.clear()
    try:
        graph = approval(before=1, after=1).compile(checkpointer=h.saver)

        def submit(callback_id: str, interrupts: Any) -> None:
            if failure == "submitter":
                raise ConnectionError("the review queue is down")

        handler = durable_handler(
            graph, submit=submit, submit_retry_strategy=lambda e, n: RetryDecision.no_retry()
        )
        with _execution(handler, {"thread_id": new_thread(), "input": {"log": []}}) as (runner, arn):
            if failure == "callback":
                error = ErrorObject(
                    message="rejected by the reviewer", type="Rejected", data=None, stack_trace=None
                )
                runner.send_callback_failure(runner.wait_for_callback(arn, timeout=30), error=error)
            result = runner.wait_for_result(arn, timeout=60)
        assert result.status.value == "FAILED" and result.error is not None
        expected = {"callback": "CallbackExternalError", "submitter": "CallbackSubmitterError"}[failure]
        assert (result.error.type or "").endswith(expected), result.error
        assert RUNS["m0"] == 0 and RUNS["n0"] == 1
    finally:
        h.close()


# ------------------------------------------------------------ a callback timeout


def test_a_callback_timeout_returns_timed_out_and_the_thread_still_waits(h: Harness) -> None:
    graph = approval(before=1, after=1).compile(checkpointer=h.saver)
    thread = new_thread()
    handler = durable_handler(
        graph, submit=lambda cid, interrupts: None, callback_timeout=1, **_async_options(h)
    )
    started = time.monotonic()
    result = _run_to_end(handler, {"thread_id": thread, "input": {"log": []}})
    out = _output(result)  # returned, not raised: the execution succeeds with a status
    assert 1.0 <= time.monotonic() - started < 30
    assert out["status"] == "timed_out" and out["callbacks"] == 0
    assert [(i["value"]) for i in out["interrupts"]] == [{"question": "approve?"}]
    (callback,) = [op for op in result.get_all_operations() if op.operation_type.value == "CALLBACK"]
    assert callback.status is OperationStatus.TIMED_OUT
    state = h.get_state(graph, cfg(thread))
    assert state.next == ("ask",) and [i.id for i in state.interrupts] == [out["interrupts"][0]["id"]]
    assert RUNS["m0"] == 0 and out["checkpoint_id"] == state.config["configurable"]["checkpoint_id"]
    # Answered later, outside the execution: the thread goes on from its interrupt.
    final = h.invoke(graph, Command(resume={"approved": False}), cfg(thread))
    assert final["log"] == ["n0", "approved=False", "m0"] and RUNS["n0"] == 1


# ------------------------------------------------------------ beyond one invocation


def _deadline_handler(
    graph: Any, thread: str, seconds: float, invocations: list[float], **options: Any
) -> Callable[..., Any]:
    @durable_execution
    def handler(event: Any, context: DurableContext) -> dict[str, Any]:
        invocations.append(time.monotonic())
        run = run_durable(
            context,
            graph,
            {"log": []},
            cfg(thread),
            submit=lambda cid, interrupts: None,
            remaining=Deadline(seconds),  # this invocation's clock
            min_margin=0.3,
            margin_factor=2.0,
            **options,
        )
        return run.to_dict()

    return handler


def test_a_run_spans_several_invocation_deadlines_and_ends_as_an_undrained_one(h: Harness) -> None:
    builder = chain(24)  # 1.2 s of nodes; invocations of 0.8 s
    graph = builder.compile(checkpointer=h.saver)
    thread, invocations = new_thread(), []  # type: ignore[var-annotated]
    result = _run_to_end(_deadline_handler(graph, thread, 0.8, invocations, **_async_options(h)), {})
    out = _output(result)
    assert out["status"] == "done" and out["drains"] >= 2 and out["segments"] == out["drains"] + 1
    summaries = [_recorded(s) for s in _steps(result)]
    assert [s["status"] for s in summaries] == ["drained"] * out["drains"] + ["done"]
    assert all(s["reason"] == "deadline" and s["supersteps"] >= 1 for s in summaries[:-1])
    waits = [op for op in result.get_all_operations() if (op.name or "").startswith("graph continue")]
    assert len(waits) == out["drains"] and all(w.status is OperationStatus.SUCCEEDED for w in waits)
    # Each drain ended an invocation: the next segment ran in a fresh one.
    assert len(invocations) == out["segments"]
    once = dict(RUNS)
    assert set(once.values()) == {1} and len(once) == 24, f"a node ran twice: {once}"
    RUNS.clear()
    want = h.invoke(builder.compile(checkpointer=h.saver), {"log": []}, cfg(new_thread()))
    final = h.get_state(graph, cfg(thread)).values
    assert final == want and final["log"] == [f"n{i}" for i in range(24)]


# ------------------------------------------------------------ a failing node


def _flaky_chain(failures: int) -> StateGraph:
    """n0 -> n1 -> flaky -> n3; ``flaky`` raises its first ``failures`` runs."""
    b = StateGraph(State)

    def flaky(state: State) -> dict[str, Any]:
        _count("flaky")
        if RUNS["flaky"] <= failures:
            raise RuntimeError(f"flaky failed (run {RUNS['flaky']})")
        return {"log": ["flaky"]}

    names = ["n0", "n1", "flaky", "n3"]
    for name in names:
        b.add_node(name, flaky if name == "flaky" else _node(name))
    return _linear(b, names)


def _three_attempts(error: Exception, attempts: int) -> RetryDecision:
    return RetryDecision.retry(Duration(1)) if attempts < 3 else RetryDecision.no_retry()


def test_a_failing_node_is_retried_without_rerunning_finished_nodes(h: Harness) -> None:
    graph = _flaky_chain(failures=1).compile(checkpointer=h.saver)
    thread = new_thread()
    handler = durable_handler(
        graph, submit=lambda cid, interrupts: None, retry_strategy=_three_attempts, **_async_options(h)
    )
    result = _run_to_end(handler, {"thread_id": thread, "input": {"log": []}})
    out = _output(result)
    assert out["status"] == "done" and out["segments"] == 1
    (segment,) = _steps(result)
    assert segment.attempt == 2 and segment.status is OperationStatus.SUCCEEDED
    assert dict(RUNS) == {"n0": 1, "n1": 1, "flaky": 2, "n3": 1}
    assert h.get_state(graph, cfg(thread)).values["log"] == ["n0", "n1", "flaky", "n3"]


def test_a_node_failing_past_its_retries_fails_the_execution(
    moto_endpoint: str, names: dict[str, str], loop_thread: Any
) -> None:
    h = Harness("sync", names["table_name"], names["bucket_name"], loop_thread)
    RUNS.clear()
    try:
        graph = _flaky_chain(failures=99).compile(checkpointer=h.saver)
        handler = durable_handler(graph, submit=lambda cid, interrupts: None, retry_strategy=_three_attempts)
        result = _run_to_end(handler, {"thread_id": new_thread(), "input": {"log": []}})
        assert result.status.value == "FAILED" and result.error is not None
        assert "flaky failed (run 3)" in (result.error.message or "")
        assert dict(RUNS) == {"n0": 1, "n1": 1, "flaky": 3}
    finally:
        h.close()


# ------------------------------------------------------------ replays


def test_replays_do_not_rerun_recorded_segments_or_finished_nodes(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Drains, an interrupt, more drains: every invocation replays the whole log from the start.

    Each segment's body ran exactly once, though later invocations replayed
    it; every node ran once (``ask`` twice: LangGraph re-runs an interrupted
    node with its answer).
    """
    bodies: list[str | None] = []
    original = durable.SegmentRunner.segment

    def counted(self: Any, input: Any, start: str | None) -> dict[str, Any]:
        bodies.append(start)
        return original(self, input, start)

    monkeypatch.setattr(durable.SegmentRunner, "segment", counted)
    graph = approval(before=12, after=12).compile(checkpointer=h.saver)
    thread, invocations = new_thread(), []  # type: ignore[var-annotated]
    handler = _deadline_handler(graph, thread, 0.5, invocations, **_async_options(h))
    with _execution(handler, {}) as (runner, arn):
        callback_id = runner.wait_for_callback(arn, timeout=30)
        before_answer = dict(RUNS)
        runner.send_callback_success(callback_id, result=b'{"approved": true}')
        result = runner.wait_for_result(arn, timeout=60)
    out = _output(result)
    assert out["status"] == "done" and out["callbacks"] == 1 and out["drains"] >= 2
    segments = _steps(result)
    assert len(segments) == out["segments"] == len(bodies)  # recorded steps never ran again
    # ... though every invocation after the first replayed all of them (one invocation per segment).
    assert len(invocations) == out["segments"] >= 4
    assert before_answer == {**{f"n{i}": 1 for i in range(12)}, "ask": 1}
    assert dict(RUNS) == {**{f"n{i}": 1 for i in range(12)}, "ask": 2, **{f"m{i}": 1 for i in range(12)}}
    log = h.get_state(graph, cfg(thread)).values["log"]
    assert log == [*(f"n{i}" for i in range(12)), "approved=True", *(f"m{i}" for i in range(12))]


def test_a_segment_whose_result_was_lost_resumes_without_rerunning_nodes(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph reached its interrupt, then the step failed before its result was recorded.

    Its retry finds the thread past the checkpoint the segment started from:
    it reports the interrupt as it is (running nothing) instead of starting
    the graph over with the original input.
    """
    original = durable.SegmentRunner.run
    lost: list[str] = []

    def run_then_fail_once(self: Any, input: Any) -> Any:
        result = original(self, input)
        if not lost:
            lost.append(result.status)
            raise RuntimeError("the invocation ended before the step's result was recorded")
        return result

    monkeypatch.setattr(durable.SegmentRunner, "run", run_then_fail_once)
    graph = approval(before=3, after=1).compile(checkpointer=h.saver)
    thread = new_thread()
    submitted: list[str] = []
    handler = durable_handler(
        graph,
        submit=lambda cid, interrupts: submitted.append(cid),
        retry_strategy=_three_attempts,
        **_async_options(h),
    )
    with _execution(handler, {"thread_id": thread, "input": {"log": []}}) as (runner, arn):
        callback_id = runner.wait_for_callback(arn, timeout=30)
        assert lost == ["interrupted"] and submitted == [callback_id]
        assert dict(RUNS) == {"n0": 1, "n1": 1, "n2": 1, "ask": 1}  # the retry ran nothing
        runner.send_callback_success(callback_id, result=b'{"approved": true}')
        result = runner.wait_for_result(arn, timeout=60)
    assert _output(result)["status"] == "done"
    first = _steps(result)[0]
    assert first.attempt == 2 and _recorded(first)["status"] == "interrupted"
    assert dict(RUNS) == {"n0": 1, "n1": 1, "n2": 1, "ask": 2, "m0": 1}


# ------------------------------------------------------------ the step result stays small


def test_large_interrupt_values_stay_out_of_the_durable_log(
    moto_endpoint: str, names: dict[str, str], loop_thread: Any
) -> None:
    h = Harness("sync-s3", names["table_name"], names["bucket_name"], loop_thread)
    try:
        big = "x" * (MAX_INTERRUPT_BYTES * 3)
        b = StateGraph(State)
        b.add_node("ask", lambda s: {"log": [f"got {interrupt(big)}"]})
        b.add_edge(START, "ask")
        b.add_edge("ask", END)
        graph = b.compile(checkpointer=h.saver)
        got: list[Any] = []
        handler = durable_handler(
            graph, submit=lambda cid, interrupts: got.extend(i.value for i in interrupts)
        )
        with _execution(handler, {"thread_id": (thread := new_thread()), "input": {"log": []}}) as (
            runner,
            arn,
        ):
            runner.send_callback_success(runner.wait_for_callback(arn, timeout=30), result=b"42")
            result = runner.wait_for_result(arn, timeout=60)
        assert got == [big]  # submit reads the full value from the checkpointer
        first = _recorded(_steps(result)[0])
        assert first["interrupts"][0]["omitted"] is True and first["interrupts"][0]["value"] is None
        assert len(_steps(result)[0].result or "") < 1024
        assert h.get_state(graph, cfg(thread)).values["log"] == ["got 42"]
    finally:
        h.close()
    too_many = [type("I", (), {"id": f"{n:032x}", "value": None})() for n in range(3000)]
    with pytest.raises(ValueError, match="MAX_STEP_RESULT_BYTES"):
        durable.segment_summary("interrupted", "t", "", "c", too_many)


def test_config_and_context_are_checked() -> None:
    class Ctx:
        lambda_context = None

    ctx: Any = Ctx()
    with pytest.raises(ValueError, match="checkpoint_id"):
        run_durable(
            ctx, None, None, cfg("t", checkpoint_id="c"), submit=lambda c, i: None, remaining=lambda: 1
        )
    with pytest.raises(TypeError, match="remaining="):
        run_durable(ctx, None, None, cfg("t"), submit=lambda c, i: None)
    assert durable.resume_map(b"not json", ["a"]) == {"a": "not json"}
    assert durable.resume_map('{"a": 1}', ["a", "b"]) == {"a": 1}
    assert durable.resume_map("", ["a"]) == {"a": None}


# ------------------------------------------------------------ the docs' handler


def test_the_docs_durable_handler_runs_as_written(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/lambda.md's durable handler, as written, across a callback."""
    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    with DynamoDBSaver(table_name=names["table_name"]) as s:
        s.setup()
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TABLE", names["table_name"])
    text = Path(__file__).resolve().parents[2].joinpath("docs", "lambda.md").read_text()
    (snippet,) = re.findall(r"```python durable\n(.*?)```", text, flags=re.S)
    reviews: list[tuple[str, Any]] = []
    ns: dict[str, Any] = {
        "build_graph": lambda saver: approval(before=1, after=1).compile(checkpointer=saver),
        "send_for_review": lambda callback_id, questions: reviews.append((callback_id, questions)),
    }
    RUNS.clear()
    exec(compile(snippet, "docs/lambda.md", "exec"), ns)
    thread = new_thread()
    with _execution(ns["handler"], {"thread_id": thread, "input": {"log": []}}) as (runner, arn):
        callback_id = runner.wait_for_callback(arn, timeout=30)
        assert reviews == [(callback_id, [{"question": "approve?"}])]
        runner.send_callback_success(callback_id, result=json.dumps({"approved": True}).encode())
        out = _output(runner.wait_for_result(arn, timeout=60))
    assert out["status"] == "done"
    assert ns["graph"].get_state(cfg(thread)).values["log"] == ["n0", "approved=True", "m0"]
    ns["saver"].close()
