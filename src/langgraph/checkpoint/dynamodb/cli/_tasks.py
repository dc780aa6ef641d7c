"""LangGraph task logic over checkpoint tuples (next_tasks, produced_by, changed_channels, checkpoint_time, subgraph_path): pure, no I/O."""

from __future__ import annotations

import binascii
import datetime as dt
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# LangGraph's reserved channel and task names (langgraph._internal._constants;
# copied because the CLI must work without langgraph installed).
_START = "__start__"
_TASKS = "__pregel_tasks"
INTERRUPT_CHANNEL = "__interrupt__"
ERROR_CHANNEL = "__error__"
RESUME_CHANNEL = "__resume__"
_PULL = "__pregel_pull"
_PUSH = "__pregel_push"
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
NS_SEP = "|"
NS_END = ":"
_NOT_NODES = {"__input__", INTERRUPT_CHANNEL}


# ============================================================== inspection
# Pure functions over checkpoint tuples: no I/O, no langgraph import needed.


#: The one state channel of a graph whose state is a single value
#: (``StateGraph(dict)``, as in the README's Quick start): state, whatever
#: its dunder name says.
ROOT_CHANNEL = "__root__"


def is_internal_channel(name: str) -> bool:
    """Channels LangGraph uses for control flow rather than state.

    Example:
        >>> [is_internal_channel(c) for c in ("messages", "branch:to:a", "__start__", "__root__")]
        [False, True, True, False]
    """
    if name == ROOT_CHANNEL:
        return False
    return name.startswith(("branch:", "join:", "__")) or name == _START


def checkpoint_time(checkpoint_id: str) -> str | None:
    """ISO time encoded in a uuid6 checkpoint id (``None`` for other ids).

    Example:
        >>> checkpoint_time("1f0c3a3e-8d1b-6b5e-8001-0242ac120002")[:4]
        '2025'
    """
    ms = uuid6_ms(checkpoint_id)
    return None if ms is None else iso_time(ms / 1000)


def uuid6_ms(checkpoint_id: str) -> int | None:
    """Epoch milliseconds in a uuid6 id (``None`` for other ids)."""
    try:
        raw = int(checkpoint_id.replace("-", ""), 16)
    except ValueError:
        return None
    if len(checkpoint_id.replace("-", "")) != 32 or (raw >> 76) & 0xF != 6:
        return None
    ts = (((raw >> 80) & 0xFFFFFFFFFFFF) << 12) | ((raw >> 64) & 0x0FFF)
    return (ts - 0x01B21DD213814000) // 10_000


def iso_time(epoch_s: float) -> str:
    return dt.datetime.fromtimestamp(epoch_s, dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def subgraph_path(checkpoint_ns: str) -> str:
    """A checkpoint namespace without LangGraph's task ids: the subgraph it belongs to.

    Every run of a subgraph gets its own namespace (``node:<task id>``, nested
    ones joined by ``|``); this is the part that names the graph, as
    LangGraph's ``recast_checkpoint_ns``. The root namespace is ``""``.

    Example:
        >>> subgraph_path("outer:1f0c|inner:9a2b"), subgraph_path("")
        ('outer|inner', '')
    """
    return NS_SEP.join(part.split(NS_END)[0] for part in checkpoint_ns.split(NS_SEP) if not part.isdigit())


def _task_id(
    checkpoint: Mapping[str, Any], checkpoint_ns: str, name: str, step: int, *parts: str
) -> str | None:
    """LangGraph's deterministic task id (``pregel._algo``), or ``None`` if it cannot be computed."""
    try:
        cid_bytes = binascii.unhexlify(checkpoint["id"].replace("-", ""))
    except (binascii.Error, KeyError, AttributeError):
        return None
    task_ns = f"{checkpoint_ns}{NS_SEP}{name}" if checkpoint_ns else name
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


def task_statuses(pending_writes: Iterable[Sequence[Any]]) -> dict[str, str]:
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
        if task_id == NULL_TASK_ID:
            continue
        if channel == INTERRUPT_CHANNEL:
            interrupted.add(task_id)
        elif channel == ERROR_CHANNEL:
            status.setdefault(task_id, "error")
        elif channel != RESUME_CHANNEL:
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
        step: the checkpoint's ``metadata["step"]`` (for task ids; anything but an integer counts as unknown).
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
    statuses = task_statuses(pending_writes)
    if not isinstance(step, int) or isinstance(step, bool):
        # Stored metadata is untrusted: a step that is not an integer ("x", a
        # bool) gives no task ids, as no step does, rather than an error.
        step = None
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
        if task_id == NULL_TASK_ID or is_internal_channel(channel):
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
