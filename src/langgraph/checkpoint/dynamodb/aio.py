"""``AsyncDynamoDBSaver``: the asyncio saver, a thin aiobotocore driver over the core.

Every request is awaited on an event loop (no ``run_in_executor`` around
boto3), so one loop can serve many threads at once: the caller's loop, or,
in the I/O thread mode (``io_thread``), a loop of the saver's own in a
dedicated thread, which keeps aiobotocore's per-request work off the
caller's loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, TypeVar, Unpack

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)

from langgraph.checkpoint.dynamodb._engine.aws import (
    client_region,
    fail_fast_on_local_endpoint,
    region_required,
    share_models,
    translate_errors,
)
from langgraph.checkpoint.dynamodb._engine.drivers import AsyncDriver
from langgraph.checkpoint.dynamodb._engine.fairness import DEFAULT_MAX_IN_FLIGHT, split_request_phases
from langgraph.checkpoint.dynamodb._engine.io_thread import ClientsView, IOState, IOThread
from langgraph.checkpoint.dynamodb._engine.methods import SettingsSignature, async_method, blocking
from langgraph.checkpoint.dynamodb._engine.ops import Op
from langgraph.checkpoint.dynamodb._engine.tracing import traced
from langgraph.checkpoint.dynamodb._operations import (
    copying,
    deleting,
    history,
    pruning,
    read,
    steps,
    sweeps,
    write,
)
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver, SaverSettings
from langgraph.checkpoint.dynamodb.config import saver_kwargs_from_env

__all__ = ["AsyncDynamoDBSaver"]

R = TypeVar("R")


_aprune = async_method(pruning.prune)
_adelete_for_runs = async_method(deleting.delete_for_runs)
_prune = blocking(_aprune)
_delete_for_runs = blocking(_adelete_for_runs)


class AsyncDynamoDBSaver(BaseDynamoDBSaver):
    """An asyncio LangGraph checkpointer on DynamoDB + S3, built on aiobotocore.

    Use it as an async context manager (it closes the clients it opened), or
    call ``await saver.aclose()``. Clients are opened on first use.

    Args:
        table_name, bucket_name, region_name, endpoint_url, serde, allow_unsafe_serde,
        allow_unbound_ciphertext, s3_key_prefix, inline_threshold, s3_threshold, compression,
        tenant_prefix, ttl, track_threads, touch_on_read, retry_mode,
        max_attempts, max_payload_size, max_payload_objects, value_cache_bytes: as for
            ``DynamoDBSaver`` (with ``max_concurrency`` below, every
            ``base.SaverSettings`` keyword).
        session: an aiobotocore ``AioSession``, or an aioboto3 ``Session``
            (anything whose ``create_client``/``client`` returns an async
            context manager).
        dynamodb_client / s3_client: ready-made async clients (not closed by
            the saver).
        max_concurrency: parallel requests within one operation.
        max_in_flight: the most requests per service (DynamoDB, S3) this
            saver has on the wire at once, across all the operations that
            share it; the others wait their turn before they are built and
            signed. Each answer costs the event loop a millisecond or more
            (parsing, decoding, the caller's next step), and answers that
            arrive together run back to back: the bound caps those bursts.
            Default 8, chosen by measurement (docs/benchmarks.md, "Async":
            100 concurrent threads on one loop). Eight requests of 5 ms each
            already make 1,600 requests a second, more than one process
            drives through aiobotocore; raise it for a high-latency link,
            ``None`` removes the bound.
        io_thread: drive every operation on an event loop of the saver's
            own, in a dedicated thread, on which it opens its clients: the
            caller's loop then only awaits each call's result (a hop of
            under 0.1 ms), while requests (aiobotocore's
            serializing, signing and response parsing) and packing run in
            that thread. In this mode one saver also serves successive
            event loops (``asyncio.run`` per Lambda invocation), ``aclose``
            joins the thread, and ``saver.clients`` belong to the I/O loop:
            from other threads they are proxies that forward API calls
            there. It needs clients the saver opens itself: with injected
            ones it raises ``ValueError`` (an aiobotocore client belongs to
            the loop that made it). Off by default: with ``max_in_flight``
            the default mode's p99 event-loop lag is lower than this mode's
            (the two threads share one GIL; docs/benchmarks.md, "Async"),
            and a lone call pays under 0.1 ms for the hop. Turn it on for
            one saver across successive event loops.

    Example:
        ```python
        from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

        async with AsyncDynamoDBSaver(table_name="checkpoints", bucket_name="b") as saver:
            await saver.setup()
            graph = builder.compile(checkpointer=saver)
            await graph.ainvoke(inputs, {"configurable": {"thread_id": "t-1"}})

        # Requests, their signing and parsing on a thread of the saver's own:
        saver = AsyncDynamoDBSaver(table_name="checkpoints", io_thread=True)
        ```
    """

    #: ``help()`` and ``inspect.signature`` show every setting with its default
    #: (``BaseDynamoDBSaver.__init__`` declares them), then the saver's own options.
    __signature__ = SettingsSignature(BaseDynamoDBSaver.__init__)

    def __init__(
        self,
        *,
        session: Any = None,
        dynamodb_client: Any = None,
        s3_client: Any = None,
        io_thread: bool = False,
        max_in_flight: int | None = DEFAULT_MAX_IN_FLIGHT,
        **settings: Unpack[SaverSettings],
    ) -> None:
        """A saver on ``table_name`` (and ``bucket_name``): see the class for every option."""
        if max_in_flight is not None and (
            isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int) or max_in_flight < 1
        ):
            raise ValueError(
                f"max_in_flight must be an int >= 1, or None for no bound; got {max_in_flight!r}"
            )
        injected = dynamodb_client is not None or s3_client is not None
        if io_thread and injected:
            raise ValueError(
                "io_thread=True needs clients the saver opens itself: an aiobotocore client only "
                "works on the event loop it was created on. Pass session= (or nothing) instead of "
                "dynamodb_client=/s3_client=, or leave io_thread off to drive on your loop"
            )
        super().__init__(**settings)
        # botocore reads AWS_DEFAULT_REGION only; AWS_REGION (what Lambda sets) is read here.
        self._region_name = client_region(self._region_name, session)
        self._session = session
        self._clients: dict[str, Any] = {"dynamodb": dynamodb_client, "s3": s3_client}
        self._stack: AsyncExitStack | None = None
        self._loop_end_closer: AsyncIterator[None] | None = None
        self._owned_names: set[str] = set()
        self._bound_loop: asyncio.AbstractEventLoop | None = None
        self._open_lock: asyncio.Lock | None = None
        #: Runs this saver's operations (``drivers.AsyncDriver``); its copies share it.
        self.driver = AsyncDriver(
            self,
            **self._driver_settings,
            max_in_flight=max_in_flight,
            translate=translate_errors,
        )
        #: Whether operations run on the saver's I/O thread (see ``io_thread``).
        self.io_thread = io_thread
        self._io = IOState()
        self._io_owner = id(self)  # copies (tenant views, guarded copies) share the thread, never stop it

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
        """Close the clients this saver opened (injected clients stay open).

        In the I/O thread mode they are closed on the I/O loop, then the
        thread is stopped and joined. The saver stays usable: a later call
        opens clients (and starts the thread) again.
        """
        if self.io_thread and self._io.current() is None:
            io = self._io.thread
            if io is not None and io.alive:
                await io.run(self.aclose())
                if self._io_owner == id(self):
                    await asyncio.to_thread(io.stop)  # joining blocks: not on the caller's loop
            if self._io_owner == id(self):
                self._bound_loop, self._open_lock = None, None
            return
        if self._stack is not None:
            stack, self._stack = self._stack, None
            for name in self._owned_names:
                self._clients[name] = None
            self._owned_names = set()
            await stack.aclose()

    async def ensure_clients(self) -> None:
        """Open the clients this saver was not given (the driver calls it on first use).

        Binds the saver to the running event loop (the sync methods run
        coroutines there); in the I/O thread mode, opens them on the I/O
        loop instead. Idempotent; entering the saver calls it.

        Example:
            ```python
            saver = AsyncDynamoDBSaver(table_name="checkpoints")
            await saver.ensure_clients()
            saver.clients["dynamodb"]  # the client it opened (on the I/O loop: a proxy to it)
            ```
        """
        origin = self.driver.holder
        if origin is not self and isinstance(origin, AsyncDynamoDBSaver):
            # A copy (tenant view, guarded copy): the clients are its origin's.
            await origin.ensure_clients()
            return
        if self.io_thread and self._io.current() is None:
            await self._io.get().run(self.ensure_clients())
            return
        self._check_loop()  # binds to this loop, or refuses clients of a closed one
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
                try:
                    from aiobotocore.session import get_session
                except ImportError as exc:
                    raise ImportError(
                        "AsyncDynamoDBSaver needs aiobotocore, in the package's async extra: "
                        'pip install "langgraph-checkpoint-dynamodb-s3[async]" '
                        "(or pass session= an aioboto3 Session, or ready-made async clients)"
                    ) from exc

                # The process's parsed API models, as the sync saver's (``share_models``).
                session = share_models(get_session())
            if self._stack is None:
                self._stack = AsyncExitStack()
                await self._close_when_the_loop_ends(self._stack)
            for name in need:
                factory = getattr(session, "create_client", None) or session.client
                cm = factory(
                    name,
                    region_name=self._region_name,
                    endpoint_url=self._endpoint_url,
                    config=self._client_config,
                )
                with region_required():
                    client = await self._stack.enter_async_context(cm)
                split_request_phases(client)
                self._clients[name] = client
                fail_fast_on_local_endpoint(self._clients[name])
                self._owned_names.add(name)

    async def _close_when_the_loop_ends(self, stack: AsyncExitStack) -> None:
        """Close ``stack``'s clients when the running loop shuts down, if nobody closed them before.

        A program that never closes its saver (no ``async with``, no
        ``aclose()``) used to end with aiohttp's ``Unclosed client session``
        warnings. asyncio finalizes the async generators a loop started when
        it shuts down (``asyncio.run`` calls ``loop.shutdown_asyncgens()``),
        so one suspended here closes the clients on their own loop, before it
        closes. It closes only the clients it was made for: a saver closed and
        reopened on another loop is left alone.
        """

        async def closer() -> AsyncIterator[None]:
            try:
                yield
            finally:
                if self._stack is stack:
                    await self.aclose()

        self._loop_end_closer = closer()
        await anext(self._loop_end_closer)  # started on this loop: asyncio now tracks it

    # --------------------------------------------------------------- driver

    def _check_loop(self) -> None:
        """Bind to the running loop, or refuse clients of the saver's whose loop has been closed.

        aiobotocore would fail deep inside with "Event loop is closed": the
        common cause is one saver kept across ``asyncio.run`` calls (one per
        Lambda invocation) without closing it in between. Injected clients
        are the caller's to manage: the saver just follows the loop it runs on.
        """
        origin = self.driver.holder
        if origin is not self and isinstance(origin, AsyncDynamoDBSaver):
            origin._check_loop()  # a copy runs on its origin's clients
            return
        bound = self._bound_loop
        if bound is None or (bound.is_closed() and self._stack is None):
            # First use (injected clients open nothing), or the saver was
            # closed with its loop and is used again on a new one.
            self._bound_loop = asyncio.get_running_loop()
            self._open_lock = None
        elif bound.is_closed():
            raise RuntimeError(
                "AsyncDynamoDBSaver's clients belong to an event loop that has been closed "
                "(a saver kept across asyncio.run calls?). Use it as `async with saver:` inside "
                "each loop, or create it with io_thread=True: it then keeps its clients on a "
                "loop of its own, across the caller's loops."
            )

    def _iter(self, op: Op[Any]) -> AsyncIterator[Any]:
        """Drive an operation, yielding what it emits."""
        if self.io_thread and self._io.current() is None:
            return self._io.get().stream(self.driver.iter(traced(self, op)))
        self._check_loop()
        return self.driver.iter(traced(self, op))

    async def _run(self, op: Op[R]) -> R:
        """Drive an operation that emits nothing and return its result."""
        if self.io_thread and self._io.current() is None:
            # The span starts on the I/O loop, in a copy of the caller's
            # context: its parent is the caller's current span.
            return await self._io.get().run(self.driver.run(traced(self, op)))
        self._check_loop()
        return await self.driver.run(traced(self, op))

    async def setup(self) -> None:
        """Create the table (and bucket, if named) when missing. Idempotent."""
        await self._run(self._op_setup())

    # ------------------------------------------------------- async contract

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Fetch a checkpoint tuple (the latest of the namespace without ``checkpoint_id``), or ``None``.

        With its pending writes and its parent's config, as
        ``BaseCheckpointSaver.aget_tuple`` asks; see ``DynamoDBSaver.get_tuple``.
        """
        return await self._run(read.get_tuple(self, config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """List checkpoints newest first, matching ``filter`` (metadata), ``before`` and ``limit``.

        ``config`` ``None`` lists every thread's (see ``BaseCheckpointSaver.alist``).
        """
        async for t in self._iter(
            read.list_checkpoints(self, config, filter=filter, before=before, limit=limit)
        ):
            yield t

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint: one PutItem, plus payloads for large new values.

        Returns the config naming the stored checkpoint (see ``BaseCheckpointSaver.aput``).
        """
        return await self._run(write.put(self, config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes: one request for the whole call (a transaction past 64 writes).

        The writes belong to the checkpoint ``config`` names (see ``BaseCheckpointSaver.aput_writes``).
        """
        await self._run(write.put_writes(self, config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str, *, force: bool = False) -> None:
        """Delete every item and S3 object of a thread (see ``DynamoDBSaver.delete_thread``)."""
        await self._run(deleting.delete_thread(self, thread_id, force=force))

    # ------------------------------------------- sync calls on an async saver

    def _sync(self, coro: Any) -> Any:
        """Run a coroutine from synchronous code (as the Postgres saver allows).

        Only valid from a thread other than the saver's event loop thread.
        In the I/O thread mode, from any thread that runs no event loop (a
        blocking call there would block that loop), with or without entering
        the saver first.
        """
        if self.io_thread:
            return self._sync_on_io_thread(coro)
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

    def _sync_on_io_thread(self, coro: Any) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._io.get().run_blocking(coro)
        coro.close()
        raise asyncio.InvalidStateError(
            "Synchronous calls to AsyncDynamoDBSaver are only allowed from a different thread, one "
            "that runs no event loop. From async code, use the async interface, e.g. "
            "`await checkpointer.aget_tuple(...)` or `await graph.ainvoke(...)`."
        )

    @property
    def clients(self) -> Mapping[str, Any]:
        """The saver's clients by service, ``"dynamodb"`` and ``"s3"`` (read-only, live view).

        In the I/O thread mode the clients belong to the saver's I/O loop:
        from any other thread you get a proxy whose API calls run there
        (``await saver.clients["dynamodb"].describe_table(...)`` works from
        your loop; ``.meta`` and event hooks are the client's own).

        Example:
            ```python
            async with AsyncDynamoDBSaver(table_name="checkpoints") as saver:
                await saver.clients["dynamodb"].describe_table(TableName=saver.table_name)
            ```
        """
        if not self.io_thread:
            return super().clients
        return ClientsView(self._clients, self._io)

    @property
    def io_runner(self) -> IOThread | None:
        """The I/O thread running this saver's operations (``io_thread=True``), or None.

        None without ``io_thread``, and before the first operation starts it;
        after ``aclose`` it is the stopped thread (``io_runner.alive`` is
        False) until the next operation starts a new one.
        """
        return self._io.thread

    @property
    def _loop(self) -> asyncio.AbstractEventLoop | None:
        if self.io_thread:
            io = self._io.thread
            return io.loop if io is not None and io.alive else None
        return self._bound_loop

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """List checkpoints newest first, as :meth:`alist`: sync, from a thread other than the saver's event loop.

        The whole listing is read before the first one is returned.
        """

        async def collect() -> list[CheckpointTuple]:
            return [t async for t in self.alist(config, filter=filter, before=before, limit=limit)]

        return iter(self._sync(collect()))

    # ------------------------------------------------ extended capabilities

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Delta-channel history in a constant number of round trips (see ``DynamoDBSaver``'s)."""
        return await self._run(history.delta_history(self, config, channels))

    acopy_thread = async_method(copying.copy_thread)
    amigrate_tenant_thread = async_method(copying.migrate_tenant_thread)
    # Both widen LangGraph's signature (a report instead of None, keep_last):
    # typed from module-level twins, so the override keeps the wider type.
    aprune = _aprune  # type: ignore[assignment]
    adelete_for_runs = _adelete_for_runs  # type: ignore[assignment]

    # ------------------------------------------------------------ lifecycle

    areap_thread = async_method(deleting.reap_thread)
    areap_expired_stream = async_method(sweeps.reap_expired_stream)
    apurge_expired = async_method(sweeps.purge_expired)
    arun_pruner = async_method(sweeps.run_pruner)
    asweep_orphans = async_method(sweeps.sweep_orphans)

    # ------------------------------------------------ resumable maintenance

    acopy_thread_step = async_method(steps.copy_thread_step)
    aprune_step = async_method(steps.prune_step)
    adelete_for_runs_step = async_method(steps.delete_for_runs_step)

    # ------------------------------------------------- sync twins (blocking)

    get_tuple = blocking(aget_tuple)
    put = blocking(aput)
    put_writes = blocking(aput_writes)
    delete_thread = blocking(adelete_thread)
    get_delta_channel_history = blocking(aget_delta_channel_history)
    copy_thread = blocking(acopy_thread)
    migrate_tenant_thread = blocking(amigrate_tenant_thread)
    prune = _prune  # type: ignore[assignment]  # as aprune
    delete_for_runs = _delete_for_runs  # type: ignore[assignment]  # as adelete_for_runs
    reap_thread = blocking(areap_thread)
    reap_expired_stream = blocking(areap_expired_stream)
    purge_expired = blocking(apurge_expired)
    run_pruner = blocking(arun_pruner)
    sweep_orphans = blocking(asweep_orphans)
    copy_thread_step = blocking(acopy_thread_step)
    prune_step = blocking(aprune_step)
    delete_for_runs_step = blocking(adelete_for_runs_step)
