# Benchproof: two commands from a fresh clone do all the set-up (see README.md).
#   make serve   creates .venv, installs, initialises ./var with fresh keys and demo data, serves
#   make test    creates .venv, installs the test extras, runs the suite
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
DATA ?= var
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: serve test lint bench reliability check-shared clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(VENV)/.runtime

serve: $(VENV)/.runtime
	$(BIN)/benchproof serve --data $(DATA) --host $(HOST) --port $(PORT) --demo

test: $(VENV)/.test
	$(BIN)/pytest -q

lint: $(VENV)/.test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m tests.contract.sqlrooms

bench: $(VENV)/.test
	$(BIN)/python -m tests.bench

# The reliability suite at the issue's sizes (load, crashes, faults, hostile input, security,
# backup); its last line is the summary. Its fast part runs in `make test`.
reliability: $(VENV)/.test
	$(BIN)/python -m tests.reliability

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache
