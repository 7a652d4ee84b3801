# The two commands of the README:
#   make demo   set up, generate the demo snapshots, run the nightly job on them, print where the tables are
#   make test   set up and run the test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test setup doctor chromium clean conformance ui

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required (found " + sys.version.split()[0] + ")")'
	$(PYTHON) -m venv $(VENV)
# No pip cache: a fresh machine installs once, and the cache would take another ~430 MB of its disk.
	$(BIN)/pip install --quiet --no-cache-dir --upgrade pip
	$(BIN)/pip install --quiet --no-cache-dir -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

doctor: $(STAMP)
	$(BIN)/lb-pipeline doctor

# The demo: three nights (the forecast needs three, the decision weighs the last nights), a snapshot every 3 hours,
# and a sweep of three parameter sets per strategy.
DEMO_DAYS ?= 3
DEMO_SNAPSHOTS ?= 8
DEMO_SETS ?= 3

demo: doctor
	$(BIN)/lb-pipeline generate --preset demo --out landing --force --days $(DEMO_DAYS) --snapshots $(DEMO_SNAPSHOTS)
	DAGSTER_HOME=$(CURDIR)/.dagster $(BIN)/python -m assets.run --landing landing --lake lake --reports reports-out \
	  --sets $(DEMO_SETS)

# The report's browser test drives Debian's Chromium (Playwright cannot download its own browser here).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the report's browser test"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "the report's browser test needs Chromium: sudo apt-get install -y chromium"; fi; }

test: doctor chromium
	$(BIN)/python -m pytest

# Regenerates tests/conformance/data from Pulsar's own classes (needs Java 17 and Maven; the oracle's first
# build downloads ~300 jars). ORACLE points at the pulsar-oracle tool, builds go to .oracle/<release>/.
ORACLE ?= ../shared/tools/pulsar-oracle
conformance: $(STAMP)
	$(BIN)/python -m tests.conformance.regenerate --oracle $(ORACLE) --build .oracle

clean:
	rm -rf landing lake reports-out .dagster test-output

# The Dagster UI and daemon on the project's instance (.dagster/); SIGTERM stops it like Ctrl-C (see assets/dev.py).
ui: $(STAMP)
	$(BIN)/python -m assets.dev
