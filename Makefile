# The README's two commands: `make run` and `make test`. Both set up .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8501

.PHONY: run test check setup setup-dev setup-workshop lint unit app browser bench clean lock workshop nginx system

$(BIN)/python:
	$(PY) -m venv $(VENV)

# constraints.txt pins every transitive dependency, so two installs a month apart match.
$(VENV)/.runtime: requirements.txt constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements.txt -c constraints.txt
	touch $@

# The workshop server's process manager (supervisord), on top of the app's packages:
# `make workshop` and the container install it, `make run` and Community Cloud do not.
$(VENV)/.workshop: requirements-workshop.txt constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements-workshop.txt -c constraints.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt requirements-demo.txt requirements.txt requirements-workshop.txt constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements-dev.txt -c constraints.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps -r requirements-demo.txt -c constraints.txt
	touch $(VENV)/.runtime $(VENV)/.workshop $@

setup: $(VENV)/.runtime
setup-dev: $(VENV)/.dev
setup-workshop: $(VENV)/.workshop

# MALLOC_ARENA_MAX=2: one glibc arena per script thread otherwise keeps ~100 MB
# resident after a crowd leaves (measured by tests/browser/test_concurrency.py).
run: setup
	MALLOC_ARENA_MAX=2 $(BIN)/streamlit run streamlit_app.py --server.port $(PORT)

# A workshop server: one Streamlit process per core behind nginx (sticky sessions,
# websockets) on https://<this machine>:$(WORKSHOP_PORT), with a self-signed certificate
# made at the first start, or CERT=cert.pem KEY=key.pem for yours (docs/workshop.md,
# HTTPS); HTTP=1 for plain HTTP on a network you trust. serve.py writes the
# configuration and runs supervisord in the foreground, which restarts a replica or
# nginx that dies (health.py restarts a hung one) and rotates the logs in
# artifacts/workshop/; Ctrl-C stops it all (docs/deploy.md, "Supervision";
# `.venv/bin/supervisorctl -c artifacts/workshop/supervisord.conf status` to watch).
# See README "Run a workshop".
# Model folders on the Pretrained page stay off unless MODEL_FOLDERS names the folders
# participants may load from (MODEL_FOLDERS=/srv/models:/data/more make workshop).
REPLICAS ?= $(shell nproc)
WORKSHOP_PORT ?= 8500
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

nginx:
	@command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { \
		echo "installing nginx (Debian package)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nginx >/dev/null; }

# What the browser tests drive: Debian's Chromium and nginx (and redis-server, the
# workshop room's second store). Where apt-get is missing
# (not Debian/Ubuntu) this only says so, and those tests skip (fail under CI).
system:
	@if command -v apt-get >/dev/null; then \
		missing=""; [ -x /usr/bin/chromium ] || missing=" chromium"; \
		command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing="$$missing nginx"; \
		command -v redis-server >/dev/null || [ -x /usr/bin/redis-server ] || missing="$$missing redis-server"; \
		if [ -n "$$missing" ]; then echo "installing$$missing (Debian packages)"; \
			$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; fi; \
	else echo "no apt-get: install Chromium, nginx and redis-server yourself, or those tests skip"; fi

workshop: setup setup-workshop nginx
	$(BIN)/python deploy/workshop/serve.py --port $(WORKSHOP_PORT) --replicas $(REPLICAS) \
		$(if $(MODEL_FOLDERS),--model-folders "$(MODEL_FOLDERS)") \
		$(if $(CERT),--cert "$(CERT)" --key "$(KEY)") $(if $(HTTP),--http)

lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

unit: setup-dev
	$(BIN)/python -m pytest tests/unit -q

app: setup-dev
	$(BIN)/python -m pytest tests/app -q

browser: setup-dev
	$(BIN)/python -m pytest tests/browser -q

# The loop to run while working, under 3 minutes on 2 cores: ruff, the unit tests not
# marked slow, and each section's contract in AppTest (tests/app/test_sections.py), with
# a tenth of the property tests' examples (tests/examples.py). `make test` runs it all.
check: setup-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	RESVIZ_TESTS=check $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --no-loadscope-reorder \
		-m "not slow" tests/unit tests/app/test_sections.py

# Two workers (pytest-xdist): the tests that start servers, browsers or venvs run one
# at a time on one; the other takes the in-process tests (tests/conftest.py).
TEST_WORKERS ?= 2
test: lint system
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --no-loadscope-reorder

# Every benchmark; figures are printed (copy them into benchmarks/RESULTS.md).
bench: setup-dev nginx
	$(BIN)/python -m pytest benchmarks/bench_experiments.py --benchmark-only -q -p no:cacheprovider \
		--benchmark-columns=min,median,max,rounds
	$(BIN)/python benchmarks/bench_training.py --repeats 5
	$(BIN)/python benchmarks/default_views.py --repeats 3
	$(BIN)/python benchmarks/scaling.py
	$(BIN)/python benchmarks/browser_pages.py 5
	$(BIN)/python benchmarks/browser_profile.py
	$(BIN)/python benchmarks/server_load.py --sessions 10 20
	$(BIN)/python benchmarks/workshop_load.py --sessions 20
	$(BIN)/python benchmarks/room_load.py --participants 30

clean:
	rm -rf $(VENV) artifacts .pytest_cache .ruff_cache build dist *.egg-info

# After changing requirements*.txt: uv writes requirements.lock (every platform, CPython
# 3.11 to 3.14, with hashes), and constraints.txt (3.11, Linux x86_64) and
# deploy/cloud/requirements.txt (Community Cloud) are read off it. Pins already written
# are kept unless a requirement moves them, so a second run changes nothing;
# `make lock UPGRADE=1` takes the newest releases. See deploy/lock.py and docs/install.md.
lock: | $(BIN)/python
	$(BIN)/python deploy/lock.py $(if $(UPGRADE),--upgrade)
