"""The tenant key layout as properties: round trips, prefix-freeness, disjointness."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from langgraph.checkpoint.dynamodb import schema

TENANTS = st.text(alphabet="abcXYZ019._:#@+=,-", min_size=1, max_size=12)
THREADS = st.one_of(st.text(min_size=1, max_size=20), st.sampled_from(["|", "a|b", "%7C", "%", "/", "b|t"]))
PREFIX = "checkpoints/"


@given(TENANTS, THREADS)
def test_keys_round_trip(tenant: str, thread: str) -> None:
    assert schema.parse_partition_key(schema.partition_key(thread, tenant)) == (tenant, thread)
    assert schema.parse_partition_key(schema.partition_key(thread)) == ("", thread)
    segment = schema.s3_thread_prefix(PREFIX, thread, tenant)[len(PREFIX) : -1]
    assert schema.parse_s3_thread_segment(segment) == (tenant, thread)
    plain = schema.s3_thread_prefix(PREFIX, thread)[len(PREFIX) : -1]
    assert schema.parse_s3_thread_segment(plain) == ("", thread)


@given(TENANTS, TENANTS, THREADS)
def test_tenant_scopes_are_prefix_free(tenant: str, other: str, thread: str) -> None:
    pk = schema.partition_key(thread, other)
    key = schema.s3_thread_prefix(PREFIX, thread, other) + "_/c/x/body"
    inside = tenant == other
    assert pk.startswith(schema.tenant_partition_prefix(tenant)) is inside
    assert key.startswith(schema.tenant_s3_prefix(PREFIX, tenant)) is inside
    # and no untenanted thread is ever in a tenant's scope
    assert not schema.partition_key(tenant + thread).startswith(schema.tenant_partition_prefix(tenant))
    assert not schema.s3_thread_prefix(PREFIX, tenant + thread).startswith(
        schema.tenant_s3_prefix(PREFIX, tenant)
    )


def test_meta_partitions_are_not_threads() -> None:
    for pk in ("|lifecycle", "|", "", "a|b|c", "a*|t", "a|"):
        assert schema.parse_partition_key(pk) is None, pk


def test_tenant_names_that_would_widen_a_policy_are_refused() -> None:
    import pytest

    for bad in ("${aws:username}", "a*", "a?", "a|b", "a/b", "a%", "", "a b", "é", "x" * 257):
        with pytest.raises(ValueError, match="IAM"):
            schema.validate_tenant_prefix(bad)
        with pytest.raises(ValueError):
            schema.tenant_partition_prefix(bad)
    schema.validate_tenant_prefix("acme-1.eu:prod#a@b+c=d,e_f")
