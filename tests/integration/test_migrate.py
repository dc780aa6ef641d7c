"""``migrate``: threads of LangGraph's own savers (in-memory, SQLite) moved into a ``DynamoDBSaver``.

Real graphs (an interrupt at the root and one inside a subgraph, a failed
node with its error write, ``Send`` fan-out, pydantic values) run on the
source; after the migration ``get_state_history``, every namespace's
checkpoints and pending writes read the same on both sides, a resume on
our saver ends exactly as the same resume on the source, a re-run is a
no-op, a dry run writes nothing and a migration killed half way completes
when run again.
"""

from __future__ import annotations

import operator
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import boto3
import pydantic
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt

from langgraph.checkpoint.dynamodb import DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb.tools.migrate import (
    MigrationConflictError,
    MigrationError,
    migrate_thread,
    migrate_threads,
)
from langgraph.checkpoint.dynamodb.tools.transfer import TargetExistsError, import_marker

pytestmark = pytest.mark.usefixtures("moto_endpoint")


# ------------------------------------------------------------------ a graph


class Doc(pydantic.BaseModel):
    title: str
    tags: list[str]


class State(TypedDict, total=False):
    request: str
    answer: str
    doc: Doc
    done: Annotated[list[int], operator.add]
    notes: Annotated[list[str], operator.add]
    verdict: str


#: Thread ids whose ``flaky`` node fails once (an error write stays pending).
FAIL_ONCE: set[str] = set()


def _ask(state: State) -> dict[str, Any]:
    return {"answer": interrupt({"question": "Which color?"})}


def _doc(state: State) -> dict[str, Any]:
    return {"doc": Doc(title=state["request"], tags=[state["answer"], "x"])}


def _flaky(state: State, config: RunnableConfig) -> dict[str, Any]:
    thread = config["configurable"]["thread_id"]
    if thread in FAIL_ONCE:
        FAIL_ONCE.discard(thread)
        raise RuntimeError("flaky failed once")
    return {"notes": ["flaky ok"]}


def _fan_out(state: State) -> list[Send]:
    return [Send("work", {"i": i}) for i in range(3)]


def _work(arg: dict[str, int]) -> dict[str, Any]:
    return {"done": [arg["i"]], "notes": [f"work {arg['i']}"]}


def _review() -> Any:
    """A subgraph (its own namespace) that asks for approval with an interrupt."""

    class Sub(TypedDict, total=False):
        done: list[int]
        verdict: str

    def approve(s: Sub) -> dict[str, Any]:
        ok = interrupt({"approve": sorted(s.get("done", []))})
        return {"verdict": f"{ok}: {len(s.get('done', []))} parts"}

    g = StateGraph(Sub)
    g.add_node("approve", approve)
    g.add_edge(START, "approve")
    g.add_edge("approve", END)
    return g.compile()


def build_graph(saver: Any) -> Any:
    g = StateGraph(State)
    g.add_node("ask", _ask)
    g.add_node("doc", _doc)
    g.add_node("flaky", _flaky)
    g.add_node("work", _work)
    g.add_node("review", _review())
    g.add_edge(START, "ask")
    g.add_edge("ask", "doc")
    g.add_edge("doc", "flaky")
    g.add_conditional_edges("flaky", _fan_out, ["work"])
    g.add_edge("work", "review")
    g.add_edge("review", END)
    return g.compile(checkpointer=saver)


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def run_to(saver: Any, thread: str, stage: str) -> None:
    """Run a thread up to ``stage``: ``ask`` (root interrupt), ``failed`` (an error pending),
    ``review`` (the subgraph's interrupt) or ``done``."""
    graph = build_graph(saver)
    graph.invoke({"request": "report"}, cfg(thread), durability="sync")
    if stage == "ask":
        return
    FAIL_ONCE.add(thread)
    with pytest.raises(RuntimeError, match="flaky failed once"):
        graph.invoke(Command(resume="blue"), cfg(thread), durability="sync")
    if stage == "failed":
        return
    graph.invoke(None, cfg(thread), durability="sync")
    if stage == "review":
        return
    graph.invoke(Command(resume="yes"), cfg(thread), durability="sync")
    assert graph.get_state(cfg(thread)).values["verdict"] == "yes: 3 parts"


STAGES = ("ask", "failed", "review", "done")


# ------------------------------------------------------------------ helpers


