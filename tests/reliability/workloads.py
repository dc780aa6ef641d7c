"""Workloads of the reliability tier: graphs, scenarios, execution tracking.

Graphs come from ``tests/support/graphs.py`` (``parallel_graph``,
``chat_graph(delta=True, subgraph=True)``, ``requirement_graph``) plus
``fanout_graph``: several rounds of parallel workers writing large,
poorly-compressible values, so that blob items and S3 objects are written on
every step (the shared graphs keep their values small).

Executions are counted by task id through a LangChain callback (every node
run, subgraph nodes included, emits ``on_chain_start`` tagged
``graph:step:N`` with ``langgraph_checkpoint_ns`` ending in
``node:task_id``), and successful ``put_writes`` calls are recorded by
wrapping the saver, so a test can check LangGraph's contract precisely: a
task whose writes were saved never starts again.
"""

from __future__ import annotations

import operator
import os
import random
import string
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send
from typing_extensions import TypedDict

from tests.support.graphs import FAIL, chat_graph, parallel_graph, requirement_graph

SOAK = os.environ.get("SOAK", "") not in ("", "0", "false", "no")


def cases(ci: int, soak: int) -> int:
    """Number of seeded cases: small in CI, large under ``SOAK=1``."""
    return soak if SOAK else ci


_SESSIONS: dict[str, Any] = {}


def session_kw(is_async: bool = False) -> dict[str, Any]:
    """Saver kwargs sharing one boto3 / aiobotocore session across the tier's many savers.

    A saver built without a session parses the service models again (about
    0.15 s each); the tier builds hundreds. Clients made from one session
    still have their own event hooks, so fault injection stays per saver.
    Created after the test environment (endpoint, credentials) is set.
    """
    if is_async:
        if "aio" not in _SESSIONS:
            from aiobotocore.session import get_session

            _SESSIONS["aio"] = get_session()
        return {"session": _SESSIONS["aio"]}
    if "sync" not in _SESSIONS:
        import boto3

        _SESSIONS["sync"] = boto3.session.Session()
    return {"boto3_session": _SESSIONS["sync"]}


# ------------------------------------------------------------------ graphs


