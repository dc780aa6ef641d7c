#!/usr/bin/env bash
# `make synth`: synthesize the reference app offline (dummy account/region,
# no credentials, no network beyond the package registries on first run).
# cdk-nag runs inside the synth and fails it on any unacknowledged finding.
source "$(dirname "$0")/_env.sh"
ensure_tools

# No credentials at all: the CLI's default-account lookup then fails fast
# instead of trying to reach AWS; the app uses CDK_DEFAULT_ACCOUNT/REGION.
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_ENDPOINT_URL

start=$(date +%s)
"$CDK" synth --no-notices --quiet --output "$CDK_OUT" "$@"
echo "==> synthesized into $CDK_OUT/ in $(( $(date +%s) - start ))s: $(ls "$CDK_OUT"/*.template.json | tr '\n' ' ')"
