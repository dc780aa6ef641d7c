"""``langgraph-dynamodb capacity``: the capacity model (tools/capacity.py) for a workload given as options."""

from __future__ import annotations

import argparse
import json
from dataclasses import fields
from typing import Any

from langgraph.checkpoint.dynamodb.cli._base import EXIT_OK, EXIT_USAGE, CLIError
from langgraph.checkpoint.dynamodb.cli._commands import Ctx

__all__ = ["cmd_capacity", "register"]

#: option -> (Workload field, type, help).
_OPTIONS: dict[str, tuple[str, Any, str]] = {
    "--threads": ("active_threads", int, "active threads"),
    "--steps-per-second": ("steps_per_second", float, "checkpoint steps per second, all threads"),
    "--busiest-thread-steps": (
        "busiest_thread_steps_per_second",
        float,
        "steps per second of the busiest thread",
    ),
    "--state-bytes": ("state_bytes", int, "stored size of a thread's first checkpoint"),
    "--state-growth": ("state_growth_bytes", int, "bytes a checkpoint grows per step"),
    "--steps-per-thread": ("steps_per_thread", int, "steps in a thread's life"),
    "--fan-out": ("fan_out", int, "tasks (put_writes) per step"),
    "--write-bytes": ("write_bytes", int, "stored size of one task's writes"),
    "--reads-per-step": ("reads_per_step", float, "get_tuple calls per step"),
    "--lists-per-second": ("lists_per_second", float, "whole-thread list calls per second"),
    "--history-kept": ("history_kept", int, "checkpoints kept per thread by pruning"),
    "--ttl": ("ttl_seconds", int, "the saver's TTL in seconds (threads are then tracked)"),
    "--prune-every": ("prune_every_seconds", int, "the pruner's schedule, seconds"),
    "--s3-threshold": ("s3_threshold", int, "values larger than this go to S3"),
    "--large-values-per-step": ("large_values_per_step", float, "values over the S3 threshold per step"),
    "--shards": ("threads_index_shards", int, "partition key values of the threads index"),
    "--processes": ("processes", int, "processes writing"),
    "--steps-per-lease": ("steps_per_lease", int, "steps per lease (with --lease-bound)"),
}


def register(add: Any) -> None:
    """Add the command to the parser (``add`` is ``build_parser``'s helper)."""
    from langgraph.checkpoint.dynamodb.tools.capacity import Workload

    defaults = {f.name: f.default for f in fields(Workload)}
    p = add(
        "capacity",
        "capacity model of a workload: hottest partitions, totals, Lambda concurrency, monthly cost, "
        "first limit and headroom (no AWS access; see docs/scale.md)",
        cmd_capacity,
        saver=False,
        connection=False,
    )
    for option, (name, kind, help_) in _OPTIONS.items():
        p.add_argument(
            option, dest=name, type=kind, default=defaults[name], help=f"{help_} (default {defaults[name]})"
        )
    p.add_argument(
        "--lease-bound",
        dest="lease_bound",
        action="store_true",
        help="writes through ThreadLease.bind (each a transaction with a lock check)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable JSON output")


def cmd_capacity(ctx: Ctx) -> int:
    from langgraph.checkpoint.dynamodb.tools.capacity import Workload, plan, render_text

    args: argparse.Namespace = ctx.args
    try:
        chosen = {name: getattr(args, name) for name, _, _ in _OPTIONS.values()}
        workload = Workload(**chosen, lease_bound=args.lease_bound)
    except ValueError as exc:
        raise CLIError(str(exc), EXIT_USAGE, "usage") from exc
    result = plan(workload)
    if ctx.json:
        ctx.out(json.dumps(result.to_dict(), default=str))
    else:
        ctx.out(render_text(result))
    return EXIT_OK
