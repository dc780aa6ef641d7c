"""Pruning threads, I/O-free and delta-safe.

What lives here: ``prune`` (by thread id, ``keep_latest`` or ``delete``) and
``prune_thread``, which keeps each namespace's latest checkpoints and every
ancestor their delta channels need, reading a thread too large for its budget
from its outline.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.checkpoint.dynamodb._engine.ops import Op
from langgraph.checkpoint.dynamodb._operations.deleting import delete_thread_counted
from langgraph.checkpoint.dynamodb._operations.keep import delete_unkept, keep_set, keep_walk, values_fetcher
from langgraph.checkpoint.dynamodb._operations.threads import load_thread
from langgraph.checkpoint.dynamodb._parts.shapes import (
    ThreadItems,
)
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.lifecycle import (
    PruneResult,
)


def prune_thread(
    s: BaseDynamoDBSaver, thread_id: str, keep_last: int, loaded: ThreadItems | None = None
) -> Op[PruneResult]:
    """Keep the newest ``keep_last`` checkpoints per namespace and what their chains need.

    ``loaded``: the thread as the caller just read it (the pruner looks at a
    thread before it decides), so that it is not read twice.
    """
    thread = loaded if loaded is not None else (yield from load_thread(s, thread_id))
    res = PruneResult(threads=1)
    if not thread.checkpoints:
        return res
    # Late writes on deleted lineages are garbage: never survivors, never kept.
    dead = thread.dead()
    live = {key: it for key, it in thread.checkpoints.items() if key not in dead}
    survivors: list[tuple[str, str]] = []
    for ns in {n for n, _ in live}:
        ids = sorted((cid for n, cid in live if n == ns), reverse=True)
        survivors.extend((ns, cid) for cid in ids[:keep_last])
    if thread.outline:  # the ancestors' channels are fetched as the walk reaches them
        keep, _ = yield from keep_walk(live, survivors, thread_id, values_fetcher(s))
    else:
        keep, _ = keep_set(live, survivors, thread_id=thread_id)
    res.checkpoints_kept = len(keep)
    res.kept_for_delta = len(keep) - len(survivors)
    yield from delete_unkept(s, thread, keep, res)
    return res


STRATEGIES = ("keep_latest", "delete")


def prune(
    s: BaseDynamoDBSaver,
    thread_ids: Sequence[str],
    *,
    strategy: str = "keep_latest",
    keep_last: int | None = None,
) -> Op[PruneResult]:
    """Prune threads, delta-safe.

    ``keep_latest`` keeps the latest checkpoint of each namespace (the
    ``keep_last`` latest, if given) with its writes, plus every ancestor
    its delta channels need back to their nearest snapshot. ``delete``
    removes the threads. Returns what was removed and kept.

    Raises:
        TypeError: ``thread_ids`` is a single string, or holds a non-string.
        ValueError: an unknown strategy, or a bad ``keep_last``.
    """
    if isinstance(thread_ids, (str, bytes)):
        raise TypeError(
            f"thread_ids must be a list of thread ids, not a single string (did you mean [{thread_ids!r}]?)"
        )
    thread_ids = list(thread_ids)
    for t in thread_ids:
        if not isinstance(t, str) or not t:
            raise TypeError(f"every thread id must be a non-empty str, got {t!r}")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown prune strategy {strategy!r}; use one of {STRATEGIES}")
    if keep_last is not None:
        if strategy != "keep_latest":
            raise ValueError("keep_last applies to strategy='keep_latest' only")
        if not isinstance(keep_last, int) or isinstance(keep_last, bool) or keep_last < 1:
            raise ValueError(f"keep_last must be an int >= 1, got {keep_last!r}")
    total = PruneResult()
    for thread_id in dict.fromkeys(thread_ids):
        if strategy == "delete":
            res = yield from delete_thread_counted(s, thread_id)
        else:
            res = yield from prune_thread(s, thread_id, keep_last or 1)
        total.add(res)
    return total
