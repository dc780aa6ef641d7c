"""``_valuecache.ValueCache``: bounded in bytes, least recently used out, tagged entries only."""

from __future__ import annotations

import threading

import pytest

from langgraph.checkpoint.dynamodb._parts.valuecache import ValueCache


def test_entries_need_a_tag() -> None:
    cache = ValueCache(max_bytes=1000)
    cache.put(("b", "k", ""), b"x" * 10)
    assert len(cache) == 0 and cache.get(("b", "k", "")) is None
    cache.put(("b", "k", "t1"), b"x" * 10)
    assert cache.get(("b", "k", "t1")) == b"x" * 10
    assert cache.get(("b", "k", "t2")) is None  # same key, another write
    assert cache.get(("other", "k", "t1")) is None  # another bucket


def test_bounded_in_bytes_least_recently_used_out() -> None:
    cache = ValueCache(max_bytes=1000)
    for i in range(4):
        cache.put(("b", f"k{i}", "t"), bytes([i]) * 250)
    assert cache.nbytes == 1000
    assert cache.get(("b", "k0", "t")) is not None  # k0 is now the most recent
    cache.put(("b", "k4", "t"), b"z" * 250)
    assert cache.nbytes == 1000 and len(cache) == 4
    assert cache.get(("b", "k1", "t")) is None  # the least recently used went
    assert cache.get(("b", "k0", "t")) == b"\x00" * 250


def test_an_entry_is_at_most_a_quarter_of_the_bound() -> None:
    cache = ValueCache(max_bytes=1000)
    cache.put(("b", "big", "t"), b"x" * 251)
    assert len(cache) == 0
    off = ValueCache(max_bytes=0)
    off.put(("b", "k", "t"), b"x")
    assert len(off) == 0


def test_replacing_an_entry_keeps_the_count_right() -> None:
    cache = ValueCache(max_bytes=1000)
    cache.put(("b", "k", "t"), b"x" * 200)
    cache.put(("b", "k", "t"), b"y" * 100)
    assert cache.nbytes == 100 and cache.get(("b", "k", "t")) == b"y" * 100


def test_forget_prefix() -> None:
    cache = ValueCache(max_bytes=1000)
    cache.put(("b", "p/t1/v/a", "t"), b"1")
    cache.put(("b", "p/t2/v/a", "t"), b"2")
    cache.put(("c", "p/t1/v/a", "t"), b"3")
    cache.forget_prefix("b", "p/t1/")
    assert cache.get(("b", "p/t1/v/a", "t")) is None
    assert cache.get(("b", "p/t2/v/a", "t")) == b"2" and cache.get(("c", "p/t1/v/a", "t")) == b"3"
    assert cache.nbytes == 2


@pytest.mark.parametrize("bad", [-1, True, 2.0, "1"])
def test_bad_bound(bad: object) -> None:
    with pytest.raises(ValueError, match="value_cache_bytes"):
        ValueCache(max_bytes=bad)  # type: ignore[arg-type]


def test_threads_share_it() -> None:
    cache = ValueCache(max_bytes=64 * 1024)

    def work(n: int) -> None:
        for i in range(300):
            cache.put(("b", f"{n}/{i % 40}", "t"), b"x" * (i % 97 + 1))
            cache.get(("b", f"{(n + 1) % 4}/{i % 40}", "t"))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.nbytes == sum(len(cache.get(k) or b"") for k in list(cache._entries))
    assert cache.nbytes <= cache.max_bytes


def test_an_upload_replaces_every_other_write_of_its_key() -> None:
    """A caller that reuses a version for another value: S3 holds the last upload, so must the cache."""
    cache = ValueCache(max_bytes=1000)
    cache.put(("b", "k", "t0"), b"old")  # read earlier
    cache.put(("b", "other", "t0"), b"kept")
    cache.uploaded(("b", "k", "t1"), b"new")
    assert cache.get(("b", "k", "t0")) is None
    assert cache.get(("b", "k", "t1")) == b"new"
    assert cache.get(("b", "other", "t0")) == b"kept"
    assert cache.nbytes == len(b"new") + len(b"kept")
    assert cache._tags == {("b", "k"): {"t1"}, ("b", "other"): {"t0"}}
