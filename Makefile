# The developer's interface. Every target installs what it needs first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test unit demo local lint format clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## Every test: unit, state machine on the emulator, end to end over HTTP.
test: install
	$(BIN)/python -m pytest

## Only the fast tests that need no emulator.
unit: install
	$(BIN)/python -m pytest tests/unit

## Start the local stack, send a burst of WhatsApp fragments, show what happened.
demo: install
	$(BIN)/python -m infra.local.demo

## The local stack as a service (Ctrl-C to stop). See README for its settings.
local: install
	$(BIN)/python -m infra.local

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache cdk.out
