"""StateTypesSerializer on its own: what it revives, how, and what it refuses (no AWS involved)."""

from __future__ import annotations

import copy
import dataclasses
import enum
import typing
from datetime import UTC, datetime
from typing import Any

import numpy as np
import ormsgpack
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.types import Command, Interrupt, Send
from pydantic import BaseModel, SecretStr
from pydantic.v1 import BaseModel as BaseModelV1

from langgraph.checkpoint.dynamodb.serde import RefusedTypeError, RevivalError, StateTypesSerializer
from tests.security._serde_gadgets import Mood  # re-exported under this module's name: an alias


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Perm(enum.Flag):
    R = 1
    W = 2


@dataclasses.dataclass
class Leaf:
    n: int
    color: Color


@dataclasses.dataclass(frozen=True)
class Frozen:
    leaves: list[Leaf]  # msgpack has no tuple: a tuple field comes back a list, with every saver
    when: datetime


class Pair(typing.NamedTuple):
    a: int
    b: Leaf


class Inner(BaseModel):
    x: int


class Model(BaseModel):
    inner: Inner
    color: Color
    secret: SecretStr
    leaf: Leaf | None = None


class V1(BaseModelV1):
    a: int


class Bag(typing.TypedDict):
    models: list[Inner]
    by_key: dict[str, Model]


MODEL = Model(inner=Inner(x=1), color=Color.RED, secret=SecretStr("s"), leaf=Leaf(1, Color.RED))
VALUES: dict[str, Any] = {
    "enum": Color.RED,
    "int enum": Level.HIGH,
    "flag": Perm.R | Perm.W,
    "dataclass": Leaf(2, Color.RED),
    "frozen dataclass": Frozen([Leaf(1, Color.RED)], datetime(2024, 1, 1, tzinfo=UTC)),
    "named tuple": Pair(1, Leaf(3, Color.RED)),
    "pydantic v2": MODEL,
    "pydantic v1": V1(a=1),
    "typed dict of models": Bag(models=[Inner(x=1)], by_key={"k": MODEL}),
    "messages": [
        HumanMessage(content="hi", id="1"),
        AIMessage(content="", tool_calls=[{"name": "t", "args": {"m": 1}, "id": "c"}]),
        ToolMessage(content="ok", tool_call_id="c"),
    ],
    "Send carrying a model": Send("node", MODEL),
    "Interrupt carrying a model": Interrupt(value=Leaf(1, Color.RED), id="i"),
    "set of enums": {Color.RED},
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_round_trip_keeps_types(name: str) -> None:
    serde = StateTypesSerializer()
    value = VALUES[name]
    out = serde.loads_typed(serde.dumps_typed(value))
    assert type(out) is type(value)
    assert out == value
    # What is written is byte for byte what JsonPlusSerializer writes: other savers read it.
    assert serde.dumps_typed(value) == JsonPlusSerializer().dumps_typed(value)


def test_nested_values_revived_by_the_same_rule() -> None:
    serde = StateTypesSerializer()
    cmd = serde.loads_typed(
        serde.dumps_typed(Command(update={"m": MODEL}, goto=Send("n", Leaf(1, Color.RED))))
    )
    assert isinstance(cmd.update["m"], Model) and cmd.update["m"].leaf == Leaf(1, Color.RED)
    assert isinstance(cmd.goto, Send) and isinstance(cmd.goto.arg, Leaf)
    snap = serde.loads_typed(serde.dumps_typed(_DeltaSnapshot([Leaf(1, Color.RED)])))
    assert isinstance(snap, _DeltaSnapshot) and snap.value == [Leaf(1, Color.RED)]
    arr = serde.loads_typed(serde.dumps_typed(np.arange(4)))
    assert isinstance(arr, np.ndarray) and arr.tolist() == [0, 1, 2, 3]


def _ext(code: int, record: Any) -> tuple[str, bytes]:
    return "msgpack", ormsgpack.packb(ormsgpack.Ext(code, ormsgpack.packb(record)))


def test_an_alias_is_refused() -> None:
    """The writer records a class under its own module: the same class under another name is a forgery."""
    assert Mood.CALM  # imported here only to be an alias
    with pytest.raises(RefusedTypeError, match="alias"):
        StateTypesSerializer().loads_typed(_ext(0, (__name__, "Mood", "calm")))


@pytest.mark.parametrize(
    "record,match",
    [
        (
            _ext(2, (__name__, "Color", {"value": "x", "names": "A B"})),
            "never written as msgpack ext record 2",
        ),
        (_ext(5, (__name__, "Nope", {}, None)), "not defined in"),
        (_ext(9, (__name__, "Color", "red")), "unknown msgpack ext record 9"),
        (_ext(0, ["only-one"]), "malformed"),
        (_ext(2, (__name__, "Leaf", [1, 2])), "fields are not a map"),
    ],
    ids=["enum-as-kwargs", "missing-name", "unknown-code", "short-record", "kwargs-not-a-map"],
)
def test_forged_records_refused(record: tuple[str, bytes], match: str) -> None:
    with pytest.raises(RevivalError, match=match):
        StateTypesSerializer().loads_typed(record)


def test_schema_drift() -> None:
    serde = StateTypesSerializer()
    # A pydantic model whose validation now fails is rebuilt unvalidated, as LangGraph does.
    out = serde.loads_typed(_ext(5, (__name__, "Inner", {"x": "not-an-int"}, None)))
    assert isinstance(out, Inner) and out.x == "not-an-int"
    # A dataclass whose fields changed cannot be: said loudly, never a dict instead.
    with pytest.raises(RevivalError, match=r"Cannot rebuild .*Leaf.*definition change"):
        serde.loads_typed(_ext(2, (__name__, "Leaf", {"n": 1})))


def test_allowlist_and_copies() -> None:
    serde = StateTypesSerializer()
    assert serde.with_msgpack_allowlist([]) is serde
    grown = serde.with_msgpack_allowlist([Mood, ("decimal", "Context")])
    assert isinstance(grown, StateTypesSerializer)
    assert grown.allowlist == {(Mood.__module__, "Mood"), ("decimal", "Context")}
    assert grown.with_msgpack_allowlist([("decimal", "Context")]) is grown
    assert serde.allowlist == frozenset()
    clone = copy.copy(grown)
    assert clone.loads_typed(clone.dumps_typed(Leaf(1, Color.RED))) == Leaf(1, Color.RED)
    with pytest.raises(RefusedTypeError):
        clone.loads_typed(_ext(0, ("os", "system", "true")))


def test_an_accepted_class_is_checked_again_when_its_name_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Accepting ``Leaf`` once is remembered only while the module still binds that very class."""
    import os
    import sys

    serde = StateTypesSerializer()
    record = serde.dumps_typed(Leaf(1, Color.RED))
    assert serde.loads_typed(record) == Leaf(1, Color.RED)
    monkeypatch.setattr(sys.modules[__name__], "Leaf", os.system)
    with pytest.raises(RefusedTypeError, match="builtin_function_or_method"):
        serde.loads_typed(record)
    monkeypatch.undo()
    monkeypatch.delitem(sys.modules, __name__)
    with pytest.raises(RefusedTypeError, match="not imported"):
        serde.loads_typed(record)
