"""Differential testing against ``InMemorySaver`` with a hypothesis state machine.

Random sequences of ``put``, ``put_writes``, ``get_tuple``, ``list``,
``delete_thread``, ``copy_thread``, ``prune``, late writes after a delete,
lease takeovers and saver re-creation with other thresholds run against
``DynamoDBSaver`` and against the oracle; every answer must match. Thread
ids, namespaces, channel names and task ids contain the key separators
(``|``, ``%``, ``#``, ``:``, ``/``) and non-ASCII text; values are
incompressible bytes sized around the inline, blob and S3 thresholds, plus
``None``, absent channels, strings, numbers and maps.

Known, deliberate differences from ``InMemorySaver`` (the oracle is adapted,
see ``docs/reliability.md``):

* ``list`` without ``checkpoint_ns`` (and ``list(None)``): ours is newest
  first across namespaces (and threads); the oracle yields namespace by
  namespace. Expected = the oracle's matches sorted by checkpoint id.
* ``filter``: a key absent from the metadata never matches (as in the
  Postgres saver); ``InMemorySaver`` treats it as ``None``. Expected is
  computed from the oracle's unfiltered list with that rule.
* ``put_writes`` calls mixing special (``__error__``...) and regular
  channels: ours follows the Postgres saver (the whole call is
  first-write-wins), ``InMemorySaver`` overwrites the special ones. The
  generator makes each call either all-special or all-regular.
* ``copy_thread`` into a thread that already has checkpoints raises
  ``ValueError`` (never merges histories); the oracle model checks that.
* ``copy_thread`` and ``prune`` are modelled on the oracle's dictionaries
  (``InMemorySaver`` 4.3.2 implements neither).

Isolation and finality are checked as properties, not examples:

* Tenants. Each example runs three parties on the SAME thread ids, in one
  table and under one S3 key prefix made for that example: tenants
  ``<example>a`` and ``<example>ab`` (names that are prefixes of each other)
  and an untenanted saver. Each party has its own oracle, and every rule
  acts for one party; the invariant compares every party's ``get_tuple``,
  ``list`` per thread and ``list(None)`` with its own oracle, so a leak, or
  a delete, prune or copy that reaches another party's data, diverges. Reads
  by id of another party's checkpoint ids must find nothing.
* Finality. ``delete_thread`` (and ``prune(strategy="delete")``) first
  captures the configs of the thread's checkpoints, as a run in flight holds
  them; ``late_write`` replays ``put``/``put_writes`` on them (and on the
  late checkpoints those return) afterwards. Every such write descends from
  a deleted lineage, so the oracle does not change: it must stay invisible
  to ``get_tuple`` (latest and by id), ``list`` (with and without namespace,
  ``list(None)``), ``copy_thread`` and ``prune``, while a new conversation
  (a ``put`` without a parent) on the same thread id is visible as usual.
  Namespaces other than ``""`` here start without a ``checkpoint_map``, so
  each is its own lineage (a subgraph that inherits a deleted root is
  covered by ``tests/security/test_finality.py``). A captured checkpoint that
  a later ``copy_thread`` brings back alive is not replayed: a write on it
  is then indistinguishable from one on the live copy.
* Leases. ``lease_lost``: a writer bound to a thread's lease
  (``ThreadLease.bind``) is taken over by a second holder (after a real,
  0.1 s lease); its next ``put`` or ``put_writes`` must raise
  ``LeaseLostError`` and change nothing any reader sees.
"""

from __future__ import annotations

import random
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test
from langgraph.checkpoint.base import ERROR, INTERRUPT, RESUME, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from langgraph.checkpoint.dynamodb.lock import LeaseLostError, ThreadLease
from tests.reliability.workloads import SOAK, session_kw
from tests.support.harness import shared_store

# ------------------------------------------------------------ strategies

_ALPHABET = [*"ab|%#:/_-. é子🙂", "%7C", "%25"]
_key_text = st.lists(st.sampled_from(_ALPHABET), min_size=1, max_size=6).map("".join)
THREAD_IDS = st.one_of(
    _key_text, st.sampled_from(["a|b", "a%7Cb", "a%257Cb", "tenant#1:thread/é", "🙂 %25 |"])
)
NAMESPACES = st.one_of(st.just(""), _key_text, st.sampled_from(["child:1", "a|b:c", "x%7Cy", "子图:1|2"]))
CHANNELS = ("a", "b|c", "m:x", "d%7C", "ü/v")
TASK_IDS = ("t1", "task|2", "t%3", "τ4")
SPECIAL = (ERROR, INTERRUPT, RESUME)

#: Saver configurations: (bucket?, inline_threshold, s3_threshold, encrypted?)
CONFIGS: dict[str, tuple[bool, int, int, bool]] = {
    "no-bucket": (False, 256, 64 * 1024, False),
    "s3": (True, 256, 512, False),
    "s3-encrypted": (True, 256, 512, True),
}
#: Thresholds a ``reopen`` may switch to (payloads written under other
#: thresholds must still be found: the reader looks in the other place).
REOPEN_THRESHOLDS = ((256, 512), (4096, 512), (128, 100_000), (0, 0), (1024, 2048))
#: Lease of the ``lease_lost`` rule: a takeover waits one lease on the
#: waiter's monotonic clock, so short leases keep the rule fast.
LEASE_SECONDS = 0.1
#: Late subgraph starts (see ``late_write``). The latest read of a namespace
#: that a late run first creates after the delete is not guaranteed (no
#: tombstone reaches it: docs/security.md), so that one read is not checked.
LATE_SUBGRAPHS: tuple[str, ...] = ("subgraph",)


def _sizes() -> st.SearchStrategy[int]:
    around = [t + d for t in (0, 128, 256, 512, 1024, 2048, 4096) for d in (-40, -12, -8, -1, 0, 1, 8, 30)]
    return st.one_of(st.sampled_from([n for n in around if n >= 0]), st.integers(0, 6000))


BLOBS = st.builds(lambda n, seed: random.Random(seed).randbytes(n), _sizes(), st.integers(0, 2**32))
VALUES = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.text(max_size=12),
    BLOBS,
    st.dictionaries(st.text(max_size=4), st.one_of(st.integers(-5, 5), st.text(max_size=4)), max_size=3),
)
METADATA = st.fixed_dictionaries(
    {},
    optional={
        "source": st.sampled_from(["input", "loop", "update", "fork"]),
        "step": st.integers(-1, 5),
        "tag": st.sampled_from(["x", "y|z", "é"]),
        "score": st.sampled_from([0.5, 1.0, 2.25]),
        "flag": st.booleans(),
        "big": BLOBS.map(lambda b: b.hex()),
    },
)


# --------------------------------------------------------------- helpers


def _cfg(thread: str, ns: str | None = "", cid: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread}
    if ns is not None:
        conf["checkpoint_ns"] = ns
    if cid is not None:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def norm(t: Any) -> Any:
    """A checkpoint tuple as comparable data."""
    if t is None:
        return None
    c = t.config["configurable"]
    parent = t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
    return (
        (c["thread_id"], c.get("checkpoint_ns", ""), c["checkpoint_id"]),
        t.checkpoint,
        t.metadata,
        parent,
        [tuple(w) for w in t.pending_writes],
    )


def _matches(md: dict[str, Any], flt: dict[str, Any]) -> bool:
    return all(k in md and md[k] == v for k, v in flt.items())


class DivergenceError(AssertionError):
    pass


def _same(ours: Any, want: Any, what: str) -> None:
    if ours != want:
        raise DivergenceError(f"{what}: ours != oracle\n ours: {ours!r:.2000}\n want: {want!r:.2000}")


# ---------------------------------------------------------------- machine

#: The parties of an example: tenant names that are prefixes of each other,
#: and the untenanted scope (``None``), all on the same thread ids.
PARTIES: dict[str, str | None] = {"a": "a", "ab": "ab", "untenanted": None}


@dataclass
class Party:
    """One scope's saver, its own oracle, and what a run in flight still holds."""

    tenant: str | None
    saver: DynamoDBSaver
    oracle: InMemorySaver = field(default_factory=InMemorySaver)
    future: dict[tuple[str, str], list[str]] = field(default_factory=lambda: defaultdict(list))
    # (config, checkpoint, generation) of checkpoints a delete removed, and of
    # the late checkpoints written on them since: a run in flight writes on
    # these. The generation is that of the saver object that wrote the
    # checkpoint (-1: another one), see ``late_write``.
    late: list[tuple[dict[str, Any], dict[str, Any], int]] = field(default_factory=list)
    generation: int = 0  # bumped when the saver object is replaced
    written: set[tuple[str, str, str]] = field(default_factory=set)  # by this generation's saver


