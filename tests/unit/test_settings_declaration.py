"""``config.SETTINGS``: each saver setting declared once, and everything else held to it.

The constructor's signature, ``SaverSettings``, ``from_env``,
``handlers.StoreConfig``, the CDK construct's ``saver_environment`` and the
settings table of ``docs/configuration.md`` all follow the one table.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import DynamoDBSaver, config
from langgraph.checkpoint.dynamodb._engine.ops import Call
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver, SaverSettings
from langgraph.checkpoint.dynamodb.config import REQUIRED, SETTING, SETTINGS, STORE_SETTINGS
from langgraph.checkpoint.dynamodb.lambdas.handlers import StoreConfig

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
#: Rows of the docs table that are one saver's own keywords, not shared settings.
OWN_KEYWORDS = {"dynamodb_client", "s3_client", "max_in_flight", "io_thread"}


def test_the_constructor_signature_is_the_declaration() -> None:
    params = [
        p
        for p in inspect.signature(BaseDynamoDBSaver.__init__).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    assert [p.name for p in params] == [s.name for s in SETTINGS]
    for param, setting in zip(params, SETTINGS, strict=True):
        assert param.annotation == setting.type, setting.name
        want = inspect.Parameter.empty if setting.default is REQUIRED else setting.default
        assert param.default == want, setting.name
        assert type(param.default) is type(want), setting.name


def test_saver_settings_is_the_declaration() -> None:
    assert list(typing.get_type_hints(SaverSettings)) == [s.name for s in SETTINGS]


def _docs_rows() -> list[tuple[list[str], str]]:
    text = DOC.read_text()
    table = text[text.index("| keyword", text.index("## Settings")) :]
    table = table[: table.index("\n\n")]
    rows = []
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        rows.append((re.findall(r"`(\w+)`", cells[0]), cells[1]))
    return rows


def test_the_docs_settings_table_is_the_declaration() -> None:
    rows = _docs_rows()
    documented = [name for names, _ in rows for name in names if name not in OWN_KEYWORDS]
    assert sorted(documented) == sorted(s.name for s in SETTINGS)
    for names, default in rows:
        shown = [SETTING[n].shown_default() for n in names if n in SETTING]
        if not shown:
            continue
        want = shown[0] if len(set(shown)) == 1 else ", ".join(shown)
        assert default == want, names


def test_every_variable_is_in_the_docs_environment_table() -> None:
    text = DOC.read_text()
    table = text[text.index("## Environment variables") : text.index("## Settings")]
    for setting in SETTINGS:
        if setting.env is not None:
            assert f"| `{setting.env}` |" in table, setting.env


def test_store_config_holds_the_store_settings_and_passes_the_rest_on() -> None:
    names = [f.name for f in dataclasses.fields(StoreConfig)]
    assert sorted(names) == sorted([*STORE_SETTINGS, "region_name", "settings"])
    for name in STORE_SETTINGS:
        assert SETTING[name].env is not None, name
    env = {
        config.ENV_TABLE: "t",
        config.ENV_MAX_PAYLOAD_OBJECTS: "5000",
        config.ENV_THROTTLE_PATIENCE: "2.5",
    }
    cfg = StoreConfig.from_env(env)
    assert dict(cfg.settings) == {"max_payload_objects": 5000, "throttle_patience_seconds": 2.5}
    with cfg.saver() as saver:
        assert saver.max_payload_objects == 5000
        assert saver.driver.patience == 2.5


#: A value other than the default for every setting with a variable.
SAMPLES: dict[str, Any] = {
    "table_name": "ckpt",
    "bucket_name": "b",
    "s3_key_prefix": "cp/",
    "tenant_prefix": "acme",
    "ttl": 3600,
    "track_threads": True,
    "max_payload_size": 1234,
    "max_payload_objects": 99,
    "throttle_patience_seconds": 1.5,
}


def test_every_variable_reads_back_what_environment_of_wrote() -> None:
    with_env = {s.name for s in SETTINGS if s.env is not None}
    assert set(SAMPLES) == with_env
    kwargs = config.saver_kwargs_from_env(config.environment_of(SAMPLES))
    assert {k: kwargs[k] for k in SAMPLES} == SAMPLES
    for name, value in SAMPLES.items():
        assert value != SETTING[name].default, name


def test_environment_of_refuses_a_setting_without_a_variable() -> None:
    with pytest.raises(ValueError, match="serde has no environment variable"):
        config.environment_of({"serde": None})


@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), True, "5"])
def test_throttle_patience_is_checked(value: Any) -> None:
    with pytest.raises(ValueError, match="throttle_patience_seconds must be a number of seconds >= 0"):
        DynamoDBSaver(table_name="t", throttle_patience_seconds=value)


def test_a_malformed_patience_variable_is_named() -> None:
    with pytest.raises(ValueError, match="LANGGRAPH_DYNAMODB_THROTTLE_PATIENCE must be a number of seconds"):
        config.saver_kwargs_from_env({config.ENV_TABLE: "t", config.ENV_THROTTLE_PATIENCE: "soon"})


class _Throttled:
    """A DynamoDB client that throttles every request a number of times, then answers."""

    def __init__(self, throttles: int) -> None:
        self.throttles = throttles
        self.calls = 0

    def update_item(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.throttles:
            raise ClientError({"Error": {"Code": "ThrottlingException"}}, "UpdateItem")
        return {}


@pytest.mark.parametrize(("patience", "lands"), [(0.0, False), (60.0, True)])
def test_the_saver_paces_throttles_for_its_patience(patience: float, lands: bool) -> None:
    client = _Throttled(throttles=3)
    saver = DynamoDBSaver(table_name="t", dynamodb_client=client, throttle_patience_seconds=patience)
    call = Call("dynamodb", "update_item", {"TableName": "t"})
    if lands:
        assert saver.driver.call(call) == {}
        assert client.calls == 4
    else:
        with pytest.raises(ClientError):
            saver.driver.call(call)
        assert client.calls == 1


def test_the_default_patience_is_pacings() -> None:
    from langgraph.checkpoint.dynamodb._engine.pacing import PATIENCE_SECONDS

    assert SETTING["throttle_patience_seconds"].default == PATIENCE_SECONDS
    assert DynamoDBSaver(table_name="t").driver.patience == PATIENCE_SECONDS
