# Two entry points that work on a fresh machine with Python 3 and make:
#   make run   - install into .venv and run the main job (a private query session on sample data)
#   make test  - install into .venv (with test extras) and run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: run test bench clean

# pip >= 21.3 installs a pyproject package in editable mode (PEP 660); a newer pip is not
# needed, and fetching one cost the fresh set-up ~5 s
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q "pip>=21.3"

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test,bench]'
	touch $@ $(VENV)/.installed

# `dodb warmup` compiles the oblivious kernels once into the per-user cache (a progress bar;
# nothing to do when they are cached already), so neither the demo nor the test workers
# compile them.
run: $(VENV)/.installed
	$(BIN)/dodb warmup
	$(BIN)/dodb demo

# pytest exits 5 when it collects nothing: that is a failure, not a pass.
# One pytest worker per core (pytest-xdist), idle workers taking tests from busy ones.
PYTEST_ARGS ?= -n auto --dist worksteal --durations=25
test: $(VENV)/.installed-test
	$(BIN)/dodb warmup
	@$(BIN)/python -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

bench: $(VENV)/.installed-test
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .hypothesis
