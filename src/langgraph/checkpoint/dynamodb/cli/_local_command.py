"""The ``local`` command of ``langgraph-dynamodb``: a local AWS endpoint (moto) with the table and bucket, until Ctrl-C."""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from typing import Any

from langgraph.checkpoint.dynamodb import config
from langgraph.checkpoint.dynamodb.cli._base import (
    DEFAULT_LOCAL_BUCKET,
    DEFAULT_LOCAL_TABLE,
    EXIT_OK,
    EXIT_UNSUPPORTED,
    EXIT_USAGE,
    CLIError,
)
from langgraph.checkpoint.dynamodb.cli._commands import EXIT_AT_ONCE, Ctx, connection_settings
from langgraph.checkpoint.dynamodb.tools._local_lambda import parse_function_specs

__all__ = ["cmd_local"]


def _refuse_moot_options(args: argparse.Namespace) -> None:
    """Global options given before `local` that it cannot honour: say so rather than ignore them."""
    moot = [
        opt
        for opt, dest in (
            ("--endpoint-url", "endpoint_url"),
            ("--profile", "profile"),
            ("--tenant-prefix", "tenant_prefix"),
            ("--encrypted", "encrypted"),
        )
        if getattr(args, dest, None)
    ]
    if moot:
        raise CLIError(
            f"{', '.join(moot)} does not apply to `local` (it serves its own endpoint; see local --help)",
            EXIT_USAGE,
            "usage",
        )


def _wait_for_stop() -> None:
    """Block until SIGINT or SIGTERM (or Ctrl-C as KeyboardInterrupt)."""
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    # Our own SIGINT handler too, not Python's KeyboardInterrupt: a process
    # started in the background by a non-interactive shell inherits SIGINT
    # as ignored, and Python then never raises KeyboardInterrupt.
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, on_signal)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        for restored, handler in previous.items():
            signal.signal(restored, handler)


def cmd_local(ctx: Ctx) -> int:
    from langgraph.checkpoint.dynamodb.tools.local import LocalAWS

    args = ctx.args
    _refuse_moot_options(args)
    table = args.table or DEFAULT_LOCAL_TABLE
    bucket = args.bucket or DEFAULT_LOCAL_BUCKET
    region = config.region_from_env(args.region) or "us-east-1"
    try:
        functions = parse_function_specs(getattr(args, "function", []) or [])
    except ValueError as exc:
        raise CLIError(str(exc), EXIT_USAGE, "usage") from exc
    try:
        aws = LocalAWS(
            args.host,
            args.port,
            region=region,
            functions=functions,
            function_timeout=getattr(args, "function_timeout", 900.0),
        )
    except ValueError as exc:
        raise CLIError(str(exc), EXIT_USAGE, "bad_host") from exc
    try:
        aws.start()
    except ImportError as exc:
        raise CLIError(str(exc), EXIT_UNSUPPORTED, "moto_missing") from exc
    except OSError as exc:
        raise CLIError(f"cannot listen on {args.host}:{args.port}: {exc}", EXIT_USAGE, "bad_port") from exc
    try:
        aws.saver(
            table_name=table, bucket_name=bucket, s3_key_prefix=connection_settings(args)["s3_key_prefix"]
        ).close()
        env = aws.env(table_name=table, bucket_name=bucket)
        lines = aws.export_lines(table_name=table, bucket_name=bucket)
        if functions:
            # The handlers run in this process: they read the store and endpoint from its environment.
            os.environ.update(env)
        if args.env_file:
            with open(args.env_file, "w", encoding="utf-8") as fh:
                fh.write("\n".join(lines) + "\n")
        if ctx.json:
            # One line, so a supervising process can read it before we block.
            info = {"endpoint_url": aws.endpoint_url, "table": table, "bucket": bucket, "env": env}
            ctx.out(json.dumps(info))
        else:
            ctx.out(f"# local AWS endpoint (moto) on {aws.endpoint_url}: table {table!r}, bucket {bucket!r}")
            for name, target in functions.items():
                ctx.out(f"# Lambda function {name!r}: Invoke runs {target} here")
            ctx.out("# in another shell:")
            for line in lines:
                ctx.out(line)
            ctx.out("# Ctrl-C stops the server; everything stored in it is lost.")
        ctx.stdout.flush()
        _wait_for_stop()
        EXIT_AT_ONCE.set()
        return EXIT_OK
    finally:
        # Stopping the embedded server can wait on clients' keep-alive
        # connections: stop it in the background and don't wait for it.
        threading.Thread(target=aws.stop, daemon=True).start()
