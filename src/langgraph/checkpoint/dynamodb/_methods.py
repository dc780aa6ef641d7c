"""Saver methods made from sans-I/O operations.

Rule: a public saver method that only runs an operation is not written by
hand. The operation (a generator function taking the saver first, in the
module of its concern) carries the name, parameters and docstring; the
savers declare it in one line each:

    copy_thread = sync_method(_maintain.copy_thread)     # DynamoDBSaver
    acopy_thread = async_method(_maintain.copy_thread)   # AsyncDynamoDBSaver
    copy_thread = blocking(acopy_thread)                 # its sync twin

so the sync method, the async method and the async saver's sync twin
cannot drift apart. Contract methods whose shape LangGraph fixes (``list``
returns an iterator, ``get_delta_channel_history`` takes keywords) stay
written out in the savers, still one line of body each.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from langgraph.checkpoint.dynamodb._ops import Op

__all__ = ["async_method", "blocking", "sync_method"]

P = ParamSpec("P")
R = TypeVar("R")


def _describe(method: Callable[..., Any], op: Callable[..., Any], name: str, doc: str | None) -> None:
    """Give ``method`` the operation's name, docstring and signature (without the saver)."""
    method.__name__ = name
    method.__qualname__ = name
    method.__doc__ = doc if doc is not None else op.__doc__
    method.__module__ = op.__module__
    sig = inspect.signature(op)
    params = list(sig.parameters.values())
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = sig.replace(parameters=[self_param, *params[1:]])  # type: ignore[attr-defined]


def sync_method(
    op: Callable[Concatenate[Any, P], Op[R]], *, name: str | None = None
) -> Callable[Concatenate[Any, P], R]:
    """A blocking saver method that runs ``op`` with the saver's driver (``saver._run``).

    Example:
        >>> class DynamoDBSaver(BaseDynamoDBSaver):  # doctest: +SKIP
        ...     copy_thread = sync_method(_maintain.copy_thread)
    """

    def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        return cast(R, self._run(op(self, *args, **kwargs)))

    _describe(method, op, name or op.__name__, None)
    return method


def async_method(
    op: Callable[Concatenate[Any, P], Op[R]], *, name: str | None = None
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """A coroutine saver method that runs ``op`` with the saver's async driver; named ``a<op>``.

    Example:
        >>> class AsyncDynamoDBSaver(BaseDynamoDBSaver):  # doctest: +SKIP
        ...     acopy_thread = async_method(_maintain.copy_thread)
    """

    async def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        return cast(R, await self._run(op(self, *args, **kwargs)))

    _describe(method, op, name or f"a{op.__name__}", None)
    return method


def blocking(
    async_method: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[Any, P], R]:
    """The sync twin of an async saver method (``aput`` -> ``put``), typed as it is.

    It runs the coroutine on the saver's event loop from another thread (the
    saver's ``_sync``), as the Postgres saver allows. The async method is
    looked up by name at call time, so a subclass's override counts.

    Example:
        >>> class AsyncDynamoDBSaver(BaseDynamoDBSaver):  # doctest: +SKIP
        ...     copy_thread = blocking(acopy_thread)
    """
    async_name = async_method.__name__

    def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        return cast(R, self._sync(getattr(self, async_name)(*args, **kwargs)))

    method.__wrapped__ = async_method  # type: ignore[attr-defined]  # help() and inspect show its parameters
    method.__name__ = async_name[1:]
    method.__qualname__ = f"AsyncDynamoDBSaver.{async_name[1:]}"
    method.__doc__ = (
        f"Sync :meth:`{async_name}`, from a thread other than the saver's event loop.\n\n"
        f"Example:\n    >>> saver.{async_name[1:]}(...)  # doctest: +SKIP\n"
    )
    return method
