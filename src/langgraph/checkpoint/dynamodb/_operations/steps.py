"""Step-wise (resumable) maintenance operations, I/O-free.

The maintenance Lambda (``lambdas/maintenance.py``) runs ``copy_thread``,
``prune`` and ``delete_for_runs`` on request, within one invocation's time
budget. Each operation here does as many *units* of work as fit before a
deadline (always at least one, so every invocation makes progress) and returns
a :class:`StepResult` whose continuation token lets the next call resume.

Units and what is safe to replay:

* ``copy_thread``: S3 objects first, then the writes and blob items, then the
  checkpoint items oldest first, a batch per unit; last the target's head.
  Cursors are keys, not positions, and every write is a put of the same item
  or a copy of the same object, so replaying a step (the same token, an older
  one, or the first request without a token) ends in the same target.
* ``prune`` and ``delete_for_runs``: one thread (one run id) per unit; each
  is the library's own operation, which is already safe to interrupt and to
  redo (deletes in an order that keeps every readable checkpoint intact).
  A unit that fails on the data it reads (a malformed item, a parent cycle:
  anything but a service error, see ``aws.is_service_error``) is recorded in
  the step's ``errors`` and the step goes on with the next unit: whoever can
  write one thread's items must not be able to stop the request for every
  thread or run listed after it. Service errors raise (retry the step).

What a reader sees in a copy's target while it is under way: nothing until
the first checkpoint batch lands (objects, writes and blobs are not readable
without a checkpoint item), then a prefix of the source in checkpoint id
order, each checkpoint complete (its payloads, pending writes and delta
ancestors all landed before it). The target's latest checkpoint is the
source's latest only once the step returns ``done``.

The token is base64url JSON, opaque to users. It is bound to the request (the
action, the thread or run ids, the options) and to the saver's tenant by a
digest it carries: a token from another request, thread or tenant is refused
(``ValueError``), so it can never point a step at another thread. The digest
is no signature: anyone who may call the step can compute a token, so a token
is trusted with nothing a step cannot check. (The maintenance Lambda signs the
tokens it hands out with a key only it holds, HMAC-SHA256 over the token and
the request, and refuses any other: ``lambdas/maintenance.py``.) Every copy
step, with a token or without, checks that the target holds nothing but this
copy's own items (its checkpoints, whose lineage roots carry the copy's
``@copy-<root>`` suffix, and their writes and blobs) and that the token's root
is the one the step derives; a target with a history of its own is refused,
whatever the token says.

A copy is a *job*: its first step (a request without a token) draws a random
job id and puts a copy marker item (``COPY_MARKER_SK``) in the target before
anything else, and every token carries the job id. A step resumes from a
token's cursors only while the target's marker names the token's job, or when
the target already holds everything the copy writes (a finished copy: nothing
can be skipped); a token of another job, which a later request took the copy
over from, is refused; a token whose job is gone (its copy failed and was
removed) starts the copy again from its first step. The last step writes the
target's thread head only after checking that every item the copy writes is
there (a forged ``finish`` token cannot make a thread appear), then removes
the marker. A source without checkpoints is refused: nothing is written.

A step that fails after its first write (a service error that outlasts the
retries, a payload it cannot copy) removes the job: the marker first (so a
retry of its token cannot resume past what is then deleted), then the target's
checkpoints newest first, the writes and blobs, the copied objects; then it
re-raises. The target reads as it did before the copy: no partial thread is
left for ``get_tuple``, ``list`` or the thread listings, and a retry of the
same token copies again from the start. What a killed invocation (a Lambda
timeout, no ``except`` runs) or a caller that stops leaves is the copy so far:
a consistent prefix of the source, with its marker, and no thread head (the
threads index does not list it); the same request finishes it or
``delete_thread`` removes it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from langgraph.checkpoint.dynamodb import clock, schema
from langgraph.checkpoint.dynamodb._engine.aws import contain_failure
from langgraph.checkpoint.dynamodb._engine.ops import Op
from langgraph.checkpoint.dynamodb._operations import heads, requests
from langgraph.checkpoint.dynamodb._operations.copying import (
    CopyPlan,
    copy_objects,
    plan_copy,
    refuse_unsealable,
)
from langgraph.checkpoint.dynamodb._operations.deleting import delete_for_runs_isolated
from langgraph.checkpoint.dynamodb._operations.pruning import prune
from langgraph.checkpoint.dynamodb._operations.threads import load_thread
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import Item, ThreadItems
from langgraph.checkpoint.dynamodb.lifecycle import PruneResult
from langgraph.checkpoint.dynamodb.schema import ATTR

if TYPE_CHECKING:
    from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver

__all__ = [
    "COPY_MARKER_SK",
    "DEFAULT_BATCH_SIZE",
    "MAX_TOKEN_CHARS",
    "StepResult",
    "copy_thread_step",
    "delete_for_runs_step",
    "prune_step",
]

#: Items (or S3 objects) per unit of a copy: one BatchWriteItem's worth.
DEFAULT_BATCH_SIZE = requests.BATCH_WRITE_MAX
#: Longest token accepted (a copy's cursors are keys: a few hundred bytes each).
MAX_TOKEN_CHARS = 8192
_TOKEN_VERSION = 1
_COPY_PHASES = ("objects", "items", "checkpoints", "finish")
#: Sort key of the marker a step-wise copy keeps in its target while under way (a meta item).
COPY_MARKER_SK = f"{schema.META_PREFIX}copy"
#: The marker's attribute naming its job (the id every token of that copy carries).
_JOB = "job"


@dataclass(frozen=True)
class StepResult:
    """What one step of a resumable maintenance operation did.

    Attributes:
        status: ``"done"`` (nothing left) or ``"continue"`` (call again with
            ``continuation``).
        continuation: The token to pass to the next call, ``None`` when done.
        report: Counts of this step only (sum them over the steps for a total).
        errors: The units this step recorded and skipped (a thread or run
            whose items could not be read or deleted), one
            ``"thread 't': Error: message"`` line each; the other units
            were done.

    Example:
        >>> r = StepResult("continue", "eyJ2Ijox...", {"checkpoints_copied": 25})
        >>> r.to_dict()["status"]
        'continue'
    """

    status: Literal["done", "continue"]
    continuation: str | None
    report: Mapping[str, int] = field(default_factory=dict)
    errors: tuple[str, ...] = ()

    @property
    def done(self) -> bool:
        """Whether the operation has finished."""
        return self.status == "done"

    def to_dict(self) -> dict[str, Any]:
        """``{"status", "continuation", "report", "errors"}``, JSON-ready (the Lambda's result)."""
        return {
            "status": self.status,
            "continuation": self.continuation,
            "report": dict(self.report),
            "errors": list(self.errors),
        }


# ----------------------------------------------------------------- tokens


def request_binding(action: str, tenant: str, request: Mapping[str, Any]) -> str:
    """Digest of what a token belongs to: the action, the tenant and the request's parameters."""
    raw = json.dumps([action, tenant, request], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(raw.encode()).hexdigest()


def encode_token(action: str, binding: str, state: Mapping[str, Any]) -> str:
    doc = {"v": _TOKEN_VERSION, "a": action, "b": binding, "s": dict(state)}
    raw = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: object, action: str, binding: str) -> dict[str, Any]:
    """The state a token carries, after checking it belongs to this request.

    Raises:
        ValueError: not a token, another version, or another request's
            (action, ids, options or tenant differ).
    """
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
        raise ValueError(f"continuation must be a token string of at most {MAX_TOKEN_CHARS} characters")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        doc = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        raise ValueError("continuation is not a token returned by a previous step") from None
    if not isinstance(doc, dict) or doc.get("v") != _TOKEN_VERSION or not isinstance(doc.get("s"), dict):
        raise ValueError("continuation is not a token returned by a previous step (or of another version)")
    if doc.get("a") != action or doc.get("b") != binding:
        raise ValueError(
            "continuation belongs to another request: resume with the same action, thread or run ids, "
            "options and tenant as the step that returned it"
        )
    return doc["s"]


def _str_or_none(state: Mapping[str, Any], key: str) -> str | None:
    value = state.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"continuation is malformed ({key!r})")
    return value


