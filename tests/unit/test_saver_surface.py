"""The savers' surface after the re-cut: one constructor, generated methods that read like written ones."""

from __future__ import annotations

import inspect
import re
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


# ------------------------------------------------ help() reads like a written saver (issue 28)

#: Each saver's own constructor options, besides the shared settings (with their defaults).
OWN_OPTIONS: dict[type, dict[str, object]] = {
    DynamoDBSaver: {"dynamodb_client": None, "s3_client": None, "boto3_session": None},
    AsyncDynamoDBSaver: {
        "session": None,
        "dynamodb_client": None,
        "s3_client": None,
        "io_thread": False,
        "max_in_flight": 8,
    },
}


def _public_methods(cls: type) -> list[tuple[str, object]]:
    return [
        (name, attr)
        for name, attr in inspect.getmembers(cls)
        if not name.startswith("_") and (inspect.isfunction(attr) or inspect.ismethod(attr))
    ]


@pytest.mark.parametrize("cls", [DynamoDBSaver, AsyncDynamoDBSaver])
def test_constructor_signature_spells_out_every_setting_with_its_default(cls: type) -> None:
    params = inspect.signature(cls).parameters
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())  # no **settings
    settings = list(typing.get_type_hints(SaverSettings))
    assert list(params) == [*settings, *OWN_OPTIONS[cls]]
    declared = inspect.signature(BaseDynamoDBSaver.__init__).parameters
    for name in settings:
        assert params[name].default == declared[name].default, name
        assert params[name].annotation == declared[name].annotation, name
    assert params["table_name"].default is inspect.Parameter.empty  # required
    assert {n: params[n].default for n in OWN_OPTIONS[cls]} == OWN_OPTIONS[cls]
    assert "settings" not in str(inspect.signature(cls))


def test_a_subclass_with_its_own_constructor_shows_its_own_signature() -> None:
    class Custom(DynamoDBSaver):
        def __init__(self, *, label: str = "x", **settings: typing.Any) -> None:
            super().__init__(**settings)

    class Plain(DynamoDBSaver):
        pass

    assert list(inspect.signature(Custom).parameters) == ["label", "settings"]
    assert inspect.signature(Plain) == inspect.signature(DynamoDBSaver)


@pytest.mark.parametrize("cls", [DynamoDBSaver, AsyncDynamoDBSaver])
def test_public_methods_show_what_they_return_not_the_operation(cls: type) -> None:
    methods = _public_methods(cls)
    assert {"get_tuple", "put", "prune", "copy_thread"} <= {n for n, _ in methods}
    shown = {name: inspect.signature(m).return_annotation for name, m in methods}  # type: ignore[arg-type]
    assert not {n: r for n, r in shown.items() if re.search(r"\bOp\b", str(r))}
    prefix = "a" if cls is AsyncDynamoDBSaver else ""
    for name in ("prune", "delete_for_runs", "reap_thread"):
        assert shown[prefix + name] == "PruneResult", name
    assert shown[prefix + "copy_thread"] == "None"
    assert shown[prefix + "purge_expired"] == "SweepReport"
    assert shown[prefix + "copy_thread_step"] == "StepResult"
    assert shown["prune"] == "PruneResult"  # the async saver's sync twin too


@pytest.mark.parametrize("cls", [DynamoDBSaver, AsyncDynamoDBSaver])
def test_every_public_method_has_a_docstring(cls: type) -> None:
    # Own docstrings: inspect.getdoc would borrow an undocumented override's from LangGraph's base.
    missing = [name for name, m in _public_methods(cls) if not (getattr(m, "__doc__", None) or "").strip()]
    assert missing == []


@pytest.mark.parametrize("name", ["get_tuple", "put", "put_writes", "delete_thread", "copy_thread", "prune"])
def test_sync_twins_of_the_async_saver_start_with_what_they_do(name: str) -> None:
    twin = getattr(AsyncDynamoDBSaver, name)
    summary = inspect.cleandoc(getattr(AsyncDynamoDBSaver, "a" + name).__doc__).splitlines()[0]
    assert twin.__doc__.splitlines()[0] == summary
