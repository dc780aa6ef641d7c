"""The README's minimal Lambda handler drains and continues on a laptop (issue 39, item 1).

``langgraph-dynamodb local --function agent=app:handler`` serves Lambda
``Invoke`` of ``agent`` by running the handler in its process, with a context
whose deadline is ``--function-timeout``. The handler is the README's block
as written (with a ``build_graph`` of six slow nodes before it): the first
invocation drains, ``send_continuation`` invokes the function again through
the local endpoint, and so on until the graph is done, every node run once.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import boto3
import pytest

ROOT = Path(__file__).resolve().parents[2]

PRELUDE = """
import operator, time
from pathlib import Path
from typing import Annotated, TypedDict
from langgraph.graph import END, START, StateGraph

RAN = Path(__file__).with_name("ran.log")


class Chat(TypedDict):
    messages: Annotated[list[str], operator.add]


def build_graph(saver):
    b = StateGraph(Chat)
    names = [f"m{i}" for i in range(6)]

    def node(name):
        def run(state):
            with RAN.open("a") as fh:
                fh.write(name + "\\n")
            time.sleep(0.6)
            return {"messages": [name]}
        return run

    for name in names:
        b.add_node(name, node(name))
    b.add_edge(START, names[0])
    for a, c in zip(names, names[1:]):
        b.add_edge(a, c)
    b.add_edge(names[-1], END)
    return b.compile(checkpointer=saver)

"""


def _readme_handler() -> str:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    (block,) = [b for b in blocks if "def handler(event, context)" in b and "send_continuation(" in b]
    return block


@pytest.fixture
def local_with_agent(tmp_path: Path) -> Any:
    (tmp_path / "app.py").write_text(PRELUDE + _readme_handler())
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "langgraph.checkpoint.dynamodb",
            "local",
            "--json",
            "--function",
            "agent=app:handler",
            "--function-timeout",
            "3",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        yield info, tmp_path
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _client(service: str, info: dict[str, Any]) -> Any:
    e = info["env"]
    return boto3.client(
        service,
        endpoint_url=info["endpoint_url"],
        region_name=e["AWS_REGION"],
        aws_access_key_id=e["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=e["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=e["AWS_SESSION_TOKEN"],
    )


def test_the_readme_handler_drains_and_continues_on_local(local_with_agent: Any) -> None:
    info, folder = local_with_agent
    lam = _client("lambda", info)
    first = lam.invoke(FunctionName="agent", Payload=json.dumps({"thread_id": "laptop-1", "text": "hi"}))
    out = json.loads(first["Payload"].read())
    assert "FunctionError" not in first, out
    assert out["status"] == "drained", out  # the 3 s deadline stopped it: a continuation is on its way
    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    saver = DynamoDBSaver(
        table_name=info["table"],
        bucket_name=info["bucket"],
        boto3_session=boto3.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", aws_session_token="testing"
        ),
        region_name=info["env"]["AWS_REGION"],
        endpoint_url=info["endpoint_url"],
    )
    deadline = time.monotonic() + 90
    state: Any = None
    while time.monotonic() < deadline:
        tup = saver.get_tuple({"configurable": {"thread_id": "laptop-1"}})
        state = tup.checkpoint["channel_values"].get("messages") if tup else None
        if state and state[-1] == "m5":
            break
        time.sleep(0.5)
    saver.close()
    assert state == ["hi", *(f"m{i}" for i in range(6))], state
    ran = (folder / "ran.log").read_text().split()
    assert sorted(ran) == [f"m{i}" for i in range(6)], ran  # every node once, across invocations


def test_other_functions_are_still_motos(local_with_agent: Any) -> None:
    info, _ = local_with_agent
    lam = _client("lambda", info)
    with pytest.raises(lam.exceptions.ResourceNotFoundException):
        lam.invoke(FunctionName="not-served", Payload=b"{}")
    dry = lam.invoke(FunctionName="agent", InvocationType="DryRun", Payload=b"{}")
    assert dry["StatusCode"] == 204


def test_the_durable_recipe_runs_as_written(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """docs/lambda.md, "Durable functions, locally": the testing runner, an interrupt, its callback."""
    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    with DynamoDBSaver(table_name=names["table_name"]) as s:
        s.setup()
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TABLE", names["table_name"])
    text = (ROOT / "docs" / "lambda.md").read_text()
    (block,) = re.findall(r"```python durable-local\n(.*?)```", text, flags=re.S)
    ns: dict[str, Any] = {}
    exec(compile(block, "docs/lambda.md", "exec"), ns)
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["SUCCEEDED done", "{'answer': 'yes'}"], printed
    assert len(ns["asked"]) == 1
    ns["saver"].close()
