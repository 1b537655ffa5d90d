# Two entry points for a fresh machine (Python 3.11 + pip):
#   make run   - set up, then print the seed's verdict matrix and replay the seed scenarios
#   make test  - set up, then run the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test setup clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/fencesim matrix
	@# exit 1 only means the replays show the violations the seed predicts (fence=none loses updates)
	$(BIN)/fencesim run scenarios/seed/*.toml --protocol none --protocol plan --protocol step --protocol step-dedupe || test $$? -eq 1

test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info
