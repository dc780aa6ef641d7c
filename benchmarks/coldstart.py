"""Cold start probe: run in a fresh interpreter, print one JSON line.

``python -m benchmarks.coldstart --side ours --table T --bucket B`` imports the
saver, builds it and calls ``get_tuple`` once (a thread that does not
exist), timing each step, and lists which heavy packages the import pulled
in. This is what a Lambda cold start pays before the first checkpoint read
(Python's own start-up is measured by the parent as the process wall time).
"""

from __future__ import annotations

import time

_T_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

#: Packages whose presence in ``sys.modules`` after the import is reported.
WATCH = (
    "aiobotocore",
    "aiohttp",
    "aioboto3",
    "aws_cdk",
    "jsii",
    "constructs",
    "moto",
    "langgraph.checkpoint.dynamodb.aio",
    "langgraph.checkpoint.dynamodb.cli",
    "langgraph.checkpoint.dynamodb.tools.local",
    "langgraph.graph",
    "langgraph.pregel",
    "valkey",
    "boto3",
    "botocore",
)


def main(argv: list[str] | None = None) -> int:
    """Import, build, first ``get_tuple``; print the timings as JSON."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.coldstart")
    ap.add_argument("--side", choices=("ours", "ref"), required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--bucket", required=True)
    args = ap.parse_args(argv)
    before = set(sys.modules)
    t0 = time.perf_counter()
    if args.side == "ours":
        from langgraph.checkpoint.dynamodb import DynamoDBSaver

        import_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        saver = DynamoDBSaver(table_name=args.table, bucket_name=args.bucket, region_name="us-east-1")
        clients = [c for c in saver.clients.values() if c is not None]
    else:
        from langgraph_checkpoint_aws import DynamoDBSaver as RefSaver

        import_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        saver = RefSaver(
            table_name=args.table, region_name="us-east-1", s3_offload_config={"bucket_name": args.bucket}
        )
        clients = [saver.client, saver.storage.s3_client]
    build_s = time.perf_counter() - t1
    imported = set(sys.modules) - before
    watched = {w: w in sys.modules for w in WATCH}
    # The meter is attached after the timed import/build (it only imports the standard library).
    from benchmarks.counting import Meter

    meter = Meter()
    for c in clients:
        meter.attach(c)
    t2 = time.perf_counter()
    found = saver.get_tuple({"configurable": {"thread_id": "cold-start-probe"}})
    first_s = time.perf_counter() - t2
    tops = sorted(
        {m.split(".")[0] for m in imported}
        - set(sys.stdlib_module_names)
        - {"__mp_main__", "cython_runtime", "_cython_3_3_1"}
    )
    tops = [t for t in tops if not t.startswith("_")]
    out = {
        "side": args.side,
        "interpreter_to_main_s": t0 - _T_START,
        "import_s": import_s,
        "build_s": build_s,
        "first_get_tuple_s": first_s,
        "found": found is not None,
        "modules_imported": len(imported),
        "third_party_packages": tops,
        "watched": watched,
        "first_get_tuple_requests": meter.snapshot().to_dict()["requests"],
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
