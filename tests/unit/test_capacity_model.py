"""The capacity model's arithmetic and its CLI (no AWS: the model is pure).

That the per-request costs are what the saver sends is checked against the
throughput layer in tests/integration/test_capacity_model.py.
"""

from __future__ import annotations

import io
import json

import pytest

from langgraph.checkpoint.dynamodb.cli._parser import main
from langgraph.checkpoint.dynamodb.tools.capacity import Workload, head_refreshes_per_second, plan


def test_the_busiest_thread_is_the_hottest_table_partition() -> None:
    w = Workload(busiest_thread_steps_per_second=10, state_bytes=2000, fan_out=4, write_bytes=900)
    hot = plan(w).hottest["table_partition"]
    # put: 400 + 2,000 bytes -> 3 units; each task's writes 200 + 900 -> 2 units; 10 steps a second.
    assert hot["write_units_per_second"] == 10 * (3 + 4 * 2)
    assert hot["fan_out_burst_units"] == 8
    # get_tuple: the checkpoint and its 4 writes, 6,800 bytes -> 2 read units.
    assert hot["read_units_per_second"] == 10 * 2


def test_head_refreshes_are_bounded_by_the_window_and_by_the_steps() -> None:
    assert head_refreshes_per_second(Workload(ttl_seconds=None)) == 0
    # A day's TTL: a window of 8,640 s; 10,000 threads -> 1.16 refreshes a second.
    assert head_refreshes_per_second(Workload(active_threads=10_000, ttl_seconds=86_400)) == pytest.approx(
        10_000 / 8_640
    )
    assert head_refreshes_per_second(Workload(active_threads=10**7, steps_per_second=5, ttl_seconds=600)) == 5


def test_more_shards_spread_the_threads_index_hot_partition() -> None:
    base = dict(active_threads=10**7, steps_per_second=10**5, ttl_seconds=3600)
    four = plan(Workload(**base, threads_index_shards=4)).hottest["threads_index_partition"]
    many = plan(Workload(**base, threads_index_shards=64)).hottest["threads_index_partition"]
    assert four["write_units_per_second"] == 16 * many["write_units_per_second"] > 0


def test_the_first_limit_is_the_least_headroom() -> None:
    p = plan(Workload(active_threads=10**7, steps_per_second=10**5, ttl_seconds=604_800))
    assert p.first_limit == min(p.headroom, key=lambda r: r["headroom"])
    assert p.first_limit["name"].startswith("table writes")  # the per-table quota: raise it
    assert not p.first_hard_limit["adjustable"] and p.first_hard_limit["headroom"] > 1


def test_the_cli_prints_the_plan_as_json_and_text() -> None:
    out = io.StringIO()
    code = main(
        ["capacity", "--threads", "1000", "--steps-per-second", "50", "--fan-out", "3", "--json"], stdout=out
    )
    assert code == 0
    data = json.loads(out.getvalue())
    assert data["workload"]["fan_out"] == 3 and data["workload"]["active_threads"] == 1000
    assert data["first_limit"]["name"] and data["monthly_cost_usd"]["total_on_demand"] > 0
    text = io.StringIO()
    assert main(["capacity", "--steps-per-second", "50"], stdout=text) == 0
    assert "first limit:" in text.getvalue() and "monthly cost" in text.getvalue()


def test_the_cli_refuses_an_impossible_workload() -> None:
    err = io.StringIO()
    assert main(["capacity", "--threads", "0"], stdout=io.StringIO(), stderr=err) == 2


def test_docs_scale_holds_the_models_headroom_table() -> None:
    from pathlib import Path

    from langgraph.checkpoint.dynamodb.tools.capacity import headroom_table

    page = (Path(__file__).resolve().parents[2] / "docs" / "scale.md").read_text()
    assert headroom_table() in page, "regenerate docs/scale.md's table: print(headroom_table())"


def test_lease_bound_writes_cost_a_transaction_and_a_lock_check() -> None:
    plain = plan(Workload(state_bytes=2000, write_bytes=900)).per_request
    bound = plan(Workload(state_bytes=2000, write_bytes=900, lease_bound=True)).per_request
    assert bound["put"]["table_write"] == 2 * plain["put"]["table_write"] + 2
    assert bound["put_writes"]["table_write"] == 2 * plain["put_writes"]["table_write"] + 2
    out = io.StringIO()
    assert main(["capacity", "--lease-bound", "--json"], stdout=out) == 0
    assert json.loads(out.getvalue())["workload"]["lease_bound"] is True
