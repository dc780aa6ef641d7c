"""Runs that fit an invocation: drain before the deadline, resume, continue once.

Graphs whose nodes take time run under a fake deadline (what a Lambda context's
``get_remaining_time_in_millis`` gives) on the moto server, sync and async
(S3 and encryption on). Each test checks the drained run against the same graph
run without a deadline: same final state, every node run exactly once, and the
drain returned before the deadline. This also pins the LangGraph behaviour
``runs`` relies on (``RunControl``, ``GraphDrained``: documented as alpha).
"""

from __future__ import annotations

import itertools
import json
import operator
import os
import threading
import time
from collections import Counter
from typing import Annotated, Any, TypedDict

import boto3
import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt

from langgraph.checkpoint.dynamodb.lambdas.runs import (
    RunResult,
    arun_with_deadline,
    continuation_event,
    run_continuation,
    run_with_deadline,
    send_continuation,
)
from tests.support.harness import Harness, cfg, new_thread

STEP = 0.15  # seconds per node
RUNS: Counter[str] = Counter()
_LOCK = threading.Lock()


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _node(name: str, seconds: float = STEP) -> Any:
    def run(state: State) -> dict[str, Any]:
        with _LOCK:
            RUNS[name] += 1
        time.sleep(seconds)
        return {"log": [name]}

    return run


def chain(n: int = 14) -> StateGraph:
    b = StateGraph(State)
    names = [f"n{i}" for i in range(n)]
    for name in names:
        b.add_node(name, _node(name))
    b.add_edge(START, names[0])
    for a, c in itertools.pairwise(names):
        b.add_edge(a, c)
    b.add_edge(names[-1], END)
    return b


class FanState(TypedDict):
    log: Annotated[list[str], operator.add]
    round: int


def fan(width: int = 4, rounds: int = 12) -> StateGraph:
    """Rounds of ``width`` parallel branches (Sends), each round one superstep."""

    def plan(state: FanState) -> dict[str, Any]:
        return {"round": state.get("round", 0) + 1}

    def route(state: FanState) -> Any:
        if state["round"] > rounds:
            return END
        return [Send("work", {"log": [], "round": state["round"], "i": i}) for i in range(width)]

    def work(arg: dict[str, Any]) -> dict[str, Any]:
        name = f"r{arg['round']}w{arg['i']}"
        with _LOCK:
            RUNS[name] += 1
        time.sleep(STEP)
        return {"log": [name]}

    b = StateGraph(FanState)
    b.add_node("plan", plan)
    b.add_node("work", work)
    b.add_edge(START, "plan")
    b.add_conditional_edges("plan", route, ["work", END])
    b.add_edge("work", "plan")
    return b


def nested() -> StateGraph:
    """A parent whose middle node is a subgraph of 12 slow steps (the deadline falls inside it)."""
    inner = chain(12)
    b = StateGraph(State)
    b.add_node("before", _node("before"))
    b.add_node("sub", inner.compile())
    b.add_node("after", _node("after"))
    b.add_edge(START, "before")
    b.add_edge("before", "sub")
    b.add_edge("sub", "after")
    b.add_edge("after", END)
    return b


