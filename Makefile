# Quick start:  make demo   (set up, index data/sample, ask a question)
#               make test   (set up, run the test suite)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOME_DIR ?= data
INPUT  ?= data/sample

.PHONY: setup demo index test lint ui bench eval clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

QUESTION ?= Who founded the Hale Mill, and what happened to it in the flood of 1894?

demo: setup index
	$(BIN)/python -m graphunified_query ask "$(QUESTION)" --home $(HOME_DIR)

index: setup
	$(BIN)/python -m graphunified_assets index --input $(INPUT) --home $(HOME_DIR)

test: setup
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

# The Dagster UI on http://127.0.0.1:3000 for the same data home and input folder.
ui: setup
	mkdir -p $(HOME_DIR)/dagster && cp -n dagster.yaml $(HOME_DIR)/dagster/ || true
	DAGSTER_HOME=$(abspath $(HOME_DIR))/dagster GRAPHUNIFIED_HOME=$(abspath $(HOME_DIR)) \
	GRAPHUNIFIED_INPUT=$(abspath $(INPUT)) \
	$(BIN)/python scripts/launch.py $(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

bench: setup
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/graph.py
	$(BIN)/python bench/query.py

# Retrieval quality of every strategy on the three multi-hop sets (see README, Evaluation).
EVAL_SETS ?= ../shared/eval/musique ../shared/eval/2wikimultihopqa ../shared/eval/hotpotqa
eval: setup
	for set in $(EVAL_SETS); do $(BIN)/python -m graphunified_query eval $$set || exit 1; done

clean:
	rm -rf $(HOME_DIR)/tables $(HOME_DIR)/lancedb $(HOME_DIR)/cache $(HOME_DIR)/dagster $(HOME_DIR)/state.sqlite
