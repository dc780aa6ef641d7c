"""The savers' default serializer: a graph's own state types round-trip, stored names call nothing.

LangGraph's ``JsonPlusSerializer`` writes a value it cannot express in plain
msgpack as an *ext* record naming a Python object by ``(module, name)`` plus the
data to call it with. Reading one back is the dangerous half: the permissive
mode imports that module and calls that name with that data, so anyone who can
write to the table or the bucket could name ``os.system``. LangGraph's strict
mode closes that hole with an allowlist, but LangGraph 1.2.24 only hands a
compiled graph's types to the checkpointer when ``LANGGRAPH_STRICT_MSGPACK``
is set, so with the strict default a user's pydantic models, dataclasses and
enums came back as dicts and strings.

:class:`StateTypesSerializer` decodes the same records with a narrower rule.
A stored ``(module, name)`` is revived only when

* it is one of LangGraph's own safe types (``SAFE_MSGPACK_TYPES``: datetimes,
  UUIDs, LangChain messages, ``Send``, ``Interrupt``...) or in the explicit
  allowlist (``allowed_msgpack_modules``, ``with_allowlist``): revived exactly
  as LangGraph's strict serializer would; or
* ``module`` is **already imported** in this process (the payload never makes
  the reader import anything), ``name`` is defined there, and it is a *data
  class*: a pydantic (v2 or v1) model, which covers LangChain serializables, a
  dataclass, an ``Enum``, a ``NamedTuple`` or a pydantic secret, and the ext
  record is the one LangGraph writes for that kind. It is then rebuilt the way
  LangGraph does: ``cls(**fields)`` (pydantic falls back to ``model_construct``
  / ``construct``), or ``cls(value)`` for enums and secrets.

Everything else (a function, a non-data class, a module not loaded, a mismatch
between record and kind) raises :class:`RefusedTypeError` naming the type and
the fix; a value is never silently handed back in another shape. Nested values
are decoded by the same rule, so a user model inside ``Send``, ``Interrupt`` or
``Command`` round-trips too.

Residual risk, accepted and documented: rebuilding a data class runs that
class's own code (pydantic validators, ``__post_init__``, ``_missing_``) with
stored data, for classes the process has already imported; and names in the
explicit allowlist or LangGraph's safe list are imported by name, which runs
that module's import-time code once.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import sys
from collections.abc import Iterable, Mapping
from typing import Any, Literal, cast

import ormsgpack
from langgraph.checkpoint.serde import _msgpack as lg_msgpack
from langgraph.checkpoint.serde import jsonplus
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from pydantic import BaseModel, SecretBytes, SecretStr

from langgraph.checkpoint.dynamodb.errors import CheckpointStoreError

__all__ = [
    "RefusedTypeError",
    "RevivalError",
    "StateTypesSerializer",
    "UnsafeSerializerError",
    "data_class_kind",
    "default_serde",
    "is_permissive",
    "strict_serde",
]

# The ext codes LangGraph's encoder writes (langgraph/checkpoint/serde/jsonplus.py).
_SINGLE_ARG = jsonplus.EXT_CONSTRUCTOR_SINGLE_ARG  # cls(value): enums, secrets, UUID, Decimal...
_POS_ARGS = jsonplus.EXT_CONSTRUCTOR_POS_ARGS  # cls(*args): Path, timedelta, Send, re.compile
_KW_ARGS = jsonplus.EXT_CONSTRUCTOR_KW_ARGS  # cls(**kw): dataclasses, named tuples
_METHOD = jsonplus.EXT_METHOD_SINGLE_ARG  # cls.method(value): datetime.fromisoformat only
_PYDANTIC_V1 = jsonplus.EXT_PYDANTIC_V1  # cls(**kw), else cls.construct(**kw)
_PYDANTIC_V2 = jsonplus.EXT_PYDANTIC_V2  # cls(**kw), else cls.model_construct(**kw)
_NUMPY = jsonplus.EXT_NUMPY_ARRAY  # no name in it: numpy.frombuffer only
_DELTA = jsonplus.EXT_DELTA_SNAPSHOT  # a wrapper around a nested value

Kind = Literal["pydantic", "pydantic_v1", "dataclass", "namedtuple", "enum", "secret"]

# Which ext record LangGraph's encoder writes for each kind of data class (its
# ``_msgpack_default`` tests ``model_dump`` before ``dict`` before ``_asdict``
# before ``Enum`` before dataclass, so a dataclass that happens to define a
# ``dict`` or ``model_dump`` method is written as a pydantic record). A record
# of any other code naming such a class is a forgery and is refused.
_KINDS_BY_CODE: Mapping[int, frozenset[Kind]] = {
    _SINGLE_ARG: frozenset({"enum", "secret"}),
    _KW_ARGS: frozenset({"dataclass", "namedtuple"}),
    _PYDANTIC_V1: frozenset({"pydantic_v1", "dataclass", "namedtuple"}),
    _PYDANTIC_V2: frozenset({"pydantic", "dataclass", "namedtuple"}),
}
_NAMED_CODES = frozenset({_SINGLE_ARG, _POS_ARGS, _KW_ARGS, _METHOD, _PYDANTIC_V1, _PYDANTIC_V2})

# Decodes the one record that names nothing (numpy arrays) as LangGraph does.
_LG_STRICT_HOOK = jsonplus._create_msgpack_ext_hook(None)


class RevivalError(CheckpointStoreError, ValueError):
    """A stored value names a type that cannot be rebuilt here.

    The saver reports it as ``CorruptPayloadError`` naming the channel and checkpoint,
    with this message (which says what to do) in it.
    """


class RefusedTypeError(RevivalError):
    """A stored value names something this serializer will not call.

    Either it is not a data class (a function such as ``os.system``, a class such as
    ``subprocess.Popen``), or its module is not imported in this process, or the
    stored record does not match its kind. Allowlist it explicitly if you trust it.
    """


def _fix(module: str, name: str) -> str:
    return (
        f"If you trust this type, allowlist it: saver.with_allowlist([({module!r}, {name!r})]) "
        f"or serde=StateTypesSerializer(allowed_msgpack_modules=[({module!r}, {name!r})])."
    )


def data_class_kind(obj: object) -> Kind | None:
    """The data-class kind of ``obj``, or None if it is anything else."""
    if not isinstance(obj, type) or issubclass(obj, BaseException):
        return None
    if issubclass(obj, BaseModel):
        return "pydantic"
    # Only consult pydantic.v1 if something already imported it: importing it
    # here would cost time and warnings for nothing (no v1 model can exist).
    v1 = sys.modules.get("pydantic.v1")
    if v1 is not None:
        if issubclass(obj, v1.BaseModel):
            return "pydantic_v1"
        if issubclass(obj, (v1.SecretStr, v1.SecretBytes)):
            return "secret"
    if issubclass(obj, enum.Enum):
        return "enum"
    if issubclass(obj, tuple) and isinstance(getattr(obj, "_fields", None), tuple):
        return "namedtuple"
    if dataclasses.is_dataclass(obj):
        return "dataclass"
    if issubclass(obj, (SecretStr, SecretBytes)):
        return "secret"
    return None


# (code, module, name) -> the class last accepted for it. A hit still requires the
# module to be loaded and the name to be bound to that very class; it only saves
# the kind checks, about a third of the decoding time of a state of models.
_ACCEPTED: dict[tuple[int, str, str], type] = {}
_ACCEPTED_MAX = 4096


def loaded_data_class(code: int, module: str, name: str) -> type:
    """The data class ``module.name``, found without importing or calling anything."""
    mod = sys.modules.get(module)
    cached = _ACCEPTED.get((code, module, name))
    if cached is not None and mod is not None and getattr(mod, "__dict__", {}).get(name) is cached:
        return cast(type, cached)  # ``is`` narrowed it to the dict lookup's type
    if mod is None:
        raise RefusedTypeError(
            f"Refused to revive {module}.{name}: module {module!r} is not imported in this process, "
            "and a stored value may not make the reader import a module. Import it before reading "
            "(the module that builds your graph usually does). " + _fix(module, name)
        )
    # vars(), not getattr(): a module-level __getattr__ could import or run code.
    obj = getattr(mod, "__dict__", {}).get(name)
    kind = data_class_kind(obj)
    if kind is None or not isinstance(obj, type):
        what = f"not defined in {module}" if obj is None else f"a {type(obj).__name__}"
        raise RefusedTypeError(
            f"Refused to revive {module}.{name} ({what}): only pydantic models, dataclasses, enums, "
            "named tuples and LangChain serializables are rebuilt from stored data. " + _fix(module, name)
        )
    if obj.__module__ != module or obj.__name__ != name:
        # The writer records a class by its own __module__/__name__; an alias
        # (``from elsewhere import X``) is never what it wrote.
        raise RefusedTypeError(
            f"Refused to revive {module}.{name}: it is an alias of {obj.__module__}.{obj.__name__}. "
            + _fix(module, name)
        )
    if kind not in _KINDS_BY_CODE.get(code, frozenset()):
        raise RefusedTypeError(
            f"Refused to revive {module}.{name}: a {kind} is never written as msgpack ext record {code}. "
            + _fix(module, name)
        )
    if len(_ACCEPTED) < _ACCEPTED_MAX:
        _ACCEPTED[(code, module, name)] = obj
    return obj


def _construct(code: int, cls: Any, arg: Any) -> Any:
    """Call ``cls`` with the stored data exactly as LangGraph's ext hook does for ``code``."""
    if code == _SINGLE_ARG:
        return cls(arg)
    if code == _POS_ARGS:
        if cls.__module__ == "langgraph.types" and cls.__name__ == "Send":
            return jsonplus._send_from_args(arg)
        return cls(*arg)
    if code == _KW_ARGS:
        return cls(**arg)
    if code == _PYDANTIC_V1:
        try:
            return cls(**arg)
        except Exception:
            return cls.construct(**arg)
    # _PYDANTIC_V2: a model whose validation now fails (its schema changed)
    # is still rebuilt, unvalidated, as LangGraph does.
    try:
        return cls(**arg)
    except Exception:
        if isinstance(cls, type) and issubclass(cls, BaseModel):
            return cls.model_construct(**arg)
        raise


