# pymc-dpnoise developer commands.  `make demo` installs the package and runs its demo;
# `make test` adds the test tooling and runs lint + the default test suite.  Each target
# installs only the extra it needs into .venv (created on first use), one stamp file per
# extra, so `make demo` then `make test` only adds packages.
VENV   ?= .venv
PY     := $(VENV)/bin/python
UV     := $(VENV)/bin/uv
PYTEST_ARGS ?=
# Tests run in 2 xdist workers on 2 cores: multi-threaded BLAS inside each worker only
# oversubscribes the machine (spin-waiting threads made a 10^4 x 18 matmul 1000x slower).
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: setup demo test test-backend test-heavy test-slow lint docs notebooks notebooks-full clean

# The virtual environment, with pip and uv (uv installs the package and its extras).
$(VENV)/.created:
	@set -e; if [ ! -x $(PY) ]; then "$$(scripts/find-python.sh)" -m venv $(VENV); fi
	$(PY) -m pip install --quiet --upgrade pip uv
	@touch $@

# The package alone (editable): what `make demo` needs.
$(VENV)/.installed-base: pyproject.toml | $(VENV)/.created
	$(UV) pip install --python $(PY) --quiet --compile-bytecode -e .
	@touch $@

# The package with one extra of pyproject.toml: .installed-test, -docs, -notebooks, ...
$(VENV)/.installed-%: pyproject.toml | $(VENV)/.created
	$(UV) pip install --python $(PY) --quiet --compile-bytecode -e ".[$*]"
	@touch $@

BASE      := $(VENV)/.installed-base
TEST      := $(VENV)/.installed-test
DOCS      := $(VENV)/.installed-docs
NOTEBOOKS := $(VENV)/.installed-notebooks

# Everything CI runs (.ci/run): the test, docs and notebooks extras.
setup: $(TEST) $(DOCS) $(NOTEBOOKS)

demo: $(BASE)
	$(PY) -m pymc_dpnoise demo

lint: $(TEST)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: $(TEST) lint
	$(PY) -m pytest -m "not slow and not backend and not heavy" -n 2 --dist loadgroup $(PYTEST_ARGS)

# Numba/C/JAX compiles and nutpie/numpyro runs (tests/README.md, "Compile mode"); CI runs it
# after `make test`.
test-backend: $(TEST)
	$(PY) -m pytest -m "backend and not slow" -n 2 --dist loadgroup $(PYTEST_ARGS)

# Checks too expensive for the default run (large reference grids, direct integrations,
# statistical draws checks; tests/README.md, "Rules" 7); CI runs it after `make test-backend`.
test-heavy: $(TEST)
	$(PY) -m pytest -m "heavy and not slow" -n 2 --dist loadgroup $(PYTEST_ARGS)

test-slow: $(TEST)
	$(PY) -m pytest -m slow -n 2 --dist loadgroup $(PYTEST_ARGS)

notebooks: $(NOTEBOOKS)
	PMD_MODE=fast $(PY) scripts/run_notebooks.py --check

notebooks-full: $(NOTEBOOKS)
	PMD_MODE=full $(PY) scripts/run_notebooks.py --inplace

docs: $(DOCS)
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html
	$(PY) scripts/check_docs_offline.py docs/_build/html \
	  $$(command -v chromium >/dev/null && echo --screenshot docs/_build/equations.png)

clean:
	rm -rf $(VENV) docs/_build docs/jupyter_execute .pytest_cache
