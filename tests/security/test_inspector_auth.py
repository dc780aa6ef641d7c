"""The inspector needs this run's secret: another local user who finds its port reads nothing.

Before, ``langgraph-dynamodb ui`` answered anyone who could reach 127.0.0.1:PORT
(every local user, any process of theirs) with every thread the operator's
credentials reach. Now it prints ``http://127.0.0.1:PORT/?token=SECRET``
(``secrets.token_urlsafe(32)``, per run); that URL sets an HttpOnly,
SameSite=Strict session cookie and redirects to the URL without the secret;
scripts send ``Authorization: Bearer SECRET``. Anything else is a 403 that
names no data, on every route (pages, static files, ``/value``).

The Host and Origin checks (DNS rebinding, cross-site requests) already held
before the secret existed: their tests here are kept so that they keep
holding, now with the right secret in hand too.
"""

from __future__ import annotations

import http.client
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from langgraph.checkpoint.dynamodb.cli._base import CLIError
from langgraph.checkpoint.dynamodb.cli._ui import serve
from tests.support.harness import cfg, new_thread

SECRET_VALUE = "operator-only-state-7f3a"


@pytest.fixture
def store(moto_endpoint: str, names: dict[str, str]) -> Iterator[tuple[DynamoDBSaver, str, str]]:
    """A saver with one thread holding a value only the operator should see: (saver, thread, checkpoint id)."""
    saver = DynamoDBSaver(table_name=names["table_name"], track_threads=True)
    saver.setup()
    thread = f"private-{new_thread()}"
    cp = empty_checkpoint()
    cp["id"] = str(uuid6())
    cp["channel_values"] = {"v": SECRET_VALUE}
    cp["channel_versions"] = {"v": "1"}
    saver.put(cfg(thread), cp, {}, {"v": "1"})
    yield saver, thread, cp["id"]
    saver.close()


@pytest.fixture
def server(store: tuple[DynamoDBSaver, str, str]) -> Iterator[Any]:
    srv = serve(store[0])  # as `langgraph-dynamodb ui` starts it: a generated secret
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def request(
    srv: Any, path: str, *, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    """One raw request to ``srv``, Host ``127.0.0.1:PORT`` unless ``headers`` name another."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=30)
    hdrs = {"Host": f"127.0.0.1:{srv.server_address[1]}", **(headers or {})}
    try:
        conn.putrequest(method, path, skip_host=True)
        for k, v in hdrs.items():
            conn.putheader(k, v)
        conn.endheaders()
        resp = conn.getresponse()
        return (
            resp.status,
            {k.lower(): v for k, v in resp.getheaders()},
            resp.read().decode("utf-8", "replace"),
        )
    finally:
        conn.close()


def routes(thread: str, checkpoint_id: str) -> list[str]:
    q = urllib.parse.urlencode
    return [
        "/",
        "/?" + q({"prefix": "private-"}),
        "/thread?" + q({"id": thread}),
        "/checkpoint?" + q({"thread": thread}),
        "/value?" + q({"thread": thread, "id": checkpoint_id, "channel": "v"}),
        "/static/ui.css",
        "/static/ui.js",
        "/no-such-page",
    ]


def _sign_in(srv: Any, path: str = "/") -> tuple[int, dict[str, str]]:
    sep = "&" if "?" in path else "?"
    status, headers, _ = request(srv, f"{path}{sep}token={urllib.parse.quote(srv.token)}")
    return status, headers


def _cookie(headers: dict[str, str]) -> str:
    """The ``name=value`` of a Set-Cookie header."""
    return headers["set-cookie"].split(";", 1)[0]


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_every_route_without_the_secret_is_403(
    server: Any, store: tuple[DynamoDBSaver, str, str], method: str
) -> None:
    _, thread, cid = store
    for path in routes(thread, cid):
        status, headers, body = request(server, path, method=method)
        assert status == 403, (path, status)
        assert thread not in body and SECRET_VALUE not in body, path
        assert "set-cookie" not in headers, path


def test_a_wrong_secret_is_403(server: Any, store: tuple[DynamoDBSaver, str, str]) -> None:
    _, thread, _ = store
    right = server.token
    port = server.server_address[1]
    attempts: list[tuple[str, dict[str, str]]] = [
        ("/?token=wrong", {}),
        ("/?token=", {}),
        (f"/?token={right[:-1]}", {}),
        (f"/?token={right}x", {}),
        (f"/?token={right}&token=wrong", {}),  # every copy must be right
        ("/?token=%C3%A9%F0%9F%94%91", {}),  # non-ASCII: refused, not a 500 from compare_digest
        ("/?token=%ff", {}),  # not UTF-8 at all
        ("/", {"Authorization": "Bearer wrong"}),
        ("/", {"Authorization": f"Basic {right}"}),
        ("/", {"Authorization": f"Bearer {right}x"}),
        ("/", {"Cookie": f"lg_dynamodb_ui_{port}=wrong"}),
        ("/", {"Cookie": f"lg_dynamodb_ui_{port}={right}"}),  # the printed secret is not the session
        ("/", {"Cookie": f"lg_dynamodb_ui_{port + 1}={right}"}),
    ]
    for path, headers in attempts:
        status, got, body = request(server, path, headers=headers)
        assert status == 403, (path, headers, status)
        assert thread not in body and "set-cookie" not in got, (path, headers)


def test_the_right_secret_signs_in_and_leaves_the_url(
    server: Any, store: tuple[DynamoDBSaver, str, str]
) -> None:
    _, thread, _ = store
    assert server.login_url == f"{server.url}?token={server.token}"
    status, headers = _sign_in(server, "/thread?" + urllib.parse.urlencode({"id": thread}))
    assert status == 303
    # Back to the same page, the other parameters kept, the secret gone.
    assert headers["location"] == "/thread?" + urllib.parse.urlencode({"id": thread})
    attrs = [a.strip() for a in headers["set-cookie"].split(";")]
    assert attrs[0].startswith(f"lg_dynamodb_ui_{server.server_address[1]}=")
    assert server.token not in attrs[0]
    assert {"Path=/", "HttpOnly", "SameSite=Strict"} <= set(attrs[1:])
    assert headers["referrer-policy"] == "no-referrer"  # the secret never leaves in a Referer


def test_the_cookie_signs_in_every_route_afterwards(
    server: Any, store: tuple[DynamoDBSaver, str, str]
) -> None:
    _, thread, cid = store
    _, headers = _sign_in(server)
    cookie = {"Cookie": "other=1; " + _cookie(headers)}
    for path in routes(thread, cid):
        status, _, body = request(server, path, headers=cookie)
        assert status == (404 if path == "/no-such-page" else 200), (path, status)
    status, _, body = request(server, "/", headers=cookie)
    assert f">{thread}</a>" in body
    status, _, body = request(server, routes(thread, cid)[4], headers=cookie)
    assert body == SECRET_VALUE


def test_scripts_send_the_secret_as_a_bearer_token(
    server: Any, store: tuple[DynamoDBSaver, str, str]
) -> None:
    _, thread, _ = store
    status, _, body = request(server, "/", headers=server.auth_headers)
    assert status == 200 and f">{thread}</a>" in body


def test_each_run_has_its_own_secret_and_cookie(store: tuple[DynamoDBSaver, str, str]) -> None:
    a, b = serve(store[0]), serve(store[0])
    try:
        assert a.token != b.token and len(a.token) >= 43  # 32 random bytes
        _, headers = _sign_in(a)
        name, value = _cookie(headers).split("=", 1)
        # A's cookie, renamed for B's port, does not sign in to B; A's secret is not B's.
        forged = {"Cookie": f"lg_dynamodb_ui_{b.server_address[1]}={value}"}
        assert request(b, "/", headers=forged)[0] == 403
        assert request(b, "/", headers=a.auth_headers)[0] == 403
        assert request(a, "/", headers={"Cookie": f"{name}={value}"})[0] == 200
    finally:
        for s in (a, b):
            s.shutdown()
            s.server_close()


@pytest.mark.parametrize(
    "token", ["", "short", "x" * 15, "has space in it 12345", "é" * 20, "a&token=b-0123456"]
)
def test_there_is_no_way_to_serve_without_a_real_secret(
    store: tuple[DynamoDBSaver, str, str], token: str
) -> None:
    with pytest.raises(CLIError) as err:
        serve(store[0], token=token)
    assert err.value.code == "bad_token"


def test_the_secret_is_never_logged(store: tuple[DynamoDBSaver, str, str]) -> None:
    lines: list[str] = []
    srv = serve(store[0], log=lines.append)
    try:
        _sign_in(srv)
        request(srv, "/", headers=srv.auth_headers)
    finally:
        srv.shutdown()
        srv.server_close()
    assert lines and not any(srv.token in line for line in lines), lines
    assert any("token=<token>" in line for line in lines)


# ---- guards that already held before the secret (DNS rebinding, cross-site): kept, now with the secret in hand


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:{port}", "127.0.0.1", "localhost.evil.example:{port}", "0.0.0.0:{port}"],
)
def test_a_foreign_host_is_refused_even_with_the_secret(server: Any, host: str) -> None:
    """DNS rebinding: a page at evil.example, its name pointed at 127.0.0.1, sends its own Host."""
    hdr = {"Host": host.format(port=server.server_address[1])}
    for path, extra in (("/", server.auth_headers), (f"/?token={server.token}", {})):
        status, headers, body = request(server, path, headers={**hdr, **extra})
        assert status == 403 and "set-cookie" not in headers, (host, path)
        assert "forbidden" in body


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_own_host_names_are_accepted(server: Any, host: str) -> None:
    hdr = {"Host": f"{host}:{server.server_address[1]}", **server.auth_headers}
    assert request(server, "/", headers=hdr)[0] == 200


@pytest.mark.parametrize(
    "headers", [{"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}]
)
def test_a_cross_site_request_is_refused_even_with_the_cookie(server: Any, headers: dict[str, str]) -> None:
    _, got = _sign_in(server)
    status, _, _ = request(server, "/", headers={**headers, "Cookie": _cookie(got)})
    assert status == 403
    status, got, _ = request(server, f"/?token={server.token}", headers=headers)
    assert status == 403 and "set-cookie" not in got