class _Decoder:
    """One ``loads_typed`` call: the ext hook plus the first refusal it saw.

    ormsgpack replaces an ext hook's exception by a bare ``ValueError('ext_hook
    failed')``; the refusal is kept here so the caller can raise it, message and
    fix intact, instead.
    """

    __slots__ = ("allowlist", "error")

    def __init__(self, allowlist: frozenset[tuple[str, ...]]) -> None:
        self.allowlist = allowlist
        self.error: RevivalError | None = None

    def unpack(self, data: bytes) -> Any:
        return ormsgpack.unpackb(data, ext_hook=self.hook, option=ormsgpack.OPT_NON_STR_KEYS)

    def hook(self, code: int, data: bytes) -> Any:
        try:
            return self._revive(code, data)
        except RevivalError as exc:
            if self.error is None:
                self.error = exc
            raise

    def _revive(self, code: int, data: bytes) -> Any:
        if code == _DELTA:
            return _DeltaSnapshot(self.unpack(data))
        if code == _NUMPY:
            return _LG_STRICT_HOOK(code, data)
        if code not in _NAMED_CODES:
            raise RevivalError(f"unknown msgpack ext record {code}: written by a newer LangGraph, or forged")
        # Nested values (a model inside Send or Interrupt, a datetime inside a
        # model's fields) go through this same hook, never a laxer one.
        tup = self.unpack(data)
        if not (
            isinstance(tup, list | tuple)
            and len(tup) >= 3
            and isinstance(tup[0], str)
            and isinstance(tup[1], str)
        ):
            raise RevivalError(f"malformed msgpack ext record {code}")
        module, name, arg = tup[0], tup[1], tup[2]
        if code == _METHOD:
            method = tup[3] if len(tup) > 3 else None
            if not isinstance(method, str) or (module, name, method) not in lg_msgpack.SAFE_MSGPACK_METHODS:
                raise RefusedTypeError(
                    f"Refused to call {module}.{name}.{method}: not a known constructor method."
                )
            return getattr(getattr(importlib.import_module(module), name), method)(arg)
        if code in (_KW_ARGS, _PYDANTIC_V1, _PYDANTIC_V2) and not isinstance(arg, dict):
            raise RevivalError(
                f"malformed msgpack ext record {code} for {module}.{name}: fields are not a map"
            )
        key = (module, name)
        if key in lg_msgpack.SAFE_MSGPACK_TYPES or key in self.allowlist:
            # LangGraph's vetted list, or named by the user: LangGraph's own semantics.
            cls: Any = getattr(sys.modules.get(module) or importlib.import_module(module), name)
        else:
            cls = loaded_data_class(code, module, name)
        try:
            return _construct(code, cls, arg)
        except Exception as exc:
            # The error's type only: its message (a pydantic ValidationError's) quotes the stored data.
            raise RevivalError(
                f"Cannot rebuild {module}.{name} from its stored data ({type(exc).__name__}); "
                "did its definition change since this checkpoint was written?"
            ) from None  # the cause would carry the data into tracebacks


