"""Deletion is final (issue 12, finding 9).

The attacker here is time, not a tenant: a run still in flight when its
thread is deleted (by ``delete_thread``, the TTL reaper or the CLI) finishes
afterwards and writes checkpoints and pending writes on configs it read
before the delete. Those late writes must not make the thread readable
again (latest and by-id reads, ``list`` with and without a namespace, delta
history, ``get_state``, the threads index), while a new conversation on the
same thread id, even from a host whose clock is behind, works as usual.
"""

from __future__ import annotations

import operator
import random
import threading
import time
import uuid
from typing import Annotated, Any, TypedDict

import boto3
import pytest
from langgraph.graph import END, START, StateGraph

from langgraph.checkpoint.dynamodb import DynamoDBSaver, cli, clock, schema
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.harness import Harness, cfg, checkpoint_of, new_thread, scan_table

_UUID_EPOCH_100NS = 0x01B21DD213814000


def _uuid6_at(epoch: float) -> str:
    """A uuid6 checkpoint id stamped ``epoch`` (what a host with that clock makes).

    LangGraph's ``uuid6`` never goes backwards within a process, so a skewed
    host's ids are built here from its (earlier) time.
    """
    ts = int(epoch * 1e7) + _UUID_EPOCH_100NS
    n = ((ts >> 12) & 0xFFFFFFFFFFFF) << 80
    n |= (ts & 0x0FFF) << 64
    n |= (0x8000 | random.getrandbits(14)) << 48  # RFC 4122 variant
    n |= random.getrandbits(48)
    n |= 6 << 76  # version 6 (the stdlib's UUID() refuses version=6 on Python 3.11)
    return str(uuid.UUID(int=n))


def _cp(values: dict[str, Any], cid: str | None = None) -> Any:
    cp = checkpoint_of(values)
    if cid is not None:
        cp["id"] = cid
    return cp


def _close(h: Harness, *savers: Any) -> None:
    for s in savers:
        if h.is_async:
            h.loop.run(s.aclose())
        else:
            s.close()


def _checkpoint_ids(h: Harness, thread: str) -> list[tuple[str, str]]:
    """``(namespace, checkpoint id)`` of every checkpoint item of a thread, raw from the table."""
    out = []
    for it in scan_table(h.table_name):
        if it[ATTR.PK]["S"] == schema.partition_key(thread):
            ns, kind, cid, _ = schema.parse_sk(it[ATTR.SK]["S"])
            if kind == schema.CHECKPOINT_ITEM:
                out.append((ns, cid))
    return out


def _indexed(table: str, thread: str) -> bool:
    """Whether the thread has a head in the threads index (what the CLI's ``threads`` and the pruner read)."""
    client = boto3.client("dynamodb")
    kwargs: dict[str, Any] = {"TableName": table, "IndexName": schema.THREADS_INDEX_NAME}
    while True:
        resp = client.scan(**kwargs)
        if any(it.get(ATTR.THREAD_ID, {}).get("S") == thread for it in resp.get("Items", [])):
            return True
        if "LastEvaluatedKey" not in resp:
            return False
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def _assert_gone(h: Harness, reader: Any, thread: str, late: list[tuple[str, str]]) -> None:
    """Every read path says the thread does not exist, whatever late items the table holds."""
    assert h.call("get_tuple", cfg(thread), saver=reader) is None
    assert h.list(cfg(thread)) == []
    assert h.list({"configurable": {"thread_id": thread}}) == []  # all namespaces
    for ns, cid in late:
        assert h.call("get_tuple", cfg(thread, ns, cid), saver=reader) is None, cid
        assert h.list(cfg(thread, ns, cid)) == []
        hist = h.call(
            "get_delta_channel_history", config=cfg(thread, ns, cid), channels=["messages"], saver=reader
        )
        assert hist == {"messages": {"writes": []}}, hist
    assert not _indexed(h.table_name, thread)


# --------------------------------------------------------------- a real run


class Chat(TypedDict, total=False):
    messages: Annotated[list[str], operator.add]


