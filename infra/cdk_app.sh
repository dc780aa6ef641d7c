#!/bin/sh
# The CDK CLI runs the app from the repository root (where cdk.json is).
# Prefer the project's virtualenv (where `make setup` installed the library
# and the cdk extra); fall back to python3 for a user-managed environment.
if [ -x .venv/bin/python ]; then
  exec .venv/bin/python infra/app.py "$@"
fi
exec python3 infra/app.py "$@"
