# Two commands for a fresh machine: `make run` (the app on the embedded default) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

# What the app needs (`make run`); the tests and benchmarks add theirs (`make test`).
$(BIN)/.app: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(BIN)/.dev: $(BIN)/.app requirements-dev.txt
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

.PHONY: install install-dev run stop test lint bench bench-smoke
install: $(BIN)/.app
install-dev: $(BIN)/.dev

# The Procfile's web server (uvicorn: HTTP and the websockets) and task worker, through honcho,
# after migrate and seed_demo; Ctrl-C stops both. `make run PORT=8001` serves on another port; a
# port already in use is refused before anything starts (scripts/run.py). Unless DATABASE_URL /
# REDIS_URL are set, the embedded PostgreSQL and Redis under DATA_DIR (default .data/) start on
# first need and keep running after Ctrl-C: `make stop` stops them.
PORT ?= 8000
run: install
	$(BIN)/python scripts/run.py --port $(PORT)

stop: install
	$(BIN)/python -m config.embedded stop

# Two test processes (pytest-xdist), each on a test database of its own.
PYTEST_ARGS ?= -n 2
test: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python manage.py check
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/pytest $(PYTEST_ARGS)

lint: install-dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Benchmarks, on the same engines as the app (each makes a database of its own and drops it).
# `bench-smoke` runs each at tiny sizes in seconds: CI's check that none has rotted.
bench: install-dev
	$(BIN)/python bench/dispatch_overhead.py $(BENCH_ARGS)
	$(BIN)/python bench/undo_scale.py $(BENCH_ARGS)
	$(BIN)/python bench/ws_fanout.py $(BENCH_ARGS)
	$(BIN)/python bench/table_load.py $(BENCH_ARGS)
	$(BIN)/python bench/capacity.py $(BENCH_ARGS)
	$(BIN)/python bench/asgi_servers.py $(BENCH_ARGS)
	$(BIN)/python bench/admin_changelist.py $(BENCH_ARGS)
	$(BIN)/python bench/analytics_scale.py $(BENCH_ARGS)
	$(BIN)/python bench/gm_throughput.py $(BENCH_ARGS)

bench-smoke: BENCH_ARGS = --smoke
bench-smoke: bench
