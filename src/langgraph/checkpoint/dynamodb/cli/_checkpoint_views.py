"""Checkpoints as plain dicts (what ``--json`` prints): history rows, why a parent is missing, channel diffs."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb.cli._render import jsonable
from langgraph.checkpoint.dynamodb.cli._stored_sizes import checkpoint_sizes
from langgraph.checkpoint.dynamodb.cli._tasks import (
    INTERRUPT_CHANNEL,
    checkpoint_time,
    is_internal_channel,
    next_tasks,
    produced_by,
)
from langgraph.checkpoint.dynamodb.schema import ATTR
from langgraph.checkpoint.dynamodb.tools._inspection import ddb_client


def describe_checkpoint(
    tup: Any,
    parent: Any | None = None,
    *,
    size: int | None = None,
    live: bool = False,
    parent_missing_reason: str | None = None,
) -> dict[str, Any]:
    """One history row: ids, step, source, node writes, next tasks, interrupts, size.

    Args:
        tup: the ``CheckpointTuple``.
        parent: its parent's tuple, for the node writes (see :func:`produced_by`).
        size: stored bytes; ``None`` (not computed) leaves the ``bytes`` key out.
        live: as ``graph.get_state`` on the latest checkpoint: tasks that
            already finished are left out of ``next``.
        parent_missing_reason: why a parent named by the tuple is not there
            (``pruned``, ``never_existed``, ``unknown``: see
            :func:`missing_parent_reason`); ``unknown`` if not given.

    Example:
        ```python
        row = describe_checkpoint(saver.get_tuple(config))
        row["next"]  # [{'name': 'reviewer', 'id': '...', 'status': 'pending'}]
        ```
    """
    conf = tup.config["configurable"]
    md = tup.metadata or {}
    cp = tup.checkpoint
    # A parent id whose checkpoint is not there: its writes are not either.
    parent_missing = bool(tup.parent_config) and parent is None
    tasks = next_tasks(
        cp, tup.pending_writes or [], step=md.get("step"), checkpoint_ns=conf.get("checkpoint_ns", "")
    )
    if live:
        tasks = [t for t in tasks if t["status"] not in ("done", "resumed")]
    interrupts = [
        jsonable(getattr(v, "value", v))
        for tid, ch, val in tup.pending_writes or []
        if ch == INTERRUPT_CHANNEL
        for v in as_list(val)
    ]
    return {
        "checkpoint_id": conf["checkpoint_id"],
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
        "parent_id": (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
        "step": md.get("step"),
        "source": md.get("source"),
        "created_at": cp.get("ts") or checkpoint_time(conf["checkpoint_id"]),
        "writes": {} if parent_missing else produced_by(cp, md, parent),
        "parent_missing": parent_missing,
        "parent_missing_reason": (parent_missing_reason or "unknown") if parent_missing else None,
        "next": tasks,
        "interrupts": interrupts,
        **({"bytes": size} if size is not None else {}),
    }


def missing_parent_reason(saver: Any, tup: Any) -> str:
    """Why the parent a checkpoint names is not in the store: ``pruned``, ``never_existed`` or ``unknown``.

    The saver records each checkpoint's lineage root when it writes it, after
    looking its parent up: a parent that was not there gets the orphan root.
    So a checkpoint whose root is the orphan root was written on a parent id
    that did not exist (``never_existed``: e.g. a run started from a mistyped
    or another thread's checkpoint id); any other root means the parent
    existed then and was removed since (``pruned``). Items written before
    lineage roots existed carry none: ``unknown``. One GetItem.

    Example:
        ```python
        missing_parent_reason(saver, saver.get_tuple(config))  # 'pruned'
        ```
    """
    conf = tup.config["configurable"]
    resp = ddb_client(saver).get_item(
        TableName=saver.table_name,
        Key={
            ATTR.PK: {"S": saver.partition_key(conf["thread_id"])},
            ATTR.SK: {"S": schema.checkpoint_sk(conf.get("checkpoint_ns", ""), conf["checkpoint_id"])},
        },
        ProjectionExpression="#rt",
        ExpressionAttributeNames={"#rt": ATTR.ROOT},
        ConsistentRead=True,
    )
    root = resp.get("Item", {}).get(ATTR.ROOT, {}).get("S")
    if not isinstance(root, str):
        return "unknown"
    # A copied thread's roots carry a copy suffix (copy_thread): the orphan mark stays in front.
    return "never_existed" if root.startswith(schema.ORPHAN_ROOT) else "pruned"


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def describe_history(
    saver: Any,
    thread_id: str,
    *,
    checkpoint_ns: str | None = "",
    limit: int | None = None,
    with_sizes: bool = True,
) -> list[dict[str, Any]]:
    """The checkpoints of a thread, newest first, as :func:`describe_checkpoint` rows.

    Args:
        saver: a ``DynamoDBSaver``.
        thread_id: the thread.
        checkpoint_ns: namespace (``""`` root, ``None`` all namespaces).
        limit: at most this many checkpoints.
        with_sizes: compute stored bytes (reads the thread's items and S3
            listing); without, rows have no ``bytes`` key.

    Example:
        >>> rows = describe_history(saver, "t-1", limit=5)  # doctest: +SKIP
        >>> rows[0]["next"]  # doctest: +SKIP
        [{'name': 'reviewer', 'id': '...', 'status': 'pending'}]
    """
    conf: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint_ns is not None:
        conf["checkpoint_ns"] = checkpoint_ns
    tuples = list(saver.list({"configurable": conf}, limit=limit))
    by_id = {
        (t.config["configurable"].get("checkpoint_ns", ""), t.config["configurable"]["checkpoint_id"]): t
        for t in tuples
    }
    sizes = checkpoint_sizes(saver, thread_id, checkpoint_ns) if with_sizes and tuples else {}
    rows = []
    for t in tuples:
        ns = t.config["configurable"].get("checkpoint_ns", "")
        parent = None
        if t.parent_config:
            pid = t.parent_config["configurable"]["checkpoint_id"]
            parent = by_id.get((ns, pid))
            if parent is None:
                parent = saver.get_tuple(t.parent_config)
        rows.append(
            describe_checkpoint(
                t,
                parent,
                size=sizes.get((ns, t.config["configurable"]["checkpoint_id"])) if with_sizes else None,
                live=False,
                parent_missing_reason=(
                    missing_parent_reason(saver, t) if t.parent_config and parent is None else None
                ),
            )
        )
    return rows


def diff_checkpoints(a: Any, b: Any) -> dict[str, Any]:
    """Channel-level differences between two checkpoint tuples.

    A channel is ``added``, ``removed``, ``changed`` (value differs) or
    ``rewritten`` (new version, equal value). Equal versions are equal
    values, so unchanged channels are not even compared.

    Example:
        ```python
        d = diff_checkpoints(saver.get_tuple(cfg_a), saver.get_tuple(cfg_b))
        [c["channel"] for c in d["changes"] if c["change"] == "changed"]
        ```
    """
    av, bv = a.checkpoint.get("channel_values", {}), b.checkpoint.get("channel_values", {})
    aver, bver = a.checkpoint.get("channel_versions", {}), b.checkpoint.get("channel_versions", {})
    changes = []
    for chan in sorted(set(av) | set(bv)):
        if is_internal_channel(chan):
            continue
        if chan not in av:
            change = "added"
        elif chan not in bv:
            change = "removed"
        elif aver.get(chan) == bver.get(chan):
            continue
        else:
            change = "rewritten" if _equal(av[chan], bv[chan]) else "changed"
        changes.append(
            {
                "channel": chan,
                "change": change,
                "a": jsonable(av.get(chan)) if chan in av else None,
                "b": jsonable(bv.get(chan)) if chan in bv else None,
                "a_version": aver.get(chan),
                "b_version": bver.get(chan),
            }
        )
    return {
        "a": {
            "checkpoint_id": a.config["configurable"]["checkpoint_id"],
            "step": (a.metadata or {}).get("step"),
        },
        "b": {
            "checkpoint_id": b.config["configurable"]["checkpoint_id"],
            "step": (b.metadata or {}).get("step"),
        },
        "changes": changes,
    }


def _equal(x: Any, y: Any) -> bool:
    try:
        return bool(x == y)
    except Exception:
        return jsonable(x) == jsonable(y)
