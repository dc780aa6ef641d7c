# Two commands on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-fast lint format bench synth deploy-local soak pressure clean

# pipefail: the install below is piped through a filter, and a failed pip must still stop make.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

# The first `make demo`/`make test` installs for about two minutes: say so, and show each package as
# pip collects it (one line each) rather than stay silent.
$(STAMP): pyproject.toml
	@echo "==> setting up $(VENV): the library with its dev tools (first run only, about 2 minutes)"
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install --progress-bar off -e ".[dev]" | awk '/^(Collecting|Successfully installed)/ { print substr($$0, 1, 100); fflush() }'
	touch $(STAMP)
	@echo "==> $(VENV) ready"

# The inspector's tests (tests/ui) drive Debian's chromium through its chromedriver: on a fresh
# machine `make test` gets both from apt (as root; about a minute), one progress line per step.
# `make demo` does not need them.
CHROMEDRIVER := /usr/bin/chromedriver

$(CHROMEDRIVER):
	@echo "==> installing chromium + chromium-driver for the inspector's browser tests (apt-get, about 1 minute)"
	@if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
	  echo "error: tests/ui need Debian's chromium and chromium-driver: run 'sudo apt-get install -y chromium chromium-driver'" >&2; \
	  exit 1; fi
	apt-get update -q | awk 'END { print "    package lists updated (" NR " lines)" }'
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver \
	  | awk '/newly installed|^Setting up chromium/ { print "    " substr($$0, 1, 100); fflush() }'
	@echo "==> $$(/usr/bin/chromium --version 2>/dev/null) ready"

# The migrate tests from PostgresSaver (tests/integration/test_migrate_postgres.py) start a throwaway
# PostgreSQL server (initdb + pg_ctl in a temp dir, on 127.0.0.1): on a fresh machine `make test` gets
# Debian's postgresql from apt (as root; under a minute), one progress line per step.
PG_INITDB = $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb))

.PHONY: postgresql
postgresql:
	@if [ -z "$(PG_INITDB)" ]; then \
	  if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
	    echo "error: tests/integration/test_migrate_postgres.py needs Debian's postgresql: run 'sudo apt-get install -y postgresql'" >&2; \
	    exit 1; fi; \
	  echo "==> installing postgresql for the migrate tests (apt-get, under a minute)"; \
	  apt-get update -q | awk 'END { print "    package lists updated (" NR " lines)" }'; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql \
	    | awk '/newly installed|^Setting up postgresql-[0-9]/ { print "    " substr($$0, 1, 100); fflush() }'; \
	  echo "==> $$(ls /usr/lib/postgresql/*/bin/initdb | tail -1) ready"; \
	fi

SHAPE_TESTS = tests/unit/test_code_shape.py tests/unit/test_architecture.py tests/unit/test_no_reach_ins.py

setup: $(STAMP)  ## create .venv with the library and the dev tools

demo: setup  ## the whole story on an embedded local AWS endpoint (moto on 127.0.0.1); UI=1: then the inspector
	$(BIN)/python -m demo $(if $(UI),--ui)

test: setup $(CHROMEDRIVER) postgresql  ## every test tier, against a moto server on 127.0.0.1 (installs chromium for tests/ui, postgresql for migrate)
	$(BIN)/python -m pytest -q -n 2 --durations=10

test-fast: setup
	$(BIN)/python -m pytest -q tests/unit

lint: setup  ## ruff (complexity <= 15) + mypy + the shape checks (file and function length, layers, no reach-ins)
	$(BIN)/ruff check src tests lambdas infra benchmarks demo
	$(BIN)/ruff format --check src tests lambdas infra benchmarks demo
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -p no:cacheprovider $(SHAPE_TESTS)

format: setup
	$(BIN)/ruff check --fix src tests lambdas infra benchmarks demo
	$(BIN)/ruff format src tests lambdas infra benchmarks demo

bench: setup  ## benchmarks against the reference saver; writes docs/benchmarks.md (and benchmarks/asset_cold.json)
	$(BIN)/python -m benchmarks
	$(BIN)/python -m benchmarks.asset_cold
	$(BIN)/python -m benchmarks.throughput  # workloads on the throughput layer (docs/scale.md)

synth: setup  ## cdk synth, offline
	bash infra/synth.sh

deploy-local: setup  ## cdk deploy into a local moto server, then run a graph against it
	bash infra/deploy_local.sh

soak: setup  ## long fault-injection and differential runs
	SOAK=1 $(BIN)/python -m pytest -q tests/reliability tests/security/test_reuse.py tests/e2e/test_fanout.py

pressure: setup  ## the lifecycle, drain, maintenance and lock tiers at 1/100 of AWS's throughput, with transaction conflicts
	THROUGHPUT=on THROUGHPUT_SCALE=0.01 CONTENTION=on $(BIN)/python -m pytest -q -n 2 tests/lifecycle tests/e2e/test_fanout.py tests/e2e/test_runs.py tests/lambdas/test_maintenance.py tests/lambdas/test_agent_lock.py tests/integration/test_delta.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache cdk.out node_modules
