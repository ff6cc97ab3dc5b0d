# Two commands for a fresh machine: `make run` (the app on the embedded default) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/.installed: requirements.txt requirements-dev.txt requirements-bench.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

.PHONY: install run test lint bench bench-smoke
install: $(BIN)/.installed

# The Procfile's web server (uvicorn: HTTP and the websockets) and task worker, through honcho,
# after migrate, createcachetable and seed_demo; Ctrl-C stops both. `make run PORT=8001` serves
# on another port; a port already in use is refused before anything starts (scripts/run.py).
PORT ?= 8000
run: install
	$(BIN)/python scripts/run.py --port $(PORT)

test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python manage.py check
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Benchmarks (PostgreSQL on 127.0.0.1:5432, Redis on 6379; each makes a database of its own and
# drops it). `bench-smoke` runs each at tiny sizes in seconds: CI's check that none has rotted.
bench: install
	$(BIN)/python bench/dispatch_overhead.py $(BENCH_ARGS)
	$(BIN)/python bench/peer_overhead.py $(BENCH_ARGS)
	$(BIN)/python bench/prepared_reads.py $(BENCH_ARGS)
	REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/4} $(BIN)/python bench/server_prepared.py $(BENCH_ARGS)
	$(BIN)/python bench/undo_scale.py $(BENCH_ARGS)
	REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/4} $(BIN)/python bench/ws_fanout.py $(BENCH_ARGS)
	REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/4} $(BIN)/python bench/table_load.py $(BENCH_ARGS)
	REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/4} $(BIN)/python bench/capacity.py $(BENCH_ARGS)
	REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/4} $(BIN)/python bench/asgi_handler.py $(BENCH_ARGS)
	REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/4} $(BIN)/python bench/asgi_servers.py $(BENCH_ARGS)
	$(BIN)/python bench/admin_changelist.py $(BENCH_ARGS)
	$(BIN)/python bench/analytics_scale.py $(BENCH_ARGS)
	REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/4} $(BIN)/python bench/gm_throughput.py $(BENCH_ARGS)

bench-smoke: BENCH_ARGS = --smoke
bench-smoke: bench
