# foliolab: `make compare` runs the full A/B comparison with defaults,
# `make test` runs the tests, `make check` lint, format and types. They
# set up what they need on first use.
#
#   make compare ARGS="--workloads pageout --runs 5"
#   make compare ARGS="--arch arm64"       (cross-built arm64 guest, TCG)
#   make test PYTEST_ARGS="-m 'not qemu'" SUITE_ARGS=--no-kselftests

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
ARGS ?=
PYTEST_ARGS ?=
# CI's share of the correctness suite (docs/manual.md, Tests): one boot,
# MGLRU on, the 6.12 kselftests that take under a minute each (quick:
# 241 s of their 1,360 s under TCG, split_huge_page_test alone 745 s),
# and the three of upstream 7.3's mm selftests that take seconds. The
# second boot (MGLRU off), every kselftest and all seven upstream ones
# are for a kernel's proof, not the lab's CI, which took 73 minutes with
# every kselftest (2026-11-30):
#   make test SUITE_ARGS="--mglru both --upstream-selftests all"
SUITE_ARGS ?= --mglru on --kselftests quick \
	--upstream-selftests rmap,droppable,uffd-wp-mremap

.PHONY: compare test check setup venv clean-venv

compare: setup
	$(PY) -m foliolab compare $(ARGS)

# Host tests, then the correctness suite on the patched debug kernel. The
# host tests run on two workers: one takes the builds and boots in turn
# (tests/host/conftest.py, HEAVY), the other the unit tests meanwhile.
test: setup
	$(PY) -m pytest -q -n 2 --dist loadgroup tests/host $(PYTEST_ARGS)
	$(PY) -m foliolab test $(SUITE_ARGS)

# ruff (lint, and the format check), mypy (configured in pyproject.toml)
# and the layers of the folders' imports (tests/host/test_layers.py); no
# kernel, no network. CI runs it before the tests.
check: venv
	$(VENV)/bin/ruff check foliolab tests
	$(VENV)/bin/ruff format --check foliolab tests
	$(VENV)/bin/mypy
	$(PY) -m pytest -q tests/host/test_layers.py

# Host packages (apt, as root) and the Python environment.
setup: venv
	$(PY) -m foliolab setup

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	@$(PYTHON) -m venv --help >/dev/null 2>&1 && \
	  $(PYTHON) -c 'import ensurepip' 2>/dev/null || { \
	  echo "installing python3-venv"; apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt \
	  -r requirements-dev.txt
	$(VENV)/bin/pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

clean-venv:
	rm -rf $(VENV)
