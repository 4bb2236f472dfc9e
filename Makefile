# `make demo` runs two federated nodes on loopback and one delegation between them;
# `make test` runs every check CI runs. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test fuzz codegen lint bench clean

venv: $(STAMP)

# The stamp makes repeat runs a no-op until pyproject.toml (the dependency list) changes.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -e '.[dev]'
	touch $@

demo: venv
	$(BIN)/python -m synthorg.demo

test: venv
	$(BIN)/python -m codegen --check
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest

# The live benchmark (floor, a2a-sdk, this node under wrk); e.g. BENCH_ARGS=--quick.
# The contract tests with a fresh random seed and many examples per operation (CI runs a
# fixed 150). The seed is printed first: FUZZ_SEED=<it> make fuzz replays the run.
FUZZ_EXAMPLES ?= 3000
fuzz: venv
	@seed=$${FUZZ_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; \
	echo "fuzz: seed $$seed, $(FUZZ_EXAMPLES) examples per operation"; \
	SYNTHORG_FUZZ_SEED=$$seed SYNTHORG_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
		$(BIN)/pytest tests/contract -p no:cacheprovider -x -q

bench: venv
	$(BIN)/python -m bench.live $(BENCH_ARGS)

codegen: venv
	$(BIN)/python -m codegen

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy

# Removes what the targets above create; never a data directory (it holds peer secrets).
clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache \
		.hypothesis .schemathesis schemathesis-report
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
