"""The savers' surface after the re-cut: one constructor, generated methods that read like written ones."""

from __future__ import annotations

import inspect
import typing

import pytest

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from langgraph.checkpoint.dynamodb.aio import AsyncDynamoDBSaver
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver, SaverSettings

#: Methods made from operations (``_methods``): each must look hand-written.
GENERATED = [
    "copy_thread",
    "migrate_tenant_thread",
    "prune",
    "delete_for_runs",
    "reap_thread",
    "reap_expired_stream",
    "purge_expired",
    "run_pruner",
    "sweep_orphans",
    "copy_thread_step",
    "prune_step",
    "delete_for_runs_step",
]


def test_settings_typed_dict_matches_the_one_constructor() -> None:
    params = inspect.signature(BaseDynamoDBSaver.__init__).parameters
    declared = {n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert set(typing.get_type_hints(SaverSettings)) == declared
    hints = typing.get_type_hints(SaverSettings, include_extras=True)
    assert typing.get_origin(hints["table_name"]) is typing.Required
    # Every optional setting has its default in the base constructor, not in the savers.
    assert all(params[n].default is not inspect.Parameter.empty for n in declared - {"table_name"})


@pytest.mark.parametrize("cls", [DynamoDBSaver, AsyncDynamoDBSaver])
def test_savers_take_only_their_clients_besides_the_shared_settings(cls: type) -> None:
    own = [
        n
        for n, p in inspect.signature(cls.__init__).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    # Besides its clients, the async saver chooses which event loop drives
    # its requests (io_thread) and how many it keeps in flight on it
    # (max_in_flight): options the sync saver has no use for.
    own_options = {"io_thread", "max_in_flight"} if cls is AsyncDynamoDBSaver else set()
    assert set(own) <= {"dynamodb_client", "s3_client", "boto3_session", "session", *own_options}


@pytest.mark.parametrize("name", GENERATED)
def test_generated_methods_read_like_written_ones(name: str) -> None:
    sync = getattr(DynamoDBSaver, name)
    amethod = getattr(AsyncDynamoDBSaver, "a" + name)
    twin = getattr(AsyncDynamoDBSaver, name)
    assert sync.__name__ == name and amethod.__name__ == "a" + name and twin.__name__ == name
    assert sync.__doc__ and sync.__doc__ == amethod.__doc__  # one docstring, the operation's
    assert inspect.iscoroutinefunction(amethod) and not inspect.iscoroutinefunction(twin)
    sig = inspect.signature(sync)
    assert next(iter(sig.parameters)) == "self"
    assert "s" not in sig.parameters  # the operation's saver argument is the method's self
    assert inspect.signature(amethod) == sig


def test_unknown_setting_is_refused_by_both_savers() -> None:
    with pytest.raises(TypeError, match="bogus"):
        DynamoDBSaver(table_name="t", region_name="us-east-1", bogus=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="bogus"):
        AsyncDynamoDBSaver(table_name="t", region_name="us-east-1", bogus=1)  # type: ignore[call-arg]
