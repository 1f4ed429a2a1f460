# The developer's interface. Every target installs what it needs first.
#
# The tests run on the Python Lambda runs (infra/constructs/functions.py): Python 3.13, the
# first that runs of `python3.13` on PATH (a pyenv shim runs only where 3.13 is selected) and
# pyenv's installed 3.13 versions, newest first. Or name one: make install PYTHON=/path/to/python3.13
LAMBDA_PYTHON := 3.13
PYTHON ?= $(shell for p in python$(LAMBDA_PYTHON) $$(ls -d "$$(pyenv root 2>/dev/null || echo "$${PYENV_ROOT:-$$HOME/.pyenv}")"/versions/$(LAMBDA_PYTHON)*/bin/python$(LAMBDA_PYTHON) 2>/dev/null | sort -rV); do "$$p" -c '' 2>/dev/null && { echo "$$p"; break; }; done)
PYTHON := $(PYTHON)
PYTHON_VERSION := $(if $(PYTHON),$(shell $(PYTHON) -c 'import platform; print(platform.python_version())' 2>/dev/null))
VENV   := .venv
BIN    := $(VENV)/bin
UV     := $(BIN)/uv
STAMP  := $(VENV)/.installed
CDK    := npx --no-install cdk
# The version of uv that installs everything else: the one the lock pins.
UV_VERSION := $(shell sed -n 's/^ *"uv==\([0-9.]*\)".*/\1/p' pyproject.toml)
# The Python the existing .venv was made with: another one (an older clone's 3.11) remakes it.
VENV_VERSION := $(shell sed -n 's/^version\(_info\)\? *= *//p' $(VENV)/pyvenv.cfg 2>/dev/null)

# uv uses the Python it is given, never one it downloads; it reads the registry only.
export UV_PYTHON_DOWNLOADS := never
# jsii (under aws-cdk-lib) warns at length that Node 20 is past its end of life; synth works.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
# The tests start some thirty Python processes (xdist workers, moto, fresh interpreters, the
# CLIs) that import the same modules: compiled once, each loads them from the bytecode cache,
# kept in build/pycache (not beside the sources) even where PYTHONDONTWRITEBYTECODE is set.
export PYTHONPYCACHEPREFIX := $(CURDIR)/build/pycache
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help install browser lock test unit contract emulator e2e infra chaos bench replay capacity demo local runs console smoke lint format clean build synth preflight account deploy destroy

# The tests run in parallel, one local stack per worker (pytest-xdist): WORKERS=1 runs them
# in one process. Two workers per core: the tests wait out batch windows about half of the
# time (on 2 cores: 2 workers 3m58s, 4 workers 2m53s, 6 workers 3m18s). The tests that share a
# slow fixture (the CDK synthesis, the corpus's runs) share one worker (--dist loadgroup).
WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) * 2 )))
PYTEST  := $(BIN)/python -m pytest $(if $(filter 1,$(WORKERS)),,-n $(WORKERS) --dist loadgroup)

.DEFAULT_GOAL := help

## The targets and what each does.
help:
	@awk '/^## /{ c = c (c ? "\n               " : "") substr($$0, 4); next } \
		/^[a-z][a-z0-9_-]*:/{ if (c) printf "make %-9s %s\n", substr($$1, 1, index($$1, ":") - 1), c } { c = "" }' \
		$(firstword $(MAKEFILE_LIST))

# A .venv made by another Python than the one found (or, none found, by another than 3.13) is
# made again.
ifneq ($(VENV_VERSION),$(or $(PYTHON_VERSION),$(filter $(LAMBDA_PYTHON).%,$(VENV_VERSION))))
.PHONY: $(UV)
endif

