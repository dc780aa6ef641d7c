"""Async programs end without ``Unclosed client session`` (issue 39, item 4).

Each case is a user's program, run in a fresh interpreter against the moto
server: the README's async Quick start, and the same saver never closed
(no ``async with``, no ``aclose()``), in the default mode and with
``io_thread=True``. aiohttp reports an unclosed session on stderr when the
session is collected; the program must print none, with warnings shown.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROGRAM = """
import asyncio
from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver
from langgraph.graph import START, StateGraph

builder = StateGraph(dict)
builder.add_node("hello", lambda state: {{"greeting": "hi"}})
builder.add_edge(START, "hello")


async def main() -> None:
    {body}


asyncio.run(main())
"""

BODIES = {
    "async with": (
        "async with AsyncDynamoDBSaver(table_name={table!r}, bucket_name={bucket!r}) as saver:\n"
        "        await saver.setup()\n"
        "        graph = builder.compile(checkpointer=saver)\n"
        "        print(await graph.ainvoke({{}}, {{'configurable': {{'thread_id': 'exit-1'}}}}))"
    ),
    "never closed": (
        "saver = AsyncDynamoDBSaver(table_name={table!r}, bucket_name={bucket!r})\n"
        "    await saver.setup()\n"
        "    graph = builder.compile(checkpointer=saver)\n"
        "    print(await graph.ainvoke({{}}, {{'configurable': {{'thread_id': 'exit-2'}}}}))"
    ),
    "io_thread, never closed": (
        "saver = AsyncDynamoDBSaver(table_name={table!r}, bucket_name={bucket!r}, io_thread=True)\n"
        "    await saver.setup()\n"
        "    graph = builder.compile(checkpointer=saver)\n"
        "    print(await graph.ainvoke({{}}, {{'configurable': {{'thread_id': 'exit-3'}}}}))"
    ),
}


@pytest.mark.parametrize("case", sorted(BODIES))
def test_an_async_program_exits_without_unclosed_sessions(
    case: str, moto_endpoint: str, names: dict[str, str]
) -> None:
    body = BODIES[case].format(table=names["table_name"], bucket=names["bucket_name"])
    proc = subprocess.run(
        [sys.executable, "-W", "always", "-c", PROGRAM.format(body=body)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONTRACEMALLOC": "0"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "'greeting': 'hi'" in proc.stdout
    assert "Unclosed" not in proc.stderr and "ResourceWarning" not in proc.stderr, proc.stderr
