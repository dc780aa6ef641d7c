"""Codec choice by measurement: CPU and bytes of each codec and level on the workloads' payloads.

``python -m benchmarks.codecs`` rebuilds the ``messages`` channel value that
the ``big`` and ``chat`` workloads write at every checkpoint (the same
messages, from ``benchmarks.workloads``: after the user's message, then
after the assistant's reply, as the input and loop checkpoints of a turn),
serializes each with the saver's default serializer, and packs it with every
candidate codec through ``PayloadCodec`` itself. Reported per candidate:
compression and decompression milliseconds per turn (the best of
``repeats``, so a busy machine inflates them less), and bytes packed as a
fraction of the serialized bytes. No AWS calls: this isolates the codec's
share of a turn, which the workloads measure end to end.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from langchain_core.messages import AIMessage

from benchmarks.workloads import Params, big_text, reply_text, user_message

__all__ = ["CANDIDATES", "measure_codecs", "payloads"]

#: (label, compression, level): ``None`` is the codec's own choice by size.
CANDIDATES: list[tuple[str, str, int | None]] = [
    ("zlib 1", "zlib", 1),
    ("zlib 3", "zlib", 3),
    ("zlib 6 (former default)", "zlib", None),
    ("zstd 1", "zstd", 1),
    ("zstd 3", "zstd", 3),
    ("zstd 9", "zstd", 9),
    ("auto (default): zlib 6 under 3 KiB, zstd 9 to 64 KiB, zstd 3 above", "auto", None),
]


def payloads(workload: str, params: Params | None = None) -> list[bytes]:
    """Serialized ``messages`` values a ``workload`` run writes, two per turn."""
    from langgraph.checkpoint.dynamodb.serde import default_serde

    p = params or Params()
    serde = default_serde()
    big = p.big_message_bytes if workload == "big" else 0
    turns = p.big_turns if workload == "big" else p.chat_turns
    messages: list[Any] = []
    out: list[bytes] = []
    for turn in range(turns):
        messages.append(user_message(turn))
        out.append(serde.dumps_typed(list(messages))[1])
        content = big_text(turn, big) if big else reply_text(turn)
        messages.append(AIMessage(content=content, id=f"ai-{turn:04d}"))
        out.append(serde.dumps_typed(list(messages))[1])
    return out


def _best(fn: Any, repeats: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def measure_codecs(
    workloads: tuple[str, ...] = ("big", "chat"), params: Params | None = None, repeats: int = 2
) -> dict[str, Any]:
    """Per workload and candidate: ms per turn to pack and unpack, and bytes kept."""
    from langgraph.checkpoint.dynamodb.codec import PayloadCodec, zstd_available

    out: dict[str, Any] = {"zstd_available": zstd_available(), "repeats": repeats, "workloads": {}}
    for workload in workloads:
        data = payloads(workload, params)
        turns = len(data) // 2
        raw = sum(len(d) for d in data)
        rows: list[dict[str, Any]] = []
        for label, compression, level in CANDIDATES:
            if compression in ("zstd", "auto") and not zstd_available():
                continue
            codec = PayloadCodec(compression, level=level)  # type: ignore[arg-type]
            pack_s = unpack_s = 0.0
            packed_bytes = 0
            for d in data:
                typed = ("msgpack", d)
                seconds, packed = _best(lambda typed=typed, codec=codec: codec.pack(typed), repeats)
                pack_s += seconds
                packed_bytes += len(packed)
                seconds, _ = _best(lambda packed=packed: PayloadCodec.unpack(packed), repeats)
                unpack_s += seconds
            rows.append(
                {
                    "label": label,
                    "compression": compression,
                    "level": level,
                    "pack_ms_per_turn": 1000 * pack_s / turns,
                    "unpack_ms_per_turn": 1000 * unpack_s / turns,
                    "packed_bytes": packed_bytes,
                    "ratio": packed_bytes / raw,
                }
            )
        out["workloads"][workload] = {
            "turns": turns,
            "payloads": len(data),
            "serialized_bytes": raw,
            "largest_payload": max(len(d) for d in data),
            "candidates": rows,
        }
    return out


def dependency_cost(repeats: int = 3) -> dict[str, Any] | None:
    """What the ``zstandard`` package costs: installed size, and its import after the saver's.

    The import is timed in fresh interpreters that first import the saver
    (whose own import does not pull zstandard in: the codec imports it on
    first use), so it is the increment a Lambda cold start would pay.
    """
    import subprocess
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("zstandard")
    except PackageNotFoundError:
        return None
    installed = sum((f.size or 0) for f in dist.files or [])
    probe = (
        "import sys, time\n"
        "from langgraph.checkpoint.dynamodb import DynamoDBSaver\n"
        "pulled = 'zstandard' in sys.modules\n"
        "t = time.perf_counter()\n"
        "import zstandard\n"
        "print(time.perf_counter() - t, pulled)\n"
    )
    times, pulled = [], False
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        seconds, flag = out.stdout.split()
        times.append(float(seconds))
        pulled = pulled or flag == "True"
    return {
        "version": dist.version,
        "installed_bytes": installed,
        "import_s_median": sorted(times)[len(times) // 2],
        "imported_by_the_saver": pulled,
        "required_by": _required_by("zstandard"),
    }


def _required_by(name: str) -> list[str]:
    """Installed distributions that require ``name`` whatever their extras (so it is there anyway)."""
    import re
    from importlib.metadata import distributions

    out = set()
    for dist in distributions():
        for req in dist.requires or []:
            head, _, marker = req.partition(";")
            if (
                re.split(r"[\s<>=!~\[(]", head.strip(), maxsplit=1)[0].lower() == name
                and "extra" not in marker
            ):
                out.add(dist.metadata["Name"])
    return sorted(out - {"langgraph-checkpoint-dynamodb-s3"})


def main(argv: list[str] | None = None) -> int:
    """Print the measurement as JSON."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.codecs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", help="also write the JSON result here")
    args = ap.parse_args(argv)
    res = measure_codecs(repeats=args.repeats)
    res["zstandard"] = dependency_cost()
    for wl, w in res["workloads"].items():
        print(f"{wl}: {w['payloads']} payloads, {w['serialized_bytes'] / 1e6:.1f} MB serialized")
        for r in w["candidates"]:
            print(
                f"  {r['label']:38s} pack {r['pack_ms_per_turn']:6.2f} ms/turn  "
                f"unpack {r['unpack_ms_per_turn']:5.2f} ms/turn  bytes {r['ratio']:.3f}"
            )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(res, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
