"""Stored items for the scripted unit tests, made by running the real write operations.

A :class:`Writer` is a sync saver answering from a script (no server): its
``put``/``put_writes`` run the real operations, and the items and S3 objects
they wrote are read back from the recorded requests. The tests then feed those
items to the operation under test as Query (or listing) results, so the items
an operation sees are the items the library writes, not hand-written guesses.

Example:
    ```python
    w = Writer()
    c1 = w.put("t1", {"a": 1})
    w.put_writes(c1, [("a", 2)], "task")
    saver, script = scripted_saver("sync")
    script.when("query", {"Items": w.items()})
    ```
"""

from __future__ import annotations

import datetime
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.script import Script, scripted_saver

Item = dict[str, Any]


def cfg(thread: str, cid: str | None = None, ns: str = "") -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if cid is not None:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def sk(item: Item) -> str:
    return str(item[ATTR.SK]["S"])


def cid_of(config: dict[str, Any]) -> str:
    return str(config["configurable"]["checkpoint_id"])


def writes_item(update: Any) -> Item:
    """The item an ``update_item`` of ``put_writes`` leaves in the table (it only SETs)."""
    kw = update.kwargs
    values = kw["ExpressionAttributeValues"]
    item: Item = dict(kw["Key"])
    for name, attr in kw["ExpressionAttributeNames"].items():
        if ":" + name[1:] in values:
            item[attr] = values[":" + name[1:]]
    return item


def deleted(script: Script) -> list[str]:
    """Sort keys of the items deleted through BatchWriteItem, in request order."""
    out: list[str] = []
    for c in script.calls("batch_write_item"):
        for reqs in c.kwargs["RequestItems"].values():
            out += [r["DeleteRequest"]["Key"][ATTR.SK]["S"] for r in reqs if "DeleteRequest" in r]
    return out


def put_requests(script: Script) -> list[Item]:
    """Items written through BatchWriteItem, in request order."""
    out: list[Item] = []
    for c in script.calls("batch_write_item"):
        for reqs in c.kwargs["RequestItems"].values():
            out += [r["PutRequest"]["Item"] for r in reqs if "PutRequest" in r]
    return out


def first(script: Script, method: str) -> int:
    """Index in the script's log of the first request of ``method`` (``service.method``)."""
    return script.methods().index(method)


class Writer:
    """Writes threads with a scripted sync saver and hands back what it stored."""

    def __init__(self, **saver_kwargs: Any) -> None:
        self.saver, self.script = scripted_saver("sync", **saver_kwargs)
        self._versions: dict[tuple[str, str], dict[str, str]] = {}  # last put's, per (thread, ns)

    def put(
        self,
        thread: str,
        values: dict[str, Any],
        versions: dict[str, str] | None = None,
        *,
        parent: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        ns: str = "",
    ) -> dict[str, Any]:
        """Store a checkpoint (child of ``parent``); ``versions`` default to "1" for each value.

        As LangGraph does, only channels whose version changed since the
        last checkpoint of the thread are passed as new versions (an
        unchanged large value is then referenced, not stored again).
        """
        cp = empty_checkpoint()
        cp["id"] = str(uuid6(clock_seq=-1))
        cp["channel_values"] = dict(values)
        cp["channel_versions"] = dict(versions or {k: "1" for k in values})
        config = parent or cfg(thread, ns=ns)
        where = (config["configurable"]["thread_id"], config["configurable"]["checkpoint_ns"])
        last = self._versions.get(where, {})
        new = {k: v for k, v in cp["channel_versions"].items() if k in values and last.get(k) != v}
        self._versions[where] = {k: str(v) for k, v in cp["channel_versions"].items()}
        return dict(self.saver.put(config, cp, dict(metadata or {}), new))

    def put_writes(
        self, config: dict[str, Any], writes: list[tuple[str, Any]], task_id: str, run_id: str | None = None
    ) -> None:
        conf = dict(config)
        if run_id is not None:
            conf["metadata"] = {"run_id": run_id}
        self.saver.put_writes(conf, writes, task_id)

    def items(self, thread: str | None = None) -> list[Item]:
        """Checkpoint, writes and blob items stored so far (of ``thread``), in sort key order."""
        out: dict[tuple[str, str], Item] = {}
        found = [c.kwargs["Item"] for c in self.script.calls("put_item")]
        found += [
            a["Put"]["Item"]
            for c in self.script.calls("transact_write_items")
            for a in c.kwargs["TransactItems"]
            if "Put" in a
        ]
        found += put_requests(self.script)
        for c in self.script.calls("update_item"):
            kind = schema.parse_sk(c.kwargs["Key"][ATTR.SK]["S"])[1]
            if kind == schema.WRITES_ITEM:
                found.append(writes_item(c))
        for it in found:
            out[(it[ATTR.PK]["S"], sk(it))] = it  # a re-put replaces the item
        pk = None if thread is None else self.saver.partition_key(thread)
        return sorted((it for (p, _), it in out.items() if pk is None or p == pk), key=sk)

    def checkpoints(self, thread: str | None = None) -> list[Item]:
        return [it for it in self.items(thread) if it[ATTR.KIND]["S"] == schema.CHECKPOINT_ITEM]

    def objects(self) -> dict[str, bytes]:
        """S3 objects uploaded so far, by key."""
        return {c.kwargs["Key"]: c.kwargs["Body"] for c in self.script.calls("put_object")}


def listing(keys: list[str], modified: float, sizes: int = 10) -> dict[str, Any]:
    """A ``list_objects_v2`` page of ``keys``, all last modified at epoch ``modified``."""
    at = datetime.datetime.fromtimestamp(modified, tz=datetime.UTC)
    return {"Contents": [{"Key": k, "LastModified": at, "Size": sizes} for k in keys]}


def noise(n: int, seed: int = 0) -> bytes:
    """``n`` incompressible bytes (the codec compresses repetitive values below any threshold)."""
    import random

    return random.Random(seed).randbytes(n)


def delta_chain(w: Writer, thread: str, n: int, *, snapshot_every: int = 0) -> list[dict[str, Any]]:
    """``n`` checkpoints of a delta channel ``m``: a snapshot at the first (and every ``snapshot_every``)."""
    configs: list[dict[str, Any]] = []
    parent = None
    since = 0
    for i in range(n):
        snapshot = i == 0 or (snapshot_every and i % snapshot_every == 0)
        since = 0 if snapshot else since + 1
        values: dict[str, Any] = {"i": i}
        if snapshot:
            values["m"] = [f"msg{j}" for j in range(i + 1)]
        parent = w.put(
            thread,
            values,
            {"i": str(i + 1), "m": str(i + 1)},
            parent=parent,
            metadata={"step": i, "counters_since_delta_snapshot": {"m": [since, since]}},
        )
        w.put_writes(parent, [("m", f"msg{i + 1}")], f"task{i}")
        configs.append(parent)
    return configs
