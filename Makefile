# Gazetteer: two commands on a fresh machine.
#   make up REPO=~/src/app   set up, then index, watch and follow REPO; serve queries
#   make test                set up, then lint and run every test (both brokers)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
REPO   ?= .
STAMP  := $(VENV)/.installed

.PHONY: install up test unit lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

up: $(STAMP)
	$(BIN)/gazetteer up $(REPO)

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy producers processors stores query deploy
	$(BIN)/lint-imports

test: $(STAMP) lint
	$(BIN)/pytest -q -p no:cacheprovider -n 2 --dist loadfile

bench: $(STAMP)
	$(BIN)/python -m tests.bench.freshness_latency
	$(BIN)/python -m tests.bench.scan_throughput

clean:
	rm -rf $(VENV) build *.egg-info
