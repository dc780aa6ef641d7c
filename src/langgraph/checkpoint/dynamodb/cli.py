"""``langgraph-dynamodb``: look at and manage threads stored by the DynamoDB savers.

Run ``langgraph-dynamodb --help`` (or ``python -m langgraph.checkpoint.dynamodb``).
Standard library only (argparse); docs/cli.md describes every command, its
JSON output and the exit codes:

====  ==========================================================================
0     success
1     any other error (an AWS error we do not map, an unreachable endpoint)
2     usage or configuration: bad arguments, no table given, table or bucket
      does not exist, no region
3     credentials: none found, or rejected / not permitted by AWS
4     not found: unknown thread or checkpoint
5     refused: confirmation declined, or needed (``--yes``) with stdin not a
      terminal, or a copy onto an existing thread
6     not supported by the installed saver (e.g. ``copy_thread`` missing)
130   interrupted (Ctrl-C)
141   stdout closed by its reader (``| head``): quietly, as tools killed by SIGPIPE
====  ==========================================================================

This module is also a small library for tools: :func:`describe_history`,
:func:`list_threads`, :func:`collect_stats`, :func:`diff_checkpoints` return
plain dicts (what ``--json`` prints); the demo uses them.

Nothing here is imported by the savers, so the CLI never costs a Lambda a
cold-start millisecond.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import json
import os
import re
import signal
import sys
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, NoReturn, TextIO

from langgraph.checkpoint.dynamodb import config, schema
from langgraph.checkpoint.dynamodb.schema import ATTR

__all__ = [
    "EXIT_CREDENTIALS",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_PIPE",
    "EXIT_REFUSED",
    "EXIT_UNSUPPORTED",
    "EXIT_USAGE",
    "CLIError",
    "collect_stats",
    "describe_checkpoint",
    "describe_history",
    "diff_checkpoints",
    "list_threads",
    "main",
    "next_tasks",
]

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
EXIT_USAGE: Final = 2
EXIT_CREDENTIALS: Final = 3
EXIT_NOT_FOUND: Final = 4
EXIT_REFUSED: Final = 5
EXIT_UNSUPPORTED: Final = 6
EXIT_INTERRUPTED: Final = 130
#: stdout closed by its reader (``| head``): what a shell reports for a tool killed by SIGPIPE.
EXIT_PIPE: Final = 141

# The package's one set of names (see langgraph.checkpoint.dynamodb.config).
ENV_TABLE: Final = config.ENV_TABLE
ENV_BUCKET: Final = config.ENV_BUCKET
ENV_S3_PREFIX: Final = config.ENV_S3_KEY_PREFIX
ENV_TENANT: Final = config.ENV_TENANT_PREFIX

DEFAULT_LOCAL_TABLE: Final = "langgraph-checkpoints"
DEFAULT_LOCAL_BUCKET: Final = "langgraph-checkpoints"

# LangGraph's reserved channel and task names (langgraph._internal._constants;
# copied because the CLI must work without langgraph installed).
_START = "__start__"
_TASKS = "__pregel_tasks"
_INTERRUPT = "__interrupt__"
_ERROR = "__error__"
_RESUME = "__resume__"
_PULL = "__pregel_pull"
_PUSH = "__pregel_push"
_NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
_NS_SEP = "|"
_NS_END = ":"
_NOT_NODES = {"__input__", _INTERRUPT}

_CREDENTIAL_CODES = {
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "InvalidSignatureException",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidAccessKeyId",
    "AccessDenied",
    "AccessDeniedException",
    "MissingAuthenticationToken",
}


class CLIError(Exception):
    """An error with a message for people, a stable ``code`` for scripts and an exit code.

    Example:
        >>> err = CLIError("thread 't-1' not found", EXIT_NOT_FOUND, "thread_not_found")
        >>> (err.exit_code, err.code)
        (4, 'thread_not_found')
    """

    def __init__(self, message: str, exit_code: int = EXIT_ERROR, code: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.code = code


# ============================================================== inspection
# Pure functions over checkpoint tuples: no I/O, no langgraph import needed.


def is_internal_channel(name: str) -> bool:
    """Channels LangGraph uses for control flow rather than state."""
    return name.startswith(("branch:", "join:", "__")) or name == _START


def checkpoint_time(checkpoint_id: str) -> str | None:
    """ISO time encoded in a uuid6 checkpoint id (``None`` for other ids).

    Example:
        >>> checkpoint_time("1f0c3a3e-8d1b-6b5e-8001-0242ac120002")[:4]
        '2025'
    """
    ms = _uuid6_ms(checkpoint_id)
    return None if ms is None else _iso(ms / 1000)


def _uuid6_ms(checkpoint_id: str) -> int | None:
    """Epoch milliseconds in a uuid6 id (``None`` for other ids)."""
    try:
        raw = int(checkpoint_id.replace("-", ""), 16)
    except ValueError:
        return None
    if len(checkpoint_id.replace("-", "")) != 32 or (raw >> 76) & 0xF != 6:
        return None
    ts = (((raw >> 80) & 0xFFFFFFFFFFFF) << 12) | ((raw >> 64) & 0x0FFF)
    return (ts - 0x01B21DD213814000) // 10_000


def _iso(epoch_s: float) -> str:
    return (
        dt.datetime.fromtimestamp(epoch_s, dt.timezone.utc)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z")
    )


def _task_id(
    checkpoint: Mapping[str, Any], checkpoint_ns: str, name: str, step: int, *parts: str
) -> str | None:
    """LangGraph's deterministic task id (``pregel._algo``), or ``None`` if it cannot be computed."""
    try:
        cid_bytes = binascii.unhexlify(checkpoint["id"].replace("-", ""))
    except (binascii.Error, KeyError, AttributeError):
        return None
    task_ns = f"{checkpoint_ns}{_NS_SEP}{name}" if checkpoint_ns else name
    data = b"".join(p.encode() for p in (task_ns, str(step), name, *parts))
    if checkpoint.get("v", 1) > 1:
        try:
            from xxhash import xxh3_128_hexdigest  # a langgraph dependency
        except ImportError:
            return None
        hx = xxh3_128_hexdigest(cid_bytes + data)
    else:
        sha = hashlib.sha1(cid_bytes, usedforsecurity=False)
        sha.update(data)
        hx = sha.hexdigest()
    return f"{hx[:8]}-{hx[8:12]}-{hx[12:16]}-{hx[16:20]}-{hx[20:32]}"


def _available(name: str, values: Mapping[str, Any]) -> bool:
    if name not in values:  # absent: never written, or consumed (ephemeral)
        return False
    if name.startswith("join:"):
        # join:a+b:target is a barrier: ready once every source has written.
        sources = name[len("join:") :].rsplit(":", 1)[0].split("+")
        seen = values[name]
        return isinstance(seen, (set, frozenset, list, tuple)) and set(seen) >= set(sources)
    return True


def _node_triggers(checkpoint: Mapping[str, Any]) -> dict[str, set[str]]:
    """Nodes and their trigger channels, as far as the checkpoint tells (no graph needed)."""
    versions: Mapping[str, Any] = checkpoint.get("channel_versions", {})
    seen: Mapping[str, Mapping[str, Any]] = checkpoint.get("versions_seen", {})
    nodes: dict[str, set[str]] = {}
    for chan in list(versions) + [c for s in seen.values() for c in s]:
        if chan.startswith("branch:to:"):
            nodes.setdefault(chan[len("branch:to:") :], set()).add(chan)
        elif chan.startswith("join:"):
            nodes.setdefault(chan.rsplit(":", 1)[1], set()).add(chan)
    if _START in versions:
        nodes.setdefault(_START, set()).add(_START)
    for name, seen_chans in seen.items():
        if name not in _NOT_NODES:
            nodes.setdefault(name, set()).update(seen_chans)
    # StateGraph gives every node a ``branch:to:<node>`` trigger (Command
    # goto and conditional edges write it), written or not; task ids hash
    # the full trigger list, so it must be there.
    for name, triggers in nodes.items():
        if name != _START:
            triggers.add(f"branch:to:{name}")
    return nodes


def _task_statuses(pending_writes: Iterable[Sequence[Any]]) -> dict[str, str]:
    """Status of each task from a checkpoint's pending writes.

    A task that interrupted keeps its ``__interrupt__`` write after it is
    resumed; its result writes (added when it finishes) tell the two apart:
    ``interrupted`` (waiting for an answer, perhaps a second one: a resumed
    node that interrupts again has answers stored and no result) versus
    ``resumed`` (answered and finished).
    """
    interrupted: set[str] = set()
    finished: set[str] = set()
    status: dict[str, str] = {}
    for task_id, channel, _ in pending_writes:
        if task_id == _NULL_TASK_ID:
            continue
        if channel == _INTERRUPT:
            interrupted.add(task_id)
        elif channel == _ERROR:
            status.setdefault(task_id, "error")
        elif channel != _RESUME:
            finished.add(task_id)
            status.setdefault(task_id, "done")
    for task_id in interrupted:
        status[task_id] = "resumed" if task_id in finished else "interrupted"
    return status


def next_tasks(
    checkpoint: Mapping[str, Any],
    pending_writes: Sequence[Sequence[Any]] = (),
    *,
    step: int | None = None,
    checkpoint_ns: str = "",
) -> list[dict[str, Any]]:
    """The tasks LangGraph would run from this checkpoint, derived without the graph.

    Mirrors ``prepare_next_tasks``: a node runs when one of its trigger
    channels is available and has a newer version than the node has seen;
    pending ``Send`` packets are tasks too. Trigger channels are recovered
    from channel names (``branch:to:X``, ``join:a+b:X``) and
    ``versions_seen``, which matches ``graph.get_state(...).next`` for
    graphs built with ``StateGraph``. Task ids are LangGraph's (when the
    ``xxhash`` package is installed), so each task's status comes from the
    checkpoint's pending writes.

    Args:
        checkpoint: a decoded checkpoint.
        pending_writes: the checkpoint's pending writes.
        step: the checkpoint's ``metadata["step"]`` (for task ids).
        checkpoint_ns: the checkpoint's namespace (for task ids).

    Returns:
        ``[{"name", "id", "status"}]``; status is ``pending``, ``done``,
        ``interrupted`` (waiting for an answer), ``resumed`` (interrupted,
        answered and finished) or ``error`` (``id`` is ``None`` when unknown).

    Example:
        >>> cp = {"id": "x", "channel_versions": {"branch:to:a": "2"},
        ...       "versions_seen": {"a": {"branch:to:a": "1"}}, "channel_values": {"branch:to:a": None}}
        >>> [t["name"] for t in next_tasks(cp)]
        ['a']
    """
    values: Mapping[str, Any] = checkpoint.get("channel_values", {})
    versions: Mapping[str, Any] = checkpoint.get("channel_versions", {})
    seen_all: Mapping[str, Mapping[str, Any]] = checkpoint.get("versions_seen", {})
    statuses = _task_statuses(pending_writes)
    task_step = (step if step is not None else 0) + 1
    tasks: list[dict[str, Any]] = []
    sends = values.get(_TASKS)
    if isinstance(sends, (list, tuple)):
        for idx, packet in enumerate(sends):
            node = getattr(packet, "node", None)
            if node is None and isinstance(packet, Mapping):
                node = packet.get("node")
            if node is None:
                continue
            tid = (
                _task_id(checkpoint, checkpoint_ns, node, task_step, _PUSH, str(idx))
                if step is not None
                else None
            )
            tasks.append({"name": node, "id": tid, "status": statuses.get(tid or "", "pending")})
    if not versions:
        return tasks
    for name, triggers in sorted(_node_triggers(checkpoint).items()):
        seen = seen_all.get(name)
        fired = any(
            _available(chan, values)
            and (seen is None or str(versions.get(chan, "")) > str(seen.get(chan, "")))
            for chan in triggers
        )
        if not fired:
            continue
        tid = (
            _task_id(checkpoint, checkpoint_ns, name, task_step, _PULL, *sorted(triggers))
            if step is not None
            else None
        )
        tasks.append({"name": name, "id": tid, "status": statuses.get(tid or "", "pending")})
    return tasks


def produced_by(
    checkpoint: Mapping[str, Any],
    metadata: Mapping[str, Any],
    parent: Any | None,
) -> dict[str, list[str]]:
    """Which node wrote which channels to produce this checkpoint.

    LangGraph 1.x no longer stores ``metadata["writes"]``; the writes that
    made checkpoint *C* are the pending writes its tasks left on the parent
    *P* (a resume and a crash recovery also leave them there). Tasks are
    matched to node names through LangGraph's task ids (see
    :func:`next_tasks`); a task that cannot be matched shows as
    ``task:<id prefix>``. Without a parent (the input checkpoint), or for
    ``update_state`` checkpoints, the channels whose version changed are
    reported under ``input`` / ``update``.

    Args:
        checkpoint: the decoded checkpoint *C*.
        metadata: *C*'s metadata.
        parent: *P*'s ``CheckpointTuple`` (``None`` if unknown or absent).

    Returns:
        ``{node: [channel, ...]}`` in write order (control channels left out).

    Example:
        >>> produced_by({"channel_versions": {"q": "1"}}, {"source": "input"}, None)
        {'input': ['q']}
    """
    legacy = metadata.get("writes")
    if isinstance(legacy, Mapping):
        return {str(node): sorted(w) if isinstance(w, Mapping) else [] for node, w in legacy.items() if node}
    source = metadata.get("source")
    pcp: Mapping[str, Any] = parent.checkpoint if parent is not None else {}
    if parent is None or source not in ("loop", None):
        label = "input" if source == "input" or parent is None else str(source or "update")
        if source == "input":
            start = checkpoint.get("channel_values", {}).get(_START)
            if isinstance(start, Mapping):
                return {label: [str(k) for k in start]}
        changed = changed_channels(pcp, checkpoint)
        return {label: changed} if changed else {}
    pmeta = parent.metadata or {}
    tasks = next_tasks(
        pcp,
        parent.pending_writes or [],
        step=pmeta.get("step"),
        checkpoint_ns=(parent.config.get("configurable") or {}).get("checkpoint_ns", ""),
    )
    names = {t["id"]: t["name"] for t in tasks if t["id"]}
    out: dict[str, list[str]] = {}
    for task_id, channel, _ in parent.pending_writes or []:
        if task_id == _NULL_TASK_ID or is_internal_channel(channel):
            continue
        node = names.get(task_id, f"task:{task_id[:8]}")
        chans = out.setdefault(node, [])
        if channel not in chans:
            chans.append(channel)
    for t in tasks:  # a task that ran but wrote only control channels
        if t["status"] in ("done", "resumed"):
            out.setdefault(t["name"], [])
    return out


def changed_channels(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """State channels whose version differs between two checkpoints (sorted)."""
    bv: Mapping[str, Any] = before.get("channel_versions", {}) if before else {}
    av: Mapping[str, Any] = after.get("channel_versions", {})
    return sorted(c for c in set(bv) | set(av) if not is_internal_channel(c) and bv.get(c) != av.get(c))


def jsonable(value: Any, _depth: int = 0) -> Any:
    """A JSON-compatible rendering of a state value (messages, dataclasses, sets, bytes...).

    Example:
        >>> jsonable({"tags": {"b", "a"}, "raw": b"\\x00\\x01"})
        {'tags': ['a', 'b'], 'raw': {'bytes': 2, 'base64': 'AAE='}}
    """
    if _depth > 50:
        return repr(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        items = [jsonable(v, _depth + 1) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, (list, tuple)):
        return [jsonable(v, _depth + 1) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": len(value), "base64": base64.b64encode(bytes(value[:4096])).decode()}
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return jsonable(dump(), _depth + 1)
        except Exception:
            pass
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name), _depth + 1) for f in dataclasses.fields(value)}
    if hasattr(value, "node") and hasattr(value, "arg"):  # langgraph.types.Send
        return {"send": value.node, "arg": jsonable(value.arg, _depth + 1)}
    return repr(value)


def short(value: Any, width: int = 60) -> str:
    """A one-line preview of a value, at most ``width`` terminal columns."""
    text = value if isinstance(value, str) else json.dumps(jsonable(value), ensure_ascii=False, default=str)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    return _fit(" ".join(text.split()), width)


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
        if ch == _INTERRUPT
        for v in _as_list(val)
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
    resp = _ddb(saver).get_item(
        TableName=saver.table_name,
        Key={
            ATTR.PK: {"S": _pk(saver, conf["thread_id"])},
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


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


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


# ============================================================ store queries


def _item_size(item: Mapping[str, Any]) -> int:
    from langgraph.checkpoint.dynamodb.base import _item_size as size

    return size(dict(item))


def _ddb(saver: Any) -> Any:
    return saver._clients["dynamodb"]


def _s3(saver: Any) -> Any:
    return saver._clients.get("s3")


# Keys through the saver, so a tenant-prefixed saver (``--tenant-prefix``)
# reads its own partitions and S3 prefixes; plain schema keys otherwise.


def _pk(saver: Any, thread_id: str) -> str:
    pk_of = getattr(saver, "partition_key", None)
    return str(pk_of(thread_id)) if callable(pk_of) else schema.partition_key(thread_id)


def _s3_thread(saver: Any, thread_id: str) -> str:
    prefix_of = getattr(saver, "s3_thread_prefix", None)
    if callable(prefix_of):
        return str(prefix_of(thread_id))
    return schema.s3_thread_prefix(saver.s3_key_prefix, thread_id)


def _thread_of(saver: Any, pk: str) -> str | None:
    """The thread id of a partition key, or ``None`` if it is another tenant's."""
    of = getattr(saver, "thread_id_of", None)
    if callable(of):
        found = of(pk)
        return None if found is None else str(found)
    parsed = schema.parse_partition_key(pk)
    return parsed[1] if parsed is not None and not parsed[0] else None


def _s3_in_scope(saver: Any, key: str) -> bool:
    """Whether an S3 key belongs to a thread of the saver's tenant (or to an untenanted one)."""
    parsed = schema.parse_s3_thread_segment(key[len(saver.s3_key_prefix) :].split("/", 1)[0])
    return parsed is not None and parsed[0] == (getattr(saver, "tenant_prefix", "") or "")


def _s3_root(saver: Any) -> str:
    tenant = getattr(saver, "tenant_prefix", "") or ""
    return schema.tenant_s3_prefix(saver.s3_key_prefix, tenant) if tenant else saver.s3_key_prefix


def _paginate(
    call: Callable[..., Mapping[str, Any]], key: str, token_in: str, token_out: str, **kwargs: Any
) -> Iterable[Any]:
    while True:
        resp = call(**kwargs)
        yield from resp.get(key, [])
        token = resp.get(token_out)
        if not token:
            return
        kwargs[token_in] = token


def _query(saver: Any, **kwargs: Any) -> Iterable[dict[str, Any]]:
    return _paginate(
        _ddb(saver).query,
        "Items",
        "ExclusiveStartKey",
        "LastEvaluatedKey",
        TableName=saver.table_name,
        **kwargs,
    )


def _scan(saver: Any, **kwargs: Any) -> Iterable[dict[str, Any]]:
    return _paginate(
        _ddb(saver).scan,
        "Items",
        "ExclusiveStartKey",
        "LastEvaluatedKey",
        TableName=saver.table_name,
        **kwargs,
    )


def _s3_objects(saver: Any, prefix: str) -> Iterable[dict[str, Any]]:
    if saver.bucket_name is None or _s3(saver) is None:
        return []
    return _paginate(
        _s3(saver).list_objects_v2,
        "Contents",
        "ContinuationToken",
        "NextContinuationToken",
        Bucket=saver.bucket_name,
        Prefix=prefix,
    )


def _partition(
    saver: Any, thread_id: str, sk_prefix: str | None = None, projection: bool = False
) -> Iterable[dict[str, Any]]:
    kwargs: dict[str, Any] = {
        "KeyConditionExpression": "#pk = :pk" + (" AND begins_with(#sk, :pre)" if sk_prefix else ""),
        "ExpressionAttributeNames": {"#pk": ATTR.PK, **({"#sk": ATTR.SK} if sk_prefix or projection else {})},
        "ExpressionAttributeValues": {
            ":pk": {"S": _pk(saver, thread_id)},
            **({":pre": {"S": sk_prefix}} if sk_prefix else {}),
        },
        "ConsistentRead": True,
    }
    if projection:
        kwargs["ProjectionExpression"] = "#pk, #sk"
    return _query(saver, **kwargs)


def thread_checkpoint_count(saver: Any, thread_id: str) -> int:
    """Checkpoints of a thread in all namespaces (0: the thread does not exist)."""
    return sum(
        1
        for it in _partition(saver, thread_id, projection=True)
        if schema.parse_sk(it[ATTR.SK]["S"])[1] == schema.CHECKPOINT_ITEM
    )


def _require_thread(saver: Any, thread_id: str) -> int:
    count = thread_checkpoint_count(saver, thread_id)
    if count == 0:
        raise CLIError(
            f"thread {shell_quote(thread_id)} not found in table {saver.table_name!r}",
            EXIT_NOT_FOUND,
            "thread_not_found",
        )
    return count


def _encode_token(state: Mapping[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(state, separators=(",", ":")).encode()).decode().rstrip("=")


_BAD_TOKEN: Final = (
    "invalid page token: pass the --page-token value printed by the previous page of the same listing"
)


def _bad_token() -> CLIError:
    return CLIError(_BAD_TOKEN, EXIT_USAGE, "bad_page_token")


def _is_key_value(av: Any) -> bool:
    return (
        isinstance(av, dict)
        and len(av) == 1
        and next(iter(av)) in ("S", "N")
        and isinstance(next(iter(av.values())), str)
    )


def _decode_token(token: str) -> dict[str, Any]:
    """A page token's state, checked field by field: a token is user input.

    Whatever is wrong with it (not base64, not JSON, not ours, edited), the
    message is the same and names no codec.
    """
    try:
        state = json.loads(base64.urlsafe_b64decode(token.strip() + "=" * (-len(token.strip()) % 4)))
    except (ValueError, binascii.Error):  # UnicodeDecodeError is a ValueError
        raise _bad_token() from None
    if not isinstance(state, dict) or state.get("v") != 1 or state.get("src") not in ("index", "scan"):
        raise _bad_token()
    filters = state.get("f", {})
    if not isinstance(filters, dict) or not all(
        (k == "p" and isinstance(v, str))
        or (k in ("a", "i") and isinstance(v, int) and not isinstance(v, bool))
        for k, v in filters.items()
    ):
        raise _bad_token()
    if state["src"] == "scan":
        offset = state.get("o")
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise _bad_token()
    else:
        cursors = state.get("s")
        shards = {str(i) for i in range(schema.THREADS_INDEX_SHARDS)}
        if not isinstance(cursors, dict) or set(cursors) != shards:
            raise _bad_token()
        for shard, cursor in cursors.items():
            if cursor is None or cursor == "done":
                continue
            keys = {ATTR.THREAD_SHARD, ATTR.UPDATED_AT, ATTR.PK, ATTR.SK}
            if (
                not isinstance(cursor, dict)
                or set(cursor) != keys
                or not all(_is_key_value(av) for av in cursor.values())
                or cursor[ATTR.THREAD_SHARD] != {"S": shard}
            ):
                raise _bad_token()
    return state


@dataclasses.dataclass(frozen=True)
class ThreadFilter:
    """Which threads :func:`list_threads` returns.

    Attributes:
        prefix: thread ids starting with this (``""``: all).
        active_since_ms: last activity at or after this time (epoch ms).
        idle_since_ms: last activity at or before this time (epoch ms):
            threads idle since then.

    Example:
        >>> ThreadFilter(prefix="user-7/").matches("user-7/chat", 0)
        True
    """

    prefix: str = ""
    active_since_ms: int | None = None
    idle_since_ms: int | None = None

    def matches(self, thread_id: str, updated_ms: int | None) -> bool:
        if not thread_id.startswith(self.prefix):
            return False
        if self.active_since_ms is None and self.idle_since_ms is None:
            return True
        if updated_ms is None:  # activity unknown: cannot be shown as in the window
            return False
        if self.active_since_ms is not None and updated_ms < self.active_since_ms:
            return False
        return self.idle_since_ms is None or updated_ms <= self.idle_since_ms

    @property
    def active(self) -> bool:
        return bool(self.prefix) or self.active_since_ms is not None or self.idle_since_ms is not None

    def to_token(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.prefix:
            out["p"] = self.prefix
        if self.active_since_ms is not None:
            out["a"] = self.active_since_ms
        if self.idle_since_ms is not None:
            out["i"] = self.idle_since_ms
        return out

    @classmethod
    def from_token(cls, f: Mapping[str, Any]) -> ThreadFilter:
        return cls(prefix=f.get("p", ""), active_since_ms=f.get("a"), idle_since_ms=f.get("i"))


def list_threads(
    saver: Any,
    *,
    limit: int = 50,
    page_token: str | None = None,
    source: str = "auto",
    filter: ThreadFilter | None = None,
) -> dict[str, Any]:
    """Threads, most recent activity first, one page at a time.

    Two sources:

    * ``index``: the threads GSI over thread heads (``schema.HEAD_SK``
      items, sharded by ``ATTR.THREAD_SHARD`` and sorted by
      ``ATTR.UPDATED_AT``): one Query per shard per page, merged. A time
      window is part of each Query's key condition; a prefix is a filter
      on the partition key (DynamoDB reads past the heads it drops).
    * ``scan``: a Scan of the table's keys, grouped by thread, sorted by
      the time in the newest checkpoint id. Reads the whole table on
      every page: for tables written before thread heads existed. Its
      last activity is the newest checkpoint's time.

    ``auto`` uses the index when it holds any head and falls back to the
    scan otherwise (or when the index does not exist). A page token keeps
    the source and the filter of the listing it continues (a duration
    given again is not re-read against a newer clock).

    Returns:
        ``{"source", "note", "threads": [...], "next_page_token"}``.

    Example:
        >>> page = list_threads(saver, limit=10, filter=ThreadFilter(prefix="user-7/"))  # doctest: +SKIP
        >>> [t["thread_id"] for t in page["threads"]]  # doctest: +SKIP
        ['user-7/chat-2', 'user-7/chat-1']
    """
    state = _decode_token(page_token) if page_token else None
    flt = filter or ThreadFilter()
    if state is not None:
        source = state["src"]
        token_filter = ThreadFilter.from_token(state.get("f", {}))
        if filter is not None and filter.prefix != token_filter.prefix:
            raise CLIError(
                f"this page token continues a listing of prefix {shell_quote(token_filter.prefix)}, "
                f"not {shell_quote(filter.prefix)}",
                EXIT_USAGE,
                "bad_page_token",
            )
        flt = token_filter  # its time window is the first page's, whatever the clock says now
    if source in ("auto", "index"):
        try:
            page = _threads_from_index(saver, limit, state, flt)
        except Exception as exc:
            if _client_code(exc) != "ValidationException":
                raise
            if state is not None:  # a cursor DynamoDB refuses: not one it gave us
                raise _bad_token() from None
            if source == "index":
                raise
            return _threads_from_scan(
                saver,
                limit,
                None,
                flt,
                note=f"index {schema.THREADS_INDEX_NAME!r} is missing: scanned the table",
            )
        if page["threads"] or source == "index" or state is not None:
            return page
        if flt.active and _index_has_heads(saver):
            return page  # the index answers; nothing matches the filter
        return _threads_from_scan(
            saver,
            limit,
            None,
            flt,
            note="no thread heads in the threads index yet: scanned the table's checkpoint items",
        )
    return _threads_from_scan(saver, limit, state, flt, note="scan requested")


def _client_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def _index_has_heads(saver: Any) -> bool:
    for shard in range(schema.THREADS_INDEX_SHARDS):
        resp = _ddb(saver).query(
            TableName=saver.table_name,
            IndexName=schema.THREADS_INDEX_NAME,
            KeyConditionExpression="#ts = :ts",
            ExpressionAttributeNames={"#ts": ATTR.THREAD_SHARD},
            ExpressionAttributeValues={":ts": {"S": str(shard)}},
            ProjectionExpression="#ts",
            Limit=1,
        )
        if resp.get("Items"):
            return True
    return False


def _shard_query(
    saver: Any, shard: str, cursor: Any, limit: int, flt: ThreadFilter
) -> tuple[list[Any], bool]:
    """Up to ``limit`` matching heads of one shard, newest first, after ``cursor``; and whether it is exhausted.

    A prefix filter drops heads after DynamoDB read them, so a Query may
    return fewer than asked while more remain: keep reading until ``limit``
    matched or the shard ends (the page merge needs each shard's unread
    heads to be older than what it returned).
    """
    names = {"#ts": ATTR.THREAD_SHARD}
    values: dict[str, Any] = {":ts": {"S": shard}}
    key = "#ts = :ts"
    if flt.active_since_ms is not None or flt.idle_since_ms is not None:
        names["#ua"] = ATTR.UPDATED_AT
        lo, hi = flt.active_since_ms, flt.idle_since_ms
        if lo is not None and hi is not None:
            key += " AND #ua BETWEEN :lo AND :hi"
        elif lo is not None:
            key += " AND #ua >= :lo"
        else:
            key += " AND #ua <= :hi"
        if lo is not None:
            values[":lo"] = {"N": str(lo)}
        if hi is not None:
            values[":hi"] = {"N": str(hi)}
    kwargs: dict[str, Any] = {
        "TableName": saver.table_name,
        "IndexName": schema.THREADS_INDEX_NAME,
        "KeyConditionExpression": key,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        "ScanIndexForward": False,
        "Limit": limit,
    }
    if flt.prefix:
        names["#pk"] = ATTR.PK
        values[":pre"] = {"S": _pk(saver, flt.prefix)}
        kwargs["FilterExpression"] = "begins_with(#pk, :pre)"
        kwargs["Limit"] = max(limit, 200)  # heads dropped by the filter still count against Limit
    if cursor:
        kwargs["ExclusiveStartKey"] = cursor
    items: list[Any] = []
    while True:
        resp = _ddb(saver).query(**kwargs)
        items.extend(resp.get("Items", []))
        last = resp.get("LastEvaluatedKey")
        if not last:
            return items, True
        if len(items) >= limit:
            return items, False
        kwargs["ExclusiveStartKey"] = last


def _threads_from_index(
    saver: Any, limit: int, state: dict[str, Any] | None, flt: ThreadFilter | None = None
) -> dict[str, Any]:
    flt = flt or ThreadFilter()
    shards = [str(i) for i in range(schema.THREADS_INDEX_SHARDS)]
    cursors: dict[str, Any] = dict(state["s"]) if state else dict.fromkeys(shards)
    fetched: list[tuple[str, dict[str, Any]]] = []
    exhausted: dict[str, bool] = {}
    for shard in shards:
        cursor = cursors.get(shard)
        if cursor == "done":
            continue
        items, exhausted[shard] = _shard_query(saver, shard, cursor, limit, flt)
        fetched.extend((shard, it) for it in items)
    # Merge the shards newest first; each shard's cursor moves past what we show.
    fetched.sort(key=lambda p: int(p[1].get(ATTR.UPDATED_AT, {"N": "0"})["N"]), reverse=True)
    page = fetched[:limit]
    shown = {shard: 0 for shard in shards}
    for shard, it in page:
        shown[shard] += 1
        cursors[shard] = {k: it[k] for k in (ATTR.THREAD_SHARD, ATTR.UPDATED_AT, ATTR.PK, ATTR.SK) if k in it}
    for shard in shards:
        if cursors.get(shard) == "done":
            continue
        total = sum(1 for s, _ in fetched if s == shard)
        if exhausted.get(shard) and shown[shard] == total:
            cursors[shard] = "done"
    more = any(cursors.get(s) != "done" for s in shards)
    threads = []
    for _, it in page:
        thread_id = _thread_of(saver, it[ATTR.PK]["S"])
        if thread_id is None:  # another tenant's head
            continue
        ua = int(it.get(ATTR.UPDATED_AT, {"N": "0"})["N"])
        ttl = it.get(schema.TTL_ATTRIBUTE, {}).get("N")
        threads.append(
            {
                "thread_id": thread_id,
                "updated_at": _iso(ua / 1000),
                "expires_at": _iso(int(ttl)) if ttl else None,
            }
        )
    return {
        "source": "index",
        "note": f"thread heads from the {schema.THREADS_INDEX_NAME!r} index",
        "threads": threads,
        "next_page_token": (
            _encode_token({"v": 1, "src": "index", "s": cursors, "f": flt.to_token()}) if more else None
        ),
    }


def _threads_from_scan(
    saver: Any, limit: int, state: dict[str, Any] | None, flt: ThreadFilter | None = None, *, note: str
) -> dict[str, Any]:
    flt = flt or ThreadFilter()
    if flt.active_since_ms is not None or flt.idle_since_ms is not None:
        note += "; last activity is the newest checkpoint's time (no thread heads)"
    offset = int(state.get("o", 0)) if state else 0
    by_thread: dict[str, dict[str, Any]] = {}
    for it in _scan(
        saver,
        ProjectionExpression="#pk, #sk",
        ExpressionAttributeNames={"#pk": ATTR.PK, "#sk": ATTR.SK},
        ConsistentRead=True,
    ):
        ns, kind, cid, _ = schema.parse_sk(it[ATTR.SK]["S"])
        if kind != schema.CHECKPOINT_ITEM:
            continue
        pk = it[ATTR.PK]["S"]
        if _thread_of(saver, pk) is None:  # another tenant's thread
            continue
        info = by_thread.setdefault(pk, {"checkpoints": 0, "namespaces": set(), "latest": ""})
        info["checkpoints"] += 1
        info["namespaces"].add(subgraph_path(ns))
        info["latest"] = max(info["latest"], cid)
    ordered = sorted(
        (
            (pk, info)
            for pk, info in by_thread.items()
            if flt.matches(_thread_of(saver, pk) or "", _uuid6_ms(info["latest"]))
        ),
        key=lambda kv: (checkpoint_time(kv[1]["latest"]) or "", kv[1]["latest"]),
        reverse=True,
    )
    page = ordered[offset : offset + limit]
    threads = [
        {
            "thread_id": _thread_of(saver, pk),
            "updated_at": checkpoint_time(info["latest"]),
            "checkpoints": info["checkpoints"],
            "namespaces": len(info["namespaces"]),
            "latest_checkpoint_id": info["latest"],
        }
        for pk, info in page
    ]
    more = offset + limit < len(ordered)
    return {
        "source": "scan",
        "note": note,
        "threads": threads,
        "next_page_token": (
            _encode_token({"v": 1, "src": "scan", "o": offset + limit, "f": flt.to_token()}) if more else None
        ),
    }


def _value_sizes(
    saver: Any, thread_id: str, items: Iterable[dict[str, Any]], s3_prefix: str
) -> tuple[list[dict[str, Any]], dict[str, int], dict[str, int]]:
    """Split raw items, and collect blob item sizes and S3 object sizes of a thread."""
    kept: list[dict[str, Any]] = []
    blobs: dict[str, int] = {}
    for it in items:
        kind = schema.parse_sk(it[ATTR.SK]["S"])[1]
        if kind == schema.BLOB_ITEM:
            blobs[it[ATTR.SK]["S"]] = _item_size(it)
        else:
            kept.append(it)
    objects = {o["Key"]: int(o["Size"]) for o in _s3_objects(saver, s3_prefix)}
    return kept, blobs, objects


def checkpoint_sizes(
    saver: Any, thread_id: str, checkpoint_ns: str | None = ""
) -> dict[tuple[str, str], int]:
    """Stored bytes per checkpoint of a thread: ``{(ns, checkpoint_id): bytes}``.

    A checkpoint's size is its item, its writes items, and every payload it
    references (a value held by the checkpoint that introduced it, blob items,
    S3 objects); a payload shared by several checkpoints (an unchanged large
    channel) counts in each.
    """
    prefix = schema.ns_prefix(checkpoint_ns) if checkpoint_ns is not None else None
    items, blobs, objects = _value_sizes(
        saver,
        thread_id,
        _partition(saver, thread_id, sk_prefix=prefix),
        _s3_thread(saver, thread_id),
    )
    sizes: dict[tuple[str, str], int] = {}
    holders: dict[tuple[str, str], Any] = {}
    for it in items:
        ns, kind, cid, _ = schema.parse_sk(it[ATTR.SK]["S"])
        if kind == schema.CHECKPOINT_ITEM:
            holders[(ns, cid)] = it
    for it in items:
        ns, kind, cid, _ = schema.parse_sk(it[ATTR.SK]["S"])
        if kind not in (schema.CHECKPOINT_ITEM, schema.WRITES_ITEM):
            continue
        total = _item_size(it)
        refs: list[str] = []
        for attr in (ATTR.BODY, ATTR.METADATA):
            av = it.get(attr, {})
            if "M" in av and "s3" in av["M"]:
                refs.append(av["M"]["s3"]["S"])
        for name, av in it.items():
            if name.startswith(ATTR.WRITE_PREFIX) and name[1:].lstrip("-").isdigit():
                payload = av.get("L", [{}, {}])[1]
                if "M" in payload and "s3" in payload["M"]:
                    refs.append(payload["M"]["s3"]["S"])
        total += sum(objects.get(k, 0) for k in refs)
        for channel, av in it.get(ATTR.VALUES, {}).get("M", {}).items():
            if "M" not in av:
                continue
            version = av["M"]["v"]["S"]
            blob_key = schema.blob_sk(ns, channel, version)
            # A value held by the checkpoint that introduced it counts here too.
            holder = (
                holders.get((ns, av["M"].get("c", {}).get("S", ""))) if av["M"]["l"]["S"] == "c" else None
            )
            held = (holder or {}).get(ATTR.VALUES, {}).get("M", {}).get(channel, {}).get("B")
            if isinstance(held, bytes):
                total += len(held)
            elif blob_key in blobs:
                total += blobs[blob_key]
            else:
                total += objects.get(saver.value_s3_key(thread_id, ns, channel, version), 0)
        sizes[(ns, cid)] = sizes.get((ns, cid), 0) + total
    return sizes


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


def subgraph_path(checkpoint_ns: str) -> str:
    """A checkpoint namespace without LangGraph's task ids: the subgraph it belongs to.

    Every run of a subgraph gets its own namespace (``node:<task id>``, nested
    ones joined by ``|``); this is the part that names the graph, as
    LangGraph's ``recast_checkpoint_ns``. The root namespace is ``""``.

    Example:
        >>> subgraph_path("outer:1f0c|inner:9a2b"), subgraph_path("")
        ('outer|inner', '')
    """
    return _NS_SEP.join(part.split(_NS_END)[0] for part in checkpoint_ns.split(_NS_SEP) if not part.isdigit())


def _s3_kind(key: str, prefix: str = "") -> str:
    """Kind of an S3 object from its key: ``<prefix><thread>/_<ns>/{v|c}/...``.

    Thread and namespace are percent-encoded (no ``/`` inside), so the
    segments after the prefix are positional.
    """
    parts = (key[len(prefix) :] if key.startswith(prefix) else key).split("/")
    rest = parts[2:] if len(parts) > 2 and parts[1].startswith("_") else []
    if rest[:1] == ["v"]:
        return "value"
    if rest[:1] == ["c"] and len(rest) == 3 and rest[2] in ("body", "metadata"):
        return "checkpoint " + rest[2]
    if rest[:1] == ["c"] and len(rest) >= 4 and rest[2] == "w":
        return "write"
    return "other"


def _item_kind(sk: str) -> str:
    _, kind, rest, _ = schema.parse_sk(sk)
    if kind == schema.CHECKPOINT_ITEM:
        return "checkpoint"
    if kind == schema.WRITES_ITEM:
        return "writes"
    if kind == schema.BLOB_ITEM:
        return "blob"
    if kind == schema.TOMBSTONE_ITEM:
        return "tombstone"
    if sk == schema.HEAD_SK:
        return "thread head"
    if sk == schema.LOCK_SK:
        return "lock"
    if rest.startswith("req" + schema.SEP):
        return "request"
    return "meta"


def collect_stats(
    saver: Any, thread_id: str | None = None, *, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """What the store holds: items and bytes by kind, threads, checkpoints, S3 objects.

    Without ``thread_id`` this Scans the table and lists the bucket under
    the saver's key prefix (a tool for operators, not for request paths).

    ``namespaces`` counts the graphs whose checkpoints are stored: the root
    graph and each subgraph (:func:`subgraph_path`), once however many
    threads and runs used it; ``subgraphs`` names them, ``subgraph_runs``
    counts their runs (one checkpoint namespace each, per thread).

    Example:
        >>> collect_stats(saver)["dynamodb"]["by_kind"]["checkpoint"]["items"]  # doctest: +SKIP
        12

    ``progress`` (optional) is called with a short status text as items and
    objects are read (the CLI throttles it into a progress line).
    """
    if thread_id is None:
        items: Iterable[dict[str, Any]] = (
            it for it in _scan(saver, ConsistentRead=True) if _thread_of(saver, it[ATTR.PK]["S"]) is not None
        )
        s3_prefix = _s3_root(saver)
    else:
        items = _partition(saver, thread_id)
        s3_prefix = _s3_thread(saver, thread_id)
    by_kind: dict[str, dict[str, int]] = {}
    threads: set[str] = set()
    # Namespaces are counted as subgraphs (root included), whatever the number
    # of threads and of runs: each run of a subgraph has a namespace of its own
    # (its task id), which the per-thread run count reports instead.
    paths: set[str] = set()
    runs: set[tuple[str, str]] = set()
    total_items = total_bytes = checkpoints = 0
    for it in items:
        sk = it[ATTR.SK]["S"]
        kind = _item_kind(sk)
        size = _item_size(it)
        entry = by_kind.setdefault(kind, {"items": 0, "bytes": 0})
        entry["items"] += 1
        entry["bytes"] += size
        total_items += 1
        total_bytes += size
        if progress is not None:
            progress(f"{total_items:,} item(s) read")
        if kind == "checkpoint":
            checkpoints += 1
            threads.add(it[ATTR.PK]["S"])
            ns = schema.parse_sk(sk)[0]
            paths.add(subgraph_path(ns))
            if ns:
                runs.add((it[ATTR.PK]["S"], ns))
    s3: dict[str, Any] = {
        "bucket": saver.bucket_name,
        "prefix": s3_prefix,
        "objects": 0,
        "bytes": 0,
        "by_kind": {},
    }
    for obj in _s3_objects(saver, s3_prefix):
        if thread_id is None and not _s3_in_scope(saver, obj["Key"]):
            continue  # another tenant's (an untenanted root lists every tenant's objects)
        kind = _s3_kind(obj["Key"], saver.s3_key_prefix)
        e = s3["by_kind"].setdefault(kind, {"objects": 0, "bytes": 0})
        e["objects"] += 1
        e["bytes"] += int(obj["Size"])
        s3["objects"] += 1
        s3["bytes"] += int(obj["Size"])
        if progress is not None:
            progress(f"{total_items:,} item(s), {s3['objects']:,} object(s) read")
    return {
        "table": saver.table_name,
        "thread_id": thread_id,
        "threads": len(threads),
        "namespaces": len(paths),
        "subgraphs": sorted(p for p in paths if p),
        "subgraph_runs": len(runs),
        "checkpoints": checkpoints,
        "dynamodb": {"items": total_items, "bytes": total_bytes, "by_kind": dict(sorted(by_kind.items()))},
        "s3": s3,
    }


# ================================================================ rendering


def render_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[tuple[str, str]],
    *,
    max_width: int = 60,
    indent: str = "",
    no_truncate: Sequence[str] = (),
) -> str:
    """Rows as an aligned text table; ``columns`` are ``(key, header)`` pairs.

    Cells longer than ``max_width`` terminal columns are cut (with ``...``),
    except in the columns named in ``no_truncate``: those hold ids, shown
    exactly and quoted when a shell needs it (see :func:`display_id`), so
    every id shown can be pasted back into the CLI. Widths are terminal
    columns, not characters: CJK and most emoji take two, combining marks
    none.

    Example:
        >>> print(render_table([{"a": 1, "b": "x"}], [("a", "A"), ("b", "B")]))
        A  B
        1  x
    """
    cells = [[header for _, header in columns]]
    for row in rows:
        cells.append(
            [
                display_id(str(row.get(key)))
                if key in no_truncate and row.get(key) is not None
                else _cell(row.get(key), max_width)
                for key, _ in columns
            ]
        )
    widths = [max(display_width(r[i]) for r in cells) for i in range(len(columns))]
    lines = []
    for r in cells:
        line = "  ".join(
            c + " " * (w - display_width(c)) if i < len(columns) - 1 else c
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        lines.append((indent + line).rstrip())
    return "\n".join(lines)


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0  # combining marks, zero-width joiners, variation selectors
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Terminal columns a string takes: wide (CJK, emoji) 2, combining marks 0.

    ANSI colour sequences take none.

    Example:
        >>> display_width("ab"), display_width("日本"), display_width("e\\u0301")
        (2, 4, 1)
    """
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if text.isascii():
        return len(text)
    return sum(_char_width(ch) for ch in text)


_ANSI: Final = re.compile(r"\x1b\[[0-9;]*m")


def _fit(text: str, max_width: int) -> str:
    """``text`` cut to at most ``max_width`` terminal columns, ending with ``...`` when cut."""
    if display_width(text) <= max_width:
        return text
    budget = max(1, max_width - 3)
    out, used = [], 0
    for ch in text:
        w = _char_width(ch)
        if used + w > budget:
            break
        out.append(ch)
        used += w
    return "".join(out) + "..."


def _cell(value: Any, max_width: int) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, int):
        text = f"{value:,}"
    else:
        text = str(value)
    return _fit(_escape_controls(" ".join(text.split())), max_width)


def _escape_controls(text: str, keep: str = "") -> str:
    """Control characters as visible escapes (``\\x1b``): stored text must not drive the terminal."""
    if text.isprintable() or all(ch in keep or unicodedata.category(ch) != "Cc" for ch in text):
        return text
    return "".join(
        ch if ch in keep or unicodedata.category(ch) != "Cc" else f"\\x{ord(ch):02x}" for ch in text
    )


# Characters a shell word may hold unquoted: letters and digits of any script
# (ids are often not ASCII), and the punctuation shlex.quote leaves alone.
_SHELL_SAFE: Final = frozenset("@%+=:,./-_")


def shell_quote(text: str) -> str:
    """``text`` as one shell word that a POSIX shell (bash, zsh for ``$'...'``) reads back exactly.

    Printable text is single-quoted; text with control or invisible
    characters (newline, tab, zero-width space...) uses bash's ``$'...'``
    with escapes, so nothing invisible is lost on the way.

    Example:
        >>> print(shell_quote(" t1 "), shell_quote("a'b"), shell_quote("a\\tb"))
        ' t1 ' 'a'"'"'b' $'a\\tb'
    """
    if all(_visible(ch) for ch in text):
        return "'" + text.replace("'", "'\"'\"'") + "'"
    out = []
    for ch in text:
        if ch in ("\\", "'"):
            out.append("\\" + ch)
        elif ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif _visible(ch):
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "$'" + "".join(out) + "'"


_C_ESCAPES: Final = {
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\x1b": "\\e",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\v": "\\v",
}


def _visible(ch: str) -> bool:
    """A character that shows on a terminal as itself (a plain space counts)."""
    if ch == " ":
        return True
    if ch == "\u200d" or unicodedata.category(ch) in ("Mn", "Me"):
        return True  # joins or marks the visible character before it (emoji, accents)
    return ch.isprintable() and not ch.isspace()


def display_id(text: str) -> str:
    """An id as tables and messages show it: bare when a shell reads it back as is, else quoted.

    Ids are never cut or trimmed. One with surrounding or inner whitespace,
    control characters, shell syntax (quotes, ``|``, ``$``...) or nothing at
    all is shown as a quoted shell word (:func:`shell_quote`), so pasting
    what is shown into a command names the same thread.

    Example:
        >>> display_id("feature-42"), display_id(" feature-42"), display_id("")
        ('feature-42', "' feature-42'", "''")
    """
    if text and all(
        ch.isalnum() or ch in _SHELL_SAFE or unicodedata.category(ch) in ("Mn", "Mc") for ch in text
    ):
        return text
    return shell_quote(text)


_PARENT_LABELS: Final = {
    "pruned": "? (parent pruned)",
    "never_existed": "? (parent never existed)",
    "unknown": "? (parent missing)",
}


def _fmt_writes(
    writes: Mapping[str, Sequence[str]], parent_missing: bool = False, reason: str | None = None
) -> str:
    if parent_missing:
        return _PARENT_LABELS.get(reason or "unknown", _PARENT_LABELS["unknown"])
    return "; ".join(f"{node}: {', '.join(chans) or '-'}" for node, chans in writes.items()) or "-"


def _fmt_next(tasks: Sequence[Mapping[str, Any]]) -> str:
    return (
        ", ".join(t["name"] + ("" if t["status"] == "pending" else f" ({t['status']})") for t in tasks) or "-"
    )


def _human_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:,} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return str(n)  # pragma: no cover


# ================================================================= commands


class _StdoutClosed(Exception):
    """Whoever read our stdout stopped (``... | head -1``): stop quietly."""


def _wants_color(mode: str | None, stream: TextIO) -> bool:
    """Colour on ``stream``: ``always``; ``never``; ``auto`` (default) = a terminal and no NO_COLOR.

    https://no-color.org: a non-empty ``NO_COLOR`` turns colour off; an
    explicit ``--color always`` still wins.
    """
    if mode == "always":
        return True
    if mode == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


_SGR: Final = {"bold": "1", "red": "31", "yellow": "33", "green": "32", "dim": "2"}
# Status labels worth a glance: what waits for a person, what failed.
_LABEL_COLORS: Final = (
    (re.compile(r"\((interrupted|parent pruned|parent never existed|parent missing)\)"), "yellow"),
    (re.compile(r"\((error)\)"), "red"),
)


def _paint(text: str, style: str) -> str:
    return f"\x1b[{_SGR[style]}m{text}\x1b[0m"


def _paint_match(match: re.Match[str], style: str) -> str:
    return _paint(match.group(0), style)


@dataclasses.dataclass
class _Ctx:
    args: argparse.Namespace
    stdin: TextIO
    stdout: TextIO
    stderr: TextIO
    saver: Any = None

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    @property
    def color(self) -> bool:
        """Colour on stdout (never with --json)."""
        return not self.json and _wants_color(getattr(self.args, "color", None), self.stdout)

    def _write(self, text: str) -> None:
        try:
            self.stdout.write(text)
        except BrokenPipeError as exc:  # only stdout's: an AWS socket's is not ours to hide
            raise _StdoutClosed from exc

    def out(self, text: str = "") -> None:
        self._write(text + "\n")

    def table(self, text: str) -> None:
        """A :func:`render_table` block: header in bold and status labels coloured, on a terminal."""
        if self.color and text:
            head, _, rest = text.partition("\n")
            indent = head[: len(head) - len(head.lstrip())]
            text = indent + _paint(head.lstrip(), "bold") + ("\n" + rest if rest else "")
            text = self.labels(text)
        self.out(text)

    def labels(self, text: str) -> str:
        if not self.color:
            return text
        for pattern, style in _LABEL_COLORS:
            text = pattern.sub(functools.partial(_paint_match, style=style), text)
        return text

    def emit(self, obj: Any) -> None:
        self._write(json.dumps(jsonable(obj), indent=2, ensure_ascii=False) + "\n")

    def safe(self, text: str) -> str:
        """A stored text to print whole: on a terminal, its control characters (an escape
        sequence in an LLM's output, say) are shown escaped instead of obeyed; in a pipe,
        the exact text."""
        isatty = getattr(self.stdout, "isatty", None)
        return _escape_controls(text, keep="\n\t") if isatty and isatty() else text

    def note(self, text: str) -> None:
        self.stderr.write(text + "\n")

    def progress(self, what: str) -> _Progress:
        """A progress line for a long command: stderr only, a terminal only, never with --json."""
        mode = getattr(self.args, "progress", "auto")
        isatty = getattr(self.stderr, "isatty", None)
        on = not self.json and (mode == "always" or (mode == "auto" and bool(isatty and isatty())))
        return _Progress(self.stderr if on else None, what)


class _Progress:
    """One self-overwriting status line on stderr, at most every ``interval`` seconds.

    A context manager; :meth:`update` may be called as often as wanted (it
    is throttled), :meth:`tick` keeps a line alive with the elapsed time
    while one long call runs. The line is erased at the end, so what the
    command prints afterwards stands alone.
    """

    def __init__(self, stream: TextIO | None, what: str, interval: float = 0.2) -> None:
        self.stream, self.what, self.interval = stream, what, interval
        self.started = time.monotonic()
        self._last = 0.0
        self._shown = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self.stream is not None and self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()

    def update(self, text: str, *, force: bool = False) -> None:
        if self.stream is None:
            return
        now = time.monotonic()
        with self._lock:
            if not force and now - self._last < self.interval:
                return
            self._last = now
            self.stream.write(f"\r\x1b[K{self.what}: {text}")
            self.stream.flush()
            self._shown = True

    def tick(self, text: str) -> None:
        """Show ``text`` now, then with the elapsed seconds every second until the end."""
        self.update(text, force=True)
        if self.stream is None:
            return

        def run() -> None:
            while not self._stop.wait(1.0):
                self.update(f"{text} ({time.monotonic() - self.started:.0f} s)", force=True)

        self._ticker = threading.Thread(target=run, daemon=True)
        self._ticker.start()


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "table": args.table or os.environ.get(ENV_TABLE) or None,
        "bucket": args.bucket or os.environ.get(ENV_BUCKET) or None,
        # botocore alone would ignore AWS_REGION (it reads AWS_DEFAULT_REGION).
        "region": config.region_from_env(args.region),
        "endpoint_url": args.endpoint_url,
        "s3_key_prefix": args.s3_key_prefix or os.environ.get(ENV_S3_PREFIX) or "checkpoints/",
        "profile": args.profile,
        "tenant_prefix": args.tenant_prefix or os.environ.get(ENV_TENANT) or None,
    }


def _make_saver(args: argparse.Namespace) -> Any:
    s = _settings(args)
    if not s["table"]:
        raise CLIError(f"no table: pass --table or set {ENV_TABLE}", EXIT_USAGE, "no_table")
    import boto3
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from langgraph.checkpoint.dynamodb.saver import DynamoDBSaver

    # A viewer never has the application's modules imported: LangGraph's strict
    # serializer shows the application's types as their stored fields (the saver's
    # default would refuse them) and, like it, imports and calls nothing a value names.
    serde: Any = JsonPlusSerializer(allowed_msgpack_modules=None)
    if getattr(args, "encrypted", False):
        from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

        try:
            serde = EncryptedSerializer.from_pycryptodome_aes()
        except Exception as exc:
            raise CLIError(f"--encrypted: {exc}", EXIT_USAGE, "bad_encryption_key") from exc
    session = boto3.session.Session(profile_name=s["profile"], region_name=s["region"])
    extra: dict[str, Any] = {}
    if s["tenant_prefix"]:
        extra["tenant_prefix"] = s["tenant_prefix"]
    try:
        return DynamoDBSaver(
            table_name=s["table"],
            bucket_name=s["bucket"],
            region_name=s["region"],
            endpoint_url=s["endpoint_url"],
            boto3_session=session,
            s3_key_prefix=s["s3_key_prefix"],
            serde=serde,
            max_attempts=3,  # a CLI should fail fast, not retry for a minute
            **extra,
        )
    except (TypeError, ValueError) as exc:  # e.g. an invalid tenant prefix
        raise CLIError(f"invalid configuration: {exc}", EXIT_USAGE, "bad_configuration") from exc


def _resolve_checkpoint(ctx: _Ctx, thread_id: str, ref: str | None, ns: str) -> Any:
    """A checkpoint tuple from a full id, a unique id prefix, or ``latest``/nothing."""
    saver = ctx.saver
    base = {"thread_id": thread_id, "checkpoint_ns": ns}
    if ref in (None, "", "latest"):
        tup = saver.get_tuple({"configurable": base})
        if tup is None:
            _require_thread(saver, thread_id)
            raise CLIError(
                f"thread {shell_quote(thread_id)} has no checkpoint in namespace {shell_quote(ns)}",
                EXIT_NOT_FOUND,
                "checkpoint_not_found",
            )
        return tup
    assert ref is not None
    tup = saver.get_tuple({"configurable": {**base, "checkpoint_id": ref}})
    if tup is not None:
        return tup
    matches = [
        t
        for t in saver.list({"configurable": base})
        if t.config["configurable"]["checkpoint_id"].startswith(ref)
    ]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        _require_thread(saver, thread_id)
        raise CLIError(
            f"checkpoint {shell_quote(ref)} not found in thread {shell_quote(thread_id)}",
            EXIT_NOT_FOUND,
            "checkpoint_not_found",
        )
    raise CLIError(
        f"checkpoint prefix {ref!r} is ambiguous ({len(matches)} matches)", EXIT_USAGE, "ambiguous_checkpoint"
    )


def _confirm(ctx: _Ctx, question: str) -> None:
    if getattr(ctx.args, "yes", False):
        return
    if not ctx.stdin.isatty():
        raise CLIError(
            f"refusing without --yes: {question} (stdin is not a terminal, nobody can confirm)",
            EXIT_REFUSED,
            "confirmation_required",
        )
    ctx.stderr.write(f"{question} [y/N] ")
    ctx.stderr.flush()
    answer = ctx.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise CLIError("aborted: not confirmed", EXIT_REFUSED, "not_confirmed")


def _saver_call(name: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except NotImplementedError as exc:
        raise CLIError(
            f"saver.{name} is not implemented by the installed langgraph-checkpoint-dynamodb-s3",
            EXIT_UNSUPPORTED,
            "not_supported",
        ) from exc


def cmd_local(ctx: _Ctx) -> int:
    from langgraph.checkpoint.dynamodb.local import LocalAWS

    args = ctx.args
    # Global options given before `local` that it cannot honour: say so rather than ignore them.
    moot = [
        opt
        for opt, dest in (
            ("--endpoint-url", "endpoint_url"),
            ("--profile", "profile"),
            ("--tenant-prefix", "tenant_prefix"),
            ("--encrypted", "encrypted"),
        )
        if getattr(args, dest, None)
    ]
    if moot:
        raise CLIError(
            f"{', '.join(moot)} does not apply to `local` (it serves its own endpoint; see local --help)",
            EXIT_USAGE,
            "usage",
        )
    table = args.table or DEFAULT_LOCAL_TABLE
    bucket = args.bucket or DEFAULT_LOCAL_BUCKET
    region = config.region_from_env(args.region) or "us-east-1"
    try:
        aws = LocalAWS(args.host, args.port, region=region)
    except ValueError as exc:
        raise CLIError(str(exc), EXIT_USAGE, "bad_host") from exc
    try:
        aws.start()
    except ImportError as exc:
        raise CLIError(str(exc), EXIT_UNSUPPORTED, "moto_missing") from exc
    except OSError as exc:
        raise CLIError(f"cannot listen on {args.host}:{args.port}: {exc}", EXIT_USAGE, "bad_port") from exc
    stop = threading.Event()
    try:
        aws.saver(
            table_name=table, bucket_name=bucket, s3_key_prefix=_settings(args)["s3_key_prefix"]
        ).close()
        env = aws.env(table_name=table, bucket_name=bucket)
        lines = aws.export_lines(table_name=table, bucket_name=bucket)
        if args.env_file:
            with open(args.env_file, "w", encoding="utf-8") as fh:
                fh.write("\n".join(lines) + "\n")
        if ctx.json:
            # One line, so a supervising process can read it before we block.
            info = {"endpoint_url": aws.endpoint_url, "table": table, "bucket": bucket, "env": env}
            ctx.out(json.dumps(info))
        else:
            ctx.out(f"# local AWS endpoint (moto) on {aws.endpoint_url}: table {table!r}, bucket {bucket!r}")
            ctx.out("# in another shell:")
            for line in lines:
                ctx.out(line)
            ctx.out("# Ctrl-C stops the server; everything stored in it is lost.")
        ctx.stdout.flush()

        def on_signal(signum: int, frame: Any) -> None:
            stop.set()

        # Our own SIGINT handler too, not Python's KeyboardInterrupt: a process
        # started in the background by a non-interactive shell inherits SIGINT
        # as ignored, and Python then never raises KeyboardInterrupt.
        previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                previous[signum] = signal.signal(signum, on_signal)
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            for restored, handler in previous.items():
                signal.signal(restored, handler)
        _EXIT_AT_ONCE.set()
        return EXIT_OK
    finally:
        # Stopping the embedded server can wait on clients' keep-alive
        # connections: stop it in the background and don't wait for it.
        threading.Thread(target=aws.stop, daemon=True).start()


def cmd_threads(ctx: _Ctx) -> int:
    args = ctx.args
    given = args.prefix is not None or args.active_since is not None or args.idle_for is not None
    flt = ThreadFilter(
        prefix=args.prefix or "", active_since_ms=args.active_since, idle_since_ms=args.idle_for
    )
    if (
        flt.active_since_ms is not None
        and flt.idle_since_ms is not None
        and flt.idle_since_ms < flt.active_since_ms
    ):
        raise CLIError("--active-since and --idle-for leave no time between them", EXIT_USAGE, "usage")
    page = list_threads(
        ctx.saver,
        limit=args.limit,
        page_token=args.page_token,
        source=args.source,
        filter=flt if given else None,
    )
    if ctx.json:
        ctx.emit(page)
        return EXIT_OK
    ctx.out(f"source: {page['source']} ({page['note']})")
    if page["source"] == "index":
        cols = [("thread_id", "THREAD"), ("updated_at", "LAST ACTIVITY"), ("expires_at", "EXPIRES")]
    else:
        cols = [
            ("thread_id", "THREAD"),
            ("updated_at", "LAST ACTIVITY"),
            ("checkpoints", "CHECKPOINTS"),
            ("namespaces", "NAMESPACES"),
        ]
    if page["threads"]:
        ctx.table(render_table(page["threads"], cols, max_width=80, no_truncate=("thread_id",)))
    else:
        ctx.out("no threads" + (" match" if given or args.page_token else ""))
    if page["next_page_token"]:
        ctx.out(f"more: --page-token {page['next_page_token']}")
    return EXIT_OK


def cmd_history(ctx: _Ctx) -> int:
    args = ctx.args
    ns = None if args.all_namespaces else args.ns
    rows = describe_history(
        ctx.saver, args.thread, checkpoint_ns=ns, limit=args.limit, with_sizes=not args.no_sizes
    )
    if not rows:
        _require_thread(ctx.saver, args.thread)
    if ctx.json:
        ctx.emit({"thread_id": args.thread, "checkpoint_ns": ns, "checkpoints": rows})
        return EXIT_OK
    table_rows = [
        {
            **r,
            "writes_s": _fmt_writes(r["writes"], r["parent_missing"], r["parent_missing_reason"]),
            "next_s": _fmt_next(r["next"]),
            "bytes_s": _human_bytes(r.get("bytes")),
        }
        for r in rows
    ]
    cols = [("checkpoint_id", "CHECKPOINT"), ("step", "STEP"), ("source", "SOURCE")]
    if ns is None:
        cols.append(("checkpoint_ns", "NS"))
    cols += [("writes_s", "WRITES"), ("next_s", "NEXT")]
    if not args.no_sizes:
        cols.append(("bytes_s", "SIZE"))
    ctx.out(f"thread {shell_quote(args.thread)}: {len(rows)} checkpoint(s), newest first")
    ctx.table(
        render_table(table_rows, cols, max_width=args.width, no_truncate=("checkpoint_id", "checkpoint_ns"))
    )
    return EXIT_OK


def _show_channel(ctx: _Ctx, tup: Any) -> int:
    """``show --channel NAME``: one channel's value, whole (text as is, anything else as JSON)."""
    name = ctx.args.channel
    values = tup.checkpoint.get("channel_values", {})
    conf = tup.config["configurable"]
    if name not in values:
        state = sorted(c for c in values if not is_internal_channel(c))
        control = sorted(c for c in values if is_internal_channel(c))
        why = (
            "has no value at this checkpoint"
            if name in tup.checkpoint.get("channel_versions", {})
            else "is not a channel of this checkpoint"
        )
        raise CLIError(
            f"channel {shell_quote(name)} {why} (checkpoint {conf['checkpoint_id']}); channels with a value: "
            + (", ".join(display_id(c) for c in state) or "none")
            + (f"; control channels: {', '.join(display_id(c) for c in control)}" if control else ""),
            EXIT_NOT_FOUND,
            "channel_not_found",
        )
    value = values[name]
    if ctx.json:
        ctx.emit(
            {
                "thread_id": ctx.args.thread,
                "checkpoint_id": conf["checkpoint_id"],
                "checkpoint_ns": conf.get("checkpoint_ns", ""),
                "channel": name,
                "type": _type_label(value),
                "value": value,
            }
        )
    else:
        ctx.out(
            ctx.safe(value)
            if isinstance(value, str)
            else json.dumps(jsonable(value), indent=2, ensure_ascii=False)
        )
    return EXIT_OK


def cmd_show(ctx: _Ctx) -> int:
    args = ctx.args
    tup = _resolve_checkpoint(ctx, args.thread, args.checkpoint, args.ns)
    if args.channel is not None:
        return _show_channel(ctx, tup)
    parent = ctx.saver.get_tuple(tup.parent_config) if tup.parent_config else None
    live = args.checkpoint in (None, "", "latest")
    conf = tup.config["configurable"]
    size = (
        None
        if args.no_sizes
        else checkpoint_sizes(ctx.saver, args.thread, conf.get("checkpoint_ns", "")).get(
            (conf.get("checkpoint_ns", ""), conf["checkpoint_id"])
        )
    )
    reason = missing_parent_reason(ctx.saver, tup) if tup.parent_config and parent is None else None
    info = describe_checkpoint(tup, parent, live=live, size=size, parent_missing_reason=reason)
    values = tup.checkpoint.get("channel_values", {})
    shown = {k: v for k, v in values.items() if args.all_channels or not is_internal_channel(k)}
    pending = [
        {"task_id": tid, "channel": ch, "value": jsonable(v)}
        for tid, ch, v in tup.pending_writes or []
        if args.all_channels or not is_internal_channel(ch) or ch in (_INTERRUPT, _ERROR)
    ]
    if ctx.json:
        ctx.emit(
            {
                **info,
                "thread_id": args.thread,
                "metadata": tup.metadata,
                "values": shown,
                "pending_writes": pending,
            }
        )
        return EXIT_OK
    ctx.out(f"thread      {display_id(args.thread)}")
    ctx.out(
        f"checkpoint  {display_id(info['checkpoint_id'])}  "
        f"(step {info['step']}, {info['source']}, {info['created_at']})"
    )
    ctx.out(f"namespace   {display_id(info['checkpoint_ns']) if info['checkpoint_ns'] else '(root)'}")
    ctx.out(f"parent      {display_id(info['parent_id']) if info['parent_id'] else '-'}")
    ctx.out(
        ctx.labels(
            f"written by  {_fmt_writes(info['writes'], info['parent_missing'], info['parent_missing_reason'])}"
        )
    )
    ctx.out(ctx.labels(f"next        {_fmt_next(info['next'])}"))
    if "bytes" in info:
        ctx.out(f"size        {_human_bytes(info['bytes'])}")
    statuses = _task_statuses(tup.pending_writes or [])
    for tid, ch, val in tup.pending_writes or []:
        if ch != _INTERRUPT:
            continue
        # An answered interrupt stays among the pending writes: say it was answered.
        answered = "(answered) " if statuses.get(tid) == "resumed" else ""
        for v in _as_list(val):
            ctx.out(ctx.labels(f"interrupt   {answered}{short(jsonable(getattr(v, 'value', v)), 200)}"))
    ctx.out("")
    ctx.out(f"values ({len(shown)} channel(s)):")
    width = 10**9 if args.full else args.width
    rows = []
    for name in sorted(shown):
        value = shown[name]
        if args.full:
            text = (
                value if isinstance(value, str) else json.dumps(jsonable(value), indent=2, ensure_ascii=False)
            )
        else:
            text = short(value, width)
        rows.append({"name": name, "type": _type_label(value), "value": text})
    if args.full:
        for r in rows:
            ctx.out(f"--- {_cell(r['name'], 10**9)} ({r['type']})")
            ctx.out(ctx.safe(r["value"]))
    else:
        ctx.table(
            render_table(
                rows,
                [("name", "CHANNEL"), ("type", "TYPE"), ("value", "VALUE")],
                max_width=width,
                indent="  ",
            )
        )
    if pending:
        ctx.out("")
        ctx.out(f"pending writes ({len(pending)}):")
        ctx.table(
            render_table(
                [{"t": p["task_id"][:8], "c": p["channel"], "v": short(p["value"], width)} for p in pending],
                [("t", "TASK"), ("c", "CHANNEL"), ("v", "VALUE")],
                max_width=width,
                indent="  ",
            )
        )
    return EXIT_OK


def _type_label(value: Any) -> str:
    name = type(value).__name__
    if isinstance(value, (str, bytes, list, tuple, dict, set)):
        return f"{name}[{len(value)}]"
    return name


def cmd_diff(ctx: _Ctx) -> int:
    args = ctx.args
    a = _resolve_checkpoint(ctx, args.thread, args.a, args.ns)
    b = _resolve_checkpoint(ctx, args.thread, args.b, args.ns)
    d = diff_checkpoints(a, b)
    if ctx.json:
        ctx.emit({"thread_id": args.thread, **d})
        return EXIT_OK
    ctx.out(f"A = {display_id(d['a']['checkpoint_id'])} (step {d['a']['step']})")
    ctx.out(f"B = {display_id(d['b']['checkpoint_id'])} (step {d['b']['step']})")
    if not d["changes"]:
        ctx.out("no channel differences")
        return EXIT_OK
    rows = [
        {
            "channel": c["channel"],
            "change": c["change"],
            "a": "-" if c["change"] == "added" else short(c["a"], args.width),
            "b": "-" if c["change"] == "removed" else short(c["b"], args.width),
        }
        for c in d["changes"]
    ]
    ctx.table(
        render_table(
            rows, [("channel", "CHANNEL"), ("change", "CHANGE"), ("a", "A"), ("b", "B")], max_width=args.width
        )
    )
    return EXIT_OK


def cmd_copy(ctx: _Ctx) -> int:
    args = ctx.args
    saver = ctx.saver
    if args.source == args.target:
        # Before any request: the "target exists, delete it first" advice would delete the source.
        raise CLIError(
            f"cannot copy thread {shell_quote(args.source)} onto itself: give a new thread id as TARGET",
            EXIT_USAGE,
            "same_thread",
        )
    src_count = _require_thread(saver, args.source)
    dst_count = thread_checkpoint_count(saver, args.target)
    if dst_count:
        # copy_thread never merges two histories; make the user delete first.
        raise CLIError(
            f"target thread {shell_quote(args.target)} already has {dst_count} checkpoint(s); delete it first "
            "(copy never merges two histories)",
            EXIT_REFUSED,
            "target_exists",
        )
    with ctx.progress("copy") as progress:
        # One library call (no progress hook): the line shows it is alive and for how long.
        progress.tick(f"{shell_quote(args.source)} -> {shell_quote(args.target)}, {src_count} checkpoint(s)")
        _saver_call("copy_thread", lambda: saver.copy_thread(args.source, args.target))
    after = thread_checkpoint_count(saver, args.target)
    result = {
        "source": args.source,
        "target": args.target,
        "source_checkpoints": src_count,
        "target_checkpoints": after,
    }
    if ctx.json:
        ctx.emit(result)
    else:
        ctx.out(
            f"copied {shell_quote(args.source)} -> {shell_quote(args.target)}: {after} checkpoint(s) "
            f"in the target ({src_count} in the source)"
        )
    return EXIT_OK


def cmd_prune(ctx: _Ctx) -> int:
    args = ctx.args
    saver = ctx.saver
    before = {t: _require_thread(saver, t) for t in args.threads}
    if args.keep_last is not None:
        if args.keep_last < 1:
            raise CLIError("--keep-last must be >= 1", EXIT_USAGE, "bad_keep_last")
        what = f"keep the last {args.keep_last} checkpoint(s) per namespace of"
    elif args.strategy == "delete":
        what = "DELETE every checkpoint of"
    else:
        what = "keep only the latest checkpoint per namespace of"
    _confirm(ctx, f"{what} {len(args.threads)} thread(s): {', '.join(shell_quote(t) for t in args.threads)}?")
    result: Any = None
    with ctx.progress("prune") as progress:
        # One thread per call, so the line can count threads; the results add up.
        for i, thread in enumerate(args.threads):
            progress.update(f"{i}/{len(args.threads)} thread(s), now {shell_quote(thread)}", force=i == 0)
            how: dict[str, Any] = (
                {"keep_last": args.keep_last} if args.keep_last is not None else {"strategy": args.strategy}
            )
            one = _saver_call("prune", functools.partial(saver.prune, [thread], **how))
            result = one if result is None else _add_results(result, one)
        progress.update(f"{len(args.threads)}/{len(args.threads)} thread(s)", force=True)
    rows = [
        {
            "thread_id": t,
            "checkpoints_before": before[t],
            "checkpoints_after": thread_checkpoint_count(saver, t),
        }
        for t in args.threads
    ]
    summary = jsonable(result) if result is not None else None
    if ctx.json:
        ctx.emit(
            {
                "strategy": args.strategy if args.keep_last is None else "keep_latest",
                "keep_last": args.keep_last,
                "threads": rows,
                "result": summary,
            }
        )
    else:
        ctx.table(
            render_table(
                rows,
                [("thread_id", "THREAD"), ("checkpoints_before", "BEFORE"), ("checkpoints_after", "AFTER")],
                no_truncate=("thread_id",),
            )
        )
        if isinstance(summary, Mapping):
            ctx.out(
                ", ".join(f"{k.replace('_', ' ')}: {v:,}" for k, v in summary.items() if isinstance(v, int))
            )
    return EXIT_OK


def _add_results(total: Any, one: Any) -> Any:
    """Sum two prune results field by field (``PruneResult`` is a dataclass of counts)."""
    if one is None:
        return total
    if dataclasses.is_dataclass(total) and not isinstance(total, type):
        return dataclasses.replace(
            total,
            **{
                f.name: getattr(total, f.name) + getattr(one, f.name, 0)
                for f in dataclasses.fields(total)
                if isinstance(getattr(total, f.name), int) and not isinstance(getattr(total, f.name), bool)
            },
        )
    return total


def cmd_delete(ctx: _Ctx) -> int:
    args = ctx.args
    count = _require_thread(ctx.saver, args.thread)
    _confirm(
        ctx,
        f"delete thread {shell_quote(args.thread)} ({count} checkpoint(s), all namespaces, its S3 objects)?",
    )
    ctx.saver.delete_thread(args.thread)
    if ctx.json:
        ctx.emit({"thread_id": args.thread, "deleted_checkpoints": count})
    else:
        ctx.out(f"deleted thread {shell_quote(args.thread)} ({count} checkpoint(s))")
    return EXIT_OK


def cmd_stats(ctx: _Ctx) -> int:
    if ctx.args.thread:
        _require_thread(ctx.saver, ctx.args.thread)
    with ctx.progress("stats") as progress:
        stats = collect_stats(ctx.saver, ctx.args.thread, progress=progress.update)
    if ctx.json:
        ctx.emit(stats)
        return EXIT_OK
    ctx.out(ctx.labels(render_stats(stats)))
    return EXIT_OK


def render_stats(stats: Mapping[str, Any]) -> str:
    """:func:`collect_stats` output as text tables."""
    d, s3 = stats["dynamodb"], stats["s3"]
    scope = (
        f"thread {shell_quote(stats['thread_id'])}" if stats.get("thread_id") else f"table {stats['table']!r}"
    )
    subgraphs = ", ".join(display_id(s) for s in stats.get("subgraphs", []))
    lines = [
        f"{scope}: {stats['threads']} thread(s), {stats['checkpoints']} checkpoint(s), "
        f"{stats['namespaces']} namespace(s)"
        + (f" (subgraphs {subgraphs}: {stats.get('subgraph_runs', 0)} run(s))" if subgraphs else ""),
        "",
        f"DynamoDB: {d['items']:,} item(s), {_human_bytes(d['bytes'])}",
    ]
    rows = [
        {"kind": k, "items": v["items"], "bytes": _human_bytes(v["bytes"])} for k, v in d["by_kind"].items()
    ]
    lines.append(render_table(rows, [("kind", "KIND"), ("items", "ITEMS"), ("bytes", "BYTES")], indent="  "))
    lines.append("")
    if s3["bucket"] is None:
        lines.append("S3: no bucket configured (--bucket / LANGGRAPH_DYNAMODB_BUCKET)")
    else:
        lines.append(
            f"S3 s3://{s3['bucket']}/{s3['prefix']}: {s3['objects']:,} object(s), {_human_bytes(s3['bytes'])}"
        )
        rows = [
            {"kind": k, "objects": v["objects"], "bytes": _human_bytes(v["bytes"])}
            for k, v in s3["by_kind"].items()
        ]
        if rows:
            lines.append(
                render_table(
                    rows, [("kind", "KIND"), ("objects", "OBJECTS"), ("bytes", "BYTES")], indent="  "
                )
            )
    return "\n".join(lines)


# =================================================================== parser


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors go through our error path (exit 2, JSON if asked)."""

    def error(self, message: str) -> NoReturn:
        raise CLIError(f"{self.prog}: {message}", EXIT_USAGE, "usage")


def _global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    d = argparse.SUPPRESS if suppress else None
    g = parser.add_argument_group("connection (global; may also follow the command)")
    g.add_argument("--table", default=d, help=f"DynamoDB table (env {ENV_TABLE})")
    g.add_argument("--bucket", default=d, help=f"S3 bucket for large payloads (env {ENV_BUCKET})")
    g.add_argument(
        "--region", default=d, help="AWS region (default: AWS_REGION / AWS_DEFAULT_REGION / profile)"
    )
    g.add_argument(
        "--endpoint-url", default=d, help="endpoint for DynamoDB and S3 (default: AWS_ENDPOINT_URL)"
    )
    g.add_argument(
        "--s3-key-prefix",
        default=d,
        help=f"S3 key prefix of the saver (env {ENV_S3_PREFIX}; default checkpoints/)",
    )
    g.add_argument("--profile", default=d, help="AWS shared-config profile")
    g.add_argument(
        "--tenant-prefix",
        default=d,
        help=f"the savers' tenant_prefix: only that tenant's threads (env {ENV_TENANT})",
    )
    g.add_argument(
        "--encrypted",
        action="store_true",
        default=d if suppress else False,
        help="decode with EncryptedSerializer (AES key from LANGGRAPH_AES_KEY)",
    )
    g.add_argument(
        "--json", action="store_true", default=d if suppress else False, help="machine-readable JSON output"
    )
    g.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default=d if suppress else "auto",
        help="colour: auto (default: on a terminal, unless NO_COLOR is set), always, never; never in --json",
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("langgraph-checkpoint-dynamodb-s3")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def _progress_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="progress line on stderr: auto (default: when stderr is a terminal), always, never; "
        "never with --json",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``langgraph-dynamodb`` argument parser."""
    common = _Parser(add_help=False)
    _global_options(common, suppress=True)
    parser = _Parser(
        prog="langgraph-dynamodb",
        description="Inspect and manage LangGraph threads stored in DynamoDB + S3.",
        epilog="exit codes: 0 ok, 1 error, 2 usage/configuration, 3 credentials, 4 not found, "
        "5 refused/not confirmed, 6 not supported, 130 interrupted, 141 output closed early "
        "(e.g. | head). See docs/cli.md.",
    )
    parser.add_argument(
        "--version", action="version", version=f"langgraph-dynamodb {_version()}", help="print the version"
    )
    _global_options(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def add(
        name: str,
        help_: str,
        fn: Callable[[_Ctx], int],
        *,
        saver: bool = True,
        connection: bool = True,
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_, parents=[common] if connection else [])
        p.set_defaults(func=fn, needs_saver=saver)
        return p

    p = add(
        "local",
        "serve a local AWS endpoint (moto) with the table and bucket; Ctrl-C stops it",
        cmd_local,
        saver=False,
        connection=False,  # it serves an endpoint: the connection options do not apply
    )
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: a free port, printed)")
    p.add_argument("--env-file", help="also write the export lines to this file (to `source` it)")
    sup = argparse.SUPPRESS  # so that the same options given before `local` are kept
    p.add_argument("--table", default=sup, help=f"table to create (default {DEFAULT_LOCAL_TABLE})")
    p.add_argument("--bucket", default=sup, help=f"bucket to create (default {DEFAULT_LOCAL_BUCKET})")
    p.add_argument(
        "--region", default=sup, help="region (default: AWS_REGION / AWS_DEFAULT_REGION / us-east-1)"
    )
    p.add_argument(
        "--s3-key-prefix",
        default=sup,
        help=f"S3 key prefix of the saver it sets up (env {ENV_S3_PREFIX}; default checkpoints/)",
    )
    p.add_argument("--json", action="store_true", default=sup, help="print one JSON line instead")

    p = add(
        "threads",
        "list threads, most recent activity first (last activity: the thread heads index; "
        "without thread heads, the newest checkpoint's time)",
        cmd_threads,
    )
    p.add_argument("--limit", type=_positive, default=50, help="threads per page (default 50)")
    p.add_argument("--page-token", help="continue from a previous page (it keeps the filters)")
    p.add_argument(
        "--source",
        choices=("auto", "index", "scan"),
        default="auto",
        help="thread heads index, table scan, or auto (index if it has heads)",
    )
    p.add_argument("--prefix", default=None, help="only thread ids starting with this")
    p.add_argument(
        "--active-since",
        type=_when,
        metavar="WHEN",
        help="only threads active since WHEN: a duration ago (30m, 2h, 7d, 1h30m) or an ISO time",
    )
    p.add_argument(
        "--idle-for",
        type=_when,
        metavar="DURATION",
        help="only threads with no activity for at least DURATION (or since an ISO time)",
    )

    p = add("history", "checkpoints of a thread, newest first", cmd_history)
    p.add_argument("thread")
    p.add_argument("--ns", default="", help="checkpoint namespace (default: root)")
    p.add_argument("--all-namespaces", action="store_true", help="all namespaces (subgraphs) merged")
    p.add_argument("--limit", type=_positive, default=None, help="at most N checkpoints")
    p.add_argument(
        "--no-sizes", action="store_true", help="no SIZE column (saves reads; JSON rows get no bytes)"
    )
    p.add_argument("--width", type=_positive, default=48, help="column width limit (default 48)")

    p = add("show", "decoded state of a checkpoint (default: the latest)", cmd_show)
    p.add_argument("thread")
    p.add_argument("checkpoint", nargs="?", help="checkpoint id, unique prefix, or 'latest'")
    p.add_argument("--ns", default="", help="checkpoint namespace (default: root)")
    p.add_argument("--full", action="store_true", help="print values in full")
    p.add_argument("--all-channels", action="store_true", help="include LangGraph's control channels")
    p.add_argument("--width", type=_positive, default=80, help="value preview width (default 80)")
    p.add_argument("--channel", metavar="NAME", help="print only this channel's value, in full")
    p.add_argument(
        "--no-sizes", action="store_true", help="skip the stored size (saves reads; JSON gets no bytes)"
    )

    p = add("diff", "channel-level differences between two checkpoints", cmd_diff)
    p.add_argument("thread")
    p.add_argument("a", help="checkpoint id, unique prefix, or 'latest'")
    p.add_argument("b", help="checkpoint id, unique prefix, or 'latest'")
    p.add_argument("--ns", default="", help="checkpoint namespace (default: root)")
    p.add_argument("--width", type=_positive, default=40, help="value preview width (default 40)")

    p = add("copy", "copy a thread (all namespaces, same checkpoint ids) to a new, empty thread id", cmd_copy)
    p.add_argument("source")
    p.add_argument("target")
    _progress_option(p)

    p = add("prune", "delete old checkpoints of threads (their latest state stays loadable)", cmd_prune)
    p.add_argument("threads", nargs="+", metavar="THREAD")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--keep-last", type=int, metavar="N", help="keep the last N checkpoints per namespace")
    how.add_argument(
        "--strategy",
        choices=("keep_latest", "delete"),
        default="keep_latest",
        help="keep_latest (default) or delete (the whole thread)",
    )
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    _progress_option(p)

    p = add("delete", "delete a thread: every item and S3 object, all namespaces", cmd_delete)
    p.add_argument("thread")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")

    p = add("stats", "what the table and bucket hold: items, bytes, objects by kind", cmd_stats)
    _progress_option(p)
    p.add_argument("--thread", help="only this thread (a Query instead of a table Scan)")

    # doctor, export, import: in their own module (imported here, not at the top: it imports this one).
    from langgraph.checkpoint.dynamodb import _cli_ops

    _cli_ops.register(add)
    return parser


_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|m|s)")
_UNIT_S: Final = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}


def parse_when(text: str, now: float | None = None) -> int:
    """An instant (epoch ms) from a duration ago (``90s``, ``30m``, ``2h``, ``7d``, ``1w``, ``1h30m``) or an ISO time.

    ISO times without a zone are UTC; a date alone is its midnight UTC.

    Example:
        >>> parse_when("1h30m", now=10_000.0)
        4600000
        >>> parse_when("2026-01-01")
        1767225600000
    """
    spec = text.strip().lower().replace(" ", "")
    if spec and _DURATION.sub("", spec) == "":
        seconds = sum(float(n) * _UNIT_S[u] for n, u in _DURATION.findall(spec))
        return int(((time.time() if now is None else now) - seconds) * 1000)
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"not a duration (30m, 2h, 7d, 1h30m) or an ISO time (2026-11-29T10:00:00Z): {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1000)


def _when(text: str) -> int:
    try:
        return parse_when(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text!r}")
    return value


# ===================================================================== main


def _map_exception(exc: BaseException, args: argparse.Namespace | None, saver: Any) -> CLIError:
    """Turn AWS and saver exceptions into CLI errors with exit codes."""
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    table = getattr(saver, "table_name", None) or (args and _settings(args)["table"])
    bucket = getattr(saver, "bucket_name", None) or (args and _settings(args)["bucket"])
    where = ""
    if saver is not None:
        meta = getattr(_ddb(saver), "meta", None)
        if meta is not None:
            where = f" (region {meta.region_name}, endpoint {meta.endpoint_url})"
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return CLIError(
            f"no AWS credentials found: {exc}; set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY",
            EXIT_CREDENTIALS,
            "no_credentials",
        )
    if isinstance(exc, NoRegionError):
        return CLIError("no AWS region: pass --region or set AWS_REGION", EXIT_USAGE, "no_region")
    if isinstance(exc, EndpointConnectionError):
        return CLIError(f"cannot reach the endpoint: {exc}", EXIT_ERROR, "endpoint_unreachable")
    if isinstance(exc, ClientError):
        code = _client_code(exc)
        op = getattr(exc, "operation_name", "")
        if code == "ResourceNotFoundException":
            return CLIError(
                f"table {table!r} does not exist{where}: deploy it (the CDK construct CheckpointStore, or "
                f"DynamoDBSaver.setup() for development), or fix --table/{ENV_TABLE} or --region/AWS_REGION",
                EXIT_USAGE,
                "table_not_found",
            )
        if code in ("NoSuchBucket",) or (
            code in ("404", "NotFound") and op in ("HeadBucket", "ListObjectsV2")
        ):
            return CLIError(
                f"bucket {bucket!r} does not exist{where}: deploy it (the CDK construct CheckpointStore, or "
                f"DynamoDBSaver.setup() for development), or fix --bucket/{ENV_BUCKET} or --region/AWS_REGION",
                EXIT_USAGE,
                "bucket_not_found",
            )
        if code in _CREDENTIAL_CODES:
            return CLIError(
                f"AWS rejected the credentials ({code}){where}: {exc}", EXIT_CREDENTIALS, "bad_credentials"
            )
        return CLIError(
            f"AWS error {code or '?'} in {op or 'a request'}{where}: {exc}", EXIT_ERROR, "aws_error"
        )
    from langgraph.checkpoint.dynamodb.errors import CheckpointStoreError

    if isinstance(exc, CheckpointStoreError):
        return CLIError(f"{type(exc).__name__}: {exc}", EXIT_ERROR, "store_error")
    return CLIError(f"unexpected error: {type(exc).__name__}: {exc}", EXIT_ERROR, "unexpected")


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run the CLI; returns the exit code (the console script exits with it).

    Example:
        >>> main(["--table", "checkpoints", "threads", "--json"])  # doctest: +SKIP
        0
    """
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    wants_json = "--json" in argv
    args: argparse.Namespace | None = None
    ctx: _Ctx | None = None
    try:
        try:
            parser = build_parser()
            if not argv:
                parser.print_help(stdout)
                return EXIT_USAGE
            with contextlib.redirect_stdout(stdout):  # --help goes where we were told
                args = parser.parse_args(argv)
        except SystemExit as exc:  # --help / --version
            return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_OK
        except BrokenPipeError as exc:  # --help | head
            raise _StdoutClosed from exc
        if not getattr(args, "command", None):
            raise CLIError("missing command (see --help)", EXIT_USAGE, "usage")
        ctx = _Ctx(args, stdin, stdout, stderr)
        if args.needs_saver:
            ctx.saver = _make_saver(args)
        try:
            code: int = args.func(ctx)
            return code
        finally:
            if ctx.saver is not None:
                ctx.saver.close()
    except KeyboardInterrupt:
        stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    except _StdoutClosed:
        return EXIT_PIPE  # nothing to say: nobody reads what we would print
    except CLIError as err:
        return _report(err, stderr, wants_json, _color_mode(argv))
    except Exception as exc:
        return _report(
            _map_exception(exc, args, ctx.saver if ctx else None), stderr, wants_json, _color_mode(argv)
        )


def _color_mode(argv: Sequence[str]) -> str | None:
    """``--color`` as given, read from the raw arguments: errors may come before parsing ends."""
    mode = None
    for i, arg in enumerate(argv):
        if arg == "--color" and i + 1 < len(argv):
            mode = argv[i + 1]
        elif arg.startswith("--color="):
            mode = arg.split("=", 1)[1]
    return mode


def _report(err: CLIError, stderr: TextIO, as_json: bool, color: str | None = None) -> int:
    if as_json:
        stderr.write(
            json.dumps({"error": err.code, "message": err.message, "exit_code": err.exit_code}) + "\n"
        )
    else:
        prefix = _paint("error:", "red") if _wants_color(color, stderr) else "error:"
        stderr.write(f"{prefix} {err.message}\n")
    return err.exit_code


#: Set by a command whose process must end the moment it returns (``local``).
_EXIT_AT_ONCE = threading.Event()


def console_main() -> None:
    """The ``langgraph-dynamodb`` console script: :func:`main`, then exit with its code.

    ``local`` ends its process at once: the embedded server's threads and a
    client's leftover keep-alive connection must not hold Ctrl-C up (nothing
    of an in-memory endpoint needs saving). In-process callers of
    :func:`main` are never exited.

    A reader that closes our stdout early (``langgraph-dynamodb show t | head -1``)
    ends the command quietly with exit code 141, no traceback.
    """
    code = main()
    try:
        sys.stdout.flush()  # what is still buffered may be what finds the pipe closed
    except BrokenPipeError:
        code = EXIT_PIPE
    if code == EXIT_PIPE:
        # As Python's docs advise for SIGPIPE (the signal module's notes): point
        # stdout at devnull, so the interpreter's last flush at exit cannot fail
        # again and print "Exception ignored ... BrokenPipeError".
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
    if _EXIT_AT_ONCE.is_set():
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    console_main()
