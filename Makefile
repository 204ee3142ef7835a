# Two entry points, both safe on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
# Bytecode is cached even where the environment turns it off: the tests start many sheaf processes,
# each of which would compile every module it imports again, and each pytest worker would rewrite every test
# module's asserts again.
unexport PYTHONDONTWRITEBYTECODE
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test system-deps bench lint clean

# The install compiles the ClassAd parser's C accelerator (setup.py; optional: pure Python without it).
# ... and the compiled seqexec runner sheaf-cluster-c (optional too: the Python sheaf-cluster without it),
# and the local backend's C spawner threads (optional: the engine's thread spawns without them).
# uv installs the packages: the same set as pip's, and much faster on a fresh machine (docs/development.md).
$(STAMP): pyproject.toml setup.py $(wildcard src/sheaf/classad/_cparse*) $(wildcard src/sheaf/jobtools/_cluster*) \
          $(wildcard src/sheaf/backends/local/_cspawn*)
	bash scripts/system-deps.sh build $(PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q 'uv>=0.9'
	$(VENV)/bin/uv pip install -q --python $(PY) -e '.[test,dev]'
	touch $(STAMP)

# Native pieces the tests use (OpenMPI for the PMC aggregator); idempotent, skipped when present.
system-deps:
	bash scripts/system-deps.sh

demo: $(STAMP)
	bash examples/demo.sh

# Every test in one command, two workers a CPU (pytest-xdist; a test file's tests stay on one worker, so a module's
# Slurm cluster or server starts once): the suite with the compiled pieces but the tests marked `serial`
# (they time a process against the clock), then those alone, then the ClassAd, sheaf-cluster and local
# backend tests again in pure Python (the fallbacks: the compiled sheaf-cluster then hands every run to the
# Python one, the local backend spawns in the engine's thread).
# (two a CPU: much of the suite waits on processes, daemons and sleeps, which another worker's work fills)
WORKERS ?= $(shell echo $$(( $$(getconf _NPROCESSORS_ONLN) * 2 )))
PYTEST  := $(PY) -m pytest -q -p no:cacheprovider
test: $(STAMP) system-deps
	$(PYTEST) -n $(WORKERS) --dist loadfile -m "not serial"
	$(PYTEST) -m serial
	SHEAF_PURE_PYTHON=1 $(PYTEST) -n $(WORKERS) --dist loadfile tests/classad tests/jobtools/test_agg_seqexec.py \
	  tests/backends/test_spawn_paths.py tests/backends/test_local.py

bench: $(STAMP)
	$(PY) benchmarks/load.py

lint: $(STAMP)
	$(VENV)/bin/ruff check --no-cache src tests benchmarks scripts setup.py
	$(VENV)/bin/mypy src

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis src/sheaf/classad/*.so src/sheaf/backends/local/*.so \
	  src/sheaf/jobtools/_bin
