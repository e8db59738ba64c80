# pymc-dpnoise developer commands.  `make demo` sets everything up and runs the main demo;
# `make test` runs the default test suite.  Both create .venv on first use.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=
# Tests run in 2 xdist workers on 2 cores: multi-threaded BLAS inside each worker only
# oversubscribes the machine (spin-waiting threads made a 10^4 x 18 matmul 1000x slower).
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: setup kernels demo test test-backend test-heavy test-slow lint docs notebooks notebooks-full clean

$(STAMP): pyproject.toml
	@set -e; if [ ! -x $(PY) ]; then "$$(scripts/find-python.sh)" -m venv $(VENV); fi
	$(PY) -m pip install --quiet --upgrade pip uv
	$(VENV)/bin/uv pip install --python $(PY) --quiet --compile-bytecode -e ".[dev]"
	@touch $(STAMP)

setup: $(STAMP)

# The Numba kernels compiled ahead of time (pymc_dpnoise/math/_aot.py).  Installing the package
# builds them (hatch_build.py); this rebuilds them after a kernel's source changed (else the
# package compiles that kernel at first use and test_aot.py says the build is stale).
AOT := pymc_dpnoise/math/_aot_objects/manifest.json
$(AOT): $(wildcard pymc_dpnoise/math/*.py) | $(STAMP)
	$(PY) pymc_dpnoise/math/_aot_build.py pymc_dpnoise/math/_aot_objects

kernels: $(AOT)

demo: $(STAMP)
	$(PY) -m pymc_dpnoise demo

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: $(STAMP) $(AOT) lint
	$(PY) -m pytest -m "not slow and not backend and not heavy" -n 2 --dist loadgroup $(PYTEST_ARGS)

# Numba/C/JAX compiles and nutpie/numpyro runs (tests/README.md, "Compile mode"); CI runs it
# after `make test`.
test-backend: $(STAMP) $(AOT)
	$(PY) -m pytest -m "backend and not slow" -n 2 --dist loadgroup $(PYTEST_ARGS)

# Checks too expensive for the default run (large reference grids, direct integrations,
# statistical draws checks; tests/README.md, "Rules" 7); CI runs it after `make test-backend`.
test-heavy: $(STAMP) $(AOT)
	$(PY) -m pytest -m "heavy and not slow" -n 2 --dist loadgroup $(PYTEST_ARGS)

test-slow: $(STAMP) $(AOT)
	$(PY) -m pytest -m slow -n 2 --dist loadgroup $(PYTEST_ARGS)

notebooks: $(STAMP)
	PMD_MODE=fast $(PY) scripts/run_notebooks.py --check

notebooks-full: $(STAMP)
	PMD_MODE=full $(PY) scripts/run_notebooks.py --inplace

docs: $(STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html
	$(PY) scripts/check_docs_offline.py docs/_build/html \
	  $$(command -v chromium >/dev/null && echo --screenshot docs/_build/equations.png)

clean:
	rm -rf $(VENV) docs/_build .pytest_cache
