"""moto's server with one request at a time in its backends.

DynamoDB applies each write atomically, conditional writes included; moto's
threaded server does not (two concurrent conditional puts can both pass).
The tests of locks and races need the real behaviour, so every request runs
under one lock here, while connections are still served by many threads.

Inside the lock, tests/support/strict_aws.py checks every DynamoDB and S3
request against AWS's documented limits (``STRICT_AWS``: ``enforce``, the
default, answers as AWS would; ``record`` only records; ``off``).

DynamoDB responses skip moto's generic serializer, which walks every
attribute value against the service model: 43% of this server's CPU in a
suite run (py-spy). A DynamoDB response is JSON of the wire shapes moto
already builds, so for the item operations (``ITEM_OPERATIONS``)
``json.dumps`` writes the same body; table descriptions keep moto's.
``MOTO_SERIALIZER=check`` builds both and fails a request whose bodies
differ (``tests/unit/test_moto_fast_json.py`` runs that);
``MOTO_SERIALIZER=moto`` keeps moto's.

    python -m tests.support.moto_serial PORT
"""

from __future__ import annotations

import base64
import copy
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.server import MotoRequestHandler  # type: ignore[attr-defined]
from werkzeug.serving import run_simple

from tests.support.contention import ContentionMiddleware
from tests.support.strict_aws import StrictAWSMiddleware
from tests.support.throughput import ThroughputMiddleware


def _wire(value: Any) -> Any:
    """JSON for what ``json`` cannot write: bytes as base64, times as epoch seconds (AWS JSON)."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime):
        return value.timestamp()
    raise TypeError(f"not serializable in a DynamoDB response: {type(value).__name__}")


#: The operations whose responses are items and their wrappers: the hot path, and plain JSON.
ITEM_OPERATIONS = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactGetItems",
        "TransactWriteItems",
    }
)


def _pick(shape: Any, value: Any) -> Any:
    """``value`` with only the members its output shape has (what moto's serializer keeps).

    An attribute value is passed through whole: that is where the time went.
    """
    if value is None or shape is None:
        return value
    kind = shape.type_name
    if kind == "structure":
        if shape.name == "AttributeValue":
            return value
        members = shape.members
        return {k: _pick(members[k], v) for k, v in value.items() if k in members and v is not None}
    if kind == "list":
        return [_pick(shape.member, v) for v in value]
    if kind == "map":
        return {k: _pick(shape.value, v) for k, v in value.items()}
    return value


def _first_difference(a: Any, b: Any, path: str = "$") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k, "<missing>") != b.get(k, "<missing>"):
                return _first_difference(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"{path}: moto {json.dumps(a)[:200]} vs fast {json.dumps(b)[:200]}"


def install_fast_dynamodb_json(mode: str | None = None) -> None:
    """Serialize DynamoDB results with ``json.dumps`` (see the module docstring)."""
    from moto.dynamodb import responses

    mode = mode or os.environ.get("MOTO_SERIALIZER") or "fast"
    if mode == "moto":
        return
    generic = responses.DynamoResult.execute_result

    def execute_result(self: Any, context: Any) -> Any:
        operation = context.operation_model
        if operation.name not in ITEM_OPERATIONS:
            return generic(self, context)  # table descriptions: moto shapes them (fields, times)
        body = json.dumps(_pick(operation.output_shape, self.result), default=_wire, separators=(",", ":"))
        if mode == "check":
            status, headers, expected = generic(self, context)
            if status != 200 or json.loads(expected) != json.loads(body):
                raise AssertionError(
                    f"fast DynamoDB JSON differs from moto's for {operation.name} at "
                    f"{_first_difference(json.loads(expected), json.loads(body))}"
                )
            return status, {**headers, "x-moto-serializer": "check"}, body
        return 200, {"Content-Type": "application/x-amz-json-1.0"}, body

    responses.DynamoResult.execute_result = execute_result


class _TableBackup:
    """``copy`` for moto's DynamoDB models: while a transaction runs, a table's backup is cheap.

    The backup is a shallow copy of the table whose item maps are copied
    (two levels: partition -> sort key -> item): the items a transaction
    puts or deletes are replaced or removed in the live maps, never changed
    in place, so the old maps still hold what was there. Only the items it
    updates (moto updates them in place) are deep-copied. One backup per
    table per transaction.
    """

    def __init__(self, table_type: type, key_type: type) -> None:
        self.table_type = table_type
        self.key_type = key_type
        #: id(table) -> its backup, while a transaction runs (the table outlives it: ids are its own).
        self.memo: dict[int, Any] | None = None
        #: table name -> keys (wire form) the transaction updates in place.
        self.updated: dict[str, list[dict[str, Any]]] = {}

    def deepcopy(self, value: Any) -> Any:
        if self.memo is None or not isinstance(value, self.table_type):
            return copy.deepcopy(value)
        if id(value) not in self.memo:
            self.memo[id(value)] = self._backup(value)
        return self.memo[id(value)]

    def _backup(self, table: Any) -> Any:
        backup = copy.copy(table)
        items = type(table.items)(table.items.default_factory)
        for h, held in table.items.items():
            items[h] = dict(held) if table.range_key_attr else held
        for key in self.updated.get(table.name, []):
            h = self.key_type(key[table.hash_key_attr])
            if table.range_key_attr:
                r = self.key_type(key[table.range_key_attr])
                if r in items.get(h, {}):
                    items[h][r] = copy.deepcopy(items[h][r])
            elif h in items:
                items[h] = copy.deepcopy(items[h])
        backup.items = items
        return backup

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)


def install_cheap_transaction_backups() -> None:
    """moto backs a table up for a transaction's rollback cheaply, and once.

    moto's ``transact_write_items`` deep-copies the whole table for *every*
    action of a transaction (each copy replacing the last): a 100-action
    transaction on a table of a few thousand items took seconds, growing
    with the table, where DynamoDB's cost does not depend on the table. A
    lease-bound fan-out coalesces its writes into large transactions
    (lock/_commit.py), which that made the slowest case. Here each table is
    backed up once per transaction, by :class:`_TableBackup`; a cancelled
    transaction still leaves the table as it was (tests/integration/test_contention_layer.py
    and the strict-layer tests cancel some). ``MOTO_TX_BACKUP=moto`` keeps moto's.
    """
    if os.environ.get("MOTO_TX_BACKUP") == "moto":
        return  # moto's own: a deep copy of the table per action (to measure what it costs)
    from moto.dynamodb import models
    from moto.dynamodb.models.dynamo_type import DynamoType

    shim = _TableBackup(models.Table, DynamoType)
    models.copy = shim  # type: ignore[attr-defined]
    original = models.DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        shim.memo, shim.updated = {}, {}
        for action in transact_items:
            kind, body = next(iter(action.items()))
            if kind == "Update" and isinstance(body, dict) and "Key" in body:
                shim.updated.setdefault(body.get("TableName", ""), []).append(body["Key"])
        try:
            original(self, transact_items)
        finally:
            shim.memo, shim.updated = None, {}

    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def main() -> None:
    port = int(sys.argv[1])
    install_fast_dynamodb_json()
    install_cheap_transaction_backups()
    os.environ.setdefault("MOTO_PORT", str(port))
    # The checks read moto's backend (key schemas, the item an update starts from):
    # they run inside the lock, like the request itself.
    # Capacity is counted (and throttled) inside the lock too: it reads the items a write replaces
    # (tests/support/throughput.py).
    app = ThroughputMiddleware(
        StrictAWSMiddleware(DomainDispatcherApplication(create_backend_app), os.environ.get("STRICT_AWS"))
    )
    lock = threading.Lock()

    def serial(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        with lock:
            # Consume the response inside the lock: the backend work happens here.
            return list(app(environ, start_response))

    # Transactions hold their items while they wait for the lock and run: outside it.
    outer = ContentionMiddleware(serial, os.environ.get("CONTENTION"))
    run_simple("127.0.0.1", port, outer, threaded=True, request_handler=MotoRequestHandler)


def start(env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """This server in a process of its own on a free loopback port; returns it and its endpoint.

    Its own process: in-process, the server and the tests would share one
    GIL, and on two cores the suite would take twice as long.
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.moto_serial", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        env={**os.environ, **(env or {})},
    )
    deadline = time.time() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                raise RuntimeError(f"moto server did not start on port {port}") from None
            time.sleep(0.1)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


if __name__ == "__main__":
    main()
