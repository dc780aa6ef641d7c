"""The CLI as a new user met it (issue 39, item 4): grouped task lines, the endpoint hint.

Against the moto server through ``cli.main``, on graphs run with this saver.
"""

from __future__ import annotations

import operator
import socket
import uuid
from typing import Annotated, Any, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import Send, interrupt

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from tests.cli.test_cli import run

WORKERS = 12


class _Fan(TypedDict, total=False):
    out: Annotated[list[int], operator.add]


def _worker(state: dict[str, Any]) -> dict[str, Any]:
    return {"out": [state["i"]]}


def _approve(state: dict[str, Any]) -> dict[str, Any]:
    return {"out": [100 if interrupt("ok?") else -1]}


def test_history_groups_a_fan_out_into_one_entry(moto_endpoint: str, names: dict[str, str]) -> None:
    """Twelve workers finish beside one node that waits: ``worker \u00d712 (done)``, not twelve entries."""
    g = StateGraph(_Fan)
    g.add_node("worker", _worker)
    g.add_node("approve", _approve)
    g.add_conditional_edges(
        START, lambda s: [Send("worker", {"i": i}) for i in range(WORKERS)] + [Send("approve", {})]
    )
    thread = f"fan-{uuid.uuid4().hex[:6]}"
    with DynamoDBSaver(**names) as saver:
        saver.setup()
        g.compile(checkpointer=saver).invoke({"out": []}, {"configurable": {"thread_id": thread}})
    code, out, err = run("--table", names["table_name"], "--bucket", names["bucket_name"], "history", thread)
    assert code == 0, err
    assert f"worker \u00d7{WORKERS} (done)" in out, out
    assert "approve (interrupted)" in out, out
    assert out.count("worker") == 1, out


def test_unreachable_endpoint_hint_matches_the_library(names: dict[str, str]) -> None:
    """The CLI says what the saver says for a loopback port nobody listens on."""
    from langgraph.checkpoint.dynamodb._engine.aws import endpoint_advice

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    code, _, err = run("--table", names["table_name"], "--endpoint-url", url, "threads")
    assert code != 0
    assert url in err and endpoint_advice(url) in err, err
    assert "start the local endpoint (langgraph-dynamodb local)" in err, err