class StateTypesSerializer(JsonPlusSerializer):
    """``JsonPlusSerializer`` that revives a graph's own data classes, and never calls anything else.

    The savers' default. Writes exactly what ``JsonPlusSerializer`` writes (so
    another LangGraph saver or serializer reads it); reads back pydantic v1/v2
    models, dataclasses, enums, named tuples and LangChain messages and
    serializables whose module this process has already imported, plus
    LangGraph's safe types and anything in ``allowed_msgpack_modules``. A stored
    value naming anything else raises :class:`RefusedTypeError`. No pickle.

    Args:
        allowed_msgpack_modules: extra ``(module, name)`` pairs (or classes) to
            revive the way LangGraph's strict serializer does, imported by name
            if need be. ``with_allowlist`` adds to it.

    Example:
        >>> from http import HTTPStatus
        >>> serde = StateTypesSerializer()
        >>> serde.loads_typed(serde.dumps_typed({"status": HTTPStatus.OK}))
        {'status': <HTTPStatus.OK: 200>}
        >>> import ormsgpack
        >>> forged = ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb(("os", "system", "id"))))
        >>> serde.loads_typed(("msgpack", forged))  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        RefusedTypeError: Refused to revive os.system (a builtin_function_or_method): ...
    """

    def __init__(self, *, allowed_msgpack_modules: Iterable[tuple[str, ...] | type] | None = None) -> None:
        super().__init__(allowed_msgpack_modules=tuple(allowed_msgpack_modules or ()) or None)
        allowlist = self._allowed_msgpack_modules
        self._allowlist: frozenset[tuple[str, ...]] = frozenset(
            allowlist if isinstance(allowlist, set) else ()
        )
        # Anyone calling the hook directly gets this serializer's rule, not LangGraph's;
        # flagged custom so the base class never swaps it for its own.
        self._unpack_ext_hook = _Decoder(self._allowlist).hook
        self._custom_unpack_ext_hook = True

    def with_msgpack_allowlist(
        self, extra_allowlist: Iterable[tuple[str, ...] | type]
    ) -> StateTypesSerializer:
        """A copy that also revives ``extra_allowlist`` (what ``saver.with_allowlist`` calls).

        Example:
            >>> serde = StateTypesSerializer().with_msgpack_allowlist([("decimal", "Context")])
            >>> ("decimal", "Context") in serde.allowlist
            True
        """
        merged = self._allowlist | jsonplus._normalize_module_keys(tuple(extra_allowlist))
        if merged == self._allowlist:
            return self
        return type(self)(allowed_msgpack_modules=merged)

    @property
    def allowlist(self) -> frozenset[tuple[str, ...]]:
        """The explicit ``(module, name)`` pairs revived besides data classes and LangGraph's safe types."""
        return self._allowlist

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Decode ``(type, bytes)`` as ``JsonPlusSerializer`` does, reviving msgpack records by this class's rule.

        Raises:
            RefusedTypeError: a stored record names something that is not a loaded data class.
            RevivalError: a data class's constructor rejected the stored data.
        """
        type_, payload = data
        if type_ != "msgpack":
            return super().loads_typed(data)
        decoder = _Decoder(self._allowlist)
        try:
            return decoder.unpack(payload)
        except ValueError:
            if decoder.error is not None:
                raise decoder.error from None
            raise


def default_serde() -> JsonPlusSerializer:
    """The serializer a saver uses when given none.

    :class:`StateTypesSerializer`, unless ``LANGGRAPH_STRICT_MSGPACK=true``: then
    LangGraph's strict ``JsonPlusSerializer(allowed_msgpack_modules=None)``, to
    which ``graph.compile`` adds exactly the graph's own types (``with_allowlist``),
    for those who want an allowlist rather than a rule.
    """
    if lg_msgpack.STRICT_MSGPACK_ENABLED:
        return JsonPlusSerializer(allowed_msgpack_modules=None)
    return StateTypesSerializer()


class UnsafeSerializerError(CheckpointStoreError, ValueError):
    """A saver was given a serializer that would run code named by stored data.

    ``JsonPlusSerializer(pickle_fallback=True)``, ``allowed_json_modules=True``, or a
    permissive subclass of ``JsonPlusSerializer`` that the saver cannot make strict
    without changing what it does. Pass ``allow_unsafe_serde=True`` to the saver to
    keep it anyway (only where nobody but you can write to the table and bucket).
    """


def is_permissive(serde: object) -> bool:
    """Whether decoding with ``serde`` may import and call what a stored payload names.

    True for a ``JsonPlusSerializer`` in LangGraph's permissive mode (the default
    unless ``LANGGRAPH_STRICT_MSGPACK`` is set, and what ``EncryptedSerializer``
    wraps when given no ``serde=``), with ``pickle_fallback`` or with
    ``allowed_json_modules=True``; for an ``EncryptedSerializer`` around one. A
    serializer of another kind, or one with its own ext hook, is the user's own
    code: it is not judged here.

    Example:
        >>> from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
        >>> is_permissive(JsonPlusSerializer(allowed_msgpack_modules=True))
        True
        >>> is_permissive(StateTypesSerializer())
        False
    """
    if isinstance(serde, EncryptedSerializer):
        return is_permissive(serde.serde)
    if not isinstance(serde, JsonPlusSerializer):
        return False
    if serde.pickle_fallback or serde._allowed_json_modules is True:
        return True
    if isinstance(serde, StateTypesSerializer) or serde._custom_unpack_ext_hook:
        return False
    return serde._allowed_msgpack_modules is True


def strict_serde(serde: SerializerProtocol | None, *, allow_unsafe: bool = False) -> SerializerProtocol:
    """The serializer a saver decodes with: ``serde``, never one that runs what a payload names.

    * ``None``: :func:`default_serde`.
    * A permissive plain ``JsonPlusSerializer`` (also inside an ``EncryptedSerializer``,
      as ``EncryptedSerializer.from_pycryptodome_aes()`` builds it) is replaced by
      :class:`StateTypesSerializer`, which writes the same bytes and reads back the
      same data classes, but calls no function a stored value names.
    * Any other permissive serializer (pickle, a permissive subclass) raises
      :class:`UnsafeSerializerError`.
    * ``allow_unsafe=True`` (the savers' ``allow_unsafe_serde``) returns ``serde``
      unchanged: the explicit, named opt-in.

    Example:
        >>> from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
        >>> from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
        >>> enc = EncryptedSerializer(cipher=None, serde=JsonPlusSerializer(allowed_msgpack_modules=True))
        >>> type(strict_serde(enc).serde).__name__
        'StateTypesSerializer'
    """
    if serde is None:
        return default_serde()
    if allow_unsafe or not is_permissive(serde):
        return serde
    if isinstance(serde, EncryptedSerializer):
        return EncryptedSerializer(serde.cipher, strict_serde(serde.serde))
    if (
        type(serde) is JsonPlusSerializer
        and not serde.pickle_fallback
        and serde._allowed_json_modules is not True
    ):
        return StateTypesSerializer()
    raise UnsafeSerializerError(
        f"{type(serde).__name__} would import and call what a stored payload names "
        "(pickle_fallback, allowed_json_modules=True or a permissive msgpack mode), so whoever can "
        "write to the table or bucket could run code in this process. Use StateTypesSerializer "
        "(the default) or a strict JsonPlusSerializer(allowed_msgpack_modules=[...]); to keep this "
        "serializer anyway, pass allow_unsafe_serde=True to the saver."
    )
