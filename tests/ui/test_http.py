"""The inspector over plain HTTP: guards (Host, Origin, methods), headers, escaping, errors, paging.

Every request here carries the fixture's secret (``auth=False`` leaves it out);
``tests/security/test_inspector_auth.py`` covers requests without it.
"""

from __future__ import annotations

import http.client
import re
import urllib.parse
from typing import Any

import pytest

from tests.ui.conftest import AUTH, XSS_IMG, XSS_SCRIPT, Store


def request(
    base: str,
    path: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    auth: bool = True,
) -> tuple[int, dict[str, str], str]:
    """One raw request, with exactly the headers given (Host included, when given), plus the secret unless ``auth=False``."""
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    sent = {**(AUTH if auth else {}), **(headers or {})}
    try:
        conn.putrequest(method, path, skip_host="Host" in sent)
        for k, v in sent.items():
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        return (
            resp.status,
            {k.lower(): v for k, v in resp.getheaders()},
            resp.read().decode("utf-8", "replace"),
        )
    finally:
        conn.close()


def q(path: str, **params: Any) -> str:
    return f"{path}?{urllib.parse.urlencode(params)}"


def test_threads_page_lists_the_demo_threads(inspector: str, ui_store: Store) -> None:
    status, headers, body = request(inspector, "/")
    assert status == 200
    assert headers["content-type"] == "text/html; charset=utf-8"
    for name in ("main", "archive", "crash", "subgraph", "error"):
        assert f">{ui_store.threads[name]}</a>" in body, name


@pytest.mark.parametrize(
    "path", ["/", "/thread?id=x", "/conversation?thread=x", "/diff?thread=x", "/static/ui.js", "/nope"]
)
def test_security_headers_on_every_response(inspector: str, path: str) -> None:
    _, headers, _ = request(inspector, path)
    assert headers["content-security-policy"].startswith("default-src 'self'")
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:80", "127.0.0.1", "127.0.0.1:1", "localhost.evil.example", ""]
)
def test_foreign_host_header_is_refused(inspector: str, host: str) -> None:
    """DNS rebinding: a page at evil.example whose name now points to 127.0.0.1 sends Host: evil.example."""
    status, _, body = request(inspector, "/", headers={"Host": host})
    assert status == 403, (host, body[:200])
    assert "forbidden" in body


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_own_host_names_are_accepted(inspector: str, host: str) -> None:
    port = urllib.parse.urlsplit(inspector).port
    status, _, _ = request(inspector, "/", headers={"Host": f"{host}:{port}"})
    assert status == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
def test_cross_origin_requests_are_refused(inspector: str, headers: dict[str, str]) -> None:
    status, _, _ = request(inspector, "/", headers=headers)
    assert status == 403


def test_same_origin_fetch_is_accepted(inspector: str) -> None:
    status, _, _ = request(inspector, "/", headers={"Origin": inspector, "Sec-Fetch-Site": "same-origin"})
    assert status == 200


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_only_get_and_head(inspector: str, method: str) -> None:
    status, headers, _ = request(inspector, "/", method=method, body=b"x=1")
    assert status == 405
    assert headers["allow"] == "GET, HEAD"


def test_head_has_no_body(inspector: str) -> None:
    status, headers, body = request(inspector, "/", method="HEAD")
    assert status == 200 and body == "" and int(headers["content-length"]) > 0


def test_server_binds_loopback_only(ui_store: Store) -> None:
    from langgraph.checkpoint.dynamodb.cli._ui import InspectorServer

    server = InspectorServer(ui_store.saver)
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()


def test_stored_strings_are_escaped(inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["xss"]
    status, _, body = request(inspector, q("/thread", id=tid))
    assert status == 200
    assert "<b>bold</b>" not in body and "&lt;b&gt;bold&lt;/b&gt;" in body
    status, _, body = request(inspector, q("/checkpoint", thread=tid))
    assert status == 200
    for payload in (XSS_SCRIPT, XSS_IMG):
        assert payload not in body
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in body
    assert "&lt;img src=x onerror=window.__xss=2&gt;" in body
    # The only scripts are our own file.
    assert re.findall(r"<script[^>]*>", body) == ['<script src="/static/ui.js" defer>']


def test_unknown_thread_and_checkpoint_are_404(inspector: str) -> None:
    status, _, body = request(inspector, q("/thread", id="no-such-thread"))
    assert status == 404 and "not found" in body
    status, _, body = request(inspector, q("/checkpoint", thread="no-such-thread", id="1f0-nope"))
    assert status == 404


def test_static_files_are_whitelisted(inspector: str) -> None:
    assert request(inspector, "/static/ui.css")[0] == 200
    for path in ("/static/../_ui.py", "/static/%2e%2e/_ui.py", "/static/ui_static/ui.js", "/static/"):
        assert request(inspector, path)[0] == 404, path


def test_bad_page_token_is_a_400_page(inspector: str) -> None:
    status, _, body = request(inspector, q("/", page="not-a-token<script>"))
    assert status == 400
    assert "invalid page token" in body and "<script>" not in body.split("</head>", 1)[1]


def test_value_endpoint_is_plain_text(inspector: str, ui_store: Store) -> None:
    """The on-demand value is text/plain with nosniff: a browser never renders it as HTML."""
    tid = ui_store.threads["xss"]
    status, headers, body = request(
        inspector, q("/value", thread=tid, id=_latest(ui_store, tid), channel="note")
    )
    assert status == 200
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert body == XSS_SCRIPT + " " + XSS_IMG


def _latest(store: Store, thread_id: str) -> str:
    tup = store.saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    return str(tup.config["configurable"]["checkpoint_id"])


@pytest.mark.parametrize(
    "path",
    [
        q("/", prefix=XSS_SCRIPT),
        q("/", active=XSS_IMG),
        q("/thread", id=XSS_IMG),
        q("/checkpoint", thread=XSS_SCRIPT, id=XSS_IMG),
        q("/conversation", thread=XSS_SCRIPT, id=XSS_IMG),
        q("/diff", thread=XSS_SCRIPT, a=XSS_IMG, b=XSS_SCRIPT),
        "/" + urllib.parse.quote(XSS_SCRIPT),
    ],
)
def test_reflected_parameters_are_escaped(inspector: str, path: str) -> None:
    """What the URL carries comes back in forms and error messages: escaped too."""
    _, _, body = request(inspector, path)
    page = body.split("</head>", 1)[-1]
    assert "<script>" not in page and "<img" not in page, page[:500]


def test_diff_against_an_unknown_checkpoint_says_so_in_place(inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["archive"]
    status, _, body = request(inspector, q("/checkpoint", thread=tid, against="no-such-id"))
    assert status == 200  # the checkpoint itself is there: only the comparison is not
    # The CLI's own wording (one resolver for both, issue 39): the id shell-quoted, as the CLI prints it.
    assert (
        'class="error">checkpoint &#x27;no-such-id&#x27; not found' in body
        and 'table class="channels"' in body
    )
