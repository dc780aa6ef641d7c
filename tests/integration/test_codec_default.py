"""The default codec changed from zlib to "auto" (issue 16): stored checkpoints read either way.

A thread written under the former default (``compression="zlib"``) is read,
listed and continued by a saver with today's default, and a thread written by
today's default (zstd) is read by savers configured ``"zlib"`` and ``"none"``:
the codec is recorded per payload, so a rolling deploy with mixed settings
reads everything. Each test also checks which codecs the stored payloads
really carry, so it cannot pass by writing the same codec on both sides.
"""

from __future__ import annotations

from typing import Any

from tests.support.harness import Harness, cfg, checkpoint_of, new_thread, s3_objects, scan_table

_WORDS = [
    "the",
    "agent",
    "stores",
    "state",
    "for",
    "each",
    "thread",
    "so",
    "it",
    "can",
    "resume",
    "after",
    "an",
    "interrupt",
]


def _text(n: int, seed: int) -> str:
    """Compressible, not trivially: words in a seeded order."""
    import random

    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < n:
        out.append(rng.choice(_WORDS) + str(rng.randint(0, 999)))
        size += len(out[-1]) + 1
    return " ".join(out)[:n]


# Under 3 KiB (zlib under "auto" too), a DynamoDB-sized value, an S3-sized one.
VALUES = {"small": _text(1500, 1), "mid": _text(20_000, 2), "big": _text(300_000, 3)}
WRITE = _text(20_000, 4)


def _codecs(h: Harness, thread: str) -> set[str]:
    """The codec byte of every payload stored for ``thread`` (items and S3 objects)."""
    blobs: list[bytes] = []

    def walk(av: Any) -> None:
        if isinstance(av, dict):
            for k, v in av.items():
                if k == "B" and isinstance(v, bytes | bytearray):
                    blobs.append(bytes(v))
                else:
                    walk(v)
        elif isinstance(av, list):
            for v in av:
                walk(v)

    for item in scan_table(h.table_name):
        if item["PK"]["S"] == thread:
            walk(item)
    if h.bucket_name:
        blobs += [body for key, body in s3_objects(h.bucket_name).items() if f"/{thread}/" in f"/{key}"]
    return {chr(b[1]) for b in blobs if len(b) > 2 and b[0] == 1 and chr(b[1]) in "nzs"}


def _write_thread(h: Harness, saver: Any, thread: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two checkpoints (the second keeps ``big`` and ``mid``, changes ``small``) and a task's writes."""
    first = h.call(
        "put", cfg(thread), checkpoint_of(dict(VALUES)), {"step": 0}, dict.fromkeys(VALUES, "1"), saver=saver
    )
    second_cp = checkpoint_of(
        {**VALUES, "small": VALUES["small"][::-1]}, {"small": "2", "mid": "1", "big": "1"}
    )
    second = h.call("put", first, second_cp, {"step": 1}, {"small": "2"}, saver=saver)
    h.call("put_writes", second, [("w", WRITE)], "task-1", saver=saver)
    return first, second


def _assert_reads(h: Harness, saver: Any, thread: str, first: dict[str, Any], second: dict[str, Any]) -> None:
    latest = h.call("get_tuple", cfg(thread), saver=saver)
    assert (
        latest is not None
        and latest.config["configurable"]["checkpoint_id"] == second["configurable"]["checkpoint_id"]
    )
    assert latest.checkpoint["channel_values"] == {**VALUES, "small": VALUES["small"][::-1]}
    assert [(w[1], w[2]) for w in latest.pending_writes] == [("w", WRITE)]
    older = h.call("get_tuple", first, saver=saver)
    assert older is not None and older.checkpoint["channel_values"] == VALUES
    listed = [t.checkpoint["channel_values"]["big"] for t in h.list(cfg(thread))]
    assert listed == [VALUES["big"], VALUES["big"]]


def test_threads_written_with_the_former_default_read_and_continue_under_the_new_one(
    harness: Harness,
) -> None:
    thread = new_thread()
    with harness.other_saver(compression="zlib") as old:
        first, second = _write_thread(harness, old, thread)
    written = _codecs(harness, thread)
    encrypted = harness.opts.get("encrypted")
    # Ciphertext is stored uncompressed whatever the setting; otherwise zlib (and no zstd).
    assert written == {"n"} if encrypted else ("z" in written and "s" not in written), written
    # The harness's saver has the constructor's defaults (compression not given).
    _assert_reads(harness, harness.saver, thread, first, second)
    # ... and continues the thread: read, then a checkpoint changing one value
    # (the others stay where the zlib writer put them).
    latest = harness.call("get_tuple", cfg(thread))
    values = {**latest.checkpoint["channel_values"], "mid": VALUES["mid"].upper()}
    versions = {**latest.checkpoint["channel_versions"], "mid": "3"}
    third = harness.call("put", latest.config, checkpoint_of(values, versions), {"step": 2}, {"mid": "3"})
    if not encrypted:
        assert "s" in _codecs(harness, thread)  # the new default wrote zstd next to the zlib payloads
    for reader in ("zlib", "none"):
        with harness.other_saver(compression=reader) as other:
            got = harness.call("get_tuple", third, saver=other)
            assert got is not None and got.checkpoint["channel_values"] == values


def test_threads_written_by_the_default_read_with_any_setting(harness: Harness) -> None:
    thread = new_thread()
    first, second = _write_thread(harness, harness.saver, thread)
    written = _codecs(harness, thread)
    if harness.opts.get("encrypted"):
        assert written == {"n"}
    else:
        # zstd for the values over 3 KiB; zlib for the small ones ("auto" by size).
        assert {"s", "z"} <= written, written
    for reader in ("zlib", "none", "zstd"):
        with harness.other_saver(compression=reader) as other:
            _assert_reads(harness, other, thread, first, second)
