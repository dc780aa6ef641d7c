"""``AsyncDynamoDBSaver``: the asyncio saver, a thin aiobotocore driver over the core.

Every request is awaited on the event loop (no ``run_in_executor`` around
boto3), so one loop can serve many threads at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph.checkpoint.dynamodb._aws import client_region, fail_fast_on_local_endpoint, translate_errors
from langgraph.checkpoint.dynamodb._driver import AsyncDriver
from langgraph.checkpoint.dynamodb._ops import Op
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver, PruneResult
from langgraph.checkpoint.dynamodb.codec import DEFAULT_COMPRESSION, DEFAULT_MAX_PAYLOAD_SIZE, Compression
from langgraph.checkpoint.dynamodb.config import saver_kwargs_from_env
from langgraph.checkpoint.dynamodb.lifecycle import (
    PrunePolicy,
    SweepReport,
)
from langgraph.checkpoint.dynamodb.saver import client_config

__all__ = ["AsyncDynamoDBSaver"]

R = TypeVar("R")
_S = TypeVar("_S", bound="AsyncDynamoDBSaver")
_P = ParamSpec("_P")


def _blocking(
    async_method: Callable[Concatenate[_S, _P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[_S, _P], R]:
    """The sync twin of an async method (``aput`` -> ``put``), typed as it is.

    It runs the coroutine on the saver's event loop from another thread, as
    the Postgres saver allows (see ``AsyncDynamoDBSaver._sync``). The async
    method is looked up by name at call time, so a subclass's override counts.
    """
    async_name = async_method.__name__

    def method(self: _S, *args: _P.args, **kwargs: _P.kwargs) -> R:
        return cast(R, self._sync(getattr(self, async_name)(*args, **kwargs)))

    method.__wrapped__ = async_method  # type: ignore[attr-defined]  # help() and inspect show its parameters
    method.__name__ = async_name[1:]
    method.__qualname__ = f"AsyncDynamoDBSaver.{async_name[1:]}"
    method.__doc__ = (
        f"Sync :meth:`{async_name}`, from a thread other than the saver's event loop.\n\n"
        f"Example:\n    >>> saver.{async_name[1:]}(...)  # doctest: +SKIP\n"
    )
    return method


class AsyncDynamoDBSaver(BaseDynamoDBSaver):
    """An asyncio LangGraph checkpointer on DynamoDB + S3, built on aiobotocore.

    Use it as an async context manager (it closes the clients it opened), or
    call ``await saver.aclose()``. Clients are opened on first use.

    Args:
        table_name, bucket_name, region_name, endpoint_url, serde,
        s3_key_prefix, inline_threshold, s3_threshold, compression,
        retry_mode, max_attempts, max_payload_size: as for ``DynamoDBSaver``.
        session: an aiobotocore ``AioSession``, or an aioboto3 ``Session``
            (anything whose ``create_client``/``client`` returns an async
            context manager).
        dynamodb_client / s3_client: ready-made async clients (not closed by
            the saver).
        max_concurrency: parallel requests within one operation.

    Example:
        ```python
        from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

        async with AsyncDynamoDBSaver(table_name="checkpoints", bucket_name="b") as saver:
            await saver.setup()
            graph = builder.compile(checkpointer=saver)
            await graph.ainvoke(inputs, {"configurable": {"thread_id": "t-1"}})
        ```
    """

    def __init__(
        self,
        *,
        table_name: str,
        bucket_name: str | None = None,
        region_name: str | None = None,
        endpoint_url: str | None = None,
        serde: SerializerProtocol | None = None,
        session: Any = None,
        dynamodb_client: Any = None,
        s3_client: Any = None,
        s3_key_prefix: str = "checkpoints/",
        inline_threshold: int = 4 * 1024,
        s3_threshold: int = 64 * 1024,
        compression: Compression = DEFAULT_COMPRESSION,
        tenant_prefix: str | None = None,
        ttl: int | None = None,
        track_threads: bool | None = None,
        touch_on_read: bool = False,
        retry_mode: str = "standard",
        max_attempts: int = 8,
        max_concurrency: int = 16,
        max_payload_size: int = DEFAULT_MAX_PAYLOAD_SIZE,
    ) -> None:
        super().__init__(
            table_name=table_name,
            bucket_name=bucket_name,
            s3_key_prefix=s3_key_prefix,
            serde=serde,
            inline_threshold=inline_threshold,
            s3_threshold=s3_threshold,
            compression=compression,
            tenant_prefix=tenant_prefix,
            ttl=ttl,
            track_threads=track_threads,
            touch_on_read=touch_on_read,
            max_payload_size=max_payload_size,
        )
        # botocore reads AWS_DEFAULT_REGION only; AWS_REGION (what Lambda sets) is read here.
        self._region_name = client_region(region_name, session)
        self._endpoint_url = endpoint_url
        self._session = session
        self._clients: dict[str, Any] = {"dynamodb": dynamodb_client, "s3": s3_client}
        self._client_config = client_config(
            retry_mode=retry_mode, max_attempts=max_attempts, max_pool_connections=max(max_concurrency, 10)
        )
        self._stack: AsyncExitStack | None = None
        self._owned_names: set[str] = set()
        self._bound_loop: asyncio.AbstractEventLoop | None = None
        self._open_lock: asyncio.Lock | None = None
        self._driver = AsyncDriver(self, max_concurrency=max_concurrency, translate=translate_errors)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **options: Any) -> AsyncDynamoDBSaver:
        """A saver on the store the environment names; as ``DynamoDBSaver.from_env``.

        Example:
            ```python
            async with AsyncDynamoDBSaver.from_env() as saver:
                graph = builder.compile(checkpointer=saver)
            ```
        """
        return cls(**{**saver_kwargs_from_env(env), **options})

    # ------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> AsyncDynamoDBSaver:
        await self.ensure_clients()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the clients this saver opened (injected clients stay open)."""
        if self._stack is not None:
            stack, self._stack = self._stack, None
            for name in self._owned_names:
                self._clients[name] = None
            self._owned_names = set()
            await stack.aclose()

    async def ensure_clients(self) -> None:
        """Open the clients this saver was not given (the driver calls it on first use).

        Binds the saver to the running event loop (the sync methods run
        coroutines there). Idempotent; entering the saver calls it.

        Example:
            ```python
            saver = AsyncDynamoDBSaver(table_name="checkpoints")
            await saver.ensure_clients()
            saver.clients["dynamodb"]  # the aiobotocore client it opened
            ```
        """
        if self._bound_loop is None:
            self._bound_loop = asyncio.get_running_loop()
        need = [
            name
            for name in ("dynamodb", "s3")
            if self._clients[name] is None and (name == "dynamodb" or self.bucket_name is not None)
        ]
        if not need:
            return
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            need = [n for n in need if self._clients[n] is None]
            if not need:
                return
            session = self._session
            if session is None:
                # Imported here so that importing this package (and the sync
                # saver) never pays for aiobotocore: Lambda cold starts.
                from aiobotocore.session import get_session

                session = get_session()
            if self._stack is None:
                self._stack = AsyncExitStack()
            for name in need:
                factory = getattr(session, "create_client", None) or session.client
                cm = factory(
                    name,
                    region_name=self._region_name,
                    endpoint_url=self._endpoint_url,
                    config=self._client_config,
                )
                self._clients[name] = await self._stack.enter_async_context(cm)
                fail_fast_on_local_endpoint(self._clients[name])
                self._owned_names.add(name)

    # --------------------------------------------------------------- driver

    def _iter(self, op: Op[Any]) -> AsyncIterator[Any]:
        """Drive an operation, yielding what it emits."""
        return self._driver.iter(op)

    async def _run(self, op: Op[R]) -> R:
        """Drive an operation that emits nothing and return its result."""
        return await self._driver.run(op)

    async def setup(self) -> None:
        """Create the table (and bucket, if named) when missing. Idempotent."""
        await self._run(self._op_setup())

    # ------------------------------------------------------- async contract

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._run(self._op_get_tuple(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        async for t in self._iter(self._op_list(config, filter=filter, before=before, limit=limit)):
            yield t

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self._run(self._op_put(config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self._run(self._op_put_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._run(self._op_delete_thread(thread_id))

    # ------------------------------------------- sync calls on an async saver

    def _sync(self, coro: Any) -> Any:
        """Run a coroutine from synchronous code (as the Postgres saver allows).

        Only valid from a thread other than the saver's event loop thread.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if (loop is not None and self._loop is loop) or self._loop is None:
            coro.close()  # never run: close it rather than leave it to warn "never awaited"
        if loop is not None and self._loop is loop:
            raise asyncio.InvalidStateError(
                "Synchronous calls to AsyncDynamoDBSaver are only allowed from a different "
                "thread. From the main thread, use the async interface, e.g. "
                "`await checkpointer.aget_tuple(...)` or `await graph.ainvoke(...)`."
            )
        if self._loop is None:
            raise asyncio.InvalidStateError(
                "Synchronous calls need the saver's event loop; enter the saver with "
                "`async with` first, or use DynamoDBSaver for synchronous code."
            )
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    @property
    def _loop(self) -> asyncio.AbstractEventLoop | None:
        return self._bound_loop

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        async def collect() -> list[CheckpointTuple]:
            return [t async for t in self.alist(config, filter=filter, before=before, limit=limit)]

        return iter(self._sync(collect()))

    # ------------------------------------------------ extended capabilities

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await self._run(self._op_delta_history(config, channels))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._run(self._op_copy_thread(source_thread_id, target_thread_id))

    async def amigrate_tenant_thread(self, tenant_prefix: str, thread_id: str) -> None:
        """Async :meth:`DynamoDBSaver.migrate_tenant_thread`.

        Example:
            >>> await operator.amigrate_tenant_thread("acme-", "t1")  # doctest: +SKIP
        """
        await self._run(self._op_migrate_tenant_thread(tenant_prefix, thread_id))

    async def aprune(  # type: ignore[override]  # adds keep_last, returns a report
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
    ) -> PruneResult:
        return await self._run(self._op_prune(thread_ids, strategy=strategy, keep_last=keep_last))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> PruneResult:  # type: ignore[override]
        return await self._run(self._op_delete_for_runs(run_ids))

    # ------------------------------------------------------------ lifecycle

    async def areap_thread(self, thread_id: str, *, expired_before: float) -> PruneResult:
        return await self._run(self._op_reap_thread(thread_id, expired_before=expired_before))

    async def areap_expired_stream(self, event: Mapping[str, Any]) -> SweepReport:
        return await self._run(self._op_reap_stream(event))

    async def apurge_expired(self, *, deadline: float | None = None) -> SweepReport:
        return await self._run(self._op_purge_expired(deadline=deadline))

    async def arun_pruner(
        self, policy: PrunePolicy, *, deadline: float | None = None, max_pages: int | None = None
    ) -> SweepReport:
        return await self._run(self._op_run_pruner(policy, deadline=deadline, max_pages=max_pages))

    async def asweep_orphans(
        self, *, grace_seconds: float = 86_400, deadline: float | None = None, max_pages: int | None = None
    ) -> SweepReport:
        return await self._run(
            self._op_sweep_orphans(grace_seconds=grace_seconds, deadline=deadline, max_pages=max_pages)
        )

    # ---------------------------------- sync twins of the async operations
    # Each runs its async twin on the saver's loop (see ``_sync``).

    get_tuple = _blocking(aget_tuple)
    put = _blocking(aput)
    put_writes = _blocking(aput_writes)
    delete_thread = _blocking(adelete_thread)
    get_delta_channel_history = _blocking(aget_delta_channel_history)
    copy_thread = _blocking(acopy_thread)
    migrate_tenant_thread = _blocking(amigrate_tenant_thread)
    prune = _blocking(aprune)  # type: ignore[arg-type]  # adds keep_last, returns a report (as aprune)
    delete_for_runs = _blocking(adelete_for_runs)  # type: ignore[arg-type]  # returns a report (as adelete_for_runs)
    reap_thread = _blocking(areap_thread)
    reap_expired_stream = _blocking(areap_expired_stream)
    purge_expired = _blocking(apurge_expired)
    run_pruner = _blocking(arun_pruner)
    sweep_orphans = _blocking(asweep_orphans)