def _paused_graph(gate: dict[str, threading.Event | bool], *, subgraph: bool = False) -> StateGraph:
    """``draft`` then ``send``; ``send`` waits on an event while the gate is armed.

    With ``subgraph``, a compiled subgraph (its own namespace, new at every
    run) runs after ``send``: the late run starts it after the delete.
    """

    def draft(state: Chat) -> dict[str, Any]:
        return {"messages": [f"draft {len(state.get('messages', []))}"]}

    def send(state: Chat) -> dict[str, Any]:
        if gate["armed"]:
            entered = gate["entered"]
            release = gate["release"]
            assert isinstance(entered, threading.Event) and isinstance(release, threading.Event)
            entered.set()
            assert release.wait(60), "the test never released the paused run"
        return {"messages": ["sent"]}

    g = StateGraph(Chat)
    g.add_node("draft", draft)
    g.add_node("send", send)
    g.add_edge(START, "draft")
    g.add_edge("draft", "send")
    if subgraph:
        sub = StateGraph(Chat)
        sub.add_node("log", lambda st: {"messages": ["logged"]})
        sub.add_edge(START, "log")
        sub.add_edge("log", END)
        g.add_node("audit", sub.compile())
        g.add_edge("send", "audit")
        g.add_edge("audit", END)
    else:
        g.add_edge("send", END)
    return g


@pytest.mark.parametrize("subgraph", [False, True], ids=["flat", "subgraph"])
@pytest.mark.parametrize("durability", ["sync", "async"])
def test_run_paused_across_a_delete_does_not_resurrect_the_thread(
    harness: Harness, durability: str, subgraph: bool
) -> None:
    """A run paused mid-way while another process deletes its thread, then resumed."""
    writer = harness.make_saver(track_threads=True)
    deleter = harness.make_saver(track_threads=True)
    reader = harness.saver  # never touched this thread: no cached knowledge
    gate: dict[str, Any] = {"armed": False, "entered": threading.Event(), "release": threading.Event()}
    graph = _paused_graph(gate, subgraph=subgraph).compile(checkpointer=writer)
    thread = new_thread()
    config = {"configurable": {"thread_id": thread}}
    harness.invoke(graph, {"messages": ["hello"]}, config, durability=durability)
    assert _indexed(harness.table_name, thread)
    before = set(_checkpoint_ids(harness, thread))

    gate["armed"] = True
    errors: list[BaseException] = []

    def second_turn() -> None:
        try:
            harness.invoke(graph, {"messages": ["more"]}, config, durability=durability)
        except BaseException as exc:  # surfaced in the test thread below
            errors.append(exc)

    runner = threading.Thread(target=second_turn)
    runner.start()
    assert gate["entered"].wait(60)
    harness.call("delete_thread", thread, saver=deleter)
    assert _checkpoint_ids(harness, thread) == [] or set(_checkpoint_ids(harness, thread)) - before
    gate["release"].set()
    runner.join(60)
    assert not runner.is_alive() and not errors, errors

    late = _checkpoint_ids(harness, thread)
    assert late, "the paused run wrote nothing after the delete: this test would prove nothing"
    if subgraph:
        assert any(ns for ns, _ in late), "the late run started no subgraph namespace"
    _assert_gone(harness, reader, thread, late)
    state = harness.get_state(_paused_graph(gate, subgraph=subgraph).compile(checkpointer=reader), config)
    assert state.values == {} and state.next == ()

    # A new conversation on the same thread id, from the process whose run
    # was late: it starts from nothing and is not hidden by the tombstone.
    gate["armed"] = False
    out = harness.invoke(graph, {"messages": ["new"]}, config, durability=durability)
    want = ["new", "draft 1", "sent", *(["new", "draft 1", "sent", "logged"] if subgraph else [])]
    assert out["messages"] == want
    state = harness.get_state(_paused_graph(gate, subgraph=subgraph).compile(checkpointer=reader), config)
    assert state.values["messages"] == want
    history = harness.list(cfg(thread))
    assert history and {t.config["configurable"]["checkpoint_id"] for t in history}.isdisjoint(late_ids(late))
    assert _indexed(harness.table_name, thread)
    _close(harness, writer, deleter)


def late_ids(late: list[tuple[str, str]]) -> set[str]:
    return {cid for _, cid in late}


# ----------------------------------------------------------- raw late writes


