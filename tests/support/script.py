"""Run a saver's sans-I/O operations against scripted responses: no client, no server.

As h11 and httpcore test their protocol logic, the unit tier feeds an
operation the responses it would get and checks the requests it makes. A
:class:`Script` takes the place of a saver's driver (``_drivers``,
see ``_engine/drivers.py``), so tests call the saver's public methods and still see
every request, in the order the operation issued it (a ``Gather`` is
answered call by call, in order: deterministic, unlike a thread pool).

Responses: queued per method with :meth:`Script.when` (a dict, an
exception to raise, or a function of the call), else the default: an empty
answer (``{}``; ``{"Items": []}`` for a query).

Example:
    ```python
    saver, script = scripted_saver("sync")
    script.when("query", {"Items": [item]})
    saver.get_tuple(config)
    assert script.methods() == ["dynamodb.query"]
    ```
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver
from langgraph.checkpoint.dynamodb._engine.aws import translate_errors
from langgraph.checkpoint.dynamodb._engine.drivers import AsyncDriver, SyncDriver
from langgraph.checkpoint.dynamodb._engine.ops import Call, Gather, Sleep

Response = dict[str, Any] | BaseException | Callable[[Call], Any]


def _default(call: Call) -> dict[str, Any]:
    return {"Items": []} if call.method in ("query", "scan") else {}


class Script:
    """The script a saver's driver answers from; it records every request (and ``Sleep``)."""

    def __init__(self) -> None:
        #: Every Call and Sleep, in the order the operation yielded them.
        self.log: list[Call | Sleep] = []
        #: Index in ``log`` where each Gather started, with its size.
        self.gathers: list[tuple[int, int]] = []
        self._queued: dict[str, deque[Response]] = {}

    # ------------------------------------------------------------- script

    def when(self, method: str, *responses: Response) -> Script:
        """Answer the next calls of ``method`` (``"query"``, ``"s3.put_object"``...) with ``responses``."""
        self._queued.setdefault(method.split(".")[-1], deque()).extend(responses)
        return self

    def answer(self, call: Call) -> Any:
        self.log.append(call)
        queue = self._queued.get(call.method)
        reply: Response = queue.popleft() if queue else _default
        if isinstance(reply, BaseException):
            raise reply
        return reply(call) if callable(reply) else reply

    def assert_done(self) -> None:
        """Every queued response was used."""
        left = {m: len(q) for m, q in self._queued.items() if q}
        assert not left, f"scripted responses never asked for: {left}"

    # ------------------------------------------------------------ queries

    def calls(self, method: str | None = None) -> list[Call]:
        return [c for c in self.log if isinstance(c, Call) and (method is None or c.method == method)]

    def methods(self) -> list[str]:
        """The requests made, as ``service.method``, and ``sleep`` for a pause."""
        return [f"{c.service}.{c.method}" if isinstance(c, Call) else "sleep" for c in self.log]

    def sleeps(self) -> list[float]:
        return [c.seconds for c in self.log if isinstance(c, Sleep)]

    def reset(self) -> None:
        self.log.clear()
        self.gathers.clear()

    # ------------------------------------------------------------- driving

    def step(self, req: Any) -> Any:
        """Answer one request (what a real driver's ``step`` sends to the clients)."""
        if isinstance(req, Call):
            return self.answer(req)
        if isinstance(req, Gather):
            self.gathers.append((len(self.log), len(req.calls)))
            out: list[Any] = []
            for call in req.calls:
                try:
                    out.append(self.answer(call))
                except Exception as exc:
                    if not req.return_exceptions:
                        raise
                    out.append(exc)
            return out
        if isinstance(req, Sleep):
            self.log.append(req)
            return None
        raise TypeError(f"unexpected request {req!r}")


class _SyncScripted(SyncDriver):
    """The real sync driver loop (error translation included), answering from a script."""

    def __init__(self, holder: Any, script: Script) -> None:
        super().__init__(holder, translate=translate_errors)
        self.script = script

    def step(self, req: Any) -> Any:
        return self.script.step(req)


class _AsyncScripted(AsyncDriver):
    """The real async driver loop, answering from a script."""

    def __init__(self, holder: Any, script: Script) -> None:
        super().__init__(holder, translate=translate_errors)
        self.script = script

    async def step(self, req: Any) -> Any:
        return self.script.step(req)


def scripted_saver(mode: str, **kwargs: Any) -> tuple[Any, Script]:
    """A saver of ``mode`` (``"sync"``/``"async"``) whose requests go to a script.

    ``kwargs`` are constructor arguments (default table ``"tbl"``); the
    clients are placeholders that must never be called.
    """
    kwargs.setdefault("table_name", "tbl")
    never = object()
    clients: dict[str, Any] = {
        "dynamodb_client": never,
        "s3_client": never if kwargs.get("bucket_name") else None,
    }
    script = Script()
    if mode == "sync":
        saver: Any = DynamoDBSaver(**clients, **kwargs)
        saver.driver = _SyncScripted(saver, script)
    else:
        saver = AsyncDynamoDBSaver(**clients, **kwargs)
        saver.driver = _AsyncScripted(saver, script)
    return saver, script


def call(saver: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``method`` on a sync saver, or its ``a``-prefixed twin on an async one (``list`` collected)."""
    if isinstance(saver, DynamoDBSaver):
        result = getattr(saver, method)(*args, **kwargs)
        return list(result) if method == "list" else result

    async def main() -> Any:
        if method == "list":
            return [t async for t in saver.alist(*args, **kwargs)]
        return await getattr(saver, "a" + method)(*args, **kwargs)

    return asyncio.run(main())
