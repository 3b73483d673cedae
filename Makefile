# Two entry points: `make run` (demo app on SQLite) and `make test` (the whole suite).
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed
# `make run` serves on HOST:PORT; DB=path/to/file.sqlite3 runs it on another SQLite file
# (default: DATABASE_URL from the environment or .env, else db.sqlite3 next to manage.py).
# The demo user is kept across runs with what they changed; DEMO=reset loads the demo anew.
HOST   ?= 127.0.0.1
PORT   ?= 8000
DB     ?=
DEMO   ?=
ifneq ($(filter-out reset,$(DEMO)),)
$(error DEMO=$(DEMO) is not known: DEMO=reset deletes the demo user and loads the demo anew)
endif
# `make run` is development on this machine, so a webhook receiver here (http, loopback) may be
# registered (SPEC V3); production leaves both settings off.
RUN_ENV = $(if $(DB),DATABASE_URL=sqlite:///$(abspath $(DB))) \
	WEBHOOK_ALLOW_HTTP=true WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true
# `make test` runs the suite in TEST_WORKERS processes (pytest-xdist), a test file per process
# at a time: files that start servers or hold fixed ports never meet. The files run in the
# order tests/conftest.py gives them (the slow ones first). TEST_WORKERS=0 runs it in this
# process.
TEST_WORKERS ?= 2

.PHONY: run test screenshots install lint smoke bench bench-smoke bench-explain clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python requirements.lock pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.lock
	touch $(STAMP)

install: $(STAMP)

run: install
	@# Before anything is printed: another server answering on HOST:PORT stops the run.
	@$(BIN)/python manage.py check_port --host $(HOST) --port $(PORT)
	$(RUN_ENV) $(BIN)/python manage.py migrate --noinput
	$(RUN_ENV) $(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(RUN_ENV) $(BIN)/python manage.py load_demo --address http://$(HOST):$(PORT) $(if $(DEMO),--reset)
	@# The events worker (SPEC V3) runs beside the server and stops with it (Ctrl-C, or a kill).
	$(RUN_ENV) $(BIN)/python manage.py events_worker & worker=$$!; \
	trap 'kill $$worker 2>/dev/null; wait $$worker 2>/dev/null' EXIT INT TERM; \
	$(RUN_ENV) $(BIN)/python manage.py runserver $(HOST):$(PORT)

test: install
	$(BIN)/python -m pytest $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder) $(PYTEST_ARGS)

# The browser tests again, saving a full-page screenshot of every page they look at, at each
# width, in test-artifacts/screenshots/ (for a reviewer; `make test` does not draw them).
screenshots: install
	SCREENSHOTS=1 $(BIN)/python -m pytest tests/browser $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder) $(PYTEST_ARGS)

# The contract smoke: every operation of the schema called once over HTTP against a live
# server, each answer checked against the schema; then the README's curl loop as written.
smoke: install
	$(BIN)/python -m pytest tests/contract/test_smoke.py tests/contract/test_readme.py $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports

# `make bench BENCH_ARGS=--populated` adds the populated database (built once, then reused).
bench: install
	$(BIN)/python -m bench $(BENCH_ARGS)

bench-smoke: install
	$(BIN)/python -m bench --smoke

# The turn's statements under EXPLAIN (ANALYZE, BUFFERS) and its CPU profile, at 1,000 and 10,000
# memories × 100 and 5,000 messages: text files in bench/profiles/ (PostgreSQL).
bench-explain: install
	$(BIN)/python -m bench --db postgres --only explain,profile

clean:
	rm -rf $(VENV) db.sqlite3* staticfiles
