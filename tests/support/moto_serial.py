"""moto's server with one request at a time in its backends.

DynamoDB applies each write atomically, conditional writes included; moto's
threaded server does not (two concurrent conditional puts can both pass).
The tests of locks and races need the real behaviour, so every request runs
under one lock here, while connections are still served by many threads.

Inside the lock, tests/support/strict_aws.py checks every DynamoDB and S3
request against AWS's documented limits (``STRICT_AWS``: ``enforce``, the
default, answers as AWS would; ``record`` only records; ``off``).

    python -m tests.support.moto_serial PORT
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.server import MotoRequestHandler  # type: ignore[attr-defined]
from werkzeug.serving import run_simple

from tests.support.strict_aws import StrictAWSMiddleware


def main() -> None:
    port = int(sys.argv[1])
    os.environ.setdefault("MOTO_PORT", str(port))
    # The checks read moto's backend (key schemas, the item an update starts from):
    # they run inside the lock, like the request itself.
    app = StrictAWSMiddleware(DomainDispatcherApplication(create_backend_app), os.environ.get("STRICT_AWS"))
    lock = threading.Lock()

    def serial(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        with lock:
            # Consume the response inside the lock: the backend work happens here.
            return list(app(environ, start_response))

    run_simple("127.0.0.1", port, serial, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
