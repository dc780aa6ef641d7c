"""Test session set-up: a moto server on 127.0.0.1 and a clean AWS environment.

Everything talks to the loopback server through real boto3/aiobotocore
clients; nothing here can reach real AWS (dummy credentials, no config files,
no metadata service, every endpoint pointed at 127.0.0.1).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
)
os.environ.pop("AWS_PROFILE", None)


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A moto server on loopback for the whole session; sets AWS_ENDPOINT_URL.

    It runs in its own process: in-process, the server and the tests would
    share one GIL, and on two cores the suite would take twice as long.
    """
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        # moto's server, with requests applied one at a time (as DynamoDB
        # applies conditional writes atomically): see tests/support/moto_serial.py.
        [sys.executable, "-m", "tests.support.moto_serial", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                raise RuntimeError(f"moto server did not start on port {port}") from None
            time.sleep(0.1)
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    try:
        yield endpoint
    finally:
        os.environ.pop("AWS_ENDPOINT_URL", None)
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def names() -> dict[str, str]:
    """Fresh table and bucket names for one test."""
    suffix = uuid.uuid4().hex[:10]
    return {"table_name": f"ckpt-{suffix}", "bucket_name": f"ckpt-{suffix}"}


@pytest.fixture(scope="session")
def loop_thread() -> Iterator[Any]:
    from tests.support.harness import LoopThread

    lt = LoopThread()
    yield lt
    lt.close()


@pytest.fixture(params=["sync", "async", "sync-s3", "async-s3-encrypted", "async-io-thread"])
def harness(request: pytest.FixtureRequest, moto_endpoint: str, names: dict[str, str], loop_thread: Any) -> Iterator[Any]:
    """A saver variant (sync/async x S3 on/off x encryption) with a fresh table."""
    from tests.support.harness import Harness

    h = Harness(request.param, names["table_name"], names["bucket_name"], loop_thread)
    yield h
    h.close()
