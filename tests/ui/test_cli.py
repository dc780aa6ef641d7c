"""``langgraph-dynamodb ui`` as a user runs it: against ``langgraph-dynamodb local``, and ``python -m demo --ui``."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_ENDPOINT", "LANGGRAPH_"))}
    # The package as this test process imports it (installed, or PYTHONPATH first); ROOT for the demo.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH", ""), str(ROOT)) if p)
    env["PYTHONFAULTHANDLER"] = "1"  # a process that does not stop can be asked where it is (see _stop)
    env.update(extra)
    return env


def _cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "langgraph.checkpoint.dynamodb", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        # SIGABRT makes faulthandler print every thread's stack: the failure says where it hung.
        proc.send_signal(signal.SIGABRT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        stacks = proc.stderr.read() if proc.stderr else ""
        raise AssertionError(f"not stopped 20 s after SIGINT; its threads:\n{stacks[-8000:]}") from None


@pytest.fixture
def local_env() -> Iterator[dict[str, str]]:
    """``langgraph-dynamodb local``: the environment it prints for other shells."""
    proc = _cli("--json", "local", env=_env())
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        yield json.loads(line)["env"]
    finally:
        _stop(proc)


def test_ui_against_local_prints_its_url_and_serves(local_env: dict[str, str]) -> None:
    env = _env(**local_env)
    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    saver = DynamoDBSaver(
        table_name=local_env["LANGGRAPH_DYNAMODB_TABLE"],
        bucket_name=local_env.get("LANGGRAPH_DYNAMODB_BUCKET"),
        endpoint_url=local_env["AWS_ENDPOINT_URL"],
    )
    with saver:
        from tests.support import graphs

        graphs.requirement_graph().compile(checkpointer=saver).invoke(
            {"request": "export"}, {"configurable": {"thread_id": "from-local"}}, durability="sync"
        )
    proc = _cli("ui", env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"on (http://127\.0\.0\.1:\d+/)\?token=([\w-]{43}) \(read-only", line)
        assert m, (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        base, printed = m.group(1), m.group(0)[3:].split(" ")[0]
        with pytest.raises(urllib.error.HTTPError) as refused:  # the base URL alone: nothing
            urllib.request.urlopen(base, timeout=30)
        assert refused.value.code == 403
        page, final = _browse(printed)
        assert final == base  # signed in, the secret gone from the URL
        assert ">from-local</a>" in page and "waiting: pm" in page
    finally:
        assert _stop(proc) == 0


def test_ui_token_from_the_environment(local_env: dict[str, str]) -> None:
    """``LANGGRAPH_DYNAMODB_UI_TOKEN`` chooses the secret (scripts); ``--json`` prints the URL with it."""
    token = "scripted-token-0123456789"
    proc = _cli("--json", "ui", env=_env(**local_env, LANGGRAPH_DYNAMODB_UI_TOKEN=token))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
        url = json.loads(line)["url"]
        assert url.endswith(f"/?token={token}")
        base = url.split("?", 1)[0]
        req = urllib.request.Request(base, headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status == 200
    finally:
        assert _stop(proc) == 0


def test_ui_refuses_a_weak_chosen_token(local_env: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "langgraph.checkpoint.dynamodb", "ui"],
        env=_env(**local_env, LANGGRAPH_DYNAMODB_UI_TOKEN="short"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "at least 16 characters" in proc.stderr


def _browse(url: str) -> tuple[str, str]:
    """GET ``url`` as a browser would: follow the sign-in redirect, keeping its cookie. (body, final URL)."""
    import http.cookiejar

    jar = http.cookiejar.CookieJar()
    op = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with op.open(url, timeout=30) as resp:
        return resp.read().decode(), resp.geturl()


def test_ui_without_a_table_says_so() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "langgraph.checkpoint.dynamodb", "ui"],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "no table" in proc.stderr


#: ``python -m demo --ui`` in a process whose SIGINT is ignored before the demo starts.
_DEMO_SIGINT_IGNORED = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "sys.argv = ['demo', '--ui']; runpy.run_module('demo', run_name='__main__')"
)


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_demo_ui_serves_what_the_demo_stored(sigint: str) -> None:
    """``make demo UI=1``: after the story, the inspector on the demo's own endpoint until Ctrl-C.

    Also when the demo inherits an ignored SIGINT, as a command started in
    the background by a non-interactive shell does (CI): it installs its own.
    """
    args = ["-m", "demo", "--ui"] if sigint == "default" else ["-c", _DEMO_SIGINT_IGNORED]
    proc = subprocess.Popen(
        [sys.executable, *args],
        env=_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = None
        for line in proc.stdout:
            m = re.search(r"inspector on (http://127\.0\.0\.1:\d+/\?token=[\w-]{43}) ", line)
            if m:
                url = m.group(1)
                break
        assert url, proc.stderr.read() if proc.stderr else ""
        page, _ = _browse(url)
        assert len(re.findall(r">export-(?:feature|crash)-\w+(?:-archive)?</a>", page)) == 3
    finally:
        assert _stop(proc) == 0
