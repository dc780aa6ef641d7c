"""An embedded local AWS endpoint (a moto server on loopback) for development.

``LocalAWS`` starts moto's ``ThreadedMotoServer`` on ``127.0.0.1`` in a
background thread of the current process, creates the checkpoint table and
bucket with ``DynamoDBSaver.setup()``, and tells other processes how to reach
it (``env()`` / ``export_lines()``). The CLI's ``local`` command and
``python -m demo`` are built on it.

moto is a development dependency (``pip install "moto[server,dynamodb,s3]"``);
it is imported only when a ``LocalAWS`` is started, never by the saver.

Nothing here talks to real AWS: clients made by ``LocalAWS`` carry dummy
credentials and the loopback endpoint explicitly, whatever the environment
says, and the server refuses to bind to a non-loopback address unless asked,
because a moto server has no authentication at all.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.checkpoint.dynamodb.saver import DynamoDBSaver

__all__ = ["DUMMY_CREDENTIALS", "LocalAWS", "isolated_aws_env"]

#: Credentials moto accepts; never valid anywhere else.
DUMMY_CREDENTIALS: Mapping[str, str] = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


def isolated_aws_env(endpoint_url: str, region: str = "us-east-1") -> dict[str, str]:
    """Environment variables that point every AWS SDK at ``endpoint_url`` only.

    Besides the endpoint and dummy credentials, this disables the shared
    config/credentials files and the EC2 metadata service, so nothing from
    the host (a real profile, an instance role) can leak into a local run.

    Example:
        >>> env = isolated_aws_env("http://127.0.0.1:5000")
        >>> env["AWS_ENDPOINT_URL"], env["AWS_ACCESS_KEY_ID"]
        ('http://127.0.0.1:5000', 'testing')
    """
    return {
        "AWS_ENDPOINT_URL": endpoint_url,
        **DUMMY_CREDENTIALS,
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def _served_with_functions(base: type, functions: Mapping[str, str], timeout: float, region: str) -> Any:
    """A ``ThreadedMotoServer`` subclass whose WSGI app also serves Lambda ``Invoke`` of ``functions``."""
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    from langgraph.checkpoint.dynamodb.tools._local_lambda import LambdaInvokeApp

    class WithFunctions(base):  # type: ignore[misc, valid-type]
        def _server_entry(self) -> None:  # moto's own, with the app wrapped
            app = LambdaInvokeApp(
                DomainDispatcherApplication(create_backend_app), functions, timeout_s=timeout, region=region
            )
            self._server = make_server(
                self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
            )
            self._server_ready_event.set()
            self._server.serve_forever()

    return WithFunctions


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class LocalAWS:
    """A moto server on loopback that serves DynamoDB and S3 to this and other processes.

    Args:
        host: address to bind; loopback only unless ``allow_non_loopback``.
        port: TCP port; ``0`` picks a free one (read it from ``endpoint_url``).
        region: region the clients and the exported environment use.
        allow_non_loopback: bind to another address anyway. The server has
            no authentication: anyone who reaches it can read and change
            everything in it.
        functions: Lambda functions whose ``Invoke`` this endpoint serves,
            name -> ``"module:function"`` (imported on first invoke, the
            current directory first on ``sys.path``); each runs in this
            process with a context whose deadline is ``function_timeout``
            seconds. Other functions are moto's (which cannot run them).
        function_timeout: the served functions' timeout, in seconds.

    Example:
        ```python
        from langgraph.checkpoint.dynamodb.tools.local import LocalAWS

        with LocalAWS() as aws:
            saver = aws.saver(table_name="checkpoints", bucket_name="checkpoints")
            graph = builder.compile(checkpointer=saver)
            # another process can use the same server:
            subprocess.run([...], env={**os.environ, **aws.env()})
        ```
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        region: str = "us-east-1",
        allow_non_loopback: bool = False,
        functions: Mapping[str, str] | None = None,
        function_timeout: float = 900.0,
    ) -> None:
        if not allow_non_loopback and not _is_loopback(host):
            raise ValueError(
                f"refusing to serve an unauthenticated moto endpoint on {host!r}; "
                "use a loopback address such as 127.0.0.1"
            )
        self.host = host
        self.port = port
        self.region = region
        #: Lambda functions served here: name -> ``module:function`` (``tools._local_lambda``).
        self.functions = dict(functions or {})
        self.function_timeout = function_timeout
        self._server: Any = None
        self._endpoint_url: str | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> LocalAWS:
        """Start the server (idempotent). Returns ``self``.

        Raises:
            ImportError: moto's server extra is not installed.
            OSError: the port is in use.
        """
        if self._server is not None:
            return self
        try:
            from moto.server import ThreadedMotoServer
        except ImportError as exc:  # pragma: no cover - depends on environment
            raise ImportError(
                "the local endpoint needs moto (the package's local extra): "
                'pip install "langgraph-checkpoint-dynamodb-s3[local]"'
            ) from exc
        if self.port:
            # moto binds in its server thread, where a busy port would leave
            # start() waiting forever: find out here, in the caller's thread.
            with socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET) as probe:
                probe.bind((self.host, self.port))
        # werkzeug logs every request at INFO; a local endpoint should be quiet.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        server = (
            _served_with_functions(ThreadedMotoServer, self.functions, self.function_timeout, self.region)
            if self.functions
            else ThreadedMotoServer
        )(ip_address=self.host, port=self.port, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        self._server = server
        self.port = port
        self._endpoint_url = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        """Stop the server. Everything it stored is gone (moto keeps state in memory)."""
        if self._server is not None:
            server, self._server = self._server, None
            server.stop()

    def __enter__(self) -> LocalAWS:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -------------------------------------------------------------- clients

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:PORT`` of the running server."""
        if self._endpoint_url is None:
            raise RuntimeError("LocalAWS is not started; call start() or use it as a context manager")
        return self._endpoint_url

    def env(self, *, table_name: str | None = None, bucket_name: str | None = None) -> dict[str, str]:
        """Environment for another process: endpoint, dummy credentials, isolation.

        With ``table_name`` / ``bucket_name`` it also sets
        ``LANGGRAPH_DYNAMODB_TABLE`` / ``LANGGRAPH_DYNAMODB_BUCKET``, which the
        CLI, ``DynamoDBSaver.from_env()`` and the Lambda helpers all read.
        """
        from langgraph.checkpoint.dynamodb.config import ENV_BUCKET, ENV_TABLE

        env = isolated_aws_env(self.endpoint_url, self.region)
        if table_name:
            env[ENV_TABLE] = table_name
        if bucket_name:
            env[ENV_BUCKET] = bucket_name
        return env

    def export_lines(self, *, table_name: str | None = None, bucket_name: str | None = None) -> list[str]:
        """``export NAME=value`` lines for a POSIX shell (see :meth:`env`)."""
        import shlex

        return [
            f"export {k}={shlex.quote(v)}"
            for k, v in self.env(table_name=table_name, bucket_name=bucket_name).items()
        ]

    def boto3_session(self) -> Any:
        """A boto3 ``Session`` with the dummy credentials (ignores the environment)."""
        import boto3

        return boto3.session.Session(
            aws_access_key_id=DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=DUMMY_CREDENTIALS["AWS_SESSION_TOKEN"],
            region_name=self.region,
        )

    def client(self, service: str) -> Any:
        """A boto3 client for ``service`` on this endpoint."""
        return self.boto3_session().client(service, endpoint_url=self.endpoint_url, region_name=self.region)

    def saver(
        self, *, table_name: str, bucket_name: str | None = None, setup: bool = True, **kwargs: Any
    ) -> DynamoDBSaver:
        """A ``DynamoDBSaver`` on this endpoint; creates table and bucket unless ``setup=False``.

        Extra keyword arguments go to ``DynamoDBSaver`` (``s3_threshold``,
        ``serde``, ...).
        """
        from langgraph.checkpoint.dynamodb.saver import DynamoDBSaver

        saver = DynamoDBSaver(
            table_name=table_name,
            bucket_name=bucket_name,
            region_name=self.region,
            endpoint_url=self.endpoint_url,
            boto3_session=self.boto3_session(),
            **kwargs,
        )
        if setup:
            saver.setup()
        return saver
