"""docs/architecture.md §3.2, "Adding an operation", run as written: the doc cannot rot.

The operation and the saver declarations are read out of the document and
executed; the savers they make are driven against scripted responses.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._engine.methods import async_method, blocking, sync_method
from langgraph.checkpoint.dynamodb._engine.ops import Op
from langgraph.checkpoint.dynamodb._operations import requests
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb.aio import AsyncDynamoDBSaver
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.saver import DynamoDBSaver
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.script import Script, _AsyncScripted, _SyncScripted, call

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def _blocks() -> list[str]:
    text = DOC.read_text()
    section = text[text.index("### 3.2") : text.index("### 3.3")]
    return [textwrap.dedent(b) for b in re.findall(r"```python\n(.*?)```", section, flags=re.S)]


def _savers() -> tuple[type, type]:
    op_src, decl_src = _blocks()
    ns: dict[str, Any] = {
        "BaseDynamoDBSaver": BaseDynamoDBSaver,
        "Op": Op,
        "requests": requests,
        "shapes": shapes,
        "ATTR": ATTR,
    }
    exec(op_src, ns)  # step 1, as the document writes it
    read_module = type("Read", (), {"count_checkpoints": staticmethod(ns["count_checkpoints"])})
    sync_line, async_line, twin_line = [ln.split("#")[0].strip() for ln in decl_src.strip().splitlines()]
    env = {
        "sync_method": sync_method,
        "async_method": async_method,
        "blocking": blocking,
        "read": read_module,
    }
    sync_ns: dict[str, Any] = {}
    exec(sync_line, env, sync_ns)  # step 2, one line per saver
    async_ns: dict[str, Any] = {}
    exec(async_line, env, async_ns)
    exec(twin_line, {**env, **async_ns}, async_ns)
    return type("Sync", (DynamoDBSaver,), sync_ns), type("Async", (AsyncDynamoDBSaver,), async_ns)


def _item(sk: str) -> dict[str, Any]:
    return {ATTR.PK: {"S": "t1"}, ATTR.SK: {"S": sk}}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_documented_operation_runs_on_both_savers(mode: str) -> None:
    sync_cls, async_cls = _savers()
    cls = sync_cls if mode == "sync" else async_cls
    saver = cls(table_name="tbl", region_name="us-east-1", dynamodb_client=object())
    script = Script()
    saver.driver = (_SyncScripted if mode == "sync" else _AsyncScripted)(saver, script)
    script.when(
        "query",
        {
            "Items": [
                _item(schema.checkpoint_sk("", "1")),
                _item(schema.writes_sk("", "1", "task")),
                _item(schema.checkpoint_sk("sub", "2")),
                _item(schema.blob_sk("", "ch", "v1")),
            ]
        },
    )
    assert call(saver, "count_checkpoints", "t1") == 2
    assert script.methods() == ["dynamodb.query"]
    (q,) = script.calls("query")
    assert q.kwargs["ExpressionAttributeValues"] == {":pk": {"S": saver.partition_key("t1")}}
    if mode == "async":
        assert cls.count_checkpoints.__name__ == "count_checkpoints"  # the generated sync twin
    assert cls.count_checkpoints.__doc__ or mode == "async"
