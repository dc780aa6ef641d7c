#!/usr/bin/env bash
# `make deploy-local`: cdk bootstrap + deploy into a moto server on loopback,
# run a graph against the deployed table and bucket, cdk destroy, stop moto.
# No AWS account is involved: dummy credentials, every endpoint local.
source "$(dirname "$0")/_env.sh"
ensure_tools

t0=$(date +%s)
step() { echo "==> [$(( $(date +%s) - t0 ))s] $*"; }

PORT=${MOTO_PORT:-$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
LOG=$(mktemp -t moto-XXXXXX.log)
OUTPUTS=$CDK_OUT/deploy-local-outputs.json
STACK=${STACK_NAME:-LangGraphCheckpoints}

step "starting moto on 127.0.0.1:$PORT (log: $LOG)"
"$PY" -m moto.server -H 127.0.0.1 -p "$PORT" >"$LOG" 2>&1 &
MOTO_PID=$!
cleanup() {
  local rc=$?
  kill "$MOTO_PID" 2>/dev/null || true
  wait "$MOTO_PID" 2>/dev/null || true
  if [ "$rc" -ne 0 ]; then
    echo "==> failed (exit $rc); last lines of the moto log $LOG:" >&2
    tail -n 40 "$LOG" >&2 || true
  else
    rm -f "$LOG"
  fi
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  if "$PY" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/moto-api/', timeout=1)" 2>/dev/null; then break; fi
  sleep 0.2
done

export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_SESSION_TOKEN=testing
export AWS_REGION=$CDK_DEFAULT_REGION AWS_DEFAULT_REGION=$CDK_DEFAULT_REGION
# localhost, not 127.0.0.1: moto misparses the template URL the CLI sends otherwise.
export AWS_ENDPOINT_URL=http://localhost:$PORT

# Package for the local interpreter's Python version, so that the handlers in
# the deployed asset can also be imported and run right here (step 4).
RUNTIME=python$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
CTX=(--output "$CDK_OUT" -c removal_policy=destroy -c "stack_name=$STACK" -c "runtime=$RUNTIME" "$@")

step "cdk bootstrap"
# From outside the project: with cdk.json in sight the CLI would synthesize
# (and bundle) the app just to bootstrap an environment named explicitly.
(cd "${TMPDIR:-/tmp}" && "$OLDPWD/$CDK" bootstrap "aws://$CDK_DEFAULT_ACCOUNT/$CDK_DEFAULT_REGION" --no-notices >/dev/null)

step "cdk deploy ($RUNTIME asset, bundled locally with pip)"
# CloudFormation's template validation already ran in `make synth`; it costs
# ~9 s per synth. cdk-nag still runs (and fails the deploy on a finding).
CDK_VALIDATION=false "$CDK" deploy --require-approval never --no-notices --progress events \
  --outputs-file "$OUTPUTS" "${CTX[@]}"
"$PY" infra/local_outputs.py "$STACK" "$OUTPUTS"

step "running a graph against the deployed table and bucket"
"$PY" infra/smoke_graph.py "$OUTPUTS" "$STACK"

step "running the packaged handlers from the deployed asset (asset contents only on sys.path)"
"$PY" infra/check_asset.py "$STACK" "$OUTPUTS" "$CDK_OUT"

step "cdk destroy"
CDK_VALIDATION=false "$CDK" destroy --force --no-notices "${CTX[@]}"

step "done"
