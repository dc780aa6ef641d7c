"""Test helpers: one harness drives the sync and the async saver alike.

Tests are plain functions parametrized over saver variants; for the async
variant the harness runs coroutines on a dedicated event-loop thread, so the
same test body checks both savers without being copied.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver

ENCRYPTION_KEY = b"k" * 32


class LoopThread:
    """An event loop running in a background thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout=300)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


@dataclass
class RequestCounter:
    """Counts API calls by ``service.Operation`` through botocore's event hooks."""

    counts: Counter[str] = field(default_factory=Counter)

    def attach(self, client: Any) -> None:
        service = client.meta.service_model.service_name
        client.meta.events.register(
            f"before-call.{service}.*",
            lambda model, **_: self.counts.update([f"{service}.{model.name}"]),
        )

    def reset(self) -> None:
        self.counts.clear()

    def total(self, service: str | None = None) -> int:
        return sum(v for k, v in self.counts.items() if service is None or k.startswith(service + "."))


VARIANTS = {
    # name: (mode, options)
    "sync": ("sync", {}),
    "async": ("async", {}),
    "sync-s3": ("sync", {"bucket": True, "s3_threshold": 1024}),
    "async-s3-encrypted": ("async", {"bucket": True, "s3_threshold": 1024, "encrypted": True}),
    "sync-s3-encrypted": ("sync", {"bucket": True, "s3_threshold": 1024, "encrypted": True}),
    # Each operation on the saver's own event loop thread (io_thread=True).
    "async-io-thread": ("async", {"bucket": True, "s3_threshold": 1024, "io_thread": True}),
}


class Harness:
    """One saver variant plus the calls tests need, sync or async underneath."""

    def __init__(self, variant: str, table_name: str, bucket_name: str, loop: LoopThread) -> None:
        self.variant = variant
        self.mode, self.opts = VARIANTS[variant]
        self.table_name = table_name
        self.bucket_name = bucket_name if self.opts.get("bucket") else None
        self.loop = loop
        self.counter = RequestCounter()
        self.saver = self.make_saver()
        self.call("setup")
        self.attach_counter(self.saver)

    @property
    def is_async(self) -> bool:
        return self.mode == "async"

    def saver_kwargs(self, **overrides: Any) -> dict[str, Any]:
        kw: dict[str, Any] = {"table_name": self.table_name, "bucket_name": self.bucket_name}
        if "s3_threshold" in self.opts:
            kw["s3_threshold"] = self.opts["s3_threshold"]
        if self.opts.get("encrypted"):
            kw["serde"] = EncryptedSerializer.from_pycryptodome_aes(key=ENCRYPTION_KEY)
        kw.update(overrides)
        return kw

    def make_saver(self, **overrides: Any) -> Any:
        kw = self.saver_kwargs(**overrides)
        if self.is_async:
            # io_thread is the async saver's own option: saver_kwargs() stay shared settings.
            saver = AsyncDynamoDBSaver(**kw, io_thread=bool(self.opts.get("io_thread")))
            self.loop.run(saver.__aenter__())
            return saver
        return DynamoDBSaver(**kw)

    @contextmanager
    def other_saver(self, **overrides: Any) -> Iterator[Any]:
        """Another process's saver on the same store, counted, closed at the end.

        It holds nothing this harness's saver cached (uploaded values,
        placements, chains): what it reads, it reads from the store.
        """
        saver = self.make_saver(**overrides)
        self.attach_counter(saver)
        try:
            yield saver
        finally:
            if self.is_async:
                self.loop.run(saver.aclose())
            else:
                saver.close()

    def attach_counter(self, saver: Any) -> None:
        for client in saver.clients.values():
            if client is not None:
                self.counter.attach(client)

    def close(self) -> None:
        if self.is_async:
            self.loop.run(self.saver.aclose())
        else:
            self.saver.close()

    # ------------------------------------------------------------- calls

    def call(self, name: str, *args: Any, saver: Any = None, **kwargs: Any) -> Any:
        """``saver.name(...)`` or ``await saver.aname(...)``; ``setup`` is special."""
        saver = saver or self.saver
        if not self.is_async:
            return getattr(saver, name)(*args, **kwargs)
        aname = name if name == "setup" else "a" + name
        return self.loop.run(getattr(saver, aname)(*args, **kwargs))

    def list(self, *args: Any, saver: Any = None, **kwargs: Any) -> list[Any]:
        saver = saver or self.saver
        if not self.is_async:
            return list(saver.list(*args, **kwargs))

        async def collect() -> list[Any]:
            return [t async for t in saver.alist(*args, **kwargs)]

        return self.loop.run(collect())  # type: ignore[no-any-return]

    def invoke(self, graph: Any, inp: Any, config: dict[str, Any], **kwargs: Any) -> Any:
        if not self.is_async:
            return graph.invoke(inp, config, **kwargs)
        return self.loop.run(graph.ainvoke(inp, config, **kwargs))

    def get_state(self, graph: Any, config: dict[str, Any], **kwargs: Any) -> Any:
        if not self.is_async:
            return graph.get_state(config, **kwargs)
        return self.loop.run(graph.aget_state(config, **kwargs))

    def history(self, graph: Any, config: dict[str, Any]) -> list[Any]:
        if not self.is_async:
            return list(graph.get_state_history(config))

        async def collect() -> list[Any]:
            return [s async for s in graph.aget_state_history(config)]

        return self.loop.run(collect())  # type: ignore[no-any-return]

    def update_state(self, graph: Any, config: dict[str, Any], values: Any, **kwargs: Any) -> Any:
        if not self.is_async:
            return graph.update_state(config, values, **kwargs)
        return self.loop.run(graph.aupdate_state(config, values, **kwargs))


#: 100-ns intervals from the Gregorian epoch (UUID time) to the Unix epoch.
_UUID_EPOCH_100NS = 0x01B21DD213814000


def uuid6_at(epoch: float) -> str:
    """A uuid6 checkpoint id stamped ``epoch`` (the pruner judges idleness by it)."""
    ts = int(epoch * 1e7) + _UUID_EPOCH_100NS
    rand = uuid.uuid4().int & ((1 << 62) - 1)
    n = (ts >> 12) << 80 | 6 << 76 | (ts & 0xFFF) << 64 | 0b10 << 62 | rand
    return str(uuid.UUID(int=n))


def checkpoint_of(values: dict[str, Any], versions: dict[str, str] | None = None) -> Any:
    """A checkpoint with a fresh id, these channel values and versions (``"1"`` each by default)."""
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    cp = empty_checkpoint()
    cp["id"] = str(uuid6(clock_seq=-1))
    cp["channel_values"] = values
    cp["channel_versions"] = versions if versions is not None else {k: "1" for k in values}
    return cp


def shared_store(prefix: str) -> dict[str, str]:
    """A new table and bucket, set up, for a module whose tests all use fresh thread ids."""
    suffix = uuid.uuid4().hex[:10]
    names = {"table_name": f"{prefix}-{suffix}", "bucket_name": f"{prefix}-{suffix}"}
    DynamoDBSaver(**names).setup()
    return names


def new_thread() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


def cfg(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def scan_table(table_name: str) -> list[dict[str, Any]]:
    """Every item of a table (for assertions about what is stored)."""
    import boto3

    client = boto3.client("dynamodb")
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table_name}
    while True:
        resp = client.scan(**kwargs)
        items.extend(resp["Items"])
        if "LastEvaluatedKey" not in resp:
            return items
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def s3_objects(bucket: str) -> dict[str, bytes]:
    import boto3

    client = boto3.client("s3")
    out: dict[str, bytes] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            out[obj["Key"]] = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
    return out


def env_for_subprocess() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parents[2]), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    )
    return env


def iter_variants() -> Iterator[str]:
    yield from VARIANTS


Factory = Callable[..., Harness]
