"""Test session set-up: a moto server on 127.0.0.1 and a clean AWS environment.

Everything talks to the loopback server through real boto3/aiobotocore
clients; nothing here can reach real AWS (dummy credentials, no config files,
no metadata service, every endpoint pointed at 127.0.0.1).

The server checks every request against AWS's documented limits
(tests/support/strict_aws.py; ``STRICT_AWS=enforce|record|off``, passed on to
it): a test that sends a request real AWS would refuse fails, unless it is
marked ``@pytest.mark.aws_violation("substring", ...)``, which says it sends
one on purpose. ``STRICT_AWS_LOG=DIR`` writes every recorded violation there
when a server stops.

Outside the server's lock, tests/support/contention.py models DynamoDB's
transaction conflicts (``CONTENTION=on|off``, default off): the ``contention``
fixture turns it on for one test and gives its endpoint.
Inside the lock, tests/support/throughput.py counts capacity units and, with a
scale, throttles as AWS does (``THROUGHPUT=on``, ``THROUGHPUT_SCALE``; default off).

moto enforces no IAM: every request a Lambda handler issues is attributed to
its function and checked against the role the synthesized reference stack
gives that function (tests/support/iam.py); a request the role does not allow
fails the test, unless it is marked ``@pytest.mark.iam_violation("substring", ...)``.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
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


def pytest_configure(config: pytest.Config) -> None:
    # Before any test module imports a handler: each is wrapped as its module loads.
    from tests.support import iam

    iam.GUARD.install()


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A moto server on loopback for the whole session; sets AWS_ENDPOINT_URL.

    It runs in its own process: in-process, the server and the tests would
    share one GIL, and on two cores the suite would take twice as long.
    """
    from tests.support.moto_serial import start, stop

    proc, endpoint = start({"STRICT_AWS": os.environ.get("STRICT_AWS") or "enforce"})
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    try:
        yield endpoint
    finally:
        os.environ.pop("AWS_ENDPOINT_URL", None)
        _dump_violations(endpoint)
        stop(proc)


def _dump_violations(endpoint: str) -> None:
    """Every violation the server recorded, to $STRICT_AWS_LOG/ (when set), for a report."""
    folder = os.environ.get("STRICT_AWS_LOG")
    if not folder:
        return
    from tests.support import strict_aws

    try:
        records = {"status": strict_aws.status(endpoint), "violations": strict_aws.violations(endpoint)}
    except OSError:
        return
    os.makedirs(folder, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    path = os.path.join(folder, f"violations-{worker}-{endpoint.rsplit(':', 1)[-1]}.json")
    with open(path, "w") as f:
        json.dump(records, f, indent=1)


@pytest.fixture(autouse=True)
def _strict_aws(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test whose requests real AWS would refuse (recorded by the moto server's strict layer).

    Only for tests on the moto server (``moto_endpoint`` among their fixtures). A test marked
    ``@pytest.mark.aws_violation("substring", ...)`` sends such a request on purpose: every
    violation it causes must contain one of the substrings (in its limit id or message), and it
    must cause at least one.
    """
    if "moto_endpoint" not in request.fixturenames:
        yield
        return
    from tests.support import strict_aws

    endpoint = request.getfixturevalue("moto_endpoint")
    state = strict_aws.status(endpoint)
    if state["mode"] == "off":
        yield
        return
    strict_aws.set_context(endpoint, request.node.nodeid)
    yield
    new = strict_aws.violations(endpoint, since=state["last_seq"])
    strict_aws.set_context(endpoint, None)
    marker = request.node.get_closest_marker("aws_violation")
    if marker is None:
        if new:
            pytest.fail(
                f"{len(new)} request(s) real AWS would refuse (STRICT_AWS={state['mode']}; "
                f"see tests/support/strict_aws.py):\n{strict_aws.describe(new)}",
                pytrace=False,
            )
        return
    expected = [str(a) for a in marker.args]
    if not expected:
        pytest.fail("@pytest.mark.aws_violation needs a substring of the expected violation", pytrace=False)
    unexpected = [r for r in new if not any(e in f"{r['limit']}: {r['message']}" for e in expected)]
    if unexpected:
        pytest.fail(
            f"violations not matching aws_violation{tuple(expected)!r}:\n{strict_aws.describe(unexpected)}",
            pytrace=False,
        )
    if not new:
        pytest.fail(f"marked aws_violation{tuple(expected)!r}, yet no request broke a limit", pytrace=False)


_roles: list[Any] = []  # the reference stack's functions, once per process


@pytest.fixture(scope="session")
def _iam_cache(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A folder all xdist workers of this session share (the synthesized template)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "iam"


@pytest.fixture(autouse=True)
def _iam_roles(request: pytest.FixtureRequest, _iam_cache: Any) -> Iterator[None]:
    """Fail a test during which a Lambda handler sent a request its function's role does not allow.

    Every request a handler issues (tests/support/iam.py, ``HandlerGuard``) is evaluated against
    the role the reference stack (infra/, synthesized once per session) gives the function that
    runs the handler. A test marked ``@pytest.mark.iam_violation("substring", ...)`` makes such a
    request on purpose: every denial must contain one of the substrings, and there must be one.
    Without the cdk extra the check is skipped (the template cannot be synthesized).
    """
    if "moto_endpoint" not in request.fixturenames:
        yield
        return
    from tests.support import iam

    start = iam.GUARD.mark()
    yield
    records = iam.GUARD.since(start)
    marker = request.node.get_closest_marker("iam_violation")
    if not records and marker is None:
        return
    if not _roles:
        roles = iam.reference_roles(_iam_cache)
        if roles is None:
            return  # no cdk extra: nothing to check against
        _roles.append(roles)
    found = iam.denials(records, _roles[0])
    if marker is None:
        if found:
            pytest.fail(
                f"{sum(d.count for d in found)} request(s) a Lambda handler sent that its function's "
                f"role does not allow (tests/support/iam.py):\n{iam.describe(found)}",
                pytrace=False,
            )
        return
    expected = [str(a) for a in marker.args]
    if not expected:
        pytest.fail("@pytest.mark.iam_violation needs a substring of the expected denial", pytrace=False)
    unexpected = [d for d in found if not any(e in d.message for e in expected)]
    if unexpected:
        pytest.fail(
            f"denials not matching iam_violation{tuple(expected)!r}:\n{iam.describe(unexpected)}",
            pytrace=False,
        )
    if not found:
        pytest.fail(
            f"marked iam_violation{tuple(expected)!r}, yet every handler request was allowed", pytrace=False
        )


@pytest.fixture
def aws_violations(moto_endpoint: str) -> Callable[[], list[dict[str, Any]]]:
    """A function returning the violations the server recorded since this test began."""
    from tests.support import strict_aws

    start = strict_aws.status(moto_endpoint)["last_seq"]
    return lambda: strict_aws.violations(moto_endpoint, since=start)


@pytest.fixture
def contention(moto_endpoint: str) -> Iterator[str]:
    """The moto server with its transaction-conflict layer on (counters zeroed), for one test."""
    from tests.support import contention as layer

    with layer.enabled(moto_endpoint, hold_ms=float(os.environ.get("CONTENTION_HOLD_MS") or 10)):
        yield moto_endpoint


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
def harness(
    request: pytest.FixtureRequest, moto_endpoint: str, names: dict[str, str], loop_thread: Any
) -> Iterator[Any]:
    """A saver variant (sync/async x S3 on/off x encryption) with a fresh table."""
    from tests.support.harness import Harness

    h = Harness(request.param, names["table_name"], names["bucket_name"], loop_thread)
    yield h
    h.close()
