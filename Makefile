# `make demo` runs two federated nodes on loopback and one delegation between them;
# `make test` runs every check CI runs (pytest lists its 25 slowest steps, so a CI log shows
# where the time went). Both set up .venv first (and `make test` the TypeScript
# client's npm dependencies).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv sdk1-venv tck1-venv tck-v1 demo test fuzz codegen client-ts client-ts-deps client-ts-test lint bench bench-bindings bench-servers bench-profile bench-profile-inprocess bench-scale tck clean

venv: $(STAMP)

# The official a2a-sdk 1.x for the interop tests (tests/interop/test_sdk1.py) and the benches'
# a2a-sdk 1.3.0 rows: it shares the `a2a` import name with the 0.3 SDK of .venv, so it gets a
# virtualenv of its own, driven as a subprocess. Small: the SDK with its HTTP server, signing
# and gRPC extras, and uvicorn with uvloop and httptools (as the node and the 0.3 SDK are
# served in the bench).
SDK1_VENV := .venv-sdk1
SDK1_STAMP := $(SDK1_VENV)/.installed
SDK1_PACKAGES := 'a2a-sdk[http-server,signing,grpc]==1.3.0' 'uvicorn==0.54.0' 'uvloop==0.23.0' \
	'httptools==0.9.0'

sdk1-venv: $(SDK1_STAMP)

$(SDK1_STAMP): Makefile
	$(PYTHON) -m venv $(SDK1_VENV)
	$(SDK1_VENV)/bin/pip install -q $(SDK1_PACKAGES)
	touch $@

# The stamp makes repeat runs a no-op until pyproject.toml (the dependency list) changes.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

demo: venv
	$(BIN)/python -m synthorg.demo

# Two pytest workers (TEST_WORKERS=0: all in one process); each takes whole test files
# (`--dist loadfile`), so a module's live node and its fixtures stay in one process. The
# contract tests run after them, alone: their stateful runs follow links between live answers,
# and a replay under the other worker's load can find a task in another state.
TEST_WORKERS ?= 2

test: venv sdk1-venv client-ts-deps
	$(BIN)/python -m codegen --check
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --durations=25 --ignore=tests/contract
	$(BIN)/pytest tests/contract --durations=10

