"""Run one workload for one saver and write the measurements as JSON.

Used in-process by the smoke tests, and as a subprocess by the
orchestrator (``python -m benchmarks.runner --side ref ...`` with the
reference's interpreter), so that both savers run the same code::

    python -m benchmarks.runner --side ours --workload chat \\
        --table T --bucket B --latency model --verify --out result.json

The table and bucket must exist (the orchestrator creates them). The
endpoint comes from ``AWS_ENDPOINT_URL``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import sys
import time
import uuid
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from benchmarks.counting import LatencyModel, Meter
from benchmarks.sides import REGION, open_async_saver, open_sync_saver, saver_version
from benchmarks.workloads import WORKLOADS, Context, Params, params_from_dict, params_to_dict

__all__ = ["main", "package_versions", "run"]


def package_versions(side: str) -> dict[str, str]:
    """Versions of the packages that shape the numbers, in this interpreter."""
    out = {"python": platform.python_version(), "saver": saver_version(side)}
    for dist in ("langgraph", "langgraph-checkpoint", "langchain-core", "boto3", "botocore", "aiobotocore"):
        with contextlib.suppress(PackageNotFoundError):
            out[dist] = version(dist)
    return out


def _load_existing(meter: Meter, ddb: Any, s3: Any, table: str, bucket: str) -> None:
    """Put what the table and bucket already hold into the meter's mirror."""
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        resp = ddb.scan(**kwargs)
        for item in resp.get("Items", []):
            meter.mirror.put(table, item)
        if "LastEvaluatedKey" not in resp:
            break
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
    kw: dict[str, Any] = {"Bucket": bucket}
    while True:
        listing = s3.list_objects_v2(**kw)
        for obj in listing.get("Contents", []):
            meter.mirror.objects[(bucket, obj["Key"])] = int(obj["Size"])
        if not listing.get("IsTruncated"):
            break
        kw["ContinuationToken"] = listing["NextContinuationToken"]


def run(
    side: str,
    workload: str,
    *,
    table: str,
    bucket: str,
    params: Params | None = None,
    latency: LatencyModel | None = None,
    verify: bool = False,
    thread_prefix: str | None = None,
) -> dict[str, Any]:
    """Run ``workload`` with ``side``'s saver against the existing ``table``/``bucket``.

    Returns the workload's result plus ``phases``, ``meta`` and, with
    ``verify``, ``mirror_problems`` (differences between the meter's mirror
    and a full scan: empty when the byte accounting is exact).
    """
    import boto3

    params = params or Params()
    plain_ddb = boto3.client("dynamodb", region_name=REGION)
    plain_s3 = boto3.client("s3", region_name=REGION)

    def auditor(tname: str, key: dict[str, Any]) -> dict[str, Any] | None:
        item: dict[str, Any] | None = plain_ddb.get_item(TableName=tname, Key=key, ConsistentRead=True).get(
            "Item"
        )
        return item

    meter = Meter(latency=latency, auditor=auditor)
    meter.mirror.add_table(plain_ddb.describe_table(TableName=table)["Table"])
    _load_existing(meter, plain_ddb, plain_s3, table, bucket)
    ctx = Context(meter=meter, params=params, thread_prefix=thread_prefix or f"bench-{uuid.uuid4().hex[:8]}")
    close = None
    if workload == "async":
        ctx.open_async = lambda: open_async_saver(side, table, bucket, meter)
    else:
        ctx.saver, close = open_sync_saver(side, table, bucket, meter)
    t0 = time.perf_counter()
    try:
        result = WORKLOADS[workload](ctx)
    finally:
        if close is not None:
            close()
    result["wall_s"] = time.perf_counter() - t0
    result["phases"] = ctx.phases
    result["meta"] = {
        "side": side,
        "workload": workload,
        "latency": None if latency is None else {"dynamodb": latency.dynamodb, "s3": latency.s3},
        "params": params_to_dict(params),
        "versions": package_versions(side),
    }
    if verify:
        result["mirror_problems"] = meter.mirror.verify(plain_ddb, plain_s3, [bucket])[:20]
    plain_ddb.close()
    plain_s3.close()
    return result


def main(argv: list[str] | None = None) -> int:
    """Command line: run one workload and write its JSON result."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.runner", description=__doc__)
    ap.add_argument("--side", choices=("ours", "ours-zlib", "ours-iothread", "ref", "ref-gz"), required=True)
    ap.add_argument("--workload", choices=sorted(WORKLOADS), required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--bucket", required=True)
    ap.add_argument("--params", default="{}", help="JSON object of Params fields")
    ap.add_argument("--latency", choices=("none", "model"), default="model")
    ap.add_argument("--ddb-ms", type=float, default=8.0)
    ap.add_argument("--s3-ms", type=float, default=25.0)
    ap.add_argument("--verify", action="store_true")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    params = params_from_dict({**params_to_dict(Params()), **json.loads(args.params)})
    latency = LatencyModel(args.ddb_ms / 1000, args.s3_ms / 1000) if args.latency == "model" else None
    result = run(
        args.side,
        args.workload,
        table=args.table,
        bucket=args.bucket,
        params=params,
        latency=latency,
        verify=args.verify,
    )
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
