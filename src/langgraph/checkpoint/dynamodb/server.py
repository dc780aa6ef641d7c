"""A checkpointer factory for the LangGraph API server (``langgraph dev`` and its images).

The server takes a custom checkpointer from ``langgraph.json``: an import
path to an async context manager that yields a ``BaseCheckpointSaver``. It
enters the context once per event-loop thread and leaves it on shutdown,
which closes the saver's clients. This module is that factory, configured
from the same ``LANGGRAPH_DYNAMODB_*`` environment variables as
``AsyncDynamoDBSaver.from_env()`` (see ``langgraph.checkpoint.dynamodb.config``):

.. code-block:: json

    {
      "dependencies": ["."],
      "graphs": {"agent": "./graph.py:graph"},
      "checkpointer": {"path": "langgraph.checkpoint.dynamodb.server.checkpointer"}
    }

The path is written with a dot before ``checkpointer``, not a colon:
langgraph-api 0.16 loads a path without ``/`` or ``.py:`` by splitting it at
its last dot, so ``module:attr`` (as its schema's docstring suggests) fails
with "Could not find checkpointer". A file path (``./checkpointer.py:attr``)
also works, for a factory of your own.

``setup()`` (creating the table and bucket) runs only when
``LANGGRAPH_DYNAMODB_SETUP`` is ``1``/``true``/``yes``: against AWS the table
and bucket come from the CDK construct, with their policies, alarms and
maintenance functions, and a server must not quietly create bare ones under
a misspelt name. Set it for a local endpoint (``langgraph-dynamodb local``)
or a throwaway test table. Either way the factory then reads the table once,
so a wrong name, region or endpoint stops the server at start-up with an
error naming the table.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

from langgraph.checkpoint.dynamodb.aio import AsyncDynamoDBSaver
from langgraph.checkpoint.dynamodb.config import ENV_SETUP, env_flag

__all__ = ["checkpointer"]


#: The thread id of the start-up read (never written).
_PROBE_THREAD = "langgraph-dynamodb-server-start-up-check"


def _setup_requested(env: Mapping[str, str]) -> bool:
    # A typo ("ture") must not silently mean either: the server would start
    # against a table that does not exist, or create one the user did not ask for.
    return env_flag(env, ENV_SETUP)


@contextlib.asynccontextmanager
async def checkpointer(
    env: Mapping[str, str] | None = None, **options: Any
) -> AsyncIterator[AsyncDynamoDBSaver]:
    """An ``AsyncDynamoDBSaver`` on the store the environment names, for ``langgraph.json``.

    Args:
        env: the variables to read (default ``os.environ``): the
            ``LANGGRAPH_DYNAMODB_*`` set of ``AsyncDynamoDBSaver.from_env``,
            plus ``LANGGRAPH_DYNAMODB_SETUP``.
        **options: saver keyword arguments that override the environment
            (``serde=``, ``compression=``...), for a factory of your own
            that wraps this one.

    Yields:
        The saver, with its clients open; they are closed when the server
        leaves the context (shutdown).

    Raises:
        ValueError: ``LANGGRAPH_DYNAMODB_TABLE`` is not set, or a variable is
            malformed (the message names it).
        StoreNotFoundError: the table does not exist where the saver looked
            (and ``LANGGRAPH_DYNAMODB_SETUP`` is off): the server does not start.

    Example:
        In ``langgraph.json`` (note the dot before ``checkpointer``)::

            {"checkpointer": {"path": "langgraph.checkpoint.dynamodb.server.checkpointer"}}

        Or in your own code::

            from langgraph.checkpoint.dynamodb.server import checkpointer

            async with checkpointer() as saver:
                graph = builder.compile(checkpointer=saver)
    """
    env = os.environ if env is None else env
    setup = _setup_requested(env)
    async with AsyncDynamoDBSaver.from_env(env, **options) as saver:
        if setup:
            await saver.setup()
        # One read (a Query for a thread that does not exist) so that a wrong
        # table name, region or endpoint stops the server at start-up with a
        # StoreNotFoundError naming the table, instead of failing every run.
        await saver.aget_tuple({"configurable": {"thread_id": _PROBE_THREAD, "checkpoint_ns": ""}})
        yield saver
