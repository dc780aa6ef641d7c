"""The example agent fits its invocations: it drains before the deadline and continues itself.

The agent's ``implement`` step is made a long job (``PARTS`` supersteps of
``WORK_SECONDS``) and the handler gets a Lambda-like context whose deadline
falls in the middle of it. Each invocation must answer before its deadline;
a drained run is sent on (an asynchronous ``Invoke`` of the same function,
recorded here and delivered by the test, as Lambda would), and the parts run
exactly once across invocations, even when a continuation is delivered twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from lambdas.agent import graph as agent_graph
from lambdas.agent import handler as agent

from tests.lambdas.test_agent import env  # noqa: F401  (the fixture)

PARTS = 30  # 4.5 s of work: more than one invocation holds
STEP = 0.15
SECONDS = 8.0  # per invocation: the agent's margin floor is 5 s, so ~3 s of parts each


class Context:
    """What the handler reads of a Lambda context: the function's name and the remaining time."""

    function_name = "agent"

    def __init__(self, seconds: float = SECONDS) -> None:
        self.at = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return int((self.at - time.monotonic()) * 1000)


class Invokes:
    """A Lambda client that records asynchronous invokes (delivered later by the test)."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def invoke(self, *, FunctionName: str, InvocationType: str, Payload: bytes) -> dict[str, Any]:
        assert FunctionName == "agent" and InvocationType == "Event"
        self.sent.append(json.loads(Payload))
        return {"StatusCode": 202}


@pytest.fixture
def invokes(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Invokes]:  # noqa: F811
    monkeypatch.setattr(agent_graph, "PARTS", PARTS)
    monkeypatch.setattr(agent_graph, "WORK_SECONDS", STEP)
    recorder = Invokes()
    monkeypatch.setattr(agent, "_lambda_client", lambda: recorder)
    yield recorder


def _call(event: dict[str, Any]) -> dict[str, Any]:
    ctx = Context()
    out = agent.handler(event, ctx)
    assert ctx.get_remaining_time_in_millis() > 0, "the invocation outlived its deadline"
    return out


def _deliver(invokes: Invokes) -> list[dict[str, Any]]:
    """Run every continuation sent, as Lambda would, until none is left; their answers."""
    answers = []
    while invokes.sent:
        answers.append(_call(invokes.sent.pop(0)))
    return answers


def _start_and_answer(thread: str) -> dict[str, Any]:
    first = _call(
        {
            "action": "start",
            "thread_id": thread,
            "request_id": "r1",
            "input": "Add an export",
            "caller": "alice",
        }
    )
    assert first["status"] == "waiting"
    return _call(
        {
            "action": "resume",
            "thread_id": thread,
            "request_id": "r2",
            "answer": "CSV",
            "checkpoint_id": first["checkpoint_id"],
            "caller": "alice",
        }
    )


def test_a_long_run_drains_continues_itself_and_runs_each_part_once(invokes: Invokes) -> None:
    out = _start_and_answer("t-long")
    assert out["status"] == "running" and out["statusCode"] == 200
    assert len(invokes.sent) == 1 and invokes.sent[0]["action"] == "continue"
    assert invokes.sent[0]["thread_id"] != "t-long"  # the store's key of the caller's thread
    duplicate = dict(invokes.sent[0])
    answers = _deliver(invokes)
    assert len(answers) >= 1 and answers[-1]["status"] == "done"
    assert {a["status"] for a in answers[:-1]} <= {"drained"}
    assert agent_graph.EXECUTIONS["implement"] == PARTS, dict(agent_graph.EXECUTIONS)
    # A continuation delivered twice (Lambda's async invoke is at least once) runs nothing.
    again = _call(duplicate)
    assert again["status"] in ("done", "drained", "skipped") and agent_graph.EXECUTIONS["implement"] == PARTS
    assert invokes.sent == []
    status = _call({"action": "status", "thread_id": "t-long", "caller": "alice"})
    assert status["status"] == "done" and status["result"] == "Implemented 'Add an export' as agreed: CSV"


def test_without_self_continuation_the_client_polls_and_resumes(
    invokes: Invokes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_CONTINUE", "0")
    out = _start_and_answer("t-poll")
    assert out["status"] == "running" and invokes.sent == []
    for n in range(3, 20):
        status = _call({"action": "status", "thread_id": "t-poll", "caller": "alice"})
        if status["status"] == "done":
            break
        assert status["status"] == "running" and status["checkpoint_id"]
        nxt = _call(
            {
                "action": "resume",
                "thread_id": "t-poll",
                "request_id": f"r{n}",
                "answer": "CSV",
                "checkpoint_id": status["checkpoint_id"],
                "caller": "alice",
            }
        )
        assert nxt["status"] in ("running", "done")
    assert status["status"] == "done" and agent_graph.EXECUTIONS["implement"] == PARTS


def test_status_of_an_unknown_or_foreign_thread_is_404(invokes: Invokes) -> None:
    assert _call({"action": "status", "thread_id": "t-none"})["statusCode"] == 404
    _call({"action": "start", "thread_id": "t-mine", "request_id": "r1", "input": "x"})
    foreign = _call({"action": "status", "thread_id": "t-mine", "caller": "someone-else"})
    assert foreign["statusCode"] == 404
