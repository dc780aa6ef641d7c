"""The workloads, shared verbatim by both savers.

This module imports only langgraph, langchain-core and the standard library
(plus ``benchmarks.counting``), so it runs unchanged in this project's
virtualenv and in the reference's ``.venv-ref``. Every workload takes a
:class:`Context` whose ``saver`` (or ``open_async``) is the saver under test;
the graphs, inputs and fake assistant replies are the same for both.

Each workload returns a JSON-ready dict: ``phases`` (name -> counters,
seconds and storage after the phase), optional ``turns`` (per-turn
series), and workload-specific fields. Request counts and bytes are
deterministic; times are not.
"""

from __future__ import annotations

import asyncio
import base64
import operator
import random
import statistics
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Annotated, Any, TypedDict, cast

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import _messages_delta_reducer
from langgraph.types import Send

from benchmarks.counting import BudgetExceeded, Meter, Snapshot, round_trips

__all__ = ["WORKLOADS", "BudgetExceeded", "Context", "Params"]


@dataclass
class Params:
    """Workload sizes. The defaults are what ``make bench`` runs."""

    chat_turns: int = 50
    delta_turns: int = 50
    #: ``delta_history``: turns of the DeltaChannel chat (3 checkpoints a turn:
    #: 84 turns make the issue's 252-checkpoint thread), history read at half
    #: and at the end.
    history_turns: int = 84
    #: Budget of ``delta_history`` (seconds): its 84 turns alone take about two
    #: minutes on a loaded 2-core machine; the reference stops at it.
    history_budget_s: float = 300.0
    big_turns: int = 40
    big_message_bytes: int = 32 * 1024
    list_invokes: int = 67  # 3 checkpoints per invoke: 201 checkpoints
    async_threads: int = 100
    #: ``fanout``: a map-reduce whose conditional edge returns this many ``Send``s, per turn.
    fanout_sends: int = 200
    fanout_turns: int = 10
    async_turns: int = 3  # the issue asks for 10; 3 keeps a full run near 15 min on 2 cores
    budget_s: float = 120.0
    lag_interval_s: float = 0.005

    @classmethod
    def tiny(cls) -> Params:
        """Sizes for the smoke tests."""
        return cls(
            chat_turns=3,
            delta_turns=3,
            history_turns=4,
            big_turns=2,
            big_message_bytes=80 * 1024,
            list_invokes=3,
            async_threads=3,
            async_turns=2,
            fanout_sends=12,
            fanout_turns=2,
            budget_s=60.0,
        )