def _count(state: Mapping[str, Any], total: int) -> int:
    done = state.get("done")
    if not isinstance(done, int) or isinstance(done, bool) or not 0 <= done <= total:
        raise ValueError("continuation is malformed ('done')")
    return done


# ------------------------------------------------------------------ copy


def copy_root(s: BaseDynamoDBSaver, source: str, target: str, target_items: ThreadItems) -> str:
    """The lineage-root suffix of a copy, the same for every replay of the same request.

    ``copy_thread`` draws a fresh one (a deleted earlier copy's tombstone must
    not hide the new one). A step-wise copy must reuse one across steps and
    replays, so it is derived from the source, the target and the lineages
    the target's tombstones list: a copy after a delete gets a new root.
    """
    dead = sorted(e for tomb in target_items.tombstones.values() for e in shapes.dead_entries(tomb))
    raw = json.dumps([s.keys.pk(source), s.keys.pk(target), dead], separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def _check_only_this_copy(target: ThreadItems, plan: CopyPlan, target_thread_id: str) -> None:
    """Refuse a target holding any item this copy would not write.

    A checkpoint is this copy's if the plan writes the same sort key with the
    same lineage root (``<root>@copy-<copy root>``, which no put of the
    target's own makes); a write or blob item if the plan writes its sort
    key (the target's own pending writes have task ids the source's lack).

    Raises:
        ValueError: the target has a history of its own (or the source
            lost checkpoints the copy already wrote).
    """
    planned = {it[ATTR.SK]["S"]: it for it in (*plan.items, *plan.checkpoints)}

    def ours(it: Item, lineage: bool) -> bool:
        mine = planned.get(it[ATTR.SK]["S"])
        return mine is not None and (not lineage or it.get(ATTR.ROOT) == mine.get(ATTR.ROOT))

    if not (
        all(ours(it, True) for it in target.checkpoints.values())
        and all(ours(w, False) for ws in target.writes.values() for w in ws)
        and all(ours(b, False) for b in target.blobs.values())
    ):
        raise ValueError(
            f"target thread {target_thread_id!r} already has checkpoints this copy did not write; "
            "delete it first (copy_thread never merges two histories)"
        )


def _checkpoint_cursor(it: Item) -> str:
    ns, _, cid, _ = shapes.parse_sk(it)
    # Checkpoint id first: the copy's order (NUL sorts below any namespace char).
    return f"{cid}\x00{ns}"


def _is_job(value: object) -> bool:
    return isinstance(value, str) and len(value) == 32 and not value.strip("0123456789abcdef")


def _marker_of(target: ThreadItems) -> Item | None:
    return next((m for m in target.meta if m.get(ATTR.SK, {}).get("S") == COPY_MARKER_SK), None)


def _marker_item(s: BaseDynamoDBSaver, source_thread_id: str, target_thread_id: str, job: str) -> Item:
    return {
        ATTR.PK: {"S": s.keys.pk(target_thread_id)},
        ATTR.SK: {"S": COPY_MARKER_SK},
        ATTR.KIND: {"S": schema.META_ITEM},
        ATTR.FORMAT: {"N": str(schema.BASE_FORMAT_VERSION)},
        ATTR.THREAD_ID: {"S": target_thread_id},
        ATTR.CREATED: {"N": str(int(clock.now()))},
        ATTR.IMPORT_SOURCE: {"S": source_thread_id},
        _JOB: {"S": job},
    }


def _missing(plan: CopyPlan, target: ThreadItems, written: set[str]) -> int:
    """How many items the copy writes are neither in ``target`` (as read) nor in ``written`` (this step's)."""
    have = set(written)
    have.update(it[ATTR.SK]["S"] for it in target.checkpoints.values())
    have.update(w[ATTR.SK]["S"] for ws in target.writes.values() for w in ws)
    have.update(b[ATTR.SK]["S"] for b in target.blobs.values())
    return sum(1 for it in (*plan.items, *plan.checkpoints) if it[ATTR.SK]["S"] not in have)


def _remove_copy(s: BaseDynamoDBSaver, target_thread_id: str, plan: CopyPlan) -> Op[None]:
    """Undo a failed copy job: its marker first, then what it wrote (newest checkpoints first), then its objects.

    The marker goes first: if this stops half way, a retry of the job's
    token finds no marker and copies again from the start, instead of
    resuming past items deleted here. Only keys this copy writes are
    deleted (the step checked that the target holds nothing else).
    """
    pk = {"S": s.keys.pk(target_thread_id)}
    yield from requests.batch_write(
        s.table_name, [{"DeleteRequest": {"Key": {ATTR.PK: pk, ATTR.SK: {"S": COPY_MARKER_SK}}}}]
    )
    yield from requests.ordered_deletes(
        s.table_name, [{ATTR.PK: pk, ATTR.SK: it[ATTR.SK]} for it in (*plan.checkpoints, *plan.items)]
    )
    if plan.objects and s.bucket_name is not None:
        yield from requests.delete_s3_keys(s.bucket_name, [dst for _, dst, _ in plan.objects])


def _check_copy_request(
    s: BaseDynamoDBSaver, source_thread_id: str, target_thread_id: str, batch_size: int
) -> None:
    """Refuse a malformed copy request before any I/O."""
    for name, value in (("source_thread_id", source_thread_id), ("target_thread_id", target_thread_id)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string")
        s.keys.check(value, "", None)
    if s.keys.pk(target_thread_id) == s.keys.pk(source_thread_id):
        raise ValueError("source_thread_id and target_thread_id are the same thread")
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")


def _resumed_state(
    token_state: dict[str, Any], root: str, marker: Item | None, target_thread_id: str
) -> dict[str, Any]:
    """A token's state, once it is well formed, of this copy's root and of the target's current job.

    Raises:
        ValueError: a malformed token, another root (forged, or the target
            was deleted since), or a token of a job the target's marker
            does not name (a later request took the copy over).
    """
    token_root, token_upto = token_state.get("root"), token_state.get("upto")
    if not isinstance(token_root, str) or len(token_root) != 32 or token_root.strip("0123456789abcdef"):
        raise ValueError("continuation is malformed ('root')")
    if not isinstance(token_upto, str) or token_state.get("phase") not in _COPY_PHASES:
        raise ValueError("continuation is malformed ('upto', 'phase')")
    if not _is_job(token_state.get("job")):
        raise ValueError("continuation is malformed ('job')")
    _str_or_none(token_state, "after")
    if token_root != root:
        # The root is derived from the target's tombstones: another root is
        # a forged token, or the target was deleted since the copy began.
        raise ValueError(
            f"continuation does not match target thread {target_thread_id!r} (forged, or the target "
            "changed since the copy began): start the copy again without a token"
        )
    marker_job = (marker or {}).get(_JOB, {}).get("S")
    if marker is not None and marker_job != token_state["job"]:
        raise ValueError(
            f"continuation belongs to another copy job into thread {target_thread_id!r} (a later "
            "request took the copy over): go on with that job's token, or start again without a token"
        )
    return token_state


@dataclass
class _CopyRun:
    """What one copy step's phases share: the plan, the token's state, and what the step did so far."""

    s: BaseDynamoDBSaver
    source_thread_id: str
    target_thread_id: str
    #: The target as read at the start of the step (the finish phase checks it is complete).
    target: ThreadItems
    plan: CopyPlan
    binding: str
    #: The token's state: mutated as units land, encoded when the step stops.
    state: dict[str, Any]
    deadline: float | None
    batch_size: int
    report: dict[str, int] = field(
        default_factory=lambda: {"objects_copied": 0, "items_copied": 0, "checkpoints_copied": 0}
    )
    units: int = 0
    #: Sort keys of the items this step put (the target as read lacks them).
    written: set[str] = field(default_factory=set)
    #: Whether the step may have written anything: a failure then removes the copy.
    wrote: bool = False

    def more(self) -> bool:
        # At least one unit per call: an invocation that starts late still moves on.
        return self.units == 0 or self.deadline is None or clock.now() < self.deadline

    def pending(self, entries: Sequence[Any], key: Callable[[Any], str]) -> list[Any]:
        after = self.state["after"]
        return [e for e in entries if after is None or key(e) > after]

    def paused(self) -> StepResult:
        return StepResult("continue", encode_token("copy_thread", self.binding, self.state), self.report)


def _put_marker(run: _CopyRun) -> Op[None]:
    # Before anything else: the target is this job's (a token of an earlier one is refused).
    run.wrote = True
    marker = _marker_item(run.s, run.source_thread_id, run.target_thread_id, run.state["job"])
    yield from requests.batch_write(run.s.table_name, [{"PutRequest": {"Item": marker}}])


def _put_objects(run: _CopyRun, chunk: list[Any]) -> Op[None]:
    """A unit of the ``objects`` phase: S3 objects first, so no copied item points at a missing one."""
    yield from copy_objects(run.s, chunk, run.plan.reseal)
    run.state["after"] = chunk[-1][0]
    run.report["objects_copied"] += len(chunk)


def _put_items(run: _CopyRun, chunk: list[Any]) -> Op[None]:
    """A unit of the ``items`` phase: writes and blobs, unreadable until their checkpoint lands."""
    yield from requests.batch_write(
        run.s.table_name, [{"PutRequest": {"Item": it}} for it in run.plan.sealed(chunk)]
    )
    run.state["after"] = chunk[-1][ATTR.SK]["S"]
    run.report["items_copied"] += len(chunk)
    run.written.update(it[ATTR.SK]["S"] for it in chunk)


def _put_checkpoints(run: _CopyRun, chunk: list[Any]) -> Op[None]:
    """A unit of the ``checkpoints`` phase, oldest first."""
    # in_order (as copy_thread): a failure leaves the batch's older
    # 25-item chunks landed, never a newer one without them.
    yield from requests.batch_write(
        run.s.table_name,
        [{"PutRequest": {"Item": it}} for it in run.plan.sealed(chunk)],
        in_order=True,
    )
    run.state["after"] = _checkpoint_cursor(chunk[-1])
    run.report["checkpoints_copied"] += len(chunk)
    run.written.update(it[ATTR.SK]["S"] for it in chunk)


_Entries = Callable[[CopyPlan], Sequence[Any]]
_PutUnit = Callable[[_CopyRun, list[Any]], Op[None]]
#: The phases before ``finish``, in ``_COPY_PHASES`` order: what each copies (from the plan),
#: its cursor (the token's ``after``: a key, so a replay resumes at the same entry), a unit's writes.
_BATCH_PHASES: dict[str, tuple[_Entries, Callable[[Any], str], _PutUnit]] = {
    "objects": (lambda plan: plan.objects, lambda o: o[0], _put_objects),
    "items": (lambda plan: plan.items, lambda it: it[ATTR.SK]["S"], _put_items),
    "checkpoints": (lambda plan: plan.checkpoints, _checkpoint_cursor, _put_checkpoints),
}


def _copy_batches(run: _CopyRun) -> Op[StepResult | None]:
    """Run the batch phases from the token's cursor, a unit at a time.

    Returns the ``continue`` result when the deadline stops it, ``None`` once
    every batch phase ran (the state's phase is then ``finish``).
    """
    while run.state["phase"] != "finish":
        phase = run.state["phase"]
        entries, cursor, put = _BATCH_PHASES[phase]
        todo = run.pending(entries(run.plan), cursor)
        for i in range(0, len(todo), run.batch_size):
            if not run.more():
                return run.paused()
            run.wrote = True
            yield from put(run, todo[i : i + run.batch_size])
            run.units += 1
        run.state["phase"] = _COPY_PHASES[_COPY_PHASES.index(phase) + 1]
        run.state["after"] = None
    return None


def _finish(run: _CopyRun) -> Op[None]:
    """The ``finish`` phase: the target's head, once every item the copy writes is there, then no marker."""
    missing = _missing(run.plan, run.target, run.written)
    if missing:
        # Only a token that skipped part of the copy gets here (unsigned: computed).
        raise ValueError(
            f"continuation skipped part of the copy into thread {run.target_thread_id!r} ({missing} items "
            "missing): start the copy again without a token"
        )
    # The head (one small request when threads are tracked) needs no unit of its own.
    run.wrote = True
    yield from heads.on_activity(run.s, run.target_thread_id)
    yield from requests.batch_write(
        run.s.table_name,
        [
            {
                "DeleteRequest": {
                    "Key": {
                        ATTR.PK: {"S": run.s.keys.pk(run.target_thread_id)},
                        ATTR.SK: {"S": COPY_MARKER_SK},
                    }
                }
            }
        ],
    )


def _run_copy(run: _CopyRun, new_job: bool) -> Op[StepResult]:
    """The step's writes: a new job's marker, the phases from the token's cursor, the finish.

    A failure after the first write removes the job (see the module's docstring).
    """
    try:
        if new_job:
            yield from _put_marker(run)
        paused = yield from _copy_batches(run)
        if paused is not None:
            return paused
        yield from _finish(run)
    except Exception:
        # Not BaseException: a cancelled or closed step does no more I/O (what it
        # leaves is the copy so far, with its marker, as after a killed invocation).
        if run.wrote:
            # The original error is the one to raise; what is left is marked or gone.
            with contextlib.suppress(Exception):
                yield from _remove_copy(run.s, run.target_thread_id, run.plan)
        raise
    return StepResult("done", None, run.report)


def copy_thread_step(
    s: BaseDynamoDBSaver,
    source_thread_id: str,
    target_thread_id: str,
    *,
    continuation: str | None = None,
    deadline: float | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> Op[StepResult]:
    """:meth:`copy_thread` in steps that each stop at ``deadline`` (epoch seconds).

    Call again with the returned ``continuation`` until ``status`` is
    ``"done"``. Replaying a step (same token, or an earlier one) is safe.
    Midway the target reads as empty, then as an older state of the
    source (every visible checkpoint complete), without a thread head; it
    reads as the source's latest, and is listed, only when done.

    Every step refuses a target that holds anything this copy would not
    write (as ``copy_thread`` refuses a non-empty target), with a token or
    without: a token, which anyone can compute, never lets a copy merge into
    a thread with a history of its own, nor does an honest one replayed
    after the target gained checkpoints. A target holding only what an
    interrupted run of the same request wrote is taken over, so the request
    can be replayed without its token too (the earlier job's tokens are
    then refused). A step that fails after writing removes what the copy
    wrote and re-raises (see the module's docstring); a source without
    checkpoints is refused.

    Example:
        >>> step = saver.copy_thread_step("src", "dst", deadline=time.time() + 60)  # doctest: +SKIP
        >>> while not step.done:  # doctest: +SKIP
        ...     step = saver.copy_thread_step("src", "dst", continuation=step.continuation)
    """
    _check_copy_request(s, source_thread_id, target_thread_id, batch_size)
    binding = request_binding(
        "copy_thread", s.tenant_prefix, {"source": source_thread_id, "target": target_thread_id}
    )
    token_state = None if continuation is None else decode_token(continuation, "copy_thread", binding)
    source = yield from load_thread(s, source_thread_id)
    live = set(source.checkpoints) - source.dead()
    if not live:
        # Nothing to copy: writing the target's head would list a phantom, empty thread.
        raise ValueError(f"source thread {source_thread_id!r} has no checkpoints: nothing to copy")
    # Read on every step, not only the first: a token (which anyone can
    # compute, or an honest one replayed late) must not skip the check.
    target = yield from load_thread(s, target_thread_id)
    root = copy_root(s, source_thread_id, target_thread_id, target)
    marker = _marker_of(target)
    state = None if token_state is None else _resumed_state(token_state, root, marker, target_thread_id)
    upto_now = max((cid for _, cid in live), default="")
    plan_upto = state["upto"] if state is not None else upto_now
    plan = plan_copy(s, source_thread_id, target_thread_id, source, root, plan_upto)
    _check_only_this_copy(target, plan, target_thread_id)
    if state is not None and marker is None and _missing(plan, target, set()):
        # The token's job is gone (it failed and was removed) and the target
        # lacks part of the copy: resuming past its cursors would skip it.
        state = None
        plan = plan_copy(s, source_thread_id, target_thread_id, source, root, upto_now)
        _check_only_this_copy(target, plan, target_thread_id)
    yield from refuse_unsealable(s, source_thread_id, plan)
    new_job = state is None
    if state is None:
        state = {"root": root, "upto": upto_now, "phase": _COPY_PHASES[0], "after": None}
        state["job"] = secrets.token_hex(16)
    run = _CopyRun(
        s=s,
        source_thread_id=source_thread_id,
        target_thread_id=target_thread_id,
        target=target,
        plan=plan,
        binding=binding,
        state=state,
        deadline=deadline,
        batch_size=batch_size,
    )
    return (yield from _run_copy(run, new_job))


def _id_list(values: object, what: str) -> list[str]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{what} must be a list of ids, not {type(values).__name__}")
    for v in values:
        if not isinstance(v, str) or not v:
            raise TypeError(f"every entry of {what} must be a non-empty str, got {v!r}")
    return list(dict.fromkeys(values))


def _per_unit(
    s: BaseDynamoDBSaver,
    action: str,
    request: Mapping[str, Any],
    kind: str,
    units: list[str],
    run_one: Callable[[str], Op[tuple[PruneResult, list[str]]]],
    continuation: str | None,
    deadline: float | None,
) -> Op[StepResult]:
    """Run ``run_one`` on each unit in order until ``deadline``; the token counts the units done.

    ``run_one`` returns its counts and the failures it recorded itself. A
    unit that raises anything but a service error is recorded too, and
    counted as done: it would fail the same way on every retry, so raising
    (or stopping there) would block every later unit for good.
    """
    binding = request_binding(action, s.tenant_prefix, request)
    done = 0 if continuation is None else _count(decode_token(continuation, action, binding), len(units))
    total = PruneResult()
    errors: list[str] = []
    started = 0
    while done < len(units):
        if started and deadline is not None and clock.now() >= deadline:
            token = encode_token(action, binding, {"done": done})
            return StepResult("continue", token, asdict(total), tuple(errors))
        unit = units[done]
        got = yield from contain_failure(run_one(unit), errors, f"{kind} {unit!r}")
        if got is not None:
            res, failed = got
            total.add(res)
            errors.extend(f"{kind} {unit!r}: {f}" for f in failed)
        done += 1
        started += 1
    return StepResult("done", None, asdict(total), tuple(errors))


def prune_step(
    s: BaseDynamoDBSaver,
    thread_ids: Sequence[str],
    *,
    strategy: str = "keep_latest",
    keep_last: int | None = None,
    continuation: str | None = None,
    deadline: float | None = None,
) -> Op[StepResult]:
    """:meth:`prune` a thread at a time until ``deadline``; resume with ``continuation``.

    Each thread's prune is safe to interrupt and redo, so a replayed step
    converges. A thread whose items cannot be read (anything but a service
    error) is recorded in the result's ``errors`` and skipped.

    Example:
        >>> step = saver.prune_step(["t1", "t2"], keep_last=5, deadline=time.time() + 60)  # doctest: +SKIP
        >>> step.status, step.report["checkpoints_deleted"]  # doctest: +SKIP
        ('done', 12)
    """
    threads = _id_list(thread_ids, "thread_ids")
    for t in threads:
        # Refused before anything changes, not recorded as a unit's failure.
        s.keys.check(t, "", None)
    # The library validates strategy and keep_last (no I/O for an empty list).
    yield from prune(s, [], strategy=strategy, keep_last=keep_last)
    request = {"thread_ids": threads, "strategy": strategy, "keep_last": keep_last}

    def one(thread_id: str) -> Op[tuple[PruneResult, list[str]]]:
        res = yield from prune(s, [thread_id], strategy=strategy, keep_last=keep_last)
        return res, []

    return (yield from _per_unit(s, "prune", request, "thread", threads, one, continuation, deadline))


def delete_for_runs_step(
    s: BaseDynamoDBSaver,
    run_ids: Sequence[str],
    *,
    continuation: str | None = None,
    deadline: float | None = None,
) -> Op[StepResult]:
    """:meth:`delete_for_runs` a run id at a time until ``deadline``; resume with ``continuation``.

    Each run's delete is safe to interrupt and redo. A thread whose items
    cannot be read is recorded in the result's ``errors`` (its share of the
    run stays); the run's items in every other thread, and the later runs,
    are deleted.

    Example:
        >>> saver.delete_for_runs_step(["run-1"]).status  # doctest: +SKIP
        'done'
    """
    runs = _id_list(run_ids, "run_ids")

    def one(run_id: str) -> Op[tuple[PruneResult, list[str]]]:
        return (yield from delete_for_runs_isolated(s, [run_id]))

    return (
        yield from _per_unit(
            s, "delete_for_runs", {"run_ids": runs}, "run", runs, one, continuation, deadline
        )
    )
