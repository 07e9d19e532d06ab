# The two set-up commands of the README. Each creates .venv and installs the package on first use.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin

.PHONY: demo test check lint types contract unit fast install

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

install: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/ragreplay demo

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts

types: $(BIN)/.installed
	$(BIN)/mypy

# The layer contract of docs/architecture.md (pyproject.toml [tool.importlinter]).
contract: $(BIN)/.installed
	$(BIN)/lint-imports

# The whole suite: unit, integration (SQLite + PostgreSQL), e2e (CLI, headless chromium), benchmark scripts
# (tests/benchmarks: the scripts of benchmarks/, run small).
unit: $(BIN)/.installed
	$(BIN)/pytest

# The fast unit tests only (no database server, no browser, no subprocess): not those marked slow, nor the
# shadow offload's, which start its worker process. `make unit` runs them.
fast: $(BIN)/.installed
	$(BIN)/pytest -q -m "not slow" --ignore=tests/unit/test_shadow_offload.py tests/unit

# Before a commit: lint, types, the layer contract and the fast unit tests (under 2 minutes on 2 cores).
check: lint types contract fast

test: lint types contract unit
