"""``PortableSerializer``: move LangGraph state without understanding it.

The CLI's ``export``/``import`` read and write through it (see ``transfer``):
msgpack structure is decoded, but every ext record (LangGraph's form of a
typed object) stays an opaque :class:`OpaqueExt` and is written back byte
for byte, so no application module is needed and nothing a payload names is
imported or called; a record naming anything but a data class (or a type
whose package is not installed here) is refused.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import sys
from collections.abc import Iterable
from typing import Any, Final

import ormsgpack
from langgraph.checkpoint.serde import jsonplus
from langgraph.checkpoint.serde._msgpack import SAFE_MSGPACK_TYPES

__all__ = ["PORTABLE_TYPES", "OpaqueExt", "OpaquePayload", "PortableSerializer"]

#: Payload types an export file may hold: what LangGraph's serializers write,
#: without encryption and never pickle (loading one would run code).
PORTABLE_TYPES: Final = frozenset({"null", "bytes", "bytearray", "msgpack", "json"})


@dataclasses.dataclass(frozen=True, slots=True)
class OpaqueExt:
    """A msgpack ext record (a typed object) kept as stored: never imported, never called."""

    code: int
    data: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class OpaquePayload:
    """A whole payload of a type kept as stored (legacy ``json`` payloads)."""

    type: str
    data: bytes


# LangGraph's ext codes that name a Python object as ``(module, name, ...)``, and
# the one that wraps a nested value (a DeltaChannel snapshot).
_NAMED_CODES: Final = frozenset(range(jsonplus.EXT_CONSTRUCTOR_SINGLE_ARG, jsonplus.EXT_PYDANTIC_V2 + 1))


def _installed(top: str) -> bool:
    """Whether a top-level module can be imported here, found without running any of it."""
    if top in sys.stdlib_module_names or top in sys.modules:
        return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return True  # cannot tell: judged as present, so refused


def _judge(code: int, module: str, name: str, allowed: frozenset[tuple[str, str]]) -> None:
    """Refuse a record naming anything but a data class (raises ``ValueError``).

    A positive rule, the savers' own (``serde.loaded_data_class``): LangGraph's
    safe types, the caller's allowlist, or a data class of a module this process
    has imported. What this process could not judge without importing it is
    refused if the module is installed here (so it could exist, as a re-export
    such as ``dateutil.zoneinfo.rebuild.check_call`` does, wherever the file is
    read), and kept opaque only if its package is not installed at all: an
    application's type, which the application's own (strict) serializer judges
    when it reads the value.
    """
    if (module, name) in SAFE_MSGPACK_TYPES or (module, name) in allowed:
        return
    from langgraph.checkpoint.dynamodb.serde import RefusedTypeError, loaded_data_class

    if module in sys.modules:
        loaded_data_class(code, module, name)
        return
    if _installed(module.partition(".")[0]):
        raise RefusedTypeError(
            f"Refused {module}.{name}: module {module!r} is installed here but not imported, and "
            "whether it names a data class cannot be told without importing it. If you trust this "
            f"type, allow it by name (langgraph-dynamodb export/import --allow-type {module}:{name}, "
            f"or PortableSerializer(allowed_types=[({module!r}, {name!r})]))."
        )


def _checked_ext(
    code: int, data: bytes, *, refused: list[str], allowed: frozenset[tuple[str, str]]
) -> OpaqueExt:
    """Keep an ext record opaque, but refuse one that names anything but a data class.

    A tool moving state cannot revive an application's types (their modules
    are not loaded here), but it need not store what no application writes:
    a record naming a function or a non-data class (``os.system``,
    ``subprocess.Popen``, a re-export of them) is refused by :func:`_judge`.
    Nested records are checked the same way.
    """
    if code in _NAMED_CODES or code == jsonplus.EXT_DELTA_SNAPSHOT:
        hook = functools.partial(_checked_ext, refused=refused, allowed=allowed)
        try:
            inner = ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
        except ormsgpack.MsgpackDecodeError as exc:
            refused.append(f"malformed ext record {code}: {exc}")
            raise
        if code in _NAMED_CODES:
            if not (
                isinstance(inner, (list, tuple))
                and len(inner) >= 2
                and all(isinstance(x, str) for x in inner[:2])
            ):
                refused.append(f"malformed ext record {code}: no (module, name)")
                raise ValueError(refused[-1])
            try:
                _judge(code, inner[0], inner[1], allowed)
            except ValueError as exc:
                refused.append(str(exc))
                raise
    elif code != jsonplus.EXT_NUMPY_ARRAY:
        refused.append(f"unknown msgpack ext record {code}: written by a newer LangGraph, or forged")
        raise ValueError(refused[-1])
    return OpaqueExt(code, data)


def _opaque_default(obj: Any) -> Any:
    if isinstance(obj, OpaqueExt):
        return ormsgpack.Ext(obj.code, obj.data)
    return jsonplus._msgpack_default(obj)


class PortableSerializer:
    """A serializer that moves state without understanding it.

    It decodes msgpack structure (dicts, lists, strings, numbers, bytes) but
    keeps every ext record, the form LangGraph gives a typed object (a
    pydantic model, a dataclass, an enum, a LangChain message), as an
    :class:`OpaqueExt`, and writes it back byte for byte. So a tool can
    export and import the state of any application, without the
    application's modules and without ever importing or calling what a
    payload names. One judgement it does make, by a positive rule: a record
    must name one of LangGraph's safe types, a type in ``allowed_types``, a
    data class of a module this process has imported, or a type whose package
    is not installed here (an application's own); anything else
    (``os.system``, a third-party re-export of ``subprocess.check_call``, a
    class of an installed module it would have to import to judge) is refused.
    Legacy ``json`` payloads stay whole (:class:`OpaquePayload`).

    Args:
        allowed_types: ``(module, name)`` pairs to keep without judging them.
    Ordinary Python values are written as LangGraph's ``JsonPlusSerializer`` does.

    The ``langgraph-dynamodb export``/``import`` commands read and write
    with it; an application exporting its own threads can keep its saver's
    serializer, which revives its types.

    Example:
        >>> s = PortableSerializer()
        >>> model = ormsgpack.packb(("app.models", "Doc", {"title": "t"}, "model_validate_json"))
        >>> typed = ("msgpack", ormsgpack.packb({"doc": ormsgpack.Ext(5, model)}))  # a pydantic model
        >>> value = s.loads_typed(typed)  # app.models is never imported
        >>> type(value["doc"]).__name__, s.dumps_typed(value) == typed
        ('OpaqueExt', True)
    """

    def __init__(self, *, allowed_types: Iterable[tuple[str, str]] = ()) -> None:
        self.allowed_types: frozenset[tuple[str, str]] = frozenset((str(m), str(n)) for m, n in allowed_types)

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if isinstance(obj, OpaquePayload):
            return obj.type, obj.data
        if obj is None:
            return "null", b""
        if isinstance(obj, bytes):
            return "bytes", obj
        if isinstance(obj, bytearray):
            return "bytearray", bytes(obj)
        return "msgpack", ormsgpack.packb(obj, default=_opaque_default, option=jsonplus._option)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_, raw = data
        if type_ == "null":
            return None
        if type_ == "bytes":
            return bytes(raw)
        if type_ == "bytearray":
            return bytearray(raw)
        if type_ == "msgpack":
            refused: list[str] = []
            hook = functools.partial(_checked_ext, refused=refused, allowed=self.allowed_types)
            try:
                value = ormsgpack.unpackb(raw, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
            except ormsgpack.MsgpackDecodeError:
                if not refused:
                    raise
            if refused:  # ormsgpack replaces an ext_hook's error by "ext_hook failed": say why
                raise ValueError(refused[0])
            return value
        if type_ == "json":
            return OpaquePayload(type_, bytes(raw))
        raise ValueError(f"payload type {type_!r} is not portable (only {sorted(PORTABLE_TYPES)})")

    # SerializerProtocol's untyped pair, for completeness.
    def dumps(self, obj: Any) -> bytes:
        return self.dumps_typed(obj)[1]

    def loads(self, data: bytes) -> Any:
        return self.loads_typed(("msgpack", data))
