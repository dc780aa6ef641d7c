"""The event-loop side of the benchmarks (issue 16 target 4): what is measured is what is claimed."""

from __future__ import annotations

from typing import Any

from benchmarks.offload import SIZES, loop_section, loop_verdict, measure

from langgraph.checkpoint.dynamodb._engine import ops


def test_offload_measurement_restores_the_threshold_and_orders_its_costs() -> None:
    res = measure(repeats=1, tasks=1, rounds=2, lag_kb=32)
    assert ops.OFFLOAD_MIN_BYTES == res["threshold_bytes"] == 16 * 1024  # the "off" run put it back
    assert len(res["costs"]) == 2 * len(SIZES)
    for kind in ("chat", "tool"):
        rows = [c for c in res["costs"] if c["kind"] == kind]
        # Serialized sizes grow with the content asked for; packing the largest costs more than the smallest.
        assert [c["serialized_bytes"] for c in rows] == sorted(c["serialized_bytes"] for c in rows)
        assert rows[-1]["pack_s"] > rows[0]["pack_s"] > 0
    assert res["hop"]["median_s"] > 0
    assert set(res["lag"]) >= {"offload", "on the loop"}
    assert "## The event loop (issue 16, target 4)" in loop_section({"offload": res})


def _async(p99: float, tps: float) -> list[dict[str, Any]]:
    return [{"lag_p99_s": p99, "lag_max_s": p99 * 3, "turns_per_s": tps}]


def test_target_4_verdict_needs_both_lag_and_throughput() -> None:
    def verdict(ours: list[dict[str, Any]], ref: list[dict[str, Any]]) -> str:
        v = loop_verdict({"runs": {"async": {"ours": ours, "ref": ref}}})
        assert v is not None
        return v[0]

    assert verdict(_async(0.004, 20), _async(0.005, 9)) == "met"
    assert verdict(_async(0.006, 20), _async(0.005, 9)) == "not met"  # lag above the reference's
    assert verdict(_async(0.004, 17), _async(0.005, 9)) == "not met"  # under 2x its throughput
    assert loop_verdict({"runs": {"async": {"ours": _async(0.004, 20)}}}) is None
