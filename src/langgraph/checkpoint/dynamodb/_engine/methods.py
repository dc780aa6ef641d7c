"""Saver methods made from sans-I/O operations.

Rule: a public saver method that only runs an operation is not written by
hand. The operation (a generator function taking the saver first, in the
module of its concern) carries the name, parameters and docstring; the
savers declare it in one line each:

    copy_thread = sync_method(copying.copy_thread)     # DynamoDBSaver
    acopy_thread = async_method(copying.copy_thread)   # AsyncDynamoDBSaver
    copy_thread = blocking(acopy_thread)                 # its sync twin

so the sync method, the async method and the async saver's sync twin
cannot drift apart. Contract methods whose shape LangGraph fixes (``list``
returns an iterator, ``get_delta_channel_history`` takes keywords) stay
written out in the savers, still one line of body each.

A generated method shows what it returns (``PruneResult``, not the
operation's ``Op[PruneResult]``), and the savers' constructors show every
setting with its default (``SettingsSignature``), as a written-out
saver's would in ``help()``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Concatenate, ParamSpec, TypeVar, cast, get_args, get_origin

from langgraph.checkpoint.dynamodb._engine.ops import Op

__all__ = ["SettingsSignature", "async_method", "blocking", "operation_of", "sync_method"]

P = ParamSpec("P")
R = TypeVar("R")


#: ``Op[X]`` as a string annotation (the operation modules postpone annotations).
_OP_ANNOTATION = re.compile(r"\s*Op\[(?P<result>.*)\]\s*", re.DOTALL)


def _result_annotation(annotation: Any) -> Any:
    """What an operation annotated ``Op[X]`` returns once driven: ``X`` (as a string if it was one)."""
    if isinstance(annotation, str):
        match = _OP_ANNOTATION.fullmatch(annotation)
        return match["result"].strip() if match else annotation
    if get_origin(annotation) is Generator:  # Op[X] evaluated: Generator[Request, Any, X]
        return get_args(annotation)[2]
    return annotation


def _describe(method: Callable[..., Any], op: Callable[..., Any], name: str, doc: str | None) -> None:
    """Give ``method`` the operation's name, docstring and signature (without the saver).

    The signature's return annotation is what the method returns (``X`` of the operation's ``Op[X]``).
    """
    method.__name__ = name
    method.__qualname__ = name
    method.__doc__ = doc if doc is not None else op.__doc__
    method.__module__ = op.__module__
    vars(method)["_operation"] = op  # operation_of
    sig = inspect.signature(op)
    params = list(sig.parameters.values())
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[self_param, *params[1:]], return_annotation=_result_annotation(sig.return_annotation)
    )


def operation_of(method: Any) -> Callable[..., Any] | None:
    """The operation a saver method was made from (through a ``blocking`` twin); None for a written one.

    What ``base.unguarded_writers`` reads: a method made from an operation
    is a maintenance verb (copy, prune, delete, a lifecycle job or its step).

    Example:
        >>> def copy_thread(saver, thread_id):
        ...     yield from ()
        >>> operation_of(sync_method(copy_thread)) is copy_thread, operation_of(len)
        (True, None)
    """
    while method is not None:
        op = getattr(method, "_operation", None)
        if op is not None:
            return cast(Callable[..., Any], op)
        method = getattr(method, "__wrapped__", None)
    return None


def sync_method(
    op: Callable[Concatenate[Any, P], Op[R]], *, name: str | None = None
) -> Callable[Concatenate[Any, P], R]:
    """A blocking saver method that runs ``op`` with the saver's driver (``saver._run``).

    Example:
        >>> class DynamoDBSaver(BaseDynamoDBSaver):  # doctest: +SKIP
        ...     copy_thread = sync_method(copying.copy_thread)
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
        ...     acopy_thread = async_method(copying.copy_thread)
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
    # The async method's summary line first, so that help() and a method
    # listing say what the twin does, then how it runs.
    summary = inspect.cleandoc(async_method.__doc__ or "").partition("\n")[0]
    method.__doc__ = (
        (f"{summary}\n\n" if summary else "")
        + f"Sync :meth:`{async_name}`, from a thread other than the saver's event loop.\n\n"
        + f"Example:\n    >>> saver.{async_name[1:]}(...)  # doctest: +SKIP\n"
    )
    return method


class SettingsSignature:
    """A saver's constructor signature as ``help()`` and ``inspect.signature(saver_type)`` show it.

    The savers' ``__init__`` take their own options (clients, session, ...)
    and pass ``**settings: Unpack[SaverSettings]`` on to ``settings_init``
    (``BaseDynamoDBSaver.__init__``), the one place the settings and their
    defaults are declared; typed callers are checked against that
    ``TypedDict``. As the class's ``__signature__``, this spells the
    settings out: ``settings_init``'s keyword-only parameters, with their
    defaults, then the saver's own, in place of ``**settings``. Calls
    are unaffected (Python never reads ``__signature__``). A subclass with
    an ``__init__`` of its own gets its own signature, as usual.

    Example:
        >>> class DynamoDBSaver(BaseDynamoDBSaver):  # doctest: +SKIP
        ...     __signature__ = SettingsSignature(BaseDynamoDBSaver.__init__)
    """

    def __init__(self, settings_init: Callable[..., Any]) -> None:
        self._settings_init = settings_init
        self._init: Any = None
        self._signature: inspect.Signature | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        self._init = owner.__dict__.get("__init__")

    def __get__(self, instance: object, owner: type | None = None) -> inspect.Signature | None:
        owner = type(instance) if owner is None else owner
        if self._init is None or getattr(owner, "__init__", None) is not self._init:
            return None  # inspect falls back to the subclass's own __init__
        if self._signature is None:
            self._signature = self._build()
        return self._signature

    def _build(self) -> inspect.Signature:
        keyword_only = inspect.Parameter.KEYWORD_ONLY
        own = list(inspect.signature(self._init).parameters.values())[1:]  # without self
        settings = [
            p for p in inspect.signature(self._settings_init).parameters.values() if p.kind is keyword_only
        ]
        if any(p.kind is not keyword_only for p in own if p.kind is not inspect.Parameter.VAR_KEYWORD):
            raise TypeError("SettingsSignature: the saver's own parameters must be keyword-only")
        extras = [p for p in own if p.kind is keyword_only]
        return inspect.Signature([*settings, *extras])
