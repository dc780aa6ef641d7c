"""The inspector's tier: the demo's threads in a moto server, the inspector on 127.0.0.1, a real Chromium.

The browser is Debian's ``chromium`` driven by ``chromium-driver`` through
selenium (``make setup`` installs both). A missing browser FAILS these tests
with the command that installs it: a skipped browser test proves nothing.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
DOCS_IMG = ROOT / "docs" / "img"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

#: The inspector fixture's secret: a test signs in with it (``AUTH`` header, or the browser's ``?token=``).
UI_TOKEN = secrets.token_urlsafe(32)
AUTH = {"Authorization": f"Bearer {UI_TOKEN}"}

XSS_SCRIPT = "<script>window.__xss=1</script>"
XSS_IMG = "<img src=x onerror=window.__xss=2>"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/ui/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.ui)


class Store:
    """What the fixture stored: thread ids and a saver reading them."""

    def __init__(self, saver: Any, threads: dict[str, str]) -> None:
        self.saver = saver
        self.threads = threads


def _xss_graph() -> Any:
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class S(TypedDict, total=False):
        note: str
        tags: list[str]

    g = StateGraph(S)
    g.add_node("echo", lambda s: {"note": s["note"] + " " + XSS_IMG, "tags": [XSS_SCRIPT, XSS_IMG]})
    g.add_edge(START, "echo")
    g.add_edge("echo", END)
    return g


@pytest.fixture(scope="session")
def ui_store(moto_endpoint: str) -> Iterator[Store]:
    """The demo's stages (HITL pause, resume from another process, crash recovery, fork, copy, prune,
    a ~300 KB value in S3), plus a subgraph thread with a delta channel, a thread whose node failed,
    and one whose state (and id) carries XSS payloads."""
    from demo import main as demo_main
    from langgraph.checkpoint.dynamodb import DynamoDBSaver
    from tests.support import graphs
    from tests.ui import agent_threads

    suffix = uuid.uuid4().hex[:8]
    table, bucket = f"ui-{suffix}", f"ui-{suffix}"
    workdir = tempfile.mkdtemp(prefix="lg-ui-")
    env = {
        "LANGGRAPH_DYNAMODB_TABLE": table,
        "LANGGRAPH_DYNAMODB_BUCKET": bucket,
        "DEMO_COUNTS_FILE": os.path.join(workdir, "node-runs.log"),
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    # A TTL: the saver keeps thread heads (the threads index, with expiry), as the stack's savers do.
    saver = DynamoDBSaver(table_name=table, bucket_name=bucket, ttl=30 * 86_400)
    saver.setup()
    threads: dict[str, str] = {}
    try:
        child_env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        demo_main._run_stages(demo_main.Narrator(), saver, child_env, env["DEMO_COUNTS_FILE"])
        listed = [t["thread_id"] for t in _threads(saver)]
        threads["main"] = next(
            t for t in listed if t.startswith("export-feature-") and not t.endswith("-archive")
        )
        threads["archive"] = threads["main"] + "-archive"
        threads["crash"] = next(t for t in listed if t.startswith("export-crash-"))

        sub = graphs.chat_graph(delta=True, snapshot_frequency=3, subgraph=True).compile(checkpointer=saver)
        threads["subgraph"] = f"chat-sub-{suffix}"
        for i in range(4):
            sub.invoke({"messages": [f"user message {i}"]}, _cfg(threads["subgraph"]), durability="sync")

        threads["waiting"] = f"waiting-{suffix}"
        graphs.requirement_graph().compile(checkpointer=saver).invoke(
            {"request": "export <i>users</i>"}, _cfg(threads["waiting"]), durability="sync"
        )

        graphs.FAIL["b"] = True
        failing = graphs.parallel_graph().compile(checkpointer=saver)
        threads["error"] = f"failing-{suffix}"
        with pytest.raises(RuntimeError):
            failing.invoke({"log": []}, _cfg(threads["error"]), durability="sync")

        threads["xss"] = f"xss-{suffix}-<b>bold</b>"
        _xss_graph().compile(checkpointer=saver).invoke(
            {"note": XSS_SCRIPT}, _cfg(threads["xss"]), durability="sync"
        )
        # As users have them: a tool-calling chat with an answered interrupt, one left waiting, a wide fan-out.
        threads["chat"] = f"chat-{suffix}"
        agent_threads.run_chat(saver, threads["chat"])
        threads["chat_waiting"] = f"chat-waiting-{suffix}"
        agent_threads.run_waiting_chat(saver, threads["chat_waiting"])
        threads["fanout"] = f"fanout-{suffix}"
        agent_threads.run_fan_out(saver, threads["fanout"])
        threads["fanout_waiting"] = f"fanout-waiting-{suffix}"
        agent_threads.run_fan_out_waiting(saver, threads["fanout_waiting"], 50)
        threads["xss_chat"] = f"xss-chat-{suffix}"
        agent_threads.run_hostile_chat(saver, threads["xss_chat"], XSS_SCRIPT, XSS_IMG)
        yield Store(saver, threads)
    finally:
        saver.close()
        shutil.rmtree(workdir, ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _cfg(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def _threads(saver: Any) -> list[dict[str, Any]]:
    from langgraph.checkpoint.dynamodb.cli import list_threads

    return list_threads(saver, limit=100)["threads"]


@pytest.fixture(scope="session")
def inspector(ui_store: Store) -> Iterator[str]:
    """The inspector on a free port of 127.0.0.1, reading the fixture's store; yields its base URL.

    Its secret is ``UI_TOKEN``: send ``AUTH``, or sign a browser in with ``signed_in``.
    """
    from langgraph.checkpoint.dynamodb.cli._ui import serve

    server = serve(ui_store.saver, token=UI_TOKEN)
    try:
        yield server.url.rstrip("/")
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium through chromedriver. Missing: a failure saying how to install it."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    if missing:
        pytest.fail(
            f"the inspector's browser tests need Debian's chromium and chromium-driver ({', '.join(missing)} "
            "missing): run `make setup` as root, or `apt-get install -y chromium chromium-driver`",
            pytrace=False,
        )
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("selenium is missing: `pip install -e '.[dev]'` (make setup) installs it", pytrace=False)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",  # root in CI containers
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1, EXCLUDE localhost",
    ):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def sign_in(driver: Any, base: str) -> None:
    """Open the inspector's printed URL (``?token=``) once: the session cookie does the rest."""
    driver.get(f"{base}/?token={UI_TOKEN}")
    assert "?token" not in driver.current_url  # the secret left the address bar
    assert driver.title == "Threads · langgraph-dynamodb"


def opener(auth: dict[str, str] | None = None) -> Any:
    """A ``urllib`` opener sending ``auth`` (default: the fixture's ``AUTH``) with every request."""
    import urllib.request

    op = urllib.request.build_opener()
    op.addheaders = list((auth if auth is not None else AUTH).items())
    return op


def screenshot(driver: Any, name: str) -> Path:
    """A PNG of the whole page in tests/ui/artifacts/ (and docs/img/ when UPDATE_SCREENSHOTS=1)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height, chrome = driver.execute_script(
        "return [Math.min(document.documentElement.scrollHeight, 2400), window.outerHeight - window.innerHeight]"
    )
    driver.set_window_size(1400, max(700, int(height)) + int(chrome))
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    driver.set_window_size(1400, 1000)
    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_IMG / f"ui-{name}.png")
    assert path.stat().st_size > 10_000, f"screenshot {path} looks empty"
    return path


__all__ = [
    "ARTIFACTS",
    "AUTH",
    "UI_TOKEN",
    "XSS_IMG",
    "XSS_SCRIPT",
    "Store",
    "opener",
    "screenshot",
    "sign_in",
]
