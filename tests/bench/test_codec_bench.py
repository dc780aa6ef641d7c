"""The codec side of the benchmarks (issue 16 target 1): what is measured is what is claimed."""

from __future__ import annotations

import os
from typing import Any

import pytest
from benchmarks.codecs import measure_codecs, payloads
from benchmarks.orchestrate import ROOT, side_env
from benchmarks.runner import run
from benchmarks.workloads import Params


def test_subprocesses_run_this_checkouts_saver() -> None:
    """A worktree shares the main checkout's venv (an editable install of *another* src):
    our side must import this tree's code, the reference's must not see it."""
    ours = side_env("ours")["PYTHONPATH"].split(os.pathsep)
    assert ours[0] == str(ROOT / "src")
    assert str(ROOT / "src") not in side_env("ref")["PYTHONPATH"].split(os.pathsep)
    assert side_env("ours-zlib")["PYTHONPATH"] == side_env("ours")["PYTHONPATH"]


def test_codec_measurement_on_the_workloads_payloads() -> None:
    tiny = Params.tiny()
    assert len(payloads("big", tiny)) == 2 * tiny.big_turns
    res = measure_codecs(params=tiny, repeats=1)
    assert res["zstd_available"]
    for wl in ("big", "chat"):
        rows = {r["label"]: r for r in res["workloads"][wl]["candidates"]}
        auto = next(r for r in rows.values() if r["compression"] == "auto")
        # Bytes are deterministic: auto must not store more than the former default, zlib 6.
        assert auto["packed_bytes"] <= rows["zlib 6 (former default)"]["packed_bytes"]
        assert all(r["pack_ms_per_turn"] > 0 for r in rows.values())


@pytest.fixture
def storage(moto_endpoint: str, names: dict[str, str]) -> dict[str, str]:
    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    with DynamoDBSaver(table_name=names["table_name"], bucket_name=names["bucket_name"]) as saver:
        saver.setup()
    return names


def test_ours_side_writes_zstd_and_ours_zlib_zlib(storage: dict[str, str]) -> None:
    """``ours`` is the default as shipped (zstd by size), ``ours-zlib`` the former default."""
    import boto3

    s3 = boto3.client("s3")
    bucket = storage["bucket_name"]

    def codecs_written() -> set[int]:
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
        seen: set[int] = set()
        for key in keys:
            body: Any = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            seen.add(body[1])
            s3.delete_object(Bucket=bucket, Key=key)
        return seen

    kw: dict[str, Any] = {"table": storage["table_name"], "bucket": bucket, "params": Params.tiny()}
    run("ours", "big", **kw)
    assert codecs_written() == {ord("s")}
    former = run("ours-zlib", "big", **kw)
    assert codecs_written() == {ord("z")}
    assert former["meta"]["side"] == "ours-zlib"
