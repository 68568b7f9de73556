# The two commands of the README. Both create .venv if it is missing and install the package.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
EXTRAS := test,nn,sweep,pep
# Runs a command with a line on stdout every 15 s while it runs, so that a log of `make run`
# (CI, Slurm) is never silent while the virtual environment is made (ensurepip: 24 s in a fresh
# clone on the shared machine) and pip installs; the loop ends with the shell that started it.
HEARTBEAT = ( while sleep 15 && kill -0 $$$$ 2>/dev/null; do \
	  echo "make: still installing ($$(date +%H:%M:%S))"; done ) & beat=$$!; \
	trap 'kill $$beat 2>/dev/null' EXIT INT TERM;

.PHONY: run test lint format bench clean

$(BIN)/python:
	@echo "make: creating the virtual environment $(VENV) with $(PYTHON), then upgrading pip in it"
	@$(HEARTBEAT) $(PYTHON) -m venv $(VENV)
	@$(HEARTBEAT) $(BIN)/python -m pip install --progress-bar off --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	@echo "make: installing fedtheory (editable) with the extras $(EXTRAS) and their dependencies into $(VENV): pip names each package it collects (a few minutes the first time)"
	@$(HEARTBEAT) $(BIN)/python -m pip install --progress-bar off -e '.[$(EXTRAS)]'
	touch $(STAMP)

## make run: the main job on the embedded NumPy backend
run: $(STAMP)
	FEDTHEORY_BACKEND=numpy $(BIN)/fedtheory verify

## make test: lint, format check, the whole test suite (notebooks included)
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -n 2 -q

lint: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
