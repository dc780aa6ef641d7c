"""Where the async saver packs and unpacks payloads: large ones off the event loop, small ones on it.

A serializer wrapper records the thread of every ``dumps_typed`` and
``loads_typed``; the savers run against the moto server with real clients.
The sync saver packs on the caller's thread whatever the size (its caller is
blocked anyway, and its requests must not change).
"""

from __future__ import annotations

import asyncio
import base64
import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver
from langgraph.checkpoint.dynamodb._engine.ops import OFFLOAD_MIN_BYTES
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError
from langgraph.checkpoint.dynamodb.serde import default_serde
from tests.support.harness import cfg, checkpoint_of, new_thread

LARGE = 8 * OFFLOAD_MIN_BYTES
SMALL = 200


def text(size: int, seed: int = 0) -> str:
    """``size`` characters that compress poorly (a tool output)."""
    return base64.b64encode(random.Random(seed).randbytes(size)).decode()[:size]


class Recording:
    """The default serializer, recording which thread packs and unpacks each payload.

    ``gate``, when set, makes packing of a large value wait until another
    task on the event loop opens it: on the loop itself it would wait in vain.
    """

    def __init__(self, inner: SerializerProtocol) -> None:
        self.inner = inner
        self.dumps: list[tuple[int, int]] = []  # (thread, serialized bytes)
        self.loads: list[tuple[int, int]] = []
        self.gate: threading.Event | None = None

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        out = self.inner.dumps_typed(obj)
        if self.gate is not None and len(out[1]) >= LARGE and not self.gate.wait(timeout=10):
            raise TimeoutError("packing ran on the event loop: the task that opens the gate never ran")
        self.dumps.append((threading.get_ident(), len(out[1])))
        return out

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        self.loads.append((threading.get_ident(), len(data[1])))
        return self.inner.loads_typed(data)

    def threads(self) -> set[int]:
        return {t for t, _ in self.dumps} | {t for t, _ in self.loads}

    def reset(self) -> None:
        self.dumps.clear()
        self.loads.clear()


@pytest.fixture
def store(moto_endpoint: str, names: dict[str, str]) -> Iterator[dict[str, str]]:
    with DynamoDBSaver(**names) as saver:
        saver.setup()
    yield names


@pytest.mark.parametrize("io_thread", [False, True], ids=["on-loop", "io-thread"])
@pytest.mark.parametrize("bucket", [True, False], ids=["s3", "no-bucket"])
def test_async_saver_packs_and_unpacks_large_payloads_off_the_loop(
    store: dict[str, str], bucket: bool, io_thread: bool
) -> None:
    """Small payloads are packed on the loop that drives the operation, large ones off it.

    That loop is the caller's (``io_thread=False``) or the saver's I/O loop,
    and then nothing is packed on the caller's loop thread at all.
    """
    names = dict(store) if bucket else {"table_name": store["table_name"]}
    serde = Recording(default_serde())

    async def main() -> None:
        caller_thread = threading.get_ident()
        async with AsyncDynamoDBSaver(**names, serde=serde, io_thread=io_thread) as saver:
            io = saver.io_runner
            loop_thread = io.thread.ident if io_thread and io is not None else caller_thread
            for size in (SMALL, LARGE):
                thread = new_thread()
                serde.reset()
                stored = await saver.aput(
                    cfg(thread), checkpoint_of({"v": text(size)}), {"step": 1}, {"v": "1"}
                )
                await saver.aput_writes(stored, [("w", text(size, seed=1))], "task-1")
                assert serde.dumps, "nothing was packed"
                on_loop = serde.threads() == {loop_thread}
                assert on_loop is (size == SMALL), (size, serde.dumps)
                assert (caller_thread in serde.threads()) is (not io_thread and size == SMALL)
                serde.reset()
                got = await saver.aget_tuple(cfg(thread))
                assert got is not None
                assert got.checkpoint["channel_values"]["v"] == text(size)
                assert got.pending_writes == [("task-1", "w", text(size, seed=1))]
                assert serde.loads, "nothing was unpacked"
                on_loop = serde.threads() == {loop_thread}
                assert on_loop is (size == SMALL), (size, serde.loads)
                listed = [t async for t in saver.alist(cfg(thread))]
                assert [t.checkpoint["channel_values"]["v"] for t in listed] == [text(size)]

    asyncio.run(main())


def test_sync_saver_packs_on_the_callers_thread_whatever_the_size(store: dict[str, str]) -> None:
    serde = Recording(default_serde())
    with DynamoDBSaver(**store, serde=serde) as saver:
        thread = new_thread()
        stored = saver.put(cfg(thread), checkpoint_of({"v": text(LARGE)}), {"step": 1}, {"v": "1"})
        saver.put_writes(stored, [("w", text(LARGE))], "task-1")
        got = saver.get_tuple(cfg(thread))
    assert got is not None and got.checkpoint["channel_values"]["v"] == text(LARGE)
    assert serde.dumps and serde.loads
    assert serde.threads() == {threading.get_ident()}


