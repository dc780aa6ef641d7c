"""``langgraph-dynamodb ui``: a local, read-only thread inspector in the browser.

The server is the standard library's ``ThreadingHTTPServer`` bound to
127.0.0.1, and every request needs the run's secret (the ``?token=`` of the
URL it prints, then an HttpOnly cookie, or an ``Authorization: Bearer``
header for scripts), as notebook servers do; pages are rendered on the server with every stored
string escaped (``_ui_pages``; the conversation view in ``_ui_conversation``,
diffs in ``_ui_diff``, both over the message model of ``_ui_messages``), plus
one small stylesheet and script from ``ui_static/``. This module holds the
server, its routing and guards, and the page handlers with the timeline and
prune-mark reads; the other keyed reads are in ``_ui_reads``. Nothing here
writes to the store.

Reads per page view stay bounded whatever the thread's length: the
timeline is one page of ``saver.list(..., before=..., limit=...)``, the
namespaces are found one Query each (a skip scan over the sort keys), a
``← newer`` link one keys-only Query up the sort keys, the conversation one
page of a checkpoint's ancestors, and the prune marks (only when asked for)
the newest checkpoints of one namespace and only as many older ones as their
delta chains need.
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import json
import os
import secrets
import signal
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Final

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._operations.keep import keep_set
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb.cli import _ui_pages as pages
from langgraph.checkpoint.dynamodb.cli._base import (
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    CLIError,
    when_text,
)
from langgraph.checkpoint.dynamodb.cli._bounded import bounded_page, bounded_text
from langgraph.checkpoint.dynamodb.cli._checkpoint_views import (
    describe_checkpoint,
    diff_checkpoints,
    missing_parent_reason,
)
from langgraph.checkpoint.dynamodb.cli._commands import EXIT_AT_ONCE, Ctx
from langgraph.checkpoint.dynamodb.cli._render import jsonable
from langgraph.checkpoint.dynamodb.cli._tasks import ERROR_CHANNEL, NULL_TASK_ID, RESUME_CHANNEL
from langgraph.checkpoint.dynamodb.cli._thread_listing import ThreadFilter, list_threads
from langgraph.checkpoint.dynamodb.cli._ui_conversation import conversation_page, conversation_section
from langgraph.checkpoint.dynamodb.cli._ui_diff import diff_page, diff_section
from langgraph.checkpoint.dynamodb.cli._ui_messages import message_channels, thread_conversation
from langgraph.checkpoint.dynamodb.cli._ui_reads import (
    checkpoint_tuple,
    conversation_read,
    newer_before,
    thread_namespaces,
    thread_summary,
    value_location,
)
from langgraph.checkpoint.dynamodb.schema import ATTR
from langgraph.checkpoint.dynamodb.tools._inspection import ddb_client

__all__ = ["ENV_UI_TOKEN", "InspectorServer", "cmd_ui", "register", "serve", "wait_until_interrupted"]

#: The environment variable that chooses the inspector's secret (scripts, tests): never needed, never off.
ENV_UI_TOKEN: Final = "LANGGRAPH_DYNAMODB_UI_TOKEN"
#: A chosen secret must be at least this long (a generated one is 43 characters, 256 bits).
MIN_TOKEN_LENGTH: Final = 16

#: Checkpoints per timeline page, threads per threads page.
TIMELINE_PAGE: Final = 50
THREADS_PAGE: Final = 25
#: Characters of one value ``GET /value`` answers (the whole value, unless its text is larger).
VALUE_CHARS: Final = 1_000_000
#: Threads-page rows summarised at once (each is two requests).
SUMMARY_WORKERS: Final = 8
_STATIC: Final = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
_HEADERS: Final = {
    "Content-Security-Policy": "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Resource-Policy": "same-origin",
}


# ================================================================== reads


class _Recorded(dict):  # type: ignore[type-arg]
    """Checkpoint items read so far; remembers the keys looked up and not found.

    ``keep_set`` walks parent links with ``.get``: a miss means its walk
    wants an older checkpoint than those read, so the caller reads further.
    """

    def __init__(self) -> None:
        super().__init__()
        self.missed: set[Any] = set()

    def get(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self.missed.add(key)
        return super().get(key, default)


def prune_marks(saver: Any, thread_id: str, checkpoint_ns: str, keep_last: int) -> dict[str, Any]:
    """Which checkpoints of a namespace ``prune(keep_last=N)`` would keep.

    The library's own ``keep_set`` decides (the survivors and the ancestors
    their delta channels are rebuilt from), over the newest checkpoints read
    by a descending Query; older ones are read only while a delta chain
    reaches past what was read. Checkpoints on lineages a delete left
    behind are not told apart here (the saver drops those first).

    Returns:
        ``{"keep": set of ids, "survivors": set of ids}``.
    """

    kwargs: dict[str, Any] = {
        "TableName": saver.table_name,
        "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :pre)",
        "ExpressionAttributeNames": {
            "#pk": ATTR.PK,
            "#sk": ATTR.SK,
            "#p": ATTR.PARENT_ID,
            "#dn": ATTR.DELTA_NEEDS,
            "#v": ATTR.VALUES,
            "#k": ATTR.KEY,
        },
        "ExpressionAttributeValues": {
            ":pk": {"S": saver.partition_key(thread_id)},
            ":pre": {"S": schema.checkpoint_prefix(checkpoint_ns)},
        },
        "ProjectionExpression": "#pk, #sk, #p, #dn, #v, #k",
        "ScanIndexForward": False,
        "ConsistentRead": True,
        "Limit": min(1000, keep_last * 4 + 8),
    }
    seen = _Recorded()
    order: list[str] = []
    while True:
        resp = ddb_client(saver).query(**kwargs)
        for it in resp.get("Items", []):
            ns, kind, cid, _ = shapes.parse_sk(it)
            if kind == schema.CHECKPOINT_ITEM:
                seen[(ns, cid)] = it
                order.append(cid)
        last = resp.get("LastEvaluatedKey")
        if len(order) >= keep_last or not last:
            survivors = [(checkpoint_ns, c) for c in order[:keep_last]]
            seen.missed.clear()
            keep, _ = keep_set(seen, survivors, thread_id=thread_id)
            if not seen.missed or not last:
                return {"keep": {c for _, c in keep}, "survivors": {c for _, c in survivors}}
        kwargs["ExclusiveStartKey"] = last
        kwargs["Limit"] = 1000


def _pending(tup: Any, channel: str) -> list[tuple[str, Any]]:
    return [(tid, v) for tid, ch, v in tup.pending_writes or [] if ch == channel]


def _resumes(tup: Any, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answers to a checkpoint's interrupts: each task's ``__resume__`` write, named after its task.

    ``Command(resume=...)`` also leaves one write on the null task (the
    answer before LangGraph handed it to a task): shown only when no task
    holds one.
    """
    names = {t["id"]: t["name"] for t in tasks if t["id"]}
    per_task = [
        {
            "task": names.get(tid, tid[:8]),
            "answer": jsonable(v[0] if isinstance(v, list) and len(v) == 1 else v),
        }
        for tid, v in _pending(tup, RESUME_CHANNEL)
        if tid != NULL_TASK_ID
    ]
    return per_task or [{"task": None, "answer": jsonable(v)} for _, v in _pending(tup, RESUME_CHANNEL)]


