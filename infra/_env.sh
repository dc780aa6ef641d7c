# Shared by synth.sh and deploy_local.sh (sourced, not executed).
# Offline, quiet, and isolated from any AWS configuration on the host.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

VENV=${VENV:-.venv}
PY="$VENV/bin/python"
CDK="node_modules/.bin/cdk"
# Cloud assembly folder (tests point it at a temporary directory).
CDK_OUT=${CDK_OUT:-cdk.out}

export CDK_DISABLE_CLI_TELEMETRY=true
export CDK_DISABLE_VERSION_CHECK=1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
export CDK_DEFAULT_ACCOUNT=${CDK_DEFAULT_ACCOUNT:-123456789012}
export CDK_DEFAULT_REGION=${CDK_DEFAULT_REGION:-us-east-1}
export AWS_CONFIG_FILE=/dev/null
export AWS_SHARED_CREDENTIALS_FILE=/dev/null
export AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE

ensure_tools() {
  if [ ! -x "$PY" ]; then
    echo "error: $PY not found; run 'make setup' first" >&2
    exit 1
  fi
  # The cdk extra (aws-cdk-lib, constructs, cdk-nag) into the project venv.
  if ! "$PY" -c "import aws_cdk, constructs, cdk_nag" >/dev/null 2>&1; then
    echo "==> installing the cdk extra into $VENV"
    "$PY" -m pip install -q --disable-pip-version-check -e ".[cdk]"
  fi
  # The CDK CLI, pinned in package.json / package-lock.json, installed locally.
  if [ ! -x "$CDK" ]; then
    echo "==> installing the CDK CLI (npm ci)"
    npm ci --no-audit --no-fund --loglevel=error
  fi
}
