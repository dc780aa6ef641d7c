"""Helpers for the infra tests: synthesized apps and template navigation.

A uniquely named module (not ``conftest``), so that test modules can import it
without colliding with the repository's other ``conftest.py`` files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FAST_CONTEXT", "Synth", "flatten", "normalize", "synthesize"]

#: Context every test app gets: skip asset bundling (the packaging test and
#: deploy-local run the real bundler), and let a cdk-nag finding land in
#: validation-report.json instead of aborting the synth.
FAST_CONTEXT: dict[str, Any] = {
    "aws:cdk:bundling-stacks": [],
    "@aws-cdk/core:failSynthOnValidationErrors": False,
}


@dataclass
class Synth:
    """One synthesized app: its construct tree, templates and cdk-nag report."""

    app: Any
    outdir: Path
    templates: dict[str, dict[str, Any]]  # stack construct id -> template
    stacks: dict[str, Any]  # stack construct id -> Stack
    stores: dict[str, Any]  # stack construct id -> its CheckpointStore

    def report(self) -> dict[str, Any]:
        return json.loads((self.outdir / "validation-report.json").read_text())  # type: ignore[no-any-return]

    def resources(self, stack: str, type_: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.templates[stack]["Resources"].items() if v["Type"] == type_}

    def one(self, stack: str, type_: str, prefix: str = "") -> tuple[str, dict[str, Any]]:
        """The single resource of ``type_`` whose logical id starts with ``prefix``."""
        found = [(k, v) for k, v in self.resources(stack, type_).items() if k.startswith(prefix)]
        assert len(found) == 1, f"{type_} {prefix}*: {[k for k, _ in found]}"
        return found[0]

    def role_statements(self, stack: str, role_prefix: str) -> list[dict[str, Any]]:
        """Statements of the DefaultPolicy attached to the role ``role_prefix*``."""
        role_id, _ = self.one(stack, "AWS::IAM::Role", role_prefix)
        policies = [
            p
            for k, p in self.resources(stack, "AWS::IAM::Policy").items()
            if {"Ref": role_id} in p["Properties"]["Roles"] and k.startswith(f"{role_prefix}DefaultPolicy")
        ]
        assert len(policies) == 1, f"policies of {role_id}: {len(policies)}"
        return [normalize(s) for s in policies[0]["Properties"]["PolicyDocument"]["Statement"]]


def normalize(statement: dict[str, Any]) -> dict[str, Any]:
    """A statement with ``Action`` always a sorted list (CDK collapses one action to a string)."""
    out = dict(statement)
    actions = out["Action"]
    out["Action"] = sorted([actions] if isinstance(actions, str) else actions)
    return out


def flatten(value: Any) -> str:
    """Render an intrinsic as text: ``Fn::GetAtt`` as ``<Id.Attr>``, ``Ref`` as ``<Id>``."""
    if isinstance(value, str):
        return value
    if "Fn::GetAtt" in value:
        return "<{}.{}>".format(*value["Fn::GetAtt"])
    if "Ref" in value:
        return f"<{value['Ref']}>"
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return str(sep).join(flatten(p) for p in parts)
    raise AssertionError(f"unexpected intrinsic {value}")


def synthesize(app: Any, outdir: Path) -> Synth:
    from aws_cdk import Stack

    assembly = app.synth()
    stacks = {c.node.id: c for c in app.node.children if isinstance(c, Stack)}
    templates = {sid: assembly.get_stack_by_name(s.stack_name).template for sid, s in stacks.items()}
    stores = {sid: s.store for sid, s in stacks.items() if hasattr(s, "store")}
    return Synth(app=app, outdir=outdir, templates=templates, stacks=stacks, stores=stores)
