# `make run` and `make test` each set everything up on a fresh machine first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test check install clean

# The screen on vector_add with the default device and proposer (the built-in search without a model).
run: $(STAMP)
	$(VENV)/bin/kernel-tui fixtures/vector_add --device auto

# Tests marked `alone` compare gate verdicts between runs on CPU timings: they run after the others, with
# no second test process loading the cores beside them.
test: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadgroup --durations=15 -m "not alone"
	$(PY) -m pytest -q -m alone

# What the code claims, checked: lint, types, and that the engine imports no front end.
check: $(STAMP)
	$(VENV)/bin/ruff check kernel_tui tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

install: $(STAMP)

# Reuse a torch (and its triton) that is already importable; otherwise install the CPU build of torch,
# never the multi-GB CUDA one. Triton's CPU interpreter needs numpy.
$(STAMP): pyproject.toml Makefile
	@if $(PYTHON) -c "import torch, triton" >/dev/null 2>&1; then \
		echo "reusing the torch and triton of $(PYTHON)"; \
		$(PYTHON) -m venv --system-site-packages $(VENV); \
	else \
		echo "first run: installing into $(VENV) (a few minutes, once): torch 2.13 (CPU build), triton, numpy"; \
		$(PYTHON) -m venv $(VENV) && \
		$(PY) -m pip install -q torch==2.13.0 && \
		$(PY) -m pip install -q triton numpy; \
	fi
	@echo "installing kernel-tui and its dependencies into $(VENV) (textual, litellm, gitpython, scipy, ...)"
	$(PY) -m pip install -q -e '.[test]'
	@touch $(STAMP)
	@echo "installed; the command is $(VENV)/bin/kernel-tui"

clean:
	rm -rf $(VENV)