def make_machine(config_name: str, table_prefix: str, bucket: str) -> type[RuleBasedStateMachine]:
    has_bucket, inline, s3_threshold, encrypted = CONFIGS[config_name]

    class SaverVsOracle(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.example = f"ex{uuid.uuid4().hex[:10]}"
            # A table per example: the untenanted party's list(None) scans the
            # whole table and must see only this example's threads.
            self.table = f"{table_prefix}-{self.example}"
            self.prefix = f"diff/{self.example}/"
            self.serde = EncryptedSerializer.from_pycryptodome_aes(key=b"k" * 32) if encrypted else None
            DynamoDBSaver(table_name=self.table, **session_kw()).setup()
            self.parties = {
                name: Party(tenant, self._saver(tenant, inline, s3_threshold))
                for name, tenant in PARTIES.items()
            }
            self.p = self.parties["a"]  # the party the current rule acts for
            self.clock = 1_000_000
            self.seq = 0
            self.steps = 0

        # The current party's state, under the names the rules were written with.
        @property
        def saver(self) -> DynamoDBSaver:
            return self.p.saver

        @property
        def oracle(self) -> InMemorySaver:
            return self.p.oracle

        @property
        def future(self) -> dict[tuple[str, str], list[str]]:
            return self.p.future

        def _saver(self, tenant: str | None, inline_threshold: int, s3_thr: int) -> DynamoDBSaver:
            return DynamoDBSaver(
                table_name=self.table,
                bucket_name=bucket if has_bucket else None,
                s3_key_prefix=self.prefix,
                tenant_prefix=None if tenant is None else self.example + tenant,
                serde=self.serde,
                inline_threshold=inline_threshold,
                s3_threshold=s3_thr,
                **session_kw(),
            )

        def _party(self, data: st.DataObject) -> Party:
            self.p = self.parties[data.draw(st.sampled_from(sorted(self.parties)), label="party")]
            return self.p

        def teardown(self) -> None:
            try:
                self.check_everything()
                # Deletes must leave every party's scope empty.
                for p in self.parties.values():
                    for thread in self.threads:
                        p.saver.delete_thread(thread)
                    assert list(p.saver.list(None)) == []
            finally:
                for p in self.parties.values():
                    p.saver.close()
                boto3.client("dynamodb").delete_table(TableName=self.table)

        # ------------------------------------------------------ pools

        @initialize(
            threads=st.lists(THREAD_IDS, min_size=1, max_size=2, unique=True),
            namespaces=st.lists(NAMESPACES, min_size=1, max_size=2, unique=True),
        )
        def pools(self, threads: list[str], namespaces: list[str]) -> None:
            self.threads = threads
            self.namespaces = sorted(set(namespaces) | {""})

        def new_id(self, skew: bool) -> str:
            """uuid6-shaped ids; string order = time order, except skewed ones."""
            self.seq += 1
            if skew:
                ts = self.clock - random.Random(self.seq).randint(1, 50)
            else:
                self.clock += 100
                ts = self.clock
            h = f"1f1{ts:012x}"
            return f"{h[:8]}-{h[8:12]}-6{h[12:15]}-8000-{self.seq:012x}"

        def stored(self, thread: str, ns: str) -> list[str]:
            return sorted(self.oracle.storage.get(thread, {}).get(ns, {}))

        def all_ids(self) -> list[str]:
            return sorted(cid for t in self.oracle.storage.values() for n in t.values() for cid in n)

        # ------------------------------------------------------ rules

        @rule(data=st.data(), n=st.integers(1, 3))
        def put(self, data: st.DataObject, n: int) -> None:
            """``n`` checkpoints in a row on one thread and namespace."""
            self._party(data)
            thread = data.draw(st.sampled_from(self.threads), label="thread")
            ns = data.draw(st.sampled_from(self.namespaces), label="ns")
            for _ in range(n):
                self._put_one(data, thread, ns)

        def _child(
            self, data: st.DataObject, parent: dict[str, Any] | None, cid: str
        ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
            """A checkpoint ``cid`` following ``parent`` (a checkpoint, or None): (checkpoint, metadata, new versions)."""
            versions: dict[str, Any] = {}
            values: dict[str, Any] = {}
            if parent is not None:
                versions = dict(parent["channel_versions"])
                values = dict(parent["channel_values"])
            new_versions: dict[str, Any] = {}
            for ch in CHANNELS:
                action = data.draw(
                    st.sampled_from(["keep", "keep", "update", "update", "absent"]), label=f"ch {ch}"
                )
                if action == "keep" and ch in versions:
                    continue
                if action == "keep":
                    continue
                v = self.saver.get_next_version(versions.get(ch), None)
                versions[ch] = v
                new_versions[ch] = v
                if action == "update":
                    values[ch] = data.draw(VALUES, label=f"value {ch}")
                else:
                    values.pop(ch, None)  # a version without a value: absent, not None
            cp = empty_checkpoint()
            cp.update(
                id=cid,
                ts=f"2026-01-01T00:00:{self.seq % 60:02d}+00:00",
                channel_values=values,
                channel_versions=versions,
                versions_seen={"node|x": {ch: versions[ch] for ch in list(versions)[:2]}},
                updated_channels=sorted(new_versions),
            )
            return dict(cp), dict(data.draw(METADATA, label="metadata")), new_versions

        def _put_one(
            self, data: st.DataObject, thread: str, ns: str, saver: DynamoDBSaver | None = None
        ) -> None:
            existing = self.stored(thread, ns)
            how = data.draw(st.sampled_from(["latest", "latest", "fork", "root"]), label="parent")
            parent = None
            if existing and how == "latest":
                parent = existing[-1]
            elif existing and how == "fork":
                parent = data.draw(st.sampled_from(existing), label="fork_from")
            pcp = None if parent is None else self.oracle.get_tuple(_cfg(thread, ns, parent)).checkpoint
            future = self.future.get((thread, ns))
            if future and data.draw(st.booleans(), label="use_future_id"):
                cid = future.pop(0)
            else:
                cid = self.new_id(data.draw(st.booleans(), label="skew") and self.seq % 3 == 0)
            cp, md, new_versions = self._child(data, pcp, cid)
            config = _cfg(thread, ns, parent)
            if data.draw(st.booleans(), label="run_id"):
                config["metadata"] = {"run_id": f"run-{self.seq % 3}"}
            ours = (saver or self.saver).put(config, cp, dict(md), dict(new_versions))
            want = self.oracle.put(config, cp, dict(md), dict(new_versions))
            _same(ours, want, "put returned config")
            self.p.written.add((thread, ns, cid))

        @rule(data=st.data())
        def put_writes(self, data: st.DataObject) -> None:
            self._party(data)
            thread = data.draw(st.sampled_from(self.threads), label="thread")
            ns = data.draw(st.sampled_from(self.namespaces), label="ns")
            existing = self.stored(thread, ns)
            if existing and data.draw(st.integers(0, 4), label="ahead") > 0:
                cid = data.draw(st.sampled_from(existing), label="cid")
            else:  # writes that arrive before their checkpoint (durability="async")
                cid = self.new_id(False)
                self.future[(thread, ns)].append(cid)
            task_id, writes = self._writes(data)
            config = _cfg(thread, ns, cid)
            task_path = f"~path|{task_id}"  # one path per task, as LangGraph does
            self.saver.put_writes(config, writes, task_id, task_path)
            self.oracle.put_writes(config, writes, task_id, task_path)

        def _writes(self, data: st.DataObject) -> tuple[str, list[tuple[str, Any]]]:
            task_id = data.draw(st.sampled_from(TASK_IDS), label="task")
            if data.draw(st.integers(0, 3), label="special") == 0:
                writes = data.draw(
                    st.lists(st.tuples(st.sampled_from(SPECIAL), VALUES), min_size=1, max_size=2)
                )
            else:
                writes = data.draw(
                    st.lists(st.tuples(st.sampled_from((*CHANNELS, "extra")), VALUES), min_size=1, max_size=4)
                )
            return task_id, writes

        @rule(data=st.data())
        def get_tuple(self, data: st.DataObject) -> None:
            me = self._party(data)
            thread = data.draw(st.sampled_from(self.threads), label="thread")
            ns = data.draw(st.sampled_from(self.namespaces), label="ns")
            existing = self.stored(thread, ns)
            # "foreign": an id another party stored on the same thread id.
            foreign = [
                cid
                for p in self.parties.values()
                if p is not me
                for cid in p.oracle.storage.get(thread, {}).get(ns, {})
            ]
            choice = data.draw(
                st.sampled_from(["latest", "id", "missing", "no-ns", "foreign"]), label="which"
            )
            if choice == "id" and existing:
                config = _cfg(thread, ns, data.draw(st.sampled_from(existing), label="cid"))
            elif choice == "missing":
                config = _cfg(thread, ns, self.new_id(False))
            elif choice == "no-ns":
                config = _cfg(thread, None)
            elif choice == "foreign" and foreign:
                config = _cfg(thread, ns, data.draw(st.sampled_from(sorted(foreign)), label="foreign_cid"))
            else:
                config = _cfg(thread, ns)
            _same(
                norm(self.saver.get_tuple(config)),
                norm(self.oracle.get_tuple(config)),
                f"get_tuple({config})",
            )

        @rule(data=st.data())
        def list_(self, data: st.DataObject) -> None:
            self._party(data)
            kind = data.draw(st.sampled_from(["ns", "ns", "thread", "all", "id"]), label="scope")
            thread = data.draw(st.sampled_from(self.threads), label="thread")
            ns = data.draw(st.sampled_from(self.namespaces), label="ns")
            config: dict[str, Any] | None
            if kind == "ns":
                config = _cfg(thread, ns)
            elif kind == "thread":
                config = _cfg(thread, None)
            elif kind == "id":
                ids = self.stored(thread, ns)
                config = _cfg(thread, ns, data.draw(st.sampled_from(ids)) if ids else self.new_id(False))
            else:
                config = None
            flt = data.draw(
                st.one_of(
                    st.none(),
                    st.dictionaries(
                        st.sampled_from(["source", "step", "tag", "flag", "run_id", "missing"]),
                        st.sampled_from(["input", "loop", 1, 2, True, "x", "y|z", "run-1", 0, None]),
                        max_size=2,
                    ),
                ),
                label="filter",
            )
            before = None
            ids = self.all_ids()
            if ids and data.draw(st.booleans(), label="before?"):
                before = _cfg("any", "", data.draw(st.sampled_from(ids), label="before"))
            limit = data.draw(st.one_of(st.none(), st.integers(0, 4)), label="limit")
            ours = [norm(t) for t in self.saver.list(config, filter=flt, before=before, limit=limit)]
            self._compare_list(ours, config, flt, before, limit)

        def _compare_list(
            self, ours: list[Any], config: Any, flt: Any, before: Any, limit: int | None
        ) -> None:
            full = [t for t in self.oracle.list(config, before=before) if _matches(t.metadata, flt or {})]
            what = f"list({config}, filter={flt}, before={before}, limit={limit})"
            if config is not None and "checkpoint_ns" in config["configurable"]:
                want = [norm(t) for t in full]
                _same(ours, want[:limit] if limit is not None else want, what)
                return
            # Newest first across namespaces (and threads): ids may tie only
            # across threads (copies), where the order is unspecified.
            want_all = sorted((norm(t) for t in full), key=lambda n: n[0][2], reverse=True)
            ours_ids = [n[0][2] for n in ours]
            want_ids = [n[0][2] for n in want_all]
            _same(ours_ids, want_ids[:limit] if limit is not None else want_ids, what + " ids")
            _same(sorted(ours, key=repr), sorted([n for n in want_all if n in ours], key=repr), what)
            if limit is None:
                _same(sorted(ours, key=repr), sorted(want_all, key=repr), what)

        def _capture(self, thread: str) -> None:
            """What a run in flight on ``thread`` holds when it is deleted: configs of its checkpoints."""
            for ns, cps in self.oracle.storage.get(thread, {}).items():
                for cid in sorted(cps)[-3:]:  # the newest few: a run holds recent ones
                    cp = self.oracle.get_tuple(_cfg(thread, ns, cid)).checkpoint
                    gen = self.p.generation if (thread, ns, cid) in self.p.written else -1
                    self.p.late.append((_cfg(thread, ns, cid), dict(cp), gen))
            del self.p.late[:-12]

        def _forget_future(self, thread: str) -> None:
            for key in [k for k in self.future if k[0] == thread]:
                del self.future[key]

        @rule(data=st.data())
        def delete_thread(self, data: st.DataObject) -> None:
            me = self._party(data)
            # Mostly a thread with checkpoints: there is something to be final about.
            busy = [t for t in self.threads if any(self.oracle.storage.get(t, {}).values())]
            pool = busy if busy and data.draw(st.integers(0, 3), label="busy?") else self.threads
            thread = data.draw(st.sampled_from(pool), label="thread")
            self._capture(thread)
            self.saver.delete_thread(thread)
            self.oracle.delete_thread(thread)
            self._forget_future(thread)
            while data.draw(st.booleans(), label="run in flight"):
                if not self._late_write(data, me):
                    break

        def _held(self, p: Party) -> list[tuple[dict[str, Any], dict[str, Any], int]]:
            """What a run in flight of ``p`` may still write on.

            A captured checkpoint that a copy brought back alive is live
            history again: a write on it is no longer a late one.
            """
            live = p.oracle.storage
            return [
                entry
                for entry in p.late
                if entry[0]["configurable"]["checkpoint_id"]
                not in live.get(entry[0]["configurable"]["thread_id"], {}).get(
                    entry[0]["configurable"]["checkpoint_ns"], {}
                )
            ]

        @rule(data=st.data())
        def late_write(self, data: st.DataObject) -> None:
            """A run in flight across a delete writes on a config it read before it.

            Every such write descends from a deleted lineage: the oracle does
            not change, and the late checkpoint is invisible at once and in
            every later check.
            """
            # Among the parties a delete left a run in flight to.
            holders = sorted(name for name, p in self.parties.items() if self._held(p))
            if holders:
                self.p = self.parties[data.draw(st.sampled_from(holders), label="party")]
                self._late_write(data, self.p)

        def _late_write(self, data: st.DataObject, me: Party) -> bool:
            held = self._held(me)
            if not held:
                return False
            config, parent, gen = data.draw(st.sampled_from(held), label="held")
            thread, ns = config["configurable"]["thread_id"], config["configurable"]["checkpoint_ns"]
            # A subgraph the late run starts: its first checkpoint has no
            # parent in its own namespace and names the deleted one in
            # ``checkpoint_map``. Only the saver object that wrote (or read)
            # that checkpoint knows its lineage without a request, so it is
            # final only when written by the same saver (docs/security.md).
            # Its namespace is new, as LangGraph's are (``child:<task id>``):
            # by-id reads and listings across namespaces must not show it; a
            # latest read of that one namespace is not checked (it is not
            # guaranteed: that namespace's tombstone does not list the
            # parent graph's roots).
            how = data.draw(st.sampled_from(["put", "put_writes", *LATE_SUBGRAPHS]), label="late")
            if how == "subgraph" and gen == me.generation:
                cp, md, new_versions = self._child(data, None, self.new_id(False))
                sub_ns = f"late:{cp['id']}|子"
                cmap = {ns: config["configurable"]["checkpoint_id"]}
                sub_cfg = {
                    "configurable": {"thread_id": thread, "checkpoint_ns": sub_ns, "checkpoint_map": cmap}
                }
                late = self.saver.put(sub_cfg, cp, md, new_versions)
            elif how != "put_writes":
                cp, md, new_versions = self._child(data, parent, self.new_id(False))
                late = self.saver.put(config, cp, md, new_versions)
                # Another step of the same run continues from it.
                me.late.append((late, cp, me.generation))
            else:
                task_id, writes = self._writes(data)
                late = config
                self.saver.put_writes(config, writes, task_id, f"~path|{task_id}")
            del me.late[:-12]
            _same(norm(self.saver.get_tuple(late)), None, f"late checkpoint {late} by id")
            _same([norm(t) for t in self.saver.list(late)], [], f"list({late}) of a late checkpoint")
            for c in (_cfg(thread, ns), _cfg(thread, None)):
                _same(
                    norm(self.saver.get_tuple(c)),
                    norm(self.oracle.get_tuple(c)),
                    f"get_tuple({c}) after a late write",
                )
            for c in (_cfg(thread, ns), _cfg(thread, None)):
                self._compare_list([norm(t) for t in self.saver.list(c)], c, None, None, None)
            return True

        @rule(data=st.data())
        def lease_lost(self, data: st.DataObject) -> None:
            """A lease-bound writer, paused past its lease, is taken over; what it writes then changes nothing.

            The first holder writes through ``lease.bind()`` while it holds
            the lease (that lands, as any put); a second holder takes the lock
            over after watching it unchanged for a whole lease. The first
            holder's next ``put`` or ``put_writes`` must raise
            ``LeaseLostError`` and leave the oracle's view intact; the new
            holder's bound writes land.
            """
            self._party(data)
            thread = data.draw(st.sampled_from(self.threads), label="thread")
            ns = data.draw(st.sampled_from(self.namespaces), label="ns")
            first = ThreadLease(self.saver, thread, lease_seconds=LEASE_SECONDS, heartbeat=False)
            first.acquire()
            stale = first.bind()
            if data.draw(st.booleans(), label="put while held"):
                self._put_one(data, thread, ns, saver=stale)
            second = ThreadLease(
                self.saver,
                thread,
                lease_seconds=LEASE_SECONDS,
                wait_seconds=5,
                poll_seconds=LEASE_SECONDS / 4,
                heartbeat=False,
            )
            second.acquire()
            try:
                existing = self.stored(thread, ns)
                if data.draw(st.booleans(), label="stale put?"):
                    parent = existing[-1] if existing else None
                    pcp = (
                        None if parent is None else self.oracle.get_tuple(_cfg(thread, ns, parent)).checkpoint
                    )
                    cp, md, new_versions = self._child(data, pcp, self.new_id(False))
                    with pytest.raises(LeaseLostError):
                        stale.put(_cfg(thread, ns, parent), cp, md, new_versions)
                else:
                    cid = (
                        data.draw(st.sampled_from(existing), label="cid") if existing else self.new_id(False)
                    )
                    task_id, writes = self._writes(data)
                    with pytest.raises(LeaseLostError):
                        stale.put_writes(_cfg(thread, ns, cid), writes, task_id, f"~path|{task_id}")
                for c in (_cfg(thread, ns), _cfg(thread, None)):
                    _same(
                        norm(self.saver.get_tuple(c)),
                        norm(self.oracle.get_tuple(c)),
                        f"get_tuple({c}) after a stale write",
                    )
                if data.draw(st.booleans(), label="new holder puts"):
                    self._put_one(data, thread, ns, saver=second.bind())
            finally:
                second.release()

        @rule(data=st.data())
        def copy_thread(self, data: st.DataObject) -> None:
            self._party(data)
            src = data.draw(st.sampled_from(self.threads), label="src")
            dst = data.draw(st.sampled_from(self.threads), label="dst")
            o = self.oracle
            refuse = src == dst or any(o.storage.get(dst, {}).values())
            if refuse:
                with pytest.raises(ValueError):
                    self.saver.copy_thread(src, dst)
                return
            self.saver.copy_thread(src, dst)
            for ns, cps in list(o.storage.get(src, {}).items()):
                for cid, val in cps.items():
                    o.storage[dst][ns][cid] = val
            for (t, ns, cid), ws in list(o.writes.items()):
                if t == src:
                    o.writes[(dst, ns, cid)].update(ws)
            for (t, ns, ch, v), blob in list(o.blobs.items()):
                if t == src:
                    o.blobs[(dst, ns, ch, v)] = blob

        @rule(data=st.data())
        def prune(self, data: st.DataObject) -> None:
            self._party(data)
            threads = data.draw(
                st.lists(st.sampled_from(self.threads), min_size=1, max_size=2), label="threads"
            )
            strategy = data.draw(st.sampled_from(["keep_latest", "keep_latest", "delete"]), label="strategy")
            if strategy == "delete":
                for thread in dict.fromkeys(threads):
                    self._capture(thread)
            self.saver.prune(threads, strategy=strategy)
            o = self.oracle
            for thread in dict.fromkeys(threads):
                if strategy == "delete":
                    o.delete_thread(thread)
                    self._forget_future(thread)
                    continue
                for ns, cps in o.storage.get(thread, {}).items():
                    if not cps:
                        continue
                    latest = max(cps)
                    for cid in [c for c in cps if c != latest]:
                        del cps[cid]
                        o.writes.pop((thread, ns, cid), None)

        @rule(data=st.data(), thresholds=st.sampled_from(REOPEN_THRESHOLDS))
        def reopen(self, data: st.DataObject, thresholds: tuple[int, int]) -> None:
            """A new saver (another process, new thresholds, higher or lower) on the same data."""
            self._reopen(self._party(data), thresholds)

        def _reopen(self, p: Party, thresholds: tuple[int, int]) -> None:
            p.saver.close()
            p.saver = self._saver(p.tenant, *thresholds)
            p.generation += 1
            p.written.clear()

        @rule(data=st.data(), thresholds=st.sampled_from(REOPEN_THRESHOLDS))
        def handover(self, data: st.DataObject, thresholds: tuple[int, int]) -> None:
            """Another writer, with other thresholds, continues a thread keeping every value.

            Unchanged channels are referenced, not rewritten: the new writer
            must find values the old one stored in the other place.
            """
            self._party(data)
            thread = data.draw(st.sampled_from(self.threads), label="thread")
            ns = data.draw(st.sampled_from(self.namespaces), label="ns")
            existing = self.stored(thread, ns)
            if not existing:
                return
            self._reopen(self.p, thresholds)
            pt = self.oracle.get_tuple(_cfg(thread, ns, existing[-1]))
            cp = dict(pt.checkpoint)
            cp["id"] = self.new_id(False)
            config = _cfg(thread, ns, existing[-1])
            self.saver.put(config, cp, {"source": "loop"}, {})
            self.oracle.put(config, cp, {"source": "loop"}, {})
            self.p.written.add((thread, ns, cp["id"]))
            latest = _cfg(thread, ns)
            _same(norm(self.saver.get_tuple(latest)), norm(self.oracle.get_tuple(latest)), "after handover")

        @rule()
        def check(self) -> None:
            self.check_everything()

        def check_everything(self) -> None:
            for name, p in self.parties.items():
                self.p = p
                for thread in self.threads:
                    ours = sorted((norm(t) for t in self.saver.list(_cfg(thread, None))), key=repr)
                    want = sorted((norm(t) for t in self.oracle.list(_cfg(thread, None))), key=repr)
                    _same(ours, want, f"{name}: full listing of thread {thread!r}")
                    for ns in self.namespaces:
                        _same(
                            norm(self.saver.get_tuple(_cfg(thread, ns))),
                            norm(self.oracle.get_tuple(_cfg(thread, ns))),
                            f"{name}: latest of {thread!r}/{ns!r}",
                        )
                # Every thread of the scope: another party's threads never show.
                self._compare_list([norm(t) for t in self.saver.list(None)], None, None, None, None)

    return SaverVsOracle


@pytest.fixture(scope="module")
def diff_store(moto_endpoint: str) -> dict[str, str]:
    return shared_store("diff")


#: Examples per configuration in CI (soak: 100 each, 30 steps).
CI_EXAMPLES = {"s3": 15, "s3-encrypted": 12, "no-bucket": 12}


@pytest.mark.timeout(3000 if SOAK else 300)
@pytest.mark.parametrize("config_name", sorted(CONFIGS))
def test_saver_matches_in_memory_oracle(diff_store: dict[str, str], config_name: str) -> None:
    machine = make_machine(config_name, diff_store["table_name"], diff_store["bucket_name"])
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=100 if SOAK else CI_EXAMPLES[config_name],
            stateful_step_count=30 if SOAK else 20,
            deadline=None,
            derandomize=not SOAK,  # CI: the same examples every run; soak: fresh ones
            database=None,
            suppress_health_check=[
                HealthCheck.too_slow,
                HealthCheck.data_too_large,
                HealthCheck.filter_too_much,
            ],
        ),
    )


