"""Run the handlers of a deployed stack from the exact asset CDK uploaded.

``deploy_local.sh`` calls this after ``cdk deploy`` into moto (which stores
Lambda functions but cannot run them): it finds the staged asset folder of
the functions in ``cdk.out`` (the folder CDK zipped), resolves their
environment against the stack outputs, and runs ``asset_probe.py`` on it in
an isolated interpreter (``-I -S``: nothing from this machine's
site-packages), against the deployed table and bucket.

Usage: python infra/check_asset.py STACK_NAME OUTPUTS_JSON [CDK_OUT]
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: Handler string -> probe name (the probe knows how to call each kind).
_KINDS = {
    "agent.handler.handler": "agent",
    "langgraph.checkpoint.dynamodb.lambdas.pruner.handler": "pruner",
    "langgraph.checkpoint.dynamodb.lambdas.reaper.handler": "reaper",
    "langgraph.checkpoint.dynamodb.lambdas.orphan_sweeper.handler": "orphan_sweeper",
}


def _template(cdk_out: Path, stack_name: str) -> dict[str, Any]:
    manifest = json.loads((cdk_out / "manifest.json").read_text())
    for artifact in manifest["artifacts"].values():
        props = artifact.get("properties", {})
        if artifact.get("type") == "aws:cloudformation:stack" and props.get("stackName") == stack_name:
            return json.loads((cdk_out / props["templateFile"]).read_text())  # type: ignore[no-any-return]
    raise SystemExit(f"stack {stack_name} not found in {cdk_out}/manifest.json")


def main(stack_name: str, outputs_path: str, cdk_out: str = "cdk.out") -> int:
    out_dir = Path(cdk_out)
    outputs = json.loads(Path(outputs_path).read_text())[stack_name]
    template = _template(out_dir, stack_name)
    handlers: dict[str, str] = {}
    # Literal environment values of the functions (PRUNE_*, ORPHAN_GRACE_HOURS,
    # TRACK_THREADS...): the handlers run with their deployed configuration.
    # References (table, bucket) are resolved from the stack outputs instead.
    env: dict[str, str] = {}
    assets: set[str] = set()
    for res in template["Resources"].values():
        if res["Type"] != "AWS::Lambda::Function":
            continue
        props = res["Properties"]
        kind = _KINDS.get(props["Handler"])
        if kind is None:
            continue
        handlers[kind] = props["Handler"]
        for key, value in props.get("Environment", {}).get("Variables", {}).items():
            if isinstance(value, str):
                env[key] = value
        assets.add(props["Code"]["S3Key"].removesuffix(".zip"))
    if len(assets) != 1:
        raise SystemExit(f"expected one shared asset for the handlers, found {sorted(assets)}")
    asset_dir = out_dir / f"asset.{assets.pop()}"
    spec = {
        "table": outputs["TableName"],
        "bucket": outputs.get("BucketName"),
        "s3_key_prefix": env.get("LANGGRAPH_DYNAMODB_S3_KEY_PREFIX", "checkpoints/"),
        "handlers": handlers,
        "env": env,
    }
    print(f"environment from the template: {env}")
    print(f"asset {asset_dir} ({sum(1 for _ in asset_dir.rglob('*'))} files); handlers: {sorted(handlers)}")
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(HERE / "asset_probe.py"), str(asset_dir), json.dumps(spec)],
        capture_output=True,
        text=True,
        check=False,
    )
    sys.stderr.write(proc.stderr[-4000:])
    print(proc.stdout.strip())
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
