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
:func:`list_threads`, :func:`collect_stats`, :func:`diff_checkpoints` return
plain dicts (what ``--json`` prints); the demo uses them.

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
:func:`main`, :func:`console_main`). The names tools and tests use are
re-exported here.

Nothing here is imported by the savers, so the CLI never costs a Lambda a
cold-start millisecond.
"""

from __future__ import annotations

# Every public name, and each private one that tools, tests or the library's doctor and
# transfer modules reach as ``cli.X``: the package keeps answering to the names cli.py had.
from langgraph.checkpoint.dynamodb.cli._base import (  # noqa: F401 (re-exported)
    DEFAULT_LOCAL_BUCKET,
    DEFAULT_LOCAL_TABLE,
    ENV_BUCKET,
    ENV_S3_PREFIX,
    ENV_TABLE,
    ENV_TENANT,
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
    parse_when,
    positive,
)
from langgraph.checkpoint.dynamodb.cli._checkpoint_views import (  # noqa: F401 (re-exported)
    describe_checkpoint,
    describe_history,
    diff_checkpoints,
    missing_parent_reason,
)
from langgraph.checkpoint.dynamodb.cli._commands import (  # noqa: F401 (re-exported)
    Ctx,
    cmd_copy,
    cmd_delete,
    cmd_diff,
    cmd_history,
    cmd_prune,
    cmd_show,
    cmd_stats,
    cmd_threads,
    make_saver,
)
from langgraph.checkpoint.dynamodb.cli._local_command import cmd_local  # noqa: F401 (re-exported)
from langgraph.checkpoint.dynamodb.cli._page_tokens import decode_token, encode_token  # noqa: F401 (re-exported)
from langgraph.checkpoint.dynamodb.cli._parser import (  # noqa: F401 (re-exported)
    build_parser,
    console_main,
    main,
    map_exception,
)
from langgraph.checkpoint.dynamodb.cli._render import (  # noqa: F401 (re-exported)
    display_id,
    display_width,
    jsonable,
    render_stats,
    render_table,
    shell_quote,
    short,
)
from langgraph.checkpoint.dynamodb.cli._stats import collect_stats, item_kind  # noqa: F401 (re-exported)
from langgraph.checkpoint.dynamodb.cli._stored_sizes import checkpoint_sizes  # noqa: F401 (re-exported)
from langgraph.checkpoint.dynamodb.cli._tasks import (  # noqa: F401 (re-exported)
    changed_channels,
    checkpoint_time,
    is_internal_channel,
    next_tasks,
    produced_by,
    subgraph_path,
    task_statuses,
)
from langgraph.checkpoint.dynamodb.cli._thread_listing import (  # noqa: F401 (re-exported)
    ThreadFilter,
    list_threads,
    require_thread,
    thread_checkpoint_count,
)

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
    "collect_stats",
    "describe_checkpoint",
    "describe_history",
    "diff_checkpoints",
    "list_threads",
    "main",
    "next_tasks",
]
