"""Differential testing against ``InMemorySaver`` with a hypothesis state machine.

Random sequences of ``put``, ``put_writes``, ``get_tuple``, ``list``,
``delete_thread``, ``copy_thread``, ``prune`` and saver re-creation with
other thresholds run against ``DynamoDBSaver`` and against the oracle; every
answer must match. Thread ids, namespaces, channel names and task ids contain
the key separators (``|``, ``%``, ``#``, ``:``, ``/``) and non-ASCII text;
values are incompressible bytes sized around the inline, blob and S3
thresholds, plus ``None``, absent channels, strings, numbers and maps.

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

Each example runs under a fresh ``tenant_prefix`` in a shared table (and a
fresh S3 key prefix), so ``list(None)`` sees only that example's threads.
"""

from __future__ import annotations

import random
import uuid
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test
from langgraph.checkpoint.base import ERROR, INTERRUPT, RESUME, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from tests.reliability.workloads import SOAK, session_kw
from tests.support.harness import shared_store

# ------------------------------------------------------------ strategies

_ALPHABET = [*"ab|%#:/_-. é子🙂", "%7C", "%25"]
_key_text = st.lists(st.sampled_from(_ALPHABET), min_size=1, max_size=6).map("".join)
THREAD_IDS = st.one_of(_key_text, st.sampled_from(["a|b", "a%7Cb", "a%257Cb", "tenant#1:thread/é", "🙂 %25 |"]))
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


def make_machine(config_name: str, table: str, bucket: str) -> type[RuleBasedStateMachine]:
    has_bucket, inline, s3_threshold, encrypted = CONFIGS[config_name]

    class SaverVsOracle(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.tenant = f"ex{uuid.uuid4().hex[:10]}-"
            self.prefix = f"diff/{self.tenant}/"
            self.serde = EncryptedSerializer.from_pycryptodome_aes(key=b"k" * 32) if encrypted else None
            self.saver = self._saver(inline, s3_threshold)
            self.oracle = InMemorySaver()
            self.clock = 1_000_000
            self.seq = 0
            self.future: dict[tuple[str, str], list[str]] = defaultdict(list)  # writes stored ahead of a put
            self.steps = 0

        def _saver(self, inline_threshold: int, s3_thr: int) -> DynamoDBSaver:
            return DynamoDBSaver(
                table_name=table,
                bucket_name=bucket if has_bucket else None,
                s3_key_prefix=self.prefix,
                tenant_prefix=self.tenant,
                serde=self.serde,
                inline_threshold=inline_threshold,
                s3_threshold=s3_thr,
                **session_kw(),
            )

        def teardown(self) -> None:
            try:
                self.check_everything()
                # Keep the shared table small: list(None) scans all of it.
                for thread in self.threads:
                    self.saver.delete_thread(thread)
                assert list(self.saver.list(None)) == []
            finally:
                self.saver.close()

        # ------------------------------------------------------ pools

        @initialize(threads=st.lists(THREAD_IDS, min_size=1, max_size=2, unique=True),
                    namespaces=st.lists(NAMESPACES, min_size=1, max_size=2, unique=True))
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
            thread = data.draw(st.sampled_from(self.threads), label="thread")
            ns = data.draw(st.sampled_from(self.namespaces), label="ns")
            for _ in range(n):
                self._put_one(data, thread, ns)

        def _put_one(self, data: st.DataObject, thread: str, ns: str) -> None:
            existing = self.stored(thread, ns)
            how = data.draw(st.sampled_from(["latest", "latest", "fork", "root"]), label="parent")
            parent = None
            if existing and how == "latest":
                parent = existing[-1]
            elif existing and how == "fork":
                parent = data.draw(st.sampled_from(existing), label="fork_from")
            versions: dict[str, Any] = {}
            values: dict[str, Any] = {}
            if parent is not None:
                pt = self.oracle.get_tuple(_cfg(thread, ns, parent))
                versions = dict(pt.checkpoint["channel_versions"])
                values = dict(pt.checkpoint["channel_values"])
            new_versions: dict[str, Any] = {}
            for ch in CHANNELS:
                action = data.draw(st.sampled_from(["keep", "keep", "update", "update", "absent"]), label=f"ch {ch}")
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
            future = self.future.get((thread, ns))
            if future and data.draw(st.booleans(), label="use_future_id"):
                cid = future.pop(0)
            else:
                cid = self.new_id(data.draw(st.booleans(), label="skew") and self.seq % 3 == 0)
            cp = empty_checkpoint()
            cp.update(
                id=cid,
                ts=f"2026-01-01T00:00:{self.seq % 60:02d}+00:00",
                channel_values=values,
                channel_versions=versions,
                versions_seen={"node|x": {ch: versions[ch] for ch in list(versions)[:2]}},
                updated_channels=sorted(new_versions),
            )
            md = data.draw(METADATA, label="metadata")
            config = _cfg(thread, ns, parent)
            if data.draw(st.booleans(), label="run_id"):
                config["metadata"] = {"run_id": f"run-{self.seq % 3}"}
            ours = self.saver.put(config, cp, dict(md), dict(new_versions))
            want = self.oracle.put(config, cp, dict(md), dict(new_versions))
            _same(ours, want, "put returned config")

        @rule(data=st.data())
        def put_writes(self, data: st.DataObject) -> None:
            thread = data.draw(st.sampled_from(self.threads), label="thread")
            ns = data.draw(st.sampled_from(self.namespaces), label="ns")
            existing = self.stored(thread, ns)
            if existing and data.draw(st.integers(0, 4), label="ahead") > 0:
                cid = data.draw(st.sampled_from(existing), label="cid")
            else:  # writes that arrive before their checkpoint (durability="async")
                cid = self.new_id(False)
                self.future[(thread, ns)].append(cid)
            task_id = data.draw(st.sampled_from(TASK_IDS), label="task")
            if data.draw(st.integers(0, 3), label="special") == 0:
                writes = data.draw(st.lists(st.tuples(st.sampled_from(SPECIAL), VALUES), min_size=1, max_size=2))
            else:
                writes = data.draw(
                    st.lists(st.tuples(st.sampled_from((*CHANNELS, "extra")), VALUES), min_size=1, max_size=4)
                )
            config = _cfg(thread, ns, cid)
            task_path = f"~path|{task_id}"  # one path per task, as LangGraph does
            self.saver.put_writes(config, writes, task_id, task_path)
            self.oracle.put_writes(config, writes, task_id, task_path)

        @rule(data=st.data())
        def get_tuple(self, data: st.DataObject) -> None:
            thread = data.draw(st.sampled_from(self.threads), label="thread")
            ns = data.draw(st.sampled_from(self.namespaces), label="ns")
            existing = self.stored(thread, ns)
            choice = data.draw(st.sampled_from(["latest", "id", "missing", "no-ns"]), label="which")
            if choice == "id" and existing:
                config = _cfg(thread, ns, data.draw(st.sampled_from(existing), label="cid"))
            elif choice == "missing":
                config = _cfg(thread, ns, self.new_id(False))
            elif choice == "no-ns":
                config = _cfg(thread, None)
            else:
                config = _cfg(thread, ns)
            _same(norm(self.saver.get_tuple(config)), norm(self.oracle.get_tuple(config)), f"get_tuple({config})")

        @rule(data=st.data())
        def list_(self, data: st.DataObject) -> None:
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

        def _compare_list(self, ours: list[Any], config: Any, flt: Any, before: Any, limit: int | None) -> None:
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

        @rule(data=st.data())
        def delete_thread(self, data: st.DataObject) -> None:
            thread = data.draw(st.sampled_from(self.threads), label="thread")
            self.saver.delete_thread(thread)
            self.oracle.delete_thread(thread)
            for key in [k for k in self.future if k[0] == thread]:
                del self.future[key]

        @rule(data=st.data())
        def copy_thread(self, data: st.DataObject) -> None:
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
            threads = data.draw(st.lists(st.sampled_from(self.threads), min_size=1, max_size=2), label="threads")
            strategy = data.draw(st.sampled_from(["keep_latest", "keep_latest", "delete"]), label="strategy")
            self.saver.prune(threads, strategy=strategy)
            o = self.oracle
            for thread in dict.fromkeys(threads):
                if strategy == "delete":
                    o.delete_thread(thread)
                    for key in [k for k in self.future if k[0] == thread]:
                        del self.future[key]
                    continue
                for ns, cps in o.storage.get(thread, {}).items():
                    if not cps:
                        continue
                    latest = max(cps)
                    for cid in [c for c in cps if c != latest]:
                        del cps[cid]
                        o.writes.pop((thread, ns, cid), None)

        @rule(thresholds=st.sampled_from(REOPEN_THRESHOLDS))
        def reopen(self, thresholds: tuple[int, int]) -> None:
            """A new saver (another process, new thresholds, higher or lower) on the same data."""
            self.saver.close()
            self.saver = self._saver(*thresholds)

        @rule(data=st.data(), thresholds=st.sampled_from(REOPEN_THRESHOLDS))
        def handover(self, data: st.DataObject, thresholds: tuple[int, int]) -> None:
            """Another writer, with other thresholds, continues a thread keeping every value.

            Unchanged channels are referenced, not rewritten: the new writer
            must find values the old one stored in the other place.
            """
            thread = data.draw(st.sampled_from(self.threads), label="thread")
            ns = data.draw(st.sampled_from(self.namespaces), label="ns")
            existing = self.stored(thread, ns)
            if not existing:
                return
            self.reopen(thresholds)
            pt = self.oracle.get_tuple(_cfg(thread, ns, existing[-1]))
            cp = dict(pt.checkpoint)
            cp["id"] = self.new_id(False)
            config = _cfg(thread, ns, existing[-1])
            self.saver.put(config, cp, {"source": "loop"}, {})
            self.oracle.put(config, cp, {"source": "loop"}, {})
            latest = _cfg(thread, ns)
            _same(norm(self.saver.get_tuple(latest)), norm(self.oracle.get_tuple(latest)), "after handover")

        @rule()
        def check(self) -> None:
            self.check_everything()

        def check_everything(self) -> None:
            for thread in self.threads:
                ours = sorted((norm(t) for t in self.saver.list(_cfg(thread, None))), key=repr)
                want = sorted((norm(t) for t in self.oracle.list(_cfg(thread, None))), key=repr)
                _same(ours, want, f"full listing of thread {thread!r}")
                for ns in self.namespaces:
                    _same(
                        norm(self.saver.get_tuple(_cfg(thread, ns))),
                        norm(self.oracle.get_tuple(_cfg(thread, ns))),
                        f"latest of {thread!r}/{ns!r}",
                    )

    return SaverVsOracle


@pytest.fixture(scope="module")
def diff_store(moto_endpoint: str) -> dict[str, str]:
    return shared_store("diff")


#: Examples per configuration in CI (soak: 100 each, 30 steps).
CI_EXAMPLES = {"s3": 25, "s3-encrypted": 12, "no-bucket": 12}


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
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
        ),
    )


