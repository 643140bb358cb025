# Benchproof: two commands from a fresh clone do all the set-up (see README.md).
#   make serve   creates .venv, installs, initialises ./var with fresh keys and demo data, serves
#   make test    creates .venv, installs the test extras, runs the suite
#   make docs    builds the documentation site (mkdocs.yml, docs/) into site/, strict and offline
#   make test-postgres  the store contract and end-to-end tests on a throwaway PostgreSQL cluster
#                (installs Debian's postgresql when missing: needs root or sudo; a few minutes)
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
DATA ?= var
HOST ?= 127.0.0.1
PORT ?= 8000
PG_TESTS ?= tests/postgres tests/contract/test_store.py tests/e2e

.PHONY: serve test test-postgres lint docs bench reliability check-shared clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(VENV)/.runtime

$(VENV)/.docs: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[docs]'
	touch $@ $(VENV)/.runtime

serve: $(VENV)/.runtime
	$(BIN)/benchproof serve --data $(DATA) --host $(HOST) --port $(PORT) --demo

test: $(VENV)/.test
	$(BIN)/pytest -q

# A cluster of its own on a free loopback port, stopped and removed afterwards (tests/pgcluster.py);
# the last line is pytest's summary.
test-postgres: $(VENV)/.test
	$(BIN)/python -m tests.pgcluster env BENCHPROOF_TEST_STORE=postgresql $(BIN)/pytest -q $(PG_TESTS)

lint: $(VENV)/.test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m tests.contract.sqlrooms

# The documentation site: every page of docs/ in mkdocs.yml's nav, every link and anchor checked
# (--strict turns each warning into a failure), nothing fetched and nothing loaded from another
# host (see mkdocs.yml). Its examples run in `make test` (the root conftest.py).
docs: $(VENV)/.docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site
	$(BIN)/python -m tests.docsite site

bench: $(VENV)/.test
	$(BIN)/python -m tests.bench

# The reliability suite at the issue's sizes (load, crashes, faults, hostile input, security,
# backup); its last line is the summary. Its fast part runs in `make test`.
reliability: $(VENV)/.test
	$(BIN)/python -m tests.reliability

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache site