def timeline(
    saver: Any, thread_id: str, checkpoint_ns: str, *, before: str | None, limit: int = TIMELINE_PAGE
) -> dict[str, Any]:
    """One page of a namespace's checkpoints, newest first, as history rows with their tuples."""
    conf = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}
    tuples = list(
        saver.list(
            {"configurable": conf},
            before={"configurable": {"checkpoint_id": before}} if before else None,
            limit=limit + 1,
        )
    )
    more = len(tuples) > limit
    tuples = tuples[:limit]
    by_id = {t.config["configurable"]["checkpoint_id"]: t for t in tuples}
    rows = []
    for t in tuples:
        parent = None
        if t.parent_config:
            pid = t.parent_config["configurable"]["checkpoint_id"]
            parent = by_id.get(pid) or saver.get_tuple(t.parent_config)
        row = describe_checkpoint(
            t,
            parent,
            parent_missing_reason=(
                missing_parent_reason(saver, t) if t.parent_config and parent is None else None
            ),
        )
        row["errors"] = [{"task_id": tid, "error": jsonable(v)} for tid, v in _pending(t, ERROR_CHANNEL)]
        row["resumes"] = _resumes(t, row["next"])
        row["parents"] = (t.metadata or {}).get("parents") or {}
        rows.append(row)
    return {
        "rows": rows,
        "next_before": rows[-1]["checkpoint_id"] if more and rows else None,
        "messages": message_channels(tuples[0].checkpoint.get("channel_values", {}), quick=True)
        if tuples
        else [],
    }