@dataclass
class Context:
    """What a workload gets: the saver under test, the meter, the sizes."""

    meter: Meter
    params: Params
    saver: Any = None
    open_async: Callable[[], AbstractAsyncContextManager[Any]] | None = None
    thread_prefix: str = "bench"
    phases: dict[str, Any] = field(default_factory=dict)

    def measure(self, name: str, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` and record its requests, bytes, units, round trips and seconds as phase ``name``."""
        before = self.meter.snapshot()
        with self.meter.trace() as calls:
            t0 = time.perf_counter()
            out = fn()
            seconds = time.perf_counter() - t0
        self.phases[name] = {
            "seconds": seconds,
            "round_trips": round_trips(calls),
            **(self.meter.snapshot() - before).to_dict(),
            "storage": self.meter.storage(),
        }
        return out


# ---------------------------------------------------------------- content

_WORDS = [
    *[
        "the",
        "checkpoint",
        "stores",
        "state",
        "for",
        "each",
        "thread",
        "so",
        "an",
        "agent",
        "can",
        "resume",
        "after",
        "an",
        "interrupt",
    ],
    *[
        "while",
        "tools",
        "return",
        "results",
        "and",
        "the",
        "model",
        "answers",
        "with",
        "a",
        "summary",
        "of",
        "what",
        "it",
        "found",
        "in",
    ],
    *[
        "the",
        "documents",
        "about",
        "latency",
        "cost",
        "storage",
        "requests",
        "tables",
        "buckets",
        "and",
        "serverless",
        "runs",
    ],
]


def user_text(turn: int) -> str:
    """A deterministic user message of 60-150 bytes."""
    rng = random.Random(10_000 + turn)
    return _text(rng, rng.randint(60, 150))


def reply_text(turn: int) -> str:
    """A deterministic assistant reply of 200-500 bytes."""
    rng = random.Random(turn)
    return _text(rng, rng.randint(200, 500))


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        w = rng.choice(_WORDS)
        words.append(w)
        length += len(w) + 1
    return " ".join(words)[:size]


def big_text(turn: int, size: int) -> str:
    """``size`` bytes of base64 from a seeded generator: a tool output that compresses poorly."""
    raw = random.Random(20_000 + turn).randbytes(size * 3 // 4)
    return base64.b64encode(raw).decode()[:size]


def user_message(turn: int) -> HumanMessage:
    return HumanMessage(content=user_text(turn), id=f"user-{turn:04d}")


# ----------------------------------------------------------------- graphs


class LinearState(TypedDict):
    value: str
    trace: Annotated[list[str], operator.add]


class ChatState(TypedDict):
    messages: Annotated[list, operator.add]


class DeltaChatState(TypedDict):
    messages: Annotated[list, DeltaChannel(_messages_delta_reducer)]


def linear_graph(checkpointer: Any) -> Any:
    """START -> a -> b -> c -> END; each node appends to ``trace``."""
    builder = StateGraph(LinearState)
    prev = START
    for name in ("a", "b", "c"):

        def node(state: LinearState, name: str = name) -> dict[str, Any]:
            return {"value": f"{state['value']}>{name}", "trace": [name]}

        builder.add_node(name, node)
        builder.add_edge(prev, name)
        prev = name
    builder.add_edge(prev, END)
    return builder.compile(checkpointer=checkpointer)


def _assistant_reply(state: dict[str, Any], big: int) -> dict[str, Any]:
    turn = len(state["messages"]) // 2
    content = big_text(turn, big) if big else reply_text(turn)
    return {"messages": [AIMessage(content=content, id=f"ai-{turn:04d}")]}


def chat_graph(checkpointer: Any, *, delta: bool = False, big: int = 0, is_async: bool = False) -> Any:
    """START -> assistant -> END; the assistant appends one deterministic reply.

    ``delta`` stores ``messages`` in a ``DeltaChannel``; ``big`` makes each
    reply ``big`` bytes of poorly compressible text; ``is_async`` makes the
    node a coroutine (so ``ainvoke`` runs it on the loop, not in a thread).
    """
    builder = StateGraph(DeltaChatState if delta else ChatState)
    if is_async:

        async def assistant_async(state: Any) -> dict[str, Any]:
            return _assistant_reply(state, big)

        builder.add_node("assistant", assistant_async)
    else:

        def assistant(state: Any) -> dict[str, Any]:
            return _assistant_reply(state, big)

        builder.add_node("assistant", assistant)
    builder.add_edge(START, "assistant")
    builder.add_edge("assistant", END)
    return builder.compile(checkpointer=checkpointer)


# -------------------------------------------------------------- workloads


def run_config(cfg: dict[str, Any], turn: int) -> dict[str, Any]:
    """``cfg`` for one invoke, with a deterministic ``metadata.run_id`` as the LangGraph server sets it.

    The run id reaches the savers through ``get_checkpoint_metadata``; ours
    also indexes it (``run_id-index``, for ``delete_for_runs``), which costs
    a GSI write per checkpoint and writes item: measured, not hidden.
    """
    thread = cfg["configurable"]["thread_id"]
    return {**cfg, "metadata": {"run_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench/{thread}/{turn}"))}}


def _config(ctx: Context, name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": f"{ctx.thread_prefix}-{name}"}}


def w_linear(ctx: Context) -> dict[str, Any]:
    """(1) A 3-node linear graph, one invoke on a fresh thread."""
    graph = linear_graph(ctx.saver)
    cfg = _config(ctx, "linear")
    out = ctx.measure("invoke", lambda: graph.invoke({"value": "start", "trace": []}, run_config(cfg, 0)))
    assert out["trace"] == ["a", "b", "c"], out
    return {}


def _chat_turns(
    ctx: Context,
    graph: Any,
    cfg: dict[str, Any],
    turns: int,
    between: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Run ``turns`` invokes, one series entry per turn; stop early if the budget is spent.

    ``between(turns_done)`` runs after each turn, outside the turn accounting
    (the delta workload probes ``get_delta_channel_history`` there).
    """
    meter = ctx.meter
    series: list[dict[str, Any]] = []
    total = Snapshot()
    busy = 0.0
    stopped: str | None = None
    for turn in range(turns):
        before = meter.snapshot()
        t0 = time.perf_counter()
        try:
            graph.invoke({"messages": [user_message(turn)]}, run_config(cfg, turn))
        except Exception:
            if meter.deadline_passed():
                stopped = (
                    f"did not finish in {ctx.params.budget_s:.0f} s: stopped during turn "
                    f"{turn + 1} after {len(series)} complete turns"
                )
                break
            raise
        seconds = time.perf_counter() - t0
        delta = meter.snapshot() - before
        total = total + delta
        busy += seconds
        series.append({"turn": turn + 1, "seconds": seconds, **delta.to_dict(), "storage": meter.storage()})
        if between is not None:
            try:
                between(turn + 1)
            except Exception:
                if meter.deadline_passed():
                    stopped = f"did not finish in {ctx.params.budget_s:.0f} s: stopped after turn {turn + 1}"
                    break
                raise
    ctx.phases["turns"] = {
        "seconds": busy,
        "turns_done": len(series),
        **total.to_dict(),
        "storage": meter.storage(),
    }
    return {"turns": series, "stopped": stopped}


def _read_back(ctx: Context, graph: Any, cfg: dict[str, Any], expect_messages: int | None) -> dict[str, Any]:
    """``get_state`` then ``get_state_history`` (everything), each measured."""
    out: dict[str, Any] = {}
    meter = ctx.meter
    for name, fn in (
        ("get_state", lambda: graph.get_state(cfg)),
        ("get_state_history", lambda: list(graph.get_state_history(cfg))),
    ):
        if meter.deadline_passed():
            out[f"{name}_skipped"] = "time budget already spent"
            continue
        try:
            result = ctx.measure(name, fn)
        except Exception:
            if meter.deadline_passed():
                out[f"{name}_skipped"] = f"did not finish within the {ctx.params.budget_s:.0f} s budget"
                continue
            raise
        if name == "get_state" and expect_messages is not None:
            got = len(result.values.get("messages", []))
            out["messages_in_state"] = got
            if got != expect_messages:
                out["state_mismatch"] = f"expected {expect_messages} messages, got {got}"
        if name == "get_state_history":
            out["history_length"] = len(result)
    return out


def w_chat(ctx: Context) -> dict[str, Any]:
    """(2) A 50-turn chat (``operator.add`` messages), then get_state and full history."""
    graph = chat_graph(ctx.saver)
    cfg = _config(ctx, "chat")
    turns = ctx.params.chat_turns
    result = _chat_turns(ctx, graph, cfg, turns)
    result.update(_read_back(ctx, graph, cfg, 2 * len(result["turns"])))
    return result


def history_probe_turns(turns: int) -> list[int]:
    """After which turns the delta workload measures ``get_delta_channel_history``."""
    return sorted({t for t in (min(10, turns - 1), turns // 2, turns - 1) if t >= 1})


def w_delta(ctx: Context) -> dict[str, Any]:
    """(3) The same chat with ``messages`` as a ``DeltaChannel`` (snapshot every 100 updates).

    After turns 10, 25 and 49 it also calls ``get_delta_channel_history`` on
    the latest checkpoint directly, so the cost of one history read can be
    compared at three chain lengths. Capped at ``params.budget_s`` for the
    whole workload: the request hook raises once it is spent, and the result
    says how far it got.
    """
    saver = ctx.saver
    graph = chat_graph(saver, delta=True)
    cfg = _config(ctx, "delta")
    probes = history_probe_turns(ctx.params.delta_turns)
    history: dict[str, Any] = {}

    def probe(done: int) -> None:
        if done not in probes:
            return
        with ctx.meter.latency_paused():
            target = saver.get_tuple(cfg)
        assert target is not None
        out = ctx.measure(
            f"delta_history@{done}",
            lambda: saver.get_delta_channel_history(config=target.config, channels=["messages"]),
        )
        entry = out["messages"]
        history[str(done)] = {"writes": len(entry["writes"]), "seed": "seed" in entry}

    ctx.meter.set_budget(ctx.params.budget_s)
    try:
        result = _chat_turns(ctx, graph, cfg, ctx.params.delta_turns, between=probe)
        result["history_probes"] = history
        result.update(
            _read_back(ctx, graph, cfg, 2 * len(result["turns"]) if not result["stopped"] else None)
        )
    finally:
        ctx.meter.set_budget(None)
    return result


def w_delta_history(ctx: Context) -> dict[str, Any]:
    """(3b) ``get_state_history`` of a DeltaChannel chat, at half and at all of its turns (issue 16, target 2).

    LangGraph asks for the delta history of every checkpoint it lists, so a
    listing that re-reads each chain back to its seed costs O(N^2) items.
    Measured twice (phases ``history@<checkpoints>``), so the report can
    compare read units and time at N and 2N checkpoints. The history reads
    the saver made while running the turns are not reused: a saver's chain
    cache (ours) is emptied first, as in a process that only reads.
    Capped at ``params.history_budget_s``.
    """
    saver = ctx.saver
    graph = chat_graph(saver, delta=True)
    cfg = _config(ctx, "delta_history")
    turns = ctx.params.history_turns
    probes = {turns // 2, turns}
    lengths: dict[str, int] = {}

    def probe(done: int) -> None:
        if done not in probes:
            return
        with ctx.meter.latency_paused():
            n = len(list(saver.list(cfg)))
        cache = getattr(saver, "_chain_cache", None)
        if cache is not None:
            cache.clear()
        history = ctx.measure(f"history@{n}", lambda: list(graph.get_state_history(cfg)))
        lengths[str(n)] = len(history)
        assert len(history) == n, (len(history), n)
        assert len(history[0].values["messages"]) == 2 * done, "state differs"

    ctx.meter.set_budget(ctx.params.history_budget_s)
    try:
        result = _chat_turns(ctx, graph, cfg, turns, between=probe)
    finally:
        ctx.meter.set_budget(None)
    result["history_lengths"] = lengths
    return result


def w_big(ctx: Context) -> dict[str, Any]:
    """(4) A chat whose state grows past 1 MB: each reply is a ~32 KB tool output."""
    graph = chat_graph(ctx.saver, big=ctx.params.big_message_bytes)
    cfg = _config(ctx, "big")
    ctx.meter.set_budget(ctx.params.budget_s)
    try:
        result = _chat_turns(ctx, graph, cfg, ctx.params.big_turns)
        if not result["stopped"]:
            state = ctx.measure("get_state", lambda: graph.get_state(cfg))
            result["messages_in_state"] = len(state.values["messages"])
            result["state_chars"] = sum(len(m.content) for m in state.values["messages"])
    finally:
        ctx.meter.set_budget(None)
    return result


def w_list(ctx: Context) -> dict[str, Any]:
    """(5) ``list`` of ~200 checkpoints, with and without a metadata filter; ``delete_thread``."""
    saver = ctx.saver
    graph = chat_graph(saver)
    cfg = _config(ctx, "list")

    def build() -> None:
        for turn in range(ctx.params.list_invokes):
            graph.invoke({"messages": [user_message(turn)]}, run_config(cfg, turn))

    with ctx.meter.latency_paused():  # building the thread is not what is measured here
        ctx.measure("setup", build)
    everything = ctx.measure("list_all", lambda: list(saver.list(cfg)))
    filtered = ctx.measure("list_filtered", lambda: list(saver.list(cfg, filter={"source": "input"})))
    ctx.measure("delete_thread", lambda: saver.delete_thread(cfg["configurable"]["thread_id"]))
    left = list(saver.list(cfg, limit=1))
    return {
        "checkpoints": len(everything),
        "matched": len(filtered),
        "left_after_delete": len(left),
    }


def _checkpoint(
    saver: Any, values: dict[str, Any], prev: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A checkpoint holding ``values``, with versions advanced from ``prev``."""
    cp = empty_checkpoint()
    versions = {k: saver.get_next_version(prev.get(k), None) for k in values}
    cp["channel_values"] = dict(values)
    cp["channel_versions"] = {**prev, **versions}
    return cast(dict[str, Any], cp), versions


def w_calls(ctx: Context) -> dict[str, Any]:
    """(0) Single saver calls, for the per-call targets: requests and round trips of
    ``put``, ``put_writes`` (1 and 25 writes) and ``get_tuple`` (latest, by id) with a
    small state and with a 20 KB, 200 KB and 500 KB channel value (base64 text), and a
    ``put`` whose 500 KB value did not change (same version, empty ``new_versions``).
    """
    saver = ctx.saver
    thread = f"{ctx.thread_prefix}-calls"
    root = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    versions: dict[str, Any] = {}
    parent: dict[str, Any] = root
    out: dict[str, Any] = {}
    sizes = {"small": 0, "20k": 20 * 1024, "200k": 200 * 1024, "500k": 500 * 1024}
    for step, (label, size) in enumerate(sizes.items()):
        value: list[Any]
        if size:
            value = [AIMessage(content=big_text(step, size), id=f"big-{label}")]
        else:
            value = [user_message(step)]
        cp, new = _checkpoint(saver, {"messages": value}, versions)
        versions = dict(cp["channel_versions"])
        md = {"source": "loop", "step": step, "parents": {}}
        cfg = ctx.measure(f"put[{label}]", partial(saver.put, parent, cp, md, new))
        if label == "small":
            one = [("messages", [user_message(1)])]
            many = [(f"channel_{i:02d}", {"i": i, "text": user_text(i)}) for i in range(25)]
            ctx.measure("put_writes[1]", partial(saver.put_writes, cfg, one, "task-one"))
            ctx.measure("put_writes[25]", partial(saver.put_writes, cfg, many, "task-many"))
            ctx.measure("get_tuple[latest]", partial(saver.get_tuple, root))
            got = ctx.measure("get_tuple[by id]", partial(saver.get_tuple, cfg))
            out["pending_writes_read_back"] = len(got.pending_writes) if got else None
        else:
            got = ctx.measure(f"get_tuple[{label}]", partial(saver.get_tuple, root))
            content = got.checkpoint["channel_values"]["messages"][0].content if got else ""
            out[f"value_chars_read_back[{label}]"] = len(content)
        parent = cfg
    # The 500 KB value again, unchanged (same version, nothing in new_versions):
    # what a put costs when a large channel did not change.
    cp = cast(dict[str, Any], empty_checkpoint())
    cp["channel_values"] = {"messages": value}
    cp["channel_versions"] = dict(versions)
    md = {"source": "loop", "step": len(sizes), "parents": {}}
    ctx.measure("put[500k unchanged]", partial(saver.put, parent, cp, md, {}))
    out["held_far_steps"] = _held_far(ctx, f"{thread}-held")
    return out


def _held_far(ctx: Context, thread: str, steps: int = 10) -> int:
    """``get_tuple[20k, 10 back]``: a 20 KB value set once, then ``steps`` checkpoints (each with a
    task's write) that leave it unchanged: the checkpoint that stored it is far below the latest."""
    saver = ctx.saver
    config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    versions: dict[str, Any] = {}
    values = {"profile": big_text(7, 20 * 1024), "turn": 0}
    for step in range(steps + 1):
        values["turn"] = step
        changed = values if step == 0 else {"turn": step}
        cp, new = _checkpoint(saver, changed, versions)
        cp["channel_values"] = dict(values)
        versions = dict(cp["channel_versions"])
        config = saver.put(config, cp, {"source": "loop", "step": step, "parents": {}}, new)
        saver.put_writes(config, [("turn", step + 1)], f"task-{step}")
    got = ctx.measure(
        "get_tuple[20k, 10 back]", partial(saver.get_tuple, {"configurable": {"thread_id": thread}})
    )
    return int(got.checkpoint["channel_values"]["turn"]) if got else -1


def w_async(ctx: Context) -> dict[str, Any]:
    """(6) 100 threads x 10 turns concurrently on one event loop, with a lag ticker."""
    return asyncio.run(_w_async(ctx))


async def _ticker(interval: float, samples: list[tuple[float, float]], stop: asyncio.Event) -> None:
    """Wake every ``interval`` s; record ``(seconds since start, lateness)`` per wake-up."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    due = start + interval
    while not stop.is_set():
        await asyncio.sleep(max(0.0, due - loop.time()))
        now = loop.time()
        samples.append((now - start, now - due))
        due = now + interval


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


async def _w_async(ctx: Context) -> dict[str, Any]:
    assert ctx.open_async is not None
    p = ctx.params
    async with ctx.open_async() as saver:
        graph = chat_graph(saver, is_async=True)
        samples: list[tuple[float, float]] = []
        stop = asyncio.Event()
        latencies: list[float] = []

        async def one_thread(i: int) -> None:
            cfg = {"configurable": {"thread_id": f"{ctx.thread_prefix}-async-{i:03d}"}}
            for turn in range(p.async_turns):
                t0 = time.perf_counter()
                await graph.ainvoke({"messages": [user_message(turn)]}, run_config(cfg, turn))
                latencies.append(time.perf_counter() - t0)

        before = ctx.meter.snapshot()
        tick = asyncio.create_task(_ticker(p.lag_interval_s, samples, stop))
        t0 = time.perf_counter()
        await asyncio.gather(*(one_thread(i) for i in range(p.async_threads)))
        wall = time.perf_counter() - t0
        stop.set()
        await tick
        ctx.phases["run"] = {
            "seconds": wall,
            **(ctx.meter.snapshot() - before).to_dict(),
            "storage": ctx.meter.storage(),
        }
        # Every thread must have all its turns.
        last = await graph.aget_state({"configurable": {"thread_id": f"{ctx.thread_prefix}-async-000"}})
    turns = p.async_threads * p.async_turns
    lags = [lag for _, lag in samples]
    spikes = sorted(samples, key=lambda s: s[1], reverse=True)[:5]
    return {
        "turns_total": turns,
        "turns_per_s": turns / wall if wall else 0.0,
        "turn_latency_p50_s": _percentile(latencies, 50),
        "turn_latency_p95_s": _percentile(latencies, 95),
        "lag_samples": len(lags),
        "lag_p50_s": _percentile(lags, 50),
        "lag_p99_s": _percentile(lags, 99),
        "lag_max_s": max(lags) if lags else 0.0,
        "lag_mean_s": statistics.fmean(lags) if lags else 0.0,
        "lag_spikes": [{"at_s": round(at, 3), "lag_s": round(lag, 4)} for at, lag in spikes],
        "messages_in_thread0": len(last.values.get("messages", [])),
    }


class FanoutState(TypedDict, total=False):
    n: int
    results: Annotated[list[int], operator.add]
    total: int


def fanout_graph(checkpointer: Any) -> Any:
    """A map-reduce: ``start`` returns ``n`` ``Send``s to ``work``, ``reduce`` sums their results."""

    def fan_out(state: FanoutState) -> list[Send]:
        return [Send("work", {"i": i}) for i in range(state["n"])]

    g = StateGraph(FanoutState)
    g.add_node("start", lambda state: {"results": []})
    g.add_node("work", lambda arg: {"results": [arg["i"]]})
    g.add_node("reduce", lambda state: {"total": sum(state["results"])})
    g.add_edge(START, "start")
    g.add_conditional_edges("start", fan_out, ["work"])
    g.add_edge("work", "reduce")
    g.add_edge("reduce", END)
    return g.compile(checkpointer=checkpointer)


def w_fanout(ctx: Context) -> dict[str, Any]:
    """(7) A map-reduce of ``fanout_sends`` ``Send``s, ``fanout_turns`` invokes on one thread."""
    graph = fanout_graph(ctx.saver)
    cfg = _config(ctx, "fanout")
    n = ctx.params.fanout_sends

    def turns() -> None:
        for turn in range(ctx.params.fanout_turns):
            out = graph.invoke({"n": n}, run_config(cfg, turn))
            assert out["total"] == sum(range(n)) * (turn + 1), out["total"]

    ctx.measure("turns", turns)
    return {"sends": n}


WORKLOADS: dict[str, Callable[[Context], dict[str, Any]]] = {
    "calls": w_calls,
    "linear": w_linear,
    "chat": w_chat,
    "delta": w_delta,
    "delta_history": w_delta_history,
    "big": w_big,
    "list": w_list,
    "async": w_async,
    "fanout": w_fanout,
}


def params_from_dict(data: dict[str, Any]) -> Params:
    """Inverse of ``dataclasses.asdict`` for :class:`Params`."""
    return Params(**data)


def params_to_dict(params: Params) -> dict[str, Any]:
    return asdict(params)