@pytest.mark.parametrize("bucket", [False, True])
def test_lower_inline_threshold_keeps_unchanged_values_readable(
    diff_store: dict[str, str], bucket: bool
) -> None:
    kw: dict[str, Any] = {"table_name": diff_store["table_name"], **session_kw()}
    if bucket:
        kw.update(bucket_name=diff_store["bucket_name"], s3_key_prefix=f"lower-{uuid.uuid4().hex[:8]}/")
    thread = f"lower-{uuid.uuid4().hex[:8]}"
    old = DynamoDBSaver(**kw, inline_threshold=4096, s3_threshold=64 * 1024)
    cp = empty_checkpoint()
    cp.update(
        id="1f1a0000-0000-6000-8000-000000000001",
        channel_values={"a": "v" * 500},
        channel_versions={"a": "1"},
    )
    parent = old.put(_cfg(thread), cp, {}, {"a": "1"})  # 500 bytes: inline for this writer
    new = DynamoDBSaver(**kw, inline_threshold=128, s3_threshold=256)
    child = {**cp, "id": "1f1a0000-0000-6000-8000-000000000002"}
    new.put(parent, child, {}, {})  # "a" unchanged: not in new_versions
    for reader in (new, old):
        assert reader.get_tuple(_cfg(thread)).checkpoint["channel_values"] == {"a": "v" * 500}