class Deadline:
    """A Lambda context's clock: ``seconds`` from now."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return int((self.at - time.monotonic()) * 1000)


def _run(h: Harness, graph: Any, inp: Any, config: dict[str, Any], **kw: Any) -> RunResult:
    if h.is_async:
        return h.loop.run(arun_with_deadline(graph, inp, config, **kw))  # type: ignore[no-any-return]
    return run_with_deadline(graph, inp, config, **kw)


@pytest.fixture(params=["sync", "async-s3-encrypted"])
def h(request: pytest.FixtureRequest, moto_endpoint: str, names: dict[str, str], loop_thread: Any) -> Any:
    harness = Harness(request.param, names["table_name"], names["bucket_name"], loop_thread)
    RUNS.clear()
    yield harness
    harness.close()


def _drain_and_finish(
    h: Harness, builder: StateGraph, inp: Any, seconds: float
) -> tuple[list[RunResult], Any]:
    """Run to the end across invocations of ``seconds`` each; the results and the final values."""
    graph = builder.compile(checkpointer=h.saver)
    config = cfg(new_thread())
    results = []
    nxt: Any = inp
    for _ in range(30):
        ctx = Deadline(seconds)
        # A 1 s floor is ~6 supersteps of slack: a loaded 2-core CI runner once
        # stretched one superstep past a 0.5 s margin and overshot by 41 ms.
        result = _run(h, graph, nxt, config, context=ctx, min_margin=1.0, margin_factor=2.0)
        assert ctx.get_remaining_time_in_millis() > 0, "the run outlived its invocation"
        results.append(result)
        if result.status != "drained":
            return results, result.output
        nxt = None
    raise AssertionError("never finished")


@pytest.mark.parametrize("shape", ["chain", "fan", "nested"])
def test_a_run_drains_before_each_deadline_and_ends_as_an_undrained_one(h: Harness, shape: str) -> None:
    builder = {"chain": chain, "fan": fan, "nested": nested}[shape]()
    inp = {"log": []} if shape != "fan" else {"log": [], "round": 0}
    results, final = _drain_and_finish(h, builder, inp, seconds=2.5)
    assert len(results) >= 2 and {r.status for r in results[:-1]} == {"drained"}
    assert results[-1].status == "done"
    # "throttled": the tier under the throughput layer (THROUGHPUT_SCALE) may end a run that way.
    assert all(r.reason in ("deadline", "throttled") and r.checkpoint_id for r in results[:-1])
    once = dict(RUNS)
    assert set(once.values()) == {1}, f"a node ran twice: {once}"
    RUNS.clear()
    reference = builder.compile(checkpointer=h.saver)
    want = h.invoke(reference, inp, cfg(new_thread()))
    assert sorted(final["log"]) == sorted(want["log"]) and final == {**want, "log": final["log"]}
    if shape != "fan":  # parallel branches may finish in any order; a chain's log is its order
        assert final["log"] == want["log"]


class BlobState(TypedDict):
    log: Annotated[list[str], operator.add]
    blob: bytes


def _blob_chain(n: int) -> StateGraph:
    """Nodes that each write 20 KB of state: 20 write units a checkpoint."""
    b = StateGraph(BlobState)
    names = [f"n{i}" for i in range(n)]
    for name in names:

        def run(state: BlobState, name: str = name) -> dict[str, Any]:
            with _LOCK:
                RUNS[name] += 1
            time.sleep(0.05)
            return {"log": [name], "blob": os.urandom(20_000)}

        b.add_node(name, run)
    b.add_edge(START, names[0])
    for a, c in itertools.pairwise(names):
        b.add_edge(a, c)
    b.add_edge(names[-1], END)
    return b


def test_a_run_throttled_near_its_deadline_ends_drained_and_resumes(
    moto_endpoint: str, names: dict[str, str]
) -> None:
    """Throttled until the deadline is close: the run ends in time as drained, and resumes to the end."""
    from botocore.config import Config

    from langgraph.checkpoint.dynamodb import DynamoDBSaver
    from tests.support import throughput

    # One botocore attempt: its own retries (up to 20 s of backoff) run inside a request
    # and are not cut short by the deadline; the driver's pacing is.
    client = boto3.client("dynamodb", config=Config(retries={"max_attempts": 1, "mode": "standard"}))
    RUNS.clear()
    with DynamoDBSaver(table_name=names["table_name"], dynamodb_client=client) as saver:
        saver.setup()
        graph = _blob_chain(4).compile(checkpointer=saver)
        config = cfg(new_thread())
        # A partition at 1/200 of AWS's rate (5 write units a second): a 20-unit
        # checkpoint waits 4 s for the next, longer than the run may wait.
        with throughput.counting(moto_endpoint, scale=0.005):
            throughput.reset(moto_endpoint)
            ctx = Deadline(3.0)
            result = run_with_deadline(graph, {"log": []}, config, context=ctx, min_margin=0.5)
            assert ctx.get_remaining_time_in_millis() > 0, "the run outlived its invocation"
            state = throughput.capacity(moto_endpoint)
        assert result.status == "drained" and result.reason == "throttled", result
        assert result.checkpoint_id and sum(state["throttles"].values()) > 0
        final = run_with_deadline(graph, None, result.config, context=Deadline(60))
    assert final.status == "done" and final.output["log"] == ["n0", "n1", "n2", "n3"]
    # A node whose writes the throttle kept from being saved runs again on resume
    # (as after a timeout); nothing saved is lost or repeated in the state.
    assert len(RUNS) == 4 and min(RUNS.values()) == 1


def test_an_interrupt_is_reported_with_its_value(h: Harness) -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"log": [f"answer:{interrupt('approve?')}"]}

    b = StateGraph(State)
    b.add_node("ask", ask)
    b.add_edge(START, "ask")
    b.add_edge("ask", END)
    graph = b.compile(checkpointer=h.saver)
    config = cfg(new_thread())
    first = _run(h, graph, {"log": []}, config, context=Deadline(60))
    assert first.status == "interrupted" and [i.value for i in first.interrupts] == ["approve?"]
    assert first.to_dict()["interrupts"][0]["value"] == "approve?"
    done = _run(h, graph, Command(resume="yes"), config, context=Deadline(60))
    assert done.status == "done" and done.output == {"log": ["answer:yes"]}


def test_margin_follows_the_longest_superstep() -> None:
    from langgraph.runtime import RunControl

    from langgraph.checkpoint.dynamodb.lambdas.runs import DeadlineWatch

    left = [10.0]
    watch = DeadlineWatch(lambda: left[0], control=RunControl(), min_margin=1.0, factor=2.0)
    assert watch.margin == 1.0
    watch._last -= 3.0  # a 3-second superstep just ended
    watch.boundary()
    assert watch.margin == pytest.approx(6.0, abs=0.1) and not watch.control.drain_requested
    left[0] = 5.0
    assert watch.check() and watch.control.drain_reason == "deadline"
    with pytest.raises(TypeError, match="exactly one"):
        run_with_deadline(None, None, cfg("t"), context=Deadline(1), deadline=time.time() + 1)
    with pytest.raises(ValueError, match="min_margin"):
        DeadlineWatch(lambda: 1.0, control=RunControl(), min_margin=-1)


# ------------------------------------------------------------ continuation


@pytest.mark.parametrize("h", ["sync", "sync-s3-encrypted"], indirect=True)
def test_a_continuation_runs_once_and_a_stale_one_is_skipped(h: Harness) -> None:
    """run_continuation is the sync building block (lock.run_once), with and without encryption."""
    graph = chain(8).compile(checkpointer=h.saver)
    config = cfg(new_thread())
    first = run_with_deadline(graph, {"log": []}, config, context=Deadline(1.0), min_margin=0.5)
    assert first.status == "drained"
    event = continuation_event(first)
    out = run_continuation(graph, h.saver, json.dumps(event), context=Deadline(60))
    assert out["status"] == "done" and out["replayed"] is False
    before = dict(RUNS)
    again = run_continuation(graph, h.saver, event, context=Deadline(60))  # a duplicate delivery
    assert again["replayed"] is True and again["status"] == "done" and dict(RUNS) == before
    assert set(RUNS.values()) == {1}
    # An event for a checkpoint the thread has moved past (another request id): skipped.
    stale = {
        **event,
        "checkpoint_id": first.checkpoint_id[:-1] + ("0" if first.checkpoint_id[-1] != "0" else "1"),
    }
    assert run_continuation(graph, h.saver, stale, context=Deadline(60))["status"] == "skipped"
    with pytest.raises(ValueError, match="not a continuation"):
        run_continuation(graph, h.saver, {"action": "other"}, context=Deadline(60))


def test_send_continuation_to_a_fifo_queue_deduplicates(moto_endpoint: str) -> None:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName=f"runs-{new_thread()}.fifo", Attributes={"FifoQueue": "true"})[
        "QueueUrl"
    ]
    result = RunResult("drained", "t-" + "é" * 300, "", "1f0-abc", reason="deadline")
    sent = send_continuation(result, queue_url=url)
    send_continuation(result.to_dict(), queue_url=url)  # the same continuation again
    msgs = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
    assert [json.loads(m["Body"]) for m in msgs] == [sent]
    with pytest.raises(ValueError, match="only a drained run"):
        send_continuation(RunResult("done", "t", "", "c"), queue_url=url)


def test_send_continuation_invokes_the_function_asynchronously() -> None:
    calls: list[dict[str, Any]] = []

    class Lambda:  # moto cannot invoke functions (no Docker here): the request is what is checked
        def invoke(self, **kw: Any) -> dict[str, Any]:
            calls.append(kw)
            return {"StatusCode": 202}

    result = RunResult("drained", "t-1", "ns", "cid-1", reason="deadline")
    send_continuation(result, function_name="agent", lambda_client=Lambda())
    assert calls[0]["InvocationType"] == "Event" and calls[0]["FunctionName"] == "agent"
    assert json.loads(calls[0]["Payload"]) == continuation_event(result)


# ------------------------------------------------------------ the docs' handler


class Chat(TypedDict):
    messages: Annotated[list[str], operator.add]


def _chat_graph(saver: Any) -> Any:
    b = StateGraph(Chat)
    names = [f"m{i}" for i in range(10)]
    for name in names:
        b.add_node(
            name, lambda s, name=name: (RUNS.update([name]), time.sleep(STEP), {"messages": [name]})[-1]
        )
    b.add_edge(START, names[0])
    for a, c in itertools.pairwise(names):
        b.add_edge(a, c)
    b.add_edge(names[-1], END)
    return b.compile(checkpointer=saver)


@pytest.mark.parametrize("doc", ["docs/lambda.md", "README.md"])
def test_the_docs_handler_drains_and_continues_itself(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch, doc: str
) -> None:
    """The docs' handler, as written: each invocation drains, sends its continuation, the next goes on."""
    import re
    from pathlib import Path

    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    with DynamoDBSaver(**names) as s:
        s.setup()
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TABLE", names["table_name"])
    text = Path(__file__).resolve().parents[2].joinpath(doc).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    (snippet,) = [b for b in blocks if "def handler(event, context)" in b and "run_continuation(" in b]
    ns: dict[str, Any] = {"build_graph": _chat_graph}
    exec(compile(snippet, doc, "exec"), ns)
    sent: list[dict[str, Any]] = []
    ns["send_continuation"] = lambda out, function_name: sent.append(continuation_event(out))

    class Context(Deadline):
        function_name = "agent"

    RUNS.clear()
    out = ns["handler"]({"thread_id": (thread := new_thread()), "text": "hi"}, Context(1.5))
    duplicates = 0
    while out["status"] == "drained":
        assert sent and sent[-1]["checkpoint_id"] == out["checkpoint_id"]
        event = sent[-1]
        out = ns["handler"](event, Context(1.5))
        # Lambda's asynchronous Invoke (and SQS) may deliver an event twice: the duplicate
        # replays the first run's result and must queue no second continuation (issue 39).
        queued = len(sent)
        again = ns["handler"](event, Context(1.5))
        assert again["replayed"] and again["checkpoint_id"] == out["checkpoint_id"], again
        assert len(sent) == queued, "a replayed result queued another continuation"
        duplicates += 1
    assert duplicates >= 1
    assert out["status"] == "done" and len(sent) >= 1 and set(RUNS.values()) == {1} and len(RUNS) == 10
    state = ns["graph"].get_state(cfg(thread))
    assert state.values["messages"] == ["hi", *(f"m{i}" for i in range(10))]
    ns["saver"].close()


def test_an_invocation_that_starts_within_the_margin_still_runs_one_superstep(h: Harness) -> None:
    graph = chain(4).compile(checkpointer=h.saver)
    config = cfg(new_thread())
    done = 0
    for _ in range(10):
        result = _run(
            h, graph, {"log": []} if done == 0 else None, config, context=Deadline(0.05), min_margin=5
        )
        done += result.supersteps
        assert result.supersteps >= 1, "an invocation made no progress"
        if result.status == "done":
            break
    assert result.status == "done" and done == 4 and set(RUNS.values()) == {1}


# ------------------------------------------------------------ a killed worker

_KILLED_WORKER = """
import sys, time
from tests.e2e.test_runs import chain, Deadline, RUNS
from langgraph.checkpoint.dynamodb import DynamoDBSaver
from langgraph.checkpoint.dynamodb.lambdas.runs import run_with_deadline
import tests.e2e.test_runs as mod

log = open(sys.argv[3], "a", buffering=1)
original = mod._node
def noting(name, seconds=mod.STEP):
    def run(state):
        log.write(name + "\\n")
        time.sleep(0.4)
        return {"log": [name]}
    return run
mod._node = noting
saver = DynamoDBSaver(table_name=sys.argv[1])
graph = chain(8).compile(checkpointer=saver)
config = {"configurable": {"thread_id": sys.argv[2]}}
run_with_deadline(graph, {"log": []}, config, context=Deadline(600), durability="sync")
"""


