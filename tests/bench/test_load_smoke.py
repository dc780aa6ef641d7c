"""Smoke tests of the load benchmark (issue 16 target 5) and the cost model (target 6).

Tiny sizes against the moto server on 127.0.0.1; the growth classification is
checked on real counts, and on series built to fail it.
"""

from __future__ import annotations

from typing import Any

import pytest
from benchmarks import report_perf
from benchmarks.load import EXPECTED, LoadParams, classify, run_load, verdict


@pytest.fixture
def storage(moto_endpoint: str, names: dict[str, str]) -> dict[str, str]:
    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    with DynamoDBSaver(table_name=names["table_name"], bucket_name=names["bucket_name"]) as saver:
        saver.setup()
    return names


@pytest.mark.parametrize(
    "points,expected",
    [
        ([(1, 1), (50, 1), (1000, 1)], "flat"),
        ([(1, 2.0), (50, 2.0)], "flat"),
        ([(1, 3), (10, 4), (100, 13), (1000, 121)], "linear"),  # a constant, then one per 9 items
        ([(1, 1), (100, 10), (1000, 32)], "sublinear"),
        ([(1, 1), (10, 100), (100, 10_000)], "superlinear"),  # what a per-item re-read would look like
        ([(1, 0), (10, 0)], "flat"),
    ],
)
def test_classify(points: list[tuple[int, float]], expected: str) -> None:
    assert classify(points) == expected


def test_classify_needs_two_sizes_and_verdicts_refuse_the_wrong_growth() -> None:
    with pytest.raises(ValueError):
        classify([(10, 1)])
    assert verdict("get_tuple", "flat", "flat")
    assert not verdict("get_tuple", "linear", "flat")  # a request per checkpoint: the N+1 trap
    assert not verdict("delete_thread", "flat", "flat")  # deleting nothing is not deleting
    assert not verdict("copy_thread", "linear", "superlinear")


def test_growth_on_real_counts(storage: dict[str, str]) -> None:
    """1, 10 and 50 checkpoints: get_tuple and put the same, delete and copy grow with the items."""
    params = LoadParams(threads=6, workers=3, turns=1, sizes=(1, 10, 50), repeats=1)
    res = run_load(storage["table_name"], storage["bucket_name"], params)
    tp = res["throughput"]
    assert tp["operations"] == 6 * 5 and tp["ops_per_s"] > 0
    # Every call of the turn is one request (the saver's 1-request-per-call contract).
    assert tp["requests_per_thread"] == 5
    assert set(tp["per_operation"]) == {"get_tuple", "put", "put_writes", "list"}
    g = res["growth"]
    assert set(g) == set(EXPECTED)
    small, large = (g["get_tuple"]["points"][i] for i in (0, -1))
    assert small["requests"] == large["requests"] == 1
    assert g["get_tuple"]["requests_growth"] == "flat"
    assert g["put"]["points"][0]["requests"] == g["put"]["points"][-1]["requests"] == 1
    assert g["put"]["ok"]
    d1, _, d50 = g["delete_thread"]["points"]
    assert d50["items"] >= 50 * d1["items"]  # every checkpoint and its writes item, gone
    assert d50["requests"] > d1["requests"] and d50["wcu"] > 10 * d1["wcu"]
    assert g["delete_thread"]["units_growth"] == "linear" and g["delete_thread"]["ok"]
    c1, _, c50 = g["copy_thread"]["points"]
    assert c50["items"] >= 50 * c1["items"] and g["copy_thread"]["ok"]
    assert g["prune"]["points"][-1]["checkpoints_deleted"] == 49 and g["prune"]["ok"]
    assert g["list[all]"]["points"][-1]["items"] == 50


def test_load_and_cost_sections_render(storage: dict[str, str], tmp_path: Any) -> None:
    params = LoadParams(threads=2, workers=2, turns=1, sizes=(1, 3, 5), repeats=1)
    res = {"load": run_load(storage["table_name"], storage["bucket_name"], params), "runs": {}}
    text = "\n".join(report_perf.load_section(res))
    assert "## Load and growth" in text and "`delete_thread`" in text and "**Verdict:" in text
    assert report_perf.load_plots(res, tmp_path) == [tmp_path / "load_growth.png"]


def test_cost_model_formula() -> None:
    """The table's dollars are the formula's, at the listed prices."""
    phase = {
        "requests": {"dynamodb:PutItem": 30, "s3:PutObject": 4, "s3:GetObject": 2, "s3:DeleteObjects": 9},
        "wcu": 100.0,
        "gsi_wcu": 20.0,
        "rcu": 40.0,
        "storage": {"ddb_bytes": 2 * 1024**3, "gsi_bytes": 0, "s3_bytes": 1024**3},
    }
    inputs = report_perf.turn_inputs([phase], turns=10)
    assert inputs == {
        "wru": 12.0,
        "rru": 4.0,
        "s3_put": 0.4,
        "s3_get": 0.2,  # deletes are free, not GET-tier
        "ddb_bytes": 2 * 1024**3 / 10,
        "s3_bytes": 1024**3 / 10,
    }
    c = report_perf.cost_per_1000_turns(inputs)
    p = report_perf.PRICES
    assert c["writes"] == pytest.approx(1000 * 12 * p["wru_per_million"] / 1e6)
    assert c["s3_requests"] == pytest.approx((400 * p["s3_put_per_1000"] + 200 * p["s3_get_per_1000"]) / 1000)
    assert c["ddb_storage"] == pytest.approx(200 * p["ddb_gb_month"])
    assert report_perf.cost_per_1000_turns(inputs, months=3)["s3_storage"] == pytest.approx(
        3 * 100 * p["s3_gb_month"]
    )
    # The prices are current on-demand ones (cut 2024-11-01), not the older $1.25/$0.25.
    assert p["wru_per_million"] == 0.625 and p["rru_per_million"] == 0.125
