"""Run the requirement-confirmation flow in its own process (start or resume).

    python -m tests.support.flow_cli start|resume THREAD --mode sync|async --table T [--bucket B]

Prints one JSON line: the interrupt question, or the final result.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from langgraph.types import Command

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver
from tests.support.graphs import EXECUTIONS, requirement_graph


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("action", choices=["start", "resume"])
    p.add_argument("thread")
    p.add_argument("--mode", choices=["sync", "async"], default="sync")
    p.add_argument("--table", required=True)
    p.add_argument("--bucket")
    p.add_argument("--answer", default="CSV download")
    a = p.parse_args()
    config = {"configurable": {"thread_id": a.thread}}
    inp = {"request": "export button"} if a.action == "start" else Command(resume=a.answer)

    def report(out: dict) -> None:  # type: ignore[type-arg]
        if "__interrupt__" in out:
            print(json.dumps({"interrupt": out["__interrupt__"][0].value, "executions": dict(EXECUTIONS)}))
        else:
            print(json.dumps({"result": out["result"], "executions": dict(EXECUTIONS)}))

    if a.mode == "sync":
        with DynamoDBSaver(table_name=a.table, bucket_name=a.bucket) as saver:
            report(requirement_graph().compile(checkpointer=saver).invoke(inp, config))
    else:

        async def run() -> None:
            async with AsyncDynamoDBSaver(table_name=a.table, bucket_name=a.bucket) as saver:
                report(await requirement_graph().compile(checkpointer=saver).ainvoke(inp, config))

        asyncio.run(run())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