def test_a_worker_killed_mid_step_resumes_from_its_last_checkpoint(
    moto_endpoint: str, names: dict[str, str], tmp_path: Any
) -> None:
    """SIGKILL (Lambda's timeout) mid-superstep: the next invocation resumes from the last checkpoint.

    With ``durability="sync"`` every finished superstep's checkpoint is stored
    before the next one starts, so only the step the kill interrupted runs
    again. (LangGraph's default, ``"async"``, writes it while the next step
    runs: a kill may then lose the step before too.)
    """
    import signal
    import subprocess
    import sys

    from langgraph.checkpoint.dynamodb import DynamoDBSaver
    from tests.support.harness import env_for_subprocess

    with DynamoDBSaver(table_name=names["table_name"]) as s:
        s.setup()
    thread, log = new_thread(), tmp_path / "started.log"
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WORKER, names["table_name"], thread, str(log)],
        env=env_for_subprocess(),
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not log.exists() or len(log.read_text().split()) < 4):
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    started = log.read_text().split()
    assert len(started) >= 4, "the worker never got going"
    saver = DynamoDBSaver(table_name=names["table_name"])
    RUNS.clear()
    graph = chain(8).compile(checkpointer=saver)
    resumed = run_with_deadline(graph, None, cfg(thread), context=Deadline(600))
    assert resumed.status == "done" and resumed.output["log"] == [f"n{i}" for i in range(8)]
    # Steps that finished before the kill are not run again; the killed one (at most) is.
    finished_before = len(started) - 1
    assert set(RUNS) == {f"n{i}" for i in range(finished_before, 8)}, (started, dict(RUNS))
    saver.close()
