"""The commands (cmd_*) and their helpers: the context they run in (with its progress line), building the saver, confirmation."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from langgraph.checkpoint.dynamodb import config
from langgraph.checkpoint.dynamodb.cli._base import (
    ENV_BUCKET,
    ENV_S3_PREFIX,
    ENV_TABLE,
    ENV_TENANT,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_UNSUPPORTED,
    EXIT_USAGE,
    CLIError,
    StdoutClosed,
)
from langgraph.checkpoint.dynamodb.cli._checkpoint_refs import resolve_checkpoint
from langgraph.checkpoint.dynamodb.cli._checkpoint_views import (
    as_list,
    describe_checkpoint,
    describe_history,
    diff_checkpoints,
    missing_parent_reason,
)
from langgraph.checkpoint.dynamodb.cli._progress_line import ProgressLine
from langgraph.checkpoint.dynamodb.cli._render import (
    LABEL_COLORS,
    display_id,
    escape_controls,
    fmt_next,
    fmt_writes,
    human_bytes,
    jsonable,
    paint,
    paint_match,
    render_stats,
    render_table,
    shell_quote,
    short,
    short_id,
    table_cell,
    wants_color,
)
from langgraph.checkpoint.dynamodb.cli._stats import collect_stats
from langgraph.checkpoint.dynamodb.cli._stored_sizes import checkpoint_sizes
from langgraph.checkpoint.dynamodb.cli._tasks import (
    ERROR_CHANNEL,
    INTERRUPT_CHANNEL,
    is_internal_channel,
    task_statuses,
)
from langgraph.checkpoint.dynamodb.cli._thread_listing import (
    ThreadFilter,
    list_threads,
    require_thread,
    thread_checkpoint_count,
)


@dataclasses.dataclass
class Ctx:
    args: argparse.Namespace
    stdin: TextIO
    stdout: TextIO
    stderr: TextIO
    saver: Any = None

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    @property
    def color(self) -> bool:
        """Colour on stdout (never with --json)."""
        return not self.json and wants_color(getattr(self.args, "color", None), self.stdout)

    def _write(self, text: str) -> None:
        try:
            self.stdout.write(text)
        except BrokenPipeError as exc:  # only stdout's: an AWS socket's is not ours to hide
            raise StdoutClosed from exc

    def out(self, text: str = "") -> None:
        self._write(text + "\n")

    def table(self, text: str) -> None:
        """A :func:`render_table` block: header in bold and status labels coloured, on a terminal."""
        if self.color and text:
            head, _, rest = text.partition("\n")
            indent = head[: len(head) - len(head.lstrip())]
            text = indent + paint(head.lstrip(), "bold") + ("\n" + rest if rest else "")
            text = self.labels(text)
        self.out(text)

    def labels(self, text: str) -> str:
        if not self.color:
            return text
        for pattern, style in LABEL_COLORS:
            text = pattern.sub(functools.partial(paint_match, style=style), text)
        return text

    def emit(self, obj: Any) -> None:
        self._write(json.dumps(jsonable(obj), indent=2, ensure_ascii=False) + "\n")

    def safe(self, text: str) -> str:
        """A stored text to print whole: on a terminal, its control characters (an escape
        sequence in an LLM's output, say) are shown escaped instead of obeyed; in a pipe,
        the exact text."""
        isatty = getattr(self.stdout, "isatty", None)
        return escape_controls(text, keep="\n\t") if isatty and isatty() else text

    def note(self, text: str) -> None:
        self.stderr.write(text + "\n")

    def progress(self, what: str) -> ProgressLine:
        """A progress line for a long command: stderr only, a terminal only, never with --json."""
        mode = getattr(self.args, "progress", "auto")
        isatty = getattr(self.stderr, "isatty", None)
        on = not self.json and (mode == "always" or (mode == "auto" and bool(isatty and isatty())))
        return ProgressLine(self.stderr if on else None, what)


def connection_settings(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "table": args.table or os.environ.get(ENV_TABLE) or None,
        "bucket": args.bucket or os.environ.get(ENV_BUCKET) or None,
        # botocore alone would ignore AWS_REGION (it reads AWS_DEFAULT_REGION).
        "region": config.region_from_env(args.region),
        "endpoint_url": args.endpoint_url,
        "s3_key_prefix": args.s3_key_prefix or os.environ.get(ENV_S3_PREFIX) or "checkpoints/",
        "profile": args.profile,
        "tenant_prefix": args.tenant_prefix or os.environ.get(ENV_TENANT) or None,
    }


def make_saver(args: argparse.Namespace) -> Any:
    s = connection_settings(args)
    if not s["table"]:
        raise CLIError(f"no table: pass --table or set {ENV_TABLE}", EXIT_USAGE, "no_table")
    import boto3
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from langgraph.checkpoint.dynamodb.saver import DynamoDBSaver

    # A viewer never has the application's modules imported: LangGraph's strict
    # serializer shows the application's types as their stored fields (the saver's
    # default would refuse them) and, like it, imports and calls nothing a value names.
    serde: Any = JsonPlusSerializer(allowed_msgpack_modules=None)
    if getattr(args, "encrypted", False):
        from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

        from langgraph.checkpoint.dynamodb.encryption import ENV_KEYS, AesKeyRing

        try:
            # The same strict viewer inside the cipher: from_pycryptodome_aes()
            # alone would wrap LangGraph's permissive serializer, which calls
            # whatever a decrypted payload names. A key ring (rotation) when set.
            if os.environ.get(ENV_KEYS, "").strip():
                serde = AesKeyRing.from_env().serializer(serde)
            else:
                serde = EncryptedSerializer.from_pycryptodome_aes(serde=serde)
        except Exception as exc:
            raise CLIError(f"--encrypted: {exc}", EXIT_USAGE, "bad_encryption_key") from exc
    session = boto3.session.Session(profile_name=s["profile"], region_name=s["region"])
    extra: dict[str, Any] = {}
    if s["tenant_prefix"]:
        extra["tenant_prefix"] = s["tenant_prefix"]
    try:
        return DynamoDBSaver(
            table_name=s["table"],
            bucket_name=s["bucket"],
            region_name=s["region"],
            endpoint_url=s["endpoint_url"],
            boto3_session=session,
            s3_key_prefix=s["s3_key_prefix"],
            serde=serde,
            max_attempts=3,  # a CLI should fail fast, not retry for a minute
            **extra,
        )
    except (TypeError, ValueError) as exc:  # e.g. an invalid tenant prefix
        raise CLIError(f"invalid configuration: {exc}", EXIT_USAGE, "bad_configuration") from exc


def _resolve_checkpoint(ctx: Ctx, thread_id: str, ref: str | None, ns: str) -> Any:
    """A checkpoint tuple from a full id, a unique id prefix or suffix (``short_id``), or ``latest``/nothing."""
    return resolve_checkpoint(ctx.saver, thread_id, ns, ref)


def _confirm(ctx: Ctx, question: str) -> None:
    if getattr(ctx.args, "yes", False):
        return
    if not ctx.stdin.isatty():
        raise CLIError(
            f"refusing without --yes: {question} (stdin is not a terminal, nobody can confirm)",
            EXIT_REFUSED,
            "confirmation_required",
        )
    ctx.stderr.write(f"{question} [y/N] ")
    ctx.stderr.flush()
    answer = ctx.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise CLIError("aborted: not confirmed", EXIT_REFUSED, "not_confirmed")


def _saver_call(name: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except NotImplementedError as exc:
        raise CLIError(
            f"saver.{name} is not implemented by the installed langgraph-checkpoint-dynamodb-s3",
            EXIT_UNSUPPORTED,
            "not_supported",
        ) from exc


def cmd_threads(ctx: Ctx) -> int:
    args = ctx.args
    given = args.prefix is not None or args.active_since is not None or args.idle_for is not None
    flt = ThreadFilter(
        prefix=args.prefix or "", active_since_ms=args.active_since, idle_since_ms=args.idle_for
    )
    if (
        flt.active_since_ms is not None
        and flt.idle_since_ms is not None
        and flt.idle_since_ms < flt.active_since_ms
    ):
        raise CLIError("--active-since and --idle-for leave no time between them", EXIT_USAGE, "usage")
    page = list_threads(
        ctx.saver,
        limit=args.limit,
        page_token=args.page_token,
        source=args.source,
        filter=flt if given else None,
    )
    if ctx.json:
        ctx.emit(page)
        return EXIT_OK
    if page["source"] == "index":
        cols = [("thread_id", "THREAD"), ("updated_at", "LAST ACTIVITY"), ("expires_at", "EXPIRES")]
    else:
        cols = [
            ("thread_id", "THREAD"),
            ("updated_at", "LAST ACTIVITY"),
            ("checkpoints", "CHECKPOINTS"),
            ("namespaces", "NAMESPACES"),
        ]
    if page["threads"]:
        ctx.table(render_table(page["threads"], cols, max_width=80, no_truncate=("thread_id",)))
    else:
        ctx.out("no threads" + (" match" if given or args.page_token else ""))
    # After the threads, not before: a new user's first listing opens with their threads,
    # and how they were found (the index, or a scan for want of heads) is a footnote.
    ctx.out(f"source: {page['source']} ({page['note']})")
    if page["next_page_token"]:
        ctx.out(f"more: --page-token {page['next_page_token']}")
    return EXIT_OK


def _note_unfinished_import(ctx: Ctx, thread_id: str) -> None:
    """On stderr: the thread carries an import marker (an import is running or was killed)."""
    from langgraph.checkpoint.dynamodb.tools.transfer import import_marker

    marker = import_marker(ctx.saver, thread_id)
    if marker is not None:
        ctx.note(
            f"warning: thread {shell_quote(thread_id)} carries the marker of an import (from "
            f"{marker['source_thread_id']!r}) that is running or did not finish: it is partial; "
            f"if no import is running, delete it and import again under a new id"
        )


def cmd_history(ctx: Ctx) -> int:
    args = ctx.args
    ns = None if args.all_namespaces else args.ns
    rows = describe_history(
        ctx.saver, args.thread, checkpoint_ns=ns, limit=args.limit, with_sizes=not args.no_sizes
    )
    if not rows:
        require_thread(ctx.saver, args.thread)
    _note_unfinished_import(ctx, args.thread)
    if ctx.json:
        ctx.emit({"thread_id": args.thread, "checkpoint_ns": ns, "checkpoints": rows})
        return EXIT_OK
    children = Counter((r.get("checkpoint_ns", ""), r["parent_id"]) for r in rows if r["parent_id"])
    table_rows = [
        {
            **r,
            # A parent with two children is where the thread forked (time travel, update_state).
            "parent_s": short_id(r["parent_id"])
            + (" (fork)" if children[(r.get("checkpoint_ns", ""), r["parent_id"])] > 1 else ""),
            "writes_s": fmt_writes(r["writes"], r["parent_missing"], r["parent_missing_reason"]),
            "next_s": fmt_next(r["next"]),
            "bytes_s": human_bytes(r.get("bytes")),
        }
        for r in rows
    ]
    cols = [("checkpoint_id", "CHECKPOINT"), ("parent_s", "PARENT"), ("step", "STEP"), ("source", "SOURCE")]
    if ns is None:
        cols.append(("checkpoint_ns", "NS"))
    cols += [("writes_s", "WRITES"), ("next_s", "NEXT")]
    if not args.no_sizes:
        cols.append(("bytes_s", "SIZE"))
    ctx.out(f"thread {shell_quote(args.thread)}: {len(rows)} checkpoint(s), newest first")
    ctx.table(
        render_table(table_rows, cols, max_width=args.width, no_truncate=("checkpoint_id", "checkpoint_ns"))
    )
    return EXIT_OK


def _show_channel(ctx: Ctx, tup: Any) -> int:
    """``show --channel NAME``: one channel's value, whole (text as is, anything else as JSON)."""
    name = ctx.args.channel
    values = tup.checkpoint.get("channel_values", {})
    conf = tup.config["configurable"]
    if name not in values:
        state = sorted(c for c in values if not is_internal_channel(c))
        control = sorted(c for c in values if is_internal_channel(c))
        why = (
            "has no value at this checkpoint"
            if name in tup.checkpoint.get("channel_versions", {})
            else "is not a channel of this checkpoint"
        )
        raise CLIError(
            f"channel {shell_quote(name)} {why} (checkpoint {conf['checkpoint_id']}); channels with a value: "
            + (", ".join(display_id(c) for c in state) or "none")
            + (f"; control channels: {', '.join(display_id(c) for c in control)}" if control else ""),
            EXIT_NOT_FOUND,
            "channel_not_found",
        )
    value = values[name]
    if ctx.json:
        ctx.emit(
            {
                "thread_id": ctx.args.thread,
                "checkpoint_id": conf["checkpoint_id"],
                "checkpoint_ns": conf.get("checkpoint_ns", ""),
                "channel": name,
                "type": type_label(value),
                "value": value,
            }
        )
    else:
        ctx.out(
            ctx.safe(value)
            if isinstance(value, str)
            else json.dumps(jsonable(value), indent=2, ensure_ascii=False)
        )
    return EXIT_OK


def _show_header(ctx: Ctx, info: Mapping[str, Any], tup: Any) -> None:
    """``show``'s facts: ids, step, parent, what wrote it, next tasks, size, interrupts."""
    ctx.out(f"thread      {display_id(ctx.args.thread)}")
    ctx.out(
        f"checkpoint  {display_id(info['checkpoint_id'])}  "
        f"(step {info['step']}, {info['source']}, {info['created_at']})"
    )
    ctx.out(f"namespace   {display_id(info['checkpoint_ns']) if info['checkpoint_ns'] else '(root)'}")
    ctx.out(f"parent      {display_id(info['parent_id']) if info['parent_id'] else '-'}")
    ctx.out(
        ctx.labels(
            f"written by  {fmt_writes(info['writes'], info['parent_missing'], info['parent_missing_reason'])}"
        )
    )
    ctx.out(ctx.labels(f"next        {fmt_next(info['next'])}"))
    if "bytes" in info:
        ctx.out(f"size        {human_bytes(info['bytes'])}")
    statuses = task_statuses(tup.pending_writes or [])
    for tid, ch, val in tup.pending_writes or []:
        if ch != INTERRUPT_CHANNEL:
            continue
        # An answered interrupt stays among the pending writes: say it was answered.
        answered = "(answered) " if statuses.get(tid) == "resumed" else ""
        for v in as_list(val):
            ctx.out(ctx.labels(f"interrupt   {answered}{short(jsonable(getattr(v, 'value', v)), 200)}"))


def cmd_show(ctx: Ctx) -> int:
    args = ctx.args
    tup = _resolve_checkpoint(ctx, args.thread, args.checkpoint, args.ns)
    if args.channel is not None:
        return _show_channel(ctx, tup)
    parent = ctx.saver.get_tuple(tup.parent_config) if tup.parent_config else None
    live = args.checkpoint in (None, "", "latest")
    conf = tup.config["configurable"]
    size = (
        None
        if args.no_sizes
        else checkpoint_sizes(ctx.saver, args.thread, conf.get("checkpoint_ns", "")).get(
            (conf.get("checkpoint_ns", ""), conf["checkpoint_id"])
        )
    )
    reason = missing_parent_reason(ctx.saver, tup) if tup.parent_config and parent is None else None
    info = describe_checkpoint(tup, parent, live=live, size=size, parent_missing_reason=reason)
    values = tup.checkpoint.get("channel_values", {})
    shown = {k: v for k, v in values.items() if args.all_channels or not is_internal_channel(k)}
    pending = [
        {"task_id": tid, "channel": ch, "value": jsonable(v)}
        for tid, ch, v in tup.pending_writes or []
        if args.all_channels or not is_internal_channel(ch) or ch in (INTERRUPT_CHANNEL, ERROR_CHANNEL)
    ]
    if ctx.json:
        ctx.emit(
            {
                **info,
                "thread_id": args.thread,
                "metadata": tup.metadata,
                "values": shown,
                "pending_writes": pending,
            }
        )
        return EXIT_OK
    _show_header(ctx, info, tup)
    ctx.out("")
    ctx.out(f"values ({len(shown)} channel(s)):")
    width = 10**9 if args.full else args.width
    rows = []
    for name in sorted(shown):
        value = shown[name]
        if args.full:
            text = (
                value if isinstance(value, str) else json.dumps(jsonable(value), indent=2, ensure_ascii=False)
            )
        else:
            text = short(value, width)
        rows.append({"name": name, "type": type_label(value), "value": text})
    if args.full:
        for r in rows:
            ctx.out(f"--- {table_cell(r['name'], 10**9)} ({r['type']})")
            ctx.out(ctx.safe(r["value"]))
    else:
        ctx.table(
            render_table(
                rows,
                [("name", "CHANNEL"), ("type", "TYPE"), ("value", "VALUE")],
                max_width=width,
                indent="  ",
            )
        )
    if pending:
        ctx.out("")
        ctx.out(f"pending writes ({len(pending)}):")
        ctx.table(
            render_table(
                [{"t": p["task_id"][:8], "c": p["channel"], "v": short(p["value"], width)} for p in pending],
                [("t", "TASK"), ("c", "CHANNEL"), ("v", "VALUE")],
                max_width=width,
                indent="  ",
            )
        )
    return EXIT_OK


def type_label(value: Any) -> str:
    name = type(value).__name__
    if isinstance(value, (str, bytes, list, tuple, dict, set)):
        return f"{name}[{len(value)}]"
    return name


def cmd_diff(ctx: Ctx) -> int:
    args = ctx.args
    a = _resolve_checkpoint(ctx, args.thread, args.a, args.ns)
    b = _resolve_checkpoint(ctx, args.thread, args.b, args.ns)
    d = diff_checkpoints(a, b)
    deltas = _message_deltas(d["changes"])
    if ctx.json:
        for c in d["changes"]:
            if c["channel"] in deltas:
                c["messages"] = deltas[c["channel"]]
        ctx.emit({"thread_id": args.thread, **d})
        return EXIT_OK
    ctx.out(f"A = {display_id(d['a']['checkpoint_id'])} (step {d['a']['step']})")
    ctx.out(f"B = {display_id(d['b']['checkpoint_id'])} (step {d['b']['step']})")
    if not d["changes"]:
        ctx.out("no channel differences")
        return EXIT_OK

    def side(c: Mapping[str, Any], which: str) -> str:
        delta = deltas.get(c["channel"])
        if delta is not None:  # a message list: its length, and on B what changed
            n = delta[f"{which}_len"]
            return f"{n} message{'s' if n != 1 else ''}" + (f": {delta['summary']}" if which == "b" else "")
        gone = c["change"] == ("added" if which == "a" else "removed")
        return "-" if gone else short(c[which], args.width)

    rows = [
        {"channel": c["channel"], "change": c["change"], "a": side(c, "a"), "b": side(c, "b")}
        for c in d["changes"]
    ]
    ctx.table(
        render_table(
            rows, [("channel", "CHANNEL"), ("change", "CHANGE"), ("a", "A"), ("b", "B")], max_width=args.width
        )
    )
    width = max(60, args.width * 2)
    for channel, delta in deltas.items():
        ctx.out("")
        ctx.out(f"{table_cell(channel, width)}: {delta['summary']}")
        for sign, key in (("-", "removed"), ("+", "added")):
            for m in delta[key][:DIFF_MESSAGES_SHOWN]:
                ctx.out(f"  {sign} {m['index']:>4} {m['role']:<6} {table_cell(m['preview'], width)}")
            if len(delta[key]) > DIFF_MESSAGES_SHOWN:
                ctx.out(f"  {sign} ... {len(delta[key]) - DIFF_MESSAGES_SHOWN} more (--json has them all)")
    return EXIT_OK


#: Messages ``diff`` lists per side of a changed message list (``--json``: all of them).
DIFF_MESSAGES_SHOWN = 50


def _message_deltas(changes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """For each changed channel holding a message list: what was kept, removed and appended.

    ``{channel: {"summary", "kept", "a_len", "b_len", "removed", "added"}}``; each
    message as ``{"index" (1-based), "role", "name", "id", "preview", "tool_calls", "tool_call_id"}``.
    """
    from langgraph.checkpoint.dynamodb.cli import _ui_messages as msgs  # the inspector's message model

    def brief(m: Mapping[str, Any], index: int) -> dict[str, Any]:
        keep = ("role", "name", "id", "tool_calls", "tool_call_id")
        return {"index": index, **{k: m[k] for k in keep}, "preview": msgs.preview(m)}

    out = {}
    for c in changes:
        delta = msgs.message_change(c["a"], c["b"]) if c["change"] != "rewritten" else None
        if delta is None:
            continue
        kept = delta["kept"]
        out[c["channel"]] = {
            "summary": msgs.delta_summary(delta),
            "kept": kept,
            "a_len": delta["a_len"],
            "b_len": delta["b_len"],
            "removed": [brief(m, kept + i + 1) for i, m in enumerate(delta["removed"])],
            "added": [brief(m, kept + i + 1) for i, m in enumerate(delta["added"])],
        }
    return out


def cmd_copy(ctx: Ctx) -> int:
    args = ctx.args
    saver = ctx.saver
    if args.source == args.target:
        # Before any request: the "target exists, delete it first" advice would delete the source.
        raise CLIError(
            f"cannot copy thread {shell_quote(args.source)} onto itself: give a new thread id as TARGET",
            EXIT_USAGE,
            "same_thread",
        )
    src_count = require_thread(saver, args.source)
    dst_count = thread_checkpoint_count(saver, args.target)
    if dst_count:
        # copy_thread never merges two histories; make the user delete first.
        raise CLIError(
            f"target thread {shell_quote(args.target)} already has {dst_count} checkpoint(s); delete it first "
            "(copy never merges two histories)",
            EXIT_REFUSED,
            "target_exists",
        )
    with ctx.progress("copy") as progress:
        # One library call (no progress hook): the line shows it is alive and for how long.
        progress.tick(f"{shell_quote(args.source)} -> {shell_quote(args.target)}, {src_count} checkpoint(s)")
        _saver_call("copy_thread", lambda: saver.copy_thread(args.source, args.target))
    after = thread_checkpoint_count(saver, args.target)
    result = {
        "source": args.source,
        "target": args.target,
        "source_checkpoints": src_count,
        "target_checkpoints": after,
    }
    if ctx.json:
        ctx.emit(result)
    else:
        ctx.out(
            f"copied {shell_quote(args.source)} -> {shell_quote(args.target)}: {after} checkpoint(s) "
            f"in the target ({src_count} in the source)"
        )
    return EXIT_OK


def cmd_prune(ctx: Ctx) -> int:
    args = ctx.args
    saver = ctx.saver
    before = {t: require_thread(saver, t) for t in args.threads}
    if args.keep_last is not None:
        if args.keep_last < 1:
            raise CLIError("--keep-last must be >= 1", EXIT_USAGE, "bad_keep_last")
        what = f"keep the last {args.keep_last} checkpoint(s) per namespace of"
    elif args.strategy == "delete":
        what = "DELETE every checkpoint of"
    else:
        what = "keep only the latest checkpoint per namespace of"
    _confirm(ctx, f"{what} {len(args.threads)} thread(s): {', '.join(shell_quote(t) for t in args.threads)}?")
    result: Any = None
    with ctx.progress("prune") as progress:
        # One thread per call, so the line can count threads; the results add up.
        for i, thread in enumerate(args.threads):
            progress.update(f"{i}/{len(args.threads)} thread(s), now {shell_quote(thread)}", force=i == 0)
            how: dict[str, Any] = (
                {"keep_last": args.keep_last} if args.keep_last is not None else {"strategy": args.strategy}
            )
            one = _saver_call("prune", functools.partial(saver.prune, [thread], **how))
            result = one if result is None else _add_results(result, one)
        progress.update(f"{len(args.threads)}/{len(args.threads)} thread(s)", force=True)
    rows = [
        {
            "thread_id": t,
            "checkpoints_before": before[t],
            "checkpoints_after": thread_checkpoint_count(saver, t),
        }
        for t in args.threads
    ]
    summary = jsonable(result) if result is not None else None
    if ctx.json:
        ctx.emit(
            {
                "strategy": args.strategy if args.keep_last is None else "keep_latest",
                "keep_last": args.keep_last,
                "threads": rows,
                "result": summary,
            }
        )
    else:
        ctx.table(
            render_table(
                rows,
                [("thread_id", "THREAD"), ("checkpoints_before", "BEFORE"), ("checkpoints_after", "AFTER")],
                no_truncate=("thread_id",),
            )
        )
        if isinstance(summary, Mapping):
            ctx.out(
                ", ".join(f"{k.replace('_', ' ')}: {v:,}" for k, v in summary.items() if isinstance(v, int))
            )
    return EXIT_OK


def _add_results(total: Any, one: Any) -> Any:
    """Sum two prune results field by field (``PruneResult`` is a dataclass of counts)."""
    if one is None:
        return total
    if dataclasses.is_dataclass(total) and not isinstance(total, type):
        return dataclasses.replace(
            total,
            **{
                f.name: getattr(total, f.name) + getattr(one, f.name, 0)
                for f in dataclasses.fields(total)
                if isinstance(getattr(total, f.name), int) and not isinstance(getattr(total, f.name), bool)
            },
        )
    return total


def cmd_delete(ctx: Ctx) -> int:
    args = ctx.args
    count = require_thread(ctx.saver, args.thread)
    _confirm(
        ctx,
        f"delete thread {shell_quote(args.thread)} ({count} checkpoint(s), all namespaces, its S3 objects)?",
    )
    from langgraph.checkpoint.dynamodb.lock._errors import LeaseUnavailableError

    try:
        ctx.saver.delete_thread(args.thread, force=getattr(args, "force", False))
    except LeaseUnavailableError as exc:
        raise CLIError(
            f"{exc}: its lease is held, so a worker may still be writing to it; nothing was deleted. "
            "Wait for it to finish, or pass --force (the holder is fenced out)",
            EXIT_REFUSED,
            "lease_held",
        ) from exc
    if ctx.json:
        ctx.emit({"thread_id": args.thread, "deleted_checkpoints": count})
    else:
        ctx.out(f"deleted thread {shell_quote(args.thread)} ({count} checkpoint(s))")
    return EXIT_OK


def cmd_stats(ctx: Ctx) -> int:
    if ctx.args.thread:
        require_thread(ctx.saver, ctx.args.thread)
    with ctx.progress("stats") as progress:
        stats = collect_stats(ctx.saver, ctx.args.thread, progress=progress.update)
    if ctx.json:
        ctx.emit(stats)
        return EXIT_OK
    ctx.out(ctx.labels(render_stats(stats)))
    return EXIT_OK


#: Set by a command whose process must end the moment it returns (``local``).
EXIT_AT_ONCE = threading.Event()
