"""Resume a demo thread from a separate process: ``python -m demo.resume THREAD ANSWER``.

This is what a second Lambda instance does minutes or days after the
question was asked: a fresh process, a fresh saver, nothing shared with the
process that started the thread except the table and the bucket (found
through ``AWS_ENDPOINT_URL``, ``LANGGRAPH_DYNAMODB_TABLE`` and
``LANGGRAPH_DYNAMODB_BUCKET``).

Prints one JSON line: ``{"pid", "outcome", "review_round", "log"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from langgraph.types import Command

from demo.workflow import build_graph
from langgraph.checkpoint.dynamodb import DynamoDBSaver


def main(argv: list[str] | None = None) -> int:
    """Resume ``THREAD`` with ``ANSWER`` and print the result as JSON."""
    p = argparse.ArgumentParser(prog="python -m demo.resume")
    p.add_argument("thread")
    p.add_argument("answer")
    args = p.parse_args(argv)
    config = {"configurable": {"thread_id": args.thread}}
    with DynamoDBSaver(
        table_name=os.environ["LANGGRAPH_DYNAMODB_TABLE"],
        bucket_name=os.environ.get("LANGGRAPH_DYNAMODB_BUCKET"),
    ) as saver:
        graph = build_graph(saver)
        snapshot = graph.get_state(config)
        if not any(task.interrupts for task in snapshot.tasks):
            print(json.dumps({"error": "the thread is not waiting for an answer"}))
            return 1
        out = graph.invoke(Command(resume=args.answer), config, durability="sync")
    print(
        json.dumps(
            {
                "pid": os.getpid(),
                "outcome": out.get("outcome"),
                "review_round": out.get("review_round"),
                "log": out.get("log"),
            }
        )
    )
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
