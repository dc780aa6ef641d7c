"""The README's encryption snippet, as written: a saver that seals with the key ring's current key."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_key_ring_snippet_builds_a_sealing_saver(monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph.checkpoint.dynamodb._parts import binding

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    text = README.read_text()
    start = text.index("## Encryption")
    section = text[start : text.find("\n## ", start + 1)]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    ns: dict[str, Any] = {}
    exec(compile(snippet, "README.md", "exec"), ns)
    saver = ns["saver"]
    assert saver.payloads.seals and ns["ring"].key_ids == ("2026-12", "2026-06")
    typed = saver.dump_payload({"x": 1}, where="r", bind=("t", ("p",)))
    assert typed[0].endswith("+bound2:aesgcm.2026-12")
    assert binding.is_sealed(typed[0]) and saver.load_payload(typed, where="r", bind=("t", ("p",))) == {
        "x": 1
    }
