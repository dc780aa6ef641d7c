"""The latest-checkpoint Query reads what the latest checkpoint needs (``read.latest_limit``)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._operations import read
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.script import Script, call, scripted_saver

MODES = ["sync", "async"]
CFG: dict[str, Any] = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}


def _checkpoint(values: dict[str, Any]) -> Any:
    cp = empty_checkpoint()
    cp["id"] = str(uuid6(clock_seq=-1))
    cp["channel_values"] = values
    cp["channel_versions"] = {k: "1" for k in values}
    return cp


def _writes_items(script: Script) -> list[dict[str, Any]]:
    """The writes items the scripted put_writes made, newest task last."""
    puts = [c.kwargs["Item"] for c in script.calls("put_item")]
    return [it for it in puts if it[ATTR.KIND]["S"] == schema.WRITES_ITEM]


def _checkpoint_items(script: Script) -> list[dict[str, Any]]:
    puts = [c.kwargs["Item"] for c in script.calls("put_item")]
    return [it for it in puts if it[ATTR.KIND]["S"] == schema.CHECKPOINT_ITEM]


def _limits(script: Script) -> list[int]:
    return [c.kwargs.get("Limit") for c in script.calls("query")]


@pytest.mark.parametrize("mode", MODES)
def test_a_saver_that_knows_nothing_reads_the_default_page_then_what_was_needed(mode: str) -> None:
    writer, wscript = scripted_saver(mode)
    call(writer, "put", CFG, _checkpoint({"a": "x"}), {"step": 1}, {"a": "1"})
    (item,) = [c.kwargs["Item"] for c in wscript.calls("put_item")]
    reader, script = scripted_saver(mode)  # another process: knows nothing of t1
    script.when("query", {"Items": [item]}, {"Items": [item]})
    assert call(reader, "get_tuple", CFG) is not None
    assert call(reader, "get_tuple", CFG) is not None
    assert _limits(script) == [read.LATEST_PAGE, 1]


@pytest.mark.parametrize("mode", MODES)
def test_the_page_counts_the_writes_this_saver_put_on_the_latest(mode: str) -> None:
    saver, script = scripted_saver(mode)
    stored = call(saver, "put", CFG, _checkpoint({"a": "x"}), {"step": 1}, {"a": "1"})
    call(saver, "put_writes", stored, [("a", 1)], "task-1")
    call(saver, "put_writes", stored, [("a", 2)], "task-2")
    call(saver, "put_writes", stored, [("b", 3)], "task-1")  # same task: the same item
    (item,) = _checkpoint_items(script)
    writes = _writes_items(script)[:2]
    script.reset()
    script.when("query", {"Items": [*reversed(writes), item]})
    tup = call(saver, "get_tuple", CFG)
    assert _limits(script) == [3]  # two writes items and the checkpoint: one page
    assert sorted(w[0] for w in tup.pending_writes) == ["task-1", "task-2"]
    script.assert_done()


@pytest.mark.parametrize("mode", MODES)
def test_a_page_that_falls_short_reads_on_and_answers_the_same(mode: str) -> None:
    """Writes another process added since: a second page (one more round trip), same tuple."""
    saver, script = scripted_saver(mode)
    stored = call(saver, "put", CFG, _checkpoint({"a": "x"}), {"step": 1}, {"a": "1"})
    (item,) = _checkpoint_items(script)
    other, oscript = scripted_saver(mode)
    call(other, "put_writes", stored, [("a", 1)], "task-9")
    (w,) = _writes_items(oscript)
    script.reset()
    last = {ATTR.PK: w[ATTR.PK], ATTR.SK: w[ATTR.SK]}
    script.when("query", {"Items": [w], "LastEvaluatedKey": last}, {"Items": [item]})
    tup = call(saver, "get_tuple", CFG)
    assert _limits(script) == [1, read.LATEST_PAGE_MORE]
    assert [pw[0] for pw in tup.pending_writes] == ["task-9"]
    # Learned: the next read takes both in one page.
    script.reset()
    script.when("query", {"Items": [w, item]})
    call(saver, "get_tuple", CFG)
    assert _limits(script) == [2]


@pytest.mark.parametrize("mode", MODES)
def test_a_latest_that_references_held_values_reads_the_full_page(mode: str) -> None:
    saver, script = scripted_saver(mode)
    # Incompressible, above inline_threshold: held by the checkpoint that introduced it.
    big = random.Random(7).randbytes(6000).hex()
    first = call(saver, "put", CFG, _checkpoint({"big": big}), {"step": 1}, {"big": "1"})
    cp = _checkpoint({"big": big, "small": 1})
    cp["channel_versions"] = {"big": "1", "small": "1"}
    call(saver, "put", first, cp, {"step": 2}, {"small": "1"})
    items = [c.kwargs["Item"] for c in script.calls("put_item")]
    assert items[1][ATTR.VALUES]["M"]["big"]["M"]["l"]["S"] == "c"
    script.reset()
    script.when("query", {"Items": list(reversed(items))})
    tup = call(saver, "get_tuple", CFG)
    assert _limits(script) == [read.LATEST_PAGE]
    assert script.methods() == ["dynamodb.query"]  # the holder came on the same page
    assert tup.checkpoint["channel_values"]["big"] == big