def test_the_loop_runs_other_tasks_while_a_large_value_is_packed(store: dict[str, str]) -> None:
    """Packing waits for a task on the loop: on the loop it would time out, off it the put completes."""
    serde = Recording(default_serde())
    serde.gate = threading.Event()

    async def main() -> None:
        async with AsyncDynamoDBSaver(**store, serde=serde) as saver:

            async def open_gate() -> None:
                await asyncio.sleep(0.05)
                assert serde.gate is not None
                serde.gate.set()

            opener = asyncio.create_task(open_gate())
            thread = new_thread()
            await saver.aput(cfg(thread), checkpoint_of({"v": text(LARGE)}), {"step": 1}, {"v": "1"})
            await opener
            got = await saver.aget_tuple(cfg(thread))
            assert got is not None and got.checkpoint["channel_values"]["v"] == text(LARGE)

    asyncio.run(main())


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_large_value_that_cannot_be_serialized_fails_the_put_and_writes_nothing(
    store: dict[str, str], mode: str
) -> None:
    """The error raised on the executor thread reaches the caller as it is, before any request."""
    thread = new_thread()
    bad = {"v": [text(LARGE), object()]}  # the default serde refuses an arbitrary object

    def put_sync() -> None:
        with DynamoDBSaver(**store) as saver:
            saver.put(cfg(thread), checkpoint_of(bad), {"step": 1}, {"v": "1"})

    async def put_async() -> None:
        async with AsyncDynamoDBSaver(**store) as saver:
            await saver.aput(cfg(thread), checkpoint_of(bad), {"step": 1}, {"v": "1"})

    with pytest.raises(Exception) as caught:
        put_sync() if mode == "sync" else asyncio.run(put_async())
    assert "object" in str(caught.value)
    with DynamoDBSaver(**store) as saver:
        assert saver.get_tuple(cfg(thread)) is None


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_corrupt_large_payload_is_refused_as_corrupt_in_both_savers(
    store: dict[str, str], mode: str
) -> None:
    """A stored large value altered in S3 fails its decode the same way on the loop's executor."""
    import boto3

    thread = new_thread()
    with DynamoDBSaver(**store) as saver:
        saver.put(cfg(thread), checkpoint_of({"v": text(LARGE)}), {"step": 1}, {"v": "1"})
    s3 = boto3.client("s3")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=store["bucket_name"]).get("Contents", [])]
    assert keys, "the large value should be in S3"
    for key in keys:
        body = s3.get_object(Bucket=store["bucket_name"], Key=key)["Body"].read()
        s3.put_object(Bucket=store["bucket_name"], Key=key, Body=body[:3] + b"\xff" * (len(body) - 3))

    async def get_async() -> Any:
        async with AsyncDynamoDBSaver(**store) as saver:
            return await saver.aget_tuple(cfg(thread))

    def get_sync() -> Any:
        with DynamoDBSaver(**store) as saver:
            return saver.get_tuple(cfg(thread))

    with pytest.raises(CorruptPayloadError):
        get_sync() if mode == "sync" else asyncio.run(get_async())


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["small", "large"])
def test_async_delta_history_unpacks_large_payloads_off_the_loop(store: dict[str, str], size: int) -> None:
    """``aget_delta_channel_history`` decodes in one Compute: a large seed and writes off the loop."""
    serde = Recording(default_serde())

    async def main() -> None:
        loop_thread = threading.get_ident()
        async with AsyncDynamoDBSaver(**store, serde=serde) as saver:
            thread = new_thread()
            parent = cfg(thread)
            for i in range(3):
                values = {"msgs": [text(size)]} if i == 0 else {}
                md = {"step": i, "counters_since_delta_snapshot": {"msgs": [i, i]}}
                parent = await saver.aput(
                    parent, checkpoint_of(values, {"msgs": f"{i + 1:032}.0"}), md, {"msgs": f"{i + 1:032}.0"}
                )
                await saver.aput_writes(parent, [("msgs", text(size, seed=i + 1))], f"task-{i}")
            async with AsyncDynamoDBSaver(**store, serde=serde) as reader:  # nothing cached
                serde.reset()
                got = await reader.aget_delta_channel_history(config=parent, channels=["msgs"])
        assert got["msgs"]["seed"] == [text(size)]
        assert [w[2] for w in got["msgs"]["writes"]] == [text(size, seed=1), text(size, seed=2)]
        assert serde.loads, "nothing was unpacked"
        assert (loop_thread in {t for t, _ in serde.loads}) is (size == SMALL), serde.loads

    asyncio.run(main())
