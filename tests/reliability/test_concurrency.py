"""Concurrency: parallel subgraphs, async durability, many writers at once.

* parallel subgraphs with ``durability="async"`` (sync and async savers):
  final state and every namespace's history match ``InMemorySaver``;
* one sync saver shared by 8 Python threads running 24 graph threads, and
  16 Python threads putting checkpoint chains into 16 namespaces of *one*
  thread at once: nothing lost, nothing corrupted, parents intact;
* racing ``put_writes`` on one task: first write wins, one value for everybody;
* 100 graph runs / 100 ``aput`` calls on one event loop: the requests really
  overlap (a blocking driver would never have more than one in flight), and
  a ticker task keeps running during the burst.

Why the event-loop assertion is not a latency bound: on a loaded 2-core CI
machine any thread can be descheduled for tens of milliseconds, so "the loop
never stalls more than X ms" is flaky for small X. The robust signal of a
non-blocking driver is *overlap* (many requests in flight at once, measured
at the saver's single I/O choke point ``_call``), plus a count of blocking
calls made on the loop's own thread (synchronous HTTP through urllib3, which
is what a boto3 call does, and ``time.sleep``): that count is exact, and it
must be zero. A ticker keeps ticking throughout; its stall bound is only a
backstop for gross CPU-bound blocking (5 s: a CI run once saw a 1.01 s gap
from scheduling alone). ``test_blocking_driver_is_detected`` shows both
checks fail for a blocking driver.
"""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver
from tests.reliability.workloads import fanout_graph
from tests.support.graphs import chat_graph
from tests.support.harness import Harness, LoopThread, cfg, new_thread

# ------------------------------------------------------------ graphs


class PState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    topic: str


def parallel_subgraphs(width: int = 3) -> StateGraph:
    """START -> ``width`` subgraphs in parallel (own namespaces) -> report."""

    class SubState(TypedDict, total=False):
        log: Annotated[list[str], operator.add]
        topic: str

    class SubOut(TypedDict, total=False):
        log: Annotated[list[str], operator.add]

    def subgraph(i: int) -> Any:
        sub = StateGraph(SubState, output_schema=SubOut)
        sub.add_node("research", lambda s: {"log": [f"research{i}:{s.get('topic', '')}"]})
        sub.add_node("write", lambda s: {"log": [f"write{i}:" + "w" * 300]})
        sub.add_edge(START, "research")
        sub.add_edge("research", "write")
        sub.add_edge("write", END)
        return sub.compile()

    g = StateGraph(PState)
    for i in range(width):
        g.add_node(f"team{i}", subgraph(i))
        g.add_edge(START, f"team{i}")
        g.add_edge(f"team{i}", "report")  # one edge each: no barrier channel
    g.add_node("report", lambda s: {"log": [f"report of {len(s['log'])}"]})
    g.add_edge("report", END)
    return g


def _oracle_history(build: Any, inputs: list[Any], durability: str = "sync") -> tuple[Any, list[Any]]:
    graph = build().compile(checkpointer=InMemorySaver())
    for inp in inputs:
        graph.invoke(inp, cfg("oracle"), durability=durability)
    hist = [(s.metadata["step"], s.next, s.values) for s in graph.get_state_history(cfg("oracle"))]
    return graph.get_state(cfg("oracle")).values, hist


def _sorted_log(values: dict[str, Any]) -> dict[str, Any]:
    # Parallel branches append in completion order: compare as multisets.
    return {**values, "log": sorted(values.get("log", []))}


@pytest.mark.parametrize("variant", ["sync-s3", "async-s3-encrypted"])
def test_parallel_subgraphs_with_async_durability(harness_factory: Any, variant: str) -> None:
    h = harness_factory(variant)
    thread = new_thread()
    graph = parallel_subgraphs().compile(checkpointer=h.saver)
    inputs = [{"topic": "dynamo"}, {"topic": "s3"}]
    for inp in inputs:
        h.invoke(graph, inp, cfg(thread), durability="async")
    want, want_hist = _oracle_history(parallel_subgraphs, inputs, "async")
    got = h.get_state(graph, cfg(thread)).values
    assert _sorted_log(got) == _sorted_log(want)
    hist = [(s.metadata["step"], s.next, s.values) for s in h.history(graph, cfg(thread))]
    assert [(st, nx, _sorted_log(v)) for st, nx, v in hist] == [
        (st, nx, _sorted_log(v)) for st, nx, v in want_hist
    ]
    # Every subgraph namespace was stored and decodes.
    everything = h.list({"configurable": {"thread_id": thread}})
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in everything}
    assert {ns.split(":")[0] for ns in namespaces} == {"", "team0", "team1", "team2"}
    assert len(namespaces) == 1 + 3 * len(inputs)


# ------------------------------------------------- threads on a sync saver


def test_one_sync_saver_many_python_threads(moto_endpoint: str, names: dict[str, str]) -> None:
    """8 Python threads share one DynamoDBSaver and run 16 graph threads of a delta chat."""
    saver = DynamoDBSaver(**names, inline_threshold=256, s3_threshold=1024)
    saver.setup()
    graph = chat_graph(delta=True, snapshot_frequency=2).compile(checkpointer=saver)
    turns = [{"messages": [f"user {i}: " + "q" * 300]} for i in range(3)]
    want, want_hist = _oracle_history(lambda: chat_graph(delta=True, snapshot_frequency=2), turns)
    threads = [new_thread() for _ in range(16)]

    def run(thread: str) -> None:
        for t in turns:
            graph.invoke(t, cfg(thread))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(run, threads))
    fresh = DynamoDBSaver(**names, inline_threshold=256, s3_threshold=1024)
    fresh_graph = chat_graph(delta=True, snapshot_frequency=2).compile(checkpointer=fresh)
    for thread in threads:
        assert fresh_graph.get_state(cfg(thread)).values == want
        hist = [(s.metadata["step"], s.next, s.values) for s in fresh_graph.get_state_history(cfg(thread))]
        assert hist == want_hist
    saver.close()
    fresh.close()


def test_concurrent_chains_in_namespaces_of_one_thread(moto_endpoint: str, names: dict[str, str]) -> None:
    """16 writers, one thread id, 16 namespaces (parallel subgraphs), 10 checkpoints each, at once."""
    saver = DynamoDBSaver(**names, inline_threshold=64, s3_threshold=512)
    saver.setup()
    thread = new_thread()
    n_ns, depth = 16, 10
    barrier = threading.Barrier(n_ns)

    def writer(k: int) -> list[str]:
        ns = f"team:{k}|sub"
        barrier.wait()
        parent = cfg(thread, ns)
        ids = []
        for step in range(depth):
            cp = empty_checkpoint()
            cp["id"] = str(uuid6(clock_seq=k * 100 + step))
            cp["channel_values"] = {"x": f"{k}/{step}:" + "v" * (step * 90), "k": k}
            cp["channel_versions"] = {
                "x": saver.get_next_version(None, None).replace("1.", f"{step + 1}.", 1),
                "k": "1",
            }
            parent = saver.put(
                parent, cp, {"step": step, "writer": k}, {"x": cp["channel_versions"]["x"], "k": "1"}
            )
            saver.put_writes(parent, [("x", f"pending {k}/{step}")], f"task-{k}", "~")
            ids.append(parent["configurable"]["checkpoint_id"])
        return ids

    with ThreadPoolExecutor(n_ns) as pool:
        all_ids = list(pool.map(writer, range(n_ns)))
    everything = list(
        DynamoDBSaver(**names, inline_threshold=64, s3_threshold=512).list(
            {"configurable": {"thread_id": thread}}
        )
    )
    assert len(everything) == n_ns * depth
    by_ns: dict[str, list[Any]] = {}
    for t in everything:
        by_ns.setdefault(t.config["configurable"]["checkpoint_ns"], []).append(t)
    for k, ids in enumerate(all_ids):
        chain = sorted(by_ns[f"team:{k}|sub"], key=lambda t: t.metadata["step"])
        assert [t.checkpoint["id"] for t in chain] == ids
        for step, t in enumerate(chain):
            assert t.checkpoint["channel_values"] == {"x": f"{k}/{step}:" + "v" * (step * 90), "k": k}
            assert t.pending_writes == [(f"task-{k}", "x", f"pending {k}/{step}")]
            parent = t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
            assert parent == (ids[step - 1] if step else None)
    saver.close()


def test_racing_put_writes_first_write_wins(moto_endpoint: str, names: dict[str, str]) -> None:
    saver = DynamoDBSaver(**names, s3_threshold=256)
    saver.setup()
    thread = new_thread()
    stored = saver.put(cfg(thread), {**empty_checkpoint(), "id": str(uuid6())}, {}, {})
    values = [f"value-{i}:" + "z" * (i * 40) for i in range(12)]  # some inline, some in S3
    barrier = threading.Barrier(len(values))

    def race(v: str) -> None:
        barrier.wait()
        saver.put_writes(stored, [("ch", v), ("other", v)], "same-task", "~p")

    with ThreadPoolExecutor(len(values)) as pool:
        list(pool.map(race, values))
    seen = {
        tuple(DynamoDBSaver(**names, s3_threshold=256).get_tuple(stored).pending_writes) for _ in range(3)
    }
    assert len(seen) == 1
    (pending,) = seen
    assert len(pending) == 2 and pending[0][2] in values and pending[1][2] in values
    saver.close()


# ------------------------------------------------------- one event loop


class _InFlight:
    """Counts concurrent saver requests at the driver's single I/O choke point."""

    def __init__(self, saver: Any) -> None:
        self.now = 0
        self.max = 0
        self.total = 0
        orig = saver.driver.call

        async def counted(call: Any) -> Any:
            self.now += 1
            self.total += 1
            self.max = max(self.max, self.now)
            try:
                return await orig(call)
            finally:
                self.now -= 1

        saver.driver.call = counted


class _BlockingOnLoop:
    """Counts blocking calls made on the event loop's thread while installed.

    Synchronous HTTP (urllib3, under every boto3 call) and ``time.sleep`` are
    wrapped; a call from any other thread (the saver's I/O thread, a worker)
    is not counted.
    """

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._loop_thread = threading.get_ident()

    def __enter__(self) -> _BlockingOnLoop:
        import urllib3.connectionpool

        self._patches = [
            (urllib3.connectionpool.HTTPConnectionPool, "urlopen"),
            (time, "sleep"),
        ]
        self._saved = [getattr(owner, name) for owner, name in self._patches]
        for (owner, name), orig in zip(self._patches, self._saved, strict=True):
            setattr(owner, name, self._wrap(f"{getattr(owner, '__name__', owner)}.{name}", orig))
        return self

    def __exit__(self, *exc: object) -> None:
        for (owner, name), orig in zip(self._patches, self._saved, strict=True):
            setattr(owner, name, orig)

    def _wrap(self, label: str, orig: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == self._loop_thread:
                self.calls.append(label)
            return orig(*args, **kwargs)

        return wrapper


class _Ticker:
    """A task ticking every ``period`` seconds; records ticks and the longest gap."""

    def __init__(self, period: float = 0.005) -> None:
        self.period = period
        self.ticks = 0
        self.max_gap = 0.0
        self._stop = asyncio.Event()

    async def run(self) -> None:
        last = time.perf_counter()
        while not self._stop.is_set():
            await asyncio.sleep(self.period)
            now = time.perf_counter()
            self.max_gap = max(self.max_gap, now - last)
            last = now
            self.ticks += 1

    def stop(self) -> None:
        self._stop.set()


async def _burst(saver: Any, coros: list[Any], blocking: list[str] | None = None) -> tuple[_Ticker, float]:
    """Run ``coros`` at once beside a ticker; blocking calls on the loop go to ``blocking``."""
    ticker = _Ticker()
    task = asyncio.create_task(ticker.run())
    await asyncio.sleep(0)
    t0 = time.perf_counter()
    with _BlockingOnLoop() as guard:
        await asyncio.gather(*coros)
    elapsed = time.perf_counter() - t0
    ticker.stop()
    await task
    if blocking is not None:
        blocking.extend(guard.calls)
    return ticker, elapsed


#: The loop may stall this long at most (seconds): a backstop, see the module docstring.
STALL_BOUND = 5.0


def test_100_concurrent_aputs_on_one_loop(moto_endpoint: str, names: dict[str, str]) -> None:
    async def main() -> None:
        async with AsyncDynamoDBSaver(**names, inline_threshold=256, s3_threshold=1024) as saver:
            await saver.setup()
            inflight = _InFlight(saver)
            threads = [new_thread() for _ in range(100)]
            cps = []
            for i, _ in enumerate(threads):
                cp = empty_checkpoint()
                cp["id"] = str(uuid6())
                cp["channel_values"] = {"v": f"{i}:" + "p" * (i * 30)}  # inline, blob and S3 sizes
                cp["channel_versions"] = {"v": "1"}
                cps.append(cp)
            blocking: list[str] = []
            ticker, elapsed = await _burst(
                saver,
                [
                    saver.aput(cfg(t), cp, {"i": i}, {"v": "1"})
                    for i, (t, cp) in enumerate(zip(threads, cps, strict=True))
                ],
                blocking,
            )
            assert not blocking, f"blocking calls on the event loop: {sorted(set(blocking))}"
            assert inflight.max >= 8, (
                f"requests did not overlap (max in flight {inflight.max}): blocking driver?"
            )
            assert ticker.ticks >= 5, f"ticker ran {ticker.ticks} times during a {elapsed:.2f}s burst"
            assert ticker.max_gap < STALL_BOUND, f"event loop stalled {ticker.max_gap:.2f}s"
            got = await asyncio.gather(*(saver.aget_tuple(cfg(t)) for t in threads))
            for i, t in enumerate(got):
                assert t is not None and t.checkpoint["channel_values"] == cps[i]["channel_values"]
                assert t.metadata["i"] == i

    asyncio.run(main())


def test_100_concurrent_graph_runs_on_one_loop(moto_endpoint: str, names: dict[str, str]) -> None:
    async def main() -> None:
        async with AsyncDynamoDBSaver(**names, inline_threshold=256, s3_threshold=1024) as saver:
            await saver.setup()
            inflight = _InFlight(saver)
            graph = chat_graph().compile(checkpointer=saver)
            expected = (
                chat_graph()
                .compile(checkpointer=InMemorySaver())
                .invoke({"messages": ["hello " + "h" * 1500]}, cfg("oracle"))
            )
            threads = [new_thread() for _ in range(100)]
            blocking: list[str] = []
            ticker, _elapsed = await _burst(
                saver,
                [
                    graph.ainvoke({"messages": ["hello " + "h" * 1500]}, cfg(t), durability="async")
                    for t in threads
                ],
                blocking,
            )
            assert not blocking, f"blocking calls on the event loop: {sorted(set(blocking))}"
            assert inflight.max >= 8, f"requests did not overlap (max in flight {inflight.max})"
            assert ticker.ticks >= 5
            assert ticker.max_gap < STALL_BOUND, f"event loop stalled {ticker.max_gap:.2f}s"
            states = await asyncio.gather(*(graph.aget_state(cfg(t)) for t in threads))
            for s in states:
                assert s.values == expected and not s.next

    asyncio.run(main())


def test_blocking_driver_is_detected(moto_endpoint: str, names: dict[str, str]) -> None:
    """Self-check of both measures: a blocking driver shows one request at a time, all on the loop."""

    async def main() -> tuple[int, list[str]]:
        async with AsyncDynamoDBSaver(**names) as saver:
            await saver.setup()
            sync_saver = DynamoDBSaver(**names)

            async def blocking_call(call: Any) -> Any:  # what a naive driver would do
                return sync_saver.driver.call(call)

            saver.driver.call = blocking_call
            inflight = _InFlight(saver)
            cps = [{**empty_checkpoint(), "id": str(uuid6())} for _ in range(20)]
            blocking: list[str] = []
            await _burst(saver, [saver.aput(cfg(new_thread()), cp, {}, {}) for cp in cps], blocking)
            return inflight.max, blocking

    max_in_flight, blocking = asyncio.run(main())
    assert max_in_flight == 1
    assert len(blocking) >= 20 and set(blocking) == {"HTTPConnectionPool.urlopen"}


# ------------------------------------------------------ upstream finding


@pytest.mark.xfail(
    strict=True,
    reason=(
        "UPSTREAM (langgraph 1.2.24): with durability='async' a checkpoint is saved in the "
        "background after the previous save; copy_checkpoint copies channel_values shallowly and "
        "NamedBarrierValue.checkpoint() returns its live `seen` set, which the next superstep "
        "mutates in place. A saver slower than a superstep stores the *later* barrier state: the "
        "stored history shows the join node as pending again (time travel / resume from it re-runs "
        "it). Reproduced with InMemorySaver plus a 50 ms put; not fixable inside a saver."
    ),
)
def test_async_durability_stores_live_barrier_state() -> None:
    class SlowSaver(InMemorySaver):
        def put(self, *args: Any, **kwargs: Any) -> Any:
            time.sleep(0.05)  # any networked saver is at least this slow under load
            return super().put(*args, **kwargs)

    histories = {}
    for durability in ("sync", "async"):
        graph = fanout_graph(width=3, rounds=2, size=10).compile(checkpointer=SlowSaver())
        graph.invoke({"items": []}, cfg("t"), durability=durability)
        histories[durability] = [(s.metadata["step"], s.next) for s in graph.get_state_history(cfg("t"))]
    assert histories["async"] == histories["sync"]


# --------------------------------------------------------------- fixture


@pytest.fixture
def harness_factory(moto_endpoint: str, names: dict[str, str], loop_thread: LoopThread) -> Any:
    made: list[Harness] = []

    def make(variant: str) -> Harness:
        h = Harness(variant, names["table_name"], names["bucket_name"], loop_thread)
        made.append(h)
        return h

    yield make
    for h in made:
        h.close()
