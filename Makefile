# bluefleet: the two commands a new user runs are `make demo` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
PYTHON ?= python3
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)
export PY_COLORS := 0
export ANSIBLE_FORCE_COLOR := 0

.PHONY: venv demo demo-down test lint sanity unit realtools integration molecule images ee lab-up lab-down clean

# ---------------------------------------------------------------- environment
$(VENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	mkdir -p .collections/ansible_collections/bluefleet
	ln -sfn ../../.. .collections/ansible_collections/bluefleet/dpu
	touch $@

# The checkout's own Python compiled to bytecode, as pip compiles a package it installs: where
# PYTHONDONTWRITEBYTECODE is set (CI containers often set it) nothing else would, and every twin tool call,
# ansible-playbook run and bluefleet command would compile the modules it imports again. Files already
# compiled are skipped (a few hundredths of a second).
# ansible.cfg finds collections in .collections only (collections_scan_sys_path = False): the lab's connection
# plugin, community.docker, is linked there from the `ansible` package's bundle.
venv: $(VENV)/.stamp
	@$(PY) -m compileall -q src plugins > /dev/null
	@mkdir -p .collections/ansible_collections/community
	@ln -sfn "$$($(PY) -c 'import ansible_collections.community.docker as m; print(list(m.__path__)[0])')" \
		.collections/ansible_collections/community/docker

# ---------------------------------------------------------------- the main job
demo: venv
	scripts/ensure-docker.sh
	$(BIN)/bluefleet lab up
	rc=0; $(BIN)/bluefleet run -i inventories/lab || rc=$$?; $(BIN)/bluefleet lab summary; exit $$rc

demo-down: venv
	$(BIN)/bluefleet lab down

# The lab's images and the execution environment's (each tagged by a hash of its inputs: built once, then reused).
images: venv
	scripts/ensure-docker.sh
	$(BIN)/bluefleet lab images
	$(BIN)/bluefleet ee build --sim

# The execution environment (AWX): bluefleet/ee-base, then ansible-builder -> bluefleet/ee, and the EE plus the
# twin (bluefleet/ee-sim) the EE tests run a sim fleet in. Tags are hashes of the inputs: a second run builds nothing.
ee: venv
	scripts/ensure-docker.sh
	$(BIN)/bluefleet ee build --sim

# ---------------------------------------------------------------- the tests
# Every phase runs; one timing line per phase is printed at the end; the first failing phase's code is
# make test's (scripts/run-phases.sh).
# images+lint+unit: the image builds (mostly waiting on debootstrap, apt and pip downloads) run beside the static
# checks and the unit tests, which need no image; the integration tests and Molecule use the images.
# integration+molecule+sanity: Molecule mostly waits on the lab (packet captures, daemons, containers; the cores are
# about a third busy when it runs alone) and the integration tests wait on their labs and browsers now and then:
# ansible-test sanity (one process, about 50 CPU-s, the longest of the first group when it ran there) fills those
# gaps. Each lab has its own prefix and subnets; sanity works on a copy of the collection.
TEST_PHASES := images+lint+unit realtools integration+molecule+sanity
test: venv
	scripts/ensure-docker.sh
	scripts/ensure-chromium.sh
	MAKE="$(MAKE)" scripts/run-phases.sh $(TEST_PHASES)

lint: venv
	$(BIN)/ruff check src plugins tests
	@# Layer contracts (.importlinter): module_utils parsers / plumbing / domain, and the twin independent of them.
	PYTHONPATH=$(CURDIR)/.collections:$(CURDIR)/src $(BIN)/lint-imports --no-cache
	$(BIN)/yamllint -s .
	@# ansible-lint installs the collection it lints into $$HOME/.ansible and does not refresh a copy
	@# of the same version: a throw-away HOME keeps a stale copy from shadowing the tree being linted.
	@# ansible-lint's syntax check reads ansible.cfg's default inventory (inventories/sim): its twin roots first.
	@# It sets the collection paths itself, from site-packages too (ansible.cfg's collections_scan_sys_path = False
	@# would make it warn and leave them).
	$(BIN)/bluefleet sim init -i inventories/sim
	lint_home=$$(mktemp -d) && trap 'rm -rf "$$lint_home"' EXIT && HOME=$$lint_home \
		ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=True $(BIN)/ansible-lint

sanity: venv
	scripts/sanity.sh

# pytest-xdist: PYTEST_WORKERS processes (default: one per core).
PYTEST_WORKERS ?= auto
unit: venv
	$(BIN)/pytest -n $(PYTEST_WORKERS) tests/unit

# The real programs Debian packages (mstflint, perftest, strongSwan, Open vSwitch, nftables, ...) run the
# modules' command lines and load their rendered configuration (tests/realtools; root for namespaces).
realtools: venv
	scripts/ensure-real-tools.sh
	$(BIN)/pytest tests/realtools

# One file per worker (--dist loadfile): a file's module fixtures (a sim fleet, the lab) stay on one worker,
# and its tests keep their order; every sim fleet and lab prefix is the test's own, so files run side by side.
# Files go longest first (tests/integration/durations.json; `python scripts/integration-durations.py tests/output/integration.xml`
# refreshes it from the JUnit file this writes).
integration: venv
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile tests/integration --junitxml=tests/output/integration.xml

# Molecule's runs take the integration tests' callbacks (tests/integration/callback_plugins): AnsiballZ payloads
# built once per version of their sources, not in every run (their bytecode, Python 3.11's as the controller's,
# does not serve the lab's containers, Python 3.13: zipimport falls back to the sources there), and the
# controller's objects frozen out of the cyclic collector before each task's forks (fork_gc.py).
molecule: venv
	scripts/ensure-docker.sh
	mkdir -p .cache && $(BIN)/bluefleet lab images --print-env > .cache/lab-images.env
	. .cache/lab-images.env && \
	  ANSIBLE_CALLBACK_PLUGINS=$(CURDIR)/tests/integration/callback_plugins ANSIBLE_CALLBACKS_ENABLED=bluefleet.dpu.preload,ansiballz_cache,fork_gc \
	  BLUEFLEET_TEST_ANSIBALLZ_CACHE=$(CURDIR)/.cache/ansiballz $(BIN)/molecule test -s default

clean:
	rm -rf $(VENV) .collections build
