"""The command line: argparse, main, console_main and the mapping of exceptions to exit codes."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

from langgraph.checkpoint.dynamodb.cli import _capacity, _migrate, _ui
from langgraph.checkpoint.dynamodb.cli import _doctor_export_import as doctor_export_import
from langgraph.checkpoint.dynamodb.cli._base import (
    CREDENTIAL_CODES,
    DEFAULT_LOCAL_BUCKET,
    DEFAULT_LOCAL_TABLE,
    ENV_BUCKET,
    ENV_S3_PREFIX,
    ENV_TABLE,
    ENV_TENANT,
    EXIT_CREDENTIALS,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PIPE,
    EXIT_USAGE,
    CLIError,
    StdoutClosed,
    client_code,
    positive,
    when_text,
)
from langgraph.checkpoint.dynamodb.cli._commands import (
    EXIT_AT_ONCE,
    Ctx,
    cmd_copy,
    cmd_delete,
    cmd_diff,
    cmd_history,
    cmd_prune,
    cmd_show,
    cmd_stats,
    cmd_threads,
    connection_settings,
    make_saver,
)
from langgraph.checkpoint.dynamodb.cli._local_command import cmd_local
from langgraph.checkpoint.dynamodb.cli._render import paint, wants_color
from langgraph.checkpoint.dynamodb.tools._inspection import ddb_client

# =================================================================== parser


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors go through our error path (exit 2, JSON if asked)."""

    def error(self, message: str) -> NoReturn:
        raise CLIError(f"{self.prog}: {message}", EXIT_USAGE, "usage")


def _global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    d = argparse.SUPPRESS if suppress else None
    g = parser.add_argument_group("connection (global; may also follow the command)")
    g.add_argument("--table", default=d, help=f"DynamoDB table (env {ENV_TABLE})")
    g.add_argument("--bucket", default=d, help=f"S3 bucket for large payloads (env {ENV_BUCKET})")
    g.add_argument(
        "--region", default=d, help="AWS region (default: AWS_REGION / AWS_DEFAULT_REGION / profile)"
    )
    g.add_argument(
        "--endpoint-url", default=d, help="endpoint for DynamoDB and S3 (default: AWS_ENDPOINT_URL)"
    )
    g.add_argument(
        "--s3-key-prefix",
        default=d,
        help=f"S3 key prefix of the saver (env {ENV_S3_PREFIX}; default checkpoints/)",
    )
    g.add_argument("--profile", default=d, help="AWS shared-config profile")
    g.add_argument(
        "--tenant-prefix",
        default=d,
        help=f"the savers' tenant_prefix: only that tenant's threads (env {ENV_TENANT})",
    )
    g.add_argument(
        "--encrypted",
        action="store_true",
        default=d if suppress else False,
        help="decode with EncryptedSerializer: the key ring in LANGGRAPH_AES_KEYS, else the AES key in LANGGRAPH_AES_KEY",
    )
    g.add_argument(
        "--json", action="store_true", default=d if suppress else False, help="machine-readable JSON output"
    )
    g.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default=d if suppress else "auto",
        help="colour: auto (default: on a terminal, unless NO_COLOR is set), always, never; never in --json",
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("langgraph-checkpoint-dynamodb-s3")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def _progress_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="progress line on stderr: auto (default: when stderr is a terminal), always, never; "
        "never with --json",
    )


#: ``build_parser``'s helper given to every command registrar: add(name, help, cmd_fn, *, saver, connection).
Add = Callable[..., argparse.ArgumentParser]

_EPILOG = (
    "exit codes: 0 ok, 1 error, 2 usage/configuration, 3 credentials, 4 not found, "
    "5 refused/not confirmed, 6 not supported, 130 interrupted, 141 output closed early "
    "(e.g. | head). See docs/cli.md."
)


def build_parser() -> argparse.ArgumentParser:
    """The ``langgraph-dynamodb`` argument parser."""
    common = _Parser(add_help=False)
    _global_options(common, suppress=True)
    parser = _Parser(
        prog="langgraph-dynamodb",
        description="Inspect and manage LangGraph threads stored in DynamoDB + S3.",
        epilog=_EPILOG,
    )
    parser.add_argument(
        "--version", action="version", version=f"langgraph-dynamodb {_version()}", help="print the version"
    )
    _global_options(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    add = _command_adder(sub, common)
    # In the order of --help.
    _add_local(add)
    _add_threads(add)
    _add_checkpoint_reads(add)
    _add_thread_changes(add)
    _add_stats(add)
    # doctor, export, import; migrate; the inspector (ui): in their own modules.
    doctor_export_import.register(add)
    _migrate.register(add)
    _ui.register(add)
    _capacity.register(add)
    return parser


def _command_adder(sub: Any, common: argparse.ArgumentParser) -> Add:
    """The ``add`` helper: a subcommand, its ``--help`` text, the function it runs, and the global options."""

    def add(
        name: str,
        help_: str,
        fn: Callable[[Ctx], int],
        *,
        saver: bool = True,
        connection: bool = True,
    ) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(
            name, help=help_, description=help_, parents=[common] if connection else []
        )
        p.set_defaults(func=fn, needs_saver=saver)
        return p

    return add


def _add_local(add: Add) -> None:
    p = add(
        "local",
        "serve a local AWS endpoint (moto) with the table and bucket; Ctrl-C stops it",
        cmd_local,
        saver=False,
        connection=False,  # it serves an endpoint: the connection options do not apply
    )
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: a free port, printed)")
    p.add_argument("--env-file", help="also write the export lines to this file (to `source` it)")
    sup = argparse.SUPPRESS  # so that the same options given before `local` are kept
    p.add_argument("--table", default=sup, help=f"table to create (default {DEFAULT_LOCAL_TABLE})")
    p.add_argument("--bucket", default=sup, help=f"bucket to create (default {DEFAULT_LOCAL_BUCKET})")
    p.add_argument(
        "--region", default=sup, help="region (default: AWS_REGION / AWS_DEFAULT_REGION / us-east-1)"
    )
    p.add_argument(
        "--s3-key-prefix",
        default=sup,
        help=f"S3 key prefix of the saver it sets up (env {ENV_S3_PREFIX}; default checkpoints/)",
    )
    p.add_argument("--json", action="store_true", default=sup, help="print one JSON line instead")
    p.add_argument(
        "--function",
        action="append",
        default=[],
        metavar="NAME=MODULE:FUNCTION",
        help="also serve Lambda Invoke of function NAME by running MODULE:FUNCTION here "
        "(repeatable; the current directory is on the path)",
    )
    p.add_argument(
        "--function-timeout",
        type=float,
        default=900.0,
        metavar="SECONDS",
        help="the served functions' timeout: their context's deadline (default 900)",
    )


def _add_threads(add: Add) -> None:
    p = add(
        "threads",
        "list threads, most recent activity first (last activity: the thread heads index; "
        "without thread heads, the newest checkpoint's time)",
        cmd_threads,
    )
    p.add_argument("--limit", type=positive, default=50, help="threads per page (default 50)")
    p.add_argument("--page-token", help="continue from a previous page (it keeps the filters)")
    p.add_argument(
        "--source",
        choices=("auto", "index", "scan"),
        default="auto",
        help="thread heads index, table scan, or auto (index if it has heads)",
    )
    p.add_argument("--prefix", default=None, help="only thread ids starting with this")
    p.add_argument(
        "--active-since",
        type=when_text,
        metavar="WHEN",
        help="only threads active since WHEN: a duration ago (30m, 2h, 7d, 1h30m) or an ISO time",
    )
    p.add_argument(
        "--idle-for",
        type=when_text,
        metavar="DURATION",
        help="only threads with no activity for at least DURATION (or since an ISO time)",
    )


def _add_checkpoint_reads(add: Add) -> None:
    """``history``, ``show`` and ``diff``: the checkpoints of one thread."""
    p = add("history", "checkpoints of a thread, newest first", cmd_history)
    p.add_argument("thread")
    p.add_argument("--ns", default="", help="checkpoint namespace (default: root)")
    p.add_argument("--all-namespaces", action="store_true", help="all namespaces (subgraphs) merged")
    p.add_argument("--limit", type=positive, default=None, help="at most N checkpoints")
    p.add_argument(
        "--no-sizes", action="store_true", help="no SIZE column (saves reads; JSON rows get no bytes)"
    )
    p.add_argument("--width", type=positive, default=48, help="column width limit (default 48)")

    p = add("show", "decoded state of a checkpoint (default: the latest)", cmd_show)
    p.add_argument("thread")
    p.add_argument("checkpoint", nargs="?", help="checkpoint id, unique prefix, or 'latest'")
    p.add_argument("--ns", default="", help="checkpoint namespace (default: root)")
    p.add_argument("--full", action="store_true", help="print values in full")
    p.add_argument("--all-channels", action="store_true", help="include LangGraph's control channels")
    p.add_argument("--width", type=positive, default=80, help="value preview width (default 80)")
    p.add_argument("--channel", metavar="NAME", help="print only this channel's value, in full")
    p.add_argument(
        "--no-sizes", action="store_true", help="skip the stored size (saves reads; JSON gets no bytes)"
    )

    p = add("diff", "channel-level differences between two checkpoints", cmd_diff)
    p.add_argument("thread")
    p.add_argument("a", help="checkpoint id, unique prefix, or 'latest'")
    p.add_argument("b", help="checkpoint id, unique prefix, or 'latest'")
    p.add_argument("--ns", default="", help="checkpoint namespace (default: root)")
    p.add_argument("--width", type=positive, default=40, help="value preview width (default 40)")


def _add_thread_changes(add: Add) -> None:
    """``copy``, ``prune`` and ``delete``: the commands that write."""
    p = add("copy", "copy a thread (all namespaces, same checkpoint ids) to a new, empty thread id", cmd_copy)
    p.add_argument("source")
    p.add_argument("target")
    _progress_option(p)

    p = add("prune", "delete old checkpoints of threads (their latest state stays loadable)", cmd_prune)
    p.add_argument("threads", nargs="+", metavar="THREAD")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--keep-last", type=int, metavar="N", help="keep the last N checkpoints per namespace")
    how.add_argument(
        "--strategy",
        choices=("keep_latest", "delete"),
        default="keep_latest",
        help="keep_latest (default) or delete (the whole thread)",
    )
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    _progress_option(p)

    p = add("delete", "delete a thread: every item and S3 object, all namespaces", cmd_delete)
    p.add_argument("thread")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.add_argument(
        "--force",
        action="store_true",
        help="delete even while the thread's lease is held (the holder is fenced out)",
    )


def _add_stats(add: Add) -> None:
    p = add("stats", "what the table and bucket hold: items, bytes, objects by kind", cmd_stats)
    _progress_option(p)
    p.add_argument("--thread", help="only this thread (a Query instead of a table Scan)")


# ===================================================================== main


