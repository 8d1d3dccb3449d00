# HAI Studio: `make run` serves the app, `make test` runs the whole test suite.
# Both set up the virtual environment first (Python 3.11; torch 2.13.0 CPU).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501
# Only this machine by default; HOST=0.0.0.0 serves every interface (put a TLS proxy in front: docs/security.md).
HOST ?= 127.0.0.1
# Compiled modules are cached in __pycache__ (ignored by git), even where the environment turns that off:
# the app's processes, job workers and the test suite's processes would otherwise each compile the
# project afresh (about 17 s of a test worker's start). bench/mutation.py turns it off for its mutants.
unexport PYTHONDONTWRITEBYTECODE

PROCESSES ?= 2
WORKERS ?= 1

.PHONY: run serve test setup setup-test chromium tesseract nginx bench bench-quick mutation mutation-changed lint migrate clean lock

# Installs are the lock files, every package pinned with its sha256 hashes (--require-hashes: a file
# whose hash is not listed, or a package not in the lock, stops the install). pip itself is in the lock.
$(VENV)/.runtime-installed: requirements.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --require-hashes -r requirements.lock
	@touch $@

$(VENV)/.test-installed: $(VENV)/.runtime-installed requirements-dev.lock
	$(PY) -m pip install --quiet --require-hashes -r requirements-dev.lock
	@touch $@

# Regenerate the locks from requirements.txt and requirements-dev.txt (pip-tools, from the dev lock):
# existing pins are kept where they still fit; LOCKFLAGS=--upgrade (or --upgrade-package NAME) moves them.
# The dev lock is constrained by the runtime lock, so both install the same versions.
LOCKFLAGS ?=
PIP_COMPILE = CUSTOM_COMPILE_COMMAND="make lock" $(PY) -m piptools compile --quiet --generate-hashes \
  --allow-unsafe --strip-extras --no-emit-find-links --no-emit-index-url $(LOCKFLAGS)

lock: $(VENV)/.test-installed
	$(PIP_COMPILE) --output-file requirements.lock requirements.txt
	$(PIP_COMPILE) --constraint requirements.lock --output-file requirements-dev.lock requirements-dev.txt

setup: $(VENV)/.runtime-installed tesseract

setup-test: $(VENV)/.test-installed chromium nginx tesseract

# Browser tests drive Debian's chromium (never a downloaded browser build).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing and cannot be installed here: browser tests will be skipped"; fi; }

# The offline video agent reads on-screen text with Debian's Tesseract (its English model comes with
# the package; nothing is downloaded at run time).
tesseract:
	@command -v tesseract >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null; \
	  else echo "tesseract is missing and cannot be installed here: the video agent answers text questions as guesses"; fi; }

# make serve's proxy, and the tests of it: the distribution's nginx (never a downloaded build).
nginx:
	@command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null 2>&1 || \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null; }; \
	  else echo "nginx is missing and cannot be installed here: the proxy tests will be skipped"; fi; }

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
	$(VENV)/bin/streamlit run app.py --server.headless true --server.address $(HOST) --server.port $(PORT) \
	  --browser.gatherUsageStats false --server.fileWatcherType none \
	  --server.maxUploadSize "$$($(PY) -m engines.platform setting upload_max_mb)"

# Several app processes on one database (PostgreSQL: set HAI_DATABASE_URL) behind nginx with sticky
# sessions, and separate job workers: `make serve PROCESSES=4 WORKERS=2` (README, "Serving many participants").
serve: setup nginx
	$(PY) -m engines.platform bootstrap
	$(PY) -m engines.platform serve --processes $(PROCESSES) --workers $(WORKERS) --host $(HOST) --port $(PORT)

# Every core runs tests (pytest-xdist); tests that hold a shared resource stay together (--dist loadgroup),
# dealt in the order tests/conftest.py sorts them, long work first (--no-loadscope-reorder).
test: setup-test
	$(PY) -m pytest -n $$(nproc) --dist loadgroup --no-loadscope-reorder

# Every benchmark, each writing bench/results/<name>.json (docs/benchmarks.md shows the latest figures);
# the full runs take long (the video accuracy part alone about 15 minutes on two cores).
bench: setup-test
	$(PY) bench/platform_store.py
	$(PY) bench/load.py
	$(PY) bench/collab.py
	$(PY) bench/collab_reproduction.py
	$(PY) bench/shapes_render.py
	$(PY) bench/participant_ui.py
	$(PY) bench/judge.py
	$(PY) bench/attribution.py
	$(PY) bench/hoi.py
	$(PY) bench/hoi_ui.py
	$(PY) bench/video.py

bench-quick: setup-test
	$(PY) bench/platform_store.py --quick

# The GPU checks (docs/design.md, "Devices"): the CUDA-marked tests and the GPU benchmarks, under 5 minutes
# on one GPU, into bench/results/gpu.json. Without a GPU the same checks run on the CPU and the file says so.
# No install step: a GPU machine's venv holds torch's CUDA build, which the lock's CPU build would replace.
.PHONY: gpu-check
gpu-check:
	@test -x $(PY) || { echo "no $(PY): run make setup-test first"; exit 1; }
	$(PY) bench/gpu_check.py

# Mutation testing of the core modules (not part of make test; about 10 minutes a module):
# scores and surviving mutants in bench/results/mutation.json. MODULES=engines/collab/store.py runs one.
mutation: setup-test
	$(PY) bench/mutation.py $(MODULES)

# Only the modules whose source, tests or equivalents changed since their recorded run.
mutation-changed: setup-test
	$(PY) bench/mutation.py --changed $(MODULES)

lint: setup-test
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache
