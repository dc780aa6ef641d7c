"""``get_delta_channel_history`` against scripted responses: round trips, page sizes, corrupt chains.

The Query answers come from :func:`descending`, a function of the request
that serves the items a writer stored in key order (as DynamoDB does, page by
page, with ``Limit`` and ``ExclusiveStartKey``): so the test sees how many
requests, of what size, the operation needs for a chain of a given length.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError, MissingPayloadError
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.script import Script, scripted_saver
from tests.unit.stored import Writer, cid_of, delta_chain, sk

MODES = ["sync", "async"]


def descending(items: list[dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
    """Answer Queries over ``items`` as DynamoDB would: key range, order, Limit, pages."""

    def answer(c: Any) -> dict[str, Any]:
        kw = c.kwargs
        values = kw["ExpressionAttributeValues"]
        lo = values[":lo"]["S"]
        if "BETWEEN" in kw["KeyConditionExpression"]:
            found = [it for it in items if lo <= sk(it) <= values[":hi"]["S"]]
        else:
            found = [it for it in items if sk(it).startswith(lo)]
        found = [it for it in found if it[ATTR.PK] == values[":pk"]]
        found.sort(key=sk, reverse=kw.get("ScanIndexForward", True) is False)
        if "ExclusiveStartKey" in kw:
            after = kw["ExclusiveStartKey"][ATTR.SK]["S"]
            found = [
                it
                for it in found
                if (sk(it) < after if kw.get("ScanIndexForward") is False else sk(it) > after)
            ]
        limit = kw.get("Limit")
        page = found[:limit] if limit else found
        out: dict[str, Any] = {"Items": page}
        if limit and len(found) > limit:
            out["LastEvaluatedKey"] = {ATTR.PK: page[-1][ATTR.PK], ATTR.SK: page[-1][ATTR.SK]}
        return out

    return answer


def round_trips(script: Script) -> int:
    """Waits the operation made: a Gather is one, whatever its size."""
    inside = {i for start, size in script.gathers for i in range(start, start + size)}
    return len(script.gathers) + sum(1 for i in range(len(script.log)) if i not in inside)


def _history(saver: Any, config: Any, channels: list[str]) -> Any:
    import asyncio

    if isinstance(saver, DynamoDBSaver):
        return saver.get_delta_channel_history(config=config, channels=channels)
    return asyncio.run(saver.aget_delta_channel_history(config=config, channels=channels))


@pytest.mark.parametrize("mode", MODES)
def test_history_round_trips_do_not_grow_with_the_chain(mode: str) -> None:
    """Sized from the stored counters: one or two Queries, however far back the snapshot is."""
    measured = {}
    for n in (10, 100, 300):
        w = Writer()
        configs = delta_chain(w, "t1", n)
        items = w.items("t1")
        saver, script = scripted_saver(mode)
        script.when("query", *[descending(items)] * 4)
        script.when("get_item", {})  # the head: nothing deleted
        out = _history(saver, configs[-1], ["m"])
        # The history is whole: the snapshot, then every write since, in order.
        assert out["m"]["seed"] == ["msg0"]
        assert [wr[2] for wr in out["m"]["writes"]] == [f"msg{i}" for i in range(1, n)]
        queries = script.calls("query")
        read = sum(len(descending(items)(q)["Items"]) for q in queries)
        measured[n] = (round_trips(script), len(queries), read)
        # Read units follow the chain's own size (two items a step), not a 1 MB page.
        assert read <= max(64, 2 * n * 1.5 + 16 + 64), measured
        # The first Query and the head's GetItem share one wait.
        assert script.gathers[0] == (0, 2) and sorted(script.methods()[:2]) == [
            "dynamodb.get_item",
            "dynamodb.query",
        ]
    assert measured[10][:2] == (1, 1)
    assert measured[100][:2] == measured[300][:2] == (2, 2), measured


@pytest.mark.parametrize("mode", MODES)
def test_history_second_page_is_sized_from_the_targets_counters(mode: str) -> None:
    w = Writer()
    configs = delta_chain(w, "t1", 200)
    saver, script = scripted_saver(mode)
    script.when("query", descending(w.items("t1")), descending(w.items("t1")))
    _history(saver, configs[-1], ["m"])
    first, second = script.calls("query")
    assert first.kwargs["Limit"] == 64 and first.kwargs["ScanIndexForward"] is False
    # 199 steps back, 32 checkpoints read with 64 items: (199 - 32 + 4) * 2 * 1.5 + 16.
    assert second.kwargs["Limit"] == int((199 - 32 + 4) * 2 * 1.5) + 16
    first_page = descending(w.items("t1"))(first)["Items"]
    assert second.kwargs["ExclusiveStartKey"][ATTR.SK] == first_page[-1][ATTR.SK]


@pytest.mark.parametrize("mode", MODES)
def test_history_of_a_parent_cycle_is_a_corrupt_payload_naming_the_thread(mode: str) -> None:
    w = Writer()
    configs = delta_chain(w, "t1", 4)
    items = w.items("t1")
    oldest = next(it for it in items if it.get(ATTR.CHECKPOINT_ID, {}).get("S") == cid_of(configs[0]))
    del oldest[ATTR.VALUES]["M"]["m"]  # no snapshot to stop at
    oldest[ATTR.PARENT_ID] = {"S": cid_of(configs[2])}  # 0 -> 2 -> 1 -> 0: a loop
    saver, script = scripted_saver(mode)
    script.when("query", *[descending(items)] * 3)
    with pytest.raises(CorruptPayloadError, match=r"thread 't1'.*loops back on itself"):
        _history(saver, configs[-1], ["m"])
    assert len(script.calls("query")) <= 2  # found by the walk, not by querying forever


@pytest.mark.parametrize("mode", MODES)
def test_history_with_a_missing_ancestor_refuses_rather_than_shortening(mode: str) -> None:
    """An interrupted prune left a hole: a shorter history would be a different state."""
    w = Writer()
    configs = delta_chain(w, "t1", 4)
    hole = cid_of(configs[1])
    items = [it for it in w.items("t1") if hole not in sk(it)]
    saver, script = scripted_saver(mode)
    script.when("query", *[descending(items)] * 3)
    with pytest.raises(MissingPayloadError, match=f"checkpoint '{hole}' of thread 't1'.*needs it to rebuild"):
        _history(saver, configs[-1], ["m"])
    # The hole is looked up directly (a skewed clock may have put it out of order) before refusing.
    last = script.calls("query")[-1].kwargs
    assert last["ExpressionAttributeValues"][":lo"]["S"].endswith(hole) and "Limit" not in last


@pytest.mark.parametrize("mode", MODES)
def test_history_of_no_channels_makes_no_request(mode: str) -> None:
    saver, script = scripted_saver(mode)
    assert _history(saver, {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}, []) == {}
    assert script.log == []
