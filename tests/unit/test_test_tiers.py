"""`make test` runs on every core (pytest-xdist, --dist loadgroup): the tests of a tier that shares
a costly session fixture (the installed wheel's environment, the CDK synth, the browser) must run
on one worker, or each worker builds the fixture again. tests/conftest.py groups them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests import REPOSITORY_ROOT

TESTS_PER_TIER = 6
DEADLINE_SECONDS = 120


def test_a_tier_that_shares_a_session_fixture_runs_on_one_worker(tmp_path: Path):
    # Given a project with tests in a tier that shares a fixture (installed) and in one that does not
    for tier in ("installed", "local"):
        folder = tmp_path / "tests" / tier
        folder.mkdir(parents=True)
        (folder / f"test_{tier}.py").write_text(
            "".join(f"def test_{i}():\n    pass\n\n\n" for i in range(TESTS_PER_TIER)), encoding="utf-8"
        )

    # When it runs on two workers with the suite's grouping (tests/conftest.py as a plugin)
    grouped = ["-n", "2", "--dist", "loadgroup", "-p", "tests.conftest"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *grouped, "-v", "--rootdir", str(tmp_path), str(tmp_path / "tests")],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPOSITORY_ROOT)},
        capture_output=True,
        text=True,
        timeout=DEADLINE_SECONDS,
        check=False,
    )

    # Then every test passed, and the installed tier's ran on one worker, as one group
    assert result.returncode == 0, result.stdout + result.stderr
    installed = re.findall(r"\[(gw\d+)\].* PASSED \S*test_installed\.py::test_\d+@(\S+)", result.stdout)
    assert len(installed) == TESTS_PER_TIER, result.stdout
    assert {group for _, group in installed} == {"user-environment"}
    assert len({worker for worker, _ in installed}) == 1
