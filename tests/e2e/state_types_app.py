"""A graph whose state holds the user's own types, run in its own process (start or resume).

    python -c "from tests.e2e.state_types_app import main; main()" start|resume THREAD
        --mode sync|async --table T [--bucket B] [--encrypted]

(``-c``, not ``-m``: run as ``__main__`` the types would be recorded as
``__main__.Profile``; users' types live in importable modules.)

``start`` runs until the graph asks a question through ``interrupt()`` (the
question is a pydantic model). ``resume`` is meant for a fresh process that never
wrote the thread: before resuming it reports the types it reads back through
``get_state`` (values and the pending interrupt), then resumes, and a node reports
the types it was handed. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import enum
import json
import sys
from datetime import UTC, datetime
from typing import Annotated, Any, NamedTuple

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt
from pydantic import BaseModel
from pydantic.v1 import BaseModel as BaseModelV1
from typing_extensions import TypedDict

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver

AES_KEY = b"s" * 32


class Tier(enum.Enum):
    GOLD = "gold"
    SILVER = "silver"


class Address(BaseModel):
    city: str
    zip: str


class Profile(BaseModel):
    """A pydantic v2 model with a nested model, an enum and a datetime."""

    name: str
    tier: Tier
    address: Address
    since: datetime


class LegacyNote(BaseModelV1):
    """A pydantic v1 model (``pydantic.v1``), as older code bases still have."""

    text: str


@dataclasses.dataclass
class Line:
    sku: str
    qty: int


@dataclasses.dataclass
class Order:
    """A dataclass holding other dataclasses and an enum."""

    id: int
    lines: list[Line]
    tier: Tier


class Point(NamedTuple):
    x: float
    y: float


class Item(BaseModel):
    label: str
    weight: float


class Bag(TypedDict):
    """A TypedDict whose values are pydantic models."""

    items: list[Item]
    by_label: dict[str, Item]


class Question(BaseModel):
    text: str
    options: list[Tier]


class State(TypedDict, total=False):
    profile: Profile
    legacy: LegacyNote
    order: Order
    tier: Tier
    point: Point
    bag: Bag
    messages: Annotated[list[AnyMessage], add_messages]
    answer: str
    seen: dict[str, str]


def _type_name(value: Any) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}"


def describe(values: dict[str, Any]) -> dict[str, Any]:
    """The type of every value the test cares about, nested ones included."""
    out: dict[str, Any] = {
        k: _type_name(values[k]) for k in ("profile", "legacy", "order", "tier", "point", "bag")
    }
    profile, order, bag = values["profile"], values["order"], values["bag"]
    out["profile.address"] = _type_name(getattr(profile, "address", None))
    out["profile.tier"] = _type_name(getattr(profile, "tier", None))
    out["profile.since"] = _type_name(getattr(profile, "since", None))
    out["order.lines[0]"] = _type_name(getattr(order, "lines", [None])[0])
    out["order.tier"] = _type_name(getattr(order, "tier", None))
    out["bag.items[0]"] = _type_name(bag["items"][0])
    out["bag.by_label[a]"] = _type_name(bag["by_label"]["a"])
    out["messages"] = [_type_name(m) for m in values["messages"]]
    out["equal"] = values["profile"] == PROFILE and values["order"] == ORDER and values["bag"] == BAG
    return out


PROFILE = Profile(
    name="Ada",
    tier=Tier.GOLD,
    address=Address(city="Paris", zip="75001"),
    since=datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
)
ORDER = Order(id=7, lines=[Line("a-1", 2), Line("b-2", 1)], tier=Tier.SILVER)
BAG = Bag(items=[Item(label="a", weight=1.5)], by_label={"a": Item(label="a", weight=1.5)})


def build() -> StateGraph:
    def fill(state: State) -> dict[str, Any]:
        return {
            "profile": PROFILE,
            "legacy": LegacyNote(text="v1"),
            "order": ORDER,
            "tier": Tier.GOLD,
            "point": Point(1.0, 2.0),
            "bag": BAG,
            "messages": [HumanMessage(content="hi", id="h1"), AIMessage(content="hello", id="a1")],
        }

    def ask(state: State) -> dict[str, Any]:
        answer = interrupt(Question(text="Which tier?", options=[Tier.GOLD, Tier.SILVER]))
        return {"answer": answer}

    def check(state: State) -> dict[str, Any]:
        # What a node is handed in the resuming process, from the stored checkpoint.
        return {"seen": describe(dict(state))}

    g = StateGraph(State)
    g.add_node("fill", fill)
    g.add_node("ask", ask)
    g.add_node("check", check)
    g.add_edge(START, "fill")
    g.add_edge("fill", "ask")
    g.add_edge("ask", "check")
    g.add_edge("check", END)
    return g


def saver_kwargs(a: argparse.Namespace) -> dict[str, Any]:
    kw: dict[str, Any] = {"table_name": a.table, "bucket_name": a.bucket}
    if a.encrypted:
        from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

        from langgraph.checkpoint.dynamodb.serde import StateTypesSerializer

        kw["serde"] = EncryptedSerializer.from_pycryptodome_aes(serde=StateTypesSerializer(), key=AES_KEY)
    return kw


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("action", choices=["start", "resume"])
    p.add_argument("thread")
    p.add_argument("--mode", choices=["sync", "async"], default="sync")
    p.add_argument("--table", required=True)
    p.add_argument("--bucket")
    p.add_argument("--encrypted", action="store_true")
    a = p.parse_args()
    config: Any = {"configurable": {"thread_id": a.thread}}

    def report_state(snapshot: Any) -> dict[str, Any]:
        (task,) = [t for t in snapshot.tasks if t.interrupts]
        question = task.interrupts[0].value
        return {
            "values": describe(snapshot.values),
            "interrupt": _type_name(question),
            "interrupt.options": [_type_name(o) for o in getattr(question, "options", [])],
        }

    if a.mode == "sync":
        with DynamoDBSaver(**saver_kwargs(a)) as saver:
            graph = build().compile(checkpointer=saver)
            if a.action == "start":
                out = graph.invoke({}, config)
                print(json.dumps({"interrupt": _type_name(out["__interrupt__"][0].value)}))
            else:
                before = report_state(graph.get_state(config))
                out = graph.invoke(Command(resume="gold"), config)
                print(json.dumps({"before": before, "seen": out["seen"], "answer": out["answer"]}))
    else:

        async def run() -> None:
            async with AsyncDynamoDBSaver(**saver_kwargs(a)) as saver:
                graph = build().compile(checkpointer=saver)
                if a.action == "start":
                    out = await graph.ainvoke({}, config)
                    print(json.dumps({"interrupt": _type_name(out["__interrupt__"][0].value)}))
                else:
                    before = report_state(await graph.aget_state(config))
                    out = await graph.ainvoke(Command(resume="gold"), config)
                    print(json.dumps({"before": before, "seen": out["seen"], "answer": out["answer"]}))

        asyncio.run(run())
    sys.stdout.flush()
