# Two commands for a fresh machine (see README): `make run` and `make test`.
# Both create .venv and install the pinned dependencies first (once; again when the pins change).

VENV ?= .venv
PY := $(VENV)/bin/python
CORES ?= all

.PHONY: install run test test-all bench lint clean

$(VENV)/.installed: requirements.txt requirements.lock
	python3 -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt -c requirements.lock
	touch $@

install: $(VENV)/.installed

run: install  ## build everything on the embedded default corpus
	$(VENV)/bin/snakemake --cores $(CORES)

test: install  ## the test suite CI runs (slow end-to-end tests excluded)
	$(VENV)/bin/python -m pytest -q

test-all: install  ## every test, slow ones included
	$(VENV)/bin/python -m pytest -q -m ""

bench: install  ## performance benchmarks (ratios against baselines measured in the same run)
	$(PY) -m bench

lint: install
	$(VENV)/bin/snakemake --lint

clean:
	rm -rf data logs .snakemake
