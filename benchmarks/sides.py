"""The two savers under test: how each is built, and where its clients are.

* ``ours``: ``langgraph.checkpoint.dynamodb.DynamoDBSaver`` (boto3) and
  ``AsyncDynamoDBSaver`` (aiobotocore), with their default settings. The
  meter is attached to the clients the saver created itself
  (``saver.clients``), so the measured configuration (retries, pool
  size) is the one users get (``compression="auto"`` since issue 16).
  ``ours-zlib`` is the same with ``compression="zlib"``, the former
  default, to measure the codec choice against it in the same run;
  ``ours-iothread`` the async saver with ``io_thread=True`` (each operation
  on the saver's own event loop in a dedicated thread, issue 16 target 4),
  to measure that mode against the default in the same run.
* ``ref``: ``langgraph_checkpoint_aws.DynamoDBSaver`` with
  ``s3_offload_config``, default settings (checkpoint compression off);
  ``ref-gz`` is the same with ``enable_checkpoint_compression=True``, to
  separate what compression alone buys from what the layout buys. Its
  clients are ``saver.client`` (DynamoDB) and ``saver.storage.s3_client``.
  It has no separate async class: its ``a*`` methods run the sync methods in
  the event loop's default executor (``run_in_executor``).

Imports of either library happen inside the functions, so this module
loads in both virtualenvs. Both sides find the endpoint through
``AWS_ENDPOINT_URL``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from benchmarks.counting import Meter

__all__ = ["OURS", "REGION", "is_reference", "open_async_saver", "open_sync_saver", "saver_version"]

REGION = "us-east-1"
#: Our saver's sides: the defaults, and the codec under evaluation.
OURS = ("ours", "ours-zlib", "ours-iothread")


def _options(side: str) -> dict[str, Any]:
    return {"compression": "zlib"} if side == "ours-zlib" else {}


def _async_options(side: str) -> dict[str, Any]:
    return {"io_thread": True} if side == "ours-iothread" else _options(side)


def open_sync_saver(side: str, table: str, bucket: str, meter: Meter) -> tuple[Any, Any]:
    """Build the sync saver of ``side`` and meter its clients; returns ``(saver, close)``."""
    if side in OURS:
        from langgraph.checkpoint.dynamodb import DynamoDBSaver

        saver = DynamoDBSaver(table_name=table, bucket_name=bucket, region_name=REGION, **_options(side))
        for client in saver.clients.values():
            if client is not None:
                meter.attach(client)
        return saver, saver.close
    if side in ("ref", "ref-gz"):
        from langgraph_checkpoint_aws import DynamoDBSaver as RefSaver

        ref = RefSaver(
            table_name=table,
            region_name=REGION,
            s3_offload_config={"bucket_name": bucket},
            enable_checkpoint_compression=side == "ref-gz",
        )
        meter.attach(ref.client)
        meter.attach(ref.storage.s3_client)
        return ref, lambda: None
    raise ValueError(f"unknown side {side!r}")


@contextlib.asynccontextmanager
async def open_async_saver(side: str, table: str, bucket: str, meter: Meter) -> AsyncIterator[Any]:
    """The saver ``ainvoke`` uses: ours is ``AsyncDynamoDBSaver``, the reference its only class."""
    if side in OURS:
        from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

        async with AsyncDynamoDBSaver(
            table_name=table, bucket_name=bucket, region_name=REGION, **_async_options(side)
        ) as saver:
            # The clients themselves: with the I/O thread, saver.clients seen from
            # this loop are proxies to them, and the meter's hooks run where they send.
            for client in saver.clients.values():
                if client is not None:
                    meter.attach(client)
            yield saver
        return
    saver, close = open_sync_saver(side, table, bucket, meter)
    try:
        yield saver
    finally:
        close()


def saver_version(side: str) -> str:
    """Installed distribution version of the saver under test."""
    from importlib.metadata import version

    return version("langgraph-checkpoint-aws" if is_reference(side) else "langgraph-checkpoint-dynamodb-s3")


def is_reference(side: str) -> bool:
    """Whether ``side`` runs in the reference's virtualenv."""
    return side.startswith("ref")
