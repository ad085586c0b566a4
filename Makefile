# apd: the two commands are `make book` and `make test` (see README.md).
SHELL := /bin/bash
PROFILE ?= default
# Override notebook parameters for one run: make book SET="theorem1.n_draws=500 theorem1.seed=3"
SET ?=
# Some chapters (the others keep their executed notebooks): make book ONLY="theorem1 family"
ONLY ?=
# Chapters side by side as their dependencies allow (book.mk): make book JOBS=4 (default: the CPU count)
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
# Every chapter that takes them: make book PROFILE=pythia DEVICE=cpu LOCAL_DIR=/data/pythia
DEVICE ?=
LOCAL_DIR ?=
# FORCE=1: execute the chapters again even when nothing changed; HTML=0: no Jupyter Book
FORCE ?=
HTML ?= 1
# ENV= : build with PY as it is, without creating .venv (an environment installed otherwise)
ENV ?= env
PROFILES := $(sort $(basename $(notdir $(wildcard profiles/*.yml))))
VENV := .venv
PY := $(VENV)/bin/python
SYSTEM_PYTHON ?= $(shell command -v python3.11 || command -v python3)
STAMP := $(VENV)/.installed
# Offline copies of the datasets: ../shared/data where that folder exists (unless APD_DATA_DIR is
# set); elsewhere the chapters read the Hub and the original sources (see README.md).
ifneq ($(wildcard ../shared/data),)
export APD_DATA_DIR ?= $(abspath ../shared/data)
endif

.PHONY: book test env unit lint smoke browser pages installed lock clean-build help bench

help:
	@echo "make book [PROFILE=$(subst $(eval) ,|,$(PROFILES))] [SET='nb.param=value ...'] [ONLY='nb ...'] [DEVICE=cpu] [LOCAL_DIR=folder] [JOBS=N] [FORCE=1] [HTML=0]   build the book"
	@echo "make test                                     ruff, unit tests (the installed wheel too), smoke build, browser test"
	@echo "make installed                                the wheel in a clean venv (tests/test_installed.py)"
	@echo "make lint                                     ruff check and ruff format --check"
	@echo "make pages [PROFILE=default]                  browser and page-text checks of an existing build"

env: $(STAMP)

$(STAMP): requirements.lock package.json pyproject.toml
	@$(SYSTEM_PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if v == (3, 11) else "apd: the book build is pinned for Python 3.11, found %d.%d; install python3.11 or set SYSTEM_PYTHON=/path/to/python3.11" % v)'
	test -x $(PY) || $(SYSTEM_PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "setuptools>=77"
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	npm install --no-audit --no-fund --silent
	touch $(STAMP)

# The build graph is book.mk; one build per profile at a time (flock). The kernels share JOBS slots
# (apd.base.jobs), so the numbers do not depend on JOBS.
CHAPTERS := $(shell sed -n 's|^ *- file: notebooks/||p' _toc.yml)
KEEP := $(if $(ONLY),$(foreach c,$(filter-out $(ONLY),$(CHAPTERS)),-o _build/$(PROFILE)/book/notebooks/$(c).ipynb))

book: $(ENV)
	@mkdir -p _build/$(PROFILE)
	@flock -n _build/$(PROFILE)/.lock true || echo "[apd] another build of profile $(PROFILE) is running here; waiting for it to finish"
	flock _build/$(PROFILE)/.lock bash -c '$(PY) -m apd prepare --profile $(PROFILE) --jobs $(JOBS) \
		$(foreach s,$(SET),--set "$(s)") $(if $(DEVICE),--device $(DEVICE)) $(if $(LOCAL_DIR),--local-dir $(LOCAL_DIR)) && \
		APD_SLOTS=$(CURDIR)/_build/$(PROFILE)/slots APD_JOBS=$(JOBS) APD_MEMO_SCORES=1 \
		$(MAKE) --no-print-directory -f book.mk -j $(JOBS) --keep-going $(if $(FORCE),-B) $(KEEP) \
		PROFILE=$(PROFILE) PY=$(PY) $(if $(filter 0,$(HTML)),notebooks,html)'

# ruff (configured in pyproject.toml): lint, and the formatting it would change (nothing, to pass)
lint: env
	$(VENV)/bin/ruff check apd scripts tests
	$(VENV)/bin/ruff format --check apd scripts tests

# The unit tests on two workers (pytest-xdist), whole files each, the slowest first (tests/conftest.py).
unit: lint
	$(PY) -m pytest -m "not book" -n 2 --dist loadfile --no-loadscope-reorder tests

smoke: env
	$(MAKE) --no-print-directory book PROFILE=smoke

browser: env
	$(PY) -m pytest -m book -n 2 --dist loadfile --no-loadscope-reorder tests

# The browser and page-text checks on an existing build of PROFILE (make book PROFILE=... first).
pages: env
	APD_BOOK_PROFILE=$(PROFILE) $(PY) -m pytest -m book tests/test_browser.py

# The hub-smoke chapters (scripts/hub_smoke.py, log in _build/) build beside the smoke book; the
# book tests then find them cached, or build them again and report why they failed.
test: lint
	$(PY) -m pytest -m "not book" -n 2 --dist loadfile --no-loadscope-reorder tests
	mkdir -p _build; $(PY) scripts/hub_smoke.py > _build/hub-smoke-prebuild.log 2>&1 & \
	$(MAKE) --no-print-directory book PROFILE=smoke; status=$$?; wait; exit $$status
	$(PY) -m pytest -m book -n 2 --dist loadfile --no-loadscope-reorder tests

# The wheel in a clean virtual environment (CPU torch, then the declared dependencies with the lock as
# constraints; about 1.5 minutes once pip's cache holds them): tests/test_installed.py, which make test
# and make unit run with the other unit tests.
installed: env
	$(PY) -m pytest -m installed tests

bench: env
	$(PY) scripts/benchmarks.py
	$(PY) scripts/book_length.py --profile $(PROFILE)

# Re-resolve requirements.in into requirements.lock and environment.yml (needs the registries).
lock:
	rm -rf /tmp/apd-lock && $(SYSTEM_PYTHON) -m venv /tmp/apd-lock
	/tmp/apd-lock/bin/pip install --quiet --upgrade pip
	/tmp/apd-lock/bin/pip install --quiet -r requirements.in
	$(PY) scripts/write_lock.py /tmp/apd-lock/bin/pip

clean-build:
	rm -rf _build
