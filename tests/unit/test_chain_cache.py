"""The delta-chain cache (``_chains``) through the savers' public methods, against scripted responses.

A tiny in-memory table answers the scripted requests (Query ranges newest
first with ``Limit``, BatchGetItem, GetItem), so each test sees exactly which
requests a history call makes and can delete items behind the cache's back,
as another process would.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._engine.ops import Call
from langgraph.checkpoint.dynamodb._parts.chains import ChainCache
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.script import Script, call, scripted_saver

MODES = ["sync", "async"]
N = 8


class Table:
    """Items by sort key (one partition), answering the calls a read makes."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}

    def query(self, c: Call) -> dict[str, Any]:
        kw = c.kwargs
        vals = kw["ExpressionAttributeValues"]
        if "BETWEEN" in kw["KeyConditionExpression"]:
            keys = [k for k in self.items if vals[":lo"]["S"] <= k <= vals[":hi"]["S"]]
        else:
            keys = [k for k in self.items if k.startswith(vals[":lo"]["S"])]
        keys.sort(reverse=not kw.get("ScanIndexForward", True))
        if "ExclusiveStartKey" in kw:
            last = kw["ExclusiveStartKey"][ATTR.SK]["S"]
            keys = [k for k in keys if (k < last if not kw.get("ScanIndexForward", True) else k > last)]
        out: dict[str, Any] = {"Items": [self.items[k] for k in keys]}
        limit = kw.get("Limit")
        if limit is not None and len(keys) > limit:
            out["Items"] = out["Items"][:limit]
            out["LastEvaluatedKey"] = {ATTR.PK: out["Items"][-1][ATTR.PK], ATTR.SK: out["Items"][-1][ATTR.SK]}
        return out

    def batch_get_item(self, c: Call) -> dict[str, Any]:
        ((table, spec),) = c.kwargs["RequestItems"].items()
        found = [self.items[k[ATTR.SK]["S"]] for k in spec["Keys"] if k[ATTR.SK]["S"] in self.items]
        return {"Responses": {table: found}}

    def get_item(self, c: Call) -> dict[str, Any]:
        it = self.items.get(c.kwargs["Key"][ATTR.SK]["S"])
        return {"Item": it} if it is not None else {}

    def serve(self, script: Script) -> None:
        """Answer every read from this table, from now on."""
        script.reset()
        for method in ("query", "batch_get_item", "get_item"):
            script._queued.pop(method, None)
        orig = script.answer

        def answer(c: Call) -> Any:
            handler = getattr(self, c.method, None)
            if handler is not None:
                script.log.append(c)
                return handler(c)
            return orig(c)

        script.answer = answer  # type: ignore[method-assign]


def _delta_thread(mode: str) -> tuple[Any, Script, Table, list[dict[str, Any]]]:
    """A scripted saver and a table holding a delta chain of ``N`` checkpoints ("msgs" seeded at 0)."""
    saver, script = scripted_saver(mode)
    table = Table()
    configs = []
    parent: dict[str, Any] = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    for i in range(N):
        cp = {
            "v": 1,
            "id": str(uuid6(clock_seq=-1)),
            "ts": "2026-11-29T00:00:00+00:00",
            "channel_values": {"msgs": ["seed"]} if i == 0 else {},
            "channel_versions": {"msgs": f"{i + 1:032}.0"},
            "versions_seen": {},
            "updated_channels": None,
        }
        md = {"step": i, "counters_since_delta_snapshot": {"msgs": [i, i]}}
        parent = call(saver, "put", parent, cp, md, {"msgs": f"{i + 1:032}.0"})
        call(saver, "put_writes", parent, [("msgs", f"m{i}")], f"task-{i}", "~a")
        configs.append(parent)
    for c in script.calls("put_item"):
        table.items[c.kwargs["Item"][ATTR.SK]["S"]] = c.kwargs["Item"]
    for c in script.calls("update_item"):
        kw = c.kwargs
        v = kw["ExpressionAttributeValues"]
        item = {
            **kw["Key"],
            ATTR.KIND: v[":t"],
            ATTR.FORMAT: v[":f"],
            ATTR.TASK_ID: v[":tid"],
            ATTR.TASK_PATH: v[":tp"],
        }
        for name, attr in kw["ExpressionAttributeNames"].items():
            if attr.startswith(ATTR.WRITE_PREFIX) and ":" + name[1:] in v:
                item[attr] = v[":" + name[1:]]
        table.items[item[ATTR.SK]["S"]] = item
    table.serve(script)
    return saver, script, table, configs


def _history(saver: Any, config: dict[str, Any]) -> Any:
    return call(saver, "get_delta_channel_history", config=config, channels=["msgs"])


def _expected(i: int) -> dict[str, Any]:
    """History of checkpoint ``i``: the seed, then the writes of checkpoints 0 .. i-1."""
    return {"msgs": {"seed": ["seed"], "writes": [(f"task-{j}", "msgs", f"m{j}") for j in range(i)]}}


def _fresh(mode: str, table: Table) -> tuple[Any, Script]:
    """Another saver (no cache) over the same table: what a fresh read answers."""
    saver, script = scripted_saver(mode)
    table.serve(script)
    return saver, script


@pytest.mark.parametrize("mode", MODES)
def test_a_second_history_call_reads_only_the_target_and_the_head(mode: str) -> None:
    saver, script, table, configs = _delta_thread(mode)
    assert _history(saver, configs[-1]) == _expected(N - 1)
    first = script.methods()
    assert sorted(first) == ["dynamodb.get_item", "dynamodb.query"]  # the walk: one Query (+ head)
    items_first = len(table.query(script.calls("query")[0])["Items"])
    for i in range(N - 2, 0, -1):
        script.reset()
        assert _history(saver, configs[i]) == _expected(i)
        # Everything below the target is cached: one BatchGetItem of the target and the head.
        assert script.methods() == ["dynamodb.batch_get_item"], (i, script.methods())
        keys = script.calls("batch_get_item")[0].kwargs["RequestItems"]["tbl"]["Keys"]
        assert [k[ATTR.SK]["S"] for k in keys] == [
            schema.checkpoint_sk("", configs[i]["configurable"]["checkpoint_id"]),
            schema.HEAD_SK,
        ]
        assert script.calls("batch_get_item")[0].kwargs["RequestItems"]["tbl"]["ConsistentRead"] is True
    # The first walk read the whole chain (writes items too); the others two items each.
    assert items_first >= 2 * N - 2


@pytest.mark.parametrize("mode", MODES)
def test_list_fills_the_cache_for_the_history_calls_that_follow(mode: str) -> None:
    saver, script, _table, configs = _delta_thread(mode)
    listed = call(saver, "list", {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}})
    assert len(listed) == N
    for i in range(N - 2, 0, -1):
        script.reset()
        assert _history(saver, configs[i]) == _expected(i)
        # The listing vouched for it: no request of its own.
        assert script.methods() == [], (i, script.methods())
    # Each voucher serves once: asked again, the target and head are read fresh.
    script.reset()
    assert _history(saver, configs[1]) == _expected(1)
    assert script.methods() == ["dynamodb.batch_get_item"], script.methods()


@pytest.mark.parametrize("mode", MODES)
def test_a_deleted_thread_is_not_served_from_the_cache(mode: str) -> None:
    saver, script, table, configs = _delta_thread(mode)
    _history(saver, configs[-1])  # fills the cache
    target = configs[N - 3]
    # Another process deletes the thread: items gone, the head keeps the dead root.
    root = table.items[schema.checkpoint_sk("", configs[0]["configurable"]["checkpoint_id"])][ATTR.ROOT]["S"]
    table.items.clear()
    table.items[schema.HEAD_SK] = {
        ATTR.PK: {"S": "t1"},
        ATTR.SK: {"S": schema.HEAD_SK},
        ATTR.DEAD: {"SS": [root]},
    }
    script.reset()
    assert _history(saver, target) == {"msgs": {"writes": []}}
    fresh, _ = _fresh(mode, table)
    assert _history(fresh, target) == {"msgs": {"writes": []}}


@pytest.mark.parametrize("mode", MODES)
def test_a_pruned_target_or_a_dead_lineage_reads_as_nothing(mode: str) -> None:
    saver, _script, table, configs = _delta_thread(mode)
    _history(saver, configs[-1])
    # The target alone is gone (a prune by another process): nothing, not the cached chain.
    gone = configs[N - 3]
    del table.items[schema.checkpoint_sk("", gone["configurable"]["checkpoint_id"])]
    assert _history(saver, gone) == {"msgs": {"writes": []}}
    # The items are still there but their lineage is dead (a delete in progress).
    alive = configs[N - 4]
    root = table.items[schema.checkpoint_sk("", alive["configurable"]["checkpoint_id"])][ATTR.ROOT]["S"]
    table.items[schema.HEAD_SK] = {
        ATTR.PK: {"S": "t1"},
        ATTR.SK: {"S": schema.HEAD_SK},
        ATTR.DEAD: {"SS": [root]},
    }
    assert _history(saver, alive) == {"msgs": {"writes": []}}


@pytest.mark.parametrize("mode", MODES)
def test_writes_that_may_still_be_in_flight_are_not_cached(mode: str) -> None:
    """The target's parent is cached without its writes: a write that lands later is seen."""
    saver, _script, table, configs = _delta_thread(mode)
    _history(saver, configs[-1])
    parent_id = configs[-2]["configurable"]["checkpoint_id"]
    late = {
        ATTR.PK: {"S": "t1"},
        ATTR.SK: {"S": schema.writes_sk("", parent_id, "task-late")},
        ATTR.KIND: {"S": schema.WRITES_ITEM},
        ATTR.FORMAT: {"N": "1"},
        ATTR.TASK_ID: {"S": "task-late"},
        ATTR.TASK_PATH: {"S": "~b"},
    }
    first = next(it for it in table.items.values() if it.get(ATTR.TASK_ID, {}).get("S") == "task-0")
    late[ATTR.WRITE_PREFIX + "0"] = first[ATTR.WRITE_PREFIX + "0"]  # the same packed value "m0"
    table.items[late[ATTR.SK]["S"]] = late
    got = _history(saver, configs[-1])
    fresh, _ = _fresh(mode, table)
    assert got == _history(fresh, configs[-1])
    assert ("task-late", "msgs", "m0") in got["msgs"]["writes"]


@pytest.mark.parametrize("mode", MODES)
def test_an_evicted_middle_is_read_from_below_the_cached_part(mode: str) -> None:
    saver, script, _table, configs = _delta_thread(mode)
    _history(saver, configs[-1])
    hole = configs[2]["configurable"]["checkpoint_id"]
    with saver.caches.chain_cache._lock:
        del saver.caches.chain_cache._entries[(saver.partition_key("t1"), "", hole)]
    script.reset()
    assert _history(saver, configs[5]) == _expected(5)
    # One round trip: the target and head, and a Query that starts at the hole.
    assert script.gathers == [(0, 2)]
    (q,) = script.calls("query")
    assert q.kwargs["ExpressionAttributeValues"][":hi"] == {"S": schema.checkpoint_range_end("", hole)}


def test_the_cache_is_bounded_in_entries_and_bytes() -> None:
    cache = ChainCache(max_entries=3, max_bytes=10_000)
    item = {ATTR.SK: {"S": "x"}, "b": {"B": b"\0" * 1000}}
    for i in range(5):
        cache.put(("pk", "", str(i)), item, None)
    assert len(cache) == 3 and cache.get(("pk", "", "0")) is None and cache.get(("pk", "", "4")) is not None
    cache.put(("pk", "", "big"), {"b": {"B": b"\0" * 6000}}, [{"w": {"B": b"\0" * 3000}}])
    assert cache.bytes <= 10_000 and cache.get(("pk", "", "big")) is not None
    cache.put(("pk", "", "huge"), {"b": {"B": b"\0" * 20_000}}, None)  # larger than the whole cache
    assert cache.get(("pk", "", "huge")) is None
    # An entry with writes is never downgraded to the item alone.
    cache.put(("pk", "", "big"), {"b": {"B": b"\0" * 6000}}, None)
    assert cache.get(("pk", "", "big")).writes is not None  # type: ignore[union-attr]
    cache.forget_partition("pk")
    assert len(cache) == 0 and cache.bytes == 0