@pytest.mark.parametrize("bucket", [False, True])
def test_lower_inline_threshold_keeps_unchanged_values_readable(diff_store: dict[str, str], bucket: bool) -> None:
    kw: dict[str, Any] = {"table_name": diff_store["table_name"], **session_kw()}
    if bucket:
        kw.update(bucket_name=diff_store["bucket_name"], s3_key_prefix=f"lower-{uuid.uuid4().hex[:8]}/")
    thread = f"lower-{uuid.uuid4().hex[:8]}"
    old = DynamoDBSaver(**kw, inline_threshold=4096, s3_threshold=64 * 1024)
    cp = empty_checkpoint()
    cp.update(id="1f1a0000-0000-6000-8000-000000000001", channel_values={"a": "v" * 500}, channel_versions={"a": "1"})
    parent = old.put(_cfg(thread), cp, {}, {"a": "1"})  # 500 bytes: inline for this writer
    new = DynamoDBSaver(**kw, inline_threshold=128, s3_threshold=256)
    child = {**cp, "id": "1f1a0000-0000-6000-8000-000000000002"}
    new.put(parent, child, {}, {})  # "a" unchanged: not in new_versions
    for reader in (new, old):
        assert reader.get_tuple(_cfg(thread)).checkpoint["channel_values"] == {"a": "v" * 500}