## The venv, made with Python 3.13, and uv in it (from the registry, with that Python's pip).
$(UV):
	@test -n "$(PYTHON_VERSION)" || { echo "No Python $(LAMBDA_PYTHON) found (tried python$(LAMBDA_PYTHON) and pyenv's" \
		"versions/$(LAMBDA_PYTHON)*). Install it, e.g. 'pyenv install $(LAMBDA_PYTHON)', or name it:" \
		"make install PYTHON=/path/to/python$(LAMBDA_PYTHON)" >&2; exit 1; }
	@case "$(PYTHON_VERSION)" in $(LAMBDA_PYTHON).*) ;; *) echo "$(PYTHON) is Python $(PYTHON_VERSION); the" \
		"tests run on Lambda's Python, $(LAMBDA_PYTHON) (e.g. 'pyenv install $(LAMBDA_PYTHON)')" >&2; exit 1;; esac
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

## The runtime and development dependencies, exactly as uv.lock pins them (make lock updates it).
install: $(STAMP)

$(STAMP): $(UV) pyproject.toml uv.lock
	@$(UV) sync --quiet --locked --extra dev || { echo "make install failed; if uv says that uv.lock" \
		"needs updating (pyproject.toml changed), run 'make lock' and commit uv.lock" >&2; exit 1; }
	touch $(STAMP)

## Re-resolve uv.lock after a change to the dependencies in pyproject.toml (make lock UPGRADE=1: newest allowed).
lock: $(UV)
	$(UV) lock --python $(BIN)/python $(if $(UPGRADE),--upgrade)

## Every test, in parallel: unit, contract, state machine on the emulator, end to end over HTTP,
## stand-ins, CDK template; then the preflight checklist (IAM judges the AWS calls the tests
## recorded) on the template and the asset the tests built (make preflight synthesizes its own).
## The console's test renders its pages in headless Chromium (make browser finds or installs it).
test: install browser
	$(PYTEST)
	$(BIN)/python -m infra.preflight --tested

## Headless Chromium for the console's test: the one CHROMIUM names, else chromium (or
## chromium-browser) on PATH, else Debian's chromium installed with apt-get (as root, or with sudo
## where it asks no password); with neither, it says what to install and fails.
browser:
	@command -v "$${CHROMIUM:-chromium}" > /dev/null || command -v chromium-browser > /dev/null || { \
		if [ "$$(id -u)" = 0 ]; then as=; elif sudo -n true 2> /dev/null; then as=sudo; else \
			echo "The console's test needs Chromium: install Debian's chromium (apt-get install chromium)" \
				"or name a Chromium binary with CHROMIUM=/path" >&2; exit 1; fi; \
		command -v apt-get > /dev/null || { echo "No Chromium and no apt-get: install Chromium and name it" \
			"with CHROMIUM=/path" >&2; exit 1; }; \
		echo "Installing Debian's chromium for the console's test (apt-get, once)"; \
		$$as apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$as apt-get install -y -qq chromium > /dev/null; }

## The randomized fault test at a larger size: make chaos CONVERSATIONS=60 SEED=7 AT_ONCE=40
chaos: install
	CHAOS_CONVERSATIONS=$(or $(CONVERSATIONS),60) CHAOS_SEED=$(or $(SEED),20261125) \
		CHAOS_AT_ONCE=$(or $(AT_ONCE),40) \
		$(BIN)/python -m pytest tests/e2e/pipeline/test_randomized.py -q -s --timeout=3600

## Benchmarks: prints the table and writes docs/benchmarks.md and docs/benchmarks.png.
bench: install
	$(BIN)/python -m tests.support.bench.run

## Only the fast tests that need no emulator (the logic on in-memory fakes).
unit: install
	$(PYTEST) tests/unit

## The in-memory fakes and the table modules against one contract, on moto in process.
contract: install
	$(PYTEST) tests/contract

## The state machine on the emulator (the local stack), with the contract tests.
emulator: install
	$(PYTEST) tests/contract tests/emulator

## End to end over HTTP through the local gateway, and the OpenAI and Twilio stand-ins.
e2e: install
	$(PYTEST) tests/e2e tests/standins

## The synthesized CDK stack: resources, the IAM evaluator and the state machine's own grants, cdk-nag,
## cfn-lint, the Lambda asset. The functions' own AWS calls are judged at the end of a run that makes
## them (make test, emulator, e2e), or from the last run's calls by python -m infra.iam.
infra: install
	$(PYTEST) tests/infra