def fresh(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def target(moto_endpoint: str, names: dict[str, str]) -> Iterator[DynamoDBSaver]:
    saver = DynamoDBSaver(**names)
    saver.setup()
    yield saver
    saver.close()


def make_source(kind: str, folder: Path, stages: tuple[str, ...] = STAGES) -> Any:
    """A source saver of ``kind`` with one thread per stage; ``.threads`` maps stage -> thread id."""
    if kind == "memory":
        saver: Any = InMemorySaver()
    else:
        saver = SqliteSaver(sqlite3.connect(folder / f"{uuid.uuid4().hex}.sqlite", check_same_thread=False))
    saver.threads = {stage: fresh(stage) for stage in stages}
    for stage, thread in saver.threads.items():
        run_to(saver, thread, stage)
    return saver


@pytest.fixture(scope="module", params=["memory", "sqlite"])
def source(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One thread per stage, shared by the tests that only read the source."""
    saver = make_source(request.param, tmp_path_factory.mktemp("src"))
    yield saver
    if isinstance(saver, SqliteSaver):
        saver.conn.close()


@pytest.fixture(params=["memory", "sqlite"])
def kind(request: pytest.FixtureRequest) -> str:
    """For tests that change the source (a resume, a fork): they build their own."""
    return str(request.param)


def _task(t: Any) -> tuple[Any, ...]:
    return (t.id, t.name, t.path, repr(t.error), t.interrupts, t.result)


def history(saver: Any, thread: str) -> list[tuple[Any, ...]]:
    """``get_state_history`` as a user compares it: values, next, metadata, ids, parents, tasks."""
    graph = build_graph(saver)
    out = []
    for snap in graph.get_state_history(cfg(thread)):
        out.append(
            (
                snap.values,
                snap.next,
                snap.metadata,
                snap.config["configurable"]["checkpoint_id"],
                (snap.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
                snap.created_at,
                [_task(t) for t in snap.tasks],
                snap.interrupts,
            )
        )
    return out


def namespaces(saver: Any, thread: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every namespace's checkpoints, newest first: ids, parents, metadata, values, versions, writes."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for t in saver.list(cfg(thread)):
        conf = t.config["configurable"]
        out.setdefault(conf["checkpoint_ns"], []).append(
            (
                conf["checkpoint_id"],
                (t.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
                t.metadata,
                t.checkpoint["channel_values"],
                t.checkpoint["channel_versions"],
                t.checkpoint["versions_seen"],
                [
                    (w[0], w[1], repr(w[2]) if isinstance(w[2], Exception) else w[2])
                    for w in t.pending_writes or []
                ],
            )
        )
    for rows in out.values():
        rows.sort(key=lambda r: r[0], reverse=True)
    return out


def latest_writes(saver: Any, thread: str, ns: str = "") -> list[tuple[Any, ...]]:
    t = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ns}})
    return [(w[0], w[1], repr(w[2]) if isinstance(w[2], Exception) else w[2]) for w in t.pending_writes]


def item_count(table: str) -> int:
    return int(boto3.client("dynamodb").scan(TableName=table, Select="COUNT")["Count"])


def assert_same(src: Any, dst: Any, thread: str, dst_thread: str | None = None) -> None:
    other = dst_thread or thread
    assert history(dst, other) == history(src, thread)
    assert namespaces(dst, other) == namespaces(src, thread)
    for ns in namespaces(src, thread):
        assert latest_writes(dst, other, ns) == latest_writes(src, thread, ns)


# ------------------------------------------------------------------ tests


def test_every_thread_reads_the_same_after_migration(source: Any, target: DynamoDBSaver) -> None:
    """(a) history, (b) pending writes, (d) subgraph namespaces: all threads, one call."""
    summary = migrate_threads(source, target)
    threads = source.threads
    assert summary["threads"] == len(threads) and summary["migrated"] == len(threads)
    assert summary["verified"] == len(threads) and not summary["refused"] and summary["skipped"] == 0
    assert {r["thread_id"] for r in summary["results"]} == set(threads.values())
    assert summary["checkpoints"] == sum(len(list(source.list(cfg(t)))) for t in threads.values())
    for thread in threads.values():
        assert_same(source, target, thread)
        assert import_marker(target, thread) is None
    # The writes that matter for a resume are there: the interrupt, the error, the subgraph's.
    assert any(w[1] == "__interrupt__" for w in latest_writes(target, threads["ask"]))
    assert any(w[1] == "__error__" for w in latest_writes(target, threads["failed"]))
    subgraph = [ns for ns in namespaces(target, threads["review"]) if ns]
    assert subgraph and all(ns.startswith("review:") for ns in subgraph)
    assert any(w[1] == "__interrupt__" for w in latest_writes(target, threads["review"], subgraph[0]))
    state = build_graph(target).get_state(cfg(threads["review"]), subgraphs=True)
    assert (
        state.tasks[0].state.values
        == build_graph(source).get_state(cfg(threads["review"]), subgraphs=True).tasks[0].state.values
    )


def test_task_paths_and_order_are_the_sources(source: Any, target: DynamoDBSaver) -> None:
    """Fan-out writes land under the source's task paths, so their order is the source's."""
    thread = source.threads["done"]
    migrate_thread(source, target, thread)
    paths = boto3.client("dynamodb").scan(TableName=target.table_name)["Items"]
    stored = {it[schema.ATTR.TASK_PATH]["S"] for it in paths if schema.ATTR.TASK_PATH in it}
    assert any("__pregel_push" in p for p in stored), stored  # Send tasks' paths, not ""
    for t in source.list(cfg(thread)):
        mine = target.get_tuple(t.config)
        assert [w[:2] for w in mine.pending_writes] == [w[:2] for w in t.pending_writes]


@pytest.mark.parametrize("stage", ["ask", "review"])
def test_resume_on_our_saver_ends_as_on_the_source(
    kind: str, tmp_path: Path, target: DynamoDBSaver, stage: str
) -> None:
    """(c) an interrupted thread (at the root, or inside the subgraph) resumed after the move."""
    source = make_source(kind, tmp_path, (stage,))
    thread = source.threads[stage]
    migrate_thread(source, target, thread)
    answer = "blue" if stage == "ask" else "yes"
    results = []
    for saver in (source, target):
        graph = build_graph(saver)
        out = graph.invoke(Command(resume=answer), cfg(thread), durability="sync")
        if stage == "ask":
            out = graph.invoke(Command(resume="yes"), cfg(thread), durability="sync")
        snap = graph.get_state(cfg(thread))
        steps = [
            (s.values, s.next, s.metadata["step"], s.metadata["source"])
            for s in graph.get_state_history(cfg(thread))
        ]
        results.append((out, snap.values, snap.next, steps))
    assert results[1] == results[0]
    assert results[0][1]["verdict"] == "yes: 3 parts"


def test_time_travel_from_an_old_checkpoint(kind: str, tmp_path: Path, target: DynamoDBSaver) -> None:
    """Replaying from a migrated mid-history checkpoint forks exactly as it does on the source."""
    source = make_source(kind, tmp_path, ("done",))
    thread = source.threads["done"]
    migrate_thread(source, target, thread)
    old = next(s for s in build_graph(source).get_state_history(cfg(thread)) if s.next == ("flaky",))
    outs = []
    for saver in (source, target):
        graph = build_graph(saver)
        graph.invoke(None, old.config, durability="sync")
        outs.append(graph.invoke(Command(resume="yes"), cfg(thread), durability="sync"))
    assert outs[0] == outs[1] and outs[0]["verdict"] == "yes: 3 parts"


def test_rerun_is_a_no_op(source: Any, target: DynamoDBSaver) -> None:
    """(e) a second run compares, finds every thread complete, writes nothing."""
    some = [source.threads["ask"], source.threads["review"]]
    first = migrate_threads(source, target, some)
    before = item_count(target.table_name)
    again = migrate_threads(source, target, some)
    n = len(some)
    assert (again["skipped"], again["migrated"], again["resumed"]) == (n, 0, 0)
    assert (again["checkpoints"], again["writes"], again["verified"]) == (0, 0, n)
    assert item_count(target.table_name) == before
    assert first["checkpoints"] > 0


def test_dry_run_writes_nothing(source: Any, target: DynamoDBSaver) -> None:
    """(f) counts what it would write; the table stays empty."""
    before = item_count(target.table_name)
    summary = migrate_threads(source, target, dry_run=True)
    assert summary["dry_run"] and summary["migrated"] == len(source.threads)
    assert summary["checkpoints"] == sum(len(list(source.list(cfg(t)))) for t in source.threads.values())
    assert summary["writes"] > 0 and summary["verified"] == 0
    assert {r["status"] for r in summary["results"]} == {"would_migrate"}
    assert item_count(target.table_name) == before


@pytest.mark.parametrize("crash", [RuntimeError, KeyboardInterrupt])
def test_killed_migration_completes_on_rerun(
    source: Any, target: DynamoDBSaver, monkeypatch: pytest.MonkeyPatch, crash: type[BaseException]
) -> None:
    """(g) a failure (or an interrupt, as a kill leaves it) after 4 puts: marked partial, then completed."""
    thread, other = source.threads["done"], source.threads["ask"]
    real_put = target.put
    calls = {"n": 0}

    def dying_put(*args: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] > 4:
            raise crash("killed")
        return real_put(*args, **kw)

    monkeypatch.setattr(target, "put", dying_put)
    with pytest.raises(MigrationError if crash is RuntimeError else crash, match=r"killed|partial"):
        migrate_threads(source, target, [thread])
    assert import_marker(target, thread) is not None  # partial, and says so
    assert len(list(target.list(cfg(thread)))) == 4
    assert migrate_thread(source, target, thread, dry_run=True)["status"] == "would_resume"
    monkeypatch.setattr(target, "put", real_put)
    summary = migrate_threads(source, target, [thread, other])
    statuses = {r["thread_id"]: r["status"] for r in summary["results"]}
    assert statuses[thread] == "resumed"
    assert statuses[other] == "migrated" and summary["verified"] == 2
    total = len(list(source.list(cfg(thread))))
    assert next(r for r in summary["results"] if r["thread_id"] == thread)["written_checkpoints"] == total - 4
    assert import_marker(target, thread) is None
    assert_same(source, target, thread)
    assert migrate_threads(source, target, [thread, other])["skipped"] == 2


def test_target_with_other_checkpoints_is_refused(source: Any, target: DynamoDBSaver) -> None:
    """A target thread with a history of its own: refused by name, nothing written, others go on."""
    taken, ok = source.threads["ask"], source.threads["done"]
    run_to(target, taken, "ask")  # same thread id, different checkpoints
    before = item_count(target.table_name)
    with pytest.raises(MigrationConflictError, match=f"target thread '{taken}'.*already has different"):
        migrate_thread(source, target, taken)
    assert item_count(target.table_name) == before
    summary = migrate_threads(source, target, [taken, ok])
    assert [r["thread_id"] for r in summary["refused"]] == [taken]
    assert summary["migrated"] == 1 and summary["verified"] == 1
    assert_same(source, target, ok)


def test_under_a_new_thread_id(source: Any, target: DynamoDBSaver) -> None:
    thread = source.threads["review"]
    result = migrate_thread(source, target, thread, target_thread_id="copy-" + thread)
    assert result["status"] == "migrated" and result["verified"] and result["namespaces"] == 2
    assert namespaces(target, "copy-" + thread) == namespaces(source, thread)
    assert list(target.list(cfg(thread))) == []


def test_a_deleted_target_thread_and_an_empty_source(target: DynamoDBSaver) -> None:
    source = InMemorySaver()
    run_to(source, "t-del", "ask")
    migrate_thread(source, target, "t-del")
    target.delete_thread("t-del")  # its tombstones would hide the same checkpoints written again
    with pytest.raises(TargetExistsError, match="was deleted"):
        migrate_thread(source, target, "t-del")
    with pytest.raises(MigrationError, match="no checkpoints"):
        migrate_thread(source, target, "t-none")


def test_new_source_checkpoints_are_added_on_rerun(kind: str, tmp_path: Path, target: DynamoDBSaver) -> None:
    """The source went on after a complete migration: a re-run adds only what is new, and verifies."""
    source = make_source(kind, tmp_path, ("ask",))
    thread = source.threads["ask"]
    first = migrate_thread(source, target, thread)
    build_graph(source).invoke(Command(resume="blue"), cfg(thread), durability="sync")  # on to the review
    again = migrate_thread(source, target, thread)
    assert (first["status"], again["status"], again["verified"]) == ("migrated", "resumed", True)
    assert 0 < again["written_checkpoints"] < again["checkpoints"]
    assert_same(source, target, thread)
    # ... but once the target went on by itself, the histories differ: refused, nothing written.
    build_graph(target).invoke(Command(resume="yes"), cfg(thread), durability="sync")
    with pytest.raises(MigrationConflictError, match="is not in the source"):
        migrate_thread(source, target, thread)
