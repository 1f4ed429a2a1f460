# The developer's interface. Every target installs what it needs first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CDK    := npx --no-install cdk

# jsii (under aws-cdk-lib) warns at length that Node 20 is past its end of life; synth works.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: install test unit chaos bench demo local runs lint format clean build synth deploy destroy

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## Every test: unit, state machine on the emulator, end to end over HTTP.
test: install
	$(BIN)/python -m pytest

## The randomized fault test at a larger size: make chaos CONVERSATIONS=60 SEED=7 AT_ONCE=40
chaos: install
	CHAOS_CONVERSATIONS=$(or $(CONVERSATIONS),60) CHAOS_SEED=$(or $(SEED),20261125) \
		CHAOS_AT_ONCE=$(or $(AT_ONCE),40) \
		$(BIN)/python -m pytest tests/e2e/test_randomized.py -q -s --timeout=3600

## Benchmarks: prints the table and writes docs/benchmarks.md and docs/benchmarks.png.
bench: install
	$(BIN)/python -m tests.bench.run

## Only the fast tests that need no emulator.
unit: install
	$(BIN)/python -m pytest tests/unit

## Start the local stack, send a burst of WhatsApp fragments, show what happened.
demo: install
	$(BIN)/python -m infra.local.demo

## The local stack as a service (Ctrl-C to stop). See README for its settings.
local: install
	$(BIN)/python -m infra.local

## Inspect runs: make runs ARGS="list --status FAILED" or ARGS="show <execution name>".
runs: install
	$(BIN)/python -m infra.runs $(or $(ARGS),list)

## Lambda assets in build/lambda: our code, and the dependencies for arm64 (pip, no Docker).
build: install
	$(BIN)/python -m infra.build_lambda

## The CloudFormation template in cdk.out (offline; no AWS account needed).
synth: build
	$(BIN)/python -m infra.app
	@echo "Template: cdk.out/BurstReply.template.json"

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund

## Deploy to the AWS account and region of your credentials (the pinned CDK CLI).
deploy: build node_modules/.package-lock.json
	$(CDK) deploy --require-approval broadening

destroy: node_modules/.package-lock.json
	$(CDK) destroy

## ruff, mypy (functions and infra), and an independent validator of the ASL file.
lint: install node_modules/.package-lock.json
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	npx --no-install asl-validator --silent --json-path statemachines/batch_window.asl.json

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache cdk.out build node_modules
