"""``langgraph-dynamodb``: look at and manage threads stored by the DynamoDB savers.

Run ``langgraph-dynamodb --help`` (or ``python -m langgraph.checkpoint.dynamodb``).
Standard library only (argparse); docs/cli.md describes every command, its
JSON output and the exit codes:

====  ==========================================================================
0     success
1     any other error (an AWS error we do not map, an unreachable endpoint)
2     usage or configuration: bad arguments, no table given, table or bucket
      does not exist, no region
3     credentials: none found, or rejected / not permitted by AWS
4     not found: unknown thread or checkpoint
5     refused: confirmation declined, or needed (``--yes``) with stdin not a
      terminal, or a copy onto an existing thread
6     not supported by the installed saver (e.g. ``copy_thread`` missing)
130   interrupted (Ctrl-C)
141   stdout closed by its reader (``| head``): quietly, as tools killed by SIGPIPE
====  ==========================================================================

This module is also a small library for tools: :func:`describe_history`,
:func:`describe_checkpoint`, :func:`list_threads` (with a :class:`ThreadFilter`),
:func:`next_tasks`, :func:`collect_stats` and :func:`diff_checkpoints` return
plain dicts (what ``--json`` prints); the demo uses them. They, :func:`main`,
:class:`CLIError` and the ``EXIT_*`` codes are the whole of ``__all__`` and
the only names this package answers to; everything else is imported from
the module that defines it.

The package splits by concern, each module importing only the ones before it:
``_base`` (exit codes, environment names, errors, argument types), ``_tasks``
(LangGraph task logic), ``_render`` (tables, colour, quoting); the store
inspection: ``_page_tokens`` (``threads`` page tokens), ``_thread_listing``
(which threads exist, pages of them), ``_stored_sizes`` (bytes per
checkpoint), ``_checkpoint_views`` (history rows, diffs), ``_stats``
(``stats``); ``_progress_line`` (a status line on stderr), ``_commands``
(``cmd_*``), ``_local_command`` (``local``), ``_doctor_export_import``
(doctor, export, import), ``_migrate``, the ``ui`` inspector (``_ui`` and
its ``_ui_*`` modules: server, reads and HTML) and ``_parser`` (argparse,
:func:`main`, :func:`console_main`, the ``langgraph-dynamodb`` entry point).

Nothing here is imported by the savers, so the CLI never costs a Lambda a
cold-start millisecond.
"""

from __future__ import annotations

from langgraph.checkpoint.dynamodb.cli._base import (
    EXIT_CREDENTIALS,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_PIPE,
    EXIT_REFUSED,
    EXIT_UNSUPPORTED,
    EXIT_USAGE,
    CLIError,
)
from langgraph.checkpoint.dynamodb.cli._checkpoint_views import (
    describe_checkpoint,
    describe_history,
    diff_checkpoints,
)
from langgraph.checkpoint.dynamodb.cli._parser import console_main, main
from langgraph.checkpoint.dynamodb.cli._stats import collect_stats
from langgraph.checkpoint.dynamodb.cli._tasks import next_tasks
from langgraph.checkpoint.dynamodb.cli._thread_listing import ThreadFilter, list_threads

__all__ = [
    "EXIT_CREDENTIALS",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_PIPE",
    "EXIT_REFUSED",
    "EXIT_UNSUPPORTED",
    "EXIT_USAGE",
    "CLIError",
    "ThreadFilter",
    "collect_stats",
    "console_main",
    "describe_checkpoint",
    "describe_history",
    "diff_checkpoints",
    "list_threads",
    "main",
    "next_tasks",
]