class FanState(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    blob: str
    round: int


def _text(seed: str, size: int) -> str:
    """Deterministic, poorly compressible text (zlib keeps ~75% of it)."""
    rng = random.Random(seed)
    return "".join(rng.choices(string.ascii_letters + string.digits, k=size))


def fanout_graph(
    *, width: int = 3, rounds: int = 3, size: int = 1500, delay: float = 0.0, barrier: bool = True
) -> StateGraph:
    """``plan`` -> ``width`` parallel workers -> ``merge``, ``rounds`` times.

    Workers append large items; ``merge`` rewrites a large ``blob``. With
    ``delay`` each node sleeps a little (crash tests spread the run in time).
    ``barrier``: the workers join ``merge`` through one edge from all of them
    (a ``NamedBarrierValue`` channel); otherwise through one edge each (merge
    still runs once, in the next superstep). With ``durability="async"``
    only the latter is stored faithfully: see
    ``test_concurrency.test_async_durability_stores_live_barrier_state``.
    """
    import time

    def plan(state: FanState) -> dict[str, Any]:
        if delay:
            time.sleep(delay)
        return {"round": state.get("round", 0) + 1}

    def worker(i: int) -> Callable[[FanState], dict[str, Any]]:
        def run(state: FanState) -> dict[str, Any]:
            if delay:
                time.sleep(delay * random.random())
            r = state.get("round", 0)
            return {"items": [f"w{i}:r{r}:" + _text(f"{i}/{r}", size)]}

        return run

    def merge(state: FanState) -> dict[str, Any]:
        if delay:
            time.sleep(delay)
        r = state.get("round", 0)
        return {"blob": f"merged r{r} n={len(state.get('items', []))}:" + _text(f"m/{r}", size * 2)}

    def route(state: FanState) -> str:
        return "plan" if state.get("round", 0) < rounds else END

    g = StateGraph(FanState)
    g.add_node("plan", plan)
    for i in range(width):
        g.add_node(f"w{i}", worker(i))
        g.add_edge("plan", f"w{i}")
    g.add_node("merge", merge)
    if barrier:
        g.add_edge([f"w{i}" for i in range(width)], "merge")
    else:
        for i in range(width):
            g.add_edge(f"w{i}", "merge")
    g.add_edge(START, "plan")
    g.add_conditional_edges("merge", route, ["plan", END])
    return g


@dataclass(frozen=True)
class Scenario:
    """A graph and the inputs of its successive invocations."""

    name: str
    build: Callable[[], StateGraph]
    steps: tuple[Any, ...]
    #: HTTP requests of a fault-free run (at least; measured on the fault
    #: test savers): planned faults are placed below this index.
    requests: int = 10
    #: The same graph for ``durability="async"`` runs, when ``build`` joins
    #: parallel branches with a barrier edge: LangGraph 1.2 stores a barrier's
    #: live set from the background save, so a stored checkpoint can show the
    #: *next* superstep's barrier state, and resuming from it computes the
    #: wrong tasks, whatever the saver (strict xfail
    #: ``test_concurrency.test_async_durability_stores_live_barrier_state``).
    #: Soak runs found it here once saves became fast enough to lag less
    #: predictably; the fault tests must test the saver, not that bug.
    build_async: Callable[[], StateGraph] | None = None

    def graph(self, durability: str = "sync") -> StateGraph:
        """The graph to run with ``durability``."""
        if durability == "async" and self.build_async is not None:
            return self.build_async()
        return self.build()


def _parallel(barrier: bool = True) -> StateGraph:
    FAIL["b"] = False  # the shared graph's failure switch: never fail here
    return parallel_graph(barrier=barrier)


class MapState(TypedDict, total=False):
    n: int
    results: Annotated[list[int], operator.add]
    total: int


def map_reduce_graph(n: int = 80) -> StateGraph:
    """A conditional edge returning ``n`` ``Send``s: the fan-out step's writes span two
    writes items (``schema.WRITES_PER_ITEM``), so they land in one ``TransactWriteItems``."""

    def fan_out(state: MapState) -> list[Send]:
        return [Send("work", {"i": i}) for i in range(state.get("n", n))]

    g = StateGraph(MapState)
    g.add_node("start", lambda state: {"n": n})
    g.add_node("work", lambda arg: {"results": [arg["i"] * 2]})
    g.add_node("reduce", lambda state: {"total": sum(state.get("results", []))})
    g.add_edge(START, "start")
    g.add_conditional_edges("start", fan_out, ["work"])
    g.add_edge("work", "reduce")
    g.add_edge("reduce", END)
    return g


SCENARIOS: dict[str, Scenario] = {
    "parallel": Scenario(
        "parallel",
        _parallel,
        ({"log": []}, {"log": ["again"]}),
        requests=18,
        build_async=lambda: _parallel(barrier=False),
    ),
    "chat-delta-subgraph": Scenario(
        "chat-delta-subgraph",
        lambda: chat_graph(delta=True, subgraph=True),
        tuple({"messages": [f"user {i}: " + _text(f"u{i}", 500)]} for i in range(4)),
        requests=70,
    ),
    "requirement": Scenario(
        "requirement",
        requirement_graph,
        ({"request": "export button"}, Command(resume="CSV download")),
        requests=13,
    ),
    "fanout": Scenario(
        "fanout",
        lambda: fanout_graph(width=3, rounds=2, size=700),
        ({"items": []},),
        requests=24,
        build_async=lambda: fanout_graph(width=3, rounds=2, size=700, barrier=False),
    ),
    "map-reduce": Scenario(
        "map-reduce",
        map_reduce_graph,
        ({"results": []},),
        requests=90,
    ),
}


# -------------------------------------------------------- execution tracking


def _is_regular(channel: str) -> bool:
    return channel not in WRITES_IDX_MAP


class Tracker(BaseCallbackHandler):
    """Records node executions (by task id) and saved writes, in order."""

    run_inline = True  # async runs: call us on the loop, in order

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, str, str]] = []  # (kind, task_id, node)
        self._lock = threading.Lock()

    # LangChain callback: one per node run (tags "graph:step:N").
    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: Any,
        parent_run_id: Any = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        md = metadata or {}
        node = md.get("langgraph_node")
        if not node or kw.get("name") != node or not any(t.startswith("graph:step:") for t in tags or ()):
            return
        last = str(md.get("langgraph_checkpoint_ns", "")).split("|")[-1]
        task_id = last.split(":", 1)[1] if ":" in last else last
        with self._lock:
            self.events.append(("exec", task_id, node))

    def saved(self, task_id: str, writes: Any) -> None:
        if any(_is_regular(ch) for ch, _ in writes):
            with self._lock:
                self.events.append(("saved", task_id, ""))

    def wrap(self, saver: Any) -> Any:
        """Record successful ``put_writes``/``aput_writes`` calls of ``saver``."""
        sync_put, async_put = saver.put_writes, saver.aput_writes
        tracker = self

        def put_writes(config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            sync_put(config, writes, task_id, task_path)
            tracker.saved(task_id, writes)

        async def aput_writes(config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            await async_put(config, writes, task_id, task_path)
            tracker.saved(task_id, writes)

        saver.put_writes = put_writes
        saver.aput_writes = aput_writes
        return saver

    def executions(self) -> Counter[str]:
        return Counter(node for kind, _, node in self.events if kind == "exec")

    def reruns_after_save(self) -> list[tuple[str, str]]:
        """``(task_id, node)`` of every execution that started after the task's writes were saved."""
        saved: set[str] = set()
        bad = []
        for kind, task_id, node in list(self.events):
            if kind == "saved":
                saved.add(task_id)
            elif task_id in saved:
                bad.append((task_id, node))
        return bad
