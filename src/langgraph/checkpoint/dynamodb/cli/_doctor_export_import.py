"""The ``doctor``, ``export`` and ``import`` commands of ``langgraph-dynamodb``.

Registered by ``build_parser`` (``_parser``); the work is done by the library modules
``doctor`` and ``transfer``, this module only parses, prints and maps errors
to the CLI's exit codes (see ``_base``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from typing import IO, Any

from langgraph.checkpoint.dynamodb.cli._base import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    CLIError,
    positive,
)
from langgraph.checkpoint.dynamodb.cli._commands import Ctx
from langgraph.checkpoint.dynamodb.cli._thread_listing import require_thread

__all__ = ["allow_type_option", "portable_saver", "register"]

Add = Callable[..., argparse.ArgumentParser]


def register(add: Add) -> None:
    """Add the commands to the parser (``add`` is ``build_parser``'s helper)."""
    add(
        "doctor",
        "check the table, indexes, TTL, stream, bucket and permissions (a dry run); exit 1 on FAIL",
        cmd_doctor,
    )

    p = add("export", "write a thread (all namespaces, metadata, pending writes) as JSON Lines", cmd_export)
    p.add_argument("thread")
    allow_type_option(p)
    p.add_argument(
        "-o", "--output", metavar="FILE", help="write to FILE, created readable by you only (default: stdout)"
    )

    p = add("import", "load an export file into the table, as a new thread", cmd_import)
    p.add_argument("file", metavar="FILE", help="an export file ('-': stdin)")
    p.add_argument(
        "--thread", metavar="NEW_ID", help="thread id to create (default: the exported thread's id)"
    )
    p.add_argument(
        "--max-payload-size",
        type=positive,
        metavar="BYTES",
        help="largest payload accepted (default: the saver's, 64 MiB)",
    )
    allow_type_option(p)


def _type_name(text: str) -> tuple[str, str]:
    module, sep, name = text.partition(":")
    if not (sep and module and name):
        raise argparse.ArgumentTypeError(f"expected MODULE:NAME (e.g. myapp.state:Ticket), got {text!r}")
    return module, name


def allow_type_option(p: argparse.ArgumentParser) -> None:
    """Add ``--allow-type MODULE:NAME`` (repeatable) to a command that reads or writes state it does not understand."""
    p.add_argument(
        "--allow-type",
        action="append",
        type=_type_name,
        default=[],
        metavar="MODULE:NAME",
        help="keep values of this type although it cannot be judged a data class here "
        "(its module is installed but not imported); repeatable. Nothing is imported or called",
    )


def cmd_doctor(ctx: Ctx) -> int:
    from langgraph.checkpoint.dynamodb.tools.doctor import diagnose

    report = diagnose(ctx.saver)
    if ctx.json:
        ctx.emit(report.to_dict())
    else:
        ctx.out(report.render())
    return EXIT_OK if report.ok else EXIT_ERROR


def portable_saver(saver: Any, saver_args: Any = None) -> Any:
    """The CLI's saver, reading and writing state without understanding it.

    The CLI has none of the application's modules: its viewer serializer
    shows typed values as plain fields, which an import would store as
    such. ``PortableSerializer`` keeps them byte for byte instead, and calls
    nothing a payload names. The encryption layer, if any, is kept.
    """
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    from langgraph.checkpoint.dynamodb.tools.transfer import PortableSerializer

    serde: Any = PortableSerializer(allowed_types=getattr(saver_args, "allow_type", None) or ())
    if isinstance(saver.serde, EncryptedSerializer):
        serde = EncryptedSerializer(saver.serde.cipher, serde)
    saver.serde = serde  # this saver is the command's own, used for nothing else
    return saver


def cmd_export(ctx: Ctx) -> int:
    from langgraph.checkpoint.dynamodb.tools.transfer import ExportError, export_thread

    args = ctx.args
    saver = portable_saver(ctx.saver, ctx.args)
    require_thread(saver, args.thread)
    to_stdout = args.output in (None, "-")
    try:
        if to_stdout:
            summary = export_thread(saver, args.thread, ctx.stdout)
        else:
            summary = _export_to_file(saver, args.thread, args.output)
    except ExportError as exc:
        raise CLIError(str(exc), EXIT_ERROR, "export_failed") from exc
    summary["output"] = None if to_stdout else args.output
    text = (
        f"exported thread {args.thread!r}: {summary['checkpoints']} checkpoint(s), {summary['writes']} "
        f"task write record(s), {summary['namespaces']} namespace(s)"
        + ("" if to_stdout else f" to {args.output}")
        + " (plaintext state: protect the file)"
    )
    if ctx.json and not to_stdout:
        ctx.emit(summary)
    else:
        ctx.note(text)  # stdout carries the export itself
    return EXIT_OK


def _export_to_file(saver: Any, thread_id: str, path: str) -> dict[str, Any]:
    """Write next to ``path`` first, then rename: a failed export never leaves a file that looks whole."""
    from langgraph.checkpoint.dynamodb.tools.transfer import export_thread

    tmp = f"{path}.{os.getpid()}.partial"
    try:
        # Owner-only from the start: the file holds the thread's state in plaintext.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror}", EXIT_USAGE, "bad_output") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fp:
            summary = export_thread(saver, thread_id, fp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return summary


def cmd_import(ctx: Ctx) -> int:
    from langgraph.checkpoint.dynamodb.tools.transfer import (
        ExportError,
        ExportFileError,
        TargetExistsError,
        import_thread,
    )

    args = ctx.args
    saver = portable_saver(ctx.saver, ctx.args)
    try:
        with _open_input(args.file, ctx.stdin) as fp:
            summary = import_thread(saver, fp, thread_id=args.thread, max_payload_size=args.max_payload_size)
    except ExportFileError as exc:
        raise CLIError(f"{args.file}: {exc}", EXIT_USAGE, "bad_export_file") from exc
    except TargetExistsError as exc:
        raise CLIError(str(exc), EXIT_REFUSED, "target_exists") from exc
    except ExportError as exc:
        raise CLIError(str(exc), EXIT_ERROR, "import_failed") from exc
    except UnicodeDecodeError as exc:
        raise CLIError(
            f"{args.file}: not UTF-8 text ({exc.reason}); nothing was written",
            EXIT_USAGE,
            "bad_export_file",
        ) from exc
    if ctx.json:
        ctx.emit(summary)
    else:
        ctx.out(
            f"imported {summary['checkpoints']} checkpoint(s), {summary['writes']} task write record(s), "
            f"{summary['namespaces']} namespace(s) into thread {summary['thread_id']!r}"
            f" (exported from {summary['source_thread_id']!r})"
        )
    return EXIT_OK


@contextlib.contextmanager
def _open_input(path: str, stdin: IO[str]) -> Any:
    if path == "-":
        yield stdin if stdin is not None else sys.stdin
        return
    try:
        fp = open(path, encoding="utf-8")  # noqa: SIM115  # closed below
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror}", EXIT_USAGE, "bad_input") from exc
    with fp:
        yield fp
