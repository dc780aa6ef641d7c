"""``python -m benchmarks.throughput``: workloads on the throughput layer; requests, throttles, conflicts, units.

Starts the tests' moto server (tests/support/moto_serial.py, with the
throughput layer tests/support/throughput.py and the conflict layer
tests/support/contention.py) and runs, with the sync saver:

1. **model**: the capacity model's validation workloads, larger (``--threads``
   threads of ``--steps`` steps), counting only: requests and units counted
   beside the model's prediction (``tools.capacity.replay_units``);
2. **fan-out**: one thread, one step of ``--fan-out`` tasks (500, then
   10,000: a step of 10,000 ``Send`` s) written by 16 workers at once, with
   the layer's limits at ``--scale`` of AWS's (one partition key value:
   1,000 x scale write units a second, wall clock): time against the
   partition-rate floor (the step's write units / the rate), throttles by
   reason, retries the saver needed, throttles the drivers paced, conflicts.

Writes ``benchmarks/throughput.json`` and prints a summary. Not part of the
timed suite; ``make bench`` runs it. Numbers depend on the machine (moto is
slower than a partition at AWS's full rate, hence the scale).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "throughput.json"


def _env() -> None:
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_CONFIG_FILE": "/dev/null",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )


def _model(endpoint: str, threads: int, steps: int) -> list[dict[str, Any]]:
    from tests.support import throughput
    from tests.support.harness import cfg, checkpoint_of

    from langgraph.checkpoint.dynamodb import DynamoDBSaver
    from langgraph.checkpoint.dynamodb.tools import capacity

    workloads = {
        "flat-6k-fanout-2": capacity.Workload(
            state_bytes=6000, fan_out=2, write_bytes=1500, ttl_seconds=86400
        ),
        "growing-1k": capacity.Workload(state_bytes=1000, state_growth_bytes=1200, write_bytes=300),
        "large-20k-fanout-3": capacity.Workload(state_bytes=20000, fan_out=3, write_bytes=3000),
    }
    rows = []
    for name, w in workloads.items():
        table = f"bench-{uuid.uuid4().hex[:8]}"
        saver = DynamoDBSaver(table_name=table, ttl=w.ttl_seconds)
        saver.setup()
        started = time.monotonic()
        with throughput.counting(endpoint):
            for _ in range(threads):
                thread, conf = f"t-{uuid.uuid4().hex[:8]}", None
                conf = cfg(thread)
                for step in range(steps):
                    versions = {"state": str(step + 1)}
                    cp = checkpoint_of(
                        {"state": os.urandom(w.state_bytes + step * w.state_growth_bytes)}, versions
                    )
                    conf = saver.put(conf, cp, {"step": step, "run_id": f"r-{thread}"}, versions)
                    for task in range(w.fan_out):
                        saver.put_writes(conf, [("state", os.urandom(w.write_bytes))], f"task-{step}-{task}")
                    saver.get_tuple(cfg(thread))
            state = throughput.capacity(endpoint)
        measured = {
            "table_write": throughput.total(state, table, "write"),
            "table_read": throughput.total(state, table, "read"),
            "run_index_write": throughput.total(state, table, "write", "run_id-index"),
            "threads_index_write": throughput.total(state, table, "write", "threads-index"),
        }
        rows.append(
            {
                "workload": name,
                "seconds": round(time.monotonic() - started, 2),
                "requests": {k: v for k, v in state["requests"].items() if k.startswith("dynamodb:")},
                "measured_units": measured,
                "predicted_units": capacity.replay_units(w, threads, steps),
            }
        )
        saver.close()
    return rows


def _fan_out(endpoint: str, tasks: int, scale: float) -> dict[str, Any]:
    from tests.support import contention, throughput
    from tests.support.harness import cfg, checkpoint_of

    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    table = f"bench-{uuid.uuid4().hex[:8]}"
    saver = DynamoDBSaver(table_name=table)
    saver.setup()
    retries = {"n": 0}
    client = saver.clients["dynamodb"]
    client.meta.events.register(
        "needs-retry.dynamodb.*",
        lambda attempts, response, **_: retries.__setitem__(
            "n", retries["n"] + (response is not None and "Error" in response[1])
        ),
    )
    thread = f"fan-{uuid.uuid4().hex[:8]}"
    conf = saver.put(cfg(thread), checkpoint_of({"x": 1}), {"step": 0}, {"x": "1"})
    payload = os.urandom(1500)  # 1,700 stored bytes: two write units per task
    failures: list[str] = []

    def write(i: int) -> None:
        try:
            saver.put_writes(conf, [("x", payload)], f"task-{i}")
        except Exception as exc:
            failures.append(type(exc).__name__)

    from langgraph.checkpoint.dynamodb import throttle_stats

    paced_before = sum(throttle_stats().values())
    with contention.enabled(endpoint, hold_ms=0), throughput.counting(endpoint, scale=scale):
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(write, range(tasks)))
        elapsed = time.monotonic() - started
        state = throughput.capacity(endpoint)
        conflicts = contention.status(endpoint)["counts"]
    units = throughput.total(state, table, "write")
    floor = units / (1000 * scale)
    saver.close()
    return {
        "tasks": tasks,
        "scale": scale,
        "write_units": units,
        "seconds": round(elapsed, 2),
        "floor_seconds": round(floor, 2),
        "ratio_to_floor": round(elapsed / floor, 2) if floor else None,
        "throttles": state["throttles"],
        "retried_responses": retries["n"],
        "paced_by_the_driver": sum(throttle_stats().values()) - paced_before,
        "failures": len(failures),
        "conflicts": conflicts.get("transaction_conflicts", 0) + conflicts.get("write_conflicts", 0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.throughput", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--threads", type=int, default=10)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--fan-out", type=int, nargs="+", default=[500, 10_000])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    _env()
    from tests.support.moto_serial import start, stop

    proc, endpoint = start({"STRICT_AWS": "enforce"})
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    try:
        result = {
            "model": _model(endpoint, args.threads, args.steps),
            "fan_out": [_fan_out(endpoint, n, args.scale) for n in args.fan_out],
        }
    finally:
        stop(proc)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for row in result["model"]:
        print(f"{row['workload']}: measured {row['measured_units']} predicted {row['predicted_units']}")
    for row in result["fan_out"]:
        print(f"fan-out: {json.dumps(row)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