def test_late_put_and_put_writes_on_pre_delete_configs(harness: Harness) -> None:
    """Raw late writes (a caching writer, a blind one, an orphan), a new conversation, a second delete."""
    writer = harness.make_saver(track_threads=True)
    deleter = harness.make_saver()
    reader = harness.saver
    thread = new_thread()
    c1 = harness.call(
        "put", cfg(thread), _cp({"messages": ["a"]}), {"step": 0}, {"messages": "1"}, saver=writer
    )
    c2 = harness.call("put", c1, _cp({"messages": ["a", "b"]}), {"step": 1}, {"messages": "2"}, saver=writer)
    harness.call("put_writes", c2, [("messages", "c")], "task-1", saver=writer)
    harness.call("delete_thread", thread, saver=deleter)

    # The run in flight: a child of c2, writes on c2 and on the child.
    c3 = harness.call(
        "put", c2, _cp({"messages": ["a", "b", "c"]}), {"step": 2}, {"messages": "3"}, saver=writer
    )
    harness.call("put_writes", c2, [("messages", "late")], "task-2", saver=writer)
    harness.call("put_writes", c3, [("messages", "later")], "task-3", saver=writer)
    # Another process continuing from the late checkpoint (it reads its parent's
    # lineage), and one writing on a parent that no longer exists at all.
    blind = harness.make_saver(track_threads=True)
    c4 = harness.call("put", c3, _cp({"messages": ["d"]}), {"step": 3}, {"messages": "4"}, saver=blind)
    orphan = harness.call("put", c1, _cp({"messages": ["e"]}), {"step": 2}, {"messages": "5"}, saver=blind)
    late = _checkpoint_ids(harness, thread)
    assert {cid for _, cid in late} == {c["configurable"]["checkpoint_id"] for c in (c3, c4, orphan)}
    _assert_gone(harness, reader, thread, late)

    # A new conversation: get_tuple says nothing, then a put with no parent.
    n1 = harness.call(
        "put", cfg(thread), _cp({"messages": ["new"]}), {"step": -1}, {"messages": "1"}, saver=writer
    )
    n2 = harness.call(
        "put", n1, _cp({"messages": ["new", "x"]}), {"step": 0}, {"messages": "2"}, saver=writer
    )
    harness.call("put_writes", n2, [("messages", "y")], "task-n", saver=writer)
    latest = harness.call("get_tuple", cfg(thread), saver=reader)
    assert (
        latest is not None and latest.config == n2 and latest.pending_writes == [("task-n", "messages", "y")]
    )
    assert harness.call("get_tuple", n1, saver=reader).checkpoint["channel_values"] == {"messages": ["new"]}
    assert [t.config for t in harness.list(cfg(thread))] == [n2, n1]
    assert [t.config for t in harness.list({"configurable": {"thread_id": thread}})] == [n2, n1]
    assert _indexed(harness.table_name, thread)

    # Delete again: the new lineage is final too, the old tombstone kept.
    harness.call("delete_thread", thread, saver=deleter)
    harness.call("put", n2, _cp({"messages": ["late again"]}), {"step": 1}, {"messages": "3"}, saver=writer)
    harness.call("put", c3, _cp({"messages": ["very late"]}), {"step": 4}, {"messages": "6"}, saver=writer)
    _assert_gone(harness, reader, thread, _checkpoint_ids(harness, thread))
    n3 = harness.call("put", cfg(thread), _cp({"messages": ["third"]}), {}, {"messages": "1"}, saver=blind)
    assert harness.call("get_tuple", cfg(thread), saver=reader).config == n3

    # The garbage goes with the next prune; the live conversation stays.
    harness.call("prune", [thread], saver=deleter)
    assert _checkpoint_ids(harness, thread) == [("", n3["configurable"]["checkpoint_id"])]
    assert harness.call("get_tuple", cfg(thread), saver=reader).config == n3
    _close(harness, writer, deleter, blind)


