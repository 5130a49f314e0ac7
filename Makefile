# Quick start:  make demo   (set up, index data/sample, ask a question)
#               make test   (set up, run the test suite)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOME_DIR ?= data
INPUT  ?= data/sample

.PHONY: setup demo index test lint ui bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: setup index
	$(BIN)/python -m graphunified_assets status --home $(HOME_DIR)

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

clean:
	rm -rf $(HOME_DIR)/tables $(HOME_DIR)/lancedb $(HOME_DIR)/cache $(HOME_DIR)/dagster $(HOME_DIR)/state.sqlite