# The contract tests with a fresh random seed and many examples per operation (CI runs a
# fixed 150). The seed is printed first: FUZZ_SEED=<it> make fuzz replays the run. It goes on
# past a failing operation (every failure of each is collected, each with its reproduction)
# and the summary lists them all.
FUZZ_EXAMPLES ?= 3000
fuzz: venv
	@seed=$${FUZZ_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; \
	echo "fuzz: seed $$seed, $(FUZZ_EXAMPLES) examples per operation"; \
	SYNTHORG_FUZZ_SEED=$$seed SYNTHORG_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
		$(BIN)/pytest tests/contract -p no:cacheprovider -q -rfE

# The A2A 1.0 conformance kit (../shared/a2a-tck/1.0-dev, run where it lies) against a live
# node through the same proxy as `make tck` (conformance/): JSON-RPC, MUST level.
# Reports: .tck/v1/reports. TCK_V1_DIR=<kit> picks another checkout of the kit;
# TCK_ARGS are passed on (e.g. TCK_ARGS='--level should', or '-- -k card').
TCK_V1_DIR ?= $(firstword $(wildcard ../shared/a2a-tck/1.0-dev ../../shared/a2a-tck/1.0-dev))
TCK1_VENV := .venv-tck1
TCK1_STAMP := $(TCK1_VENV)/.installed

tck1-venv: $(TCK1_STAMP)

$(TCK1_STAMP): Makefile
	$(PYTHON) -m venv $(TCK1_VENV)
	$(TCK1_VENV)/bin/pip install -q $(TCK_V1_DIR)
	touch $@

tck-v1: venv tck1-venv
	$(BIN)/python -m conformance.run_tck --dialect 1.0 --tck-dir $(abspath $(TCK_V1_DIR)) \
		--tck-python $(TCK1_VENV)/bin/python $(TCK_ARGS)

# The live benchmark (floor, a2a-sdk 0.3 and 1.3.0, this node under wrk; bench/live.py); e.g.
# BENCH_ARGS=--quick.
bench: venv sdk1-venv
	$(BIN)/python -m bench.live $(BENCH_ARGS)

# GetTask over each binding in one run (bench/bindings.py): this node's gRPC against the
# official a2a-sdk 1.3.0 gRPC server (.venv-sdk1) and a bare grpc.aio floor under h2load
# (Debian package nghttp2-client), its REST against its JSON-RPC under wrk; then where a
# gRPC call's time goes (bench/grpc_profile.py). E.g. BENCH_ARGS=--quick.
bench-bindings: venv sdk1-venv
	$(BIN)/python -m bench.bindings $(BENCH_ARGS)
	$(BIN)/python -m bench.grpc_profile

# Candidate HTTP servers (uvicorn with the node's protocol, stock uvicorn, Granian ASGI/RSGI, a
# bare httptools protocol) in alternating rounds, then the node's limits probed under each
# (bench/server_choice.py; docs/performance.md "Server choice"); e.g. BENCH_ARGS=--quick.
bench-servers: venv
	$(BIN)/python -m bench.server_choice $(BENCH_ARGS)

# Where a live request's CPU goes, per row (tasks/get, a 401, message/send), by part of the
# node: py-spy samples under wrk (bench/request_profile.py; docs/performance.md); e.g.
# BENCH_ARGS=--quick. py-spy needs ptrace rights over the node (root, or ptrace_scope 0).
bench-profile: venv
	$(BIN)/python -m bench.request_profile $(BENCH_ARGS)

# The same rows and parts in process: the node's ASGI app called straight, no server, no
# socket (bench/inprocess_profile.py).
bench-profile-inprocess: venv
	$(BIN)/python -m bench.inprocess_profile $(BENCH_ARGS)

# One node with --workers 2 against --workers 1 on this machine's cores, wrk beside them
# (bench/scale_out.py; docs/performance.md "Scale-out on one machine").
bench-scale: venv
	$(BIN)/python -m bench.scale_out $(BENCH_ARGS)

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

# The TypeScript client (clients/typescript): its npm dependencies, exactly as package-lock.json
# pins them (Node.js 20+ and npm from the machine; nothing else is downloaded). The stamp holds
# the lock file's hash, which tests/clients/test_typescript.py reads too.
CLIENT_TS := clients/typescript
CLIENT_TS_STAMP := $(CLIENT_TS)/node_modules/.synthorg-lock-sha256

client-ts-deps: $(CLIENT_TS_STAMP)

$(CLIENT_TS_STAMP): $(CLIENT_TS)/package-lock.json
	cd $(CLIENT_TS) && npm ci --no-audit --no-fund
	sha256sum $(CLIENT_TS)/package-lock.json | cut -d' ' -f1 > $@

# Regenerate the client's types and constants from the bundled spec (after a spec change, as
# `make codegen` for the Python side; CI fails while they are stale), then compile it.
client-ts: venv client-ts-deps
	mkdir -p $(CLIENT_TS)/build
	$(BIN)/synthorg-a2a spec --bundle > $(CLIENT_TS)/build/openapi.json
	cd $(CLIENT_TS) && node scripts/generate.mjs --spec build/openapi.json && npm run --silent build

# The client's checks and its own tests against a live node this starts (tests/clients).
client-ts-test: venv client-ts-deps
	$(BIN)/pytest tests/clients -q

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy

# Removes what the targets above create; never a data directory (it holds peer secrets).
clean:
	rm -rf $(VENV) $(SDK1_VENV) $(TCK1_VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache \
		.hypothesis .schemathesis schemathesis-report \
		$(CLIENT_TS)/node_modules $(CLIENT_TS)/build $(CLIENT_TS)/dist
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
