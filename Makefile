# HAI Studio: `make run` serves the app, `make test` runs the whole test suite.
# Both set up the virtual environment first (Python 3.11; torch 2.13.0 CPU).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: run test setup setup-test chromium bench bench-quick mutation lint migrate clean

$(VENV)/.runtime-installed: requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $@

$(VENV)/.test-installed: $(VENV)/.runtime-installed requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	@touch $@

setup: $(VENV)/.runtime-installed

setup-test: $(VENV)/.test-installed chromium

# Browser tests drive Debian's chromium (never a downloaded browser build).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing and cannot be installed here: browser tests will be skipped"; fi; }

migrate: setup
	$(PY) -m engines.platform migrate

# Participant links point at the port served, unless HAI_PUBLIC_BASE_URL (in the environment or in
# .env, which the app reads too) names the public address.
HAI_PUBLIC_BASE_URL ?= $(shell sed -n 's/^HAI_PUBLIC_BASE_URL=//p' .env 2>/dev/null | tail -n1 | tr -d "\"'")
ifeq ($(strip $(HAI_PUBLIC_BASE_URL)),)
HAI_PUBLIC_BASE_URL := http://localhost:$(PORT)
endif
export HAI_PUBLIC_BASE_URL

run: setup
	$(PY) -m engines.platform bootstrap
	$(VENV)/bin/streamlit run app.py --server.headless true --server.port $(PORT) \
	  --browser.gatherUsageStats false --server.fileWatcherType none

test: setup-test
	$(PY) -m pytest

bench: setup-test
	$(PY) bench/platform_store.py
	$(PY) bench/collab.py
	$(PY) bench/collab_reproduction.py
	$(PY) bench/shapes_render.py
	$(PY) bench/participant_ui.py

bench-quick: setup-test
	$(PY) bench/platform_store.py --quick

# Mutation testing of the core modules (not part of make test; about 10 minutes a module):
# scores and surviving mutants in bench/results/mutation.json. MODULES=engines/collab/store.py runs one.
mutation: setup-test
	$(PY) bench/mutation.py $(MODULES)

lint: setup-test
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache
