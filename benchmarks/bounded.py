"""Bounded reads: peak memory of a reader fed the worst payloads an attacker can store.

``python -m benchmarks.bounded`` starts a moto server on 127.0.0.1, stores a
checkpoint, then damages it the way a tenant with write access to its own
keys could, one attack at a time:

* ``zlib-item``: the checkpoint item's body replaced by a zlib bomb (370 MiB
  of zeros, about 360 KB compressed: the item stays under DynamoDB's 400 KB);
* ``zstd-item``: the same body as a zstd bomb (370 MiB declared in its frame);
* ``s3-body``: a channel value's S3 object replaced by a 256 MiB body;
* ``blob-item``: a blob item's payload replaced by the zlib bomb.

For each attack (and for the sync and the async saver) a *fresh* Python
process builds a saver with default settings, reads an intact copy of the
thread first (imports, clients, a normal decode), records its peak RSS,
then reads the damaged checkpoint; it prints one JSON line with both peaks
(``VmHWM``, see :func:`peak_rss_kib`) and the error it got. Run it with ``PYTHONPATH`` pointing at
another checkout's ``src`` to measure that version.

``python -m benchmarks.bounded read ...`` is that reader (used by the tests
in ``tests/security/test_bounded_reads.py`` too).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
import uuid
import zlib
from typing import Any

MIB = 1024 * 1024

#: The bomb of the issue: 370 MiB that compress to about 360 KB.
BOMB_SIZE = 370 * MIB
#: An S3 body far over the default limit (64 MiB).
S3_BODY_SIZE = 256 * MIB

KINDS = ("zlib-item", "zstd-item", "s3-body", "blob-item")


def _text(prefix: str, n: int) -> str:
    return (prefix * n)[:n]


@functools.lru_cache(maxsize=4)
def zlib_bomb(size: int, type_name: str = "msgpack") -> bytes:
    """A packed payload (the codec's format) whose zlib data expands to ``size`` zero bytes."""
    c = zlib.compressobj(9)
    chunk = bytes(MIB)
    parts = [c.compress(chunk) for _ in range(size // MIB)]
    parts.append(c.compress(bytes(size % MIB)))
    parts.append(c.flush())
    return bytes((1, ord("z"), len(type_name))) + type_name.encode() + b"".join(parts)


@functools.lru_cache(maxsize=4)
def zstd_bomb(size: int, type_name: str = "msgpack") -> bytes:
    """A packed zstd payload of ``size`` zero bytes, its size declared in the frame header."""
    import zstandard

    data = zstandard.ZstdCompressor(level=19).compress(bytes(size))
    return bytes((1, ord("s"), len(type_name))) + type_name.encode() + data


def prepare(table: str, bucket: str, thread: str, **saver_kw: Any) -> dict[str, Any]:
    """Store a checkpoint with a value in S3 and one in a blob item; return its config.

    Uses a sync saver (``inline_threshold=64, s3_threshold=1024``): ``s3``
    goes to S3, ``blob`` is held by the parent checkpoint and re-homed to a
    blob item when ``prune`` deletes that parent. ``saver_kw``: more saver
    options (a ``serde``).
    """
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    def ckpt(values: dict[str, Any]) -> Any:
        cp = empty_checkpoint()
        cp["id"] = str(uuid6(clock_seq=-1))
        cp["channel_values"] = values
        cp["channel_versions"] = {k: "1" for k in values}
        return cp

    kw: dict[str, Any] = {"inline_threshold": 64, "s3_threshold": 1024, **saver_kw}
    with DynamoDBSaver(table_name=table, bucket_name=bucket, **kw) as saver:
        # Random text: it must stay over the S3 threshold once compressed.
        values: dict[str, Any] = {"small": 1, "blob": _text("b", 200), "s3": os.urandom(3000).hex()}
        cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        parent = saver.put(cfg, ckpt(values), {"step": 0}, {k: "1" for k in values})
        values["held"] = _text("h", 200)
        stored = saver.put(parent, ckpt(values), {"step": 1}, {"held": "1"})
        saver.prune([thread])  # the parent goes: "blob" moves to its blob item
        return {
            "config": stored,
            "s3_key": saver.keys.value_s3_key(thread, "", "s3", "1"),
            "blob_sk": _schema().blob_sk("", "blob", "1"),
        }


def _schema() -> Any:
    from langgraph.checkpoint.dynamodb import schema

    return schema


def attack(
    kind: str, table: str, bucket: str, thread: str, prepared: dict[str, Any], *, size: int = BOMB_SIZE
) -> None:
    """Damage the prepared thread as a tenant with raw access to its own keys would."""
    import boto3

    schema = _schema()
    pk = {"S": schema.partition_key(thread)}
    cid = prepared["config"]["configurable"]["checkpoint_id"]
    ddb = boto3.client("dynamodb")

    def set_binary(sk: str, attr: str, payload: bytes) -> None:
        ddb.update_item(
            TableName=table,
            Key={schema.ATTR.PK: pk, schema.ATTR.SK: {"S": sk}},
            UpdateExpression="SET #a = :v",
            ExpressionAttributeNames={"#a": attr},
            ExpressionAttributeValues={":v": {"B": payload}},
        )

    if kind == "zlib-item":
        set_binary(schema.checkpoint_sk("", cid), schema.ATTR.BODY, zlib_bomb(size))
    elif kind == "zstd-item":
        set_binary(schema.checkpoint_sk("", cid), schema.ATTR.BODY, zstd_bomb(size))
    elif kind == "blob-item":
        set_binary(prepared["blob_sk"], schema.ATTR.BLOB, zlib_bomb(size))
    elif kind == "s3-body":
        s3 = boto3.client("s3")
        s3.put_object(Bucket=bucket, Key=prepared["s3_key"], Body=b"\x01n\x07msgpack" + bytes(size))
    else:
        raise ValueError(kind)


# ------------------------------------------------------- parent cycles


def chain(store: dict[str, str], thread: str, n: int, *, snapshots: bool = False) -> list[str]:
    """A legitimate delta chain of ``n`` checkpoints (oldest first), one run
    each: only the first stores ``msgs`` and every later one rebuilds it from
    its ancestors (with ``snapshots``, every checkpoint stores it)."""
    from langgraph.checkpoint.base.id import uuid6

    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    ids: list[str] = []
    with DynamoDBSaver(**store) as saver:
        parent = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        for i in range(n):
            cp = {
                "v": 1,
                "id": str(uuid6(clock_seq=-1)),
                "ts": "2026-11-30T00:00:00+00:00",
                "channel_values": {"msgs": ["m0"]} if i == 0 or snapshots else {},
                "channel_versions": {"msgs": f"{i + 1:032}.0"},
                "versions_seen": {},
                "updated_channels": None,
            }
            md = {"step": i, "run_id": f"{thread}-run-{i}", "counters_since_delta_snapshot": {"msgs": [i, i]}}
            parent = saver.put(parent, cp, md, {"msgs": f"{i + 1:032}.0"})
            saver.put_writes(parent, [("msgs", f"m{i + 1}")], f"task-{i}", "~a")
            ids.append(cp["id"])
    return ids


def set_parent(store: dict[str, str], thread: str, cid: str, parent: str) -> None:
    """The attack: rewrite one item's parent id in the attacker's own partition."""
    import boto3

    schema = _schema()
    boto3.client("dynamodb").update_item(
        TableName=store["table_name"],
        Key={
            schema.ATTR.PK: {"S": schema.partition_key(thread)},
            schema.ATTR.SK: {"S": schema.checkpoint_sk("", cid)},
        },
        UpdateExpression="SET #p = :p",
        ExpressionAttributeNames={"#p": schema.ATTR.PARENT_ID},
        ExpressionAttributeValues={":p": {"S": parent}},
    )


def ring(store: dict[str, str], thread: str, size: int) -> list[str]:
    """A ring of ``size`` crafted delta checkpoints (each needs ``msgs``, none
    stores it), written raw as copies of one legitimate item."""
    import boto3
    from langgraph.checkpoint.base.id import uuid6

    schema = _schema()
    ids = chain(store, thread, 2)
    client = boto3.client("dynamodb")
    template = client.get_item(
        TableName=store["table_name"],
        Key={
            schema.ATTR.PK: {"S": schema.partition_key(thread)},
            schema.ATTR.SK: {"S": schema.checkpoint_sk("", ids[1])},
        },
        ConsistentRead=True,
    )["Item"]
    members = sorted(str(uuid6(clock_seq=-1)) for _ in range(size))
    items = []
    for i, cid in enumerate(members):
        item = dict(template)
        item[schema.ATTR.SK] = {"S": schema.checkpoint_sk("", cid)}
        item[schema.ATTR.PARENT_ID] = {"S": members[i - 1]}  # the first's parent is the newest: a loop
        items.append(item)
    for i in range(0, len(items), 25):
        resp = client.batch_write_item(
            RequestItems={store["table_name"]: [{"PutRequest": {"Item": it}} for it in items[i : i + 25]]}
        )
        assert not resp.get("UnprocessedItems")
    return members


def time_cycles(store: dict[str, str]) -> list[dict[str, Any]]:
    """Seconds until delta history and ``prune(keep_last=1)`` refuse each cycle shape (sync saver)."""
    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    rows = []
    for shape in ("self-loop", "2-cycle", "ring-1000"):
        thread = f"cycle-{uuid.uuid4().hex[:8]}"
        if shape == "ring-1000":
            head = ring(store, thread, 1000)[-1]
        else:
            ids = chain(store, thread, 4)
            head = ids[-1]
            set_parent(store, thread, ids[-1] if shape == "self-loop" else ids[-2], ids[-1])
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": head}}
        with DynamoDBSaver(**store) as saver:
            row: dict[str, Any] = {"shape": shape}
            for name, call in (
                ("history", lambda c=config: saver.get_delta_channel_history(config=c, channels=["msgs"])),
                ("prune", lambda t=thread: saver.prune([t], keep_last=1)),
            ):
                start = time.perf_counter()
                try:
                    call()
                    row[name + "_error"] = None
                except Exception as exc:
                    row[name + "_error"] = type(exc).__name__
                row[name + "_s"] = round(time.perf_counter() - start, 3)
            rows.append(row)
    return rows


# ------------------------------------------------------------------ reader


def peak_rss_kib() -> int:
    """This process's peak resident set size, in KiB.

    ``VmHWM`` from ``/proc/self/status`` where there is one (Linux): unlike
    ``ru_maxrss``, which Linux carries across ``exec`` from the parent's
    RSS at ``fork`` time, it covers this program only.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS


def read(args: argparse.Namespace) -> dict[str, Any]:
    """Read the intact thread, then the damaged one; report peak RSS before and after."""
    saver_kw: dict[str, Any] = {"table_name": args.table, "bucket_name": args.bucket}
    if args.max_payload_size:
        saver_kw["max_payload_size"] = args.max_payload_size
    warm = {"configurable": {"thread_id": args.warm_thread, "checkpoint_ns": ""}}
    target = {"configurable": {"thread_id": args.thread, "checkpoint_ns": ""}}
    error: BaseException | None = None
    if args.mode == "sync":
        from langgraph.checkpoint.dynamodb import DynamoDBSaver

        with DynamoDBSaver(**saver_kw) as saver:
            assert saver.get_tuple(warm) is not None
            before = peak_rss_kib()
            start = time.perf_counter()
            try:
                saver.get_tuple(target)
            except Exception as exc:
                error = exc
            seconds = time.perf_counter() - start
    else:
        import asyncio

        from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

        async def main() -> tuple[int, float, BaseException | None]:
            async with AsyncDynamoDBSaver(**saver_kw) as saver:
                assert await saver.aget_tuple(warm) is not None
                before = peak_rss_kib()
                start = time.perf_counter()
                try:
                    await saver.aget_tuple(target)
                except Exception as exc:
                    return before, time.perf_counter() - start, exc
                return before, time.perf_counter() - start, None

        before, seconds, error = asyncio.run(main())
    peak = peak_rss_kib()
    return {
        "mode": args.mode,
        "baseline_mib": round(before / 1024, 1),
        "peak_mib": round(peak / 1024, 1),
        "growth_mib": round((peak - before) / 1024, 1),
        "seconds": round(seconds, 3),
        "error": None if error is None else type(error).__name__,
        "message": None if error is None else str(error)[:300],
    }


def run_reader(
    mode: str, table: str, bucket: str, thread: str, warm_thread: str, *, max_payload_size: int | None = None
) -> dict[str, Any]:
    """Run :func:`read` in a fresh interpreter (a clean peak RSS) and return its JSON."""
    cmd = [sys.executable, "-m", "benchmarks.bounded", "read", "--mode", mode, "--table", table]
    cmd += ["--bucket", bucket, "--thread", thread, "--warm-thread", warm_thread]
    if max_payload_size:
        cmd += ["--max-payload-size", str(max_payload_size)]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*filter(None, env.get("PYTHONPATH", "").split(os.pathsep)), root])
    out = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"reader failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bounded", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="cmd")
    r = sub.add_parser("read", help="the reader (one fresh process per measurement)")
    r.add_argument("--mode", choices=("sync", "async"), default="sync")
    r.add_argument("--table", required=True)
    r.add_argument("--bucket", required=True)
    r.add_argument("--thread", required=True)
    r.add_argument("--warm-thread", required=True)
    r.add_argument("--max-payload-size", type=int, default=0)
    sub.add_parser("cycles", help="time to refuse a parent-chain cycle instead (run it with a timeout)")
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args(argv)
    if args.cmd == "read":
        print(json.dumps(read(args)))
        return 0

    from langgraph.checkpoint.dynamodb import DynamoDBSaver
    from langgraph.checkpoint.dynamodb.tools.local import LocalAWS

    with LocalAWS() as aws:
        os.environ.update(aws.env())
        names = {
            "table_name": f"bounded-{uuid.uuid4().hex[:8]}",
            "bucket_name": f"bounded-{uuid.uuid4().hex[:8]}",
        }
        DynamoDBSaver(**names).setup()
        if args.cmd == "cycles":
            print("# seconds to refuse a parent-chain cycle (sync saver, moto on loopback)")
            for row in time_cycles(names):
                print(json.dumps(row), flush=True)
            return 0
        print(f"# reader peak RSS (MiB), fresh process per row; library: {_schema().__file__}")
        print(f"{'attack':<10} {'mode':<6} {'baseline':>9} {'peak':>8} {'growth':>8} {'seconds':>8}  error")
        for kind in args.kinds.split(","):
            for mode in ("sync", "async"):
                warm, thread = f"warm-{uuid.uuid4().hex[:8]}", f"bomb-{uuid.uuid4().hex[:8]}"
                prepare(names["table_name"], names["bucket_name"], warm)
                prepared = prepare(names["table_name"], names["bucket_name"], thread)
                size = S3_BODY_SIZE if kind == "s3-body" else BOMB_SIZE
                attack(kind, names["table_name"], names["bucket_name"], thread, prepared, size=size)
                res = run_reader(mode, names["table_name"], names["bucket_name"], thread, warm)
                print(
                    f"{kind:<10} {mode:<6} {res['baseline_mib']:>9} {res['peak_mib']:>8} "
                    f"{res['growth_mib']:>8} {res['seconds']:>8}  {res['error']}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
