# The two commands of the README:
#   make demo   set up, generate the demo snapshots, run the nightly job on them, print where the tables are
#   make test   set up and run the test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test setup doctor clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required (found " + sys.version.split()[0] + ")")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

doctor: $(STAMP)
	$(BIN)/lb-pipeline doctor

demo: doctor
	$(BIN)/lb-pipeline generate --preset demo --out landing --force
	DAGSTER_HOME=$(CURDIR)/.dagster $(BIN)/python -m assets.run --landing landing --lake lake --reports reports-out

test: doctor
	$(BIN)/python -m pytest

clean:
	rm -rf landing lake reports-out .dagster test-output
