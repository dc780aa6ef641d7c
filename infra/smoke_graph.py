"""Run a small interrupting graph against a deployed table and bucket.

``infra/deploy_local.sh`` calls this with the stack outputs of a deployment
into a local moto server: it proves that the table CloudFormation created
(from the same schema module) and the bucket work with the saver, including
a payload large enough to be spilled to S3, and an interrupt resumed by a
second saver instance (as a different Lambda instance would).

Usage: python infra/smoke_graph.py OUTPUTS_JSON [STACK_NAME]
"""

from __future__ import annotations

import base64
import json
import os
import sys
import uuid
from typing import Any, TypedDict

import boto3
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from langgraph.checkpoint.dynamodb import DynamoDBSaver, schema


class State(TypedDict, total=False):
    topic: str
    notes: str
    answer: str
    greeting: str


def research(state: State) -> dict[str, Any]:
    # ~200 KB of incompressible text: above the saver's S3 threshold even
    # after compression, so this value is stored in the bucket.
    noise = base64.b64encode(os.urandom(150_000)).decode()
    return {"notes": f"notes about {state['topic']}: {noise}"}


def ask(state: State) -> dict[str, Any]:
    return {"answer": interrupt(f"What should I say about {state['topic']}?")}


def reply(state: State) -> dict[str, Any]:
    return {"greeting": f"On {state['topic']}: {state['answer']} ({len(state['notes']) // 1000} KB of notes)"}


def build(saver: DynamoDBSaver) -> Any:
    g = StateGraph(State)
    g.add_node("research", research)
    g.add_node("ask", ask)
    g.add_node("reply", reply)
    g.add_edge(START, "research")
    g.add_edge("research", "ask")
    g.add_edge("ask", "reply")
    g.add_edge("reply", END)
    return g.compile(checkpointer=saver)


def check_table(table: str) -> None:
    """The deployed table is the schema's table: keys, attribute types, GSIs, stream."""
    desc = boto3.client("dynamodb").describe_table(TableName=table)["Table"]
    want = schema.table_definition(table)
    assert desc["KeySchema"] == want["KeySchema"], desc["KeySchema"]
    assert sorted(desc["AttributeDefinitions"], key=str) == sorted(want["AttributeDefinitions"], key=str)
    got_gsis = {g["IndexName"]: (g["KeySchema"], g["Projection"]) for g in desc["GlobalSecondaryIndexes"]}
    want_gsis = {g["IndexName"]: (g["KeySchema"], g["Projection"]) for g in want["GlobalSecondaryIndexes"]}
    assert got_gsis == want_gsis, got_gsis
    assert desc["StreamSpecification"] == want["StreamSpecification"], desc.get("StreamSpecification")
    print(
        f"table matches schema.table_definition(): {sorted(got_gsis)}, stream {desc['StreamSpecification']}"
    )


def main(outputs_path: str, stack_name: str = "LangGraphCheckpoints") -> int:
    with open(outputs_path) as f:
        outputs = json.load(f)[stack_name]
    table, bucket = outputs["TableName"], outputs["BucketName"]
    print(f"table={table} bucket={bucket}")
    check_table(table)
    config = {"configurable": {"thread_id": f"smoke-{uuid.uuid4().hex[:8]}"}}

    first = build(DynamoDBSaver(table_name=table, bucket_name=bucket))
    result = first.invoke({"topic": "checkpoints"}, config)
    question = result["__interrupt__"][0].value
    print(f"interrupted: {question!r}")

    # A second saver with its own clients: a different Lambda instance resumes.
    saver = DynamoDBSaver(table_name=table, bucket_name=bucket)
    second = build(saver)
    final = second.invoke(Command(resume="they are durable"), config)
    print(f"resumed: {final['greeting']!r}")
    assert final["greeting"].startswith("On checkpoints: they are durable"), final
    history = list(saver.list(config))
    objects = boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix="checkpoints/").get("KeyCount", 0)
    print(f"checkpoints={len(history)} s3_objects={objects}")
    assert objects >= 1, "the large value should have been stored in S3"

    # Leave the bucket empty so that `cdk destroy` can delete it.
    saver.delete_thread(config["configurable"]["thread_id"])
    left = boto3.client("s3").list_objects_v2(Bucket=bucket).get("KeyCount", 0)
    print(f"deleted thread; objects left={left}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