def map_exception(exc: BaseException, args: argparse.Namespace | None, saver: Any) -> CLIError:
    """Turn AWS and saver exceptions into CLI errors with exit codes."""
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    table = getattr(saver, "table_name", None) or (args and connection_settings(args)["table"])
    bucket = getattr(saver, "bucket_name", None) or (args and connection_settings(args)["bucket"])
    where = ""
    if saver is not None:
        meta = getattr(ddb_client(saver), "meta", None)
        if meta is not None:
            where = f" (region {meta.region_name}, endpoint {meta.endpoint_url})"
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return CLIError(
            f"no AWS credentials found: {exc}; set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY",
            EXIT_CREDENTIALS,
            "no_credentials",
        )
    if isinstance(exc, NoRegionError):
        return CLIError("no AWS region: pass --region or set AWS_REGION", EXIT_USAGE, "no_region")
    if isinstance(exc, EndpointConnectionError):
        from langgraph.checkpoint.dynamodb._engine.aws import endpoint_advice
        from langgraph.checkpoint.dynamodb.errors import EndpointUnreachableError

        if isinstance(exc, EndpointUnreachableError):  # the saver's: it already says what to do
            return CLIError(str(exc), EXIT_ERROR, "endpoint_unreachable")
        # The library's wording, so the CLI and a program on the same endpoint say the same.
        url = str(getattr(exc, "kwargs", {}).get("endpoint_url", "?"))
        return CLIError(
            f"cannot reach the endpoint {url}: {endpoint_advice(url)}", EXIT_ERROR, "endpoint_unreachable"
        )
    if isinstance(exc, ClientError):
        code = client_code(exc)
        op = getattr(exc, "operation_name", "")
        if code == "ResourceNotFoundException":
            return CLIError(
                f"table {table!r} does not exist{where}: deploy it (the CDK construct CheckpointStore, or "
                f"DynamoDBSaver.setup() for development), or fix --table/{ENV_TABLE} or --region/AWS_REGION",
                EXIT_USAGE,
                "table_not_found",
            )
        if code in ("NoSuchBucket",) or (
            code in ("404", "NotFound") and op in ("HeadBucket", "ListObjectsV2")
        ):
            return CLIError(
                f"bucket {bucket!r} does not exist{where}: deploy it (the CDK construct CheckpointStore, or "
                f"DynamoDBSaver.setup() for development), or fix --bucket/{ENV_BUCKET} or --region/AWS_REGION",
                EXIT_USAGE,
                "bucket_not_found",
            )
        if code in CREDENTIAL_CODES:
            return CLIError(
                f"AWS rejected the credentials ({code}){where}: {exc}", EXIT_CREDENTIALS, "bad_credentials"
            )
        return CLIError(
            f"AWS error {code or '?'} in {op or 'a request'}{where}: {exc}", EXIT_ERROR, "aws_error"
        )
    from langgraph.checkpoint.dynamodb.errors import CheckpointStoreError

    if isinstance(exc, CheckpointStoreError):
        return CLIError(f"{type(exc).__name__}: {exc}", EXIT_ERROR, "store_error")
    return CLIError(f"unexpected error: {type(exc).__name__}: {exc}", EXIT_ERROR, "unexpected")


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run the CLI; returns the exit code (the console script exits with it).

    Example:
        >>> main(["--table", "checkpoints", "threads", "--json"])  # doctest: +SKIP
        0
    """
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    wants_json = "--json" in argv
    args: argparse.Namespace | None = None
    ctx: Ctx | None = None
    try:
        try:
            parser = build_parser()
            if not argv:
                parser.print_help(stdout)
                return EXIT_USAGE
            with contextlib.redirect_stdout(stdout):  # --help goes where we were told
                args = parser.parse_args(argv)
        except SystemExit as exc:  # --help / --version
            return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_OK
        except BrokenPipeError as exc:  # --help | head
            raise StdoutClosed from exc
        if not getattr(args, "command", None):
            raise CLIError("missing command (see --help)", EXIT_USAGE, "usage")
        ctx = Ctx(args, stdin, stdout, stderr)
        if args.needs_saver:
            ctx.saver = make_saver(args)
        try:
            code: int = args.func(ctx)
            return code
        finally:
            if ctx.saver is not None:
                ctx.saver.close()
    except KeyboardInterrupt:
        stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    except StdoutClosed:
        return EXIT_PIPE  # nothing to say: nobody reads what we would print
    except CLIError as err:
        return _report(err, stderr, wants_json, _color_mode(argv))
    except Exception as exc:
        return _report(
            map_exception(exc, args, ctx.saver if ctx else None), stderr, wants_json, _color_mode(argv)
        )


def _color_mode(argv: Sequence[str]) -> str | None:
    """``--color`` as given, read from the raw arguments: errors may come before parsing ends."""
    mode = None
    for i, arg in enumerate(argv):
        if arg == "--color" and i + 1 < len(argv):
            mode = argv[i + 1]
        elif arg.startswith("--color="):
            mode = arg.split("=", 1)[1]
    return mode


def _report(err: CLIError, stderr: TextIO, as_json: bool, color: str | None = None) -> int:
    if as_json:
        stderr.write(
            json.dumps({"error": err.code, "message": err.message, "exit_code": err.exit_code}) + "\n"
        )
    else:
        prefix = paint("error:", "red") if wants_color(color, stderr) else "error:"
        stderr.write(f"{prefix} {err.message}\n")
    return err.exit_code


def console_main() -> None:
    """The ``langgraph-dynamodb`` console script: :func:`main`, then exit with its code.

    ``local`` ends its process at once: the embedded server's threads and a
    client's leftover keep-alive connection must not hold Ctrl-C up (nothing
    of an in-memory endpoint needs saving). In-process callers of
    :func:`main` are never exited.

    A reader that closes our stdout early (``langgraph-dynamodb show t | head -1``)
    ends the command quietly with exit code 141, no traceback.
    """
    code = main()
    try:
        sys.stdout.flush()  # what is still buffered may be what finds the pipe closed
    except BrokenPipeError:
        code = EXIT_PIPE
    if code == EXIT_PIPE:
        # As Python's docs advise for SIGPIPE (the signal module's notes): point
        # stdout at devnull, so the interpreter's last flush at exit cannot fail
        # again and print "Exception ignored ... BrokenPipeError".
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
    if EXIT_AT_ONCE.is_set():
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    sys.exit(code)