# ================================================================= routes


def _one(query: Mapping[str, list[str]], name: str, default: str | None = None) -> str | None:
    vals = query.get(name)
    return vals[0] if vals else default


def _limit(query: Mapping[str, list[str]], default: int) -> int:
    """A page size from the query (``limit``), between 1 and 200."""
    try:
        return min(200, max(1, int(_one(query, "limit") or default)))
    except ValueError:
        raise CLIError("limit must be an integer", EXIT_USAGE, "usage") from None


def _required(query: Mapping[str, list[str]], name: str) -> str:
    value = _one(query, name)
    if not value:
        raise CLIError(f"missing query parameter {name!r}", EXIT_USAGE, "usage")
    return value


@bounded_page
def page_threads(saver: Any, query: Mapping[str, list[str]]) -> str:
    prefix = _one(query, "prefix", "") or ""
    active = (_one(query, "active", "") or "").strip()
    token = _one(query, "page") or None
    flt = None
    if prefix or active:
        try:
            since = when_text(active) if active else None
        except argparse.ArgumentTypeError as exc:
            raise CLIError(str(exc), EXIT_USAGE, "usage") from None
        flt = ThreadFilter(prefix=prefix, active_since_ms=since)
    limit = _limit(query, THREADS_PAGE)
    listing = list_threads(saver, limit=limit, page_token=token, filter=flt)
    rows = listing["threads"]
    if rows:
        # Rows are independent: summarise them side by side (boto3 clients
        # and the saver's reads are thread-safe), so a page costs the time
        # of a few round trips, not two per row.
        with ThreadPoolExecutor(min(SUMMARY_WORKERS, len(rows)), thread_name_prefix="ui-summary") as pool:
            summaries = list(pool.map(lambda t: thread_summary(saver, t["thread_id"]), rows))
        for t, summary in zip(rows, summaries, strict=True):
            t.update(summary)
    return pages.threads_page(
        listing,
        prefix=prefix,
        active=active,
        table=saver.table_name,
        limit=limit if _one(query, "limit") else None,
    )


@bounded_page
def page_thread(saver: Any, query: Mapping[str, list[str]]) -> str:
    thread_id = _required(query, "id")
    ns = _one(query, "ns", "") or ""
    before = _one(query, "before") or None
    try:
        keep_last = max(1, int(_one(query, "keep_last", "1") or "1"))
    except ValueError:
        raise CLIError("keep_last must be an integer >= 1", EXIT_USAGE, "usage") from None
    # A read-only tool shows what a prune would delete only when asked (marks=1, or a keep_last).
    show_marks = _one(query, "marks") == "1" or bool(_one(query, "keep_last"))
    namespaces = thread_namespaces(saver, thread_id)
    if not namespaces:
        raise CLIError(f"thread {thread_id!r} not found", EXIT_NOT_FOUND, "thread_not_found")
    limit = _limit(query, TIMELINE_PAGE)
    page = timeline(saver, thread_id, ns, before=before, limit=limit)
    if before and page["rows"]:
        page["newer_before"] = newer_before(saver, thread_id, ns, page["rows"][0]["checkpoint_id"], limit)
    marks = prune_marks(saver, thread_id, ns, keep_last) if show_marks and page["rows"] else None
    return pages.thread_page(
        thread_id, ns, namespaces, page, marks, keep_last=keep_last, before=before, limit=limit
    )


@bounded_page
def page_checkpoint(saver: Any, query: Mapping[str, list[str]]) -> str:
    thread_id = _required(query, "thread")
    ns = _one(query, "ns", "") or ""
    tup = checkpoint_tuple(saver, thread_id, ns, _one(query, "id"))
    cid = tup.config["configurable"]["checkpoint_id"]
    parent = saver.get_tuple(tup.parent_config) if tup.parent_config else None
    info = describe_checkpoint(
        tup,
        parent,
        parent_missing_reason=missing_parent_reason(saver, tup)
        if tup.parent_config and parent is None
        else None,
    )
    against_id = _one(query, "against") or (info["parent_id"] if parent is not None else None)
    diff = None
    diff_error = None
    if against_id:
        try:
            other = (
                parent
                if parent is not None and against_id == info["parent_id"]
                else checkpoint_tuple(saver, thread_id, ns, against_id)
            )
            diff = diff_checkpoints(other, tup)
        except CLIError as err:  # a mistyped id: say so where it was typed, show the rest
            diff_error = err.message
    task_ids = {t["id"] for t in info["next"] if t["id"]}
    conv = thread_conversation([tup])  # its own interrupts only: where its tasks stopped it
    subgraphs = [
        n
        for n in thread_namespaces(saver, thread_id)
        if n and _parent_ns(n) == ns and _task_of(n) in task_ids
    ]
    return pages.checkpoint_page(
        thread_id,
        ns,
        tup,
        info,
        locations=value_location(saver, thread_id, ns, cid),
        diff_html=diff_section(thread_id, ns, cid, diff, diff_error),
        conversation_html=conversation_section(conv),
        show_all=_one(query, "all") == "1",
        subgraphs=subgraphs,
    )


@bounded_page
def page_conversation(saver: Any, query: Mapping[str, list[str]]) -> str:
    """``/conversation?thread=&ns=&id=``: the message lists at a checkpoint, with the interrupts on its way."""
    thread_id = _required(query, "thread")
    ns = _one(query, "ns", "") or ""
    read = conversation_read(saver, thread_id, ns, _one(query, "id"), window=TIMELINE_PAGE)
    return conversation_page(thread_id, ns, read, thread_conversation(read["chain"]))


@bounded_page
def page_diff(saver: Any, query: Mapping[str, list[str]]) -> str:
    """``/diff?thread=&ns=&a=&b=``: two checkpoints of a namespace (``a`` defaults to ``b``'s parent)."""
    thread_id = _required(query, "thread")
    ns = _one(query, "ns", "") or ""
    b = checkpoint_tuple(saver, thread_id, ns, _one(query, "b"))
    a_id = _one(query, "a") or (b.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    b_id = b.config["configurable"]["checkpoint_id"]
    if not a_id:
        return diff_page(thread_id, ns, None, a="", b=b_id, error="B has no parent: choose A")
    try:
        diff = diff_checkpoints(checkpoint_tuple(saver, thread_id, ns, a_id), b)
    except CLIError as err:  # a mistyped id: said on the page, with the form to fix it
        return diff_page(thread_id, ns, None, a=a_id, b=b_id, error=err.message)
    return diff_page(thread_id, ns, diff, a=a_id, b=b_id)


def _parent_ns(ns: str) -> str:
    """``outer:1|inner:2`` -> ``outer:1``; a top-level subgraph's parent is the root ``""``."""
    return ns.rsplit("|", 1)[0] if "|" in ns else ""


def _task_of(ns: str) -> str:
    """The id of the parent's task that ran a subgraph namespace (``node:<task id>``)."""
    return ns.rsplit("|", 1)[-1].split(":", 1)[-1]


def value_text(saver: Any, query: Mapping[str, list[str]]) -> str:
    """A channel's whole value as text: a string as is, anything else as indented JSON."""
    thread_id = _required(query, "thread")
    tup = checkpoint_tuple(saver, thread_id, _one(query, "ns", "") or "", _required(query, "id"))
    channel = _required(query, "channel")
    values = tup.checkpoint.get("channel_values", {})
    if channel not in values:
        raise CLIError(
            f"channel {channel!r} has no value at this checkpoint", EXIT_NOT_FOUND, "channel_not_found"
        )
    # Whole, up to VALUE_CHARS: past it the text says where it was cut (its indented
    # JSON can be thousands of times its stored size; ``_bounded`` stops there).
    shown = bounded_text(values[channel], VALUE_CHARS)
    return (
        shown.text
        if shown.complete
        else shown.text + f"\n… cut: the value's text is over {VALUE_CHARS:,} characters\n"
    )


_ROUTES: Final[dict[str, Callable[[Any, Mapping[str, list[str]]], str]]] = {
    "/": page_threads,
    "/thread": page_thread,
    "/checkpoint": page_checkpoint,
    "/conversation": page_conversation,
    "/diff": page_diff,
}


# ================================================================= server


class _Handler(BaseHTTPRequestHandler):
    server: InspectorServer
    server_version = "langgraph-dynamodb-ui"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.log is not None:
            # The request line carries the secret on sign-in: never into a log.
            self.server.log((format % args).replace(self.server.token, "<token>"))

    # Only GET and HEAD: whatever else arrives is refused before it is read.
    def _method_not_allowed(self) -> None:
        self._send(
            HTTPStatus.METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            b"read-only: GET and HEAD only\n",
            extra={"Allow": "GET, HEAD"},
        )

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _method_not_allowed

    def do_HEAD(self) -> None:
        self._handle(head=True)

    def do_GET(self) -> None:
        self._handle(head=False)

    def _refusal(self) -> str | None:
        """Why this request is refused (``None``: it is not).

        A page on another site can make the browser send requests here (a
        form, an image, a fetch after DNS rebinding points its name at
        127.0.0.1): only our own Host header and same-origin requests pass.
        """
        hosts = {f"127.0.0.1:{self.server.port}", f"localhost:{self.server.port}"}
        if self.headers.get("Host") not in hosts:
            return "unexpected Host header"
        origin = self.headers.get("Origin")
        if origin is not None and origin not in {f"http://{h}" for h in hosts}:
            return "cross-origin request"
        site = self.headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            return "cross-site request"
        return None

    def _send(
        self,
        status: int,
        ctype: str,
        body: bytes,
        *,
        head: bool = False,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        for name, value in {**_HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _forbid(self, why: str, *, head: bool) -> None:
        self._send(
            HTTPStatus.FORBIDDEN, "text/plain; charset=utf-8", f"forbidden: {why}\n".encode(), head=head
        )

    def _signed_in(self) -> bool:
        """Whether the request carries this run's session cookie or its secret as a bearer token."""
        server = self.server
        for header in self.headers.get_all("Cookie") or []:
            for part in header.split(";"):
                name, _, value = part.strip().partition("=")
                if name == server.cookie_name and _same(value, server.session):
                    return True
        auth = self.headers.get("Authorization") or ""
        scheme, _, value = auth.partition(" ")
        return scheme.lower() == "bearer" and _same(value.strip(), server.token)

    def _handle(self, *, head: bool) -> None:
        why = self._refusal()
        if why is not None:
            self._forbid(why, head=head)
            return
        url = urllib.parse.urlsplit(self.path)
        pairs = urllib.parse.parse_qsl(url.query, keep_blank_values=True)
        offered = [v for k, v in pairs if k == "token"]
        if offered:
            # The printed URL: a right secret signs the browser in (a cookie scripts on
            # the page cannot read, sent to no other site) and takes the secret out of
            # the address bar and the history; a wrong one is refused like none.
            if not all(_same(v, self.server.token) for v in offered):
                self._forbid("wrong token", head=head)
                return
            rest = urllib.parse.urlencode([(k, v) for k, v in pairs if k != "token"])
            self._send(
                HTTPStatus.SEE_OTHER,
                "text/plain; charset=utf-8",
                b"signed in\n",
                head=head,
                extra={
                    "Location": (url.path or "/") + (f"?{rest}" if rest else ""),
                    "Set-Cookie": (
                        f"{self.server.cookie_name}={self.server.session}; Path=/; HttpOnly; SameSite=Strict"
                    ),
                },
            )
            return
        if not self._signed_in():
            self._forbid(
                "open the URL the inspector printed (with ?token=...), or send Authorization: Bearer <token>",
                head=head,
            )
            return
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        if url.path.startswith("/static/"):
            name = url.path[len("/static/") :]
            if name not in _STATIC:
                self._send(HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", b"not found\n", head=head)
                return
            body = (
                resources.files("langgraph.checkpoint.dynamodb.cli").joinpath("ui_static", name).read_bytes()
            )
            self._send(HTTPStatus.OK, _STATIC[name], body, head=head)
            return
        route = _ROUTES.get(url.path)
        if url.path == "/value":
            route = value_text
        if route is None:
            html = pages.error_page(HTTPStatus.NOT_FOUND, f"no page at {url.path}")
            self._send(HTTPStatus.NOT_FOUND, "text/html; charset=utf-8", html.encode(), head=head)
            return
        status: int = HTTPStatus.OK
        try:
            with self.server.lock:  # one saver, one request at a time
                text = route(self.server.saver, query)
        except CLIError as err:
            status = HTTPStatus.NOT_FOUND if err.exit_code == EXIT_NOT_FOUND else HTTPStatus.BAD_REQUEST
            text = err.message if route is value_text else pages.error_page(status, err.message)
        except Exception as exc:
            status = HTTPStatus.INTERNAL_SERVER_ERROR
            message = f"{type(exc).__name__}: {exc}"
            text = message if route is value_text else pages.error_page(status, message)
        ctype = "text/plain; charset=utf-8" if route is value_text else "text/html; charset=utf-8"
        self._send(status, ctype, text.encode("utf-8"), head=head)


class InspectorServer(ThreadingHTTPServer):
    """The inspector's HTTP server: 127.0.0.1 only, read-only, one saver, one secret per run.

    Example:
        ```python
        server = serve(saver)   # a free port; serve_forever() in a thread
        print(server.login_url)  # http://127.0.0.1:PORT/?token=...
        server.shutdown()
        ```
    """

    daemon_threads = True
    allow_reuse_address = False

    def __init__(
        self,
        saver: Any,
        port: int = 0,
        log: Callable[[str], None] | None = None,
        *,
        token: str | None = None,
    ) -> None:
        self.token = check_token(token) if token is not None else secrets.token_urlsafe(32)
        super().__init__(("127.0.0.1", port), _Handler)
        self.saver = saver
        self.lock = threading.Lock()
        self.log = log
        self.port = int(self.server_address[1])
        # The cookie is a second secret, not the token: what a browser stores is not what was printed.
        self.session = secrets.token_urlsafe(32)
        # Cookies are not per port: one name per inspector, so two of them never sign each other out.
        self.cookie_name = f"lg_dynamodb_ui_{self.port}"

    @property
    def url(self) -> str:
        """The base URL, without the secret (every request to it needs one: see ``login_url``)."""
        return f"http://127.0.0.1:{self.port}/"

    @property
    def login_url(self) -> str:
        """The URL to open: the base URL with ``?token=``; the first visit sets the session cookie."""
        return f"{self.url}?token={urllib.parse.quote(self.token, safe='')}"

    @property
    def auth_headers(self) -> dict[str, str]:
        """The header a script sends instead of the cookie."""
        return {"Authorization": f"Bearer {self.token}"}


def _same(offered: str, expected: str) -> bool:
    """A constant-time comparison of secrets (any text: ``compare_digest`` takes bytes for non-ASCII)."""
    return hmac.compare_digest(offered.encode("utf-8", "surrogateescape"), expected.encode("utf-8"))


def check_token(token: str) -> str:
    """A chosen secret, refused when it is short or would not survive a URL and a header unchanged."""
    if len(token) < MIN_TOKEN_LENGTH or not all(c.isascii() and (c.isalnum() or c in "-_.~") for c in token):
        raise CLIError(
            f"the inspector's token must be at least {MIN_TOKEN_LENGTH} characters of A-Z a-z 0-9 - _ . ~ "
            f"(unset {ENV_UI_TOKEN} for a generated one)",
            EXIT_USAGE,
            "bad_token",
        )
    return token


def serve(
    saver: Any, port: int = 0, log: Callable[[str], None] | None = None, *, token: str | None = None
) -> InspectorServer:
    """Start the inspector for ``saver`` on 127.0.0.1 in a background thread.

    Args:
        saver: a ``DynamoDBSaver`` (the CLI's reads its own).
        port: TCP port; ``0`` picks a free one (``server.port``).
        log: called with one line per request (``None``: quiet).
        token: the secret every request must carry (``None``: a random one,
            ``secrets.token_urlsafe(32)``); there is no way to serve without one.

    Returns:
        The running server; ``server.shutdown()`` stops it. Open
        ``server.login_url`` in a browser; a script sends ``server.auth_headers``.

    Example:
        ```python
        server = serve(saver)
        req = urllib.request.Request(server.url, headers=server.auth_headers)
        urllib.request.urlopen(req).status  # 200 (403 without the header)
        server.shutdown()
        ```
    """
    server = InspectorServer(saver, port, log, token=token)
    threading.Thread(target=server.serve_forever, name="lg-dynamodb-ui", daemon=True).start()
    return server


@contextlib.contextmanager
def _signals(stop: threading.Event) -> Iterator[None]:
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, lambda *_: stop.set())
    try:
        yield
    finally:
        for restored, handler in previous.items():
            signal.signal(restored, handler)


def wait_until_interrupted() -> None:
    """Block until Ctrl-C (SIGINT) or SIGTERM, in the main thread.

    The handlers are installed here, not inherited: a process started in the
    background may inherit an ignored SIGINT. The wait wakes every half
    second, so a signal that another thread of the process happened to
    receive is still seen (a plain ``Event().wait()`` would sleep through
    it: the main thread only runs signal handlers once it wakes).
    """
    stop = threading.Event()
    with _signals(stop):
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass


def cmd_ui(ctx: Ctx) -> int:
    args = ctx.args
    # The environment, not an option: another local user can read a process's arguments, not its environment.
    chosen = os.environ.get(ENV_UI_TOKEN) or None
    try:
        server = serve(ctx.saver, args.port, log=ctx.note if args.verbose else None, token=chosen)
    except OSError as exc:
        raise CLIError(f"cannot listen on 127.0.0.1:{args.port}: {exc}", EXIT_USAGE, "bad_port") from exc
    if ctx.json:
        ctx.out(
            json.dumps(
                {"url": server.login_url, "table": ctx.saver.table_name, "bucket": ctx.saver.bucket_name}
            )
        )
    else:
        ctx.out(
            f"inspector for table {ctx.saver.table_name!r} on {server.login_url} (read-only; Ctrl-C stops it)"
        )
    ctx.stdout.flush()
    if args.open:
        import webbrowser

        webbrowser.open(server.login_url)
    wait_until_interrupted()
    threading.Thread(target=server.shutdown, daemon=True).start()
    EXIT_AT_ONCE.set()  # a browser's keep-alive connection must not hold the exit up
    return EXIT_OK


def register(add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add the ``ui`` command to the parser (``add`` is ``build_parser``'s helper)."""
    p = add(
        "ui",
        "serve a read-only thread inspector on 127.0.0.1 and print its URL (with this run's secret); "
        f"Ctrl-C stops it. {ENV_UI_TOKEN} chooses the secret",
        cmd_ui,
    )
    p.add_argument("--port", type=int, default=0, help="port (default 0: a free port, printed)")
    p.add_argument("--open", action="store_true", help="open the inspector in the default browser")
    p.add_argument("--verbose", action="store_true", help="log each request on stderr")
