# Two entry points, both safe on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test system-deps bench lint clean

# The install compiles the ClassAd parser's C accelerator (setup.py; optional: pure Python without it).
# ... and the compiled seqexec runner sheaf-cluster-c (optional too: the Python sheaf-cluster without it),
# and the local backend's C spawner thread (optional: a Python thread without it).
$(STAMP): pyproject.toml setup.py $(wildcard src/sheaf/classad/_cparse*) $(wildcard src/sheaf/aggregators/_cluster*) \
          $(wildcard src/sheaf/backends/_cspawn*)
	bash scripts/system-deps.sh build $(PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,dev]'
	touch $(STAMP)

# Native pieces the tests use (OpenMPI for the PMC aggregator); idempotent, skipped when present.
system-deps:
	bash scripts/system-deps.sh

demo: $(STAMP)
	bash examples/demo.sh

# The whole suite with the compiled pieces, then the ClassAd, sheaf-cluster and local backend tests again
# in pure Python (the fallbacks: the compiled sheaf-cluster then hands every run to the Python one, the
# local backend spawns from a Python thread).
test: $(STAMP) system-deps
	$(PY) -m pytest -q -p no:cacheprovider
	SHEAF_PURE_PYTHON=1 $(PY) -m pytest -q -p no:cacheprovider tests/classad tests/aggregators/test_agg_seqexec.py \
	  tests/backends/test_spawn_paths.py tests/backends/test_local.py

bench: $(STAMP)
	$(PY) benchmarks/load.py

lint: $(STAMP)
	$(VENV)/bin/ruff check --no-cache src tests benchmarks scripts setup.py
	$(VENV)/bin/mypy src

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis src/sheaf/classad/*.so src/sheaf/aggregators/_bin
