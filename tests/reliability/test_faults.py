"""Fault injection into real graph runs (sync and async savers).

Three families, all checked the same way (``driver.check_outcome``): the
final state equals a fault-free ``InMemorySaver`` run's, no task whose writes
were saved ran again, and every checkpoint of the thread (all namespaces,
the whole history) decodes.

* retryable faults at a steady rate with the default retry policy: botocore
  and the core absorb all of them, nothing surfaces to the graph;
* faults with ``max_attempts=0`` (botocore retries off: its
  ``max_attempts`` counts *retries*, so the total is ``max_attempts + 1``) at seeded random
  points of the run: they surface, the run is resumed until done;
* the same, aimed at one request type at a time.
"""

from __future__ import annotations

import random
import zlib
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.reliability.driver import Runner, check_outcome, oracle, run_to_completion
from tests.reliability.workloads import SCENARIOS, SOAK, Tracker, cases
from tests.support.faults import ALL_KINDS, SEND_KINDS, FaultInjector
from tests.support.harness import Harness, LoopThread, checkpoint_of, new_thread

VARIANTS = ("sync", "async", "sync-s3", "async-s3-encrypted")

#: Faults injected by this module's tests, by kind (printed in the summary).
FAULT_STATS: Counter[str] = Counter()


@pytest.fixture
def make_runner(moto_endpoint: str, names: dict[str, str], loop_thread: LoopThread) -> Iterator:  # type: ignore[type-arg]
    made: list[tuple[Harness, Runner]] = []

    def make(variant: str, **overrides: object) -> Runner:
        h = Harness(variant, names["table_name"], names["bucket_name"], loop_thread)
        r = Runner(h, **overrides)
        made.append((h, r))
        return r

    yield make
    for h, r in made:
        r.close()
        h.close()


def _absorbed_cases() -> list[tuple[str, str, int]]:
    names = sorted(SCENARIOS)
    if SOAK:  # every pairing, several seeds
        return [(v, n, s) for v in VARIANTS for n in names for s in range(5)]
    # CI: every variant twice and every scenario twice, rotating.
    return [(v, names[(i + j) % len(names)], 0) for i, v in enumerate(VARIANTS) for j in (0, 1)]


@pytest.mark.parametrize("variant,scenario,seed", _absorbed_cases())
def test_retryable_faults_are_absorbed(make_runner, variant: str, scenario: str, seed: int) -> None:  # type: ignore[no-untyped-def]
    """20% of requests fail with retryable faults; the default retry policy hides every one."""
    r = make_runner(variant)
    sc = SCENARIOS[scenario]
    case_seed = zlib.crc32(f"{variant}/{scenario}/{seed}".encode())
    first = random.Random(case_seed).randrange(sc.requests // 2)  # at least one fault, for sure
    inj = FaultInjector(case_seed, rate=0.2, kinds=ALL_KINDS, fail_at=frozenset({first}))
    inj.attach_saver(r.saver)
    tracker = Tracker()
    graph = sc.build().compile(checkpointer=tracker.wrap(r.saver))
    thread = new_thread()
    errors = run_to_completion(r, graph, thread, sc, tracker=tracker, injector=inj)
    assert errors == [], f"retryable faults surfaced: {errors!r} (faults: {inj.log})"
    assert len(inj.log) > 0, "no fault was injected: the test exercised nothing"
    with inj.paused():
        check_outcome(r, sc, thread, tracker)
    # Nothing surfaced, so nothing ran twice: executions equal the oracle's.
    assert tracker.executions() == oracle(scenario)[1]
    FAULT_STATS.update(inj.kinds_injected())


def _surfaced_case(  # type: ignore[no-untyped-def]
    make_runner,
    seed: int,
    *,
    ops: frozenset[str] | None = None,
    pick: tuple[str, str] | None = None,
    **options: object,
) -> FaultInjector:
    rng = random.Random(seed)
    variant = rng.choice(VARIANTS)
    scenario = SCENARIOS[rng.choice(sorted(SCENARIOS))]
    calibrate = pick is not None
    if pick is not None:
        variant, scenario = pick[0], SCENARIOS[pick[1]]
    durability = rng.choice(("sync", "sync", "async"))
    r = make_runner(variant, max_attempts=0, **options)
    if calibrate:
        # How many eligible requests does a fault-free run make?
        probe = FaultInjector(seed, rate=0.0, ops=ops).attach_saver(r.saver)
        t0 = Tracker()
        graph0 = scenario.graph(durability).compile(checkpointer=t0.wrap(r.saver))
        run_to_completion(
            r, graph0, new_thread(), scenario, tracker=t0, injector=probe, durability=durability
        )
        n = probe.sends
        probe.enabled = False
        assert n > 0, f"{variant}/{scenario.name} never sends {ops}"
    else:
        n = int(scenario.requests * 0.8)
    # Fail a few requests at random points of the run.
    k = rng.randint(1, 3)
    fail_at = frozenset(rng.sample(range(n), min(k, n)))
    kinds = tuple(rng.sample(SEND_KINDS, rng.randint(1, len(SEND_KINDS))))
    inj = FaultInjector(seed, kinds=kinds, ops=ops, fail_at=fail_at).attach_saver(r.saver)
    tracker = Tracker()
    graph = scenario.graph(durability).compile(checkpointer=tracker.wrap(r.saver))
    thread = new_thread()
    context = f"seed={seed} variant={variant} scenario={scenario.name} durability={durability} fail_at={sorted(fail_at)}"
    errors = run_to_completion(
        r, graph, thread, scenario, tracker=tracker, injector=inj, durability=durability
    )
    with inj.paused():
        try:
            check_outcome(r, scenario, thread, tracker, durability=durability)
        except AssertionError as exc:
            raise AssertionError(f"{context} faults={inj.log}: {exc}") from exc
    FAULT_STATS.update(inj.kinds_injected())
    FAULT_STATS["surfaced errors"] += len(errors)
    return inj


@pytest.mark.parametrize("seed", range(cases(20, 300)))
def test_surfaced_faults_then_resume(make_runner, seed: int) -> None:  # type: ignore[no-untyped-def]
    """No botocore retries: faults reach the graph at random points; resuming finishes the run."""
    inj = _surfaced_case(make_runner, seed)
    assert inj.log, "the planned faults were never injected"


#: Request type -> (variant, scenario) pairs whose runs issue it. Graph runs
#: send no batch requests: a value up to ``s3_threshold`` is held by the
#: checkpoint that introduces it, and the checkpoints a run reads hold, or
#: share a Query page with, what they reference. ``BatchWriteItem`` and
#: ``BatchGetItem`` are faulted below (oversized puts, cold reads of values
#: held far back) and in ``test_maintenance_faults.py``.
REQUEST_TYPES: dict[str, list[tuple[str, str]]] = {
    "PutItem": [(v, n) for v in VARIANTS for n in sorted(SCENARIOS)],
    # A task's writes are PutItems; more than one writes item (a fan-out of 80 Sends) is a
    # transaction. UpdateItem remains for thread heads and leases, which graph runs here skip.
    "TransactWriteItems": [(v, "map-reduce") for v in VARIANTS],
    "Query": [(v, n) for v in VARIANTS for n in sorted(SCENARIOS)],
    "PutObject": [
        (v, n) for v in ("sync-s3", "async-s3-encrypted") for n in ("chat-delta-subgraph", "fanout")
    ],
    "GetObject": [(v, "chat-delta-subgraph") for v in ("sync-s3", "async-s3-encrypted")],
}


@pytest.mark.parametrize("seed", range(cases(1, 10)))
@pytest.mark.parametrize("op", sorted(REQUEST_TYPES))
def test_faults_per_request_type(make_runner, op: str, seed: int) -> None:  # type: ignore[no-untyped-def]
    """A surfaced fault on one request type at a time, at a random point of the run."""
    candidates = REQUEST_TYPES[op]
    variant, name = candidates[zlib.crc32(f"{op}/{seed}".encode()) % len(candidates)]
    # A run reads back what its own saver uploaded from memory (the value
    # cache): GETs, and faults on them, need it off.
    options = {"value_cache_bytes": 0} if op == "GetObject" else {}
    inj = _surfaced_case(make_runner, seed, ops=frozenset({op}), pick=(variant, name), **options)
    assert inj.ops_injected(), f"no {op} fault was injected"


# ------------------------------------------------------------ batch requests


def _incompressible(seed: int, n: int) -> str:
    import base64

    return base64.b64encode(random.Random(seed).randbytes(n)).decode()


@pytest.mark.parametrize("kind", ["surfaced", "partial"])
@pytest.mark.parametrize("variant", ["sync", "async"])
def test_batch_write_faults_on_an_oversized_put(make_runner, variant: str, kind: str) -> None:  # type: ignore[no-untyped-def]
    """A state too large for one item (no bucket): values move to blob items,
    written with BatchWriteItem before the checkpoint. A surfaced fault leaves
    nothing visible, and the same put then succeeds; a partial batch is resubmitted."""
    r = make_runner(variant, max_attempts=0)
    h, thread = r.h, new_thread()
    values = {f"c{i}": _incompressible(i, 120_000) for i in range(4)}  # ~480 KB packed in all
    cp = checkpoint_of(values, {k: "1" for k in values})
    kinds = ("server", "reset", "lost") if kind == "surfaced" else ("partial",)
    inj = FaultInjector(
        7, rate=1.0, kinds=kinds, ops=frozenset({"BatchWriteItem"}), max_faults=1
    ).attach_saver(r.saver)
    if kind == "surfaced":
        with pytest.raises(Exception):  # noqa: B017 - botocore's error for the injected fault
            h.call(
                "put",
                {"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
                cp,
                {},
                dict(cp["channel_versions"]),
                saver=r.saver,
            )  # type: ignore[call-overload]
        with inj.paused():
            assert h.call("get_tuple", {"configurable": {"thread_id": thread}}, saver=r.fresh_saver()) is None
    stored = h.call(
        "put",
        {"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
        cp,
        {},
        dict(cp["channel_versions"]),
        saver=r.saver,
    )  # type: ignore[call-overload]
    assert inj.log and inj.ops_injected() == Counter({"dynamodb.BatchWriteItem": 1})
    assert h.call("get_tuple", stored, saver=r.fresh_saver()).checkpoint["channel_values"] == values


@pytest.mark.parametrize("kind", ["surfaced", "partial"])
@pytest.mark.parametrize("variant", ["sync", "async"])
def test_batch_get_faults_on_a_cold_read(make_runner, variant: str, kind: str) -> None:  # type: ignore[no-untyped-def]
    """A new process reads a checkpoint whose value is held twelve checkpoints
    back (outside the first Query page): one BatchGetItem. A surfaced fault
    raises (never a wrong or partial state); a partial batch is resubmitted."""
    r = make_runner(variant)
    h, thread = r.h, new_thread()
    doc = _incompressible(99, 6000)
    parent: dict[str, object] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    for step in range(1, 14):
        new = {"doc": "1", "n": str(step)} if step == 1 else {"n": str(step)}
        parent = h.call(
            "put",
            parent,
            checkpoint_of({"doc": doc, "n": step}, {"doc": "1", "n": str(step)}),
            {},
            new,
            saver=r.saver,
        )
    cold = r.fresh_saver() if kind == "partial" else h.make_saver(**{**r.overrides, "max_attempts": 0})
    if kind == "surfaced":
        r._extra.append(cold)
    kinds = ("server", "reset", "lost") if kind == "surfaced" else ("partial",)
    inj = FaultInjector(3, rate=1.0, kinds=kinds, ops=frozenset({"BatchGetItem"}), max_faults=1).attach_saver(
        cold
    )
    latest = {"configurable": {"thread_id": thread}}
    if kind == "surfaced":
        with pytest.raises(Exception):  # noqa: B017 - botocore's error for the injected fault
            h.call("get_tuple", latest, saver=cold)
    got = h.call("get_tuple", latest, saver=cold)
    assert inj.ops_injected() == Counter({"dynamodb.BatchGetItem": 1})
    assert got.checkpoint["channel_values"] == {"doc": doc, "n": 13}
