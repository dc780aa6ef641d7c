"""Run a scenario to completion through failures, and check what it left.

``run_to_completion`` invokes each step of a scenario; when an invocation
raises (a fault surfaced), it looks at the stored state (faults paused) and
continues the way an operator or a retrying Lambda would: re-send the input
if it was never recorded, re-send ``Command(resume=...)`` while the interrupt
is still pending, otherwise ``invoke(None, config)``.
"""

from __future__ import annotations

import contextlib
import functools
from collections import Counter
from collections.abc import Iterator
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from tests.reliability.workloads import SCENARIOS, Scenario, Tracker, session_kw
from tests.support.harness import Harness, cfg

#: Saver options of the fault tests: tiny thresholds so that blob items
#: (BatchWriteItem / BatchGetItem) and, with a bucket, S3 objects are used.
FAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "sync": {"inline_threshold": 128},
    "async": {"inline_threshold": 128},
    "sync-s3": {"inline_threshold": 128, "s3_threshold": 1024},
    "async-s3-encrypted": {"inline_threshold": 128, "s3_threshold": 1024},
}

MAX_RESUMES = 12


class Runner:
    """A harness plus one saver built with test-chosen options."""

    def __init__(self, h: Harness, **overrides: Any) -> None:
        self.h = h
        self.overrides = {**FAULT_OPTIONS.get(h.variant, {}), **session_kw(h.is_async), **overrides}
        self.saver = h.make_saver(**self.overrides)
        self._extra: list[Any] = [self.saver]

    def fresh_saver(self) -> Any:
        """A new saver on the same table and bucket (no in-process caches), default retries."""
        kw = {k: v for k, v in self.overrides.items() if k not in ("max_attempts", "retry_mode")}
        saver = self.h.make_saver(**kw)
        self._extra.append(saver)
        return saver

    def close(self) -> None:
        for s in self._extra:
            if self.h.is_async:
                self.h.loop.run(s.aclose())
            else:
                s.close()
        self._extra = []

    # ---------------------------------------------------------- calls

    def list(self, saver: Any, config: Any, **kwargs: Any) -> list[Any]:
        if not self.h.is_async:
            return list(saver.list(config, **kwargs))

        async def collect() -> list[Any]:
            return [t async for t in saver.alist(config, **kwargs)]

        return self.h.loop.run(collect())  # type: ignore[no-any-return]

    def input_checkpoints(self, saver: Any, thread: str) -> int:
        return len(self.list(saver, cfg(thread), filter={"source": "input"}))


@contextlib.contextmanager
def _paused(injector: Any) -> Iterator[None]:
    if injector is None:
        yield
    else:
        with injector.paused():
            yield


def run_to_completion(
    r: Runner,
    graph: Any,
    thread: str,
    scenario: Scenario,
    *,
    tracker: Tracker,
    injector: Any = None,
    durability: str = "sync",
) -> list[BaseException]:
    """Run every step of ``scenario``; resume after each failure. Returns the failures."""
    h = r.h
    errors: list[BaseException] = []
    config = {**cfg(thread), "callbacks": [tracker]}
    for step in scenario.steps:
        with _paused(injector):
            inputs_before = r.input_checkpoints(r.saver, thread)
        inp: Any = step
        for _attempt in range(MAX_RESUMES + 1):
            try:
                h.invoke(graph, inp, config, durability=durability)
                break
            except Exception as exc:  # a fault surfaced: resume like an operator would
                errors.append(exc)
                with _paused(injector):
                    inp = _next_input(r, graph, thread, step, inputs_before)
                if inp is _DONE:
                    break
        else:
            raise AssertionError(
                f"{scenario.name}: step {step!r} did not complete after {MAX_RESUMES} resumes; "
                f"last errors: {errors[-3:]!r}"
            )
    return errors


_DONE = object()


def _next_input(r: Runner, graph: Any, thread: str, step: Any, inputs_before: int) -> Any:
    state = r.h.get_state(graph, cfg(thread))
    # ``next`` leaves out tasks whose writes are all saved: a checkpoint
    # whose tasks all finished but whose successor was never stored shows
    # next=() although the run is not over. ``tasks`` lists them all.
    unfinished = bool(state.next) or bool(state.tasks) or (state.metadata or {}).get("source") == "input"
    if isinstance(step, Command):
        if state.interrupts:
            return step  # the resume value may not be stored yet: send it again
        return None if unfinished else _DONE
    if r.input_checkpoints(r.saver, thread) == inputs_before:
        return step  # the input was never recorded: send it again
    if state.interrupts:
        return _DONE  # the run stopped at its interrupt, as it should
    return None if unfinished else _DONE


# ----------------------------------------------------------------- oracle


@functools.cache
def _oracle(name: str, durability: str) -> tuple[Any, Counter[str]]:
    scenario = SCENARIOS[name]
    tracker = Tracker()
    saver = InMemorySaver()
    graph = scenario.graph(durability).compile(checkpointer=saver)
    config = {**cfg("oracle"), "callbacks": [tracker]}
    for step in scenario.steps:
        graph.invoke(step, config, durability=durability)
    state = graph.get_state(cfg("oracle"))
    assert not state.next
    return state.values, tracker.executions()


def oracle(name: str, durability: str = "sync") -> tuple[Any, Counter[str]]:
    """Final values and node executions of a fault-free run on ``InMemorySaver``."""
    values, execs = _oracle(name, durability)
    return values, Counter(execs)


# ------------------------------------------------------------------ checks


def check_outcome(
    r: Runner, scenario: Scenario, thread: str, tracker: Tracker, *, durability: str = "sync"
) -> None:
    """Final state equals the oracle's; no saved task ran again; every checkpoint decodes."""
    want, _ = oracle(scenario.name, durability)
    saver = r.fresh_saver()
    graph = scenario.graph(durability).compile(checkpointer=saver)
    state = r.h.get_state(graph, cfg(thread))
    assert not state.next and not state.tasks, f"thread not finished: next={state.next} tasks={state.tasks}"
    assert state.values == want, "final state differs from the fault-free run"
    reruns = tracker.reruns_after_save()
    assert not reruns, f"tasks ran again after their writes were saved: {reruns}"
    check_readable(r, saver, graph, thread)


def check_readable(r: Runner, saver: Any, graph: Any, thread: str) -> int:
    """Every checkpoint of every namespace decodes; history rebuilds at every checkpoint."""
    everything = r.list(saver, {"configurable": {"thread_id": thread}})
    assert everything, "no checkpoints at all"
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in everything}
    for ns in namespaces:
        tup = (
            r.h.loop.run(saver.aget_tuple(cfg(thread, ns)))
            if r.h.is_async
            else saver.get_tuple(cfg(thread, ns))
        )
        assert tup is not None
    history = r.h.history(graph, cfg(thread))
    assert len(history) == len([t for t in everything if t.config["configurable"]["checkpoint_ns"] == ""])
    for snap in history:
        assert isinstance(snap.values, dict)
    return len(everything)
