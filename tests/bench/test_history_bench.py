"""The ``delta_history`` workload and the report's verdicts of issue 16 targets 2 and 3, at smoke-test sizes."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from benchmarks.report_perf import history_verdict, read_units_verdict
from benchmarks.runner import run
from benchmarks.workloads import Params


@pytest.fixture
def storage(moto_endpoint: str, names: dict[str, str]) -> dict[str, str]:
    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    with DynamoDBSaver(table_name=names["table_name"], bucket_name=names["bucket_name"]) as saver:
        saver.setup()
    return names


def test_delta_history_workload_and_verdicts(storage: dict[str, str]) -> None:
    tiny = Params.tiny()
    out = run(
        "ours", "delta_history", table=storage["table_name"], bucket=storage["bucket_name"], params=tiny
    )
    assert out["stopped"] is None
    probes = sorted(k for k in out["phases"] if k.startswith("history@"))
    assert len(probes) == 2, probes
    assert out["history_lengths"] == {k.split("@")[1]: int(k.split("@")[1]) for k in probes}
    res: dict[str, Any] = {"runs": {"delta_history": {"ours": [out]}}}
    verdict, measured = history_verdict(res)  # type: ignore[misc]
    assert verdict == "not met" and "before" not in measured  # no baseline run: never "met"
    # A baseline ten times slower with the same sizes: met (if the units grew linearly).
    before = copy.deepcopy(out)
    for p in before["phases"].values():
        p["seconds"] *= 20
    res["runs"]["delta_history"]["ours-before"] = [{**before, "commit": "abc1234"}]
    verdict, measured = history_verdict(res)  # type: ignore[misc]
    assert "abc1234" in measured and "20.0x" in measured
    # Target 3 compares phases both savers finished.
    ref = copy.deepcopy(out)
    for p in ref["phases"].values():
        p["rcu"] *= 2
    res["runs"]["delta_history"]["ref"] = [ref]
    assert read_units_verdict(res)[0] == "met"  # type: ignore[index]
    for p in ref["phases"].values():
        p["rcu"] /= 4
    assert read_units_verdict(res)[0] == "not met"  # type: ignore[index]
