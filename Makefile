# Every target is a thin call into the project's own commands. `make help` lists them.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.osbp-installed

.DEFAULT_GOAL := help
.PHONY: help install lint typecheck pytest test matrix quick demo bench traces conformance mutation backend mcp clean

# Bold target names on a terminal only: piped or captured output stays plain text.
help: ## Show this list of targets
	@if [ -t 1 ]; then bold='\033[1m'; plain='\033[0m'; else bold=''; plain=''; fi; \
	awk -v bold="$$bold" -v plain="$$plain" 'BEGIN {FS = ":.*## "} \
	  /^[a-zA-Z_-]+:.*## / {printf "  %s%-12s%s %s\n", bold, $$1, plain, $$2}' $(MAKEFILE_LIST)

# The virtual environment is rebuilt only when the project's metadata changes: a fast no-op otherwise.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "osbp needs python3 >= 3.11" >&2; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

# The tests' TypeScript SDK host (tests/host/ts): its pinned packages, installed where npm exists, again only
# when its lock file changes. Without npm this is a no-op and the host's tests skip (under CI they fail).
NPM      ?= npm
TS_HOST  := tests/host/ts
TS_STAMP := $(TS_HOST)/node_modules/.osbp-installed

$(TS_STAMP): $(TS_HOST)/package.json $(TS_HOST)/package-lock.json
	@if command -v $(NPM) >/dev/null 2>&1; then \
	  cd $(TS_HOST) && $(NPM) ci --prefer-offline --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null \
	  && touch node_modules/.osbp-installed \
	  || { echo "npm ci failed in $(TS_HOST): the TypeScript SDK host tests cannot run" >&2; test -z "$$CI"; }; \
	fi

install: $(STAMP) $(TS_STAMP) ## Create .venv and install osbp with its dev extras (and the TS test host's packages)

lint: install ## Ruff lint and formatting, and the import contracts between the components
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

typecheck: install ## Mypy (strict on source)
	$(BIN)/mypy

# Two workers (these machines have two cores); --dist loadfile keeps a file's module-scoped servers in one, and
# --no-loadscope-reorder keeps the collection order, which starts the longest modules first (tests/conftest.py).
pytest: install ## The test suite only (two workers), without the kill matrix's run
	$(BIN)/pytest -q -n 2 --dist loadfile --no-loadscope-reorder -m "not matrix"

test: lint typecheck pytest ## Lint, type-check and run the test suite (CI runs it, then `make matrix`)

# About 700 CPU-seconds (ninety-nine battery runs), a test of the battery itself like `make mutation`: on its own
# so that `make test` stays a quarter hour on two cores; CI runs both.
matrix: install ## The kill matrix: the battery against the right server and every mutant (about 10 minutes)
	$(BIN)/pytest -q -m matrix tests/conformance/mutants/test_kill_matrix.py

quick: install ## Inner loop: lint, then the tests that start no subprocess, stopping at the first failure
	$(BIN)/ruff check .
	$(BIN)/pytest -q -x -m "not integration"

demo: install ## Book synthetic appointments end to end and show the guardrail refusing
	$(BIN)/osbp demo

bench: install ## Run the benchmarks against real servers on loopback (tables + bench-results/*.json)
	$(BIN)/osbp bench

traces: install ## Regenerate the trace gallery in traces/ from real runs
	$(BIN)/osbp traces record

conformance: install ## Grade this project's own MCP server with the battery, over stdio and Streamable HTTP
	$(BIN)/osbp conformance --self
# Over Streamable HTTP the three elicitation.* checks are SKIP (no in-request elicitation yet): INCOMPLETE.
	$(BIN)/osbp conformance --self --transport streamable-http --allow-skips

# The mutation extra (Cosmic Ray) only when asked for: `make test` never needs it.
MUTATION_STAMP := $(VENV)/.osbp-mutation-installed
$(MUTATION_STAMP): $(STAMP)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,mutation]'
	@touch $(MUTATION_STAMP)

mutation: install $(MUTATION_STAMP) ## Mutation score of the rule modules, the battery as judge (slow: about an hour)
	$(BIN)/python -m tests.conformance.mutation run
	$(BIN)/python -m tests.conformance.mutation survivors --write
	$(BIN)/python -m tests.conformance.mutation table --write

backend: install ## Run the synthetic platform on 127.0.0.1:8400 (Ctrl-C to stop)
	$(BIN)/osbp backend

mcp: install ## Run the MCP server over stdio (configure with OSBP_* variables)
	$(BIN)/osbp mcp

clean: ## Remove the virtual environment and caches
	rm -rf $(VENV) build .import_linter_cache .pytest_cache .mypy_cache .ruff_cache .hypothesis $(TS_HOST)/node_modules
