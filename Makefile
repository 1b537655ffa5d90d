# Two entry points for a fresh machine (Python 3.11 + pip):
#   make run        - set up, then review the seeds' designs into reports/latest/ (fencesim review)
#   make test       - set up, then run the whole test suite
# and one for maintainers:
#   make reference  - regenerate the committed reference review in reports/reference/
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test setup reference clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	@# exit 1 only means the review found violations (it always does: fence=none loses updates)
	$(BIN)/fencesim review --out reports/latest || test $$? -eq 1

reference: $(STAMP)
	$(BIN)/fencesim review --out reports/reference || test $$? -eq 1

test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info