def test_new_conversation_from_a_host_whose_clock_is_behind(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its ids sort below the late writes' ids: lineage, not time, decides what is dead."""
    writer = harness.make_saver(track_threads=True)
    thread = new_thread()
    c1 = harness.call("put", cfg(thread), _cp({"messages": ["a"]}), {}, {"messages": "1"}, saver=writer)
    harness.call("delete_thread", thread, saver=harness.make_saver())
    late = harness.call("put", c1, _cp({"messages": ["late"]}), {}, {"messages": "2"}, saver=writer)

    behind = time.time() - 3600
    monkeypatch.setattr(clock, "now", lambda: time.time() - 3600)  # the library's clock on that host
    skewed = harness.make_saver(track_threads=True)
    n1 = harness.call(
        "put", cfg(thread), _cp({"messages": ["new"]}, _uuid6_at(behind)), {}, {"messages": "1"}, saver=skewed
    )
    n2 = harness.call(
        "put", n1, _cp({"messages": ["new", "2"]}, _uuid6_at(behind + 1)), {}, {"messages": "2"}, saver=skewed
    )
    assert n2["configurable"]["checkpoint_id"] < late["configurable"]["checkpoint_id"]
    monkeypatch.undo()

    reader = harness.saver
    got = harness.call("get_tuple", cfg(thread), saver=reader)
    assert got is not None and got.config == n2
    assert [t.config for t in harness.list(cfg(thread))] == [n2, n1]
    assert harness.call("get_tuple", late, saver=reader) is None
    _close(harness, writer, skewed)


# ----------------------------------------------------------- reaper and CLI


def test_reaped_thread_stays_reaped(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """The TTL reaper deletes an idle thread while its run is still in flight."""
    offset = [0.0]
    monkeypatch.setattr(clock, "now", lambda: time.time() + offset[0])
    writer = harness.make_saver(ttl=60)
    thread = new_thread()
    c1 = harness.call("put", cfg(thread), _cp({"messages": ["a"]}), {}, {"messages": "1"}, saver=writer)
    c2 = harness.call("put", c1, _cp({"messages": ["a", "b"]}), {}, {"messages": "2"}, saver=writer)
    offset[0] = 600  # idle past its TTL
    reaper = harness.make_saver(ttl=60)
    report = harness.call("purge_expired", saver=reaper)
    assert report.threads_deleted == 1
    assert _checkpoint_ids(harness, thread) == []

    late = harness.call("put", c2, _cp({"messages": ["late"]}), {}, {"messages": "3"}, saver=writer)
    harness.call("put_writes", late, [("messages", "w")], "task", saver=writer)
    reader = harness.make_saver(ttl=60)
    assert harness.call("get_tuple", cfg(thread), saver=reader) is None
    assert harness.call("get_tuple", late, saver=reader) is None
    assert not _indexed(harness.table_name, thread)

    n1 = harness.call("put", cfg(thread), _cp({"messages": ["new"]}), {}, {"messages": "1"}, saver=writer)
    assert harness.call("get_tuple", cfg(thread), saver=reader).config == n1
    assert _indexed(harness.table_name, thread)
    _close(harness, writer, reaper, reader)


def test_cli_delete_is_final(moto_endpoint: str, names: dict[str, str]) -> None:
    writer = DynamoDBSaver(**names, track_threads=True)
    writer.setup()
    thread = new_thread()
    c1 = writer.put(cfg(thread), _cp({"messages": ["a"]}), {}, {"messages": "1"})
    argv = ["--table", names["table_name"], "--bucket", names["bucket_name"]]
    assert cli.main([*argv, "delete", thread, "--yes"]) == 0
    late = writer.put(c1, _cp({"messages": ["late"]}), {}, {"messages": "2"})
    writer.put_writes(late, [("messages", "w")], "task")
    reader = DynamoDBSaver(**names)
    assert reader.get_tuple(cfg(thread)) is None and reader.get_tuple(late) is None
    assert list(reader.list({"configurable": {"thread_id": thread}})) == []
    import io
    import json

    out = io.StringIO()
    assert cli.main([*argv, "threads", "--source", "index", "--json"], stdout=out) == 0
    assert thread not in {t["thread_id"] for t in json.loads(out.getvalue())["threads"]}
    n1 = writer.put(cfg(thread), _cp({"messages": ["new"]}), {}, {"messages": "1"})
    assert reader.get_tuple(cfg(thread)).config == n1  # type: ignore[union-attr]


def test_copy_carries_no_deleted_lineage_and_a_recopy_is_alive(harness: Harness) -> None:
    """A copy skips late writes on deleted lineages; a target deleted then copied into again is readable."""
    writer = harness.make_saver()
    src, dst = new_thread(), new_thread()
    c1 = harness.call("put", cfg(src), _cp({"messages": ["a"]}), {}, {"messages": "1"}, saver=writer)
    harness.call("delete_thread", src, saver=harness.saver)
    harness.call("put", c1, _cp({"messages": ["late"]}), {}, {"messages": "2"}, saver=writer)  # garbage
    n1 = harness.call("put", cfg(src), _cp({"messages": ["new"]}), {}, {"messages": "1"}, saver=writer)
    harness.call("copy_thread", src, dst)
    copied = harness.list({"configurable": {"thread_id": dst}})
    assert [t.config["configurable"]["checkpoint_id"] for t in copied] == [
        n1["configurable"]["checkpoint_id"]
    ]
    assert len(_checkpoint_ids(harness, dst)) == 1  # the garbage was not copied, hidden or not
    # Same checkpoint ids again after a delete of the copy: not hidden by its tombstone.
    harness.call("delete_thread", dst)
    harness.call("copy_thread", src, dst)
    got = harness.call("get_tuple", cfg(dst))
    assert (
        got is not None and got.config["configurable"]["checkpoint_id"] == n1["configurable"]["checkpoint_id"]
    )
    assert harness.call("get_tuple", cfg(dst, "", n1["configurable"]["checkpoint_id"])) is not None
    _close(harness, writer)


def test_late_subgraph_start_in_a_namespace_the_delete_left_a_tombstone_in(harness: Harness) -> None:
    """A late run starts a subgraph in a namespace that had its own, unrelated lineage.

    The late subgraph's first checkpoint inherits the root graph's (deleted)
    root through ``checkpoint_map``, not the namespace's own: the latest read
    of that namespace, which sees only that namespace's tombstone, must still
    find the root dead. (Found by the differential's late subgraph rule.)
    """
    writer = harness.make_saver()
    deleter = harness.make_saver()
    reader = harness.saver
    thread = new_thread()
    root = harness.call("put", cfg(thread), _cp({"a": 1}), {"step": 0}, {"a": "1"}, saver=writer)
    # The namespace's own lineage, started without a checkpoint_map.
    harness.call("put", cfg(thread, "child:1"), _cp({"b": 1}), {"step": 0}, {"b": "1"}, saver=writer)
    harness.call("delete_thread", thread, saver=deleter)

    late_cfg = cfg(thread, "child:1")
    late_cfg["configurable"]["checkpoint_map"] = {"": root["configurable"]["checkpoint_id"]}
    late = harness.call("put", late_cfg, _cp({"b": 2}), {"step": 1}, {"b": "2"}, saver=writer)
    assert harness.call("get_tuple", cfg(thread, "child:1"), saver=reader) is None
    assert list(harness.list(cfg(thread, "child:1"))) == []
    assert harness.call("get_tuple", late, saver=reader) is None
    _close(harness, writer, deleter)


@pytest.mark.parametrize("deleted", [True, False], ids=["deleted", "alive"])
def test_subgraph_started_before_its_enclosing_checkpoint_is_written(harness: Harness, deleted: bool) -> None:
    """``durability="async"``: a subgraph's first put can run before the put of the enclosing
    checkpoint its ``checkpoint_map`` names. It belongs to the lineage the run was on (dead
    after a delete), not to a new one that would outlive the delete."""
    from langgraph.checkpoint.base.id import uuid6

    writer = harness.make_saver()
    deleter = harness.make_saver()
    reader = harness.saver
    thread = new_thread()
    harness.call("put", cfg(thread), _cp({"a": 1}), {"step": 0}, {"a": "1"}, saver=writer)
    if deleted:
        harness.call("delete_thread", thread, saver=deleter)
    late_cfg = cfg(thread, "audit:1")
    late_cfg["configurable"]["checkpoint_map"] = {"": str(uuid6(clock_seq=-1)), "audit:1": ""}
    late = harness.call("put", late_cfg, _cp({"b": 2}), {"step": 1}, {"b": "2"}, saver=writer)
    if deleted:
        assert harness.call("get_tuple", late, saver=reader) is None
        assert harness.list({"configurable": {"thread_id": thread}}) == []
    else:
        assert harness.call("get_tuple", late, saver=reader) is not None
        assert len(harness.list({"configurable": {"thread_id": thread}})) == 2
    _close(harness, writer, deleter)


def test_a_new_conversation_after_a_delete_keeps_its_early_subgraph(harness: Harness) -> None:
    """The same race in a conversation started after the delete: its subgraph is alive."""
    from langgraph.checkpoint.base.id import uuid6

    writer = harness.make_saver()
    thread = new_thread()
    harness.call("put", cfg(thread), _cp({"a": 1}), {"step": 0}, {"a": "1"}, saver=writer)
    harness.call("delete_thread", thread, saver=writer)
    harness.call("put", cfg(thread), _cp({"a": 2}), {"step": 0}, {"a": "1"}, saver=writer)
    late_cfg = cfg(thread, "audit:2")
    late_cfg["configurable"]["checkpoint_map"] = {"": str(uuid6(clock_seq=-1)), "audit:2": ""}
    late = harness.call("put", late_cfg, _cp({"b": 3}), {"step": 1}, {"b": "3"}, saver=writer)
    assert harness.call("get_tuple", late, saver=harness.saver) is not None
    _close(harness, writer)
