# The README's two commands: `make run` and `make test`. Both set up .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8501

.PHONY: run test setup setup-dev lint unit app browser bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(VENV)/.runtime: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements-dev.txt
	touch $(VENV)/.runtime $@

setup: $(VENV)/.runtime
setup-dev: $(VENV)/.dev

# MALLOC_ARENA_MAX=2: one glibc arena per script thread otherwise keeps ~100 MB
# resident after a crowd leaves (measured by tests/browser/test_concurrency.py).
run: setup
	MALLOC_ARENA_MAX=2 $(BIN)/streamlit run streamlit_app.py --server.port $(PORT)

lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

unit: setup-dev
	$(BIN)/python -m pytest tests/unit -q

app: setup-dev
	$(BIN)/python -m pytest tests/app -q

browser: setup-dev
	$(BIN)/python -m pytest tests/browser -q

test: lint
	$(BIN)/python -m pytest -q

# Every benchmark; figures are printed (copy them into benchmarks/RESULTS.md).
bench: setup-dev
	$(BIN)/python -m pytest benchmarks/bench_experiments.py --benchmark-only -q -p no:cacheprovider \
		--benchmark-columns=min,median,max,rounds
	$(BIN)/python benchmarks/bench_training.py --repeats 5
	$(BIN)/python benchmarks/scaling.py
	$(BIN)/python benchmarks/browser_pages.py 5
	$(BIN)/python benchmarks/browser_profile.py
	$(BIN)/python benchmarks/server_load.py --sessions 10 20

clean:
	rm -rf $(VENV) artifacts .pytest_cache .ruff_cache
