"""``BaseDynamoDBSaver``: everything the sync and async savers share, with no I/O.

The logic lives in two layers, each a set of sans-I/O operations (see
``_ops``): ``_core.CoreSaver`` (ids, payload placement, the base contract)
``_extended.ExtendedSaver`` (delta history, copy, prune,
delete_for_runs) and ``_lifecycle.LifecycleSaver`` (thread heads, TTL
reaping, the pruner, the orphan sweeper). ``DynamoDBSaver`` and ``AsyncDynamoDBSaver`` only run them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Self, cast

from langgraph.checkpoint.dynamodb._extended import PruneResult
from langgraph.checkpoint.dynamodb._items import item_size
from langgraph.checkpoint.dynamodb._lifecycle import LifecycleSaver
from langgraph.checkpoint.dynamodb._ops import Call, Op

__all__ = ["BaseDynamoDBSaver", "PruneResult"]

# The CLI sizes items with this name; it moves to ``_items.item_size`` there.
_item_size = item_size


class BaseDynamoDBSaver(LifecycleSaver):
    """Shared configuration and logic of the sync and async DynamoDB savers.

    Not used directly: use :class:`~langgraph.checkpoint.dynamodb.DynamoDBSaver`
    or :class:`~langgraph.checkpoint.dynamodb.AsyncDynamoDBSaver`.
    """

    #: Service name (``"dynamodb"``, ``"s3"``) -> client; set by the savers.
    _clients: dict[str, Any]

    @property
    def clients(self) -> Mapping[str, Any]:
        """The saver's clients by service, ``"dynamodb"`` and ``"s3"`` (read-only view).

        A client is ``None`` until there is one: no bucket means no S3
        client, and the async saver opens its clients on first use (or on
        entering it). The view follows the saver: it shows clients opened
        or closed later.

        Example:
            ```python
            saver = DynamoDBSaver(table_name="checkpoints")
            saver.clients["dynamodb"].describe_table(TableName=saver.table_name)
            ```
        """
        return MappingProxyType(self._clients)

    def load_payload(self, typed: tuple[str, bytes], *, where: str) -> Any:
        """A value from its serde form ``(type, bytes)``, checked as every stored payload is.

        For values kept outside checkpoints (the lock's stored results): the
        same policy as a checkpoint read (strict msgpack, ``max_payload_size``,
        no plaintext where the saver encrypts), so a forged item fails with
        ``CorruptPayloadError`` naming ``where``.

        Example:
            ```python
            typed = saver.serde.dumps_typed({"ok": True})
            assert saver.load_payload(typed, where="my record") == {"ok": True}
            ```
        """
        return self._unpack(self.codec.pack(typed), where)

    def with_write_guard(self, guard: Callable[[Call], Op[Any]], *, label: str = "Guarded") -> Self:
        """A copy of this saver whose checkpoint and pending-writes writes go through ``guard``.

        ``put`` and ``put_writes`` each land with one DynamoDB write;
        ``guard(call)`` is the operation (see ``_ops``) that sends it in the
        copy, e.g. as a ``TransactWriteItems`` that also checks a lease
        (``lock.ThreadLease.bind``). Guarding a guarded copy replaces its
        guard. The copy shares this saver's clients, driver (thread pool)
        and caches, and closing it closes none of them. Its type is a
        subclass of the saver's, named ``<label><saver type>`` so that a
        repr says what guards it.

        Example:
            ```python
            def audited(call):
                log.info("write %s", call.method)
                return (yield call)

            graph.copy({"checkpointer": saver.with_write_guard(audited)}).invoke(None, config)
            ```
        """
        base: type = getattr(type(self), "_unguarded", type(self))
        cls = _GUARDED_TYPES.get((base, label))
        if cls is None:
            # A direct subclass with no slots of its own: an instance of the
            # saver's type can switch to it (a mixin base would change the layout).
            ns: dict[str, Any] = {"__slots__": (), "_write_item": _guarded_write_item, "_unguarded": base}
            cls = _GUARDED_TYPES.setdefault((base, label), type(f"{label}{base.__name__}", (base,), ns))
        guarded: Any = copy.copy(self)
        guarded.__class__ = cls
        guarded._write_guard = guard
        # The copy borrows the saver's clients: closing it must not close them.
        for name, empty in (("_owned", []), ("_owned_names", set()), ("_stack", None)):
            if hasattr(guarded, name):
                setattr(guarded, name, empty)
        return cast(Self, guarded)


def _guarded_write_item(self: Any, call: Call) -> Op[Any]:
    """``_write_item`` of a guarded copy (:meth:`BaseDynamoDBSaver.with_write_guard`)."""
    return (yield from self._write_guard(call))


_GUARDED_TYPES: dict[tuple[type, str], type] = {}
