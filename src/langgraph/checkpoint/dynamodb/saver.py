"""``DynamoDBSaver``: the synchronous saver, a thin boto3 driver over the core."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import boto3
from botocore.config import Config
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
from langgraph.checkpoint.dynamodb._driver import SyncDriver
from langgraph.checkpoint.dynamodb._ops import Op
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver, PruneResult
from langgraph.checkpoint.dynamodb.codec import DEFAULT_COMPRESSION, DEFAULT_MAX_PAYLOAD_SIZE, Compression
from langgraph.checkpoint.dynamodb.config import saver_kwargs_from_env
from langgraph.checkpoint.dynamodb.lifecycle import (
    PrunePolicy,
    SweepReport,
)

__all__ = ["DynamoDBSaver", "client_config"]

R = TypeVar("R")


def client_config(
    *, retry_mode: str = "standard", max_attempts: int = 8, max_pool_connections: int = 32
) -> Config:
    """botocore ``Config`` the savers use: bounded retries with backoff and jitter."""
    return Config(
        retries={"mode": retry_mode, "max_attempts": max_attempts},  # type: ignore[typeddict-item]
        max_pool_connections=max_pool_connections,
        connect_timeout=5,
        read_timeout=30,
    )


class DynamoDBSaver(BaseDynamoDBSaver):
    """A LangGraph checkpointer on DynamoDB, spilling large payloads to S3.

    Thread-safe: it uses boto3 *clients* (never resources), which LangGraph
    may call from its thread pool.

    Args:
        table_name: DynamoDB table (see ``schema.table_definition``).
        bucket_name: S3 bucket for payloads over ``s3_threshold``. Without it,
            a payload too large for a DynamoDB item raises
            ``PayloadTooLargeError`` before anything is written.
        region_name: AWS region; default ``AWS_REGION``, then ``AWS_DEFAULT_REGION``,
            then botocore's configuration (a profile's region).
        endpoint_url: endpoint for both services (``AWS_ENDPOINT_URL`` in the
            environment works too), e.g. a local moto server.
        serde: serializer (for example ``EncryptedSerializer``).
        dynamodb_client: a ready-made boto3 DynamoDB client.
        s3_client: a ready-made boto3 S3 client.
        boto3_session: a boto3 ``Session`` to make clients from.
        s3_key_prefix: prefix of every S3 key this saver writes.
        inline_threshold: channel values up to this many bytes (packed) are
            stored inside the checkpoint item; larger ones once per version.
        s3_threshold: payloads above this many bytes go to S3 (with a bucket).
            ``0`` sends every payload to S3.
        compression: ``"auto"`` (default: zstd by size), ``"zlib"``, ``"zstd"`` or ``"none"``.
        tenant_prefix: store every thread under this prefix (partition key
            and S3 key), for IAM tenant isolation (``dynamodb:LeadingKeys``);
            thread ids in configs stay unprefixed.
        ttl: expire a thread after this many idle seconds (whole threads
            only; see ``lifecycle``). ``None`` (default): never.
        track_threads: maintain a head item per thread (last activity, the
            threads index); on by default when ``ttl`` is set.
        touch_on_read: reads count as activity for ``ttl``.
        retry_mode / max_attempts: botocore retry settings for owned clients.
        max_concurrency: parallel S3/DynamoDB requests within one operation.
        max_payload_size: largest payload a read accepts, in bytes, once
            decompressed (and the largest S3 body it downloads); default
            64 MiB. A larger one raises ``PayloadLimitError`` before memory
            grows past the limit (a decompression bomb, an oversized object).

    Example:
        ```python
        from langgraph.checkpoint.dynamodb import DynamoDBSaver
        from langgraph.graph import StateGraph, START

        saver = DynamoDBSaver(table_name="checkpoints", bucket_name="my-ckpt-bucket")
        saver.setup()  # creates table and bucket if missing (tests, local dev)

        builder = StateGraph(dict)
        builder.add_node("hello", lambda s: {"greeting": "hi"})
        builder.add_edge(START, "hello")
        graph = builder.compile(checkpointer=saver)
        graph.invoke({}, {"configurable": {"thread_id": "t-1"}})
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
        dynamodb_client: Any = None,
        s3_client: Any = None,
        boto3_session: Any = None,
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
        cfg = client_config(
            retry_mode=retry_mode, max_attempts=max_attempts, max_pool_connections=max(max_concurrency, 10)
        )
        # botocore reads AWS_DEFAULT_REGION only; AWS_REGION (what Lambda sets) is read here.
        region_name = client_region(region_name, boto3_session)
        session = boto3_session or boto3.session.Session(region_name=region_name)
        self._owned: list[Any] = []
        if dynamodb_client is None:
            dynamodb_client = session.client(
                "dynamodb", region_name=region_name, endpoint_url=endpoint_url, config=cfg
            )
            fail_fast_on_local_endpoint(dynamodb_client)
            self._owned.append(dynamodb_client)
        if s3_client is None and bucket_name is not None:
            s3_client = session.client("s3", region_name=region_name, endpoint_url=endpoint_url, config=cfg)
            fail_fast_on_local_endpoint(s3_client)
            self._owned.append(s3_client)
        self._clients = {"dynamodb": dynamodb_client, "s3": s3_client}
        self._driver = SyncDriver(self, max_concurrency=max_concurrency, translate=translate_errors)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **options: Any) -> DynamoDBSaver:
        """A saver on the store the environment names (see ``langgraph.checkpoint.dynamodb.config``).

        Reads ``LANGGRAPH_DYNAMODB_TABLE`` (required), ``LANGGRAPH_DYNAMODB_BUCKET``,
        ``LANGGRAPH_DYNAMODB_S3_KEY_PREFIX``, ``LANGGRAPH_DYNAMODB_TENANT_PREFIX``,
        ``LANGGRAPH_DYNAMODB_TTL_SECONDS``, ``LANGGRAPH_DYNAMODB_TRACK_THREADS``,
        ``LANGGRAPH_DYNAMODB_MAX_PAYLOAD_SIZE`` and ``AWS_REGION``/``AWS_DEFAULT_REGION``: what ``langgraph-dynamodb local``
        prints and the CDK construct's ``saver_environment`` sets.

        Args:
            env: Variables to read (default ``os.environ``).
            **options: Other constructor arguments; they override the environment.

        Raises:
            ValueError: ``LANGGRAPH_DYNAMODB_TABLE`` is not set, or a value is malformed.

        Example:
            ```python
            # with what `langgraph-dynamodb local` prints, or the construct's saver_environment
            saver = DynamoDBSaver.from_env()
            graph = builder.compile(checkpointer=saver)
            ```
        """
        return cls(**{**saver_kwargs_from_env(env), **options})

    # --------------------------------------------------------------- driver

    def _iter(self, op: Op[Any]) -> Iterator[Any]:
        """Drive an operation, yielding what it emits."""
        return self._driver.iter(op)

    def _run(self, op: Op[R]) -> R:
        """Drive an operation that emits nothing and return its result."""
        return self._driver.run(op)

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> DynamoDBSaver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the clients this saver created (not injected ones) and its pool."""
        # A lease-bound copy (lock.ThreadLease.bind) shares its saver's
        # driver: only the saver itself shuts the pool down.
        if self._driver.holder is self:
            self._driver.close()
        for client in self._owned:
            client.close()
        self._owned = []

    def setup(self) -> None:
        """Create the table (and bucket, if named) when missing. Idempotent.

        For tests and local development; production deploys the CDK stack.
        """
        self._run(self._op_setup())

    # ------------------------------------------------------------- contract

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Fetch a checkpoint (latest of the namespace without ``checkpoint_id``)."""
        return self._run(self._op_get_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """List checkpoints newest first (see ``BaseCheckpointSaver.list``)."""
        return self._iter(self._op_list(config, filter=filter, before=before, limit=limit))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint: one PutItem, plus payloads for large new values."""
        return self._run(self._op_put(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes: one UpdateItem for the whole call."""
        self._run(self._op_put_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every item and S3 object of a thread, in all namespaces."""
        self._run(self._op_delete_thread(thread_id))

    # ------------------------------------------------ extended capabilities

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Delta-channel history in a constant number of round trips (see the core)."""
        return self._run(self._op_delta_history(config, channels))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread (all namespaces, writes, blobs, S3 objects) to a new thread id."""
        self._run(self._op_copy_thread(source_thread_id, target_thread_id))

    def migrate_tenant_thread(self, tenant_prefix: str, thread_id: str) -> None:
        """Move tenant ``tenant_prefix``'s thread ``thread_id`` to the prefix-free tenant layout.

        For threads written by a version before the tenant delimiter (which
        stored them as the untenanted thread ``tenant_prefix + thread_id``).
        Run it with an untenanted (operator) saver, while the tenant is not
        writing that thread; safe to re-run after an interruption.

        Example:
            >>> operator = DynamoDBSaver(table_name="t", bucket_name="b")  # untenanted  # doctest: +SKIP
            >>> operator.migrate_tenant_thread("acme-", "t1")  # old "acme-t1" -> "acme-|t1"  # doctest: +SKIP
        """
        self._run(self._op_migrate_tenant_thread(tenant_prefix, thread_id))

    def prune(  # type: ignore[override]  # adds keep_last, returns a report
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
    ) -> PruneResult:
        """Prune threads, delta-safe.

        ``keep_latest`` keeps the latest checkpoint of each namespace (the
        ``keep_last`` latest, if given) with its writes, plus every ancestor
        its delta channels need back to their nearest snapshot. ``delete``
        removes the threads.
        """
        return self._run(self._op_prune(thread_ids, strategy=strategy, keep_last=keep_last))

    def delete_for_runs(self, run_ids: Sequence[str]) -> PruneResult:  # type: ignore[override]
        """Delete the checkpoints and writes of runs (via the run-id index), delta-safe."""
        return self._run(self._op_delete_for_runs(run_ids))

    # ------------------------------------------------------------ lifecycle

    def reap_thread(self, thread_id: str, *, expired_before: float) -> PruneResult:
        """Delete what an expired thread left (items stamped before the cutoff)."""
        return self._run(self._op_reap_thread(thread_id, expired_before=expired_before))

    def reap_expired_stream(self, event: Mapping[str, Any]) -> SweepReport:
        """Reap the threads whose heads DynamoDB TTL deleted, from a Streams event."""
        return self._run(self._op_reap_stream(event))

    def purge_expired(self, *, deadline: float | None = None) -> SweepReport:
        """Reap every expired thread found in the threads index (no stream needed)."""
        return self._run(self._op_purge_expired(deadline=deadline))

    def run_pruner(
        self, policy: PrunePolicy, *, deadline: float | None = None, max_pages: int | None = None
    ) -> SweepReport:
        """Apply a prune policy to the table, resumably, until ``deadline`` (epoch s)."""
        return self._run(self._op_run_pruner(policy, deadline=deadline, max_pages=max_pages))

    def sweep_orphans(
        self, *, grace_seconds: float = 86_400, deadline: float | None = None, max_pages: int | None = None
    ) -> SweepReport:
        """Delete S3 objects no item references, older than ``grace_seconds``."""
        return self._run(
            self._op_sweep_orphans(grace_seconds=grace_seconds, deadline=deadline, max_pages=max_pages)
        )
