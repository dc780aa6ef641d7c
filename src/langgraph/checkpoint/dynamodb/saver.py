"""``DynamoDBSaver``: the synchronous saver, a thin boto3 driver over the core."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar, Unpack

import botocore.session
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)

from langgraph.checkpoint.dynamodb._engine.aws import (
    client_config,
    client_region,
    fail_fast_on_local_endpoint,
    region_required,
    share_models,
    translate_errors,
)
from langgraph.checkpoint.dynamodb._engine.drivers import SyncDriver
from langgraph.checkpoint.dynamodb._engine.methods import SettingsSignature, sync_method
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

__all__ = ["DynamoDBSaver", "client_config"]

R = TypeVar("R")


_prune = sync_method(pruning.prune)
_delete_for_runs = sync_method(deleting.delete_for_runs)


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
        serde: serializer (for example ``EncryptedSerializer``). One that would
            import and call what a stored payload names (LangGraph's permissive
            ``JsonPlusSerializer``, also inside ``EncryptedSerializer``) is made
            strict (``StateTypesSerializer``), or refused if it uses pickle.
        allow_unsafe_serde: keep a permissive ``serde`` as given; only where
            nobody but you can write to the table and the bucket.
        allow_unbound_ciphertext: with an encrypting ``serde``, also read
            ciphertext written without binding (LangGraph's
            ``EncryptedSerializer`` on another saver, or an earlier version
            of this package), for a migration. Off by default: every payload an encrypting
            saver writes is sealed to its thread and place, and one read
            anywhere else raises ``CiphertextBindingError`` (see
            ``docs/security.md``, "Integrity-bound encryption").
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
            Writes keep to it: a value, write or metadata that serializes to
            more raises ``PayloadTooLargeError`` before anything is stored.
        max_payload_objects: most objects one payload may decode to, counted
            from its bytes before decoding (default 1,000,000: about 72 MB
            of Python objects at worst, since one byte of msgpack can be a
            ~72-byte empty map). A larger one raises ``PayloadLimitError``;
            writes keep to it too (``PayloadTooLargeError``).
        value_cache_bytes: memory for the packed channel values this saver
            stored in S3 or read from it, and for values held by older
            checkpoints, so that the next read of a large state needs no GET
            and no second round trip (default 32 MiB; ``0``: off). An entry is only
            served for the very write it came from (see ``docs/architecture.md``).

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

    #: ``help()`` and ``inspect.signature`` show every setting with its default
    #: (``BaseDynamoDBSaver.__init__`` declares them), then the clients.
    __signature__ = SettingsSignature(BaseDynamoDBSaver.__init__)

    def __init__(
        self,
        *,
        dynamodb_client: Any = None,
        s3_client: Any = None,
        boto3_session: Any = None,
        **settings: Unpack[SaverSettings],
    ) -> None:
        """A saver on ``table_name`` (and ``bucket_name``): see the class for every setting."""
        super().__init__(**settings)
        # botocore reads AWS_DEFAULT_REGION only; AWS_REGION (what Lambda sets) is read here.
        region_name = client_region(self._region_name, boto3_session)
        # Without a session of the caller's, clients come from a botocore
        # session sharing the process's parsed API models (``share_models``):
        # the same clients boto3 would make, without parsing the models again.
        if boto3_session is not None:
            make = boto3_session.client
        else:
            make = share_models(botocore.session.Session()).create_client
        opts = {"region_name": region_name, "endpoint_url": self._endpoint_url, "config": self._client_config}
        self._owned: list[Any] = []
        with region_required():
            if dynamodb_client is None:
                dynamodb_client = make("dynamodb", **opts)
                fail_fast_on_local_endpoint(dynamodb_client)
                self._owned.append(dynamodb_client)
            if s3_client is None and self.bucket_name is not None:
                s3_client = make("s3", **opts)
                fail_fast_on_local_endpoint(s3_client)
                self._owned.append(s3_client)
        self._clients = {"dynamodb": dynamodb_client, "s3": s3_client}
        #: Runs this saver's operations (``drivers.SyncDriver``); its copies share it.
        self.driver = SyncDriver(self, **self._driver_settings, translate=translate_errors)

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
        return self.driver.iter(traced(self, op))

    def _run(self, op: Op[R]) -> R:
        """Drive an operation that emits nothing and return its result."""
        return self.driver.run(traced(self, op))

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
        if self.driver.holder is self:
            self.driver.close()
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
        return self._run(read.get_tuple(self, config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """List checkpoints newest first (see ``BaseCheckpointSaver.list``)."""
        return self._iter(read.list_checkpoints(self, config, filter=filter, before=before, limit=limit))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint: one PutItem, plus payloads for large new values."""
        return self._run(write.put(self, config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes: one request for the whole call (a transaction past 64 writes)."""
        self._run(write.put_writes(self, config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str, *, force: bool = False) -> None:
        """Delete every item and S3 object of a thread, in all namespaces.

        Its lock item (``lock``) stays, so fencing tokens only grow. A thread whose
        lease is held raises ``LeaseUnavailableError`` unless ``force=True``, which
        fences the holder out (its next lease-bound write raises ``LeaseLostError``).
        """
        self._run(deleting.delete_thread(self, thread_id, force=force))

    # ------------------------------------------------ extended capabilities

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Delta-channel history in a constant number of round trips (see the core)."""
        return self._run(history.delta_history(self, config, channels))

    copy_thread = sync_method(copying.copy_thread)
    migrate_tenant_thread = sync_method(copying.migrate_tenant_thread)
    # Both widen LangGraph's signature (a report instead of None, keep_last):
    # typed from module-level twins, so the override keeps the wider type.
    prune = _prune  # type: ignore[assignment]
    delete_for_runs = _delete_for_runs  # type: ignore[assignment]

    # ------------------------------------------------------------ lifecycle

    reap_thread = sync_method(deleting.reap_thread)
    reap_expired_stream = sync_method(sweeps.reap_expired_stream)
    purge_expired = sync_method(sweeps.purge_expired)
    run_pruner = sync_method(sweeps.run_pruner)
    sweep_orphans = sync_method(sweeps.sweep_orphans)

    # ------------------------------------------------ resumable maintenance

    copy_thread_step = sync_method(steps.copy_thread_step)
    prune_step = sync_method(steps.prune_step)
    delete_for_runs_step = sync_method(steps.delete_for_runs_step)
