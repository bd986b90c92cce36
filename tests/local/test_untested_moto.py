"""A moto the engine was not tested on is refused in one line, before any of moto is imported.

The untested release is faked: a ``moto-9.9.9.dist-info`` ahead of site-packages on PYTHONPATH is
the version ``importlib.metadata`` reports, while the code imported stays the tested moto's. So
each check proves the refusal comes first: the engine never reaches moto's modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sfn_idempotency.extras import TESTED_MOTO
from tests.servers import CLI, clean_environment, free_port

UNTESTED = "9.9.9"
DEADLINE_SECONDS = 60
REFUSAL = (
    f"was tested on moto {', '.join(TESTED_MOTO)}, not on the installed {UNTESTED}: "
    f"pip install 'moto=={TESTED_MOTO[-1]}'"
)


@pytest.fixture
def untested_moto(tmp_path: Path) -> dict[str, str]:
    """The environment of a process that sees moto 9.9.9 installed."""
    metadata = tmp_path / "fake" / f"moto-{UNTESTED}.dist-info"
    metadata.mkdir(parents=True)
    (metadata / "METADATA").write_text(f"Metadata-Version: 2.1\nName: moto\nVersion: {UNTESTED}\n")
    return {**clean_environment(), "PYTHONPATH": str(metadata.parent)}


def run(command: list[str], environment: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        env=environment,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=DEADLINE_SECONDS,
        check=False,
    )


@pytest.mark.parametrize(
    "arguments",
    [["demo"], ["serve", "--port", str(free_port())], ["check", "--template", "template.yaml"]],
    ids=["demo", "serve", "check"],
)
def test_each_engine_command_refuses_an_untested_moto_in_one_line(
    arguments: list[str], untested_moto: dict[str, str], tmp_path: Path
):
    # Given moto 9.9.9 installed, When an engine command runs
    result = run([CLI, *arguments], untested_moto, tmp_path)
    # Then it exits 2 with one line naming the tested releases and the install that brings one
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("sfn-idempotency: error: ")
    assert line.endswith(REFUSAL)


def test_importing_the_engine_raises_the_refusal_not_an_import_error_of_moto(
    untested_moto: dict[str, str], tmp_path: Path
):
    # Given moto 9.9.9 installed, When a user's code imports the engine
    result = run([sys.executable, "-c", "import sfn_idempotency.testing"], untested_moto, tmp_path)
    # Then the error is ours, one line, raised before moto was imported
    assert result.returncode == 1
    last = result.stderr.splitlines()[-1]
    assert last.startswith("sfn_idempotency.extras.UnsupportedMotoError: ")
    assert last.endswith(REFUSAL)
    assert "moto/" not in result.stderr


def test_the_pytest_fixture_fails_its_test_in_one_line_and_leaves_other_tests_alone(
    untested_moto: dict[str, str], tmp_path: Path
):
    # Given a user's tests, one on local_cloud and one not, and moto 9.9.9 installed
    (tmp_path / "test_orders.py").write_text(
        "def test_on_the_engine(local_cloud):\n    pass\n\n\ndef test_plain():\n    pass\n"
    )
    # When pytest runs them
    result = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        untested_moto,
        tmp_path,
    )
    # Then the engine's test fails with the refusal alone, no traceback, and the other passes
    assert result.returncode == 1, result.stdout
    assert "1 passed, 1 error" in result.stdout
    assert next(line for line in result.stdout.splitlines() if REFUSAL in line).startswith("the local engine")
    assert "Traceback" not in result.stdout
    assert "moto/" not in result.stdout
