"""The demo's coding-agent workflow: product manager, planner, developer + tester, reviewer.

Deterministic stand-ins for LLM agents (no model, no network), so every run
tells the same story:

* ``product_manager`` finds what the requirement leaves open (format, roles)
  and asks the user through ``interrupt()``; the answer becomes the agreed
  specification.
* ``planner`` splits the work.
* ``developer`` and ``tester`` run in parallel (one super-step): the
  developer writes the exporter, the tester a golden fixture file big
  enough (> 64 KiB compressed) to be stored in S3 rather than DynamoDB.
* ``reviewer`` sends the code back to the developer with comments (a CSV or
  XLSX export must escape spreadsheet formulas) until it passes, at most
  :data:`MAX_REVIEW_ROUNDS` rounds; then ``release`` summarises.

Every node run is appended to the file named by ``DEMO_COUNTS_FILE`` (one
line per run, shared by all processes of the demo), which is how the demo
proves that a node did or did not run again after a crash.

``DEMO_CRASH_NODE=developer`` makes the developer kill its own process
(SIGKILL, no cleanup) once the tester's result is durably stored: a crash
in the middle of a parallel step.
"""

from __future__ import annotations

import operator
import os
import random
import re
import signal
import time
from collections import Counter
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

__all__ = [
    "MAX_REVIEW_ROUNDS",
    "REQUIREMENT",
    "DevState",
    "build_graph",
    "read_counts",
]

REQUIREMENT = "Add a data export feature to the back office"
MAX_REVIEW_ROUNDS = 3
FIXTURE_ROWS = 5000

_FORMATS = ("csv", "xlsx", "json")
_ROLES = ("admin", "auditor", "manager", "viewer")


class DevState(TypedDict, total=False):
    """State shared by the agents.

    Attributes:
        requirement: the user's request, as given.
        spec: the agreed specification (``format``, ``roles``) after clarification.
        plan: the planner's tasks.
        code: the developer's exporter source.
        fixtures: the tester's golden export file (large: stored in S3).
        review_comments: the reviewer's open comments for the developer.
        review_round: reviews done so far.
        approved: whether the reviewer accepted the code.
        outcome: the final summary.
        log: who did what, in order (appended by every node).

    Example:
        >>> DevState(requirement="Add an export", log=[])
        {'requirement': 'Add an export', 'log': []}
    """

    requirement: str
    spec: dict[str, Any]
    plan: list[str]
    code: str
    fixtures: str
    review_comments: list[str]
    review_round: int
    approved: bool
    outcome: str
    log: Annotated[list[str], operator.add]


def _record(node: str) -> None:
    path = os.environ.get("DEMO_COUNTS_FILE")
    if not path:
        return
    # O_APPEND writes of one short line are atomic: safe across processes.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{node}\n".encode())
    finally:
        os.close(fd)


def read_counts(path: str) -> Counter[str]:
    """Node runs recorded in ``path`` so far, by node name."""
    try:
        with open(path, encoding="utf-8") as fh:
            return Counter(line.strip() for line in fh if line.strip())
    except FileNotFoundError:
        return Counter()


def parse_answer(answer: str) -> dict[str, Any]:
    """Turn the user's free-text answer into a specification (deterministically).

    Example:
        >>> parse_answer("CSV, admins and auditors only")
        {'format': 'CSV', 'roles': ['admin', 'auditor']}
    """
    text = answer.lower()
    fmt = next((f for f in _FORMATS if re.search(rf"\b{f}\b", text)), "csv")
    roles = [r for r in _ROLES if r in text] or ["admin"]
    return {"format": fmt.upper(), "roles": roles}


def product_manager(state: DevState) -> dict[str, Any]:
    _record("product_manager")
    requirement = state["requirement"].lower()
    missing = [
        m
        for m, words in (("format", _FORMATS), ("roles", _ROLES))
        if not any(w in requirement for w in words)
    ]
    if not missing:
        return {"spec": parse_answer(requirement), "log": ["product_manager: requirement is complete"]}
    # A guess here would send planner, developer and tester down the wrong
    # path; ask instead. Resuming re-runs this node from the top, so nothing
    # above this line may have side effects (the counter is the demo's).
    answer = interrupt(
        {
            "question": "Which export format do you need (CSV, XLSX or JSON), and which roles may export?",
            "missing": missing,
        }
    )
    spec = parse_answer(str(answer))
    return {"spec": spec, "log": [f"product_manager: agreed {spec['format']} for {', '.join(spec['roles'])}"]}


def planner(state: DevState) -> dict[str, Any]:
    _record("planner")
    spec = state["spec"]
    plan = [
        f"developer: {spec['format']} exporter with a role check ({', '.join(spec['roles'])})",
        f"tester: golden {spec['format']} fixture, {FIXTURE_ROWS} rows",
        "reviewer: security and correctness review",
    ]
    return {"plan": plan, "review_round": 0, "log": [f"planner: {len(plan)} tasks"]}


