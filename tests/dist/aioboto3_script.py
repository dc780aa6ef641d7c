"""``AsyncDynamoDBSaver`` on an aioboto3 ``Session``; prints what it saw as JSON.

Run by ``test_aioboto3.py`` with the interpreter of a venv holding aioboto3
(and the old boto3/aiobotocore it pins) and this project, against the
endpoint in ``AWS_ENDPOINT_URL`` (credentials and region come from the session):

    python aioboto3_script.py TABLE BUCKET

It records; the test asserts.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import operator
import os
import sys
from typing import Annotated, Any, TypedDict

import aioboto3
import aiobotocore
import boto3
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import START, StateGraph

import langgraph.checkpoint.dynamodb as package
from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

THREAD = "aioboto3-thread"
GRAPH_THREAD = "aioboto3-graph"


class State(TypedDict, total=False):
    blob: bytes
    log: Annotated[list[str], operator.add]


def grow(state: State) -> dict[str, Any]:
    # Random bytes: over 64 KB after compression, so the value goes to S3.
    return {"blob": os.urandom(100_000), "log": [f"step {len(state.get('log', []))}"]}


async def _s3_keys(session: Any, bucket: str, thread_id: str) -> list[str]:
    async with session.client("s3") as s3:
        # The saver's default layout: checkpoints/<thread id, percent-encoded>/...
        resp = await s3.list_objects_v2(Bucket=bucket, Prefix=f"checkpoints/{thread_id}/")
    return [o["Key"] for o in resp.get("Contents", [])]


async def main(table: str, bucket: str) -> dict[str, Any]:
    # Credentials and region on the session only (the test gives the process
    # none): a saver that ignored the session would fail to sign a request.
    # Dummy values for the loopback moto server.
    session = aioboto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    out: dict[str, Any] = {
        "versions": {
            "aioboto3": aioboto3.__version__,
            "aiobotocore": aiobotocore.__version__,
            "boto3": boto3.__version__,
        },
        "package_file": package.__file__,
    }
    async with AsyncDynamoDBSaver(table_name=table, bucket_name=bucket, session=session) as saver:
        await saver.setup()
        out["client_class"] = type(saver.clients["dynamodb"]).__module__

        big = os.urandom(200_000)
        big_write = os.urandom(150_000)
        cfg = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
        cp = empty_checkpoint()
        cp["channel_values"] = {"big": big, "small": "hello"}
        cp["channel_versions"] = {"big": "1", "small": "1"}
        stored = await saver.aput(cfg, cp, {"source": "input", "step": -1}, {"big": "1", "small": "1"})
        await saver.aput_writes(stored, [("big", big_write), ("small", "bye")], task_id="task-1")

        got = await saver.aget_tuple(stored)
        assert got is not None
        out["get_big_sha"] = hashlib.sha256(got.checkpoint["channel_values"]["big"]).hexdigest()
        out["put_big_sha"] = hashlib.sha256(big).hexdigest()
        out["get_small"] = got.checkpoint["channel_values"]["small"]
        out["pending_writes"] = [
            [task, channel, hashlib.sha256(value).hexdigest() if isinstance(value, bytes) else value]
            for task, channel, value in got.pending_writes or []
        ]
        out["put_write_sha"] = hashlib.sha256(big_write).hexdigest()
        out["list_ids"] = [t.config["configurable"]["checkpoint_id"] async for t in saver.alist(cfg)]
        out["checkpoint_id"] = stored["configurable"]["checkpoint_id"]
        out["s3_keys_before_delete"] = len(await _s3_keys(session, bucket, THREAD))

        await saver.adelete_thread(THREAD)
        out["after_delete"] = await saver.aget_tuple(cfg)
        out["list_after_delete"] = len([t async for t in saver.alist(cfg)])
        out["s3_keys_after_delete"] = len(await _s3_keys(session, bucket, THREAD))

        # One real graph run, twice on one thread: the second reads the first's state back.
        builder = StateGraph(State)
        builder.add_node("grow", grow)
        builder.add_edge(START, "grow")
        graph = builder.compile(checkpointer=saver)
        gcfg = {"configurable": {"thread_id": GRAPH_THREAD}}
        await graph.ainvoke({"log": []}, gcfg)
        result = await graph.ainvoke({"log": ["again"]}, gcfg)
        out["graph_log"] = result["log"]
        out["graph_blob_len"] = len(result["blob"])
        out["graph_history"] = len([s async for s in graph.aget_state_history(gcfg)])
        out["graph_s3_keys"] = len(await _s3_keys(session, bucket, GRAPH_THREAD))
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
