# Posttrain: `make demo` (first command) and `make test` (second). See README.md.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_VAR ?= $(CURDIR)/var/test

.PHONY: demo serve test test-fast lint schema benchmark benchmark-rl clean

$(STAMP): requirements*.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: 2.13.0 is the CPU wheel on disk; any other version downloads GBs.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -r requirements-dev.txt -c constraints.txt
	touch $(STAMP)

install: $(STAMP)

# requirements.txt installs the SDK (./sdk, editable, with the CLI) for the platform, the
# workers and the `posttrain` command; a change to its dependencies reinstalls.
$(STAMP): sdk/pyproject.toml

demo: $(STAMP)
	$(PY) scripts/demo.py

serve: $(STAMP)
	$(PY) scripts/devstack.py

test: $(STAMP)
	scripts/ensure-test-packages.sh
	POSTTRAIN_VAR_DIR=$(TEST_VAR) $(PY) -m pytest

test-fast: $(STAMP)
	POSTTRAIN_VAR_DIR=$(TEST_VAR) $(PY) -m pytest -m "not e2e"

lint: $(STAMP)
	$(PY) -m ruff check .

.PHONY: typecheck
typecheck: $(STAMP)
	cd sdk && ../$(PY) -m mypy

schema: $(STAMP)
	$(PY) manage.py spectacular --file api_docs/openapi.yaml --validate

benchmark: $(STAMP)
	$(PY) benchmarks/sft_overhead.py

benchmark-rl: $(STAMP)
	$(PY) benchmarks/grpo_and_sandbox.py

clean:
	rm -rf var test-output
