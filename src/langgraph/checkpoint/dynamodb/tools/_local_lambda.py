"""Lambda ``Invoke`` for handlers a user names, served beside the local endpoint's moto.

moto can create functions but not run them (it needs Docker), so a handler
that continues itself (``runs.send_continuation``: an asynchronous
``Invoke`` of its own function) met ``ResourceNotFoundException`` locally.
``LambdaInvokeApp`` wraps moto's WSGI application: an ``Invoke`` of a
function named here runs its handler (``module:function``) in this process,
with a Lambda-like context whose deadline is the function's timeout;
everything else goes to moto unchanged.

``InvocationType``: ``RequestResponse`` (the default) answers 200 with the
handler's JSON result, or ``X-Amz-Function-Error: Unhandled`` and
``{"errorMessage", "errorType"}`` if it raised; ``Event`` answers 202 at once
and runs the handler in a thread of its own (as Lambda queues it), its error
printed on stderr; ``DryRun`` answers 204.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote

__all__ = ["LambdaContext", "LambdaInvokeApp", "load_handler", "parse_function_specs"]

#: ``POST /2015-03-31/functions/{FunctionName}/invocations``, the Invoke API's path
#: (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html); the name may be an ARN.
_INVOKE_PATH = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations$")
#: Lambda's largest synchronous payload, request and response (6 MB: API_Invoke.html).
MAX_PAYLOAD_BYTES = 6 * 1024 * 1024


def parse_function_specs(specs: Iterable[str]) -> dict[str, str]:
    """``NAME=module:function`` options to ``{NAME: "module:function"}``.

    Example:
        >>> parse_function_specs(["agent=app:handler"])
        {'agent': 'app:handler'}
    """
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, target = spec.partition("=")
        module, colon, attr = target.partition(":")
        if not sep or not name or not colon or not module or not attr:
            raise ValueError(f"--function {spec!r}: expected NAME=module:function (e.g. agent=app:handler)")
        out[name] = target
    return out


def load_handler(target: str) -> Callable[[Any, Any], Any]:
    """Import ``module:function`` (the current directory first on ``sys.path``, as Lambda's task root)."""
    module, _, attr = target.partition(":")
    if "" not in sys.path:
        sys.path.insert(0, "")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{target} is not callable")
    return obj  # type: ignore[no-any-return]


class LambdaContext:
    """What a handler reads from Lambda's context object, with a real deadline.

    ``get_remaining_time_in_millis()`` counts down from the function's timeout,
    so ``runs.run_with_deadline`` drains before it as it would on Lambda.
    """

    def __init__(self, function_name: str, timeout_s: float, region: str, memory_mb: int = 1024) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:{region}:123456789012:function:{function_name}"
        self.memory_limit_in_mb = memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = f"local/{self.aws_request_id}"
        self.deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


def _function_name(raw: str) -> str:
    """The function's name from the path: a name, a partial or a full ARN, with an optional qualifier."""
    name = unquote(raw)
    if name.startswith("arn:"):
        parts = name.split(":")
        return parts[6] if len(parts) > 6 else name
    return name.split(":")[0]


class LambdaInvokeApp:
    """A WSGI application: ``Invoke`` of the named functions runs here, the rest goes to ``app``."""

    def __init__(
        self,
        app: Callable[..., Any],
        functions: Mapping[str, str],
        *,
        timeout_s: float = 900.0,
        region: str = "us-east-1",
    ) -> None:
        self.app = app
        self.functions = dict(functions)
        self.timeout_s = timeout_s
        self.region = region
        self._handlers: dict[str, Callable[[Any, Any], Any]] = {}
        self._lock = threading.Lock()

    def handler(self, name: str) -> Callable[[Any, Any], Any]:
        """The handler of ``name``, imported on first use (after the endpoint's environment is set)."""
        with self._lock:
            if name not in self._handlers:
                self._handlers[name] = load_handler(self.functions[name])
            return self._handlers[name]

    def invoke(self, name: str, event: Any) -> Any:
        """Run ``name``'s handler on ``event`` with a fresh context; returns what it returns."""
        return self.handler(name)(event, LambdaContext(name, self.timeout_s, self.region))

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        match = _INVOKE_PATH.match(environ.get("PATH_INFO", ""))
        name = _function_name(match["name"]) if match else ""
        if environ.get("REQUEST_METHOD") != "POST" or name not in self.functions:
            return self.app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        if length > MAX_PAYLOAD_BYTES:
            return _reply(
                start_response, "413 Request Entity Too Large", {"Type": "User", "message": "payload"}
            )
        body = environ["wsgi.input"].read(length) if length else b""
        try:
            event = json.loads(body) if body else {}
        except ValueError:
            return _reply(
                start_response, "400 Bad Request", {"Type": "User", "message": "payload is not JSON"}
            )
        kind = environ.get("HTTP_X_AMZ_INVOCATION_TYPE", "RequestResponse")
        if kind == "DryRun":
            return _reply(start_response, "204 No Content", None)
        if kind == "Event":
            threading.Thread(target=self._run_event, args=(name, event), daemon=True).start()
            return _reply(start_response, "202 Accepted", None)
        try:
            result = self.invoke(name, event)
        except Exception as exc:
            error = {"errorMessage": str(exc), "errorType": type(exc).__name__}
            return _reply(start_response, "200 OK", error, {"X-Amz-Function-Error": "Unhandled"})
        return _reply(start_response, "200 OK", result)

    def _run_event(self, name: str, event: Any) -> None:
        try:
            self.invoke(name, event)
        except Exception:  # Lambda logs an asynchronous invocation's error; so do we
            sys.stderr.write(f"local Lambda {name}: the invocation raised\n{traceback.format_exc()}")


def _reply(
    start_response: Callable[..., Any], status: str, body: Any, headers: Mapping[str, str] | None = None
) -> list[bytes]:
    data = b"" if body is None else json.dumps(body, default=str).encode()
    start_response(
        status,
        [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(data))),
            ("X-Amz-Executed-Version", "$LATEST"),
            *(headers or {}).items(),
        ],
    )
    return [data]
