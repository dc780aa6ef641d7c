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
(LangGraph task logic), ``_render`` (tables, colour, quoting), ``_store``
(store inspection), ``_commands`` (``cmd_*``), ``_ops`` (doctor, export,
import) and ``_parser`` (argparse, :func:`main`, :func:`console_main`). The
names tools and tests use are re-exported here.

Nothing here is imported by the savers, so the CLI never costs a Lambda a
cold-start millisecond.
"""

from __future__ import annotations

from langgraph.checkpoint.dynamodb.cli._base import (
    DEFAULT_LOCAL_BUCKET as DEFAULT_LOCAL_BUCKET,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    DEFAULT_LOCAL_TABLE as DEFAULT_LOCAL_TABLE,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    ENV_BUCKET as ENV_BUCKET,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    ENV_S3_PREFIX as ENV_S3_PREFIX,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    ENV_TABLE as ENV_TABLE,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    ENV_TENANT as ENV_TENANT,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    EXIT_CREDENTIALS as EXIT_CREDENTIALS,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    EXIT_ERROR as EXIT_ERROR,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    EXIT_INTERRUPTED as EXIT_INTERRUPTED,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    EXIT_NOT_FOUND as EXIT_NOT_FOUND,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    EXIT_OK as EXIT_OK,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    EXIT_PIPE as EXIT_PIPE,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    EXIT_REFUSED as EXIT_REFUSED,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    EXIT_UNSUPPORTED as EXIT_UNSUPPORTED,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    EXIT_USAGE as EXIT_USAGE,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    CLIError as CLIError,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    _positive as _positive,
)
from langgraph.checkpoint.dynamodb.cli._base import (
    parse_when as parse_when,
)
from langgraph.checkpoint.dynamodb.cli._commands import (
    _Ctx as _Ctx,
)
from langgraph.checkpoint.dynamodb.cli._commands import (
    _make_saver as _make_saver,
)
from langgraph.checkpoint.dynamodb.cli._commands import (
    cmd_copy as cmd_copy,
)
from langgraph.checkpoint.dynamodb.cli._commands import (
    cmd_delete as cmd_delete,
)
from langgraph.checkpoint.dynamodb.cli._commands import (
    cmd_diff as cmd_diff,
)
from langgraph.checkpoint.dynamodb.cli._commands import (
    cmd_history as cmd_history,
)
from langgraph.checkpoint.dynamodb.cli._commands import (
    cmd_local as cmd_local,
)
from langgraph.checkpoint.dynamodb.cli._commands import (
    cmd_prune as cmd_prune,
)
from langgraph.checkpoint.dynamodb.cli._commands import (
    cmd_show as cmd_show,
)
from langgraph.checkpoint.dynamodb.cli._commands import (
    cmd_stats as cmd_stats,
)
from langgraph.checkpoint.dynamodb.cli._commands import (
    cmd_threads as cmd_threads,
)
from langgraph.checkpoint.dynamodb.cli._parser import (
    _map_exception as _map_exception,
)
from langgraph.checkpoint.dynamodb.cli._parser import (
    build_parser as build_parser,
)
from langgraph.checkpoint.dynamodb.cli._parser import (
    console_main as console_main,
)
from langgraph.checkpoint.dynamodb.cli._parser import (
    main as main,
)
from langgraph.checkpoint.dynamodb.cli._render import (
    display_id as display_id,
)
from langgraph.checkpoint.dynamodb.cli._render import (
    display_width as display_width,
)
from langgraph.checkpoint.dynamodb.cli._render import (
    jsonable as jsonable,
)
from langgraph.checkpoint.dynamodb.cli._render import (
    render_stats as render_stats,
)
from langgraph.checkpoint.dynamodb.cli._render import (
    render_table as render_table,
)
from langgraph.checkpoint.dynamodb.cli._render import (
    shell_quote as shell_quote,
)
from langgraph.checkpoint.dynamodb.cli._render import (
    short as short,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    ThreadFilter as ThreadFilter,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    _ddb as _ddb,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    _decode_token as _decode_token,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    _encode_token as _encode_token,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    _item_kind as _item_kind,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    _partition as _partition,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    _pk as _pk,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    _query as _query,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    _require_thread as _require_thread,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    _s3 as _s3,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    _s3_kind as _s3_kind,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    _s3_root as _s3_root,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    _scan as _scan,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    checkpoint_sizes as checkpoint_sizes,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    collect_stats as collect_stats,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    describe_checkpoint as describe_checkpoint,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    describe_history as describe_history,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    diff_checkpoints as diff_checkpoints,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    list_threads as list_threads,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    missing_parent_reason as missing_parent_reason,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    subgraph_path as subgraph_path,
)
from langgraph.checkpoint.dynamodb.cli._store import (
    thread_checkpoint_count as thread_checkpoint_count,
)
from langgraph.checkpoint.dynamodb.cli._tasks import (
    _task_statuses as _task_statuses,
)
from langgraph.checkpoint.dynamodb.cli._tasks import (
    changed_channels as changed_channels,
)
from langgraph.checkpoint.dynamodb.cli._tasks import (
    checkpoint_time as checkpoint_time,
)
from langgraph.checkpoint.dynamodb.cli._tasks import (
    is_internal_channel as is_internal_channel,
)
from langgraph.checkpoint.dynamodb.cli._tasks import (
    next_tasks as next_tasks,
)
from langgraph.checkpoint.dynamodb.cli._tasks import (
    produced_by as produced_by,
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
