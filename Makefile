# `make demo` runs two federated nodes on loopback and one delegation between them;
# `make test` runs every check CI runs. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test fuzz codegen lint bench tck clean

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

# The official A2A conformance kit (TCK), in a venv of its own under .tck/ (git-ignored),
# against a fresh node behind a proxy that adds the peer headers (the card's url, through
# a2a.public_url, is the proxy's). Categories: TCK_CATEGORIES=mandatory,capabilities.
TCK_DIR ?= ../shared/a2a-tck/0.3.x
TCK_CATEGORIES ?= mandatory,capabilities
TCK_VENV := .tck/venv
TCK_STAMP := $(TCK_VENV)/.installed

$(TCK_STAMP): $(TCK_DIR)/requirements.txt
	$(PYTHON) -m venv $(TCK_VENV)
	$(TCK_VENV)/bin/pip install -r $(TCK_DIR)/requirements.txt python-dotenv protobuf pyOpenSSL
	touch $@

tck: venv $(TCK_STAMP)
	$(BIN)/python -m conformance.run_tck --tck-dir $(TCK_DIR) \
		--tck-python $(TCK_VENV)/bin/python --categories $(TCK_CATEGORIES)

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