def developer(state: DevState) -> dict[str, Any]:
    _record("developer")
    if os.environ.get("DEMO_CRASH_NODE") == "developer":
        _crash_after_sibling_finished()
    spec = state["spec"]
    comments = state.get("review_comments") or []
    escape = any("formula" in c for c in comments)
    roles = ", ".join(repr(r) for r in spec["roles"])
    code = "\n".join(
        [
            f"ALLOWED_ROLES = {{{roles}}}",
            "",
            "def export(rows, user):",
            "    if user.role not in ALLOWED_ROLES:",
            "        raise PermissionError('export not allowed')",
            f"    return write_{spec['format'].lower()}("
            + ("escape_formulas(rows)" if escape else "rows")
            + ")",
        ]
    )
    note = "fixed: " + "; ".join(comments) if comments else "first version"
    return {"code": code, "review_comments": [], "log": [f"developer: exporter written ({note})"]}


def tester(state: DevState) -> dict[str, Any]:
    _record("tester")
    rng = random.Random(42)  # same fixture every run
    header = "row_id,account,amount,currency"
    rows = [
        f"{rng.getrandbits(128):032x},acct-{rng.randrange(10**6):06d},{rng.randrange(10**7) / 100:.2f},EUR"
        for _ in range(FIXTURE_ROWS)
    ]
    fixtures = "\n".join([header, *rows])
    return {
        "fixtures": fixtures,
        "log": [f"tester: golden fixture with {FIXTURE_ROWS} rows ({len(fixtures):,} bytes)"],
    }


def reviewer(state: DevState) -> dict[str, Any]:
    _record("reviewer")
    round_ = state.get("review_round", 0) + 1
    code = state.get("code", "")
    comments = []
    if state["spec"]["format"] in ("CSV", "XLSX") and "escape_formulas" not in code:
        comments.append("escape spreadsheet formulas (cells starting with =, +, -, @)")
    if "PermissionError" not in code:
        comments.append("check the user's role")
    approved = not comments
    verdict = "approved" if approved else "changes requested: " + "; ".join(comments)
    return {
        "review_round": round_,
        "approved": approved,
        "review_comments": comments,
        "log": [f"reviewer: round {round_}: {verdict}"],
    }


def release(state: DevState) -> dict[str, Any]:
    _record("release")
    spec = state["spec"]
    if state.get("approved"):
        outcome = (
            f"delivered {spec['format']} export for {', '.join(spec['roles'])} "
            f"after {state['review_round']} review round(s)"
        )
    else:
        outcome = f"stopped after {state['review_round']} review rounds: needs a human decision"
    return {"outcome": outcome, "log": [f"release: {outcome}"]}


def _after_review(state: DevState) -> str:
    if state.get("approved") or state.get("review_round", 0) >= MAX_REVIEW_ROUNDS:
        return "release"
    return "developer"


def _crash_after_sibling_finished() -> None:
    """Kill this process once the tester's writes are stored: a crash mid-step."""
    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    thread_id = os.environ["DEMO_CRASH_THREAD"]
    with DynamoDBSaver(
        table_name=os.environ["LANGGRAPH_DYNAMODB_TABLE"],
        bucket_name=os.environ.get("LANGGRAPH_DYNAMODB_BUCKET"),
    ) as saver:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            latest = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
            if latest and any(ch == "fixtures" for _, ch, _ in latest.pending_writes or []):
                break
            time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGKILL)


def build_graph(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """The workflow graph, compiled with ``checkpointer``.

    Example:
        ```python
        graph = build_graph(saver)
        graph.invoke({"requirement": REQUIREMENT}, {"configurable": {"thread_id": "t"}})
        ```
    """
    g = StateGraph(DevState)
    g.add_node("product_manager", product_manager)
    g.add_node("planner", planner)
    g.add_node("developer", developer)
    g.add_node("tester", tester)
    g.add_node("reviewer", reviewer)
    g.add_node("release", release)
    g.add_edge(START, "product_manager")
    g.add_edge("product_manager", "planner")
    # Fan out: developer and tester run in the same super-step.
    g.add_edge("planner", "developer")
    g.add_edge("planner", "tester")
    # Plain edges, not a join: both finish in one step and trigger one review;
    # on rework only the developer runs and the reviewer still fires.
    g.add_edge("developer", "reviewer")
    g.add_edge("tester", "reviewer")
    g.add_conditional_edges("reviewer", _after_review, ["developer", "release"])
    g.add_edge("release", END)
    return g.compile(checkpointer=checkpointer)