## Replay arrival times under batching policies: make replay ARGS="--csv arrivals.csv"
## or ARGS="--since 7d" (the deployed Turns table; docs/deploying.md#tuning-the-batching-rules).
replay: install
	$(BIN)/python -m infra.replay $(or $(ARGS),--help)

## The capacity model: make capacity ARGS="--messages-per-second 1000" (docs/capacity.md).
capacity: install
	$(BIN)/python -m infra.capacity $(or $(ARGS),--messages-per-second 100)

## Start the local stack, send a burst of WhatsApp fragments, show what happened.
demo: install
	$(BIN)/python -m infra.local.demo

## The local stack as a service (Ctrl-C to stop). Its settings: docs/local-stack.md.
local: install
	$(BIN)/python -m infra.local

## Inspect runs: make runs ARGS="list --status FAILED" or ARGS="show <execution name>".
runs: install
	$(BIN)/python -m infra.runs $(or $(ARGS),list)

## The console, read-only, for a deployed stack: conversations, bursts and runs (docs/console.md).
console: install
	$(BIN)/python -m infra.console $(ARGS)

## Watch the first message: make smoke ARGS="--from whatsapp:+1..." sends a signed test message
## to the deployed webhook and follows its run to the reply (docs/deploying.md).
smoke: install
	$(BIN)/python -m infra.smoke $(or $(ARGS),--help)

## Lambda assets in build/lambda: our code, and the dependencies from uv.lock for arm64 and Python 3.13
## (wheels, no Docker, the AWS SDK included, every module compiled); then checks them (infra/checks.py).
build: install
	$(BIN)/python -m infra.build_lambda

# A deployment's settings: make synth SETTINGS=FILE, make deploy SETTINGS=FILE (a file of
# NAME=value lines, the names of docs/configuration.md; docs/deploying.md#settings).
SETTINGS_CONTEXT := $(if $(SETTINGS),-c settings_file=$(abspath $(SETTINGS)))

## The CloudFormation template in cdk.out (offline; no AWS account needed); SETTINGS=FILE: the deployment's settings.
synth: build
	$(BIN)/python -m infra.app $(SETTINGS_CONTEXT)
	@echo "Template: cdk.out/$${STACK_NAME:-BurstReply}.template.json"

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund

## What AWS checks and the emulator does not: synthesizes, builds the asset, prints a checklist
## (IAM on the calls the last test run recorded, runtime, bytecode, lock, alarms, model, bus policy).
preflight: synth
	$(BIN)/python -m infra.preflight

## Deploy to the AWS account and region of your credentials (the pinned CDK CLI), after make preflight
## and make account (a red line of either stops it before CloudFormation). SETTINGS=FILE: the
## deployment's settings, given to every deploy (the stack records them; one without over a stack
## deployed with them is refused: docs/deploying.md#a-redeploy-keeps-its-settings).
deploy: preflight node_modules/.package-lock.json
	$(BIN)/python -m infra.account $(SETTINGS_CONTEXT)
	$(CDK) deploy $(SETTINGS_CONTEXT) --require-approval broadening

## What the deploy needs of the account and region of your credentials, and its settings (SETTINGS=FILE)
## against the deployed stack's (read-only; docs/deploying.md).
account: install
	$(BIN)/python -m infra.account $(SETTINGS_CONTEXT)

## Delete the deployed stack (STACK_NAME's, else BurstReply). The CDK CLI runs the app to find
## it, so the asset is built first: it works on a clean checkout too.
destroy: build node_modules/.package-lock.json
	$(CDK) destroy

## ruff, mypy (functions and infra), and an independent validator of the ASL file.
lint: install node_modules/.package-lock.json
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	npx --no-install asl-validator --silent --json-path statemachines/batch_window.asl.json

## ruff's fixes and formatting, applied.
format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## Remove the venv, the caches and everything built.
clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache cdk.out build node_modules
