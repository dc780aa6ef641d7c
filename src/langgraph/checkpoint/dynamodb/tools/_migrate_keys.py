"""Key-only reads of LangGraph's own savers' storage, for ``migrate``: never a value decoded.

``CheckpointTuple`` carries neither a write's task path nor its index, and
``list(None)``, the API's way to find every thread, decodes every checkpoint
of every thread, so one hostile item would stop a whole migration before a
thread is refused. Where the saver's storage is known (``InMemorySaver``,
``SqliteSaver``, ``PostgresSaver``), both are read here from its keys.
"""

from __future__ import annotations

import contextlib
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

__all__ = ["thread_ids", "write_keys"]

#: (task id, channel, task path, idx) of one write.
WriteKey = tuple[str, str, str, int]


def _is(source: Any, package: str, attr: str) -> bool:
    return type(source).__module__.startswith(f"langgraph.checkpoint.{package}") and hasattr(source, attr)


def write_keys(source: Any, thread_id: str, ns: str, cid: str) -> list[WriteKey] | None:
    """``(task_id, channel, task_path, idx)`` of a checkpoint's writes, unsorted; ``None``: storage not known."""
    if isinstance(source, InMemorySaver):
        stored = source.writes.get((thread_id, ns, cid), {})
        return [(k[0], v[1], v[3], k[1]) for k, v in stored.items()]
    if _is(source, "sqlite", "cursor"):
        path = "task_path" if getattr(source, "_has_task_path", False) else "''"
        with source.cursor(transaction=False) as cur:
            cur.execute(
                f"SELECT task_id, channel, {path}, idx FROM writes "  # a column name, never user input
                "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                (thread_id, ns, cid),
            )
            return [(str(r[0]), str(r[1]), str(r[2] or ""), int(r[3])) for r in cur.fetchall()]
    if _is(source, "postgres", "conn"):
        fetched = _postgres(
            source,
            "SELECT task_id, channel, task_path, idx FROM checkpoint_writes "
            "WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s",
            (thread_id, ns, cid),
        )
        rows = [
            (r["task_id"], r["channel"], r["task_path"], r["idx"]) if isinstance(r, dict) else r
            for r in fetched
        ]
        return [(str(t), str(c), str(p or ""), int(i)) for t, c, p, i in rows]
    return None


def thread_ids(source: Any) -> list[str] | None:
    """Every thread id, in the order ``list(None)`` first shows it (newest checkpoint first); ``None``: not known."""
    if isinstance(source, InMemorySaver):
        # Its reads leave empty entries behind (a defaultdict): only threads with a checkpoint.
        return [str(t) for t, by_ns in source.storage.items() if any(by_ns.values())]
    # Both order list(None) by checkpoint id, descending, across threads.
    sql = "SELECT thread_id FROM {} GROUP BY thread_id ORDER BY MAX(checkpoint_id) DESC, thread_id"
    if _is(source, "sqlite", "cursor"):
        with source.cursor(transaction=False) as cur:
            cur.execute(sql.format("checkpoints"))  # a fixed table name
            return [str(r[0]) for r in cur.fetchall()]
    if _is(source, "postgres", "conn"):
        return [
            str(r["thread_id"] if isinstance(r, dict) else r[0])
            for r in _postgres(source, sql.format("checkpoints"), ())
        ]
    return None


def _postgres(source: Any, sql: str, params: tuple[Any, ...]) -> list[Any]:
    """Rows of a query on a ``PostgresSaver``'s public ``conn`` (a connection or a pool), under its lock."""
    conn = source.conn
    with contextlib.ExitStack() as stack:
        if getattr(source, "lock", None) is not None:  # the saver's own guard of its connection
            stack.enter_context(source.lock)
        if hasattr(conn, "connection") and not hasattr(conn, "cursor"):  # a ConnectionPool
            conn = stack.enter_context(conn.connection())
        cur = stack.enter_context(conn.cursor())
        cur.execute(sql, params)
        return list(cur.fetchall())
