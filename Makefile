# Benchproof: two commands from a fresh clone do all the set-up (see README.md).
#   make serve   creates .venv, installs, initialises ./var with fresh keys and demo data, serves
#   make test    creates .venv, installs the test extras, runs the suite on two workers (the
#                minutes-long tests, marked slow, are left to make test-slow) and names its 20
#                slowest tests
#   make test-slow  the tests marked slow (make serve from a fresh clone, the browser tests over
#                the whole catalog); CI runs both
#   make docs    builds the documentation site (mkdocs.yml, docs/) into site/, strict and offline
#   make test-golden    every answer and page of the catalog against the golden file (slow)
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
GOLDEN_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
# pytest-xdist: WORKERS processes; --dist loadfile keeps the tests of one file on one worker, so
# a file's costly module fixture is built once (a session fixture: once per worker).
WORKERS ?= 2
XDIST := -n $(WORKERS) --dist loadfile

.PHONY: serve shell test test-slow test-postgres test-golden lint docs bench bench-quick reliability check-shared clean

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

# A shell with the installed `benchproof` on its PATH (the README's commands run as written).
shell: $(VENV)/.runtime
	@echo "benchproof is on the PATH of this shell (exit to leave)"
	@VIRTUAL_ENV=$(CURDIR)/$(VENV) PATH=$(CURDIR)/$(VENV)/bin:$$PATH $${SHELL:-/bin/sh}

test: $(VENV)/.test
	BENCHPROOF_STATEMENT_COVERAGE=sqlite $(BIN)/pytest -q $(XDIST) --durations=20 -m "not slow"

test-slow: $(VENV)/.test
	$(BIN)/pytest -q $(XDIST) --durations=20 -m slow

# A cluster of its own on a free loopback port, stopped and removed afterwards (tests/pgcluster.py);
# the last line is pytest's summary.
test-postgres: $(VENV)/.test
	$(BIN)/python -m tests.pgcluster env BENCHPROOF_TEST_STORE=postgresql BENCHPROOF_STATEMENT_COVERAGE=postgresql $(BIN)/pytest -q $(PG_TESTS)

# Every JSON answer and page of the catalog's log against tests/golden/answers-catalog.json.gz
# (`make test` runs a sample; this is the whole crawl, in GOLDEN_JOBS processes). Regenerate the
# file, from code whose answers are right, with `$(BIN)/python -m tests.golden.answers --write`.
test-golden: $(VENV)/.test
	BENCHPROOF_GOLDEN=full BENCHPROOF_GOLDEN_JOBS=$(GOLDEN_JOBS) $(BIN)/pytest -q tests/golden/test_answers_unchanged.py

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
	BENCH_SCALE_SIZES=10000,100000,1000000 $(BIN)/python -m tests.bench

# The read figures of issue 28 at 10k and 100k runs (the 1M size is `make bench`'s).
bench-quick: $(VENV)/.test
	BENCH_SCALE_SIZES=10000,100000 $(BIN)/python -m tests.bench reads

# The reliability suite at the issue's sizes (load, crashes, faults, hostile input, security,
# backup); its last line is the summary. Its fast part runs in `make test`.
reliability: $(VENV)/.test
	$(BIN)/python -m tests.reliability

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache site
