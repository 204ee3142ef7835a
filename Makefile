# Two entry points, both safe on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test system-deps bench lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,dev]'
	touch $(STAMP)

# Native pieces the tests use (OpenMPI for the PMC aggregator); idempotent, skipped when present.
system-deps:
	bash scripts/system-deps.sh

demo: $(STAMP)
	bash examples/demo.sh

test: $(STAMP) system-deps
	$(PY) -m pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(PY) benchmarks/load.py

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/mypy src

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis
