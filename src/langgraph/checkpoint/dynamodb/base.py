"""``BaseDynamoDBSaver``: everything the sync and async savers share, with no I/O.

The logic lives in two layers, each a set of sans-I/O operations (see
``_ops``): ``_core.CoreSaver`` (ids, payload placement, the base contract)
``_extended.ExtendedSaver`` (delta history, copy, prune,
delete_for_runs) and ``_lifecycle.LifecycleSaver`` (thread heads, TTL
reaping, the pruner, the orphan sweeper). ``DynamoDBSaver`` and ``AsyncDynamoDBSaver`` only run them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from langgraph.checkpoint.dynamodb._extended import PruneResult
from langgraph.checkpoint.dynamodb._items import item_size
from langgraph.checkpoint.dynamodb._lifecycle import LifecycleSaver

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
