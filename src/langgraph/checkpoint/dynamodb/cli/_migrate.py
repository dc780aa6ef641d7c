"""The ``migrate`` command of ``langgraph-dynamodb``: threads of another LangGraph saver into this store.

Registered by ``build_parser`` (``_parser``); the work is done by the library
module ``migrate``. The source is named by ``--from``: ``sqlite:PATH`` (a
``SqliteSaver`` database, opened read-only), ``postgres:DSN`` (a
``PostgresSaver`` database, when ``langgraph-checkpoint-postgres`` is
installed) or ``checkpoint-aws:TABLE[?bucket=B&prefix=P&region=R]`` (the
tables of ``langgraph-checkpoint-aws``'s ``DynamoDBSaver``, read with boto3:
that package is not needed). Values cross byte for byte (``PortableSerializer`` on both sides,
as ``export``/``import`` do): the application's modules are not needed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

from langgraph.checkpoint.dynamodb.cli._base import EXIT_ERROR, EXIT_OK, EXIT_REFUSED, EXIT_USAGE, CLIError
from langgraph.checkpoint.dynamodb.cli._commands import Ctx
from langgraph.checkpoint.dynamodb.cli._doctor_export_import import allow_type_option, portable_saver

__all__ = ["register"]

Add = Callable[..., argparse.ArgumentParser]


def register(add: Add) -> None:
    """Add the command to the parser (``add`` is ``build_parser``'s helper)."""
    p = add(
        "migrate",
        "copy threads from a LangGraph SQLite or Postgres checkpointer, or langgraph-checkpoint-aws "
        "tables, into the table (same ids, resumable, verified)",
        cmd_migrate,
    )
    p.add_argument(
        "--from",
        dest="source_url",
        required=True,
        metavar="SOURCE",
        help="sqlite:PATH (a SqliteSaver database file), postgres:DSN (needs langgraph-checkpoint-postgres) "
        "or checkpoint-aws:TABLE[?bucket=BUCKET&prefix=KEY_PREFIX&region=REGION] (langgraph-checkpoint-aws's "
        "DynamoDBSaver table; bucket and prefix as its s3_offload_config had them)",
    )
    p.add_argument(
        "--thread",
        dest="threads",
        action="append",
        metavar="ID",
        help="migrate this thread (repeatable; default: every thread of the source)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="compare and report what would be written; write nothing"
    )
    p.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="progress line on stderr: auto (default: when stderr is a terminal), always, never; never with --json",
    )
    allow_type_option(p)


@contextlib.contextmanager
def _sqlite(path: str, serde: Any) -> Iterator[Any]:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError as exc:
        raise CLIError(
            "--from sqlite: needs the package langgraph-checkpoint-sqlite (pip install "
            "'langgraph-checkpoint-sqlite')",
            EXIT_USAGE,
            "missing_package",
        ) from exc

    if not os.path.isfile(path):
        raise CLIError(f"--from sqlite:{path}: no such file", EXIT_USAGE, "bad_source")
    from langgraph.checkpoint.dynamodb.tools import _migrate_sqlite
    from langgraph.checkpoint.dynamodb.tools._migrate_sqlite import SqliteSourceError, guard_sqlite

    budget = _migrate_sqlite.DEFAULT_STATEMENT_SECONDS  # read now: the tests lower it

    uri = "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    try:
        try:
            guard_sqlite(
                conn, max_statement_seconds=budget
            )  # a view, a virtual table or generated columns would run code as we read
        except SqliteSourceError as exc:
            raise CLIError(f"--from sqlite:{path}: {exc}", EXIT_USAGE, "bad_source") from exc
        except sqlite3.DatabaseError as exc:
            raise CLIError(
                f"--from sqlite:{path}: not a SQLite database ({exc})", EXIT_USAGE, "bad_source"
            ) from exc
        saver = SqliteSaver(conn, serde=serde)
        try:
            saver.setup()  # a no-op on a LangGraph database; a write (refused: read-only) on any other
        except sqlite3.DatabaseError as exc:
            raise CLIError(
                f"--from sqlite:{path}: not a LangGraph SQLite checkpoint database ({exc})",
                EXIT_USAGE,
                "bad_source",
            ) from exc
        try:
            yield saver
        except sqlite3.OperationalError as exc:
            if "interrupted" not in str(exc):
                raise
            raise CLIError(
                f"--from sqlite:{path}: a query on the source ran over {budget:g} s and "
                "was interrupted (a hostile or damaged file?); threads migrated before it are complete and "
                "verified, a thread it stopped is partial and marked: the next run completes it",
                EXIT_ERROR,
                "bad_source",
            ) from exc
    finally:
        conn.close()


@contextlib.contextmanager
def _postgres(dsn: str, serde: Any) -> Iterator[Any]:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError as exc:
        raise CLIError(
            "--from postgres: needs the package langgraph-checkpoint-postgres (pip install "
            "'langgraph-checkpoint-postgres' 'psycopg[binary]')",
            EXIT_USAGE,
            "missing_package",
        ) from exc
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.serde = serde
        yield saver


#: The options ``--from checkpoint-aws:TABLE?...`` takes (its saver's own names where it has them).
_AWS_OPTIONS = ("bucket", "prefix", "region", "missing")


@contextlib.contextmanager
def _checkpoint_aws(rest: str, serde: Any, ctx: Ctx) -> Iterator[Any]:
    from urllib.parse import parse_qs

    from langgraph.checkpoint.dynamodb.tools.migrate import CheckpointAwsSource

    table, _, query = rest.partition("?")
    try:
        params = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        params = {"": []}
    unknown = sorted(set(params) - set(_AWS_OPTIONS))
    if params.get("missing", ["skip"]) != ["skip"]:
        unknown.append("missing=" + params["missing"][0])
    if not table or unknown or any(len(v) != 1 for v in params.values()):
        raise CLIError(
            f"--from checkpoint-aws:{rest}: expected checkpoint-aws:TABLE[?bucket=BUCKET&prefix=KEY_PREFIX"
            f"&region=REGION&missing=skip], each option once"
            + (f" (unknown: {', '.join(unknown)})" if unknown else ""),
            EXIT_USAGE,
            "bad_source",
        )
    opt = {k: v[0] for k, v in params.items()}
    client = ctx.saver.clients["dynamodb"]
    source = CheckpointAwsSource(
        table,
        bucket_name=opt.get("bucket") or None,
        key_prefix=opt.get("prefix") or None,
        serde=serde,
        region_name=opt.get("region") or client.meta.region_name,
        endpoint_url=getattr(ctx.args, "endpoint_url", None) or None,
        skip_missing_objects="missing" in opt,
    )
    try:
        yield source
    finally:
        for c in (source.dynamodb, source.s3):
            if c is not None:
                c.close()


def _source(url: str, serde: Any, ctx: Ctx) -> contextlib.AbstractContextManager[Any]:
    scheme, sep, rest = url.partition(":")
    if sep and rest and scheme == "checkpoint-aws":
        return _checkpoint_aws(rest, serde, ctx)
    if sep and rest and scheme == "sqlite":
        return _sqlite(rest, serde)
    if sep and rest and scheme in ("postgres", "postgresql"):
        return _postgres(url if rest.startswith("//") else rest, serde)
    if url == "memory":
        raise CLIError(
            "--from memory: an InMemorySaver lives in its process; call "
            "langgraph.checkpoint.dynamodb.tools.migrate.migrate_threads from that process instead",
            EXIT_USAGE,
            "bad_source",
        )
    raise CLIError(
        f"--from {url!r}: expected sqlite:PATH, postgres:DSN or checkpoint-aws:TABLE[?bucket=...&prefix=...]",
        EXIT_USAGE,
        "bad_source",
    )


def cmd_migrate(ctx: Ctx) -> int:
    from langgraph.checkpoint.dynamodb.tools.migrate import (
        CheckpointAwsSourceError,
        MigrationError,
        migrate_threads,
    )
    from langgraph.checkpoint.dynamodb.tools.transfer import PortableSerializer

    args = ctx.args
    target = portable_saver(ctx.saver, args)
    serde = PortableSerializer(allowed_types=args.allow_type or ())
    with _source(args.source_url, serde, ctx) as source, ctx.progress("migrate") as progress:

        def tick(done: int, total: int, result: dict[str, Any]) -> None:
            progress.update(
                f"{done}/{total} thread(s), last {result['thread_id']!r}: {result['status']}", force=True
            )

        try:
            summary = migrate_threads(source, target, args.threads, dry_run=args.dry_run, progress=tick)
        except CheckpointAwsSourceError as exc:  # what to pass (bucket, prefix), or what cannot be read
            raise CLIError(str(exc), EXIT_ERROR, "bad_source") from exc
        except MigrationError as exc:
            raise CLIError(str(exc), EXIT_ERROR, "migrate_failed") from exc
    if ctx.json:
        ctx.emit(summary)
    else:
        _print(ctx, summary)
    return EXIT_REFUSED if summary["refused"] else EXIT_OK


def _print(ctx: Ctx, summary: dict[str, Any]) -> None:
    verb = "would write" if summary["dry_run"] else "wrote"
    for r in summary["results"]:
        if r["status"] == "refused":
            ctx.note(f"refused {r['thread_id']!r}: {r['error']}")
        else:
            ctx.out(
                f"{r['status']:<13} {r['thread_id']!r}: {r['checkpoints']} checkpoint(s), "
                f"{r['namespaces']} namespace(s); {verb} {r['written_checkpoints']} checkpoint(s), "
                f"{r['written_writes']} task write record(s)"
            )
    ctx.out(
        f"{summary['threads']} thread(s): {summary['migrated']} migrated, {summary['resumed']} resumed, "
        f"{summary['skipped']} skipped (already complete), {len(summary['refused'])} refused; {verb} "
        f"{summary['checkpoints']} checkpoint(s), {summary['writes']} task write record(s); "
        f"{summary['verified']} verified" + (" (dry run: nothing written)" if summary["dry_run"] else "")
    )
